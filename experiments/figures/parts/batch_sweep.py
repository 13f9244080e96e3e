"""The batch-size sweep of exact-pnm-batch (``batch_sweep.csv``, issue 54), part of recall_qps.

B = scan_unit.batch_queries queries share one pass of exact-pnm-batch's scan unit over each
probed list's vectors. :func:`batch_sweep` replays each workload's exact trace at the grid's
most probes, batched by cosmos.systems.batch_trace (:func:`batched_trace_file`), at every B of
:data:`BATCH_SWEEP`, closed loop and with one batch in flight, and writes ``batch_sweep.csv``
beside the roofline's B* (:func:`roofline_batches`); :func:`bend_batch` finds where the
measured curve bends, :func:`plot_batch_sweep` draws ``batch_sweep.png`` and
:func:`batch_sweep_md` writes its part of ``summary.md``. The experiment
experiments/figures/recall_qps.py runs it on its own traces (and replays the batched traces of
its grid's exact-pnm-batch points through :func:`batched_trace_file`); this module imports
nothing of it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from cosmos.presets import get_preset
from cosmos.simulate import dram_config_for
from cosmos.systems import batch_trace, roofline_batch
from cosmos.trace_input import as_trace
from cosmos.units import unit
from experiments.harness.common import error_bars, pyplot, save_figure, write_csv
from experiments.harness.sim import simulate_task
from graphs.io import atomic_write_bytes
from graphs.trace import array_checksum

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


def batched_trace_file(trace_path: str, batch: int) -> str:
    """The exact trace at ``trace_path`` batched by cosmos.systems.batch_trace, saved once
    beside it as ``NAME-bB.npz`` (with its arrays' checksums, as graphs.save_trace)."""
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


def roofline_batches(vector_bytes: int, dim: int, system: str = BATCH_SYSTEM) -> tuple:
    """(B* at the unit's stream rate, B* at its share of the DRAM): the batch at which a
    pass of ``system``'s unit over vectors of ``vector_bytes`` bytes and ``dim`` dimensions
    turns compute bound (cosmos.systems.roofline_batch), with the bandwidth the unit's own
    stream (scan_unit.dot_bytes_per_cycle at scan_unit.clock_GHz: B* = 8 at float32), and
    with a device's peak DRAM bandwidth (its channels' data buses) shared by all the
    device's search contexts, each driving a unit: what a unit gets when every one is busy,
    so B* is larger there (the pass stays memory bound longer)."""
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
    most probes (``pts``: the experiment's points, experiments.figures.recall_qps.points), the
    batched traces made by :func:`batched_trace_file` over the same first ``sweep_queries``
    queries (``ctx``: the experiment's run context, its sweep and results folder): one row per
    (dataset, B) with QPS per query, the batch's latency, DRAM bytes per query and the
    roofline's B* (:func:`roofline_batches`). Written as ``batch_sweep.csv``."""
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
            tasks.append(dict(system=BATCH_SYSTEM,
                              trace_path=batched_trace_file(pt["trace_path"], b),
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


def batch_headline(sweep: pd.DataFrame) -> dict:
    """The run's headline entries of the sweep: per dataset, the B of the most queries per
    second with one batch in flight (:func:`bend_batch`) beside the roofline's B*."""
    out = {}
    for fam, b in bend_batch(sweep).items():
        g = sweep[sweep.dataset == fam]
        out[f"{fam}_exact_pnm_batch_best_B"] = (
            f"{b} (roofline B* {g.roofline_batch.iloc[0]:.1f} at the unit's stream, "
            f"{g.roofline_batch_dram_share.iloc[0]:.1f} at its DRAM share)")
    return out


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


def batch_sweep_md(sweep: pd.DataFrame) -> list:
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
