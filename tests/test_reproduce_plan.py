"""`cosmos reproduce` runs every experiment's simulations in one pool, once each
(experiments.harness.plan), and `--dry-run` lists that plan without running or writing anything."""

from __future__ import annotations

import argparse
import math

import numpy as np
import pandas as pd
import pytest

from experiments.harness import plan as P
from experiments.harness.resultcache import ResultCache


def _args(**kw):
    base = dict(scale="default", dataset=None, queries=None, groundtruth=None, metric=None,
                out_root="results", out=None, cache_dir=None, workers=2, scheduler=None,
                seed=0, no_sim_cache=False, no_progress=True, only=None, dry_run=True)
    base.update(kw)
    return argparse.Namespace(**base)


def _full_plan():
    from experiments.harness.runner import EXPERIMENTS

    names = list(EXPERIMENTS)
    return P.plan(names, P.plan_context(_args(scale="full"))), names


def _declared(names, ctx):
    """From the experiments' own hooks (reached through the registry): the simulations asked
    for, the distinct ones, and the dependent runs' upper bounds."""
    from experiments.harness.runner import load

    tasks = [t for n in names if hasattr(load(n), "simulation_tasks")
             for t in load(n).simulation_tasks(ctx)]
    dependent = {n: load(n).dependent_plan(ctx)[0] for n in names
                 if hasattr(load(n), "dependent_tasks")}
    return len(tasks), len({P._identity(t) for t in tasks}), dependent


def test_full_plan_lists_every_simulation_once():
    p, names = _full_plan()
    sims = p["simulations"]
    # fig4a: its systems x 2 datasets, every query or until +-1 %, shared with energy_per_query
    from experiments.figures.fig4a_qps import EXTENDED, ROWS, SYSTEMS

    every = [s for s in sims if "fig4a_qps" in s["experiments"]]
    assert len(every) == 2 * len(ROWS)
    # DRAM-only at the CXL systems' capacity (4 ranks per host subchannel) is fig4a's alone
    eq = [s for s in every if s["overrides"].get("host.dram_ranks") == 4]
    assert len(eq) == 2 and all(s["experiments"] == ["fig4a_qps"] for s in eq)
    fig4a = [s for s in every if s not in eq]
    assert all(s["experiments"][0] == "fig4a_qps" and s["experiments"][-1] == "energy_per_query"
               for s in fig4a)
    # the stop test's minimum: 30 x the queries in flight, at least 2,000 (cosmos.simulate)
    assert {(s["queries_min"], s["queries_max"]) for s in fig4a} == {(2_000, 10_000)}
    # the sweeps' points at the preset's configuration and the saturation runs are fig4a's
    # runs: Cosmos on SIFT-like serves six experiments
    (cos,) = [s for s in fig4a if s["system"] == "cosmos" and s["dataset"] == "sift"]
    assert cos["experiments"] == ["fig4a_qps", "scale_devices", "scale_ranks", "latency_load",
                                  "rag_ttft", "energy_per_query"]
    assert not any(s["overrides"].get("device.count") == 4
                   or s["overrides"].get("device.ranks") == 2 for s in sims)
    # as many as the experiments declare (fig4a's are energy_per_query's; the sweeps' points
    # at the preset's configuration are fig4a's runs)
    asked, distinct, dependent = _declared(names, P.plan_context(_args(scale="full")))
    assert p["asked"] == asked and len(sims) == distinct < asked
    dep = {d["experiment"]: d["runs_at_most"] for d in p["dependent"]}
    assert dep == dependent and dep["latency_load"] == 6 * 5     # systems x load fractions
    # estimates: requests from the per-query figures, times within the stated bounds
    assert math.isclose(sum(s["est_requests_min"] for s in fig4a),
                        len(SYSTEMS + EXTENDED) * 2_000 * (27_000 + 77_000))
    e = p["estimate"]
    assert 0 < e["total_min_s"] < e["total_max_s"]


def test_dry_run_prints_the_plan_and_writes_nothing(tmp_path, monkeypatch, capsys):
    from cosmos.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["reproduce", "--full", "--dry-run", "--cache-dir", str(tmp_path / "c")]) == 0
    out = capsys.readouterr().out
    assert "recall_qps not included (hours at this scale); run it with --only recall_qps" in out
    from experiments.harness.runner import reproduce_names

    asked, distinct, _ = _declared(reproduce_names("full"), P.plan_context(_args(scale="full")))
    assert f"{asked} asked for, {distinct} distinct" in out
    assert "fig4a_qps, scale_devices, scale_ranks, latency_load, rag_ttft" in out
    assert "latency_load: up to 30 open-loop runs" in out
    assert list(tmp_path.iterdir()) == []        # no results folder, no cache


