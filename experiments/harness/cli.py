"""``cosmos reproduce``, ``cosmos run NAME`` and ``cosmos replay TRACE``.

    cosmos reproduce                       # every figure on the built-in synthetic data
    cosmos reproduce --full                # 1M vectors and 10,000 queries per dataset
    cosmos reproduce --dataset base.fbin   # on your own vectors (the first 50,000 at this scale)
    cosmos run fig4a_qps --scale tiny      # one figure
    cosmos run rag_ttft --set rag.model=llama-3.1-70b --set rag.batch=64
    cosmos replay my_trace.npz --systems base,cosmos
    cosmos replay my_trace.npz --systems base,cosmos --timeline tl.json   # + the first queries'
                                                     steps of both systems (docs/timeline.md)
"""

from __future__ import annotations

import time
from pathlib import Path

from cosmos_common.outdir import add_results_options
from cosmos_common.terminal import progress_wanted
from cosmos_common.vocabulary import add_renamed


def register(subparsers) -> None:
    from experiments.harness.runner import (ALL_EXPERIMENTS, EXPERIMENTS, FULL_ON_REQUEST,
                                            ON_REQUEST, add_common_arguments)

    p = subparsers.add_parser("reproduce", help="regenerate every figure of the paper (and ours)",
                              description="Run every experiment into one new results folder: "
                              + ", ".join(EXPERIMENTS) + " (and, with --only, "
                              + ", ".join(ON_REQUEST) + "). At --full, "
                              + ", ".join(FULL_ON_REQUEST) + " runs only when named with "
                              "--only (hours at 1M vectors).")
    add_common_arguments(p)
    p.add_argument("--only", metavar="NAMES",
                   help="comma-separated subset of the experiments (default: all but "
                        + ", ".join(ON_REQUEST) + ", which run only when named)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the plan (workloads, every simulation with its queries and "
                        "estimated DRAM requests, which experiments share it, an estimated "
                        "time) and stop: nothing is run or written")
    _add_settings_argument(p)
    p.set_defaults(func=reproduce)

    r = subparsers.add_parser("run", help="run one experiment (a figure) into a new results folder")
    r.add_argument("name", choices=list(ALL_EXPERIMENTS), metavar="NAME",
                   help="one of: " + ", ".join(ALL_EXPERIMENTS))
    add_common_arguments(r)
    _add_settings_argument(r)
    r.set_defaults(func=run_one)

    q = subparsers.add_parser("replay", help="run a logical ANNS trace under several systems "
                              "and compare them")
    q.add_argument("trace_arg", nargs="?", metavar="TRACE",
                   help="logical trace .npz (made by `cosmos graphs trace`); same as --trace")
    q.add_argument("--trace", default=None, help="logical trace .npz (same as TRACE)")
    q.add_argument("--systems",
                   default="base,dram-only,cxl-anns,cosmos-norank,cosmos-noalgo,cosmos",
                   help="comma-separated system presets (see `cosmos simulate --list`)")
    q.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="override a config field of every system, e.g. device.count=8")
    q.add_argument("--num-queries", type=int, default=None,
                   help="only the first N queries (all of them, with a note on stderr, if the "
                        "trace holds fewer)")
    add_results_options(q, "replay-<trace>")
    q.add_argument("--seed", type=int, default=0,
                   help="seed of the simulations (open-loop arrivals, placement), as on simulate")
    q.add_argument("--workers", type=int, default=None, help="local worker processes")
    add_renamed(q, "--scheduler", q.add_argument(
        "--dask-scheduler", dest="scheduler", metavar="ADDRESS",
        help="Dask scheduler address, or 'local'"))
    from cosmos.timeline import add_timeline_options

    add_timeline_options(q)     # (one file: each system's processes named "<system>: ...")
    q.add_argument("--no-progress", action="store_true", help="no progress bars")
    q.set_defaults(func=replay)


def _add_settings_argument(p) -> None:
    p.add_argument("--set", action="append", default=[], metavar="rag.FIELD=VALUE",
                   help="a setting of the RAG pipeline of rag_ttft (repeatable): any field of "
                        "rag.PipelineConfig (rag.model, rag.accelerator, rag.batch, "
                        "rag.passages, rag.retrieval_every_tokens, ...), rag.systems (graph "
                        "presets to simulate) or rag.profile (a `cosmos simulate --out` folder); "
                        "they change the pipeline arithmetic, not the simulations (but "
                        "rag.systems, which chooses them)")


