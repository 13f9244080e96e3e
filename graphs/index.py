"""Clustered graph indexes: k-means + one graph per cluster (hnswlib or Vamana), as CSR.

Graph kinds (``IndexParams.graph``): ``"hnsw"`` (default), hnswlib's level-0 graph (max degree
2*M) with its upper layers; ``"vamana"``, DiskANN's Vamana graph as the DiskANN library builds it,
and ``"vamana-paper"``, as the DiskANN paper describes it (both by :mod:`graphs.vamana`; max
degree R, no upper layers: the hierarchical entry point is the medoid, the level count 0).
Both end up in the same CSR layout with the same medoid entry points, so the traced search and
everything downstream run unchanged on either.

Node numbering: the index works in *positions*. Position ``p`` in ``cluster_ptr[c] ..
cluster_ptr[c+1]-1`` is the member ``p - cluster_ptr[c]`` of cluster ``c`` (its local index,
the one the memory layout uses) and the dataset row ``cluster_nodes[p]``. The level-0 graph of
every cluster is one CSR (``indptr``, ``indices``) over positions; neighbors never leave their
cluster. The upper HNSW layers are kept too (``upper_indptr`` rows ``(level-1)*n + p``) so a
search can replay hnswlib's hierarchical entry exactly; the default search enters each cluster
at its medoid (DiskANN style) and uses level 0 only.

hnswlib 0.8 has no neighbor accessor in Python; its ``__getstate__()`` exposes the raw
``data_level0`` block (per element: uint32 link count [low 16 bits], ``maxM0`` uint32 links
(internal ids), the vector, the uint64 label) and ``link_lists`` (per element with level > 0,
``level`` blocks of uint32 count + ``maxM`` links). We decode those bytes.

Determinism: each cluster's graph is built with ``num_threads=1`` and a seed derived from the
index seed and the cluster number (hnswlib's build is deterministic single-threaded, not
multi-threaded); clusters are built concurrently in a thread pool (hnswlib releases the GIL),
which does not change any graph. Vamana graphs are deterministic for any thread count
(:mod:`graphs.vamana`).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import InitVar, asdict, dataclass, field
from pathlib import Path

import numpy as np

from cosmos_common import UserError, cacheio
from cosmos_common.cacheio import default_cache_dir  # noqa: F401  (re-exported)

from .dataset import Dataset
from .io import atomic_write_bytes
from .trace import array_checksum
from .kmeans import assign, centroid_adjacency, cluster_csr, kmeans

__all__ = ["GRAPH_KINDS", "IndexParams", "ClusteredIndex", "build_index", "get_index", "default_cache_dir"]

INDEX_FORMAT_VERSION = 1

#: hnswlib's largest M: its HierarchicalNSW constructor (hnswlib/hnswalg.h) caps M at 10,000
#: with a warning and builds with 10,000 instead; we refuse larger values rather than record
#: a max_degree (2*M) the graph never has.
HNSWLIB_MAX_M = 10_000

#: graph kinds of the per-cluster graphs (IndexParams.graph)
GRAPH_KINDS = ("hnsw", "vamana", "vamana-paper")

#: Vamana graph kinds -> their builder (graphs.vamana.VARIANTS): the library's or the paper's
VAMANA_KINDS = {"vamana": "diskann", "vamana-paper": "paper"}

#: the entry of an index cache record's meta holding its measured build time (wall seconds)
BUILD_SECONDS = "build_s"




@dataclass(frozen=True)
class IndexParams:
    """Parameters of a clustered index (all of them enter the cache key)."""

    num_clusters: int = field(default=64, metadata={"help": "k-means clusters (1 = a single graph, no k-means)"})
    M: int = field(default=32, metadata={"help": "hnswlib M; level-0 max degree is 2*M (64, DiskANN's R=64)"})
    ef_construction: int = field(default=100, metadata={"help": "hnswlib build beam width (DiskANN's build L=100)"})
    seed: int = field(default=0, metadata={"help": "seed of k-means and of every cluster's graph"})
    kmeans_iters: int = field(default=20, metadata={"help": "Lloyd iterations"})
    graph: str = field(default="hnsw", metadata={"help": "graph kind of each cluster: 'hnsw' (hnswlib level 0), "
                                                          "'vamana' (as the DiskANN library builds it) or "
                                                          "'vamana-paper' (as the DiskANN paper does; graphs.vamana)"})
    R: int = field(default=64, metadata={"help": "Vamana max out-degree (DiskANN's R=64)"})
    L: int = field(default=100, metadata={"help": "Vamana build search list size (DiskANN's L=100)"})
    alpha: float = field(default=1.2, metadata={"help": "Vamana pruning factor (the final one), >= 1 "
                                                        "(DiskANN's alpha=1.2)"})
    #: the ``builder`` entry of a :meth:`key_dict`, accepted so that ``IndexParams(**key_dict())``
    #: gives the same parameters; derived from ``graph`` (:data:`VAMANA_KINDS`), never stored
    builder: InitVar[str | None] = None

    def __post_init__(self, builder):
        if builder is not None and builder != VAMANA_KINDS.get(self.graph):
            raise UserError(f"builder={builder!r} does not belong to graph={self.graph!r} "
                            f"(its builder: {VAMANA_KINDS.get(self.graph)!r})")

    def validate(self, n: int) -> None:
        """UserError naming the field if a parameter is outside its range for ``n`` base
        vectors: 1 <= num_clusters <= n, 2 <= M <= 10,000 (hnswlib's cap,
        :data:`HNSWLIB_MAX_M`), ef_construction >= 1, kmeans_iters >= 0, seed >= 0."""
        if not 1 <= self.num_clusters <= n:
            raise UserError(f"num_clusters={self.num_clusters} must be in 1..{n} (the number of base vectors)")
        if not 2 <= self.M <= HNSWLIB_MAX_M:
            raise UserError(f"M={self.M} must be in 2..{HNSWLIB_MAX_M:,} (hnswlib caps M at "
                            f"{HNSWLIB_MAX_M:,}; the level-0 degree limit is 2*M)")
        if self.ef_construction < 1:
            raise UserError(f"ef_construction={self.ef_construction} must be >= 1")
        if self.kmeans_iters < 0:
            raise UserError(f"kmeans_iters={self.kmeans_iters} must be >= 0")
        if self.seed < 0:
            raise UserError(f"seed={self.seed} must be >= 0")
        if self.graph not in GRAPH_KINDS:
            raise UserError(f"graph={self.graph!r} unknown; expected one of {', '.join(GRAPH_KINDS)}")
        if self.graph in VAMANA_KINDS:
            from .vamana import validate_vamana

            validate_vamana(self.R, self.L, self.alpha)

    def key_dict(self) -> dict:
        """The parameters that determine the index (its cache key and file meta): the common ones
        and those of its graph kind -- M and ef_construction for hnsw (no graph entry: the key
        of an hnsw index does not involve R, L, alpha); graph, R, L, alpha and ``builder`` (the
        Vamana builder, :data:`VAMANA_KINDS`) for Vamana, so that no index is read from the cache
        as one of another builder."""
        d = asdict(self)
        drop = ("graph", "R", "L", "alpha") if self.graph == "hnsw" else ("M", "ef_construction")
        for k in drop:
            del d[k]
        if self.graph in VAMANA_KINDS:
            d["builder"] = VAMANA_KINDS[self.graph]
        return d

    @property
    def max_degree(self) -> int:
        """Degree bound of the cluster graphs: 2*M (hnswlib level 0) or R (Vamana)."""
        return self.R if self.graph in VAMANA_KINDS else 2 * self.M


_ARRAYS = (
    "centroids",
    "cluster_ptr",
    "cluster_nodes",
    "indptr",
    "indices",
    "medoid",
    "hnsw_entry",
    "hnsw_levels",
    "upper_indptr",
    "upper_indices",
)


@dataclass(eq=False)
class ClusteredIndex:
    """A clustered graph index (see the module docstring for the numbering).

    Attributes
    ----------
    centroids : (C, dim) float32
    cluster_ptr : (C+1,) int64
    cluster_nodes : (n,) int32, dataset row of each position
    indptr : (n+1,) int64 ; indices : (E,) int32 -- level-0 graph over positions
    medoid : (C,) int64, position of the member closest to the centroid (default entry)
    hnsw_entry : (C,) int64, position of hnswlib's top-level entry point
    hnsw_levels : (C,) int32, hnswlib's max level of each cluster graph
    upper_indptr : (L*n+1,) int64 ; upper_indices : int32 -- layers 1..L, row (level-1)*n + p
    """

    params: IndexParams
    metric: str
    n: int
    dim: int
    dataset_fingerprint: str
    centroids: np.ndarray
    cluster_ptr: np.ndarray
    cluster_nodes: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    medoid: np.ndarray
    hnsw_entry: np.ndarray
    hnsw_levels: np.ndarray
    upper_indptr: np.ndarray
    upper_indices: np.ndarray

    @property
    def num_clusters(self) -> int:
        return len(self.cluster_ptr) - 1

    @property
    def max_degree(self) -> int:
        return self.params.max_degree

    @property
    def cluster_sizes(self) -> np.ndarray:
        """(C,) int64 number of vectors per cluster."""
        return np.diff(self.cluster_ptr)

    def cluster_adjacency(self) -> np.ndarray:
        """(C, C-1) int32: other clusters by centroid proximity, nearest first."""
        return centroid_adjacency(self.centroids, self.metric)

    def position_of(self) -> np.ndarray:
        """(n,) int64: inverse of ``cluster_nodes`` (dataset row -> position)."""
        inv = np.empty(self.n, dtype=np.int64)
        inv[self.cluster_nodes] = np.arange(self.n)
        return inv

    def degrees(self) -> np.ndarray:
        return np.diff(self.indptr)

    # ----------------------------------------------------------------- persistence
    def _meta(self) -> dict:
        return {
            "format_version": INDEX_FORMAT_VERSION,
            "params": self.params.key_dict(),
            "metric": self.metric,
            "n": self.n,
            "dim": self.dim,
            "dataset_fingerprint": self.dataset_fingerprint,
        }

    def save(self, path: str | os.PathLike, overwrite: bool = False) -> Path:
        """Write one .npz (atomic) with a JSON meta holding a blake2b checksum of every array."""
        meta = self._meta()
        meta["checksums"] = {k: array_checksum(getattr(self, k)) for k in _ARRAYS}
        arrays = {k: getattr(self, k) for k in _ARRAYS}
        arrays["meta"] = np.array(json.dumps(meta, sort_keys=True))
        return atomic_write_bytes(path, lambda f: np.savez(f, **arrays), overwrite=overwrite)

    @classmethod
    def load(cls, path: str | os.PathLike, expect: dict | None = None,
             verify: bool = True) -> "ClusteredIndex":
        """Load and verify an index file (``verify=False``: skip the per-array checksums, for
        a file whose bytes were verified already, as the index cache does).

        Raises
        ------
        ValueError
            If the file is unreadable, a checksum or the CSR structure is wrong, or its meta
            disagrees with ``expect`` (a dict of meta entries, e.g. params and fingerprint).
        """
        path = Path(path)
        try:
            with np.load(path, allow_pickle=False) as z:
                meta = json.loads(str(z["meta"]))
                arrays = {k: z[k] for k in _ARRAYS}
        except Exception as exc:  # zip/npz/JSON damage of any kind
            raise ValueError(f"{path}: not a readable index file ({type(exc).__name__}: {exc})") from exc
        if meta.get("format_version") != INDEX_FORMAT_VERSION:
            raise ValueError(f"{path}: index format version {meta.get('format_version')}, expected {INDEX_FORMAT_VERSION}")
        for k, want in (expect or {}).items():
            if meta.get(k) != want:
                raise ValueError(f"{path}: stale index, meta '{k}' is {meta.get(k)!r}, expected {want!r}")
        for k in _ARRAYS if verify else ():
            if array_checksum(arrays[k]) != meta["checksums"].get(k):
                raise ValueError(f"{path}: checksum of array '{k}' does not match (corrupted file)")
        idx = cls(
            params=IndexParams(**meta["params"]),
            metric=meta["metric"],
            n=meta["n"],
            dim=meta["dim"],
            dataset_fingerprint=meta["dataset_fingerprint"],
            **arrays,
        )
        idx.check()
        return idx

    def check(self) -> None:
        """Structural validation of the CSR arrays (raises ValueError naming the array)."""
        n, c = self.n, self.num_clusters
        if self.cluster_ptr[0] != 0 or self.cluster_ptr[-1] != n or np.any(np.diff(self.cluster_ptr) < 0):
            raise ValueError("index: cluster_ptr is not a CSR pointer over n positions")
        if len(self.cluster_nodes) != n or not np.array_equal(np.sort(self.cluster_nodes), np.arange(n)):
            raise ValueError("index: cluster_nodes is not a permutation of 0..n-1")
        if len(self.indptr) != n + 1 or self.indptr[-1] != len(self.indices) or np.any(np.diff(self.indptr) < 0):
            raise ValueError("index: indptr is not a CSR pointer over indices")
        if len(self.indices) and (self.indices.min() < 0 or self.indices.max() >= n):
            raise ValueError("index: indices out of range 0..n-1")
        if self.centroids.shape != (c, self.dim):
            raise ValueError(f"index: centroids shape {self.centroids.shape}, expected {(c, self.dim)}")
        for name in ("medoid", "hnsw_entry"):
            a = getattr(self, name)
            if len(a) != c or np.any(a < self.cluster_ptr[:-1]) or np.any(a >= self.cluster_ptr[1:]):
                raise ValueError(f"index: {name} must hold one position inside each cluster")


def _cluster_seed(seed: int, c: int) -> int:
    return int(np.random.SeedSequence([seed, c]).generate_state(1)[0] % (2**31 - 1))


def _build_one(x: np.ndarray, metric: str, M: int, ef_construction: int, seed: int):
    """Build one hnswlib graph over x (local labels 0..m-1) and decode its layers.

    Returns
    -------
    indptr (m+1,) int64, indices int32 (local), entry (local), max_level,
    upper: list over levels 1..L of (rows local int64, nbrs local int32)
    """
    import hnswlib

    m, d = x.shape
    space = "ip" if metric == "ip" else "l2"
    g = hnswlib.Index(space=space, dim=d)
    g.init_index(max_elements=m, M=M, ef_construction=ef_construction, random_seed=seed)
    g.add_items(np.asarray(x, dtype=np.float32), np.arange(m), num_threads=1)
    st = g.__getstate__()[0]
    del g
    cnt = st["cur_element_count"]
    sz = st["size_data_per_element"]
    maxm0 = st["max_M0"]
    lo = st["label_offset"]
    off0 = st["offset_level0"]
    raw = np.frombuffer(st["data_level0"].tobytes(), dtype=np.uint8)[: cnt * sz].reshape(cnt, sz)
    counts = raw[:, off0 : off0 + 2].copy().view("<u2").ravel().astype(np.int64)
    links = raw[:, off0 + 4 : off0 + 4 + 4 * maxm0].copy().view("<u4")
    labels = raw[:, lo : lo + 8].copy().view("<u8").ravel().astype(np.int64)
    if not np.array_equal(np.sort(labels), np.arange(m)):
        raise RuntimeError("hnswlib state: labels are not 0..m-1 (unexpected hnswlib layout)")
    if counts.max(initial=0) > maxm0:
        raise RuntimeError("hnswlib state: link count above max_M0 (unexpected hnswlib layout)")
    # rows by label
    order = np.argsort(labels)  # internal id of each label
    deg = counts[order]
    indptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(deg, out=indptr[1:])
    mask = np.arange(maxm0)[None, :] < deg[:, None]
    indices = labels[links[order][mask]].astype(np.int32)
    # upper layers
    levels = np.asarray(st["element_levels"], dtype=np.int64)
    sl = st["size_links_per_element"]
    maxm = st["max_M"]
    ll = np.frombuffer(st["link_lists"].tobytes(), dtype=np.uint8)
    offs = np.zeros(cnt + 1, dtype=np.int64)
    np.cumsum(levels * sl, out=offs[1:])
    upper = []
    for lev in range(1, int(st["max_level"]) + 1):
        ids = np.flatnonzero(levels >= lev)
        if ids.size == 0:
            upper.append((np.zeros(0, np.int64), np.zeros(0, np.int32)))
            continue
        start = offs[ids] + (lev - 1) * sl
        blk = ll[start[:, None] + np.arange(sl)[None, :]]
        c = blk[:, 0:2].copy().view("<u2").ravel().astype(np.int64)
        lk = blk[:, 4 : 4 + 4 * maxm].copy().view("<u4")
        msk = np.arange(maxm)[None, :] < c[:, None]
        rows = np.repeat(labels[ids], c)
        nb = labels[lk[msk]].astype(np.int32)
        o = np.argsort(rows, kind="stable")
        upper.append((rows[o], nb[o]))
    entry = int(labels[st["enterpoint_node"]])
    return indptr, indices, entry, int(st["max_level"]), upper


def _build_vamana_clusters(base, metric, params, cluster_ptr, cluster_nodes, medoid, threads, bar) -> list:
    """One Vamana graph per cluster (graphs.vamana, the builder of ``params.graph``), in the layout
    of :func:`_build_one`'s result.

    Clusters are built one after the other, each with ``threads`` numba threads inside (the
    graph does not depend on the thread count). A Vamana graph has no upper layers: the
    hierarchical entry point is the medoid and its level count 0.
    """
    import numba

    from .vamana import build_vamana

    old = numba.get_num_threads()
    numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))
    try:
        results = []
        for c in range(len(cluster_ptr) - 1):
            s, e = cluster_ptr[c], cluster_ptr[c + 1]
            x = np.asarray(base[cluster_nodes[s:e]], dtype=np.float32)
            entry = int(medoid[c] - s)
            ip, ix = build_vamana(x, metric, entry, params.R, params.L, params.alpha, _cluster_seed(params.seed, c),
                                  variant=VAMANA_KINDS[params.graph])
            results.append((ip, ix, entry, 0, []))
            if bar is not None:
                bar.update(int(e - s))
    finally:
        numba.set_num_threads(old)
    return results


def cluster_medoids(base, centroids: np.ndarray, cluster_ptr: np.ndarray,
                    cluster_nodes: np.ndarray) -> np.ndarray:
    """(C,) int64: the position of each cluster's member nearest to its centroid (DiskANN's
    entry point; Vamana's build starts there), in float64 with ties to the first member."""
    C = len(cluster_ptr) - 1
    medoid = np.empty(C, dtype=np.int64)
    for c in range(C):
        s, e = cluster_ptr[c], cluster_ptr[c + 1]
        x = np.asarray(base[cluster_nodes[s:e]], dtype=np.float64)
        dd = ((x - centroids[c].astype(np.float64)) ** 2).sum(axis=1)
        medoid[c] = s + int(np.argmin(dd))
    return medoid


