"""Sensitivity of the headline ratios to every parameter the paper does not give.

The Cosmos paper states its devices (DDR5-4800, 4 DIMM channels x 2 ranks, four devices
behind one switch) but not the link and switch figures, the host's and the GPC's cores, clocks
and SIMD widths, the PU and accelerator latencies, how many queries are in flight, nor its
index's cluster and probe counts. Our defaults for those are public figures of similar parts
or stated estimates (cosmos.config.SOURCE). This experiment varies each one alone over a
stated plausible range (:data:`PARAMETERS`: a low and a high level, each with its reason; the
default's reason is its source note), everything else at the default, and simulates the six
systems of Fig. 4a on both datasets at every point.

Outputs (all plots and tables read only ``sensitivity.csv``):

- ``sensitivity.csv``: one row per parameter x level x dataset x system: the level's value
  and reason, the system's QPS with its 95 % interval (``qps_ci_low`` / ``qps_ci_high``;
  ``qps_window``, the window's plain rate, beside it) and latency, steady state, the
  simulation's figures, its QPS over Base and over CXL-ANNS at that point with their 95 %
  intervals (``qps_vs_base_ci_low`` / ``_high``, ``qps_vs_cxl_anns_ci_low`` / ``_high``:
  experiments.harness.ratios.ratio_ci, the delta method on the log ratio of the two runs'
  intervals), and its
  rank among the six (1 = fastest);
- ``orderings.csv``: for every pair of systems and dataset, the order the paper's Fig. 4a
  shows, ours at the defaults, whether ours holds at every point, and where it flips (point
  estimates); and with the intervals (:func:`separation`): where the order holds with the two
  QPS intervals apart, where they overlap ("tied", not a flip), where the other order holds
  with them apart ("flipped"), and where a run has no interval;
- ``regions.csv``: for each of the paper's headline figures (Cosmos / Base 6.72x on SIFT1B
  and 5.35x on DEEP1B, Cosmos / CXL-ANNS 2.35x), the points where ours is within
  :data:`TOLERANCE` of it, and per parameter the interval of its value where the ratio,
  interpolated linearly between the simulated levels, is within it; with the ratios'
  intervals, the levels whose interval reaches into the band and those whose interval lies
  wholly in it, and the value intervals where each holds (:func:`regions`,
  :func:`band_intervals`);
- ``tornado_cosmos_vs_base.png`` and ``tornado_cosmos_vs_cxl_anns.png``: per dataset, the
  ratio at each parameter's low and high level against the default, the widest swing on top,
  the paper's figure and its 15 % band behind; each bar's end with its 95 % interval as a
  whisker, the default's interval dotted, where the runs have intervals;
- ``summary.md``: the parameter table (ratios with their intervals), the orderings and the
  regions.

Intervals and the stop rule. At a scale with a ``ci_target`` (``full``, ``paper``: 0.01) every
simulation stops by it, as fig4a's do (:func:`simulation_plan`): it replays the trace until its
95 % QPS interval is within +-1 % (never before ``cosmos.simulate.ci_min_completions``), at
most the whole trace; ``stopped`` and ``num_queries`` say how each ended. The scales without
one (``tiny``, ``default``) replay the scale's ``sweep_queries`` as before and carry the
intervals their windows support, which at those lengths is usually none (fewer completions in
the window than batch means need: ``ci_note`` says why); then the interval columns are NaN,
every level is listed in ``levels_no_ci``, every ordering point is "no interval", and the
tornado bars have no whiskers. Old result folders (written before the intervals) still render.
docs/uncertainty.md, "Sensitivity with intervals", states the methods.

Each point is one parameter changed on its own ("one at a time"): the tornado shows which
assumption moves a ratio most, not what two changes do together. Every simulation replays the
scale's ``sweep_queries`` first queries of the trace (more where the point keeps more queries
in flight, as :func:`experiments.figures.scale_devices.queries_for` does), so the default point's ratios
differ a little from fig4a's, which replays every query.

Cost: 23 parameters, 44 points besides the default, 540 simulations (the default point is
simulated once). A level of a field the system does not read (the GPC's for Base, ...) is the
default's simulation again: :func:`run` finds those by probing every task
(:mod:`experiments.harness.equivalent`) and simulates each distinct one once, 358 of the 540
at ``--scale tiny`` and at the default scale; ``same_as_default`` marks the other rows. From an
empty cache: ``--scale tiny`` 4.5 min wall on a busy 2-core machine; the default scale 907 s
CPU with the probes (15 min wall on one worker beside another job); the simulation cache makes
a second run read them all. ``--full`` (``cosmos run sensitivity --full``): not yet run to
the end; ``cosmos reproduce --full --only sensitivity --dry-run`` prints the estimate of
:func:`plan_sweep` before the merge, 59-285 G DRAM requests, 5.2-25 CPU hours (every run
stopping at its first test, or none stopping before its trace's 10,000 queries); about 8.5 CPU
hours if the runs stop as fig4a's did (docs/uncertainty.md), of which the merge spares about a
third.

Parameters that change the trace (``workload.*``) get their own workload, built once and cached
like every index and trace; ``workload.graph`` replays the same queries on the other graph kind
(hnswlib or Vamana, whichever the figures do not use, ``experiments.harness.workloads.GRAPH``). A
parameter row whose knob the code does not offer (:func:`available`) is left out and named in
the summary.

This module is the experiment: the parameter table, the simulation plan, the run, :func:`tidy`,
the plot and the summary. Its other concerns are parts it imports (experiments/figures/parts/,
which import nothing of it): :mod:`experiments.figures.parts.sensitivity_regions`, the pure
analysis of its tables (:data:`SYSTEMS`, :data:`PAPER`, :data:`TOLERANCE`, :data:`LEVELS`,
:func:`separation`, :func:`orderings`, :func:`band_intervals`,
:func:`within_intervals`, :func:`regions`), and :mod:`experiments.figures.parts.tornado`, the
drawing of a tornado plot.
"""

