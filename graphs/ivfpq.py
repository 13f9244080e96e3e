"""IVF-PQ and exact scan on the clustered index's k-means lists (numba scan kernels).

Both families use the coarse quantizer the graph index uses: the same seeded k-means
(:func:`graphs.kmeans.kmeans`, same arguments as :func:`graphs.index.build_index`), so list
``c`` holds exactly the vectors of graph cluster ``c``, in the same position order
(``cluster_ptr``/``cluster_nodes``).

IVF-PQ (IVFADC of Jegou, Douze, Schmid, "Product quantization for nearest neighbor search",
IEEE TPAMI 2011; faiss ``IndexIVFPQ`` with ``by_residual``): every base vector is encoded as the
product quantization of its residual ``x - centroid``: the dimension is cut into ``pq_m``
contiguous sub-spaces of ``dim / pq_m`` components, each quantized to one of 256 sub-centroids
(8-bit codes, so a code is ``pq_m`` bytes), each sub-codebook trained with the project's seeded
k-means on the residuals (seed derived from the index seed and the sub-space number). Codes are
stored per list contiguously, in position order.

Search of a query: the ``num_probes`` nearest centroids (:func:`graphs.search.route`); per
probed list an asymmetric-distance lookup table (``pq_m x 256`` float32: for l2 the squared
distance of the query's residual to each sub-centroid, for ip minus their inner product, plus
``1 - <q, centroid>`` as a bias), a scan of every code of the list (distance = bias + sum over
sub-spaces of the table entries the code selects), a bounded queue of the best
``max(k, rerank)`` candidates; with ``rerank`` R > 0 the R best are read in full and ranked by
their exact distance (squared l2 or ``1 - <q, x>``, float32 as the graph search), top-k.

Exact scan: every vector of the probed lists (``num_probes = num_clusters``: the whole base)
read in full, exact distances, top-k.

Ties are broken by position in the queue and by dataset id in the final top-k, so results are
the same for any thread count (each query writes only its own rows of preallocated outputs).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from cosmos_common.numba_cache import install as _check_numba_cache

_check_numba_cache()    # cached kernels are checked before use (cosmos_common.numba_cache)

from cosmos_common import UserError, cacheio

from .dataset import Dataset
from .index import BUILD_SECONDS, recorded_build_seconds
from .groundtruth import _replace_worst
from .io import atomic_write_bytes
from .kmeans import assign, cluster_csr, kmeans, nearest_centroids
from .trace import array_checksum

__all__ = ["IVFPQParams", "IVFPQIndex", "build_ivfpq", "get_ivfpq", "ScanOutput", "scan_search",
           "check_scan_params", "PQ_KSUB", "INDEX_KINDS"]

#: 8-bit sub-quantizer codes: 256 sub-centroids per sub-space, one byte per sub-space
#: (Jegou et al., TPAMI 2011, section IV: k* = 256 is the setting they recommend; Chameleon's
#: ChamVS decodes 8-bit PQ codes with 256-entry lookup tables).
PQ_KSUB = 256
#: Index families a trace can come from ("graph": the clustered graphs of graphs.index).
INDEX_KINDS = ("graph", "ivfpq", "exact")
IVFPQ_FORMAT_VERSION = 1
METRIC_CODES = {"l2": 0, "ip": 1}


@dataclass(frozen=True)
class IVFPQParams:
    """Parameters of an IVF-PQ index (all enter the cache key)."""

    num_clusters: int = field(default=64, metadata={"help": "IVF lists (the graph index's k-means clusters)"})
    pq_m: int = field(default=16, metadata={"help": "PQ sub-spaces = code bytes; must divide the dimension"})
    seed: int = field(default=0, metadata={"help": "seed of the coarse k-means and of every sub-codebook"})
    kmeans_iters: int = field(default=20, metadata={"help": "Lloyd iterations of the coarse k-means"})
    pq_iters: int = field(default=20, metadata={"help": "Lloyd iterations of each sub-codebook"})

    def validate(self, n: int, dim: int) -> None:
        """UserError naming the field: 1 <= num_clusters <= n; pq_m >= 1 dividing ``dim``;
        n >= 256 (one training vector per sub-centroid); iterations >= 0; seed >= 0."""
        if not 1 <= self.num_clusters <= n:
            raise UserError(f"num_clusters={self.num_clusters} must be in 1..{n} (the number of base vectors)")
        if self.pq_m < 1 or dim % self.pq_m:
            raise UserError(f"pq_m={self.pq_m} must be >= 1 and divide the dimension {dim} "
                            f"(each of the pq_m sub-spaces has dim/pq_m components)")
        if n < PQ_KSUB:
            raise UserError(f"IVF-PQ needs at least {PQ_KSUB} base vectors to train its "
                            f"{PQ_KSUB}-centroid sub-codebooks, got {n}")
        for name in ("kmeans_iters", "pq_iters", "seed"):
            if getattr(self, name) < 0:
                raise UserError(f"{name}={getattr(self, name)} must be >= 0")


_ARRAYS = ("centroids", "cluster_ptr", "cluster_nodes", "codebooks", "codes")


@dataclass(eq=False)
class IVFPQIndex:
    """An IVF-PQ index.

    Attributes
    ----------
    centroids : (C, dim) float32 -- the coarse quantizer (graph index clusters)
    cluster_ptr : (C+1,) int64 ; cluster_nodes : (n,) int32 -- lists in position order
    codebooks : (pq_m, 256, dim/pq_m) float32 -- sub-centroids of the residuals
    codes : (n, pq_m) uint8 -- code of position p (list c: rows cluster_ptr[c]..[c+1]-1)
    """

    params: IVFPQParams
    metric: str
    n: int
    dim: int
    dataset_fingerprint: str
    centroids: np.ndarray
    cluster_ptr: np.ndarray
    cluster_nodes: np.ndarray
    codebooks: np.ndarray
    codes: np.ndarray

    @property
    def num_clusters(self) -> int:
        return len(self.cluster_ptr) - 1

    @property
    def code_bytes(self) -> int:
        return int(self.codes.shape[1])

    def check(self) -> None:
        n, m = self.n, self.params.pq_m
        if self.cluster_ptr[0] != 0 or self.cluster_ptr[-1] != n or np.any(np.diff(self.cluster_ptr) < 0):
            raise ValueError("ivfpq index: cluster_ptr is not a CSR pointer over n positions")
        if self.codes.shape != (n, m) or self.codes.dtype != np.uint8:
            raise ValueError(f"ivfpq index: codes {self.codes.shape} {self.codes.dtype}, expected ({n}, {m}) uint8")
        if self.codebooks.shape != (m, PQ_KSUB, self.dim // m):
            raise ValueError(f"ivfpq index: codebooks shape {self.codebooks.shape}")

    def save(self, path, overwrite: bool = False) -> Path:
        meta = {"format_version": IVFPQ_FORMAT_VERSION, "params": asdict(self.params), "metric": self.metric,
                "n": self.n, "dim": self.dim, "dataset_fingerprint": self.dataset_fingerprint,
                "checksums": {k: array_checksum(getattr(self, k)) for k in _ARRAYS}}
        arrays = {k: getattr(self, k) for k in _ARRAYS}
        arrays["meta"] = np.array(json.dumps(meta, sort_keys=True))
        return atomic_write_bytes(path, lambda f: np.savez(f, **arrays), overwrite=overwrite)

    @classmethod
    def load(cls, path, expect: dict | None = None) -> "IVFPQIndex":
        path = Path(path)
        try:
            with np.load(path, allow_pickle=False) as z:
                meta = json.loads(str(z["meta"]))
                arrays = {k: z[k] for k in _ARRAYS}
        except Exception as exc:
            raise ValueError(f"{path}: not a readable IVF-PQ index file ({type(exc).__name__}: {exc})") from exc
        if meta.get("format_version") != IVFPQ_FORMAT_VERSION:
            raise ValueError(f"{path}: IVF-PQ index format version {meta.get('format_version')}, "
                             f"expected {IVFPQ_FORMAT_VERSION}")
        for k, want in (expect or {}).items():
            if meta.get(k) != want:
                raise ValueError(f"{path}: stale IVF-PQ index, meta '{k}' is {meta.get(k)!r}, expected {want!r}")
        for k in _ARRAYS:
            if array_checksum(arrays[k]) != meta["checksums"].get(k):
                raise ValueError(f"{path}: checksum of array '{k}' does not match (corrupted file)")
        idx = cls(params=IVFPQParams(**meta["params"]), metric=meta["metric"], n=meta["n"], dim=meta["dim"],
                  dataset_fingerprint=meta["dataset_fingerprint"], **arrays)
        idx.check()
        return idx


def coarse_lists(base: np.ndarray, num_clusters: int, seed: int, iters: int, metric: str):
    """The coarse quantizer: exactly the clusters :func:`graphs.index.build_index` makes with
    the same ``num_clusters``, ``seed`` and ``kmeans_iters``.

    Returns (centroids (C, dim) float32, cluster_ptr (C+1,) int64, cluster_nodes (n,) int32).
    """
    if num_clusters == 1:
        centroids = np.asarray(base, dtype=np.float64).mean(axis=0, keepdims=True).astype(np.float32)
        labels = np.zeros(len(base), dtype=np.int32)
    else:
        centroids = kmeans(base, num_clusters, seed=seed, iters=iters, metric=metric)
        labels = assign(base, centroids, metric)
    ptr, nodes = cluster_csr(labels, num_clusters)
    return np.ascontiguousarray(centroids, dtype=np.float32), ptr, nodes.astype(np.int32)


def _subspace_seed(seed: int, j: int) -> int:
    # "PQ" in ASCII separates these streams from the per-cluster graph seeds of graphs.index
    return int(np.random.SeedSequence([seed, 0x5051, j]).generate_state(1)[0] % (2**31 - 1))


def _residuals(base, centroids, cluster_ptr, cluster_nodes, chunk=65536):
    """(n, dim) float32 residuals in position order."""
    n, d = base.shape
    labels = np.repeat(np.arange(len(cluster_ptr) - 1), np.diff(cluster_ptr))
    out = np.empty((n, d), np.float32)
    for s in range(0, n, chunk):
        rows = cluster_nodes[s : s + chunk]
        out[s : s + chunk] = np.asarray(base[rows], dtype=np.float32) - centroids[labels[s : s + chunk]]
    return out


def train_pq(residuals: np.ndarray, pq_m: int, seed: int, iters: int) -> np.ndarray:
    """Sub-codebooks (pq_m, 256, dim/pq_m) float32: seeded k-means (l2) per sub-space."""
    n, d = residuals.shape
    ds = d // pq_m
    cb = np.empty((pq_m, PQ_KSUB, ds), np.float32)
    for j in range(pq_m):
        sub = np.ascontiguousarray(residuals[:, j * ds : (j + 1) * ds])
        cb[j] = kmeans(sub, PQ_KSUB, seed=_subspace_seed(seed, j), iters=iters, metric="l2")
    return cb


@njit(cache=True, parallel=True)
def _encode(res, cb, out):
    n = res.shape[0]
    m, K, ds = cb.shape
    for i in prange(n):
        for j in range(m):
            best = np.float32(np.inf)
            bk = 0
            for kk in range(K):
                s = np.float32(0.0)
                for t in range(ds):
                    u = res[i, j * ds + t] - cb[j, kk, t]
                    s += u * u
                if s < best:
                    best = s
                    bk = kk
            out[i, j] = bk


def encode(residuals: np.ndarray, codebooks: np.ndarray) -> np.ndarray:
    """(n, pq_m) uint8: nearest sub-centroid of each sub-vector (ties: the smaller code)."""
    out = np.empty((len(residuals), codebooks.shape[0]), np.uint8)
    _encode(np.ascontiguousarray(residuals, np.float32), np.ascontiguousarray(codebooks), out)
    return out


def build_ivfpq(dataset: Dataset, params: IVFPQParams = IVFPQParams()) -> IVFPQIndex:
    """Train and encode an IVF-PQ index of ``dataset`` (bit for bit the same for the same seed)."""
    params.validate(dataset.n, dataset.dim)
    base = dataset.base
    centroids, ptr, nodes = coarse_lists(base, params.num_clusters, params.seed, params.kmeans_iters,
                                         dataset.metric)
    res = _residuals(base, centroids, ptr, nodes)
    cb = train_pq(res, params.pq_m, params.seed, params.pq_iters)
    codes = encode(res, cb)
    idx = IVFPQIndex(params=params, metric=dataset.metric, n=dataset.n, dim=dataset.dim,
                     dataset_fingerprint=dataset.fingerprint(), centroids=centroids, cluster_ptr=ptr,
                     cluster_nodes=nodes, codebooks=cb, codes=codes)
    idx.check()
    return idx


def get_ivfpq(dataset: Dataset, params: IVFPQParams = IVFPQParams(),
              cache_dir: str | os.PathLike | None = None) -> tuple[IVFPQIndex, Path]:
    """The IVF-PQ index of ``dataset`` from the on-disk cache (kind ``indexes`` of
    :mod:`cosmos_common.cacheio`, verified by SHA-256 and meta), building it if needed."""
    params.validate(dataset.n, dataset.dim)
    path, record, key = _ivfpq_entry(dataset, params, cache_dir)
    expect = {"params": asdict(params), "dataset_fingerprint": dataset.fingerprint(), "n": dataset.n}
    if cacheio.read_files(record, "indexes", key, [path]) is not None:
        try:
            return IVFPQIndex.load(path, expect=expect), path
        except ValueError as exc:
            cacheio.report(path, str(exc))
    t0 = time.perf_counter()
    idx = build_ivfpq(dataset, params)
    # the measured build time goes into the record's meta only (graphs.index.get_index)
    cacheio.store_files(record, "indexes", key, {path: lambda p: idx.save(p, overwrite=True)},
                        meta={BUILD_SECONDS: time.perf_counter() - t0})
    return idx, path


def _ivfpq_entry(dataset: Dataset, params: IVFPQParams, cache_dir=None) -> tuple[Path, Path, str]:
    """(index file, record, key) of the cache entry of ``dataset``'s IVF-PQ index."""
    cache = Path(cache_dir) if cache_dir is not None else cacheio.default_cache_dir()
    req = {"kind": "ivfpq", "v": IVFPQ_FORMAT_VERSION, "fp": dataset.fingerprint(), "params": asdict(params)}
    short = hashlib.blake2b(json.dumps(req, sort_keys=True).encode(), digest_size=8).hexdigest()
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in dataset.name)[:60]
    path = cache / "indexes" / f"{safe}-ivfpq-{short}.npz"
    return path, cacheio.record_path(path.parent, path.stem), cacheio.key_of(req)