def assemble_graphs(results: list, cluster_ptr: np.ndarray):
    """One index's CSR arrays from its clusters' graphs (:func:`_build_one`'s results, local
    ids): ``(indptr, indices, hnsw_entry, hnsw_levels, upper_indptr, upper_indices)`` over
    positions, as :class:`ClusteredIndex` holds them."""
    n = int(cluster_ptr[-1])
    deg = np.concatenate([np.diff(r[0]) for r in results])
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(deg, out=indptr[1:])
    indices = np.concatenate([r[1].astype(np.int64) + cluster_ptr[c] for c, r in enumerate(results)]).astype(np.int32)
    hnsw_entry = np.array([r[2] + cluster_ptr[c] for c, r in enumerate(results)], dtype=np.int64)
    hnsw_levels = np.array([r[3] for r in results], dtype=np.int32)
    L = int(hnsw_levels.max(initial=0))
    rows_all, nb_all = [], []
    for lev in range(1, L + 1):
        for c, r in enumerate(results):
            if lev <= r[3]:
                rows, nb = r[4][lev - 1]
                rows_all.append((lev - 1) * n + cluster_ptr[c] + rows)
                nb_all.append(nb.astype(np.int64) + cluster_ptr[c])
    rows = np.concatenate(rows_all) if rows_all else np.zeros(0, np.int64)
    nbs = np.concatenate(nb_all).astype(np.int32) if nb_all else np.zeros(0, np.int32)
    upper_indptr = np.zeros(L * n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=L * n), out=upper_indptr[1:])
    return indptr, indices, hnsw_entry, hnsw_levels, upper_indptr, nbs


