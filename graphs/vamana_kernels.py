"""The distance kernel both Vamana builders share (:mod:`graphs.vamana_diskann`, :mod:`graphs.vamana_paper`)."""

from __future__ import annotations

import numpy as np
from numba import njit

from cosmos_common.numba_cache import install as _check_numba_cache

_check_numba_cache()    # cached kernels are checked before use (cosmos_common.numba_cache)

__all__ = ["METRIC_CODES", "pair_dist"]

#: metric name -> kernel code
METRIC_CODES = {"l2": 0, "ip": 1}


@njit(cache=True, fastmath=True)
def pair_dist(x, a, b, metric):
    """Distance between rows a and b of x (float32): squared L2 (metric 0) or 1 - <x_a, x_b> (1)."""
    s = np.float32(0.0)
    if metric == 0:
        for j in range(x.shape[1]):
            t = x[a, j] - x[b, j]
            s += t * t
        return s
    for j in range(x.shape[1]):
        s += x[a, j] * x[b, j]
    return np.float32(1.0) - s
