"""The steady-state window of a run: which completions its throughput and energy are taken over.

A leaf module (numpy only), so that cosmos.metrics and cosmos.energy, which both measure over
it, depend on it and not on each other.
"""

from __future__ import annotations

import numpy as np


def steady_window(done_cycles: np.ndarray, warmup: float = 0.1, until: int | None = None):
    """(lo, hi, mask): the steady-state window in cycles and the queries completing in it.

    ``until``: the window is that of the completions at or before this cycle (a run stopped
    by ``ci_target``: the completions its stop test saw); ``mask`` still covers every query.
    """
    if not 0 <= warmup < 0.5:
        raise ValueError(f"warmup must be in [0, 0.5), got {warmup}")
    d = np.sort(done_cycles if until is None else done_cycles[done_cycles <= until])
    Q = d.shape[0]
    i_lo = int(np.floor(warmup * Q))
    i_hi = max(i_lo + 1, int(np.ceil((1 - warmup) * Q)) - 1)
    i_hi = min(i_hi, Q - 1)
    lo = d[i_lo] if i_lo > 0 else 0
    hi = d[i_hi]
    mask = (done_cycles > lo) & (done_cycles <= hi) if i_lo > 0 else done_cycles <= hi
    return int(lo), int(hi), mask
