"""The closed-loop engine: execution contexts, CXL links and switch, over the DRAM model.

One numba kernel (:func:`_run_chunk`) advances the whole system; Python calls it in chunks of
simulated time and updates a progress bar. One global clock: DRAM cycles (tCK = 416 ps).

Model (docs/system_model.md has the full story):

- *Queries* are admitted closed-loop (at most ``max_inflight`` in flight, in trace order: the
  host streams queries as contexts free up) or open-loop (seeded Poisson arrival times). An
  admitted query's tasks without predecessors become ready.
- *Tasks* wait in their pool's FIFO for a free *execution context* (host core, GPC context of
  a device, the host's I/O agent, or a core context in the CXL switch:
  cosmos.program.pool_sizes); a context runs its task's steps one after another.
- A MEM step issues its 64-byte requests as long as fewer than its class's ``cls_mlp`` are in
  flight. A request spends ``cls_lat`` cycles on chip, crosses its route's segments
  (``cls_route``: the host's port into the switch, the switch, the device's link; none for a
  unit next to the memory), reaches its channel's FIFO (it is put there when issued, with its arrival cycle, in (arrival
  cycle, id) order), waits there until the DRAM controller accepts it (``dram.kernel.offer``),
  completes in the DRAM model, and its data travels back the same way. So a request enters the DRAM
  only when its step has started, i.e. when the step it depends on has completed.
- Links are FIFO servers per direction: the host's upstream port into the switch (shared by
  all devices) and one link per device. A transfer of ``b`` wire bytes occupies the port for
  ``b / bandwidth`` cycles after it is free; then the latency is added (the switch's after
  the host port, the link's after the device link). A route crosses any of the three
  (``_link_send``): the engine knows segments, not the places units sit.

All kernels run without numba's reference counting (``_nrt=False``: they allocate nothing),
so passing the program and state tuples between them costs no reference counting. A call
that is not inlined still copies every array descriptor of the tuples onto the stack (516
words for ``_step_end``, measured in the machine code), so the per-step handler is inlined.
The per-request functions index through ``dram.kernel._u`` (every index is >= 0): with ~80
arrays in the tuples most shapes live on the stack, and numba's negative-index wrap-around
cost a stack load and two instructions per subscript (4,199 -> 3,958 instructions per
request, ``experiments/tools/profile_jit.py``, specialized engine).
A bare integer constant passed to a jitted callee is typed ``Literal[int]``, and numba compiles
the callee (and everything it calls) once per argument type and lowers a literal argument as a
constant. The channel ``0`` passed to ``dram.kernel._channel_tick`` is kept literal on purpose
(the controller's code specialized to channel 0: 3 % faster on the 1,000-query benchmark); the
other constants are written ``np.int64(...)`` where the callee is also called with a variable,
as one copy of the callee is enough there (a bare ``0`` for ``_admit``'s cycle compiles it and
all it calls twice: a fifth of the engine's cold compile time).

Event order within one cycle ``t``: admit queries, handle every event due at ``t`` in
(time, kind, id) order (kinds: data reaches the requester, step ends; the requests that reach
a channel's FIFO at ``t`` join it in id order), offer each channel's FIFO head(s) to its
controller at ``t``, tick every channel
at ``t + 1`` (in channel order), then the reads that complete at ``t + 1`` (in the order
their channels served them: by cycle, then channel order).

Time advances in *windows* of ``L`` cycles, ``L`` at most the read latency (``CI_WIN``; 42
cycles for the presets' DDR5-4800): first the engine's part of every cycle of the window
(queries, events, deliveries), then each channel's part (arrivals into its FIFO, offers,
ticks), one channel after the other. That is exactly the order above: the engine hears of a
channel only through completed reads, and a read served at cycle c completes at c + the read
latency, after the window; the channels hear of the engine only through their FIFOs, which the
engine's part has filled (each request with its arrival cycle) before they run; and the
channels are independent controllers. The reads a window served join the ring in (completion
cycle, channel) order, as a cycle-by-cycle run would deliver them. Running one channel through
its window keeps its controller state in the core's caches (32 states of ~77 KB do not fit),
which made the default ``cosmos`` workload 14-22 % faster than visiting the due channels cycle
by cycle (the 300-query benchmark of docs/system_model.md, "Speed").

What is skipped (exactly: the results equal those of doing every step in every cycle):

- Each DRAM channel is its own controller state (a one-channel memory system of the same
  timing; the channels of a DDR5 system are independent controllers), so a channel is ticked
  only at the cycles at which its tick can change anything (``dram.kernel.next_event`` of that
  channel, kept in ``ch_next``), not every cycle.
- A FIFO head that the controller rejected is offered again only after its channel issued a
  command: until then the offer would be rejected again (its buffers are the same). A FIFO
  that was empty is offered to as soon as a request arrives.
- The controllers hand over a served read at once, with its completion cycle (the issue cycle
  plus the read latency; ``dram.kernel.new_state(direct_reads=True)``), and the engine keeps
  it in a ring until then, in the order served, which is completion order: no channel is
  ticked only because a read completes. The engine offers only reads, so no read is ever
  forwarded from a write buffer.
- The engine and each channel jump over the cycles in which they have nothing to do; so do
  the windows (to the earliest event, open-loop arrival, completion, FIFO arrival or channel
  tick).
- A request's arrival at its FIFO is no event: the engine inserts it when it issues the
  request, behind the requests arriving earlier and those arriving in the same cycle with
  smaller ids (the order in which arrival events would pop from the heap), and the channel
  takes it when its part of the window reaches the arrival cycle. This halves the heap's
  traffic.
- A response (data on its way back) is no event either when it arrives no earlier than the
  last one queued: it joins a ring (``rsp_*``); the reads are delivered in completion order
  and one route has one delay, so almost all do (every one for the presets behind a switch).
  The others go to the heap, and each cycle takes the due ones of both in request id order,
  the heap's order (``RESPONSE_RING = False`` sends all to the heap: same results).

The timeline (:mod:`cosmos.timeline`, ``cosmos simulate --timeline``): when a step ends
(``_step_end``), a step of the tasks of the first N queries (tasks below ``scal[SC_TL_TASKS]``:
a query's tasks are contiguous) is logged in ``tl_log`` (query, task, context, step, start and
end cycle), which holds exactly their steps (:func:`timeline_records`). Without a timeline
the log is empty and ``SC_TL_TASKS`` is 0: one comparison per step, never true, and nothing
else (no work per DRAM request); the results are the same with or without it.

:mod:`cosmos.specialize` compiles a copy of this module whose DRAM kernel has one
configuration's controller parameters as constants (same results, less time).
"""

from __future__ import annotations

from typing import NamedTuple

import numba as nb
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from dram import kernel as dk
from dram.kernel import _u

from cosmos.program import (MAX_CYCLES, STEP_MEM, STEP_XFER, STEP_COMPUTE, OBJ_READS,
                            OBJ_VECTOR, SEG_DEVICE_LINK, SEG_HOST_PORT, SEG_SWITCH, Program)
import cosmos.program as _program
import dram.config as _dram_config
from dram.jitcache import drop_stale

# the engine's jitted code inlines dram.kernel and compiles in constants of the others
drop_stale(__file__, dk.__file__, _dram_config.__file__, _program.__file__)

EV_RESP, EV_STEP = 1, 2   # (kind 0 was a request reaching its FIFO: no event now)
_ID_MASK = (1 << 22) - 1   # an event's tag: kind << 22 | id
MAX_IDS = 1 << 22