def build_hnsw_clusters(base, metric: str, params: IndexParams, cluster_ptr: np.ndarray,
                        cluster_nodes: np.ndarray, threads: int, bar=None,
                        seed_ids: np.ndarray | None = None) -> list:
    """One hnswlib graph per cluster (:func:`_build_one`'s results, local ids), ``threads``
    clusters at a time, largest first; cluster ``c``'s graph is seeded by ``seed_ids[c]``
    (default ``c``) and the index seed, so the result does not depend on ``threads``."""
    C = len(cluster_ptr) - 1
    sizes = np.diff(cluster_ptr)
    ids = np.arange(C) if seed_ids is None else np.asarray(seed_ids)
    results: list = [None] * C

    def work(c):
        s, e = cluster_ptr[c], cluster_ptr[c + 1]
        x = np.asarray(base[cluster_nodes[s:e]], dtype=np.float32)
        results[c] = _build_one(x, metric, params.M, params.ef_construction,
                                _cluster_seed(params.seed, int(ids[c])))
        return c

    order = np.argsort(-sizes, kind="stable")  # largest first: better load balance
    with ThreadPoolExecutor(max_workers=threads) as ex:
        for c in ex.map(work, order):
            if bar is not None:
                bar.update(int(sizes[c]))
    return results


def build_index(
    dataset: Dataset, params: IndexParams = IndexParams(), threads: int | None = None, progress: bool = True
) -> ClusteredIndex:
    """Build a clustered index (k-means + one graph per cluster: hnswlib or Vamana, ``params.graph``).

    hnswlib: ``threads`` clusters are built concurrently; Vamana: the clusters one after the
    other, each with ``threads`` numba threads (default: the CPU count); the result does not
    depend on it. ``num_clusters=1`` builds a single graph over the whole set (no k-means; the
    centroid is the mean).
    """
    params.validate(dataset.n)
    base = dataset.base
    n, d = base.shape
    C = params.num_clusters
    if C == 1:
        centroids = np.asarray(base, dtype=np.float64).mean(axis=0, keepdims=True).astype(np.float32)
        labels = np.zeros(n, dtype=np.int32)
    else:
        centroids = kmeans(base, C, seed=params.seed, iters=params.kmeans_iters, metric=dataset.metric)
        labels = assign(base, centroids, dataset.metric)
    cluster_ptr, cluster_nodes = cluster_csr(labels, C)
    sizes = np.diff(cluster_ptr)
    if np.any(sizes == 0):
        # cannot happen for C <= n after re-seeding, except with duplicate points: fail clearly
        distinct = len(np.unique(np.asarray(base[: min(n, 1_000_000)]), axis=0))
        among = " among its first 1,000,000" if n > 1_000_000 else ""
        cause = (f"the base has only {distinct:,} distinct vectors{among} for "
                 f"num_clusters={C} (identical vectors fall into one cluster); use at most "
                 "that many clusters" if distinct < C else
                 f"the base holds many identical vectors ({distinct:,} distinct{among}); "
                 "use fewer clusters")
        raise UserError(f"{dataset.name}: k-means left {int(np.sum(sizes == 0))} of {C} "
                        f"clusters empty: {cause}")

    medoid = cluster_medoids(base, centroids, cluster_ptr, cluster_nodes)

    threads = threads or os.cpu_count() or 1
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=n, desc=f"build {params.graph} graphs", unit="vec")
    if params.graph in VAMANA_KINDS:
        results = _build_vamana_clusters(base, dataset.metric, params, cluster_ptr, cluster_nodes, medoid,
                                         threads, bar)
    else:
        results = build_hnsw_clusters(base, dataset.metric, params, cluster_ptr, cluster_nodes,
                                      threads, bar)
    if bar is not None:
        bar.close()

    indptr, indices, hnsw_entry, hnsw_levels, upper_indptr, nbs = assemble_graphs(results, cluster_ptr)
    idx = ClusteredIndex(
        params=params,
        metric=dataset.metric,
        n=n,
        dim=d,
        dataset_fingerprint=dataset.fingerprint(),
        centroids=np.ascontiguousarray(centroids, dtype=np.float32),
        cluster_ptr=cluster_ptr,
        cluster_nodes=cluster_nodes.astype(np.int32),
        indptr=indptr,
        indices=indices,
        medoid=medoid,
        hnsw_entry=hnsw_entry,
        hnsw_levels=hnsw_levels,
        upper_indptr=upper_indptr,
        upper_indices=nbs,
    )
    idx.check()
    return idx


