"""What every experiment shares: its run context, its command line, and its results folder.

An experiment is a module of :mod:`experiments.figures`, named in its registry
(:data:`experiments.figures.REGISTRY`, from which :data:`EXPERIMENTS` and the other tables
below are made), with

- ``NAME`` and ``TITLE``;
- ``run(ctx) -> dict``: computes, writes tidy CSV(s) into ``ctx.out`` and returns headline
  figures (shown in the final table of ``cosmos reproduce``);
- ``plot(folder)``: draws PNG and PDF plots from the CSVs in ``folder`` only;
- ``summary_md(folder) -> str``: a short markdown section with our figures next to the paper's,
  again from the CSVs only.

:func:`run_experiment` wraps those three into one results folder with ``config.json``
(everything needed to rerun) and ``summary.md``. Each script's ``main`` is
:func:`script_main`, so every figure runs on its own:
``python experiments/figures/fig4a_qps.py --scale tiny``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import shlex
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from cosmos_common.outdir import add_results_options
from cosmos_common.terminal import progress_wanted
from cosmos_common.vocabulary import add_renamed
from experiments.figures import REGISTRY
from experiments.harness import workloads as _workloads
from experiments.harness.common import atomic_write_text, new_results_dir, write_json
from experiments.harness.replications import parse_replications
from experiments.harness.workloads import (SCALES, Scale, get_scale, user_dataset_note,
                                           user_dataset_plan, workload)

#: experiment name -> module, in the order ``cosmos reproduce`` runs them (all of
#: :data:`experiments.figures.REGISTRY` but those run only when named)
EXPERIMENTS = {e.name: e.module for e in REGISTRY if not e.on_request}

#: experiments run only when named (``cosmos run NAME``, ``cosmos reproduce --only NAME``)
ON_REQUEST = {e.name: e.module for e in REGISTRY if e.on_request}

#: every experiment, by name
ALL_EXPERIMENTS = {**EXPERIMENTS, **ON_REQUEST}

#: experiments that run ``--replications R`` (experiments.harness.replications); the others run
#: replication 0 (``--seed`` itself) alone, and ``cosmos run`` refuses R > 1 for them
REPLICATED = tuple(e.name for e in REGISTRY if e.replicated)

#: experiments of :data:`EXPERIMENTS` that ``cosmos reproduce --full`` runs only when named
#: (``--only``): at 1M vectors their sweeps simulate more than every other experiment together
FULL_ON_REQUEST = tuple(e.name for e in REGISTRY if e.full_on_request and not e.on_request)

#: what ``cosmos reproduce --scale paper`` runs when ``--only`` is not given: the paper's
#: figures and the per-query energy and RAG figures at a billion vectors (the sweeps over
#: devices, ranks, load and parameters stay at the smaller scales, where an index is real)
PAPER_SCALE = tuple(e.name for e in REGISTRY if e.paper_scale)

#: experiments that take ``--set PREFIX.FIELD=VALUE`` settings -> their prefix
SETTINGS = {e.name: e.settings for e in REGISTRY if e.settings}


def reproduce_names(scale: str) -> list[str]:
    """The experiments ``cosmos reproduce`` runs at ``scale`` when ``--only`` is not given."""
    if scale == "paper":
        return [n for n in EXPERIMENTS if n in PAPER_SCALE]
    return [n for n in EXPERIMENTS if not (scale == "full" and n in FULL_ON_REQUEST)]


@dataclass
class Context:
    """Where and how an experiment runs."""

    out: Path  # the experiment's own (new, empty) results folder
    scale: Scale
    cache_dir: Path | None = None
    workers: int | None = None  # local worker processes (None = all cores)
    scheduler: str | None = None  # Dask scheduler address, or "local"
    dataset: dict | None = None  # user files: {"dataset": PATH, "queries", "groundtruth", "metric"}
    progress: bool = True
    seed: int = 0
    #: independent workload instances per point (experiments.harness.replications: replication r
    #: runs with seed ``seed + r``; 1 = this seed alone)
    replications: int = 1
    traces_dir: Path | None = None  # where sweep inputs are saved (default: out/traces)
    options: list[str] = field(default_factory=list)  # command-line options that rerun this
    sim_cache: bool = True  # read and write finished simulations under cache_dir/simulations
    _traces: dict = field(default_factory=dict, repr=False)
    #: simulations already run or read by this reproduction, shared by its experiments'
    #: contexts (experiments.harness.resultcache.ResultCache's memo; None: none kept)
    shared: dict | None = field(default=None, repr=False)
    #: simulations of this context's sweeps: [read from the cache, total]
    sims: list = field(default_factory=lambda: [0, 0], repr=False)
    #: trace files handed out by :meth:`trace_file` inside :meth:`declaring_traces`
    _declared: dict | None = field(default=None, repr=False)

    @property
    def seeds(self) -> list[int]:
        """The seeds of the replications, replication 0 first (:attr:`seed` itself)."""
        from experiments.harness.replications import replication_seeds

        return replication_seeds(self.seed, self.replications)

    def replica(self, r: int) -> "Context":
        """The context of replication ``r`` (experiments.harness.replications): this context itself
        for r = 0; otherwise the same folders, caches, workers, shared pool and counters with
        the seed ``seed + r``, its own traces (in memory, and on disk under
        ``traces/seed<seed + r>/``) and one replication."""
        from dataclasses import replace

        from experiments.harness.replications import replication_seed

        if r == 0:
            return self
        if self._declared is not None:
            raise RuntimeError("replications other than the first declare no traces "
                               "(their workloads are built by the experiment's own sweep)")
        seed = replication_seed(self.seed, r)
        folder = (self.traces_dir or self.out / "traces") / f"seed{seed}"
        return replace(self, seed=seed, traces_dir=folder, replications=1, _traces={},
                       _declared=None, shared=self.shared, sims=self.sims)

    def replicated_sweep(self, fn, tasks_of, desc: str) -> list[dict]:
        """:meth:`sweep` of ``fn`` over the tasks ``tasks_of(ctx_r)`` of every replication's
        context (:meth:`replica`), as one sweep (the workers stay busy across replications);
        each row leads with ``replication`` (0, 1, ...) and ``seed``. The workloads of the
        replications are built (or read from the cache) first, one after another."""
        tasks, tags = [], []
        for r, seed in enumerate(self.seeds):
            own = list(tasks_of(self.replica(r)))
            tasks += own
            tags += [{"replication": r, "seed": seed}] * len(own)
        rows = self.sweep(fn, tasks, desc=desc)
        return [{**t, **row} for t, row in zip(tags, rows)]

    @property
    def families(self) -> list[str]:
        """Workload families: the SIFT-like and DEEP-like sets, or the user's dataset."""
        if self.dataset:
            return [Path(self.dataset["dataset"]).stem]
        return ["sift", "deep"]

    def trace(self, family: str, num_probes: int | None = None):
        """The logical trace of ``family`` (cached on disk by graphs, and here in memory)."""
        if num_probes == self.scale.num_probes:
            num_probes = None  # the scale's own trace: one copy in memory, not two
        key = (family, num_probes)
        if key not in self._traces:
            kw = dict(self.dataset or {})
            self._traces[key] = workload(family, self.scale, num_probes=num_probes,
                                         cache_dir=self.cache_dir, seed=self.seed,
                                         progress=self.progress, **kw)
        return self._traces[key]

    def trace_file(self, family: str, num_probes: int | None = None) -> Path:
        """The trace saved under ``out/traces`` (sweep workers load it by path). Inside
        :meth:`declaring_traces`, only its path: nothing is built or written."""
        from graphs import save_trace

        folder = self.traces_dir or self.out / "traces"
        path = folder / (f"{family}.npz" if num_probes is None else f"{family}-p{num_probes}.npz")
        if self._declared is not None:
            self._declared[path] = (family, num_probes)
            return path
        folder.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            save_trace(path, self.trace(family, num_probes))
        return path

    @contextmanager
    def declaring_traces(self):
        """Within it, :meth:`trace_file` gives paths without building the traces, and the
        dict yielded collects them: ``{path: (family, num_probes)}`` (so experiments can
        declare their simulations before the workloads exist; experiments.harness.plan.run_shared
        builds those in its pool)."""
        self._declared = {}
        try:
            yield self._declared
        finally:
            self._declared = None

    def sim_cache_dir(self) -> Path | None:
        """Where finished simulations are kept (None: the cache is off)."""
        from graphs.index import default_cache_dir

        if not self.sim_cache:
            return None
        return (Path(self.cache_dir) if self.cache_dir else default_cache_dir()) / "simulations"

    def sweep(self, fn, tasks, desc: str):
        """``fn(**task)`` for every task (in local processes or on Dask). Simulations
        (:func:`experiments.harness.sim.simulate_task`, rag_ttft's
        :func:`experiments.harness.sim.retrieval_task`) start costliest first
        (:func:`experiments.harness.sim.simulation_cost`); those already finished with the same
        resolved system configuration and run options, trace content and simulator code are
        read from the simulation cache instead (:mod:`experiments.harness.resultcache`) or from the
        rows ``cosmos reproduce``'s shared pool ran, and each new one is stored as soon as it
        finishes, so an interrupted run resumes where it stopped. Another function's rows are
        taken from the shared pool when it ran every task, else computed here."""
        from functools import partial

        from experiments.harness.common import run_sweep
        from experiments.harness.sim import simulation_cost

        tasks = list(tasks)
        simulations = self._identity(fn) is not None
        run = partial(run_sweep, workers=self.workers, scheduler=self.scheduler,
                      progress=self.progress, desc=desc,
                      cost=simulation_cost if simulations else None)
        if not simulations:
            pooled = self._pooled_rows(fn, tasks)
            return pooled if pooled is not None else run(fn, tasks)
        cache = self.result_cache(fn)
        rows, hits = cache.sweep(fn, tasks, run)
        if cache.root is None and self.shared is None:
            return rows                 # no cache at all (--no-sim-cache): nothing to count
        self.sims[0] += hits
        self.sims[1] += len(tasks)
        if hits and self.progress:
            print(f"{desc}: {hits} of {len(tasks)} simulations read from {cache.root}",
                  file=sys.stderr)
        return rows

    @staticmethod
    def _identity(fn):
        """What decides a result of ``fn`` besides the trace and the code, for the functions
        whose results the simulation cache keeps (None for any other)."""
        from experiments.harness.sim import (retrieval_identity, retrieval_task, simulate_task,
                                             simulation_identity)

        return {simulate_task: simulation_identity, retrieval_task: retrieval_identity}.get(fn)

    def result_cache(self, fn):
        """The :class:`experiments.harness.resultcache.ResultCache` of ``fn``'s rows for this run:
        simulations (:meth:`_identity`) in the simulation cache and in :attr:`shared`; any
        other function's in :attr:`shared` only."""
        from experiments.harness.resultcache import ResultCache

        identity = self._identity(fn)
        if identity is not None:
            return ResultCache(self.sim_cache_dir(), identity, self.shared)
        return ResultCache(None, None, self.shared)

    def _pooled_rows(self, fn, tasks: list) -> list | None:
        """The rows of ``fn(**task)`` for every task if ``cosmos reproduce``'s shared pool
        has them all (experiments.harness.plan.run_shared), else None."""
        if not self.shared or not tasks:
            return None
        cache = self.result_cache(fn)
        try:
            keys = [cache.key(fn, t) for t in tasks]
        except (TypeError, ValueError):        # arguments that are not plain data
            return None
        if not all(k in self.shared for k in keys):
            return None
        from experiments.harness.resultcache import normalize

        return [{**normalize(t.get("tags") or {}), **self.shared[k][0]}
                for t, k in zip(tasks, keys)]

    def config(self) -> dict:
        from graphs.index import default_cache_dir

        cache = Path(self.cache_dir) if self.cache_dir else default_cache_dir()
        return {
            "scale": self.scale.to_dict(),
            "cache_dir": str(cache.resolve()),
            "workers": self.workers,
            "scheduler": self.scheduler,
            "dataset": self.dataset,
            # what of the user's files is used (base cut to the scale's size, queries, ...)
            "dataset_plan": (user_dataset_plan(scale=self.scale, **self.dataset)
                             if self.dataset else None),
            "seed": self.seed,
            # experiments.harness.replications: replication r runs with seed + r
            "replications": self.replications,
            "replication_seeds": self.seeds,
            "graph": _workloads.GRAPH,  # graph kind of the workloads' clusters
            "sim_cache": str(self.sim_cache_dir()) if self.sim_cache else None,
        }


