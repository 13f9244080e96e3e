"""The closed-loop API (dram.kernel) from jitted code, event skipping, and rank-local accesses."""

import numpy as np
from numba import njit

import dram.config
from dram import DRAMConfig, replay
from dram import kernel as K
from dram.jitcache import drop_stale

# _chain inlines the kernel: drop its cached machine code when the kernel changes
drop_stale(__file__, K.__file__, dram.config.__file__)


@njit(cache=True)
def _chain(params, state, addr, is_write, delay, every_cycle):
    """Closed loop: request i is offered `delay` cycles after request i-1 completed (the first
    at cycle 0), into instance i % instances. Ticks every cycle or jumps with next_event."""
    n = addr.shape[0]
    instances = state.heap[K.H_G] // params.n_channels
    done = np.full(n, -1, np.int64)
    ids = np.zeros(64, np.int64)
    cyc = np.zeros(64, np.int64)
    t = 0
    i = 0
    ready_at = 0
    while i < n or (n > 0 and done[n - 1] < 0):
        if i < n and t >= ready_at:
            if K.offer(params, state, i % instances, i, addr[i], is_write[i], 0, t):
                i += 1
                ready_at = K.INF
        K.tick(params, state, t + 1)
        m = K.pop_completions(state, ids, cyc)
        for k in range(m):
            done[ids[k]] = cyc[k]
            ready_at = cyc[k] + delay
        if every_cycle:
            t += 1
        else:
            nxt = K.next_event(params, state, t + 2) - 1
            if i < n and ready_at < nxt:
                nxt = ready_at
            t = max(t + 1, nxt)
    return done


def _random_addresses(n, seed, channels):
    rng = np.random.default_rng(seed)
    return rng.integers(0, (channels * 32) << 24, n, dtype=np.int64) * 64 % (channels << 35)


def test_closed_loop_event_skipping_equals_every_cycle():
    cfg = DRAMConfig(channels=2)
    p = cfg.resolve()
    addr = _random_addresses(400, 3, 2)
    w = (np.arange(400) % 3 == 0).astype(np.int64)
    a = _chain(p, K.new_state(p, instances=2), addr, w, 5, True)
    b = _chain(p, K.new_state(p, instances=2), addr, w, 5, False)
    np.testing.assert_array_equal(a, b)
    assert (a > 0).all()


def test_closed_loop_matches_open_loop_replay():
    # A dependent chain offered at (completion of the previous + delay) is the same as an open
    # loop trace with those arrival cycles: one request in flight at a time.
    cfg = DRAMConfig(channels=1, refresh=True)
    p = cfg.resolve()
    addr = _random_addresses(300, 4, 1)
    w = np.zeros(300, np.int64)
    done = _chain(p, K.new_state(p), addr, w, 7, False)
    arrival = np.r_[0, done[:-1] + 7]
    res = replay({"addr": addr, "is_write": w, "arrival": arrival}, cfg)
    np.testing.assert_array_equal(res.completion, done)
    phase = res.arrival % 9375                            # away from refreshes: unloaded cases
    assert set(np.unique(res.latency[(phase > 1000) & (phase < 9000)])) <= {43, 77, 110}


def test_instances_are_independent():
    p = DRAMConfig(channels=1).resolve()
    s = K.new_state(p, instances=3)
    assert K.offer(p, s, 2, 7, 0, 0, 0, 0)
    K.tick(p, s, 1)
    events = []                                        # ACT at 1; the channel re-checks a few
    c = K.next_event(p, s, 2)                          # times (write-mode update, bus free),
    while c < 35:                                      # then sleeps until RD is ready at 35
        events.append(c)
        K.tick(p, s, c)
        c = K.next_event(p, s, c + 1)
    assert c == 35 and len(events) <= 3
    assert K.next_event(p, K.new_state(p), 0) == 9375  # idle: the first refresh
    v = K.views(s)
    assert v["stats"][2, K.S_CMD0 + K.ACT] == 1 and v["stats"][:2].sum() == 0
    t = K.ticks_until(p, s, 2, 100)
    assert t == 101
    ids, cyc = np.zeros(4, np.int64), np.zeros(4, np.int64)
    assert K.pop_completions(s, ids, cyc) == 1 and (ids[0], cyc[0]) == (7, 77)


@njit(cache=True)
def _window(params, state, addr, rank_local, window, delay):
    """Reads only, up to ``window`` in flight: request i may be offered once request
    i - window has completed (at its completion cycle + ``delay``). Ticks every cycle.
    Returns the completion cycles and how many completions were popped before their cycle."""
    n = addr.shape[0]
    instances = state.heap[K.H_G] // params.n_channels
    done = np.full(n, -1, np.int64)
    ids = np.zeros(64, np.int64)
    cyc = np.zeros(64, np.int64)
    early = 0
    left = n
    t = 0
    i = 0
    while left > 0:
        while i < n and (i < window or (done[i - window] >= 0 and
                                        done[i - window] + delay <= t)):
            if not K.offer(params, state, i % instances, i, addr[i], 0, rank_local[i], t):
                break
            i += 1
        K.tick(params, state, t + 1)
        m = K.pop_completions(state, ids, cyc)
        for k in range(m):
            done[ids[k]] = cyc[k]
            early += cyc[k] > t + 1
        left -= m
        t += 1
    return done, early


