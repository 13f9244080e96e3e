"""Recall@10 against QPS: graph search, IVF-PQ and exact scan, on the host and near memory.

For each workload (SIFT-like and DEEP-like, or the user's dataset) every retrieval family's
effort knob is swept on the same four CXL devices and the same DRAM model:

- graphs (the clustered hnswlib index of the other figures): ``num_probes`` x
  ``cand_list_len``, on Base, CXL-ANNS and Cosmos;
- IVF-PQ (graphs.ivfpq on the same k-means lists, ``pq_m`` = the index default):
  ``num_probes`` x ``rerank`` (0 = no re-ranking), on the host with a lookup table per probed
  list (``ivfpq-host``) or with precomputed tables (``ivfpq-host-precomputed``, and with the
  L2 stream prefetcher on the list reads: ``ivfpq-host-precomputed-prefetch``), and near
  memory with precomputed tables, the query's table sent down (``ivfpq-pnm``), ChamVS's flow
  (query broadcast, tables built on the device: ``ivfpq-pnm-chamvs``) or ChamVS's flow with a
  table per probed list (``ivfpq-pnm-chamvs-perlist``); every one of them replays the same
  traces, so they share its recall (the strategies compute the same distances);
- exact scan of the probed lists: ``num_probes``, on ``exact-host``, ``exact-host-prefetch``,
  ``exact-pnm`` and ``exact-pnm-batch`` (B = scan_unit.batch_queries queries per pass over
  the vectors, the VCK5000 dense-retrieval study's GEMM reuse: it replays the exact trace
  batched by cosmos.systems.batch_trace, ``traces/NAME-bB.npz``, over the same queries; its
  row's QPS, interval and DRAM bytes are per query, batches x B, and its latency is a
  batch's, every query of a batch finishing with it).

Each point's recall@10 comes from the traced search against the exact ground truth, over
every query of the trace; its QPS (with the 95 % interval of cosmos.metrics), mean latency
and DRAM bytes per query from the closed-loop simulation of the scale's first
``sweep_queries`` queries (the simulation result cache serves repeated points, and a graph
trace is simulated once per system for all of them). ``recall_qps.csv`` holds one row per
(workload, system, knob values); the plot draws recall against QPS (log axis) with each
system's Pareto front as a step line; ``summary.md`` says which family and system gives the
most QPS at recall 0.9 and 0.95 (the Pareto front interpolated, :func:`qps_at_recall`) and
puts Chameleon's reported near-memory over CPU figure beside our ``ivfpq-pnm`` over
``ivfpq-host`` at the same index and knobs, then the host against near memory at the same
lookup-table strategy (:data:`SAME_STRATEGY`) and the host's stream prefetcher on and off
(:data:`PREFETCH_PAIRS`), issue 54. ``batch_sweep.csv`` sweeps exact-pnm-batch's B over
:data:`BATCH_SWEEP` on each workload's exact trace at its most probes (:func:`batch_sweep`:
QPS per query, the batch's latency, one batch in flight, and the roofline's B*), drawn in
``batch_sweep.png`` and tabled in ``summary.md``.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pandas as pd

from experiments.harness.capacity import trace_index_bytes
from experiments.harness.common import error_bars, pyplot, save_figure, write_csv
from experiments.harness.sim import simulate_task

NAME = "recall_qps"
TITLE = "Recall@10 against QPS: graph vs IVF-PQ vs exact scan, host vs near memory"

#: retrieval family -> the systems that replay its traces (cosmos.presets)
SYSTEMS = {
    "graph": ("base", "cxl-anns", "cosmos"),
    "ivfpq": ("ivfpq-host", "ivfpq-host-precomputed", "ivfpq-host-precomputed-prefetch",
              "ivfpq-pnm", "ivfpq-pnm-chamvs", "ivfpq-pnm-chamvs-perlist"),
    "exact": ("exact-host", "exact-host-prefetch", "exact-pnm", "exact-pnm-batch"),
}
#: systems that replay batches of queries (cosmos.systems.batch_trace), not single queries
BATCHED = ("exact-pnm-batch",)
#: The batch-size sweep of exact-pnm-batch (``batch_sweep.csv``, issue 54): B =
#: scan_unit.batch_queries doubled from 1 (one query per pass: exact-pnm's work) past the
#: roofline's B* (8 at the unit's own figures) to 32, on each workload's exact trace at the
#: grid's most probes (the most vectors per pass)
BATCH_SWEEP = (1, 2, 4, 8, 16, 32)
BATCH_SYSTEM = "exact-pnm-batch"
#: columns of batch_sweep.csv: closed-loop QPS per query (batches/s x B), the batch's
#: latency, DRAM bytes per query; with one batch in flight (each device's lists on one unit,
#: at its own stream rate: the roofline's setting) the batch's mean latency and the queries
#: per second it gives, B / that latency; the roofline's B* at the unit's stream rate and at
#: its share of the device's peak DRAM bandwidth (:func:`roofline_batches`)
BATCH_COLUMNS = ["dataset", "num_probes", "batch_queries", "qps", "qps_ci_low", "qps_ci_high",
                 "latency_mean_ns", "latency_p99_ns", "dram_bytes_per_query", "num_queries",
                 "steady_state", "latency_one_batch_ns", "qps_one_batch",
                 "roofline_batch", "roofline_batch_dram_share"]
#: (lookup-table strategy and data flow, host system, near-memory system): pairs that use the
#: same strategy (cosmos.systems.LUT_STRATEGIES) on both sides, compared in summary.md
SAME_STRATEGY = (
    ("table per probed list", "ivfpq-host", "ivfpq-pnm-chamvs-perlist"),
    ("precomputed, query table sent down", "ivfpq-host-precomputed", "ivfpq-pnm"),
    ("precomputed, ChamVS flow (query broadcast)", "ivfpq-host-precomputed", "ivfpq-pnm-chamvs"),
    ("precomputed, host prefetch, ChamVS flow", "ivfpq-host-precomputed-prefetch",
     "ivfpq-pnm-chamvs"),
)
#: (without, with) the host's L2 stream prefetcher on the list reads
PREFETCH_PAIRS = (("exact-host", "exact-host-prefetch"),
                  ("ivfpq-host-precomputed", "ivfpq-host-precomputed-prefetch"))
FAMILY_OF = {s: fam for fam, systems in SYSTEMS.items() for s in systems}
#: recall@10 targets of the summary
TARGETS = (0.9, 0.95)
K = 10

#: Chameleon (Jiang et al., "Chameleon: a Heterogeneous and Disaggregated Accelerator System
#: for Retrieval-Augmented Language Models", PVLDB 18(1):42-52, 2024; arXiv:2310.09949v4):
#: its near-memory IVF-PQ vector search (ChamVS: FPGA memory nodes decoding PQ codes next to
#: their DRAM) has up to 23.72x lower search latency than its CPU vector search baseline.
#: A latency ratio, the largest over the paper's datasets and batch sizes.
CHAMELEON_LATENCY_VS_CPU = 23.72

#: columns of recall_qps.csv, in order (``recall`` is written as ``recall_at_10``, the
#: big-ann-benchmarks name; :func:`read_table` reads it back)
COLUMNS = ["dataset", "family", "system", "num_probes", "cand_list_len", "rerank", "recall",
           "recall_queries", "index_bytes", "index_build_s", "qps", "qps_ci_low", "qps_ci_high", "latency_mean_ns",
           "latency_p99_ns", "latency_unloaded_mean_ns", "dram_bytes_per_query", "num_queries",
           "steady_state", "ci_note"]
#: systems also simulated with one query in flight (``latency_unloaded_mean_ns``): the
#: latency of a lone query, the sense of Chameleon's latency figure
UNLOADED = SYSTEMS["ivfpq"]
#: the CSV's name of the ``recall`` column
RECALL_COLUMN = f"recall_at_{K}"


@dataclass(frozen=True)
class Grid:
    """The knob values of one scale (probes above the scale's clusters are left out)."""

    graph_probes: tuple
    cand_list_len: tuple
    ivfpq_probes: tuple
    rerank: tuple           # 0: no re-ranking; else >= k (graphs.ivfpq.check_scan_params)
    exact_probes: tuple


#: Grid per scale. tiny: a few points per family (a CI run in seconds); default: sized so the
#: experiment adds a few minutes to ``cosmos reproduce``; full: the wider sweep. Graph probes
#: start at 2 of 64 lists (1 of 16 at tiny) so that the graph fronts reach below recall 0.9.
GRIDS = {
    "tiny": Grid(graph_probes=(1, 2, 4), cand_list_len=(16, 32), ivfpq_probes=(2, 4),
                 rerank=(0, 32), exact_probes=(1, 2)),
    "default": Grid(graph_probes=(2, 4, 8), cand_list_len=(16, 32, 64), ivfpq_probes=(4, 8, 16),
                    rerank=(0, 100), exact_probes=(2, 4, 8)),
    "full": Grid(graph_probes=(4, 8, 16), cand_list_len=(16, 32, 64, 128),
                 ivfpq_probes=(4, 8, 16, 32), rerank=(0, 50, 100, 200),
                 exact_probes=(2, 4, 8, 16)),
}


def grid_for(scale) -> Grid:
    return GRIDS.get(scale.name, GRIDS["default"])


# ------------------------------------------------------------------------------ workloads
def _dataset(ctx, fam: str):
    """The dataset (with exact ground truth) of workload ``fam`` at the context's scale, as
    experiments.harness.workloads builds it for the graph traces (so the lists are the same)."""
    from graphs.workload import get_dataset
    from experiments.harness import workloads as wl

    if ctx.dataset:
        from graphs.index import default_cache_dir

        plan = wl.user_dataset_plan(scale=ctx.scale, **ctx.dataset)
        cache = Path(ctx.cache_dir) if ctx.cache_dir else default_cache_dir()
        return wl.user_dataset(plan, cache, ctx.progress), plan["num_clusters"]
    sc = ctx.scale
    return (get_dataset(fam, sc.n, sc.num_queries, ctx.seed, ctx.cache_dir,
                        progress=ctx.progress), sc.num_clusters)


def _save(ctx, name: str, build) -> tuple[Path, dict]:
    """Save the trace ``build()`` makes as ``out/traces/NAME.npz`` (once); (path, its meta)."""
    from graphs import load_trace, save_trace

    folder = ctx.traces_dir or ctx.out / "traces"
    folder.mkdir(exist_ok=True)
    path = folder / f"{name}.npz"
    if path.exists():
        tr = load_trace(path, verify=False)
    else:
        tr = build()
        save_trace(path, tr)
    return path, {**tr.meta, "index_bytes": trace_index_bytes(tr)}


def _build_seconds(ctx, ds, family: str, meta: dict, timings: dict) -> float | None:
    """Wall seconds the index of a point's trace took to build (``index_build_s``), or None
    if unknown: the graph and IVF-PQ indexes' as their cache entries recorded it when they
    were built (an entry made before build times were recorded has none); the exact scan's
    coarse lists as measured when its trace was made in this run (None if the trace was
    already in the results folder). A measurement: it enters no trace, index or cache key."""
    if family == "graph":
        from experiments.harness.workloads import index_build_seconds

        return index_build_seconds(ds, int(meta["num_clusters"]), seed=int(meta["seed"]),
                                   cache_dir=ctx.cache_dir, graph=meta.get("graph"))
    if family == "ivfpq":
        from graphs.ivfpq import IVFPQParams, ivfpq_build_seconds

        params = IVFPQParams(num_clusters=int(meta["num_clusters"]), pq_m=int(meta["pq_m"]),
                             seed=int(meta["seed"]), kmeans_iters=int(meta["kmeans_iters"]),
                             pq_iters=int(meta["pq_iters"]))
        return ivfpq_build_seconds(ds, params, ctx.cache_dir)
    return timings.get("index_build_s")


def points(ctx) -> list[dict]:
    """Every (workload, family, knobs) point of the context's grid with its trace: dicts of
    dataset, family, num_probes, cand_list_len, rerank (None where the family has no such
    knob), trace_path, recall, recall_queries, index_bytes (bytes of the index in the
    simulated memory, experiments.harness.capacity.trace_index_bytes) and index_build_s
    (:func:`_build_seconds`, None if unknown)."""
    from graphs.ivfpq import scan_trace
    from experiments.harness.workloads import workload

    grid = grid_for(ctx.scale)
    out = []
    for fam in ctx.families:
        ds, clusters = _dataset(ctx, fam)

        def add(family, name, build, probes, L=None, rerank=None, timings=None):
            path, meta = _save(ctx, name, build)
            secs = _build_seconds(ctx, ds, family, meta, timings or {})
            out.append(dict(dataset=fam, family=family, num_probes=probes, cand_list_len=L,
                            rerank=rerank, trace_path=str(path), recall=float(meta["recall"]),
                            recall_queries=int(meta["num_queries"]),
                            index_bytes=int(meta["index_bytes"]),
                            index_build_s=None if secs is None else round(secs, 3)))

        for p in (p for p in grid.graph_probes if p <= clusters):
            for L in grid.cand_list_len:
                kw = dict(ctx.dataset or {})
                add("graph", f"{fam}-graph-p{p}-L{L}",
                    lambda p=p, L=L, kw=kw: workload(
                        fam, ctx.scale, num_probes=p, cand_list_len=L, cache_dir=ctx.cache_dir,
                        seed=ctx.seed, progress=ctx.progress, **kw), p, L=L)
        for p in (p for p in grid.ivfpq_probes if p <= clusters):
            for r in grid.rerank:
                add("ivfpq", f"{fam}-ivfpq-p{p}-r{r}",
                    lambda p=p, r=r: scan_trace(ds, "ivfpq", num_clusters=clusters, num_probes=p,
                                                k=K, rerank=r, seed=ctx.seed,
                                                cache_dir=ctx.cache_dir), p, rerank=r)
        for p in (p for p in grid.exact_probes if p <= clusters):
            t = {}
            add("exact", f"{fam}-exact-p{p}",
                lambda p=p, t=t: scan_trace(ds, "exact", num_clusters=clusters, num_probes=p, k=K,
                                            seed=ctx.seed, cache_dir=ctx.cache_dir, timings=t),
                p, timings=t)
    return out


def _batch_of(system: str) -> int:
    """Queries per simulated "query" of ``system`` (its preset's scan_unit.batch_queries for
    a :data:`BATCHED` system, else 1)."""
    from cosmos.presets import get_preset

    return int(get_preset(system).scan_unit.batch_queries) if system in BATCHED else 1


def _batched_trace(trace_path: str, batch: int) -> str:
    """The exact trace at ``trace_path`` batched by cosmos.systems.batch_trace, saved once
    beside it as ``NAME-bB.npz`` (with its arrays' checksums, as graphs.save_trace)."""
    import json

    import numpy as np

    from cosmos.systems import batch_trace
    from cosmos.trace_input import as_trace
    from graphs.io import atomic_write_bytes
    from graphs.trace import array_checksum

    src = Path(trace_path)
    path = src.with_name(f"{src.stem}-b{batch}.npz")
    if path.exists():
        return str(path)
    bt = batch_trace(as_trace(str(src)), batch)
    arrays = {k: v for k, v in vars(bt).items() if k != "meta" and v is not None}
    meta = dict(bt.meta, checksums={k: array_checksum(v) for k, v in arrays.items()})
    arrays["meta"] = np.array(json.dumps(meta, sort_keys=True))
    atomic_write_bytes(path, lambda f: np.savez(f, **arrays))
    return str(path)


def _per_query(df: pd.DataFrame) -> pd.DataFrame:
    """Rows of :data:`BATCHED` systems per query: QPS and its interval x B (each simulated
    completion is a batch of B queries), DRAM bytes / B, queries simulated x B; latency
    stays the batch's (each query of a batch completes with it)."""
    for system in BATCHED:
        m = df.system == system
        if m.any():
            b = _batch_of(system)
            for col in ("qps", "qps_ci_low", "qps_ci_high"):
                df.loc[m, col] = df.loc[m, col] * b
            df.loc[m, "dram_bytes_per_query"] = df.loc[m, "dram_bytes_per_query"] / b
            df.loc[m, "num_queries"] = df.loc[m, "num_queries"] * b
    return df


def roofline_batches(vector_bytes: int, dim: int, system: str = BATCH_SYSTEM) -> tuple:
    """(B* at the unit's stream rate, B* at its share of the DRAM): the batch at which a
    pass of ``system``'s unit over vectors of ``vector_bytes`` bytes and ``dim`` dimensions
    turns compute bound (cosmos.systems.roofline_batch), with the bandwidth the unit's own
    stream (scan_unit.dot_bytes_per_cycle at scan_unit.clock_GHz: B* = 8 at float32), and
    with a device's peak DRAM bandwidth (its channels' data buses) shared by all the
    device's search contexts, each driving a unit: what a unit gets when every one is busy,
    so B* is larger there (the pass stays memory bound longer)."""
    from cosmos.presets import get_preset
    from cosmos.simulate import dram_config_for
    from cosmos.systems import roofline_batch
    from cosmos.units import unit

    cfg = get_preset(system)
    su = cfg.scan_unit
    macs = su.gemm_macs_per_cycle * su.clock_GHz * 1e9
    stream = su.dot_bytes_per_cycle * su.clock_GHz * 1e9
    units = unit("gpc").contexts_per_place(cfg)
    share = dram_config_for(cfg).peak_bandwidth_GBps * 1e9 / units
    return (roofline_batch(stream, macs, vector_bytes, dim),
            roofline_batch(share, macs, vector_bytes, dim))


def batch_sweep(ctx, pts: list) -> pd.DataFrame:
    """exact-pnm-batch at each B of :data:`BATCH_SWEEP` on each workload's exact trace at its
    most probes (``pts``: :func:`points`), the batched traces made by
    :func:`_batched_trace` over the same first ``sweep_queries`` queries: one row per
    (dataset, B) with QPS per query, the batch's latency, DRAM bytes per query and the
    roofline's B* (:func:`roofline_batches`). Written as ``batch_sweep.csv``."""
    import json

    import numpy as np

    exact = {}
    for pt in pts:
        if pt["family"] == "exact" and pt["num_probes"] >= exact.get(
                pt["dataset"], {"num_probes": 0})["num_probes"]:
            exact[pt["dataset"]] = pt
    tasks, roof = [], {}
    for fam, pt in exact.items():
        with np.load(pt["trace_path"]) as z:
            meta = json.loads(str(z["meta"]))
        roof[fam] = roofline_batches(int(meta["vector_bytes"]), int(meta["dim"]))
        for b in BATCH_SWEEP:
            tasks.append(dict(system=BATCH_SYSTEM, trace_path=_batched_trace(pt["trace_path"], b),
                              overrides={"scan_unit.batch_queries": b},
                              num_queries=-(-ctx.scale.sweep_queries // b), seed=ctx.seed,
                              ci_target=ctx.scale.ci_target,
                              tags=dict(dataset=fam, num_probes=pt["num_probes"],
                                        batch_queries=b)))
    lone = [dict(t, max_inflight=1, ci_target=None) for t in tasks]
    rows = ctx.sweep(simulate_task, tasks + lone, desc="exact-pnm-batch B sweep")
    df = pd.DataFrame(rows[:len(tasks)])
    b = df.batch_queries
    df["latency_one_batch_ns"] = [r["latency_mean_ns"] for r in rows[len(tasks):]]
    df["qps_one_batch"] = b / df.latency_one_batch_ns * 1e9
    for col in ("qps", "qps_ci_low", "qps_ci_high"):
        df[col] = df[col] * b          # per query: each completion is a batch of B queries
    df["dram_bytes_per_query"] = df.dram_bytes_per_query / b
    df["num_queries"] = df.num_queries * b
    df["roofline_batch"] = [roof[f][0] for f in df.dataset]
    df["roofline_batch_dram_share"] = [roof[f][1] for f in df.dataset]
    df = df[BATCH_COLUMNS]
    write_csv(ctx.out / "batch_sweep.csv", df)
    return df


def bend_batch(sweep: pd.DataFrame, column: str = "qps_one_batch") -> dict:
    """Per dataset of ``batch_sweep.csv``: the B of the highest ``column`` (by default the
    queries per second of one batch in flight, the roofline's setting): where the measured
    curve bends, more B past it costing more compute than the reads it saves."""
    return {fam: int(g.loc[g[column].idxmax(), "batch_queries"])
            for fam, g in sweep.groupby("dataset", sort=False)}


def run(ctx) -> dict:
    pts = points(ctx)
    tasks, lone = [], []
    for pt in pts:
        for system in SYSTEMS[pt["family"]]:
            tags = {k: pt[k] for k in ("dataset", "family", "num_probes", "cand_list_len",
                                        "rerank", "recall", "recall_queries", "index_bytes")}
            b = _batch_of(system)
            task = dict(system=system, trace_path=pt["trace_path"] if b == 1 else
                        _batched_trace(pt["trace_path"], b),
                        num_queries=-(-ctx.scale.sweep_queries // b), seed=ctx.seed,
                        tags={**tags, "system": system})
            tasks.append({**task, "ci_target": ctx.scale.ci_target})
            if system in UNLOADED:
                lone.append({**task, "max_inflight": 1})
    rows = ctx.sweep(simulate_task, tasks + lone, desc="recall-QPS sweep")
    df = _per_query(pd.DataFrame(rows[:len(tasks)]))
    # (system, trace) -> mean latency with one query in flight
    unloaded = {(t["system"], t["trace_path"]): r["latency_mean_ns"]
                for t, r in zip(lone, rows[len(tasks):])}
    df["latency_unloaded_mean_ns"] = [unloaded.get((t["system"], t["trace_path"]), float("nan"))
                                      for t in tasks]
    # a measurement, not a tag: kept out of the tasks (and so of every cache key)
    built = {pt["trace_path"]: pt["index_build_s"] for pt in pts}
    # a batched system's trace is its point's trace batched: the same index
    built.update({_batched_trace(pt["trace_path"], _batch_of(s)): pt["index_build_s"]
                  for pt in pts for s in SYSTEMS[pt["family"]] if s in BATCHED})
    df["index_build_s"] = [built[t["trace_path"]] for t in tasks]
    if "ci_note" not in df:
        df["ci_note"] = ""
    df = df[COLUMNS]
    write_csv(ctx.out / "recall_qps.csv", df.rename(columns={"recall": RECALL_COLUMN}))
    out = {}
    win = winners(df)
    for r in win.itertuples():
        key = f"{r.dataset}_at_recall_{r.target:g}"
        out[key] = (f"{r.system} ({r.family}) {r.qps:,.0f} QPS, {r.margin:.2f}x over "
                    f"{r.runner_up}" if isinstance(r.system, str) and isinstance(r.runner_up, str)
                    else (f"{r.system} ({r.family}) only" if isinstance(r.system, str)
                          else "not reached"))
    cham = chameleon_ratios(df)
    for fam, sub in cham.groupby("dataset", sort=False):
        out[f"{fam}_ivfpq_pnm_over_host_latency"] = [round(float(sub.latency_ratio.min()), 2),
                                                     round(float(sub.latency_ratio.max()), 2)]
    for _, host, pnm in SAME_STRATEGY:
        for fam, sub in chameleon_ratios(df, host, pnm).groupby("dataset", sort=False):
            out[f"{fam}_{pnm}_over_{host}_qps"] = [round(float(sub.qps_ratio.min()), 2),
                                                   round(float(sub.qps_ratio.max()), 2)]
    sweep = batch_sweep(ctx, pts)
    for fam, b in bend_batch(sweep).items():
        g = sweep[sweep.dataset == fam]
        out[f"{fam}_exact_pnm_batch_best_B"] = (
            f"{b} (roofline B* {g.roofline_batch.iloc[0]:.1f} at the unit's stream, "
            f"{g.roofline_batch_dram_share.iloc[0]:.1f} at its DRAM share)")
    return out


# ------------------------------------------------------------------------------- analysis
def pareto_front(frame: pd.DataFrame) -> pd.DataFrame:
    """The points of ``frame`` (columns ``recall``, ``qps``) that no other point beats on both:
    none has recall >= and QPS >= with one of them strictly greater. Sorted by recall
    ascending (so QPS descending); of exact duplicates one is kept. Rows with a missing
    recall or QPS are ignored."""
    f = frame.dropna(subset=["recall", "qps"])
    f = f.sort_values(["recall", "qps"], ascending=[False, False], kind="mergesort")
    keep, best = [], -math.inf
    for idx, q in zip(f.index, f.qps):
        if q > best:          # more QPS than every point of higher (or equal) recall
            keep.append(idx)
            best = q
    return f.loc[keep].sort_values("recall", kind="mergesort")


def qps_at_recall(front: pd.DataFrame, target: float) -> float:
    """The QPS a system reaches at recall ``target`` on its Pareto front (``front`` from
    :func:`pareto_front`): between the two front points around the target, log QPS
    interpolated linearly in recall; the front's first point if it is at or above the target
    already (its QPS: what the sweep shows at least); NaN if no point reaches the target."""
    if front.empty or front.recall.max() < target:
        return float("nan")
    above = front[front.recall >= target].iloc[0]
    below = front[front.recall < target]
    if below.empty or above.recall == target:
        return float(above.qps)
    lo = below.iloc[-1]
    t = (target - lo.recall) / (above.recall - lo.recall)
    return float(math.exp(math.log(lo.qps) + t * (math.log(above.qps) - math.log(lo.qps))))


def is_lower_bound(frame: pd.DataFrame, target: float) -> bool:
    """True when every swept point of a system (``frame``) is above recall ``target``:
    :func:`qps_at_recall` is then the QPS of a setting with more recall than needed, and a
    setting of less effort (not swept) could reach the target faster."""
    r = frame.recall.dropna()
    return not r.empty and bool(r.min() > target)


def winners(df: pd.DataFrame, targets=TARGETS) -> pd.DataFrame:
    """Per dataset and recall target: the system with the most QPS at the target (its family
    and QPS), the best system of any other family (``runner_up``, its family and QPS) and
    ``margin`` = winner QPS / runner-up QPS; ``lower_bounds`` lists the systems whose QPS at
    the target is a lower bound (:func:`is_lower_bound`). ``reached`` lists the systems that reach the
    target, ``not_reached`` those that do not; system and family are empty when none does,
    runner-up empty (None or NaN) when no other family does (margin NaN)."""
    rows = []
    for fam, sub in df.groupby("dataset", sort=False):
        for t in targets:
            at, bounds = {}, []
            for s, g in sub.groupby("system", sort=False):
                front = pareto_front(g)
                at[s] = qps_at_recall(front, t)
                if is_lower_bound(g, t):
                    bounds.append(s)
            ok = {s: q for s, q in at.items() if q == q}
            row = dict(dataset=fam, target=t, system=None, family=None, qps=float("nan"),
                       runner_up=None, runner_up_family=None, runner_up_qps=float("nan"),
                       margin=float("nan"), lower_bounds=", ".join(bounds), reached=", ".join(ok),
                       not_reached=", ".join(s for s in at if s not in ok))
            if ok:
                best = max(ok, key=lambda s: (ok[s], s))
                row.update(system=best, family=FAMILY_OF.get(best, best), qps=ok[best])
                others = {s: q for s, q in ok.items() if FAMILY_OF.get(s, s) != row["family"]}
                if others:
                    ru = max(others, key=lambda s: (others[s], s))
                    row.update(runner_up=ru, runner_up_family=FAMILY_OF.get(ru, ru),
                               runner_up_qps=others[ru], margin=ok[best] / others[ru])
            rows.append(row)
    return pd.DataFrame(rows)


def chameleon_ratios(df: pd.DataFrame, host: str = "ivfpq-host",
                     pnm: str = "ivfpq-pnm") -> pd.DataFrame:
    """``pnm`` against ``host`` (by default ivfpq-pnm against ivfpq-host) at the same trace
    (dataset, num_probes, rerank): QPS ratio (pnm / host, closed loop) and the ratio of the
    mean latency of a lone query (host / pnm, ``latency_unloaded_mean_ns``: Chameleon's sense
    of "lower latency"), with each point's recall."""
    key = ["dataset", "num_probes", "rerank"]
    h = df[df.system == host].set_index(key)
    p = df[df.system == pnm].set_index(key)
    both = h.index.intersection(p.index)
    out = pd.DataFrame({"recall": h.loc[both, "recall"],
                        "qps_host": h.loc[both, "qps"], "qps_pnm": p.loc[both, "qps"],
                        "latency_host_ns": h.loc[both, "latency_unloaded_mean_ns"],
                        "latency_pnm_ns": p.loc[both, "latency_unloaded_mean_ns"]}, index=both)
    out["qps_ratio"] = out.qps_pnm / out.qps_host
    out["latency_ratio"] = out.latency_host_ns / out.latency_pnm_ns
    return out.reset_index()


# ------------------------------------------------------------------------------ plot, summary
_MARKERS = {"base": "o", "cxl-anns": "s", "cosmos": "D", "ivfpq-host": "v", "ivfpq-pnm": "^",
            "exact-host": "<", "exact-pnm": ">", "ivfpq-host-precomputed": "1",
            "ivfpq-host-precomputed-prefetch": "2", "ivfpq-pnm-chamvs": "P",
            "ivfpq-pnm-chamvs-perlist": "X", "exact-host-prefetch": "3"}


def read_table(folder) -> pd.DataFrame:
    """``recall_qps.csv`` of ``folder`` with its recall column as ``recall``."""
    return pd.read_csv(Path(folder) / "recall_qps.csv").rename(columns={RECALL_COLUMN: "recall"})


def plot(folder) -> None:
    plt = pyplot()

    df = read_table(folder)
    fams = list(dict.fromkeys(df.dataset))
    systems = list(dict.fromkeys(df.system))
    fig, axes = plt.subplots(1, len(fams), figsize=(5.0 * len(fams), 3.8), squeeze=False)
    for ax, fam in zip(axes[0], fams):
        sub = df[df.dataset == fam]
        for i, s in enumerate(systems):
            g = sub[sub.system == s]
            if g.empty:
                continue
            colour = f"C{i}"
            ax.errorbar(g.recall, g.qps, yerr=error_bars(g, "qps"), fmt=_MARKERS.get(s, "o"),
                        color=colour, ms=4, capsize=2, lw=0.8, alpha=0.8, label=s)
            front = pareto_front(g)
            ax.step(front.recall, front.qps, where="pre", color=colour, lw=1.1)
        for t in TARGETS:
            ax.axvline(t, color="0.7", lw=0.7, ls="--")
        ax.set_yscale("log")
        ax.set_xlabel("recall@10")
        ax.set_ylabel("QPS (closed loop)")
        ax.set_title(f"{fam}: recall against QPS", fontsize=9)
        ax.legend(frameon=False, fontsize=7)
    fig.tight_layout()
    save_figure(fig, folder, "recall_qps")
    plt.close(fig)
    if (Path(folder) / "batch_sweep.csv").exists():
        plot_batch_sweep(folder)


def plot_batch_sweep(folder) -> None:
    """``batch_sweep.png``: QPS per query and the batch's mean latency against B (log 2
    axis), one line per workload, the roofline's B* at the unit's stream (dashed) and at its
    DRAM share (dotted) marked."""
    plt = pyplot()
    df = pd.read_csv(Path(folder) / "batch_sweep.csv")
    fig, (a, b) = plt.subplots(1, 2, figsize=(9.0, 3.4))
    for i, (fam, g) in enumerate(df.groupby("dataset", sort=False)):
        colour = f"C{i}"
        a.errorbar(g.batch_queries, g.qps, yerr=error_bars(g, "qps"), fmt="o-", color=colour,
                   ms=4, capsize=2, lw=1.0, label=f"{fam} ({g.num_probes.iloc[0]} probes)")
        b.plot(g.batch_queries, g.latency_mean_ns / 1e3, "o-", color=colour, ms=4, lw=1.0,
               label=fam)
        for ax in (a, b):
            ax.axvline(g.roofline_batch.iloc[0], color=colour, ls="--", lw=0.7)
            ax.axvline(g.roofline_batch_dram_share.iloc[0], color=colour, ls=":", lw=0.7)
    for ax, ylabel in ((a, "QPS per query (closed loop)"), (b, "batch latency, mean (us)")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("B = scan_unit.batch_queries")
        ax.set_ylabel(ylabel)
        ax.legend(frameon=False, fontsize=7)
    a.set_title("exact-pnm-batch: B* dashed (unit stream), dotted (DRAM share)", fontsize=8)
    fig.tight_layout()
    save_figure(fig, folder, "batch_sweep")
    plt.close(fig)


def _winner_line(r) -> str:
    t = f"{r.target:g}"
    if not isinstance(r.system, str):
        return f"- recall {t}: no system reaches it (best recall in the sweep is below)."
    line = f"- recall {t}: **{r.family}** wins with {r.system}, {r.qps:,.0f} QPS"
    if isinstance(r.runner_up, str):
        line += (f", {r.margin:.2f}x the best other family ({r.runner_up_family}: "
                 f"{r.runner_up}, {r.runner_up_qps:,.0f} QPS)")
    else:
        line += " (no system of another family reaches it)"
    if r.not_reached:
        line += f"; cannot reach {t}: {r.not_reached}"
    if r.lower_bounds:
        line += (f"; at least (every swept setting is above {t}, less effort was not swept): "
                 f"{r.lower_bounds}")
    return line + "."


def summary_md(folder) -> str:
    df = read_table(folder)
    lines = ["## Recall@10 against QPS: graph vs IVF-PQ vs exact scan", "",
             "QPS at each recall target is read off each system's Pareto front (log QPS "
             "interpolated linearly in recall between the two front points around the target); "
             "'>=' marks a system whose every swept setting is above the target (the QPS of "
             "its lowest-effort setting: a lower bound).",
             ""]
    win = winners(df)
    for fam, sub in win.groupby("dataset", sort=False):
        lines += [f"### {fam}", ""]
        lines += [_winner_line(r) for r in sub.itertuples()]
        lines += ["", "| system | QPS at recall " + " | QPS at recall ".join(
            f"{t:g}" for t in TARGETS) + " | best recall in the sweep |",
            "|---|" + "---|" * (len(TARGETS) + 1)]
        d = df[df.dataset == fam]
        for s, g in d.groupby("system", sort=False):
            front = pareto_front(g)
            cells = []
            for t in TARGETS:
                q = qps_at_recall(front, t)
                cells.append("cannot reach" if q != q else
                             (">= " if is_lower_bound(g, t) else "") + f"{q:,.0f}")
            lines.append(f"| {s} | " + " | ".join(cells) + f" | {g.recall.max():.3f} |")
        lines.append("")
    cham = chameleon_ratios(df)
    lines += ["### Near-memory IVF-PQ over the host: ours beside Chameleon", "",
              f"Chameleon (Jiang et al., PVLDB 18(1), 2024) reports its near-memory IVF-PQ "
              f"search (ChamVS) up to {CHAMELEON_LATENCY_VS_CPU}x lower latency than its CPU "
              "vector search. Ours, ivfpq-pnm against ivfpq-host on the same trace (same index, "
              "probes and re-rank depth):", "",
              "| dataset | probes | re-rank | recall@10 | latency of a lone query, host / pnm "
              "| QPS pnm / host (closed loop) |",
              "|---|---|---|---|---|---|"]
    for r in cham.itertuples():
        lines.append(f"| {r.dataset} | {r.num_probes:.0f} | {r.rerank:.0f} | {r.recall:.3f} | "
                     f"{r.latency_ratio:.2f}x | {r.qps_ratio:.2f}x |")
    if len(cham):
        lines += ["", f"Latency ratio over the matched settings: {cham.latency_ratio.min():.2f}x "
                      f"to {cham.latency_ratio.max():.2f}x (Chameleon: up to "
                      f"{CHAMELEON_LATENCY_VS_CPU}x); QPS ratio {cham.qps_ratio.min():.2f}x to "
                      f"{cham.qps_ratio.max():.2f}x."]
    lines += ["", "Like for like: the same IVF-PQ index, code size, probes and re-rank depth on "
              "both sides, and the same DRAM behind them; both ratios are near memory over a "
              "host CPU. Not like for like: Chameleon's CPU baseline scans codes in its own "
              "local DRAM with many cores and SIMD (faiss), ours reads every code over the CXL "
              "link into the modeled host cores; Chameleon's figure is a measured latency "
              "of query batches on billion-vector sets and FPGA memory nodes, ours the simulated "
              "mean latency of one query at a time (no other query in flight) on sets of the "
              "run's scale, with modeled scan units "
              "(cosmos.config scan_unit, with its sources)."]
    lines += _same_strategy_md(df)
    if (Path(folder) / "batch_sweep.csv").exists():
        lines += _batch_sweep_md(pd.read_csv(Path(folder) / "batch_sweep.csv"))
    return "\n".join(lines) + "\n"


def _batch_sweep_md(sweep: pd.DataFrame) -> list:
    """The batch-size sweep of exact-pnm-batch: QPS per query and batch latency per B, the
    B of the most QPS beside the roofline's B*."""
    lines = ["", "### Batched exact scan: B queries per pass (exact-pnm-batch)", "",
             "B = scan_unit.batch_queries queries share one read of each probed list of their "
             "union; the unit does B dot products per vector (the VCK5000 study's GEMM reuse). "
             "QPS is per query; latency is a batch's. B* is where the roofline says a pass "
             "turns compute bound (cosmos.systems.roofline_batch): at the unit's own stream "
             "rate, and at its share of the device's peak DRAM bandwidth (every context "
             "busy). With one batch in flight each device's lists run on one unit at its own "
             "stream rate, the roofline's setting: B / its latency is the rate the pass "
             "gives; the closed loop (every context busy) adds the DRAM's sharing and, at "
             "small scales, the drain of few batches.", "",
             "| dataset | probes | B | QPS per query, closed loop | batch latency, mean (us) "
             "| DRAM bytes per query | one batch in flight: latency (us) | queries/s (B / "
             "latency) |", "|---|---|---|---|---|---|---|---|"]
    for r in sweep.itertuples():
        lines.append(f"| {r.dataset} | {r.num_probes} | {r.batch_queries} | {r.qps:,.0f} | "
                     f"{r.latency_mean_ns / 1e3:,.1f} | {r.dram_bytes_per_query:,.0f} | "
                     f"{r.latency_one_batch_ns / 1e3:,.2f} | {r.qps_one_batch:,.0f} |")
    lines.append("")
    for fam, b in bend_batch(sweep).items():
        g = sweep[sweep.dataset == fam]
        lines.append(f"- {fam}: one batch in flight gives the most queries/s at B = {b} "
                     f"(closed loop: B = {bend_batch(g, 'qps')[fam]}); roofline B* = "
                     f"{g.roofline_batch.iloc[0]:.1f} at the unit's stream, "
                     f"{g.roofline_batch_dram_share.iloc[0]:.1f} at its DRAM share.")
    return lines


def _ratio_range(s) -> str:
    s = s.dropna()
    return "-" if s.empty else f"{s.min():.2f}x to {s.max():.2f}x"


def _same_strategy_md(df: pd.DataFrame) -> list:
    """The host against near memory at the same lookup-table strategy, and the host's stream
    prefetcher on against off (issue 54): ratio ranges over the matched traces."""
    lines = ["", "### Host against near memory at the same lookup-table strategy", "",
             "Each pair replays the same traces (same recall); per table strategy: a table per "
             "probed list (faiss IndexIVFPQ without precomputed tables) or precomputed tables "
             "(faiss use_precomputed_table: one query table, per list its term table added); "
             "per data flow: the query's table sent down (16 KiB at pq_m = 16) or ChamVS's "
             "query broadcast with the tables built on the device.", "",
             "| dataset | strategy | host | near memory | QPS near / host (closed loop) | "
             "lone-query latency host / near |", "|---|---|---|---|---|---|"]
    for label, host, pnm in SAME_STRATEGY:
        c = chameleon_ratios(df, host, pnm)
        for fam, sub in c.groupby("dataset", sort=False):
            lines.append(f"| {fam} | {label} | {host} | {pnm} | {_ratio_range(sub.qps_ratio)} | "
                         f"{_ratio_range(sub.latency_ratio)} |")
    lines += ["", "### The host's L2 stream prefetcher on its list reads", "",
              "The prefetch systems keep host.stream_prefetch_lines (the L2 streamer's 20 lines "
              "ahead, Intel's optimization manual) in flight on a list read instead of the "
              "core's host.outstanding_misses; re-rank reads are random and keep the latter.",
              "", "| dataset | without | with | QPS with / without (closed loop) |",
              "|---|---|---|---|"]
    key = ["dataset", "num_probes", "rerank"]
    for off, on in PREFETCH_PAIRS:
        a = df[df.system == off].set_index(key)
        b = df[df.system == on].set_index(key)
        both = a.index.intersection(b.index)
        r = (b.loc[both, "qps"] / a.loc[both, "qps"]).reset_index()
        for fam, sub in r.groupby("dataset", sort=False):
            lines.append(f"| {fam} | {off} | {on} | {_ratio_range(sub.qps)} |")
    return lines


if __name__ == "__main__":
    from experiments.harness.runner import script_main

    raise SystemExit(script_main(NAME))