from __future__ import annotations

import inspect
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pandas as pd

from experiments.figures.parts.sensitivity_regions import (LEVELS, PAPER, QPS_CI, SYSTEMS,
                                                      TOLERANCE, fmt_value, orderings,
                                                      point_name, regions)
from experiments.figures.parts.tornado import tornado_figure
from experiments.harness.common import pyplot, save_figure, write_csv
from experiments.harness.equivalent import sweep_once
from experiments.harness.ratios import ratio_ci
from experiments.harness.sim import simulate_task, simulation_identity

NAME = "sensitivity"
TITLE = "Sensitivity of the headline ratios to the parameters the paper does not give"
#: fraction of first and last completions a summary leaves out (simulate_task's default)
WARMUP = 0.1


@dataclass(frozen=True)
class Parameter:
    """One row of the sensitivity table: a knob, its low and high level and why each.

    ``key`` is a dotted field of :class:`cosmos.config.SystemConfig` (its default and the
    default's reason come from the preset and ``cosmos.config.SOURCE``), or one of the derived
    knobs of :data:`DERIVED` (which say how a level becomes config overrides, a number of
    queries in flight or workload arguments).
    """

    key: str
    low: object
    high: object
    why_low: str
    why_high: str


#: The parameters varied: every hardware figure the paper does not give, and the index and run
#: parameters it does not state. Levels are in the unit of :func:`describe` for config fields
#: and ``switch.upstream_ports``; a multiplier of the default for ``*_scale``, ``*_factor`` and
#: the ``workload.num_*`` counts (of the scale's value: the CSV holds the resulting count).
PARAMETERS: tuple[Parameter, ...] = (
    Parameter("link.latency_ns", 25.0, 75.0,
              "50 ns round trip: an ASIC CXL controller below Pond's 70-90 ns added latency "
              "(estimate)",
              "150 ns round trip: the top of the 170-250 ns CXL load-to-use of the CXL "
              "Consortium's Hot Chips 34 figure, as FPGA-based CXL devices show (estimate)"),
    Parameter("link.bandwidth_GBps", 31.5, 128.0,
              "PCIe 5.0 x8: shipping CXL memory expanders (e.g. Micron CZ120) are x8 "
              "devices",
              "PCIe 6.0 x16 (CXL 3.x): 64 GT/s x 16 lanes / 8 = 128 GB/s per direction"),
    Parameter("switch.latency_ns", 25.0, 100.0,
              "50 ns round trip: a cut-through switch ASIC (estimate)",
              "200 ns round trip: a switch with retimers on its ports (estimate)"),
    Parameter("switch.upstream_ports", 0.5, 4.0,
              "an x8 upstream port (half an x16 port's 63 GB/s)",
              "four x16 upstream ports, one per device: the host side is as wide as the four "
              "device links together (a direct attach's bandwidth)"),
    Parameter("host.threads", 16, 60,
              "a 16-core Sapphire Rapids part (Xeon Gold 6426Y)",
              "the largest Sapphire Rapids part (Xeon Platinum 8490H, 60 cores)"),
    Parameter("host.clock_GHz", 1.9, 3.4,
              "Xeon Platinum 8490H base clock (Intel ARK)",
              "Xeon Gold 6430 single-core turbo (Intel ARK): an upper bound for all cores"),
    Parameter("host.distance_dims_per_cycle", 8.0, 32.0,
              "AVX2: 8 fp32 lanes (a distance library built without AVX-512)",
              "two AVX-512 FMA ports (Golden Cove server cores): 32 fp32 lanes per cycle if "
              "the loads keep up"),
    Parameter("host.op_cycles_scale", 0.5, 2.0,
              "every per-operation estimate of the host (distance overhead, visited check, "
              "candidate insert step, select, merge) halved",
              "the same estimates doubled (branch mispredictions, cache misses on the "
              "visited set)"),
    Parameter("host.dram_ranks", 1, 2,
              "one single-rank DIMM per channel (the default itself; no lower level)",
              "dual-rank DIMMs, common in servers: DRAM-only gains rank parallelism"),
    Parameter("gpc.cores", 4, 16,
              "half the cores that cover a device's bandwidth-latency product (estimate)",
              "twice as many (estimate)"),
    Parameter("gpc.threads_per_core", 1, 4,
              "no multithreading, as Arm Neoverse N-series cores",
              "4-way fine-grained multithreading, as near-memory cores use to hide DRAM "
              "latency (estimate)"),
    Parameter("gpc.clock_GHz", 1.0, 2.6,
              "a low-power embedded core in the device controller (estimate)",
              "a server-class Arm core (AWS Graviton3, Neoverse V1: 2.6 GHz)"),
    Parameter("gpc.distance_dims_per_cycle", 2.0, 8.0,
              "a 64-bit SIMD datapath or a half-rate FMA pipe (estimate)",
              "two 128-bit NEON FMA pipes (Arm Neoverse N2)"),
    Parameter("gpc.op_cycles_scale", 0.5, 2.0,
              "every per-operation estimate of the GPC (distance overhead, visited check, "
              "candidate insert step, select, partial sum) halved",
              "the same estimates doubled (an in-order embedded core)"),
    Parameter("gpc.outstanding_requests", 8, 64,
              "a short load queue (8 misses per context, as a small in-order core)",
              "a 64-entry decoupled load queue (estimate)"),
    Parameter("device.onchip_latency_ns", 5.0, 25.0,
              "a single on-chip hop at high clock (estimate)",
              "a slow or multi-hop on-chip network (estimate)"),
    Parameter("rank_pu.pipeline_latency_ns", 2.0, 20.0,
              "a short MAC pipeline: a few cycles at 1 GHz (estimate)",
              "a MAC tree in DRAM-process logic at a few hundred MHz: 5-10 cycles (estimate)"),
    Parameter("cxl_anns.accel_latency_ns", 2.0, 50.0,
              "a fully pipelined distance unit (estimate)",
              "an accelerator that reduces and sorts a batch before answering (estimate)"),
    Parameter("cxl_anns.accel_outstanding", 16, 128,
              "a small fetch queue: fewer vector reads of a hop in flight (estimate)",
              "every read of a long hop in flight at once (estimate)"),
    Parameter("run.inflight_factor", 0.5, 2.0,
              "half as many queries in flight as search contexts: a lightly loaded system",
              "twice as many: queries queue for contexts, which hides the devices' imbalance"),
    Parameter("workload.num_clusters", 0.5, 2.0,
              "8 clusters per device at the default scale (the paper gives no cluster count)",
              "32 clusters per device at the default scale: placement has more to balance"),
    Parameter("workload.num_probes", 0.5, 2.0,
              "4 probes at the default scale: the low end of the paper's Fig. 5a (4 / 8 / 16)",
              "16 probes at the default scale: the high end of the paper's Fig. 5a"),
    # the graph kind: the default level is the figures' kind (experiments.harness.workloads.GRAPH), so
    # of these two levels only the other kind is simulated
    Parameter("workload.graph", "hnsw", "vamana",
              "hnswlib's level-0 graph (alpha = 1 pruning): fewer neighbors per hop",
              "DiskANN's Vamana graph (alpha = 1.2, R = 64): the paper's index kind"),
)

