"""Commands and bank state: which command a request needs next, and issuing one.

Part of the cycle: step 4 (issue) and the eligibility test of step 3. :func:`preq_command` is
Ramulator's ``get_preq_command`` (ACT on a closed bank, the final command on the open row,
PREpb on another row; PREab, then REFab, for a refresh; PREsb, then REFsb, for a same-bank
refresh); :func:`issue_command` applies a
command: timing state (:mod:`.timing`), open rows, rank residency (the energy model's
background states), command counters and the command log.
"""

from __future__ import annotations

from pathlib import Path

from numba import njit

from dram.config import (FEATURE_POWER, FEATURE_SAME_BANK, M_ACCESS, M_CLOSE, M_DBUS, M_OPEN,
                         M_SCOPE, SCOPE_RANK, SCOPE_SAME_BANK)
from dram.jitcache import drop_stale
import dram.config as _config
from .commands import ACT, PDE, PDX, PREab, PREpb, PREsb, SRE, SRX
from .compiletime import features, only_with
from .layout import (G_LOGLEN, H_LOGCAP, H_O_GLOB, H_O_LOG, H_O_RACT, H_O_RBUSY, H_O_STATS, H_R,
                     LOG_BANK, LOG_BG, LOG_CH, LOG_CLK, LOG_CMD, LOG_RANK, LOG_ROW, NRA, N_STATS,
                     PS_PD, PS_SR, PS_UP, Q_ACT, RA_BANKCYC, RA_CYCLES, RA_LAST, RA_OPEN,
                     RA_ENDED, RA_HOLD, RA_PD_CYC, RA_PS, RA_PS_SINCE, RA_SINCE, RA_SR_CYC, SL_FB,
                     SL_FINAL, SL_ROW, S_BUS_BUSY, S_CMD0, _bank, _chs, _fb_bg, _meta, _rdy, _u)
from .timing import update_timing

# the jitted code here inlines the package's other modules and compiles in constants of
# dram.config: its cache goes when one of them changes
drop_stale(__file__, str(Path(__file__).with_name("__init__.py")), _config.__file__)


@njit(cache=True, inline="always", _nrt=False)
def _slot_preq(H, ob, o):
    """Next command of the (bank-scope) request in slot offset ``o``; ob = bank region base
    of its channel."""
    op = H[_u(ob + 3 * H[_u(o + SL_FB)])]
    if op < 0:
        return ACT
    if op == H[_u(o + SL_ROW)]:
        return H[_u(o + SL_FINAL)]
    return PREpb


@njit(cache=True, inline="always", _nrt=False)
def _ract(H, g, rank):
    """Offset of the residency and power-state fields (``RA_*``) of a rank of channel g."""
    return H[_u(H_O_RACT)] + (g * H[_u(H_R)] + rank) * NRA


@only_with(FEATURE_POWER, -1)
@njit(cache=True, _nrt=False)
def power_preq(params, H, g, rank):
    """The command a rank in a low-power state needs before any other (PDX out of
    power-down, SRX out of self refresh), or -1 if it is awake (always, without the
    power-state policy: callers test ``FEATURE_POWER`` first)."""
    ps = H[_u(_ract(H, g, rank) + RA_PS)]
    if ps == PS_PD:
        return PDX
    if ps == PS_SR:
        return SRX
    return -1


@njit(cache=True, inline="always", _nrt=False)
def preq_command(params, H, g, final, rank, fb, row):
    """The next command a request needs, from the bank state (Ramulator's get_preq_command):
    a rank-scope final command (REFab) needs every bank of its rank closed (PREab), a
    same-bank one (REFsb) bank index fb % n_banks of every bank group closed (PREsb); a rank
    in power-down or self refresh needs its exit first (:func:`power_preq`)."""
    if (features(params) & FEATURE_POWER) != 0:
        pw = power_preq(params, H, g, rank)
        if pw >= 0:
            return pw
    scope = _meta(params, M_SCOPE, final)
    if scope == SCOPE_RANK:                           # REFab: every bank of the rank closed
        nbr = params.n_bg * params.n_banks
        for k in range(nbr):
            if H[_u(_bank(H, g, rank * nbr + k))] >= 0:
                return PREab
        return final
    if (features(params) & FEATURE_SAME_BANK) != 0 and scope == SCOPE_SAME_BANK:
        return _preq_same_bank(params, H, g, final, rank, fb)
    o = H[_u(_bank(H, g, fb))]
    if o < 0:
        return ACT
    if o == row:
        return final
    return PREpb


