"""What every experiment shares: its run context, its command line, and its results folder.

An experiment is a module in this package with

- ``NAME`` and ``TITLE``;
- ``run(ctx) -> dict``: computes, writes tidy CSV(s) into ``ctx.out`` and returns headline
  figures (shown in the final table of ``cosmos reproduce``);
- ``plot(folder)``: draws PNG and PDF plots from the CSVs in ``folder`` only;
- ``summary_md(folder) -> str``: a short markdown section with our figures next to the paper's,
  again from the CSVs only.

:func:`run_experiment` wraps those three into one results folder with ``config.json``
(everything needed to rerun) and ``summary.md``. Each script's ``main`` is
:func:`script_main`, so every figure runs on its own:
``python experiments/fig4a_qps.py --scale tiny``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from experiments.common import atomic_write_text, new_results_dir, write_json
from experiments.workloads import SCALES, Scale, get_scale, workload

#: experiment name -> module, in the order ``cosmos reproduce`` runs them
EXPERIMENTS = {
    "fig4a_qps": "experiments.fig4a_qps",
    "fig4b_breakdown": "experiments.fig4b_breakdown",
    "fig5a_lir": "experiments.fig5a_lir",
    "fig5b_heatmap": "experiments.fig5b_heatmap",
    "validate_dram": "experiments.validate_dram",
    "scale_devices": "experiments.scale_devices",
    "scale_ranks": "experiments.scale_ranks",
    "latency_load": "experiments.latency_load",
}


@dataclass
class Context:
    """Where and how an experiment runs."""

    out: Path  # the experiment's own (new, empty) results folder
    scale: Scale
    cache_dir: Path | None = None
    workers: int | None = None  # local worker processes (None = all cores)
    scheduler: str | None = None  # Dask scheduler address, or "local"
    dataset: dict | None = None  # user files: {"dataset": PATH, "queries": ..., "groundtruth": ...}
    progress: bool = True
    seed: int = 0
    traces_dir: Path | None = None  # where sweep inputs are saved (default: out/traces)
    _traces: dict = field(default_factory=dict, repr=False)

    @property
    def families(self) -> list[str]:
        """Workload families: the SIFT-like and DEEP-like sets, or the user's dataset."""
        if self.dataset:
            return [Path(self.dataset["dataset"]).stem]
        return ["sift", "deep"]

    def trace(self, family: str, num_probes: int | None = None):
        """The logical trace of ``family`` (cached on disk by graphs, and here in memory)."""
        key = (family, num_probes)
        if key not in self._traces:
            kw = dict(self.dataset or {})
            self._traces[key] = workload(family, self.scale, num_probes=num_probes,
                                         cache_dir=self.cache_dir, seed=self.seed,
                                         progress=self.progress, **kw)
        return self._traces[key]

    def trace_file(self, family: str, num_probes: int | None = None) -> Path:
        """The trace saved under ``out/traces`` (sweep workers load it by path)."""
        from graphs import save_trace

        folder = self.traces_dir or self.out / "traces"
        folder.mkdir(exist_ok=True)
        path = folder / (f"{family}.npz" if num_probes is None else f"{family}-p{num_probes}.npz")
        if not path.exists():
            save_trace(path, self.trace(family, num_probes))
        return path

    def sweep(self, fn, tasks, desc: str):
        from experiments.common import run_sweep

        return run_sweep(fn, tasks, workers=self.workers, scheduler=self.scheduler,
                         progress=self.progress, desc=desc)

    def config(self) -> dict:
        return {
            "scale": self.scale.to_dict(),
            "cache_dir": str(self.cache_dir) if self.cache_dir else None,
            "workers": self.workers,
            "scheduler": self.scheduler,
            "dataset": self.dataset,
            "seed": self.seed,
        }


def load(name: str):
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}; expected one of {', '.join(EXPERIMENTS)}")
    return importlib.import_module(EXPERIMENTS[name])


def _versions() -> dict:
    out = {"python": platform.python_version()}
    for mod in ("numpy", "numba", "hnswlib", "pandas", "matplotlib"):
        try:
            out[mod] = getattr(importlib.import_module(mod), "__version__", "?")
        except ImportError:  # pragma: no cover
            out[mod] = None
    from cosmos import __version__

    out["cosmos-sim"] = __version__
    return out


def run_experiment(name: str, ctx: Context) -> dict:
    """Run experiment ``name`` into ``ctx.out``; returns its headline figures."""
    mod = load(name)
    t0 = time.perf_counter()
    write_json(ctx.out / "config.json", {
        "experiment": name,
        "title": mod.TITLE,
        "command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:]),
        **ctx.config(),
        "versions": _versions(),
    })
    headline = mod.run(ctx)
    mod.plot(ctx.out)
    atomic_write_text(ctx.out / "summary.md", mod.summary_md(ctx.out))
    headline = dict(headline or {})
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
                        "synthetic SIFT-like and DEEP-like sets")
    p.add_argument("--queries", metavar="PATH", help="with --dataset: query vectors "
                   "(default: hold out the last vectors of the base)")
    p.add_argument("--groundtruth", metavar="PATH", help="with --dataset: ground truth "
                   "(ivecs or big-ann format; default: computed exactly)")
    p.add_argument("--out-root", default="results", metavar="DIR",
                   help="results go to a new folder under DIR (default: ./results)")
    p.add_argument("--cache-dir", metavar="DIR",
                   help="index and trace cache (default: $COSMOS_CACHE or ~/.cache/cosmos)")
    p.add_argument("--workers", type=int, default=None,
                   help="local worker processes for sweeps (default: all cores)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="run sweeps on a Dask distributed cluster (tcp://host:port, or 'local')")
    p.add_argument("--seed", type=int, default=0, help="seed of datasets, indexes and arrivals")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def check_args(args) -> dict | None:
    """Reject bad common options before anything is written; returns the user dataset files."""
    if (args.queries or args.groundtruth) and not args.dataset:
        raise ValueError("--queries/--groundtruth need --dataset")
    ds = None
    if args.dataset:
        for opt in ("dataset", "queries", "groundtruth"):
            path = getattr(args, opt)
            if path is not None and not os.path.exists(path):
                raise FileNotFoundError(f"--{opt} {path}: no such file")
        ds = {"dataset": args.dataset, "queries": args.queries, "groundtruth": args.groundtruth}
    if args.workers is not None and args.workers < 1:
        raise ValueError(f"--workers must be >= 1, got {args.workers}")
    return ds


def context_from_args(args, out: Path, traces_dir: Path | None = None,
                      trace_memo: dict | None = None) -> Context:
    ds = check_args(args)
    ctx = Context(out=out, scale=get_scale(args.scale),
                  cache_dir=Path(args.cache_dir) if args.cache_dir else None,
                  workers=args.workers, scheduler=args.scheduler, dataset=ds,
                  progress=not args.no_progress, seed=args.seed, traces_dir=traces_dir)
    if trace_memo is not None:
        ctx._traces = trace_memo  # experiments of one reproduction share their traces
    return ctx


def script_main(name: str, argv: list[str] | None = None) -> int:
    """``python experiments/<name>.py [options]``: one experiment into a new results folder."""
    mod = load(name)
    p = argparse.ArgumentParser(prog=f"{name}.py", description=mod.TITLE)
    add_common_arguments(p)
    args = p.parse_args(argv)
    check_args(args)
    out = new_results_dir(args.out_root, name)
    ctx = context_from_args(args, out)
    headline = run_experiment(name, ctx)
    print(f"{name}: results in {out}")
    for k, v in headline.items():
        print(f"  {k}: {v}")
    return 0
