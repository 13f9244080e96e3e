"""Exact k-nearest-neighbor ground truth by blocked brute force with bounded memory.

Queries are processed in blocks of ``query_block`` and the base in blocks of ``base_block``;
for each pair of blocks a float32 matrix product gives the distances up to a per-query
constant, and a running top-``k + margin`` is kept. The survivors are then re-ranked with
distances recomputed in float64 and ties broken by the smaller id, so the result is exact
whenever the float32 ranking error is smaller than the margin (for uint8/int8 data every
partial sum is an integer below 2^24, so the float32 products are exact).

Peak memory is about ``query_block * base_block * 16`` bytes (products, distances and
argpartition indices of one block pair) plus the input; with the defaults (1024 x 32768) that is
~0.5 GB, so 10,000 queries
over 1M vectors need well under the "few GB" budget and run in a minute or two on 2 cores.
"""

from __future__ import annotations

import numpy as np

__all__ = ["exact_knn", "recall_at_k"]


def _as_f32(x):
    return np.asarray(x, dtype=np.float32)


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
    norms = np.empty(n, dtype=np.float32)
    for s in range(0, n, base_block):
        b = _as_f32(base[s : s + base_block])
        norms[s : s + len(b)] = np.einsum("ij,ij->i", b, b)
    blocks = range(0, nq, query_block)
    if progress:
        from tqdm import tqdm

        blocks = tqdm(blocks, desc="ground truth", unit="block")
    for qs in blocks:
        q = _as_f32(queries[qs : qs + query_block])
        best_d = np.full((len(q), kk), np.inf, dtype=np.float32)
        best_i = np.zeros((len(q), kk), dtype=np.int64)
        for s in range(0, n, base_block):
            b = _as_f32(base[s : s + base_block])
            dots = q @ b.T
            dist = (norms[None, s : s + len(b)] - 2.0 * dots) if metric == "l2" else -dots
            if dist.shape[1] > kk:  # block top-kk first: keeps the temporaries to one block
                sel = np.argpartition(dist, kk - 1, axis=1)[:, :kk]
                blk_d = np.take_along_axis(dist, sel, axis=1)
                blk_i = sel + s
            else:
                blk_d = dist
                blk_i = np.broadcast_to(np.arange(s, s + len(b)), dist.shape)
            del dots, dist
            cat_d = np.concatenate([best_d, blk_d], axis=1)
            cat_i = np.concatenate([best_i, blk_i], axis=1)
            sel = np.argpartition(cat_d, kk - 1, axis=1)[:, :kk]
            best_d = np.take_along_axis(cat_d, sel, axis=1)
            best_i = np.take_along_axis(cat_i, sel, axis=1)
        # exact re-rank in float64, ties -> smaller id
        qv = np.asarray(queries[qs : qs + query_block], dtype=np.float64)
        cv = np.asarray(base[best_i.ravel()], dtype=np.float64).reshape(len(q), kk, d)
        if metric == "l2":
            ex = ((cv - qv[:, None, :]) ** 2).sum(axis=2)
            key = ex
        else:
            ex = np.einsum("qkd,qd->qk", cv, qv)
            key = -ex
        order = np.lexsort((best_i, key), axis=-1)
        out_i[qs : qs + len(q)] = np.take_along_axis(best_i, order, axis=1)[:, :k]
        out_d[qs : qs + len(q)] = np.take_along_axis(ex, order, axis=1)[:, :k]
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
