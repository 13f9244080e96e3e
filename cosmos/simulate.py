"""Run one system on one logical trace: placement -> layout -> program -> engine -> metrics.

>>> from cosmos.presets import get_preset
>>> res = simulate(get_preset("cosmos"), "trace.npz", num_queries=2000)   # doctest: +SKIP
>>> res.summary()["qps"]                                                 # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import os
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

import cosmos.engine as _engine
import placement
from cosmos.config import SystemConfig, bytes_per_cycle, ns_to_cycles, TCK_PS
from cosmos.engine import (CF_DATA_WIRE, CF_DEV_BPC, CF_REQ_WIRE, CF_UP_BPC, CI_LINK_LAT,
                           CI_MAP, CI_MAXINFL, CI_NCH, CI_NDEV, CI_OPEN, CI_SHIFTS, CI_RING,
                           CI_SW_LAT, CI_SWITCH, CI_WIN, N_CI, SC_CLOCK, SC_DLEN, SC_DONE,
                           SC_EVENTS, SC_HEAP, SC_NEXTQ, SC_REQS_DONE, SC_RLEN)
from cosmos.layout import (AddressFields, CapacityError, Layout, build_layout,
                           graph_cache_nodes, with_graph_cache)
from cosmos.metrics import (CI_MIN_BATCHES, batch_means_ci, ci_controls,
                            query_instance_requests, steady_window)
from cosmos.metrics import summary as _summary
from cosmos.program import (MAX_CYCLES, Program, agent_pool, build_program, pool_sizes,
                            term_table_bytes)
from cosmos.specialize import (build_status, is_compiled, mark_compiled, specialized_engine,
                               use_specialized)
from cosmos.systems import SystemModel, model_for, validate_system
from cosmos.trace_input import TraceArrays, as_trace, check_trace_for
from cosmos.units import unit
from cosmos_common import UserError
from cosmos_common.sysinfo import physical_memory_bytes
from dram import kernel as dk
from dram.config import DRAMConfig
from dram.jitcache import vectorizing

MODES = ("closed", "open")


#: Open-loop arrival times are int64 DRAM cycles; the arrivals of a run must span at most this
#: many cycles (2**52 cycles of 416 ps = about 22 days): half the engine's clock
#: (cosmos.program.MAX_CYCLES = 2**53), the other half left for the queries themselves.
MAX_ARRIVAL_CYCLES = 2**52

#: Stop reasons of a run (``SimResult.stopped``, ``summary()["stopped"]``).
STOP_ALL, STOP_CI = "all queries", "ci-target"

#: ``ci_target``: the stop test never runs before :func:`ci_min_completions` completions, the
#: larger of two counts. First, the window must hold at least 10 batches
#: (cosmos.metrics.CI_MIN_BATCHES), each :data:`CI_MIN_TURNOVERS` correlation times long: a
#: closed loop forgets its past in about one latency, which is ``max_inflight`` completions
#: (Little's law). Second, :data:`CI_MIN_QUERIES`, for the start of the run: every query in
#: flight starts at once, and the throughput of the first completions stays below the steady
#: state for longer than the warm-up fraction leaves out of a short run. Measured at 1M
#: vectors, the host's systems (32 threads) stopped after 1,232 queries read 0.2-0.9 % below
#: the throughput of all 10,000 (CXL-ANNS on DEEP-like: -0.9 %, outside its +-0.75 %
#: interval), too much for a +-1 % target; stopped after 2,432, at most 0.34 % below. (That
#: was the window's plain rate; over whole turnovers, cosmos.metrics.whole_turnovers, the same
#: runs stopped after 1,000-1,400 read within their own intervals. But the `--full` preset's
#: headline ratios then fell outside the intervals of 10,000-query runs,
#: experiments/tools/check_full_ci.py: a ratio of two runs each stopped at +-1 % carries about
#: +-1.4 %. The longer runs of this minimum keep them inside.) Both are estimates; the lag-1
#: check of the batch means still rejects a window too short for the process, and the
#: coverage checks (docs/experiments.md) were run at this minimum.
CI_MIN_QUERIES = 2_000
#: ... and correlation times per batch (see :data:`CI_MIN_QUERIES`).
CI_MIN_TURNOVERS = 3
#: The same for an open loop (Poisson arrivals), whose stop test is on the mean latency: half
#: of the closed loop's counts. Neither reason for those is as strong here. The run starts
#: empty and fills at the arrival rate, not with every context at once, and an unsaturated
#: system holds fewer queries than it has contexts (Little's law: arrival rate x latency), so
#: it forgets its past sooner than a closed loop. Half still leaves a window of at least 12
#: batches of ``max_inflight`` completions. An estimate; measured at 1M vectors, every
#: latency_load point of the `--full` preset at 20-60 % load (six systems) stopped by it read
#: within the interval of the run of 2,000 queries; at 80 % load two did not, so the sweep
#: stops only up to 60 % (experiments.figures.latency_load.STOP_UP_TO_LOAD, docs/experiments.md).
CI_MIN_QUERIES_OPEN = 1_000


def ci_min_completions(max_inflight: int, mode: str = "closed") -> int:
    """Completions before the first stop test of ``ci_target`` (:data:`CI_MIN_QUERIES`):
    in a closed loop ``max(2000, 30 x max_inflight)``: 2,000 for the host's 32 threads and
    for Cosmos's 64 contexts on four devices, 7,680 for 256 contexts on 16 devices; in an
    open loop (:data:`CI_MIN_QUERIES_OPEN`) half of that."""
    if mode == "open":
        return max(CI_MIN_QUERIES_OPEN,
                   CI_MIN_BATCHES * CI_MIN_TURNOVERS * int(max_inflight) // 2)
    return max(CI_MIN_QUERIES, CI_MIN_BATCHES * CI_MIN_TURNOVERS * int(max_inflight))


def ci_check_every(max_inflight: int) -> int:
    """Completions between two stop tests of ``ci_target``: twice the queries in flight (at
    least 100), so each test sees at least one more turnover of every context."""
    return max(100, 2 * int(max_inflight))


def default_max_inflight(cfg: SystemConfig) -> int:
    """Queries in flight in closed loop unless told otherwise: one per search context (the
    host's cores, every GPC context of every device when the searches run on the GPCs, the
    switch's core contexts: the search unit's contexts, cosmos.units)."""
    return unit(model_for(cfg).search_pool).search_contexts(cfg)


def dram_config_for(cfg: SystemConfig):
    """The ``dram.DRAMConfig`` of one memory instance of ``cfg`` (a device, or host DRAM when
    the whole index lives there). The engine simulates every instance with this one
    configuration: a host graph cache (cxl-anns-cache) is an instance of the devices' DRAM
    organization."""
    if model_for(cfg).index_in_host:
        return DRAMConfig(channels=cfg.host.dram_channels, ranks=cfg.host.dram_ranks)
    return DRAMConfig(channels=cfg.device.channels, ranks=cfg.device.ranks)


def instance_capacity_bytes(cfg: SystemConfig) -> int:
    """Bytes of one memory instance that holds the index (what the layout is given): the
    host DRAM for a system whose index is there, else a device: its DRAM organization's
    capacity, at most ``device.capacity_bytes``."""
    cap = dram_config_for(cfg).capacity_bytes
    return cap if model_for(cfg).index_in_host else min(cap, cfg.device.capacity_bytes)


def check_capacity_setting(cfg: SystemConfig, overrides: dict) -> None:
    """A ``device.capacity_bytes`` the user set (``overrides``) must fit the device's DRAM
    organization: the layout uses ``min(capacity_bytes, DRAM capacity)`` (so sweeps of
    ``device.ranks`` shrink it), and a larger setting would be cut silently. UserError
    naming both otherwise."""
    if "device.capacity_bytes" not in overrides:
        return
    dram = DRAMConfig(channels=cfg.device.channels, ranks=cfg.device.ranks).capacity_bytes
    if cfg.device.capacity_bytes > dram:
        raise UserError(f"device.capacity_bytes={cfg.device.capacity_bytes} is more than a "
                        f"device's DRAM holds ({dram} bytes: device.channels="
                        f"{cfg.device.channels} x device.ranks={cfg.device.ranks} of the DDR5 "
                        "preset's chips); lower it or raise device.ranks / device.channels")


def _resolve_dram(cfg: SystemConfig, dcfg):
    """``dcfg.resolve()``; the DRAM model's ValueError names the config fields behind it."""
    try:
        return dcfg.resolve()
    except ValueError as exc:
        names = "host.dram_channels / host.dram_ranks" if model_for(cfg).index_in_host else \
            "device.channels / device.ranks"
        raise ValueError(f"system.{names}: {exc}") from None