def load(name: str):
    if name not in ALL_EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}; expected one of "
                         f"{', '.join(ALL_EXPERIMENTS)}")
    return importlib.import_module(ALL_EXPERIMENTS[name])


#: installed distributions whose versions go into config.json (this project is cosmos-sim)
_DISTRIBUTIONS = ("numpy", "numba", "hnswlib", "pandas", "matplotlib", "networkx", "tqdm", "dask",
                  "distributed", "cosmos-sim")


def _versions() -> dict:
    """Python and the installed version of every dependency (None: not installed).

    Versions come from the installed distributions' metadata (hnswlib, for one, has no
    ``__version__``); a module importable without metadata falls back to ``__version__``.
    """
    from importlib import metadata

    out = {"python": platform.python_version()}
    for dist in _DISTRIBUTIONS:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            try:  # e.g. a source tree on sys.path, not installed
                module = importlib.import_module(dist.split("-")[0])
                out[dist] = getattr(module, "__version__", None)
            except ImportError:
                out[dist] = None
    return out


def command_line(argv: list[str] | None = None) -> str:
    """This process's command line, quoted for a shell (``python -m PKG`` spelled as such)."""
    argv = list(sys.argv if argv is None else argv)
    if argv and Path(argv[0]).name == "__main__.py":
        argv[:1] = [sys.executable, "-m", Path(argv[0]).parent.name]
    return shlex.join(argv)


