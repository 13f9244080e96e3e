"""Load imbalance of cluster placements (the paper's Fig. 5a/5b, on our own data).

Builds a clustered synthetic dataset (a seeded Gaussian mixture around a few "topics", so
clusters have meaningful neighbors), clusters it with a seeded k-means, routes each query to its
``num_probes`` nearest centroids (as the clustered index does), places the clusters on the
devices with every registered policy, and reports the load imbalance ratio (LIR = max device
load / ideal uniform load) in three views:

* ``lir_per_query_mean``: mean over queries of the LIR of each query's own searches (a query's
  cluster searches run in parallel on the devices; it finishes when its busiest device does);
* ``lir_batch{B}_mean``: mean LIR of batches of ``B`` consecutive queries;
* ``lir_all_queries``: the LIR of the whole query set.

The paper (Cosmos, IEEE CAL 2025, Fig. 5a) reports adjacency-aware placement lowering the LIR
relative to round-robin for 4, 8 and 16 probed clusters on 4 devices.

Self-contained (numpy, pandas, matplotlib and ``placement`` only). ``--trace FILE.npz`` uses a
logical trace from ``graphs`` instead (its clusters, adjacency and probes). Writes a new
results folder (config.json, lir.csv, summary.csv, heatmap.csv, PNG/PDF plots) under
``--out-root``; never reuses an earlier folder.

    python experiments/tools/placement_lir.py                # 5 seeds, 1-2 minutes
    python experiments/tools/placement_lir.py --seeds 1 --points 20000 --clusters 128
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import placement  # noqa: E402
from experiments.harness.common import new_results_dir, save_figure, write_csv, write_json  # noqa: E402
from placement.io import load_clusters, load_probes  # noqa: E402

POLICIES = ("adjacency", "round_robin", "random", "size_balanced", "locality")


# ----------------------------------------------------------------------------------------------
# Synthetic clustered data and a small k-means (numpy only)


def gaussian_mixture(rng, n, dim, topics, topic_spread, noise, centers=None):
    """``n`` points around ``topics`` centers: center ~ N(0, topic_spread^2 I), point = center +
    N(0, noise^2 I), topic chosen uniformly. Returns (points float32, centers)."""
    if centers is None:
        centers = rng.normal(0.0, topic_spread, size=(topics, dim))
    t = rng.integers(0, topics, n)
    x = centers[t] + rng.normal(0.0, noise, size=(n, dim))
    return x.astype(np.float32), centers


def _sqdist(x, c, c_sq):
    return (x * x).sum(1)[:, None] - 2.0 * (x @ c.T) + c_sq[None, :]


def assign(x, centroids, chunk=8192):
    """Nearest centroid of every row of ``x`` (squared L2), chunked."""
    c = centroids.astype(np.float64)
    c_sq = (c * c).sum(1)
    out = np.empty(x.shape[0], dtype=np.int64)
    for i in range(0, x.shape[0], chunk):
        out[i:i + chunk] = _sqdist(x[i:i + chunk].astype(np.float64), c, c_sq).argmin(1)
    return out


def kmeans(x, k, iters, rng):
    """Lloyd's k-means with k-means++ seeding; empty clusters are re-seeded with the point
    farthest from its centroid. Deterministic for a given ``rng`` state."""
    x64 = x.astype(np.float64)
    n = x.shape[0]
    cent = np.empty((k, x.shape[1]))
    cent[0] = x64[rng.integers(n)]
    d2 = ((x64 - cent[0]) ** 2).sum(1)
    for j in range(1, k):
        cent[j] = x64[rng.choice(n, p=d2 / d2.sum())]
        d2 = np.minimum(d2, ((x64 - cent[j]) ** 2).sum(1))
    for _ in range(iters):
        lab = assign(x, cent)
        counts = np.bincount(lab, minlength=k)
        sums = np.zeros_like(cent)
        np.add.at(sums, lab, x64)
        empty = np.flatnonzero(counts == 0)
        cent[counts > 0] = sums[counts > 0] / counts[counts > 0, None]
        if empty.size:
            far = np.argsort(-((x64 - cent[lab]) ** 2).sum(1))[: empty.size]
            cent[empty] = x64[far]
    lab = assign(x, cent)
    return cent, lab


def route(queries, centroids, num_probes):
    """The ``num_probes`` nearest centroids of each query, nearest first: CSR (query_ptr,
    search_cluster) as in the logical trace."""
    c = centroids.astype(np.float64)
    d = _sqdist(queries.astype(np.float64), c, (c * c).sum(1))
    probes = np.argsort(d, axis=1, kind="stable")[:, :num_probes]
    Q = queries.shape[0]
    return np.arange(0, Q * num_probes + 1, num_probes, dtype=np.int64), probes.ravel()


# ----------------------------------------------------------------------------------------------


def capacities(sizes, args):
    """Equal devices of (1 + slack) x total / D, or None (unconstrained)."""
    if args.capacity_slack is None:
        return None
    return int(np.ceil(sizes.sum() / args.devices * (1.0 + args.capacity_slack)))


def lir_rows(device, qp, sc, D, weights, batch, sizes):
    per_q = placement.query_lir(device, qp, sc, D, weights)
    used = np.bincount(device, weights=sizes, minlength=D)
    return {
        "size_max_over_mean": float(used.max() / used.mean()),
        "lir_per_query_mean": float(np.nanmean(per_q)),
        "lir_per_query_p95": float(np.nanpercentile(per_q, 95)),
        f"lir_batch{batch}_mean": float(np.nanmean(placement.batch_lir(device, qp, sc, D, batch, weights))),
        "lir_all_queries": placement.lir(placement.device_loads(device, qp, sc, D, weights)),
    }


def run_synthetic(args):
    rows, heat = [], []
    for seed in range(args.seed, args.seed + args.seeds):
        rng = np.random.default_rng(seed)
        x, centers = gaussian_mixture(rng, args.points, args.dim, args.topics, args.topic_spread, args.noise)
        q, _ = gaussian_mixture(rng, args.queries, args.dim, args.topics, args.topic_spread, args.noise, centers)
        cent, lab = kmeans(x, args.clusters, args.kmeans_iters, rng)
        sizes = np.bincount(lab, minlength=args.clusters)  # vectors per cluster
        adj = placement.cluster_adjacency(cent, min(args.clusters - 1, max(args.devices, max(args.probes))))
        caps = capacities(sizes, args)
        placements = {p: placement.place(sizes, args.devices, p, adjacency=adj, capacities=caps, seed=seed)
                      for p in POLICIES}
        for P in args.probes:
            qp, sc = route(q, cent, P)
            for p, dev in placements.items():
                rows.append({"seed": seed, "num_probes": P, "policy": p, "num_devices": args.devices,
                             **lir_rows(dev, qp, sc, args.devices, None, args.batch, sizes)})
            if seed == args.seed and P == args.heatmap_probes:
                for p in ("round_robin", "adjacency"):
                    M = placement.device_cluster_count_matrix(placements[p], qp, sc, args.devices)
                    for d in range(M.shape[0]):
                        for k in range(M.shape[1]):
                            heat.append({"policy": p, "num_probes": P, "device": d,
                                         "clusters_searched_on_device": k, "queries": int(M[d, k])})
        print(f"seed {seed}: {args.clusters} clusters, sizes {sizes.min()}..{sizes.max()} vectors", flush=True)
    return rows, heat


def run_trace(args):
    meta = load_clusters(args.trace)
    probes = load_probes(args.trace, args.work, num_clusters=meta.sizes.shape[0])
    if meta.adjacency is not None:
        kw = {"adjacency": meta.adjacency}
    elif meta.centroids is not None:
        kw = {"centroids": meta.centroids}
    else:
        raise SystemExit(f"{args.trace}: has neither cluster_adjacency nor centroids")
    P = int(probes.meta.get("num_probes", int(np.max(np.diff(probes.query_ptr)))))
    rows, heat = [], []
    for p in POLICIES:
        dev = placement.place(meta.sizes, args.devices, p, seed=args.seed, capacities=capacities(meta.sizes, args), **kw)
        rows.append({"seed": args.seed, "num_probes": P, "policy": p, "num_devices": args.devices,
                     **lir_rows(dev, probes.query_ptr, probes.search_cluster, args.devices, probes.weights, args.batch,
                              meta.sizes)})
        if p in ("round_robin", "adjacency"):
            M = placement.device_cluster_count_matrix(dev, probes.query_ptr, probes.search_cluster, args.devices)
            for d in range(M.shape[0]):
                for k in range(M.shape[1]):
                    heat.append({"policy": p, "num_probes": P, "device": d,
                                 "clusters_searched_on_device": k, "queries": int(M[d, k])})
    return rows, heat


def plot(folder: Path, batch: int):
    """Draw the figures from the CSVs only."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    summary = pd.read_csv(folder / "summary.csv")
    metrics = ["lir_per_query_mean", f"lir_batch{batch}_mean", "lir_all_queries"]
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 3.4))
    probes = sorted(summary.num_probes.unique())
    pols = [p for p in POLICIES if p in set(summary.policy)]
    width = 0.8 / len(pols)
    for ax, m in zip(axes, metrics):
        for i, p in enumerate(pols):
            s = summary[summary.policy == p].set_index("num_probes").loc[probes]
            ax.bar(np.arange(len(probes)) + i * width, s[m + "_avg"], width, yerr=s[m + "_sd"].fillna(0), label=p)
        ax.set_xticks(np.arange(len(probes)) + width * (len(pols) - 1) / 2, [str(p) for p in probes])
        ax.set_xlabel("clusters probed per query")
        ax.set_ylabel(m.replace("_", " "))
        ax.axhline(1.0, color="k", lw=0.5)
    axes[0].legend(fontsize=7)
    fig.suptitle("Load imbalance ratio (max device load / ideal), lower is better")
    fig.tight_layout()
    save_figure(fig, folder, "lir")
    plt.close(fig)

    heat = pd.read_csv(folder / "heatmap.csv")
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2), sharey=True)
    for ax, p in zip(axes, ("round_robin", "adjacency")):
        h = heat[heat.policy == p].pivot(index="device", columns="clusters_searched_on_device", values="queries")
        h = h.reindex(columns=range(int(heat.num_probes.iloc[0]) + 1), fill_value=0).fillna(0)
        im = ax.imshow(h.values, aspect="auto", cmap="viridis")
        ax.set_yticks(range(h.shape[0]), [str(d) for d in h.index])
        ax.set_title(f"{p} (probes {int(heat.num_probes.iloc[0])})")
        ax.set_xlabel("clusters a query searches on the device")
        ax.set_xticks(range(h.shape[1]), [str(c) for c in h.columns])
        ax.set_ylabel("device")
        fig.colorbar(im, ax=ax, label="queries")
    fig.tight_layout()
    save_figure(fig, folder, "heatmap")
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--devices", type=int, default=4, help="CXL devices (paper: 4)")
    ap.add_argument("--probes", type=int, nargs="+", default=[4, 8, 16], help="clusters probed per query (paper: 4, 8, 16)")
    ap.add_argument("--points", type=int, default=60_000, help="dataset vectors")
    ap.add_argument("--queries", type=int, default=5_000, help="queries (same distribution as the data)")
    ap.add_argument("--dim", type=int, default=32, help="vector dimension")
    ap.add_argument("--topics", type=int, default=16, help="mixture components ('topics')")
    ap.add_argument("--topic-spread", type=float, default=3.0, help="std of the topic centers")
    ap.add_argument("--noise", type=float, default=1.0, help="std of points around their topic center")
    ap.add_argument("--clusters", type=int, default=256, help="k-means clusters")
    ap.add_argument("--kmeans-iters", type=int, default=20, help="Lloyd iterations")
    ap.add_argument("--capacity-slack", type=float, default=None,
                    help="equal device capacities of (1 + slack) x total size / devices (default: unconstrained)")
    ap.add_argument("--seed", type=int, default=0, help="first seed")
    ap.add_argument("--seeds", type=int, default=5, help="number of seeds (datasets) to average over")
    ap.add_argument("--batch", type=int, default=64, help="queries per batch for the batch LIR")
    ap.add_argument("--heatmap-probes", type=int, default=8, help="probes for the Fig. 5b-style heatmap")
    ap.add_argument("--trace", default=None, help="use a logical trace .npz from graphs instead of synthetic data")
    ap.add_argument("--work", default="searches", choices=placement.load.WORK_KINDS, help="load per search (with --trace)")
    ap.add_argument("--out-root", default="results", help="parent folder of the results folder")
    args = ap.parse_args(argv)

    folder = new_results_dir(args.out_root, "placement_lir")  # made (and writable) before the work
    t0 = time.perf_counter()
    rows, heat = run_trace(args) if args.trace else run_synthetic(args)
    import pandas as pd

    df = pd.DataFrame(rows)
    metrics = [c for c in df.columns if c.startswith("lir_") or c.startswith("size_")]
    g = df.groupby(["num_probes", "policy"], sort=False)[metrics]
    summary = g.mean().add_suffix("_avg").join(g.std().add_suffix("_sd")).reset_index()
    summary["seeds"] = g.size().values
    write_json(folder / "config.json", {**vars(args), "policies": POLICIES,
                                        "capacities": ("unconstrained (equal devices; see docs/placement.md)"
                                                       if args.capacity_slack is None else
                                                       f"equal, (1 + {args.capacity_slack}) x total / devices"),
                                        "load_per_search": args.work if args.trace else "searches"})
    write_csv(folder / "lir.csv", df)
    write_csv(folder / "summary.csv", summary)
    write_csv(folder / "heatmap.csv", pd.DataFrame(heat))
    plot(folder, args.batch)

    pd.set_option("display.width", 200)
    show = summary[["num_probes", "policy"] + [m + "_avg" for m in metrics]]
    print(show.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    for P in sorted(df.num_probes.unique()):
        s = summary[summary.num_probes == P].set_index("policy")
        a, r = s.loc["adjacency"], s.loc["round_robin"]
        print(f"probes {P:>2}: per-query LIR adjacency {a.lir_per_query_mean_avg:.3f} vs round-robin "
              f"{r.lir_per_query_mean_avg:.3f}; all-queries LIR {a.lir_all_queries_avg:.3f} vs {r.lir_all_queries_avg:.3f}")
    print(f"wrote {folder} in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
