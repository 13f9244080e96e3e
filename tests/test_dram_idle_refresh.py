"""Idle time with refresh in closed form (dram.kernel.advance_channel), the replay driver in
bounded calls (Ctrl-C), and the Python replay API's validation."""

import dataclasses
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

import dram.openloop as O
from cosmos_common import UserError
from dram import DRAMConfig, replay
from dram import kernel as K

ROOT = Path(__file__).resolve().parents[1]
NREFI = DRAMConfig().timing["nREFI"]


def _bursty(seed, n_per_burst, gaps, channels):
    """Bursts of random requests (reads and writes, some to the same lines) separated by
    idle gaps of the given lengths."""
    rng = np.random.default_rng(seed)
    addr, w, arr = [], [], []
    t = 0
    for b, gap in enumerate([0] + list(gaps)):
        t += int(gap)
        n = n_per_burst
        lines = rng.integers(0, 1 << 20, n) * 64 * channels + rng.integers(0, channels, n) * 64
        lines[::7] = lines[0]                          # some forwarding / coalescing
        addr.append(lines)
        w.append(rng.integers(0, 2, n))
        arr.append(t + np.sort(rng.integers(0, 4 * n, n)))
        t = int(arr[-1][-1]) + 1
    return {"addr": np.concatenate(addr).astype(np.int64), "is_write": np.concatenate(w),
            "arrival": np.concatenate(arr).astype(np.int64)}


def _same(a, b):
    np.testing.assert_array_equal(a.accept, b.accept)
    np.testing.assert_array_equal(a.completion, b.completion)
    for k in a.stats:
        if k == "driver_iterations":         # how the driver got there, not a model figure
            continue
        va, vb = a.stats[k], b.stats[k]
        if isinstance(va, float) and np.isnan(va):
            assert np.isnan(vb), k
        else:
            assert va == vb, k


@pytest.mark.parametrize("channels,ranks", [(1, 1), (1, 2), (4, 2), (2, 4)])
@pytest.mark.parametrize("refresh", [True, False])
def test_jumping_idle_gaps_equals_stepping(channels, ranks, refresh):
    cfg = DRAMConfig(channels=channels, ranks=ranks, refresh=refresh)
    tr = _bursty(channels * 10 + ranks, 150, [10 ** 5, 10 ** 6, 10 ** 7 + 123, 3 * NREFI + 1],
                 channels)
    a = replay(tr, cfg)
    b = replay(tr, cfg, jump_idle=False)
    _same(a, b)
    if refresh:        # every channel refreshed through the whole run
        assert a.stats["refresh_cmds"] >= (a.stats["total_cycles"] // NREFI - 1) * channels * ranks


def test_jumping_equals_every_cycle_stepping():
    cfg = DRAMConfig(channels=2, timing_overrides=(("nREFI", 1500),))
    tr = _bursty(3, 60, [20_000, 100_000], 2)
    _same(replay(tr, cfg), replay(tr, cfg, every_cycle=True))


@pytest.mark.parametrize("overrides,prio,row_policy,log", [
    ((), 1568, "open", 0),
    ((("nREFI", 1500),), 3, "closed", 0),        # ring of 3 entries, 2 REFab per period
    ((), 1, "open", 0),                           # ring smaller than the ranks
    ((), 1568, "open", 40),                       # command log fills, then jumps
    ((), 1568, "open", 10 ** 6),                  # command log never full: steps
])
def test_advance_channel_state_is_bit_identical(overrides, prio, row_policy, log):
    cfg = DRAMConfig(channels=2, ranks=2, timing_overrides=overrides,
                     priority_queue_depth=prio, row_policy=row_policy)
    p = cfg.resolve()
    nrefi = p.nREFI
    s = K.new_state(p, 1, log_capacity=log)
    rng = np.random.default_rng(5)
    ids = np.zeros(64, np.int64)
    cyc = np.zeros(64, np.int64)
    for i in range(24):                            # some traffic leaves rows open, then idle
        K.offer(p, s, 0, i, int(rng.integers(0, 1 << 28)) * 64, int(i % 3 == 0), 0, i)
        K.tick(p, s, i + 1)
        K.pop_completions(s, ids, cyc)
    K.ticks_until(p, s, 25, 3000)
    K.pop_completions(s, ids, cyc)
    scratch = K.jump_scratch(p)
    for g in range(2):
        for end in (3000 + 2 * nrefi, 3000 + 5 * nrefi + 17, 3000 + 1000 * nrefi + 1,
                    3000 + 123_457 * nrefi - 1):
            h1 = s.heap.copy()
            h2 = s.heap.copy()
            r1, n1 = K.advance_channel(p, h1, g, 3001, end, scratch, True, 1 << 62)
            r2, n2 = K.advance_channel(p, h2, g, 3001, end, scratch, False, 1 << 62)
            assert r1 == r2 == end + 1
            np.testing.assert_array_equal(h1, h2)
            if end - 3000 > 1000 * nrefi and log < 10 ** 6 and prio >= 2:
                assert n1 < n2 / 100               # the closed form did the work
            # (with a 1-entry ring only rank 0 is ever refreshed: rank 1's rows stay open,
            # the channel never looks idle, and it is stepped)


def test_advance_channel_resumes_after_a_tick_budget():
    p = DRAMConfig(channels=1).resolve()
    s = K.new_state(p, 1)
    K.offer(p, s, 0, 0, 1 << 20, 0, 0, 0)
    K.ticks_until(p, s, 1, 500)
    scratch = K.jump_scratch(p)
    end = 500 + 40 * p.nREFI + 11
    whole = s.heap.copy()
    K.advance_channel(p, whole, 0, 501, end, scratch, False, 1 << 62)
    part = s.heap.copy()
    c, calls = 501, 0
    while c <= end:
        c, n = K.advance_channel(p, part, 0, c, end, scratch, False, 7)
        assert n <= 7
        calls += 1
    assert calls > 10
    np.testing.assert_array_equal(part, whole)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10 ** 6),
       gaps=st.lists(st.integers(0, 40 * 9375), min_size=1, max_size=4),
       channels=st.sampled_from([1, 2, 4]), ranks=st.sampled_from([1, 2, 3]),
       refresh=st.booleans(), n=st.integers(1, 12))