def test_every_registered_experiment_follows_the_protocol_and_is_planned():
    """Each line of the registry is a module with the protocol of experiments.harness.runner,
    and the plan names every experiment somewhere: in its simulations, its dependent runs, its
    other work, or it runs no simulation (RUNS_SIMULATIONS = False); dependent runs come with
    the plan's line for them."""
    from experiments.figures import REGISTRY
    from experiments.harness.runner import ALL_EXPERIMENTS, load

    assert list(ALL_EXPERIMENTS) == [e.name for e in REGISTRY]
    names = [e.name for e in REGISTRY]
    for e in REGISTRY:
        mod = load(e.name)
        assert mod.NAME == e.name and mod.TITLE
        assert all(callable(getattr(mod, f)) for f in ("run", "plot", "summary_md"))
        assert hasattr(mod, "dependent_tasks") == hasattr(mod, "dependent_plan"), e.name
    p = P.plan(names, P.plan_context(_args(scale="tiny")))
    named = {n for s in p["simulations"] for n in s["experiments"]}
    named |= {d["experiment"] for d in p["dependent"]}
    named |= {n.strip() for o in p["other"] for n in o["experiment"].split(",")}
    named |= {n for n in names if not getattr(load(n), "RUNS_SIMULATIONS", True)}
    assert named == set(names)


def test_full_leaves_out_what_runs_only_on_request():
    from experiments.harness.runner import EXPERIMENTS, FULL_ON_REQUEST, reproduce_names

    assert reproduce_names("default") == list(EXPERIMENTS)
    assert reproduce_names("full") == [n for n in EXPERIMENTS if n not in FULL_ON_REQUEST]
    assert "recall_qps" in FULL_ON_REQUEST and "fig4a_qps" in reproduce_names("full")


def test_makespan_is_the_pool_order():
    """Costliest first, each task to the worker free first (run_sweep's order)."""
    assert P.makespan([], 2) == 0
    assert P.makespan([3, 5, 3, 4, 3], 2) == 10     # 5 | 4, 4+3, 5+3, 7+3
    assert P.makespan([3, 3, 2, 2, 2], 2) == 7
    assert P.makespan([9, 1, 1], 2) == 9            # no sooner than the longest


def test_memo_serves_rows_without_running_and_counts_disk_reads(tmp_path):
    calls = []

    def fn(x, tags=None):
        calls.append(x)
        return {**(tags or {}), "y": x * 2}

    def run(f, tasks, on_result=None):
        out = [f(**t) for t in tasks]
        for i, r in enumerate(out):
            if on_result:
                on_result(i, r)
        return out

    memo: dict = {}
    rows, hits = ResultCache(None, memo=memo).sweep(fn, [dict(x=1, tags={"a": 1}),
                                                         dict(x=2)], run)
    assert rows == [{"a": 1, "y": 2}, {"y": 4}] and hits == 0 and calls == [1, 2]
    rows2, hits2 = ResultCache(None, memo=memo).sweep(fn, [dict(x=2, tags={"b": 3}),
                                                           dict(x=1)], run)
    assert rows2 == [{"b": 3, "y": 4}, {"y": 2}] and hits2 == 0 and calls == [1, 2]
    # rows first read from the disk cache still count as read from it when served by the memo
    disk = ResultCache(tmp_path / "sims")
    disk.sweep(fn, [dict(x=5)], run)
    memo2: dict = {}
    _, h = ResultCache(tmp_path / "sims", memo=memo2).sweep(fn, [dict(x=5)], run)
    _, h2 = ResultCache(tmp_path / "sims", memo=memo2).sweep(fn, [dict(x=5), dict(x=5)], run)
    assert (h, h2) == (1, 2) and calls == [1, 2, 5]


