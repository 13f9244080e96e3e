"""Turn each query of the logical trace into a program of dependent steps, as its system's
execution model (a cosmos.systems declaration) says.

A *program* is flat integer/float arrays (built by one numba kernel, no Python per hop):

- queries own a contiguous run of *tasks* (``query_task_ptr``); a task runs on one execution
  context of its *pool* (0 = host cores, ``1 + d`` = GPC contexts of device ``d``,
  ``D + 1`` = the host's I/O agent, which never runs out of contexts, ``D + 2`` = the
  cores in the CXL switch: :func:`pool_sizes`), has at most one
  successor task (``task_succ``, -1 = none) and waits for ``task_npred`` predecessors; the
  query's last task is its sink;
- a task is a chain of *steps* (``task_step_ptr``), each starting when the previous one has
  completed. A step has a *class* (``step_class``, a row of the small ``cls_*`` tables: what
  is the same for every step of one kind at one place of a search, on one device) and its
  own ``step_obj``, ``step_nreq``, ``step_compute_after`` and ``step_wire_bytes``. The
  properties ``step_kind``, ``step_dev``, ... give the class fields per step:

  ``STEP_MEM``     read ``step_nreq`` 64-byte lines of the step's objects from memory
                   instance ``cls_dev``, at most ``cls_mlp`` in flight; each request spends
                   ``cls_lat`` cycles on chip each way, crosses the route's segments
                   (``cls_route``: host port, switch, device link, cosmos.units.SEGMENTS;
                   ``cls_link == 1`` when it crosses any) outwards and its data back, and
                   is rank-local when ``cls_rank_local == 1``; each
                   returned line costs ``cls_compute_line`` cycles of the context's core
                   (overlapped with the other lines in flight), then ``step_compute_after``.
  ``STEP_XFER``    a message of ``step_wire_bytes`` over the segments ``cls_route``
                   between its two ends (host and device ``cls_dev``, host and switch,
                   switch and device ``cls_dev``) in direction ``cls_link`` (0 = outwards,
                   from the end nearer the host, 1 = back); the step completes when it
                   arrives, then ``step_compute_after``.
  ``STEP_COMPUTE`` ``step_compute_after`` cycles on the context's core.

A MEM step's objects, by its class's ``cls_obj_src``:

  ``OBJ_VECTOR``    one object: the vector of node ``step_obj`` (at ``vector_addr``);
  ``OBJ_ADJACENCY`` one object: the adjacency list of node ``step_obj`` (at ``node_addr``);
  ``OBJ_READS``     the vectors of ``read_node[step_obj:]``, ``cls_obj_lines`` lines each
                    (``read_node`` is the trace's array, shared, not copied; for a scan
                    trace, its re-rank reads grouped by device within each query);
  ``OBJ_RANGE``     one object: a scan element's contiguous lines from ``node_addr[step_obj]``
                    (for a scan trace the address table holds, after the N node entries, the
                    first line of each scan element: element ``s`` is object ``N + s``);
  ``OBJ_TERMS``     one object: the probed list's precomputed term table, contiguous lines
                    from ``node_addr[step_obj]`` (after the S scan elements, the term table
                    of list ``c`` (cosmos.layout ``term_addr``) is object ``N + S + c``).

Line ``l`` of an object at address ``a`` is at ``a + (l % R) * rank_step + (l // R) *
col_step`` with ``(R, rank_step, col_step)`` of the class (``R = 1, col_step = 64`` =
contiguous lines). Nothing per object is stored: the objects' ids are the trace's and their
addresses the layout's (for 10,000 default ``cosmos`` queries, 15.7 M steps of 32 bytes and
no object array, where per-step fields and an object copy took 3 GB).

Every step carries a breakdown category (``CAT_*``, the paper's Fig. 4b). The steps at each
place of a query come from the system's declaration (cosmos.systems), resolved by
:func:`step_rows` into a small table that one generic kernel (:func:`_build`) interprets: no
system is known here by name.
All times are DRAM cycles (tCK = 416 ps; cosmos.config).
"""

from __future__ import annotations

from typing import NamedTuple

import numba as nb
import numpy as np

from cosmos.config import SystemConfig, ns_to_cycles, TCK_PS
import cosmos.config as _config
import cosmos.systems as _systems
from cosmos.layout import LINE_BYTES, Layout
from cosmos.systems import (CATEGORIES, COUNTS, LUT_ENTRY_BYTES, MAX_MESSAGE_BYTES, PLACES,
                            Costs, Read, Send, model_for)
from cosmos.units import SEGMENT_BIT, route_mask, search_unit_at, unit
from cosmos_common import UserError
from dram.jitcache import drop_stale
from graphs.ivfpq import PQ_KSUB

# constants of cosmos.config and the place / count numbering of cosmos.systems are compiled in
drop_stale(__file__, _config.__file__, _systems.__file__)

STEP_MEM, STEP_XFER, STEP_COMPUTE = 0, 1, 2
#: where a query's searches run (BuildTarget.mode), from the location of the traversal's unit
SEARCH_HOST, SEARCH_DEVICES, SEARCH_SWITCH = 0, 1, 2
SEARCH_MODE = {"host": SEARCH_HOST, "device": SEARCH_DEVICES, "switch": SEARCH_SWITCH}
#: The engine's clock: cycles up to 2**53 (about 43 days of simulated time at tCK = 416 ps)
#: are event times (cosmos.engine) and exact in its float fields (a core's busy-until cycle,
#: a link's free cycle); a step's compute is capped here, and a run asking for a later cycle
#: stops with an error (cosmos.simulate).
MAX_CYCLES = 1 << 53
# breakdown categories (cosmos.systems.CATEGORIES), numbered as the declarations list them
CAT_TRAVERSAL, CAT_DISTANCE, CAT_CANDIDATE, CAT_TRANSFER, CAT_QUEUE = (
    CATEGORIES.index(c) for c in ("traversal", "distance", "candidate", "transfer", "queue"))


OBJ_VECTOR, OBJ_ADJACENCY, OBJ_READS, OBJ_RANGE, OBJ_TERMS = 0, 1, 2, 3, 4
# the bits of a route's segments (cls_route; cosmos.units.SEGMENT_BIT, checked here: the
# engine compiles these in)
SEG_HOST_PORT, SEG_SWITCH, SEG_DEVICE_LINK = 1, 2, 4
if (SEG_HOST_PORT, SEG_SWITCH, SEG_DEVICE_LINK) != tuple(
        SEGMENT_BIT[s] for s in ("host-port", "switch", "device-link")):
    raise ImportError("cosmos.program: SEG_* are not cosmos.units.SEGMENT_BIT")

