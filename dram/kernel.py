"""The numba DDR5 controller: per-channel read/write/active/priority buffers, FR-FCFS, write
drain, open/closed rows, all-bank refresh, and the timing-constraint table -- and the
closed-loop API the system engine calls from its own jitted code.

All functions here are plain ``@njit(cache=True)`` functions of ``(params, state, ...)``:
``params`` is :class:`dram.config.Params` (from ``DRAMConfig.resolve()``), ``state`` is
:class:`State` (from :func:`new_state`). Open-loop replay (:mod:`dram.replay`) drives the very
same :func:`offer` and :func:`tick`.

Semantics (Ramulator 2.1 ``GenericDDR`` controller; see docs/dram.md)
------------------------------------------------------------------
One controller cycle at clock ``clk`` (per channel, channels in index order):

1. Completed reads: every read at the front of the pending FIFO with depart <= clk completes
   (completion cycle = clk).
2. Refresh: at clk = k * nREFI (k >= 1) one REFab request per rank enters the priority buffer.
3. Scheduling, at most one command per channel per cycle:
   a. active buffer (requests whose ACT issued): the FR-FCFS best, if timing-ready;
   b. else the priority-buffer head (its next command: PREab until the rank is closed, then
      REFab), if ready and it does not close a bank an active request needs;
   c. else, only if the priority buffer is empty: update write mode, then the FR-FCFS best
      eligible request of the read or the write buffer, if ready. Eligible = its next command
      does not close a bank held by an active request.
   FR-FCFS: timing-ready first, then oldest acceptance cycle, then buffer order.
4. Issue: row hit/miss/conflict counted at a request's first command; timing state updated from
   the constraint table; ACT moves the request to the active buffer; the final RD completes at
   issue + nCL + nBL, the final WR completes at its issue.

Idle cycles cost nothing: each channel stores ``wake``, the earliest cycle at which its
scheduling decision can change (a not-yet-ready command becomes ready), and :func:`tick` skips
a channel before that cycle; :func:`next_event` tells a driver where the next change is.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

# Command ids (same order as dram.standards.ddr5.COMMANDS).
ACT, PREpb, PREab, RD, WR, RDA, WRA, REFab, RD_L, WR_L, RDA_L, WRA_L = range(12)

INF = np.int64(1) << np.int64(62)

# Statistic slots of State.stats[g, :] (per global channel).
S_RD_HIT, S_RD_MISS, S_RD_CONF, S_WR_HIT, S_WR_MISS, S_WR_CONF = 0, 1, 2, 3, 4, 5
S_READS, S_WRITES, S_REFRESH, S_FORWARDED, S_COALESCED, S_BUS_BUSY = 6, 7, 8, 9, 10, 11
S_CMD0 = 12                          # S_CMD0 + cmd: commands issued per command id
N_STATS = S_CMD0 + 12
STAT_NAMES = ("read_row_hits", "read_row_misses", "read_row_conflicts", "write_row_hits",
              "write_row_misses", "write_row_conflicts", "reads_served", "writes_served",
              "refresh_cmds", "reads_forwarded", "writes_coalesced", "data_bus_busy_cycles",
              "n_ACT", "n_PREpb", "n_PREab", "n_RD", "n_WR", "n_RDA", "n_WRA", "n_REFab",
              "n_RD_L", "n_WR_L", "n_RDA_L", "n_WRA_L")

# Request types
T_READ, T_WRITE = 0, 1

# Columns of the command log.
LOG_CLK, LOG_CH, LOG_CMD, LOG_RANK, LOG_BG, LOG_BANK, LOG_ROW = range(7)


class State(NamedTuple):
    """Controller state of ``G = instances x channels`` channels (structure of arrays).

    Request slots (per channel, ``S = read_q + write_q + active_q`` slots), all [G, S]:
    ``s_id`` int64 request id, ``s_addr`` int64 byte address, ``s_rank`` ``s_fb`` (flat bank in
    the channel) ``s_row`` int64, ``s_arrive`` int64 acceptance cycle, ``s_type`` (0 read,
    1 write), ``s_final`` final command, ``s_stat`` (1 once row statistics were taken).
    Ordered buffers of slot ids: ``rq`` [G, read_q], ``wq`` [G, write_q], ``aq`` [G, active_q],
    with lengths ``rq_len``, ``wq_len``, ``aq_len`` [G]; free slots ``free`` [G, S] / ``free_len``.
    Priority (refresh) ring: ``pq_rank`` [G, prio_q], ``pq_head``, ``pq_len``.
    Pending reads ring: ``pd_id``, ``pd_dep`` [G, pend_q], ``pd_head``, ``pd_len``.
    DRAM: ``open_row`` [G, nb_ch] (-1 = closed), ``act_cnt`` [G, nb_ch] active requests per bank,
    ``ready`` [G, n_nodes, n_cmds] earliest cycle per node and command, ``hist``
    [G, n_nodes, n_cmds, hist_max] issue history (-1 = none).
    Control: ``write_mode`` [G], ``wake`` [G], ``next_ref`` [G], ``changes`` [1] (count of
    buffer-changing events, for drivers).
    Completions ring (all channels): ``c_id``, ``c_cyc`` [cap], ``c_head``, ``c_len``,
    ``c_overflow`` [1] (number of completions lost because the ring was full: must stay 0).
    Statistics: ``stats`` [G, N_STATS] int64 (names in STAT_NAMES), ``rank_busy`` [G, ranks]
    data cycles per rank. Command log: ``log`` [log_cap, 7] int64 (clk, global channel,
    command, rank, bank group, bank, row), ``log_len`` [1].
    """
    s_id: np.ndarray
    s_addr: np.ndarray
    s_rank: np.ndarray
    s_fb: np.ndarray
    s_row: np.ndarray
    s_arrive: np.ndarray
    s_type: np.ndarray
    s_final: np.ndarray
    s_stat: np.ndarray
    rq: np.ndarray
    rq_len: np.ndarray
    wq: np.ndarray
    wq_len: np.ndarray
    aq: np.ndarray
    aq_len: np.ndarray
    free: np.ndarray
    free_len: np.ndarray
    pq_rank: np.ndarray
    pq_head: np.ndarray
    pq_len: np.ndarray
    pd_id: np.ndarray
    pd_dep: np.ndarray
    pd_head: np.ndarray
    pd_len: np.ndarray
    open_row: np.ndarray
    act_cnt: np.ndarray
    ready: np.ndarray
    hist: np.ndarray
    write_mode: np.ndarray
    wake: np.ndarray
    next_ref: np.ndarray
    changes: np.ndarray
    c_id: np.ndarray
    c_cyc: np.ndarray
    c_head: np.ndarray
    c_len: np.ndarray
    c_overflow: np.ndarray
    stats: np.ndarray
    rank_busy: np.ndarray
    log: np.ndarray
    log_len: np.ndarray
    scratch: np.ndarray


def new_state(params, instances=1, completion_capacity=4096, log_capacity=0):
    """Allocate the state of ``instances`` independent copies of the memory system.

    Parameters
    ----------
    params : dram.config.Params
    instances : int
        Independent memory systems (e.g. one per CXL device); global channel id =
        instance * params.n_channels + channel.
    completion_capacity : int
        Size of the completion ring. At most ``2 * G`` completions are produced per
        :func:`tick` plus one per accepted coalesced write in :func:`offer`; pop them often
        enough (``c_overflow`` counts losses and must stay 0).
    log_capacity : int
        Rows of the command log (0 = no log).

    Returns
    -------
    State
        Plain numpy arrays; usable from Python and from jitted code.
    """
    G = int(instances) * params.n_channels
    S = params.read_q + params.write_q + params.active_q
    NN, NC, H = params.n_nodes, params.n_cmds, params.hist_max
    i64 = np.int64
    free = np.empty((G, S), i64)
    free[:] = np.arange(S - 1, -1, -1, dtype=i64)[None, :]
    next_ref = np.full(G, params.nREFI if params.refresh else INF, i64)
    return State(
        s_id=np.full((G, S), -1, i64), s_addr=np.zeros((G, S), i64),
        s_rank=np.zeros((G, S), i64), s_fb=np.zeros((G, S), i64), s_row=np.zeros((G, S), i64),
        s_arrive=np.zeros((G, S), i64), s_type=np.zeros((G, S), i64),
        s_final=np.zeros((G, S), i64), s_stat=np.zeros((G, S), i64),
        rq=np.zeros((G, params.read_q), i64), rq_len=np.zeros(G, i64),
        wq=np.zeros((G, params.write_q), i64), wq_len=np.zeros(G, i64),
        aq=np.zeros((G, params.active_q), i64), aq_len=np.zeros(G, i64),
        free=free, free_len=np.full(G, S, i64),
        pq_rank=np.zeros((G, params.prio_q), i64), pq_head=np.zeros(G, i64),
        pq_len=np.zeros(G, i64),
        pd_id=np.zeros((G, params.pend_q), i64), pd_dep=np.zeros((G, params.pend_q), i64),
        pd_head=np.zeros(G, i64), pd_len=np.zeros(G, i64),
        open_row=np.full((G, params.nb_ch), -1, i64), act_cnt=np.zeros((G, params.nb_ch), i64),
        ready=np.zeros((G, NN, NC), i64), hist=np.full((G, NN, NC, H), -1, i64),
        write_mode=np.zeros(G, i64), wake=np.zeros(G, i64), next_ref=next_ref,
        changes=np.zeros(1, i64),
        c_id=np.zeros(int(completion_capacity), i64), c_cyc=np.zeros(int(completion_capacity), i64),
        c_head=np.zeros(1, i64), c_len=np.zeros(1, i64), c_overflow=np.zeros(1, i64),
        stats=np.zeros((G, N_STATS), i64), rank_busy=np.zeros((G, params.n_ranks), i64),
        log=np.zeros((max(int(log_capacity), 1), 7), i64), log_len=np.zeros(1, i64),
        scratch=np.full((G, params.nb_ch), INF, i64),
    )


# ============================================================================ address mapping
@njit(cache=True)
def map_address(params, addr):
    """Byte address -> (channel, rank, bank group, bank, row, column) under the mapping.

    The line index ``addr >> 6`` is split into mixed-radix fields, LSB first in the order of
    ``params.map_fields``; bits above the last field are dropped (as Ramulator's mapper does).
    """
    x = addr >> 6
    out = np.zeros(6, np.int64)
    for k in range(6):
        f = params.map_fields[k]
        r = params.map_radix[f]
        out[f] = x % r
        x = x // r
    return out[0], out[1], out[2], out[3], out[4], out[5]


@njit(cache=True)
def map_channels(params, addr):
    """Channel of each address. addr: int64[N] -> int64[N]."""
    n = addr.shape[0]
    ch = np.empty(n, np.int64)
    for i in range(n):
        c, r, g, b, ro, co = map_address(params, addr[i])
        ch[i] = c
    return ch


# ============================================================================ helpers
@njit(cache=True, inline="always")
def _node_rank(params, r):
    return 1 + r


@njit(cache=True, inline="always")
def _node_bg(params, rb):          # rb = rank * n_bg + bg
    return 1 + params.n_ranks + rb


@njit(cache=True, inline="always")
def _node_bank(params, fb):
    return 1 + params.n_ranks + params.n_ranks * params.n_bg + fb


@njit(cache=True)
def ready_time(params, state, g, cmd, rank, fb):
    """Earliest cycle at which ``cmd`` may issue to (rank, flat bank fb) of channel g."""
    rd = state.ready
    t = rd[g, 0, cmd]
    v = rd[g, 1 + rank, cmd]
    if v > t:
        t = v
    if params.cmd_rank_scope[cmd] == 1:
        nbr = params.n_bg * params.n_banks
        for bgi in range(params.n_bg):
            v = rd[g, _node_bg(params, rank * params.n_bg + bgi), cmd]
            if v > t:
                t = v
        for k in range(nbr):
            v = rd[g, _node_bank(params, rank * nbr + k), cmd]
            if v > t:
                t = v
        return t
    v = rd[g, _node_bg(params, fb // params.n_banks), cmd]
    if v > t:
        t = v
    v = rd[g, _node_bank(params, fb), cmd]
    if v > t:
        t = v
    return t


@njit(cache=True)
def preq_command(params, state, g, final, rank, fb, row):
    """The next command a request needs, from the DRAM state (Ramulator's get_preq_command)."""
    if params.cmd_rank_scope[final] == 1:            # REFab: all banks of the rank closed
        nbr = params.n_bg * params.n_banks
        for k in range(nbr):
            if state.open_row[g, rank * nbr + k] >= 0:
                return PREab
        return final
    o = state.open_row[g, fb]
    if o < 0:
        return ACT
    if o == row:
        return final
    return PREpb


@njit(cache=True)
def _closes_active(params, state, g, cmd, rank, fb):
    """True if ``cmd`` would close a bank that an activated request still needs."""
    if params.cmd_closing[cmd] == 0 or state.aq_len[g] == 0:
        return False
    if params.cmd_rank_scope[cmd] == 1:
        nbr = params.n_bg * params.n_banks
        for k in range(nbr):
            if state.act_cnt[g, rank * nbr + k] > 0:
                return True
        return False
    return state.act_cnt[g, fb] > 0


@njit(cache=True)
def _push_completion(state, req_id, cyc):
    cap = state.c_id.shape[0]
    if state.c_len[0] >= cap:
        state.c_overflow[0] += 1
        return
    k = (state.c_head[0] + state.c_len[0]) % cap
    state.c_id[k] = req_id
    state.c_cyc[k] = cyc
    state.c_len[0] += 1


@njit(cache=True)
def _remove_at(buf, lens, g, pos):
    n = lens[g]
    for k in range(pos, n - 1):
        buf[g, k] = buf[g, k + 1]
    lens[g] = n - 1


# ============================================================================ timing update
@njit(cache=True)
def _update_target(params, state, g, node, level, cmd, clk):
    hl = params.hist_len[level, cmd]
    if hl > 0:
        for k in range(hl - 1, 0, -1):
            state.hist[g, node, cmd, k] = state.hist[g, node, cmd, k - 1]
        state.hist[g, node, cmd, 0] = clk
    base = level * params.n_cmds + cmd
    for k in range(params.cons_ptr[base], params.cons_ptr[base + 1]):
        if params.cons_sib[k] == 1:
            continue
        past = state.hist[g, node, cmd, params.cons_win[k] - 1]
        if past < 0:
            continue
        v = past + params.cons_lat[k]
        f = params.cons_follow[k]
        if v > state.ready[g, node, f]:
            state.ready[g, node, f] = v


@njit(cache=True)
def _update_sibling(params, state, g, node, level, cmd, clk):
    base = level * params.n_cmds + cmd
    for k in range(params.cons_ptr[base], params.cons_ptr[base + 1]):
        if params.cons_sib[k] == 0:
            continue
        v = clk + params.cons_lat[k]
        f = params.cons_follow[k]
        if v > state.ready[g, node, f]:
            state.ready[g, node, f] = v


@njit(cache=True)
def update_timing(params, state, g, cmd, rank, fb, clk):
    """Apply the constraint table for ``cmd`` issued at ``clk`` to (rank, fb) of channel g.

    The target node of each level gets the non-sibling constraints (with its issue history
    for windowed ones); the other children of a target node get the sibling constraints. A
    rank-scope command (PREab, REFab) targets every bank group and bank of its rank.
    """
    _update_target(params, state, g, 0, 0, cmd, clk)
    for r in range(params.n_ranks):
        if r == rank:
            _update_target(params, state, g, 1 + r, 1, cmd, clk)
        elif params.has_sib[1, cmd] == 1:
            _update_sibling(params, state, g, 1 + r, 1, cmd, clk)
    nbg, nb = params.n_bg, params.n_banks
    if params.cmd_rank_scope[cmd] == 1:
        for bgi in range(nbg):
            _update_target(params, state, g, _node_bg(params, rank * nbg + bgi), 2, cmd, clk)
        for k in range(nbg * nb):
            _update_target(params, state, g, _node_bank(params, rank * nbg * nb + k), 3, cmd, clk)
        return
    rb = fb // nb
    for bgi in range(nbg):
        node = _node_bg(params, rank * nbg + bgi)
        if rank * nbg + bgi == rb:
            _update_target(params, state, g, node, 2, cmd, clk)
        elif params.has_sib[2, cmd] == 1:
            _update_sibling(params, state, g, node, 2, cmd, clk)
    for k in range(nb):
        f2 = rb * nb + k
        if f2 == fb:
            _update_target(params, state, g, _node_bank(params, f2), 3, cmd, clk)
        elif params.has_sib[3, cmd] == 1:
            _update_sibling(params, state, g, _node_bank(params, f2), 3, cmd, clk)


@njit(cache=True)
def issue_command(params, state, g, cmd, rank, fb, row, clk):
    """Issue ``cmd`` now: timing state, bank state, command statistics, command log."""
    update_timing(params, state, g, cmd, rank, fb, clk)
    if cmd == ACT:
        state.open_row[g, fb] = row
    elif cmd == PREpb or cmd == RDA or cmd == WRA or cmd == RDA_L or cmd == WRA_L:
        state.open_row[g, fb] = -1
    elif cmd == PREab:
        nbr = params.n_bg * params.n_banks
        for k in range(nbr):
            state.open_row[g, rank * nbr + k] = -1
    state.stats[g, S_CMD0 + cmd] += 1
    if params.cmd_accessing[cmd] == 1:
        state.rank_busy[g, rank] += params.nBL
        if params.cmd_data_bus[cmd] == 1:
            state.stats[g, S_BUS_BUSY] += params.nBL
    if state.log.shape[0] > 1 and state.log_len[0] < state.log.shape[0]:
        k = state.log_len[0]
        nbr = params.n_bg * params.n_banks
        state.log[k, LOG_CLK] = clk
        state.log[k, LOG_CH] = g
        state.log[k, LOG_CMD] = cmd
        state.log[k, LOG_RANK] = rank
        if params.cmd_rank_scope[cmd] == 1:
            state.log[k, LOG_BG] = -1
            state.log[k, LOG_BANK] = -1
            state.log[k, LOG_ROW] = -1
        else:
            state.log[k, LOG_BG] = (fb % nbr) // params.n_banks
            state.log[k, LOG_BANK] = fb % params.n_banks
            state.log[k, LOG_ROW] = row
        state.log_len[0] = k + 1


# ============================================================================ frontend side
@njit(cache=True)
def offer(params, state, instance, req_id, addr, is_write, rank_local, clk):
    """Offer one 64-B request at cycle ``clk`` (Ramulator's ``send``); True if accepted.

    A read whose address is in the channel's write buffer is forwarded (completes at the first
    cycle >= clk + 1 at which no older read is pending); a write whose address is already in
    the write buffer is coalesced (completes now, at ``clk``). Otherwise the request needs a
    free read/write buffer entry. ``rank_local`` = 1 marks a rank-PU access (RD_L / WR_L).
    """
    ch, rank, bgi, bank, row, col = map_address(params, addr)
    g = instance * params.n_channels + ch
    fb = (rank * params.n_bg + bgi) * params.n_banks + bank
    in_wq = False
    for k in range(state.wq_len[g]):
        if state.s_addr[g, state.wq[g, k]] == addr:
            in_wq = True
            break
    if is_write == 0:
        if in_wq:
            if state.pd_len[g] >= params.pend_q - params.read_latency - 2:
                return False
            q = (state.pd_head[g] + state.pd_len[g]) % params.pend_q
            state.pd_id[g, q] = req_id
            state.pd_dep[g, q] = clk + 1
            state.pd_len[g] += 1
            state.stats[g, S_FORWARDED] += 1
            return True
        if state.rq_len[g] >= params.read_q:
            return False
    else:
        if in_wq:
            _push_completion(state, req_id, clk)
            state.stats[g, S_COALESCED] += 1
            return True
        if state.wq_len[g] >= params.write_q:
            return False
    fl = state.free_len[g] - 1
    s = state.free[g, fl]
    state.free_len[g] = fl
    state.s_id[g, s] = req_id
    state.s_addr[g, s] = addr
    state.s_rank[g, s] = rank
    state.s_fb[g, s] = fb
    state.s_row[g, s] = row
    state.s_arrive[g, s] = clk
    state.s_stat[g, s] = 0
    if is_write == 0:
        state.s_type[g, s] = T_READ
        state.s_final[g, s] = params.cmd_local[RD] if rank_local != 0 else RD
        state.rq[g, state.rq_len[g]] = s
        state.rq_len[g] += 1
    else:
        state.s_type[g, s] = T_WRITE
        state.s_final[g, s] = params.cmd_local[WR] if rank_local != 0 else WR
        state.wq[g, state.wq_len[g]] = s
        state.wq_len[g] += 1
    state.wake[g] = 0
    state.changes[0] += 1
    return True


@njit(cache=True)
def pop_completions(state, out_ids, out_cycles):
    """Move up to len(out_ids) completions (oldest first) into the outputs; return how many.

    out_ids, out_cycles : int64[K] (request id, completion cycle).
    """
    n = min(out_ids.shape[0], state.c_len[0])
    cap = state.c_id.shape[0]
    h = state.c_head[0]
    for k in range(n):
        out_ids[k] = state.c_id[h]
        out_cycles[k] = state.c_cyc[h]
        h += 1
        if h == cap:
            h = 0
    state.c_head[0] = h
    state.c_len[0] -= n
    return n


@njit(cache=True)
def next_event(params, state, clk):
    """Earliest cycle >= clk at which :func:`tick` can change anything (INF if never).

    Ticking every cycle and ticking only at these cycles give identical results.
    """
    best = INF
    G = state.wake.shape[0]
    for g in range(G):
        w = state.wake[g]
        if w < best:
            best = w
        if state.pd_len[g] > 0:
            d = state.pd_dep[g, state.pd_head[g]]
            if d < best:
                best = d
        if state.next_ref[g] < best:
            best = state.next_ref[g]
    if best < clk:
        best = clk
    return best


# ============================================================================ scheduling
@njit(cache=True)
def _set_write_mode(params, state, g):
    if state.write_mode[g] == 0:
        if state.wq_len[g] >= params.wr_high_n or state.rq_len[g] == 0:
            state.write_mode[g] = 1
    else:
        if state.wq_len[g] <= params.wr_low_n and state.rq_len[g] != 0:
            state.write_mode[g] = 0


@njit(cache=True)
def _pick_active(params, state, g, clk):
    """FR-FCFS over the active buffer. Returns (position or -1, command, earliest ready)."""
    best = -1
    best_ok = False
    best_arr = INF
    best_cmd = -1
    wake = INF
    for k in range(state.aq_len[g]):
        s = state.aq[g, k]
        rank = state.s_rank[g, s]
        fb = state.s_fb[g, s]
        cmd = preq_command(params, state, g, state.s_final[g, s], rank, fb, state.s_row[g, s])
        rt = ready_time(params, state, g, cmd, rank, fb)
        ok = rt <= clk
        if not ok and rt < wake:
            wake = rt
        arr = state.s_arrive[g, s]
        if best < 0 or (ok and not best_ok) or (ok == best_ok and arr < best_arr):
            best = k
            best_ok = ok
            best_arr = arr
            best_cmd = cmd
    if best >= 0 and best_ok:
        return best, best_cmd, wake
    return -1, -1, wake


@njit(cache=True)
def _pick_buffer(params, state, g, buf, n, clk):
    """Best eligible request of an ordered read/write buffer under the configured scheduler.

    Buffers are in acceptance order and acceptance cycles never decrease along them, so under
    FR-FCFS the best request is the first eligible timing-ready one. Returns (position or -1,
    command, earliest cycle at which an eligible request becomes ready if none is).
    """
    sched = params.scheduler
    wake = INF
    if sched == 1:                                   # FRFCFS_RowHit: mark pending row hits
        for k in range(n):
            s = buf[g, k]
            fb = state.s_fb[g, s]
            if state.open_row[g, fb] == state.s_row[g, s]:
                if state.s_arrive[g, s] < state.scratch[g, fb]:
                    state.scratch[g, fb] = state.s_arrive[g, s]
    found = -1
    found_cmd = -1
    for k in range(n):
        s = buf[g, k]
        rank = state.s_rank[g, s]
        fb = state.s_fb[g, s]
        final = state.s_final[g, s]
        cmd = preq_command(params, state, g, final, rank, fb, state.s_row[g, s])
        if _closes_active(params, state, g, cmd, rank, fb):
            continue
        if sched == 1 and cmd == PREpb and state.scratch[g, fb] <= state.s_arrive[g, s]:
            continue
        rt = ready_time(params, state, g, cmd, rank, fb)
        if rt <= clk:
            found = k
            found_cmd = cmd
            break
        if rt < wake:
            wake = rt
        if sched == 2:                               # FCFS: only the oldest eligible
            break
    if sched == 1:
        for k in range(n):
            state.scratch[g, state.s_fb[g, buf[g, k]]] = INF
    return found, found_cmd, wake


@njit(cache=True)
def _row_has_other(params, state, g, s):
    """True if another buffered request (read, write or active) targets the same row."""
    fb = state.s_fb[g, s]
    row = state.s_row[g, s]
    for k in range(state.rq_len[g]):
        o = state.rq[g, k]
        if o != s and state.s_fb[g, o] == fb and state.s_row[g, o] == row:
            return True
    for k in range(state.wq_len[g]):
        o = state.wq[g, k]
        if o != s and state.s_fb[g, o] == fb and state.s_row[g, o] == row:
            return True
    for k in range(state.aq_len[g]):
        o = state.aq[g, k]
        if o != s and state.s_fb[g, o] == fb and state.s_row[g, o] == row:
            return True
    return False


@njit(cache=True)
def _serve_request(params, state, g, which, pos, cmd, clk):
    """Issue ``cmd`` for the request at ``pos`` of buffer ``which`` (0 read, 1 write, 2 active)
    and advance it (retire on its final command, promote to active on ACT)."""
    if which == 0:
        s = state.rq[g, pos]
    elif which == 1:
        s = state.wq[g, pos]
    else:
        s = state.aq[g, pos]
    rank = state.s_rank[g, s]
    fb = state.s_fb[g, s]
    row = state.s_row[g, s]
    final = state.s_final[g, s]
    if params.row_policy == 1 and cmd == final:       # closed page: auto-precharge when alone
        ap = params.cmd_autopre[cmd]
        if ap != cmd and not _row_has_other(params, state, g, s):
            if ready_time(params, state, g, ap, rank, fb) <= clk:
                cmd = ap
                final = ap
                state.s_final[g, s] = ap
    if state.s_stat[g, s] == 0:                       # row statistics at the first command
        state.s_stat[g, s] = 1
        o = state.open_row[g, fb]
        base = S_RD_HIT if state.s_type[g, s] == T_READ else S_WR_HIT
        if o == row:
            state.stats[g, base] += 1
        elif o >= 0:
            state.stats[g, base + 2] += 1
        else:
            state.stats[g, base + 1] += 1
    issue_command(params, state, g, cmd, rank, fb, row, clk)
    state.changes[0] += 1
    if cmd == final:
        if which == 2:
            state.act_cnt[g, fb] -= 1
            _remove_at(state.aq, state.aq_len, g, pos)
        elif which == 0:
            _remove_at(state.rq, state.rq_len, g, pos)
        else:
            _remove_at(state.wq, state.wq_len, g, pos)
        if state.s_type[g, s] == T_READ:
            q = (state.pd_head[g] + state.pd_len[g]) % params.pend_q
            state.pd_id[g, q] = state.s_id[g, s]
            state.pd_dep[g, q] = clk + params.read_latency
            state.pd_len[g] += 1
            state.stats[g, S_READS] += 1
        else:
            _push_completion(state, state.s_id[g, s], clk)
            state.stats[g, S_WRITES] += 1
        state.s_id[g, s] = -1
        state.free[g, state.free_len[g]] = s
        state.free_len[g] += 1
    elif params.cmd_opening[cmd] == 1 and which != 2:
        if state.aq_len[g] < params.active_q:
            state.aq[g, state.aq_len[g]] = s
            state.aq_len[g] += 1
            state.act_cnt[g, fb] += 1
            if which == 0:
                _remove_at(state.rq, state.rq_len, g, pos)
            else:
                _remove_at(state.wq, state.wq_len, g, pos)


@njit(cache=True)
def channel_tick(params, state, g, clk):
    """One controller cycle of global channel ``g`` at clock ``clk`` (see module docstring)."""
    # 1. completed reads
    while state.pd_len[g] > 0:
        h = state.pd_head[g]
        if state.pd_dep[g, h] > clk:
            break
        _push_completion(state, state.pd_id[g, h], clk)
        h += 1
        if h == params.pend_q:
            h = 0
        state.pd_head[g] = h
        state.pd_len[g] -= 1
    # 2. refresh
    while state.next_ref[g] <= clk:
        for r in range(params.n_ranks):
            if state.pq_len[g] < params.prio_q:
                q = (state.pq_head[g] + state.pq_len[g]) % params.prio_q
                state.pq_rank[g, q] = r
                state.pq_len[g] += 1
        state.next_ref[g] += params.nREFI
        state.wake[g] = 0
    if clk < state.wake[g]:
        return
    # 3a. active buffer
    pos, cmd, wake = _pick_active(params, state, g, clk)
    if pos >= 0:
        _serve_request(params, state, g, 2, pos, cmd, clk)
        state.wake[g] = clk + 1
        return
    # 3b. priority buffer (refresh)
    if state.pq_len[g] > 0:
        rank = state.pq_rank[g, state.pq_head[g]]
        fb0 = rank * params.n_bg * params.n_banks
        cmd = preq_command(params, state, g, REFab, rank, fb0, -1)
        rt = ready_time(params, state, g, cmd, rank, fb0)
        if rt <= clk:
            if not _closes_active(params, state, g, cmd, rank, fb0):
                issue_command(params, state, g, cmd, rank, fb0, -1, clk)
                state.changes[0] += 1
                if cmd == REFab:
                    state.pq_head[g] = (state.pq_head[g] + 1) % params.prio_q
                    state.pq_len[g] -= 1
                    state.stats[g, S_REFRESH] += 1
                state.wake[g] = clk + 1
                return
        elif rt < wake:
            wake = rt
        state.wake[g] = wake
        return
    # 3c. read or write buffer
    _set_write_mode(params, state, g)
    if state.write_mode[g] == 1:
        pos, cmd, w2 = _pick_buffer(params, state, g, state.wq, state.wq_len[g], clk)
        which = 1
    else:
        pos, cmd, w2 = _pick_buffer(params, state, g, state.rq, state.rq_len[g], clk)
        which = 0
    if pos >= 0:
        _serve_request(params, state, g, which, pos, cmd, clk)
        state.wake[g] = clk + 1
        return
    if w2 < wake:
        wake = w2
    state.wake[g] = wake


@njit(cache=True)
def tick(params, state, clk):
    """One controller cycle at clock ``clk`` for every channel of every instance.

    Channels whose next possible change lies after ``clk`` are skipped (exactly: nothing
    would happen in them). Completions are appended to the state's completion ring.
    """
    G = state.wake.shape[0]
    for g in range(G):
        channel_tick(params, state, g, clk)


@njit(cache=True)
def ticks_until(params, state, clk_from, clk_to):
    """Tick every cycle in [clk_from, clk_to] at which something can happen; return the
    first cycle not ticked (clk_to + 1). For drivers with nothing to offer in between."""
    c = next_event(params, state, clk_from)
    while c <= clk_to:
        tick(params, state, c)
        c = next_event(params, state, c + 1)
    return clk_to + 1