def index_key(dataset: Dataset, params: IndexParams) -> str:
    s = json.dumps({"v": INDEX_FORMAT_VERSION, "fp": dataset.fingerprint(), "p": params.key_dict()}, sort_keys=True)
    return hashlib.blake2b(s.encode(), digest_size=8).hexdigest()


def get_index(
    dataset: Dataset,
    params: IndexParams = IndexParams(),
    cache_dir: str | os.PathLike | None = None,
    threads: int | None = None,
    progress: bool = True,
) -> tuple[ClusteredIndex, Path]:
    """The index of ``dataset`` with ``params`` from the on-disk cache, building it if needed.

    A cached index is a file entry of :mod:`cosmos_common.cacheio` (kind ``indexes``: the
    ``.npz`` and its record ``<name>.entry.json``) answering the key of the dataset's
    fingerprint and ``params``. Every read verifies the record and the file's SHA-256, then
    the meta (format version, dataset fingerprint, parameters) and the CSR structure; a
    corrupted, stale or unrecorded one is reported in one warning line and rebuilt.

    Returns
    -------
    (index, path of the cache file)
    """
    path, record, key = _index_entry(dataset, params, cache_dir)
    expect = {"params": params.key_dict(), "dataset_fingerprint": dataset.fingerprint(), "n": dataset.n}
    if cacheio.read_files(record, "indexes", key, [path]) is not None:
        try:
            return ClusteredIndex.load(path, expect=expect, verify=False), path
        except ValueError as exc:
            cacheio.report(path, str(exc))
    t0 = time.perf_counter()
    idx = build_index(dataset, params, threads=threads, progress=progress)
    # the measured build time goes into the record's meta only: never into the index file
    # or its key (both stay bit for bit the same); read back by index_build_seconds
    cacheio.store_files(record, "indexes", key, {path: lambda p: idx.save(p, overwrite=True)},
                        meta={BUILD_SECONDS: time.perf_counter() - t0})
    return idx, path


