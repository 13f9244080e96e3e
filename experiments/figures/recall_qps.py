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
most QPS at recall 0.9 and 0.95 (the Pareto front interpolated) and puts Chameleon's reported
near-memory over CPU figure beside our ``ivfpq-pnm`` over ``ivfpq-host`` at the same index and
knobs, then the host against near memory at the same lookup-table strategy
(:data:`SAME_STRATEGY`) and the host's stream prefetcher on and off (:data:`PREFETCH_PAIRS`),
issue 54. ``batch_sweep.csv`` sweeps exact-pnm-batch's B on each
workload's exact trace at its most probes (QPS per query, the batch's latency, one batch in
flight, and the roofline's B*), drawn in ``batch_sweep.png`` and tabled in ``summary.md``.

``winners.csv`` has, per dataset and recall target, the winner and the best system of another
family with the 95 % intervals of their QPS at the target and of the margin from the runs'
own batch-means intervals (empty, with ``ci_note`` saying why, where the runs have none: at
the tiny and default scales). With ``--replications R`` (R > 1,
experiments.harness.replications; seeds SEED + r) every replication builds its own workloads
and simulates the whole grid: ``recall_qps.csv`` holds each setting's means,
``recall_qps_replications.csv`` each replication's table, and ``winners.csv`` the winner by
mean QPS at the target with its Student-t interval over the replications, in how many
replications it wins, and its margin over the runner-up with its interval
(:func:`run_replications`, issue 54).

This module is the experiment: its grid, points, simulation tasks, table, run, plot and
summary. Two concerns live in their own modules, which import nothing of this one:
experiments/figures/parts/recall_winners.py, the winners at a recall level (Pareto fronts,
QPS at a recall target with its interval, ``winners.csv``, the replicated winners: pure
functions over the tables), and experiments/figures/parts/batch_sweep.py, the batch-size
sweep of exact-pnm-batch (its tasks, ``batch_sweep.csv``, plot and summary section).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pandas as pd

from experiments.figures.parts.batch_sweep import (BATCH_SWEEP, BATCH_SYSTEM, batch_headline,
                                                  batch_sweep, batch_sweep_md,
                                                  batched_trace_file, plot_batch_sweep)
from experiments.figures.parts.recall_winners import (SYSTEMS, TARGETS, WINNER_COLUMNS,
                                                     at_recall, pareto_front,
                                                     replicated_at_recall,
                                                     replicated_winners, winners)
from experiments.harness.capacity import trace_index_bytes
from experiments.harness.common import error_bars, pyplot, save_figure, write_csv
from experiments.harness.replications import count_text, t_interval, within_interval
from experiments.harness.sim import simulate_task

NAME = "recall_qps"
TITLE = "Recall@10 against QPS: graph vs IVF-PQ vs exact scan, host vs near memory"

#: systems that replay batches of queries (cosmos.systems.batch_trace), not single queries
BATCHED = ("exact-pnm-batch",)
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
    folder.mkdir(parents=True, exist_ok=True)      # a replication's: traces/seed<S + r>/
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


