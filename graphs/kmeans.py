"""Seeded k-means (numpy), nearest-centroid assignment, cluster sizes and centroid adjacency.

Training follows common practice of faiss' ``Clustering``: Lloyd iterations on a random sample
of at most ``max_points_per_centroid`` (256, faiss' default) points per centroid, k-means++
seeding (Arthur & Vassilvitskii, SODA 2007), empty clusters re-seeded by splitting the largest
one. Every base point is then assigned to its nearest centroid (for ``metric="ip"``: largest
inner product, as an IVF index with an inner-product quantizer does). All randomness comes from
``numpy.random.default_rng(seed)``; matrix products are float32 BLAS, so results are identical
for the same inputs on the same machine and BLAS.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from cosmos_common.numba_cache import install as _check_numba_cache

_check_numba_cache()    # cached kernels are checked before use (cosmos_common.numba_cache)

__all__ = ["kmeans", "assign", "nearest_centroids", "cluster_csr", "centroid_adjacency"]


def _scores(x: np.ndarray, c: np.ndarray, metric: str) -> np.ndarray:
    """Distance-like scores (smaller = closer) between rows of x (float32) and centroids c."""
    dots = x @ c.T
    if metric == "ip":
        return -dots
    return np.einsum("ij,ij->i", c, c)[None, :] - 2.0 * dots


def nearest_centroids(x: np.ndarray, centroids: np.ndarray, num: int, metric: str) -> np.ndarray:
    """The ``num`` nearest centroids of each row of ``x``, nearest first (ties -> smaller id):
    the routing of a clustered search (graphs.search.route, graphs.ivfpq, graphs.templates).

    Returns
    -------
    numpy.ndarray, shape (len(x), num), int64
    """
    score = _scores(np.asarray(x, dtype=np.float32), centroids, metric)
    return np.argsort(score, axis=1, kind="stable")[:, :num].astype(np.int64)


def assign(x: np.ndarray, centroids: np.ndarray, metric: str = "l2", block: int = 65536) -> np.ndarray:
    """Index of the nearest centroid of each row (ties -> smaller index).

    Returns
    -------
    numpy.ndarray, shape (n,), int32
    """
    c = np.asarray(centroids, dtype=np.float32)
    out = np.empty(len(x), dtype=np.int32)
    for s in range(0, len(x), block):
        out[s : s + block] = np.argmin(_scores(np.asarray(x[s : s + block], dtype=np.float32), c, metric), axis=1)
    return out


@njit(cache=True)
def _cluster_sums(xs, a, k):
    """(k, d) float64 sums of the rows of each cluster, added in row order (what
    ``np.add.at(sums, a, xs)`` computes, bit for bit, without its per-element overhead)."""
    sums = np.zeros((k, xs.shape[1]), dtype=np.float64)
    for i in range(xs.shape[0]):
        c = a[i]
        for j in range(xs.shape[1]):
            sums[c, j] += np.float64(xs[i, j])
    return sums


def _kmeanspp(x: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    n = len(x)
    centers = np.empty((k, x.shape[1]), dtype=np.float32)
    centers[0] = x[rng.integers(n)]
    xn = np.einsum("ij,ij->i", x, x)
    d2 = np.maximum(xn - 2.0 * x @ centers[0] + centers[0] @ centers[0], 0.0)
    for j in range(1, k):
        tot = float(d2.sum())
        i = int(rng.choice(n, p=d2 / tot)) if tot > 0 else int(rng.integers(n))
        centers[j] = x[i]
        d2 = np.minimum(d2, np.maximum(xn - 2.0 * x @ centers[j] + centers[j] @ centers[j], 0.0))
    return centers


def kmeans(
    x: np.ndarray,
    k: int,
    seed: int = 0,
    iters: int = 20,
    metric: str = "l2",
    max_points_per_centroid: int = 256,
) -> np.ndarray:
    """Train ``k`` centroids on ``x``.

    Parameters
    ----------
    x : numpy.ndarray, shape (n, d), any numeric dtype
    k : int
        Number of clusters, 1 <= k <= n.
    seed : int
    iters : int
        Lloyd iterations.
    metric : {"l2", "ip"}
        Assignment rule used during training.

    Returns
    -------
    numpy.ndarray, shape (k, d), float32
    """
    n = len(x)
    if not 1 <= k <= n:
        raise ValueError(f"num_clusters={k} must be in 1..{n} (the number of base vectors)")
    rng = np.random.default_rng(seed)
    m = min(n, k * max_points_per_centroid)
    idx = np.sort(rng.choice(n, size=m, replace=False)) if m < n else np.arange(n)
    xs = np.asarray(x[idx], dtype=np.float32)
    c = _kmeanspp(xs, k, rng)
    for _ in range(iters):
        a = np.argmin(_scores(xs, c, metric), axis=1)
        counts = np.bincount(a, minlength=k)
        sums = _cluster_sums(xs, a, k)
        nonempty = counts > 0
        c[nonempty] = (sums[nonempty] / counts[nonempty, None]).astype(np.float32)
        for j in np.flatnonzero(~nonempty):  # split the largest cluster (faiss does the same)
            big = int(np.argmax(counts))
            eps = rng.normal(scale=1e-3, size=xs.shape[1]).astype(np.float32) * (np.abs(c[big]).mean() + 1e-6)
            c[j] = c[big] + eps
            c[big] = c[big] - eps
            counts[j] = counts[big] // 2
            counts[big] -= counts[j]
    return c


def cluster_csr(labels: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Group point ids by cluster.

    Returns
    -------
    cluster_ptr : numpy.ndarray, shape (k+1,), int64
    cluster_nodes : numpy.ndarray, shape (n,), int32
        Members of each cluster in increasing id order.
    """
    order = np.argsort(labels, kind="stable").astype(np.int32)
    counts = np.bincount(labels, minlength=k)
    ptr = np.zeros(k + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    return ptr, order


def centroid_adjacency(centroids: np.ndarray, metric: str = "l2") -> np.ndarray:
    """For each cluster, all other clusters ordered by centroid proximity (nearest first).

    Proximity is the L2 distance between centroids (also for ``ip`` datasets: adjacency is a
    property of where clusters lie, used by placement). Ties go to the smaller index.

    Returns
    -------
    numpy.ndarray, shape (C, C-1), int32
    """
    c = np.asarray(centroids, dtype=np.float64)
    k = len(c)
    cn = np.einsum("ij,ij->i", c, c)
    d = cn[:, None] + cn[None, :] - 2.0 * (c @ c.T)
    np.fill_diagonal(d, np.inf)
    order = np.argsort(d, axis=1, kind="stable")[:, : k - 1]
    return order.astype(np.int32)