def ivfpq_build_seconds(dataset: Dataset, params: IVFPQParams = IVFPQParams(),
                        cache_dir: str | os.PathLike | None = None) -> float | None:
    """Wall seconds :func:`get_ivfpq` took to build the cached index (its record's meta), or
    None if unknown (graphs.index.index_build_seconds). Builds nothing."""
    path, record, key = _ivfpq_entry(dataset, params, cache_dir)
    return recorded_build_seconds(record, "indexes", key, path)


# ------------------------------------------------------------------------------- search kernels
@njit(cache=True, inline="always")
def _before(d1, p1, d2, p2):
    """(d1, p1) ranks before (d2, p2): smaller distance, then smaller position."""
    return d1 < d2 or (d1 == d2 and p1 < p2)


@njit(cache=True)
def _offer(hd, hp, size, d, p):
    """Bounded max-heap (worst at the root) of capacity len(hd); returns the new size. Once
    full, a better pair replaces the root with the ground truth's sift-down
    (:func:`graphs.groundtruth._replace_worst`, the same (distance, position) order)."""
    R = hd.shape[0]
    if size < R:
        i = size
        size += 1
        while i > 0:
            par = (i - 1) >> 1
            if _before(hd[par], hp[par], d, p):
                hd[i] = hd[par]
                hp[i] = hp[par]
                i = par
            else:
                break
        hd[i] = d
        hp[i] = p
        return size
    if _before(d, p, hd[0], hp[0]):   # full: replace the worst, ordered as _before orders
        _replace_worst(hd, hp, d, p)
    return size