def test_random_gaps_jump_equals_stepping(seed, gaps, channels, ranks, refresh, n):
    cfg = DRAMConfig(channels=channels, ranks=ranks, refresh=refresh)
    tr = _bursty(seed, n, gaps, channels)
    _same(replay(tr, cfg), replay(tr, cfg, jump_idle=False))


def test_gap_of_2_48_cycles_is_fast_and_exact():
    """A 2^48-cycle gap costs milliseconds. Its result is checked against stepping on the
    gap of the same phase modulo nREFI that is only a few periods long: after the gap the
    channel is in the same state shifted in time, so every latency is the same and the
    refresh count differs by exactly the whole periods removed, times ranks x channels."""
    cfg = DRAMConfig(channels=4, ranks=2)
    gap = 1 << 48
    small = gap % NREFI + 20 * NREFI
    tr = _bursty(11, 100, [gap, 5000], 4)
    ts = _bursty(11, 100, [small, 5000], 4)
    replay(ts, cfg)                                # compiled before the clock starts
    t0 = time.perf_counter()
    big = replay(tr, cfg)
    assert time.perf_counter() - t0 < 2.0
    ref = replay(ts, cfg, jump_idle=False)
    np.testing.assert_array_equal(big.latency, ref.latency)
    np.testing.assert_array_equal(big.accept - big.arrival, ref.accept - ref.arrival)
    assert big.stats["refresh_cmds"] - ref.stats["refresh_cmds"] == \
        (gap - small) // NREFI * 2 * 4
    for k in ("read_row_hits", "read_row_misses", "write_row_conflicts", "reads_served",
              "n_ACT", "n_PREpb", "n_PREab", "reads_forwarded", "writes_coalesced"):
        assert big.stats[k] == ref.stats[k], k


def test_cutting_the_run_into_calls_changes_nothing(monkeypatch):
    cfg = DRAMConfig(channels=2)
    tr = _bursty(8, 300, [10 ** 6, 7], 2)
    whole = replay(tr, cfg)
    monkeypatch.setattr(O, "WORK_PER_CALL", 5)
    calls = []
    cut = replay(tr, cfg, chunk=3, progress=lambda d, n: calls.append(d), threads=1)
    assert len(calls) > 100
    _same(whole, cut)
    _same(whole, replay(tr, cfg, chunk=3, threads=2))


