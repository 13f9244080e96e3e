"""Beyond the paper: query latency against offered load (Poisson arrivals) for each system.

First each system's throughput is measured in the closed loop; then queries arrive as a
seeded Poisson process at fractions of that throughput (open loop), and the mean and p99
latency are recorded. Offered load is in queries per second, so the systems' curves sit side
by side: each bends up as it approaches its own saturation.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pandas as pd

from experiments.harness.common import error_bars, pyplot, save_figure, write_csv
from experiments.harness.sim import simulate_task

NAME = "latency_load"
TITLE = "Latency against offered load (Poisson arrivals)"
SYSTEMS = ("base", "dram-only", "cxl-anns", "cosmos-norank", "cosmos-noalgo", "cosmos")
LOAD_FRACTIONS = (0.2, 0.4, 0.6, 0.8, 0.9)
#: Points up to this load fraction stop once their mean latency is known to the scale's
#: ``ci_target`` (open loop: after 1,000 queries at the earliest, cosmos.simulate); the
#: points above run all of the scale's sweep queries. Why: an open loop starts empty, and its
#: queues take longer to reach their steady state the closer the load is to saturation
#: (about 1 / (1 - load)**2 service times for one queue: 6 at 60 % load, 25 at 80 %). At
#: 1M vectors, the 80 % points stopped after ~1,000 queries read up to 1.3 % below the mean
#: latency of 2,000-query runs, more than their own intervals; the points up to 60 % read
#: within 0.3 % (docs/experiments.md).
STOP_UP_TO_LOAD = 0.6


def simulation_tasks(ctx, systems=SYSTEMS) -> list:
    """The closed-loop saturation runs (the open-loop ones depend on their results;
    experiments.harness.plan): fig4a's runs of each system on the first workload (every query of the
    trace, or until the scale's ``ci_target``), so the saturation throughput is fig4a's and
    one simulation serves fig4a, this sweep, rag_ttft and the other sweeps' points at the
    preset's configuration (experiments.figures.fig4a_qps.sweep_task)."""
    from experiments.figures.fig4a_qps import system_task

    fam = ctx.families[0]
    return [system_task(ctx, fam, s, {"system": s}) for s in systems]


def open_loop_tasks(ctx, closed: list[dict]) -> list[dict]:
    """The open-loop runs, from the rows of :func:`simulation_tasks`: Poisson arrivals at
    each of :data:`LOAD_FRACTIONS` of each system's saturation QPS, the scale's sweep
    queries, or, up to :data:`STOP_UP_TO_LOAD`, fewer once the mean latency's interval meets
    the scale's ``ci_target`` (cosmos.simulate: its open-loop minimum, 1,000 queries)."""
    fam = ctx.families[0]
    path = ctx.trace_file(fam)
    sat = {r["system"]: r["qps"] for r in closed}
    return [dict(system=s, trace_path=str(path), num_queries=ctx.scale.sweep_queries,
                 ci_target=ctx.scale.ci_target if f <= STOP_UP_TO_LOAD else None,
                 mode="open", rate_qps=f * sat[s], seed=ctx.seed,
                 tags={"dataset": fam, "system": s, "load_fraction": f,
                       "saturation_qps": sat[s]})
            for s in SYSTEMS for f in LOAD_FRACTIONS]


def dependent_tasks(ctx, closed: list[dict]) -> list:
    """``(fn, task)`` of the runs that wait for :func:`simulation_tasks`'s rows
    (experiments.harness.plan.run_shared starts them as soon as those are in)."""
    return [(simulate_task, t) for t in open_loop_tasks(ctx, closed)]


def dependent_plan(ctx) -> tuple[int, str]:
    """The plan's line for :func:`dependent_tasks` (experiments.harness.plan): at most this
    many runs, and what they are."""
    return (len(SYSTEMS) * len(LOAD_FRACTIONS),
            "open-loop runs at fractions of each system's saturation QPS")


def run(ctx) -> dict:
    closed = ctx.sweep(simulate_task, simulation_tasks(ctx), desc="saturation")
    sat = {r["system"]: r["qps"] for r in closed}
    df = pd.DataFrame(ctx.sweep(simulate_task, open_loop_tasks(ctx, closed), desc="open loop"))
    df = df.rename(columns={"rate_qps": "offered_qps"})
    cols = ["dataset", "system", "load_fraction", "offered_qps", "saturation_qps", "qps",
            "qps_ci_low", "qps_ci_high", "latency_mean_ns", "latency_mean_ci_low_ns",
            "latency_mean_ci_high_ns", "latency_p50_ns", "latency_p99_ns", "num_queries",
            "stopped"]
    write_csv(ctx.out / "latency_load.csv", df[cols])
    return {f"{s}_saturation_qps": round(sat[s]) for s in SYSTEMS}


def plot(folder) -> None:
    plt = pyplot()

    df = pd.read_csv(Path(folder) / "latency_load.csv")
    fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.2))
    for s, sub in df.groupby("system", sort=False):
        line, = axes[0].plot(sub.offered_qps, sub.latency_mean_ns / 1e3, marker="o", ms=3,
                             label=s)
        axes[0].errorbar(sub.offered_qps, sub.latency_mean_ns / 1e3,
                         yerr=error_bars(sub, "latency_mean_ns", "latency_mean_ci_low_ns",
                                         "latency_mean_ci_high_ns", scale=1e-3),
                         fmt="none", ecolor=line.get_color(), capsize=2, lw=0.8)
        axes[1].plot(sub.offered_qps, sub.latency_p99_ns / 1e3, marker="o", ms=3, label=s)
    for ax, what in zip(axes, ("mean", "p99")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("offered load (queries/s)")
        ax.set_ylabel(f"{what} latency (us)")
    axes[0].legend(frameon=False, fontsize=7)
    fig.suptitle(f"Latency vs offered load ({df.dataset.iloc[0]})", fontsize=9)
    save_figure(fig, folder, "latency_load")
    plt.close(fig)


def summary_md(folder) -> str:
    df = pd.read_csv(Path(folder) / "latency_load.csv")
    lines = ["## Latency against offered load", "",
             "| system | saturation QPS | mean latency at 20% (us) | at 90% (us) | p99 at 90% (us) |",
             "|---|---|---|---|---|"]
    for s, sub in df.groupby("system", sort=False):
        lo = sub[sub.load_fraction == sub.load_fraction.min()].iloc[0]
        hi = sub[sub.load_fraction == sub.load_fraction.max()].iloc[0]
        lines.append(f"| {s} | {lo.saturation_qps:,.0f} | {lo.latency_mean_ns / 1e3:.1f} | "
                     f"{hi.latency_mean_ns / 1e3:.1f} | {hi.latency_p99_ns / 1e3:.1f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    from experiments.harness.runner import script_main

    raise SystemExit(script_main(NAME))
