"""State layout: the one int64 array that holds a controller's state, and its regions.

Part of the cycle: all of it. Passing a jitted function a tuple of many arrays costs about
40 ns per array and call (reference counting), which would dominate a cycle-level model. So the
whole controller state is ONE int64 array, ``state.heap``, split into regions whose offsets sit
in its header (``H_*`` slots); ``params`` carries one array (``params.tab``). Internal functions
take ``(params, H)``. This module names the header slots and the fields of each region (``SL_*``
for a buffered request, ``C_*`` for a channel's scalars, ``S_*`` for its statistics, ``RA_*``
for a rank's residency, ``LOG_*`` for the command log), allocates a state (:func:`new_state`),
gives Python code named views of its regions (:func:`views`) and gives jitted code the offsets
of the regions of one channel (``_chs``, ``_slot``, ``_q``, ``_bank``, ``_rdy``, ``_bkl``).

The kernels allocate nothing, so they run without numba's reference counting
(``_nrt=False``): with it, every call would pay two atomic operations per array argument.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np
from numba import njit

from dram.jitcache import drop_stale
import dram.config as _config
from .commands import COMMAND_NAMES, N_CMDS, N_FINALS

# the jitted code here inlines the package's other modules and compiles in constants of
# dram.config: its cache goes when one of them changes
drop_stale(__file__, str(Path(__file__).with_name("__init__.py")), _config.__file__)


INF = 1 << 62


@njit(cache=True, _nrt=False)
def _u(i):
    """An index as unsigned: numba then skips its negative-index wrap-around code (about ten
    instructions per subscript). Every index in this package is >= 0 by construction."""
    return np.uint64(i)


@njit(cache=True, inline="always", _nrt=False)
def _wrap(x, n):
    """``x % n`` for 0 <= x < 2n (ring indices) without a division: a 64-bit ``div`` takes
    tens of cycles, and about ten ran per request (ring indices, bank groups)."""
    return x - n if x >= n else x


@njit(cache=True, inline="always", _nrt=False)
def _fb_bg(params, fb):
    """Flat bank group (within the channel) of flat bank ``fb``: ``fb // n_banks``, read from
    a table (``params.o_fb_bg``) instead of divided."""
    return params.tab[_u(params.o_fb_bg + fb)]


# ---- heap header slots
H_G, H_S, H_NN, H_NC, H_HM, H_PQ, H_PD, H_CAP, H_LOGCAP, H_NB, H_R, H_NSTAT = range(12)
H_DIRECT = 12   # 1: read completions go to the ring at issue (new_state's direct_reads)
H_O_SLOT, H_O_Q, H_O_CH, H_O_PRIO, H_O_PEND, H_O_BANK, H_O_READY, H_O_HIST = range(16, 24)
H_O_COMP, H_O_GLOB, H_O_STATS, H_O_RBUSY, H_O_LOG, H_O_BKL = range(24, 30)
H_O_RACT = 30  # rank residency region (RA_* fields per rank)
HEADER = 32
# ---- slot fields (one request in a buffer)
SL_ID, SL_ADDR, SL_RANK, SL_FB, SL_ROW, SL_ARR, SL_TYPE, SL_FINAL, SL_STAT = range(9)
# cached offsets of the request's rank, bank-group and bank timing nodes (node * n_cmds)
SL_RKO, SL_BGO, SL_BKO = 9, 10, 11
# scheduler cache (kept by :func:`_recache_bank`): the request's next command and its
# bank-level ready cycle L (INF if the command would close a bank an active request holds); its
# ready cycle is max(channel, rank and bank-group ready, L) of that command. Both change only
# with commands to its bank (or its bank group, for commands with sibling records at the bank
# level; its rank, for rank-scope commands).
SL_NC, SL_L = 12, 13
# doubly linked list of the buffered requests (read, write and active) of each bank
SL_LNEXT, SL_LPREV = 14, 15
NSL = 16
# ---- queues per channel (ordered slot lists) and per-channel scalars
Q_RD, Q_WR, Q_ACT, Q_FREE = range(4)
C_PQH, C_PQL, C_PDH, C_PDL, C_WMODE, C_WAKE, C_NREF = range(4, 11)   # 0..3 = queue lengths
C_NA = 12       # C_NA + k: active requests whose final command is FINALS[k] (or its
#                 auto-precharge variant), k < N_FINALS (commands.FINALS: RD, WR, RD_L, WR_L)
# changes of what decides whether an offer is accepted (the read and write buffers' contents,
# the pending reads): a driver may treat a request rejected while this stayed the same as
# rejected again. Commands that leave both alone (precharges, activations that cannot move
# their request to the full active buffer, final commands of active requests whose data
# goes straight to the completion ring) do not move it.
C_OFFSTAMP = C_NA + N_FINALS
C_LASTTICK = C_OFFSTAMP + 1  # open-loop replay: the last cycle this channel was driven to
# Scheduler memo. An evaluation that finds nothing ready at once knows the decision
# at its wake-up cycle: the first request (in FR-FCFS order) whose ready cycle is the earliest.
# It is kept as (cycle, queue, position, command) with the channel's epoch, which counts what
# can change a decision other than time: issued commands, refresh requests, and offers that
# switch the write mode (an accepted offer otherwise appends to a buffer, behind the memo's
# request, or to the buffer not being read). A visit at that cycle in the same epoch issues it
# without scanning the buffers again.
C_EPOCH, C_MCLK, C_MQ, C_MPOS, C_MCMD, C_MEPOCH = range(C_LASTTICK + 1, C_LASTTICK + 7)
# what the scheduler's decision (_decide) returns instead of a queue when it serves no request
D_NONE, D_REFRESHED = -1, -2    # nothing ready; a refresh command issued
NCHF = C_MEPOCH + 1
# ---- globals
G_CHEAD, G_CLEN, G_COVF, G_CHANGES, G_LOGLEN = range(5)
# ---- statistics per channel
S_RD_HIT, S_RD_MISS, S_RD_CONF, S_WR_HIT, S_WR_MISS, S_WR_CONF = 0, 1, 2, 3, 4, 5
S_READS, S_WRITES, S_REFRESH, S_FORWARDED, S_COALESCED, S_BUS_BUSY = 6, 7, 8, 9, 10, 11
S_CMD0 = 12
N_STATS = S_CMD0 + N_CMDS
STAT_NAMES = ("read_row_hits", "read_row_misses", "read_row_conflicts", "write_row_hits",
              "write_row_misses", "write_row_conflicts", "reads_served", "writes_served",
              "refresh_cmds", "reads_forwarded", "writes_coalesced", "data_bus_busy_cycles") + \
    tuple("n_" + c for c in COMMAND_NAMES)
T_READ, T_WRITE = 0, 1
# ---- rank residency (per rank of each channel; the energy model's background states):
# open banks now, the cycle the rank last went from no open bank to one, and the cycles it
# has spent with at least one bank open (closed intervals only: a rank still open is
# completed by the reader, dram.energy.rank_active_cycles); and the bank-open cycles summed
# over its banks up to the last open/close event, with that event's cycle (the reader adds
# open banks x the time since, dram.energy.bank_open_cycles). Banks open at ACT and close at
# the precharging command's issue (PREpb, PREab, PREsb), or, after RDA/WRA, at the implicit
# precharge: the cycle a PREpb to the bank could issue (max(ACT + tRAS, RDA + tRTP), or the
# write recovery's end: DRAMPower's rule). Such a close counts its bank open until then at
# once; RA_HOLD keeps the latest such end, RA_ENDED the end of the rank's last closed active
# interval (a bank opening before it continues that interval). Idle refresh periods leave
# them unchanged (no bank is open in them), so advance_channel's closed form needs nothing
# for them.
RA_OPEN, RA_SINCE, RA_CYCLES, RA_BANKCYC, RA_LAST = 0, 1, 2, 3, 4
# power states (the power-state policy, dram.kernel.power; all 0 with it off): the rank's
# state (PS_UP, PS_PD power-down, PS_SR self refresh), the cycle its current low-power
# residency began (self refresh: SRE + nRFC, after the entry's refresh), the cycles spent in
# power-down and in self refresh (closed intervals: dram.energy completes an open one), the
# cycle of the last command a request or a refresh issued to it (the power-down timer) and of
# the last one a request issued (the self-refresh timer), and its buffered requests
RA_PS, RA_PS_SINCE, RA_PD_CYC, RA_SR_CYC, RA_LASTCMD, RA_LASTREQ, RA_NREQ = range(5, 12)
PS_UP, PS_PD, PS_SR = 0, 1, 2
RA_HOLD, RA_ENDED = 12, 13
NRA = 14
# ---- command log columns
LOG_CLK, LOG_CH, LOG_CMD, LOG_RANK, LOG_BG, LOG_BANK, LOG_ROW = range(7)
class State(NamedTuple):
    """Controller state of ``G = instances x channels`` channels: one int64 array.

    ``heap`` int64[...]: header (sizes and region offsets, ``H_*``) followed by the regions
    slot fields [G, S, NSL = 16], queues [G, 4, S] (read, write, active, free), channel scalars
    [G, NCHF = 24], priority ring [G, prio_q], pending reads [G, pend_q, 2], banks [G, nb_ch, 3]
    (open row or -1, active requests, scratch), ready cycles [G, n_nodes, n_cmds], issue
    history [G, n_nodes, n_cmds, hist_max], completion ring [cap, 2], globals [8], statistics
    [G, N_STATS], rank busy cycles [G, ranks], command log [log_cap, 7], rank residency
    [G, ranks, NRA = 14] (``RA_*``), bank list heads [G, nb_ch] (slot or -1). Use
    :func:`views`.
    """
    heap: np.ndarray


def new_state(params, instances=1, completion_capacity=4096, log_capacity=0,
              direct_reads=False):
    """Allocate the state of ``instances`` independent copies of the memory system.

    Parameters
    ----------
    params : dram.config.Params
    instances : int
        Independent memory systems (e.g. one per CXL device); global channel =
        instance * params.n_channels + channel.
    completion_capacity : int
        Size of the completion ring. A :func:`tick` adds at most 2 completions per channel and
        an :func:`offer` at most 1; pop often enough (``views(...)['overflow']`` counts losses
        and must stay 0).
    log_capacity : int
        Rows of the command log (0 = no log).
    direct_reads : bool
        For a driver that offers only reads (then no read is ever forwarded from the write
        buffer): a served read's completion is put in the completion ring when its column
        command issues, with its completion cycle ``clk + read_latency``, instead of waiting
        in the pending-read queue for a tick at that cycle. The completion cycles are the
        same; the driver receives them ``read_latency`` cycles early, in issue order (which,
        all reads having the same latency, is completion order), and must hold them until
        their cycle. The closed-loop engine (cosmos.engine) uses it: a channel then need
        not be ticked at a cycle where a read only completes.

    Returns
    -------
    State
    """
    G = int(instances) * params.n_channels
    S = params.read_q + params.write_q + params.active_q
    NN, NC, HM = params.n_nodes, params.n_cmds, params.hist_max
    cap, logcap = int(completion_capacity), int(log_capacity)
    sizes = [("slot", G * S * NSL), ("q", G * 4 * S), ("ch", G * NCHF),
             ("prio", G * params.prio_q), ("pend", G * params.pend_q * 2),
             ("bank", G * params.nb_ch * 3), ("ready", G * NN * NC),
             ("hist", G * NN * NC * HM), ("comp", cap * 2), ("glob", 8),
             ("stats", G * N_STATS), ("rbusy", G * params.n_ranks), ("log", logcap * 7),
             ("ract", G * params.n_ranks * NRA), ("bkl", G * params.nb_ch)]
    off = {}
    pos = HEADER
    for name, n in sizes:
        off[name] = pos
        pos += n
    H = np.zeros(pos, np.int64)
    H[H_G], H[H_S], H[H_NN], H[H_NC], H[H_HM] = G, S, NN, NC, HM
    H[H_PQ], H[H_PD], H[H_CAP], H[H_LOGCAP] = params.prio_q, params.pend_q, cap, logcap
    H[H_NB], H[H_R], H[H_NSTAT] = params.nb_ch, params.n_ranks, N_STATS
    H[H_DIRECT] = int(bool(direct_reads))
    for h, name in ((H_O_SLOT, "slot"), (H_O_Q, "q"), (H_O_CH, "ch"), (H_O_PRIO, "prio"),
                    (H_O_PEND, "pend"), (H_O_BANK, "bank"), (H_O_READY, "ready"),
                    (H_O_HIST, "hist"), (H_O_COMP, "comp"), (H_O_GLOB, "glob"),
                    (H_O_STATS, "stats"), (H_O_RBUSY, "rbusy"), (H_O_LOG, "log"),
                    (H_O_RACT, "ract"), (H_O_BKL, "bkl")):
        H[h] = off[name]
    st = State(H)
    v = views(st)
    v["slot"][:, :, SL_ID] = -1
    v["q"][:, Q_FREE, :] = np.arange(S - 1, -1, -1)[None, :]
    v["ch"][:, Q_FREE] = S
    v["ch"][:, C_NREF] = params.nREFI if params.refresh else INF
    v["ch"][:, C_WAKE] = INF             # empty channels: nothing can happen until an offer
    if params.pd_idle > 0 or params.sr_idle > 0:
        v["ch"][:, C_WAKE] = 0           # ... except the power-state policy's idle timers
    v["ch"][:, C_MCLK] = -1              # no memo
    v["bank"][:, :, 0] = -1
    v["bank"][:, :, 2] = INF
    v["hist"][:] = -1
    v["bkl"][:] = -1
    return st


def views(state) -> dict:
    """Named numpy views (no copies) of the regions of ``state.heap``."""
    H = state.heap
    G, S, NN, NC, HM = (int(H[k]) for k in (H_G, H_S, H_NN, H_NC, H_HM))
    PQ, PD, cap, logcap, NB, R = (int(H[k]) for k in (H_PQ, H_PD, H_CAP, H_LOGCAP, H_NB, H_R))

    def reg(h, shape):
        o = int(H[h])
        return H[o:o + int(np.prod(shape))].reshape(shape)
    glob = reg(H_O_GLOB, (8,))
    return {
        "slot": reg(H_O_SLOT, (G, S, NSL)), "q": reg(H_O_Q, (G, 4, S)),
        "ch": reg(H_O_CH, (G, NCHF)), "prio": reg(H_O_PRIO, (G, PQ)),
        "pend": reg(H_O_PEND, (G, PD, 2)), "bank": reg(H_O_BANK, (G, NB, 3)),
        "ready": reg(H_O_READY, (G, NN, NC)), "hist": reg(H_O_HIST, (G, NN, NC, HM)),
        "comp": reg(H_O_COMP, (cap, 2)), "glob": glob,
        "stats": reg(H_O_STATS, (G, N_STATS)), "rank_busy": reg(H_O_RBUSY, (G, R)),
        "log": reg(H_O_LOG, (logcap, 7))[: int(glob[G_LOGLEN])],
        "rank_residency": reg(H_O_RACT, (G, R, NRA)),
        "bkl": reg(H_O_BKL, (G, (H.shape[0] - int(H[H_O_BKL])) // G)),   # the last region
        "overflow": int(glob[G_COVF]),
    }


@njit(cache=True, inline="always", _nrt=False)
def _chs(H, g):
    return H[_u(H_O_CH)] + g * NCHF


@njit(cache=True, inline="always", _nrt=False)
def _slot(H, g, s):
    return H[_u(H_O_SLOT)] + (g * H[_u(H_S)] + s) * NSL


@njit(cache=True, inline="always", _nrt=False)
def _q(H, g, qi):
    return H[_u(H_O_Q)] + (g * 4 + qi) * H[_u(H_S)]


@njit(cache=True, inline="always", _nrt=False)
def _bank(H, g, fb):
    return H[_u(H_O_BANK)] + (g * H[_u(H_NB)] + fb) * 3


@njit(cache=True, inline="always", _nrt=False)
def _rdy(H, g):
    return H[_u(H_O_READY)] + g * H[_u(H_NN)] * H[_u(H_NC)]


@njit(cache=True, inline="always", _nrt=False)
def _bkl(H, g, fb):
    """Offset of the list head of flat bank ``fb`` of channel ``g``."""
    return H[_u(H_O_BKL)] + g * H[_u(H_NB)] + fb


@njit(cache=True, inline="always", _nrt=False)
def _meta(params, row, cmd):
    return params.tab[_u(params.o_cmeta + row * params.n_cmds + cmd)]


@njit(cache=True, inline="always", _nrt=False)
def _remove_at(H, g, qi, pos):
    oq = _q(H, g, qi)
    c = _chs(H, g) + qi
    n = H[_u(c)]
    for k in range(pos, n - 1):
        H[_u(oq + k)] = H[_u(oq + k + 1)]
    H[_u(c)] = n - 1