def _index_entry(dataset: Dataset, params: IndexParams, cache_dir=None) -> tuple[Path, Path, str]:
    """(index file, record, key) of the cache entry of ``dataset``'s index with ``params``."""
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in dataset.name)[:60]
    path = cache / "indexes" / f"{safe}-{index_key(dataset, params)}.npz"
    record = cacheio.record_path(path.parent, path.stem)
    key = cacheio.key_of({"kind": "index", "v": INDEX_FORMAT_VERSION, "fp": dataset.fingerprint(),
                          "params": params.key_dict()})
    return path, record, key


def recorded_build_seconds(record: Path, kind: str, key: str, path: Path) -> float | None:
    """The build time (wall seconds) the verified cache entry ``record`` recorded in its meta
    when its index was built, or None: no valid entry, or one made before build times were
    recorded. Reads nothing into any key or file; reports nothing (the entry's user does)."""
    with cacheio.quiet():
        meta = cacheio.read_files(record, kind, key, [path])
    s = None if meta is None else meta.get(BUILD_SECONDS)
    return float(s) if isinstance(s, (int, float)) and not isinstance(s, bool) and s >= 0 else None


def index_build_seconds(dataset: Dataset, params: IndexParams = IndexParams(),
                        cache_dir: str | os.PathLike | None = None) -> float | None:
    """Wall seconds :func:`get_index` took to build the cached index of ``dataset`` with
    ``params`` (recorded in its cache entry's meta), or None if unknown (not cached, or
    cached before this was recorded). Builds nothing."""
    path, record, key = _index_entry(dataset, params, cache_dir)
    return recorded_build_seconds(record, "indexes", key, path)