#: fields the ``*.op_cycles_scale`` knobs multiply (the per-operation estimates of a core)
HOST_OP_FIELDS = ("distance_overhead_cycles", "visit_check_cycles", "insert_step_cycles",
                  "select_cycles", "merge_cycles_per_result")
GPC_OP_FIELDS = ("distance_overhead_cycles", "visit_check_cycles", "insert_step_cycles",
                 "select_cycles", "partial_sum_cycles")

#: derived knobs: key -> (what, unit, default value, reason of the default)
DERIVED = {
    "switch.upstream_ports": ("upstream ports of the switch (x16 each)", "x16 ports", 1.0,
                              "one x16 upstream port (cosmos.config.SOURCE, "
                              "switch.upstream_bandwidth_GBps)"),
    "host.op_cycles_scale": ("host per-operation cycles (multiplier)", "x default", 1.0,
                             "the stated estimates of cosmos.config.SOURCE"),
    "gpc.op_cycles_scale": ("GPC per-operation cycles (multiplier)", "x default", 1.0,
                            "the stated estimates of cosmos.config.SOURCE"),
    "run.inflight_factor": ("queries in flight per search context", "x contexts", 1.0,
                            "one query per search context (host cores, or every GPC context)"),
    "workload.num_clusters": ("clusters of the index", "clusters", None,
                                    "the scale's clusters: 16 per device at the default scale "
                                    "(docs/graphs.md)"),
    "workload.num_probes": ("probes per query", "probes", None,
                                  "the scale's probes: 8 at the default scale, the middle of "
                                  "the paper's Fig. 5a"),
    "workload.graph": ("graph kind of the index", "", None,
                       "the figures' graph kind (experiments.harness.workloads.GRAPH; docs/graphs.md "
                       "says why)"),
}


