"""Fig. 5a: load imbalance ratio (LIR) of adjacency-aware vs round-robin cluster placement.

For 4, 8 and 16 probed clusters per query, the clusters of each dataset's index are placed on
the paper's four devices by Algorithm 1 (``adjacency``) and by ``round_robin``, exactly as the
simulated systems place them (no capacity limit: at billion scale the paper's 4 x 256 GB hold
SIFT1B's and DEEP1B's vectors and graphs with room to spare). Load = cluster searches. LIR =
max device load / ideal uniform load, reported

- per query (mean over queries of the LIR of its own searches: its searches run in parallel
  on the devices and it finishes with its busiest device), and
- over the whole query set.

Only the routing matters here: each probe count's cluster searches are the scale's queries
routed over its trace's centroids (experiments.harness.workloads.probed_clusters), exactly the
``search_cluster`` of a trace at that count, without searching. The figure costs seconds at
every scale, the paper's billion vectors included.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np
import pandas as pd

from experiments.harness.common import pyplot, save_figure, write_csv

NAME = "fig5a_lir"
TITLE = "Load imbalance ratio vs probed clusters (Cosmos paper, Fig. 5a)"
#: no system simulation: placements and their loads (experiments.harness.plan)
RUNS_SIMULATIONS = False
PROBES = (4, 8, 16)
POLICIES = ("adjacency", "round_robin")
DEVICES = 4  # the paper's four CXL devices (256 GB each, 1 TB in total)


def placement_of(trace, policy: str, num_devices: int, seed: int = 0) -> np.ndarray:
    """The placement the simulator would use for ``trace`` (cosmos.simulate.place_clusters)."""
    import placement

    sizes = np.diff(np.asarray(trace.cluster_ptr))
    return np.asarray(placement.place(sizes, num_devices, policy, seed=seed,
                                      adjacency=np.asarray(trace.cluster_adjacency)))


def run(ctx) -> dict:
    import placement

    from experiments.harness.workloads import probed_clusters, workload_queries

    rows = []
    for fam in ctx.families:
        tr = ctx.trace(fam)
        queries = workload_queries(fam, ctx.scale, seed=ctx.seed, **(ctx.dataset or {}))
        for p in PROBES:
            qp, sc = probed_clusters(tr, queries, p)
            for policy in POLICIES:
                dev = placement_of(tr, policy, DEVICES, ctx.seed)
                ql = placement.query_lir(dev, qp, sc, DEVICES)
                loads = placement.device_loads(dev, qp, sc, DEVICES)
                rows.append({"dataset": fam, "num_probes": p, "policy": policy,
                             "lir_per_query_mean": float(np.nanmean(ql)),
                             "lir_per_query_p99": float(np.nanpercentile(ql, 99)),
                             "lir_all_queries": float(placement.lir(loads)),
                             "num_queries": int(len(qp) - 1)})
    df = pd.DataFrame(rows)
    write_csv(ctx.out / "lir.csv", df)
    out = {}
    for fam in ctx.families:
        sub = df[df.dataset == fam]
        piv = sub.pivot(index="num_probes", columns="policy", values="lir_per_query_mean")
        out[f"{fam}_lir_adjacency_vs_rr"] = {int(k): f"{r['adjacency']:.2f} vs {r['round_robin']:.2f}"
                                             for k, r in piv.iterrows()}
    return out


def plot(folder) -> None:
    plt = pyplot()

    df = pd.read_csv(Path(folder) / "lir.csv")
    fams = list(dict.fromkeys(df.dataset))
    fig, axes = plt.subplots(1, len(fams), figsize=(3.8 * len(fams), 3.2), squeeze=False)
    for ax, fam in zip(axes[0], fams):
        sub = df[df.dataset == fam]
        probes = sorted(sub.num_probes.unique())
        x = np.arange(len(probes))
        for i, policy in enumerate(POLICIES):
            v = sub[sub.policy == policy].set_index("num_probes").reindex(probes)
            ax.bar(x + (i - 0.5) * 0.38, v["lir_per_query_mean"], 0.38, label=policy)
        ax.set_xticks(x, [str(p) for p in probes])
        ax.set_xlabel("probed clusters per query")
        ax.set_ylabel("LIR (mean per query)")
        ax.axhline(1.0, color="0.6", lw=0.8)
        ax.set_title(f"Fig. 5a: {fam}, {DEVICES} devices", fontsize=9)
        ax.legend(frameon=False, fontsize=8)
    save_figure(fig, folder, "fig5a_lir")
    plt.close(fig)


def summary_md(folder) -> str:
    df = pd.read_csv(Path(folder) / "lir.csv")
    lines = ["## Fig. 5a: load imbalance ratio (4 devices)", "",
             "| dataset | probes | policy | LIR per query (mean) | LIR whole query set |",
             "|---|---|---|---|---|"]
    for r in df.itertuples():
        lines.append(f"| {r.dataset} | {r.num_probes} | {r.policy} | {r.lir_per_query_mean:.3f} "
                     f"| {r.lir_all_queries:.3f} |")
    lines += ["", "Paper (Fig. 5a): adjacency-aware placement has a lower LIR than round-robin "
              "at 4, 8 and 16 probed clusters."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    from experiments.harness.runner import script_main

    raise SystemExit(script_main(NAME))
