"""Beyond the paper: QPS against the number of ranks per channel (1, 2, 4).

Rank-level PUs read a vector's 64-byte segments in parallel, one PU per rank, so their benefit
grows with the ranks per channel and with the vector size (DEEP-like 384-byte vectors are six
segments, SIFT-like 128-byte vectors two). ``cosmos-norank`` reads the same vectors through the
channel; with one rank the two must agree.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pandas as pd

from experiments.figures.fig4a_qps import sweep_task
from experiments.harness.common import error_bars, pyplot, save_figure, write_csv
from experiments.harness.sim import simulate_task

NAME = "scale_ranks"
TITLE = "QPS against ranks per channel, with and without rank-level PUs"
SYSTEMS = ("cosmos-norank", "cosmos")
RANKS = (1, 2, 4)


def simulation_tasks(ctx) -> list:
    """Every simulation of this experiment (experiments.harness.plan); the point at the preset's own
    ranks is fig4a's run (experiments.figures.fig4a_qps.sweep_task)."""
    tasks = []
    for fam in ctx.families:
        tasks += [sweep_task(ctx, fam, s, {"device.ranks": r},
                             {"dataset": fam, "system": s, "ranks": r},
                             num_queries=ctx.scale.sweep_queries, ci_target=ctx.scale.ci_target)
                  for s in SYSTEMS for r in RANKS]
    return tasks


def run(ctx) -> dict:
    df = pd.DataFrame(ctx.sweep(simulate_task, simulation_tasks(ctx), desc="ranks sweep"))
    cols = ["dataset", "system", "ranks", "qps", "qps_ci_low", "qps_ci_high", "num_queries",
            "stopped", "latency_mean_ns", "latency_mean_ci_low_ns", "latency_mean_ci_high_ns",
            "latency_p99_ns",
            "breakdown_distance_ns"]
    write_csv(ctx.out / "ranks.csv", df[cols])
    out = {}
    for fam in ctx.families:
        piv = df[df.dataset == fam].pivot(index="ranks", columns="system", values="qps")
        out[f"{fam}_rankPU_speedup"] = {int(r): round(float(v["cosmos"] / v["cosmos-norank"]), 2)
                                        for r, v in piv.iterrows()}
    return out


def plot(folder) -> None:
    plt = pyplot()

    df = pd.read_csv(Path(folder) / "ranks.csv")
    fams = list(dict.fromkeys(df.dataset))
    fig, axes = plt.subplots(1, len(fams), figsize=(3.8 * len(fams), 3.2), squeeze=False)
    for ax, fam in zip(axes[0], fams):
        for s, sub in df[df.dataset == fam].groupby("system", sort=False):
            line, = ax.plot(sub.ranks, sub.qps, marker="o", label=s)
            ax.errorbar(sub.ranks, sub.qps, yerr=error_bars(sub, "qps"), fmt="none",
                        ecolor=line.get_color(), capsize=2, lw=0.8)
        ax.set_xticks(sorted(df.ranks.unique()))
        ax.set_xlabel("ranks per channel")
        ax.set_ylabel("QPS")
        ax.set_ylim(bottom=0)
        ax.set_title(f"{fam}", fontsize=9)
        ax.legend(frameon=False, fontsize=8)
    save_figure(fig, folder, "scale_ranks")
    plt.close(fig)


def summary_md(folder) -> str:
    df = pd.read_csv(Path(folder) / "ranks.csv")
    lines = ["## QPS against ranks per channel", "",
             "| dataset | ranks | cosmos-norank QPS | cosmos QPS | rank-PU speedup |", "|---|---|---|---|---|"]
    for fam in dict.fromkeys(df.dataset):
        piv = df[df.dataset == fam].pivot(index="ranks", columns="system", values="qps")
        for r, v in piv.iterrows():
            lines.append(f"| {fam} | {r} | {v['cosmos-norank']:,.0f} | {v['cosmos']:,.0f} | "
                         f"{v['cosmos'] / v['cosmos-norank']:.2f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    from experiments.harness.runner import script_main

    raise SystemExit(script_main(NAME))