@njit(cache=True)
def _exact_dist(q, vecs, p, metric):
    """The distance :func:`graphs.search._dist` computes, compiled without fastmath: the float32
    sum runs in component order whatever the CPU's vector width, so an exact scan's and a
    re-rank's order is the same on every machine. (numba compiles a function with one set of
    flags, hence the second function.)"""
    s = np.float32(0.0)
    if metric == 0:
        for j in range(q.shape[0]):
            t = q[j] - np.float32(vecs[p, j])
            s += t * t
        return s
    for j in range(q.shape[0]):
        s += q[j] * np.float32(vecs[p, j])
    return np.float32(1.0) - s


@njit(cache=True, parallel=True)
def _pq_scan(queries, probes, centroids, cluster_ptr, codes, cb, metric, out_pos, out_dist, out_n):
    """ADC scan of the probed lists; per query the best R = out_pos.shape[1] (distance, position)
    in out_pos/out_dist (sorted), their number in out_n."""
    Q, P = probes.shape
    R = out_pos.shape[1]
    m, K, ds = cb.shape
    for qi in prange(Q):
        q = queries[qi]
        lut = np.empty((m, K), np.float32)
        hd = np.empty(R, np.float32)
        hp = np.empty(R, np.int64)
        size = 0
        for pi in range(P):
            c = probes[qi, pi]
            bias = np.float32(0.0)
            if metric == 0:
                for j in range(m):
                    for kk in range(K):
                        s = np.float32(0.0)
                        for t in range(ds):
                            u = q[j * ds + t] - centroids[c, j * ds + t] - cb[j, kk, t]
                            s += u * u
                        lut[j, kk] = s
            else:
                qc = np.float32(0.0)
                for t in range(q.shape[0]):
                    qc += q[t] * centroids[c, t]
                bias = np.float32(1.0) - qc
                for j in range(m):
                    for kk in range(K):
                        s = np.float32(0.0)
                        for t in range(ds):
                            s += q[j * ds + t] * cb[j, kk, t]
                        lut[j, kk] = -s
            for p in range(cluster_ptr[c], cluster_ptr[c + 1]):
                d = bias
                for j in range(m):
                    d += lut[j, codes[p, j]]
                size = _offer(hd, hp, size, d, p)
        _drain(hd, hp, size, out_pos[qi], out_dist[qi])
        out_n[qi] = size


