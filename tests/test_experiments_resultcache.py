"""The simulation cache: a repeated or interrupted sweep reads what finished, and nothing else.

A key covers the task's arguments, the trace's content (not its path or its zip timestamps)
and the simulator's code; entries are written atomically as each task finishes.
"""

import argparse
import json
import os
import time

import numpy as np
import pytest

import experiments.harness.resultcache as rc
from experiments.harness.common import run_sweep
from experiments.harness.resultcache import ResultCache, file_digest


def _fake_sim(trace_path, x, tags=None):
    """A stand-in task: reads its trace, returns numpy scalars (as simulate_task's rows do)."""
    with np.load(trace_path) as z:
        total = z["a"].sum()
    if x < 0:
        raise RuntimeError("task failed")
    return {**(tags or {}), "value": np.float64(total * x), "count": np.int64(x)}


def _runner(log):
    def run(fn, tasks, on_result=None):
        log.extend(t["x"] for t in tasks)
        return run_sweep(fn, tasks, workers=1, progress=False, on_result=on_result)
    return run


def _trace(path, a):
    np.savez(path, a=np.asarray(a, np.int64))
    return str(path)


def test_second_sweep_reads_every_row_and_returns_the_same(tmp_path):
    tr = _trace(tmp_path / "t.npz", [1, 2, 3])
    tasks = [{"trace_path": tr, "x": x, "tags": {"x": x}} for x in (1, 2, 3)]
    cache, log = ResultCache(tmp_path / "sims"), []
    first, hits = cache.sweep(_fake_sim, tasks, _runner(log))
    assert hits == 0 and log == [1, 2, 3]
    assert first == [{"x": x, "value": 6.0 * x, "count": x} for x in (1, 2, 3)]
    assert all(type(r["count"]) is int and type(r["value"]) is float for r in first)
    again, hits = cache.sweep(_fake_sim, tasks, _runner(log))
    assert hits == 3 and log == [1, 2, 3] and again == first      # nothing simulated again
    more, hits = cache.sweep(_fake_sim, tasks + [{"trace_path": tr, "x": 4}], _runner(log))
    assert hits == 3 and log == [1, 2, 3, 4] and more[:3] == first


def test_key_follows_trace_content_not_path_or_zip_timestamps(tmp_path):
    a = _trace(tmp_path / "a.npz", [5, 6])
    time.sleep(1.1)                                    # zip entries carry a write time (2 s)
    b = _trace(tmp_path / "b.npz", [5, 6])
    c = _trace(tmp_path / "c.npz", [5, 7])
    assert file_digest(a) == file_digest(b) != file_digest(c)
    cache = ResultCache(tmp_path / "sims")
    keys = [cache.key(_fake_sim, {"trace_path": p, "x": 1}) for p in (a, b, c)]
    assert keys[0] == keys[1] != keys[2]
    assert cache.key(_fake_sim, {"trace_path": a, "x": 2}) != keys[0]
    # a trace rewritten in place (new size or time) is digested again
    _trace(tmp_path / "a.npz", [5, 6, 1])
    assert cache.key(_fake_sim, {"trace_path": a, "x": 1}) != keys[0]


def test_code_change_makes_every_entry_a_miss(tmp_path, monkeypatch):
    tr = _trace(tmp_path / "t.npz", [1])
    cache, log = ResultCache(tmp_path / "sims"), []
    cache.sweep(_fake_sim, [{"trace_path": tr, "x": 1}], _runner(log))
    monkeypatch.setattr(rc, "_code_digest", "another simulator")
    _, hits = cache.sweep(_fake_sim, [{"trace_path": tr, "x": 1}], _runner(log))
    assert hits == 0 and log == [1, 1]


def test_interrupted_sweep_keeps_what_finished_and_corrupt_entries_rerun(tmp_path):
    tr = _trace(tmp_path / "t.npz", [2])
    cache, log = ResultCache(tmp_path / "sims"), []
    tasks = [{"trace_path": tr, "x": x} for x in (1, 2, -1, 3)]
    with pytest.raises(RuntimeError, match="task failed"):
        cache.sweep(_fake_sim, tasks, _runner(log))
    entries = sorted(tmp_path.glob("sims/*/*"))
    assert len(entries) == 2 and all(p.suffix == ".json" for p in entries)  # no temporaries
    tasks[2]["x"] = 5
    entries[0].write_text("{not json")                 # a damaged entry is simulated again
    log.clear()
    with pytest.warns(UserWarning, match="not valid JSON"):
        rows, hits = cache.sweep(_fake_sim, tasks, _runner(log))
    assert hits == 1 and len(log) == 3 and [r["count"] for r in rows] == [1, 2, 5, 3]
    stored = json.loads(cache._path(cache.key(_fake_sim, tasks[3])).read_text())
    assert stored["value"] == {"value": 6.0, "count": 3}