def test_shared_pool_gives_the_experiments_identical_rows(tmp_path, monkeypatch):
    """fig4b run after the shared pool runs no simulation of its own, and writes the same
    table as fig4b run alone without any cache."""
    from experiments.harness import common
    from experiments.harness.runner import Context, run_experiment
    from experiments.harness.workloads import get_scale

    cache = tmp_path / "cache"
    tiny = get_scale("tiny")
    alone = Context(out=tmp_path / "alone", scale=tiny, cache_dir=cache, workers=1,
                    progress=False, sim_cache=False)
    alone.out.mkdir()
    run_experiment("fig4b_breakdown", alone)

    shared: dict = {}
    pool = Context(out=tmp_path / "traces", scale=tiny, cache_dir=cache, workers=1,
                   progress=False, sim_cache=False, shared=shared,
                   traces_dir=tmp_path / "traces")
    s = P.run_shared(["fig4b_breakdown"], pool)
    assert s["tasks"] == s["distinct"] == 10 and s["from_cache"] == 0

    real = common.run_sweep

    def no_new(fn, tasks, **kw):
        assert not list(tasks), "the experiment simulated again"
        return real(fn, [], **kw)

    monkeypatch.setattr(common, "run_sweep", no_new)
    ctx = Context(out=tmp_path / "after", scale=tiny, cache_dir=cache, workers=1,
                  progress=False, sim_cache=False, shared=shared, traces_dir=tmp_path / "traces")
    ctx.out.mkdir()
    run_experiment("fig4b_breakdown", ctx)
    pd.testing.assert_frame_equal(pd.read_csv(ctx.out / "breakdown.csv"),
                                  pd.read_csv(alone.out / "breakdown.csv"))


def test_shared_pool_runs_dependent_runs_and_batches(tmp_path, monkeypatch):
    """The load sweep's open-loop runs start in the shared pool as soon as its saturation
    runs are in, and the DRAM validation's replays run there as one batch; the experiments
    then simulate and replay nothing and write the tables they write alone."""
    from experiments.harness import common
    from experiments.harness.runner import Context, run_experiment
    from experiments.harness.workloads import get_scale

    cache = tmp_path / "cache"
    tiny = get_scale("tiny")

    def context(out, **kw):
        ctx = Context(out=tmp_path / out, scale=tiny, cache_dir=cache, workers=1,
                      progress=False, sim_cache=False, **kw)
        ctx.only = "unloaded_hit"       # validate_dram: its four unloaded row-hit probes
        return ctx

    alone = context("alone")
    alone.out.mkdir()
    for name in ("latency_load", "validate_dram"):
        alone.out = tmp_path / "alone" / name
        alone.out.mkdir()
        run_experiment(name, alone)
    shared: dict = {}
    s = P.run_shared(["latency_load", "validate_dram"],
                     context("traces", shared=shared, traces_dir=tmp_path / "traces"))
    assert (s["tasks"], s["distinct"], s["dependent"]) == (6, 6, 30)

    real = common.run_sweep

    def no_new(fn, tasks, **kw):
        assert not list(tasks), "the experiment ran its tasks again"
        return real(fn, [], **kw)

    monkeypatch.setattr(common, "run_sweep", no_new)
    for name, table in (("latency_load", "latency_load.csv"),
                        ("validate_dram", "validation.csv")):
        ctx = context(f"after-{name}", shared=shared, traces_dir=tmp_path / "traces")
        ctx.out.mkdir()
        run_experiment(name, ctx)
        got, want = (pd.read_csv(d / table) for d in (ctx.out, tmp_path / "alone" / name))
        walls = [c for c in got.columns if c.startswith("wall_s")]
        pd.testing.assert_frame_equal(got.drop(columns=walls), want.drop(columns=walls))
    assert len(got) == 4


def test_check_full_ci_ratio_table():
    from experiments.tools.check_full_ci import _ratio_rows

    def row(ds, system, qps, half):
        return {"dataset": ds, "system": system, "qps": qps, "qps_ci_low": qps * (1 - half),
                "qps_ci_high": qps * (1 + half), "num_queries": 2000, "stopped": "ci-target"}

    rows = [row("sift", "base", 100.0, 0.03), row("sift", "cxl-anns", 300.0, 0.04),
            row("sift", "cosmos", 600.0, 0.0)]
    got = _ratio_rows(rows)
    # the ratio rule of experiments.harness.ratios: the runs' log half-widths in quadrature
    # (Cosmos's is 0 here, so the reference's alone)
    r, lo, hi, queries, stopped = got[("sift", "cosmos", "base")]
    w = (np.log(1.03) - np.log(0.97)) / 2
    assert r == pytest.approx(6.0) and (lo, hi) == pytest.approx((6 * np.exp(-w), 6 * np.exp(w)))
    assert queries == "2,000/2,000" and stopped == "ci-target/ci-target"
    r, lo, hi, _, _ = got[("sift", "cosmos", "cxl-anns")]
    assert r == pytest.approx(2.0) and hi == pytest.approx(2 * np.exp((np.log(1.04 / 0.96)) / 2))