@njit(cache=True)
def _drain(hd, hp, size, pos, dist):
    """Sort the heap's entries ascending into pos/dist (rest -1 / inf)."""
    for i in range(pos.shape[0]):
        pos[i] = -1
        dist[i] = np.inf
    order = np.argsort(hd[:size], kind="mergesort")
    # mergesort is stable but ties must follow the position: fix with an insertion pass
    tmpd = hd[:size][order]
    tmpp = hp[:size][order]
    for i in range(1, size):
        d = tmpd[i]
        p = tmpp[i]
        j = i - 1
        while j >= 0 and _before(d, p, tmpd[j], tmpp[j]):
            tmpd[j + 1] = tmpd[j]
            tmpp[j + 1] = tmpp[j]
            j -= 1
        tmpd[j + 1] = d
        tmpp[j + 1] = p
    for i in range(size):
        pos[i] = tmpp[i]
        dist[i] = tmpd[i]


@njit(cache=True, parallel=True)
def _exact_scan(queries, probes, cluster_ptr, vecs, metric, out_pos, out_dist, out_n):
    """Exact distances to every vector of the probed lists; best k per query."""
    Q, P = probes.shape
    R = out_pos.shape[1]
    for qi in prange(Q):
        q = queries[qi]
        hd = np.empty(R, np.float32)
        hp = np.empty(R, np.int64)
        size = 0
        for pi in range(P):
            c = probes[qi, pi]
            for p in range(cluster_ptr[c], cluster_ptr[c + 1]):
                size = _offer(hd, hp, size, _exact_dist(q, vecs, p, metric), p)
        _drain(hd, hp, size, out_pos[qi], out_dist[qi])
        out_n[qi] = size