def code_revision() -> dict | str:
    """The git revision of the checkout this code runs from, or ``"unknown"``.

    Only a checkout whose top level holds this package counts (an installed copy inside some
    other repository is not attributed to it). ``dirty_files`` lists the tracked files that
    differ from the commit, so a rerun knows whether the commit alone reproduces the run.
    """
    top = Path(__file__).resolve().parents[2]

    def git(*a: str) -> str:
        return subprocess.run(["git", "-C", str(top), *a], capture_output=True, text=True,
                              timeout=20, check=True).stdout.strip()

    try:
        if Path(git("rev-parse", "--show-toplevel")).resolve() != top:
            return "unknown"
        return {"commit": git("rev-parse", "HEAD"),
                "describe": git("describe", "--always", "--dirty", "--tags"),
                "dirty_files": git("diff", "--name-only", "HEAD").splitlines()}
    except (OSError, subprocess.SubprocessError):
        return "unknown"


#: what an experiment writes into its folder, in order (named in its INCOMPLETE marker)
EXPERIMENT_PARTS = ("config.json", "results (CSV)", "plots (PNG, PDF)", "summary.md")


def run_experiment(name: str, ctx: Context, command: str | None = None, *,
                   created: bool = False) -> dict:
    """Run experiment ``name`` into ``ctx.out``; returns its headline figures.

    While it runs, ``ctx.out`` holds an ``INCOMPLETE`` marker naming ``command`` (default
    ``run NAME``) and what is still to be written; an interrupted or failed run leaves it
    (:class:`cosmos_common.outdir.RunFolder`; ``created``: this run made ``ctx.out``, which
    is removed again if the run is refused before writing anything)."""
    from cosmos_common.outdir import RunFolder

    with RunFolder(ctx.out, command or f"run {name}", list(EXPERIMENT_PARTS),
                   created=created) as rf:
        return _run_experiment(name, ctx, rf)