def test_direct_reads_complete_at_the_same_cycles():
    # direct_reads (used by the system engine): a served read is handed over at issue with
    # its completion cycle; the cycles are those of the pending-read path, request by request.
    cfg = DRAMConfig(channels=2, ranks=2)
    p = cfg.resolve()
    addr = _random_addresses(3000, 5, 2)
    local = (np.arange(3000) % 4 == 1).astype(np.int64)
    a, early_a = _window(p, K.new_state(p, instances=2), addr, local, 48, 3)
    b, early_b = _window(p, K.new_state(p, instances=2, direct_reads=True), addr, local, 48, 3)
    np.testing.assert_array_equal(a, b)
    assert (a > 0).all()
    assert early_a == 0 and early_b == 3000               # all handed over read_latency early


def _stream(n, rank_local):
    # RoCoBaRaCh on one channel: consecutive lines alternate ranks, then bank groups, so each
    # rank can stream one burst per nCCD_S; requests available at once (untimed).
    addr = np.arange(n, dtype=np.int64) * 64
    return {"addr": addr, "is_write": np.zeros(n, np.int64), "arrival": None,
            "rank_local": np.full(n, rank_local)}


def test_rank_local_reads_stream_twice_the_channel_bandwidth():
    cfg = DRAMConfig(channels=1, ranks=2, mapping="RoCoBaRaCh", refresh=False)
    n = 20000
    normal = replay(_stream(n, 0), cfg)
    local = replay(_stream(n, 1), cfg)
    peak = cfg.peak_bandwidth_GBps                        # 19.2 GB/s: one burst per nBL
    bw_normal = normal.stats["achieved_bw_GBps"]
    bw_local = local.stats["achieved_bw_GBps"]
    assert bw_normal <= peak * 1.001
    assert bw_local > 1.8 * peak                          # two ranks, each near the peak
    assert bw_local / bw_normal > 1.8
    assert local.stats["data_bus_busy_cycles"] == 0 and local.stats["n_RD_L"] == n
    rb = np.array(local.stats["rank_busy_fraction"][0])
    assert (rb > 0.85).all()


def test_open_loop_event_skipping_equals_every_cycle_evaluation():
    # Loaded read/write traffic with refresh every 1500 cycles and small buffers (write-mode
    # switches, backlog, refresh blocking): jumping over idle cycles and skipping channels
    # until their next possible change gives the same result as evaluating every channel in
    # every cycle (what Ramulator does), and so does reusing the scheduler memo (the decision
    # an evaluation found for its wake-up cycle), which every_cycle disables.
    rng = np.random.default_rng(11)
    n = 3000
    addr = rng.integers(0, 1 << 22, n, dtype=np.int64) * 64 * 37 % (1 << 34)
    trace = {"addr": addr, "is_write": (rng.random(n) < 0.35).astype(np.int64),
             "arrival": np.cumsum(rng.exponential(3.0, n)).astype(np.int64)}
    for sched, pol in (("FRFCFS", "open"), ("FRFCFS_RowHit", "closed"), ("FCFS", "open")):
        cfg = DRAMConfig(channels=2, read_queue_depth=8, write_queue_depth=8, scheduler=sched,
                         row_policy=pol, timing_overrides=(("nREFI", 1500),))
        a = replay(trace, cfg, command_log=100_000)
        b = replay(trace, cfg, command_log=100_000, every_cycle=True)
        np.testing.assert_array_equal(a.accept, b.accept)
        np.testing.assert_array_equal(a.completion, b.completion)
        np.testing.assert_array_equal(a.command_log, b.command_log)


def test_open_loop_reoffers_a_refused_read_after_a_later_write_to_its_address():
    # Cycle 5: the read of W is refused (the one-entry read buffer holds the read of row 1,
    # which waits behind the open row 0), then the write of W (later in the file) is accepted.
    # In cycle 6 the read is offered again and forwarded from the write buffer, as in every-
    # cycle stepping, although the controller's tick at 6 changes nothing (an earlier driver
    # waited for the next tick that did, and forwarded it at cycle 34).
    cfg = DRAMConfig(channels=1, ranks=1, read_queue_depth=1, write_queue_depth=8,
                     refresh=False)
    params = cfg.resolve()
    want = {(0, 0, 0): None, (0, 0, 1): None, (1, 1, 5): None}
    line = 0
    while any(v is None for v in want.values()):
        _, _, bg, bank, row, _ = K.map_address(params, line * 64)
        if want.get((bg, bank, row), 0) is None:
            want[(bg, bank, row)] = line * 64
        line += 1
    a0, a1, w = want[(0, 0, 0)], want[(0, 0, 1)], want[(1, 1, 5)]
    trace = {"addr": np.array([a0, a1, w, w], np.int64), "is_write": np.array([0, 0, 0, 1]),
             "arrival": np.array([0, 2, 5, 5], np.int64)}
    a = replay(trace, cfg)
    b = replay(trace, cfg, every_cycle=True)
    np.testing.assert_array_equal(a.accept, b.accept)
    np.testing.assert_array_equal(a.completion, b.completion)
    assert a.accept[2] == 6 and a.completion[2] == 7 and a.stats["reads_forwarded"] == 1


def test_replay_stays_callable_after_first_use():
    # the open-loop driver lives in dram.openloop, so using dram.replay never rebinds it
    import dram

    tr = {"addr": np.arange(4, dtype=np.uint64) * 64, "is_write": np.zeros(4, np.uint8),
          "arrival": np.arange(4, dtype=np.int64)}
    first = dram.replay(tr, DRAMConfig(channels=1))
    second = dram.replay(tr, DRAMConfig(channels=1))
    assert callable(dram.replay)
    np.testing.assert_array_equal(first.completion, second.completion)
