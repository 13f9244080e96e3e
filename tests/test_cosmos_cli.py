"""`cosmos simulate`: listing, a run writing its results folder, refusals."""

import json

import numpy as np
import pandas as pd
import pytest

from cosmos.cli import main
from tests.cosmos_helpers import make_trace


def test_list_names_the_six_presets(capsys):
    assert main(["simulate", "--list"]) == 0
    out = capsys.readouterr().out
    for name in ("base", "dram-only", "cxl-anns", "cosmos-norank", "cosmos-noalgo", "cosmos"):
        assert name in out


def test_simulate_writes_summary_and_csvs_and_never_overwrites(tmp_path, capsys):
    trace = tmp_path / "t.npz"
    np.savez(trace, **make_trace(num_queries=30, hops=3, reads_per_hop=5))
    out = tmp_path / "res"
    argv = ["simulate", "--systems", "cosmos", "--trace", str(trace), "--out", str(out),
            "--no-progress", "--set", "gpc.cores=4"]
    assert main(argv) == 0
    summ = json.loads((out / "summary.json").read_text())
    assert summ["system"] == "cosmos" and summ["qps"] > 0
    assert summ["latency_p50_ns"] <= summ["latency_p99_ns"]
    assert set(summ["breakdown_ns"]) == {"traversal", "distance", "candidate", "transfer",
                                         "queue"}
    pq = pd.read_csv(out / "per_query.csv")
    assert len(pq) == 30 and (pq["latency_ns"] > 0).all()
    assert len(pd.read_csv(out / "per_device.csv")) == 4
    conf = json.loads((out / "config.json").read_text())
    assert conf["system"]["gpc"]["cores"] == 4
    before = (out / "summary.json").read_text()
    assert main(argv) == 2
    assert "folder is not empty" in capsys.readouterr().err
    assert (out / "summary.json").read_text() == before


