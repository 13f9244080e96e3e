"""Vamana graphs (DiskANN), built by us in numba, deterministic whatever the thread count.

Two builders of the same graph family, one graph kind each (``IndexParams.graph``):

- ``"vamana"``: as the DiskANN library builds its in-memory index (the code ``diskannpy`` runs;
  :mod:`graphs.vamana_diskann`): an empty start graph, one pass over the points in id order at
  the final alpha from the point nearest the centroid, DiskANN's occlusion in rounds of alpha
  (1, 1.2, ... up to alpha), reverse edges appended without a prune until a list holds 1.3 R
  ids, and a last prune of every list longer than R.
- ``"vamana-paper"``: as the DiskANN paper describes it (Subramanya et al., NeurIPS 2019,
  Algorithms 1-3; :mod:`graphs.vamana_paper`): a random R-regular start graph, a pass at
  alpha = 1 then a pass at alpha over one seeded random order, one RobustPrune round at the
  pass's alpha, reverse edges pruned as soon as a list exceeds R.

The library's graphs are denser (mean out-degree 34 against 29 on siftsmall at R = 64,
L = 100, alpha = 1.2; docs/graphs.md, "Vamana: the library's build and the paper's").
Distances are the ones the traced search uses: squared L2, or ``1 - <a, b>`` for inner product;
alpha multiplies (L2: divides) that distance, as in DiskANN's code, whose L2 distance is squared
too. Both builders are deterministic: points are inserted in batches whose searches read the
graph as of the batch start and whose edges are applied per target in a fixed order (module
docstrings), so the graph is identical for any number of numba threads.
"""

from __future__ import annotations

import numpy as np

from cosmos_common import UserError

from .vamana_diskann import BATCH, build_diskann, occlude
from .vamana_kernels import METRIC_CODES, pair_dist
from .vamana_paper import build_paper, prune_paper

__all__ = ["VAMANA_DEFAULTS", "VARIANTS", "build_vamana", "robust_prune", "validate_vamana"]

#: DiskANN's defaults (Subramanya et al. 2019, section 4; include/defaults.h of the DiskANN
#: repository: MAX_DEGREE = 64, BUILD_LIST_SIZE = 100, ALPHA = 1.2)
VAMANA_DEFAULTS = {"R": 64, "L": 100, "alpha": 1.2}

#: builders: "diskann" (the library's, graph kind "vamana") and "paper" (graph kind "vamana-paper")
VARIANTS = ("diskann", "paper")


def validate_vamana(R: int, L: int, alpha: float) -> None:
    """Raise :class:`cosmos_common.UserError` naming the first bad Vamana parameter."""
    if isinstance(R, bool) or not isinstance(R, (int, np.integer)) or R < 1:
        raise UserError(f"Vamana R={R!r} must be an integer >= 1 (the graph's max out-degree; DiskANN uses 64)")
    if isinstance(L, bool) or not isinstance(L, (int, np.integer)) or L < 1:
        raise UserError(f"Vamana L={L!r} must be an integer >= 1 (the build search list size; DiskANN uses 100)")
    try:
        a = float(alpha)
    except (TypeError, ValueError):
        raise UserError(f"Vamana alpha={alpha!r} must be a number >= 1 (DiskANN uses 1.2)") from None
    if not np.isfinite(a) or a < 1.0:
        raise UserError(f"Vamana alpha={alpha!r} must be a finite number >= 1 (DiskANN uses 1.2)")


def _check_variant(variant: str) -> None:
    if variant not in VARIANTS:
        raise UserError(f"Vamana variant {variant!r} unknown; expected one of {', '.join(VARIANTS)}")


def _metric_code(metric: str) -> int:
    if metric not in METRIC_CODES:
        raise ValueError(f"metric {metric!r} unknown; expected one of {', '.join(METRIC_CODES)}")
    return METRIC_CODES[metric]


