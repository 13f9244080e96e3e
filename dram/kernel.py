"""The numba DDR5 controller: per-channel read/write/active/priority buffers, FR-FCFS, write
drain, open/closed rows, all-bank refresh, the timing-constraint table -- and the closed-loop
API that the system engine calls from its own jitted code.

Public functions are ``@njit(cache=True)`` functions of ``(params, state, ...)``: ``params`` is
:data:`dram.config.Params` (``DRAMConfig.resolve()``, a numpy record), ``state`` is :class:`State`
(:func:`new_state`). Open-loop replay (:mod:`dram.openloop`) drives the very same
:func:`offer` and :func:`tick`.

Layout. Passing a jitted function a tuple of many arrays costs about 40 ns per array and call
(reference counting), which would dominate a cycle-level model. So the whole controller state
is ONE int64 array, ``state.heap``, split into regions whose offsets sit in its header (``H_*``
slots); ``params`` carries one array (``params.tab``). Internal functions take ``(params, H)``.
:func:`views` returns named numpy views of the regions for Python code.

Semantics (Ramulator 2.1 ``GenericDDR`` controller; docs/dram.md)
----------------------------------------------------------------
One controller cycle at clock ``clk`` (per channel, channels in index order):

1. Completed reads: every read at the front of the pending FIFO with depart <= clk completes
   (completion cycle = clk).
2. Refresh: at clk = k * nREFI (k >= 1) one REFab request per rank enters the priority buffer.
3. Scheduling, at most one command per channel per cycle:
   a. active buffer (requests whose ACT issued): the FR-FCFS best, if timing-ready;
   b. else the priority-buffer head (PREab until the rank is closed, then REFab), if ready
      and it does not close a bank that an active request needs;
   c. else, only if the priority buffer is empty: update write mode (enter when the write
      buffer reaches the high watermark or no read waits; leave below the low watermark when
      reads wait), then the FR-FCFS best eligible request of the read or write buffer, if
      ready. Eligible = its next command does not close a bank held by an active request.
   FR-FCFS: timing-ready first, then oldest acceptance cycle, then buffer order.
4. Issue: row hit/miss/conflict counted at a request's first command (bank state before it);
   the constraint table updates the timing state; ACT moves the request to the active buffer;
   the final RD completes at issue + nCL + nBL; the final WR completes at its issue.

Idle cycles cost nothing: each channel keeps ``wake``, the earliest cycle at which its
decision can change (a not-ready command becomes ready), and :func:`tick` skips it before then;
:func:`next_event` tells a driver the next cycle at which anything can happen. Idle refresh
periods cost nothing either: :func:`advance_channel` takes a channel through an idle stretch
of any length, applying its refresh periods in closed form (the state stepping would give).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

# The kernels allocate nothing, so they run without numba's reference counting (``_nrt=False``):
# with it, every call would pay two atomic operations per array argument.

from dram.config import (M_ACCESS, M_AUTOPRE, M_CLOSE, M_DBUS, M_LOCAL, M_OPEN, M_RSCOPE,
                         NO_CONSTRAINT)
from dram.jitcache import drop_stale
import dram.config as _config
from dram.standards import ddr5 as _ddr5

drop_stale(__file__, _config.__file__)  # constants of dram.config are compiled into the kernels

# Command ids (same order as dram.standards.ddr5.COMMANDS).
ACT, PREpb, PREab, RD, WR, RDA, WRA, REFab, RD_L, WR_L, RDA_L, WRA_L = range(12)
COMMAND_NAMES = ("ACT", "PREpb", "PREab", "RD", "WR", "RDA", "WRA", "REFab",
                 "RD_L", "WR_L", "RDA_L", "WRA_L")

INF = 1 << 62
#: Commands of the standard, a compile-time constant of the kernels (the command ids above
#: are compiled in too).
N_CMDS = len(COMMAND_NAMES)
if COMMAND_NAMES != _ddr5.COMMANDS:
    raise ImportError("dram.kernel's command ids differ from dram.standards.ddr5.COMMANDS")
if N_CMDS != 12:
    raise ImportError(f"dram.kernel._dense_max is written out for 12 commands, not {N_CMDS}")


@njit(cache=True, _nrt=False)
def _u(i):
    """An index as unsigned: numba then skips its negative-index wrap-around code (about ten
    instructions per subscript). Every index in this module is >= 0 by construction."""
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
C_NA = 12       # 12..15: active requests whose final command is RD, WR, RD_L, WR_L
# changes of what decides whether an offer is accepted (the read and write buffers' contents,
# the pending reads): a driver may treat a request rejected while this stayed the same as
# rejected again. Commands that leave both alone (precharges, activations that cannot move
# their request to the full active buffer, final commands of active requests whose data
# goes straight to the completion ring) do not move it.
C_OFFSTAMP = 16
C_LASTTICK = 17  # open-loop replay: the last cycle this channel was driven to
# Scheduler memo. An evaluation that finds nothing ready at once knows the decision
# at its wake-up cycle: the first request (in FR-FCFS order) whose ready cycle is the earliest.
# It is kept as (cycle, queue, position, command) with the channel's epoch, which counts what
# can change a decision other than time: issued commands, refresh requests, and offers that
# switch the write mode (an accepted offer otherwise appends to a buffer, behind the memo's
# request, or to the buffer not being read). A visit at that cycle in the same epoch issues it
# without scanning the buffers again.
C_EPOCH, C_MCLK, C_MQ, C_MPOS, C_MCMD, C_MEPOCH = 18, 19, 20, 21, 22, 23
# what the scheduler's decision (_decide) returns instead of a queue when it serves no request
D_NONE, D_REFRESHED = -1, -2    # nothing ready; a refresh command issued
NCHF = 24
# ---- globals
G_CHEAD, G_CLEN, G_COVF, G_CHANGES, G_LOGLEN = range(5)
# ---- statistics per channel
S_RD_HIT, S_RD_MISS, S_RD_CONF, S_WR_HIT, S_WR_MISS, S_WR_CONF = 0, 1, 2, 3, 4, 5
S_READS, S_WRITES, S_REFRESH, S_FORWARDED, S_COALESCED, S_BUS_BUSY = 6, 7, 8, 9, 10, 11
S_CMD0 = 12
N_STATS = S_CMD0 + 12
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
# the precharging command's issue (PREpb, PREab, or the column command of RDA/WRA). Idle
# refresh periods leave all three unchanged (no bank is open in them), so advance_channel's
# closed form needs nothing for them.
RA_OPEN, RA_SINCE, RA_CYCLES, RA_BANKCYC, RA_LAST = 0, 1, 2, 3, 4
NRA = 5
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
    [G, ranks, NRA = 5] (``RA_*``), bank list heads [G, nb_ch] (slot or -1). Use
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


# ============================================================================ address mapping
@njit(cache=True, inline="always", _nrt=False)
def _map_field(params, addr, want):
    t = params.tab
    x = addr >> 6
    for k in range(6):
        f = t[_u(params.o_map_fields + k)]
        r = t[_u(params.o_map_radix + f)]
        if f == want:
            return x % r
        x = x // r
    return 0


@njit(cache=True, _nrt=False)
def map_address(params, addr):
    """Byte address -> (channel, rank, bank group, bank, row, column) under the mapping.

    The line index ``addr >> 6`` is split into mixed-radix fields, LSB first in the order of
    the mapping; bits above the last field are dropped (as Ramulator's mapper does).
    """
    t = params.tab
    x = addr >> 6
    ch = rank = bg = bank = row = col = 0
    for k in range(6):
        f = t[_u(params.o_map_fields + k)]
        r = t[_u(params.o_map_radix + f)]
        v = x % r
        x = x // r
        if f == 0:
            ch = v
        elif f == 1:
            rank = v
        elif f == 2:
            bg = v
        elif f == 3:
            bank = v
        elif f == 4:
            row = v
        else:
            col = v
    return ch, rank, bg, bank, row, col


@njit(cache=True)
def map_channels(params, addr):
    """Channel of each address. addr int64[N] -> int64[N]."""
    n = addr.shape[0]
    out = np.empty(n, np.int64)
    for i in range(n):
        out[i] = _map_field(params, addr[i], 0)
    return out


# ============================================================================ small helpers
# SPECIALIZED FROM HERE: cosmos.specialize compiles a second copy of the code below this line
# in which the scalar fields of ``params`` and the header slots of ``H`` are constants (the
# one-channel controllers of one configuration; about 13 % less time per simulated request).
# It finds them by their spelling: write them as ``params.<field>`` and ``H[_u(H_<SLOT>)]``.
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
def _meta(params, row, cmd):
    return params.tab[_u(params.o_cmeta + row * params.n_cmds + cmd)]


@njit(cache=True, inline="always", _nrt=False)
def ready_time(params, H, g, cmd, rank, fb):
    """Earliest cycle at which ``cmd`` may issue to (rank, flat bank fb) of channel g."""
    NC = params.n_cmds
    base = _rdy(H, g) + cmd
    t = H[_u(base)]
    v = H[_u(base + (1 + rank) * NC)]
    if v > t:
        t = v
    nbg = params.n_bg
    nb = params.n_banks
    o_bg = 1 + params.n_ranks
    o_bk = o_bg + params.n_ranks * nbg
    if _meta(params, M_RSCOPE, cmd) == 1:
        for k in range(nbg):
            v = H[_u(base + (o_bg + rank * nbg + k) * NC)]
            if v > t:
                t = v
        for k in range(nbg * nb):
            v = H[_u(base + (o_bk + rank * nbg * nb + k) * NC)]
            if v > t:
                t = v
        return t
    v = H[_u(base + (o_bg + _fb_bg(params, fb)) * NC)]
    if v > t:
        t = v
    v = H[_u(base + (o_bk + fb) * NC)]
    if v > t:
        t = v
    return t


@njit(cache=True, inline="always", _nrt=False)
def _slot_ready(H, rb, o, cmd):
    """Ready cycle of a bank-scope ``cmd`` for the request in slot offset ``o`` (rb = the
    channel's ready-region base)."""
    t = _upper_ready(H, rb, o, cmd)
    v = _local_ready(H, rb, o, cmd)
    return v if v > t else t


@njit(cache=True, inline="always", _nrt=False)
def _upper_ready(H, rb, o, cmd):
    """Channel- and rank-level part of the ready cycle of ``cmd`` for the request in slot
    offset ``o`` (moved by every command to the channel)."""
    t = H[_u(rb + cmd)]
    v = H[_u(rb + H[_u(o + SL_RKO)] + cmd)]
    return v if v > t else t


@njit(cache=True, inline="always", _nrt=False)
def _local_ready(H, rb, o, cmd):
    """Bank-group- and bank-level part of the ready cycle of ``cmd`` for the request in slot
    offset ``o``."""
    t = H[_u(rb + H[_u(o + SL_BGO)] + cmd)]
    v = H[_u(rb + H[_u(o + SL_BKO)] + cmd)]
    return v if v > t else t


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
def _bkl(H, g, fb):
    """Offset of the list head of flat bank ``fb`` of channel ``g``."""
    return H[_u(H_O_BKL)] + g * H[_u(H_NB)] + fb


@njit(cache=True, inline="always", _nrt=False)
def _cache_slot(params, H, rb, ob, o):
    """Set the scheduler cache (SL_NC, SL_L) of the request in slot offset ``o``."""
    cmd = _slot_preq(H, ob, o)
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
        _cache_slot(params, H, rb, ob, o)
        s = H[_u(o + SL_LNEXT)]


@njit(cache=True, inline="always", _nrt=False)
def _recache(params, H, g, cmd, rank, fb):
    """After ``cmd`` issued to (rank, fb): refresh the cache of the requests whose next
    command, eligibility or bank-level ready cycles it can have changed -- those of its bank,
    of its bank group for a command with sibling records at the bank level, or of its whole
    rank for a rank-scope command. (The bank-group level is read live by the scheduler, so
    the requests of the other banks of the group keep their cache: a command to one bank
    changes no other bank's state, active count or bank-level ready cycles.)"""
    rb = _rdy(H, g)
    ob = H[_u(H_O_BANK)] + g * H[_u(H_NB)] * 3
    if _meta(params, M_RSCOPE, cmd) == 1:
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
def preq_command(params, H, g, final, rank, fb, row):
    """The next command a request needs, from the bank state (Ramulator's get_preq_command)."""
    if _meta(params, M_RSCOPE, final) == 1:           # REFab: every bank of the rank closed
        nbr = params.n_bg * params.n_banks
        for k in range(nbr):
            if H[_u(_bank(H, g, rank * nbr + k))] >= 0:
                return PREab
        return final
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
    if _meta(params, M_RSCOPE, cmd) == 1:
        nbr = params.n_bg * params.n_banks
        for k in range(nbr):
            if H[_u(_bank(H, g, rank * nbr + k) + 1)] > 0:
                return True
        return False
    return H[_u(_bank(H, g, fb) + 1)] > 0


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


@njit(cache=True, inline="always", _nrt=False)
def _remove_at(H, g, qi, pos):
    oq = _q(H, g, qi)
    c = _chs(H, g) + qi
    n = H[_u(c)]
    for k in range(pos, n - 1):
        H[_u(oq + k)] = H[_u(oq + k + 1)]
    H[_u(c)] = n - 1


# ============================================================================ timing update
@njit(cache=True, inline="always", _nrt=False)
def _dense_max(H, t, rb, d, clk):
    """ready[rb + f] = max(ready[rb + f], clk + dlat[d + f]) for every follow command f
    (entries without a constraint hold NO_CONSTRAINT).

    Written out for the twelve commands (``N_CMDS``, checked at import), every load before
    any store: the compiler cannot tell the table and the state apart, so a loop (load,
    max, store, next) must run in order, while here LLVM's SLP vectorizer (enabled for
    our entry points by :func:`dram.jitcache.vectorizing`) turns the 36 scalar operations
    into a few vector loads, maxima and stores. Measured: 1.02 M -> 1.09 M requests/s on
    five loaded set A traces (interleaved, best of 6); the loop form gains nothing from
    the vectorizer.
    """
    a0, a1, a2, a3 = clk + t[_u(d)], clk + t[_u(d + 1)], clk + t[_u(d + 2)], clk + t[_u(d + 3)]
    a4, a5, a6, a7 = (clk + t[_u(d + 4)], clk + t[_u(d + 5)], clk + t[_u(d + 6)],
                      clk + t[_u(d + 7)])
    a8, a9, a10, a11 = (clk + t[_u(d + 8)], clk + t[_u(d + 9)], clk + t[_u(d + 10)],
                        clk + t[_u(d + 11)])
    b0, b1, b2, b3 = H[_u(rb)], H[_u(rb + 1)], H[_u(rb + 2)], H[_u(rb + 3)]
    b4, b5, b6, b7 = H[_u(rb + 4)], H[_u(rb + 5)], H[_u(rb + 6)], H[_u(rb + 7)]
    b8, b9, b10, b11 = H[_u(rb + 8)], H[_u(rb + 9)], H[_u(rb + 10)], H[_u(rb + 11)]
    H[_u(rb)] = max(a0, b0)
    H[_u(rb + 1)] = max(a1, b1)
    H[_u(rb + 2)] = max(a2, b2)
    H[_u(rb + 3)] = max(a3, b3)
    H[_u(rb + 4)] = max(a4, b4)
    H[_u(rb + 5)] = max(a5, b5)
    H[_u(rb + 6)] = max(a6, b6)
    H[_u(rb + 7)] = max(a7, b7)
    H[_u(rb + 8)] = max(a8, b8)
    H[_u(rb + 9)] = max(a9, b9)
    H[_u(rb + 10)] = max(a10, b10)
    H[_u(rb + 11)] = max(a11, b11)


@njit(cache=True, inline="always", _nrt=False)
def _level_update(params, H, t, rb0, oh0, HM, lc, cmd, first, cnt, tlo, thi, clk):
    """One level of :func:`update_timing`: nodes [first, first + cnt), targets [tlo, thi)."""
    NC = N_CMDS
    hl = t[_u(params.o_hist_len + lc)]
    d = params.o_dlat + lc * 2 * NC                   # dense target row; + NC: siblings
    for x in range(tlo, thi):
        node = first + x
        rb = rb0 + node * NC
        _dense_max(H, t, rb, d, clk)
        if hl > 0:                                    # windowed records [k0, kw)
            oh = oh0 + (node * NC + cmd) * HM
            for k in range(hl - 1, 0, -1):
                H[_u(oh + k)] = H[_u(oh + k - 1)]
            H[_u(oh)] = clk
            for k in range(t[_u(params.o_cons_ptr + lc)], t[_u(params.o_win_end + lc)]):
                past = H[_u(oh + t[_u(params.o_win + k)] - 1)]
                if past >= 0:
                    v = past + t[_u(params.o_lat + k)]
                    f = rb + t[_u(params.o_follow + k)]
                    if v > H[_u(f)]:
                        H[_u(f)] = v
    if t[_u(params.o_has_sib + lc)] == 1:
        for x in range(cnt):
            if x < tlo or x >= thi:
                _dense_max(H, t, rb0 + (first + x) * NC, d + NC, clk)


@njit(cache=True, _nrt=False)
def update_timing(params, H, g, cmd, rank, fb, clk):
    """Apply the constraint table for ``cmd`` issued at ``clk`` to (rank, fb) of channel g.

    Each level's target node gets the non-sibling constraints: the spacing ones as one dense
    max-update over every follow command (``dlat``), the windowed ones through the node's
    issue history of ``cmd``; the other children of a target's parent (siblings) get the
    sibling ones (dense too). A rank-scope command (PREab, REFab) targets every bank group and
    bank of its rank. With the dense table a command costs twelve branch-free max-updates per
    node instead of a loop over its records (DDR5: 272 of the 273 records are spacings).
    """
    t = params.tab
    NC = N_CMDS
    rb0 = _rdy(H, g)
    HM = H[_u(H_HM)]
    oh0 = H[_u(H_O_HIST)] + g * H[_u(H_NN)] * NC * HM
    nbg, nb, nr = params.n_bg, params.n_banks, params.n_ranks
    o_bg = 1 + nr
    o_bk = o_bg + nr * nbg
    _level_update(params, H, t, rb0, oh0, HM, cmd, cmd, 0, 1, 0, 1, clk)
    _level_update(params, H, t, rb0, oh0, HM, NC + cmd, cmd, 1, nr, rank, rank + 1, clk)
    if _meta(params, M_RSCOPE, cmd) == 1:
        _level_update(params, H, t, rb0, oh0, HM, 2 * NC + cmd, cmd, o_bg + rank * nbg, nbg,
                      0, nbg, clk)
        _level_update(params, H, t, rb0, oh0, HM, 3 * NC + cmd, cmd, o_bk + rank * nbg * nb,
                      nbg * nb, 0, nbg * nb, clk)
    else:
        bgi = _fb_bg(params, fb)                      # flat bank group within the channel
        x = bgi - rank * nbg
        _level_update(params, H, t, rb0, oh0, HM, 2 * NC + cmd, cmd, o_bg + rank * nbg, nbg,
                      x, x + 1, clk)
        x = fb - bgi * nb
        _level_update(params, H, t, rb0, oh0, HM, 3 * NC + cmd, cmd, o_bk + bgi * nb, nb,
                      x, x + 1, clk)


@njit(cache=True, inline="always", _nrt=False)
def _rank_opens(H, g, rank, clk):
    """A bank of ``rank`` opens at ``clk`` (rank residency, ``RA_*``)."""
    o = H[_u(H_O_RACT)] + (g * H[_u(H_R)] + rank) * NRA
    H[_u(o + RA_BANKCYC)] += H[_u(o + RA_OPEN)] * (clk - H[_u(o + RA_LAST)])
    H[_u(o + RA_LAST)] = clk
    if H[_u(o + RA_OPEN)] == 0:
        H[_u(o + RA_SINCE)] = clk
    H[_u(o + RA_OPEN)] += 1


@njit(cache=True, inline="always", _nrt=False)
def _rank_closes(H, g, rank, n, clk):
    """``n`` open banks of ``rank`` close at ``clk``: the rank's active interval ends when
    the last one does."""
    o = H[_u(H_O_RACT)] + (g * H[_u(H_R)] + rank) * NRA
    H[_u(o + RA_BANKCYC)] += H[_u(o + RA_OPEN)] * (clk - H[_u(o + RA_LAST)])
    H[_u(o + RA_LAST)] = clk
    H[_u(o + RA_OPEN)] -= n
    if H[_u(o + RA_OPEN)] == 0:
        H[_u(o + RA_CYCLES)] += clk - H[_u(o + RA_SINCE)]


@njit(cache=True, inline="always", _nrt=False)
def issue_command(params, H, g, cmd, rank, fb, row, clk):
    """Issue ``cmd`` now: timing state, bank state, rank residency, command statistics and
    log."""
    update_timing(params, H, g, cmd, rank, fb, clk)
    if cmd == ACT:
        ob = _bank(H, g, fb)
        if H[_u(ob)] < 0:
            _rank_opens(H, g, rank, clk)
        H[_u(ob)] = row
    elif cmd == PREpb or cmd == RDA or cmd == WRA or cmd == RDA_L or cmd == WRA_L:
        ob = _bank(H, g, fb)
        if H[_u(ob)] >= 0:
            _rank_closes(H, g, rank, 1, clk)
        H[_u(ob)] = -1
    elif cmd == PREab:
        nbr = params.n_bg * params.n_banks
        n_open = 0
        for k in range(nbr):
            ob = _bank(H, g, rank * nbr + k)
            if H[_u(ob)] >= 0:
                n_open += 1
            H[_u(ob)] = -1
        if n_open > 0:
            _rank_closes(H, g, rank, n_open, clk)
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
        if _meta(params, M_RSCOPE, cmd) == 1:
            H[_u(ol + LOG_BG)] = -1
            H[_u(ol + LOG_BANK)] = -1
            H[_u(ol + LOG_ROW)] = -1
        else:
            bgf = _fb_bg(params, fb)
            H[_u(ol + LOG_BG)] = bgf - rank * params.n_bg
            H[_u(ol + LOG_BANK)] = fb - bgf * params.n_banks
            H[_u(ol + LOG_ROW)] = row
        H[_u(og + G_LOGLEN)] += 1


# ============================================================================ frontend side
@njit(cache=True, _nrt=False)
def _offer(params, H, instance, req_id, addr, is_write, rank_local, clk):
    ch, rank, bgi, bank, row, col = map_address(params, addr)
    g = instance * params.n_channels + ch
    fb = (rank * params.n_bg + bgi) * params.n_banks + bank
    return _offer_mapped(params, H, g, req_id, addr, is_write, rank_local, clk, rank, bgi,
                         fb, row)


@njit(cache=True, _nrt=False)
def map_all(params, addr, out):
    """Map every address once (for drivers that offer the same request many times).

    addr int64[N] -> out int64[N, 5]: channel, rank, bank group, row, and the flat bank
    index within the channel, ``(rank * n_bg + bank group) * n_banks + bank``.
    """
    for i in range(addr.shape[0]):
        ch, rank, bgi, bank, row, col = map_address(params, addr[i])
        out[i, 0] = ch
        out[i, 1] = rank
        out[i, 2] = bgi
        out[i, 3] = row
        out[i, 4] = (rank * params.n_bg + bgi) * params.n_banks + bank


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
    _cache_slot(params, H, rb, H[_u(H_O_BANK)] + g * H[_u(H_NB)] * 3, o)
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
def offer(params, state, instance, req_id, addr, is_write, rank_local, clk):
    """Offer one 64-B request at cycle ``clk`` (Ramulator's ``send``); True if accepted.

    A read whose address is in its channel's write buffer is forwarded (completes at the
    first cycle >= clk + 1 at which no older read is pending); a write whose address is
    already in the write buffer is coalesced (completes now, at ``clk``). Otherwise the
    request needs a free read/write buffer entry. ``rank_local`` = 1 marks a rank-PU access
    (it becomes RD_L / WR_L: command bus shared, channel data bus not used).
    """
    return _offer(params, state.heap, instance, req_id, addr, is_write, rank_local, clk)


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


@njit(cache=True, _nrt=False)
def pop_completions(state, out_ids, out_cycles):
    """Move up to len(out_ids) completions (oldest first) to the outputs; return how many.

    out_ids, out_cycles : int64[K] -> request id, completion cycle.
    """
    return _pop(state.heap, out_ids, out_cycles)


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


@njit(cache=True, _nrt=False)
def next_event(params, state, clk):
    """Earliest cycle >= clk at which :func:`tick` can change anything (``INF`` if never).

    Ticking every cycle and ticking only at these cycles give identical results.
    """
    return _next_event(params, state.heap, clk)


@njit(cache=True, _nrt=False)
def completions_pending(state):
    """Number of completions waiting in the ring."""
    H = state.heap
    return H[_u(H[_u(H_O_GLOB)] + G_CLEN)]


# ============================================================================ scheduling
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
    # commands present (counted per command in C_NA..C_NA+3).
    c = _chs(H, g)
    lb = INF
    if H[_u(c + C_NA)] > 0:
        lb = H[_u(rb + RD)]
    if H[_u(c + C_NA + 1)] > 0 and H[_u(rb + WR)] < lb:
        lb = H[_u(rb + WR)]
    if H[_u(c + C_NA + 2)] > 0 and H[_u(rb + RD_L)] < lb:
        lb = H[_u(rb + RD_L)]
    if H[_u(c + C_NA + 3)] > 0 and H[_u(rb + WR_L)] < lb:
        lb = H[_u(rb + WR_L)]
    if lb > clk:
        return -1, -1, lb, -2, -1
    # (an activated request's row is open and stays open until its final command -- no
    # command may close a bank an active request needs -- so that is its cached command)
    return _scan_cached(H, g, Q_ACT, n, rb, clk)


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
        cmd = _slot_preq(H, ob, o)
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


@njit(cache=True, inline="always", _nrt=False)
def _na_index(final):
    """Channel-scalar index of the active-request count of a final command (an
    auto-precharge variant counts as its plain command)."""
    if final == RD or final == RDA:
        return C_NA
    if final == WR or final == WRA:
        return C_NA + 1
    if final == RD_L or final == RDA_L:
        return C_NA + 2
    return C_NA + 3


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
    for cmd in range(params.n_cmds):
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
        for r in range(params.n_ranks):
            if H[_u(c + C_PQL)] < PQ:
                H[_u(H[_u(H_O_PRIO)] + g * PQ + _wrap(H[_u(c + C_PQH)] + H[_u(c + C_PQL)], PQ))] = r
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
        rank = H[_u(H[_u(H_O_PRIO)] + g * PQ + H[_u(c + C_PQH)])]
        fb0 = rank * params.n_bg * params.n_banks
        cmd = preq_command(params, H, g, REFab, rank, fb0, -1)
        rt = ready_time(params, H, g, cmd, rank, fb0)
        if rt <= clk:
            if not _closes_active(params, H, g, cmd, rank, fb0):
                issue_command(params, H, g, cmd, rank, fb0, -1, clk)
                _recache(params, H, g, cmd, rank, fb0)
                H[_u(H[_u(H_O_GLOB)] + G_CHANGES)] += 1
                H[_u(c + C_EPOCH)] += 1
                if cmd == REFab:
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
    # nothing ready: the decision at the wake-up cycle, if known (the active buffer first)
    if wake <= w2:
        if apos >= 0:
            _memo(H, c, wake, Q_ACT, apos, acmd)
    else:
        wake = w2
        if bpos >= 0:
            _memo(H, c, w2, qi, bpos, bcmd)
    H[_u(c + C_WAKE)] = wake
    return D_NONE, -1, -1


@njit(cache=True, inline="always", _nrt=False)
def _memo(H, c, clk, qi, pos, cmd):
    H[_u(c + C_MCLK)] = clk
    H[_u(c + C_MQ)] = qi
    H[_u(c + C_MPOS)] = pos
    H[_u(c + C_MCMD)] = cmd
    H[_u(c + C_MEPOCH)] = H[_u(c + C_EPOCH)]


@njit(cache=True, _nrt=False)
def _tick(params, H, clk):
    PD = H[_u(H_PD)]
    for g in range(H[_u(H_G)]):
        c = _chs(H, g)
        if clk < H[_u(c + C_WAKE)] and clk < H[_u(c + C_NREF)]:
            if H[_u(c + C_PDL)] == 0 or H[_u(H[_u(H_O_PEND)] + (g * PD + H[_u(c + C_PDH)]) * 2 + 1)] > clk:
                continue
        _channel_tick(params, H, g, clk)


@njit(cache=True, _nrt=False)
def tick(params, state, clk):
    """One controller cycle at clock ``clk`` for every channel of every instance.

    Channels with nothing to do at ``clk`` are skipped (exactly: nothing would change).
    Completions are appended to the completion ring (:func:`pop_completions`).
    """
    _tick(params, state.heap, clk)


@njit(cache=True, _nrt=False)
def changes(state):
    """Counter of buffer-changing events (accepts and issued commands), for drivers."""
    H = state.heap
    return H[_u(H[_u(H_O_GLOB)] + G_CHANGES)]


@njit(cache=True, _nrt=False)
def ticks_until(params, state, clk_from, clk_to):
    """Tick every cycle in [clk_from, clk_to] at which something can happen (for a driver
    with nothing to offer in between); returns clk_to + 1."""
    H = state.heap
    c = _next_event(params, H, clk_from)
    while c <= clk_to:
        _tick(params, H, c)
        c = _next_event(params, H, c + 1)
    return clk_to + 1


# ============================================================================ idle refresh periods
# An idle channel (empty buffers, no pending read, refresh requests all served, every bank
# closed, every ready cycle in the past) goes through the same commands in every refresh
# period: at each k * nREFI one REFab per rank enters the priority buffer and issues as soon as
# the timing allows. Only time moves: each such period adds the same amounts to the counters
# and moves every ready cycle it touches by exactly nREFI. :func:`advance_channel` steps
# periods until two in a row started in that state, then applies any number of further whole
# periods at once (docs/dram.md, "Idle time and refresh").

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


def jump_scratch(params) -> np.ndarray:
    """Work array for :func:`advance_channel` (one snapshot of a channel's counters)."""
    return np.zeros(NCHF + params.n_nodes * params.n_cmds + N_STATS + 1, np.int64)


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
        jump = params.refresh == 1 and clk_to - c >= 3 * nrefi and _refresh_periodic(params)
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
