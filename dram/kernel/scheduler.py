"""The scheduler: which request's command issues this cycle (step 3 of the cycle).

FR-FCFS (timing-ready first, then oldest, then buffer order) over the active buffer, then the
priority buffer (refresh: REFab per rank, or REFsb per rank and bank index), then the read or
write buffer chosen by the write-drain watermarks; FRFCFS_RowHit and FCFS over the read/write
buffers (``params.scheduler``). Each buffered request caches its next command and the bank-level part of its ready cycle (``SL_NC``,
``SL_L``), refreshed by :func:`_recache` after every command to its bank (or rank). When
nothing is ready, :func:`_decide` sets the channel's wake-up cycle and remembers the decision
it will take then (the memo, ``C_M*``).
"""

from __future__ import annotations

from pathlib import Path

from numba import njit

from dram.config import FEATURE_POWER, FEATURE_SAME_BANK, M_CLOSE, M_SCOPE, SCOPE_RANK, SCOPE_SAME_BANK
from dram.jitcache import drop_stale
import dram.config as _config
from .commands import FINALS, N_CMDS, N_FINALS, PREpb, REFab, REFsb
from .compiletime import features, only_with
from .layout import (C_EPOCH, C_MCLK, C_MCMD, C_MEPOCH, C_MPOS, C_MQ, C_NA, C_PQH, C_PQL, C_WAKE,
                     C_WMODE, D_NONE, D_REFRESHED, G_CHANGES, H_NB, H_O_BANK, H_O_GLOB, H_O_PRIO,
                     H_O_STATS, H_PQ, INF, N_STATS, RA_LASTCMD, Q_ACT, Q_RD, Q_WR, SL_ARR, SL_BGO, SL_BKO,
                     SL_FB, SL_L, SL_LNEXT, SL_NC, SL_RANK, SL_ROW, S_REFRESH, _bank, _bkl, _chs, _fb_bg,
                     _meta, _q, _rdy, _slot, _u, _wrap)
from .timing import _slot_ready, _upper_ready, ready_time
from .issue import _closes_active, _ract, _slot_preq, issue_command, power_preq, preq_command
from .power import _power_next

# the jitted code here inlines the package's other modules and compiles in constants of
# dram.config: its cache goes when one of them changes
drop_stale(__file__, str(Path(__file__).with_name("__init__.py")), _config.__file__)


@njit(cache=True, inline="always", _nrt=False)
def _request_command(params, H, g, ob, o):
    """Next command of the (bank-scope) request in slot offset ``o`` of channel g: its rank's
    power-state exit if it sleeps, else from its bank (``_slot_preq``)."""
    if (features(params) & FEATURE_POWER) != 0:
        pw = power_preq(params, H, g, H[_u(o + SL_RANK)])
        if pw >= 0:
            return pw
    return _slot_preq(H, ob, o)


@njit(cache=True, inline="always", _nrt=False)
def _cache_slot(params, H, g, rb, ob, o):
    """Set the scheduler cache (SL_NC, SL_L) of the request in slot offset ``o``."""
    cmd = _request_command(params, H, g, ob, o)
    H[_u(o + SL_NC)] = cmd
    if _meta(params, M_CLOSE, cmd) == 1 and H[_u(ob + 3 * H[_u(o + SL_FB)] + 1)] > 0:
        H[_u(o + SL_L)] = INF                         # would close a bank an active request holds
    else:
        H[_u(o + SL_L)] = H[_u(rb + H[_u(o + SL_BKO)] + cmd)]


@njit(cache=True, inline="always", _nrt=False)
def _recache_bank(params, H, g, rb, ob, hd):
    """Refresh the scheduler cache of every request of one bank (list head ``hd``)."""
    s = H[_u(hd)]
    while s >= 0:
        o = _slot(H, g, s)
        _cache_slot(params, H, g, rb, ob, o)
        s = H[_u(o + SL_LNEXT)]