# class table rows (cls_* fields, int64 except cls_compute_line)
_CLS_INT = ("cls_kind", "cls_cat", "cls_dev", "cls_link", "cls_rank_local", "cls_mlp",
            "cls_lat", "cls_R", "cls_rank_step", "cls_col_step", "cls_obj_src", "cls_obj_lines",
            "cls_route")
(K_KIND, K_CAT, K_DEV, K_LINK, K_RANK_LOCAL, K_MLP, K_LAT, K_R, K_RSTEP, K_CSTEP, K_SRC,
 K_OLINES, K_ROUTE) = range(len(_CLS_INT))
N_CLS_INT = len(_CLS_INT)


class Program(NamedTuple):
    """Flat program arrays (see module docstring). Shapes: Q queries, T tasks, S steps,
    K step classes, R vectors read by the trace's hops, N nodes."""

    query_task_ptr: np.ndarray   # (Q+1,) int64
    task_query: np.ndarray       # (T,) int64
    task_pool: np.ndarray        # (T,) int64
    task_succ: np.ndarray        # (T,) int64, -1 = none
    task_npred: np.ndarray       # (T,) int64
    task_device: np.ndarray      # (T,) int64, device the task's search runs against, -1 = host
    task_step_ptr: np.ndarray    # (T+1,) int64
    step_class: np.ndarray       # (S,) int32 row of the cls_* tables
    step_obj: np.ndarray         # (S,) int64 node id, or first index into read_node (OBJ_*)
    step_nreq: np.ndarray        # (S,) int32 64-byte requests (0 for XFER and COMPUTE)
    step_compute_after: np.ndarray  # (S,) int64
    step_wire_bytes: np.ndarray  # (S,) float64 (0 but for XFER)
    cls_kind: np.ndarray         # (K,) int64 STEP_*
    cls_cat: np.ndarray          # (K,) int64 CAT_*
    cls_dev: np.ndarray          # (K,) int64 memory instance / link (-1 = none)
    cls_link: np.ndarray         # (K,) int64
    cls_rank_local: np.ndarray   # (K,) int64
    cls_mlp: np.ndarray          # (K,) int64
    cls_lat: np.ndarray          # (K,) int64
    cls_R: np.ndarray            # (K,) int64
    cls_rank_step: np.ndarray    # (K,) int64
    cls_col_step: np.ndarray     # (K,) int64
    cls_obj_src: np.ndarray      # (K,) int64 OBJ_*
    cls_obj_lines: np.ndarray    # (K,) int64 lines per object of OBJ_READS (0 otherwise)
    cls_route: np.ndarray        # (K,) int64 segments crossed (cosmos.units.SEGMENT_BIT)
    cls_compute_line: np.ndarray  # (K,) float64
    read_node: np.ndarray        # (R,) int32 (or int64) the trace's
    vector_addr: np.ndarray      # (N,) uint64 the layout's
    node_addr: np.ndarray        # (N,) uint64 the layout's (+ (S,) scan ranges, OBJ_RANGE,
                                 # + (C,) term tables, OBJ_TERMS, where the system reads them)

    @property
    def num_queries(self) -> int:
        return int(self.query_task_ptr.shape[0] - 1)

    # the class fields of every step, (S,) arrays (for analysis and tests; the engine reads
    # the tables)
    step_kind = property(lambda self: self.cls_kind[self.step_class])
    step_cat = property(lambda self: self.cls_cat[self.step_class])
    step_dev = property(lambda self: self.cls_dev[self.step_class])
    step_link = property(lambda self: self.cls_link[self.step_class])
    step_rank_local = property(lambda self: self.cls_rank_local[self.step_class])
    step_mlp = property(lambda self: self.cls_mlp[self.step_class])
    step_lat = property(lambda self: self.cls_lat[self.step_class])
    step_compute_line = property(lambda self: self.cls_compute_line[self.step_class])

    def requests_per_query(self) -> np.ndarray:
        """64-byte DRAM requests of each query, (Q,) int64."""
        task_req = np.add.reduceat(np.append(self.step_nreq, 0), self.task_step_ptr[:-1],
                                   dtype=np.int64) \
            if self.step_nreq.size else np.zeros(len(self.task_query), np.int64)
        task_req = np.where(np.diff(self.task_step_ptr) > 0, task_req, 0)
        return np.bincount(self.task_query, weights=task_req,
                           minlength=self.num_queries).astype(np.int64)