def refusal(name: str, ctx: Context) -> str | None:
    """Why experiment ``name`` cannot run in ``ctx`` (the one line its optional ``check(ctx)``
    raises as ValueError: recall_qps at a cluster-template scale, scale_n on a user's
    dataset), or None when it can."""
    mod = load(name)
    try:
        if hasattr(mod, "check"):
            mod.check(ctx)
    except ValueError as exc:
        return str(exc)
    return None


def _run_experiment(name: str, ctx: Context, rf) -> dict:
    mod = load(name)
    # asked before anything is written: a refused run leaves no folder it made
    why = refusal(name, ctx)
    if why:
        raise ValueError(why)
    t0 = time.perf_counter()
    write_json(ctx.out / "config.json", {
        "experiment": name,
        "title": mod.TITLE,
        # the command line as given (in cwd), and one that reruns this experiment alone
        "command": command_line(),
        "cwd": os.getcwd(),
        "rerun": shlex.join(["cosmos", "run", name] + ctx.options),
        **ctx.config(),
        "code_revision": code_revision(),
        "versions": _versions(),
    })
    rf.done("config.json")
    headline = mod.run(ctx)
    rf.done("results (CSV)")
    mod.plot(ctx.out)
    rf.done("plots (PNG, PDF)")
    atomic_write_text(ctx.out / "summary.md", mod.summary_md(ctx.out))
    rf.done("summary.md")
    headline = dict(headline or {})
    if ctx.sims[0]:
        headline["simulations_from_cache"] = f"{ctx.sims[0]}/{ctx.sims[1]}"
    headline["wall_s"] = round(time.perf_counter() - t0, 1)
    return headline


