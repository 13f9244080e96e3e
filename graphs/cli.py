"""``cosmos graphs build`` and ``cosmos graphs trace``."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from cosmos_common.vocabulary import add_renamed

#: graphs.index.GRAPH_KINDS, written out so that the command line starts without importing numpy
#: (tests/test_graphs_vamana.py checks they are the same)
GRAPH_KINDS = ("hnsw", "vamana", "vamana-paper")
#: graphs.dataset.INPUT_METRICS, written out for the same reason (tests/test_graphs_io.py)
INPUT_METRICS = ("l2", "ip", "cosine", "angular")

_DEFAULTS = dict(num_clusters=64, num_probes=8, cand_list_len=64, k=10, M=32, ef_construction=100, seed=0,
                 graph="hnsw", R=64, L=100, alpha=1.2)


def _progress(args) -> bool:
    """Progress bars on a terminal, unless ``--no-progress`` (cosmos_common.terminal)."""
    from cosmos_common.terminal import progress_wanted

    return progress_wanted(getattr(args, "no_progress", False))


def _dataset_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("dataset (a synthetic or shipped set by name, or your files)")
    g.add_argument("--dataset", default=None,
                   help="synthetic family (sift, deep, text2image, msspacev) or real set (siftsmall, bigann10k)")
    g.add_argument("--n", type=int, default=None, help="base vectors (synthetic default 100000; files: first n)")
    g.add_argument("--num-queries", type=int, default=None, help="queries (synthetic default 1000; files: first q)")
    g.add_argument("--base", type=Path, help="base vectors file (.fvecs .bvecs .fbin .u8bin .i8bin)")
    g.add_argument("--queries", type=Path, help="query vectors file")
    g.add_argument("--groundtruth", type=Path,
                   help="ground truth (.ivecs, .ibin or big-ann binary); without it, trace computes "
                        "the exact top-k of --queries once and caches it (--no-groundtruth: skip)")
    g.add_argument("--metric", choices=INPUT_METRICS, default="l2",
                   help="metric of --base files (default l2; cosine or angular: the vectors "
                        "scaled to unit length, searched by inner product)")
    p.add_argument("--seed", type=int, default=_DEFAULTS["seed"], help="seed of the synthetic data, k-means and graphs")
    p.add_argument("--cache-dir", type=Path, default=None, help="cache directory (default $COSMOS_CACHE or ~/.cache/cosmos)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars (as on the other commands)")
    p.add_argument("--num-clusters", "--nlist", dest="num_clusters", type=int,
                   default=_DEFAULTS["num_clusters"],
                   help="k-means clusters (1 = single graph); --nlist is faiss's name")
    p.add_argument("--M", type=int, default=_DEFAULTS["M"],
                   help="hnswlib M, 2..10000 (level-0 max degree 2M; hnswlib caps M at 10000)")
    p.add_argument("--ef-construction", type=int, default=_DEFAULTS["ef_construction"], help="hnswlib build beam width")
    p.add_argument("--graph", choices=GRAPH_KINDS, default=_DEFAULTS["graph"],
                   help="graph of each cluster: hnsw (hnswlib level 0, --M, --ef-construction), vamana "
                        "(DiskANN's Vamana as the DiskANN library builds it, --R, --L, --alpha) or "
                        "vamana-paper (as the DiskANN paper describes it); default hnsw")
    p.add_argument("--R", type=int, default=_DEFAULTS["R"], help="Vamana max out-degree (default 64, DiskANN's)")
    p.add_argument("--L", type=int, default=_DEFAULTS["L"], help="Vamana build search list size (default 100, DiskANN's)")
    p.add_argument("--alpha", type=float, default=_DEFAULTS["alpha"],
                   help="Vamana pruning factor (the final one), >= 1 (default 1.2, DiskANN's)")
    add_renamed(p, "--threads", p.add_argument(
        "--workers", dest="threads", type=int, default=None, metavar="N",
        help="threads building the graphs, >= 1 (default: the CPU count; the result does not "
             "depend on it)"))
    p.add_argument("--clusters-out", type=Path, default=None,
                   help="write the cluster metadata (clusters.npz: sizes, centroids, cluster_adjacency) here")
    p.add_argument("--force", action="store_true",
                   help="replace existing output files (written to a temporary name, then renamed)")


def register(subparsers) -> None:
    p = subparsers.add_parser("graphs", help="datasets, clustered graph indexes and logical traces")
    sub = p.add_subparsers(dest="graphs_command", metavar="ACTION")
    b = sub.add_parser("build", help="build (or verify the cached) clustered index of a dataset")
    _dataset_args(b)
    b.set_defaults(func=_build)
    t = sub.add_parser("trace", help="trace the queries on the (cached) index and write the logical trace")
    _dataset_args(t)
    t.add_argument("--num-probes", "--nprobe", dest="num_probes", type=int,
                   default=_DEFAULTS["num_probes"],
                   help="clusters searched per query; --nprobe is faiss's name")
    t.add_argument("--cand-list-len", "--ef-search", "--L-search", dest="cand_list_len", type=int,
                   default=_DEFAULTS["cand_list_len"],
                   help="beam search list length L; --ef-search (hnswlib, faiss) and --L-search "
                        "(DiskANN, big-ann-benchmarks) are the same parameter")
    t.add_argument("--no-groundtruth", action="store_true",
                   help="with --base and no --groundtruth: do not compute the exact ground truth "
                        "(recall is then n/a)")
    t.add_argument("-k", "--k", dest="k", type=int, default=_DEFAULTS["k"],
                   help="neighbors returned per query, 1..--cand-list-len and at most the base size")
    t.add_argument("--entry", choices=("medoid", "hnsw"), default="medoid", help="entry point of each cluster search")
    t.add_argument("--index", choices=("graph", "ivfpq", "exact"), default="graph",
                   help="index family: clustered graphs (default), IVF-PQ on the same k-means lists, "
                        "or an exact scan of the probed lists (--num-probes = --num-clusters: all)")
    t.add_argument("--pq-m", type=int, default=16,
                   help="IVF-PQ sub-spaces = code bytes; must divide the dimension (default 16)")
    t.add_argument("--rerank", type=int, default=None,
                   help="IVF-PQ: candidates re-ranked with their full vectors, 0 (none) or >= k (default 100)")
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
    return get_dataset(args.dataset, args.n, args.num_queries, args.seed, args.cache_dir,
                       progress=_progress(args))


def _check_options(args) -> None:
    """Reject bad numeric options before anything is read or built."""
    from cosmos_common import UserError
    from graphs.index import HNSWLIB_MAX_M

    if args.seed < 0:
        raise UserError(f"--seed={args.seed} must be >= 0")
    if args.n is not None and args.n < 1:
        raise UserError(f"--n={args.n} must be >= 1 (base vectors)")
    if args.num_queries is not None and args.num_queries < (1 if hasattr(args, "k") else 0):
        raise UserError(f"--num-queries={args.num_queries} must be >= 1 (a trace needs a query)")
    if args.num_clusters < 1:
        raise UserError(f"--num-clusters={args.num_clusters} must be >= 1")
    if not 2 <= args.M <= HNSWLIB_MAX_M:
        raise UserError(f"--M={args.M} must be in 2..{HNSWLIB_MAX_M} (hnswlib caps M at "
                        f"{HNSWLIB_MAX_M}; the level-0 degree limit is 2*M)")
    if args.ef_construction < 1:
        raise UserError(f"--ef-construction={args.ef_construction} must be >= 1")
    if hasattr(args, "k"):
        if args.k < 1:
            raise UserError(f"-k={args.k} must be >= 1")
        if args.num_probes < 1 or args.num_probes > args.num_clusters:
            raise UserError(f"--num-probes={args.num_probes} must be in 1..--num-clusters="
                            f"{args.num_clusters}")
        if getattr(args, "index", "graph") == "graph":
            if args.cand_list_len < 1:
                raise UserError(f"--cand-list-len={args.cand_list_len} must be >= 1 (the "
                                "search's candidate list)")
            if args.cand_list_len < args.k:
                raise UserError(f"--cand-list-len={args.cand_list_len} is below -k={args.k}: "
                                "the search keeps that many candidates and returns k of them; "
                                "raise --cand-list-len or lower -k")
    if args.threads is not None and args.threads < 1:
        raise UserError(f"--workers={args.threads} must be >= 1 (default: the CPU count)")
    node_bytes = getattr(args, "node_bytes", None)
    if node_bytes is not None and node_bytes < 1:
        raise UserError(f"--node-bytes={node_bytes} must be >= 1 (bytes read per node)")


def _check_out(path, force, option="--out"):
    """A single-file output: refused if it exists (unless --force) or cannot be written
    (cosmos_common.outdir.check_new_file), before any work."""
    from cosmos_common.outdir import check_new_file

    check_new_file(path, force, option)


def _params(args):
    """The index parameters of the options, validated before anything is read or built."""
    from graphs.index import IndexParams

    params = IndexParams(num_clusters=args.num_clusters, M=args.M, ef_construction=args.ef_construction,
                         seed=args.seed, graph=args.graph, R=args.R, L=args.L, alpha=args.alpha)
    if params.graph != "hnsw":
        from graphs.vamana import validate_vamana

        validate_vamana(params.R, params.L, params.alpha)
    return params


def _index(args, ds):
    from graphs.index import get_index

    params = _params(args)
    params.validate(ds.n)
    t0 = time.perf_counter()
    idx, path = get_index(ds, params, args.cache_dir, threads=args.threads,
                            progress=_progress(args))
    return idx, path, time.perf_counter() - t0


def _trace_outputs_and_queries(args):
    """``trace``'s checks before any work: ``--out`` and ``--clusters-out`` may be written,
    and the dataset has queries; returns the dataset."""
    from cosmos_common import UserError

    _check_out(args.out, args.force, "--out")
    _check_out(args.clusters_out, args.force, "--clusters-out")
    ds = _load(args)
    if ds.queries is None or len(ds.queries) == 0:
        raise UserError(f"dataset {ds.name}: no queries (give --queries with --base, or "
                        f"--num-queries >= 1)")
    return ds


#: neighbours kept per query when ``trace`` computes the ground truth of the user's files (as
#: ``cosmos reproduce --dataset`` does: experiments.harness.workloads)
GROUNDTRUTH_K = 100


def _with_groundtruth(ds, args):
    """``ds`` with the exact top-k of its queries when the user's files (``--base``) come without
    ``--groundtruth`` (graphs.workload.cached_groundtruth: computed once, then read from the
    cache), so that the trace reports its recall; ``ds`` itself otherwise. Called after the
    options are checked against the data, before the index is built."""
    from graphs.workload import cached_groundtruth

    if args.base is None or ds.groundtruth is not None or args.no_groundtruth:
        return ds

    k = min(ds.n, max(GROUNDTRUTH_K, args.k))
    print(f"ground truth: the exact top-{k} of {len(ds.queries):,} queries over {ds.n:,} vectors "
          "(computed once, then cached; --no-groundtruth skips it)", flush=True)
    return ds.with_groundtruth(cached_groundtruth(ds, k, args.cache_dir, progress=_progress(args)))


def _build(args) -> int:
    from graphs.workload import export_clusters

    _check_options(args)
    _params(args)
    _check_out(args.clusters_out, args.force, "--clusters-out")
    ds = _load(args)
    idx, path, dt = _index(args, ds)
    sizes = idx.cluster_sizes
    deg = idx.degrees()
    print(f"dataset: {ds.name} n={ds.n} dim={ds.dim} dtype={ds.dtype} metric={ds.metric}")
    print(f"index: {path}")
    print(f"clusters: {idx.num_clusters} sizes min/mean/max {sizes.min()}/{sizes.mean():.1f}/{sizes.max()}")
    p = idx.params
    kind = (f"{p.graph} R={p.R} L={p.L} alpha={p.alpha}" if p.graph != "hnsw"
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

    from cosmos_common import UserError
    from graphs.search import check_search_params

    _check_options(args)
    if args.index != "graph":
        return _scan_trace(args)
    if args.rerank is not None:
        raise UserError("--rerank applies to --index ivfpq only")
    params = _params(args)
    check_entry(args.graph, args.entry)
    ds = _trace_outputs_and_queries(args)
    # check the search and index parameters against the data before building anything
    if args.k > ds.n:
        raise UserError(f"-k={args.k} must be <= {ds.n}, the number of base vectors of {ds.name}")
    check_search_params(ds.n, len(ds.queries), args.num_clusters, args.num_probes,
                        args.cand_list_len, args.k, args.entry)
    params.validate(ds.n)
    check_groundtruth_k(ds, args.k, None if args.groundtruth is None else f"--groundtruth {args.groundtruth}")
    ds = _with_groundtruth(ds, args)
    idx, path, _ = _index(args, ds)
    validate_search(idx, ds.queries, args.num_probes, args.cand_list_len, args.k, args.entry)
    t0 = time.perf_counter()
    tr = trace_index(idx, ds, args.num_probes, args.cand_list_len, args.k, args.entry,
                     progress=_progress(args))
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


def _scan_trace(args) -> int:
    """``cosmos graphs trace --index ivfpq|exact``: scan the probed lists, write the trace."""
    import numpy as np

    from cosmos_common import UserError
    from graphs.ivfpq import check_scan_params, scan_trace
    from graphs.trace import save_clusters, save_trace
    from graphs.workload import check_groundtruth_k

    rerank = (100 if args.rerank is None else args.rerank) if args.index == "ivfpq" else 0
    if args.index == "exact" and args.rerank:
        raise UserError("--rerank applies to --index ivfpq only (an exact scan reads full vectors)")
    if args.rerank is not None and args.rerank < 0 or 0 < rerank < args.k:
        raise UserError(f"--rerank={rerank} must be 0 (no re-ranking) or at least -k ({args.k}): "
                        "the re-ranked candidates hold the k returned")
    if args.index == "ivfpq" and args.pq_m < 1:
        raise UserError(f"--pq-m={args.pq_m} must be >= 1 (sub-spaces; code bytes)")
    ds = _trace_outputs_and_queries(args)
    if args.index == "ivfpq" and ds.dim % args.pq_m:
        raise UserError(f"--pq-m={args.pq_m} must divide the dimension {ds.dim} of {ds.name}")
    if not 1 <= args.num_clusters <= ds.n:
        raise UserError(f"--num-clusters={args.num_clusters} must be in 1..{ds.n} (base vectors of {ds.name})")
    check_scan_params(args.index, ds.n, ds.dim, args.num_clusters, args.num_probes, args.k, args.pq_m, rerank)
    check_groundtruth_k(ds, args.k, None if args.groundtruth is None else f"--groundtruth {args.groundtruth}")
    ds = _with_groundtruth(ds, args)
    t0 = time.perf_counter()
    tr = scan_trace(ds, args.index, args.num_clusters, args.num_probes, args.k, args.pq_m, rerank,
                    args.seed, cache_dir=args.cache_dir)
    dt = time.perf_counter() - t0
    save_trace(args.out, tr, overwrite=args.force)
    if args.clusters_out is not None:
        save_clusters(args.clusters_out, np.diff(tr.cluster_ptr), tr.centroids, tr.cluster_adjacency,
                      overwrite=args.force)
    pq = tr.per_query()
    if args.per_query:
        print("query searches codes rerank_reads bytes recall")
        rec = pq.get("recall", np.full(tr.num_queries, np.nan))
        for i in range(tr.num_queries):
            print(f"{i} {pq['searches'][i]} {pq['codes'][i]} {pq['rerank_reads'][i]} {pq['bytes'][i]} {rec[i]:.3f}")
    extra = f" pq_m={args.pq_m} code_bytes={tr.meta['code_bytes']} rerank={rerank}" if args.index == "ivfpq" else ""
    print(f"dataset: {ds.name} n={ds.n} queries={tr.num_queries} index={args.index} lists={args.num_clusters} "
          f"num_probes={args.num_probes} k={args.k}{extra}")
    print("per query      mean        p50        p99        max")
    for key in ("codes", "rerank_reads", "bytes"):
        v = pq[key].astype(np.float64)
        print(f"{key:<12} {v.mean():>9.1f} {np.percentile(v, 50):>10.1f} {np.percentile(v, 99):>10.1f} "
              f"{v.max():>10.1f}")
    print(f"trace_s: {dt:.2f} ({tr.num_queries / max(dt, 1e-9):.0f} queries/s)")
    print(f"trace: {args.out}")
    rec = tr.meta["recall"]
    print(f"recall@{args.k}: {rec:.4f}" if rec is not None else f"recall@{args.k}: n/a (no ground truth)")
    return 0


def _main(argv: list[str] | None = None) -> int:
    """``python -m graphs.cli build|trace ...``: the same subcommands without the cosmos
    package (graphs never imports it); bad input is one line and exit status 2."""
    import sys

    parser = argparse.ArgumentParser(prog="python -m graphs.cli")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["graphs", *(sys.argv[1:] if argv is None else argv)])
    try:
        return int(args.func(args) or 0)
    except (ValueError, OSError) as exc:
        print(f"graphs: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("graphs: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(_main())