@njit(cache=True, inline="always", _nrt=False)
def _recache(params, H, g, cmd, rank, fb):
    """After ``cmd`` issued to (rank, fb): refresh the cache of the requests whose next
    command, eligibility or bank-level ready cycles it can have changed -- those of its bank,
    of its bank group for a command with sibling records at the bank level, of its whole
    rank for a rank-scope command, of bank index fb % n_banks in every bank group of its rank
    for a same-bank command (of every bank of the rank, if it has bank-level siblings). (The bank-group level is read live by the scheduler, so
    the requests of the other banks of the group keep their cache: a command to one bank
    changes no other bank's state, active count or bank-level ready cycles.)"""
    rb = _rdy(H, g)
    ob = H[_u(H_O_BANK)] + g * H[_u(H_NB)] * 3
    scope = _meta(params, M_SCOPE, cmd)
    if (features(params) & FEATURE_SAME_BANK) != 0 and scope == SCOPE_SAME_BANK:
        _recache_same_bank(params, H, g, cmd, rank, fb, rb, ob)
    elif scope == SCOPE_RANK:
        nbr = params.n_bg * params.n_banks
        for k in range(nbr):
            _recache_bank(params, H, g, rb, ob, _bkl(H, g, rank * nbr + k))
    elif params.tab[_u(params.o_has_sib + 3 * N_CMDS + cmd)] == 1:
        nb = params.n_banks
        f0 = _fb_bg(params, fb) * nb
        for k in range(nb):
            _recache_bank(params, H, g, rb, ob, _bkl(H, g, f0 + k))
    else:
        _recache_bank(params, H, g, rb, ob, _bkl(H, g, fb))


@only_with(FEATURE_SAME_BANK, None)
@njit(cache=True, _nrt=False)
def _recache_same_bank(params, H, g, cmd, rank, fb, rb, ob):
    """:func:`_recache` after a same-bank command (``FEATURE_SAME_BANK``): the requests of
    bank index fb % n_banks in every bank group of the rank, or of every bank of the rank if
    the command has bank-level siblings."""
    if params.tab[_u(params.o_has_sib + 3 * N_CMDS + cmd)] == 1:
        nbr = params.n_bg * params.n_banks
        for k in range(nbr):
            _recache_bank(params, H, g, rb, ob, _bkl(H, g, rank * nbr + k))
    else:
        nb = params.n_banks
        b = fb - _fb_bg(params, fb) * nb
        for k in range(params.n_bg):
            _recache_bank(params, H, g, rb, ob, _bkl(H, g, (rank * params.n_bg + k) * nb + b))


@njit(cache=True, inline="always", _nrt=False)
def _slot_ready_cached(H, rb, o):
    """Ready cycle of the cached next command of the request in slot offset ``o`` (INF if
    it is not eligible): channel, rank and bank-group level read live, the bank level from
    the cache."""
    cmd = H[_u(o + SL_NC)]
    t = H[_u(o + SL_L)]
    v = _upper_ready(H, rb, o, cmd)
    if v > t:
        t = v
    v = H[_u(rb + H[_u(o + SL_BGO)] + cmd)]
    return v if v > t else t


@njit(cache=True, inline="always", _nrt=False)
def _scan_cached(H, g, qi, n, rb, clk):
    """FR-FCFS over the ``n`` entries of queue ``qi`` from the scheduler cache: (position of
    the first timing-ready eligible request or -1, its command, earliest ready cycle of the
    others, and if none is ready, the position and command of the first request ready at
    that cycle: the decision then, if nothing changes)."""
    wake = INF
    wpos = -1
    wcmd = -1
    oq = _q(H, g, qi)
    for k in range(n):
        o = _slot(H, g, H[_u(oq + k)])
        rt = _slot_ready_cached(H, rb, o)
        if rt <= clk:
            return k, H[_u(o + SL_NC)], wake, -1, -1
        if rt < wake:
            wake = rt
            wpos = k
            wcmd = H[_u(o + SL_NC)]
    return -1, -1, wake, wpos, wcmd


