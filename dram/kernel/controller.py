"""One controller cycle of one channel, and the event skipping around it.

Part of the cycle: the cycle itself (docs/dram.md, "Controller"): :func:`_channel_tick` runs
steps 1 (completed reads) and 2 (refresh requests), asks the scheduler (:mod:`.scheduler`) for
a command and serves it (:func:`_serve`: issue, row statistics, a request's final command
ending it). Idle cycles cost nothing: each channel keeps ``wake``, the earliest cycle at which
its decision can change, and :func:`_tick` skips it before then; :func:`_next_event` tells a
driver the next cycle at which anything can happen.
"""

from __future__ import annotations

from pathlib import Path

from numba import njit

from dram.config import FEATURE_POWER, FEATURE_SAME_BANK, M_AUTOPRE, M_OPEN
from dram.jitcache import drop_stale
import dram.config as _config
from .commands import FINAL_SLOT, LIVE_CMDS
from .compiletime import features
from .layout import (C_EPOCH, C_NA, C_NREF, C_OFFSTAMP, C_PDH, C_PDL, C_PQH, C_PQL, C_WAKE,
                     C_WMODE, D_REFRESHED, G_CHANGES, H_DIRECT, H_G, H_O_GLOB, H_O_PEND, H_O_PRIO,
                     H_O_STATS, H_PD, H_PQ, INF, N_STATS, PS_SR, RA_LASTCMD, RA_LASTREQ,
                     RA_NREQ, RA_PS, Q_ACT, Q_FREE, Q_RD, Q_WR, SL_ARR, SL_FB,
                     SL_FINAL, SL_ID, SL_LNEXT, SL_LPREV, SL_RANK, SL_ROW, SL_STAT, SL_TYPE,
                     S_RD_HIT, S_READS, S_WRITES, S_WR_HIT, T_READ, _bank, _bkl, _chs, _meta, _q,
                     _rdy, _remove_at, _slot, _u, _wrap)
from .timing import ready_time
from .issue import _ract, issue_command
from .scheduler import _decide, _recache
from .frontend import _push_completion

# the jitted code here inlines the package's other modules and compiles in constants of
# dram.config: its cache goes when one of them changes
drop_stale(__file__, str(Path(__file__).with_name("__init__.py")), _config.__file__)


@njit(cache=True, inline="always", _nrt=False)
def _na_index(final):
    """Channel-scalar index of the active-request count of a final command (an
    auto-precharge variant counts as its plain command: ``commands.FINAL_SLOT``)."""
    return C_NA + FINAL_SLOT[final]


@njit(cache=True, _nrt=False)
def _row_has_other(params, H, g, s):
    """True if another buffered request (read, write or active) targets the same row."""
    o = _slot(H, g, s)
    fb = H[_u(o + SL_FB)]
    row = H[_u(o + SL_ROW)]
    c = _chs(H, g)
    for qi in range(3):
        oq = _q(H, g, qi)
        for k in range(H[_u(c + qi)]):
            s2 = H[_u(oq + k)]
            o2 = _slot(H, g, s2)
            if s2 != s and H[_u(o2 + SL_FB)] == fb and H[_u(o2 + SL_ROW)] == row:
                return True
    return False


