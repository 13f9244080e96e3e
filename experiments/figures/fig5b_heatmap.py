"""Fig. 5b: how many of each query's probed clusters each device handles, per policy.

Cell (device d, k) counts the queries that search exactly k of their probed clusters on
device d (placement.device_cluster_count_matrix). A balanced placement keeps k near
probes / devices; co-located neighbor clusters push mass to large k, which serializes a query
on one device. Adjacency-aware (Algorithm 1) and round-robin side by side, at the scale's
default probes.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np
import pandas as pd

from experiments.figures.fig5a_lir import DEVICES, POLICIES, placement_of
from experiments.harness.common import pyplot, save_figure, write_csv

NAME = "fig5b_heatmap"
TITLE = "Clusters handled per device over the query set (Cosmos paper, Fig. 5b)"
#: no system simulation: placements and their loads (experiments.harness.plan)
RUNS_SIMULATIONS = False


def run(ctx) -> dict:
    import placement

    rows = []
    out = {}
    for fam in ctx.families:
        tr = ctx.trace(fam)
        qp, sc = np.asarray(tr.query_ptr), np.asarray(tr.search_cluster)
        for policy in POLICIES:
            dev = placement_of(tr, policy, DEVICES, ctx.seed)
            M = placement.device_cluster_count_matrix(dev, qp, sc, DEVICES)
            for d in range(M.shape[0]):
                for k in range(M.shape[1]):
                    rows.append({"dataset": fam, "policy": policy, "device": d,
                                 "clusters_on_device": k, "queries": int(M[d, k])})
            ks = np.arange(M.shape[1])
            out[f"{fam}_{policy}_mean_max_clusters_per_device"] = round(
                float((M * ks).sum(1).max() / M[0].sum()), 2)
    write_csv(ctx.out / "heatmap.csv", pd.DataFrame(rows))
    return out


def plot(folder) -> None:
    plt = pyplot()

    df = pd.read_csv(Path(folder) / "heatmap.csv")
    fams = list(dict.fromkeys(df.dataset))
    fig, axes = plt.subplots(len(fams), len(POLICIES), figsize=(4.2 * len(POLICIES), 3.0 * len(fams)),
                             squeeze=False, constrained_layout=True)
    vmax = df.queries.max()
    for i, fam in enumerate(fams):
        for j, policy in enumerate(POLICIES):
            sub = df[(df.dataset == fam) & (df.policy == policy)]
            M = sub.pivot(index="device", columns="clusters_on_device", values="queries").fillna(0)
            ax = axes[i][j]
            im = ax.imshow(M.to_numpy(), aspect="auto", cmap="viridis", vmin=0, vmax=vmax)
            ax.set_xticks(range(M.shape[1]), M.columns)
            ax.set_yticks(range(M.shape[0]), [f"dev {d}" for d in M.index])
            if i == len(fams) - 1:
                ax.set_xlabel("probed clusters on this device")
            ax.set_title(f"{fam}: {policy}", fontsize=9)
    fig.colorbar(im, ax=axes.ravel().tolist(), label="queries")
    save_figure(fig, folder, "fig5b_heatmap")
    plt.close(fig)


def summary_md(folder) -> str:
    df = pd.read_csv(Path(folder) / "heatmap.csv")
    lines = ["## Fig. 5b: probed clusters per device", "",
             "| dataset | policy | mean probed clusters on the busiest device per query |", "|---|---|---|"]
    for (fam, policy), sub in df.groupby(["dataset", "policy"], sort=False):
        # per device, mean over queries of the clusters it handles; the max over devices
        q = sub.groupby("device").queries.sum()
        mean_k = (sub.clusters_on_device * sub.queries).groupby(sub.device).sum() / q
        lines.append(f"| {fam} | {policy} | {mean_k.max():.2f} |")
    lines += ["", "Paper (Fig. 5b): round-robin concentrates a query's probed clusters on few "
              "devices; adjacency-aware placement spreads them."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    from experiments.harness.runner import script_main

    raise SystemExit(script_main(NAME))
