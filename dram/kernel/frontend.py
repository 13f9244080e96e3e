"""The front end: requests in (offer), completions out (pop).

Part of the cycle: before and after it. :func:`_offer_mapped` puts an accepted request in the
read or write buffer (or forwards a read from the write buffer, or coalesces a write) and
moves the channel's wake-up cycle if the request can change the next decision; completions
go to one ring shared by every channel (:func:`_push_completion`), which the driver empties
(:func:`_pop`).
"""

from __future__ import annotations

from pathlib import Path

from numba import njit

from dram.config import FEATURE_POWER, M_LOCAL
from dram.jitcache import drop_stale
import dram.config as _config
from .commands import RD, WR
from .layout import (C_EPOCH, C_OFFSTAMP, C_PDH, C_PDL, C_PQL, C_WAKE, C_WMODE, G_CHANGES, G_CHEAD,
                     G_CLEN, G_COVF, H_CAP, H_NB, H_O_BANK, H_O_COMP, H_O_GLOB, H_O_PEND,
                     H_O_STATS, H_PD, N_STATS, RA_NREQ, Q_FREE, Q_RD, Q_WR, SL_ADDR, SL_ARR, SL_BGO, SL_BKO,
                     SL_FB, SL_FINAL, SL_ID, SL_LNEXT, SL_LPREV, SL_RANK, SL_RKO, SL_ROW, SL_STAT,
                     SL_TYPE, S_COALESCED, S_FORWARDED, T_READ, T_WRITE, _bkl, _chs, _meta, _q,
                     _rdy, _slot, _u, _wrap)
from .mapping import map_address
from .compiletime import features
from .issue import _ract
from .scheduler import _cache_slot, _slot_ready_cached

# the jitted code here inlines the package's other modules and compiles in constants of
# dram.config: its cache goes when one of them changes
drop_stale(__file__, str(Path(__file__).with_name("__init__.py")), _config.__file__)


@njit(cache=True, _nrt=False)
def _push_completion(H, req_id, cyc):
    og = H[_u(H_O_GLOB)]
    cap = H[_u(H_CAP)]
    if H[_u(og + G_CLEN)] >= cap:
        H[_u(og + G_COVF)] += 1
        return
    k = _wrap(H[_u(og + G_CHEAD)] + H[_u(og + G_CLEN)], cap)
    oc = H[_u(H_O_COMP)] + 2 * k
    H[_u(oc)] = req_id
    H[_u(oc + 1)] = cyc
    H[_u(og + G_CLEN)] += 1


@njit(cache=True, _nrt=False)
def _offer(params, H, instance, req_id, addr, is_write, rank_local, clk):
    ch, rank, bgi, bank, row, col = map_address(params, addr)
    g = instance * params.n_channels + ch
    fb = (rank * params.n_bg + bgi) * params.n_banks + bank
    return _offer_mapped(params, H, g, req_id, addr, is_write, rank_local, clk, rank, bgi,
                         fb, row)