@dataclass(frozen=True)
class Point:
    """One parameter at one level, resolved: what to simulate."""

    parameter: str
    level: str
    value: object
    reason: str
    overrides: tuple = ()          # (dotted field, value) pairs for every system
    inflight_factor: float = 1.0   # queries in flight = factor x the system's contexts
    workload: tuple = ()           # (argument, value) pairs of experiments.harness.workloads.workload


def _config_default(key: str):
    from cosmos.presets import get_preset

    node = get_preset("base").to_dict()
    for part in key.split("."):
        node = node[part]
    return node


def describe(key: str) -> tuple[str, str]:
    """(what, unit) of parameter ``key``."""
    if key in DERIVED:
        return DERIVED[key][0], DERIVED[key][1]
    import dataclasses

    from cosmos.config import SECTIONS

    section, name = key.split(".")
    f = {g.name: g for g in dataclasses.fields(SECTIONS[section])}[name]
    unit = name.rsplit("_", 1)[-1] if name.endswith(("_ns", "_GBps", "_GHz")) else ""
    return f.metadata.get("help", name), unit


def available(param: Parameter) -> bool:
    """Whether the code offers ``param``'s knob (``workload.graph`` needs a ``graph`` argument
    of experiments.harness.workloads.workload)."""
    if param.key == "workload.graph":
        from experiments.harness.workloads import workload

        return "graph" in inspect.signature(workload).parameters
    return True


def points(param: Parameter, scale) -> list[Point]:
    """``param`` at its low, default and high levels, resolved at ``scale``.

    A level that comes out equal to the default (a multiplier rounded at a small scale, or a
    probe count capped at the cluster count) is left out.
    """
    from cosmos.config import SOURCE

    key = param.key
    out = []
    for level in LEVELS:
        raw = {"low": param.low, "high": param.high}.get(level)
        reason = {"low": param.why_low, "high": param.why_high}.get(level)
        if key in DERIVED:
            if level == "default":
                raw, reason = DERIVED[key][2], DERIVED[key][3]
                if key == "workload.graph":   # whatever the figures use, so the row follows it
                    import experiments.harness.workloads as W
                    raw = W.GRAPH
            if key == "switch.upstream_ports":
                bw = _config_default("switch.upstream_bandwidth_GBps")
                pt = Point(key, level, float(raw), reason,
                           overrides=(("switch.upstream_bandwidth_GBps", float(raw) * bw),))
            elif key in ("host.op_cycles_scale", "gpc.op_cycles_scale"):
                sec = key.split(".")[0]
                fields = HOST_OP_FIELDS if sec == "host" else GPC_OP_FIELDS
                pt = Point(key, level, float(raw), reason, overrides=tuple(
                    (f"{sec}.{f}", _config_default(f"{sec}.{f}") * float(raw)) for f in fields))
            elif key == "run.inflight_factor":
                pt = Point(key, level, float(raw), reason, inflight_factor=float(raw))
            elif key == "workload.num_clusters":
                c = max(1, round(scale.num_clusters * (1.0 if raw is None else raw)))
                p = min(scale.num_probes, c)
                pt = Point(key, level, c, reason, workload=(("num_clusters", c),
                                                            ("num_probes", p)))
            elif key == "workload.num_probes":
                p = min(scale.num_clusters,
                        max(1, round(scale.num_probes * (1.0 if raw is None else raw))))
                pt = Point(key, level, p, reason, workload=(("num_clusters", scale.num_clusters),
                                                            ("num_probes", p)))
            elif key == "workload.graph":
                pt = Point(key, level, raw, reason,
                           workload=(() if level == "default" else (("graph", raw),)))
            else:  # pragma: no cover - a DERIVED key without its rule
                raise AssertionError(f"no rule for derived parameter {key}")
        else:
            if level == "default":
                raw, reason = _config_default(key), SOURCE.get(key, "the preset's default")
            pt = Point(key, level, raw, reason, overrides=((key, raw),))
        out.append(pt)
    default = out[1]
    return [p for p in out if p.level == "default" or p.value != default.value]


def selected(names=None) -> list[Parameter]:
    """The rows of :data:`PARAMETERS` named in ``names`` (all if None; unknown -> ValueError)."""
    if names is None:
        return list(PARAMETERS)
    known = {p.key: p for p in PARAMETERS}
    bad = [n for n in names if n not in known]
    if bad:
        raise ValueError(f"sensitivity: unknown parameter(s) {bad}; expected some of "
                         f"{sorted(known)}")
    return [known[n] for n in names]


def queries_for(cfg, inflight: int, sweep_queries: int) -> int:
    """Queries to simulate: the scale's sweep count, or enough for a steady-state window with
    ``inflight`` queries in flight (as :func:`experiments.figures.scale_devices.queries_for`)."""
    return max(int(sweep_queries), math.ceil((inflight + 2) / (1 - 2 * WARMUP)) + 2)