@njit(cache=True, parallel=True)
def _rerank(queries, cand_pos, cand_n, vecs, metric, out_dist):
    """Exact distance of every candidate (inf for empty slots)."""
    Q, R = cand_pos.shape
    for qi in prange(Q):
        for r in range(R):
            if r < cand_n[qi]:
                out_dist[qi, r] = _exact_dist(queries[qi], vecs, cand_pos[qi, r], metric)
            else:
                out_dist[qi, r] = np.inf


class ScanOutput(NamedTuple):
    """Output of :func:`scan_search`; ids are dataset rows."""

    result_ids: np.ndarray     # (Q, k) int64, -1 = missing
    result_dists: np.ndarray   # (Q, k) float32 (exact for exact scan and after re-ranking)
    probes: np.ndarray         # (Q, P) int64 probed lists, nearest first
    rerank_ids: np.ndarray     # (Q, R) int64 dataset rows read in full for re-ranking, -1 = none


def check_scan_params(kind: str, n: int, dim: int, num_clusters: int, num_probes: int, k: int,
                      pq_m: int = 16, rerank: int = 0) -> None:
    """The rules of a scan search, checked before anything is built (UserError naming the
    parameter): kind in ivfpq/exact; 1 <= num_probes <= num_clusters; 1 <= k <= n; for IVF-PQ
    ``pq_m`` divides the dimension and ``rerank`` is 0 (no re-ranking) or >= k."""
    if kind not in ("ivfpq", "exact"):
        raise UserError(f"index kind '{kind}' is not a scan; expected 'ivfpq' or 'exact'")
    if not 1 <= num_probes <= num_clusters:
        raise UserError(f"num_probes={num_probes} must be in 1..num_clusters={num_clusters} (IVF lists)")
    if not 1 <= k <= n:
        raise UserError(f"k={k} must be in 1..{n} (the number of base vectors)")
    if kind == "ivfpq":
        if pq_m < 1 or dim % pq_m:
            raise UserError(f"pq_m={pq_m} must be >= 1 and divide the dimension {dim}")
        if rerank < 0 or 0 < rerank < k:
            raise UserError(f"rerank={rerank} must be 0 (no re-ranking) or >= k={k} (the re-ranked "
                            f"candidates must hold the top-k)")


