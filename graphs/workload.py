"""End-to-end API: dataset -> cached clustered index -> cached logical trace.

>>> from graphs import make_workload
>>> trace = make_workload("sift", n=100_000, num_queries=1000)   # doctest: +SKIP
>>> trace.meta["recall"], trace.per_query()["hops"].mean()        # doctest: +SKIP

Defaults and why (docs/graphs.md has the details):

- ``num_clusters=64``: 16 clusters per device on the paper's 4 CXL devices, enough freedom for
  placement; ``num_probes=8`` probes 1/8 of the data (IVF-style routing).
- ``M=32`` -> level-0 max degree 64 = DiskANN's R=64 (Subramanya et al., NeurIPS 2019); with
  ~40 unvisited neighbors per hop this gives the ~40 distance computations per node read of the
  big-ann-benchmarks NeurIPS'21 DiskANN run (2,268 / 56; docs/design.md).
- ``ef_construction=100`` = DiskANN's build list size L=100.
- ``cand_list_len=64``, ``k=10``: recall@10 target of the issue; L within DiskANN's usual
  search range (L >= k, 50-100 for recall@10 ~ 0.9-0.95).
- ``entry="medoid"``: DiskANN's fixed entry point, level-0 graph only.
- ``graph="hnsw"``: hnswlib level-0 graphs; ``graph="vamana"`` builds DiskANN's Vamana graphs
  (:mod:`graphs.vamana`) with DiskANN's defaults ``R=64, L=100, alpha=1.2``.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from dataclasses import asdict
from pathlib import Path

import numpy as np

from .dataset import Dataset, real_dataset
from .groundtruth import exact_knn, recall_at_k
from .index import ClusteredIndex, IndexParams, default_cache_dir, get_index, index_key
from .io import atomic_write_bytes
from .search import search, validate_search
from .synthetic import SPECS, generate
from .trace import TRACE_FORMAT_VERSION, LogicalTrace, load_trace, save_clusters, save_trace

__all__ = ["make_workload", "get_dataset", "trace_index", "export_clusters", "check_groundtruth_k", "DEFAULTS"]

DEFAULTS = dict(
    num_clusters=64, num_probes=8, cand_list_len=64, k=10, M=32, ef_construction=100, seed=0, entry="medoid",
    graph="hnsw", R=64, L=100, alpha=1.2,
)
REAL_SETS = ("siftsmall", "bigann10k")


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)[:60]


def get_dataset(
    dataset: str | Dataset,
    n: int | None = None,
    num_queries: int | None = None,
    seed: int = 0,
    cache_dir: str | os.PathLike | None = None,
    gt_k: int = 100,
    progress: bool = False,
) -> Dataset:
    """A :class:`Dataset` by synthetic family name (``sift``, ``deep``, ``text2image``,
    ``msspacev``), real set name (``siftsmall``, ``bigann10k``) or as given, cut to ``n`` base
    vectors and ``num_queries`` queries.

    Synthetic sets default to n=100,000 and 1,000 queries; their exact ground truth is cached
    under ``cache_dir/groundtruth`` (verified by a key of the data's fingerprint).
    """
    if isinstance(dataset, Dataset):
        ds = dataset
        if n is not None or num_queries is not None:
            ds = ds.subset(n, num_queries)
        return ds
    if dataset in REAL_SETS:
        return real_dataset(dataset).subset(n, num_queries)
    if dataset not in SPECS:
        raise ValueError(
            f"dataset '{dataset}' unknown; expected a synthetic family ({', '.join(SPECS)}), "
            f"a real set ({', '.join(REAL_SETS)}) or a Dataset"
        )
    n = 100_000 if n is None else int(n)
    num_queries = 1000 if num_queries is None else int(num_queries)
    if n < 1 or num_queries < 0:
        raise ValueError(f"n={n} must be >= 1 and num_queries={num_queries} >= 0")
    spec = SPECS[dataset]
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    ds = _synthetic_cached(spec, n, num_queries, seed, cache)
    base, queries = ds.base, ds.queries
    if num_queries == 0:
        return ds
    gt = cached_groundtruth(ds, min(gt_k, n), cache, progress=progress)
    return Dataset(name=ds.name, base=base, queries=queries, groundtruth=gt, metric=spec.metric,
                   _fp={"fp": ds.fingerprint()})


def cached_groundtruth(ds: Dataset, k: int, cache_dir: str | os.PathLike | None = None,
                       progress: bool = False) -> np.ndarray:
    """Exact top-``k`` ids of ``ds``'s queries under its metric, computed once and cached under
    ``cache_dir/groundtruth`` by the dataset's fingerprint. (Q, k) int64."""
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    nq = len(ds.queries)
    path = cache / "groundtruth" / f"{_safe(ds.name)}-{ds.fingerprint()[:16]}-k{k}.npz"
    if path.exists():
        try:
            with np.load(path, allow_pickle=False) as z:
                if str(z["fingerprint"]) == ds.fingerprint() and z["ids"].shape == (nq, k):
                    return z["ids"].astype(np.int64)
        except Exception as exc:  # damaged cache file: recompute
            warnings.warn(f"{path}: unreadable ground truth cache ({exc}); recomputing", stacklevel=2)
    gt, _ = exact_knn(ds.base, ds.queries, k, ds.metric, progress=progress)
    gt = np.asarray(gt, dtype=np.int64)
    atomic_write_bytes(
        path, lambda f: np.savez(f, ids=gt, fingerprint=np.array(ds.fingerprint())), overwrite=True
    )
    return gt


def _synthetic_cached(spec, n: int, num_queries: int, seed: int, cache: Path) -> Dataset:
    """Synthetic base and queries, memory-mapped from ``cache/datasets`` (generated once).

    The files are verified against the fingerprint stored beside them; a damaged or partial
    file is regenerated with a warning.
    """
    from .io import read_vectors, write_vectors
    from .synthetic import GENERATOR_VERSION

    name = f"{spec.name}-n{n}-q{num_queries}-s{seed}"
    ext = {"uint8": "u8bin", "int8": "i8bin", "float32": "fbin"}[spec.dtype]
    stem = cache / "datasets" / f"{name}-g{GENERATOR_VERSION}"
    bpath, qpath, mpath = Path(f"{stem}-base.{ext}"), Path(f"{stem}-query.{ext}"), Path(f"{stem}.json")
    if bpath.exists() and qpath.exists() and mpath.exists():
        try:
            fp = json.loads(mpath.read_text())["fingerprint"]
            ds = Dataset(name=name, base=read_vectors(bpath), queries=read_vectors(qpath), metric=spec.metric)
            if ds.fingerprint() == fp and ds.n == n and len(ds.queries) == num_queries:
                return ds
            warnings.warn(f"{stem}: cached synthetic vectors do not match their fingerprint; regenerating",
                          stacklevel=3)
        except (ValueError, KeyError, OSError) as exc:
            warnings.warn(f"{stem}: unreadable cached synthetic vectors ({exc}); regenerating", stacklevel=3)
    base = generate(spec, n, seed)
    queries = generate(spec, num_queries, seed, queries=True)
    ds = Dataset(name=name, base=base, queries=queries, metric=spec.metric)
    write_vectors(bpath, base, ext, overwrite=True)
    write_vectors(qpath, queries, ext, overwrite=True)
    meta = json.dumps({"fingerprint": ds.fingerprint(), "generator_version": GENERATOR_VERSION})
    atomic_write_bytes(mpath, lambda f: f.write(meta.encode()), overwrite=True)
    return ds


def trace_index(
    index: ClusteredIndex,
    dataset: Dataset,
    num_probes: int = 8,
    cand_list_len: int = 64,
    k: int = 10,
    entry: str = "medoid",
    progress: bool = True,
) -> LogicalTrace:
    """Search every query of ``dataset`` on ``index`` and return the logical trace."""
    if dataset.queries is None:
        raise ValueError(f"dataset {dataset.name}: no queries to trace")
    check_groundtruth_k(dataset, k)
    check_entry(index.params.graph, entry)
    out = search(index, dataset.base, dataset.queries, num_probes, cand_list_len, k, entry, progress=progress)
    if dataset.groundtruth is not None:
        qr64 = recall_at_k(out.result_ids, dataset.groundtruth[: len(dataset.queries)], k)
        recall = float(np.mean(qr64)) if len(qr64) else None
        qr = qr64.astype(np.float32)
    else:
        qr = np.full(len(dataset.queries), np.nan, dtype=np.float32)
        recall = None
    p = index.params
    meta = {
        "dataset": dataset.name,
        "n": dataset.n,
        "dim": dataset.dim,
        "dtype": dataset.dtype,
        "metric": dataset.metric,
        "vector_bytes": dataset.vector_bytes,
        "max_degree": p.max_degree,
        "cand_list_len": int(cand_list_len),
        "num_clusters": index.num_clusters,
        "num_probes": int(num_probes),
        "k": int(k),
        "recall": recall,
        "seed": p.seed,
        "num_queries": len(dataset.queries),
        "format_version": TRACE_FORMAT_VERSION,
        # added keys
        "M": p.M,
        "ef_construction": p.ef_construction,
        "graph": p.graph,
        "R": p.R,
        "L": p.L,
        "alpha": p.alpha,
        "entry": entry,
        "max_degree_observed": int(index.degrees().max(initial=0)),
        "mean_degree": float(index.degrees().mean()),
        "dataset_fingerprint": dataset.fingerprint(),
    }
    return LogicalTrace(
        meta=meta,
        cluster_ptr=index.cluster_ptr,
        cluster_nodes=index.cluster_nodes,
        centroids=index.centroids,
        cluster_adjacency=index.cluster_adjacency(),
        query_ptr=out.query_ptr,
        search_cluster=out.search_cluster,
        search_entry=out.search_entry,
        search_hop_ptr=out.search_hop_ptr,
        hop_node=out.hop_node,
        hop_degree=out.hop_degree,
        hop_read_ptr=out.hop_read_ptr,
        read_node=out.read_node,
        hop_cand_inserts=out.hop_cand_inserts,
        result_ids=out.result_ids,
        query_recall=qr,
    )


def check_groundtruth_k(dataset: Dataset, k: int, source: str | None = None) -> None:
    """Raise ValueError if ``dataset``'s ground truth has fewer than ``k`` neighbors per query
    (recall@k could not be computed). ``source`` names the ground-truth file in the message."""
    g = dataset.groundtruth
    if g is not None and g.shape[1] < k:
        what = source or f"dataset {dataset.name}"
        raise ValueError(f"{what}: the ground truth has {g.shape[1]} neighbors per query, but "
                         f"k={k} needs at least {k}")


def check_entry(graph: str, entry: str) -> None:
    """Raise UserError if ``entry`` cannot be used on ``graph`` graphs (the hierarchical entry
    needs hnswlib's upper layers, which a Vamana graph does not have)."""
    if graph == "vamana" and entry == "hnsw":
        from cosmos_common import UserError

        raise UserError("entry 'hnsw' needs graph 'hnsw' (a Vamana graph has no upper layers); "
                        "use entry 'medoid', DiskANN's entry point")


def _fill_recall(tr: LogicalTrace, ds: Dataset, k: int) -> LogicalTrace:
    """Set the recall of a trace made without ground truth from its result ids."""
    qr = recall_at_k(tr.result_ids, ds.groundtruth[: len(tr.result_ids)], k)
    tr.meta["recall"] = float(np.mean(qr)) if len(qr) else None
    tr.query_recall = np.asarray(qr, dtype=np.float32)
    return tr


def export_clusters(path: str | os.PathLike, index: ClusteredIndex, overwrite: bool = False) -> Path:
    """Write ``clusters.npz`` (contract section 2; sizes in vectors) for ``cosmos place``."""
    return save_clusters(path, index.cluster_sizes, index.centroids, index.cluster_adjacency(), overwrite=overwrite)


def _cached_trace(ds: Dataset, params: IndexParams, spar: dict, cache: Path, warn: bool):
    """(the cached trace of ``ds`` with index ``params`` and search ``spar``, or None; its path).

    The key leaves out the ground truth: the trace depends on it only through its recall."""
    key = hashlib.blake2b(
        json.dumps({"v": TRACE_FORMAT_VERSION, "index": index_key(ds, params), "s": spar}, sort_keys=True).encode(),
        digest_size=8,
    ).hexdigest()
    path = cache / "traces" / f"{_safe(ds.name)}-{key}.npz"
    if not path.exists():
        return None, path
    expect = {
        **spar, "dataset_fingerprint": ds.fingerprint(), "M": params.M,
        "ef_construction": params.ef_construction, "seed": params.seed,
        "num_clusters": params.num_clusters, "n": ds.n, "num_queries": len(ds.queries),
    }
    try:
        tr = load_trace(path)
    except ValueError as exc:
        if warn:
            warnings.warn(f"recomputing the trace: {exc}", stacklevel=3)
        return None, path
    if params.graph != "hnsw":
        expect.update(graph=params.graph, R=params.R, L=params.L, alpha=params.alpha)
    bad = {a: tr.meta.get(a) for a, b in expect.items() if tr.meta.get(a) != b}
    if tr.meta.get("graph", "hnsw") != params.graph:  # traces without the key are hnsw traces
        bad["graph"] = tr.meta.get("graph", "hnsw")
    if bad:
        if warn:
            warnings.warn(f"{path}: stale trace cache ({bad} differ); recomputing", stacklevel=3)
        return None, path
    return tr, path


def cached_trace(
    dataset: Dataset,
    num_clusters: int = DEFAULTS["num_clusters"],
    num_probes: int = DEFAULTS["num_probes"],
    cand_list_len: int = DEFAULTS["cand_list_len"],
    k: int = DEFAULTS["k"],
    seed: int = DEFAULTS["seed"],
    cache_dir: str | os.PathLike | None = None,
    M: int = DEFAULTS["M"],
    ef_construction: int = DEFAULTS["ef_construction"],
    entry: str = DEFAULTS["entry"],
    graph: str = DEFAULTS["graph"],
    R: int = DEFAULTS["R"],
    L: int = DEFAULTS["L"],
    alpha: float = DEFAULTS["alpha"],
) -> LogicalTrace | None:
    """The trace :func:`make_workload` has cached for these arguments, or None; computes
    nothing (e.g. to skip a ground truth that only a new trace would need). A cached trace
    without recall (made without ground truth) is not returned: :func:`make_workload` with the
    ground truth fills it in."""
    params = IndexParams(num_clusters=num_clusters, M=M, ef_construction=ef_construction, seed=seed,
                         graph=graph, R=R, L=L, alpha=alpha)
    spar = {"num_probes": num_probes, "cand_list_len": cand_list_len, "k": k, "entry": entry}
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    tr = _cached_trace(dataset, params, spar, cache, warn=False)[0]
    return None if tr is None or tr.meta.get("recall") is None else tr


def make_workload(
    dataset: str | Dataset,
    n: int | None = None,
    num_queries: int | None = None,
    num_clusters: int = DEFAULTS["num_clusters"],
    num_probes: int = DEFAULTS["num_probes"],
    cand_list_len: int = DEFAULTS["cand_list_len"],
    k: int = DEFAULTS["k"],
    seed: int = DEFAULTS["seed"],
    cache_dir: str | os.PathLike | None = None,
    M: int = DEFAULTS["M"],
    ef_construction: int = DEFAULTS["ef_construction"],
    entry: str = DEFAULTS["entry"],
    threads: int | None = None,
    progress: bool = True,
    graph: str = DEFAULTS["graph"],
    R: int = DEFAULTS["R"],
    L: int = DEFAULTS["L"],
    alpha: float = DEFAULTS["alpha"],
) -> LogicalTrace:
    """Dataset -> clustered index -> logical trace, each cached under ``cache_dir``.

    Parameters
    ----------
    dataset : str or Dataset
        Synthetic family (``sift``, ``deep``, ``text2image``, ``msspacev``), real set
        (``siftsmall``, ``bigann10k``) or a :class:`Dataset`.
    n, num_queries : int, optional
        Base vectors and queries (defaults: all of a given set; 100,000 / 1,000 for synthetic).
    num_clusters, M, ef_construction, seed, graph, R, L, alpha :
        Index parameters (:class:`graphs.index.IndexParams`); ``num_clusters=1`` = single graph;
        ``graph`` ``"hnsw"`` (M, ef_construction) or ``"vamana"`` (R, L, alpha).
    num_probes, cand_list_len, k, entry :
        Search parameters (:func:`graphs.search.search`).
    cache_dir : path, optional
        Defaults to ``$COSMOS_CACHE`` or ``~/.cache/cosmos``.

    Returns
    -------
    LogicalTrace
        Identical (bit for bit) for identical arguments.
    """
    ds = get_dataset(dataset, n, num_queries, seed, cache_dir, progress=progress)
    params = IndexParams(num_clusters=num_clusters, M=M, ef_construction=ef_construction, seed=seed,
                         graph=graph, R=R, L=L, alpha=alpha)
    params.validate(ds.n)
    if ds.queries is None:
        raise ValueError(f"dataset {ds.name}: no queries")
    # validate the search parameters before any expensive build
    if not 1 <= num_probes <= num_clusters:
        raise ValueError(f"num_probes={num_probes} must be in 1..num_clusters={num_clusters}")
    if not 1 <= k <= cand_list_len:
        raise ValueError(f"k={k} must be in 1..cand_list_len={cand_list_len}")
    check_groundtruth_k(ds, k)
    check_entry(graph, entry)
    if threads is not None and threads < 1:
        raise ValueError(f"threads={threads} must be >= 1 (None: the CPU count)")
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    spar = {"num_probes": num_probes, "cand_list_len": cand_list_len, "k": k, "entry": entry}
    tr, path = _cached_trace(ds, params, spar, cache, warn=True)
    if tr is not None:
        if tr.meta.get("recall") is None and ds.groundtruth is not None and len(ds.queries):
            # cached before the ground truth was known: add the recall, keep the search
            tr = _fill_recall(tr, ds, k)
            save_trace(path, tr, overwrite=True)
        return tr
    index, _ = get_index(ds, params, cache, threads=threads, progress=progress)
    validate_search(index, ds.queries, num_probes, cand_list_len, k, entry)
    tr = trace_index(index, ds, num_probes, cand_list_len, k, entry, progress=progress)
    save_trace(path, tr, overwrite=True)
    return tr