@njit(cache=True, inline="always", _nrt=False)
def _serve(params, H, g, qi, pos, cmd, clk):
    """Issue ``cmd`` for the request at ``pos`` of queue ``qi`` and advance the request."""
    c = _chs(H, g)
    s = H[_u(_q(H, g, qi) + pos)]
    o = _slot(H, g, s)
    rank = H[_u(o + SL_RANK)]
    fb = H[_u(o + SL_FB)]
    row = H[_u(o + SL_ROW)]
    final = H[_u(o + SL_FINAL)]
    if params.row_policy == 1 and cmd == final:      # closed page: auto-precharge when alone
        ap = _meta(params, M_AUTOPRE, cmd)
        if ap != cmd and not _row_has_other(params, H, g, s):
            if ready_time(params, H, g, ap, rank, fb) <= clk:
                cmd = ap
                final = ap
                H[_u(o + SL_FINAL)] = ap
    os_ = H[_u(H_O_STATS)] + g * N_STATS
    if H[_u(o + SL_STAT)] == 0:                          # row statistics at the first command
        H[_u(o + SL_STAT)] = 1
        ob = H[_u(_bank(H, g, fb))]
        base = S_RD_HIT if H[_u(o + SL_TYPE)] == T_READ else S_WR_HIT
        if ob == row:
            H[_u(os_ + base)] += 1
        elif ob >= 0:
            H[_u(os_ + base + 2)] += 1
        else:
            H[_u(os_ + base + 1)] += 1
    issue_command(params, H, g, cmd, rank, fb, row, clk)
    H[_u(H[_u(H_O_GLOB)] + G_CHANGES)] += 1
    H[_u(c + C_EPOCH)] += 1
    if (features(params) & FEATURE_POWER) != 0:      # the power-state policy's idle timers
        orr = _ract(H, g, rank)
        H[_u(orr + RA_LASTCMD)] = clk
        H[_u(orr + RA_LASTREQ)] = clk
        if cmd == final:
            H[_u(orr + RA_NREQ)] -= 1
    if cmd == final:
        if qi == Q_ACT:
            H[_u(_bank(H, g, fb) + 1)] -= 1
            H[_u(c + _na_index(final))] -= 1
        else:
            H[_u(c + C_OFFSTAMP)] += 1              # it leaves the read or write buffer
        _remove_at(H, g, qi, pos)
        if H[_u(o + SL_TYPE)] == T_READ:
            if H[_u(H_DIRECT)] != 0:
                _push_completion(H, H[_u(o + SL_ID)], clk + params.read_latency)
            else:
                H[_u(c + C_OFFSTAMP)] += 1          # a pending read more (forwarding room)
                PD = H[_u(H_PD)]
                op = H[_u(H_O_PEND)] + (g * PD + _wrap(H[_u(c + C_PDH)] + H[_u(c + C_PDL)],
                                                       PD)) * 2
                H[_u(op)] = H[_u(o + SL_ID)]
                H[_u(op + 1)] = clk + params.read_latency
                H[_u(c + C_PDL)] += 1
            H[_u(os_ + S_READS)] += 1
        else:
            _push_completion(H, H[_u(o + SL_ID)], clk)
            H[_u(os_ + S_WRITES)] += 1
        H[_u(o + SL_ID)] = -1
        H[_u(_q(H, g, Q_FREE) + H[_u(c + Q_FREE)])] = s
        H[_u(c + Q_FREE)] += 1
        nx = H[_u(o + SL_LNEXT)]
        pv = H[_u(o + SL_LPREV)]
        if nx >= 0:
            H[_u(_slot(H, g, nx) + SL_LPREV)] = pv
        if pv >= 0:
            H[_u(_slot(H, g, pv) + SL_LNEXT)] = nx
        else:
            H[_u(_bkl(H, g, fb))] = nx
    elif _meta(params, M_OPEN, cmd) == 1 and qi != Q_ACT:
        if H[_u(c + Q_ACT)] < params.active_q:
            oa = _q(H, g, Q_ACT)
            arr = H[_u(o + SL_ARR)]
            k = H[_u(c + Q_ACT)]
            while k > 0 and H[_u(_slot(H, g, H[_u(oa + k - 1)]) + SL_ARR)] > arr:
                H[_u(oa + k)] = H[_u(oa + k - 1)]
                k -= 1
            H[_u(oa + k)] = s
            H[_u(c + Q_ACT)] += 1
            H[_u(c + _na_index(final))] += 1
            H[_u(_bank(H, g, fb) + 1)] += 1
            H[_u(c + C_OFFSTAMP)] += 1              # it leaves the read or write buffer
            _remove_at(H, g, qi, pos)
    _recache(params, H, g, cmd, rank, fb)


@njit(cache=True, inline="always", _nrt=False)
def _after_issue(params, H, g, clk):
    """Next cycle worth evaluating after a command issued at ``clk``: no command can issue
    before the smallest channel-level ready cycle (e.g. the command bus is held two cycles
    after a two-cycle command), a lower bound, so skipping to it is exact."""
    rb = _rdy(H, g)
    w = INF
    for cmd in range(LIVE_CMDS[features(params)]):     # the commands it may issue
        v = H[_u(rb + cmd)]
        if v < w:
            w = v
    if w <= clk + 1:
        return clk + 1
    # Ramulator updates the write mode in every cycle that reaches the read/write buffers; if
    # that update would change the mode now, the next cycle must be evaluated.
    c = _chs(H, g)
    if H[_u(c + C_PQL)] == 0:
        if H[_u(c + C_WMODE)] == 0:
            if H[_u(c + Q_WR)] >= params.wr_high_n or H[_u(c + Q_RD)] == 0:
                return clk + 1
        elif H[_u(c + Q_WR)] <= params.wr_low_n and H[_u(c + Q_RD)] != 0:
            return clk + 1
    return w