def scan_search(kind: str, vectors: np.ndarray, queries: np.ndarray, centroids: np.ndarray,
                cluster_ptr: np.ndarray, cluster_nodes: np.ndarray, metric: str, num_probes: int,
                k: int = 10, index: IVFPQIndex | None = None, rerank: int = 0,
                chunk: int = 1024) -> ScanOutput:
    """Search every query by scanning its ``num_probes`` nearest lists.

    Parameters
    ----------
    kind : "ivfpq" (ADC scan of the PQ codes of ``index``, then re-rank) or "exact"
    vectors : (n, dim) base vectors in dataset row order
    queries : (Q, dim)
    centroids, cluster_ptr, cluster_nodes : the lists (coarse quantizer)
    rerank : R candidates re-ranked with their full vectors (IVF-PQ; 0 = none, else >= k)
    """
    check_scan_params(kind, len(vectors), vectors.shape[1], len(cluster_ptr) - 1, num_probes, k,
                      index.params.pq_m if index is not None else 16, rerank)
    if kind == "ivfpq" and index is None:
        raise ValueError("scan_search: kind 'ivfpq' needs its IVFPQIndex")
    mcode = METRIC_CODES[metric]
    nodes = np.asarray(cluster_nodes, np.int64)
    vecs = np.ascontiguousarray(vectors[nodes])  # position order
    Q = len(queries)
    R = max(k, rerank) if kind == "ivfpq" else k
    out_ids = np.full((Q, k), -1, np.int64)
    out_d = np.full((Q, k), np.inf, np.float32)
    rr_ids = np.full((Q, rerank if kind == "ivfpq" else 0), -1, np.int64)
    probes_all = np.zeros((Q, num_probes), np.int64)
    cent = np.ascontiguousarray(centroids, np.float32)
    for q0 in range(0, Q, chunk):
        qb = np.ascontiguousarray(queries[q0 : q0 + chunk], dtype=np.float32)
        nq = len(qb)
        probes = nearest_centroids(qb, cent, num_probes, metric)
        probes_all[q0 : q0 + nq] = probes
        pos = np.empty((nq, R), np.int64)
        dist = np.empty((nq, R), np.float32)
        cnt = np.empty(nq, np.int64)
        if kind == "ivfpq":
            _pq_scan(qb, probes, cent, cluster_ptr, index.codes, index.codebooks, mcode, pos, dist, cnt)
            if rerank:
                rr_ids[q0 : q0 + nq] = np.where(pos[:, :rerank] >= 0, nodes[np.maximum(pos[:, :rerank], 0)], -1)
                _rerank(qb, pos, cnt, vecs, mcode, dist)
        else:
            _exact_scan(qb, probes, cluster_ptr, vecs, mcode, pos, dist, cnt)
        gid = np.where(pos >= 0, nodes[np.maximum(pos, 0)], np.iinfo(np.int64).max)
        order = np.lexsort((gid, dist), axis=-1)[:, :k]
        ids = np.take_along_axis(gid, order, axis=1)
        out_d[q0 : q0 + nq] = np.take_along_axis(dist, order, axis=1)
        out_ids[q0 : q0 + nq] = np.where(ids == np.iinfo(np.int64).max, -1, ids)
    return ScanOutput(out_ids, out_d, probes_all, rr_ids)