@njit(cache=True, inline="always", _nrt=False)
def _pick_active(params, H, g, clk):
    """FR-FCFS over the active buffer: (position or -1, command, earliest not-ready cycle,
    position and command of the first request ready then: -1 if there is none, -2 if the
    cycle is only a lower bound).

    The active buffer is kept sorted by acceptance cycle (ties in promotion order), so the
    FR-FCFS choice -- ready first, then oldest, then earliest promoted -- is the first ready
    entry.
    """
    wake = INF
    n = H[_u(_chs(H, g) + Q_ACT)]
    if n == 0:
        return -1, -1, wake, -1, -1
    rb = _rdy(H, g)
    # Active requests only need their final column command (their row is open and cannot be
    # closed under them): none can issue before the channel-level ready cycle of the final
    # commands present (counted per plain final command in C_NA + k, commands.FINALS).
    c = _chs(H, g)
    lb = INF
    for k in range(N_FINALS):
        if H[_u(c + C_NA + k)] > 0 and H[_u(rb + FINALS[k])] < lb:
            lb = H[_u(rb + FINALS[k])]
    if lb > clk:
        return -1, -1, lb, -2, -1
    # (an activated request's row is open and stays open until its final command -- no
    # command may close a bank an active request needs -- so that is its cached command)
    return _scan_cached(H, g, Q_ACT, n, rb, clk)


@njit(cache=True, _nrt=False)
def _pick_buffer(params, H, g, qi, clk):
    """Best eligible request of the read (qi=0) or write (qi=1) buffer.

    Buffers are in acceptance order and acceptance cycles never decrease along them, so under
    FR-FCFS the best request is the first eligible timing-ready one. Returns (position or -1,
    command, earliest cycle at which an eligible request becomes ready if none is, and the
    position and command of the first request ready then, as :func:`_pick_active`; the
    FRFCFS_RowHit and FCFS schedulers give -2).
    """
    sched = params.scheduler
    wake = INF
    oq = _q(H, g, qi)
    n = H[_u(_chs(H, g) + qi)]
    if sched == 1:                                  # FRFCFS_RowHit: oldest pending row hits
        for k in range(n):
            o = _slot(H, g, H[_u(oq + k)])
            ob = _bank(H, g, H[_u(o + SL_FB)])
            if H[_u(ob)] == H[_u(o + SL_ROW)] and H[_u(o + SL_ARR)] < H[_u(ob + 2)]:
                H[_u(ob + 2)] = H[_u(o + SL_ARR)]
    found = -1
    found_cmd = -1
    rb = _rdy(H, g)
    if sched == 0:                                  # FRFCFS: from the scheduler cache
        return _scan_cached(H, g, qi, n, rb, clk)
    ob = H[_u(H_O_BANK)] + g * H[_u(H_NB)] * 3
    any_active = H[_u(_chs(H, g) + Q_ACT)] > 0
    for k in range(n):
        o = _slot(H, g, H[_u(oq + k)])
        cmd = _request_command(params, H, g, ob, o)
        if any_active and _meta(params, M_CLOSE, cmd) == 1:
            if H[_u(ob + 3 * H[_u(o + SL_FB)] + 1)] > 0:       # would close a bank an active request needs
                continue
        if sched == 1 and cmd == PREpb and H[_u(ob + 3 * H[_u(o + SL_FB)] + 2)] <= H[_u(o + SL_ARR)]:
            continue
        rt = _slot_ready(H, rb, o, cmd)
        if rt <= clk:
            found = k
            found_cmd = cmd
            break
        if rt < wake:
            wake = rt
        if sched == 2:                              # FCFS: only the oldest eligible request
            break
    if sched == 1:
        for k in range(n):
            H[_u(_bank(H, g, H[_u(_slot(H, g, H[_u(oq + k)]) + SL_FB)]) + 2)] = INF
    return found, found_cmd, wake, -2, -1


@only_with(FEATURE_POWER, INF)
@njit(cache=True, _nrt=False)
def _power_step(params, H, g, clk):
    """Step 3d, the power-state policy (``FEATURE_POWER``): issue the command it asks for
    now, if one is ready, and return -1; else the earliest cycle at which that can change
    (:func:`.power._power_next`)."""
    pr, pcmd, pw = _power_next(params, H, g, clk)
    if pr < 0:
        return pw
    f0 = pr * params.n_bg * params.n_banks
    issue_command(params, H, g, pcmd, pr, f0, -1, clk)
    _recache(params, H, g, pcmd, pr, f0)
    H[_u(H[_u(H_O_GLOB)] + G_CHANGES)] += 1
    H[_u(_chs(H, g) + C_EPOCH)] += 1
    return -1