def estimated_requests(ctx) -> pd.DataFrame | None:
    """DRAM requests per query of every simulation of the grid, estimated from the grid alone
    (no index or trace is built), for :func:`plan_sweep`; None for a user's dataset (its
    dimension is not read before the run). Columns: ``dataset``, ``system``, ``num_probes``,
    ``cand_list_len``, ``rerank``, ``runs`` (2 for the IVF-PQ systems, also simulated with one
    query in flight) and ``requests_per_query``. Per family: a graph point, the plan's
    ``REQUESTS_PER_QUERY`` of the scale x probes / the scale's probes x sqrt(L / 64) (at the
    default scale the work grows as about the square root of L: 1,173, 1,713 and 2,422 lines
    at L = 16, 32, 64 on SIFT-like); an exact scan, probes x the mean list (n / C vectors) x
    the vector's 64-byte lines; IVF-PQ, probes x the mean list x ``pq_m`` code bytes / 64,
    plus re-rank x the vector's lines, plus probes x the term table's lines
    (cosmos.program.term_table_bytes) for the systems whose scan reads it from memory
    (cosmos.systems.TERM_OBJECT in the model). Probed lists run longer than the mean (size
    biased: 3,431 lines against 3,125 for a 2-probe exact scan at the default scale), which
    the estimate leaves out; exact-pnm-batch is counted as exact-pnm (no lists shared within
    a batch: an upper bound)."""
    import math

    import numpy as np

    from cosmos.presets import get_preset
    from cosmos.program import term_table_bytes
    from cosmos.systems import TERM_OBJECT, model_for
    from experiments.harness.plan import REQUESTS_PER_QUERY
    from graphs.ivfpq import IVFPQParams
    from graphs.synthetic import SPECS

    if ctx.dataset:
        return None
    sc, grid = ctx.scale, grid_for(ctx.scale)
    per_q = REQUESTS_PER_QUERY.get(sc.name) or REQUESTS_PER_QUERY["default"]
    pq_m, mean_list = IVFPQParams().pq_m, sc.n / sc.num_clusters
    reads_terms = {s: any(getattr(st, "objects", None) == TERM_OBJECT
                          for st in model_for(get_preset(s)).scan) for s in SYSTEMS["ivfpq"]}
    table_lines = term_table_bytes(pq_m) / 64
    rows = []

    def add(fam, systems, requests, p, L=None, rerank=None):
        for s in systems:
            r = requests(s) if callable(requests) else requests
            rows.append(dict(dataset=fam, system=s, num_probes=p, cand_list_len=L,
                             rerank=rerank, runs=2 if s in UNLOADED else 1,
                             requests_per_query=r))

    for fam in ctx.families:
        spec = SPECS[fam]
        lines = math.ceil(spec.dim * np.dtype(spec.dtype).itemsize / 64)
        for p in (p for p in grid.graph_probes if p <= sc.num_clusters):
            for L in grid.cand_list_len:
                add(fam, SYSTEMS["graph"], per_q[fam] * p / sc.num_probes * math.sqrt(L / 64),
                    p, L=L)
        for p in (p for p in grid.ivfpq_probes if p <= sc.num_clusters):
            for rr in grid.rerank:
                add(fam, SYSTEMS["ivfpq"], lambda s, p=p, rr=rr: (
                    p * mean_list * pq_m / 64 + rr * lines
                    + reads_terms[s] * p * table_lines), p, rerank=rr)
        for p in (p for p in grid.exact_probes if p <= sc.num_clusters):
            add(fam, SYSTEMS["exact"], p * mean_list * lines, p)
    return pd.DataFrame(rows)


def check(ctx) -> None:
    """recall_qps needs a real index of each family: its IVF-PQ and exact-scan systems scan the
    real lists, and its graph fronts need end-to-end recall. A cluster-template scale
    (``--scale paper``) has neither (experiments.harness.workloads, graphs.templates), so the
    experiment stops there with one line (ValueError; the runner and `cosmos reproduce` ask
    before writing anything) instead of generating 10^9 vectors."""
    sc = ctx.scale
    if sc.templates:
        raise ValueError(f"recall_qps needs a real index (its IVF-PQ and exact scans read the "
                         f"real lists, its recall is end-to-end); --scale {sc.name} is a "
                         f"cluster-template workload of {sc.n:,} vectors, whose recall is known "
                         f"only per template (fig4a's workload.csv): run it at --full or below")