def test_the_scales_probes_are_the_scales_trace(tmp_path):
    """fig5a asks for the trace at 4, 8 and 16 probes; at the scale's own 8 it gets the trace
    the other experiments use (one copy in memory), not a second load of it."""
    from experiments.harness.runner import Context
    from experiments.harness.workloads import get_scale

    ctx = Context(out=tmp_path, scale=get_scale("default"), progress=False)
    sentinel = object()
    ctx._traces[("sift", None)] = sentinel
    assert ctx.trace("sift", num_probes=8) is sentinel
    assert ctx.trace("sift") is sentinel


def test_shared_pool_builds_workloads_and_compiles_each_engine_build_once(tmp_path,
                                                                          monkeypatch):
    """The pool starts with the workloads (their trace files written by the pool's job, none
    before), compiles each engine build its simulations need once, by one job, before any
    run of that build, and gives the same rows as a pool that compiles nothing."""
    from experiments.harness import sim
    from experiments.harness.runner import Context
    from experiments.harness.workloads import get_scale

    cache = tmp_path / "cache"
    tiny = get_scale("tiny")

    def pool(out):
        shared: dict = {}
        ctx = Context(out=tmp_path / out, scale=tiny, cache_dir=cache, workers=1,
                      progress=False, sim_cache=False, shared=shared,
                      traces_dir=tmp_path / out / "traces")
        return ctx, shared

    ctx, plain = pool("plain")
    s = P.run_shared(["fig4b_breakdown"], ctx)
    assert (s["workloads"], s["compiled"], s["distinct"]) == (2, 0, 10)
    assert sorted(p.name for p in (tmp_path / "plain" / "traces").iterdir()) == \
        ["deep.npz", "sift.npz"]

    log = []
    builds = {"cosmos": "A", "cosmos-norank": "A", "base": "B"}
    monkeypatch.setattr(sim, "engine_build", lambda task: builds.get(task["system"]))
    monkeypatch.setattr(sim, "compile_task", lambda **task: log.append(("compile",
                                                                         task["system"])))
    real_job = P._run_job

    def job(fn, tasks):
        if fn is sim.simulate_task:
            log.append((builds.get(tasks[0]["system"]), tasks[0]["system"]))
        return real_job(fn, tasks)

    monkeypatch.setattr(P, "_run_job", job)
    ctx, shared = pool("held")
    s = P.run_shared(["fig4b_breakdown"], ctx)
    assert (s["workloads"], s["compiled"], s["distinct"]) == (2, 2, 10)
    compiles = [i for i, (kind, _) in enumerate(log) if kind == "compile"]
    assert len(compiles) == 2 and len(log) == 12
    for build in ("A", "B"):
        at = next(i for i, (kind, system) in enumerate(log)
                  if kind == "compile" and builds[system] == build)
        assert all(i > at for i, (b, _) in enumerate(log) if b == build)
    strip = {k: {c: v for c, v in row.items() if not c.startswith("wall_s")
                 and c != "requests_per_wall_s"} for k, (row, _) in plain.items()}
    assert {k: {c: v for c, v in row.items() if not c.startswith("wall_s")
                and c != "requests_per_wall_s"} for k, (row, _) in shared.items()} == strip


def test_paper_scale_plan_builds_templated_workloads():
    """--scale paper: a billion vectors per dataset as cluster-template workloads, the paper's
    figures and the energy and RAG figures, nothing built to make the plan."""
    from experiments.harness.runner import reproduce_names

    names = reproduce_names("paper")
    assert names == ["fig4a_qps", "fig4b_breakdown", "fig5a_lir", "fig5b_heatmap", "rag_ttft",
                     "energy_per_query"]
    p = P.plan(names, P.plan_context(_args(scale="paper")))
    for w in p["workloads"]:
        assert (w["n"], w["clusters"], w["templates"], w["queries"]) == \
            (10**9, 1024, 2, 10_000)
        assert 1_000 < w["est_cpu_s"] < 20_000
    assert "2 template clusters (graphs.templates)" in P.format_plan(p)
