"""``cosmos graphs build`` and ``cosmos graphs trace``."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

_DEFAULTS = dict(num_clusters=64, num_probes=8, cand_list_len=64, k=10, M=32, ef_construction=100, seed=0,
                 graph="hnsw", R=64, L=100, alpha=1.2)


def _dataset_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("dataset (a synthetic or shipped set by name, or your files)")
    g.add_argument("--dataset", default=None,
                   help="synthetic family (sift, deep, text2image, msspacev) or real set (siftsmall, bigann10k)")
    g.add_argument("--n", type=int, default=None, help="base vectors (synthetic default 100000; files: first n)")
    g.add_argument("--num-queries", type=int, default=None, help="queries (synthetic default 1000; files: first q)")
    g.add_argument("--base", type=Path, help="base vectors file (.fvecs .bvecs .fbin .u8bin .i8bin)")
    g.add_argument("--queries", type=Path, help="query vectors file")
    g.add_argument("--groundtruth", type=Path, help="ground truth (.ivecs, .ibin or big-ann binary)")
    g.add_argument("--metric", choices=("l2", "ip"), default="l2", help="metric of --base files (default l2)")
    p.add_argument("--seed", type=int, default=_DEFAULTS["seed"], help="seed of the synthetic data, k-means and graphs")
    p.add_argument("--cache-dir", type=Path, default=None, help="cache directory (default $COSMOS_CACHE or ~/.cache/cosmos)")
    p.add_argument("--num-clusters", type=int, default=_DEFAULTS["num_clusters"], help="k-means clusters (1 = single graph)")
    p.add_argument("--M", type=int, default=_DEFAULTS["M"], help="hnswlib M (level-0 max degree 2M)")
    p.add_argument("--ef-construction", type=int, default=_DEFAULTS["ef_construction"], help="hnswlib build beam width")
    p.add_argument("--graph", choices=("hnsw", "vamana"), default=_DEFAULTS["graph"],
                   help="graph of each cluster: hnsw (hnswlib level 0, --M, --ef-construction) or vamana "
                        "(DiskANN's Vamana, --R, --L, --alpha); default hnsw")
    p.add_argument("--R", type=int, default=_DEFAULTS["R"], help="Vamana max out-degree (default 64, DiskANN's)")
    p.add_argument("--L", type=int, default=_DEFAULTS["L"], help="Vamana build search list size (default 100, DiskANN's)")
    p.add_argument("--alpha", type=float, default=_DEFAULTS["alpha"],
                   help="Vamana pruning factor of the second pass, >= 1 (default 1.2, DiskANN's)")
    p.add_argument("--threads", type=int, default=None,
                   help="threads building the graphs, >= 1 (default: the CPU count; the result does not depend on it)")
    p.add_argument("--clusters-out", type=Path, default=None,
                   help="write the cluster metadata (clusters.npz: sizes, centroids, cluster_adjacency) here")
    p.add_argument("--force", action="store_true", help="overwrite existing output files")


def register(subparsers) -> None:
    p = subparsers.add_parser("graphs", help="datasets, clustered graph indexes and logical traces")
    sub = p.add_subparsers(dest="graphs_command", metavar="ACTION")
    b = sub.add_parser("build", help="build (or verify the cached) clustered index of a dataset")
    _dataset_args(b)
    b.set_defaults(func=_build)
    t = sub.add_parser("trace", help="trace the queries on the (cached) index and write the logical trace")
    _dataset_args(t)
    t.add_argument("--num-probes", type=int, default=_DEFAULTS["num_probes"], help="clusters searched per query")
    t.add_argument("--cand-list-len", type=int, default=_DEFAULTS["cand_list_len"], help="beam search list length L")
    t.add_argument("-k", type=int, default=_DEFAULTS["k"], help="neighbors returned per query")
    t.add_argument("--entry", choices=("medoid", "hnsw"), default="medoid", help="entry point of each cluster search")
    t.add_argument("--out", type=Path, required=True, help="trace file to write (.npz)")
    t.add_argument("--per-query", action="store_true", help="print one line of statistics per query")
    t.add_argument("--node-bytes", type=int, default=None,
                   help="bytes per node read, >= 1 (default 4 + 4*max_degree)")
    t.set_defaults(func=_trace)
    p.set_defaults(func=lambda a: (p.print_help(), 2)[1])


def _load(args):
    from cosmos_common import UserError
    from graphs.dataset import load_dataset
    from graphs.workload import get_dataset

    if args.base is not None:
        if args.dataset is not None:
            raise UserError("give either --dataset or --base, not both")
        ds = load_dataset(args.base, args.queries, args.groundtruth, n=args.n, metric=args.metric)
        if args.num_queries is not None and ds.queries is not None:
            ds = ds.subset(None, args.num_queries)
        return ds
    if args.queries is not None or args.groundtruth is not None:
        raise UserError("--queries/--groundtruth need --base")
    if args.dataset is None:
        raise UserError("give --dataset NAME or --base PATH")
    return get_dataset(args.dataset, args.n, args.num_queries, args.seed, args.cache_dir, progress=True)


def _check_options(args) -> None:
    """Reject bad numeric options before anything is read or built."""
    if args.seed < 0:
        raise ValueError(f"--seed={args.seed} must be >= 0")
    if args.threads is not None and args.threads < 1:
        raise ValueError(f"--threads={args.threads} must be >= 1 (default: the CPU count)")
    node_bytes = getattr(args, "node_bytes", None)
    if node_bytes is not None and node_bytes < 1:
        raise ValueError(f"--node-bytes={node_bytes} must be >= 1 (bytes read per node)")


def _check_out(path, force):
    from cosmos_common import UserError

    if path is not None and path.exists() and not force:
        raise UserError(f"{path}: already exists (use --force to overwrite)")


def _params(args):
    """The index parameters of the options, validated before anything is read or built."""
    from graphs.index import IndexParams

    params = IndexParams(num_clusters=args.num_clusters, M=args.M, ef_construction=args.ef_construction,
                         seed=args.seed, graph=args.graph, R=args.R, L=args.L, alpha=args.alpha)
    if params.graph == "vamana":
        from graphs.vamana import validate_vamana

        validate_vamana(params.R, params.L, params.alpha)
    return params


def _index(args, ds):
    from graphs.index import get_index

    params = _params(args)
    params.validate(ds.n)
    t0 = time.perf_counter()
    idx, path = get_index(ds, params, args.cache_dir, threads=args.threads, progress=True)
    return idx, path, time.perf_counter() - t0


def _build(args) -> int:
    from graphs.workload import export_clusters

    _check_options(args)
    _params(args)
    _check_out(args.clusters_out, args.force)
    ds = _load(args)
    idx, path, dt = _index(args, ds)
    sizes = idx.cluster_sizes
    deg = idx.degrees()
    print(f"dataset: {ds.name} n={ds.n} dim={ds.dim} dtype={ds.dtype} metric={ds.metric}")
    print(f"index: {path}")
    print(f"clusters: {idx.num_clusters} sizes min/mean/max {sizes.min()}/{sizes.mean():.1f}/{sizes.max()}")
    p = idx.params
    kind = (f"vamana R={p.R} L={p.L} alpha={p.alpha}" if p.graph == "vamana"
            else f"hnsw M={p.M} ef_construction={p.ef_construction}")
    print(f"graph: {kind}")
    print(f"graph degree: mean {deg.mean():.2f} max {deg.max()} (limit {idx.max_degree})")
    print(f"build_or_load_s: {dt:.2f}")
    if args.clusters_out is not None:
        print(f"clusters: {export_clusters(args.clusters_out, idx, overwrite=args.force)}")
    return 0


def _trace(args) -> int:
    import numpy as np

    from graphs.search import validate_search
    from graphs.trace import save_trace
    from graphs.workload import check_entry, check_groundtruth_k, export_clusters, trace_index

    _check_options(args)
    _params(args)
    check_entry(args.graph, args.entry)
    _check_out(args.out, args.force)
    _check_out(args.clusters_out, args.force)
    ds = _load(args)
    if ds.queries is None:
        from cosmos_common import UserError

        raise UserError("no queries: give --queries with --base")
    # check the search parameters before building anything
    if not 1 <= args.num_probes <= args.num_clusters:
        raise ValueError(f"--num-probes={args.num_probes} must be in 1..--num-clusters={args.num_clusters}")
    if not 1 <= args.k <= args.cand_list_len:
        raise ValueError(f"-k={args.k} must be in 1..--cand-list-len={args.cand_list_len}")
    check_groundtruth_k(ds, args.k, None if args.groundtruth is None else f"--groundtruth {args.groundtruth}")
    idx, path, _ = _index(args, ds)
    validate_search(idx, ds.queries, args.num_probes, args.cand_list_len, args.k, args.entry)
    t0 = time.perf_counter()
    tr = trace_index(idx, ds, args.num_probes, args.cand_list_len, args.k, args.entry, progress=True)
    dt = time.perf_counter() - t0
    save_trace(args.out, tr, overwrite=args.force)
    if args.clusters_out is not None:
        export_clusters(args.clusters_out, idx, overwrite=args.force)
    pq = tr.per_query(node_bytes=args.node_bytes)
    if args.per_query:
        print("query searches hops distances cand_inserts bytes recall")
        rec = pq.get("recall", np.full(tr.num_queries, np.nan))
        for i in range(tr.num_queries):
            print(f"{i} {pq['searches'][i]} {pq['hops'][i]} {pq['distances'][i]} {pq['cand_inserts'][i]} "
                  f"{pq['bytes'][i]} {rec[i]:.3f}")
    s = tr.summary(node_bytes=args.node_bytes)
    print(f"dataset: {ds.name} n={ds.n} queries={tr.num_queries} clusters={idx.num_clusters} "
          f"num_probes={args.num_probes} cand_list_len={args.cand_list_len} k={args.k} entry={args.entry} "
          f"graph={args.graph}")
    print("per query      mean        p50        p99        max")
    for key in ("hops", "distances", "cand_inserts", "bytes"):
        v = s[key]
        print(f"{key:<12} {v['mean']:>9.1f} {v['p50']:>10.1f} {v['p99']:>10.1f} {v['max']:>10.1f}")
    print(f"trace_s: {dt:.2f} ({tr.num_queries / max(dt, 1e-9):.0f} queries/s)")
    print(f"trace: {args.out}")
    print(f"index: {path}")
    rec = tr.meta["recall"]
    print(f"recall@{args.k}: {rec:.4f}" if rec is not None else f"recall@{args.k}: n/a (no ground truth)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    import sys

    from cosmos.cli import main

    raise SystemExit(main(["graphs", *sys.argv[1:]]))
