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

import contextlib
import hashlib
import json
import os
from pathlib import Path

import numpy as np

from cosmos_common import UserError, cacheio
from cosmos_common.npz import npz_array

from .dataset import Dataset, real_dataset
from .groundtruth import exact_knn, recall_at_k
from .index import ClusteredIndex, IndexParams, default_cache_dir, get_index, index_key
from .io import atomic_write_bytes
from .search import check_search_params, iter_search_prefixes, probe_counts, validate_search
from .synthetic import SPECS, generate
from .trace import TRACE_FORMAT_VERSION, LogicalTrace, load_trace, save_clusters, save_trace

__all__ = ["make_workload", "make_workloads", "get_dataset", "trace_index", "trace_indexes",
           "cached_trace", "cached_traces", "export_clusters", "check_groundtruth_k",
           "kept_counts", "DEFAULTS"]

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

    Synthetic sets default to n=100,000 and 1,000 queries; their vectors are cached under
    ``cache_dir/datasets`` and their exact ground truth under ``cache_dir/groundtruth``, both
    verified by checksums at every read (:mod:`cosmos_common.cacheio`).
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
    ``cache_dir/groundtruth`` by the dataset's fingerprint. (Q, k) int64.

    The entry (kind ``groundtruth`` of :mod:`cosmos_common.cacheio`: the ``.npz`` and its
    record) answers the key of the fingerprint, ``k`` and the number of queries; a file that
    does not verify (changed bytes, even a valid ``.npz`` rewritten with other ids) is
    reported in one warning line and computed again."""
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    nq = len(ds.queries)
    path = cache / "groundtruth" / f"{_safe(ds.name)}-{ds.fingerprint()[:16]}-k{k}.npz"
    record = cacheio.record_path(path.parent, path.stem)
    key = cacheio.key_of({"kind": "groundtruth", "fp": ds.fingerprint(), "k": int(k),
                          "num_queries": nq, "metric": ds.metric})
    if cacheio.read_files(record, "groundtruth", key, [path]) is not None:
        try:
            with np.load(path, allow_pickle=False) as z:
                ids = z["ids"]
            if ids.shape != (nq, k) or ids.dtype.kind not in "iu":
                raise ValueError(f"ids of shape {ids.shape} and type {ids.dtype}, expected "
                                 f"({nq}, {k}) integers")
            return ids.astype(np.int64)
        except Exception as exc:  # noqa: BLE001 -- a verified file that does not load: recompute
            cacheio.report(path, f"does not load ({type(exc).__name__}: {exc})")
    gt, _ = exact_knn(ds.base, ds.queries, k, ds.metric, progress=progress)
    gt = np.asarray(gt, dtype=np.int64)
    cacheio.store_files(record, "groundtruth", key, {path: lambda p: atomic_write_bytes(
        p, lambda f: np.savez(f, ids=gt, fingerprint=np.array(ds.fingerprint())), overwrite=True)})
    return gt


def _synthetic_cached(spec, n: int, num_queries: int, seed: int, cache: Path) -> Dataset:
    """Synthetic base and queries, memory-mapped from ``cache/datasets`` (generated once).

    The two vector files are one entry of kind ``datasets`` (:mod:`cosmos_common.cacheio`)
    whose record also holds the data's fingerprint, trusted once the files verify; a damaged,
    partial or unrecorded file is reported in one warning line and regenerated.
    """
    from .io import read_vectors, write_vectors
    from .synthetic import GENERATOR_VERSION

    name = f"{spec.name}-n{n}-q{num_queries}-s{seed}"
    ext = {"uint8": "u8bin", "int8": "i8bin", "float32": "fbin"}[spec.dtype]
    stem = cache / "datasets" / f"{name}-g{GENERATOR_VERSION}"
    bpath, qpath = Path(f"{stem}-base.{ext}"), Path(f"{stem}-query.{ext}")
    record = cacheio.record_path(stem.parent, stem.name)
    key = cacheio.key_of({"kind": "dataset", "family": spec.name, "dtype": spec.dtype, "n": n,
                          "num_queries": num_queries, "seed": seed,
                          "generator_version": GENERATOR_VERSION})
    meta = cacheio.read_files(record, "datasets", key, [bpath, qpath])
    if meta is not None:
        try:
            fp = meta.get("fingerprint")
            if not isinstance(fp, str):
                raise ValueError("its record has no fingerprint")
            base, queries = read_vectors(bpath), read_vectors(qpath)
            if base.shape[0] != n or queries.shape[0] != num_queries:
                raise ValueError(f"{base.shape[0]} base vectors and {queries.shape[0]} queries, "
                                 f"expected {n} and {num_queries}")
            return Dataset(name=name, base=base, queries=queries, metric=spec.metric,
                           _fp={"fp": fp})
        except (ValueError, OSError) as exc:
            cacheio.report(record, f"does not load ({exc})", "regenerating")
    base = generate(spec, n, seed)
    queries = generate(spec, num_queries, seed, queries=True)
    ds = Dataset(name=name, base=base, queries=queries, metric=spec.metric)
    legacy = Path(f"{stem}.json")       # the fingerprint file of the layout before records
    if legacy.exists():
        legacy.unlink()
    cacheio.store_files(record, "datasets", key, {
        bpath: lambda p: write_vectors(p, base, ext, overwrite=True),
        qpath: lambda p: write_vectors(p, queries, ext, overwrite=True),
    }, meta={"fingerprint": ds.fingerprint(), "generator_version": GENERATOR_VERSION})
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
    """Search every query of ``dataset`` on ``index`` and return the logical trace.

    Refuses (UserError) a dataset without queries and the parameters
    :func:`graphs.search.check_search_params` rejects, before any search.
    :func:`trace_indexes` with the one probe count ``num_probes``."""
    return trace_indexes(index, dataset, (num_probes,), cand_list_len, k, entry,
                         progress)[int(num_probes)]


def trace_indexes(
    index: ClusteredIndex,
    dataset: Dataset,
    probes=(DEFAULTS["num_probes"],),
    cand_list_len: int = 64,
    k: int = 10,
    entry: str = "medoid",
    progress: bool = True,
) -> dict[int, LogicalTrace]:
    """The logical trace of every query of ``dataset`` on ``index`` at every probe count of
    ``probes``, from one traced search at the largest (:func:`graphs.search.search_prefixes`).

    ``{p: trace}`` for the distinct counts, in increasing order; each trace is identical to
    :func:`trace_index` at ``p`` probes (meta ``num_probes`` = ``p``, recall from the
    dataset's ground truth). Refuses (UserError) a dataset without queries, ``probes`` empty or
    not integers and the parameters :func:`graphs.search.check_search_params` rejects, before
    any search."""
    return dict(_iter_traces(index, dataset, probes, cand_list_len, k, entry, progress))


def _iter_traces(index: ClusteredIndex, dataset: Dataset, probes, cand_list_len: int, k: int,
                 entry: str, progress: bool):
    """Check the request, then return an iterator of ``(p, LogicalTrace)`` of
    :func:`trace_indexes`, smallest ``p`` first (:func:`graphs.search.iter_search_prefixes`:
    one search; a caller that drops each trace after use holds at most two at a time)."""
    if dataset.queries is None or len(dataset.queries) == 0:
        raise UserError(f"dataset {dataset.name}: no queries to trace (at least 1 needed)")
    counts = probe_counts(probes)
    for p in counts:
        check_search_params(dataset.n, len(dataset.queries), index.num_clusters, p,
                            cand_list_len, k, entry)
    check_groundtruth_k(dataset, k)
    check_entry(index.params.graph, entry)
    outs = iter_search_prefixes(index, dataset.base, dataset.queries, counts, cand_list_len, k,
                                entry, progress=progress)
    return _traces_of(index, dataset, outs, cand_list_len, k, entry)


def _traces_of(index: ClusteredIndex, dataset: Dataset, outs, cand_list_len: int, k: int,
               entry: str):
    adjacency = index.cluster_adjacency()
    degrees = index.degrees()
    p = index.params
    for num_probes, out in outs:
        if dataset.groundtruth is not None:
            qr64 = recall_at_k(out.result_ids, dataset.groundtruth[: len(dataset.queries)], k)
            recall = float(np.mean(qr64)) if len(qr64) else None
            qr = qr64.astype(np.float32)
        else:
            qr = np.full(len(dataset.queries), np.nan, dtype=np.float32)
            recall = None
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
            "max_degree_observed": int(degrees.max(initial=0)),
            "mean_degree": float(degrees.mean()),
            "dataset_fingerprint": dataset.fingerprint(),
        }
        yield num_probes, LogicalTrace(
            meta=meta,
            cluster_ptr=index.cluster_ptr,
            cluster_nodes=index.cluster_nodes,
            centroids=index.centroids,
            cluster_adjacency=adjacency,
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
        del out


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
    if graph != "hnsw" and entry == "hnsw":
        from cosmos_common import UserError

        raise UserError(f"entry 'hnsw' needs graph 'hnsw' (a {graph} graph has no upper layers); "
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


def _trace_entry(ds: Dataset, params: IndexParams, spar: dict, cache: Path):
    """(path, record, key) of the cache entry of ``ds``'s trace with ``params`` and ``spar``.

    The key leaves out the ground truth: the trace depends on it only through its recall."""
    request = {"v": TRACE_FORMAT_VERSION, "index": index_key(ds, params), "s": spar}
    short = hashlib.blake2b(json.dumps(request, sort_keys=True).encode(), digest_size=8).hexdigest()
    path = cache / "traces" / f"{_safe(ds.name)}-{short}.npz"
    key = cacheio.key_of({"kind": "trace", "fp": ds.fingerprint(), "params": params.key_dict(),
                          **request})
    return path, cacheio.record_path(path.parent, path.stem), key


def _store_trace(path: Path, record: Path, key: str, tr: LogicalTrace) -> None:
    cacheio.store_files(record, "traces", key, {path: lambda p: save_trace(p, tr, overwrite=True)})


def _cached_trace(ds: Dataset, params: IndexParams, spar: dict, cache: Path, warn: bool,
                  arrays: bool = True):
    """(the cached trace of ``ds`` with index ``params`` and search ``spar``, or None; its path).

    The entry (kind ``traces`` of :mod:`cosmos_common.cacheio`) is verified by its record's
    SHA-256, then its meta is compared with the request. With ``warn`` False nothing is
    reported (a caller that only peeks; :func:`make_workload` reads it again and reports).
    With ``arrays`` False only the file's meta is read and returned in place of the trace
    (the entry is verified all the same)."""
    path, record, key = _trace_entry(ds, params, spar, cache)
    expect = {
        **spar, "dataset_fingerprint": ds.fingerprint(), "M": params.M,
        "ef_construction": params.ef_construction, "seed": params.seed,
        "num_clusters": params.num_clusters, "n": ds.n, "num_queries": len(ds.queries),
    }
    if params.graph != "hnsw":
        expect.update(graph=params.graph, R=params.R, L=params.L, alpha=params.alpha)
    with (contextlib.nullcontext() if warn else cacheio.quiet()):
        if cacheio.read_files(record, "traces", key, [path]) is None:
            return None, path
        try:
            if arrays:
                tr = load_trace(path, verify=False)     # the whole file was verified just now
                meta = tr.meta
            else:
                tr = meta = _trace_meta(path)
        except ValueError as exc:
            cacheio.report(path, f"does not load ({exc})", stacklevel=4)
            return None, path
        bad = {a: meta.get(a) for a, b in expect.items() if meta.get(a) != b}
        if meta.get("graph", "hnsw") != params.graph:  # traces without the key are hnsw traces
            bad["graph"] = meta.get("graph", "hnsw")
        if bad:
            cacheio.report(path, f"stale trace ({bad} differ)", stacklevel=4)
            return None, path
    return tr, path


def _trace_meta(path: Path) -> dict:
    """The meta of the trace file ``path`` without reading its arrays (ValueError naming the
    file if it has none or another format version)."""
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(npz_array(z, "meta", path)))
    except ValueError:
        raise
    except Exception as exc:
        raise ValueError(f"{path}: not a readable trace file ({type(exc).__name__}: {exc})") from exc
    if not isinstance(meta, dict) or meta.get("format_version") != TRACE_FORMAT_VERSION:
        version = meta.get("format_version") if isinstance(meta, dict) else None
        raise ValueError(f"{path}: trace format_version {version}, expected {TRACE_FORMAT_VERSION}")
    meta.pop("checksums", None)
    return meta


def _search_params(num_probes: int, cand_list_len: int, k: int, entry: str) -> dict:
    """The search part of a trace's cache key (:func:`_trace_entry`)."""
    return {"num_probes": num_probes, "cand_list_len": cand_list_len, "k": k, "entry": entry}


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
    ground truth fills it in. :func:`cached_traces` with the one probe count ``num_probes``."""
    got = cached_traces(dataset, num_clusters, (num_probes,), cand_list_len, k, seed, cache_dir,
                        M, ef_construction, entry, graph, R, L, alpha)
    return None if got is None else got[int(num_probes)]


def cached_traces(
    dataset: Dataset,
    num_clusters: int = DEFAULTS["num_clusters"],
    probes=(DEFAULTS["num_probes"],),
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
    keep=None,
) -> dict[int, LogicalTrace] | None:
    """The traces :func:`make_workloads` has cached for these arguments at every probe count of
    ``probes``, or None if any of them is missing; computes nothing.

    Returns ``{p: trace}`` for the counts of ``keep`` (default: all of ``probes``); the entries
    of the other counts are verified (record, checksum, meta) without reading their arrays. A
    cached trace without recall (made without ground truth) counts as missing, as for
    :func:`cached_trace`. UserError if ``probes`` or ``keep`` is empty or not integers, or
    ``keep`` names a count not in ``probes``."""
    counts = probe_counts(probes)
    kept = kept_counts(counts, keep)
    params = IndexParams(num_clusters=num_clusters, M=M, ef_construction=ef_construction, seed=seed,
                         graph=graph, R=R, L=L, alpha=alpha)
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    out = {}
    for p in counts:
        spar = _search_params(p, cand_list_len, k, entry)
        got = _cached_trace(dataset, params, spar, cache, warn=False, arrays=p in kept)[0]
        meta = None if got is None else got if isinstance(got, dict) else got.meta
        if meta is None or meta.get("recall") is None:
            return None
        if p in kept:
            out[p] = got
    return out


def kept_counts(counts: list[int], keep) -> list[int]:
    """``keep`` checked against ``counts`` (sorted distinct ints; None = all of them)."""
    if keep is None:
        return counts
    kept = probe_counts(keep, "keep", allow_empty=True)
    extra = sorted(set(kept) - set(counts))
    if extra:
        raise UserError(f"keep: probe counts {extra} are not among probes={counts}")
    return kept


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

    :func:`make_workloads` with the one probe count ``num_probes``.

    Parameters
    ----------
    dataset : str or Dataset
        Synthetic family (``sift``, ``deep``, ``text2image``, ``msspacev``), real set
        (``siftsmall``, ``bigann10k``) or a :class:`Dataset`.
    n, num_queries : int, optional
        Base vectors and queries (defaults: all of a given set; 100,000 / 1,000 for synthetic).
    num_clusters, M, ef_construction, seed, graph, R, L, alpha :
        Index parameters (:class:`graphs.index.IndexParams`); ``num_clusters=1`` = single graph;
        ``graph`` ``"hnsw"`` (M, ef_construction), ``"vamana"`` or ``"vamana-paper"`` (R, L, alpha).
    num_probes, cand_list_len, k, entry :
        Search parameters (:func:`graphs.search.search`).
    cache_dir : path, optional
        Defaults to ``$COSMOS_CACHE`` or ``~/.cache/cosmos``.

    Returns
    -------
    LogicalTrace
        Identical (bit for bit) for identical arguments.
    """
    return make_workloads(dataset, n, num_queries, num_clusters, (num_probes,), cand_list_len, k,
                          seed, cache_dir, M, ef_construction, entry, threads, progress, graph, R,
                          L, alpha)[int(num_probes)]


def make_workloads(
    dataset: str | Dataset,
    n: int | None = None,
    num_queries: int | None = None,
    num_clusters: int = DEFAULTS["num_clusters"],
    probes=(DEFAULTS["num_probes"],),
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
    keep=None,
) -> dict[int, LogicalTrace]:
    """:func:`make_workload` at every probe count of ``probes``, with at most one search.

    The trace of each count is read from the cache entry :func:`make_workload` with
    ``num_probes=p`` reads and writes; the counts not cached are traced by one search at the
    largest of them (:func:`trace_indexes`) and each stored under its own entry, so a later
    :func:`make_workload` at ``p`` reads it without searching.

    Parameters
    ----------
    probes : sequence of int
        Probe counts (each in 1..num_clusters); duplicates are ignored.
    keep : sequence of int, optional
        The counts whose traces are returned (default: all of ``probes``). The others are only
        made sure to be in the cache: a cached one is verified without reading its arrays, a
        new one is dropped once stored, so memory holds the kept traces and at most two others.
    Other parameters :
        As for :func:`make_workload`.

    Returns
    -------
    dict
        ``{p: LogicalTrace}`` for the counts of ``keep``, in increasing order; each identical
        (bit for bit) to ``make_workload(..., num_probes=p)``.
    """
    ds = get_dataset(dataset, n, num_queries, seed, cache_dir, progress=progress)
    params = IndexParams(num_clusters=num_clusters, M=M, ef_construction=ef_construction, seed=seed,
                         graph=graph, R=R, L=L, alpha=alpha)
    params.validate(ds.n)
    if ds.queries is None or len(ds.queries) == 0:
        raise UserError(f"dataset {ds.name}: no queries (a trace needs at least 1)")
    counts = probe_counts(probes)
    kept = kept_counts(counts, keep)
    # validate the search parameters before any expensive build
    for p in counts:
        check_search_params(ds.n, len(ds.queries), num_clusters, p, cand_list_len, k, entry)
    check_groundtruth_k(ds, k)
    check_entry(graph, entry)
    if threads is not None and threads < 1:
        raise ValueError(f"threads={threads} must be >= 1 (None: the CPU count)")
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    out, missing = {}, []
    for p in counts:
        spar = _search_params(p, cand_list_len, k, entry)
        tr, path = _cached_trace(ds, params, spar, cache, warn=True, arrays=p in kept)
        if tr is None:
            missing.append(p)
        elif p in kept:
            if tr.meta.get("recall") is None and ds.groundtruth is not None:
                # cached before the ground truth was known: add the recall, keep the search
                tr = _fill_recall(tr, ds, k)
                _store_trace(path, *_trace_entry(ds, params, spar, cache)[1:], tr)
            out[p] = tr
        # a count not kept whose trace lacks its recall gets it when make_workload reads it
        del tr
    if missing:
        index, _ = get_index(ds, params, cache, threads=threads, progress=progress)
        for p in missing:
            validate_search(index, ds.queries, p, cand_list_len, k, entry)
        for p, tr in _iter_traces(index, ds, missing, cand_list_len, k, entry, progress):
            _store_trace(*_trace_entry(ds, params, _search_params(p, cand_list_len, k, entry),
                                       cache), tr)
            if p in kept:
                out[p] = tr
            del tr
    return {p: out[p] for p in kept}