def _channel_state(cfg: SystemConfig, dcfg):
    """``(params1, heap0)``: the one-channel DRAM parameters of ``dcfg`` (:func:`dram_config_for`)
    and the fresh controller state every channel of a simulation of ``cfg`` starts from (a
    completion buffer of 64: a tick adds at most 2 completions, drained after each tick)."""
    params1 = _resolve_dram(cfg, dataclasses.replace(dcfg, channels=1))
    heap0 = dk.new_state(params1, instances=1, completion_capacity=64, direct_reads=True).heap
    return params1, heap0


def specialized_build(cfg: SystemConfig) -> tuple[str, bool] | None:
    """``(tag, compiled)`` of the specialized engine build (:mod:`cosmos.specialize`) that
    simulations of ``cfg`` run: the builds of two configs are the same exactly when their
    tags are, and ``compiled`` says whether loading it compiles nothing. None if no build can
    be made here (then simulations run the generic engine). A pool of simulations compiles
    each build once before the runs that need it (experiments.harness.plan)."""
    return build_status(*_channel_state(cfg.validate(), dram_config_for(cfg)))


def check_arrival_span(num_queries: int, rate_qps) -> float:
    """Open loop: check ``rate_qps`` (``--rate``) and return the expected span of the arrivals
    in DRAM cycles (``num_queries / rate_qps`` seconds); ValueError if it is not a positive
    number or the span would not fit :data:`MAX_ARRIVAL_CYCLES`."""
    if rate_qps is None or not rate_qps > 0:
        raise ValueError(f"open-loop mode needs --rate/rate_qps > 0 (arrivals per second), "
                         f"got {rate_qps}")
    span_s = num_queries / rate_qps
    span_cycles = span_s * 1e12 / TCK_PS
    if not span_cycles <= MAX_ARRIVAL_CYCLES:
        limit_s = MAX_ARRIVAL_CYCLES * TCK_PS * 1e-12
        raise ValueError(f"--rate/rate_qps = {rate_qps:g} per second: {num_queries} queries "
                         f"arrive over about {span_s:.3g} s = {span_cycles:.3g} DRAM cycles of "
                         f"{TCK_PS} ps, beyond the simulator's limit of "
                         f"2**{MAX_ARRIVAL_CYCLES.bit_length() - 1} cycles "
                         f"({limit_s:.3g} s); give a rate of at least "
                         f"{num_queries / limit_s:.3g} per second")
    return span_cycles