def _settings(args, names):
    """The checked ``--set`` settings (:class:`rag.RagSettings`) for the experiments
    ``names``: ValueError if none of them takes settings."""
    from experiments.harness.runner import SETTINGS
    from rag import RagSettings, parse_settings

    items = getattr(args, "set", None) or []
    if not items:
        return RagSettings()
    takers = [n for n in names if n in SETTINGS]
    if not takers:
        raise ValueError(f"--set {items[0]}: {', '.join(names)} take(s) no settings; only "
                         f"{', '.join(SETTINGS)} does (--set rag.FIELD=VALUE)")
    return parse_settings(items, takers[0])


def _headline_text(h: dict) -> str:
    return "; ".join(f"{k}={v}" for k, v in h.items() if k != "wall_s")


def reproduce(args) -> int:
    from experiments.harness.runner import ALL_EXPERIMENTS, reproduce_names
    from rag import settings_applied

    names = ([n.strip() for n in args.only.split(",") if n.strip() in ALL_EXPERIMENTS]
             if args.only else reproduce_names(args.scale))
    with settings_applied(_settings(args, names)):
        return _reproduce(args)


def _reproduce(args) -> int:
    import sys

    from cosmos_common.outdir import RunFolder, incomplete_folders
    from experiments.harness.common import atomic_write_text, results_dir
    from experiments.harness.runner import (ALL_EXPERIMENTS, EXPERIMENTS, context_from_args,
                                    dataset_note, refusal, reproduce_names, run_experiment)

    names = reproduce_names(args.scale)
    if args.only is not None and not args.only.strip(", "):
        raise ValueError(f"--only {args.only!r}: no experiment named; give a comma-separated "
                         f"list from {list(ALL_EXPERIMENTS)}, or leave --only out to run all")
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        bad = [n for n in names if n not in ALL_EXPERIMENTS]
        if bad:
            raise ValueError(f"--only: unknown experiment(s) {bad}; expected "
                             f"{list(ALL_EXPERIMENTS)}")
    note = dataset_note(args)  # also checks every common option before anything is written
    probe = context_from_args(args, Path("."))   # the context each experiment's check is asked
    for name in names:
        why = refusal(name, probe)
        if why:
            raise ValueError(why)
    if not args.only and len(names) < len(EXPERIMENTS):
        left = [n for n in EXPERIMENTS if n not in names and not refusal(n, probe)]
        print(f"cosmos reproduce --scale {args.scale}: {', '.join(left)} not included (hours "
              f"at this scale); run it with --only {','.join(left)}", flush=True)
    if note:
        print(note, flush=True)
    if getattr(args, "replications", 1) > 1:
        from experiments.harness.replications import replication_seeds
        from experiments.harness.runner import REPLICATED

        rep = [n for n in names if n in REPLICATED]
        one = [n for n in names if n not in REPLICATED]
        print(f"cosmos reproduce: {args.replications} replications (seeds "
              f"{', '.join(map(str, replication_seeds(args.seed, args.replications)))}) of "
              f"{', '.join(rep) or 'no experiment named'}"
              + (f"; {', '.join(one)} run seed {args.seed} alone" if one else ""), flush=True)
    if args.dry_run:
        from experiments.harness.plan import print_plan

        return print_plan(args, names)
    root, created = results_dir(args.out, args.out_root, "reproduce", "reproduce")
    t0 = time.perf_counter()
    done = []
    memo: dict = {}
    shared: dict = {}  # simulations run once for every experiment (experiments.harness.plan)
    sections = [f"# Cosmos simulator: reproduction ({args.scale} scale)", ""]
    try:
        with RunFolder(root, "reproduce", [f"{n}/" for n in names] + ["summary.md"],
                       created=created) as rf:
            from experiments.harness.plan import run_shared

            ctx = context_from_args(args, root / "traces", traces_dir=root / "traces",
                                    trace_memo=memo, shared=shared)
            print("[workloads and the simulations of every experiment] ...", flush=True)
            s = run_shared(names, ctx)
            if s["tasks"]:
                dep = (f", and {s['dependent']} runs that depend on their results"
                       if s["dependent"] else "")
                builds = (f"; {s['compiled']} engine build{'s' if s['compiled'] > 1 else ''} "
                          "compiled" if s["compiled"] else "")
                print(f"[workloads and the simulations of every experiment] "
                      f"{s['workloads']} workload{'s' if s['workloads'] != 1 else ''}"
                      f"{builds}; {s['distinct']} distinct simulations for {s['tasks']} asked "
                      f"by the experiments ({s['from_cache']} read from the simulation "
                      f"cache){dep}; in {s['wall_s']:.0f} s", flush=True)
            for name in names:
                folder = root / name
                folder.mkdir()
                ctx = context_from_args(args, folder, traces_dir=root / "traces",
                                        trace_memo=memo, shared=shared)
                print(f"[{name}] ...", flush=True)
                h = run_experiment(name, ctx, "reproduce", created=True)
                rf.done(f"{name}/")
                done.append((name, folder, h))
                sections.append((folder / "summary.md").read_text())
                print(f"[{name}] done in {h['wall_s']:.0f} s: {_headline_text(h)}", flush=True)
            atomic_write_text(root / "summary.md", "\n".join(sections))
            rf.done("summary.md")
    except BaseException:
        left = incomplete_folders(root) if root.is_dir() else []
        if left:
            print(f"cosmos reproduce: incomplete results (each holds an INCOMPLETE file saying "
                  f"what is missing): {', '.join(str(p) for p in left)}", file=sys.stderr)
        raise
    print(f"\nreproduce: {len(names)} experiments in {time.perf_counter() - t0:.0f} s; "
          f"results in {root}/")
    print(_produced_table(root, done))
    return 0


