"""Difficulty measures of a vector set, used to calibrate the synthetic generators.

- Local intrinsic dimensionality, maximum-likelihood estimate (Levina & Bickel, NIPS 2004; the
  per-query form of Amsaleg et al., KDD 2015, as used by ann-benchmarks):
  ``LID(q) = -( (1/k) sum_{i<k} log(r_i / r_k) )^-1`` over the k nearest neighbor distances.
  Reported as the mean over queries of LID(q).
- Relative contrast (He, Kumar & Chang, ICML 2012): ``RC(q) = mean_x d(q, x) / min_x d(q, x)``;
  reported as the mean over queries. Lower RC = harder.

Both use Euclidean distance (or, for ``metric="ip"``, the angular distance of the normalized
vectors would be the natural choice; we report L2 on the raw vectors for every set, which is what
the SIFT/DEEP calibration needs).
"""

from __future__ import annotations

import numpy as np

__all__ = ["knn_distances", "lid_mle", "relative_contrast", "difficulty"]


def knn_distances(base: np.ndarray, queries: np.ndarray, k: int, exclude_self: bool = False):
    """Exact L2 distances to the k nearest base vectors and the mean distance to all of them.

    Returns
    -------
    knn : numpy.ndarray, shape (q, k), float64, ascending
    mean : numpy.ndarray, shape (q,), float64
    """
    b = np.asarray(base, dtype=np.float64)
    bn = np.einsum("ij,ij->i", b, b)
    knn = []
    mean = []
    for s in range(0, len(queries), 256):
        q = np.asarray(queries[s : s + 256], dtype=np.float64)
        d2 = bn[None, :] - 2.0 * q @ b.T + np.einsum("ij,ij->i", q, q)[:, None]
        d = np.sqrt(np.maximum(d2, 0.0))
        if exclude_self:
            # drop the single closest point (the query itself, distance ~0)
            d.sort(axis=1)
            mean.append(d[:, 1:].mean(axis=1))
            knn.append(d[:, 1 : k + 1])
        else:
            mean.append(d.mean(axis=1))
            part = np.partition(d, k, axis=1)[:, :k]
            knn.append(np.sort(part, axis=1))
    return np.concatenate(knn), np.concatenate(mean)


def lid_mle(knn: np.ndarray) -> np.ndarray:
    """Per-query MLE of the local intrinsic dimensionality from sorted k-NN distances (q, k)."""
    r = np.maximum(np.asarray(knn, dtype=np.float64), 1e-12)
    logs = np.log(r[:, :-1] / r[:, -1:])
    m = logs.mean(axis=1)
    with np.errstate(divide="ignore"):
        return np.where(m < 0, -1.0 / m, np.inf)


def relative_contrast(knn: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """Per-query relative contrast: mean distance over nearest-neighbor distance."""
    return mean / np.maximum(knn[:, 0], 1e-12)


def difficulty(base: np.ndarray, queries: np.ndarray, k: int = 20, exclude_self: bool = False) -> dict:
    """Mean LID (MLE over ``k`` neighbors) and mean relative contrast of ``queries`` in ``base``."""
    knn, mean = knn_distances(base, queries, k, exclude_self=exclude_self)
    lid = lid_mle(knn)
    rc = relative_contrast(knn, mean)
    return {
        "lid_mean": float(np.mean(lid[np.isfinite(lid)])),
        "lid_median": float(np.median(lid)),
        "rc_mean": float(np.mean(rc)),
        "rc_median": float(np.median(rc)),
        "k": k,
        "num_queries": int(len(queries)),
    }
