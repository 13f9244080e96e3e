"""Proximity-ordered cluster adjacency: for each cluster, the other clusters by centroid distance.

The adjacency list of cluster ``c`` holds the ids of the other clusters ordered by the
distance between their centroids and ``c``'s centroid, nearest first (docs/contracts.md,
section 2: ``cluster_adjacency``, ``(C, A)``, ``-1`` padded). Equal distances are ordered by
the lower cluster id, so the result is deterministic.
"""

from __future__ import annotations

import numpy as np

from cosmos_common import UserError

__all__ = ["cluster_adjacency", "validate_adjacency"]

#: Distance-matrix elements computed per chunk (rows x C): bounds the working memory of
#: :func:`cluster_adjacency` to about 8 bytes x this many (plus the output).
_CHUNK_ELEMENTS = 1 << 23


def cluster_adjacency(
    centroids,
    num_neighbors: int,
    *,
    metric: str = "l2",
    chunk_rows: int | None = None,
) -> np.ndarray:
    """Proximity-ordered neighbor clusters of every cluster, from the centroids.

    Parameters
    ----------
    centroids : array_like, shape (C, d), real
        One centroid per cluster.
    num_neighbors : int
        Length ``A`` of each list; at most ``C - 1`` neighbors exist, so rows are padded with
        ``-1`` beyond that.
    metric : {"l2", "ip", "cosine", "angular"}
        ``l2``: squared Euclidean distance; ``ip``: negative inner product (largest inner
        product first); ``cosine`` (or ``angular``, its name in big-ann-benchmarks): negative
        cosine similarity.
    chunk_rows : int, optional
        Rows of the distance matrix computed at once (default: enough to hold about 8 M
        distances), so memory stays ``O(chunk_rows x C)`` for large ``C``.

    Returns
    -------
    adjacency : ndarray, shape (C, A), int32 (int64 if C >= 2**31)
        ``adjacency[c, j]`` is the ``j``-th nearest other cluster of ``c``; ties in distance
        go to the lower cluster id; ``-1`` pads rows when ``A > C - 1``.
    """
    x = np.asarray(centroids)
    if x.ndim != 2:
        raise UserError(f"centroids must be a 2-D array (clusters x dims), got shape {x.shape}")
    if not np.issubdtype(x.dtype, np.number) or np.issubdtype(x.dtype, np.complexfloating):
        raise UserError(f"centroids must be real numbers, got dtype {x.dtype}")
    x = x.astype(np.float64, copy=False)
    if not np.all(np.isfinite(x)):
        bad = int(np.argwhere(~np.isfinite(x))[0, 0])
        raise UserError(f"centroids contain NaN or infinity (first in cluster {bad})")
    num_neighbors = int(num_neighbors)
    if num_neighbors < 0:
        raise UserError(f"num_neighbors must be >= 0, got {num_neighbors}")
    C = x.shape[0]
    dtype = np.int32 if C < 2**31 else np.int64
    out = np.full((C, num_neighbors), -1, dtype=dtype)
    k = min(num_neighbors, C - 1)
    if k <= 0:
        return out

    if metric == "l2":
        sq = np.einsum("ij,ij->i", x, x)
    elif metric == "ip":
        pass
    elif metric in ("cosine", "angular"):     # the same ordering (graphs' spelling too)
        norms = np.linalg.norm(x, axis=1)
        if np.any(norms == 0):
            raise UserError(
                f"metric {metric!r} needs non-zero centroids; cluster {int(np.argmin(norms))} is zero"
            )
        x = x / norms[:, None]
    else:
        raise UserError(f"unknown metric {metric!r}; valid choices: 'l2', 'ip', 'cosine', 'angular'")

    if chunk_rows is None:
        chunk_rows = max(1, _CHUNK_ELEMENTS // C)
    chunk_rows = int(chunk_rows)
    if chunk_rows < 1:
        raise UserError(f"chunk_rows must be >= 1, got {chunk_rows}")

    ids = np.arange(C)
    for r0 in range(0, C, chunk_rows):
        r1 = min(C, r0 + chunk_rows)
        g = x[r0:r1] @ x.T  # (b, C)
        if metric == "l2":
            dist = sq[r0:r1, None] - 2.0 * g + sq[None, :]
        else:
            dist = -g
        rows = np.arange(r1 - r0)
        dist[rows, ids[r0:r1]] = np.inf  # never a neighbor of itself
        # The k-th smallest distance of each row, then every id at or below it, sorted by
        # (distance, id): exact and deterministic even with ties at the boundary.
        kth = np.partition(dist, k - 1, axis=1)[:, k - 1]
        for i in range(r1 - r0):
            cand = np.flatnonzero(dist[i] <= kth[i])
            o = np.lexsort((cand, dist[i, cand]))[:k]
            out[r0 + i, :k] = cand[o]
    return out


def validate_adjacency(adjacency, num_clusters: int, *, name: str = "adjacency") -> np.ndarray:
    """Check a proximity-ordered adjacency array; return it as an int32 or int64 array.

    Rules: 2-D ``(C, A)`` with ``C == num_clusters``; integer ids in ``[0, C)`` or ``-1``;
    ``-1`` only as trailing padding of a row; a cluster never lists itself. Errors name the
    first offending cluster and position. A list of rows of different lengths is accepted
    and padded with ``-1``.
    """
    if isinstance(adjacency, (list, tuple)) and any(
        isinstance(r, (list, tuple, np.ndarray)) for r in adjacency
    ):
        width = max((len(r) for r in adjacency), default=0)
        if any(len(r) != width for r in adjacency):
            adjacency = [list(r) + [-1] * (width - len(r)) for r in adjacency]
    a = np.asarray(adjacency)
    if a.ndim != 2:
        raise UserError(f"{name} must be a 2-D array (clusters x neighbors), got shape {a.shape}")
    if a.shape[0] != num_clusters:
        raise UserError(
            f"{name} has {a.shape[0]} rows but there are {num_clusters} clusters (one row per cluster)"
        )
    if a.size and not np.issubdtype(a.dtype, np.integer):
        if not np.issubdtype(a.dtype, np.floating) or not np.all(np.isfinite(a)) or np.any(a != np.round(a)):
            raise UserError(f"{name} must hold integer cluster ids, got dtype {a.dtype}")
    if a.dtype not in (np.int32, np.int64):
        a = a.astype(np.int64)
    if a.size == 0:
        return a
    lo, hi = int(a.min()), int(a.max())
    if lo < -1 or hi >= num_clusters:
        bad = (a < -1) | (a >= num_clusters)
        c, j = (int(v) for v in np.argwhere(bad)[0])
        raise UserError(
            f"{name}[{c}, {j}] = {int(a[c, j])} is not a cluster id: expected 0..{num_clusters - 1} "
            f"or -1 for padding"
        )
    if lo == -1:  # padding present: it must be trailing
        valid = a >= 0
        gap = valid[:, 1:] & ~valid[:, :-1]
        if gap.any():
            c, j = (int(v) for v in np.argwhere(gap)[0])
            raise UserError(
                f"{name}[{c}, {j + 1}] = {int(a[c, j + 1])} follows -1 padding: -1 may only pad the end of a row"
            )
    self_ref = a == np.arange(num_clusters)[:, None]
    if self_ref.any():
        c, j = (int(v) for v in np.argwhere(self_ref)[0])
        raise UserError(f"{name}[{c}, {j}]: cluster {c} lists itself as its own neighbor")
    return a
