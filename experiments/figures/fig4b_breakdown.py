"""Fig. 4b: single-query latency breakdown of each system on one device.

Queries run one at a time (one in flight) on a system with a single CXL device (the preset's
devices where one cannot hold the index, and DRAM-only with the host DRAM that holds it:
experiments.harness.capacity; the ``devices`` column says which), so nothing queues behind other
queries; each query's latency is split along its critical path into graph
traversal, distance calculation, candidate update, host/link transfer (and context queueing,
which is zero here). The bars are the mean over the first queries of the trace.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pandas as pd

from cosmos.presets import get_preset
from experiments.harness.capacity import fit_for
from experiments.harness.common import pyplot, save_figure, write_csv
from experiments.harness.sim import simulate_task

NAME = "fig4b_breakdown"
TITLE = "Single-query latency breakdown on one device (Cosmos paper, Fig. 4b)"
SYSTEMS = ("base", "dram-only", "cxl-anns", "cosmos-norank", "cosmos")
CATEGORIES = ("traversal", "distance", "candidate", "transfer", "queue")
#: queries run one after another; their mean is the bar
QUERIES = 20


def simulation_tasks(ctx) -> list:
    """Every simulation of this experiment (experiments.harness.plan)."""
    tasks = []
    for fam in ctx.families:
        path = ctx.trace_file(fam)
        for system in SYSTEMS:
            overrides = fit_for(ctx, fam, system, {"device.count": 1})
            devices = overrides.get("device.count", get_preset(system).device.count)
            tasks.append(dict(system=system, trace_path=str(path), seed=ctx.seed,
                              overrides=overrides, max_inflight=1,
                              num_queries=QUERIES, warmup=0.0,
                              tags={"dataset": fam, "system": system, "devices": devices}))
    return tasks


def run(ctx) -> dict:
    rows = ctx.sweep(simulate_task, simulation_tasks(ctx), desc="fig4b breakdown")
    df = pd.DataFrame(rows)
    cols = (["dataset", "system", "devices", "latency_mean_ns"]
            + [f"breakdown_{c}_ns" for c in CATEGORIES])
    write_csv(ctx.out / "breakdown.csv", df[cols + ["num_queries"]])
    out = {}
    for fam in ctx.families:
        sub = df[df.dataset == fam].set_index("system")
        out[f"{fam}_latency_us"] = {s: round(float(sub.loc[s, "latency_mean_ns"]) / 1e3, 1)
                                    for s in SYSTEMS}
    return out


def plot(folder) -> None:
    plt = pyplot()
    import numpy as np

    df = pd.read_csv(Path(folder) / "breakdown.csv")
    fams = list(dict.fromkeys(df.dataset))
    fig, axes = plt.subplots(1, len(fams), figsize=(4.2 * len(fams), 3.4), squeeze=False)
    for ax, fam in zip(axes[0], fams):
        sub = df[df.dataset == fam]
        x = np.arange(len(sub))
        bottom = np.zeros(len(sub))
        for c in CATEGORIES:
            v = sub[f"breakdown_{c}_ns"].to_numpy() / 1e3
            if np.nansum(v) > 0:
                ax.bar(x, v, bottom=bottom, label=c)
                bottom += v
        ax.set_xticks(x, sub.system, rotation=20)
        ax.set_ylabel("latency per query (us)")
        devices = sorted(set(sub.devices)) if "devices" in sub else [1]
        where = "one device" if devices == [1] else f"{max(devices)} devices"
        ax.set_title(f"Fig. 4b: {fam}, {where}, one query in flight", fontsize=9)
        ax.legend(frameon=False, fontsize=7)
    save_figure(fig, folder, "fig4b_breakdown")
    plt.close(fig)


def summary_md(folder) -> str:
    df = pd.read_csv(Path(folder) / "breakdown.csv")
    head = "| dataset | system | latency (us) | " + " | ".join(CATEGORIES) + " |"
    lines = ["## Fig. 4b: single-query latency breakdown (mean over queries, us)", "", head,
             "|" + "---|" * (3 + len(CATEGORIES))]
    for _, r in df.iterrows():
        parts = " | ".join(f"{r[f'breakdown_{c}_ns'] / 1e3:.1f}" for c in CATEGORIES)
        lines.append(f"| {r.dataset} | {r.system} | {r.latency_mean_ns / 1e3:.1f} | {parts} |")
    lines += ["", "The paper shows the same four stages (its Fig. 4b) without absolute values "
              "we could compare against; see docs/system_model.md for how each is modeled."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    from experiments.harness.runner import script_main

    raise SystemExit(script_main(NAME))