def test_context_caches_simulations_and_no_sim_cache_turns_it_off(tmp_path):
    """A real sweep of simulate_task through the experiments' Context: the rerun reads every
    row (identical), ``--no-sim-cache`` neither reads nor writes."""
    from experiments.harness.runner import add_common_arguments, context_from_args
    from experiments.harness.sim import simulate_task
    from graphs import make_workload, save_trace

    tr = make_workload("sift", n=1000, num_queries=8, num_clusters=8, num_probes=2,
                       cache_dir=tmp_path / "cache", progress=False)
    trace = save_trace(tmp_path / "t.npz", tr)
    tasks = [dict(system=s, trace_path=str(trace), num_queries=8, tags={"system": s})
             for s in ("base", "cosmos")]
    p = argparse.ArgumentParser()
    add_common_arguments(p)

    def context(*options):
        args = p.parse_args(["--scale", "tiny", "--no-progress", "--workers", "1",
                             "--cache-dir", str(tmp_path / "cache"), *options])
        return context_from_args(args, tmp_path)

    ctx = context()
    first = ctx.sweep(simulate_task, tasks, desc="t")
    assert ctx.sims == [0, 2] and ctx.config()["sim_cache"].endswith("simulations")
    ctx2 = context()
    assert _nan_equal(ctx2.sweep(simulate_task, tasks, desc="t")) == _nan_equal(first)
    assert ctx2.sims == [2, 2]
    off = context("--no-sim-cache")
    assert "--no-sim-cache" in off.options and off.config()["sim_cache"] is None
    rows = off.sweep(simulate_task, tasks, desc="t")
    assert off.sims == [0, 0]
    assert [{k: v for k, v in r.items() if "wall" not in k} for r in _nan_equal(rows)] == \
        [{k: v for k, v in r.items() if "wall" not in k} for r in _nan_equal(first)]
    assert len(list((tmp_path / "cache" / "simulations").glob("*/*.json"))) == 2
    assert not [f for f in os.listdir(tmp_path / "cache" / "simulations")
                if f.startswith(".")]


def test_interrupt_exits_130_and_says_how_to_resume(tmp_path, monkeypatch, capsys):
    import experiments.harness.plan
    import experiments.harness.runner
    from cosmos.cli import main

    def interrupted(name, ctx, *args, **kw):
        raise KeyboardInterrupt

    monkeypatch.setenv("COSMOS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(experiments.harness.runner, "run_experiment", interrupted)
    # ... or while the pool of every experiment's simulations runs (experiments.harness.plan)
    monkeypatch.setattr(experiments.harness.plan, "run_shared", interrupted)
    assert main(["reproduce", "--scale", "tiny", "--out-root", str(tmp_path / "r"),
                 "--no-progress"]) == 130
    assert "interrupted; the simulations that finished are kept" in capsys.readouterr().err
    assert main(["reproduce", "--scale", "tiny", "--out-root", str(tmp_path / "r"),
                 "--no-progress", "--no-sim-cache"]) == 130
    first, last = capsys.readouterr().err.strip().splitlines()
    assert last == "cosmos reproduce: interrupted"
    assert first.startswith("cosmos reproduce: incomplete results (each holds an INCOMPLETE "
                            "file saying what is missing): ")


def test_tags_are_not_part_of_the_key_and_duplicates_run_once(tmp_path):
    tr = _trace(tmp_path / "t.npz", [1, 2])
    tasks = [{"trace_path": tr, "x": 2, "tags": {"sweep": "a"}},
             {"trace_path": tr, "x": 2, "tags": {"sweep": "b", "value": "tag loses"}},
             {"trace_path": tr, "x": 3}]
    cache, log = ResultCache(tmp_path / "sims"), []
    rows, hits = cache.sweep(_fake_sim, tasks, _runner(log))
    assert hits == 0 and log == [2, 3]                  # the two x=2 tasks ran once
    assert rows == [{"sweep": "a", "value": 6.0, "count": 2},
                    {"sweep": "b", "value": 6.0, "count": 2},     # as simulate_task: row wins
                    {"value": 9.0, "count": 3}]
    assert rows == [_fake_sim(**t) for t in tasks]      # what fn itself returns, tags and all


def test_simulation_identity_resolves_the_configuration():
    from experiments.harness.sim import simulation_identity

    base = {"system": "cosmos", "trace_path": "t.npz", "num_queries": 10}
    ident = simulation_identity(base)
    # an override equal to the preset's value; a default given explicitly; tags
    assert simulation_identity({**base, "overrides": {"device.count": 4}}) == ident
    assert simulation_identity({**base, "seed": 0, "tags": {"a": 1}}) == ident
    assert simulation_identity({**base, "overrides": {"device.count": 8}}) != ident
    assert simulation_identity({**base, "placement": "round_robin"}) != ident
    assert simulation_identity({**base, "system": "cosmos-noalgo"}) != ident
    assert simulation_identity({**base, "num_queries": 11}) != ident


def _nan_equal(rows):
    """Rows with NaN (an interval the metrics did not claim) as "nan", so equal rows compare
    equal."""
    return [{k: ("nan" if isinstance(v, float) and v != v else v) for k, v in r.items()}
            for r in rows]