def costs_for(cfg: SystemConfig, dim: int, cand_list_len: int, pq_m: int = 0,
              vector_bytes: int = 0) -> Costs:
    """Per-operation costs of ``cfg`` for vectors of ``dim`` dimensions (``vector_bytes``
    bytes) and a candidate list of ``cand_list_len`` entries (the trace's L), in DRAM
    cycles; ``pq_m``: PQ sub-spaces of an IVF-PQ trace (0: no codes, the scan costs of codes
    and lookup tables are 0)."""
    h, g, tck = cfg.host, cfg.gpc, TCK_PS
    su, sw = cfg.scan_unit, cfg.switch_core

    def sc(n):  # scan-unit cycles -> DRAM cycles
        return n / su.clock_GHz * 1000.0 / tck

    def hc(n):  # host cycles -> DRAM cycles (float)
        return n / h.clock_GHz * 1000.0 / tck

    def gc(n):
        return n / g.clock_GHz * 1000.0 / tck

    def wc(n):  # switch-core cycles -> DRAM cycles
        return n / sw.clock_GHz * 1000.0 / tck

    link = cfg.link
    return Costs(
        host_dist=hc(dim / h.distance_dims_per_cycle + h.distance_overhead_cycles),
        host_visit=hc(h.visit_check_cycles), host_insert=hc(h.insert_cycles(cand_list_len)),
        host_select=hc(h.select_cycles), host_merge=hc(h.merge_cycles_per_result),
        host_lat=ns_to_cycles(h.onchip_latency_ns), host_mlp=h.outstanding_misses,
        gpc_dist=gc(dim / g.distance_dims_per_cycle + g.distance_overhead_cycles),
        gpc_visit=gc(g.visit_check_cycles), gpc_insert=gc(g.insert_cycles(cand_list_len)),
        gpc_select=gc(g.select_cycles), gpc_partial=gc(g.partial_sum_cycles),
        dev_lat=ns_to_cycles(cfg.device.onchip_latency_ns), gpc_mlp=g.outstanding_requests,
        pu_latency=ns_to_cycles(cfg.rank_pu.pipeline_latency_ns),
        accel_latency=ns_to_cycles(cfg.cxl_anns.accel_latency_ns),
        accel_mlp=cfg.cxl_anns.accel_outstanding,
        req_wire=link.wire_bytes(link.request_slots), data_wire=link.wire_bytes(link.data_slots),
        slot_wire=link.wire_bytes(1), slot_bytes=link.slot_bytes,
        host_lut=hc(dim / pq_m / h.distance_dims_per_cycle) if pq_m else 0.0,
        host_code=hc(pq_m / h.adc_lookups_per_cycle + h.scan_item_overhead_cycles)
        if pq_m else 0.0,
        scan_code=sc(1.0 / su.codes_per_cycle),
        scan_dot=sc(vector_bytes / su.dot_bytes_per_cycle),
        scan_lut_load=sc(su.lut_load_cycles), scan_pipeline=sc(su.pipeline_cycles),
        scan_mlp=su.outstanding_requests,
        host_lut_add=hc(1.0 / h.lut_add_entries_per_cycle) if pq_m else 0.0,
        scan_lut_build=sc(dim / pq_m / su.lut_build_macs_per_cycle) if pq_m else 0.0,
        host_stream_mlp=max(h.outstanding_misses, h.stream_prefetch_lines),
        scan_gemm=sc(max(vector_bytes / su.dot_bytes_per_cycle,
                         su.batch_queries * dim / su.gemm_macs_per_cycle)),
        scan_lut_add=sc(1.0 / su.lut_add_entries_per_cycle) if pq_m else 0.0,
        sw_dist=wc(dim / sw.distance_dims_per_cycle + sw.distance_overhead_cycles),
        sw_visit=wc(sw.visit_check_cycles), sw_insert=wc(sw.insert_cycles(cand_list_len)),
        sw_select=wc(sw.select_cycles), sw_merge=wc(sw.merge_cycles_per_result),
        sw_lat=ns_to_cycles(sw.onchip_latency_ns), sw_mlp=sw.outstanding_requests,
    )


#: The task pools by where their contexts sit: ``POOL_HOST`` (the host's cores), then one
#: per device (``1 + d``), the host's I/O agent (``agent_pool(D)``) and the CXL switch's cores
#: (``switch_pool(D)``), last so that the pools of the systems without them keep their
#: numbers.
POOL_HOST = 0


def agent_pool(num_devices: int) -> int:
    """The pool of the host's I/O agent (dispatch, the merge of searches on the devices)."""
    return num_devices + 1


def switch_pool(num_devices: int) -> int:
    """The pool of the search contexts in the CXL switch."""
    return num_devices + 2


def pool_sizes(cfg: SystemConfig, agent_contexts: int) -> np.ndarray:
    """Contexts per pool: host cores, GPC contexts of each device, the host I/O agent, the
    cores in the CXL switch (0 without a switch): per place, the contexts of the unit that
    runs searches there (cosmos.units.search_unit_at)."""
    D = cfg.device.count
    sizes = np.zeros(D + 3, dtype=np.int64)

    def at(location):
        u = search_unit_at(location)
        return u.contexts_per_place(cfg) if u is not None else 0

    sizes[POOL_HOST] = at("host")
    sizes[1:D + 1] = at("device")
    sizes[agent_pool(D)] = agent_contexts
    sizes[switch_pool(D)] = at("switch") if cfg.switch.present else 0
    return sizes


# ------------------------------------------------------------------------------------------
# The builder kernel. One pass with generous preallocated buffers (sizes from Python).
# ------------------------------------------------------------------------------------------


class StepTable(NamedTuple):
    """A declaration resolved for the builder (:func:`step_rows`): one row per step of each
    place, in declaration order, then the cached variants."""

    ints: np.ndarray        # (N_R, rows) int64: fields R_* of each row
    floats: np.ndarray      # (N_F, rows) float64: fields F_*
    place_ptr: np.ndarray   # (N_PLACES + 1,) int64: place p = rows place_ptr[p]:place_ptr[p+1]


class TraceWalk(NamedTuple):
    """The trace arrays the builder walks (cosmos.trace_input.TraceArrays). Scan traces:
    search ``s`` is a scan element of ``scan_count[s]`` codes in ``scan_lines[s]`` lines, its
    range object ``range_base + s``; a query's re-rank reads are ``rr_ptr[q]:rr_ptr[q+1]`` of
    the program's reads, grouped by device (``rr_dev``). Empty scan arrays for a graph
    trace."""

    query_ptr: np.ndarray
    search_cluster: np.ndarray
    search_entry: np.ndarray
    search_hop_ptr: np.ndarray
    hop_node: np.ndarray
    hop_degree: np.ndarray
    hop_read_ptr: np.ndarray
    hop_cand_inserts: np.ndarray
    scan_count: np.ndarray
    scan_lines: np.ndarray
    range_base: int          # the first scan element's object id (the trace's N nodes)
    term_base: int           # the term table of list 0's object id (N + S; OBJ_TERMS)
    rr_ptr: np.ndarray
    rr_dev: np.ndarray


class BuildTarget(NamedTuple):
    """What the builder needs of the system, the placement and the layout."""

    mode: int                 # where the searches run: SEARCH_HOST, SEARCH_DEVICES, SEARCH_SWITCH
    num_devices: int
    k: int                    # results per search
    lut_entries: int          # entries of one IVF-PQ lookup table (0: none)
    term_lines: int           # lines of one list's precomputed term table (0: not read)
    cluster_device: np.ndarray  # (C,) int64 the placement
    cached: np.ndarray        # (N,) uint8 node held in the host graph cache (or (1,) zeros)
    node_lines_max: int       # lines of an adjacency list at most
    vector_lines: int         # lines of a vector
    vec_R: int                # a vector's lines: line l at l % R x rank_step + l // R x
    vec_rstep: int            # col_step (cosmos.layout: rank_parts, rank_step, col_step)
    vec_cstep: int
    slot_wire: float          # wire bytes of one 16-byte message slot
    slot_bytes: int
    max_tasks: int            # buffer sizes (worst case)
    max_steps: int