@njit(cache=True, _nrt=False)
def _channel_tick(params, H, g, clk):
    """One controller cycle of global channel ``g`` at clock ``clk`` (module docstring)."""
    c = _chs(H, g)
    # 1. completed reads
    PD = H[_u(H_PD)]
    while H[_u(c + C_PDL)] > 0:
        op = H[_u(H_O_PEND)] + (g * PD + H[_u(c + C_PDH)]) * 2
        if H[_u(op + 1)] > clk:
            break
        _push_completion(H, H[_u(op)], clk)
        H[_u(c + C_PDH)] = _wrap(H[_u(c + C_PDH)] + 1, PD)
        H[_u(c + C_PDL)] -= 1
        H[_u(c + C_OFFSTAMP)] += 1
    # 2. refresh
    while H[_u(c + C_NREF)] <= clk:
        PQ = H[_u(H_PQ)]
        # a request per rank: the rank (all-bank refresh), or with same-bank refresh the flat
        # bank of bank index b in the rank's first bank group, b the period's index modulo
        # the banks per group (round robin)
        b = 0
        if (features(params) & FEATURE_SAME_BANK) != 0:
            b = (H[_u(c + C_NREF)] // params.nREFI - 1) % params.n_banks
        for r in range(params.n_ranks):
            if (features(params) & FEATURE_POWER) != 0 and \
                    H[_u(_ract(H, g, r) + RA_PS)] == PS_SR:
                continue                            # self refresh: the rank refreshes itself
            if H[_u(c + C_PQL)] < PQ:
                e = r
                if (features(params) & FEATURE_SAME_BANK) != 0:
                    e = r * params.n_bg * params.n_banks + b
                H[_u(H[_u(H_O_PRIO)] + g * PQ + _wrap(H[_u(c + C_PQH)] + H[_u(c + C_PQL)], PQ))] = e
                H[_u(c + C_PQL)] += 1
        H[_u(c + C_NREF)] += params.nREFI
        H[_u(c + C_WAKE)] = 0
        H[_u(c + C_EPOCH)] += 1
    if clk < H[_u(c + C_WAKE)]:
        return
    # 3a-3c. issue the chosen command (a refresh command is issued by _decide); or, if
    # nothing is ready, _decide has set the channel's wake-up cycle and kept the decision at
    # that cycle as the memo (C_MCLK) when it is known
    qi, pos, cmd = _decide(params, H, g, clk)
    if qi >= 0:
        # (one call site, inlined: passing the state's array to a separate function cost a
        # stall on its stack arguments at every command)
        _serve(params, H, g, qi, pos, cmd, clk)
    elif qi != D_REFRESHED:
        return
    # A command issued: the channel is next evaluated at the first cycle the channel-level
    # timing allows (a lower bound), not probed for its exact wake-up right away: a probe
    # would cost a full buffer scan per command, often made useless by offers arriving in
    # between.
    H[_u(c + C_WAKE)] = _after_issue(params, H, g, clk)


@njit(cache=True, _nrt=False)
def _tick(params, H, clk):
    PD = H[_u(H_PD)]
    for g in range(H[_u(H_G)]):
        c = _chs(H, g)
        if clk < H[_u(c + C_WAKE)] and clk < H[_u(c + C_NREF)]:
            if H[_u(c + C_PDL)] == 0 or H[_u(H[_u(H_O_PEND)] + (g * PD + H[_u(c + C_PDH)]) * 2 + 1)] > clk:
                continue
        _channel_tick(params, H, g, clk)


@njit(cache=True, inline="always", _nrt=False)
def _channel_wake(H, g):
    """Earliest cycle at which channel g's tick can change anything, possibly in the past:
    its scheduler's wake-up cycle, the oldest pending read's data return, the next refresh."""
    c = _chs(H, g)
    best = H[_u(c + C_WAKE)]
    if H[_u(c + C_PDL)] > 0:
        d = H[_u(H[_u(H_O_PEND)] + (g * H[_u(H_PD)] + H[_u(c + C_PDH)]) * 2 + 1)]
        if d < best:
            best = d
    if H[_u(c + C_NREF)] < best:
        best = H[_u(c + C_NREF)]
    return best


@njit(cache=True, inline="always", _nrt=False)
def _channel_next_event(H, g, clk):
    """Earliest cycle >= clk at which channel g's tick can change anything."""
    best = _channel_wake(H, g)
    if best < clk:
        best = clk
    return best


@njit(cache=True, _nrt=False)
def _next_event(params, H, clk):
    """Earliest cycle >= clk at which some channel's tick can change anything."""
    best = INF
    for g in range(H[_u(H_G)]):
        w = _channel_wake(H, g)
        if w < best:
            best = w
    if best < clk:
        best = clk
    return best