def _trace_file(ctx, family: str, workload_kw: dict) -> Path:
    """The trace of ``family`` with the workload arguments of a point (saved for the workers)."""
    from graphs import save_trace

    from experiments.harness.workloads import with_scale, workload

    sc = ctx.scale
    kw = dict(workload_kw)
    clusters = kw.pop("num_clusters", sc.num_clusters)
    probes = kw.pop("num_probes", sc.num_probes)
    if clusters == sc.num_clusters and not kw:
        return ctx.trace_file(family, None if probes == sc.num_probes else probes)
    folder = ctx.traces_dir or ctx.out / "traces"
    folder.mkdir(exist_ok=True)
    tag = "".join(f"-{k}{v}" for k, v in sorted(kw.items()))
    path = folder / f"{family}-c{clusters}-p{probes}{tag}.npz"
    if not path.exists():
        tr = workload(family, with_scale(sc, num_clusters=clusters), num_probes=probes,
                      cache_dir=ctx.cache_dir, seed=ctx.seed, progress=ctx.progress,
                      **kw, **dict(ctx.dataset or {}))
        tmp = path.with_name(path.stem + ".tmp.npz")
        save_trace(tmp, tr)
        tmp.replace(path)
    return path


def simulation_plan(ctx, parameters=None, trace_path=None) -> tuple[list, list]:
    """The simulations of the selected ``parameters`` (default: every available row of
    :data:`PARAMETERS`) on every dataset of ``ctx``: ``(tasks, wanted)``, ``tasks`` the
    distinct :func:`~experiments.harness.sim.simulate_task` arguments (the default level is
    one simulation for every parameter), ``wanted`` one ``(point, dataset, system, task
    index)`` per row of ``sensitivity.csv``. ``trace_path(dataset, workload_kw) -> str``
    names a point's trace (default: :func:`_trace_file`, which builds it if needed).

    Where the scale has a ``ci_target`` (``full``, ``paper``: 0.01), every simulation stops by
    it as fig4a's do: it replays the trace until its 95 % QPS interval is within +-1 %
    (never before ``cosmos.simulate.ci_min_completions``: 2,000 queries, 30 x the queries in
    flight above 66 of them), at most every query of the trace. Without one (``tiny``,
    ``default``) it replays :func:`queries_for` queries, the scale's ``sweep_queries``, and
    its interval is whatever the batch means of that window support (NaN where they support
    none, ``ci_note`` says why)."""
    from cosmos.config import with_overrides
    from cosmos.presets import get_preset
    from cosmos.simulate import default_max_inflight

    if trace_path is None:
        def trace_path(fam, kw):
            return str(_trace_file(ctx, fam, kw))
    ci_target = getattr(ctx.scale, "ci_target", None)
    params = [p for p in selected(parameters) if available(p)]
    pts = [pt for p in params for pt in points(p, ctx.scale)]
    tasks, where, wanted = [], {}, []
    for fam in ctx.families:
        for pt in pts:
            path = str(trace_path(fam, dict(pt.workload)))
            for s in SYSTEMS:
                cfg = with_overrides(get_preset(s), dict(pt.overrides))
                inflight = max(1, round(pt.inflight_factor * default_max_inflight(cfg)))
                stop = ({"num_queries": None, "ci_target": ci_target} if ci_target is not None
                        else {"num_queries": queries_for(cfg, inflight,
                                                         ctx.scale.sweep_queries)})
                task = dict(system=s, trace_path=path, overrides=dict(pt.overrides),
                            max_inflight=inflight, seed=ctx.seed, warmup=WARMUP,
                            tags={"dataset": fam, "system": s}, **stop)
                # the default level is the same simulation for every parameter (its override
                # is the preset's own value): run it once
                ident = json.dumps(simulation_identity(task), sort_keys=True, default=str)
                if ident not in where:
                    where[ident] = len(tasks)
                    tasks.append(task)
                wanted.append((pt, fam, s, where[ident]))
    return tasks, wanted


#: DRAM requests per query of a Vamana trace over the hnswlib one of the same queries, for
#: :func:`plan_sweep`'s estimate: 1.22, the distance computations per query of the two graph
#: kinds at the default scale (5,244 against 4,281 on SIFT-like; docs/system_model.md, "The
#: graph kind moves no conclusion"; an estimate: requests follow the vectors read)
VAMANA_WORK = 1.22