# ------------------------------------------------------------------------------- the trace
def scan_trace(dataset: Dataset, kind: str, num_clusters: int = 64, num_probes: int = 8, k: int = 10,
               pq_m: int = 16, rerank: int = 100, seed: int = 0, kmeans_iters: int = 20,
               pq_iters: int = 20, cache_dir: str | os.PathLike | None = None,
               timings: dict | None = None):
    """Search every query of ``dataset`` with a scan index and return its logical trace.

    ``kind`` ``"ivfpq"``: the cached IVF-PQ index (:func:`get_ivfpq`), codes of ``pq_m``
    bytes, re-rank of the best ``rerank``; ``"exact"``: full vectors (``code_bytes`` =
    ``vector_bytes``), no re-rank. Each search of the trace is a scan element: the list
    (``search_cluster``), its first position (``scan_first``) and the codes read
    (``scan_count``: the whole list); the re-rank reads are the dataset rows of the
    candidates re-ranked (``rerank_ptr``/``rerank_node``). ``search_entry`` is -1 and there
    are no hops. Recall@k against the ground truth when the dataset has one.

    ``timings``, if a dict, gets ``timings["index_build_s"]``: the wall seconds of building
    the index (IVF-PQ: as recorded in its cache entry, :func:`ivfpq_build_seconds`, None if
    unknown; exact: the coarse k-means lists, measured in this call). Nothing measured enters
    the trace.
    """
    from .groundtruth import recall_at_k
    from .trace import TRACE_FORMAT_VERSION, LogicalTrace
    from .kmeans import centroid_adjacency

    if dataset.queries is None or len(dataset.queries) == 0:
        raise UserError(f"dataset {dataset.name}: no queries to trace (at least 1 needed)")
    check_scan_params(kind, dataset.n, dataset.dim, num_clusters, num_probes, k, pq_m, rerank)
    if not 1 <= num_clusters <= dataset.n:
        raise UserError(f"num_clusters={num_clusters} must be in 1..{dataset.n} (the number of base vectors)")
    g = dataset.groundtruth
    if g is not None and g.shape[1] < k:
        raise UserError(f"dataset {dataset.name}: the ground truth has {g.shape[1]} neighbors per query, "
                        f"but k={k} needs at least {k}")
    if kind == "ivfpq":
        params = IVFPQParams(num_clusters=num_clusters, pq_m=pq_m, seed=seed, kmeans_iters=kmeans_iters,
                             pq_iters=pq_iters)
        params.validate(dataset.n, dataset.dim)
        index, _ = get_ivfpq(dataset, params, cache_dir)
        cent, ptr, nodes = index.centroids, index.cluster_ptr, index.cluster_nodes
        code_bytes = index.code_bytes
        if timings is not None:
            timings["index_build_s"] = ivfpq_build_seconds(dataset, params, cache_dir)
    else:
        index = None
        rerank = 0
        t0 = time.perf_counter()
        cent, ptr, nodes = coarse_lists(dataset.base, num_clusters, seed, kmeans_iters, dataset.metric)
        if timings is not None:
            timings["index_build_s"] = time.perf_counter() - t0
        code_bytes = dataset.vector_bytes
    out = scan_search(kind, dataset.base, dataset.queries, cent, ptr, nodes, dataset.metric, num_probes, k,
                      index, rerank)
    Q, P = out.probes.shape
    s_cluster = out.probes.ravel()
    rr_valid = out.rerank_ids >= 0
    rerank_ptr = np.zeros(Q + 1, np.int64)
    np.cumsum(rr_valid.sum(axis=1), out=rerank_ptr[1:])
    if g is not None:
        qr64 = recall_at_k(out.result_ids, g[:Q], k)
        recall, qr = float(np.mean(qr64)), qr64.astype(np.float32)
    else:
        recall, qr = None, np.full(Q, np.nan, np.float32)
    meta = {
        "dataset": dataset.name, "n": dataset.n, "dim": dataset.dim, "dtype": dataset.dtype,
        "metric": dataset.metric, "vector_bytes": dataset.vector_bytes,
        "max_degree": 0,                                  # no graph
        "cand_list_len": int(max(k, rerank)),             # the scan's candidate queue
        "num_clusters": int(num_clusters), "num_probes": int(num_probes), "k": int(k),
        "recall": recall, "seed": int(seed), "num_queries": Q, "format_version": TRACE_FORMAT_VERSION,
        # added keys
        "index_kind": kind, "code_bytes": int(code_bytes), "pq_m": int(pq_m) if kind == "ivfpq" else 0,
        "rerank": int(rerank), "kmeans_iters": int(kmeans_iters),
        "pq_iters": int(pq_iters) if kind == "ivfpq" else 0,
        "dataset_fingerprint": dataset.fingerprint(),
    }
    S = Q * P
    return LogicalTrace(
        meta=meta, cluster_ptr=ptr, cluster_nodes=nodes, centroids=cent,
        cluster_adjacency=centroid_adjacency(cent, dataset.metric),
        query_ptr=np.arange(0, S + 1, P, dtype=np.int64), search_cluster=s_cluster,
        search_entry=np.full(S, -1, np.int32), search_hop_ptr=np.zeros(S + 1, np.int64),
        hop_node=np.zeros(0, np.int32), hop_degree=np.zeros(0, np.int32),
        hop_read_ptr=np.zeros(1, np.int64), read_node=np.zeros(0, np.int32),
        hop_cand_inserts=np.zeros(0, np.int32), result_ids=out.result_ids, query_recall=qr,
        scan_first=ptr[s_cluster], scan_count=np.diff(ptr)[s_cluster],
        rerank_ptr=rerank_ptr, rerank_node=out.rerank_ids[rr_valid])