@njit(cache=True, inline="always", _nrt=False)
def _decide(params, H, g, clk):
    """The command to issue at ``clk``: (queue, position, command) of the request to serve;
    or (D_REFRESHED, -1, -1) if a refresh command was issued; or (D_NONE, -1, -1) if nothing
    is ready (then the channel's wake-up cycle and the memo are set)."""
    c = _chs(H, g)
    if H[_u(c + C_MCLK)] == clk and H[_u(c + C_MEPOCH)] == H[_u(c + C_EPOCH)]:
        H[_u(c + C_MCLK)] = -1
        return H[_u(c + C_MQ)], H[_u(c + C_MPOS)], H[_u(c + C_MCMD)]
    # 3a. active buffer
    pos, cmd, wake, apos, acmd = _pick_active(params, H, g, clk)
    if pos >= 0:
        return Q_ACT, pos, cmd
    # 3b. priority buffer (refresh)
    if H[_u(c + C_PQL)] > 0:
        PQ = H[_u(H_PQ)]
        e = H[_u(H[_u(H_O_PRIO)] + g * PQ + H[_u(c + C_PQH)])]
        nbr = params.n_bg * params.n_banks
        if (features(params) & FEATURE_SAME_BANK) != 0:   # same-bank refresh: e is a flat bank
            refcmd = REFsb
            rank = e // nbr
            fb0 = e
        else:                                       # all-bank refresh: e is the rank
            refcmd = REFab
            rank = e
            fb0 = rank * nbr
        cmd = preq_command(params, H, g, refcmd, rank, fb0, -1)
        rt = ready_time(params, H, g, cmd, rank, fb0)
        if rt <= clk:
            if not _closes_active(params, H, g, cmd, rank, fb0):
                issue_command(params, H, g, cmd, rank, fb0, -1, clk)
                _recache(params, H, g, cmd, rank, fb0)
                H[_u(H[_u(H_O_GLOB)] + G_CHANGES)] += 1
                H[_u(c + C_EPOCH)] += 1
                if (features(params) & FEATURE_POWER) != 0:
                    H[_u(_ract(H, g, rank) + RA_LASTCMD)] = clk    # the power-down timer
                if cmd == refcmd:
                    H[_u(c + C_PQH)] = _wrap(H[_u(c + C_PQH)] + 1, PQ)
                    H[_u(c + C_PQL)] -= 1
                    H[_u(H[_u(H_O_STATS)] + g * N_STATS + S_REFRESH)] += 1
                return D_REFRESHED, -1, -1
        elif rt < wake:
            wake = rt
        H[_u(c + C_WAKE)] = wake
        return D_NONE, -1, -1
    # 3c. read or write buffer
    if H[_u(c + C_WMODE)] == 0:
        if H[_u(c + Q_WR)] >= params.wr_high_n or H[_u(c + Q_RD)] == 0:
            H[_u(c + C_WMODE)] = 1
    else:
        if H[_u(c + Q_WR)] <= params.wr_low_n and H[_u(c + Q_RD)] != 0:
            H[_u(c + C_WMODE)] = 0
    qi = Q_WR if H[_u(c + C_WMODE)] == 1 else Q_RD
    pos, cmd, w2, bpos, bcmd = _pick_buffer(params, H, g, qi, clk)
    if pos >= 0:
        return qi, pos, cmd
    # 3d. the power-state policy (power-down, self refresh of idle ranks)
    pw = INF
    if (features(params) & FEATURE_POWER) != 0:
        pw = _power_step(params, H, g, clk)
        if pw < 0:
            return D_REFRESHED, -1, -1
    # nothing ready: the decision at the wake-up cycle, if known (the active buffer first)
    if wake <= w2:
        if apos >= 0:
            _memo(H, c, wake, Q_ACT, apos, acmd)
    else:
        wake = w2
        if bpos >= 0:
            _memo(H, c, w2, qi, bpos, bcmd)
    if pw < wake:       # a memo at a later cycle stays valid: nothing issued
        wake = pw
    H[_u(c + C_WAKE)] = wake
    return D_NONE, -1, -1


@njit(cache=True, inline="always", _nrt=False)
def _memo(H, c, clk, qi, pos, cmd):
    H[_u(c + C_MCLK)] = clk
    H[_u(c + C_MQ)] = qi
    H[_u(c + C_MPOS)] = pos
    H[_u(c + C_MCMD)] = cmd
    H[_u(c + C_MEPOCH)] = H[_u(c + C_EPOCH)]