@njit(cache=True, inline="always", _nrt=False)
def _closes_active(params, H, g, cmd, rank, fb):
    """True if ``cmd`` would close a bank that an activated request still needs."""
    if _meta(params, M_CLOSE, cmd) == 0 or H[_u(_chs(H, g) + Q_ACT)] == 0:
        return False
    scope = _meta(params, M_SCOPE, cmd)
    if scope == SCOPE_RANK:
        nbr = params.n_bg * params.n_banks
        for k in range(nbr):
            if H[_u(_bank(H, g, rank * nbr + k) + 1)] > 0:
                return True
        return False
    if (features(params) & FEATURE_SAME_BANK) != 0 and scope == SCOPE_SAME_BANK:
        return _closes_same_bank(params, H, g, rank, fb)
    return H[_u(_bank(H, g, fb) + 1)] > 0


# ---- same-bank commands (FEATURE_SAME_BANK): bank index fb % n_banks of every bank group

@only_with(FEATURE_SAME_BANK, -1)
@njit(cache=True, _nrt=False)
def _preq_same_bank(params, H, g, final, rank, fb):
    """:func:`preq_command` of a same-bank final command (REFsb): PREsb while its bank is
    open in any bank group of the rank."""
    nb = params.n_banks
    b = fb - _fb_bg(params, fb) * nb
    for k in range(params.n_bg):
        if H[_u(_bank(H, g, (rank * params.n_bg + k) * nb + b))] >= 0:
            return PREsb
    return final


@only_with(FEATURE_SAME_BANK, False)
@njit(cache=True, _nrt=False)
def _closes_same_bank(params, H, g, rank, fb):
    """:func:`_closes_active` of a same-bank command: its bank has an activated request in
    some bank group of the rank."""
    nb = params.n_banks
    b = fb - _fb_bg(params, fb) * nb
    for k in range(params.n_bg):
        if H[_u(_bank(H, g, (rank * params.n_bg + k) * nb + b) + 1)] > 0:
            return True
    return False


@only_with(FEATURE_SAME_BANK, None)
@njit(cache=True, _nrt=False)
def _close_same_bank(params, H, g, rank, fb, clk):
    """PREsb issued at ``clk``: its bank closes in every bank group of the rank."""
    nb = params.n_banks
    b = fb - _fb_bg(params, fb) * nb
    n_open = 0
    for k in range(params.n_bg):
        ob = _bank(H, g, (rank * params.n_bg + k) * nb + b)
        if H[_u(ob)] >= 0:
            n_open += 1
        H[_u(ob)] = -1
    if n_open > 0:
        _rank_closes(H, g, rank, n_open, clk, clk)


@njit(cache=True, inline="always", _nrt=False)
def _implicit_precharge(params, H, g, fb):
    """After an RDA/WRA (the timing update done), the cycle of its implicit precharge as
    DRAMPower places it: max(ACT + tRAS, RDA + tRTP), or max(ACT + tRAS, WRA + WL + BL/2 +
    tWR) -- the bank-level ready cycle of ACT at flat bank fb of channel g, less tRP (the
    DDR5 records to ACT: ACT tRC = tRAS + tRP, RDA tRTP + tRP, WRA WL + BL/2 + tWR + tRP;
    their two-cycle shifts cancel)."""
    o_bk = 1 + params.n_ranks + params.n_ranks * params.n_bg
    return H[_u(_rdy(H, g) + (o_bk + fb) * params.n_cmds + ACT)] - params.nRP


@njit(cache=True, inline="always", _nrt=False)
def _rank_opens(H, g, rank, clk):
    """A bank of ``rank`` opens at ``clk`` (rank residency, ``RA_*``)."""
    o = _ract(H, g, rank)
    H[_u(o + RA_BANKCYC)] += H[_u(o + RA_OPEN)] * (clk - H[_u(o + RA_LAST)])
    H[_u(o + RA_LAST)] = clk
    if H[_u(o + RA_OPEN)] == 0:
        if clk < H[_u(o + RA_ENDED)]:       # an implicit precharge still pending: the last
            H[_u(o + RA_CYCLES)] -= H[_u(o + RA_ENDED)] - clk   # interval goes on from here
        H[_u(o + RA_SINCE)] = clk
    H[_u(o + RA_OPEN)] += 1


@njit(cache=True, inline="always", _nrt=False)
def _rank_closes(H, g, rank, n, clk, until):
    """``n`` open banks of ``rank`` close at ``clk``, each counted open until ``until`` (>=
    clk: later for an auto-precharge, whose implicit precharge comes then): the rank's
    active interval ends when the last one does, at the latest such end."""
    o = _ract(H, g, rank)
    H[_u(o + RA_BANKCYC)] += H[_u(o + RA_OPEN)] * (clk - H[_u(o + RA_LAST)]) + n * (until - clk)
    H[_u(o + RA_LAST)] = clk
    H[_u(o + RA_OPEN)] -= n
    if until > H[_u(o + RA_HOLD)]:
        H[_u(o + RA_HOLD)] = until
    if H[_u(o + RA_OPEN)] == 0:
        end = max(clk, H[_u(o + RA_HOLD)])
        H[_u(o + RA_CYCLES)] += end - H[_u(o + RA_SINCE)]
        H[_u(o + RA_ENDED)] = end