def plan_sweep(ctx) -> dict:
    """What ``cosmos reproduce --dry-run`` says of this experiment (experiments.harness.plan):
    its simulations run in its own sweep, not the shared pool, so the plan's own table leaves
    them out; this estimates them from :func:`simulation_plan` (no trace is built): the line
    of text and the CPU seconds (low, high) the plan adds to its total. DRAM
    requests per query: the plan's ``REQUESTS_PER_QUERY`` of the scale, times probes / the
    scale's probes at a ``workload.num_probes`` level (each probe is one cluster search:
    an estimate) and :data:`VAMANA_WORK` on the Vamana trace; ``workload.num_clusters``
    levels are counted as the scale's (an estimate: fewer, larger clusters make each probe a
    little longer). Queries: with the scale's ``ci_target``, from the stop test's minimum
    (every run stopping at its first test) to the whole trace (none stopping); otherwise the
    queries each run replays (experiments.harness.plan.task_queries)."""
    from experiments.harness.plan import REQUESTS_PER_QUERY, sweep_estimate, sweep_requests

    sc = ctx.scale
    per_q = REQUESTS_PER_QUERY.get(sc.name) or REQUESTS_PER_QUERY["default"]
    work, extra = {}, set()

    def fake(fam, kw):
        kw = dict(kw)
        if kw.get("num_clusters") == sc.num_clusters:     # the scale's index (_trace_file)
            kw.pop("num_clusters")
        if kw.get("num_probes") == sc.num_probes:
            kw.pop("num_probes")
        path = f"{fam}:{sorted(kw.items())}"
        f = kw.get("num_probes", sc.num_probes) / sc.num_probes
        if kw.get("graph") not in (None, "hnsw"):
            f *= VAMANA_WORK
        if kw:
            extra.add(path)
        work[path] = per_q.get(fam, max(per_q.values())) * f
        return path

    tasks, wanted = simulation_plan(ctx, trace_path=fake)
    lo, hi = sweep_requests(tasks, sc.num_queries, lambda t: work[t["trace_path"]])
    stop = (f"each stopped by the +-{sc.ci_target:.0%} interval rule between its minimum and "
            f"the trace's {sc.num_queries:,} queries" if sc.ci_target is not None
            else f"{sc.sweep_queries:,} queries each (more where a point keeps more in flight)")
    est = sweep_estimate(f"at most {len(tasks)} simulations for {len(wanted)} rows (a level "
                         "of a field a system does not read is merged with the default's "
                         f"simulation after probing: about a third of them), {stop}", lo, hi,
                         ctx)
    est["what"] += (f"; plus {len(extra)} traces of other cluster or probe counts or graph "
                    "kind, built once and cached")
    return est


def run(ctx, parameters=None) -> dict:
    """Simulate the six systems at every point of the selected ``parameters`` (default: every
    available row of :data:`PARAMETERS`) on every dataset (:func:`simulation_plan`); write the
    CSVs."""
    tasks, wanted = simulation_plan(ctx, parameters)
    # a level of a field the system does not read is the default's simulation again: run once
    rows, same = sweep_once(ctx, simulate_task, tasks, desc="sensitivity")
    default = {(fam, s): same[i] for pt, fam, s, i in wanted
               if pt.level == "default" and not pt.workload}
    records = []
    for pt, fam, s, i in wanted:
        what, unit = describe(pt.parameter)
        r = dict(rows[i])
        r.pop("dataset", None)
        r.pop("system", None)
        records.append({"parameter": pt.parameter, "what": what, "level": pt.level,
                        "value": pt.value, "unit": unit, "reason": pt.reason, "dataset": fam,
                        "system": s, "same_as_default": (pt.level != "default"
                                                         and same[i] == default.get((fam, s))),
                        **r})
    df = tidy(pd.DataFrame(records))
    write_csv(ctx.out / "sensitivity.csv", df)
    write_csv(ctx.out / "orderings.csv", orderings(df))
    write_csv(ctx.out / "regions.csv", regions(df))
    out = {}
    dflt = df[(df.level == "default") & (df.system == "cosmos")]
    for fam in dict.fromkeys(df.dataset):
        sub = df[(df.dataset == fam) & (df.system == "cosmos")]
        for ratio in PAPER:
            col = f"qps_vs_{ratio.split('_vs_')[1]}"
            drow = dflt[dflt.dataset == fam].iloc[0]
            out[f"{fam}_{ratio}"] = (f"{_with_ci(drow, col)} (range {sub[col].min():.2f}-"
                                     f"{sub[col].max():.2f})")
    return out


#: the ratio columns of sensitivity.csv and the system each is over (:func:`tidy`)
RATIOS = {"qps_vs_base": "base", "qps_vs_cxl_anns": "cxl-anns"}