def plan_sweep(ctx) -> dict | None:
    """The estimate ``cosmos reproduce --dry-run`` gives of this experiment's own sweep
    (experiments.harness.plan): the simulations of :func:`estimated_requests`, each of the
    scale's ``sweep_queries`` (the +-1 % stop test of the full scale starts at 2,000
    completions, its number of queries), and the batch-size sweep of exact-pnm-batch
    (:data:`BATCH_SWEEP`, closed loop and one batch in flight) on each dataset's exact scan at
    its most probes; replications multiply it all. None for a user's dataset."""
    from experiments.harness.plan import sweep_estimate

    est = estimated_requests(ctx)
    if est is None:
        return None
    sc = ctx.scale
    work = float((est.runs * est.requests_per_query).sum())
    sims = int(est.runs.sum())
    exact = est[est.system == BATCH_SYSTEM]
    for _, per_fam in exact.groupby("dataset"):
        work += 2 * len(BATCH_SWEEP) * float(per_fam.requests_per_query.max())
        sims += 2 * len(BATCH_SWEEP)
    reps = max(1, int(ctx.replications))
    requests = work * sc.sweep_queries * reps
    out = sweep_estimate(f"{sims * reps} simulations of {sc.sweep_queries:,} queries each "
                         "(graph, IVF-PQ and exact-scan points, the IVF-PQ systems' "
                         "lone-query runs and the batch-size sweep"
                         f"{f', {reps} replications' if reps > 1 else ''})",
                         requests, requests, ctx)
    out["what"] += "; plus the IVF-PQ and exact-scan indexes and traces, built once and cached"
    return out


def _batch_of(system: str) -> int:
    """Queries per simulated "query" of ``system`` (its preset's scan_unit.batch_queries for
    a :data:`BATCHED` system, else 1)."""
    from cosmos.presets import get_preset

    return int(get_preset(system).scan_unit.batch_queries) if system in BATCHED else 1


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