@njit(cache=True, _nrt=False)
def _offer_mapped(params, H, g, req_id, addr, is_write, rank_local, clk, rank, bgi, fb, row):
    """:func:`offer` with the address already mapped (global channel g, rank, bank group,
    flat bank fb within the channel, row)."""
    c = _chs(H, g)
    oq = _q(H, g, Q_WR)
    in_wq = False
    for k in range(H[_u(c + Q_WR)]):
        if H[_u(_slot(H, g, H[_u(oq + k)]) + SL_ADDR)] == addr:
            in_wq = True
            break
    os_ = H[_u(H_O_STATS)] + g * N_STATS
    if is_write == 0:
        if in_wq:                                   # forwarded from the write buffer
            PD = H[_u(H_PD)]
            if H[_u(c + C_PDL)] >= PD - params.read_latency - 2:
                return False
            op = H[_u(H_O_PEND)] + (g * PD + _wrap(H[_u(c + C_PDH)] + H[_u(c + C_PDL)], PD)) * 2
            H[_u(op)] = req_id
            H[_u(op + 1)] = clk + 1
            H[_u(c + C_PDL)] += 1
            H[_u(c + C_OFFSTAMP)] += 1
            H[_u(os_ + S_FORWARDED)] += 1
            return True
        if H[_u(c + Q_RD)] >= params.read_q:
            return False
    else:
        if in_wq:                                   # coalesced with a buffered write
            _push_completion(H, req_id, clk)
            H[_u(os_ + S_COALESCED)] += 1
            return True
        if H[_u(c + Q_WR)] >= params.write_q:
            return False
    H[_u(c + Q_FREE)] -= 1
    s = H[_u(_q(H, g, Q_FREE) + H[_u(c + Q_FREE)])]
    o = _slot(H, g, s)
    H[_u(o + SL_ID)] = req_id
    H[_u(o + SL_ADDR)] = addr
    H[_u(o + SL_RANK)] = rank
    H[_u(o + SL_FB)] = fb
    H[_u(o + SL_ROW)] = row
    H[_u(o + SL_ARR)] = clk
    H[_u(o + SL_STAT)] = 0
    NC = params.n_cmds
    o_bg = 1 + params.n_ranks
    H[_u(o + SL_RKO)] = (1 + rank) * NC
    H[_u(o + SL_BGO)] = (o_bg + rank * params.n_bg + bgi) * NC
    H[_u(o + SL_BKO)] = (o_bg + params.n_ranks * params.n_bg + fb) * NC
    qi = Q_WR if is_write != 0 else Q_RD
    H[_u(o + SL_TYPE)] = T_WRITE if is_write != 0 else T_READ
    base = WR if is_write != 0 else RD
    H[_u(o + SL_FINAL)] = _meta(params, M_LOCAL, base) if rank_local != 0 else base
    hd = _bkl(H, g, fb)
    h0 = H[_u(hd)]
    H[_u(o + SL_LNEXT)] = h0
    H[_u(o + SL_LPREV)] = -1
    if h0 >= 0:
        H[_u(_slot(H, g, h0) + SL_LPREV)] = s
    H[_u(hd)] = s
    rb = _rdy(H, g)
    if (features(params) & FEATURE_POWER) != 0:
        H[_u(_ract(H, g, rank) + RA_NREQ)] += 1      # the rank is not idle (power states)
    _cache_slot(params, H, g, rb, H[_u(H_O_BANK)] + g * H[_u(H_NB)] * 3, o)
    H[_u(_q(H, g, qi) + H[_u(c + qi)])] = s
    H[_u(c + qi)] += 1
    H[_u(c + C_OFFSTAMP)] += 1
    # The channel's decision can change no earlier than (a) now, if the next evaluation would
    # switch the write mode (or a refresh is pending: keep it simple), or (b) the new request's
    # ready cycle, if it joins the buffer the scheduler reads (a lower bound: timing records
    # only grow until the next issue, which re-evaluates the channel anyway); a request in the
    # other buffer is not looked at before a mode switch, which needs an evaluation first.
    w = H[_u(c + C_WAKE)]
    if w <= clk:
        H[_u(c + C_EPOCH)] += 1                     # mode not checked: forget the memo
    else:
        if H[_u(c + C_PQL)] > 0:
            w = 0
            H[_u(c + C_EPOCH)] += 1
        else:
            wm = H[_u(c + C_WMODE)]
            nm = wm
            if wm == 0:
                if H[_u(c + Q_WR)] >= params.wr_high_n or H[_u(c + Q_RD)] == 0:
                    nm = 1
            elif H[_u(c + Q_WR)] <= params.wr_low_n and H[_u(c + Q_RD)] != 0:
                nm = 0
            if nm != wm:
                w = 0
                H[_u(c + C_EPOCH)] += 1
            elif (qi == Q_WR) == (wm == 1):
                rt = _slot_ready_cached(H, rb, o)
                if rt < w:
                    w = rt
        H[_u(c + C_WAKE)] = w
    H[_u(H[_u(H_O_GLOB)] + G_CHANGES)] += 1
    return True


@njit(cache=True, _nrt=False)
def _pop(H, out_ids, out_cycles):
    og = H[_u(H_O_GLOB)]
    cap = H[_u(H_CAP)]
    n = min(out_ids.shape[0], H[_u(og + G_CLEN)])
    h = H[_u(og + G_CHEAD)]
    for k in range(n):
        oc = H[_u(H_O_COMP)] + 2 * h
        out_ids[k] = H[_u(oc)]
        out_cycles[k] = H[_u(oc + 1)]
        h += 1
        if h == cap:
            h = 0
    H[_u(og + G_CHEAD)] = h
    H[_u(og + G_CLEN)] -= n
    return n
