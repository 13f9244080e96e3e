"""Exact k-nearest-neighbor ground truth by blocked brute force with bounded memory.

The base is walked in blocks of ``base_block`` vectors and, for each, the queries in blocks of
``query_block``: one float32 matrix product (into a buffer allocated once) gives the distances
up to a per-query constant, and a jitted scan offers each of them to the query's bounded heap of
the ``k + margin`` best so far, ordered by (distance, id). Almost every distance loses against the
heap's worst entry and costs one comparison, so the scan is a few percent of the product. The
survivors are then re-ranked with distances recomputed in float64 and ties broken by the smaller
id, so the result is exact whenever the float32 ranking error is smaller than the margin (for
uint8/int8 data every partial sum is an integer below 2^24, so the float32 products and the
survivors are exact).

Peak memory is about ``query_block * base_block * 4`` bytes (the product buffer; 128 MB with the
defaults 1024 x 32768) plus ``12 * (k + margin)`` bytes per query and the input. 10,000 queries
over 1M 128-dimensional vectors take about 27 s on 2 cores (AMD EPYC Zen 4, measured by
experiments/tools/bench_graphs.py; the matrix products, in numpy's BLAS, are most of it).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from cosmos_common.numba_cache import install as _check_numba_cache

_check_numba_cache()    # cached kernels are checked before use (cosmos_common.numba_cache)

__all__ = ["exact_knn", "recall_at_k"]


def _as_f32(x):
    return np.asarray(x, dtype=np.float32)


@njit(cache=True, inline="always")
def _replace_worst(hd, hi, d, i):
    """Put (d, i) in place of the root of the max-heap (hd, hi), ordered by (distance, id),
    and sift it down."""
    kk = hd.shape[0]
    p = 0
    while True:
        c = 2 * p + 1
        if c >= kk:
            break
        if c + 1 < kk and (hd[c + 1] > hd[c] or (hd[c + 1] == hd[c] and hi[c + 1] > hi[c])):
            c += 1
        if hd[c] > d or (hd[c] == d and hi[c] > i):
            hd[p] = hd[c]
            hi[p] = hi[c]
            p = c
        else:
            break
    hd[p] = d
    hi[p] = i


@njit(cache=True, parallel=True)
def _offer_block(dots, norms, first_id, l2, heap_d, heap_i):
    """Offer the distances of one (query block, base block) pair to the queries' heaps.

    ``dots[r, j]`` is query ``r`` dotted with base vector ``first_id + j``; the distance is
    ``norms[j] - 2 dots[r, j]`` (l2, the same float32 operations as numpy's) or ``-dots[r, j]``
    (inner product). Base ids only grow, so a distance equal to the heap's worst never
    displaces it: each heap keeps the smallest (distance, id) pairs.
    """
    two = np.float32(2.0)
    for r in prange(dots.shape[0]):
        hd = heap_d[r]
        hi = heap_i[r]
        top = hd[0]
        for j in range(dots.shape[1]):
            d = norms[j] - two * dots[r, j] if l2 else -dots[r, j]
            if d < top:
                _replace_worst(hd, hi, d, first_id + j)
                top = hd[0]


def exact_knn(
    base: np.ndarray,
    queries: np.ndarray,
    k: int,
    metric: str = "l2",
    query_block: int = 1024,
    base_block: int = 32768,
    margin: int = 16,
    progress: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact k nearest base vectors of each query.

    Parameters
    ----------
    base : numpy.ndarray, shape (n, d)
    queries : numpy.ndarray, shape (q, d)
    k : int
        Number of neighbors, 1 <= k <= n.
    metric : {"l2", "ip"}
        Squared Euclidean distance (smaller is closer) or inner product (larger is closer).

    Returns
    -------
    ids : numpy.ndarray, shape (q, k), int64
    dists : numpy.ndarray, shape (q, k), float64
        Squared L2 distance, or the inner product for ``"ip"`` (descending).
    """
    n, d = base.shape
    if queries.ndim != 2 or queries.shape[1] != d:
        raise ValueError(f"queries have shape {queries.shape}, expected (q, {d}) to match the base")
    if not 1 <= k <= n:
        raise ValueError(f"k={k} must be in 1..{n} (the number of base vectors)")
    if metric not in ("l2", "ip"):
        raise ValueError(f"metric '{metric}' unknown; expected 'l2' or 'ip'")
    kk = min(n, k + margin)
    nq = len(queries)
    out_i = np.empty((nq, k), dtype=np.int64)
    out_d = np.empty((nq, k), dtype=np.float64)
    heap_d = np.full((nq, kk), np.inf, dtype=np.float32)
    heap_i = np.full((nq, kk), -1, dtype=np.int64)
    buf = np.empty(min(query_block, nq) * min(base_block, n), dtype=np.float32)
    q32 = _as_f32(queries)
    blocks = range(0, n, base_block)
    if progress:
        from tqdm import tqdm

        blocks = tqdm(blocks, desc="ground truth", unit="block")
    for s in blocks:
        b = _as_f32(base[s : s + base_block])
        norms = np.einsum("ij,ij->i", b, b)
        for qs in range(0, nq, query_block):
            q = q32[qs : qs + query_block]
            dots = np.matmul(q, b.T, out=buf[: len(q) * len(b)].reshape(len(q), len(b)))
            _offer_block(dots, norms, s, metric == "l2", heap_d[qs : qs + len(q)],
                         heap_i[qs : qs + len(q)])
    short = np.flatnonzero((heap_i < 0).any(axis=1))    # heaps not filled
    if short.size:
        bad = int(short[0])
        raise ValueError(f"query {bad}: fewer than {kk} finite distances to the base "
                         "(non-finite values in the base or the queries?)")
    # exact re-rank in float64, ties -> smaller id
    for qs in range(0, nq, query_block):
        best_i = heap_i[qs : qs + query_block]
        qv = np.asarray(queries[qs : qs + query_block], dtype=np.float64)
        cv = np.asarray(base[best_i.ravel()], dtype=np.float64).reshape(len(qv), kk, d)
        if metric == "l2":
            ex = ((cv - qv[:, None, :]) ** 2).sum(axis=2)
            key = ex
        else:
            ex = np.einsum("qkd,qd->qk", cv, qv)
            key = -ex
        order = np.lexsort((best_i, key), axis=-1)
        out_i[qs : qs + len(qv)] = np.take_along_axis(best_i, order, axis=1)[:, :k]
        out_d[qs : qs + len(qv)] = np.take_along_axis(ex, order, axis=1)[:, :k]
    return out_i, out_d


def recall_at_k(result_ids: np.ndarray, groundtruth: np.ndarray, k: int) -> np.ndarray:
    """Per-query recall@k: |result[:k] & gt[:k]| / k.

    Parameters
    ----------
    result_ids : numpy.ndarray, shape (q, >=k), int (-1 = missing)
    groundtruth : numpy.ndarray, shape (q, >=k), int

    Returns
    -------
    numpy.ndarray, shape (q,), float64
    """
    if groundtruth.shape[1] < k or result_ids.shape[1] < k:
        raise ValueError(f"recall@{k} needs at least {k} result and ground-truth columns, got "
                         f"{result_ids.shape[1]} and {groundtruth.shape[1]}")
    r = np.asarray(result_ids[:, :k])
    g = np.asarray(groundtruth[:, :k])
    hits = (r[:, :, None] == g[:, None, :]) & (r[:, :, None] >= 0)
    return hits.any(axis=2).sum(axis=1) / k