@only_with(FEATURE_POWER, None)
@njit(cache=True, _nrt=False)
def _power_change(params, H, g, cmd, rank, clk):
    """A power-state command issued to ``rank`` at ``clk``: its state and residency. Self
    refresh counts from SRE + nRFC, after the entry's refresh of every bank (DRAMPower)."""
    o = _ract(H, g, rank)
    if cmd == PDE:
        H[_u(o + RA_PS)] = PS_PD
        H[_u(o + RA_PS_SINCE)] = clk
    elif cmd == SRE:
        H[_u(o + RA_PS)] = PS_SR
        H[_u(o + RA_PS_SINCE)] = clk + params.nRFC
    elif cmd == PDX:
        H[_u(o + RA_PD_CYC)] += clk - H[_u(o + RA_PS_SINCE)]
        H[_u(o + RA_PS)] = PS_UP
    elif cmd == SRX:
        H[_u(o + RA_SR_CYC)] += clk - H[_u(o + RA_PS_SINCE)]
        H[_u(o + RA_PS)] = PS_UP


@njit(cache=True, inline="always", _nrt=False)
def issue_command(params, H, g, cmd, rank, fb, row, clk):
    """Issue ``cmd`` now: timing state, bank state, rank residency, command statistics and
    log."""
    update_timing(params, H, g, cmd, rank, fb, clk)
    if _meta(params, M_OPEN, cmd) == 1:                 # ACT
        ob = _bank(H, g, fb)
        if H[_u(ob)] < 0:
            _rank_opens(H, g, rank, clk)
        H[_u(ob)] = row
    elif _meta(params, M_CLOSE, cmd) == 0:
        pass
    elif _meta(params, M_SCOPE, cmd) == 0:              # PREpb, RDA, WRA, RDA_L, WRA_L
        ob = _bank(H, g, fb)
        if H[_u(ob)] >= 0:
            until = clk
            if _meta(params, M_ACCESS, cmd) == 1:      # RDA/WRA: the implicit precharge
                until = max(clk, _implicit_precharge(params, H, g, fb))
            _rank_closes(H, g, rank, 1, clk, until)
        H[_u(ob)] = -1
    elif (features(params) & FEATURE_SAME_BANK) != 0 and \
            _meta(params, M_SCOPE, cmd) == SCOPE_SAME_BANK:     # PREsb
        _close_same_bank(params, H, g, rank, fb, clk)
    else:                                               # PREab
        nbr = params.n_bg * params.n_banks
        n_open = 0
        for k in range(nbr):
            ob = _bank(H, g, rank * nbr + k)
            if H[_u(ob)] >= 0:
                n_open += 1
            H[_u(ob)] = -1
        if n_open > 0:
            _rank_closes(H, g, rank, n_open, clk, clk)
    if (features(params) & FEATURE_POWER) != 0 and (cmd == PDE or cmd == PDX or cmd == SRE
                                                    or cmd == SRX):
        _power_change(params, H, g, cmd, rank, clk)
    os_ = H[_u(H_O_STATS)] + g * N_STATS
    H[_u(os_ + S_CMD0 + cmd)] += 1
    if _meta(params, M_ACCESS, cmd) == 1:
        H[_u(H[_u(H_O_RBUSY)] + g * params.n_ranks + rank)] += params.nBL
        if _meta(params, M_DBUS, cmd) == 1:
            H[_u(os_ + S_BUS_BUSY)] += params.nBL
    og = H[_u(H_O_GLOB)]
    if H[_u(og + G_LOGLEN)] < H[_u(H_LOGCAP)]:
        ol = H[_u(H_O_LOG)] + 7 * H[_u(og + G_LOGLEN)]
        H[_u(ol + LOG_CLK)] = clk
        H[_u(ol + LOG_CH)] = g
        H[_u(ol + LOG_CMD)] = cmd
        H[_u(ol + LOG_RANK)] = rank
        scope = _meta(params, M_SCOPE, cmd)
        if scope == SCOPE_RANK:
            H[_u(ol + LOG_BG)] = -1
            H[_u(ol + LOG_BANK)] = -1
            H[_u(ol + LOG_ROW)] = -1
        elif (features(params) & FEATURE_SAME_BANK) != 0 and scope == SCOPE_SAME_BANK:
            # every bank group, one bank index
            H[_u(ol + LOG_BG)] = -1
            H[_u(ol + LOG_BANK)] = fb - _fb_bg(params, fb) * params.n_banks
            H[_u(ol + LOG_ROW)] = -1
        else:
            bgf = _fb_bg(params, fb)
            H[_u(ol + LOG_BG)] = bgf - rank * params.n_bg
            H[_u(ol + LOG_BANK)] = fb - bgf * params.n_banks
            H[_u(ol + LOG_ROW)] = row
        H[_u(og + G_LOGLEN)] += 1
