"""Open-loop replay of a memory trace through the controller of :mod:`dram.kernel`.

Frontend semantics (exactly those of the Ramulator 2.1 reference driver; docs/dram.md):
each driver cycle t = 0, 1, 2, ...

1. Admission: requests with arrival <= t join, in file order, the FIFO of their
   (channel, type): one read FIFO and one write FIFO per channel.
2. Offers: repeatedly take, among FIFOs not blocked this cycle, the head with the smallest
   file index and offer it at clock t. Accepted: accept = t, pop it. Rejected: that FIFO is
   blocked until the next cycle (its later requests wait behind it; other FIFOs go on).
3. Tick: every channel runs one controller cycle at clock t + 1.

A read completes when its data returns (RD issue + nCL + nBL); a write when its WR issues.
Untimed traces (``arrival`` = None) have every request available at cycle 0.
Cycles in which nothing can happen are skipped, and an idle channel's refresh periods are
applied in closed form (:func:`dram.kernel.advance_channel`); results equal cycle-by-cycle
stepping. The jitted driver runs in calls of bounded work, so Ctrl-C is seen between them.
Channels share nothing but the completion ring, so the driver runs one channel after the
other (each through its own requests, then every channel on to the run's last cycle for its
refreshes): the same cycles as lockstep stepping, without visiting idle channels.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np
from numba import njit, types
from numba.extending import overload

from dram import kernel as K
from dram.kernel import _u, map_address
from dram.config import DRAMConfig
from dram.stats import summarize
from dram.jitcache import drop_stale, vectorizing
from dram.parallel import available_cpus, run_in_threads
import dram.config as _config
from cosmos_common import UserError

drop_stale(__file__, K.__file__, _config.__file__)  # its jitted driver inlines dram.kernel


#: Driver iterations and controller ticks per jitted call: at the replay's speed (millions
#: per second) a call takes well under 0.2 s, so Ctrl-C (seen by Python between calls) stops
#: a replay within a fraction of a second; the calls cost nothing measurable at this size.
WORK_PER_CALL = 1 << 18

#: The same while the commands stream out (``command_sink``): a call logs at most one command
#: per tick, hence at most 2 * this many (a call's last idle stretch may add this many ticks
#: to the iterations before it), and the lane's log holds that many, so that it never drops one.
WORK_PER_CALL_LOGGED = 1 << 15


@dataclass
class ReplayResult:
    """Result of :func:`replay`.

    Per request (file order), int64 cycles: ``arrival`` (the trace's, or 0 if untimed),
    ``accept`` (cycle the controller took it), ``completion`` (read: data returned; write:
    WR issued). ``is_write`` uint8. ``stats``: dict of the statistics (see
    :func:`dram.stats.summarize`; includes per-channel and per-rank arrays).
    ``config``: the DRAMConfig. ``wall_s``: seconds in the simulation loop (compilation
    excluded); ``cpu_s`` the process CPU time of the same (less sensitive to other jobs on
    the machine); ``compile_s``: seconds spent compiling the jitted driver, or loading it
    from numba's cache, before the simulation; ``threads``: the threads that simulated the
    channels. ``command_log``: int64 [n, 7]
    (clk, channel, command, rank, bank group, bank, row) if requested, else None.
    ``epoch_cycles`` and ``epoch_stats``: with ``epoch_cycles`` N > 0, int64 [E, channels,
    N_STATS] (``dram.kernel.STAT_NAMES``): each channel's statistics counted in epoch e, the
    cycles [e * N, (e + 1) * N) (the last epoch ends with the run), else None.
    """
    arrival: np.ndarray
    accept: np.ndarray
    completion: np.ndarray
    is_write: np.ndarray
    stats: dict
    config: DRAMConfig
    wall_s: float = 0.0
    cpu_s: float = 0.0
    compile_s: float = 0.0
    command_log: Optional[np.ndarray] = None
    channel: Optional[np.ndarray] = field(default=None, repr=False)
    threads: int = 1
    epoch_cycles: int = 0
    epoch_stats: Optional[np.ndarray] = field(default=None, repr=False)

    @property
    def latency(self) -> np.ndarray:
        """completion - arrival, int64 cycles."""
        return self.completion - self.arrival


def _before(t, t_stop):
    """``t < t_stop``; always True for ``t_stop`` None (compiled apart: a replay without
    epochs does not compare)."""
    return t_stop is None or t < t_stop


def _until(a, t_stop):
    """``min(a, t_stop)``; ``a`` for ``t_stop`` None (compiled apart, as :func:`_before`)."""
    return a if t_stop is None or a <= t_stop else t_stop


@overload(_before, inline="always")
def _before_ov(t, t_stop):
    if isinstance(t_stop, (types.NoneType, types.Omitted)):
        return lambda t, t_stop: True
    return lambda t, t_stop: t < t_stop


@overload(_until, inline="always")
def _until_ov(a, t_stop):
    if isinstance(t_stop, (types.NoneType, types.Omitted)):
        return lambda a, t_stop: a
    return lambda a, t_stop: a if a <= t_stop else t_stop


@njit(cache=True, _nrt=False)
def _drain(H, out_ids, out_cyc, completion):
    n = K._pop(H, out_ids, out_cyc)
    for k in range(n):
        completion[_u(out_ids[_u(k)])] = out_cyc[_u(k)]
    return n


@njit(cache=True, nogil=True, _nrt=False)
def _run(params, H, rec, flags, bits, pow2, adm_arrival, adm_fifo, fifo_ptr, chan_ptr, chans,
         fifo_head, fifo_adm, rej_stamp, drv, accept, completion, max_done, out_ids, out_cyc,
         every_cycle, scratch, jump, max_work, t_stop):
    """Run the open-loop driver through the channels ``chans``, one after the other, until
    ``max_done``
    completions, about ``max_work`` driver iterations and ticks (so that Python regains
    control often: numba code does not see Ctrl-C), the end of the trace, or driver cycle
    ``t_stop`` (not run: every tick at a clock <= ``t_stop`` is done, none after; the epoch
    statistics stop there; None never stops, and is a version of its own, compiled without
    the comparisons). Called again with the same arrays, it goes
    on where it stopped; how the run is cut into calls changes nothing.

    Channels share nothing but the completion ring: a request's acceptance and completion
    depend only on its own channel's requests (offers to other channels neither block it nor
    change its controller), so simulating each channel through its own requests gives exactly
    the cycles of lockstep simulation, without visiting idle channels. The driver of one
    channel is the module docstring's, restricted to its two FIFOs.

    The per-request inputs are laid out in the order the driver reads them (built by
    :func:`replay`), so its loads run sequentially through memory instead of hopping through
    the trace by file index: ``rec`` int64[N, 2], one row per request in FIFO order (FIFO f's
    requests at rows fifo_ptr[f]..fifo_ptr[f + 1], file order within it): file index and
    address; ``flags`` uint8[N], same order: is_write | rank_local << 1; ``adm_arrival`` /
    ``adm_fifo`` the arrival cycle and FIFO of each request in channel order (channel g's at
    chan_ptr[g]..chan_ptr[g + 1], file order within it). The address is mapped to its rank,
    bank group, bank and row when offered (:func:`_map` with ``bits``/``pow2``: a few shifts
    and masks), which costs less than reading the mapped fields from a wider row.

    drv int64[8]: [t (next driver cycle), next index into the channel's requests, completions
    so far, error code, driver iterations, index in ``chans`` of the channel being run,
    completions of this channel, last tick].

    The function holds no global state and releases the GIL: calls on distinct channels,
    each with its own controller state ``H``, ``drv`` and ring buffers, may run in parallel
    threads (they share the read-only inputs, and write distinct elements of ``accept``,
    ``completion`` and the per-FIFO arrays).

    An idle channel waiting for its next request (no request in its FIFOs or controller) is
    advanced to that arrival by :func:`dram.kernel.advance_channel`, which with ``jump``
    applies whole idle refresh periods in closed form.
    """
    N = rec.shape[0]
    og = H[_u(K.H_O_GLOB)]
    done = drv[2]
    work = 0            # driver iterations + ticks of idle stretches, this call
    adv = 0             # the latter
    nrefi = params.nREFI
    nbg = params.n_bg
    nb = params.n_banks
    nch = chans.shape[0]
    while drv[5] < nch and done < max_done and work < max_work and _before(drv[0], t_stop):
        g = chans[_u(drv[5])]
        t = drv[0]
        nxt = drv[1]
        dg = drv[6]
        c0 = chan_ptr[_u(g)]
        ng = chan_ptr[_u(g + 1)] - c0
        oc = H[_u(K.H_O_CH)] + g * K.NCHF
        f0 = 2 * g
        while dg < ng and done < max_done and work < max_work and _before(t, t_stop):
            work += 1
            # 1. admission
            while nxt < ng and adm_arrival[_u(c0 + nxt)] <= t:
                fifo_adm[_u(adm_fifo[_u(c0 + nxt)])] += 1
                nxt += 1
            # 2. offers (file order between the channel's read and write FIFO heads)
            b0 = False
            b1 = False
            while True:
                i0 = N
                i1 = N
                j0 = 0
                j1 = 0
                if not b0 and fifo_head[_u(f0)] < fifo_adm[_u(f0)]:
                    j0 = fifo_ptr[_u(f0)] + fifo_head[_u(f0)]
                    i0 = rec[_u(j0), 0]
                if not b1 and fifo_head[_u(f0 + 1)] < fifo_adm[_u(f0 + 1)]:
                    j1 = fifo_ptr[_u(f0 + 1)] + fifo_head[_u(f0 + 1)]
                    i1 = rec[_u(j1), 0]
                if i0 == N and i1 == N:
                    break
                if i0 < i1:
                    bf = f0
                    bi = i0
                    j = j0
                else:
                    bf = f0 + 1
                    bi = i1
                    j = j1
                # a head rejected while the channel's offer stamp stayed the same is
                # rejected again
                stamp = H[_u(oc + K.C_OFFSTAMP)]
                if rej_stamp[_u(bf)] == stamp:
                    accepted = False
                else:
                    a = rec[_u(j), 1]
                    fl = np.int64(flags[_u(j)])
                    _c, rank, bgi, bank, row = _map(params, a, bits, pow2)
                    accepted = K._offer_mapped(
                        params, H, g, bi, a, fl & 1, fl >> 1, t, rank, bgi,
                        (rank * nbg + bgi) * nb + bank, row)
                if accepted:
                    accept[_u(bi)] = t
                    rej_stamp[_u(bf)] = -1
                    fifo_head[_u(bf)] += 1
                    if H[_u(og + K.G_CLEN)] > 0:
                        n = _drain(H, out_ids, out_cyc, completion)
                        done += n
                        dg += n
                else:
                    rej_stamp[_u(bf)] = stamp
                    if bf == f0:
                        b0 = True
                    else:
                        b1 = True
            # 3. tick at t + 1
            stamp0 = H[_u(oc + K.C_OFFSTAMP)]
            if every_cycle:             # evaluate in every cycle (no wake skips, no memo)
                H[_u(oc + K.C_WAKE)] = 0
                H[_u(oc + K.C_EPOCH)] += 1
            if K._channel_next_event(H, g, t + 1) == t + 1:
                K._channel_tick(params, H, g, t + 1)
            drv[7] = t + 1
            if H[_u(og + K.G_CLEN)] > 0:
                n = _drain(H, out_ids, out_cyc, completion)
                done += n
                dg += n
            if H[_u(og + K.G_COVF)] > 0:
                drv[3] = 2
                break
            if dg >= ng:
                break
            # next driver cycle: skip cycles in which nothing can happen. A head blocked in
            # this cycle is offered again in the next one only if what decides its offer may
            # have changed since it was refused: the tick moved the channel's offer stamp, or,
            # for a read, a write accepted after it in this cycle (a read to its address is
            # forwarded). Otherwise it would be refused again.
            stamp = H[_u(oc + K.C_OFFSTAMP)]
            if every_cycle or (b0 and rej_stamp[_u(f0)] != stamp) or \
                    (b1 and stamp0 != stamp):
                t += 1
                continue
            tn = K._channel_next_event(H, g, t + 2) - 1
            if nxt < ng:
                a = adm_arrival[_u(c0 + nxt)]
                if a < tn:
                    tn = a
                elif jump and a - t > 3 * nrefi and fifo_head[_u(f0)] == fifo_adm[_u(f0)] \
                        and fifo_head[_u(f0 + 1)] == fifo_adm[_u(f0 + 1)] \
                        and H[_u(oc + K.Q_RD)] == 0 and H[_u(oc + K.Q_WR)] == 0 \
                        and H[_u(oc + K.Q_ACT)] == 0 and H[_u(oc + K.C_PDL)] == 0:
                    # idle until request nxt arrives: every tick through its arrival cycle
                    # (nothing is offered before), at most max_work of them per call
                    # (``jump`` is True here; passed as the variable, so that numba
                    # compiles advance_channel once, not again for a literal True)
                    # (through t_stop at most: an epoch ends there)
                    reached, nt = K.advance_channel(params, H, g, t + 2, _until(a, t_stop),
                                                    scratch, jump, max_work)
                    work += nt
                    adv += nt
                    tn = reached - 1
            if tn < t + 1:
                tn = t + 1
            if tn >= K.INF - 2:
                drv[3] = 1          # nothing can ever happen again
                break
            t = tn
        if drv[3] != 0:
            drv[0] = t
            drv[1] = nxt
            break
        if dg >= ng:                # channel finished: remember its last tick, go on
            H[_u(oc + K.C_LASTTICK)] = drv[7] if ng > 0 else -1
            drv[5] += 1
            drv[0] = 0
            drv[1] = 0
            drv[6] = 0
            drv[7] = 0
        else:
            drv[0] = t
            drv[1] = nxt
            drv[6] = dg
    drv[2] = done
    drv[4] += work - adv    # iterations, counted in a register rather than stored each time


@njit(cache=True, nogil=True, _nrt=False)
def _finish(params, H, chans, t_end, scratch, jump, max_work):
    """Tick the channels ``chans`` through ``t_end`` (the run's last completion), as lockstep
    simulation would have: refreshes keep falling due on channels that finished earlier
    (idle, so ``jump`` applies whole refresh periods at once). Stops after about
    ``max_work`` ticks; each channel's ``C_LASTTICK`` records how far it got, so calling
    again goes on. Returns True when every channel has reached ``t_end``."""
    work = 0
    for g in chans:
        oc = H[_u(K.H_O_CH)] + g * K.NCHF
        last = H[_u(oc + K.C_LASTTICK)]
        if last >= t_end:
            continue
        if work >= max_work:
            return False
        reached, nt = K.advance_channel(params, H, g, last + 1, t_end, scratch, jump,
                                        max_work - work)
        work += nt
        H[_u(oc + K.C_LASTTICK)] = reached - 1
        if reached <= t_end:
            return False
    return True


def _field_bits(params) -> np.ndarray:
    """Shift and mask of each address-mapping field (channel, rank, bank group, bank, row,
    column: [shift_0..shift_5, mask_0..mask_5]) when every field's radix is a power of two,
    as in every preset; then ``(addr >> 6) % r`` and ``// r`` of :func:`dram.kernel.map_address`
    are exactly masks and shifts (addresses are non-negative), without its divisions. None
    otherwise."""
    t = params.tab
    fields = [int(t[params.o_map_fields + k]) for k in range(6)]
    bits = np.zeros(12, np.int64)
    shift = 6
    for f in fields:
        r = int(t[params.o_map_radix + f])
        if r < 1 or r & (r - 1):
            return None
        bits[f] = shift
        bits[6 + f] = r - 1
        shift += r.bit_length() - 1
    return bits


@njit(cache=True, inline="always", _nrt=False)
def _map(params, a, bits, pow2):
    """(channel, rank, bank group, bank, row) of address ``a``: :func:`dram.kernel.map_address`,
    by the shifts and masks of :func:`_field_bits` when ``pow2``."""
    if pow2:
        return ((a >> bits[0]) & bits[6], (a >> bits[1]) & bits[7], (a >> bits[2]) & bits[8],
                (a >> bits[3]) & bits[9], (a >> bits[4]) & bits[10])
    c, rank, bgi, bank, row, col = map_address(params, a)
    return c, rank, bgi, bank, row


@njit(cache=True, _nrt=False)
def _prepare(params, addr, is_write, rank_local, arrival, ch, rec, flags, adm_arrival,
             adm_fifo, fifo_ptr, chan_ptr, pos, bits, pow2):
    """Map every address and lay the requests out in the order :func:`_run` reads them.

    Fills ``ch`` (channel of each request, file order), ``fifo_ptr`` [2C + 1] and ``chan_ptr``
    [C + 1] (where each FIFO's and each channel's requests start; zeros on entry), ``rec``
    and ``flags`` (FIFO order; the layout of :func:`_run`) and ``adm_arrival``/``adm_fifo`` (channel
    order); ``pos`` int64[3C] is scratch; ``bits``/``pow2`` select the mapping's arithmetic
    (:func:`_map`). Within a
    FIFO or a channel the requests keep their file order: a stable counting sort, two passes
    over the trace (the first maps and counts, the second places).
    """
    n = addr.shape[0]
    C = params.n_channels
    F = 2 * C
    for i in range(n):
        c = _map(params, addr[_u(i)], bits, pow2)[0]
        ch[_u(i)] = c
        fifo_ptr[_u(2 * c + is_write[_u(i)] + 1)] += 1
        chan_ptr[_u(c + 1)] += 1
    for f in range(F):
        fifo_ptr[_u(f + 1)] += fifo_ptr[_u(f)]
    for g in range(C):
        chan_ptr[_u(g + 1)] += chan_ptr[_u(g)]
    # next free row of each FIFO (pos[:F]) and of each channel (pos[F:])
    for f in range(F):
        pos[_u(f)] = fifo_ptr[_u(f)]
    for g in range(C):
        pos[_u(F + g)] = chan_ptr[_u(g)]
    for i in range(n):
        a = addr[_u(i)]
        c = ch[_u(i)]
        w = is_write[_u(i)]
        f = 2 * c + w
        j = pos[_u(f)]
        pos[_u(f)] = j + 1
        rec[_u(j), 0] = i
        rec[_u(j), 1] = a
        flags[_u(j)] = w | (rank_local[_u(i)] << 1)
        k = pos[_u(F + c)]
        pos[_u(F + c)] = k + 1
        adm_arrival[_u(k)] = arrival[_u(i)]
        adm_fifo[_u(k)] = f


def _check_capacity(addr, capacity_bytes: int, wrap: bool):
    """Addresses (integer array, >= 0) checked against the capacity as the trace readers do
    (:func:`dram.traces.check_capacity`, same words): beyond it is an error naming the first
    index, unless ``wrap`` is True, which takes them modulo the capacity, or "mapper", which
    leaves them as they are (see :func:`replay`)."""
    if addr.size == 0 or wrap == "mapper":
        return addr
    cap = np.uint64(capacity_bytes)
    a = addr.astype(np.uint64, copy=False)
    over = a >= cap
    if not over.any():
        return addr
    if wrap:
        return a % cap
    from dram.traces import _fmt_bytes
    i = int(np.flatnonzero(over)[0])
    raise UserError(
        f"trace.addr[{i}]: address 0x{int(a[i]):x} is beyond the memory's capacity of "
        f"{_fmt_bytes(capacity_bytes)} (0x{capacity_bytes:x}); {int(np.count_nonzero(over))} "
        f"of {addr.size} requests are; use a larger configuration, or wrap=True (--wrap) to "
        f"take addresses modulo the capacity")


def _check_trace(trace, capacity_bytes: int, wrap: bool):
    from dram.traces import MemTrace, check_capacity

    if isinstance(trace, MemTrace) and wrap != "mapper":   # the words of the CLI: file, line
        trace = check_capacity(trace, capacity_bytes, wrap=wrap)
    if isinstance(trace, dict):
        get = trace.get
    else:
        def get(k, default=None):
            return getattr(trace, k, default)
    addr = get("addr")
    is_write = get("is_write")
    if addr is None or is_write is None:
        raise UserError("trace: expected fields 'addr' and 'is_write'")
    addr = np.asarray(addr)
    if addr.ndim != 1:
        raise UserError(f"trace.addr: expected a 1-D array, got shape {addr.shape}")
    if addr.dtype.kind not in "iu":
        raise UserError(f"trace.addr: expected integer byte addresses, got dtype {addr.dtype}")
    if addr.dtype.kind == "i" and addr.size and addr.min() < 0:
        raise UserError(f"trace.addr: negative address at index {int(np.argmin(addr))}")
    addr = _check_capacity(addr, capacity_bytes, wrap)
    if addr.size and int(addr.max()) >= (1 << 62):
        raise UserError(f"trace.addr: address at index {int(np.argmax(addr))} is >= 2**62")
    # below 2**62: the same numbers as int64 (a view, not a copy, for uint64)
    addr = (addr.view(np.int64) if addr.dtype == np.uint64
            else addr.astype(np.int64, copy=False))
    n = addr.shape[0]
    is_write = np.asarray(is_write)
    if is_write.shape != (n,):
        raise UserError(f"trace.is_write: expected shape ({n},), got {is_write.shape}")
    is_write = (is_write != 0).view(np.uint8)
    arrival = get("arrival")
    timed = arrival is not None
    if timed:
        arrival = np.asarray(arrival)
        if arrival.shape != (n,):
            raise UserError(f"trace.arrival: expected shape ({n},), got {arrival.shape}")
        arrival = arrival.astype(np.int64, copy=False)
        if n and arrival.min() < 0:
            raise UserError(f"trace.arrival: negative cycle at index {int(np.argmin(arrival))}")
        bad = np.nonzero(np.diff(arrival) < 0)[0]
        if bad.size:
            raise UserError(f"trace.arrival: cycles must not decrease; index {int(bad[0]) + 1} "
                             f"arrives at {int(arrival[bad[0] + 1])} after "
                             f"{int(arrival[bad[0]])}")
    else:
        arrival = np.zeros(n, np.int64)
    rank_local = get("rank_local", None)
    if rank_local is None:
        rank_local = np.zeros(n, np.uint8)
    else:
        rank_local = np.asarray(rank_local)
        if rank_local.shape != (n,):
            raise UserError(f"trace.rank_local: expected shape ({n},), got {rank_local.shape}")
        rank_local = (rank_local != 0).view(np.uint8)
    return addr, is_write, arrival, rank_local, timed


def lanes_for(threads: int | None, channels: int) -> int:
    """Threads a replay of ``channels`` channels runs on: ``threads``, or (None) the CPUs this
    process may use; never more than the channels (a channel runs on one thread)."""
    if threads is None:
        threads = available_cpus()
    return max(1, min(int(threads), int(channels)))


class _Lane:
    """One thread's share of a replay: a controller state of its own (every channel's region
    allocated; only the channels the lane takes are used), its completion buffers, driver
    registers and command log. ``stop`` and ``lock`` are shared by the lanes of a replay."""

    def __init__(self, params, ring: int, log_cap: int, stop, lock):
        self.state = K.new_state(params, 1, completion_capacity=ring, log_capacity=log_cap)
        self.out_ids = np.zeros(ring, np.int64)
        self.out_cyc = np.zeros(ring, np.int64)
        self.drv = np.zeros(8, np.int64)
        self.scratch = K.jump_scratch(params)
        self.chans = [np.array([g], np.int64) for g in range(params.n_channels)]
        self.stop, self.lock = stop, lock
        self.done = 0           # completions so far, every channel of this lane
        self.base = 0           # those of the channels finished
        self.iterations = 0     # driver iterations of the channels finished

    def take_log(self) -> np.ndarray:
        """The commands logged since the last call; the log starts empty again (so each
        channel may log ``command_log`` commands: the run's first ones are among them)."""
        v = K.views(self.state)
        rows = v["log"].copy()
        v["glob"][K.G_LOGLEN] = 0
        return rows

    def drain_log(self, g: int, sink: Callable[[int, np.ndarray], None]) -> None:
        """Hand the commands logged since the last call (channel ``g``'s, in issue order) to
        ``sink(g, rows)``; the log starts empty again. A full log would have dropped
        commands (the work per call is bounded so that it cannot fill): an error."""
        heap = self.state.heap
        og = int(heap[K.H_O_GLOB])
        n = int(heap[og + K.G_LOGLEN])
        if n >= int(heap[K.H_LOGCAP]):
            raise RuntimeError("dram replay: command log overflow (driver bug)")
        if n:
            sink(g, K.views(self.state)["log"])
            heap[og + K.G_LOGLEN] = 0

    def stats_row(self, g: int) -> np.ndarray:
        """Channel g's cumulative statistics (a copy)."""
        return K.views(self.state)["stats"][g].copy()


def _in_lanes(lanes: list, work: Callable[[int], None], report: Callable[[], None]) -> None:
    """Run ``work(i)`` for every lane, in threads when there are several (the jitted driver
    releases the GIL). The calling thread reports progress; Ctrl-C there, or an exception
    in a lane, stops every lane after its current call (a fraction of a second)."""
    run_in_threads(work, len(lanes), poll=report if len(lanes) > 1 else None,
                   stop=lanes[0].stop)
    if len(lanes) > 1:
        report()


def _last_tick(H: np.ndarray, g: int) -> int:
    """Channel g's last tick in controller state heap ``H`` (``C_LASTTICK``)."""
    return int(H[int(H[K.H_O_CH]) + g * K.NCHF + K.C_LASTTICK])


_CHANNEL_REGIONS = ("slot", "q", "ch", "prio", "pend", "bank", "ready", "hist", "stats",
                    "rank_busy", "rank_residency", "bkl")


def _merge_channels(state, sources: list) -> None:
    """Copy channel g's regions (queues, counters, statistics, bank state) of
    ``sources[g]`` into ``state``: one state for the statistics of a replay whose channels
    ran in several lanes."""
    dst = K.views(state)
    for g, src in enumerate(sources):
        v = K.views(src)
        for name in _CHANNEL_REGIONS:
            dst[name][g] = v[name][g]


def replay(trace, config: DRAMConfig | None = None, progress: Callable | bool | None = None,
           *, wrap: bool = False, command_log: int = 0, chunk: int = 1 << 16,
           every_cycle: bool = False, jump_idle: bool = True,
           threads: int | None = None, memspec=None,
           command_sink: Callable[[int, np.ndarray], None] | None = None,
           epoch_cycles: int = 0) -> ReplayResult:
    """Replay a trace open loop and return per-request cycles and statistics.

    Parameters
    ----------
    trace : mapping or object with ``addr`` (uint64/int64 [N] byte addresses), ``is_write``
        ([N] 0/1), ``arrival`` (int64 [N] non-decreasing DRAM cycles, or None = untimed: all
        available at cycle 0, offered in file order), optional ``rank_local`` ([N] 0/1); or
        a :class:`dram.traces.MemTrace`.
    config : DRAMConfig, default DRAMConfig()
    progress : None/False (silent), True (tqdm bar), or a callable ``f(done, total)`` called
        after every chunk (several times a second).
    wrap : bool or "mapper"
        False: an address at or beyond ``config.capacity_bytes`` is an error naming its index
        (for a MemTrace its file and line), in the words of ``cosmos dram replay``. True:
        addresses are taken modulo the capacity first, as ``--wrap`` does. "mapper": they
        are left as they are and the address mapper ignores the bits above its fields, as
        Ramulator 2.1's does; then forwarding and coalescing still compare full addresses, so
        A and A + capacity are distinct requests to the same location (the behaviour of the
        reference runs the model is validated against).
    command_log : int
        If > 0, record up to this many issued commands (ReplayResult.command_log).
    chunk : int
        At most this many completions per jitted call (calls also end after a bounded amount
        of work, a small fraction of a second, so Ctrl-C is seen between them).
    every_cycle : bool
        Step the driver through every cycle instead of jumping over idle ones (slow; for
        checking that the jumps change nothing).
    jump_idle : bool
        Apply the refresh periods of an idle channel in closed form
        (:func:`dram.kernel.advance_channel`); False steps each one (for checking that the
        closed form changes nothing). Ignored with ``every_cycle``.
    threads : int, optional
        Simulate the channels on this many threads (default: the CPUs this process may use,
        at most one per channel). Channels share nothing, so the results are the same for
        any number of threads (tests/test_dram_threads.py).
    memspec : dram.memspec.Memspec, path or dict, optional
        A DRAMPower-style DDR5 memspec whose currents, voltages and rho the energy statistics
        use instead of the power preset (timing stays the config's; its banks, bank groups
        and width must be the organization's). Timing results do not depend on it.
    command_sink : callable, optional
        ``command_sink(channel, rows)`` receives every command issued, as it is issued:
        ``rows`` int64 [k, 7] (the columns of ``command_log``; a view, valid during the call
        only), one channel's commands in issue order (the channels themselves in any order,
        from the threads that run them, possibly at once). Nothing is kept in memory, so a
        replay of any length streams all its commands (:class:`dram.output.CommandTraceWriter`
        writes them to a file). Not with ``command_log``. Results are the same with it.
    epoch_cycles : int
        If > 0, also count each channel's statistics per epoch of this many cycles
        (ReplayResult.epoch_stats). Results are the same with it.

    Raises
    ------
    UserError (a ValueError)
        Malformed trace arrays, or an address beyond the capacity without ``wrap``.
    KeyboardInterrupt
        Ctrl-C, within a fraction of a second; nothing is returned or written.
    """
    config = config or DRAMConfig()
    if not isinstance(config, DRAMConfig):
        raise UserError(f"config: expected a dram.DRAMConfig, got {type(config).__name__}")
    params = config.resolve()
    power = None
    if memspec is not None:
        from dram import memspec as _ms
        from dram.standards import ddr5 as _ddr5
        spec = memspec if isinstance(memspec, _ms.Memspec) else _ms.load_memspec(memspec)
        _ms.check_matches(spec, _ddr5.ORG_PRESETS[config.org], "memspec")
        power = spec.power
    if wrap not in (False, True, "mapper"):
        raise UserError(f"wrap={wrap!r}: expected False, True or 'mapper'")
    addr, is_write, arrival, rank_local, timed = _check_trace(trace, config.capacity_bytes,
                                                              wrap)
    if isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 1:
        raise UserError(f"chunk={chunk!r}: expected a positive integer")
    if threads is not None and (isinstance(threads, bool) or
                                not isinstance(threads, (int, np.integer)) or threads < 1):
        raise UserError(f"threads={threads!r}: expected a positive integer or None")
    if isinstance(epoch_cycles, bool) or not isinstance(epoch_cycles, (int, np.integer)) \
            or epoch_cycles < 0:
        raise UserError(f"epoch_cycles={epoch_cycles!r}: expected a positive integer "
                        f"(0: no epochs)")
    epoch_n = int(epoch_cycles)
    if command_sink is not None and command_log:
        raise UserError("command_log and command_sink: give one of them")
    n = addr.shape[0]
    C = params.n_channels
    F = 2 * C
    fifo_ptr = np.zeros(F + 1, np.int64)
    chan_ptr = np.zeros(C + 1, np.int64)
    ch = np.empty(n, np.int16)
    rec = np.empty((n, 2), np.int64)
    flags = np.empty(n, np.uint8)
    adm_arrival = np.empty(n, np.int64)
    adm_fifo = np.empty(n, np.int16)
    pos = np.empty(3 * C, np.int64)
    bits = _field_bits(params)
    pow2 = bits is not None
    if bits is None:
        bits = np.zeros(12, np.int64)
    t0 = time.perf_counter()
    with vectorizing():         # compile or load, timed apart: the same call on no requests
        _prepare(params, addr[:0], is_write[:0], rank_local[:0], arrival[:0], ch, rec, flags,
                 adm_arrival, adm_fifo, fifo_ptr.copy(), chan_ptr.copy(), pos, bits, pow2)
    compile_s = time.perf_counter() - t0
    with vectorizing():
        _prepare(params, addr, is_write, rank_local, arrival, ch, rec, flags, adm_arrival,
                 adm_fifo, fifo_ptr, chan_ptr, pos, bits, pow2)
    fifo_head = np.zeros(F, np.int64)
    fifo_adm = np.zeros(F, np.int64)
    rej_stamp = np.full(F, -1, np.int64)
    accept = np.full(n, -1, np.int64)
    completion = np.full(n, -1, np.int64)
    jump = bool(jump_idle) and not every_cycle
    ring = 4096 + 4 * C
    log_cap = int(command_log)
    work_per_call = WORK_PER_CALL
    if command_sink is not None:
        work_per_call = WORK_PER_CALL_LOGGED
        log_cap = 2 * WORK_PER_CALL_LOGGED + 2

    def run(w: "_Lane", g: int, target: int, max_work: int, t_stop: int | None = None) -> None:
        _run(params, w.state.heap, rec, flags, bits, pow2, adm_arrival, adm_fifo, fifo_ptr,
             chan_ptr, w.chans[g],
             fifo_head, fifo_adm, rej_stamp, w.drv, accept, completion, target, w.out_ids,
             w.out_cyc, bool(every_cycle), w.scratch, jump, max_work, t_stop)

    # compile (or load from numba's cache) before the clock starts: the same calls with
    # nothing to do, on throwaway state where they would change something
    t0 = time.perf_counter()
    with vectorizing():
        probe = _Lane(params, ring, 0, None, None)
        run(probe, 0, 0, 0, 0 if epoch_n else None)
        _finish(params, probe.state.heap, probe.chans[0], -1, probe.scratch, jump, 0)
    compile_s += time.perf_counter() - t0

    # the heaviest channels first, so that the lanes finish together
    order = sorted(range(C), key=lambda g: (-(chan_ptr[g + 1] - chan_ptr[g]), g))
    stop, lock = threading.Event(), threading.Lock()
    lanes = [_Lane(params, ring, log_cap, stop, lock) for _ in range(lanes_for(threads, C))]
    owner = np.zeros(C, np.int64)
    logs: list[np.ndarray] = []
    # epochs: each channel's statistics at each epoch boundary it has reached (the first
    # cycle of the next epoch, none of whose ticks is done), and that next boundary
    snaps: list[list[np.ndarray]] = [[] for _ in range(C)]
    next_b = [epoch_n] * C
    bar = None
    if progress is True:
        from tqdm import tqdm
        bar = tqdm(total=n, unit="req", desc="dram replay", leave=False)

    def report() -> None:
        done = sum(w.done for w in lanes)
        if bar is not None:
            bar.update(done - bar.n)
        elif callable(progress):
            progress(done, n)

    def lane_work(i: int) -> None:
        """Lane i takes the next channel not yet taken until none is left."""
        w = lanes[i]
        while not w.stop.is_set():
            with w.lock:
                if not order:
                    return
                g = order.pop(0)
            owner[g] = i
            w.drv[:] = 0
            while w.drv[5] < 1 and not w.stop.is_set():
                target = max(1, min(n, int(w.drv[2]) + chunk))   # 1: an empty trace ends
                # compiled (or loaded) above, under vectorizing(); not entered here: the
                # lanes' threads would restore numba's setting in any order
                if epoch_n:
                    run(w, g, target, work_per_call, next_b[g] - 1)
                else:
                    run(w, g, target, work_per_call)
                if w.drv[3] == 1:
                    raise RuntimeError(f"dram replay: no further progress possible at cycle "
                                       f"{w.drv[0]} on channel {g} (model bug)")
                if w.drv[3] == 2:
                    raise RuntimeError("dram replay: completion buffer overflow (model bug)")
                w.done = w.base + int(w.drv[2])
                if command_sink is not None:
                    w.drain_log(g, command_sink)
                if epoch_n and w.drv[5] < 1:
                    # stopped at driver cycle t, every tick through t done: each boundary
                    # through t + 1 (the next tick's clock) is passed
                    t = int(w.drv[0])
                    while next_b[g] <= t + 1:
                        snaps[g].append(w.stats_row(g))
                        next_b[g] += epoch_n
                if len(lanes) == 1:
                    report()
            w.base = w.done
            w.iterations += int(w.drv[4])
            if log_cap and command_sink is None:
                logs.append(w.take_log())

    t0 = time.perf_counter()
    c0 = time.process_time()
    try:
        _in_lanes(lanes, lane_work, report)
        if n:
            # the run ends with the tick in which the last request completed; every channel
            # is driven to that cycle (refreshes of channels that finished earlier count)
            t_end = max(_last_tick(lanes[owner[g]].state.heap, g) for g in range(C))
            for g in range(C):
                w = lanes[owner[g]]
                while True:
                    # to the next epoch boundary, if one comes first (every tick before it)
                    upto = t_end if not epoch_n or next_b[g] > t_end else next_b[g] - 1
                    with vectorizing():
                        finished = _finish(params, w.state.heap, w.chans[g], upto, w.scratch,
                                           jump, work_per_call)
                    if command_sink is not None:
                        w.drain_log(g, command_sink)
                    if finished and upto < t_end:
                        snaps[g].append(w.stats_row(g))
                        next_b[g] += epoch_n
                    elif finished:
                        break
                if epoch_n:
                    snaps[g].append(w.stats_row(g))
                if log_cap and command_sink is None:
                    logs.append(w.take_log())
    finally:
        if bar is not None:
            bar.close()
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    # one controller state holding each channel's region from the lane that ran it
    state = K.new_state(params, 1, completion_capacity=ring)
    _merge_channels(state, [lanes[owner[g]].state for g in range(C)])
    log = None
    if command_log:
        log = np.concatenate(logs) if logs else np.zeros((0, 7), np.int64)
        log = log[np.lexsort((log[:, K.LOG_CH], log[:, K.LOG_CLK]))][: int(command_log)]
    stats = summarize(config, params, state, arrival, accept, completion, is_write, timed,
                      power=power)
    stats["driver_iterations"] = int(sum(w.iterations for w in lanes))
    epochs = None
    if epoch_n:
        epochs = _epoch_differences(snaps, K.N_STATS)
    return ReplayResult(arrival=arrival, accept=accept, completion=completion,
                        is_write=is_write, stats=stats, config=config,
                        wall_s=wall, cpu_s=cpu, compile_s=compile_s, command_log=log,
                        channel=ch, threads=len(lanes), epoch_cycles=epoch_n,
                        epoch_stats=epochs)


def _epoch_differences(snaps: list, n_stats: int) -> np.ndarray:
    """int64 [E, channels, n_stats]: what each channel counted in each epoch, from its
    cumulative statistics at each epoch's end (``snaps[g]``, E of them; none for an empty
    trace)."""
    E = len(snaps[0]) if snaps else 0
    for g, s in enumerate(snaps):
        if len(s) != E:
            raise RuntimeError(f"dram replay: channel {g} has {len(s)} epochs, channel 0 {E} "
                               f"(driver bug)")
    cum = np.zeros((E + 1, len(snaps), n_stats), np.int64)
    for g, s in enumerate(snaps):
        if E:
            cum[1:, g] = np.stack(s)
    return np.diff(cum, axis=0)