def test_compile_time_is_reported_apart():
    r = replay(_bursty(1, 20, [], 1), DRAMConfig(channels=1))
    assert r.compile_s >= 0 and r.wall_s >= 0
    assert r.wall_s < 1.0          # compiled before: the simulation of 20 requests is quick


# ---------------------------------------------------------------- the Python API validates
def test_replay_refuses_addresses_beyond_capacity_like_the_cli(tmp_path):
    cfg = DRAMConfig(channels=1)                  # 32 GiB
    cap = cfg.capacity_bytes
    tr = {"addr": np.array([0, cap + 128, cap * 3]), "is_write": np.zeros(3),
          "arrival": np.arange(3)}
    with pytest.raises(UserError, match=r"trace.addr\[1\]: address 0x[0-9a-f]+ is beyond the "
                                        r"memory's capacity of 32 GiB .*2 of 3 requests"):
        replay(tr, cfg)
    wrapped = replay(tr, cfg, wrap=True)
    mod = replay(dict(tr, addr=tr["addr"] % cap), cfg)
    np.testing.assert_array_equal(wrapped.completion, mod.completion)
    replay(tr, cfg, wrap="mapper")
    with pytest.raises(UserError, match="wrap="):
        replay(tr, cfg, wrap="yes")
    # a trace file read without a capacity: the error names its file and line, as the CLI
    from dram.traces import read_trace
    f = tmp_path / "t.trace"
    f.write_text(f"0x0 READ 0\n0x{cap:x} READ 5\n")
    with pytest.raises(ValueError, match=r"t.trace.*2.*beyond the memory's capacity"):
        replay(read_trace(f), cfg)


@pytest.mark.parametrize("name,value,ok", [
    ("nCL", 0, False), ("nRCD", 0, False), ("nBL", 0, False), ("nREFI", 0, False),
    ("nRFC", 0, False), ("nFAW", 0, False), ("nCS", 0, True), ("nPPD", 0, True),
    ("nWTRS", 0, True), ("nWTRL", 0, True), ("nCL", 1, True),
])
def test_timing_lower_bounds(name, value, ok):
    cfg = DRAMConfig(timing_overrides=((name, value),))
    if ok:
        cfg.resolve()
    else:
        with pytest.raises(UserError, match=rf"timing_overrides: {name}={value}, expected at "
                                            rf"least 1 cycle"):
            cfg.validate()


def test_nrc_must_cover_nras_plus_nrp():
    with pytest.raises(UserError, match=r"nRC=100 is below nRAS \+ nRP = 77 \+ 34"):
        DRAMConfig(timing_overrides=(("nRC", 100),)).validate()
    DRAMConfig(timing_overrides=(("nRC", 111),)).validate()
    for std in ("DDR5_3200AN", "DDR5_4800AN", "DDR5_6400AN"):      # every preset is valid
        DRAMConfig(standard=std).validate()