@nb.njit(cache=True)
def _adjacency_lines(degree, node_lines_max):
    """64-byte lines read for an adjacency list of ``degree`` 4-byte ids (1 .. node_lines_max)."""
    nl = (degree * 4 + LINE_BYTES - 1) // LINE_BYTES
    return min(max(nl, 1), node_lines_max)


# Rows of the step table the builder interprets (cosmos.systems.SystemModel resolved by
# :func:`step_rows`): per row, int fields ``R_*`` and float fields ``F_*``. A step's class is
# its row and its memory instance / link: every other class field is the same for all the
# steps of one row on one device.
(R_OP, R_CAT, R_DEV, R_LINK, R_RANK_LOCAL, R_MLP, R_LAT, R_SRC, R_COUNT, R_PAY_FIXED,
 R_PAY_PER, R_ALT, R_ROUTE) = range(13)
N_R = 13
F_CLINE, F_C0, F_C1 = range(3)
N_F = 3
DEV_SEARCH = -2     # R_DEV: the device of the cluster search (else a fixed instance, -1 none)


def _numbered(vocabulary: tuple, words: tuple, what: str) -> tuple:
    """The position in ``vocabulary`` of each of ``words`` (the builder's constants below, in
    the order it names them); ImportError unless they are the vocabulary's words, each once: a
    place or count cosmos.systems declares and the kernel does not handle (or the reverse) is
    caught when this module loads, not by a wrong program."""
    if sorted(words) != sorted(vocabulary):
        raise ImportError(f"cosmos.program: the builder's {what} {sorted(words)} are not "
                          f"cosmos.systems' {sorted(vocabulary)}")
    return tuple(vocabulary.index(w) for w in words)


# places of a query: rows pp[PL_x]:pp[PL_x + 1] of the step table (cosmos.systems.PLACES)
PL_ENTRY, PL_ADJ, PL_VEC, PL_CAND, PL_DISPATCH, PL_DONE, PL_MERGE, PL_SCAN, PL_RERANK = \
    _numbered(PLACES, ("entry", "adjacency", "vectors", "candidates", "dispatch",
                       "device_done", "merge", "scan", "rerank"), "places")
N_PLACES = len(PLACES)
# counts: cnt[C_x] in the kernel (cosmos.systems.COUNTS)
(C_ONE, C_DEGREE, C_READS, C_INSERTS, C_PROBES_K, C_RANK_PARTS, C_READS_X_PARTS, C_K, C_CODES,
 C_LUT, C_RERANK, C_LISTS, C_LISTS_LUT, C_DEV_K) = \
    _numbered(COUNTS, ("one", "degree", "reads", "inserts", "probes-x-k", "rank-parts",
                       "reads-x-rank-parts", "k", "codes", "lut-entries", "rerank-reads",
                       "lists", "lists-x-lut-entries", "devices-x-k"), "counts")
N_COUNTS = len(COUNTS)
C_RANGE_LINES = N_COUNTS    # (not a declared count) lines of the scan element's range
C_TERM_OBJ = N_COUNTS + 1   # (not a declared count) the probed list's term-table object


@nb.njit(cache=True, inline="always")
def _after_cycles(x):
    """Whole cycles of a step's compute of ``x`` cycles (rounded up), at most
    :data:`MAX_CYCLES` (a longer one takes the run past the engine's clock, which stops it)."""
    c = np.ceil(x)
    if c >= MAX_CYCLES:
        return MAX_CYCLES
    return int(c)