def add_common_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--scale", choices=sorted(SCALES), default="default",
                   help="workload size (tiny: CI, default: minutes, full: 1M vectors)")
    g.add_argument("--full", action="store_const", const="full", dest="scale",
                   help="same as --scale full: 1M vectors and 10,000 queries per dataset")
    p.add_argument("--dataset", metavar="PATH",
                   help="your own base vectors (fbin/u8bin/i8bin/fvecs/bvecs) instead of the "
                        "synthetic SIFT-like and DEEP-like sets; the base is cut to the scale's "
                        "size (its first " + ", ".join(f"{s.n:,}" for s in SCALES.values())
                        + " vectors at scale " + "/".join(SCALES) + ")")
    p.add_argument("--queries", metavar="PATH", help="with --dataset: query vectors, the first "
                   "num_queries of the scale used (default: hold out the last vectors of the base)")
    p.add_argument("--groundtruth", metavar="PATH", help="with --dataset and --queries: ground "
                   "truth (ivecs or big-ann format), used only if the base is not cut (default: "
                   "computed exactly, once, and cached)")
    p.add_argument("--metric", choices=("l2", "ip", "cosine", "angular"), default=None,
                   help="with --dataset: distance of your vectors, l2 (squared Euclidean, the "
                        "default), ip (inner product) or cosine (angular: the vectors scaled to "
                        "unit length, searched by inner product)")
    add_results_options(p, "<name>")
    p.add_argument("--cache-dir", metavar="DIR",
                   help="index and trace cache (default: $COSMOS_CACHE or ~/.cache/cosmos)")
    p.add_argument("--workers", type=int, default=None,
                   help="local worker processes for sweeps (default: all cores)")
    add_renamed(p, "--scheduler", p.add_argument(
        "--dask-scheduler", dest="scheduler", metavar="ADDRESS",
        help="run sweeps on a Dask distributed cluster (tcp://host:port, or 'local')"))
    p.add_argument("--seed", type=int, default=0, help="seed of datasets, indexes and arrivals")
    p.add_argument("--templates", type=int, default=None, metavar="T",
                   help="with --scale paper (a cluster-template workload): its template "
                        "clusters, each a real cluster whose searches stand for C / T of the "
                        "logical ones (default " + str(SCALES["paper"].templates) + "; the "
                        "graphs' build time is proportional to T: docs/graphs.md)")
    p.add_argument("--replications", default="1", metavar="R",
                   help="independent workload instances per point (dataset draw, k-means, "
                        "query set, placement seed): replication r runs with seed SEED + r; "
                        "headline tables give the mean over them with a 95 %% Student-t "
                        "interval and how many replications each ordering holds in (default "
                        "1: SEED alone); replicated: " + ", ".join(REPLICATED))
    p.add_argument("--no-sim-cache", action="store_true",
                   help="simulate every point again, and store nothing: by default a "
                        "simulation already finished with the same inputs and simulator code "
                        "is read from CACHE_DIR/simulations (an interrupted run resumes)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def check_args(args) -> dict | None:
    """Reject bad common options before anything is written; returns the user dataset files.

    The user's files are checked down to their headers (format, sizes, dimensions), the
    vectors used for being finite, and the ground truth for its neighbors per query (at least
    the k of recall@k), so a bad file fails here and not after an hour of index building.
    """
    if (args.queries or args.groundtruth or args.metric) and not args.dataset:
        raise ValueError("--queries/--groundtruth/--metric need --dataset "
                         "(the synthetic sets have their own metric)")
    if args.seed < 0:
        raise ValueError(f"--seed must be >= 0, got {args.seed}")
    args.replications = parse_replications(getattr(args, "replications", 1))
    ds = None
    if args.dataset:
        for opt in ("dataset", "queries", "groundtruth"):
            path = getattr(args, opt)
            if path is not None and not os.path.exists(path):
                raise FileNotFoundError(f"--{opt} {path}: no such file")
        ds = {"dataset": args.dataset, "queries": args.queries, "groundtruth": args.groundtruth,
              "metric": args.metric or "l2"}
        _check_user_files(user_dataset_plan(scale=args.scale, **ds))
    if args.workers is not None and args.workers < 1:
        raise ValueError(f"--workers must be >= 1, got {args.workers}")
    scale_from_args(args)
    return ds


def scale_from_args(args) -> Scale:
    """The scale of ``--scale``, with ``--templates`` if given (ValueError, one line, where it
    does not apply or is out of range)."""
    sc = get_scale(args.scale)
    t = getattr(args, "templates", None)
    if t is None:
        return sc
    if not sc.templates:
        templated = ", ".join(n for n, s in SCALES.items() if s.templates)
        raise ValueError(f"--templates {t}: --scale {sc.name} builds the real index; template "
                         f"clusters apply to the cluster-template scale ({templated})")
    if not 1 <= t <= sc.num_clusters:
        raise ValueError(f"--templates {t}: expected 1 to the scale's {sc.num_clusters} "
                         "clusters")
    return _workloads.with_scale(sc, templates=t)


#: user files already checked by this process (check_args runs once per experiment)
_CHECKED: set = set()


def _check_user_files(plan: dict) -> None:
    """The parts of the user's files a run reads: float vectors finite, ground truth wide and
    long enough and within the base (ValueError naming the option, file and row)."""
    from graphs.io import (check_finite, check_groundtruth_ids, groundtruth_shape,
                           read_groundtruth, read_vectors)
    from graphs.workload import DEFAULTS

    def ident(path):
        if path is None:
            return None
        st = os.stat(path)
        return (str(Path(path).resolve()), st.st_size, st.st_mtime_ns)

    key = (tuple(sorted(plan.items())), ident(plan["dataset"]), ident(plan["queries"]),
           ident(plan["groundtruth"]))
    if key in _CHECKED:
        return
    path, total = plan["dataset"], plan["vectors_in_file"]
    n, nq = plan["base_vectors_used"], plan["queries_used"]
    check_finite(read_vectors(path, n=n), f"--dataset {path}")
    if plan["queries_held_out"]:
        check_finite(read_vectors(path)[total - nq:], f"--dataset {path}", row_offset=total - nq)
    else:
        check_finite(read_vectors(plan["queries"], n=nq), f"--queries {plan['queries']}")
    gt = plan["groundtruth"]
    if gt is not None:
        k = DEFAULTS["k"]  # the experiments' recall@k
        rows, width = groundtruth_shape(gt)
        if width < k:
            raise ValueError(f"--groundtruth {gt}: has {width} neighbors per query, but "
                             f"recall@{k} needs at least {k}")
        if plan["groundtruth_source"] == "file":
            if rows < nq:
                raise ValueError(f"--groundtruth {gt}: {rows} rows for the {nq} queries used "
                                 "(one row per query needed)")
            ids, _ = read_groundtruth(gt, n=nq, k=k)
            check_groundtruth_ids(ids, n, f"--groundtruth {gt} (for --dataset {path})")
    _CHECKED.add(key)


def dataset_note(args) -> str | None:
    """What of ``--dataset`` the run uses (base cut to the scale's size, ...), or None."""
    ds = check_args(args)
    return user_dataset_note(user_dataset_plan(scale=args.scale, **ds)) if ds else None


def common_options(args) -> list[str]:
    """The common options of ``args`` as a command line, every path absolute and the cache
    directory resolved, so the same run can be started again from anywhere."""
    from graphs.index import default_cache_dir

    def absolute(p):
        return None if p is None else str(Path(p).resolve())

    cache = Path(args.cache_dir) if args.cache_dir else default_cache_dir()
    replications = parse_replications(getattr(args, "replications", 1))
    out = []
    for opt, val in (("--scale", args.scale), ("--dataset", absolute(args.dataset)),
                     ("--queries", absolute(args.queries)),
                     ("--groundtruth", absolute(args.groundtruth)), ("--metric", args.metric),
                     ("--out-root", absolute(args.out_root)), ("--cache-dir", absolute(cache)),
                     ("--workers", args.workers), ("--dask-scheduler", args.scheduler),
                     ("--seed", args.seed), ("--templates", getattr(args, "templates", None)),
                     ("--replications", replications if replications > 1 else None)):
        if val is not None:
            out += [opt, str(val)]
    if args.no_sim_cache:
        out.append("--no-sim-cache")
    if args.no_progress:
        out.append("--no-progress")
    return out


def context_from_args(args, out: Path, traces_dir: Path | None = None,
                      trace_memo: dict | None = None, shared: dict | None = None) -> Context:
    ds = check_args(args)
    from graphs.index import default_cache_dir

    ctx = Context(out=out, scale=scale_from_args(args),
                  cache_dir=Path(args.cache_dir) if args.cache_dir else default_cache_dir(),
                  workers=args.workers, scheduler=args.scheduler, dataset=ds,
                  progress=progress_wanted(args.no_progress), seed=args.seed,
                  replications=getattr(args, "replications", 1), traces_dir=traces_dir,
                  options=common_options(args), sim_cache=not args.no_sim_cache,
                  shared=shared)
    if trace_memo is not None:
        ctx._traces = trace_memo  # experiments of one reproduction share their traces
    return ctx


def script_main(name: str, argv: list[str] | None = None) -> int:
    """``python experiments/<name>.py [options]``: one experiment into a new results folder."""
    mod = load(name)
    p = argparse.ArgumentParser(prog=f"{name}.py", description=mod.TITLE)
    add_common_arguments(p)
    args = p.parse_args(argv)
    try:
        note = dataset_note(args)
    except (ValueError, FileNotFoundError) as exc:
        if argv is not None:  # `cosmos run NAME`: its own error line
            raise
        p.error(str(exc))  # a script: usage and one error line, exit status 2
    if getattr(args, "replications", 1) > 1 and name not in REPLICATED:
        msg = (f"--replications {args.replications}: {name} runs one workload instance "
               f"(--seed); replicated experiments: {', '.join(REPLICATED)}")
        if argv is not None:
            raise ValueError(msg)
        p.error(msg)
    why = refusal(name, context_from_args(args, Path(".")))
    if why:
        if argv is not None:
            raise ValueError(why)
        p.error(why)
    if note:
        print(note, flush=True)
    from experiments.harness.common import results_dir

    out, created = results_dir(getattr(args, "out", None), args.out_root, name,
                               f"run {name}")
    ctx = context_from_args(args, out)
    headline = run_experiment(name, ctx, created=created)
    print(f"{name}: results in {out}/")
    print(f"  files: {' '.join(produced_files(out))}")
    for k, v in headline.items():
        print(f"  {k}: {v}")
    return 0


def produced_files(folder: Path) -> list[str]:
    """The files under ``folder``, relative to it, sorted (subfolders as ``sub/file``)."""
    folder = Path(folder)
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