def _produced_table(root: Path, done: list) -> str:
    """What was produced and where: one row per folder (experiments, then the shared traces
    and the overall summary), its files, and each experiment's time and headline figures."""
    from experiments.harness.runner import produced_files

    rows = [("folder", "files", "time")]
    for name, folder, h in done:
        rows.append((f"{name}/", " ".join(produced_files(folder)), f"{h['wall_s']:.0f} s"))
    traces = root / "traces"
    if traces.is_dir():
        rows.append(("traces/", " ".join(produced_files(traces)), "(sweep inputs)"))
    rows.append(("./", "summary.md", "(every experiment's summary)"))
    import textwrap

    w0 = max(len(r[0]) for r in rows)
    w1 = min(64, max(len(r[1]) for r in rows))
    lines = []
    for i, (a, b, c) in enumerate(rows):
        files = textwrap.wrap(b, w1, break_on_hyphens=False) or [""]
        lines.append(f"  {a:<{w0}}  {files[0]:<{w1}}  {c}".rstrip())
        lines += [f"  {'':<{w0}}  {f}" for f in files[1:]]
        if i == 0:
            lines.append(f"  {'-' * w0}  {'-' * w1}  {'-' * 4}")
    lines.append("")
    lines.append("headline figures:")
    lines += [f"  {name}: {_headline_text(h)}" for name, _, h in done]
    return "\n".join(lines)


def run_one(args) -> int:
    from experiments.harness.runner import common_options, script_main
    from rag import settings_applied

    settings = _settings(args, [args.name])    # checked before anything is written
    argv = common_options(args)
    if args.out is not None:
        argv += ["--out", str(args.out)]
    with settings_applied(settings):
        return script_main(args.name, argv)