# scalar slots of EngineState.scal
SC_T, SC_NEXTQ, SC_DONE, SC_HEAP, SC_REQFREE, SC_ADMITTED = range(6)
SC_REQS_DONE, SC_EVENTS = 6, 7
SC_DMIN = 8      # min(ch_next, next FIFO arrival + 1): no channel changes before this cycle
SC_DHEAD, SC_DLEN = 9, 10    # the ring of served reads waiting for their completion cycle
SC_RHEAD, SC_RLEN, SC_RLAST = 11, 12, 13   # the ring of responses (rsp_*) and its last cycle
SC_CLOCK = 14    # 0, or the latest cycle beyond MAX_CYCLES an event was asked for
# the timeline (cosmos.timeline): the steps of tasks < scal[SC_TL_TASKS] (the tasks of the
# first N queries) are logged in EngineState.tl_log; records written, and records that did
# not fit (counted, never written)
SC_TL_TASKS, SC_TL_N, SC_TL_OVER = 15, 16, 17
N_SC = 18
INF = dk.INF

# float config slots
CF_UP_BPC, CF_DEV_BPC, CF_REQ_WIRE, CF_DATA_WIRE = range(4)
# int config slots
# (CI_SWITCH: whether a switch is configured; the routes carry it, cosmos.units.route)
CI_SWITCH, CI_SW_LAT, CI_LINK_LAT, CI_NCH, CI_MAXINFL, CI_OPEN, CI_NDEV = range(7)
# address mapping by shifts (every radix a power of two; else dram.kernel.map_address):
# CI_SHIFTS = 1, then (shift, mask) of the line number for channel, rank, bank group, bank, row
CI_SHIFTS = 7
CI_MAP = 8
CI_WIN = 18      # cycles per window: at most the read latency (module docstring)
CI_RING = 19     # 1: responses in arrival order go to the response ring; 0: all to the heap
N_CI = 20
WIN_MAX = 64     # longest window (any length up to the read latency gives the same results)

# fields of a request's record in EngineState.req_rec: its context, address, rank, bank
# group (within the rank), flat bank and row (two words spare). One cache line per request
# (the record array is 64-byte aligned): a request's fields are read together, each time by
# a different part of the engine (issue, offer, delivery, response), and as separate arrays
# they cost a cache miss each. (The cycle it reaches its channel's FIFO is kept beside its id
# in the FIFO, which is scanned by arrival cycle: no record is read for that.)
RQ_CTX, RQ_ADDR, RQ_RANK, RQ_BG, RQ_FB, RQ_ROW = range(6)
RW = 8
# fields of an execution context's record in EngineState.ctx_rec (same reason), two lines.
# First what each request issued reads and writes: its MEM step's requests still to issue,
# requests in flight and in-flight limit, the current object (its index, l % R and l // R of
# the object's line l in the class's numbering, its address and its lines). Then what the
# step's requests read once per issue or response, copied from the step's class when the
# step starts: R, rank and column stride, on-chip latency, route (dev << 4 | segments << 1
# | rank-local; segments: the SEG_* bits of cls_route), (float64, through the view ctx_cpu) the core's busy-until cycle and the
# compute per line; and the step. The context stays on a MEM step until its last request
# has returned, so a request in flight reads its step's parameters from its context's
# record. (Requests completed = issued - in flight: not kept.)
CX_TODO, CX_OUT, CX_MLP, CX_OBJ, CX_LRANK, CX_LCOL, CX_ADDR, CX_OLINES = range(8)
CX_R, CX_RSTEP, CX_CSTEP, CX_LAT, CX_ROUTE, CX_CPU, CX_LINE, CX_STEP = range(8, 16)
CW = 16
# fields of a step's record in EngineState.tl_log (the timeline): query, task, context, step
# (its index in the program: its class gives the kind), start and end cycle
TL_QUERY, TL_TASK, TL_CTX, TL_STEP, TL_START, TL_END = range(6)
TLW = 6
#: most records a timeline keeps (48 MB); the steps of the first N queries beyond that are
#: counted (scal[SC_TL_OVER]), not logged
TL_MAX_RECORDS = 1 << 20
RESPONSE_RING = True   # CI_RING (either gives the same results; the ring is faster)


class EngineState(NamedTuple):
    """Mutable engine state (structure of arrays). Sizes: T tasks, Q queries, NC contexts,
    NR request slots, G global channels, P pools, D devices."""

    scal: np.ndarray            # (N_SC,) int64
    heap: np.ndarray            # (2 NH,) int64 events: (cycle, kind << 22 | id) pairs
    req_rec: np.ndarray         # (NR * RW,) int64 one 64-byte record per request (RQ_*)
    req_free: np.ndarray        # (NR,) int64 free stack
    fifo: np.ndarray            # (G, 2 NR) int64 ring buffers per channel: position k holds
    #                             a request id at [2k] and its arrival cycle at [2k + 1]
    fifo_head: np.ndarray       # (G,) int64
    fifo_len: np.ndarray        # (G,) int64 requests in the FIFO (some may arrive later in
    fifo_arr: np.ndarray        # (G,) int64 the window) and those its controller has seen
    offer_pend: np.ndarray      # (G,) int64 1: offer the FIFO heads in the channel's next cycle
    ch_next: np.ndarray         # (G,) int64 next cycle a channel's tick can change anything
    ctx_pool: np.ndarray        # (NC,) int64
    ctx_task: np.ndarray        # (NC,) int64, -1 idle
    ctx_rec: np.ndarray         # (NC * CW,) int64 a 128-byte record per context (CX_*)
    ctx_cpu: np.ndarray         # (NC * CW,) float64 view of ctx_rec, for its float fields
                                # CX_CPU and CX_LINE
    ctx_step_start: np.ndarray  # (NC,) int64
    pool_free: np.ndarray       # (NC,) int64 free stacks, pool p at pool_off[p]
    pool_off: np.ndarray        # (P+1,) int64
    pool_nfree: np.ndarray      # (P,) int64
    rq: np.ndarray              # (P, T) int64 ready-task rings
    rq_head: np.ndarray         # (P,) int64
    rq_len: np.ndarray          # (P,) int64
    task_left: np.ndarray       # (T,) int64 predecessors still running
    task_ready: np.ndarray      # (T,) int64 cycle it became ready
    task_start: np.ndarray      # (T,) int64 cycle it got a context
    task_end: np.ndarray        # (T,) int64
    task_crit: np.ndarray       # (T,) int64 predecessor that finished last (-1)
    task_bd: np.ndarray         # (T, 5) int64 cycles per breakdown category
    q_arrival: np.ndarray       # (Q,) int64 (open loop: given; closed loop: admission)
    q_done: np.ndarray          # (Q,) int64
    q_left: np.ndarray          # (Q,) int64 tasks still to finish
    link_free: np.ndarray       # (D+1, 2) float64: row D = upstream port; col = direction
    link_busy: np.ndarray       # (D+1, 2) float64 busy cycles
    link_bytes: np.ndarray      # (D+1, 2) float64 wire bytes
    inst_reqs: np.ndarray       # (I,) int64 requests completed per memory instance
    inst_local: np.ndarray      # (I,) int64 rank-local requests completed
    wb_req: np.ndarray          # (NR,) int64 reads served in a window (request, completion
    wb_cyc: np.ndarray          # (NR,) int64 cycle), channel by channel
    wb_cnt: np.ndarray          # (WIN_MAX + 2,) int64 scratch: counting sort of those
    done_req: np.ndarray        # (NR,) int64 ring (SC_DHEAD, SC_DLEN): served reads, in
    done_cyc: np.ndarray        # (NR,) int64 issue order, and their completion cycles
    rsp_req: np.ndarray         # (NR,) int64 ring (SC_RHEAD, SC_RLEN): data on its way back
    rsp_cyc: np.ndarray         # (NR,) int64 to the requester, and its arrival cycle
    rsp_due: np.ndarray         # (NR,) int64 scratch: the responses due in one cycle
    tl_log: np.ndarray          # (TLW * records,) int64 the timeline's step records (TL_*);
    #                             0 records unless a timeline was asked for