def check_memory(cfg: SystemConfig, G: int, heap_bytes: int, engine_bytes: int,
                 request_slots: int, physical: int | None = None) -> int:
    """Refuse (ValueError naming the fields that drive it) a simulation whose controller and
    engine state would not fit this machine's physical memory; return the bytes needed."""
    need = G * heap_bytes + engine_bytes
    physical = physical_memory_bytes() if physical is None else physical
    if physical is None or need <= physical:
        return need
    model = model_for(cfg)
    if model.index_in_host:
        channels = f"host.dram_channels = {cfg.host.dram_channels}"
    else:
        channels = f"device.count x device.channels = {cfg.device.count} x {cfg.device.channels}"
        if model.host_cache:
            channels += " (+ the host graph cache's channels)"
    contexts = model.contexts_fields()
    raise ValueError(
        f"the simulation needs about {need / 1e9:.1f} GB of memory, more than this machine's "
        f"{physical / 1e9:.1f} GB: {G:,} DRAM channel controllers ({channels}) of "
        f"{heap_bytes / 1e3:.0f} kB each = {G * heap_bytes / 1e9:.1f} GB, and "
        f"{engine_bytes / 1e9:.1f} GB of engine state (mostly a request queue of "
        f"{request_slots:,} slots per channel, its size set by {contexts}); lower these fields")


def _shift_mapping(params, fields: AddressFields, sample_addr: np.ndarray):
    """(1, shift and mask of the line number for channel, rank, bank group, bank and row) if
    the DRAM model's address mapping is plain bit fields (every radix a power of two) and
    agrees with ``dram.kernel.map_address`` on a sample of addresses; else (0, zeros): the
    engine then calls map_address for every request."""
    names = ("channel", "rank", "bankgroup", "bank", "row")
    out = np.zeros(10, np.int64)
    if any(r & (r - 1) for _, r in fields.fields):
        return 0, out
    for k, name in enumerate(names):
        out[2 * k] = fields.divisor(name).bit_length() - 1
        out[2 * k + 1] = fields.radix(name) - 1
    for a in np.asarray(sample_addr[:256], dtype=np.int64):
        want = dk.map_address(params, a)[:5]
        got = tuple(((int(a) >> 6) >> int(out[2 * k])) & int(out[2 * k + 1]) for k in range(5))
        if tuple(int(v) for v in want) != got:
            return 0, np.zeros(10, np.int64)
    return 1, out


def place_clusters(cfg: SystemConfig, tr: TraceArrays, seed: int = 0) -> np.ndarray:
    """Cluster -> device with the placement policy of ``cfg`` (placement registry)."""
    sizes_vec = np.diff(tr.cluster_ptr)
    D = cfg.device.count
    # capacity in vectors: what fits one device with this index's per-vector footprint
    kwargs = {}
    if tr.cluster_adjacency is not None:
        kwargs["adjacency"] = tr.cluster_adjacency
    elif tr.centroids is not None:
        kwargs["centroids"] = tr.centroids
    try:
        return np.asarray(placement.place(sizes_vec, D, cfg.placement, seed=seed, **kwargs),
                          dtype=np.int64)
    except ValueError as exc:
        raise ValueError(f"placement {cfg.placement!r}: {exc}") from None


@dataclass
class SimResult:
    """Everything a run produced; :mod:`cosmos.metrics` turns it into tables."""

    config: SystemConfig
    trace_meta: dict
    program: Program
    layout: Layout
    cluster_device: np.ndarray
    state: object               # cosmos.engine.EngineState
    dram_state: tuple           # dram.kernel.State of each global channel (one-channel systems)
    dram_params: object         # dram.config.Params of one memory instance
    dram_config: DRAMConfig     # ... and its configuration (cosmos.energy reads it)
    num_instances: int
    cycles: int                 # simulated time: 0 to the last query's completion, DRAM cycles
    wall_s: float
    mode: str
    rate_qps: float | None
    max_inflight: int
    pool_sizes: np.ndarray
    extra: dict = field(default_factory=dict)
    #: queries simulated: the first ``queries`` of the program (all, unless stopped early)
    queries: int | None = None
    #: why the run ended: :data:`STOP_ALL` or :data:`STOP_CI` (``ci_target`` reached)
    stopped: str = STOP_ALL
    ci_target: float | None = None
    #: a run stopped by ``ci_target``: the last completion cycle its passing stop test saw
    #: (the summary's steady-state window ends there; cosmos.metrics)
    ci_until_cycle: int | None = None

    def __post_init__(self):
        if self.queries is None:
            self.queries = self.program.num_queries

    def summary(self, warmup: float = 0.1) -> dict:
        return _summary(self, warmup=warmup)


