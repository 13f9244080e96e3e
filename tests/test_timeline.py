"""The query timeline (issue 55): ``--timeline FILE.json`` writes the first queries' steps as a
Chrome trace (cosmos.timeline), and the results are the same with or without it."""

from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
import pytest

from cosmos.cli import main
from tests.cosmos_helpers import make_trace

#: figures of a summary that measure the machine, not the simulation
WALL = ("wall_s", "requests_per_wall_s")


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("timeline") / "t.npz"
    np.savez(path, **make_trace(num_queries=24, hops=3, reads_per_hop=5))
    return path


def _summary(folder):
    s = json.loads((folder / "summary.json").read_text())
    return {k: v for k, v in s.items() if k not in WALL}


def _simulate(trace, out, *extra, system="cosmos"):
    return main(["simulate", str(trace), "--systems", system, "--out", str(out),
                 "--no-progress", *extra])


@pytest.fixture(scope="module")
def runs(trace, tmp_path_factory):
    """(summary without a timeline, summary with one, the timeline's JSON), for cosmos."""
    root = tmp_path_factory.mktemp("runs")
    assert _simulate(trace, root / "plain") == 0
    tl = root / "tl.json"
    assert _simulate(trace, root / "tl", "--timeline", str(tl), "--timeline-queries", "3") == 0
    return _summary(root / "plain"), _summary(root / "tl"), json.loads(tl.read_text())


def _check_events(doc, queries):
    assert set(doc) >= {"traceEvents", "displayTimeUnit"}
    ev = doc["traceEvents"]
    meta = [e for e in ev if e["ph"] == "M"]
    xs = [e for e in ev if e["ph"] == "X"]
    assert xs and meta
    named = {(e["pid"], e["tid"]) for e in meta if e["name"] == "thread_name"}
    procs = {e["pid"] for e in meta if e["name"] == "process_name"}
    for e in xs:
        assert {"name", "cat", "ph", "ts", "dur", "pid", "tid", "args"} <= set(e)
        assert e["ts"] >= 0 and e["dur"] >= 0, e
        assert e["pid"] in procs and (e["pid"], e["tid"]) in named, e
        assert e["name"] in ("mem", "xfer", "compute", "query"), e
        assert "query" in e["args"]
    # the events of one query on one row (a context, a link, ...) do not overlap
    rows = defaultdict(list)
    for e in xs:
        rows[(e["pid"], e["tid"], e["args"]["query"])].append((e["ts"], e["ts"] + e["dur"]))
    for key, spans in rows.items():
        spans.sort()
        for (a0, a1), (b0, b1) in zip(spans, spans[1:]):
            assert b0 >= a1 - 1e-9, (key, (a0, a1), (b0, b1))
    # ... nor any two events of a row (overlapping ones go to lanes of their own)
    rows = defaultdict(list)
    for e in xs:
        rows[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
    for key, spans in rows.items():
        spans.sort()
        assert all(b0 >= a1 - 1e-9 for (_, a1), (b0, _) in zip(spans, spans[1:])), key
    assert len({e["args"]["query"] for e in xs}) == queries
    return xs


def test_timeline_is_a_chrome_trace_of_the_first_queries(runs):
    _, _, doc = runs
    xs = _check_events(doc, 3)
    assert {e["args"]["query"] for e in xs} == {0, 1, 2}
    kinds = {e["name"] for e in xs}
    assert {"mem", "xfer", "compute", "query"} <= kinds
    threads = {e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M"
               and e["name"] == "thread_name"}
    assert any(t.startswith("GPC context") for t in threads)
    assert any(t.startswith("link ") for t in threads)
    assert any(t.startswith("rank PUs") for t in threads)
    mem = [e for e in xs if e["name"] == "mem"]
    assert all(e["args"]["bytes"] == 64 * e["args"]["requests"] for e in mem)


def test_the_summary_is_the_same_with_and_without_a_timeline(runs):
    plain, with_tl, _ = runs
    assert plain == with_tl


@pytest.mark.parametrize("system", ["base", "cosmos"])
def test_engine_results_are_identical_with_the_log(trace, system):
    """Every completion cycle, and the log holds exactly the steps of the first N queries."""
    from cosmos import engine as E
    from cosmos.presets import get_preset
    from cosmos.simulate import simulate

    a = simulate(get_preset(system), str(trace), progress=False, specialize=False)
    b = simulate(get_preset(system), str(trace), progress=False, specialize=False,
                 timeline_queries=5)
    assert np.array_equal(a.state.q_done, b.state.q_done)
    assert np.array_equal(a.state.task_end, b.state.task_end)
    assert a.state.tl_log.shape[0] == 0 and int(a.state.scal[E.SC_TL_TASKS]) == 0
    pg = b.program
    n = int(b.state.scal[E.SC_TL_N])
    assert n == pg.task_step_ptr[pg.query_task_ptr[5]]
    assert int(b.state.scal[E.SC_TL_OVER]) == 0
    log = b.state.tl_log[:n * E.TLW].reshape(n, E.TLW)
    assert sorted(log[:, E.TL_STEP].tolist()) == list(range(n))
    assert (log[:, E.TL_END] >= log[:, E.TL_START]).all()
    from cosmos.timeline import timeline_events

    _check_events({"traceEvents": timeline_events(b), "displayTimeUnit": "ns"}, 5)


def test_zero_queries_writes_nothing(trace, tmp_path):
    tl = tmp_path / "tl.json"
    assert _simulate(trace, tmp_path / "out", "--timeline", str(tl),
                     "--timeline-queries", "0") == 0
    assert not tl.exists()


@pytest.mark.parametrize("args, words", [
    (["--timeline", "{tmp}/tl.json", "--timeline-queries", "-1"], "--timeline-queries"),
    (["--timeline-queries", "2"], "only with --timeline"),
    (["--timeline", "{tmp}/no/such/folder/tl.json"], "does not exist"),
    (["--timeline", "{tmp}"], "is a folder"),
])
def test_bad_timeline_options_give_one_line(trace, tmp_path, capsys, args, words):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    assert _simulate(trace, tmp_path / "out", *args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0], err
    assert not (tmp_path / "out").exists()      # refused before any work


def test_replay_writes_both_systems_into_one_file(trace, tmp_path):
    tl = tmp_path / "tl.json"
    assert main(["replay", str(trace), "--systems", "base,cosmos", "--workers", "1",
                 "--out", str(tmp_path / "out"), "--no-progress", "--timeline", str(tl),
                 "--timeline-queries", "2"]) == 0
    doc = json.loads(tl.read_text())
    procs = [e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M"
             and e["name"] == "process_name"]
    assert any(p.startswith("base: ") for p in procs)
    assert any(p.startswith("cosmos: ") for p in procs)
    assert len(set(procs)) == len(procs)
    xs = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    for system in ("base", "cosmos"):
        pids = {e["pid"] for e in doc["traceEvents"] if e["ph"] == "M"
                and e["name"] == "process_name" and e["args"]["name"].startswith(system)}
        _check_events({"traceEvents": [e for e in doc["traceEvents"] if e["pid"] in pids],
                       "displayTimeUnit": "ns"}, 2)
    assert "timeline" not in (tmp_path / "out" / "systems.csv").read_text()
    # the picture of the docs, from the same JSON
    from cosmos.timeline import render_png

    png = render_png(tl, tmp_path / "tl.png", query=0)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(xs) > 0
