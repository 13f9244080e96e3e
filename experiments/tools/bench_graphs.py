"""Speed, memory and recall of the clustered graph index on a synthetic SIFT-like set.

Goals (issue 3): building the 1M-vector clustered index (k-means + graphs) in at most 10 minutes
on 2 cores; tracing 10,000 queries on it in at most 60 s; recall@10 >= 0.90 at num_probes = 8;
exact ground truth of 10,000 queries over 1M vectors within a few GB. Each phase is timed on
its own with a fresh cache (nothing is reused), peak memory (max RSS of this process) is printed
after each phase.

    python experiments/tools/bench_graphs.py                   # 1M vectors, 10,000 queries, defaults
    python experiments/tools/bench_graphs.py --n 100000 --num-queries 2000
    python experiments/tools/bench_graphs.py --threads 2 --json results.json
    python experiments/tools/bench_graphs.py --graph vamana     # DiskANN's Vamana graphs (R=64, L=100, alpha=1.2)
    python experiments/tools/bench_graphs.py --graph vamana-paper  # Vamana as the DiskANN paper builds it
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from graphs.dataset import Dataset  # noqa: E402
from graphs.groundtruth import exact_knn, recall_at_k  # noqa: E402
from graphs.index import GRAPH_KINDS, IndexParams, build_index  # noqa: E402
from graphs.search import search  # noqa: E402
from graphs.synthetic import SPECS, generate  # noqa: E402
from graphs.workload import DEFAULTS  # noqa: E402


class Phase:
    """Wall and CPU time (all threads of this process) of a phase. On a shared machine the CPU
    time / cores is what the phase would take on dedicated cores if it parallelizes fully."""

    def __enter__(self):
        self.w0, self.c0 = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall_s = time.perf_counter() - self.w0
        self.cpu_s = time.process_time() - self.c0

    def text(self) -> str:
        return f"{self.wall_s:.1f} s wall, {self.cpu_s:.1f} s CPU ({self.cpu_s / max(self.wall_s, 1e-9):.2f} cores busy)"


def peak_rss_MB() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default="sift", choices=list(SPECS))
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--num-queries", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--num-clusters", type=int, default=DEFAULTS["num_clusters"])
    ap.add_argument("--num-probes", type=int, default=DEFAULTS["num_probes"])
    ap.add_argument("--cand-list-len", type=int, default=DEFAULTS["cand_list_len"])
    ap.add_argument("-k", "--k", dest="k", type=int, default=DEFAULTS["k"])
    ap.add_argument("--M", type=int, default=DEFAULTS["M"])
    ap.add_argument("--ef-construction", type=int, default=DEFAULTS["ef_construction"])
    ap.add_argument("--graph", choices=GRAPH_KINDS, default=DEFAULTS["graph"],
                    help="graph of each cluster (vamana: as the DiskANN library builds it, vamana-paper: as the "
                         "DiskANN paper does; --R --L --alpha)")
    ap.add_argument("--R", type=int, default=DEFAULTS["R"])
    ap.add_argument("--L", type=int, default=DEFAULTS["L"])
    ap.add_argument("--alpha", type=float, default=DEFAULTS["alpha"])
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="clusters built concurrently")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures to this JSON file")
    ap.add_argument("--save-trace", type=Path, default=None, help="write the trace here (.npz)")
    args = ap.parse_args(argv)

    fig: dict = {"config": vars(args) | {"json": None, "save_trace": None}, "cpus": os.cpu_count()}
    spec = SPECS[args.dataset]

    with Phase() as ph:
        base = generate(spec, args.n, args.seed)
        queries = generate(spec, args.num_queries, args.seed, queries=True)
    fig["generate_s"] = ph.wall_s
    print(f"generate {args.dataset} n={args.n} q={args.num_queries}: {ph.text()}, "
          f"peak RSS {peak_rss_MB():.0f} MB", flush=True)

    with Phase() as ph:
        gt, _ = exact_knn(base, queries, args.k, spec.metric, progress=True)
    fig["groundtruth_s"], fig["groundtruth_cpu_s"] = ph.wall_s, ph.cpu_s
    fig["peak_rss_after_groundtruth_MB"] = peak_rss_MB()
    print(f"exact ground truth (k={args.k}): {ph.text()}, peak RSS {peak_rss_MB():.0f} MB", flush=True)

    ds = Dataset(name=f"{args.dataset}-n{args.n}", base=base, queries=queries, groundtruth=gt, metric=spec.metric)
    params = IndexParams(num_clusters=args.num_clusters, M=args.M, ef_construction=args.ef_construction,
                         seed=args.seed, graph=args.graph, R=args.R, L=args.L, alpha=args.alpha)
    params.validate(args.n)
    with Phase() as ph:
        idx = build_index(ds, params, threads=args.threads, progress=True)
    fig["build_s"], fig["build_cpu_s"] = ph.wall_s, ph.cpu_s
    fig["peak_rss_after_build_MB"] = peak_rss_MB()
    sizes = idx.cluster_sizes
    deg = idx.degrees()
    fig.update(cluster_size_min=int(sizes.min()), cluster_size_max=int(sizes.max()),
               mean_degree=float(deg.mean()), max_degree=int(deg.max()))
    kind = (f"{args.graph} graphs, R={args.R}, L={args.L}, alpha={args.alpha}" if args.graph != "hnsw"
            else f"hnswlib graphs, M={args.M}, efC={args.ef_construction}")
    print(f"build index (k-means + {idx.num_clusters} {kind}, "
          f"{args.threads} threads): {ph.text()} (goal <= 600 s on 2 cores at 1M), peak RSS {peak_rss_MB():.0f} MB",
          flush=True)
    print(f"  cluster sizes {sizes.min()}..{sizes.max()}, graph degree mean {deg.mean():.1f} max {deg.max()}")
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        idx.save(Path(tmp) / "idx.npz")
        fig["index_save_s"] = time.perf_counter() - t
        fig["index_file_MB"] = (Path(tmp) / "idx.npz").stat().st_size / 1e6

    # warm the numba kernels on a few queries so compilation is not timed (cache=True keeps it)
    search(idx, base, queries[:4], args.num_probes, args.cand_list_len, args.k, progress=False)
    with Phase() as ph:
        out = search(idx, base, queries, args.num_probes, args.cand_list_len, args.k, progress=True)
    fig["trace_s"], fig["trace_cpu_s"] = ph.wall_s, ph.cpu_s
    fig["peak_rss_after_trace_MB"] = peak_rss_MB()
    rec = recall_at_k(out.result_ids, gt, args.k)
    fig["recall_at_k"] = float(rec.mean())
    hops = np.diff(out.search_hop_ptr).reshape(-1, args.num_probes).sum(1)
    reads = np.diff(out.hop_read_ptr)
    fig["hops_per_query"] = float(hops.mean())
    fig["reads_per_hop"] = float(reads.mean()) if len(reads) else 0.0
    fig["distances_per_query"] = float((len(reads) and reads.sum() / args.num_queries) + args.num_probes)
    fig["trace_entries"] = {"hops": int(len(out.hop_node)), "reads": int(len(out.read_node))}
    print(f"trace {args.num_queries} queries (num_probes={args.num_probes}, L={args.cand_list_len}, k={args.k}): "
          f"{ph.text()} (goal <= 60 s), {args.num_queries / fig['trace_s']:.0f} queries/s, "
          f"peak RSS {peak_rss_MB():.0f} MB")
    print(f"  per query: {fig['hops_per_query']:.1f} hops, {fig['distances_per_query']:.1f} distance computations, "
          f"{fig['reads_per_hop']:.1f} vectors read per hop")
    print(f"recall@{args.k}: {fig['recall_at_k']:.4f}")
    print(f"load average during the run (1/5/15 min): {os.getloadavg()} on {os.cpu_count()} CPUs")
    print(f"peak memory (max RSS): {peak_rss_MB():.0f} MB")
    if args.save_trace is not None:
        from graphs.workload import trace_index

        del out
        from graphs.trace import save_trace

        save_trace(args.save_trace, trace_index(idx, ds, args.num_probes, args.cand_list_len, args.k,
                                                progress=False))
    if args.json is not None:
        from experiments.harness.common import write_json

        fig["peak_rss_MB"] = peak_rss_MB()
        fig["config"]["json"] = fig["config"]["save_trace"] = None
        write_json(args.json, json.loads(json.dumps(fig, default=str)), overwrite=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