@dataclass
class Prepared:
    """A run ready for the engine (:func:`prepare`): the checked configuration and trace, the
    DRAM of one memory instance, the placement, the layout and the program."""

    cfg: SystemConfig
    model: SystemModel
    trace: TraceArrays           # the queries simulated (read-only arrays)
    label: str                   # the trace's name in error messages
    dram_config: DRAMConfig      # one memory instance's DRAM
    params: object               # dram.config.Params of one memory instance
    params1: object              # ... of one channel (each channel is its own controller)
    heap0: np.ndarray            # a fresh one-channel controller state
    fields: AddressFields
    cluster_device: np.ndarray   # (C,) the placement
    layout: Layout
    num_instances: int           # memory instances: devices (+ a host graph cache), or host
    program: Program
    pool_sizes: np.ndarray       # contexts per pool (program.pool_sizes; the agent's sized)
    mode: str
    rate_qps: float | None
    max_inflight: int
    seed: int

    @property
    def num_channels(self) -> int:
        """Global channels: memory instances x channels per instance."""
        return self.num_instances * self.params.n_channels


@dataclass
class EngineRun:
    """What the engine loop of :func:`run` leaves: its state, the channels' states, the
    queries it completed and why it stopped."""

    state: object                # cosmos.engine.EngineState
    dram_state: tuple            # dram.kernel.State of each global channel
    queries: int                 # queries completed (the first ``queries`` of the trace)
    stopped: str                 # STOP_ALL or STOP_CI
    ci_until_cycle: int | None
    wall_s: float
    specialized: bool
    #: the queries whose steps the engine logged (``state.tl_log``; cosmos.timeline)
    timeline_queries: int = 0


def _check_run_options(mode: str, ci_target: float | None, ci_min_queries: int | None):
    """ValueError naming a run option out of its range (before any work)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if ci_target is not None and not (0 < ci_target < 1):
        raise ValueError(f"ci_target (--ci-target) must be a relative half-width in (0, 1), "
                         f"e.g. 0.01, got {ci_target}")
    if ci_min_queries is not None and ci_min_queries < 1:
        raise ValueError(f"ci_min_queries must be >= 1, got {ci_min_queries}")


def _layout_for(cfg: SystemConfig, model: SystemModel, tr: TraceArrays, dcfg: DRAMConfig,
                fields: AddressFields, layout_dev: np.ndarray, n_inst: int, label: str):
    """``(layout, instances)``: the memory layout of ``tr`` over ``n_inst`` memory instances
    (cosmos.layout), plus the host graph cache as one more instance after the devices when
    the model reads one."""
    try:
        layout = build_layout(tr.cluster_ptr, tr.cluster_nodes, layout_dev, n_inst,
                              vector_bytes=int(tr.meta["vector_bytes"]),
                              max_degree=int(tr.meta["max_degree"]),
                              capacity_bytes=instance_capacity_bytes(cfg),
                              spread=cfg.layout_spread,
                              vector_ranks=dcfg.ranks if model.rank_pus else 1, fields=fields,
                              code_bytes=int(tr.meta["code_bytes"]) if model.index != "graph"
                              else 0, node_pos=tr.node_pos,
                              term_table_bytes=term_table_bytes(int(tr.meta.get("pq_m", 0)))
                              if model.reads_term_tables else 0)
    except CapacityError as exc:
        where = ("the host DRAM (host.dram_channels x host.dram_ranks = "
                 f"{cfg.host.dram_channels} x {cfg.host.dram_ranks})" if model.index_in_host
                 else "a device (device.capacity_bytes, device.channels x device.ranks)")
        raise ValueError(f"{label}: {exc}: the index of {tr.vectors:,} vectors does not fit "
                         f"{where}; give it more capacity (e.g. --set host.dram_ranks=2 or "
                         "more devices)") from None
    if model.host_cache:
        # the host DRAM graph cache is one more memory instance, after the devices
        gc = cfg.graph_cache
        need = min(gc.capacity_bytes, dcfg.capacity_bytes)
        nodes = graph_cache_nodes(tr, gc.hops, need, layout.node_lines)
        layout = with_graph_cache(layout, nodes)
        n_inst = cfg.device.count + 1
    return layout, n_inst


def prepare(cfg: SystemConfig, trace, *, num_queries: int | None = None, mode: str = "closed",
            rate_qps: float | None = None, max_inflight: int | None = None, seed: int = 0,
            cluster_device: np.ndarray | None = None,
            trace_name: str | None = None) -> Prepared:
    """The first part of :func:`simulate` (same arguments): check the configuration and the
    trace, then trace -> placement -> layout -> program; ValueError (naming the field or
    file) before any of the engine's state is allocated."""
    cfg = validate_system(cfg)
    tr = as_trace(trace)
    # a scan trace only for a scan system, a graph trace only for a graph system
    label = trace_name or (str(trace) if isinstance(trace, (str, os.PathLike)) else "trace")
    model = model_for(cfg)
    check_trace_for(model, tr, label)
    if num_queries is not None:
        if num_queries < 1:
            raise ValueError(f"num_queries must be >= 1, got {num_queries}")
        tr = tr.head(num_queries)
    tr = tr.read_only()     # one compiled engine for every caller's arrays (its docstring)
    Q = tr.num_queries
    if Q == 0:
        raise ValueError("the trace has no queries")
    if mode == "open":
        check_arrival_span(Q, rate_qps)     # before any work: arrivals must fit int64 cycles
    dcfg = dram_config_for(cfg)
    params = _resolve_dram(cfg, dcfg)
    if params.tCK_ps != TCK_PS:
        raise ValueError(f"the engine clock is tCK = {TCK_PS} ps; DRAM preset has "
                         f"{params.tCK_ps} ps")
    fields = AddressFields.from_dram_params(params)
    if cluster_device is None:
        cluster_device = place_clusters(cfg, tr, seed=seed)
    cluster_device = np.asarray(cluster_device, dtype=np.int64)
    if model.index_in_host:
        n_inst, layout_dev = 1, np.zeros_like(cluster_device)
    else:
        n_inst, layout_dev = cfg.device.count, cluster_device
    layout, n_inst = _layout_for(cfg, model, tr, dcfg, fields, layout_dev, n_inst, label)
    pg = build_program(cfg, tr, layout, layout_dev)
    psizes = pool_sizes(cfg, agent_contexts=1)
    if max_inflight is None:
        max_inflight = default_max_inflight(cfg)
    max_inflight = int(max_inflight)
    if max_inflight < 1:
        raise ValueError(f"max_inflight must be >= 1, got {max_inflight}")
    # the I/O agent (dispatch/merge) never limits: one context per possible task in flight
    tasks_per_q = int(np.diff(pg.query_task_ptr).max())
    agent = agent_pool(cfg.device.count)
    psizes[agent] = max(1, tasks_per_q * (max_inflight if mode == "closed" else Q))
    psizes[agent] = min(psizes[agent], pg.task_query.shape[0])
    # every channel starts from the same fresh controller state (:func:`_channel_state`)
    params1, heap0 = _channel_state(cfg, dcfg)
    return Prepared(cfg=cfg, model=model, trace=tr, label=label, dram_config=dcfg,
                    params=params, params1=params1, heap0=heap0, fields=fields,
                    cluster_device=cluster_device, layout=layout, num_instances=n_inst,
                    program=pg, pool_sizes=psizes, mode=mode, rate_qps=rate_qps,
                    max_inflight=max_inflight, seed=seed)