def test_cli_refuses_zero_ncl(tmp_path):
    f = tmp_path / "t.trace"
    f.write_text("0x0 READ 0\n")
    p = subprocess.run([sys.executable, "-m", "cosmos", "dram", "replay", str(f), "--timing",
                        "nCL=0"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2
    assert p.stderr.strip().count("\n") == 0 and "nCL=0, expected at least 1 cycle" in p.stderr


# ---------------------------------------------------------------- Ctrl-C
_SLOW_CLI = """
import sys
import dram.openloop as o
orig = o.replay
def slow(trace, config=None, progress=None, **kw):
    said = []
    def prog(done, total):
        if not said:
            said.append(1)
            print("running", flush=True)
        if progress:
            progress(done, total)
    return orig(trace, config, prog, jump_idle=False, **kw)   # hours of stepping
o.replay = slow
from cosmos.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_ctrl_c_stops_dram_replay_within_a_second(tmp_path):
    trace = tmp_path / "gap.trace"
    trace.write_text(f"0x0 READ 0\n0x40 READ {1 << 44}\n")
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_CLI, "dram", "replay", str(trace),
                             "--channels", "1", "--out", str(out)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()          # compiled, and simulating
        assert line.strip() == "running", proc.stderr.read()
        time.sleep(0.3)
        t0 = time.perf_counter()
        proc.send_signal(signal.SIGINT)
        err = []
        for line in proc.stderr:               # the run stops: it says so on one line
            err.append(line)
            if "interrupted" in line:
                break
        stopped_s = time.perf_counter() - t0
        rc = proc.wait(timeout=10)             # (then the interpreter shuts down)
    finally:
        if proc.poll() is None:
            proc.kill()
    err = "".join(err) + proc.stderr.read()
    assert rc == 130
    assert stopped_s < 1.0
    assert err.strip().splitlines()[-1] == "cosmos dram: interrupted"
    assert "Traceback" not in err
    # nothing partial written: the folder made by --out holds only its INCOMPLETE marker,
    # which says the run was interrupted (the output rule, cosmos_common.outdir)
    assert sorted(p.name for p in out.iterdir()) == ["INCOMPLETE"]
    assert "interrupted" in (out / "INCOMPLETE").read_text()


def _layout_by_argsort(params, addr, is_write, rank_local, arrival):
    """The replay's per-request layout built the plain way: K.map_all, then stable sorts."""
    n, C = addr.shape[0], params.n_channels
    mapped = np.zeros((n, 5), np.int64)
    K.map_all(params, addr, mapped)
    ch = mapped[:, 0]
    fifo = ch * 2 + is_write.astype(np.int64)
    order = np.argsort(fifo, kind="stable")
    chan_list = np.argsort(ch, kind="stable")
    rec = np.stack([order, addr[order]], axis=1)
    flags = is_write[order] | (rank_local[order] << 1)
    fifo_ptr = np.concatenate([[0], np.cumsum(np.bincount(fifo, minlength=2 * C))])
    chan_ptr = np.concatenate([[0], np.cumsum(np.bincount(ch, minlength=C))])
    return ch, rec, flags, arrival[chan_list], fifo[chan_list], fifo_ptr, chan_ptr


@pytest.mark.parametrize("channels", [1, 3, 4])
@pytest.mark.parametrize("mapping", ["RoBaRaCoCh", "ChRaBaRoCo", "RoBaCoRaCh"])
def test_prepare_lays_requests_out_as_stable_sorts_do(channels, mapping):
    """_prepare's counting sort (shifts and masks when every radix is a power of two, the
    kernel's divisions otherwise) gives the layout of map_all plus stable argsorts."""
    cfg = DRAMConfig(channels=channels, mapping=mapping, ranks=2)
    params = cfg.resolve()
    assert (O._field_bits(params) is None) == (channels == 3)
    rng = np.random.default_rng(channels)
    n = 3000
    # beyond the capacity too (wrap="mapper": the mapper drops the bits above its fields)
    addr = rng.integers(0, 3 * cfg.capacity_bytes, n).astype(np.int64) & ~63
    is_write = rng.integers(0, 2, n).astype(np.uint8)       # as _check_trace passes them
    rank_local = rng.integers(0, 2, n).astype(np.uint8)
    arrival = np.sort(rng.integers(0, 10 * n, n)).astype(np.int64)
    want = _layout_by_argsort(params, addr, is_write, rank_local, arrival)
    bits = O._field_bits(params)
    for pow2 in ([True, False] if bits is not None else [False]):
        got = (np.empty(n, np.int16), np.empty((n, 2), np.int64), np.empty(n, np.uint8),
               np.empty(n, np.int64), np.empty(n, np.int16),
               np.zeros(2 * channels + 1, np.int64), np.zeros(channels + 1, np.int64))
        b12 = bits if bits is not None else np.zeros(12, np.int64)
        O._prepare(params, addr, is_write, rank_local, arrival, *got,
                   np.empty(3 * channels, np.int64), b12, pow2)
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)
        # the driver maps each address when it offers it: the fields of map_all
        mapped = np.zeros((n, 5), np.int64)
        K.map_all(params, addr, mapped)
        for i in range(0, n, 7):
            c, rank, bg, bank, row = O._map(params, addr[i], b12, pow2)
            assert (c, rank, bg, row) == tuple(mapped[i, [0, 1, 2, 3]])
            assert (rank * params.n_bg + bg) * params.n_banks + bank == mapped[i, 4]