@nb.njit(cache=True, inline="always")
def _emit(sa, ca, si, tab, row, d, node, r0, cnt, vec, tg):
    """Append step ``si`` (arrays ``sa``) of row ``row`` of the :class:`StepTable` ``tab`` for
    a search on device ``d`` (``node``: the entry or expanded node, ``r0``: the hop's first
    read, ``cnt``: the counts at this place; ``tg``: the :class:`BuildTarget`); a row with a
    cached variant uses it when ``node`` is cached. The class row (tables ``ca``) is filled
    by its first step. Returns ``si + 1``."""
    rt, rf = tab.ints, tab.floats
    node_lines_max, cached = tg.node_lines_max, tg.cached
    slot_wire, slot_bytes = tg.slot_wire, tg.slot_bytes
    alt = rt[R_ALT, row]
    if alt >= 0 and cached[node] != 0:
        row = alt
    ct, cl, cset, nmax = ca
    D1 = cset.shape[0] // rt.shape[1]
    op = rt[R_OP, row]
    dv = rt[R_DEV, row]
    dev = d if dv == DEV_SEARCH else dv
    c = row * D1 + dev + 1
    src = rt[R_SRC, row]
    if cset[c] == 0:
        cset[c] = 1
        ct[K_KIND, c] = op
        ct[K_CAT, c] = rt[R_CAT, row]
        ct[K_DEV, c] = dev
        ct[K_LINK, c] = rt[R_LINK, row]
        ct[K_ROUTE, c] = rt[R_ROUTE, row]
        ct[K_RANK_LOCAL, c] = rt[R_RANK_LOCAL, row]
        ct[K_MLP, c] = rt[R_MLP, row]
        ct[K_LAT, c] = rt[R_LAT, row]
        if op == STEP_MEM and (src == OBJ_VECTOR or src == OBJ_READS):
            ct[K_R, c] = vec[0]
            ct[K_RSTEP, c] = vec[1]
            ct[K_CSTEP, c] = vec[2]
        else:
            ct[K_R, c] = 1
            ct[K_RSTEP, c] = 0
            ct[K_CSTEP, c] = LINE_BYTES
        ct[K_SRC, c] = src
        ct[K_OLINES, c] = vec[3] if src == OBJ_READS else 0
        cl[c] = rf[F_CLINE, row]
    n = cnt[rt[R_COUNT, row]]
    obj = 0
    nreq = 0
    after = 0
    wire = 0.0
    if op == STEP_MEM:
        if src == OBJ_VECTOR:
            obj = node
            nreq = vec[3]
        elif src == OBJ_ADJACENCY:
            obj = node
            nreq = _adjacency_lines(cnt[C_DEGREE], node_lines_max)
        elif src == OBJ_RANGE:
            obj = node
            nreq = cnt[C_RANGE_LINES]
        elif src == OBJ_TERMS:
            obj = cnt[C_TERM_OBJ]
            nreq = tg.term_lines
        else:
            obj = r0
            nreq = cnt[C_READS] * vec[3]
        after = _after_cycles(rf[F_C0, row] + n * rf[F_C1, row])
    elif op == STEP_XFER:
        if n > nmax[row]:
            nmax[row] = n       # (the payload is checked against the limit after the build)
        wire = (1 + (rt[R_PAY_FIXED, row] + rt[R_PAY_PER, row] * n + slot_bytes - 1)
                // slot_bytes) * slot_wire
    else:
        after = _after_cycles(rf[F_C0, row] + n * rf[F_C1, row])
    sa[0][si] = c
    sa[1][si] = obj
    sa[2][si] = nreq
    sa[3][si] = after
    sa[4][si] = wire
    return si + 1


@nb.njit(cache=True)
def _build(tab, tw, tg):
    """Interpret the step table ``tab`` (:class:`StepTable`) over the trace ``tw``
    (:class:`TraceWalk`) for the system and layout ``tg`` (:class:`BuildTarget`).
    ``tg.mode = SEARCH_HOST``: one task per query on the host cores (every search, then the
    merge); ``SEARCH_DEVICES``: per device with probed clusters (first-probe order) a
    dispatch task on the I/O agent, then a search task on that device's GPC contexts, then
    one merge task on the agent when all have finished; ``SEARCH_SWITCH``: a dispatch task
    on the I/O agent (if the model declares dispatch steps), then one task on a core context
    in the CXL switch (every search, the merge, then the ``device_done`` steps). A scan
    trace's re-rank reads make one ``rerank`` group per device (the search task's device
    only, on the devices), after the task's searches."""
    pp = tab.place_ptr
    rt = tab.ints
    query_ptr, search_cluster, search_entry = tw.query_ptr, tw.search_cluster, tw.search_entry
    search_hop_ptr, hop_node, hop_degree = tw.search_hop_ptr, tw.hop_node, tw.hop_degree
    hop_read_ptr, hop_cand_inserts = tw.hop_read_ptr, tw.hop_cand_inserts
    scan_count, scan_lines, range_base = tw.scan_count, tw.scan_lines, tw.range_base
    rr_ptr, rr_dev = tw.rr_ptr, tw.rr_dev
    mode, num_devices, k, lut_entries = tg.mode, tg.num_devices, tg.k, tg.lut_entries
    gpc = 1 if mode == SEARCH_DEVICES else 0
    cluster_device, max_tasks, max_steps = tg.cluster_device, tg.max_tasks, tg.max_steps
    vec_R, vector_lines = tg.vec_R, tg.vector_lines
    Q = query_ptr.shape[0] - 1
    D = num_devices
    agent = D + 1
    on_switch = mode == SEARCH_SWITCH
    sw_pool = D + 2
    sw_dispatch = on_switch and pp[PL_DISPATCH + 1] > pp[PL_DISPATCH]
    query_task_ptr = np.zeros(Q + 1, np.int64)
    task_query = np.empty(max_tasks, np.int64)
    task_pool = np.empty(max_tasks, np.int64)
    task_succ = np.empty(max_tasks, np.int64)
    task_npred = np.empty(max_tasks, np.int64)
    task_device = np.empty(max_tasks, np.int64)
    task_step_ptr = np.zeros(max_tasks + 1, np.int64)
    # every field of a step is written (empty, not zeros: pages never written take no memory)
    sa = (np.empty(max_steps, np.int32), np.empty(max_steps, np.int64),
          np.empty(max_steps, np.int32), np.empty(max_steps, np.int64),
          np.empty(max_steps, np.float64))
    K = rt.shape[1] * (D + 2)
    # class tables, classes filled, and per step-table row the largest count of its messages
    ca = (np.zeros((N_CLS_INT, K), np.int64), np.zeros(K, np.float64), np.zeros(K, np.int64),
          np.zeros(rt.shape[1], np.int64))
    vec = (vec_R, tg.vec_rstep, tg.vec_cstep, vector_lines)   # a vector's lines (each)
    cnt = np.zeros(N_COUNTS + 2, np.int64)
    cnt[C_ONE] = 1
    cnt[C_K] = k
    cnt[C_LUT] = lut_entries
    has_scan = scan_count.shape[0] > 0
    has_rerank = pp[PL_RERANK + 1] > pp[PL_RERANK] and rr_ptr.shape[0] > 0
    dev_lists = np.zeros(D, np.int64)
    dev_rr = np.zeros(D, np.int64)
    # partial distances per vector: one per rank holding a segment (a vector of fewer 64-B
    # lines than ranks leaves some ranks without one)
    cnt[C_RANK_PARTS] = min(vec_R, vector_lines)
    ti = 0
    si = 0
    dev_order = np.empty(D, np.int64)
    seen = np.zeros(D, np.int64)
    for q in range(Q):
        s0 = query_ptr[q]
        s1 = query_ptr[q + 1]
        cnt[C_PROBES_K] = (s1 - s0) * k
        nd = 1
        if gpc == 1 or has_scan:
            nd = 0
            for s in range(s0, s1):
                d = cluster_device[search_cluster[s]]
                dev_lists[d] += 1
                if seen[d] == 0:
                    seen[d] = 1
                    dev_order[nd] = d
                    nd += 1
            cnt[C_DEV_K] = nd * k
            if has_rerank:
                for i in range(rr_ptr[q], rr_ptr[q + 1]):
                    dev_rr[rr_dev[i]] += 1
            if gpc == 0:            # (the host's one task: the distinct devices were counted)
                for j in range(nd):
                    seen[dev_order[j]] = 0
                    dev_lists[dev_order[j]] = 0
                    dev_rr[dev_order[j]] = 0
                nd = 1
        merge_task = ti + 2 * nd
        for j in range(nd):
            dj = -1
            if gpc == 1:
                dj = dev_order[j]
                seen[dj] = 0
                cnt[C_LISTS] = dev_lists[dj]
                cnt[C_LISTS_LUT] = dev_lists[dj] * lut_entries
                cnt[C_RERANK] = dev_rr[dj]
                dev_lists[dj] = 0
                dev_rr[dj] = 0
                task_query[ti] = q
                task_pool[ti] = agent
                task_succ[ti] = ti + 1
                task_npred[ti] = 0
                task_device[ti] = dj
                for row in range(pp[PL_DISPATCH], pp[PL_DISPATCH + 1]):
                    si = _emit(sa, ca, si, tab, row, dj, 0, 0, cnt, vec, tg)
                ti += 1
                task_step_ptr[ti] = si
                task_query[ti] = q
                task_pool[ti] = 1 + dj
                task_succ[ti] = merge_task
                task_npred[ti] = 1
                task_device[ti] = dj
            else:
                if sw_dispatch:     # the query to the switch, from the I/O agent
                    cnt[C_LISTS] = s1 - s0
                    cnt[C_LISTS_LUT] = (s1 - s0) * lut_entries
                    if has_rerank:
                        cnt[C_RERANK] = rr_ptr[q + 1] - rr_ptr[q]
                    task_query[ti] = q
                    task_pool[ti] = agent
                    task_succ[ti] = ti + 1
                    task_npred[ti] = 0
                    task_device[ti] = -1
                    for row in range(pp[PL_DISPATCH], pp[PL_DISPATCH + 1]):
                        si = _emit(sa, ca, si, tab, row, -1, 0, 0, cnt, vec, tg)
                    ti += 1
                    task_step_ptr[ti] = si
                task_query[ti] = q
                task_pool[ti] = sw_pool if on_switch else 0
                task_succ[ti] = -1
                task_npred[ti] = 1 if sw_dispatch else 0
                task_device[ti] = -1
            for s in range(s0, s1):
                d = cluster_device[search_cluster[s]]
                if gpc == 1 and d != dj:
                    continue
                if has_scan:
                    cnt[C_CODES] = scan_count[s]
                    cnt[C_RANGE_LINES] = scan_lines[s]
                    cnt[C_TERM_OBJ] = tw.term_base + search_cluster[s]
                    for row in range(pp[PL_SCAN], pp[PL_SCAN + 1]):
                        si = _emit(sa, ca, si, tab, row, d, range_base + s, 0, cnt, vec, tg)
                    continue
                e = search_entry[s]
                for row in range(pp[PL_ENTRY], pp[PL_ENTRY + 1]):
                    si = _emit(sa, ca, si, tab, row, d, e, 0, cnt, vec, tg)
                for h in range(search_hop_ptr[s], search_hop_ptr[s + 1]):
                    node = hop_node[h]
                    r0 = hop_read_ptr[h]
                    nr = hop_read_ptr[h + 1] - r0
                    cnt[C_DEGREE] = hop_degree[h]
                    cnt[C_READS] = nr
                    cnt[C_INSERTS] = hop_cand_inserts[h]
                    cnt[C_READS_X_PARTS] = nr * cnt[C_RANK_PARTS]
                    for row in range(pp[PL_ADJ], pp[PL_ADJ + 1]):
                        si = _emit(sa, ca, si, tab, row, d, node, r0, cnt, vec, tg)
                    if nr > 0:
                        for row in range(pp[PL_VEC], pp[PL_VEC + 1]):
                            si = _emit(sa, ca, si, tab, row, d, node, r0, cnt, vec, tg)
                    for row in range(pp[PL_CAND], pp[PL_CAND + 1]):
                        si = _emit(sa, ca, si, tab, row, d, node, r0, cnt, vec, tg)
            if has_rerank:
                # the re-rank reads of this task, one group per device (grouped by device)
                i = rr_ptr[q]
                while i < rr_ptr[q + 1]:
                    d = rr_dev[i]
                    i1 = i + 1
                    while i1 < rr_ptr[q + 1] and rr_dev[i1] == d:
                        i1 += 1
                    if gpc == 0 or d == dj:
                        cnt[C_READS] = i1 - i
                        cnt[C_RERANK] = i1 - i
                        for row in range(pp[PL_RERANK], pp[PL_RERANK + 1]):
                            si = _emit(sa, ca, si, tab, row, d, 0, i, cnt, vec, tg)
                    i = i1
            if gpc == 1:
                for row in range(pp[PL_DONE], pp[PL_DONE + 1]):
                    si = _emit(sa, ca, si, tab, row, dj, 0, 0, cnt, vec, tg)
                ti += 1
                task_step_ptr[ti] = si
        if gpc == 1:
            task_query[ti] = q
            task_pool[ti] = agent
            task_succ[ti] = -1
            task_npred[ti] = nd
            task_device[ti] = -1
        cnt[C_LISTS] = s1 - s0
        for row in range(pp[PL_MERGE], pp[PL_MERGE + 1]):
            si = _emit(sa, ca, si, tab, row, -1, 0, 0, cnt, vec, tg)
        if on_switch:               # the switch core's results go up to the host
            for row in range(pp[PL_DONE], pp[PL_DONE + 1]):
                si = _emit(sa, ca, si, tab, row, -1, 0, 0, cnt, vec, tg)
        ti += 1
        task_step_ptr[ti] = si
        query_task_ptr[q + 1] = ti
    # Views, not copies: the arrays were sized for the worst case, but pages never written
    # take no memory, while copies would raise the build's peak.
    return (query_task_ptr, task_query[:ti], task_pool[:ti], task_succ[:ti], task_npred[:ti],
            task_device[:ti], task_step_ptr[:ti + 1], sa[0][:si], sa[1][:si], sa[2][:si],
            sa[3][:si], sa[4][:si], ca[0], ca[1], ca[3])


def term_table_bytes(pq_m: int) -> int:
    """Bytes of one list's precomputed term table (faiss IndexIVFPQ ``precomputed_table``):
    pq_m x 256 entries of LUT_ENTRY_BYTES (16 KiB at pq_m = 16), the same table the host adds
    per probed list (``host_lut_add`` x ``lut-entries``)."""
    return int(pq_m) * PQ_KSUB * LUT_ENTRY_BYTES


_CATEGORY_CODE = {name: i for i, name in enumerate(CATEGORIES)}
_OBJ_CODE = {"entry-vector": OBJ_VECTOR, "adjacency": OBJ_ADJACENCY, "hop-vectors": OBJ_READS,
             "list-codes": OBJ_RANGE, "list-vectors": OBJ_RANGE, "list-terms": OBJ_TERMS,
             "rerank-vectors": OBJ_READS}


def check_message(model, where: str, send, vector_bytes: int, count: int = 0) -> int:
    """The payload in bytes of the Send step ``send`` of ``model`` (at ``where``, e.g.
    ``"dispatch[0]"``) for vectors of ``vector_bytes`` and its count ``count``; UserError
    naming the step's largest field if it is beyond cosmos.systems.MAX_MESSAGE_BYTES."""
    parts = {"vectors": send.vectors * int(vector_bytes), "bytes": send.bytes,
             "per_item_bytes": send.per_item_bytes * int(count)}
    total = sum(parts.values())
    if total > MAX_MESSAGE_BYTES:
        field = max(parts, key=parts.get)
        terms = [f"vectors={send.vectors:,} x {vector_bytes}-byte vectors"] if send.vectors \
            else []
        terms += [f"bytes={send.bytes:,}"] if send.bytes else []
        if send.per_item_bytes and count:
            terms.append(f"per_item_bytes={send.per_item_bytes:,} x {send.count} "
                         f"(up to {count:,} in this trace)")
        raise UserError(
            f"system model {model.name!r}: {where}.{field}: a message of {total:,} bytes "
            f"({' + '.join(terms)}) is more than one message carries: at most "
            f"{MAX_MESSAGE_BYTES:,} bytes (2**40; cosmos.systems.MAX_MESSAGE_BYTES)")
    return total


def _check_messages(model, pp: np.ndarray, count_max: np.ndarray, vector_bytes: int) -> None:
    """Every Send step of ``model`` against the message limit, with the largest count it
    had in the program (``count_max`` per step-table row, rows ``pp[p]:pp[p+1]`` of place
    ``p`` in declaration order: :func:`step_rows`)."""
    for p, place in enumerate(PLACES):
        for i, st in enumerate(getattr(model, place)):
            if isinstance(st, Send):
                check_message(model, f"{place}[{i}]", st, vector_bytes,
                              int(count_max[pp[p] + i]))


def step_rows(model, costs: Costs, vector_lines: int, vector_bytes: int, num_devices: int,
              code_bytes: int = 0, switch: bool = True):
    """The step table of ``model`` (a validated cosmos.systems.SystemModel) with ``costs``:
    ``(rt, rf, pp)``: int rows ``(N_R, rows)``, float rows ``(N_F, rows)`` and the place
    pointers ``(N_PLACES + 1,)`` (a row's cached variant is appended after all places).
    ``code_bytes``: bytes per item of a scan's list reads (a PQ code, or a full vector);
    their per-item cost is charged per 64-byte line returned, ``64 / code_bytes`` items
    each (a list's last, partly filled line costs a whole line, as a pipeline taking one
    line per cycle spends it). ``switch``: the devices sit behind a CXL switch (each row's
    route, cosmos.units.route)."""
    count_code = {name: i for i, name in enumerate(COUNTS)}
    cv = costs._asdict()
    ints, floats, pp, alts = [], [], [0], []

    def terms(seq):
        c0 = 0.0
        c1 = 0.0
        count = "one"
        for t in seq:
            if t.count == "one":
                c0 = c0 + float(cv[t.value])
            else:
                count = t.count
                c1 = c1 + float(cv[t.value])
        return c0, c1, count_code[count]

    def row(st, where):
        r = [0] * N_R
        f = [0.0] * N_F
        r[R_CAT] = _CATEGORY_CODE[st.category]
        r[R_ALT] = -1
        r[R_MLP] = 1
        if isinstance(st, Read):
            r[R_OP] = STEP_MEM
            r[R_SRC] = _OBJ_CODE[st.objects]
            if st.memory == "host-cache":
                r[R_DEV] = num_devices
            else:
                r[R_DEV] = DEV_SEARCH
            u = unit(st.unit)       # its in-flight limit and latency are Costs fields
            segments = model.route(st, switch)
            r[R_LINK] = int(len(segments) > 0)
            r[R_ROUTE] = route_mask(segments)
            r[R_RANK_LOCAL] = int(st.rank_pus or u.rank_local)
            r[R_MLP], r[R_LAT] = cv[st.mlp or u.inflight], cv[u.latency]
            if st.per_vector is not None:
                if r[R_SRC] == OBJ_TERMS:     # per entry of the term table
                    f[F_CLINE] = cv[st.per_vector] * LINE_BYTES / LUT_ENTRY_BYTES
                elif r[R_SRC] == OBJ_RANGE:
                    f[F_CLINE] = cv[st.per_vector] * LINE_BYTES / code_bytes
                else:
                    f[F_CLINE] = cv[st.per_vector] / vector_lines
            f[F_C0], f[F_C1], r[R_COUNT] = terms(st.after)
        elif isinstance(st, Send):
            r[R_OP] = STEP_XFER
            r[R_DEV] = DEV_SEARCH
            r[R_LINK] = 0 if st.direction == "down" else 1
            r[R_ROUTE] = route_mask(model.route(st, switch))
            r[R_COUNT] = count_code[st.count]
            r[R_PAY_FIXED] = check_message(model, where, st, vector_bytes)  # its fixed part
            r[R_PAY_PER] = st.per_item_bytes
        else:
            r[R_OP] = STEP_COMPUTE
            r[R_DEV] = -1
            f[F_C0], f[F_C1], r[R_COUNT] = terms(st.cost)
        return r, f

    for place in PLACES:
        for i, st in enumerate(getattr(model, place)):
            r, f = row(st, f"{place}[{i}]")
            if isinstance(st, Read) and st.cached is not None:
                alts.append((len(ints), st.cached))
            ints.append(r)
            floats.append(f)
        pp.append(len(ints))
    for i, st in alts:
        r, f = row(st, "")
        ints[i][R_ALT] = len(ints)
        ints.append(r)
        floats.append(f)
    rt = np.array(ints, np.int64).T.copy() if ints else np.zeros((N_R, 0), np.int64)
    rf = np.array(floats, np.float64).T.copy() if floats else np.zeros((N_F, 0), np.float64)
    return rt, rf, np.array(pp, np.int64)


def build_program(cfg: SystemConfig, trace, layout: Layout, cluster_device: np.ndarray) -> Program:
    """Compile every query of ``trace`` into the flat program of system ``cfg``.

    Parameters
    ----------
    cfg : SystemConfig
    trace : cosmos.trace_input.TraceArrays
    layout : Layout
        Addresses of nodes and vectors (cosmos.layout.build_layout).
    cluster_device : (C,) int64
        Placement.

    The steps come from the execution model ``cfg.kind`` names (cosmos.systems): per
    cluster search its ``entry`` steps, per hop its ``adjacency``, ``vectors`` (if the hop
    reads any) and ``candidates`` steps; per query its ``merge`` steps; for searches on the
    GPCs per device its ``dispatch`` and ``device_done`` steps around the device's search
    task. A read of an object held in the host graph cache (``layout.node_cached``) uses the
    read's ``cached`` variant.

    A scan trace (an ``"ivfpq"`` or ``"exact"`` model): per scan element its ``scan`` steps
    (a list read is one range object: the element's lines from ``layout.list_addr``,
    appended to the address table after the node entries), per task its ``rerank`` steps
    once per device holding some of the query's re-rank candidates (a search task on the
    GPCs re-ranks those of its device), the program's reads being the re-rank reads grouped
    by device within each query.
    """
    cfg.validate()
    model = model_for(cfg)
    meta = trace.meta
    family = trace.index_kind       # "graph", "ivfpq" or "exact"
    if family != model.index:
        raise UserError(f"trace: an {family!r} trace cannot be replayed by system model "
                        f"{model.name!r}, which replays {model.index!r} traces")
    batched = int(meta.get("batch_queries", 1))
    if batched != model.batch_queries:
        raise UserError(
            "trace: a trace of " + (f"batches of {batched} queries" if batched > 1 else
                                     "single queries") + " cannot be replayed by system "
            f"model {model.name!r}, which replays " + (
                f"batches of {model.batch_queries} (cosmos.systems.batch_trace of an exact "
                f"trace with scan_unit.batch_queries = {model.batch_queries})"
                if model.batch_queries > 1 else "traces of single queries"))
    dim = int(meta["dim"])
    k = int(meta["k"])
    vector_bytes = int(meta["vector_bytes"])
    pq_m = int(meta.get("pq_m", 0)) if family == "ivfpq" else 0
    c = costs_for(cfg, dim, int(meta["cand_list_len"]), pq_m, vector_bytes)
    D = cfg.device.count
    Q = trace.num_queries
    S = trace.search_cluster.shape[0]
    H = trace.hop_node.shape[0]
    mode = SEARCH_MODE[model.search_location]
    n = {p: len(getattr(model, p)) for p in PLACES}
    max_tasks = {SEARCH_HOST: Q + 1, SEARCH_DEVICES: Q * (2 * D + 1) + 1,
                 SEARCH_SWITCH: 2 * Q + 1}[mode]
    max_steps = (S * (n["entry"] + n["scan"])
                 + H * (n["adjacency"] + n["vectors"] + n["candidates"])
                 + Q * (n["merge"] + D * (n["dispatch"] + n["device_done"] + n["rerank"])) + 1)
    if model.rank_pus and layout.rank_parts < 1:
        raise ValueError("rank-level PUs need a rank-partitioned layout")
    code_bytes = int(meta.get("code_bytes", 0)) if family != "graph" else 0
    rt, rf, pp = step_rows(model, c, layout.vector_lines, vector_bytes, D, code_bytes,
                           switch=bool(cfg.switch.present))
    node_addr = layout.node_addr
    read_node = trace.read_node
    z64 = np.zeros(0, np.int64)
    scan_count, scan_lines, rr_ptr, rr_dev, lut = z64, z64, z64, z64, 0
    term_lines = 0
    if family != "graph":
        if layout.list_addr is None or layout.code_bytes != code_bytes:
            raise ValueError("a scan trace needs a layout with its list region "
                             "(cosmos.layout.build_layout(code_bytes=...))")
        sc = np.asarray(trace.search_cluster, np.int64)
        scan_count = np.asarray(trace.scan_count, np.int64)
        start = (layout.list_addr[sc].astype(np.int64)
                 + (np.asarray(trace.scan_first, np.int64) - trace.cluster_ptr[sc]) * code_bytes)
        line0 = start // LINE_BYTES
        end = -(-(start + scan_count * code_bytes) // LINE_BYTES)
        scan_lines = np.where(scan_count > 0, end - line0, 0).astype(np.int64)
        node_addr = np.concatenate([layout.node_addr,
                                    (line0 * LINE_BYTES).astype(np.uint64)])
        if model.reads_term_tables:
            # the lists' precomputed term tables: objects N + S + c (OBJ_TERMS)
            tb = term_table_bytes(pq_m)
            if layout.term_addr is None or layout.term_bytes != tb:
                raise ValueError(f"system model {model.name!r} reads the lists' term tables: "
                                 f"the layout needs its term region of {tb} bytes per list "
                                 "(cosmos.layout.build_layout(term_table_bytes=...))")
            term_lines = -(-tb // LINE_BYTES)
            node_addr = np.concatenate([node_addr, layout.term_addr.astype(np.uint64)])
        # re-rank reads grouped by device within each query (stable: trace order inside)
        rr_ptr = np.asarray(trace.rerank_ptr, np.int64)
        rn = np.asarray(trace.rerank_node)
        qof = np.repeat(np.arange(Q, dtype=np.int64), np.diff(rr_ptr))
        dev = layout.node_device[rn] if rn.size else z64
        order = np.lexsort((np.arange(rn.size), dev, qof))
        read_node = rn[order]
        rr_dev = np.asarray(dev, np.int64)[order]
        lut = pq_m * PQ_KSUB          # entries of one lookup table
    cached = layout.node_cached if layout.node_cached is not None else np.zeros(1, np.uint8)
    if model.host_cache and layout.node_cached is None:
        raise ValueError(f"system model {model.name!r} reads a host graph cache: the layout "
                         f"needs one (cosmos.layout.with_graph_cache)")
    tab = StepTable(rt, rf, pp)
    walk = TraceWalk(trace.query_ptr, trace.search_cluster, trace.search_entry,
                     trace.search_hop_ptr, trace.hop_node, trace.hop_degree, trace.hop_read_ptr,
                     trace.hop_cand_inserts, scan_count, scan_lines, trace.n, trace.n + S,
                     rr_ptr, rr_dev)
    target = BuildTarget(mode=mode, num_devices=D, k=k, lut_entries=lut, term_lines=term_lines,
                         cluster_device=np.asarray(cluster_device, np.int64), cached=cached,
                         node_lines_max=layout.node_lines, vector_lines=layout.vector_lines,
                         vec_R=layout.rank_parts, vec_rstep=layout.rank_step,
                         vec_cstep=layout.col_step, slot_wire=c.slot_wire,
                         slot_bytes=c.slot_bytes, max_tasks=max_tasks, max_steps=max_steps)
    out = _build(tab, walk, target)
    (qtp, tq, tp, tsucc, tnpred, tdev, tsp, scls, sobj, snreq, safter, swire, ct, cl,
     count_max) = out
    _check_messages(model, pp, count_max, vector_bytes)
    return Program(qtp, tq, tp, tsucc, tnpred, tdev, tsp, scls, sobj, snreq, safter, swire,
                   *ct, cl, read_node, layout.vector_addr, node_addr)