def engine_config(prep: Prepared) -> tuple[np.ndarray, np.ndarray]:
    """``(cf, ci)``: the engine's float and int configuration slots (cosmos.engine ``CF_*``,
    ``CI_*``) for the run ``prep``: links, switch, channels, the in-flight window, the
    address mapping and the window length."""
    cfg, params, pg = prep.cfg, prep.params, prep.program
    link = cfg.link
    cf = np.zeros(4, np.float64)
    cf[CF_UP_BPC] = bytes_per_cycle(cfg.switch.upstream_bandwidth_GBps)
    cf[CF_DEV_BPC] = bytes_per_cycle(link.bandwidth_GBps)
    cf[CF_REQ_WIRE] = link.wire_bytes(link.request_slots)
    cf[CF_DATA_WIRE] = link.wire_bytes(link.data_slots)
    ci = np.zeros(N_CI, np.int64)
    ci[CI_SWITCH] = int(cfg.switch.present)
    ci[CI_SW_LAT] = ns_to_cycles(cfg.switch.latency_ns)
    ci[CI_LINK_LAT] = ns_to_cycles(link.latency_ns)
    ci[CI_NCH] = params.n_channels
    ci[CI_MAXINFL] = prep.max_inflight
    ci[CI_OPEN] = int(prep.mode == "open")
    ci[CI_NDEV] = cfg.device.count
    ci[CI_SHIFTS], ci[CI_MAP:CI_MAP + 10] = _shift_mapping(
        params, prep.fields, np.concatenate([pg.vector_addr[:128], pg.node_addr[:128]]))
    # a read served at cycle c is back at c + read latency: no channel's work in a window of
    # at most that many cycles can change what the engine does in it (cosmos.engine)
    if prep.params1.read_latency < 1:
        raise ValueError(f"DRAM read latency {prep.params1.read_latency} cycles: expected >= 1")
    # (the engine's settings and functions are read from its module at each run, as
    # cosmos.engine.WIN_MAX sizes the state's window buffers: tests vary them)
    ci[CI_WIN] = min(int(prep.params1.read_latency), _engine.WIN_MAX)
    ci[CI_RING] = int(_engine.RESPONSE_RING)
    return cf, ci


def _arrivals(prep: Prepared) -> np.ndarray:
    """Open loop: the queries' seeded Poisson arrival cycles; closed loop: unused (one 0)."""
    if prep.mode != "open":
        return np.zeros(1, np.int64)
    rate_qps = prep.rate_qps
    rng = np.random.default_rng(prep.seed)
    gaps_s = rng.exponential(1.0 / rate_qps, size=prep.trace.num_queries)
    arr = np.ceil(np.cumsum(gaps_s) * 1e12 / TCK_PS)
    if not (np.isfinite(arr).all() and arr.max() < 2.0**62):   # a random tail, never seen
        raise ValueError(f"--rate/rate_qps = {rate_qps:g}: the arrivals span "
                         f"{arr.max():.3g} DRAM cycles, too long to simulate")
    return arr.astype(np.int64)


