"""The work of ``cosmos reproduce``: its workloads and simulations in one pool, and its plan
(``--dry-run``).

Everything in one pool
----------------------
An experiment whose simulations do not depend on other results declares them with
``simulation_tasks(ctx) -> list[dict]`` (keyword arguments of
:func:`experiments.harness.sim.simulate_task`; its ``run`` sweeps exactly these).
``cosmos reproduce`` first runs, as one pool of workers (:func:`run_shared`), everything that
waits for no experiment's output:

- the workloads, one job per dataset family, one after another (each builds its index and
  traces, or reads them from the cache, and writes the trace files the simulations read);
- each specialized engine build the simulations need, compiled once as soon as a trace exists
  (otherwise every worker starting a run of a new build would compile it);
- the simulations, each as soon as its workload is built and its engine compiled. A
  simulation asked for by several experiments runs once: the tasks are keyed by what decides
  their result (:class:`experiments.harness.resultcache.ResultCache`). fig4a's runs are
  energy_per_query's, the devices and ranks sweeps' points at the preset's configuration and
  the saturation runs of the load sweep and rag_ttft
  (:func:`experiments.figures.fig4a_qps.sweep_task`);
- runs that depend on others' results (the load sweep's and rag_ttft's open-loop runs, at
  rates set by the saturation runs), as soon as those results are in, and the DRAM
  validation's replays, as one batch on one worker.

The workers stay busy to the end, costliest job first, instead of waiting at the end of each
stage or experiment for its longest job. The rows are kept in memory for the experiments (and
stored in the simulation cache as each finishes, unless ``--no-sim-cache``); each experiment
then takes its rows from there, the same rows it would have simulated itself, since a
simulation is deterministic in its arguments, and only writes its tables and plots.

Plan
----
:func:`plan` lists, without running or writing anything, the steps of a reproduction: the
workloads to build, every simulation with its queries and an estimate of its DRAM requests and
CPU time, which experiments share it, the dependent runs, and the experiments' own sweeps after
the pool as they estimate them. The estimates are stated below (:data:`REQUESTS_PER_QUERY`,
:data:`REQUESTS_PER_CPU_S`, :data:`BUILD_CPU_S`, :data:`TEMPLATE_CPU_S`).

The hooks
---------
Everything here is learned from the experiments' modules (reached through the registry,
:data:`experiments.figures.REGISTRY`); an experiment defines those it needs:

- ``simulation_tasks(ctx) -> [task]``: its simulations that wait for no other result;
- ``trace_probes(ctx) -> [num_probes]``: the probe counts it traces besides the scale's;
- ``pool_batches(ctx) -> [(fn, tasks, est_cpu_s)]``: work run one task after another on one
  worker of the pool;
- ``dependent_tasks(ctx, rows) -> [(fn, task)]``: runs at settings taken from the rows of its
  ``simulation_tasks``, and ``dependent_plan(ctx) -> (runs_at_most, what)``, the plan's line
  for them;
- ``plan_other(ctx) -> str``: other work the plan names (not estimated as simulations);
- ``plan_sweep(ctx) -> {"what": str, "cpu_s_min": s, "cpu_s_max": s} | None``: the estimate
  of the simulations it runs in its own sweep after the pool (counted in the total, spread
  over the workers; :func:`sweep_estimate` writes it, :func:`task_queries` and
  :func:`requests_per_query_at` give its parts; None: it cannot say before running);
- ``RUNS_SIMULATIONS = False``: it runs no system simulation (one without
  ``simulation_tasks`` or ``plan_sweep`` that does is listed as simulating in its own sweep,
  not estimated, and named as left out of the total).
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

__all__ = ["simulation_tasks", "run_shared", "plan", "format_plan", "makespan",
           "task_queries", "sweep_requests", "sweep_estimate", "requests_per_query",
           "requests_per_query_at", "REQUESTS_PER_QUERY",
           "REQUESTS_PER_CPU_S"]

#: DRAM requests per query of the synthetic workloads, by scale and family, to estimate a
#: simulation's work before its trace exists. full and default: measured on the 1M-vector and
#: 50,000-vector traces (fig4a's simulations of seeds 0-4: 26,900-27,200 and 76,800-77,000 at
#: full, 9,300-9,700 and 26,300-26,500 at default); paper: fig4a's paper-scale runs (43,700-43,900
#: and 128,000-129,400 on 2 and 8 templates, rounded up); tiny: the memory lines the tiny traces'
#: queries read (experiments.harness.sim.simulation_cost: 1,839 and 4,948 per query), which are within
#: 7 % of the DRAM requests simulated (5,404 requests per query against 5,068 lines on a
#: 20,000-vector SIFT-like trace).
REQUESTS_PER_QUERY = {
    "paper": {"sift": 45_000, "deep": 130_000},
    "full": {"sift": 27_000, "deep": 77_000},
    "default": {"sift": 9_500, "deep": 26_400},
    "tiny": {"sift": 2_000, "deep": 5_300},
}

#: Simulated DRAM requests per CPU second of one worker, averaged over the systems: measured
#: in the ``cosmos reproduce --full`` of docs/experiments.md (fresh clone, empty caches, two
#: cores): the pool's 80 simulations that report their engine time (every one but rag_ttft's
#: retrieval runs) made 5.86 billion requests in 1,851 seconds of it, the first run of each
#: specialized engine's compilation included (3.17 M per core-second; bench_cosmos measures
#: 2.9-3.2 M/s for cosmos alone).
REQUESTS_PER_CPU_S = 3.17e6

#: CPU seconds to build one workload of n = 1,000,000 vectors and 10,000 queries
#: (docs/performance.md, bench_graphs, quiet machine): exact ground truth (scales with
#: n x queries), index (k-means and the clusters' graphs, scales with n) and the traced search
#: of 8 probes (13.6 s on 2 threads; scales with queries x probes; one search at the largest
#: probe count asked for gives the traces of the smaller ones); dataset generation is not
#: counted (seconds).
BUILD_CPU_S = {"groundtruth": 65.4, "index": 118.5, "trace_8_probes": 27.2}

#: CPU seconds of a cluster-template workload's parts (graphs.templates), measured on the
#: paper scale's SIFT-like build (1e9 vectors, 1,024 clusters, 8 templates, 2 shared cores;
#: docs/performance.md): the geometry (k-means of 1,024 centroids on 262,144 vectors and the
#: assignment of 2 M, per 1,024 clusters), growing a template beyond the sample (per million
#: members: 20-60 M draws at 2-5 % acceptance), its hnswlib graph (per million vectors) and
#: the traced search of 10,000 queries at 8 probes. DEEP-like's: SIFT-like's scaled by the
#: ratio of the two builds' measured wall times on the same machine (growth 1,237 s vs
#: 1,379 s; hnswlib graphs 4,548 s vs about 2,700 s: DEEP-like's graphs build 1.7 times
#: slower per vector); its geometry and trace as SIFT-like's.
TEMPLATE_CPU_S = {"sift": {"geometry": 190.0, "grow_per_M": 450.0, "graph_per_M": 250.0,
                           "trace_10k_8_probes": 60.0},
                  "deep": {"geometry": 190.0, "grow_per_M": 405.0, "graph_per_M": 420.0,
                           "trace_10k_8_probes": 60.0}}


def templated_build_cpu_s(family: str, sc, probes) -> float:
    """CPU seconds to build a cluster-template workload (graphs.templates) from nothing:
    the logical geometry (k-means on 256 vectors per centroid, the sample's assignment),
    growing and building the templates (each of the mean cluster size) and one traced search
    per probe count; the constants are :data:`TEMPLATE_CPU_S`, measured at the paper scale."""
    t = TEMPLATE_CPU_S[family if family in TEMPLATE_CPU_S else "sift"]
    mean_m = sc.n / sc.num_clusters / 1e6
    return (t["geometry"] * sc.num_clusters / 1024
            + sc.templates * mean_m * (t["grow_per_M"] + t["graph_per_M"])
            + sum(t["trace_10k_8_probes"] * sc.num_queries / 1e4 * p / 8 for p in probes))


def workload_build_cpu_s(family: str, sc, probes) -> float:
    """CPU seconds to build the workload of ``family`` at scale ``sc`` from nothing, traced at
    ``probes``: :func:`templated_build_cpu_s` for a cluster-template scale; otherwise the
    exact ground truth, the clustered index and the traced search at :data:`BUILD_CPU_S`, per
    million vectors and ten thousand queries."""
    if sc.templates:
        return templated_build_cpu_s(family, sc, probes)
    frac_n, frac_q = sc.n / 1e6, sc.num_queries / 1e4
    return (BUILD_CPU_S["groundtruth"] * frac_n * frac_q + BUILD_CPU_S["index"] * frac_n
            + BUILD_CPU_S["trace_8_probes"] * frac_q * max(probes) / 8)


def simulation_tasks(names, ctx) -> list[tuple[str, dict]]:
    """``(experiment, task)`` for every simulation the experiments ``names`` declare
    (``simulation_tasks(ctx)`` of their module; an experiment without one declares none)."""
    from experiments.harness.runner import load

    out = []
    for name in names:
        hook = getattr(load(name), "simulation_tasks", None)
        if hook is not None:
            out += [(name, t) for t in hook(ctx)]
    return out


def declared_probes(modules, ctx) -> list[int]:
    """The probe counts the experiment ``modules`` trace besides the scale's (their
    ``trace_probes(ctx)`` hooks), sorted, each once."""
    return sorted({int(p) for m in modules if hasattr(m, "trace_probes")
                   for p in m.trace_probes(ctx)})


def run_shared(names, ctx) -> dict:
    """Run, as one pool, the work of the experiments ``names`` that waits for no
    experiment's output (see the module docstring):

    - the workloads: one job per family whose traces the experiments ask for
      (:func:`workload_job`), with one traced search for every probe count an experiment
      asks for (``trace_probes(ctx)``); one after another, each family's
      simulations joining the pool as soon as its workload is built;
    - each specialized engine build the simulations will run that is not compiled yet, once
      (:func:`experiments.harness.sim.compile_task`), as soon as a trace to compile it on exists;
      without this every worker that starts a run of a new build compiles it, about a
      minute each;
    - the declared simulations (``simulation_tasks(ctx)``; their trace files are declared
      before they exist, :meth:`experiments.harness.runner.Context.declaring_traces`), each distinct
      one once, as soon as its workload is built and its engine compiled;
    - each experiment's ``pool_batches(ctx) -> [(fn, tasks, est_cpu_s)]``: tasks run one
      after another on one worker (the DRAM validation's replays, which then compile their
      kernels once, not once per worker);
    - each experiment's ``dependent_tasks(ctx, rows) -> [(fn, task)]`` (runs at rates set by
      its declared simulations' rows), started as soon as those rows are in.

    Every result goes into ``ctx.shared`` (a dict shared with the experiments' contexts;
    simulations also into the simulation cache unless ``--no-sim-cache``), keyed by what
    decides it (:class:`experiments.harness.resultcache.ResultCache`), so the experiments' own sweeps
    then find their rows there. Returns: simulations asked for, distinct ones, how many of
    those were read from the simulation cache, dependent runs, workloads, engine builds
    compiled, wall seconds."""
    from experiments.harness.common import run_sweep
    from experiments.harness.runner import load
    from experiments.harness.sim import simulate_task

    if ctx.shared is None:
        raise ValueError("run_shared needs a context with a shared memo (ctx.shared = {})")
    mods = {name: load(name) for name in names}
    probes = declared_probes(mods.values(), ctx)
    with ctx.declaring_traces() as files:
        declared = {name: list(m.simulation_tasks(ctx)) for name, m in mods.items()
                    if hasattr(m, "simulation_tasks")}
    t0 = time.perf_counter()
    pool = _SharedPool(ctx)
    family_of = {str(path): fam for path, (fam, _) in files.items()}
    keys: dict[str, list] = {name: [None] * len(tasks) for name, tasks in declared.items()}
    after: dict[str, list] = {}     # family -> [(experiment, index, task)] waiting for it
    for name, tasks in declared.items():
        for j, task in enumerate(tasks):
            fam = family_of.get(str(task.get("trace_path")))
            if fam is None:         # a trace that exists already
                keys[name][j] = pool.add(simulate_task, [task])[0]
            else:
                after.setdefault(fam, []).append((name, j, task))
    built = set(after) | (set(ctx.families) if probes else set())

    loading = []

    def workload_built(fam: str) -> None:
        pool.open(f"workload {fam}")
        for name, j, task in after.pop(fam, []):
            keys[name][j] = pool.add(simulate_task, [task])[0]
        # the experiments read the scale's trace in this process: read it while the pool
        # runs, not after it (a few seconds each, otherwise on one core at the end)
        loading.append(threading.Thread(target=ctx.trace, args=(fam,), daemon=True))
        loading[-1].start()

    # one workload at a time (each uses every core in parts; two side by side contend for
    # memory bandwidth), the other workers meanwhile on the rest of the pool
    prev = None
    for fam in [f for f in ctx.families if f in built] + sorted(built - set(ctx.families)):
        own = [(n, str(path)) for path, (f, n) in files.items() if f == fam]
        pool.add_job(workload_job, [dict(family=fam, scale=ctx.scale, probes=probes, files=own,
                                         cache_dir=ctx.cache_dir, seed=ctx.seed,
                                         dataset=ctx.dataset)],
                     then=lambda _, f=fam: workload_built(f),
                     hold=None if prev is None else f"workload {prev}")
        prev = fam
    for m in mods.values():
        for fn, tasks, cpu_s in (m.pool_batches(ctx) if hasattr(m, "pool_batches") else ()):
            pool.add(fn, tasks, batch_cpu_s=cpu_s)
    waiting = {name: keys.get(name, []) for name, m in mods.items()
               if hasattr(m, "dependent_tasks")}
    dependent = 0

    def ready() -> None:
        """Add the dependent runs of experiments whose declared rows are all in."""
        nonlocal dependent
        for name, wanted in list(waiting.items()):
            if all(k is not None and k in ctx.shared for k in wanted):
                del waiting[name]
                rows = [{**(t.get("tags") or {}), **ctx.shared[k][0]}
                        for t, k in zip(declared.get(name, []), wanted)]
                before = pool.simulations
                for fn, task in mods[name].dependent_tasks(ctx, rows):
                    pool.add(fn, [task])
                dependent += pool.simulations - before

    def follow(i: int, rows: list) -> list[dict]:
        pool.done(i, rows)
        ready()
        return pool.take()

    ready()
    first = pool.take()
    if first:
        run_sweep(_run_job, first, workers=ctx.workers, scheduler=ctx.scheduler,
                  progress=ctx.progress, desc="workloads and simulations", cost=pool.cost,
                  follow=follow)
    for t in loading:
        t.join()
    distinct = {k for ks in keys.values() for k in ks}
    return {"tasks": sum(len(t) for t in declared.values()), "distinct": len(distinct),
            "from_cache": sum(1 for k in distinct if ctx.shared[k][1]),
            "dependent": dependent, "workloads": len(built), "compiled": pool.compiled,
            "wall_s": round(time.perf_counter() - t0, 1)}


def workload_job(family: str, scale, probes, files, cache_dir=None, seed: int = 0,
                 dataset: dict | None = None) -> str:
    """A job of :func:`run_shared`: build (or read from the cache) the workload of ``family``
    at ``scale``, its traces at every count of ``probes`` and at the counts of ``files``
    from one search (:func:`experiments.harness.workloads.workloads`), and save each of ``files``
    (``[(num_probes or None for the scale's, path)]``, as
    :meth:`experiments.harness.runner.Context.trace_file` names them) unless it exists."""
    from graphs import save_trace

    from experiments.harness.workloads import get_scale, workloads

    sc = get_scale(scale)
    want = {sc.num_probes if n is None else int(n): path for n, path in files}
    traces = workloads(family, sc, sorted({*map(int, probes), *want, sc.num_probes}),
                       keep=sorted(want), cache_dir=cache_dir, seed=seed, progress=False,
                       **dict(dataset or {}))
    for n, path in want.items():
        path = Path(path)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            save_trace(path, traces[n])
    return family


class _SharedPool:
    """The jobs of :func:`run_shared` (``{"fn", "tasks"}``: :func:`_run_job`'s arguments) in
    the order given to the sweep (:attr:`jobs`), and, beside them, what each is for: the
    result keys of its tasks, its place in the pool's order, what to do when it is done.

    A job may wait for a gate (:meth:`open`): a simulation whose engine build is not compiled
    yet (:func:`experiments.harness.sim.engine_build`) for the one job that compiles the build, a
    family's workload job for the previous family's."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.jobs: list[dict] = []      # given to the sweep, in its order
        self.simulations = 0            # simulation jobs added (held ones included)
        self.compiled = 0               # engine builds compiled by the pool
        self._new: list[dict] = []      # given to no sweep yet
        self._info: dict[int, dict] = {}    # id(job) -> keys, cost, then
        self._planned: set = set()
        self._held: dict[str, list] = {}    # gate -> jobs waiting for it to open
        self._open: set = set()             # gates opened

    def take(self) -> list[dict]:
        """The jobs released since the last call, in order (for the sweep)."""
        new, self._new = self._new, []
        return new

    def add_job(self, fn, tasks: list, cost: float = float("inf"), then=None,
                keys=(), hold: str | None = None) -> None:
        """One job: ``fn(**t)`` for each of ``tasks``, on one worker; ``then(result of the
        first)`` runs when it is done; ``keys``: where its results go; ``hold``: a gate it
        waits for (:meth:`open`). Jobs of the same cost start in the order added."""
        job = {"fn": fn, "tasks": list(tasks)}
        self._info[id(job)] = {"keys": list(keys), "cost": cost, "then": then}
        if hold is None or hold in self._open:
            self._release(job)
        else:
            self._held.setdefault(hold, []).append(job)

    def _release(self, job: dict) -> None:
        """Give ``job`` to the sweep: appended to :attr:`jobs`, and to what :meth:`take`
        returns next."""
        self.jobs.append(job)
        self._new.append(job)

    def add(self, fn, tasks, batch_cpu_s: float | None = None) -> list[str]:
        """Jobs for those of ``tasks`` whose results are neither in ``ctx.shared`` nor
        planned (a result in the simulation cache is read into ``ctx.shared`` instead), one
        per distinct task, or one for all of them with ``batch_cpu_s`` (its estimated CPU
        time). Returns the result key of every task given."""
        from experiments.harness.sim import simulation_cost

        cache = self.ctx.result_cache(fn)
        keys, todo = [], []
        for t in tasks:
            k = cache.key(fn, t)
            keys.append(k)
            if k in self.ctx.shared or k in self._planned:
                continue
            row = cache.get(k)
            if row is not None:
                self.ctx.shared[k] = (row, True)
                continue
            self._planned.add(k)
            todo.append((k, {a: v for a, v in t.items() if a != "tags"}))
        if batch_cpu_s is not None and todo:
            self.add_job(fn, [t for _, t in todo], cost=batch_cpu_s * REQUESTS_PER_CPU_S,
                         keys=[k for k, _ in todo])
            return keys
        simulation = self.ctx._identity(fn) is not None
        for k, t in todo:
            # experiments.harness.sim.simulation_cost is in memory lines, about DRAM requests
            self.add_job(fn, [t], cost=simulation_cost(t), keys=[k],
                         hold=self._build_to_wait_for(t) if simulation else None)
            self.simulations += simulation
        return keys

    def _build_to_wait_for(self, task: dict) -> str | None:
        """The gate of the engine build ``task`` must wait for (the build's compile job added
        if ``task`` is the first to need it), or None."""
        from experiments.harness.sim import compile_task, engine_build

        build = engine_build(task)
        if build is None:
            return None
        gate = f"build {build}"
        if gate not in self._open and gate not in self._held:
            self._held[gate] = []
            arg = {a: task[a] for a in ("system", "trace_path", "overrides", "placement")
                   if task.get(a) is not None}
            self.add_job(compile_task, [arg], then=lambda _, g=gate: self._compiled(g))
        return gate

    def _compiled(self, gate: str) -> None:
        self.compiled += 1
        self.open(gate)

    def open(self, gate: str) -> None:
        """Release the jobs waiting for ``gate``, and those that will."""
        self._open.add(gate)
        for job in self._held.pop(gate, []):
            self._release(job)

    def cost(self, job: dict) -> float:
        """A job's place in the pool's order (costliest first)."""
        return self._info[id(job)]["cost"]

    def done(self, i: int, rows: list) -> None:
        """Job ``i`` returned ``rows``: store each result (simulation cache) and keep it, or
        do what the job was for."""
        from experiments.harness.resultcache import normalize

        job = self.jobs[i]
        info = self._info[id(job)]
        if info["keys"]:
            cache = self.ctx.result_cache(job["fn"])
            for k, row in zip(info["keys"], rows):
                cache.put(k, row)
                self.ctx.shared[k] = (normalize(row), False)
        if info["then"] is not None:
            info["then"](rows[0])


def _run_job(fn, tasks: list) -> list:
    """A job of the shared pool, in a worker: ``fn(**t)`` for each of its tasks."""
    return [fn(**t) for t in tasks]


# ----------------------------------------------------------------------------- the plan


def _identity(task: dict) -> str:
    """A key of what decides the simulation's result, the trace by its path (the plan's
    traces do not exist yet: one path per workload)."""
    import json

    from experiments.harness.resultcache import normalize
    from experiments.harness.sim import simulation_identity

    return json.dumps(normalize(simulation_identity(
        {k: v for k, v in task.items() if k != "tags"})), sort_keys=True)


def _family_of(task: dict) -> str:
    return Path(task["trace_path"]).stem.split("-p")[0]


def requests_per_query(scale, family: str) -> float:
    """:data:`REQUESTS_PER_QUERY` of ``scale`` (a scale without its own row: the default's)
    for ``family`` (another family: the scale's largest)."""
    table = REQUESTS_PER_QUERY.get(scale.name) or REQUESTS_PER_QUERY["default"]
    return float(table.get(family, max(table.values())))


def task_queries(task: dict, trace_queries: int) -> tuple[int, int]:
    """(fewest, most) queries a simulation ``task`` replays of a trace of ``trace_queries``:
    all of its ``num_queries`` (or the trace's), or, with a ``ci_target``, from the stop
    test's minimum on (cosmos.simulate.ci_min_completions: stopping at its first test, with
    the task's queries in flight or its system's default)."""
    from cosmos.simulate import ci_min_completions, default_max_inflight
    from experiments.harness.sim import _system_config

    most = trace_queries if task.get("num_queries") is None else \
        min(int(task["num_queries"]), trace_queries)
    if task.get("ci_target") is None:
        return most, most
    cfg = _system_config(task["system"], task.get("overrides"), task.get("placement"))
    inflight = task.get("max_inflight") or default_max_inflight(cfg)
    return min(most, ci_min_completions(inflight, task.get("mode", "closed"))), most


def requests_per_query_at(family: str, n: int) -> float:
    """DRAM requests per query of the synthetic ``family``'s workload of ``n`` vectors, an
    estimate: :data:`REQUESTS_PER_QUERY` at the scales' sizes (3,000 to 10^9 vectors),
    interpolated linearly in log n between them and held beyond the ends (between 50,000 and
    1M it gives about 13,500 for SIFT-like at 100,000 vectors, where the former
    100,000-vector default trace measured about 14,000)."""
    import numpy as np

    from experiments.harness.workloads import SCALES

    pts = sorted((SCALES[k].n, v.get(family, max(v.values())))
                 for k, v in REQUESTS_PER_QUERY.items())
    return float(np.interp(np.log(n), np.log([p[0] for p in pts]), [p[1] for p in pts]))


def sweep_requests(tasks, trace_queries: int, work) -> tuple[float, float]:
    """(low, high) DRAM requests of simulation ``tasks`` on traces of ``trace_queries``
    queries: each task's (fewest, most) queries (:func:`task_queries`) x ``work(task)``, its
    DRAM requests per query."""
    lo = hi = 0.0
    for t in tasks:
        q_lo, q_hi = task_queries(t, trace_queries)
        w = work(t)
        lo, hi = lo + q_lo * w, hi + q_hi * w
    return lo, hi


def sweep_estimate(what: str, requests_min: float, requests_max: float, ctx,
                   build_cpu_s: float = 0.0) -> dict:
    """An experiment's ``plan_sweep`` answer for simulations of ``requests_min`` to
    ``requests_max`` DRAM requests in all, after ``build_cpu_s`` CPU seconds of workloads it
    builds itself: ``what`` followed by the requests, the CPU time (simulations at
    :data:`REQUESTS_PER_CPU_S`, builds included) and the time on the context's workers."""
    cpu_lo = requests_min / REQUESTS_PER_CPU_S + build_cpu_s
    cpu_hi = requests_max / REQUESTS_PER_CPU_S + build_cpu_s
    workers = max(1, int(getattr(ctx, "workers", None) or 2))

    def span(lo, hi, unit, scale):
        a, b = f"{lo / scale:,.1f}", f"{hi / scale:,.1f}"
        return f"{a} {unit}" if a == b else f"{a}-{b} {unit}"

    big = requests_max >= 1e9
    req = span(requests_min, requests_max, "G" if big else "M", 1e9 if big else 1e6)
    hours = cpu_hi >= 3600
    unit, scale = ("CPU hours", 3600) if hours else ("CPU minutes", 60)
    wall = ("h", 3600 * workers) if hours else ("min", 60 * workers)
    builds = (f", {span(build_cpu_s, build_cpu_s, unit, scale)} of it building its workloads"
              if build_cpu_s else "")
    text = (f"estimate of its own sweep (run after the pool): {what}; {req} DRAM requests, "
            f"{span(cpu_lo, cpu_hi, unit, scale)}{builds} ({span(cpu_lo, cpu_hi, *wall)} on "
            f"{workers} workers)")
    return {"what": text, "cpu_s_min": cpu_lo, "cpu_s_max": cpu_hi}


def plan(names, ctx) -> dict:
    """The steps of ``cosmos reproduce`` of experiments ``names`` at ``ctx.scale``, with
    estimated costs, computed from the experiments' declarations only: nothing is built, run or
    written. ``ctx`` comes from :func:`plan_context`."""
    from experiments.harness.runner import load

    sc = ctx.scale
    # workloads: every family at the scale's probes, and the counts experiments trace besides
    # (their trace_probes hook, as run_shared traces them)
    traces = {(f, None) for f in ctx.families}
    traces |= {(f, min(p, sc.num_clusters)) for p in declared_probes(map(load, names), ctx)
               for f in ctx.families}
    traces = {(f, None if p == sc.num_probes else p) for f, p in traces}
    workloads = []
    for fam in ctx.families:
        probes = sorted({p or sc.num_probes for f, p in traces if f == fam})
        cpu = workload_build_cpu_s(fam, sc, probes)
        workloads.append({"family": fam, "n": sc.n, "queries": sc.num_queries,
                          "clusters": sc.num_clusters, "trace_probes": probes,
                          "templates": sc.templates, "est_cpu_s": cpu})
    # simulations of the shared pool
    sims: dict[str, dict] = {}
    asked = 0
    for name, task in simulation_tasks(names, ctx):
        asked += 1
        key = _identity(task)
        if key in sims:
            if name not in sims[key]["experiments"]:
                sims[key]["experiments"].append(name)
            continue
        fam = _family_of(task)
        lo, hi = task_queries(task, sc.num_queries)
        per_q = requests_per_query(sc, fam)
        sims[key] = {"experiments": [name], "system": task["system"], "dataset": fam,
                     "overrides": dict(task.get("overrides") or {}),
                     "mode": task.get("mode", "closed"),
                     "max_inflight": task.get("max_inflight"),
                     "queries_min": lo, "queries_max": hi,
                     "ci_target": task.get("ci_target"),
                     "est_requests_min": lo * per_q, "est_requests_max": hi * per_q}
    rows = sorted(sims.values(), key=lambda r: -r["est_requests_max"])
    dependent = []
    for name in names:
        hook = getattr(load(name), "dependent_plan", None)
        if hook is None:
            continue
        n, what = hook(ctx)
        per_q = requests_per_query(sc, ctx.families[0])
        dependent.append({"experiment": name, "runs_at_most": n, "what": what,
                          "queries": sc.sweep_queries, "dataset": ctx.families[0],
                          "est_requests_max": n * sc.sweep_queries * per_q})
    other = []
    batches = [cpu for n in names if hasattr(load(n), "pool_batches")
               for _, _, cpu in load(n).pool_batches(ctx)]
    sweeps, estimated = [], set()
    for n in names:
        hook = getattr(load(n), "plan_sweep", None)
        s = hook(ctx) if hook is not None else None
        if s is not None:
            other.append({"experiment": n, "what": s["what"]})
            sweeps.append((s["cpu_s_min"], s["cpu_s_max"]))
            estimated.add(n)
    silent = [n for n in names if getattr(load(n), "simulation_tasks", None) is None
              and n not in estimated and getattr(load(n), "RUNS_SIMULATIONS", True)]
    if silent:
        other.append({"experiment": ", ".join(silent),
                      "what": "simulations not declared to the plan (run by the "
                              "experiment's own sweep; not estimated)"})
    from experiments.harness.runner import REPLICATED

    replicated = [n for n in names if n in REPLICATED]
    if ctx.replications > 1 and replicated:
        fig = {n: sum(1 for m, _ in simulation_tasks([n], ctx) if m == n) for n in replicated}
        more = ctx.replications - 1
        other.append({"experiment": ", ".join(replicated),
                      "what": f"{more} more replication{'s' if more > 1 else ''} (seeds "
                              f"{', '.join(map(str, ctx.seeds[1:]))}): {more} more workload"
                              f"{'s' if more > 1 else ''} per family and "
                              f"{more * sum(fig.values())} more simulations, run by the "
                              "experiment's own sweep after the pool (not estimated; each "
                              "replication costs about what the first does)"})
    for n in names:
        hook = getattr(load(n), "plan_other", None)
        if hook is not None:
            other.append({"experiment": n, "what": hook(ctx)})
    workers = ctx.workers or _cpu_count()
    est = _estimate(workloads, rows, dependent, batches, workers, sweeps)
    est["not_estimated"] = silent
    return {"scale": sc.name, "experiments": list(names), "workers": workers,
            "workloads": workloads, "simulations": rows, "asked": asked,
            "dependent": dependent, "other": other, "estimate": est}


def _cpu_count() -> int:
    import os

    return os.cpu_count() or 1


def makespan(costs, workers: int) -> float:
    """When the last of tasks of run times ``costs`` ends on ``workers`` workers that take
    them in decreasing cost, each as soon as it is free (experiments.harness.common.run_sweep's
    order)."""
    import heapq

    free = [0.0] * max(1, int(workers))
    for c in sorted(costs, reverse=True):
        heapq.heappush(free, heapq.heappop(free) + c)
    return max(free)


def _estimate(workloads, sims, dependent, batches_cpu_s, workers: int, sweeps=()) -> dict:
    """Wall-time estimate in seconds (low: every ci_target run stops at its minimum; high:
    none stops early): workloads using every core, then one pool of ``workers`` taking the
    simulations, the dependent runs (at most) and the batches (``batches_cpu_s``, CPU
    seconds each) costliest first (the dependent runs wait for their saturation runs, which
    run early, costliest first, so this is a small underestimate), then the experiments' own
    sweeps (``sweeps``: (low, high) CPU seconds each, spread over the workers)."""
    build = sum(w["est_cpu_s"] for w in workloads) / workers
    dep = []
    for d in dependent:
        dep += [d["est_requests_max"] / d["runs_at_most"] / REQUESTS_PER_CPU_S] \
            * d["runs_at_most"]
    out = {"workloads_s": build, "dependent_cpu_s": sum(dep)}
    for i, end in enumerate(("min", "max")):
        cpu = [s[f"est_requests_{end}"] / REQUESTS_PER_CPU_S for s in sims]
        out[f"pool_{end}_s"] = makespan(cpu + dep + list(batches_cpu_s), workers)
        out[f"sweeps_{end}_s"] = sum(s[i] for s in sweeps) / max(1, int(workers))
        out[f"total_{end}_s"] = build + out[f"pool_{end}_s"] + out[f"sweeps_{end}_s"]
    return out


def format_plan(p: dict) -> str:
    """The plan as text for the terminal."""
    def mreq(v):
        return f"{v / 1e6:,.1f} M" if v < 1e7 else f"{v / 1e6:,.0f} M"

    def mins(s):
        return f"{s / 60:.1f} min" if s < 7200 else f"{s / 3600:.1f} h"

    def span(what):     # a (low, high) estimate of p["estimate"]: one figure when they agree
        lo, hi = mins(p["estimate"][f"{what}_min_s"]), mins(p["estimate"][f"{what}_max_s"])
        return lo if lo == hi else f"{lo}-{hi}"

    lines = [f"cosmos reproduce --scale {p['scale']} --dry-run: the plan (nothing is run or "
             f"written); experiments: {', '.join(p['experiments'])}", "",
             "1. workloads (each built once and cached; estimates from docs/performance.md):"]
    for w in p["workloads"]:
        kind = (f"{w['templates']} template clusters (graphs.templates)" if w.get("templates")
                else "exact ground truth")
        lines.append(f"   {w['family']}: {w['n']:,} vectors, {w['queries']:,} queries, {kind}, "
                     f"{w['clusters']} clusters, traces at "
                     f"{'/'.join(map(str, w['trace_probes']))} probes: "
                     f"~{w['est_cpu_s']:,.0f} CPU s")
    sims = p["simulations"]
    shared = sum(1 for s in sims if len(s["experiments"]) > 1)
    lines += ["", f"2. simulations of every experiment, one pool of {p['workers']} worker(s), "
                  f"costliest first: {p['asked']} asked for, {len(sims)} distinct "
                  f"({shared} serve more than one experiment)",
              f"   {'system':<16} {'dataset':<8} {'options':<24} {'queries':>13} "
              f"{'DRAM requests':>15}  experiments"]
    for s in sims:
        opts = [f"{k}={v}" for k, v in s["overrides"].items()]
        if s["max_inflight"]:
            opts.append(f"inflight={s['max_inflight']}")
        if s["ci_target"]:
            opts.append(f"ci={s['ci_target']:g}")
        q = (f"{s['queries_max']:,}" if s["queries_min"] == s["queries_max"]
             else f"{s['queries_min']:,}-{s['queries_max']:,}")
        r = (mreq(s["est_requests_max"]) if s["queries_min"] == s["queries_max"]
             else f"{s['est_requests_min'] / 1e6:,.0f}-{s['est_requests_max'] / 1e6:,.0f} M")
        lines.append(f"   {s['system']:<16} {s['dataset']:<8} {' '.join(opts):<24} {q:>13} "
                     f"{r:>15}  {', '.join(s['experiments'])}")
    lo = sum(s["est_requests_min"] for s in sims)
    hi = sum(s["est_requests_max"] for s in sims)
    lines.append(f"   total {lo / 1e9:.2f}-{hi / 1e9:.2f} G DRAM requests (a range where runs "
                 f"stop at their confidence-interval target)")
    if p["dependent"]:
        lines += ["", "3. runs that depend on the saturation runs above (in the same pool, "
                      "started as soon as those are in):"]
        for d in p["dependent"]:
            lines.append(f"   {d['experiment']}: up to {d['runs_at_most']} {d['what']}, "
                         f"{d['queries']:,} queries of {d['dataset']} each, up to "
                         f"{mreq(d['est_requests_max'])} DRAM requests")
    if p["other"]:
        lines += ["", "4. other work:"] + [f"   {o['experiment']}: {o['what']}"
                                          for o in p["other"]]
    e = p["estimate"]
    lines += ["", f"estimate from an empty cache on {p['workers']} worker(s) (at "
                  f"{REQUESTS_PER_CPU_S / 1e6:.1f} M DRAM requests per CPU second, measured "
                  f"cold, compilation included; quiet machine): workloads "
                  f"{mins(e['workloads_s'])}, the pool (simulations, dependent runs, "
                  f"batches) {span('pool')}"
                  + (f", the experiments' own sweeps {span('sweeps')}" if e.get("sweeps_max_s")
                     else "")
                  + f"; total {span('total')}"
                  + (f", not counting {', '.join(e['not_estimated'])} (not estimated)"
                     if e.get("not_estimated") else "")]
    return "\n".join(lines)


def plan_context(args):
    """A :class:`experiments.harness.runner.Context` for the plan: its traces are paths that are
    never built (``trace_file``), and nothing is written."""
    from experiments.harness.runner import Context, check_args, scale_from_args

    ds = check_args(args)

    class PlanContext(Context):
        def trace_file(self, family, num_probes=None):
            name = f"{family}.npz" if num_probes is None else f"{family}-p{num_probes}.npz"
            return Path("traces") / name

        def trace(self, family, num_probes=None):
            raise RuntimeError("the plan builds no trace")

        def sweep(self, fn, tasks, desc):
            raise RuntimeError("the plan runs no simulation")

    return PlanContext(out=Path("."), scale=scale_from_args(args), cache_dir=None,
                       workers=args.workers, scheduler=args.scheduler, dataset=ds,
                       progress=False, seed=args.seed,
                       replications=getattr(args, "replications", 1))


def print_plan(args, names) -> int:
    """``cosmos reproduce --dry-run``."""
    ctx = plan_context(args)
    print(format_plan(plan(names, ctx)))
    sys.stdout.flush()
    return 0
