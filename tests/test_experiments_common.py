"""Results folders never collide; sweeps return the same results in order, however they run."""

import json

import pandas as pd
import pytest

from experiments.harness.common import atomic_write_text, new_results_dir, run_sweep, write_csv, write_json


def _square_plus_seed(x, seed):
    import numpy as np

    return float(np.random.default_rng(seed).random() + x * x)


def test_results_dirs_are_new_each_time(tmp_path):
    a = new_results_dir(tmp_path, "fig", stamp="T")
    b = new_results_dir(tmp_path, "fig", stamp="T")
    assert a != b and a.name == "fig-T" and b.name == "fig-T-2"


def test_atomic_writes_refuse_to_overwrite(tmp_path):
    p = atomic_write_text(tmp_path / "a.txt", "one")
    with pytest.raises(FileExistsError, match="a.txt"):
        atomic_write_text(p, "two")
    assert p.read_text() == "one"
    write_json(tmp_path / "c.json", {"b": 1, "a": [1, 2]})
    assert json.loads((tmp_path / "c.json").read_text()) == {"a": [1, 2], "b": 1}
    write_csv(tmp_path / "d.csv", pd.DataFrame({"qps": [1.5]}))
    assert (tmp_path / "d.csv").read_text().splitlines() == ["qps", "1.5"]
    assert not [f for f in tmp_path.iterdir() if f.name.startswith(".")]


def test_sweep_results_identical_serial_processes_and_dask():
    tasks = [{"x": i, "seed": 10 + i} for i in range(5)]
    serial = run_sweep(_square_plus_seed, tasks, workers=1, progress=False)
    local = run_sweep(_square_plus_seed, tasks, workers=2, progress=False)
    assert serial == local
    dask_results = run_sweep(_square_plus_seed, tasks, workers=1, scheduler="local", progress=False)
    assert dask_results == serial


def test_sweep_starts_the_costliest_tasks_first_and_returns_task_order():
    tasks = [{"x": i, "seed": 10 + i} for i in range(6)]
    started = []
    serial = run_sweep(_square_plus_seed, tasks, workers=1, progress=False,
                       cost=lambda t: [3, 9, 1, 9, 5, 0][t["x"]],
                       on_result=lambda i, r: started.append(i))
    assert started == [1, 3, 4, 0, 2, 5]  # decreasing cost, ties in task order
    assert serial == run_sweep(_square_plus_seed, tasks, workers=1, progress=False)
    assert serial == run_sweep(_square_plus_seed, tasks, workers=2, progress=False,
                               cost=lambda t: -t["x"])


def test_sweep_follow_adds_tasks_that_run_in_cost_order_everywhere():
    """Tasks added by ``follow`` run on the same workers, in cost order with those waiting,
    and their results follow the given ones, in the order they were added: the same list
    in this process, on local workers and on Dask."""
    tasks = [{"x": i, "seed": 10 + i} for i in range(3)]

    def follow(i, result):            # task 1 makes two more ready, task 3 one more
        return {1: [{"x": 10, "seed": 1}, {"x": 11, "seed": 2}],
                3: [{"x": 12, "seed": 3}]}.get(i, [])

    order = []
    serial = run_sweep(_square_plus_seed, tasks, workers=1, progress=False, follow=follow,
                       cost=lambda t: [1, 9, 0][t["x"]] if t["x"] < 3 else t["x"],
                       on_result=lambda i, r: order.append(i))
    # 1 first (cost 9); then 4 (cost 11) and 3 (cost 10) before 0 and 2; 3 adds 5 (cost 12)
    assert order == [1, 4, 3, 5, 0, 2]
    assert len(serial) == 6
    assert serial[3:] == [_square_plus_seed(10, 1), _square_plus_seed(11, 2),
                          _square_plus_seed(12, 3)]
    assert run_sweep(_square_plus_seed, tasks, workers=2, progress=False, follow=follow) \
        == serial
    assert run_sweep(_square_plus_seed, tasks, workers=1, scheduler="local", progress=False,
                     follow=follow) == serial


def _without_wall_clock(rows):
    """Simulation rows minus the host's wall-clock timings (the only fields allowed to differ);
    NaN (an interval not claimed) as the string "nan", so that equal rows compare equal."""
    return [{k: ("nan" if isinstance(v, float) and v != v else v) for k, v in r.items()
             if "wall" not in k} for r in rows]


