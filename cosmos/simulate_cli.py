"""``cosmos simulate``: run one of the paper's systems on a logical trace.

    cosmos simulate --list
    cosmos simulate --systems cosmos --trace trace.npz --out results/cosmos-sift
    cosmos simulate trace.npz --systems cosmos          (same: TRACE or --trace; results go to
                                                         results/simulate-cosmos-<time>/)
    cosmos simulate --systems base --dataset sift --num-queries 2000 --out results/base-sift
    cosmos simulate --systems cosmos --trace t.npz --mode open --rate 200000 --out r/open
    cosmos simulate --systems cosmos --trace t.npz --set gpc.cores=4 --set link.latency_ns=60
    cosmos simulate --systems cosmos --dataset sift --num-queries 200 --timeline tl.json
                                                        (the steps of the first 4 queries as a
                                                         Chrome trace: docs/timeline.md)

Writes into ``--out DIR`` (the output rule of cosmos_common.outdir: created, or used if it is
an empty folder; refused before any work if it is a file or holds anything; ``INCOMPLETE`` in
it until every file is written), or without it into a new ``<--out-root>/simulate-<system>-<time>``
(``--out-root`` default ``results``, as ``cosmos replay`` and ``run``): ``summary.json`` (qps,
latency mean/p50/p99 in ns, the breakdown, link and DRAM figures), ``systems.csv`` (the same
summary as one row, the columns of ``cosmos replay``'s ``systems.csv``), ``per_query.csv``,
``per_device.csv`` and ``config.json`` (system config, trace metadata and the options). Each file is written to a temporary name and linked into place without
replacing: a result file that appears in DIR during the run is kept, and the run then writes
none of its results (the error names the file). ``--timeline FILE.json`` also writes the
steps of the first ``--timeline-queries`` queries as a Chrome trace (cosmos.timeline; the
results are the same with or without it).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from cosmos_common.outdir import add_results_options
from cosmos_common.terminal import progress_wanted
from cosmos_common.vocabulary import add_renamed
from cosmos.timeline import add_timeline_options, check_timeline_options


def register(subparsers) -> None:
    p = subparsers.add_parser("simulate", help="simulate one system preset on a logical trace",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("--list", action="store_true", help="list the system presets and exit")
    add_renamed(p, "--system", p.add_argument(
        "--systems", dest="system", metavar="SYSTEM",
        help="the system preset to simulate (see --list; one: `cosmos replay` runs several)"))
    p.add_argument("trace_arg", nargs="?", metavar="TRACE",
                   help="logical trace .npz (graphs.trace.save_trace); same as --trace")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--trace", help="logical trace .npz (same as the positional TRACE)")
    add_renamed(src, "--workload", src.add_argument(
        "--dataset", dest="workload", metavar="NAME",
        help="build the default trace of a synthetic family or real set (sift, deep, ...) "
             "with graphs.make_workload (cached)"))
    p.add_argument("--cache-dir", default=None, metavar="DIR",
                   help="cache of --dataset's index and trace (default: graphs' cache folder)")
    add_results_options(p, "simulate-<system>")
    p.add_argument("--num-queries", type=int, default=None,
                   help="simulate only the first N queries of the trace (all of them, with a "
                        "note on stderr, if it holds fewer)")
    p.add_argument("--mode", choices=("closed", "open"), default="closed",
                   help="closed loop (queries stream as contexts free up) or open loop "
                        "(Poisson arrivals at --rate)")
    p.add_argument("--rate", type=float, default=None, help="open loop: arrivals per second")
    p.add_argument("--max-inflight", type=int, default=None,
                   help="closed loop: queries in flight (default: the system's contexts)")
    p.add_argument("--warmup", type=float, default=0.1,
                   help="fraction of first and last completions excluded from steady state")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="override a config field, e.g. gpc.cores=4 (repeatable)")
    p.add_argument("--seed", type=int, default=0, help="seed (open-loop arrivals, placement)")
    p.add_argument("--ci-target", type=float, default=None, metavar="REL",
                   help="stop once the 95%% confidence interval of the steady-state QPS "
                        "(closed loop; open loop: of the mean latency) has a relative "
                        "half-width <= REL (e.g. 0.01), tested every 2 x queries in flight "
                        "completions after max(2000, 30 x queries in flight) (open loop: "
                        "half); the queries in flight then finish and no more are admitted")
    p.add_argument("--ci-min-queries", type=int, default=None, metavar="N",
                   help="with --ci-target: completions before the first stop test (default "
                        "max(2000, 30 x queries in flight); open loop: half)")
    add_timeline_options(p)
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


#: The files a run writes into ``--out`` (summary.json last: its presence means complete).
RESULT_FILES = ("per_query.csv", "per_device.csv", "systems.csv", "config.json",
                "summary.json")


def check_out_dir(out: Path) -> None:
    """Before any work: ``--out`` must be new or an empty folder, under a writable folder
    (cosmos_common.outdir.check_out_dir; nothing is created yet)."""
    from cosmos_common.outdir import check_out_dir as check

    check(out, "--out")


def write_results(out: Path, files: dict[str, str], run_folder=None) -> None:
    """Write ``files`` (name -> text) into ``out``, each to a temporary name linked into place
    without replacing anything (cosmos_common.outdir.atomic_write). All or nothing: if one name
    exists (a file that appeared while the simulation ran), it is kept, the files this call
    already wrote are removed again, and FileExistsError names it. ``run_folder``
    (cosmos_common.outdir.RunFolder) is told of each file written."""
    from cosmos_common.outdir import atomic_write

    if out.exists() and not out.is_dir():
        raise FileExistsError(f"--out {out}: a file of that name appeared while the simulation "
                              f"ran; it is kept and no results were written")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    try:
        for name, text in files.items():
            path = out / name
            atomic_write(path, lambda tmp, t=text: tmp.write_text(t, encoding="utf-8"))
            st = path.stat()
            written.append((path, (st.st_dev, st.st_ino)))
    except BaseException as exc:
        for path, ident in written:  # withdraw this run's files (only if still ours)
            try:
                st = path.stat()
                if (st.st_dev, st.st_ino) == ident:
                    path.unlink()
            except OSError:
                pass
        if isinstance(exc, FileExistsError):
            raise FileExistsError(f"{exc}: the file appeared while the simulation ran and is "
                                  f"kept; none of this run's results were written (choose a "
                                  f"new --out)") from None
        raise
    if run_folder is not None:
        for name in files:
            run_folder.done(name)


def trace_option(args, command: str) -> str | None:
    """The trace named by the positional TRACE or by ``--trace`` (the same thing; both may be
    given only if they agree)."""
    from cosmos_common import UserError

    pos, opt = getattr(args, "trace_arg", None), getattr(args, "trace", None)
    if pos is not None and opt is not None and pos != opt:
        raise UserError(f"TRACE {pos} and --trace {opt} differ; give the "
                        f"trace once")
    return opt if opt is not None else pos


def check_options(args) -> None:
    """Before any work: the numeric options and their combination with --mode."""
    from cosmos.cli import UserError

    if args.num_queries is not None and args.num_queries < 1:
        raise UserError(f"--num-queries must be >= 1, got {args.num_queries}")
    if args.seed < 0:     # as cosmos run and graphs refuse it (numpy seeds are >= 0)
        raise UserError(f"--seed must be >= 0, got {args.seed}")
    if args.max_inflight is not None and args.max_inflight < 1:
        raise UserError(f"--max-inflight must be >= 1, got {args.max_inflight}")
    if not 0 <= args.warmup < 0.5:
        raise UserError(f"--warmup must be in [0, 0.5) (a fraction of the completions), got "
                        f"{args.warmup}")
    if args.ci_target is not None and not 0 < args.ci_target < 1:
        raise UserError(f"--ci-target must be a relative half-width in (0, 1), e.g. 0.01, got "
                        f"{args.ci_target}")
    if args.ci_min_queries is not None:
        if args.ci_target is None:
            raise UserError("--ci-min-queries applies only with --ci-target")
        if args.ci_min_queries < 1:
            raise UserError(f"--ci-min-queries must be >= 1, got {args.ci_min_queries}")
    if args.mode == "open":
        if args.rate is None or not args.rate > 0:
            raise UserError(f"--mode open needs --rate > 0 (arrivals per second), got "
                            f"{args.rate}")
    elif args.rate is not None:
        raise UserError("--rate applies only to --mode open (closed loop: --max-inflight)")
    args.timeline_n = check_timeline_options(args)


def _trace_queries(trace) -> int | None:
    """Queries in a trace given as a path or an object with ``query_ptr`` (None: unknown)."""
    qp = getattr(trace, "query_ptr", None)
    return None if qp is None else int(len(qp) - 1)


def _note_num_queries(requested: int | None, available: int | None, name) -> None:
    """One note on stderr when ``--num-queries`` asks for more queries than the trace has."""
    if requested is not None and available is not None and requested > available:
        print(f"cosmos simulate: note: --num-queries {requested} but {name} holds "
              f"{available} queries; simulating all {available}", file=sys.stderr)


def run(args) -> int:
    from cosmos.cli import UserError
    from cosmos.presets import DESCRIPTIONS, PRESETS, SCAN_PRESETS, get_preset

    if args.list:
        width = max(len(n) for n in (*PRESETS, *SCAN_PRESETS)) + 2
        for name in (*PRESETS, *SCAN_PRESETS):   # graph systems, then the scan systems
            print(f"{name:{width}s}{DESCRIPTIONS[name]}")
        return 0
    if not args.system:
        raise UserError("--systems NAME is required (or --list)")
    if "," in args.system:
        raise UserError(f"--systems {args.system}: simulate runs one system; `cosmos replay "
                        f"TRACE --systems {args.system}` runs several")
    args.trace = trace_option(args, "simulate")
    if args.trace and args.workload:
        raise UserError("give a trace (TRACE or --trace FILE) or --dataset NAME, not both")
    if not args.trace and not args.workload:
        raise UserError("give TRACE (or --trace FILE) or --dataset NAME")
    check_options(args)
    if args.out:
        check_out_dir(Path(args.out))
    cfg = get_preset(args.system)
    if args.set:
        from cosmos.config import parse_overrides, with_overrides
        from cosmos.simulate import check_capacity_setting

        overrides = parse_overrides(args.set)
        from cosmos.systems import validate_system

        cfg = validate_system(with_overrides(cfg, overrides))   # the fields and the model
        check_capacity_setting(cfg, overrides)
    from cosmos_common.outdir import RunFolder, new_run_dir, prepare_out_dir

    if args.trace:
        if not os.path.exists(args.trace):
            raise FileNotFoundError(f"trace file not found: {args.trace}")
        if os.path.isdir(args.trace):
            raise UserError(f"trace {args.trace}: is a folder; expected a logical trace .npz")
        from cosmos.trace_input import as_trace

        from cosmos.systems import model_for
        from cosmos.trace_input import check_trace_for

        trace = as_trace(args.trace)  # validated before the results folder is made
        check_trace_for(model_for(cfg), trace, args.trace,   # a family the system replays
                        system=args.system)
        _note_num_queries(args.num_queries, trace.num_queries, args.trace)
    if args.out:
        out = Path(args.out)
        created = not out.exists()
        prepare_out_dir(out, "simulate")   # created (and checked writable) before the long work
    else:
        out, created = new_run_dir(args.out_root, f"simulate-{args.system}"), True
    with RunFolder(out, "simulate", list(RESULT_FILES), created=created) as rf:
        if not args.trace:
            from graphs import make_workload

            trace = make_workload(args.workload, cache_dir=args.cache_dir,
                                  progress=progress_wanted(args.no_progress))
            _note_num_queries(args.num_queries, _trace_queries(trace), args.workload)

        import pandas as pd

        from cosmos.metrics import flatten_summary, per_device, per_query, summary
        from cosmos.simulate import simulate

        res = simulate(cfg, trace, num_queries=args.num_queries, mode=args.mode,
                       rate_qps=args.rate, max_inflight=args.max_inflight, seed=args.seed,
                       progress=progress_wanted(args.no_progress), ci_target=args.ci_target,
                       ci_min_queries=args.ci_min_queries, warmup=args.warmup,
                       timeline_queries=args.timeline_n)
        summ = summary(res, warmup=args.warmup)
        conf = {"system": cfg.to_dict(), "trace_meta": res.trace_meta,
                "options": {k: v for k, v in vars(args).items()
                            if k not in ("func", "trace_arg", "timeline_n")}}
        write_results(out, {
            "per_query.csv": per_query(res).to_csv(index=False),
            "per_device.csv": per_device(res).to_csv(index=False),
            "systems.csv": pd.DataFrame([{"system": args.system, **flatten_summary(summ)}])
                             .to_csv(index=False),
            "config.json": json.dumps(conf, indent=2, default=str),
            "summary.json": json.dumps(summ, indent=2),
        }, run_folder=rf)
    if args.timeline_n > 0:
        from cosmos.timeline import timeline_events, write_timeline

        path = write_timeline(args.timeline, timeline_events(res),
                              {"systems": [args.system], "queries": args.timeline_n})
        print(f"cosmos simulate: timeline of the first "
              f"{res.extra['timeline']['queries']} queries in {path} (open it in "
              f"https://ui.perfetto.dev)", file=sys.stderr)
    if not summ["steady_state"]:
        print(f"cosmos simulate: warning: no steady state: {summ['window_queries']} completions "
              f"in the window, fewer than the {min(res.max_inflight, summ['num_queries'])} "
              f"queries in flight; qps is the whole-run average (qps_overall); simulate more "
              f"queries for a steady-state figure", file=sys.stderr)
    b = summ["breakdown_ns"]
    if summ["ci_note"]:
        print(f"cosmos simulate: note: {summ['ci_note']}", file=sys.stderr)
    def ci(lo, hi):
        return "95% CI: none, see the note" if lo != lo or hi != hi else \
            f"95% CI {lo:.0f}-{hi:.0f}"

    control = f", control variate: {summ['qps_ci_control']}" if summ["qps_ci_control"] else ""
    print(f"{cfg.name}: {summ['qps']:.0f} QPS ({ci(summ['qps_ci_low'], summ['qps_ci_high'])}"
          f"{control}), "
          f"latency mean {summ['latency_mean_ns']:.0f} ns "
          f"({ci(summ['latency_mean_ci_low_ns'], summ['latency_mean_ci_high_ns'])}), "
          f"p99 {summ['latency_p99_ns']:.0f} ns; breakdown (ns) "
          + ", ".join(f"{k} {v:.0f}" for k, v in b.items())
          + f"; {summ['num_queries']} of {summ['trace_queries']} queries simulated "
          f"(stopped: {summ['stopped']}); results in {out}")
    if "energy_per_query_mJ" in summ:
        e = summ["energy_breakdown_mJ_per_query"]
        print(f"{cfg.name}: energy {summ['energy_per_query_mJ']:.4g} mJ/query, "
              f"{summ['power_avg_W']:.1f} W average, {summ['qps_per_W']:.4g} QPS/W; by "
              "component (mJ/query) " + ", ".join(f"{k} {v:.3g}" for k, v in e.items()))
    return 0
