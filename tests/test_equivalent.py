"""Merging the simulations of a sweep that are the same simulation (experiments.harness.equivalent).

The probe must find a field the system does not read (the GPC's for a search on the host, the
rank PU's for a system without one) and must not hide one it does read; and a pair it merges
must be the same simulation: both, simulated in full, give the same figures."""

from __future__ import annotations

import pytest

from experiments.harness.equivalent import RUN_OPTIONS, WALL_FIELDS, probe_task, runs_as
from experiments.harness.sim import simulate_task
from experiments.harness.workloads import get_scale

#: (system, override) pairs whose probe finds the default's simulation, and pairs it must not
SAME = [("base", {"gpc.clock_GHz": 1.0}), ("base", {"gpc.cores": 16}),
        ("cxl-anns", {"rank_pu.pipeline_latency_ns": 20.0}),
        ("cosmos", {"cxl_anns.accel_latency_ns": 50.0}),
        ("cosmos", {"gpc.distance_dims_per_cycle": 2.0})]
DIFFERENT = [("cosmos", {"gpc.clock_GHz": 1.0}), ("base", {"link.latency_ns": 25.0}),
             ("cosmos-norank", {"gpc.distance_dims_per_cycle": 2.0}),
             ("cxl-anns", {"cxl_anns.accel_latency_ns": 50.0}),
             ("cosmos", {"rank_pu.pipeline_latency_ns": 20.0})]


@pytest.fixture(scope="module")
def trace_path(tmp_path_factory):
    from graphs import save_trace

    from experiments.harness.workloads import workload

    path = tmp_path_factory.mktemp("eq") / "sift.npz"
    save_trace(path, workload("sift", "tiny", progress=False))
    return str(path)


class Serial:
    """The part of experiments.harness.runner.Context that runs_as uses, in this process."""

    def __init__(self):
        self.probed = 0

    def sweep(self, fn, tasks, desc):
        self.probed += len(tasks)
        return [fn(**t) for t in tasks]


def _task(system, trace_path, overrides=None, **options):
    return dict(system=system, trace_path=trace_path, overrides=dict(overrides or {}),
                num_queries=get_scale("tiny").sweep_queries, seed=0, warmup=0.1,
                tags={"system": system}, **options)


@pytest.mark.parametrize("system,overrides", SAME + DIFFERENT)
def test_probe_tells_a_field_the_system_reads_from_one_it_does_not(trace_path, system,
                                                                   overrides):
    a = probe_task(**_task(system, trace_path))
    b = probe_task(**_task(system, trace_path, overrides))
    assert a == probe_task(**_task(system, trace_path))        # deterministic
    assert (a == b) == ((system, overrides) in SAME)


@pytest.mark.parametrize("system,overrides", SAME)
def test_a_merged_pair_is_the_same_simulation_in_every_figure(trace_path, system, overrides):
    a = simulate_task(**_task(system, trace_path))
    b = simulate_task(**_task(system, trace_path, overrides))
    for k in WALL_FIELDS:
        a.pop(k), b.pop(k)
    assert a.keys() == b.keys()
    assert all(a[k] == b[k] or (a[k] != a[k] and b[k] != b[k]) for k in a), \
        [k for k in a if a[k] != b[k]]


def test_runs_as_merges_only_equal_probes_of_equal_run_options(trace_path):
    ref = _task("base", trace_path)
    tasks = [ref,
             _task("base", trace_path, {"gpc.clock_GHz": 1.0}),          # the same as 0
             _task("base", trace_path, {"link.latency_ns": 25.0}),       # Base reads it
             {**_task("base", trace_path, {"gpc.clock_GHz": 1.0}), "num_queries": 7},
             _task("base", trace_path, {"gpc.cores": 16}),               # the same as 0
             _task("base", trace_path, {"link.latency_ns": 25.0,         # the same as 2
                                        "rank_pu.pipeline_latency_ns": 20.0})]
    ctx = Serial()
    assert runs_as(ctx, tasks) == [0, 0, 2, 3, 0, 2]
    # the task of other run options is alone: it is not probed
    assert ctx.probed == 5
    assert "num_queries" in RUN_OPTIONS and "trace_path" in RUN_OPTIONS
    assert runs_as(ctx, tasks[3:4]) == [0] and ctx.probed == 5