def replay(args) -> int:
    import pandas as pd

    from cosmos.presets import PRESETS, SCAN_PRESETS
    from cosmos.simulate_cli import trace_option
    from cosmos_common import UserError
    from cosmos_common.outdir import RunFolder, check_out_dir
    from experiments.harness.common import results_dir, run_sweep, write_csv, write_json
    from experiments.harness.ratios import add_ratio_ci
    from experiments.harness.sim import simulate_task

    name = trace_option(args, "replay")
    if name is None:
        raise UserError("give the logical trace: TRACE or --trace TRACE")
    trace = Path(name)
    if not trace.exists():
        raise FileNotFoundError(f"trace file not found: {trace}")
    if trace.is_dir():
        raise UserError(f"trace {trace}: is a folder; expected a logical trace .npz")
    if args.out is not None:
        check_out_dir(args.out, "--out")
    # everything is checked before the results folder is created: a refused command leaves
    # nothing behind
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    if not systems:
        raise ValueError(f"--systems {args.systems!r}: no system named; give a comma-separated "
                         f"list of presets from {sorted(PRESETS)}")
    known = [*PRESETS, *SCAN_PRESETS]        # graph systems, then the scan systems
    bad = [s for s in systems if s not in known]
    if bad:
        raise ValueError(f"--systems: unknown {bad}; expected some of {known}")
    twice = sorted({s for s in systems if systems.count(s) > 1})
    if twice:
        raise ValueError(f"--systems: {', '.join(twice)} named more than once; name each "
                         "system once")
    if args.num_queries is not None and args.num_queries < 1:
        raise ValueError(f"--num-queries must be >= 1, got {args.num_queries}")
    if args.workers is not None and args.workers < 1:
        raise ValueError(f"--workers must be >= 1, got {args.workers}")
    if args.seed < 0:     # as simulate, run and graphs refuse it (numpy seeds are >= 0)
        raise ValueError(f"--seed must be >= 0, got {args.seed}")
    from cosmos.timeline import check_timeline_options

    timeline_n = check_timeline_options(args)
    import placement
    from cosmos.config import parse_overrides
    from cosmos.systems import model_for
    from cosmos.simulate import check_capacity_setting
    from cosmos.trace_input import as_trace, check_trace_for
    from experiments.harness.sim import _system_config
    from graphs import load_trace

    overrides = parse_overrides(args.set)
    configs = {}   # system -> its config, as each simulation will build it
    for s in systems:  # every field converted and range-checked on every system
        cfg = configs[s] = _system_config(s, overrides, None)
        check_capacity_setting(cfg, overrides)
        try:
            placement.get_policy(cfg.placement)
        except ValueError as exc:
            raise ValueError(f"system.placement of {s}: {exc}") from None

    loaded = load_trace(trace)     # validates the file (checksums) before any simulation starts
    arrays = as_trace(loaded, name=str(trace))   # and the simulator's own checks of its arrays
    for s, cfg in configs.items():   # every system replays the trace's family (graph, scan)
        check_trace_for(model_for(cfg), arrays, str(trace), system=s)
    meta = loaded.meta
    if args.num_queries is not None and args.num_queries > loaded.num_queries:
        import sys

        print(f"cosmos replay: note: --num-queries {args.num_queries} but {trace} holds "
              f"{loaded.num_queries} queries; simulating all {loaded.num_queries}",
              file=sys.stderr)
    out, created = results_dir(args.out, args.out_root, f"replay-{trace.stem}", "replay")
    with RunFolder(out, "replay", ["config.json", "systems.csv"], created=created) as rf:
        write_json(out / "config.json", {"trace": str(trace.resolve()), "trace_meta": meta,
                                         "systems": systems, "overrides": overrides,
                                         "num_queries": args.num_queries, "seed": args.seed})
        rf.done("config.json")
        tasks = [dict(system=s, trace_path=str(trace), overrides=overrides,
                      num_queries=args.num_queries, seed=args.seed, tags={"system": s})
                 for s in systems]
        if timeline_n > 0:          # each task's events, its processes numbered apart
            for i, t in enumerate(tasks):
                t.update(timeline_queries=timeline_n, timeline_pid_base=1 + 100 * i)
        rows = run_sweep(simulate_task, tasks, workers=args.workers, scheduler=args.scheduler,
                         progress=progress_wanted(args.no_progress), desc="replay")
        timeline = [e for r in rows for e in r.pop("timeline", [])]
        df = pd.DataFrame(rows)
        if "base" in systems:
            df["qps_vs_base"] = df["qps"] / float(df.loc[df.system == "base", "qps"].iloc[0])
            df["_one"] = 0
            add_ratio_ci(df, "qps_vs_base", "base", key="_one")
            df = df.drop(columns="_one")
        write_csv(out / "systems.csv", df)
        rf.done("systems.csv")
    if timeline_n > 0:
        import sys

        from cosmos.timeline import write_timeline

        path = write_timeline(args.timeline, timeline,
                              {"systems": systems, "queries": timeline_n, "trace": str(trace)})
        print(f"cosmos replay: timeline of the first {timeline_n} queries of each system in "
              f"{path} (open it in https://ui.perfetto.dev)", file=sys.stderr)
    print(f"replay of {trace} ({meta.get('num_queries')} queries, dataset {meta.get('dataset')}):")
    if "steady_state" in df and not df["steady_state"].all():
        import sys

        names = ", ".join(df.loc[~df["steady_state"].astype(bool), "system"])
        print(f"cosmos replay: warning: no steady state for {names}: fewer completions in the "
              f"window than queries in flight; their qps is the whole-run average "
              f"(qps_overall); replay more queries for steady-state figures", file=sys.stderr)
    cols = ["system", "qps", "qps_ci_low", "qps_ci_high"] + \
        (["qps_vs_base"] if "qps_vs_base" in df else []) + \
        ["latency_mean_ns", "latency_mean_ci_low_ns", "latency_mean_ci_high_ns",
         "latency_p99_ns"]
    print(df[cols].to_string(index=False, float_format=lambda v: f"{v:,.2f}"))
    if "energy_per_query_mJ" in df:      # a DRAM without a power preset reports no energy
        pre = "energy_breakdown_mJ_per_query_"
        parts = [c for c in df.columns if c.startswith(pre)]
        e = df[["system", "energy_per_query_mJ", "power_avg_W", "qps_per_W"] + parts]
        print("energy per query (mJ), average power (W), and the mJ per query of each component:")
        print(e.rename(columns={c: c[len(pre):] for c in parts}).to_string(
            index=False, float_format=lambda v: f"{v:.4g}"))
    print(f"results in {out}")
    return 0
