"""Which simulations of a sweep are the same simulation under another name.

A sweep that changes one configuration field at a time changes, for many systems, a field the
system never reads: the GPC's clock for a search on the host, the rank PU's latency for a
system without rank PUs, CXL-ANNS's accelerator for every other system. Such a run is the
reference run again, at the whole cost of a simulation. This module finds them without a
hand-kept table of which system reads which field, by asking the model itself.

:func:`probe_task` prepares a run on the first :data:`PROBE_QUERIES` queries of its trace
(:func:`cosmos.simulate.prepare`) and returns two digests:

- ``engine``: every input of the engine (:func:`cosmos.simulate.run`), byte for byte: the
  program (per-step classes and costs, the layout's addresses), the contexts of every pool
  that a task of the program runs in (the GPC's core count is no input of a search on the
  host), the link, switch and mapping slots of :func:`cosmos.simulate.engine_config`, the DRAM
  parameters and the controllers' initial state, the placement, the queries in flight, the
  loop mode and its arrivals' rate and seed;
- ``figures``: every figure of the summary of simulating those queries (energy included; the
  wall-clock fields left out), which covers what the summary reads of the configuration after
  the engine.

Two tasks with the same run options (trace, stop rule, warm-up) and the same two digests are
treated as one simulation (:func:`runs_as`). Why that carries over from the probe's queries to
the whole trace: the engine is a deterministic function of its inputs, and the
configuration enters the inputs only through per-step and per-class constants, pool sizes and
slots that :mod:`cosmos.program` and :func:`~cosmos.simulate.engine_config` compute the same
way for every query. It is a test on the probe, not a proof: a figure the summary computes
from a configuration field times a counter that stays zero on the probe's queries but not on
the whole trace would escape it. tests/test_equivalent.py simulates merged pairs in full and
finds them equal in every figure; so did a check of every pair the sensitivity table (182) and
the lever maps (52) merge at ``--scale tiny``, and of two at the full scale, each run stopped by
the +-1 % rule (Base with a 1 GHz GPC clock, Cosmos with a 50 ns CXL-ANNS accelerator).

Cost: a probe lays out the trace's whole index and simulates 64 queries, about 0.2 s at
``--scale tiny`` and 2 s at the full scale, where the sensitivity table's 540 probes took 11
minutes on 2 workers. The merges the tiny table makes are a third of the full table's work (by
:func:`experiments.harness.sim.simulation_cost`): about 2.8 of its 8.5 estimated CPU hours.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np

__all__ = ["PROBE_QUERIES", "probe_task", "runs_as", "sweep_once", "RUN_OPTIONS"]

#: queries a probe prepares and simulates: enough that every kind of step of the system occurs
#: (each query searches several clusters on several devices), few enough that a probe costs
#: a small fraction of a simulation (an estimate)
PROBE_QUERIES = 64

#: the task options that must be equal for two tasks to be compared at all: the trace and how
#: the run is stopped and summarized (the configuration and the queries in flight are what
#: the probe compares)
RUN_OPTIONS = ("trace_path", "num_queries", "mode", "rate_qps", "seed", "warmup", "ci_target",
               "timeline_queries", "per_device")

#: summary fields that measure the host running the simulation, not the simulated system
WALL_FIELDS = ("wall_s", "requests_per_wall_s")


def _update(h, name: str, value) -> None:
    """Feed ``name`` and ``value`` (an array, a numpy record or a plain value) to hash ``h``."""
    h.update(name.encode())
    if isinstance(value, (np.ndarray, np.record, np.generic)):
        a = np.ascontiguousarray(np.asarray(value))
        h.update(f"{a.dtype.str}{a.dtype.descr}{a.shape}".encode())
        h.update(a.tobytes())
    else:
        h.update(repr(value).encode())


def engine_digest(prep) -> str:
    """The digest of everything :func:`cosmos.simulate.run` hands the engine for ``prep`` (a
    :class:`cosmos.simulate.Prepared`): see the module docstring."""
    from cosmos.simulate import engine_config

    h = hashlib.sha256()
    for name, arr in zip(type(prep.program)._fields, prep.program):
        _update(h, f"program.{name}", arr)
    cf, ci = engine_config(prep)
    # a pool no task runs in is never asked for a context: its size changes nothing
    used = np.zeros(len(prep.pool_sizes), bool)
    used[np.unique(prep.program.task_pool)] = True
    pools = np.where(used, prep.pool_sizes, 0)
    for name, value in (("cf", cf), ("ci", ci), ("pool_sizes", pools),
                        ("params", prep.params), ("params1", prep.params1),
                        ("heap0", prep.heap0), ("cluster_device", prep.cluster_device),
                        ("num_instances", prep.num_instances),
                        ("max_inflight", prep.max_inflight), ("mode", prep.mode),
                        ("rate_qps", prep.rate_qps), ("seed", prep.seed)):
        _update(h, name, value)
    return h.hexdigest()


def figures_digest(flat: dict) -> str:
    """The digest of a flat summary row (:func:`cosmos.metrics.flatten_summary`) without its
    wall-clock fields: floats by their exact representation, NaN equal to NaN."""
    kept = {k: v for k, v in flat.items() if k not in WALL_FIELDS}
    text = json.dumps(kept, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def probe_task(system: str, trace_path: str, *, overrides: dict | None = None,
               placement: str | None = None, max_inflight: int | None = None,
               mode: str = "closed", rate_qps: float | None = None, seed: int = 0,
               warmup: float = 0.1, probe_queries: int = PROBE_QUERIES, **_run_options) -> dict:
    """``{"engine": digest, "figures": digest}`` of preset ``system`` with ``overrides`` on the
    first ``probe_queries`` queries of the trace at ``trace_path`` (the module docstring).
    Takes a :func:`experiments.harness.sim.simulate_task` task as it is: the options that stop
    and tag the whole run (``num_queries``, ``ci_target``, ``tags``, ...) are compared by
    :func:`runs_as` instead, so they are accepted and not used."""
    from cosmos.metrics import flatten_summary
    from cosmos.simulate import collect, prepare, run

    from experiments.harness.sim import _system_config, read_trace

    cfg = _system_config(system, overrides, placement)
    prep = prepare(cfg, read_trace(trace_path), num_queries=probe_queries, mode=mode,
                   rate_qps=rate_qps, max_inflight=max_inflight, seed=seed,
                   trace_name=str(trace_path))
    digest = engine_digest(prep)
    ran = run(prep, progress=False, warmup=warmup)
    flat = flatten_summary(collect(prep, ran).summary(warmup=warmup))
    return {"engine": digest, "figures": figures_digest(flat)}


def _options_key(task: dict) -> str:
    """The run options of ``task`` (:data:`RUN_OPTIONS`) as one comparable text."""
    return json.dumps({k: task.get(k) for k in RUN_OPTIONS}, sort_keys=True, default=repr)


def runs_as(ctx, tasks: list[dict]) -> list[int]:
    """For every task of ``tasks``, the index of the first task that is the same simulation
    (the same run options and equal probes; its own index if none before it is). Only tasks
    that share their run options with another are probed; the probes run through
    ``ctx.sweep`` (local processes or Dask, like the simulations) and are not cached: each
    costs a fraction of a second at ``--scale tiny`` and about two seconds at the full scale,
    mostly laying out the trace's index."""
    keys = [_options_key(t) for t in tasks]
    by_options: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        by_options.setdefault(key, []).append(i)
    need = [i for group in by_options.values() if len(group) > 1 for i in group]
    probes = dict(zip(need, ctx.sweep(probe_task, [tasks[i] for i in need], desc="probes")
                      if need else []))
    first: dict[tuple, int] = {}
    out = []
    for i, key in enumerate(keys):
        if i not in probes:
            out.append(i)
            continue
        out.append(first.setdefault((key, probes[i]["engine"], probes[i]["figures"]), i))
    return out


def sweep_once(ctx, fn, tasks: list[dict], desc: str) -> tuple[list, list[int]]:
    """``(rows, same)``: ``fn(**task)``'s row for every task of ``tasks`` through
    ``ctx.sweep``, each distinct simulation run once (``same``: :func:`runs_as`, the index of
    the task whose row each task took)."""
    same = runs_as(ctx, tasks)
    distinct = sorted(set(same))
    ran = dict(zip(distinct, ctx.sweep(fn, [tasks[i] for i in distinct], desc=desc)))
    return [ran[j] for j in same], same
