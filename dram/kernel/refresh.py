"""Idle refresh periods in closed form.

Part of the cycle: step 2 (refresh requests) over long idle stretches. An idle channel (empty
buffers, no pending read, refresh requests all served, every bank closed, every ready cycle in
the past) goes through the same commands in every refresh period: at each k * nREFI one REFab
per rank enters the priority buffer and issues as soon as the timing allows. Only time moves:
each such period adds the same amounts to the counters and moves every ready cycle it touches
by exactly nREFI. :func:`advance_channel` steps periods until two in a row started in that
state, then applies any number of further whole periods at once (docs/dram.md, "Idle time and
refresh"). The refresh requests themselves enter in :func:`.controller._channel_tick` and
issue from the priority buffer in :func:`.scheduler._decide`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numba import njit

from dram.config import FEATURE_POWER, NO_CONSTRAINT
from dram.jitcache import drop_stale
import dram.config as _config
from .commands import N_CMDS, PREab, REFab
from .layout import (C_MCLK, C_NREF, C_PDL, C_PQH, C_PQL, G_CHANGES, G_LOGLEN, H_LOGCAP, H_NB,
                     H_NC, H_NN, H_O_BANK, H_O_GLOB, H_O_PRIO, H_O_STATS, H_PQ, NCHF, N_STATS,
                     Q_ACT, Q_RD, Q_WR, S_REFRESH, _chs, _rdy, _u)
from .compiletime import features
from .controller import _channel_next_event, _channel_tick

# the jitted code here inlines the package's other modules and compiles in constants of
# dram.config: its cache goes when one of them changes
drop_stale(__file__, str(Path(__file__).with_name("__init__.py")), _config.__file__)


def jump_scratch(params) -> np.ndarray:
    """Work array for :func:`advance_channel` (one snapshot of a channel's counters)."""
    return np.zeros(NCHF + params.n_nodes * params.n_cmds + N_STATS + 1, np.int64)


@njit(cache=True, _nrt=False)
def _refresh_periodic(params):
    """True if an idle refresh period provably repeats itself: the refresh commands (PREab,
    REFab) keep no issue history (no windowed record) and none of their timing records has a
    negative latency (so each one it applies in a period sets its ready cycle outright,
    whatever the entry held before, as long as that was in the past)."""
    t = params.tab
    NC = N_CMDS
    for lv in range(4):
        for cmd in (PREab, REFab):
            if t[_u(params.o_hist_len + lv * NC + cmd)] != 0:
                return False
            d = params.o_dlat + (lv * NC + cmd) * 2 * NC
            for k in range(2 * NC):
                v = t[_u(d + k)]
                if v < 0 and v > NO_CONSTRAINT:
                    return False
    return True


@njit(cache=True, _nrt=False)
def _refresh_idle(params, H, g, T):
    """True if channel g, just before its tick at its next refresh cycle T, is idle in the
    sense of the section comment above (and its command log, if any, is full)."""
    c = _chs(H, g)
    if H[_u(c + C_NREF)] != T:
        return False
    if (H[_u(c + Q_RD)] != 0 or H[_u(c + Q_WR)] != 0 or H[_u(c + Q_ACT)] != 0
            or H[_u(c + C_PDL)] != 0 or H[_u(c + C_PQL)] != 0 or H[_u(c + C_MCLK)] >= T):
        return False
    if H[_u(H[_u(H_O_GLOB)] + G_LOGLEN)] < H[_u(H_LOGCAP)]:
        return False
    ob = H[_u(H_O_BANK)] + g * H[_u(H_NB)] * 3
    for k in range(H[_u(H_NB)]):
        if H[_u(ob + 3 * k)] >= 0 or H[_u(ob + 3 * k + 1)] != 0:
            return False
    rb = _rdy(H, g)
    for k in range(H[_u(H_NN)] * H[_u(H_NC)]):
        if H[_u(rb + k)] > T:
            return False
    return True


@njit(cache=True, _nrt=False)
def _snapshot(params, H, g, scratch):
    c = _chs(H, g)
    nr = H[_u(H_NN)] * H[_u(H_NC)]
    rb = _rdy(H, g)
    os_ = H[_u(H_O_STATS)] + g * N_STATS
    for k in range(NCHF):
        scratch[_u(k)] = H[_u(c + k)]
    for k in range(nr):
        scratch[_u(NCHF + k)] = H[_u(rb + k)]
    for k in range(N_STATS):
        scratch[_u(NCHF + nr + k)] = H[_u(os_ + k)]
    scratch[_u(NCHF + nr + N_STATS)] = H[_u(H[_u(H_O_GLOB)] + G_CHANGES)]


@njit(cache=True, _nrt=False)
def _jump_periods(params, H, g, scratch, m):
    """Apply ``m`` more idle refresh periods to channel g, which is at the start of one, the
    previous period (whose start state ``scratch`` holds) having been idle too: every counter
    and every ready cycle moves on by m times its change over that period, and the priority
    ring's head and entries are those m periods of one REFab per rank leave. Returns False,
    changing nothing, if the period did not behave as an idle one must (a safety check)."""
    c = _chs(H, g)
    nr = H[_u(H_NN)] * H[_u(H_NC)]
    rb = _rdy(H, g)
    nrefi = params.nREFI
    PQ = H[_u(H_PQ)]
    n_per = params.n_ranks if params.n_ranks < PQ else PQ   # REFab per period
    os_ = H[_u(H_O_STATS)] + g * N_STATS
    if H[_u(os_ + S_REFRESH)] - scratch[_u(NCHF + nr + S_REFRESH)] != n_per:
        return False
    if H[_u(c + C_NREF)] - scratch[_u(C_NREF)] != nrefi:
        return False
    dq = H[_u(c + C_PQH)] - scratch[_u(C_PQH)] - n_per
    if dq % PQ != 0:
        return False
    for k in range(nr):
        d = H[_u(rb + k)] - scratch[_u(NCHF + k)]
        if d != 0 and d != nrefi:
            return False
    # the checks passed: move everything on
    for k in range(NCHF):
        if k != C_PQH:
            H[_u(c + k)] += m * (H[_u(c + k)] - scratch[_u(k)])
    for k in range(nr):
        H[_u(rb + k)] += m * (H[_u(rb + k)] - scratch[_u(NCHF + k)])
    for k in range(N_STATS):
        H[_u(os_ + k)] += m * (H[_u(os_ + k)] - scratch[_u(NCHF + nr + k)])
    og = H[_u(H_O_GLOB)]
    H[_u(og + G_CHANGES)] += m * (H[_u(og + G_CHANGES)] - scratch[_u(NCHF + nr + N_STATS)])
    # the ring: push i (i = 0, 1, ... from now) writes rank i % n_per at head + i; only the
    # last PQ pushes are still there
    n_push = m * n_per
    head = H[_u(c + C_PQH)]
    op = H[_u(H_O_PRIO)] + g * PQ
    i0 = n_push - PQ if n_push > PQ else 0
    for i in range(i0, n_push):
        H[_u(op + (head + i) % PQ)] = i % n_per
    H[_u(c + C_PQH)] = (head + n_push) % PQ
    return True


@njit(cache=True, _nrt=False)
def advance_channel(params, H, g, clk_from, clk_to, scratch, jump, max_ticks):
    """Tick channel g at every cycle in [clk_from, clk_to] at which something can happen, for
    a driver that offers it nothing in between; stop early after ``max_ticks`` ticks.

    With ``jump``, idle refresh periods are applied in closed form (section comment above):
    once two periods in a row started idle (stepped tick by tick), all further whole periods
    that end by ``clk_to`` are added at once, so a gap costs a few periods of stepping
    whatever its length. The state is the one stepping gives, bit for bit (tests compare
    them); ``jump=False`` steps every period.

    Returns (first cycle not yet processed: clk_to + 1 when done, ticks done). ``scratch``:
    :func:`jump_scratch`.
    """
    nrefi = params.nREFI
    c = _channel_next_event(H, g, clk_from)
    if jump:
        # (not with the power-state policy: its power-down after each refresh makes a
        # period's commands depend on its timers; such periods are stepped)
        jump = (params.refresh == 1 and (features(params) & FEATURE_POWER) == 0
                and clk_to - c >= 3 * nrefi and _refresh_periodic(params))
    oc = _chs(H, g)
    seen = 0            # consecutive idle period starts so far
    ticks = 0
    while c <= clk_to:
        if ticks >= max_ticks:
            return c, ticks
        if jump and c == H[_u(oc + C_NREF)]:
            if not _refresh_idle(params, H, g, c):
                seen = 0
            elif seen < 2:
                seen += 1
                if seen == 2:
                    _snapshot(params, H, g, scratch)
            else:
                m = (clk_to + 1 - c) // nrefi
                if m > 0:
                    if _jump_periods(params, H, g, scratch, m):
                        c = _channel_next_event(H, g, c + m * nrefi)
                        seen = 0
                        continue
                    jump = False                # not periodic after all: step
        _channel_tick(params, H, g, c)
        ticks += 1
        c = _channel_next_event(H, g, c + 1)
    return clk_to + 1, ticks