@pytest.mark.parametrize("argv, message", [
    (["simulate", "--systems", "gpu", "--trace", "x.npz", "--out", "o"], "unknown system 'gpu'"),
    (["simulate", "--systems", "base", "--trace", "missing.npz", "--out", "o"],
     "trace file not found"),
    (["simulate", "--systems", "base", "--trace", "x.npz", "--out", "o", "--set", "gpc.x=1"],
     "unknown field 'x'"),
])
def test_bad_input_is_one_clear_line(tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.chdir(tmp_path)
    np.savez(tmp_path / "x.npz", **make_trace(num_queries=2, hops=1, reads_per_hop=1))
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_closed_stdout_ends_quietly():
    # `cosmos ... | head` closes the pipe early: exit 141 (SIGPIPE's code), no traceback
    import subprocess
    import sys

    code = ("import dram.cli as d\n"
            "def boom(reg):\n"
            "    raise BrokenPipeError(32, 'Broken pipe')\n"
            "d.format_presets = boom\n"
            "from cosmos.cli import main\n"
            "raise SystemExit(main(['dram', 'presets']))\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 141 and "Traceback" not in p.stderr, p.stderr


def _small_trace(tmp_path, **kw):
    trace = tmp_path / "t.npz"
    np.savez(trace, **make_trace(**{"num_queries": 12, "hops": 2, "reads_per_hop": 3, **kw}))
    return trace


def _forbid_simulation(monkeypatch):
    import cosmos.simulate

    def boom(*a, **kw):
        raise AssertionError("the simulation ran although the command should have been refused")

    monkeypatch.setattr(cosmos.simulate, "simulate", boom)


def test_out_that_is_a_file_is_refused_before_any_work(tmp_path, monkeypatch, capsys):
    trace = _small_trace(tmp_path)
    _forbid_simulation(monkeypatch)
    (tmp_path / "afile").write_text("mine")
    for out in ("afile", "afile/sub"):
        assert main(["simulate", "--systems", "base", "--trace", str(trace), "--out",
                     str(tmp_path / out), "--no-progress"]) == 2
        err = capsys.readouterr().err
        assert "is not a folder" in err and "Traceback" not in err, err
    assert (tmp_path / "afile").read_text() == "mine"


def test_a_result_file_that_appears_during_the_run_is_kept(tmp_path, monkeypatch, capsys):
    import cosmos.simulate

    trace = _small_trace(tmp_path)
    out = tmp_path / "res"
    real = cosmos.simulate.simulate

    def user_writes_meanwhile(*a, **kw):
        res = real(*a, **kw)
        out.mkdir(exist_ok=True)  # made by the command before the work
        (out / "summary.json").write_text("the user's own summary")
        return res

    monkeypatch.setattr(cosmos.simulate, "simulate", user_writes_meanwhile)
    assert main(["simulate", "--systems", "base", "--trace", str(trace), "--out", str(out),
                 "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"{out / 'summary.json'} exists" in err and "Traceback" not in err, err
    assert (out / "summary.json").read_text() == "the user's own summary"
    # all or nothing: none of this run's files stays next to the user's summary, and the
    # folder says the run did not complete
    assert sorted(p.name for p in out.iterdir()) == ["INCOMPLETE", "summary.json"]
    assert "missing: per_query.csv" in (out / "INCOMPLETE").read_text()


@pytest.mark.parametrize("extra, message", [
    (["--set", "link.slots_per_flit=0"], "system.link.slots_per_flit: must be >= 1, got 0"),
    (["--set", "rank_pu.enabled=maybe"], "rank_pu.enabled='maybe': expected a boolean"),
    (["--set", "gpc.cores=4.5"], "gpc.cores='4.5': expected an integer"),
    (["--set", "link.latency_ns=-40"], "system.link.latency_ns: must be >= 0, got -40"),
    (["--mode", "open"], "--mode open needs --rate > 0"),
    (["--rate", "1000"], "--rate applies only to --mode open"),
    (["--num-queries", "0"], "--num-queries must be >= 1"),
    (["--seed", "-5"], "--seed must be >= 0, got -5"),       # as cosmos run refuses it
    # more than the DRAM holds: once cut to it silently (issue 55)
    (["--set", "device.capacity_bytes=1099511627776"],
     "device.capacity_bytes=1099511627776 is more than a device's DRAM holds (274877906944"),
    (["--max-inflight", "0"], "--max-inflight must be >= 1"),
    (["--warmup", "0.5"], "--warmup must be in [0, 0.5)"),
    (["--ci-target", "0"], "--ci-target must be a relative half-width in (0, 1)"),
    (["--ci-target", "1.5"], "--ci-target must be a relative half-width in (0, 1)"),
    (["--ci-min-queries", "500"], "--ci-min-queries applies only with --ci-target"),
    (["--ci-target", "0.01", "--ci-min-queries", "0"], "--ci-min-queries must be >= 1"),
])
def test_bad_options_are_refused_before_any_work(tmp_path, monkeypatch, capsys, extra, message):
    trace = _small_trace(tmp_path)
    _forbid_simulation(monkeypatch)
    assert main(["simulate", "--systems", "cosmos", "--trace", str(trace), "--out",
                 str(tmp_path / "res"), "--no-progress"] + extra) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err, err
    assert not (tmp_path / "res").exists()


@pytest.mark.parametrize("damage, message", [
    (lambda p: p.write_bytes(p.read_bytes()[:300]), "damaged or truncated .npz"),
    (lambda p: np.save(open(p, "wb"), np.arange(3)), "holds a single numpy array"),
    (lambda p: p.write_text("not a trace\n"), "not a .npz (zip) archive"),
])
def test_a_damaged_trace_file_is_one_line_naming_it(tmp_path, capsys, damage, message):
    trace = _small_trace(tmp_path)
    damage(trace)
    assert main(["simulate", "--systems", "base", "--trace", str(trace), "--out",
                 str(tmp_path / "res"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"error: {trace}: " in err and message in err and "Traceback" not in err, err


def test_corrupted_hop_degree_is_refused_not_a_deadlock(tmp_path, capsys):
    d = make_trace(num_queries=4, hops=2, reads_per_hop=3)
    d["hop_degree"] = d["hop_degree"].copy()
    d["hop_degree"][5] = 10**9
    trace = tmp_path / "t.npz"
    np.savez(trace, **d)
    assert main(["simulate", "--systems", "base", "--trace", str(trace), "--out",
                 str(tmp_path / "res"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "hop_degree[5] = 1000000000 out of range [0, 32]" in err, err


def test_an_open_loop_rate_whose_arrivals_overflow_is_refused(tmp_path, capsys):
    import warnings

    trace = _small_trace(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's "invalid value encountered in cast" fails
        assert main(["simulate", "--systems", "base", "--trace", str(trace), "--out",
                     str(tmp_path / "res"), "--no-progress", "--mode", "open",
                     "--rate", "1e-9"]) == 2
    err = capsys.readouterr().err
    assert "--rate/rate_qps = 1e-09 per second: 12 queries arrive over about 1.2e+10 s" in err
    assert "2**52 cycles" in err and "Traceback" not in err
    assert not (tmp_path / "res").exists()


def test_engine_memory_estimate_is_exact(monkeypatch):
    import cosmos.engine
    import cosmos.simulate
    from cosmos.presets import get_preset
    from cosmos.engine import engine_state_bytes
    from cosmos.simulate import simulate

    real = cosmos.engine.new_engine_state
    seen = []

    def counted(pg, psizes, n_inst, n_ch, D):
        st = real(pg, psizes, n_inst, n_ch, D)
        buffers = {id(a if a.base is None else a.base): (a if a.base is None else a.base)
                   for a in st}                 # (views and aligned slices: their buffer)
        seen.append((sum(b.nbytes for b in buffers.values()),
                     engine_state_bytes(pg, psizes, n_inst, n_ch, D)[0]))
        return st

    monkeypatch.setattr(cosmos.engine, "new_engine_state", counted)
    tr = make_trace(num_queries=6, hops=2, reads_per_hop=3)
    for name in ("base", "dram-only", "cxl-anns", "cosmos"):
        simulate(get_preset(name), tr, progress=False)
    assert len(seen) == 4 and all(actual == est for actual, est in seen), seen


def test_a_simulation_larger_than_the_memory_is_refused_before_allocating(tmp_path, monkeypatch,
                                                                           capsys):
    import cosmos.engine
    import cosmos.simulate

    trace = _small_trace(tmp_path)
    monkeypatch.setattr(cosmos.simulate, "physical_memory_bytes", lambda: 10**9)

    def no_alloc(*a, **kw):
        raise AssertionError("allocated the engine state although it does not fit")

    monkeypatch.setattr(cosmos.engine, "new_engine_state", no_alloc)
    # 2000 devices x 8 channels x ~77 kB of controller state = ~1.2 GB > 1 GB
    assert main(["simulate", "--systems", "cosmos", "--trace", str(trace), "--out",
                 str(tmp_path / "res"), "--no-progress", "--set", "device.count=2000"]) == 2
    err = capsys.readouterr().err
    assert "more than this machine's 1.0 GB" in err and "device.count" in err, err
    assert "16,000 DRAM channel controllers" in err and "Traceback" not in err


def test_without_a_steady_state_qps_is_the_whole_run_average(tmp_path, capsys):
    trace = _small_trace(tmp_path)
    out = tmp_path / "few"
    # 12 queries against 64 GPC contexts: one burst, no steady state
    assert main(["simulate", "--systems", "cosmos", "--trace", str(trace), "--out", str(out),
                 "--no-progress"]) == 0
    s = json.loads((out / "summary.json").read_text())
    assert s["steady_state"] is False and s["qps"] == s["qps_overall"]
    assert s["qps_window"] > 2 * s["qps_overall"]  # what the headline used to be
    err = capsys.readouterr().err
    assert "warning: no steady state: 9 completions in the window, fewer than the 12" in err


def test_with_a_steady_state_qps_is_the_windows_rate(tmp_path, capsys):
    trace = _small_trace(tmp_path, num_queries=60)
    out = tmp_path / "many"
    assert main(["simulate", "--systems", "base", "--trace", str(trace), "--out", str(out),
                 "--no-progress", "--max-inflight", "8"]) == 0
    s = json.loads((out / "summary.json").read_text())
    assert s["steady_state"] is True and s["window_queries"] >= 8
    # the rate of the window's whole turnovers of the 8 queries in flight
    assert s["qps_queries"] == 8 * (s["window_queries"] // 8)
    assert (s["qps"] == s["qps_window"]) == (s["qps_queries"] == s["window_queries"])
    assert abs(s["qps"] / s["qps_window"] - 1) < 0.2 and s["qps"] != s["qps_overall"]
    assert "warning" not in capsys.readouterr().err
