"""Systems as data: an execution model is a declaration that the program builder interprets.

A :class:`SystemModel` says, for every place of a query, which steps run there:

``entry``       once per cluster search: the entry point's distance;
``adjacency``   per hop: the expanded node's adjacency list (traversal);
``vectors``     per hop that reads vectors: the neighbors' distances;
``candidates``  per hop: candidate-list work;
``dispatch``    per device a query searches (``traversal="gpc"``), or once per query
                (``"switch-core"``), on the host's I/O agent before the search task: what
                goes down to it;
``device_done`` at the end of a device's search task (``"gpc"``), or of the switch core's
                (``"switch-core"``, after ``merge``): what comes up;
``merge``       once per query: on the host (its core for ``"host"``, the I/O agent for
                ``"gpc"``), or on the switch core that ran the search (``"switch-core"``);
``scan``        (scan models) once per scan element: a probed list's codes or vectors;
``rerank``      (scan models) once per device holding some of the query's re-rank
                candidates (a search on the GPCs: its own device's only): their full vectors.

``index`` says which traces a model replays (graphs.trace meta ``index_kind``): ``"graph"``
(hops: places entry .. candidates), ``"ivfpq"`` or ``"exact"`` (scan elements: places scan
and rerank; no hops).

A step is one of three records:

- :class:`Read`: a ``unit`` of the unit registry (:mod:`cosmos.units`: ``"host"`` core,
  device ``"gpc"`` context, device ``"accelerator"``, device ``"scan-unit"``: a near-memory
  scan pipeline, scans only; ``"switch-core"``, ``"switch-accelerator"`` in the CXL switch,
  ``"dimm-accelerator"`` in each DIMM's buffer) reads ``objects`` (``"entry-vector"``, ``"adjacency"``,
  ``"hop-vectors"``; for scans ``"list-codes"`` / ``"list-vectors"``: the scan element's
  contiguous range of PQ codes or full vectors, ``"list-terms"``: the probed list's
  precomputed term table (IVF-PQ), and ``"rerank-vectors"``) from ``memory``
  (``"index"``: where the index lives, a device or the host DRAM; ``"host-cache"``: the host
  DRAM graph cache). The route follows from the unit's location (cosmos.units.route): a unit
  on the host reading a device crosses the host's port, the switch and the device link both
  ways, a unit in the switch the switch and the device link; a device unit reads its own
  DRAM; ``rank_pus=True``
  reads each vector's 64-byte segments rank-locally (rank-level PUs). ``mlp`` names the
  :class:`Costs` field that limits the read's lines in flight instead of its unit's (a
  sequential stream a prefetcher runs ahead on: ``host_stream_mlp``; list reads only).
  ``per_vector`` is a
  :class:`cosmos.systems.Costs` field charged per vector (per code for list-codes) on the
  context's core, a share per returned line (overlapped with the lines still in flight);
  ``after`` are :class:`Cost` terms (``Costs`` field x a count) added when the last line is
  back; ``cached`` is the same read for an object held in the host graph cache.
- :class:`Send`: a message between its two ends, ``near`` (``"host"`` or ``"switch"``) and
  ``to`` (``"switch"`` or ``"device"``: the search's device), ``"down"`` (from ``near``) or
  ``"up"``, over the segments of the one route function; one end is where the step runs.
  Its payload is ``vectors`` query vectors + ``bytes`` + ``per_item_bytes`` x ``count``,
  sent as a header slot plus whole slots.
- :class:`Compute`: ``cost`` cycles on the context's core.

Every step names its breakdown category (``traversal``, ``distance``, ``candidate``,
``transfer``, ``queue``: :data:`CATEGORIES`). Counts: ``one``, ``degree`` (neighbors
of the expanded node), ``reads`` (vectors read at the hop), ``inserts`` (candidate
insertions), ``probes-x-k`` (probed clusters x k), ``rank-parts`` (ranks holding a segment of
a vector), ``reads-x-rank-parts``, ``k``; for scans ``codes`` (codes or vectors of the scan
element), ``lut-entries`` (pq_m x 256: one lookup table), ``rerank-reads`` (re-rank vectors
of the group, or of the device at dispatch / device_done), ``lists`` (lists the task scans:
the device's at dispatch / device_done, the query's at merge), ``lists-x-lut-entries``,
``devices-x-k`` (devices the query searched x k, at merge). :data:`PLACE_COUNTS` says which
exist where.

A model is registered under a name with :func:`register_system`, either as a
``SystemModel`` or as a function of the :class:`~cosmos.config.SystemConfig` that returns one
(when the steps depend on a config switch, e.g. rank PUs on or off). ``SystemConfig.kind``
names the model. :func:`model_for` resolves and validates it: an unknown name, field or value,
or a combination the hardware cannot do (a device unit reading host memory, a message where
no link is used, rank PUs driven from outside the device, a unit or a message in a switch that
is not configured...) raises :class:`cosmos_common.UserError` naming the
model, the place, the step and the field. Simulation, layout and metrics ask the resolved
model what they need (``search_pool``, ``search_location``, ``index_in_host``, ``uses_link``,
``host_cache``, ``rank_pus``, ``contexts_fields``); nothing else branches on a system's name.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, NamedTuple, Union

from cosmos.config import SystemConfig
from cosmos.units import TRAVERSALS, reading_units, route, unit
from cosmos_common import UserError

MEMORIES = ("index", "host-cache")
OBJECTS = ("entry-vector", "adjacency", "hop-vectors", "list-codes", "list-vectors",
           "list-terms", "rerank-vectors")
COUNTS = ("one", "degree", "reads", "inserts", "probes-x-k", "rank-parts",
          "reads-x-rank-parts", "k", "codes", "lut-entries", "rerank-reads", "lists",
          "lists-x-lut-entries", "devices-x-k")
INDEX_MEMORIES = ("devices", "host")
DIRECTIONS = ("down", "up")
#: the far end of a message: the search's device, or a unit in the CXL switch
SEND_ENDS = ("device", "switch")
#: the near end of a message (nearer the host): the host, or a unit in the CXL switch
NEAR_ENDS = ("host", "switch")
#: The largest message a Send may declare and the engine carries, in bytes (2**40 = 1 TiB):
#: payload = ``vectors`` x the trace's vector bytes + ``bytes`` + ``per_item_bytes`` x its
#: count, each field checked here and the whole payload when the program is built
#: (cosmos.program.check_message). A search's messages are kilobytes (a query vector, a
#: lookup table, a top-k list); one of 2**40 bytes holds a 64 GB/s link for 17 s of simulated
#: time, and its wire bytes stay exact integers in the engine's float64 fields.
MAX_MESSAGE_BYTES = 1 << 40
#: the index families a model replays (a trace's meta ``index_kind``, graphs.trace)
INDEXES = ("graph", "ivfpq", "exact")
PLACES = ("entry", "adjacency", "vectors", "candidates", "dispatch", "device_done", "merge",
          "scan", "rerank")
#: places of a graph search and of a scan (the per-query and per-device places are shared)
GRAPH_PLACES = ("entry", "adjacency", "vectors", "candidates")
SCAN_PLACES = ("scan", "rerank")
#: the objects a read may name at each place of a search (per-query places read nothing)
PLACE_OBJECTS = {"entry": ("entry-vector",), "adjacency": ("adjacency",),
                 "vectors": ("hop-vectors",),
                 "scan": ("list-codes", "list-vectors", "list-terms"),
                 "rerank": ("rerank-vectors",)}
#: objects read as one sequential run of lines (a scan element's contiguous range): the
#: reads a stream prefetcher runs ahead on (``Read.mlp``)
SEQUENTIAL_OBJECTS = ("list-codes", "list-vectors")
#: the object a scan reads, by index family
SCAN_OBJECT = {"ivfpq": "list-codes", "exact": "list-vectors"}
#: the per-list table of an IVF-PQ index with precomputed tables (faiss
#: ``use_precomputed_table``): a probed list's term table, pq_m x 256 float32 entries
#: (cosmos.program.term_table_bytes), kept in the device DRAM with the lists (cosmos.layout's
#: term region) by the near-memory systems that read it
TERM_OBJECT = "list-terms"
#: A step's breakdown category (the paper's Fig. 4b); cosmos.program numbers them (CAT_*).
CATEGORIES = ("traversal", "distance", "candidate", "transfer", "queue")


class Costs(NamedTuple):
    """Per-operation costs in DRAM cycles (floats: fractional cycles are kept per item): the
    names a declaration's :class:`Cost` terms and ``per_vector`` may use. Their values come
    from the configuration (:func:`cosmos.program.costs_for`, each from a cosmos.config field
    with its source)."""

    host_dist: float        # one distance on the host core
    host_visit: float       # one visited check per neighbor
    host_insert: float      # one candidate insertion
    host_select: float      # select next node
    host_merge: float       # per result merged
    host_lat: int           # host on-chip latency, one way
    host_mlp: int
    gpc_dist: float
    gpc_visit: float
    gpc_insert: float
    gpc_select: float
    gpc_partial: float      # add one rank PU partial distance
    dev_lat: int            # device on-chip latency, one way
    gpc_mlp: int
    pu_latency: int         # rank PU pipeline latency
    accel_latency: int      # CXL-ANNS accelerator latency
    accel_mlp: int
    req_wire: float         # wire bytes of a read request (one slot)
    data_wire: float        # wire bytes of a 64-byte data response
    slot_wire: float        # wire bytes per slot
    slot_bytes: int
    # scans (IVF-PQ and exact; 0 where the trace has no PQ codes)
    host_lut: float         # one lookup-table entry built on the host (dim / pq_m dims)
    host_code: float        # one PQ code scanned on the host (pq_m lookups + queue compare)
    scan_code: float        # one PQ code through a device scan unit
    scan_dot: float         # one full vector through a device scan unit's dot-product pipe
    scan_lut_load: float    # a probed list's lookup table loaded into the scan unit
    scan_pipeline: float    # the scan unit's pipeline depth
    scan_mlp: int
    host_lut_add: float     # one precomputed term-table entry added on the host (per list)
    scan_lut_build: float   # one lookup-table entry built on the device (dim / pq_m MACs)
    host_stream_mlp: int    # lines in flight on a host sequential stream with prefetch
    scan_gemm: float        # one full vector through the batched exact scan's GEMM unit:
                            # max(its bytes at the unit's stream rate, B x dim MACs)
    scan_lut_add: float     # one precomputed term-table entry added on a device scan unit
    # cores in the CXL switch (switch_core.*; 0 cycles of latency and 1 request where unused)
    sw_dist: float          # one distance on a switch core
    sw_visit: float
    sw_insert: float
    sw_select: float
    sw_merge: float         # per result merged (the probes' top-k lists)
    sw_lat: int             # switch core to the switch's ports, one way
    sw_mlp: int


#: the counts that exist at each place (a hop's counts only at a hop)
_HOP = ("one", "degree", "reads", "inserts", "rank-parts", "reads-x-rank-parts", "k")
PLACE_COUNTS = {"entry": ("one", "rank-parts", "k"), "adjacency": _HOP, "vectors": _HOP,
                "candidates": _HOP,
                "dispatch": ("one", "k", "lists", "lut-entries", "lists-x-lut-entries",
                             "rerank-reads"),
                "device_done": ("one", "k", "lists", "lut-entries", "rerank-reads"),
                "merge": ("one", "probes-x-k", "k", "lists", "lut-entries", "devices-x-k"),
                "scan": ("one", "codes", "lut-entries", "k"),
                "rerank": ("one", "rerank-reads", "k")}


@dataclass(frozen=True)
class Cost:
    """``value`` x ``count`` cycles: ``value`` names a cosmos.systems.Costs field."""

    value: str
    count: str = "one"


@dataclass(frozen=True)
class Read:
    """``unit`` reads ``objects`` from ``memory`` (module docstring): ``objects`` in
    :data:`OBJECTS`, ``unit`` a unit of the registry (:mod:`cosmos.units`), ``memory`` in
    :data:`MEMORIES`; ``category`` a breakdown category; ``rank_pus``: rank-local segment
    reads by the rank-level PUs; ``per_vector``: a Costs field charged per vector on the context's core (a share per
    returned line); ``after``: :class:`Cost` terms once the last line is back; ``cached``:
    the read to use for an object held in the host graph cache; ``mlp``: a Costs field
    (an in-flight limit, ``*_mlp``) for the read's lines instead of the unit's, for a
    sequential list read (:data:`SEQUENTIAL_OBJECTS`)."""

    objects: str
    unit: str
    category: str
    memory: str = "index"
    rank_pus: bool = False
    per_vector: str | None = None
    after: tuple = ()
    cached: "Read | None" = None
    mlp: str | None = None


@dataclass(frozen=True)
class Send:
    """A message between ``near`` (:data:`NEAR_ENDS`: ``"host"``, or ``"switch"``, a unit in
    the CXL switch) and ``to`` (:data:`SEND_ENDS`: ``"device"``, the search's device, or
    ``"switch"``), ``"down"`` (from ``near`` to ``to``) or ``"up"`` (back): ``vectors`` query
    vectors + ``bytes`` + ``per_item_bytes`` x ``count`` bytes of payload, sent as one header
    slot plus whole slots (cosmos.config.LinkConfig) over the segments between the two
    (cosmos.units.route); at most :data:`MAX_MESSAGE_BYTES` in all. One of the two ends is
    where the step runs (the search's unit; the host's I/O agent at ``dispatch``)."""

    direction: str
    vectors: int = 0
    bytes: int = 0
    per_item_bytes: int = 0
    count: str = "one"
    category: str = "transfer"
    to: str = "device"
    near: str = "host"


@dataclass(frozen=True)
class Compute:
    """The sum of the :class:`Cost` terms ``cost``, in cycles of the context's core (rounded
    up to whole DRAM cycles), counted to ``category``."""

    category: str
    cost: tuple = ()


Step = Union[Read, Send, Compute]


@dataclass(frozen=True)
class SystemModel:
    """One execution model (module docstring). ``traversal``: the unit whose contexts run a
    query's cluster searches (cosmos.units.TRAVERSALS; ``"host"``: one task per query on a
    host core; ``"gpc"``: per device a dispatch task on the host I/O agent, a search task on a
    GPC context of that device, and a merge task on the agent; ``"switch-core"``: a dispatch
    task on the agent, then one task per query on a core context in the CXL switch: every
    search, the merge and ``device_done``). ``index_memory``: where the index lives
    (``"devices"`` or ``"host"`` DRAM)."""

    name: str
    description: str
    traversal: str
    index_memory: str = "devices"
    index: str = "graph"
    entry: tuple = ()
    adjacency: tuple = ()
    vectors: tuple = ()
    candidates: tuple = ()
    dispatch: tuple = ()
    device_done: tuple = ()
    merge: tuple = ()
    scan: tuple = ()
    rerank: tuple = ()
    #: queries per simulated batch (exact-pnm-batch): > 1 replays only a trace that
    #: :func:`batch_trace` made with the same B (cosmos.program.build_program checks)
    batch_queries: int = 1

    # ---- what the rest of the simulator asks ---------------------------------------------
    def steps(self):
        """(place, index, step) of every declared step, cached variants included."""
        for place in PLACES:
            for i, st in enumerate(getattr(self, place)):
                yield place, i, st
                if isinstance(st, Read) and st.cached is not None:
                    yield place, i, st.cached

    @property
    def search_pool(self) -> str:
        """The unit whose contexts run the searches (``"host"``, ``"gpc"``,
        ``"switch-core"``)."""
        return self.traversal

    @property
    def search_location(self) -> str:
        """Where the searches run (cosmos.units.LOCATIONS): ``"host"``, ``"device"`` or
        ``"switch"``."""
        return unit(self.traversal).location

    @property
    def index_in_host(self) -> bool:
        """The whole index lives in host DRAM (one memory instance: the host's)."""
        return self.index_memory == "host"

    @property
    def uses_link(self) -> bool:
        """Any step crosses a CXL link (then link figures apply)."""
        return not self.index_in_host

    @property
    def host_cache(self) -> bool:
        """Some read goes to the host DRAM graph cache (memory instance ``device.count``)."""
        return any(isinstance(s, Read) and s.memory == "host-cache" for _, _, s in self.steps())

    @property
    def reads_term_tables(self) -> bool:
        """Some read fetches the probed lists' precomputed term tables (:data:`TERM_OBJECT`):
        the layout then holds them on the devices (cosmos.layout's term region)."""
        return any(isinstance(s, Read) and s.objects == TERM_OBJECT for _, _, s in self.steps())

    @property
    def rank_pus(self) -> bool:
        """Some read uses the rank-level PUs (the layout partitions vectors across ranks)."""
        return any(isinstance(s, Read) and s.rank_pus for _, _, s in self.steps())

    @property
    def units(self) -> tuple:
        """Names of the units the model's reads use, in the registry's order
        (cosmos.units)."""
        used = {s.unit for _, _, s in self.steps() if isinstance(s, Read)}
        return tuple(n for n in reading_units() if n in used)

    def memory_of(self, read: "Read") -> str:
        """Where ``read``'s memory is (cosmos.units.MEMORY_LOCATIONS): ``"host"`` for the
        host graph cache or an index in host DRAM, else ``"device"``."""
        return "host" if read.memory == "host-cache" or self.index_in_host else "device"

    def route(self, step, switch: bool) -> tuple:
        """The segments (cosmos.units.SEGMENTS) a Read's requests or a Send's message cross,
        from the unit or the host outwards, with or without a CXL switch (``switch``);
        ValueError for a route the hardware does not have (:func:`cosmos.units.route`)."""
        if isinstance(step, Read):
            return route(unit(step.unit).location, self.memory_of(step), switch)
        if isinstance(step, Send):
            return route(step.near, step.to, switch)
        return ()

    def check_routes(self, switch: bool) -> "SystemModel":
        """The searches' unit and every Read and Send has a route in a machine with
        (``switch``) or without a CXL switch; UserError naming the model, the step and the
        field otherwise."""
        if self.search_location == "switch" and not switch:
            raise UserError(f"system model {self.name!r}: traversal: {self.traversal!r} runs "
                            f"the searches in the CXL switch, and no CXL switch is configured "
                            f"(switch.present = false)")
        for place, i, st in self.steps():
            try:
                self.route(st, switch)
            except ValueError as exc:
                field = "unit" if isinstance(st, Read) else "to"
                raise UserError(f"system model {self.name!r}: {place}[{i}].{field}: "
                                f"{exc}") from None
        return self

    def contexts_fields(self) -> str:
        """The config fields that set how many requests can be in flight (for messages): the
        search contexts' unit (the traversal's), then every other unit the reads use."""
        fields = [unit(self.traversal).inflight_fields]
        fields += [unit(n).inflight_fields for n in self.units if n != self.traversal]
        return ", ".join(fields)

    # ---- validation ------------------------------------------------------------------------
    def validate(self) -> "SystemModel":
        """Reject an unknown or inconsistent declaration (UserError naming the field)."""
        who = f"system model {self.name!r}"

        def bad(where, msg):
            raise UserError(f"{who}: {where}: {msg}")

        if not isinstance(self.name, str) or not self.name:
            raise UserError(f"system model: name: expected a non-empty string, got {self.name!r}")
        if self.traversal not in TRAVERSALS:
            bad("traversal", f"unknown {self.traversal!r}; expected one of {TRAVERSALS}")
        if self.index_memory not in INDEX_MEMORIES:
            bad("index_memory", f"unknown {self.index_memory!r}; expected one of "
                                f"{INDEX_MEMORIES}")
        where_run = self.search_location
        if where_run != "host" and self.index_in_host:
            bad("index_memory", f"a search on the {unit(self.traversal).label}s (in the "
                                f"{where_run}) needs the index on the devices")
        for place in PLACES:
            seq = getattr(self, place)
            if not isinstance(seq, tuple):
                bad(place, f"expected a tuple of steps, got {type(seq).__name__}")
            if place in ("dispatch", "device_done") and seq and where_run == "host":
                bad(place, "only a search off the host (traversal='gpc' or 'switch-core') has "
                           "dispatch and device_done steps")
        if self.index not in INDEXES:
            bad("index", f"unknown {self.index!r}; expected one of {INDEXES}")
        if self.index == "graph":
            if not self.adjacency:
                bad("adjacency", "a search reads the expanded node's adjacency list: declare a "
                                 "Read of 'adjacency'")
            for place in SCAN_PLACES:
                if getattr(self, place):
                    bad(place, f"a graph search (index='graph') has no {place!r} steps; "
                               f"scan models set index='ivfpq' or 'exact'")
        else:
            for place in GRAPH_PLACES:
                if getattr(self, place):
                    bad(place, f"a scan (index={self.index!r}) has no hops: declare its work "
                               f"at 'scan' and 'rerank', not at {place!r}")
            want = SCAN_OBJECT[self.index]
            if not any(isinstance(st, Read) and st.objects == want for st in self.scan):
                bad("scan", f"a scan of an {self.index!r} index reads its lists: declare a "
                            f"Read of {want!r}")
        costs = set(Costs._fields)
        for place, i, st in self.steps():
            where = f"{place}[{i}]"
            if not isinstance(st, (Read, Send, Compute)):
                bad(where, f"expected a Read, Send or Compute, got {type(st).__name__}")
            if st.category not in CATEGORIES:
                bad(f"{where}.category", f"unknown {st.category!r}; expected one of "
                                         f"{CATEGORIES}")
            terms = st.after if isinstance(st, Read) else (st.cost if isinstance(st, Compute)
                                                            else ())
            if not isinstance(terms, tuple):
                bad(where, "cost terms must be a tuple of Cost")
            variable = set()
            for t in terms:
                if not isinstance(t, Cost):
                    bad(where, f"expected Cost terms, got {t!r}")
                if t.value not in costs:
                    bad(f"{where}.cost {t.value!r}", f"unknown; expected a field of "
                                                     f"cosmos.systems.Costs: {sorted(costs)}")
                if t.count not in PLACE_COUNTS[place]:
                    bad(f"{where}.count {t.count!r}", f"not a count at {place!r}; expected "
                                                      f"one of {PLACE_COUNTS[place]}")
                if t.count != "one":
                    variable.add(t.count)
            if len(variable) > 1:
                bad(where, f"at most one count besides 'one' per step, got {sorted(variable)}")
            if isinstance(st, Read):
                if place not in PLACE_OBJECTS:
                    bad(where, f"no Read at {place!r} (reads belong to entry, adjacency, "
                               f"vectors)")
                if st.objects not in PLACE_OBJECTS[place]:
                    bad(f"{where}.objects", f"{st.objects!r} at {place!r}; expected "
                                            f"{PLACE_OBJECTS[place]}")
                if st.objects == TERM_OBJECT and self.index != "ivfpq":
                    bad(f"{where}.objects", f"{st.objects!r}: only an IVF-PQ index has "
                                            f"precomputed term tables, not {self.index!r}")
                if place == "scan" and st.objects not in (SCAN_OBJECT[self.index], TERM_OBJECT):
                    bad(f"{where}.objects", f"{st.objects!r}: a scan of an {self.index!r} "
                                            f"index reads {SCAN_OBJECT[self.index]!r}")
                known = reading_units()
                if st.unit not in known:
                    bad(f"{where}.unit", f"unknown {st.unit!r}; expected one of {known}")
                u = unit(st.unit)
                ok_units = tuple(n for n in known if self.traversal in unit(n).serves)
                if u.read_places is not None and place not in u.read_places:
                    bad(f"{where}.unit", f"the {u.label} {u.role} (places {u.read_places}), "
                                         f"not {place!r} reads")
                if st.unit not in ok_units:
                    bad(f"{where}.unit", f"{st.unit!r} cannot serve a search that runs on the "
                                         f"{self.traversal}; expected one of {ok_units}")
                if st.memory not in MEMORIES:
                    bad(f"{where}.memory", f"unknown {st.memory!r}; expected one of {MEMORIES}")
                if self.index_in_host and u.location != "host":
                    bad(f"{where}.unit", "the index is in host DRAM: only the host reads it")
                if st.memory == "host-cache":
                    if u.location != "host":
                        bad(f"{where}.memory", "only the host reads the host DRAM cache")
                    if self.index_in_host:
                        bad(f"{where}.memory", "the index is already in host DRAM")
                    if st.rank_pus:
                        bad(f"{where}.rank_pus", "no rank PUs in host DRAM")
                if st.rank_pus and place in SCAN_PLACES:
                    bad(f"{where}.rank_pus", "scan reads on the rank PUs are not modeled (the "
                                             "scan layout keeps a list contiguous across the "
                                             "channels, not partitioned across ranks)")
                if st.rank_pus:
                    if u.location not in unit("rank-pu").driven_from or self.index_in_host:
                        bad(f"{where}.rank_pus", "rank PUs sit in the devices' DRAM ranks: a "
                                                 "device unit must drive them")
                    if st.objects == "adjacency":
                        bad(f"{where}.rank_pus", "rank PUs compute distances of vectors, not "
                                                 "adjacency lists")
                if st.per_vector is not None:
                    if st.per_vector not in costs:
                        bad(f"{where}.per_vector", f"unknown {st.per_vector!r}; expected a "
                                                   f"field of cosmos.systems.Costs")
                    if st.objects == "adjacency":
                        bad(f"{where}.per_vector", "a per-vector cost needs vector objects")
                if st.mlp is not None:
                    if st.mlp not in costs or not st.mlp.endswith("_mlp"):
                        mlps = sorted(c for c in costs if c.endswith("_mlp"))
                        bad(f"{where}.mlp", f"unknown {st.mlp!r}; expected an in-flight "
                                            f"limit of cosmos.systems.Costs: {mlps}")
                    if st.objects not in SEQUENTIAL_OBJECTS:
                        bad(f"{where}.mlp", f"a read's own in-flight limit is for a "
                                            f"sequential stream {SEQUENTIAL_OBJECTS}, not "
                                            f"{st.objects!r}")
                if st.cached is not None:
                    if place not in ("entry", "adjacency"):
                        bad(f"{where}.cached", "the graph cache holds single objects (entry "
                                               "vector, adjacency list), not a hop's reads")
                    c = st.cached
                    if not isinstance(c, Read) or c.cached is not None:
                        bad(f"{where}.cached", "expected a Read without its own cached variant")
                    if c.memory != "host-cache" or c.objects != st.objects:
                        bad(f"{where}.cached", "the cached variant reads the same objects from "
                                               "memory='host-cache'")
            elif isinstance(st, Send):
                if self.index_in_host:
                    bad(where, "the index is in host DRAM: no link to send over")
                if place == "merge":
                    bad(where, "merge runs on the host after every device answered: no Send")
                if st.direction not in DIRECTIONS:
                    bad(f"{where}.direction", f"unknown {st.direction!r}; expected one of "
                                              f"{DIRECTIONS}")
                if st.to not in SEND_ENDS:
                    bad(f"{where}.to", f"unknown {st.to!r}; expected one of {SEND_ENDS}")
                if st.near not in NEAR_ENDS:
                    bad(f"{where}.near", f"unknown {st.near!r}; expected one of {NEAR_ENDS}")
                if st.near == st.to:
                    bad(f"{where}.to", f"a message from the {st.near} to itself")
                # one end is where the step runs: the host's I/O agent at dispatch, else the
                # unit the searches run on (a device's GPC: the search's device)
                runs = "host" if place == "dispatch" else where_run
                if runs not in (st.near, st.to):
                    fld = "to" if runs in SEND_ENDS else "near"
                    bad(f"{where}.{fld}", f"the step runs in the {runs}, and this message is "
                                          f"between the {st.near} and the {st.to}")
                if place in ("dispatch", "device_done") and st.to != (
                        "switch" if where_run == "switch" else "device"):
                    bad(f"{where}.to", f"at {place!r} a message goes between the host and the "
                                       f"search task (in the {where_run}), not the {st.to}")
                for f in ("vectors", "bytes", "per_item_bytes"):
                    v = getattr(st, f)
                    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                        bad(f"{where}.{f}", f"expected an integer >= 0, got {v!r}")
                    if v > MAX_MESSAGE_BYTES:
                        what = "query vectors (of at least 1 byte each)" if f == "vectors" \
                            else "bytes"
                        bad(f"{where}.{f}", f"{v:,} {what} is more than one message carries: "
                                            f"at most {MAX_MESSAGE_BYTES:,} bytes (2**40; "
                                            f"cosmos.systems.MAX_MESSAGE_BYTES)")
                if st.count not in PLACE_COUNTS[place]:
                    bad(f"{where}.count", f"{st.count!r} is not a count at {place!r}; expected "
                                          f"one of {PLACE_COUNTS[place]}")
        return self


#: bytes of one result entry returned by a search task: int32 id + float32 distance
RESULT_ENTRY_BYTES = 8

#: name -> (description, SystemModel or function of the SystemConfig returning one)
_REGISTRY: dict[str, tuple[str, object]] = {}


def register_system(model_or_name, description: str | None = None, *, replace: bool = False):
    """Register an execution model.

    ``register_system(model)`` registers a :class:`SystemModel` under ``model.name``;
    ``@register_system("name", "description")`` registers a function ``f(cfg) ->
    SystemModel``. Registering a known name again needs ``replace=True``.
    """
    def add(name, desc, entry):
        if not isinstance(name, str) or not name:
            raise UserError(f"register_system: expected a non-empty name, got {name!r}")
        if name in _REGISTRY and not replace:
            raise UserError(f"register_system: {name!r} is already registered (replace=True "
                            f"to redefine it)")
        _REGISTRY[name] = (desc or "", entry)
        return entry

    if isinstance(model_or_name, SystemModel):
        model_or_name.validate()
        return add(model_or_name.name, model_or_name.description, model_or_name)
    if not isinstance(model_or_name, str):
        raise UserError(f"register_system: expected a SystemModel or a name, got "
                        f"{type(model_or_name).__name__}")

    def deco(fn: Callable):
        return add(model_or_name, description, fn)

    return deco


def known_systems() -> tuple:
    """Names of the registered execution models."""
    return tuple(_REGISTRY)


def describe(name: str) -> str:
    return _REGISTRY[name][0]


def validate_system(cfg: SystemConfig) -> SystemConfig:
    """``cfg`` checked as a whole: its fields (:meth:`SystemConfig.validate`) and the execution
    model its ``kind`` names, resolved against it (:func:`model_for`); returns ``cfg``. An
    error names the field (``system.kind: unknown ...``, ``system.section.field: ...``)."""
    cfg.validate()
    model_for(cfg)
    return cfg


def model_for(cfg) -> SystemModel:
    """The validated :class:`SystemModel` of ``cfg.kind`` (resolved against ``cfg``)."""
    kind = cfg.kind
    if not isinstance(kind, str) or kind not in _REGISTRY:
        raise UserError(f"system.kind: unknown {kind!r}; expected one of {known_systems()}")
    entry = _REGISTRY[kind][1]
    model = entry if isinstance(entry, SystemModel) else entry(cfg)
    if not isinstance(model, SystemModel):
        raise UserError(f"system.kind {kind!r}: its function returned "
                        f"{type(model).__name__}, expected a SystemModel")
    return model.validate().check_routes(bool(cfg.switch.present))


# ------------------------------------------------------------------------------------------
# The paper's four execution models and three more. Costs named here are fields of
# cosmos.systems.Costs (each from a cosmos.config field with its source).
# ------------------------------------------------------------------------------------------

def _host_search(name, description, index_memory, cache=False):
    """Host core does traversal, distances and candidate updates, reading over its route."""
    adj = Read("adjacency", "host", "traversal", after=(Cost("host_visit", "degree"),))
    if cache:
        adj = dataclasses.replace(adj, cached=dataclasses.replace(adj, memory="host-cache"))
    return SystemModel(
        name=name, description=description, traversal="host", index_memory=index_memory,
        entry=(Read("entry-vector", "host", "distance", per_vector="host_dist"),),
        adjacency=(adj,),
        vectors=(Read("hop-vectors", "host", "distance", per_vector="host_dist"),),
        candidates=(Compute("candidate", (Cost("host_select"),
                                          Cost("host_insert", "inserts"))),),
        merge=(Compute("candidate", (Cost("host_merge", "probes-x-k"),)),))


def _host_traversal_device_distances(name, description, rank_pus, cache=False,
                                     unit="accelerator", to="device"):
    """CXL-ANNS's split: the host traverses (adjacency over the link); the device computes
    distances next to its DRAM and returns only distances; fine-grained scheduling keeps only
    select-next on the critical path (inserts deferred). ``unit`` / ``to``: the distance unit
    and where the host's messages go (``"switch-accelerator"`` / ``"switch"``: the unit in
    the CXL switch, whose vector reads cross the device links but not the host's port)."""
    if rank_pus:
        # rank PUs read the segments rank-locally; the partial distances are added on the
        # device (gpc.partial_sum_cycles each, as Cosmos's GPC does) after the PU pipeline
        entry_after = (Cost("pu_latency"), Cost("gpc_partial", "rank-parts"))
        vec_after = (Cost("pu_latency"), Cost("gpc_partial", "reads-x-rank-parts"))
    else:
        entry_after = vec_after = (Cost("accel_latency"),)
    adj = Read("adjacency", "host", "traversal", after=(Cost("host_visit", "degree"),))
    if cache:
        adj = dataclasses.replace(adj, cached=dataclasses.replace(adj, memory="host-cache"))
    return SystemModel(
        name=name, description=description, traversal="host",
        entry=(Send("down", vectors=1, bytes=4, to=to),                     # query + entry id
               Read("entry-vector", unit, "distance", rank_pus=rank_pus, after=entry_after),
               Send("up", bytes=4, to=to)),                                 # its distance
        adjacency=(adj,),
        vectors=(Send("down", per_item_bytes=4, count="reads", to=to),     # the ids
                 Read("hop-vectors", unit, "distance", rank_pus=rank_pus, after=vec_after),
                 Send("up", per_item_bytes=4, count="reads", to=to)),      # the distances
        candidates=(Compute("candidate", (Cost("host_select"),)),),
        merge=(Compute("candidate", (Cost("host_merge", "probes-x-k"),)),))


def _gpc_search(name, description, distances):
    """Full offload: per device, the query goes down, a GPC context searches the device's
    clusters locally, the local top-k (id + distance, 8 bytes each) comes up, the host merges.
    ``distances``: ``"gpc"`` (the GPC core reads whole vectors), ``"rank-pu"`` (rank-local
    segment reads, then the partial sums on the GPC) or ``"accelerator"`` (a CXL-ANNS-style
    distance unit reads whole vectors over the channel)."""
    if distances == "rank-pu":
        entry = Read("entry-vector", "gpc", "distance", rank_pus=True,
                     after=(Cost("pu_latency"), Cost("gpc_partial", "rank-parts")))
        vec = Read("hop-vectors", "gpc", "distance", rank_pus=True,
                   after=(Cost("pu_latency"), Cost("gpc_partial", "reads-x-rank-parts")))
    elif distances == "accelerator":
        entry = Read("entry-vector", "accelerator", "distance", after=(Cost("accel_latency"),))
        vec = Read("hop-vectors", "accelerator", "distance", after=(Cost("accel_latency"),))
    else:
        entry = Read("entry-vector", "gpc", "distance", per_vector="gpc_dist")
        vec = Read("hop-vectors", "gpc", "distance", per_vector="gpc_dist")
    return SystemModel(
        name=name, description=description, traversal="gpc",
        dispatch=(Send("down", vectors=1),),
        entry=(entry,),
        adjacency=(Read("adjacency", "gpc", "traversal", after=(Cost("gpc_visit", "degree"),)),),
        vectors=(vec,),
        candidates=(Compute("candidate", (Cost("gpc_select"), Cost("gpc_insert", "inserts"))),),
        device_done=(Send("up", per_item_bytes=8, count="k"),),
        merge=(Compute("candidate", (Cost("host_merge", "probes-x-k"),)),))


register_system(_host_search(
    "host-cxl", "host CPU search, all data in CXL memory (every line crosses the link)",
    "devices"))
register_system(_host_search("host-dram", "host CPU search, all data in host DRAM", "host"))
register_system(_host_traversal_device_distances(
    "cxl-anns", "host traversal + device distance accelerators, fine-grained scheduling",
    rank_pus=False))


@register_system("cosmos", "full offload of the search to the device GPCs; distances on the "
                           "rank-level PUs when rank_pu.enabled, else on the GPC")
def _cosmos(cfg):
    return _gpc_search("cosmos", describe("cosmos"),
                       "rank-pu" if cfg.rank_pu.enabled else "gpc")


register_system(_host_traversal_device_distances(
    "cxl-anns-cache", "CXL-ANNS + its hop-count graph cache: adjacency lists of the nodes "
    "within graph_cache.hops of each entry point read from host DRAM", rank_pus=False,
    cache=True))
register_system(_gpc_search(
    "cosmos-accel", "full offload to the GPCs, distances on a CXL-ANNS-style device "
    "accelerator reading whole vectors (no rank PUs)", "accelerator"))


@register_system("cxl-anns-rankpu", "host traversal as in CXL-ANNS, distances on the "
                                    "rank-level PUs (needs rank_pu.enabled)")
def _cxl_anns_rankpu(cfg):
    if not cfg.rank_pu.enabled:
        raise UserError("system.rank_pu.enabled: the cxl-anns-rankpu model computes distances "
                        "on the rank-level PUs; set it to true (or use kind cxl-anns)")
    return _host_traversal_device_distances("cxl-anns-rankpu", describe("cxl-anns-rankpu"),
                                            rank_pus=True)


register_system(_host_traversal_device_distances(
    "cxl-anns-dimm", "host traversal as in CXL-ANNS, distances on accelerators in the DIMM "
    "buffers (AxDIMM-style placement): whole vectors read rank-locally, off the channel bus",
    rank_pus=False, unit="dimm-accelerator"))
register_system(_host_traversal_device_distances(
    "cxl-anns-switch", "host traversal as in CXL-ANNS, distances on a distance accelerator "
    "in the CXL switch (BEACON-style placement): ids and distances cross the host's port, "
    "vectors only the device links", rank_pus=False, unit="switch-accelerator", to="switch"))



def _switch_search(name, description):
    """The whole search on cores in the CXL switch: the host's I/O agent sends the query to
    the switch; one switch core context runs every cluster search of the query (adjacency
    lists and whole vectors read from each cluster's device over the switch and that
    device's link, never the host's port; distances, visited checks and candidate updates
    on the core, as a GPC does), merges the probes' top-k lists and sends the k results
    (8 bytes each) up to the host."""
    return SystemModel(
        name=name, description=description, traversal="switch-core",
        dispatch=(Send("down", vectors=1, to="switch"),),                 # the query
        entry=(Read("entry-vector", "switch-core", "distance", per_vector="sw_dist"),),
        adjacency=(Read("adjacency", "switch-core", "traversal",
                        after=(Cost("sw_visit", "degree"),)),),
        vectors=(Read("hop-vectors", "switch-core", "distance", per_vector="sw_dist"),),
        candidates=(Compute("candidate", (Cost("sw_select"), Cost("sw_insert", "inserts"))),),
        merge=(Compute("candidate", (Cost("sw_merge", "probes-x-k"),)),),
        device_done=(Send("up", per_item_bytes=RESULT_ENTRY_BYTES, count="k", to="switch"),))


register_system(_switch_search(
    "cosmos-switch", "the whole search on general-purpose cores in the CXL switch, reading "
    "every device over its link (whole vectors, no rank PUs); query down and top-k up over "
    "the host's port only"))


# ------------------------------------------------------------------------------------------
# Scan systems (issue 31): IVF-PQ and exact scan of the graph index's k-means lists, on the
# host over the CXL link or next to the memory. They replay the scan traces of graphs.ivfpq.
# Every cost is a cosmos.systems.Costs field from a cosmos.config field with its source
# (host.* and scan_unit.* in cosmos.config.SOURCE).
# ------------------------------------------------------------------------------------------

#: bytes of one lookup-table entry sent to a device: float32, as graphs.ivfpq builds them
#: (and ChamVS's LUTs: fp32 distances)
LUT_ENTRY_BYTES = 4
#: bytes of a probed list's id in a dispatch message (int32 list ids, as the trace's)
LIST_ID_BYTES = 4


#: IVF-PQ lookup-table strategies (faiss IndexIVFPQ, by_residual): ``"per-list"`` builds a
#: whole table per probed list from the query's residual to the list's centroid
#: (use_precomputed_table = 0: pq_m x 256 entries of dim / pq_m multiply-adds each);
#: ``"precomputed"`` builds one table of the query's distances to the sub-centroids per query
#: and adds, per probed list, the list's precomputed term table (use_precomputed_table = 1:
#: pq_m x 256 adds per list). Both give the same distances, so the same recall: the systems
#: of either strategy replay the same graphs.ivfpq traces.
LUT_STRATEGIES = ("per-list", "precomputed")


def _scan_host(name, description, index, lut="per-list", prefetch=False):
    """The host core scans: for IVF-PQ it builds the lookup tables (``lut``: per probed list,
    pq_m x 256 entries of dim / pq_m dimensions each; or ``"precomputed"``: one query table
    per query and, per probed list, the list's precomputed term table added to it, pq_m x 256
    adds: host.lut_add_entries_per_cycle, the term tables in host DRAM as faiss keeps them)
    and reads the list's codes from the CXL memory (every line crosses the link; per code
    pq_m lookups + the queue compare); re-ranks the R best candidates with their full
    vectors, read over the link as well; sorts the top-k. ``prefetch``: the list reads are a
    sequential stream the L2 streamer runs ahead on (host_stream_mlp lines in flight,
    host.stream_prefetch_lines) instead of the core's demand misses (host_mlp); re-rank
    reads are random and keep host_mlp.

    The query table of the precomputed strategy is declared at ``merge`` (the host's one
    per-query place): the host's task runs its steps one after the other on one core, so
    where in the task the table is built does not change the query's time."""
    mlp = "host_stream_mlp" if prefetch else None
    merge = (Compute("candidate", (Cost("host_merge", "k"),)),)
    if index == "ivfpq":
        if lut == "per-list":
            build = Compute("distance", (Cost("host_lut", "lut-entries"),))
        else:
            build = Compute("distance", (Cost("host_lut_add", "lut-entries"),))
            merge = (Compute("distance", (Cost("host_lut", "lut-entries"),)),) + merge
        scan = (build, Read("list-codes", "host", "distance", per_vector="host_code", mlp=mlp))
    else:
        scan = (Read("list-vectors", "host", "distance", per_vector="host_dist", mlp=mlp),)
    return SystemModel(
        name=name, description=description, traversal="host", index=index, scan=scan,
        rerank=(Read("rerank-vectors", "host", "distance", per_vector="host_dist"),),
        merge=merge)


def _scan_pnm(name, description, index, flow="table-down", lut="precomputed", batch=0):
    """Chameleon-style near-memory scan (Jiang et al., VLDB 2024, ChamVS memory nodes): per
    device holding probed lists, the host sends the lists' ids down the link with what the
    device needs to build its lookup tables; a device search context drives a scan unit that
    loads each list's table (ChamVS: 256 cycles),
    streams the list's codes from the device DRAM through its decoding pipeline
    (scan_unit.codes_per_cycle), keeps a local top queue (ChamVS's hierarchical priority
    queue, at line rate) and drains its pipeline (ChamVS: 131 cycles); it re-ranks the
    candidates it holds with their full vectors read from its DRAM through the dot-product
    pipeline and returns its local top-k (8 bytes each); the host merges the devices' lists.

    With precomputed tables (``lut="precomputed"``) the unit first reads the probed list's
    term table (:data:`TERM_OBJECT`, cosmos.program.term_table_bytes: pq_m x 256 float32,
    kept with the lists in the device DRAM) and adds it to the query's table as its lines return
    (``scan_lut_add`` per entry, scan_unit.lut_add_entries_per_cycle, overlapped with the
    lines in flight), as the host adds the same table per probed list (``host_lut_add``).

    IVF-PQ data flows (``flow``):

    - ``"table-down"`` (``lut="precomputed"`` only): the host's I/O agent builds the query's
      table (pq_m x 256 float32 entries, the query's part of the residual tables) and sends
      it down (16 KiB at pq_m = 16); the lists' part is precomputed with the index, as
      faiss's precomputed tables, stored with the lists in the device DRAM: the unit reads
      and adds the probed list's term table, then loads the table into its PEs.
    - ``"chamvs"``: ChamVS's flow: the query vector is broadcast to the devices (one vector
      down, not a table) and the tables are built on the device, next to memory, at
      scan_unit.lut_build_macs_per_cycle (dim / pq_m multiply-adds per entry): with
      ``lut="precomputed"`` one query table per device task (declared at ``device_done``:
      the device task runs its steps one after the other on one context, so where the
      table is built in the task does not change its time), the lists' term tables read
      and added as above; with ``lut="per-list"`` a whole table per probed list (the host's
      ``ivfpq-host`` strategy), then loaded into the PEs.

    ``batch`` (exact scan only, ``exact-pnm-batch``): the program's "query" is a batch of
    ``batch`` queries (:func:`batch_trace`): their vectors go down together, each list of
    the batch's union is read once and every vector costs ``scan_gemm`` (max(stream,
    batch x dim MACs)), each device returns ``batch`` top-k lists and the host merges them.

    Exact scan: the same unit with a dot-product pipeline instead of the decoders
    (scan_unit.dot_bytes_per_cycle of full vectors per cycle: the GEMM units of the VCK5000
    dense-retrieval study, for one query a GEMV, memory bound). Not the rank PUs: they
    compute per-rank partial sums of vectors partitioned across ranks, which the scan
    layout does not do (a list is one sequential run through the channels' rows) and a scan
    would need one partial-sum add per 64-byte segment on the GPC."""
    lists_down = Send("down", per_item_bytes=LIST_ID_BYTES, count="lists")
    done = (Send("up", per_item_bytes=RESULT_ENTRY_BYTES, count="k"),)
    if batch:
        if index != "exact":
            raise ValueError("a batched scan (batch > 0) is an exact scan")
        # one batch = B queries: B vectors down, per device B top-k lists up, B merges
        return SystemModel(
            name=name, description=description, traversal="gpc", index=index,
            batch_queries=batch,
            dispatch=(Send("down", vectors=batch), lists_down),
            scan=(Read("list-vectors", "scan-unit", "distance", per_vector="scan_gemm",
                       after=(Cost("scan_pipeline"),)),),
            rerank=(Read("rerank-vectors", "scan-unit", "distance", per_vector="scan_dot",
                         after=(Cost("scan_pipeline"),)),),
            device_done=(Send("up", per_item_bytes=RESULT_ENTRY_BYTES * batch, count="k"),),
            merge=(Compute("candidate", (Cost("host_merge", "devices-x-k"),) * batch),))
    codes = Read("list-codes", "scan-unit", "distance", per_vector="scan_code",
                 after=(Cost("scan_pipeline"),))
    # precomputed tables: the probed list's term table read from the device DRAM and added
    # to the query's table line by line (per entry: scan_lut_add)
    terms = Read(TERM_OBJECT, "scan-unit", "distance", per_vector="scan_lut_add")
    if index == "ivfpq" and flow == "table-down":
        # one table per query: the query's distances to the sub-centroids (pq_m x 256); the
        # per-list term of the residual tables is precomputed with the index and stored with
        # the lists (faiss IndexIVFPQ's precomputed tables): read from the device DRAM and
        # added per probed list, then loaded into the PEs
        if lut != "precomputed":
            raise ValueError("the table-down flow sends the query's table: lut='precomputed'")
        dispatch = (Compute("distance", (Cost("host_lut", "lut-entries"),)),
                    Send("down", per_item_bytes=LUT_ENTRY_BYTES, count="lut-entries"),
                    lists_down)
        scan = (terms, Compute("distance", (Cost("scan_lut_load"),)), codes)
    elif index == "ivfpq":
        dispatch = (Send("down", vectors=1), lists_down)       # ChamVS: the query broadcast
        if lut == "precomputed":
            scan = (terms, Compute("distance", (Cost("scan_lut_load"),)), codes)
            done = (Compute("distance", (Cost("scan_lut_build", "lut-entries"),)),) + done
        else:
            scan = (Compute("distance", (Cost("scan_lut_build", "lut-entries"),
                                         Cost("scan_lut_load"))), codes)
    else:
        dispatch = (Send("down", vectors=1), lists_down)
        scan = (Read("list-vectors", "scan-unit", "distance", per_vector="scan_dot",
                     after=(Cost("scan_pipeline"),)),)
    return SystemModel(
        name=name, description=description, traversal="gpc", index=index,
        dispatch=dispatch, scan=scan,
        rerank=(Read("rerank-vectors", "scan-unit", "distance", per_vector="scan_dot",
                     after=(Cost("scan_pipeline"),)),),
        device_done=done,
        merge=(Compute("candidate", (Cost("host_merge", "devices-x-k"),)),))


register_system(_scan_host(
    "ivfpq-host", "IVF-PQ on the host: lookup tables per probed list (faiss IndexIVFPQ "
    "without precomputed tables), code scan and re-rank reads over the CXL link", "ivfpq"))
register_system(_scan_pnm(
    "ivfpq-pnm", "IVF-PQ near memory (Chameleon's ChamVS units): precomputed tables (one "
    "query table built on the host and sent down; per probed list its precomputed term "
    "table read from the device DRAM and added), per-device "
    "PQ decoding units stream the codes, re-rank on the device, local top-k up", "ivfpq"))
register_system(_scan_host(
    "exact-host", "exact scan on the host: the probed lists' full vectors over the CXL link",
    "exact"))
register_system(_scan_pnm(
    "exact-pnm", "exact scan near memory: per-device dot-product units stream the probed "
    "lists' full vectors, local top-k up", "exact"))
# issue 54: the same lookup-table strategy on both sides, ChamVS's data flow, and the host's
# stream prefetcher on its list reads (the four above keep their declarations and results)
register_system(_scan_host(
    "ivfpq-host-precomputed", "IVF-PQ on the host with precomputed tables (faiss "
    "use_precomputed_table): one query table per query, per probed list the list's term "
    "table (host DRAM) added to it; codes and re-rank reads over the CXL link", "ivfpq",
    lut="precomputed"))
register_system(_scan_host(
    "ivfpq-host-precomputed-prefetch", "ivfpq-host-precomputed with the L2 stream "
    "prefetcher on the list reads (host.stream_prefetch_lines in flight)", "ivfpq",
    lut="precomputed", prefetch=True))
register_system(_scan_pnm(
    "ivfpq-pnm-chamvs", "IVF-PQ near memory with ChamVS's flow: the query vector broadcast "
    "to the devices, one query table built on each device (precomputed tables, the lists' "
    "term tables read from the device DRAM and added), codes decoded next to memory, local "
    "top-k up",
    "ivfpq", flow="chamvs", lut="precomputed"))
register_system(_scan_pnm(
    "ivfpq-pnm-chamvs-perlist", "IVF-PQ near memory with ChamVS's flow and a table per probed "
    "list built on the device (ivfpq-host's strategy): query down, codes decoded next to "
    "memory, local top-k up", "ivfpq", flow="chamvs", lut="per-list"))
register_system(_scan_host(
    "exact-host-prefetch", "exact-host with the L2 stream prefetcher on the list reads "
    "(host.stream_prefetch_lines in flight)", "exact", prefetch=True))



@register_system("exact-pnm-batch", "exact-pnm with batched GEMM reuse: "
                 "scan_unit.batch_queries queries share one read of each probed list's vectors "
                 "(the union of their lists), the unit doing B dot products per vector at "
                 "scan_unit.gemm_macs_per_cycle; replays a batch_trace of an exact trace")
def _exact_pnm_batch(cfg: SystemConfig) -> SystemModel:
    return _scan_pnm("exact-pnm-batch", "exact scan near memory, B queries per pass over "
                     "the vectors (VCK5000-study GEMM reuse)", "exact",
                     batch=int(cfg.scan_unit.batch_queries))


def roofline_batch(bandwidth_Bps: float, macs_per_s: float, vector_bytes: int,
                   dim: int) -> float:
    """The batch size B at which a batched exact scan turns compute bound: reading a vector
    takes ``vector_bytes / bandwidth_Bps`` seconds, its B dot products ``B x dim /
    macs_per_s``; they are equal at B* = ``macs_per_s x vector_bytes / (dim x
    bandwidth_Bps)`` (below it the pass is memory bound, above it compute bound). A
    float, not rounded (the default unit: 64 B/cycle against 128 MACs/cycle at float32 is
    B* = 8, scan_unit.batch_queries)."""
    for name, v in (("bandwidth_Bps", bandwidth_Bps), ("macs_per_s", macs_per_s),
                    ("vector_bytes", vector_bytes), ("dim", dim)):
        if not v > 0:
            raise ValueError(f"roofline_batch: {name} must be > 0, got {v!r}")
    return macs_per_s * vector_bytes / (dim * bandwidth_Bps)


def batch_trace(tr, batch: int):
    """The exact-scan trace ``tr`` (cosmos.trace_input.TraceArrays) as batches of ``batch``
    consecutive queries (the last may be short): batch b's scan elements are the union of
    its queries' probed lists, in first-probe order, each one element covering the union of
    the queries' ranges of that list (an exact trace scans whole lists); its re-rank reads
    the union of theirs. Meta: ``num_queries`` = batches, ``batch_queries`` = ``batch``,
    ``batch_source_queries`` = the queries batched. Replayed by ``exact-pnm-batch``: one
    simulated "query" is one batch, so per query QPS = batches/s x ``batch`` (the last
    batch's shortness aside) and every query of a batch has the batch's latency (the wait
    to fill a batch is not modeled)."""
    import numpy as np

    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
        raise UserError(f"batch_trace: batch must be an integer >= 1, got {batch!r}")
    if tr.index_kind != "exact":
        raise UserError(f"batch_trace: batches an 'exact' trace (full vectors scanned), got "
                        f"an {tr.index_kind!r} trace")
    if int(tr.meta.get("batch_queries", 1)) != 1:
        raise UserError("batch_trace: the trace is already batched "
                        f"(batch_queries {tr.meta['batch_queries']})")
    Q = tr.num_queries
    qp = np.asarray(tr.query_ptr, np.int64)
    sc = np.asarray(tr.search_cluster, np.int64)
    first = np.asarray(tr.scan_first, np.int64)
    end = first + np.asarray(tr.scan_count, np.int64)
    entry = np.asarray(tr.search_entry)
    rp = np.asarray(tr.rerank_ptr, np.int64)
    rn = np.asarray(tr.rerank_node)
    nb = -(-Q // batch)
    out_ptr, out_c, out_f, out_e, out_entry, rr_ptr, rr = [0], [], [], [], [], [0], []
    for b in range(nb):
        s0, s1 = qp[b * batch], qp[min(Q, (b + 1) * batch)]
        pos = {}
        for s in range(s0, s1):
            c = int(sc[s])
            if c in pos:
                i = pos[c]
                out_f[i] = min(out_f[i], int(first[s]))
                out_e[i] = max(out_e[i], int(end[s]))
            else:
                pos[c] = len(out_c)
                out_c.append(c)
                out_f.append(int(first[s]))
                out_e.append(int(end[s]))
                out_entry.append(entry[s])
        out_ptr.append(len(out_c))
        r = rn[rp[b * batch]:rp[min(Q, (b + 1) * batch)]]
        _, keep = np.unique(r, return_index=True)
        rr.extend(r[np.sort(keep)].tolist())
        rr_ptr.append(len(rr))
    S = len(out_c)
    f = np.asarray(out_f, np.int64)
    meta = dict(tr.meta, num_queries=nb, batch_queries=int(batch), batch_source_queries=Q)
    meta.pop("checksums", None)
    return dataclasses.replace(
        tr, meta=meta, query_ptr=np.asarray(out_ptr, np.int64),
        search_cluster=np.asarray(out_c, tr.search_cluster.dtype),
        search_entry=np.asarray(out_entry, entry.dtype),
        search_hop_ptr=np.zeros(S + 1, np.int64), scan_first=f,
        scan_count=np.asarray(out_e, np.int64) - f,
        rerank_ptr=np.asarray(rr_ptr, np.int64), rerank_node=np.asarray(rr, rn.dtype))


def systems_for_index(index: str) -> tuple:
    """Registered models that replay traces of ``index`` (``"graph"``, ``"ivfpq"``,
    ``"exact"``), resolved against the default config of their kind (a model whose
    function refuses the default config is left out)."""
    out = []
    for name, (_, entry) in _REGISTRY.items():
        try:
            model = entry if isinstance(entry, SystemModel) else entry(SystemConfig(kind=name))
        except UserError:
            continue
        if isinstance(model, SystemModel) and model.index == index:
            out.append(name)
    return tuple(out)