def build_vamana(x: np.ndarray, metric: str, start: int, R: int = 64, L: int = 100, alpha: float = 1.2,
                 seed: int = 0, variant: str = "diskann", max_batch: int | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Build the Vamana graph of the points ``x`` (see the module docstring).

    Parameters
    ----------
    x : (m, d) uint8/int8/float32 ; metric : "l2" or "ip"
    start : int, the entry point every build search starts from, in 0..m-1 (the index passes the
        member nearest to the cluster's centroid: DiskANN's ``calculate_medoid`` for one graph)
    R, L, alpha : max out-degree, build search list size, pruning factor (the final one)
    seed : int, seed of the random start graph and the insertion order of the ``"paper"``
        variant; the ``"diskann"`` variant draws no random number (it inserts in id order)
    variant : "diskann" (the library's build) or "paper" (the paper's two passes)
    max_batch : int >= 1, optional, ``"diskann"`` only: points inserted together at most
        (default :data:`graphs.vamana_diskann.BATCH`); 1 inserts them one by one, as a
        single-threaded library build does, and gives the library's graph list for list
        (tests/test_graphs_vamana.py, against diskannpy 0.7.0's graphs of siftsmall and bigann10k)

    Returns
    -------
    indptr (m+1,) int64, indices int32: the out-neighbors of each point (local ids), at most
    ``R`` each. Identical for identical inputs whatever numba's thread count.
    """
    validate_vamana(R, L, alpha)
    _check_variant(variant)
    if max_batch is not None and (isinstance(max_batch, bool) or not isinstance(max_batch, (int, np.integer))
                                  or max_batch < 1):
        raise UserError(f"Vamana max_batch={max_batch!r} must be an integer >= 1")
    met = _metric_code(metric)
    xf = np.ascontiguousarray(x, dtype=np.float32)
    m = xf.shape[0]
    if not 0 <= start < m:
        raise ValueError(f"start={start} must be in 0..{m - 1}")
    # a list never holds more than m - 1 points, a search list never more than m: larger R or L
    # change nothing but memory
    R, L = min(int(R), max(m - 1, 1)), min(int(L), m)
    if m > 1 and variant == "paper":
        nbrs, deg = build_paper(xf, met, int(start), R, L, float(alpha), seed)
    elif m > 1:
        nbrs, deg = build_diskann(xf, met, int(start), R, L, float(alpha), max_batch or BATCH)
    else:
        nbrs, deg = np.full((m, R), -1, dtype=np.int32), np.zeros(m, dtype=np.int32)
    indptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(deg, out=indptr[1:])
    mask = np.arange(nbrs.shape[1])[None, :] < deg[:, None]
    indices = nbrs[mask].astype(np.int32)
    return indptr, indices


def robust_prune(x: np.ndarray, p: int, candidates, alpha: float, R: int, metric: str = "l2",
                 variant: str = "diskann") -> np.ndarray:
    """Prune the candidate neighbors of point ``p`` of ``x`` as one of the builders does.

    ``variant="diskann"``: DiskANN's ``occlude_list`` after its sort by (distance, id): rounds
    at alpha = 1, 1.2, 1.44, ... up to ``alpha``, each taking, nearest first, the candidates no
    kept neighbor occludes at that round's alpha. ``variant="paper"``: RobustPrune (DiskANN
    paper, Algorithm 2), one round at ``alpha``.

    Parameters
    ----------
    x : (m, d) array of the points; p : int, the point whose list is pruned
    candidates : sequence of int, point ids (duplicates and p itself are ignored)
    alpha : float >= 1 ; R : int >= 1 ; metric : "l2" (squared) or "ip" (1 - <a, b>)

    Returns
    -------
    (<= R,) int32 kept neighbor ids in the order they were kept.
    """
    validate_vamana(int(R), 1, alpha)
    _check_variant(variant)
    met = _metric_code(metric)
    xf = np.ascontiguousarray(x, dtype=np.float32)
    m = xf.shape[0]
    cand = np.ascontiguousarray(candidates, dtype=np.int32)
    if cand.size and (cand.min() < 0 or cand.max() >= m) or not 0 <= p < m:
        raise ValueError(f"robust_prune: ids must be in 0..{m - 1}")
    if variant == "paper":
        cd = np.array([pair_dist(xf, int(p), int(c), met) for c in cand], dtype=np.float32)
        return prune_paper(xf, int(p), cand, cd, float(alpha), int(R), met)
    _, first = np.unique(cand, return_index=True)
    distinct = cand[np.sort(first)]
    return occlude(xf, int(p), distinct[distinct != p], float(alpha), int(R), met)