def test_scheduler_address_runs_a_real_sweep_identically(tmp_path):
    """`--dask-scheduler ADDRESS`: a real simulation sweep on a running Dask cluster (its own
    processes) gives the same rows as the local processes and this process."""
    distributed = pytest.importorskip("dask.distributed")
    import argparse

    from experiments.harness.runner import add_common_arguments, context_from_args
    from experiments.harness.sim import simulate_task
    from graphs import load_trace, make_workload, save_trace

    tr = make_workload("sift", n=2000, num_queries=30, num_clusters=8, num_probes=2,
                       cache_dir=tmp_path / "cache", progress=False)
    trace = save_trace(tmp_path / "sift.npz", tr)
    tasks = [dict(system=s, trace_path=str(trace), overrides={"device.count": 2}, num_queries=12,
                  tags={"system": s}) for s in ("base", "cxl-anns", "cosmos-norank", "cosmos")]

    p = argparse.ArgumentParser()
    add_common_arguments(p)

    def sweep(*options):
        # --no-sim-cache: every sweep must simulate (the cache would serve the second one)
        args = p.parse_args(["--scale", "tiny", "--no-progress", "--no-sim-cache", *options])
        return context_from_args(args, tmp_path).sweep(simulate_task, tasks, desc="test")

    # the sweep's cost estimate (memory lines its queries read) grows with the queries
    from experiments.harness.sim import simulation_cost

    loaded = load_trace(trace)
    hops = loaded.search_hop_ptr[loaded.query_ptr[12]]
    assert simulation_cost(tasks[0]) == hops + loaded.hop_read_ptr[hops] * 2  # 128-B vectors
    assert simulation_cost({"trace_path": str(trace)}) > simulation_cost(tasks[0])
    (tmp_path / "bad.npz").write_bytes(b"not a trace")  # left to simulate_task to report
    assert simulation_cost({"trace_path": str(tmp_path / "bad.npz")}) == 0.0

    serial = sweep("--workers", "1")
    local = sweep("--workers", "2")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        dask_rows = sweep("--dask-scheduler", cluster.scheduler_address)
        assert len(cluster.scheduler.workers) == 2  # the cluster outlives the sweep's client
        done = cluster.scheduler.task_prefixes["simulate_task"].state_counts["memory"]
    assert done == len(tasks)  # every simulation ran on the cluster's workers
    assert [r["system"] for r in dask_rows] == ["base", "cxl-anns", "cosmos-norank", "cosmos"]
    assert all(r["qps"] > 0 and r["dram_requests"] > 0 for r in dask_rows)
    assert (_without_wall_clock(dask_rows) == _without_wall_clock(local)
            == _without_wall_clock(serial))
    assert len({r["qps"] for r in dask_rows}) == 4  # four different systems, not one row repeated


def test_saved_figures_are_the_same_bytes_each_time(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from experiments.harness.common import save_figure

    files = {}
    for name in ("a", "b"):
        fig, ax = plt.subplots()
        ax.plot([1, 2, 3], [3, 1, 2])
        (tmp_path / name).mkdir()
        files[name] = save_figure(fig, tmp_path / name, "plot")
        plt.close(fig)
    assert [p.name for p in files["a"]] == ["plot.png", "plot.pdf"]
    for pa, pb in zip(files["a"], files["b"]):
        assert pa.read_bytes() == pb.read_bytes(), pa.name
    # (two saves within one second would also agree with a date: check it is left out)
    assert b"/CreationDate" not in files["a"][1].read_bytes()


def test_a_worker_reads_a_trace_once_and_no_run_can_change_it(tmp_path):
    """experiments.harness.sim keeps the trace a process read last: the next task on the same file
    takes it without reading it again, a changed file is read again, the arrays are
    read-only, and the rows are those of a simulation of the file itself."""
    import os

    from cosmos.presets import get_preset
    from cosmos.simulate import simulate
    from cosmos_common import UserError
    from experiments.harness import sim
    from experiments.harness.sim import flatten_summary, simulate_task
    from graphs import make_workload, save_trace

    tr = make_workload("sift", n=2000, num_queries=30, num_clusters=8, num_probes=2,
                       cache_dir=tmp_path / "cache", progress=False)
    path = save_trace(tmp_path / "sift.npz", tr)
    first = sim.read_trace(str(path))
    assert sim.read_trace(str(path)) is first
    other = save_trace(tmp_path / "other.npz", tr)      # a second trace: both stay held
    held = sim.read_trace(str(other))
    assert sim.read_trace(str(path)) is first and sim.read_trace(str(other)) is held
    assert not first.read_node.flags.writeable and not first.query_ptr.flags.writeable
    row = simulate_task("cosmos", str(path), num_queries=12)
    direct = flatten_summary(simulate(get_preset("cosmos"), str(path), num_queries=12,
                                      progress=False).summary())
    def same(r):        # NaN (an interval not claimed) as "nan", so equal rows compare equal
        return {k: ("nan" if isinstance(v, float) and v != v else v) for k, v in r.items()
                if "wall" not in k}

    assert same(row) == same(direct)
    # the file changes: read again
    save_trace(path, make_workload("sift", n=2000, num_queries=20, num_clusters=8,
                                   num_probes=2, cache_dir=tmp_path / "cache", progress=False),
               overwrite=True)
    os.utime(path, ns=(1, 1))
    again = sim.read_trace(str(path))
    assert again is not first and again.num_queries == 20
    # errors still name the file
    with pytest.raises(UserError, match=str(path)):
        simulate_task("ivfpq-pnm", str(path), num_queries=5)
    with pytest.raises(FileNotFoundError, match="trace file not found"):
        simulate_task("cosmos", str(tmp_path / "missing.npz"))