def _tasks(ctx, pts: list) -> tuple[list, list]:
    """(closed-loop tasks, one-query-in-flight tasks) of the points ``pts`` (:func:`points`)
    of context ``ctx`` (its seed): every system of each point's family."""
    tasks, lone = [], []
    for pt in pts:
        for system in SYSTEMS[pt["family"]]:
            tags = {k: pt[k] for k in ("dataset", "family", "num_probes", "cand_list_len",
                                        "rerank", "recall", "recall_queries", "index_bytes")}
            b = _batch_of(system)
            task = dict(system=system, trace_path=pt["trace_path"] if b == 1 else
                        batched_trace_file(pt["trace_path"], b),
                        num_queries=-(-ctx.scale.sweep_queries // b), seed=ctx.seed,
                        tags={**tags, "system": system})
            tasks.append({**task, "ci_target": ctx.scale.ci_target})
            if system in UNLOADED:
                lone.append({**task, "max_inflight": 1})
    return tasks, lone


def _table(pts: list, tasks: list, lone: list, rows: list) -> pd.DataFrame:
    """The rows of ``recall_qps.csv`` (:data:`COLUMNS`, ``recall`` by that name) of one
    workload instance from its simulations' ``rows`` (``tasks`` then ``lone``, as
    :func:`_tasks` made them for the points ``pts``)."""
    df = _per_query(pd.DataFrame(rows[:len(tasks)]))
    # (system, trace) -> mean latency with one query in flight
    unloaded = {(t["system"], t["trace_path"]): r["latency_mean_ns"]
                for t, r in zip(lone, rows[len(tasks):])}
    df["latency_unloaded_mean_ns"] = [unloaded.get((t["system"], t["trace_path"]), float("nan"))
                                      for t in tasks]
    # a measurement, not a tag: kept out of the tasks (and so of every cache key)
    built = {pt["trace_path"]: pt["index_build_s"] for pt in pts}
    # a batched system's trace is its point's trace batched: the same index
    built.update({batched_trace_file(pt["trace_path"], _batch_of(s)): pt["index_build_s"]
                  for pt in pts for s in SYSTEMS[pt["family"]] if s in BATCHED})
    df["index_build_s"] = [built[t["trace_path"]] for t in tasks]
    if "ci_note" not in df:
        df["ci_note"] = ""
    return df[COLUMNS]


def run(ctx) -> dict:
    if ctx.replications > 1:
        return run_replications(ctx)
    pts = points(ctx)
    tasks, lone = _tasks(ctx, pts)
    rows = ctx.sweep(simulate_task, tasks + lone, desc="recall-QPS sweep")
    df = _table(pts, tasks, lone, rows)
    write_csv(ctx.out / "recall_qps.csv", df.rename(columns={"recall": RECALL_COLUMN}))
    out = {}
    win = winners(df)
    write_csv(ctx.out / "winners.csv", win[WINNER_COLUMNS])
    for r in win.itertuples():
        key = f"{r.dataset}_at_recall_{r.target:g}"
        out[key] = (f"{r.system} ({r.family}) {r.qps:,.0f} QPS, {r.margin:.2f}x over "
                    f"{r.runner_up}" if isinstance(r.system, str) and isinstance(r.runner_up, str)
                    else (f"{r.system} ({r.family}) only" if isinstance(r.system, str)
                          else "not reached"))
        # the 95 % intervals where the runs around the target have theirs (left out
        # otherwise, as fig4a's headline)
        for col in ("qps", "margin"):
            ci = [float(getattr(r, f"{col}_ci_{e}")) for e in ("low", "high")]
            if all(v == v for v in ci):
                out[f"{key}_{col}_ci95"] = [round(v, 3 if col == "margin" else 0) for v in ci]
    out.update(_ratio_headline(df))
    sweep = batch_sweep(ctx, pts)
    out.update(batch_headline(sweep))
    return out


def _ratio_headline(df: pd.DataFrame) -> dict:
    """Headline ranges of ivfpq-pnm over ivfpq-host (lone-query latency) and of each
    :data:`SAME_STRATEGY` pair (closed-loop QPS), per dataset."""
    out = {}
    cham = chameleon_ratios(df)
    for fam, sub in cham.groupby("dataset", sort=False):
        out[f"{fam}_ivfpq_pnm_over_host_latency"] = [round(float(sub.latency_ratio.min()), 2),
                                                     round(float(sub.latency_ratio.max()), 2)]
    for _, host, pnm in SAME_STRATEGY:
        for fam, sub in chameleon_ratios(df, host, pnm).groupby("dataset", sort=False):
            out[f"{fam}_{pnm}_over_{host}_qps"] = [round(float(sub.qps_ratio.min()), 2),
                                                   round(float(sub.qps_ratio.max()), 2)]
    return out


def run_replications(ctx) -> dict:
    """recall_qps on ``ctx.replications`` workload instances (experiments.harness.replications):
    each replication builds its own datasets, indexes and traces (``traces/seed<SEED + r>/``)
    and simulates the whole grid with its seed, all in one sweep. Writes
    ``recall_qps_replications.csv`` (each replication's table, led by ``replication`` and
    ``seed``), ``recall_qps.csv`` (:func:`aggregate`: each point's means),
    ``winners_replications.csv`` and ``winners.csv`` (:func:`replicated_winners`). The
    batch-size sweep runs on replication 0 alone (``batch_sweep.csv`` as without
    replications: it measures where exact-pnm-batch bends against the roofline, which the
    winners do not use)."""
    made = {}

    def tasks_of(c):
        pts = points(c)
        tasks, lone = _tasks(c, pts)
        made[c.seed] = (pts, tasks, lone)
        return tasks + lone

    rows = ctx.replicated_sweep(simulate_task, tasks_of, desc="recall-QPS sweep")
    tables = []
    for r, seed in enumerate(ctx.seeds):
        own = [{k: v for k, v in row.items() if k not in ("replication", "seed")}
               for row in rows if row["replication"] == r]
        tables.append(_table(*made[seed], own).assign(replication=r, seed=seed))
    per_rep = pd.concat(tables, ignore_index=True)
    per_rep = per_rep[["replication", "seed"] + COLUMNS]
    agg = aggregate(per_rep)

    def csv_names(frame):
        return frame.rename(columns={c: RECALL_COLUMN + c[len("recall"):] for c in frame.columns
                                     if c == "recall" or c.startswith("recall_rep_")})

    write_csv(ctx.out / "recall_qps.csv", csv_names(agg))
    write_csv(ctx.out / "recall_qps_replications.csv", csv_names(per_rep))
    win, each = replicated_winners(per_rep)
    write_csv(ctx.out / "winners.csv", win)
    write_csv(ctx.out / "winners_replications.csv", each)
    n = ctx.replications
    out = {"replications": n, "seeds": ctx.seeds}
    for r in win.itertuples():
        key = f"{r.dataset}_at_recall_{r.target:g}"
        if not isinstance(r.system, str):
            out[key] = "not reached in every replication"
            continue
        out[key] = (f"{r.system} ({r.family}) {r.qps:,.0f} QPS (over seeds "
                    f"{_ci(r.qps_rep_ci_low, r.qps_rep_ci_high)}), wins in {int(r.wins)} of {n}"
                    + (f", {r.margin:.2f}x over {r.runner_up} (over seeds "
                       f"{_ci(r.margin_rep_ci_low, r.margin_rep_ci_high, '.2f')}), above it "
                       f"in {int(r.margin_holds)} of {n}" if isinstance(r.runner_up, str)
                       else " only"))
    out.update(_ratio_headline(agg))
    out.update(batch_headline(batch_sweep(ctx, made[ctx.seed][0])))
    return out


# ------------------------------------------------------------------------------ replications
#: figures of ``recall_qps.csv`` that a replicated run gives as the mean over the
#: replications with their Student-t interval (``*_rep_ci_low`` / ``*_rep_ci_high``) and
#: sample deviation (``*_rep_sd``)
REPLICATED_FIGURES = ("recall", "qps")
#: figures of a replicated ``recall_qps.csv`` given as the mean over the replications alone
MEAN_ONLY = ("recall_queries", "index_bytes", "index_build_s", "latency_mean_ns",
             "latency_p99_ns", "latency_unloaded_mean_ns", "dram_bytes_per_query",
             "num_queries")
#: a point of the grid: the columns that name it
POINT = ["dataset", "family", "system", "num_probes", "cand_list_len", "rerank"]


def aggregate(per_rep: pd.DataFrame) -> pd.DataFrame:
    """The replications' recall_qps tables (one row per replication x point, led by
    ``replication`` and ``seed``, ``recall`` by that name) -> one row per point (:data:`POINT`,
    the same grid in every replication): :data:`COLUMNS` with ``recall`` and ``qps`` the means
    over the replications, ``qps_ci_low`` / ``qps_ci_high`` the runs' own intervals carried to
    the mean (experiments.harness.replications.within_interval), the other figures means
    (``index_build_s`` NaN if any replication's is unknown), ``steady_state`` whether every
    run had one and ``ci_note`` the distinct notes; then ``replications``, ``seeds`` and
    ``recall_rep_*`` / ``qps_rep_*`` (t_interval over the replications)."""
    out = []
    for key, sub in per_rep.groupby(POINT, sort=False, dropna=False):
        row = dict(zip(POINT, key))
        for col in REPLICATED_FIGURES:
            mean, lo, hi, sd = t_interval(sub[col])
            row[col] = mean
            row.update({f"{col}_rep_ci_low": lo, f"{col}_rep_ci_high": hi,
                        f"{col}_rep_sd": sd})
        row["qps_ci_low"], row["qps_ci_high"] = within_interval(sub.qps, sub.qps_ci_low,
                                                                sub.qps_ci_high)
        for col in MEAN_ONLY:
            row[col] = float(sub[col].astype(float).mean(skipna=False))
        row["steady_state"] = bool(sub.steady_state.astype(bool).all())
        row["ci_note"] = " | ".join(dict.fromkeys(str(n) for n in sub.ci_note.fillna("") if n))
        row["replications"] = len(sub)
        row["seeds"] = " ".join(str(int(s)) for s in sub["seed"])
        out.append(row)
    agg = pd.DataFrame(out)
    return agg[COLUMNS + [c for c in agg.columns if c not in COLUMNS]]


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
    """``recall_qps.csv`` of ``folder`` with its recall column as ``recall`` (and, in a
    replicated run, its ``recall_at_10_rep_*`` columns as ``recall_rep_*``)."""
    df = pd.read_csv(Path(folder) / "recall_qps.csv")
    return df.rename(columns={c: "recall" + c[len(RECALL_COLUMN):] for c in df.columns
                              if c.startswith(RECALL_COLUMN)})


def plot(folder) -> None:
    plt = pyplot()

    df = read_table(folder)
    # a replicated run: points are each setting's means over the replications, error bars
    # their 95 % Student-t interval
    rep = "replications" in df
    bars = ((lambda g: error_bars(g, "qps", "qps_rep_ci_low", "qps_rep_ci_high")) if rep
            else (lambda g: error_bars(g, "qps")))
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
            ax.errorbar(g.recall, g.qps, yerr=bars(g), fmt=_MARKERS.get(s, "o"),
                        color=colour, ms=4, capsize=2, lw=0.8, alpha=0.8, label=s)
            front = pareto_front(g)
            ax.step(front.recall, front.qps, where="pre", color=colour, lw=1.1)
        for t in TARGETS:
            ax.axvline(t, color="0.7", lw=0.7, ls="--")
        ax.set_yscale("log")
        ax.set_xlabel("recall@10")
        ax.set_ylabel("QPS (closed loop)")
        ax.set_title(f"{fam}: recall against QPS" + (
            f" (means of {int(df.replications.iloc[0])} replications)" if rep else ""),
            fontsize=9)
        ax.legend(frameon=False, fontsize=7)
    fig.tight_layout()
    save_figure(fig, folder, "recall_qps")
    plt.close(fig)
    if (Path(folder) / "batch_sweep.csv").exists():
        plot_batch_sweep(folder)


def _ci(lo, hi, spec: str = ",.0f") -> str:
    """"lo-hi" ("lo to hi" when lo is negative: a Student-t interval over two or three
    replications can reach below zero), or "" where either end is missing."""
    if pd.isna(lo) or pd.isna(hi):
        return ""
    return f"{lo:{spec}}{' to ' if lo < 0 else '-'}{hi:{spec}}"


def _winner_line(r) -> str:
    """One recall target's line of summary.md from a row of winners.csv (:func:`winners`, or
    :func:`replicated_winners` when it has ``replications``)."""
    t = f"{r.target:g}"
    g = lambda name: getattr(r, name, float("nan"))       # noqa: E731 (older tables)
    n = g("replications")
    rep = n == n and n is not None and int(n) > 1
    if not isinstance(r.system, str):
        return (f"- recall {t}: no system reaches it"
                + (f" in every one of the {int(n)} replications" if rep else "")
                + " (best recall in the sweep is below)."
                + (f" Reaches it in some: {r.reached_in_some}." if rep and isinstance(
                    g("reached_in_some"), str) and g("reached_in_some") else ""))
    if rep:
        n = int(n)
        line = (f"- recall {t}: **{r.family}** wins with {r.system}, {r.qps:,.0f} QPS (mean of "
                f"{n} replications; 95 % CI over seeds {_ci(r.qps_rep_ci_low, r.qps_rep_ci_high)}"
                + (f", within runs {_ci(r.qps_ci_low, r.qps_ci_high)}"
                   if _ci(r.qps_ci_low, r.qps_ci_high) else "")
                + f"); {count_text(int(r.wins), n, 'wins')}, its family in {int(r.family_wins)} of {n}")
        if isinstance(r.runner_up, str):
            line += (f"; {r.margin:.2f}x the best other family ({r.runner_up_family}: "
                     f"{r.runner_up}, {r.runner_up_qps:,.0f} QPS, over seeds "
                     f"{_ci(r.runner_up_qps_rep_ci_low, r.runner_up_qps_rep_ci_high)}), margin "
                     f"95 % CI over seeds {_ci(r.margin_rep_ci_low, r.margin_rep_ci_high, '.2f')}"
                     + (f", within runs {_ci(r.margin_ci_low, r.margin_ci_high, '.2f')}"
                        if _ci(r.margin_ci_low, r.margin_ci_high) else "")
                     + f"; above it in {int(r.margin_holds)} of {n} replications")
        else:
            line += " (no system of another family reaches it in every replication)"
    else:
        own = _ci(g("qps_ci_low"), g("qps_ci_high"))
        line = (f"- recall {t}: **{r.family}** wins with {r.system}, {r.qps:,.0f} QPS"
                + (f" (95 % CI {own})" if own else ""))
        if isinstance(r.runner_up, str):
            m = _ci(g("margin_ci_low"), g("margin_ci_high"), ".2f")
            ru = _ci(g("runner_up_qps_ci_low"), g("runner_up_qps_ci_high"))
            line += (f", {r.margin:.2f}x" + (f" (95 % CI {m})" if m else "")
                     + f" the best other family ({r.runner_up_family}: {r.runner_up}, "
                     f"{r.runner_up_qps:,.0f} QPS" + (f", 95 % CI {ru}" if ru else "") + ")")
        else:
            line += " (no system of another family reaches it)"
    if r.not_reached:
        line += f"; cannot reach {t}" + (" in any replication" if rep else "") + \
            f": {r.not_reached}"
    if rep and isinstance(g("reached_in_some"), str) and g("reached_in_some"):
        line += f"; reach {t} in some replications only: {r.reached_in_some}"
    if r.lower_bounds:
        line += (f"; at least (every swept setting is above {t}, less effort was not swept"
                 + (", in some replication" if rep else "") + f"): {r.lower_bounds}")
    return line + "."


def read_winners(folder, df: pd.DataFrame | None = None) -> pd.DataFrame:
    """``winners.csv`` of ``folder`` (its lists empty strings where empty), or :func:`winners`
    of ``df`` (its ``recall_qps.csv``) for a folder written before winners.csv existed."""
    path = Path(folder) / "winners.csv"
    if not path.exists():
        return winners(read_table(folder) if df is None else df)
    win = pd.read_csv(path)
    for col in ("lower_bounds", "reached", "not_reached", "ci_note", "reached_in_some"):
        if col in win:
            win[col] = win[col].astype(object).where(win[col].notna(), "")
    return win


def _system_cells(df: pd.DataFrame, folder, rep: bool) -> dict:
    """dataset -> [(system, [cell per target], best recall)] of summary.md's per-system
    table: QPS at each target (with its interval; '>=' a lower bound), from recall_qps.csv,
    or over the replications (recall_qps_replications.csv) in a replicated run."""
    if rep:
        per = pd.read_csv(Path(folder) / "recall_qps_replications.csv").rename(
            columns={RECALL_COLUMN: "recall"})
        at = replicated_at_recall(per)
    else:
        at = at_recall(df)
    out = {}
    for (fam, s), g in at.groupby(["dataset", "system"], sort=False):
        cells = []
        for r in g.itertuples():
            if rep and 0 < r.reached_in < r.replications:
                cells.append(f"reaches it in {r.reached_in} of {r.replications}")
                continue
            if r.qps != r.qps:
                cells.append("cannot reach")
                continue
            ci = (_ci(r.qps_rep_ci_low, r.qps_rep_ci_high) if rep else
                  _ci(r.qps_ci_low, r.qps_ci_high))
            cells.append((">= " if r.lower_bound else "") + f"{r.qps:,.0f}"
                         + (f" ({ci})" if ci else ""))
        out.setdefault(fam, []).append((s, cells, float(g.best_recall.iloc[0])))
    return out


def summary_md(folder) -> str:
    df = read_table(folder)
    rep = "replications" in df
    n = int(df["replications"].iloc[0]) if rep else 1
    win = read_winners(folder, df)
    lines = ["## Recall@10 against QPS: graph vs IVF-PQ vs exact scan"
             + (f", {n} replications" if rep else ""), "",
             "QPS at each recall target is read off each system's Pareto front (log QPS "
             "interpolated linearly in recall between the two front points around the target); "
             "'>=' marks a system whose every swept setting is above the target (the QPS of "
             "its lowest-effort setting: a lower bound).", ""]
    if rep:
        lines += [f"Each replication (seeds {df['seeds'].iloc[0]}: dataset draw, k-means, "
                  "indexes, query set and placement seed each; experiments.harness.replications) "
                  "has its own curves, read at each target; a system's QPS at a target is the "
                  f"mean over the {n} replications with its 95 % Student-t interval over them "
                  "(\"over seeds\", in parentheses in the tables), given for the systems that "
                  "reach the target in every replication. The winner has the most mean QPS; "
                  "\"wins in k of R\" counts the replications whose own winner it is (95 % "
                  "Clopper-Pearson interval of the proportion); the margin is the mean over the "
                  "replications of its QPS over the runner-up's. Points and curves: "
                  "`recall_qps_replications.csv`; each replication's winners: "
                  "`winners_replications.csv`; `recall_qps.csv` holds each point's means.", ""]
    else:
        lines += ["Intervals (95 %) come from the runs' own batch-means intervals "
                  "(cosmos.metrics): at a front point its run's, between two points both runs' "
                  "relative errors weighted by the interpolation (delta method); the margin's "
                  "from the winner's "
                  "and runner-up's. They cover the simulations' sampling, not the workload draw "
                  "(`--replications R` does). All in `winners.csv`.", ""]
    if win["ci_note"].fillna("").astype(bool).any() or (not rep and df.qps_ci_low.isna().all()):
        lines += ["The runs around the targets have no interval of their own at this scale "
                  "(too few completions for batch means: `ci_note` in `recall_qps.csv`), so "
                  + ("the within-runs intervals are empty and only the interval over seeds "
                     "is given." if rep else "the QPS and margins below have no interval; "
                     "run `--scale full` (its runs stop at a 1 % interval) or "
                     "`--replications R`."), ""]
    cells = _system_cells(df, folder, rep)
    for fam, sub in win.groupby("dataset", sort=False):
        lines += [f"### {fam}", ""]
        lines += [_winner_line(r) for r in sub.itertuples()]
        lines += ["", "| system | QPS at recall " + " | QPS at recall ".join(
            f"{t:g}" for t in TARGETS) + " | best recall in the sweep"
            + (" (mean)" if rep else "") + " |",
            "|---|" + "---|" * (len(TARGETS) + 1)]
        for s, cs, best in cells.get(fam, []):
            lines.append(f"| {s} | " + " | ".join(cs) + f" | {best:.3f} |")
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
    if rep:
        lines += ["", f"In this replicated run the ratios above and below are of each setting's "
                      f"mean figures over the {n} replications (`recall_qps.csv`)."]
    lines += _same_strategy_md(df)
    if (Path(folder) / "batch_sweep.csv").exists():
        lines += batch_sweep_md(pd.read_csv(Path(folder) / "batch_sweep.csv"))
        if rep:
            lines += ["", f"The batch-size sweep runs on replication 0 alone (seed "
                          f"{df['seeds'].iloc[0].split()[0]})."]
    return "\n".join(lines) + "\n"


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
