"""The open-loop replay on several threads (dram.openloop: one channel per thread at a time)
gives the results of one thread, request by request, statistics and command log included."""

import numpy as np
import pytest

from cosmos_common import UserError
from dram import DRAMConfig, replay, synth
from dram.openloop import lanes_for

from test_dram_idle_refresh import _bursty, _same


def _trace(pattern, channels, load, n, seed=5):
    t = synth.loaded(pattern, channels, load, seed=seed, n=n)
    return {"addr": t.addr, "is_write": t.is_write, "arrival": t.arrival}


@pytest.mark.parametrize("pattern,channels", [("random_rw", 4), ("stream_read", 2),
                                              ("anns", 8)])
def test_threads_change_nothing(pattern, channels):
    tr = _trace(pattern, channels, 0.8, 6000)
    cfg = DRAMConfig(channels=channels)
    one = replay(tr, cfg, threads=1, wrap=True, command_log=200)
    assert one.threads == 1
    for k in (2, 3):
        many = replay(tr, cfg, threads=k, wrap=True, command_log=200)
        assert many.threads == min(k, channels)
        _same(one, many)
        np.testing.assert_array_equal(one.command_log, many.command_log)
        assert many.stats["driver_iterations"] == one.stats["driver_iterations"]


def test_idle_gaps_and_channel_imbalance():
    # channel 0 gets most requests, long idle gaps between bursts (closed-form refresh)
    tr = _bursty(3, 400, [10 ** 6, 50, 3 * 10 ** 5], 4)
    tr["addr"][::3] &= ~np.int64(3 * 64)
    cfg = DRAMConfig(channels=4)
    _same(replay(tr, cfg, threads=1), replay(tr, cfg, threads=2))


def test_command_log_holds_the_first_commands_of_every_channel():
    """The log of the first N commands is the first N of the whole run's log, merged over
    channels by cycle (each channel runs apart, so each logs its own first N)."""
    tr = _trace("random_rw", 4, 0.7, 3000)
    cfg = DRAMConfig(channels=4)
    full = replay(tr, cfg, wrap=True, command_log=10 ** 6).command_log
    assert len(np.unique(full[:100, 1])) == 4          # every channel in the first 100
    for threads in (1, 2):
        head = replay(tr, cfg, wrap=True, command_log=100, threads=threads).command_log
        np.testing.assert_array_equal(head, full[:100])


def test_numba_setting_is_left_as_it_was():
    """The lanes run the kernel compiled before them; numba's SLP setting, switched on only
    around that compilation (dram.jitcache.vectorizing), is left as it was."""
    from numba.core import config

    before = getattr(config, "SLP_VECTORIZE", None)
    tr = _trace("random_rw", 4, 0.8, 3000)
    for _ in range(3):
        replay(tr, DRAMConfig(channels=4), wrap=True, threads=4)
    assert getattr(config, "SLP_VECTORIZE", None) == before


def test_an_error_in_a_thread_is_raised_and_stops_the_others():
    """dram.parallel.run_in_threads (the scanner's pieces, the replay's lanes): the first error
    is raised in the calling thread once every thread ended; the others see ``stop``."""
    import threading

    from dram.parallel import run_in_threads

    stop, seen = threading.Event(), []

    def fn(k):
        if k == 1:
            raise ValueError("piece 1")
        stop.wait(5)
        seen.append(stop.is_set())

    with pytest.raises(ValueError, match="piece 1"):
        run_in_threads(fn, 3, stop=stop)
    assert seen == [True, True]
    done = []
    run_in_threads(done.append, 4)
    assert sorted(done) == [0, 1, 2, 3]


def test_lanes_for():
    assert lanes_for(8, 4) == 4
    assert lanes_for(1, 4) == 1
    assert lanes_for(None, 1) == 1
    assert 1 <= lanes_for(None, 64) <= 64


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_bad_threads(bad):
    with pytest.raises(UserError, match="threads="):
        replay(_trace("random_rw", 2, 0.5, 100), DRAMConfig(channels=2), wrap=True,
               threads=bad)