def tidy(df: pd.DataFrame) -> pd.DataFrame:
    """The sweep's records with the ratios (and their intervals, :func:`ratio_ci`) and ranks
    of each point, leading columns first. Records without QPS intervals get NaN ones."""
    key = ["parameter", "level", "dataset"]
    df = df.copy()
    for c in QPS_CI:
        if c not in df:
            df[c] = float("nan")
    runs = df.set_index(key + ["system"])[["qps", *QPS_CI]]

    def of(system, col):
        ref = runs[col].xs(system, level="system")
        return ref.reindex(pd.MultiIndex.from_frame(df[key])).to_numpy()

    for ratio, ref in RATIOS.items():
        df[ratio] = df["qps"].to_numpy() / of(ref, "qps")
        df[f"{ratio}_ci_low"], df[f"{ratio}_ci_high"] = ratio_ci(
            df["qps"], df["qps_ci_low"], df["qps_ci_high"],
            of(ref, "qps"), of(ref, "qps_ci_low"), of(ref, "qps_ci_high"),
            same=(df.system == ref).to_numpy())
    df["rank"] = df.groupby(key)["qps"].rank(ascending=False, method="min").astype(int)
    paper = {(fam, "cosmos"): v for fam, v in PAPER["cosmos_vs_base"].items()}
    df["paper_qps_vs_base"] = [paper.get((d, s), float("nan"))
                               for d, s in zip(df.dataset, df.system)]
    paper = {(fam, "cosmos"): v for fam, v in PAPER["cosmos_vs_cxl_anns"].items()}
    df["paper_qps_vs_cxl_anns"] = [paper.get((d, s), float("nan"))
                                   for d, s in zip(df.dataset, df.system)]
    lead = ["parameter", "what", "level", "value", "unit", "reason", "dataset", "system", "qps",
            "qps_ci_low", "qps_ci_high", "qps_window",
            "qps_vs_base", "qps_vs_base_ci_low", "qps_vs_base_ci_high",
            "qps_vs_cxl_anns", "qps_vs_cxl_anns_ci_low", "qps_vs_cxl_anns_ci_high", "rank",
            "paper_qps_vs_base", "paper_qps_vs_cxl_anns", "steady_state", "num_queries",
            "stopped", "max_inflight", "same_as_default", "latency_mean_ns", "latency_p99_ns"]
    lead = [c for c in lead if c in df.columns]
    return df[lead + [c for c in df.columns if c not in lead]]


def plot(folder) -> None:
    """One tornado per headline ratio (a panel per dataset), from ``sensitivity.csv`` only
    (:func:`~experiments.figures.parts.tornado.tornado_figure`). Where the CSV has the ratios'
    intervals, each bar's end carries its 95 % interval as an error whisker and the default's
    interval is drawn as two dotted lines about its line; a folder written before the
    intervals (or levels without one) draws the bars alone."""
    plt = pyplot()
    df = pd.read_csv(Path(folder) / "sensitivity.csv")
    cos = df[df.system == "cosmos"]
    for ratio in PAPER:
        fig = tornado_figure(cos, ratio)
        save_figure(fig, folder, f"tornado_{ratio}")
        plt.close(fig)


def summary_md(folder) -> str:
    folder = Path(folder)
    df = pd.read_csv(folder / "sensitivity.csv")
    orders = pd.read_csv(folder / "orderings.csv")
    reg = pd.read_csv(folder / "regions.csv")
    reg["levels_within"] = reg["levels_within"].fillna("")
    reg["interval_within"] = reg["interval_within"].fillna("")
    for c in ("levels_ci_overlap", "levels_ci_inside", "levels_no_ci", "interval_ci_overlap",
              "interval_ci_inside"):
        reg[c] = _text(reg[c]) if c in reg else ""
    orders["flips_at"] = orders["flips_at"].fillna("")
    lines = ["## Sensitivity of the headline ratios", "",
             "Each parameter varied alone, everything else at the default; six systems on each "
             "dataset at every point. Cosmos / Base and Cosmos / CXL-ANNS at each level "
             f"(paper: Cosmos / Base {PAPER['cosmos_vs_base']['sift']} on SIFT1B, "
             f"{PAPER['cosmos_vs_base']['deep']} on DEEP1B; Cosmos / CXL-ANNS "
             f"{PAPER['cosmos_vs_cxl_anns']['sift']}), with the ratio's 95 % interval in "
             "brackets where both runs have one (the delta method on the log ratio of the two "
             "runs' batch-means intervals).", ""]
    if "qps_vs_base_ci_low" in df:
        n_ci = int(df.qps_ci_low.notna().sum())
        stop = df["stopped"].astype(str).eq("ci-target").sum() if "stopped" in df else 0
        lines += [f"{n_ci} of {len(df)} rows have a QPS interval; {stop} simulations "
                  "stopped by the confidence-interval target (the others replayed their "
                  "queries to the end).", ""]
    if "same_as_default" in df:
        same = df[df.same_as_default.astype(bool)]
        lines += [f"{len(same)} of {len(df[df.level != 'default'])} rows away from the "
                  "default are the default's own simulation: the level changes nothing the "
                  "system reads (the same engine inputs and summary on a probe, "
                  "experiments.harness.equivalent), so it was simulated once.", ""]
    fams = list(dict.fromkeys(df.dataset))
    cos = df[df.system == "cosmos"]
    head = "| parameter | level | value | " + " | ".join(
        f"{f} x Base | {f} x CXL-ANNS" for f in fams) + " | reason |"
    lines += [head, "|" + "---|" * (4 + 2 * len(fams))]
    for (param, level), g in cos.groupby(["parameter", "level"], sort=False):
        r0 = g.iloc[0]
        cells = []
        for f in fams:
            gf = g[g.dataset == f].iloc[0]
            cells += [_with_ci(gf, "qps_vs_base"), _with_ci(gf, "qps_vs_cxl_anns")]
        reason = "" if level == "default" else str(r0.reason)
        lines.append(f"| {param} | {level} | {fmt_value(r0.value)} {'' if pd.isna(r0.unit) else r0.unit} | "
                     + " | ".join(cells) + f" | {reason} |")
    bad = df[~df.steady_state.astype(bool)]
    if len(bad):
        lines += ["", "No steady state (QPS over the whole run instead; the trace has too few "
                  "queries for the queries in flight): " + ", ".join(
                      sorted({f"{r.dataset} {r.system} at {point_name(r)}"
                              for r in bad.itertuples()})) + "."]

    lines += ["", "### Orderings of the six systems", "",
              "Ours at the defaults; whether it holds at every point; where it flips. The "
              "paper's order is that of its Fig. 4a (Base, DRAM-only, CXL-ANNS, Cosmos w/o "
              "rank PU, Cosmos w/o placement, Cosmos, rising).", "",
              "| dataset | ours at default | paper agrees | holds everywhere | flips at | "
              "intervals apart (default; points) | tied at | flipped (intervals apart) at |",
              "|---|---|---|---|---|---|---|---|"]
    for c in ("tied_at", "flipped_at"):
        orders[c] = _text(orders[c]) if c in orders else ""
    for r in orders.itertuples():
        sep = (f"{getattr(r, 'default_separation', '')}; {getattr(r, 'separated', '')} of "
               f"{r.points}" if hasattr(r, "separated") else "")
        lines.append(f"| {r.dataset} | {r.faster} > {r.slower} ({r.default_qps_ratio:.2f}x) | "
                     f"{'yes' if r.paper_agrees else 'no'} | "
                     f"{'yes' if r.holds_everywhere else 'no'} | {r.flips_at} | {sep} | "
                     f"{r.tied_at} | {r.flipped_at} |")

    lines += ["", f"### Where our model reproduces the paper's figures within "
              f"{TOLERANCE:.0%}", "",
              "Levels within the band, and the interval of the parameter's value where the "
              "ratio, linear between the simulated levels, is within it (an interpolation: only "
              "the levels are simulated). With the ratios' 95 % intervals: \"surely within\" "
              "where the interval lies wholly in the band, \"possibly\" where it reaches into "
              "it (each end of the interval linear between the levels; `regions.csv`).", ""]
    for (fig_, fam), g in reg.groupby(["figure", "dataset"], sort=False):
        lines += [_region_line(fig_, fam, g)]
    missing = [p.key for p in PARAMETERS if not available(p)]
    if missing:
        lines += ["", "Not varied (the code does not offer the knob yet): " + ", ".join(missing)
                  + "."]
    return "\n".join(lines) + "\n"