@nb.njit(cache=True, inline="always", _nrt=False)
def _rq(req, field):
    """Index of ``field`` (RQ_*) of request ``req`` in ``EngineState.req_rec``."""
    return _u(req * RW + field)


@nb.njit(cache=True, inline="always", _nrt=False)
def _cx(ctx, field):
    """Index of ``field`` (CX_*) of context ``ctx`` in ``EngineState.ctx_rec``."""
    return _u(ctx * CW + field)


@intrinsic
def _prefetch(typingctx, arr, idx):
    """Hint the core to load ``arr[idx]`` (a 1-D contiguous array, ``idx`` in range) into its
    caches (``llvm.prefetch``: read, high locality); no effect on any result."""
    if not isinstance(arr, types.Array) or not isinstance(idx, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        aty, ity = signature.args
        ary = context.make_array(aty)(context, builder, args[0])
        ptr = builder.gep(ary.data, [context.cast(builder, args[1], ity, types.intp)])
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
            "llvm.prefetch.p0")
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return types.void(arr, idx), codegen


@nb.njit(cache=True, inline="always", _nrt=False)
def _prefetch_step(pg, s):
    """Prefetch the addresses of the objects of step ``s`` (if it is a MEM step): they are
    read from the layout's tables by node id, at random (8 MB each for 1 M nodes), and a
    step starting would otherwise wait for them."""
    if s >= pg.step_class.shape[0]:
        return
    c = pg.step_class[_u(s)]
    if pg.cls_kind[_u(c)] != STEP_MEM:
        return
    o = pg.step_obj[_u(s)]
    src = pg.cls_obj_src[_u(c)]
    if src == OBJ_READS:
        for i in range(pg.step_nreq[_u(s)] // pg.cls_obj_lines[_u(c)]):
            _prefetch(pg.vector_addr, pg.read_node[_u(o + i)])
    elif src == OBJ_VECTOR:
        _prefetch(pg.vector_addr, o)
    else:
        _prefetch(pg.node_addr, o)


# ----------------------------------------------------------------------------- heap
@nb.njit(cache=True, _nrt=False)
def _hpush(h, scal, t, tag):
    """4-ary min-heap of unique events in ``h`` (event ``i`` at ``h[2i]`` = its cycle and
    ``h[2i + 1]`` = its tag, ``kind << 22 | id``; ``scal[SC_HEAP]`` events; children of
    ``i`` at ``4i+1..4i+4``), ordered by (cycle, tag): insert event (``t``, ``tag``). The
    cycle has a word of its own, so any cycle up to :data:`MAX_CYCLES` is an event time (one
    word ``cycle << 24 | tag`` would leave the cycle 39 bits). Events are unique, so the pop
    order is that of any heap; four children per node halve the depth, and a pop's hole
    descends half as many levels (4.6 % less time for 1,000 default ``cosmos`` queries than
    the binary heap, with ``_step_end`` inlined, which saved pushing the two state tuples on
    every call)."""
    i = scal[SC_HEAP]
    scal[SC_HEAP] = i + 1
    _sift_up(h, i, t, tag)


@nb.njit(cache=True, inline="always", _nrt=False)
def _sift_up(h, i, t, tag):
    """Place event (``t``, ``tag``) at hole ``i``, moving larger parents down into the hole."""
    while i > 0:
        p = (i - 1) >> 2
        pt = h[_u(2 * p)]
        ptag = h[_u(2 * p + 1)]
        if pt < t or (pt == t and ptag <= tag):
            break
        h[_u(2 * i)] = pt
        h[_u(2 * i + 1)] = ptag
        i = p
    h[_u(2 * i)] = t
    h[_u(2 * i + 1)] = tag


@nb.njit(cache=True, _nrt=False)
def _hpop(h, scal):
    """Remove the smallest event; return its tag (its cycle is ``h[0]`` before the call).
    The hole left at the root moves down along the smallest children to a leaf, then the last
    event moves up into it from there (fewer comparisons than sifting the last event down
    from the root; the same heap order)."""
    n = scal[SC_HEAP] - 1
    scal[SC_HEAP] = n
    top = h[1]
    lt = h[_u(2 * n)]
    lg = h[_u(2 * n + 1)]
    i = 0
    while True:
        c = 4 * i + 1
        if c >= n:
            break
        m = c
        mt = h[_u(2 * c)]
        mg = h[_u(2 * c + 1)]
        e = min(c + 4, n)
        for j in range(c + 1, e):
            vt = h[_u(2 * j)]
            if vt < mt or (vt == mt and h[_u(2 * j + 1)] < mg):
                m = j
                mt = vt
                mg = h[_u(2 * j + 1)]
        h[_u(2 * i)] = mt
        h[_u(2 * i + 1)] = mg
        i = m
    _sift_up(h, i, lt, lg)
    return top


@nb.njit(cache=True, _nrt=False)
def _event(st, t, kind, ident):
    """Schedule event ``kind`` of ``ident`` at cycle ``t``. A cycle beyond the engine's
    clock (:data:`MAX_CYCLES`) is recorded (:func:`_past_clock`) and the event kept at
    ``MAX_CYCLES``: the driver then stops with an error."""
    if t > MAX_CYCLES:
        _past_clock(st, t)
        t = MAX_CYCLES
    _hpush(st.heap, st.scal, t, (kind << 22) | ident)


@nb.njit(cache=True, inline="always", _nrt=False)
def _past_clock(st, t):
    """Record that something was due at cycle ``t`` > :data:`MAX_CYCLES` (``scal[SC_CLOCK]``
    keeps the latest such cycle; cosmos.simulate stops after the chunk with an error)."""
    if t > st.scal[SC_CLOCK]:
        st.scal[SC_CLOCK] = t


@nb.njit(cache=True, inline="always", _nrt=False)
def _cycle_at(x):
    """The first whole cycle at or after ``x`` (a float cycle: a core's busy-until time, a
    transfer's arrival), up to the tolerance of float sums; :data:`INF` for a cycle that
    large or larger (beyond the clock: :func:`_event`)."""
    if x >= INF:
        return INF
    return np.int64(np.ceil(x - 1e-9))


# ----------------------------------------------------------------------------- links
@nb.njit(cache=True, _nrt=False)
def _serialize(st, row, direction, x, nbytes, bytes_per_cycle):
    """Queue ``nbytes`` on link ``row`` (a device's link, or row D = the switch's upstream
    port) in ``direction`` from time ``x`` (FIFO); return when the last byte has left."""
    s = max(x, st.link_free[_u(row), _u(direction)])
    ser = nbytes / bytes_per_cycle
    st.link_free[_u(row), _u(direction)] = s + ser
    st.link_busy[_u(row), _u(direction)] += ser
    st.link_bytes[_u(row), _u(direction)] += nbytes
    return s + ser


@nb.njit(cache=True, _nrt=False)
def _link_send(st, cf, ci, dev, direction, nbytes, t, route):
    """Send ``nbytes`` wire bytes at cycle ``t`` over the segments of ``route`` (bits
    ``SEG_*``: the host's port into the switch, the switch, device ``dev``'s link); return
    the arrival cycle. direction 0 = outwards (host -> switch -> device), 1 = inwards. The
    host port is queued, then the switch's latency added; the device link is queued, then
    its latency added."""
    D = ci[CI_NDEV]
    x = float(t)
    if direction == 0:
        if route & SEG_HOST_PORT:
            x = _serialize(st, D, direction, x, nbytes, cf[CF_UP_BPC])
        if route & SEG_SWITCH:
            x = x + ci[CI_SW_LAT]
    if route & SEG_DEVICE_LINK:
        x = _serialize(st, dev, direction, x, nbytes, cf[CF_DEV_BPC]) + ci[CI_LINK_LAT]
    if direction == 1:
        if route & SEG_HOST_PORT:
            x = _serialize(st, D, direction, x, nbytes, cf[CF_UP_BPC])
        if route & SEG_SWITCH:
            x = x + ci[CI_SW_LAT]
    arr = _cycle_at(x)
    if arr > MAX_CYCLES:
        _past_clock(st, arr)
    return arr


@nb.njit(cache=True, inline="always", _nrt=False)
def _enqueue(st, ci, params, req, dev, t):
    """Request ``req`` will reach its channel's FIFO at cycle ``t`` (>= now): map its address
    and insert it into that FIFO in (arrival cycle, request id) order, behind every request
    that arrives earlier -- the order in which arrival events popped from the event heap
    would append them. Its controller sees it when the channel's part of a window reaches
    ``t``; the requests already seen (``fifo_arr``) arrived before now."""
    NRcap = st.fifo.shape[1] >> 1
    a = st.req_rec[_rq(req, RQ_ADDR)]
    if ci[CI_SHIFTS] != 0:
        x = a >> 6
        ch = (x >> ci[CI_MAP]) & ci[CI_MAP + 1]
        rank = (x >> ci[CI_MAP + 2]) & ci[CI_MAP + 3]
        bgi = (x >> ci[CI_MAP + 4]) & ci[CI_MAP + 5]
        bank = (x >> ci[CI_MAP + 6]) & ci[CI_MAP + 7]
        row = (x >> ci[CI_MAP + 8]) & ci[CI_MAP + 9]
    else:
        ch, rank, bgi, bank, row, col = dk.map_address(params, a)
    g = dev * ci[CI_NCH] + ch
    st.req_rec[_rq(req, RQ_RANK)] = rank
    st.req_rec[_rq(req, RQ_BG)] = bgi
    st.req_rec[_rq(req, RQ_FB)] = (rank * params.n_bg + bgi) * params.n_banks + bank
    st.req_rec[_rq(req, RQ_ROW)] = row
    h = st.fifo_head[_u(g)]
    n = st.fifo_len[_u(g)]
    seen = st.fifo_arr[_u(g)]
    k = dk._wrap(h + n, NRcap)
    if n > seen and _fifo_arrival(st, g, h + n - 1) >= t:   # (else it goes last, as usual)
        while n > seen:             # move later arrivals (or equal ones with larger ids) up
            j = k - 1 if k > 0 else NRcap - 1
            o = st.fifo[_u(g), _u(2 * j)]
            to = st.fifo[_u(g), _u(2 * j + 1)]
            if to < t or (to == t and o < req):
                break
            st.fifo[_u(g), _u(2 * k)] = o
            st.fifo[_u(g), _u(2 * k + 1)] = to
            k = j
            n -= 1
    st.fifo[_u(g), _u(2 * k)] = req
    st.fifo[_u(g), _u(2 * k + 1)] = t
    st.fifo_len[_u(g)] += 1


# ----------------------------------------------------------------------------- contexts
@nb.njit(cache=True, _nrt=False)
def _issue(pg, st, cf, ci, params, ctx, t):
    """Issue requests of the context's MEM step while under its in-flight limit."""
    mlp = st.ctx_rec[_cx(ctx, CX_MLP)]
    olines = st.ctx_rec[_cx(ctx, CX_OLINES)]
    R = st.ctx_rec[_cx(ctx, CX_R)]
    rstep = st.ctx_rec[_cx(ctx, CX_RSTEP)]
    cstep = st.ctx_rec[_cx(ctx, CX_CSTEP)]
    lat = st.ctx_rec[_cx(ctx, CX_LAT)]
    route = st.ctx_rec[_cx(ctx, CX_ROUTE)]
    segs = (route >> 1) & 7
    dev = route >> 4
    while st.ctx_rec[_cx(ctx, CX_TODO)] > 0 and st.ctx_rec[_cx(ctx, CX_OUT)] < mlp:
        todo = st.ctx_rec[_cx(ctx, CX_TODO)] - 1
        lr = st.ctx_rec[_cx(ctx, CX_LRANK)]
        lc = st.ctx_rec[_cx(ctx, CX_LCOL)]
        addr = st.ctx_rec[_cx(ctx, CX_ADDR)] + lr * rstep + lc * cstep
        if lc * R + lr + 1 >= olines:       # that was the object's last line
            o = st.ctx_rec[_cx(ctx, CX_OBJ)] + 1
            st.ctx_rec[_cx(ctx, CX_OBJ)] = o
            st.ctx_rec[_cx(ctx, CX_LRANK)] = 0
            st.ctx_rec[_cx(ctx, CX_LCOL)] = 0
            if todo > 0:                    # (only OBJ_READS steps have more objects)
                st.ctx_rec[_cx(ctx, CX_ADDR)] = np.int64(pg.vector_addr[_u(pg.read_node[_u(o)])])
        else:
            lr += 1
            if lr == R:             # (l % R, l // R) kept without dividing
                lr = 0
                lc += 1
            st.ctx_rec[_cx(ctx, CX_LRANK)] = lr
            st.ctx_rec[_cx(ctx, CX_LCOL)] = lc
        n = st.scal[SC_REQFREE] - 1
        req = st.req_free[_u(n)]
        st.scal[SC_REQFREE] = n
        st.req_rec[_rq(req, RQ_CTX)] = ctx
        st.req_rec[_rq(req, RQ_ADDR)] = addr
        t1 = t + lat
        if segs != 0:
            t1 = _link_send(st, cf, ci, dev, np.int64(0), cf[CF_REQ_WIRE], t1, segs)
        _enqueue(st, ci, params, req, dev, t1)
        st.ctx_rec[_cx(ctx, CX_TODO)] = todo
        st.ctx_rec[_cx(ctx, CX_OUT)] += 1


@nb.njit(cache=True, _nrt=False)
def _start_step(pg, st, cf, ci, params, ctx, t):
    s = st.ctx_rec[_cx(ctx, CX_STEP)]
    st.ctx_step_start[_u(ctx)] = t
    _prefetch_step(pg, s + 1)
    c = pg.step_class[_u(s)]
    kind = pg.cls_kind[_u(c)]
    nreq = pg.step_nreq[_u(s)]
    if kind == STEP_MEM and nreq > 0:
        st.ctx_rec[_cx(ctx, CX_TODO)] = nreq
        st.ctx_rec[_cx(ctx, CX_OUT)] = 0
        o = pg.step_obj[_u(s)]
        st.ctx_rec[_cx(ctx, CX_OBJ)] = o
        st.ctx_rec[_cx(ctx, CX_LRANK)] = 0
        st.ctx_rec[_cx(ctx, CX_LCOL)] = 0
        src = pg.cls_obj_src[_u(c)]
        if src == OBJ_READS:
            a = pg.vector_addr[_u(pg.read_node[_u(o)])]
            st.ctx_rec[_cx(ctx, CX_OLINES)] = pg.cls_obj_lines[_u(c)]
        else:                       # one object of all the step's lines
            a = pg.vector_addr[_u(o)] if src == OBJ_VECTOR else pg.node_addr[_u(o)]
            st.ctx_rec[_cx(ctx, CX_OLINES)] = nreq
        st.ctx_rec[_cx(ctx, CX_ADDR)] = np.int64(a)
        st.ctx_rec[_cx(ctx, CX_MLP)] = pg.cls_mlp[_u(c)]
        st.ctx_rec[_cx(ctx, CX_R)] = pg.cls_R[_u(c)]
        st.ctx_rec[_cx(ctx, CX_RSTEP)] = pg.cls_rank_step[_u(c)]
        st.ctx_rec[_cx(ctx, CX_CSTEP)] = pg.cls_col_step[_u(c)]
        st.ctx_rec[_cx(ctx, CX_LAT)] = pg.cls_lat[_u(c)]
        st.ctx_rec[_cx(ctx, CX_ROUTE)] = ((pg.cls_dev[_u(c)] << 4) | (pg.cls_route[_u(c)] << 1)
                                          | pg.cls_rank_local[_u(c)])
        st.ctx_cpu[_cx(ctx, CX_LINE)] = pg.cls_compute_line[_u(c)]
        if st.ctx_cpu[_cx(ctx, CX_CPU)] < t:
            st.ctx_cpu[_cx(ctx, CX_CPU)] = float(t)
        _issue(pg, st, cf, ci, params, ctx, t)
    elif kind == STEP_XFER:
        arr = _link_send(st, cf, ci, pg.cls_dev[_u(c)], pg.cls_link[_u(c)],
                         pg.step_wire_bytes[_u(s)], t, pg.cls_route[_u(c)])
        _event(st, arr + pg.step_compute_after[_u(s)], EV_STEP, ctx)
    else:
        _event(st, t + pg.step_compute_after[_u(s)], EV_STEP, ctx)


@nb.njit(cache=True, _nrt=False)
def _start_task(pg, st, cf, ci, params, ctx, task, t):
    st.ctx_task[_u(ctx)] = task
    st.task_start[_u(task)] = t
    st.task_bd[_u(task), 4] += t - st.task_ready[_u(task)]
    st.ctx_rec[_cx(ctx, CX_STEP)] = pg.task_step_ptr[_u(task)]
    st.ctx_cpu[_cx(ctx, CX_CPU)] = float(t)
    # every task has at least one step (checked in new_engine_state): no recursion here
    _start_step(pg, st, cf, ci, params, ctx, t)


@nb.njit(cache=True, _nrt=False)
def _make_ready(pg, st, cf, ci, params, task, t):
    st.task_ready[_u(task)] = t
    p = pg.task_pool[_u(task)]
    if st.pool_nfree[_u(p)] > 0:
        n = st.pool_nfree[_u(p)] - 1
        st.pool_nfree[_u(p)] = n
        ctx = st.pool_free[_u(st.pool_off[_u(p)] + n)]
        _start_task(pg, st, cf, ci, params, ctx, task, t)
    else:
        T = st.rq.shape[1]
        st.rq[_u(p), _u((st.rq_head[_u(p)] + st.rq_len[_u(p)]) % T)] = task
        st.rq_len[_u(p)] += 1


@nb.njit(cache=True, _nrt=False)
def _admit(pg, st, cf, ci, params, q, t):
    st.q_arrival[_u(q)] = t
    st.scal[SC_ADMITTED] += 1
    for task in range(pg.query_task_ptr[_u(q)], pg.query_task_ptr[_u(q + 1)]):
        if pg.task_npred[_u(task)] == 0:
            _make_ready(pg, st, cf, ci, params, task, t)


@nb.njit(cache=True, _nrt=False)
def _finish_task(pg, st, cf, ci, params, ctx, t):
    task = st.ctx_task[_u(ctx)]
    st.task_end[_u(task)] = t
    st.ctx_task[_u(ctx)] = -1
    p = st.ctx_pool[_u(ctx)]
    succ = pg.task_succ[_u(task)]
    if succ >= 0:
        st.task_left[_u(succ)] -= 1
        if st.task_left[_u(succ)] == 0:
            st.task_crit[_u(succ)] = task
            _make_ready(pg, st, cf, ci, params, succ, t)
    q = pg.task_query[_u(task)]
    st.q_left[_u(q)] -= 1
    if st.q_left[_u(q)] == 0:
        st.q_done[_u(q)] = t
        st.scal[SC_DONE] += 1
        if ci[CI_OPEN] == 0:
            nq = st.scal[SC_NEXTQ]
            if nq < st.q_done.shape[0]:
                st.scal[SC_NEXTQ] = nq + 1
                _admit(pg, st, cf, ci, params, nq, t)
    # the context takes the next ready task of its pool, or becomes free
    if st.rq_len[_u(p)] > 0:
        T = st.rq.shape[1]
        nxt = st.rq[_u(p), _u(st.rq_head[_u(p)])]
        st.rq_head[_u(p)] = (st.rq_head[_u(p)] + 1) % T
        st.rq_len[_u(p)] -= 1
        _start_task(pg, st, cf, ci, params, ctx, nxt, t)
    else:
        st.pool_free[_u(st.pool_off[_u(p)] + st.pool_nfree[_u(p)])] = ctx
        st.pool_nfree[_u(p)] += 1


@nb.njit(cache=True, _nrt=False)
def _tl_record(pg, st, ctx, task, s, t):
    """Log step ``s`` of ``task`` on context ``ctx``, which ends at ``t``, in the timeline
    (``tl_log``; counted in ``scal[SC_TL_OVER]`` if full). Called for the tasks of the
    timeline's queries only: a run without a timeline never gets here."""
    n = st.scal[SC_TL_N]
    if (n + 1) * TLW > st.tl_log.shape[0]:
        st.scal[SC_TL_OVER] += 1
        return
    k = n * TLW
    st.tl_log[_u(k + TL_QUERY)] = pg.task_query[_u(task)]
    st.tl_log[_u(k + TL_TASK)] = task
    st.tl_log[_u(k + TL_CTX)] = ctx
    st.tl_log[_u(k + TL_STEP)] = s
    st.tl_log[_u(k + TL_START)] = st.ctx_step_start[_u(ctx)]
    st.tl_log[_u(k + TL_END)] = t
    st.scal[SC_TL_N] = n + 1


@nb.njit(cache=True, inline="always", _nrt=False)
def _step_end(pg, st, cf, ci, params, ctx, t):
    s = st.ctx_rec[_cx(ctx, CX_STEP)]
    task = st.ctx_task[_u(ctx)]
    if task < st.scal[SC_TL_TASKS]:     # a timeline's query (never without a timeline)
        _tl_record(pg, st, ctx, task, s, t)
    st.task_bd[_u(task), _u(pg.cls_cat[_u(pg.step_class[_u(s)])])] += \
        t - st.ctx_step_start[_u(ctx)]
    s += 1
    if s < pg.task_step_ptr[_u(task + 1)]:
        st.ctx_rec[_cx(ctx, CX_STEP)] = s
        _start_step(pg, st, cf, ci, params, ctx, t)
    else:
        _finish_task(pg, st, cf, ci, params, ctx, t)


@nb.njit(cache=True, _nrt=False)
def _response(pg, st, cf, ci, params, req, t):
    """The data of ``req`` reached its requester at ``t``."""
    ctx = st.req_rec[_rq(req, RQ_CTX)]
    st.req_free[_u(st.scal[SC_REQFREE])] = req
    st.scal[SC_REQFREE] += 1
    st.ctx_rec[_cx(ctx, CX_OUT)] -= 1
    c = st.ctx_cpu[_cx(ctx, CX_CPU)]
    if c < t:
        c = float(t)
    st.ctx_cpu[_cx(ctx, CX_CPU)] = c + st.ctx_cpu[_cx(ctx, CX_LINE)]
    if st.ctx_rec[_cx(ctx, CX_TODO)] > 0:
        _issue(pg, st, cf, ci, params, ctx, t)
    if st.ctx_rec[_cx(ctx, CX_TODO)] == 0 and st.ctx_rec[_cx(ctx, CX_OUT)] == 0:
        end = _cycle_at(st.ctx_cpu[_cx(ctx, CX_CPU)])
        if end < t:
            end = t
        s = st.ctx_rec[_cx(ctx, CX_STEP)]
        _event(st, end + pg.step_compute_after[_u(s)], EV_STEP, ctx)


# ----------------------------------------------------------------------------- main loop
@nb.njit(cache=True, inline="always", _nrt=False)
def _next_done(st):
    """Completion cycle of the oldest served read waiting in the ring (INF if none)."""
    if st.scal[SC_DLEN] == 0:
        return INF
    return st.done_cyc[_u(st.scal[SC_DHEAD])]


@nb.njit(cache=True, _nrt=False)
def _deliver(pg, st, cf, ci, clk):
    """Reads that complete at ``clk`` (in the order their channels served them): their data
    goes back to the requester."""
    NR = st.done_req.shape[0]
    while st.scal[SC_DLEN] > 0:
        h = st.scal[SC_DHEAD]
        c = st.done_cyc[_u(h)]
        if c > clk:
            break
        req = st.done_req[_u(h)]
        h += 1
        if h == NR:
            h = 0
        st.scal[SC_DHEAD] = h
        st.scal[SC_DLEN] -= 1
        ctx = st.req_rec[_rq(req, RQ_CTX)]
        route = st.ctx_rec[_cx(ctx, CX_ROUTE)]
        inst = route >> 4
        st.inst_reqs[_u(inst)] += 1
        st.scal[SC_REQS_DONE] += 1
        if route & 1 != 0:
            st.inst_local[_u(inst)] += 1
        if route & 14 != 0:
            c = _link_send(st, cf, ci, inst, np.int64(1), cf[CF_DATA_WIRE], c,
                           (route >> 1) & 7)
        _respond(st, ci, c + st.ctx_rec[_cx(ctx, CX_LAT)], req)


@nb.njit(cache=True, inline="always", _nrt=False)
def _respond(st, ci, t, req):
    """The data of ``req`` will reach its requester at ``t``: appended to the response ring
    if no response in it arrives later (the usual case: the reads are delivered in completion
    order, and a response's delay is the same for the requests of one route), else an event
    in the heap."""
    n = st.scal[SC_RLEN]
    if ci[CI_RING] == 0 or (n > 0 and t < st.scal[SC_RLAST]):
        _event(st, t, EV_RESP, req)
        return
    NR = st.rsp_req.shape[0]
    k = dk._wrap(st.scal[SC_RHEAD] + n, NR)
    st.rsp_req[_u(k)] = req
    st.rsp_cyc[_u(k)] = t
    st.scal[SC_RLEN] = n + 1
    st.scal[SC_RLAST] = t


@nb.njit(cache=True, inline="always", _nrt=False)
def _next_work(st, ci, open_arrivals, nt):
    """The smaller of ``nt``, the next event's or response's cycle and the next open-loop
    arrival."""
    if st.scal[SC_RLEN] > 0:
        te = st.rsp_cyc[_u(st.scal[SC_RHEAD])]
        if te < nt:
            nt = te
    if st.scal[SC_HEAP] > 0:
        te = st.heap[0]
        if te < nt:
            nt = te
    if ci[CI_OPEN] != 0 and st.scal[SC_NEXTQ] < st.q_done.shape[0]:
        te = open_arrivals[_u(st.scal[SC_NEXTQ])]
        if te < nt:
            nt = te
    return nt


@nb.njit(cache=True, inline="always", _nrt=False)
def _responses(pg, st, cf, ci, params, t):
    """The responses due at ``t`` (the ring's and the heap's) in request id order, as the
    events' (time, kind, id) order has them."""
    due = st.rsp_due
    nd = 0
    NR = st.rsp_req.shape[0]
    while st.scal[SC_RLEN] > 0:
        h = st.scal[SC_RHEAD]
        if st.rsp_cyc[_u(h)] > t:
            break
        due[_u(nd)] = st.rsp_req[_u(h)]
        nd += 1
        st.scal[SC_RHEAD] = dk._wrap(h + 1, NR)
        st.scal[SC_RLEN] -= 1
    while st.scal[SC_HEAP] > 0 and st.heap[0] <= t and ((st.heap[1] >> 22) & 3) == EV_RESP:
        due[_u(nd)] = _hpop(st.heap, st.scal) & _ID_MASK
        nd += 1
    for i in range(1, nd):                  # insertion sort by id (a few per cycle)
        x = due[_u(i)]
        j = i
        while j > 0 and due[_u(j - 1)] > x:
            due[_u(j)] = due[_u(j - 1)]
            j -= 1
        due[_u(j)] = x
    st.scal[SC_EVENTS] += nd
    for i in range(nd):
        _response(pg, st, cf, ci, params, due[_u(i)], t)


@nb.njit(cache=True, _nrt=False)
def _engine_window(pg, st, cf, ci, params, open_arrivals, t, t_end):
    """The engine's part of cycles ``t .. t_end - 1``: arrivals of queries, events (data
    reaching requesters, step ends; the requests issued go straight into their channels'
    FIFOs) and the reads that complete at each cycle + 1. Returns ``t_end``, or the cycle + 1
    at which the last query completed (the channels then stop at that cycle too)."""
    Q = st.q_done.shape[0]
    while True:
        # 1. open-loop arrivals
        if ci[CI_OPEN] != 0:
            while st.scal[SC_NEXTQ] < Q and open_arrivals[_u(st.scal[SC_NEXTQ])] <= t:
                q = st.scal[SC_NEXTQ]
                st.scal[SC_NEXTQ] = q + 1
                _admit(pg, st, cf, ci, params, q, t)
        # 2. events due (all at t: time never passes an event), in (time, kind, id) order:
        # first the responses (from the ring and the heap, sorted by request id), then the
        # step ends, the only events then left at t (a response can add one at t, never a
        # response). (The open-loop arrivals up to t are in: this is the next response's or
        # event's cycle.)
        if _next_work(st, ci, open_arrivals, INF) <= t:
            _responses(pg, st, cf, ci, params, t)
        while st.scal[SC_HEAP] > 0 and st.heap[0] <= t:
            tag = _hpop(st.heap, st.scal)
            st.scal[SC_EVENTS] += 1
            _step_end(pg, st, cf, ci, params, tag & _ID_MASK, t)
        # 3. the reads that complete at t + 1
        if _next_done(st) <= t + 1:
            _deliver(pg, st, cf, ci, t + 1)
        if st.scal[SC_DONE] >= Q:
            return t + 1
        # 4. the next cycle with anything for the engine
        nt = _next_work(st, ci, open_arrivals, _next_done(st) - 1)
        if nt <= t:
            nt = t + 1
        if nt >= t_end:
            return t_end
        t = nt


@nb.njit(cache=True, _nrt=False)
def _channel_window(pg, st, params1, H, g, t, t_end, nwb):
    """Channel ``g`` (controller state ``H``) through cycles ``t .. t_end - 1``: at each
    cycle c, the requests that reached its FIFO at c, then offers of the FIFO heads (when the
    FIFO was empty and got a request, or the controller issued a command in its last cycle: a
    head rejected before is rejected again while the controller's buffers stay the same),
    then the controller's cycle c + 1 if it can change anything (``dram.kernel.next_event``).
    Served reads go to the window's list (``wb_req``, ``wb_cyc`` from ``nwb``); returns its
    new length."""
    NRcap = st.fifo.shape[1] >> 1
    h = st.fifo_head[_u(g)]
    n = st.fifo_len[_u(g)]
    a = st.fifo_arr[_u(g)]
    flag = st.offer_pend[_u(g)]
    d = st.ch_next[_u(g)]
    ds = dk.State(H)
    c = t
    while True:
        while a < n:                        # arrivals at c
            if _fifo_arrival(st, g, h + a) > c:
                break
            if a == 0:
                flag = 1
            a += 1
        if flag != 0:                       # offers at c
            acc = False
            while a > 0:
                req = st.fifo[_u(g), _u(2 * h)]
                rl = st.ctx_rec[_cx(st.req_rec[_rq(req, RQ_CTX)], CX_ROUTE)] & 1
                ok = dk._offer_mapped(params1, H, 0, req, st.req_rec[_rq(req, RQ_ADDR)], 0,
                                      rl, c, st.req_rec[_rq(req, RQ_RANK)],
                                      st.req_rec[_rq(req, RQ_BG)], st.req_rec[_rq(req, RQ_FB)],
                                      st.req_rec[_rq(req, RQ_ROW)])
                if not ok:
                    break
                acc = True
                h += 1
                if h == NRcap:
                    h = 0
                a -= 1
                n -= 1
            if acc:
                d = dk._next_event(params1, H, c + 1)
            flag = 0
        if d <= c + 1:                      # the controller's cycle c + 1
            ch0 = dk.changes(ds)
            # (dk._tick would check again that the channel has something due at c + 1: it
            # has, d being its next event and offers only moving that earlier)
            dk._channel_tick(params1, H, 0, c + 1)
            # (a served read comes with the command that served it, which moved the count)
            if dk.completions_pending(ds) > 0:
                while dk.completions_pending(ds) > 0:
                    nwb += dk._pop(H, st.wb_req[nwb:], st.wb_cyc[nwb:])
                flag = 1 if a > 0 else 0
            elif dk.changes(ds) != ch0 and a > 0:
                flag = 1
            d = dk._next_event(params1, H, c + 2)
        if flag != 0:
            nc = c + 1
        else:
            nc = d - 1
            if a < n:
                ta = _fifo_arrival(st, g, h + a)
                if ta < nc:
                    nc = ta
            if nc <= c:
                nc = c + 1
        if nc >= t_end:
            break
        c = nc
    st.fifo_head[_u(g)] = h
    st.fifo_len[_u(g)] = n
    st.fifo_arr[_u(g)] = a
    st.offer_pend[_u(g)] = flag
    st.ch_next[_u(g)] = d
    return nwb


@nb.njit(cache=True, inline="always", _nrt=False)
def _fifo_arrival(st, g, k):
    """Arrival cycle of the request at ring position ``k`` (< twice the capacity: wrapped
    here) of channel ``g``'s FIFO."""
    k = dk._wrap(k, st.fifo.shape[1] >> 1)
    return st.fifo[_u(g), _u(2 * k + 1)]


@nb.njit(cache=True, inline="always", _nrt=False)
def _next_arrival(st, g):
    """Arrival cycle of the first request in channel ``g``'s FIFO that its controller has
    not seen yet (INF if none)."""
    a = st.fifo_arr[_u(g)]
    if a >= st.fifo_len[_u(g)]:
        return INF
    return _fifo_arrival(st, g, st.fifo_head[_u(g)] + a)


@nb.njit(cache=True, _nrt=False)
def _channels_window(pg, st, params1, HH, t, t_end):
    """Every channel's part of cycles ``t .. t_end - 1`` (in channel order), then the reads
    they served join the ring in (completion cycle, channel) order -- the order of a
    cycle-by-cycle run, which ticks the channels of a cycle in channel order. Returns True if
    a channel is to offer its FIFO heads at ``t_end``."""
    G = HH.shape[0]
    dne = st.ch_next
    nwb = np.int64(0)
    dmin = INF
    pending = False
    for g in range(G):
        d = dne[_u(g)]
        ta = _next_arrival(st, g)
        if d <= t_end or st.offer_pend[_u(g)] != 0 or ta < t_end:
            nwb = _channel_window(pg, st, params1, HH[g], g, t, t_end, nwb)
            d = dne[_u(g)]
            ta = _next_arrival(st, g)
            if st.offer_pend[_u(g)] != 0:
                pending = True
        if d < dmin:
            dmin = d
        if ta < dmin - 1:           # (an arrival at ta is handled in the channel's cycle ta)
            dmin = ta + 1
    st.scal[SC_DMIN] = dmin
    if nwb == 0:
        return pending
    # stable counting sort by completion cycle (all within t_end - t cycles of each other)
    NR = st.done_req.shape[0]
    cnt = st.wb_cnt
    base = st.wb_cyc[0]
    for i in range(1, nwb):
        if st.wb_cyc[_u(i)] < base:
            base = st.wb_cyc[_u(i)]
    span = t_end - t + 1
    for j in range(span + 1):
        cnt[_u(j)] = 0
    for i in range(nwb):
        cnt[_u(st.wb_cyc[_u(i)] - base + 1)] += 1
    for j in range(span):
        cnt[_u(j + 1)] += cnt[_u(j)]
    k0 = st.scal[SC_DHEAD] + st.scal[SC_DLEN]
    for i in range(nwb):
        j = st.wb_cyc[_u(i)] - base
        k = k0 + cnt[_u(j)]
        cnt[_u(j)] += 1
        if k >= NR:
            k -= NR
        st.done_req[_u(k)] = st.wb_req[_u(i)]
        st.done_cyc[_u(k)] = st.wb_cyc[_u(i)]
    st.scal[SC_DLEN] += nwb
    return pending


@nb.njit(cache=True, _nrt=False)
def _run_chunk(pg, st, cf, ci, params, params1, HH, open_arrivals, t_stop, done_stop):
    """Advance until cycle ``t_stop``, ``done_stop`` queries done, or everything done.

    ``params`` is the memory system of one instance (its address mapping places requests);
    ``HH[g]`` is the controller state (``dram.kernel.State.heap``) of global channel ``g``, a
    one-channel memory system of ``params1``. Returns 1 when every query has completed, else 0.

    Time advances in windows of at most ``ci[CI_WIN]`` cycles (the read latency or less): the
    engine's part of the window first, then each channel's part in turn (module docstring).
    """
    Q = st.q_done.shape[0]
    L = ci[CI_WIN]
    t = st.scal[SC_T]
    while True:
        if st.scal[SC_DONE] >= Q:
            st.scal[SC_T] = t
            return 1
        if t >= t_stop or st.scal[SC_DONE] >= done_stop:
            st.scal[SC_T] = t
            return 0
        t_end = min(t + L, t_stop)
        t_end = _engine_window(pg, st, cf, ci, params, open_arrivals, t, t_end)
        offers_pending = _channels_window(pg, st, params1, HH, t, t_end)
        if st.scal[SC_DONE] >= Q:
            st.scal[SC_T] = t_end
            return 1
        # the next window starts at the first cycle with anything to do
        nt = t_end
        if not offers_pending:
            nt = _next_work(st, ci, open_arrivals, min(st.scal[SC_DMIN], _next_done(st)) - 1)
        if nt < t_end:
            nt = t_end
        if nt > t_stop:
            nt = t_stop
        t = nt


def request_slots(pg: Program, pool_sizes: np.ndarray) -> int:
    """Request slots of the engine state: per pool, its contexts (at most one per task) x the
    largest in-flight limit of its MEM steps."""
    T = pg.task_query.shape[0]
    max_mlp = _max_mlp_per_pool(pg.task_pool, pg.task_step_ptr, pg.step_class, pg.cls_kind,
                                pg.cls_mlp, pool_sizes.shape[0])
    return int(max(1, (np.minimum(pool_sizes, T) * max_mlp).sum()))


@nb.njit(cache=True)
def _max_mlp_per_pool(task_pool, task_step_ptr, step_class, cls_kind, cls_mlp, num_pools):
    """Largest in-flight limit of the MEM steps of each pool's tasks (0 = none): one pass over
    the program's steps (numpy's masks and repeats took 0.25 s for 10,000 queries)."""
    out = np.zeros(num_pools, np.int64)
    for t in range(task_pool.shape[0]):
        p = task_pool[t]
        for s in range(task_step_ptr[t], task_step_ptr[t + 1]):
            c = step_class[s]
            if cls_kind[c] == STEP_MEM and cls_mlp[c] > out[p]:
                out[p] = cls_mlp[c]
    return out


def timeline_records(pg: Program, timeline_queries: int) -> int:
    """Records of the timeline's log for the first ``timeline_queries`` queries of ``pg``:
    their steps (one record each), at most :data:`TL_MAX_RECORDS`; 0 for none."""
    n = min(max(int(timeline_queries), 0), pg.num_queries)
    if n == 0:
        return 0
    return int(min(pg.task_step_ptr[pg.query_task_ptr[n]], TL_MAX_RECORDS))


def _state_shapes(pg: Program, pool_sizes: np.ndarray, num_instances: int, n_channels: int,
                  num_devices: int, NR: int, timeline_queries: int = 0) -> dict:
    """Shape and dtype of every array of :class:`EngineState` for these arguments (sizes
    derived from the program; ``NR`` = :func:`request_slots`; ``timeline_queries``: the log
    of :func:`timeline_records`): what :func:`new_engine_state` allocates and
    :func:`engine_state_bytes` counts."""
    T = int(pg.task_query.shape[0])
    Q = int(pg.num_queries)
    P = int(pool_sizes.shape[0])
    NC = int(pool_sizes.sum())
    NH = NR + NC + 16
    G = int(num_instances) * int(n_channels)
    D, I = int(num_devices), int(num_instances)
    i8, f8 = np.int64, np.float64
    sizes = dict(
        scal=N_SC, heap=2 * NH, req_rec=NR * RW, req_free=NR,
        fifo=(G, 2 * NR), fifo_head=G, fifo_len=G, fifo_arr=G, offer_pend=G,
        ch_next=G,
        ctx_pool=NC, ctx_task=NC, ctx_rec=NC * CW, ctx_cpu=NC * CW,
        ctx_step_start=NC, pool_free=NC, pool_off=P + 1, pool_nfree=P, rq=(P, max(T, 1)),
        rq_head=P, rq_len=P,
        task_left=T, task_ready=T, task_start=T, task_end=T, task_crit=T, task_bd=(T, 5),
        q_arrival=Q, q_done=Q, q_left=Q, link_free=(D + 1, 2), link_busy=(D + 1, 2),
        link_bytes=(D + 1, 2), inst_reqs=I, inst_local=I, wb_req=NR, wb_cyc=NR,
        wb_cnt=WIN_MAX + 2,
        done_req=NR, done_cyc=NR, rsp_req=NR, rsp_cyc=NR, rsp_due=NR,
        tl_log=TLW * timeline_records(pg, timeline_queries))
    floats = ("ctx_cpu", "link_free", "link_busy", "link_bytes")
    if set(sizes) != set(EngineState._fields):
        raise AssertionError("cosmos.engine._state_shapes does not match EngineState's fields")
    return {k: ((v,) if isinstance(v, int) else v, f8 if k in floats else i8)
            for k, v in sizes.items()}


# record arrays allocated 64-byte aligned (8 words more), and float views of them
_ALIGNED = ("req_rec", "ctx_rec")
_VIEWS = {"ctx_cpu": "ctx_rec"}


def _aligned_zeros(n: int) -> np.ndarray:
    """int64 zeros starting at a 64-byte boundary (a record then fills one cache line)."""
    buf = np.zeros(n + 8, np.int64)
    off = (-buf.ctypes.data % 64) // 8
    return buf[off:off + n]


def new_engine_state(pg: Program, pool_sizes: np.ndarray, num_instances: int,
                     n_channels: int, num_devices: int, timeline_queries: int = 0
                     ) -> EngineState:
    """Allocate the engine state for program ``pg`` (shapes: :func:`_state_shapes`); with
    ``timeline_queries`` N > 0, the engine logs the steps of the first N queries
    (``tl_log``, cosmos.timeline)."""
    T = pg.task_query.shape[0]
    if T and np.any(np.diff(pg.task_step_ptr) < 1):
        raise ValueError("program has a task without steps (the engine needs >= 1 per task)")
    NR = request_slots(pg, pool_sizes)
    NC = int(pool_sizes.sum())
    if NR >= MAX_IDS or NC >= MAX_IDS:
        raise ValueError(f"too many request slots ({NR}) or contexts ({NC}) for the engine "
                         f"(limit {MAX_IDS})")
    shapes = _state_shapes(pg, pool_sizes, num_instances, n_channels, num_devices, NR,
                           timeline_queries)
    a = {k: (_aligned_zeros(shape[0]) if k in _ALIGNED else np.zeros(shape, dtype))
         for k, (shape, dtype) in shapes.items() if k not in _VIEWS}
    for k, base in _VIEWS.items():
        a[k] = a[base].view(shapes[k][1])               # the same memory (float fields)
    P = pool_sizes.shape[0]
    a["req_free"][:] = np.arange(NR - 1, -1, -1)     # a stack: the free ids are [:SC_REQFREE]
    a["scal"][SC_REQFREE] = NR
    a["pool_off"][1:] = np.cumsum(pool_sizes)
    a["ctx_pool"][:] = np.repeat(np.arange(P), pool_sizes)
    # free stacks: pop from the end, so reverse within each pool to hand out low ids first
    for p in range(P):
        lo, hi = a["pool_off"][p], a["pool_off"][p + 1]
        a["pool_free"][lo:hi] = np.arange(hi - 1, lo - 1, -1)
    a["pool_nfree"][:] = pool_sizes
    a["task_left"][:] = pg.task_npred
    a["q_left"][:] = np.diff(pg.query_task_ptr)
    if a["tl_log"].shape[0] > 0:        # the tasks of the first N queries are logged
        a["scal"][SC_TL_TASKS] = pg.query_task_ptr[min(int(timeline_queries), pg.num_queries)]
    for k in ("ctx_task", "task_ready", "task_start", "task_end", "task_crit", "q_arrival",
              "q_done"):
        a[k][:] = -1
    return EngineState(**a)


def engine_state_bytes(pg: Program, pool_sizes: np.ndarray, num_instances: int,
                       n_channels: int, num_devices: int, timeline_queries: int = 0
                       ) -> tuple[int, int]:
    """(bytes, request slots) of the state :func:`new_engine_state` would allocate for these
    arguments, without allocating it."""
    NR = request_slots(pg, pool_sizes)
    shapes = _state_shapes(pg, pool_sizes, num_instances, n_channels, num_devices, NR,
                           timeline_queries)
    nbytes = sum((int(np.prod(shape)) + (8 if k in _ALIGNED else 0)) * np.dtype(dt).itemsize
                 for k, (shape, dt) in shapes.items() if k not in _VIEWS)
    return nbytes, NR


@nb.njit(cache=True, _nrt=False)
def _admit_initial(pg, st, cf, ci, params, count):
    """Closed loop: admit the first ``count`` queries at cycle 0."""
    Q = st.q_done.shape[0]
    for _ in range(count):
        q = st.scal[SC_NEXTQ]
        if q >= Q:
            break
        st.scal[SC_NEXTQ] = q + 1
        _admit(pg, st, cf, ci, params, q, np.int64(0))