def _engine_code(prep: Prepared, specialize: bool | None):
    """``(run_chunk, admit_initial, engine, specialized)``: the generic engine's kernels, or
    those of the build specialized for this DRAM configuration (cosmos.specialize)."""
    pg = prep.program
    specialized = use_specialized(specialize, int(pg.step_nreq.sum()),
                                  compiled=lambda: is_compiled(prep.params1, prep.heap0))
    if specialized:
        try:
            eng = specialized_engine(prep.params1, prep.heap0)
            return eng._run_chunk, eng._admit_initial, eng, True
        except OSError as e:        # e.g. a read-only cache folder: the generic engine
            warnings.warn(f"cosmos.simulate: no specialized engine ({e}); running the "
                          "generic one (same results, slower)", RuntimeWarning, stacklevel=3)
    return _engine._run_chunk, _engine._admit_initial, None, False


def run(prep: Prepared, *, progress: bool = True, chunk_cycles: int = 2_000_000,
        specialize: bool | None = None, ci_target: float | None = None,
        ci_min_queries: int | None = None, warmup: float = 0.1,
        timeline_queries: int = 0) -> EngineRun:
    """The second part of :func:`simulate` (same options): allocate the engine's and the
    channels' state (after :func:`check_memory`), then run the engine in chunks of
    ``chunk_cycles`` until every admitted query completed, with the stop rule of
    ``ci_target``; the engine logs the steps of the first ``timeline_queries`` queries."""
    cfg, pg, params, params1 = prep.cfg, prep.program, prep.params, prep.params1
    Q, D, n_inst = prep.trace.num_queries, cfg.device.count, prep.num_instances
    max_inflight, mode = prep.max_inflight, prep.mode
    G = prep.num_channels
    # One controller state per global channel g = instance x channels + channel: the channels
    # of a DDR5 memory system are independent controllers, so each is simulated as a
    # one-channel memory system of the same timing and geometry (params1; ``params`` places
    # requests on channels), and the engine ticks a channel only when it can act. A tick adds
    # at most 2 completions per channel and the engine drains them after each tick.
    timeline_queries = min(max(int(timeline_queries), 0), Q)
    # (the timeline's argument only when there is one: the state of a run without is made
    # by the same call as before it existed, which tests wrap)
    tl = {"timeline_queries": timeline_queries} if timeline_queries else {}
    eng_bytes, n_req = _engine.engine_state_bytes(pg, prep.pool_sizes, n_inst,
                                                  params.n_channels, D, **tl)
    check_memory(cfg, G, prep.heap0.nbytes, eng_bytes, n_req)   # before the big allocations
    st = _engine.new_engine_state(pg, prep.pool_sizes, n_inst, params.n_channels, D, **tl)
    run_chunk, admit_initial, eng, specialized = _engine_code(prep, specialize)
    HH = np.repeat(prep.heap0[None, :], G, axis=0)   # every channel: the same fresh state
    dstate = tuple(dk.State(HH[g]) for g in range(G))
    cf, ci = engine_config(prep)
    arrivals = _arrivals(prep)
    if mode != "open":
        with vectorizing():
            admit_initial(pg, st, cf, ci, params, max_inflight)
    t0 = time.perf_counter()
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=Q, unit="query", desc=f"simulate {cfg.name}", leave=False)
    last_done = 0
    last_handled = 0
    stall = 0
    # ci_target: stop tests at completion counts next_check, next_check + every, ...
    total = Q                   # queries the run will complete (fewer once stopped)
    stopped = STOP_ALL
    until = None
    every = ci_check_every(max_inflight)
    next_check = Q + 1
    load_trace = None
    if ci_target is not None:
        # the control variate of the summary's interval (cosmos.metrics)
        load_trace = query_instance_requests(pg, n_inst)
        next_check = ci_min_completions(max_inflight, mode) if ci_min_queries is None \
            else int(ci_min_queries)
    while True:
        t_stop = int(st.scal[0]) + chunk_cycles
        done_stop = int(st.scal[SC_DONE]) + max(1, Q // 50)
        if stopped == STOP_ALL:
            done_stop = min(done_stop, next_check)
        with vectorizing():
            finished = run_chunk(pg, st, cf, ci, params, params1, HH, arrivals, t_stop,
                                  min(done_stop, total))
        done = int(st.scal[SC_DONE])
        if stopped == STOP_ALL and done >= next_check and not finished:
            if _ci_reached(st.q_done, st.q_arrival, ci_target, warmup, max_inflight,
                           load_trace, mode):
                admitted = int(st.scal[SC_NEXTQ])
                if admitted < Q:
                    # admit no more queries: those in flight run to completion
                    total = admitted
                    st.scal[SC_NEXTQ] = Q
                    stopped = STOP_CI
                    until = int(st.q_done[st.q_done >= 0].max())
                    if bar is not None:
                        bar.total = total
                        bar.refresh()
                else:               # every query is in already: nothing left to save
                    next_check = Q + 1
            else:
                next_check = done + every - (done - next_check) % every
        if int(st.scal[SC_CLOCK]) != 0:
            raise ValueError(past_clock_message(cfg, prep.label, int(st.scal[SC_CLOCK])))
        if bar is not None:
            bar.update(done - last_done)
        # Progress: a query completed, an event or a DRAM read was handled, or the engine
        # waits for work it has scheduled (events, data on its way back, served reads): a
        # long transfer or compute takes many chunks without a completion, and time moves
        # towards it. A run with none of these for 1000 chunks can never finish.
        handled = int(st.scal[SC_EVENTS]) + int(st.scal[SC_REQS_DONE])
        waiting = (int(st.scal[SC_HEAP]) + int(st.scal[SC_RLEN]) + int(st.scal[SC_DLEN])) > 0
        if done == last_done and handled == last_handled and not waiting and mode == "closed":
            stall += 1
            if stall > 1000:
                raise RuntimeError("engine made no progress for 1000 chunks (deadlock); "
                                   "please report with the config and trace")
        else:
            stall = 0
        last_done = done
        last_handled = handled
        if finished or done >= total:
            break
    if bar is not None:
        bar.close()
    if any(int(dk.views(d)["overflow"]) != 0 for d in dstate):
        raise RuntimeError("DRAM completion buffer overflowed; results are invalid")
    wall = time.perf_counter() - t0
    if eng is not None:
        mark_compiled(eng)          # later short runs of this configuration load it too
    return EngineRun(state=st, dram_state=dstate, queries=total, stopped=stopped,
                     ci_until_cycle=until, wall_s=wall, specialized=specialized,
                     timeline_queries=timeline_queries)


def collect(prep: Prepared, ran: EngineRun, ci_target: float | None = None) -> SimResult:
    """The third part of :func:`simulate`: the :class:`SimResult` of ``ran`` (its figures:
    :func:`cosmos.metrics.summary`, energy included)."""
    st = ran.state
    # Simulated time ends when the last query completes: every request, link transfer and
    # task belongs to a query, so nothing is busy after that. (The engine's own clock has by
    # then jumped to the next DRAM event, usually a refresh, which would inflate whole-run
    # averages -- bandwidth, utilization -- by a fraction of a percent.)
    end_cycle = int(st.q_done[:ran.queries].max())   # Q >= 1 (checked by prepare)
    extra = {"requests": int(st.scal[SC_REQS_DONE]), "specialized": ran.specialized}
    if ran.timeline_queries > 0:
        # what cosmos.timeline names each step with: the clusters each query probes
        n = min(ran.timeline_queries, ran.queries)
        tr = prep.trace
        extra["timeline"] = {"queries": n, "clusters": [
            [int(c) for c in tr.search_cluster[tr.query_ptr[q]:tr.query_ptr[q + 1]]]
            for q in range(n)]}
    return SimResult(config=prep.cfg, trace_meta=dict(prep.trace.meta), program=prep.program,
                     layout=prep.layout, cluster_device=prep.cluster_device, state=st,
                     dram_state=ran.dram_state, dram_params=prep.params,
                     dram_config=prep.dram_config, num_instances=prep.num_instances,
                     cycles=end_cycle, wall_s=ran.wall_s, mode=prep.mode,
                     rate_qps=prep.rate_qps, max_inflight=prep.max_inflight,
                     pool_sizes=prep.pool_sizes,
                     extra=extra,
                     queries=ran.queries, stopped=ran.stopped, ci_target=ci_target,
                     ci_until_cycle=ran.ci_until_cycle)


def simulate(cfg: SystemConfig, trace, *, num_queries: int | None = None,
             mode: str = "closed", rate_qps: float | None = None, max_inflight: int | None = None,
             seed: int = 0, progress: bool = True, cluster_device: np.ndarray | None = None,
             chunk_cycles: int = 2_000_000, specialize: bool | None = None,
             ci_target: float | None = None, ci_min_queries: int | None = None,
             warmup: float = 0.1, trace_name: str | None = None,
             timeline_queries: int = 0) -> SimResult:
    """Simulate ``cfg`` on the logical ``trace``: :func:`prepare` (trace -> placement ->
    layout -> program), :func:`run` (the engine loop and its stop rule), :func:`collect`.

    Parameters
    ----------
    cfg : SystemConfig
    trace : path | dict | LogicalTrace | TraceArrays
    trace_name : str, optional
        The trace's name in error messages (default: its path, or "trace" for arrays).
    num_queries : int, optional
        Use only the first queries of the trace.
    mode : "closed" | "open"
        closed: at most ``max_inflight`` queries in flight, a new one enters as one finishes
        (default ``max_inflight`` = the system's search contexts: host cores, or all GPC
        contexts); open: Poisson arrivals at ``rate_qps`` (seeded).
    cluster_device : (C,) int64, optional
        A placement to use instead of the config's policy.
    specialize : bool, optional
        Run the engine compiled with this DRAM configuration's parameters as constants
        (:mod:`cosmos.specialize`: same results, ~13 % less time, a compilation of about a
        minute the first time a configuration is seen). Default: ``COSMOS_SPECIALIZE`` (0 or
        1) if set, else for runs of at least :data:`cosmos.specialize.MIN_REQUESTS` DRAM
        requests, and for shorter ones once the configuration's build has run on this
        machine (:func:`cosmos.specialize.is_compiled`: loading it then compiles nothing).
    ci_target : float, optional
        Stop once the 95 % confidence interval of the steady-state QPS (closed loop) or of the
        mean latency (open loop, whose throughput is the arrival rate) is this tight (its
        half-width over the estimate, e.g. 0.01; :func:`cosmos.metrics.batch_means_ci` on
        the completions so far, with the steady-state window of ``warmup`` and the control
        variate of the summary: the trace's load per memory instance, so the interval is for
        the whole trace's queries). Tested every :func:`ci_check_every` completions, never
        before ``ci_min_queries`` completions (default: :func:`ci_min_completions`,
        ``max(2000, 30 x max_inflight)`` in a closed loop, half in an open one). When it
        holds, no further query of the trace is admitted; the queries already admitted run to
        completion (the drain, which the steady-state window leaves out as it does at the
        end of a whole trace), so the result is the first ``SimResult.queries`` queries of
        the trace, every one complete, and ``stopped`` = "ci-target". The final summary's
        interval is computed again on that run and may be slightly wider than the target.
        Deterministic: the tests happen at completion counts, and where a test happens the
        engine is at a point fixed by the inputs (trace, config, seed, ``chunk_cycles``).
    timeline_queries : int, optional
        Log the steps of the first N queries (``SimResult.state.tl_log``;
        :func:`cosmos.timeline.timeline_events` turns it into a Chrome trace). The results
        are the same with or without it; 0 (the default) logs nothing and costs nothing.

    Raises
    ------
    ValueError
        Before the big allocations: an invalid config or trace (naming the field or file), an
        open-loop ``rate_qps`` whose arrivals would span more than :data:`MAX_ARRIVAL_CYCLES`
        (:func:`check_arrival_span`), or controller and engine state larger than the machine's
        physical memory (:func:`check_memory`, naming the fields that drive it).
    """
    _check_run_options(mode, ci_target, ci_min_queries)
    prep = prepare(cfg, trace, num_queries=num_queries, mode=mode, rate_qps=rate_qps,
                   max_inflight=max_inflight, seed=seed, cluster_device=cluster_device,
                   trace_name=trace_name)
    ran = run(prep, progress=progress, chunk_cycles=chunk_cycles, specialize=specialize,
              ci_target=ci_target, ci_min_queries=ci_min_queries, warmup=warmup,
              timeline_queries=timeline_queries)
    return collect(prep, ran, ci_target)


def past_clock_message(cfg: SystemConfig, label: str, cycle: int) -> str:
    """The error of a run that asked for a cycle beyond the engine's clock
    (cosmos.program.MAX_CYCLES), naming what makes a step that long."""
    days = MAX_CYCLES * TCK_PS * 1e-12 / 86400
    return (f"{label}: system {cfg.name!r} schedules a step's end at cycle {cycle:.3g}, "
            f"beyond the engine's clock of 2**{MAX_CYCLES.bit_length() - 1} = {MAX_CYCLES:,} "
            f"cycles ({days:.0f} days "
            f"simulated): a message too large for its link (the model's Send sizes, "
            f"link.bandwidth_GBps, switch.upstream_bandwidth_GBps) or a compute too long "
            f"(per-operation cycles, clock_GHz)")


def _ci_reached(q_done: np.ndarray, q_arrival: np.ndarray, ci_target: float,
                warmup: float, max_inflight: int, load_trace: np.ndarray | None = None,
                mode: str = "closed") -> bool:
    """The stop test of ``simulate(ci_target=...)``: over the queries completed so far, with
    the steady-state window of ``warmup``, is the relative half-width of the QPS interval
    (closed loop) or of the mean latency's (open loop) at most ``ci_target``? (False when no
    interval can be claimed yet, or only a conservative one.) ``load_trace``: the requests of
    every trace query on every memory instance, for the control variate as the summary uses
    it (a closed loop's throughput, an open loop's latency); given in a closed loop, the
    throughput counts whole turnovers of ``max_inflight`` completions, as the summary's does."""
    ran = q_done >= 0
    done = q_done[ran]
    arr = q_arrival[ran]
    lo, hi, mask = steady_window(done, warmup)
    open_loop = mode == "open"
    control = {} if load_trace is None else \
        ci_controls(mode, load_trace, np.flatnonzero(ran)[mask])
    ci = batch_means_ci(done[mask], (done[mask] - arr[mask]) * (TCK_PS / 1000.0), lo, hi,
                        min_batch_queries=max_inflight,
                        turnover=max_inflight if control and not open_loop else 1, **control)
    # only an interval whose batch means passed the independence check stops a run: one
    # claimed as conservative (alternating batch means at the fewest batches) is not
    # evidence of precision (a noisy lag-1 of 10 batches can look alternating)
    what = "latency" if open_loop else "qps"
    return bool(ci[f"{what}_ci_rel_halfwidth"] <= ci_target
                and not ci[f"{what}_ci_conservative"])