def _text(col: pd.Series) -> pd.Series:
    """A text column read back from a CSV, "" where it is empty (pandas reads an all-empty
    column as float NaN)."""
    return col.astype(object).where(col.notna(), "")


def _with_ci(row, col: str) -> str:
    """``row[col]`` to two decimals, with its interval ``[low-high]`` where the row has one."""
    lo, hi = row.get(f"{col}_ci_low"), row.get(f"{col}_ci_high")
    text = f"{row[col]:.2f}"
    if lo is not None and hi is not None and not (pd.isna(lo) or pd.isna(hi)):
        text += f" [{lo:.2f}-{hi:.2f}]"
    return text


def _region_line(figure: str, fam: str, g: pd.DataFrame) -> str:
    """One bullet of the summary: where ours is within :data:`TOLERANCE` of one paper figure
    (``g``: that figure's rows of ``regions.csv``)."""
    target = g.paper.iloc[0]
    name = "Cosmos / Base" if figure == "cosmos_vs_base" else "Cosmos / CXL-ANNS"
    d = g.default_ratio.iloc[0]
    head = f"- **{name}, {fam}** (paper {target}x, ours {d:.2f}x at the defaults): "
    ranges = {r.parameter: r for r in g.itertuples()}

    def span(r):
        ci = ""
        if r.levels_ci_overlap or r.levels_ci_inside or r.interval_ci_overlap:
            ci = (f"; with the intervals: levels surely within {r.levels_ci_inside or 'none'}, "
                  f"possibly within {r.levels_ci_overlap or 'none'}; values surely within "
                  f"{r.interval_ci_inside or '-'}, possibly {r.interval_ci_overlap or '-'}")
        return (f"{r.parameter} in {r.interval_within or '-'} (simulated levels within: "
                f"{r.levels_within or 'none'}{ci})")

    if abs(d / target - 1) <= TOLERANCE:
        whole = [p for p, r in ranges.items() if set(r.levels_within.split(",")) >=
                 {lv for lv in LEVELS if not pd.isna(getattr(r, f"{lv}_ratio"))}]
        part = [span(r) for p, r in ranges.items() if p not in whole]
        return (head + "reproduced at the defaults; within the band over the whole range of "
                + (", ".join(whole) or "no parameter") + "; only over part of it for "
                + ("; ".join(part) if part else "none") + ".")
    hits = [span(r) for r in ranges.values() if r.levels_within or r.interval_within]
    return head + ("reproduced, one parameter at a time, when " + "; ".join(hits) + "."
                   if hits else "nowhere in the ranges studied.")


if __name__ == "__main__":
    from experiments.harness.runner import script_main

    raise SystemExit(script_main(NAME))
