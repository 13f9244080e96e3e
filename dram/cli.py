"""``cosmos dram``: replay memory trace files through the DDR5 model; list the presets.

    cosmos dram replay TRACE [--standard DDR5_4800AN --org 16Gb_x4 --channels 4 --ranks 2
                              --mapping RoBaRaCoCh --refresh on|off --queue-depth 32
                              --same-bank-refresh --powerdown-idle-ns NS
                              --selfrefresh-idle-ns NS --format auto --wrap] [--out DIR [--requests-format npz|csv |
                              --no-requests] [--epoch CYCLES]] [--command-trace FILE]
                              [--verbose]
    cosmos dram presets

Options left out take the :class:`dram.DRAMConfig` defaults (or those of ``--config FILE``: a
``config.json`` written by an earlier run, to repeat it, or a Ramulator 2 YAML or DRAMsim3
``.ini`` file, read by :mod:`dram.foreign`). Heavy imports (numpy, numba) happen
only when a command runs, so ``cosmos --help`` stays fast. See docs/dram_cli.md.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from cosmos_common.terminal import progress_wanted
from cosmos_common.vocabulary import add_renamed

# when this module was imported (the CLI's start, near enough) for --verbose's total
_PROCESS_T0 = time.perf_counter()

#: Values of --format (dram.traces.FORMATS and "auto"; spelled out so that the parser is built
#: without importing numpy).
FORMAT_CHOICES = ("auto", "dramsim3", "ramulator", "dramsys")
#: Values of --requests-format (dram.output.REQUEST_FORMATS; the first is the default).
REQUEST_FORMAT_CHOICES = ("npz", "csv")

# The DRAMConfig fields each option sets (None = not given: keep the default / --config's).
_CONFIG_OPTIONS = {
    "standard": "standard",
    "org": "org",
    "channels": "channels",
    "ranks": "ranks",
    "mapping": "mapping",
    "scheduler": "scheduler",
    "row_policy": "row_policy",
}


def register(subparsers) -> None:
    """Add ``cosmos dram`` and its subcommands to the ``cosmos`` parser."""
    dram = subparsers.add_parser(
        "dram",
        help="replay memory traces through the DDR5 timing model",
        description="The DDR5 timing model on its own: replay trace files, list presets.",
    )
    sub = dram.add_subparsers(dest="dram_command", metavar="SUBCOMMAND")
    dram.set_defaults(func=lambda args: _missing_subcommand(dram))

    rp = sub.add_parser(
        "replay",
        help="replay a trace file and report latency, bandwidth and row-buffer statistics",
        description=(
            "Replay a memory trace (DRAMsim3 '0x<addr> READ|WRITE <cycle>', Ramulator "
            "'LD|ST <addr>' or DRAMSys '<cycle>: read|write 0x<addr>'; gzip accepted) "
            "open-loop through the DDR5 model, print a summary and optionally write the "
            "per-request records and statistics to a results folder. Options not given "
            "take the dram.DRAMConfig defaults (see 'cosmos dram presets')."
        ),
    )
    rp.add_argument("trace", metavar="TRACE",
                    help="trace file (text or gzip; also a pipe such as <(gzip -c t.trace)), "
                         "or - to read it from standard input")
    g = rp.add_argument_group("memory system (default: dram.DRAMConfig, or --config)")
    g.add_argument("--standard", help="timing preset (JEDEC speed bin), e.g. DDR5_4800AN")
    g.add_argument("--org", help="device organization preset, e.g. 16Gb_x4")
    g.add_argument("--channels", type=int, help="channels (DDR5 32-bit sub-channels)")
    g.add_argument("--ranks", type=int, help="ranks per channel")
    g.add_argument("--mapping", help="address mapping, fields MSB first, e.g. RoBaRaCoCh")
    g.add_argument("--refresh", choices=("on", "off"), help="all-bank refresh on or off")
    g.add_argument("--same-bank-refresh", action=argparse.BooleanOptionalAction, default=None,
                   help="same-bank refresh (REFsb per bank index, every index once per "
                        "tREFI2) instead of all-bank refresh")
    g.add_argument("--powerdown-idle-ns", type=float, metavar="NS", default=None,
                   help="power a rank down after NS ns without a request or command "
                        "(0: never, the default)")
    g.add_argument("--selfrefresh-idle-ns", type=float, metavar="NS", default=None,
                   help="put a rank in self refresh after NS ns without a request "
                        "(0: never, the default)")
    g.add_argument("--queue-depth", type=int, metavar="N",
                   help="read and write buffer entries per channel")
    g.add_argument("--scheduler", help="request scheduler, e.g. FRFCFS")
    g.add_argument("--row-policy", dest="row_policy", help="row policy: open or closed")
    g.add_argument("--timing", action="append", default=[], metavar="NAME=CYCLES",
                   help="override one timing parameter, e.g. --timing nCL=36 (repeatable)")
    g.add_argument("--memspec", metavar="FILE.json", type=Path, default=None,
                   help="DRAMPower-style DDR5 memspec whose currents, voltages and rho the "
                        "energy uses (timing stays the preset's)")
    g.add_argument("--config", metavar="FILE", type=Path,
                   help="start from a memory system in a file: an earlier run's config.json "
                        "(memory system and the trace options --format, --wrap, "
                        "--strict-align), a Ramulator 2 .yaml or a DRAMsim3 .ini")
    t = rp.add_argument_group("trace")
    t.add_argument("--format", default=None,
                   choices=FORMAT_CHOICES,
                   help="trace format (default: detected from the first request line)")
    t.add_argument("--wrap", action=argparse.BooleanOptionalAction, default=None,
                   help="take addresses modulo the memory capacity instead of rejecting them "
                        "(default: no)")
    t.add_argument("--strict-align", action=argparse.BooleanOptionalAction, default=None,
                   help="reject addresses that are not multiples of 64 (default: align down)")
    o = rp.add_argument_group("output")
    o.add_argument("--out", metavar="DIR", type=Path,
                   help="results folder: created, or an empty folder (a folder holding anything "
                        "is refused before any work; nothing is written over)")
    o.add_argument("--requests-format", choices=REQUEST_FORMAT_CHOICES, default=None,
                   help="format of the per-request records in --out: npz (default; numpy "
                        "arrays, np.load reads them) or csv (named apart from --format, which "
                        "is the trace's format)")
    o.add_argument("--no-requests", action="store_true",
                   help="write no per-request records (the summary and statistics only)")
    o.add_argument("--epoch", type=int, metavar="CYCLES", default=None,
                   help="also write epochs.csv into --out: each channel's statistics (requests "
                        "completed, mean read latency, row hits/misses/conflicts, refreshes, "
                        "command counts, data-bus busy cycles) per epoch of CYCLES DRAM cycles")
    o.add_argument("--command-trace", type=Path, metavar="FILE", default=None,
                   help="write every DRAM command issued to FILE, a CSV of cycle, channel, "
                        "rank, bank_group, bank, row, command (a new file: an existing one is "
                        "refused)")
    o.add_argument("--verbose", "-v", action="store_true",
                   help="print where the time went (read and parse, simulate, write) to stderr")
    o.add_argument("--no-progress", action="store_true", help="no progress bar")
    o.add_argument("--json", action="store_true",
                   help="print the statistics as JSON instead of the table")
    add_renamed(rp, "--threads", rp.add_argument(
        "--workers", dest="threads", type=int, metavar="N", default=None,
        help="threads simulating the channels, one channel at a time each (default: the CPUs "
             "this process may use, at most one per channel); the results do not depend on it"))
    rp.set_defaults(func=_cmd_replay)

    pp = sub.add_parser(
        "presets",
        help="list timing and organization presets, mappings, schedulers, row policies",
        description="List what a memory-system option can name (from the dram package's registry).",
    )
    pp.add_argument("--json", action="store_true", help="print as JSON")
    pp.set_defaults(func=_cmd_presets)


def _missing_subcommand(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


# ----------------------------------------------------------------------------------------------
# cosmos dram presets
# ----------------------------------------------------------------------------------------------


def _cmd_presets(args: argparse.Namespace) -> int:
    from dram.standards import list_presets
    from dram.traces import FORMATS

    reg = list_presets()
    reg = {**reg, "trace_formats": dict(FORMATS)}
    if args.json:
        print(json.dumps(reg, indent=2))
        return 0
    print(format_presets(reg))
    return 0


def format_presets(reg: dict) -> str:
    """Text listing of the registry returned by :func:`dram.standards.list_presets`."""
    from dram.config import DRAMConfig

    default = DRAMConfig()
    lines = ["timing presets (--standard):"]
    w = max(len(k) for k in reg["standards"])
    for name in reg["standards"]:
        d = reg["timing"][name]
        mark = "  (default)" if name == default.standard else ""
        lines.append(f"  {name:<{w}}  {d['rate_MTps']} MT/s, tCK {d['tCK_ps']} ps, "
                     f"nCL-nRCD-nRP {d['nCL']}-{d['nRCD']}-{d['nRP']}{mark}")
    lines.append("organization presets (--org), per device:")
    w = max(len(k) for k in reg["orgs"])
    for name in reg["orgs"]:
        o = reg["org_details"][name]
        mark = "  (default)" if name == default.org else ""
        lines.append(f"  {name:<{w}}  {o['bankgroups']} bank groups x {o['banks']} banks, "
                     f"{o['rows']:,} rows, {o['columns']:,} columns{mark}")

    def simple(title: str, names, current) -> None:
        shown = ", ".join(f"{n} (default)" if n == current else str(n) for n in names)
        lines.append(f"{title}: {shown}")

    simple("address mappings (--mapping; any permutation of Ro Ba Ra Co Ch)", reg["mappings"],
           default.mapping)
    simple("schedulers (--scheduler)", reg["schedulers"], default.scheduler)
    simple("row policies (--row-policy)", reg["row_policies"], default.row_policy)
    simple("refresh (--refresh)", reg["refresh"], "on" if default.refresh else "off")
    lines.append("trace formats (--format):")
    for name, text in reg["trace_formats"].items():
        lines.append(f"  {name:<9}  {text}")
    lines.append(f"defaults: {default.channels} channels x {default.ranks} ranks, "
                 f"queue depth {default.read_queue_depth} (read) / {default.write_queue_depth} (write)")
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------
# cosmos dram replay
# ----------------------------------------------------------------------------------------------


def config_from_dict(d: dict):
    """A :class:`dram.DRAMConfig` from its dict form (``config.json``'s ``dram_config``)."""
    import dataclasses

    from dram.config import DRAMConfig

    if not isinstance(d, dict):
        raise ValueError(f"expected a dict of DRAMConfig fields, got {type(d).__name__}")
    names = {f.name for f in dataclasses.fields(DRAMConfig)}
    unknown = sorted(set(d) - names)
    if unknown:
        raise ValueError(f"unknown DRAMConfig field(s) {', '.join(unknown)}; valid: {', '.join(sorted(names))}")
    d = dict(d)
    if "timing_overrides" in d:
        t = d["timing_overrides"]
        if not isinstance(t, (list, tuple)) or not all(
                isinstance(x, (list, tuple)) and len(x) == 2 for x in t):
            raise ValueError(f"field 'timing_overrides' is {t!r}; expected a list of "
                             f"[name, cycles] pairs, e.g. [[\"nCL\", 36]]")
        d["timing_overrides"] = tuple(tuple(x) for x in t)
    return DRAMConfig(**d)


def _read_config_json(path: Path):
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such config file")
    try:
        return json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from None


def _load_config_file(path: Path):
    """The DRAM configuration of ``--config``: an earlier run's ``config.json`` (its
    ``dram_config``) or a dict of DRAMConfig fields. An empty one is refused; fields it
    leaves out take their defaults, and one line on stderr names them."""
    import dataclasses
    import sys

    from dram.config import DRAMConfig

    from dram.foreign import FOREIGN_SUFFIXES, read_config_file

    if path.suffix.lower() in FOREIGN_SUFFIXES:       # Ramulator 2 YAML, DRAMsim3 .ini
        read = read_config_file(path)
        for note in read.notes:
            print(f"{path}: {note}", file=sys.stderr)
        return read.config
    data = _read_config_json(path)
    if isinstance(data, dict) and "dram_config" in data:
        data = data["dram_config"]
    if isinstance(data, dict) and not data:
        raise ValueError(f"{path}: holds no DRAM configuration field; expected an earlier "
                         "run's config.json or a dict of DRAMConfig fields (cosmos dram "
                         "presets lists them)")
    try:
        cfg = config_from_dict(data)
        cfg.validate()          # a wrong-typed or out-of-range field is named with the file
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{path}: {exc}") from None
    left = [f.name for f in dataclasses.fields(DRAMConfig) if f.name not in data]
    if left:
        print(f"{path}: fields not given, defaults used: {', '.join(left)}", file=sys.stderr)
    return cfg


#: Trace options of a replay and their values when neither the command line nor --config
#: sets them.
_REPLAY_DEFAULTS = {"format": "auto", "wrap": False, "unaligned": "align"}


def replay_options(args: argparse.Namespace) -> dict:
    """The trace options of a replay (``format``, ``wrap``, ``unaligned``): those given on the
    command line, else those of ``--config``'s ``replay`` part (an earlier run's), else the
    defaults."""
    from dram.foreign import FOREIGN_SUFFIXES

    opts = dict(_REPLAY_DEFAULTS)
    if args.config is not None and args.config.suffix.lower() not in FOREIGN_SUFFIXES:
        data = _read_config_json(args.config)
        saved = data.get("replay", {}) if isinstance(data, dict) else {}
        if not isinstance(saved, dict):
            raise ValueError(f"{args.config}: field 'replay' must be an object, "
                             f"got {type(saved).__name__}")
        checks = {"format": FORMAT_CHOICES,
                  "wrap": (True, False), "unaligned": ("align", "error")}
        for key, valid in checks.items():
            if key in saved:
                if saved[key] not in valid or isinstance(saved[key], bool) != (key == "wrap"):
                    raise ValueError(f"{args.config}: field 'replay.{key}' is {saved[key]!r}; "
                                     f"expected one of {', '.join(map(repr, valid))}")
                opts[key] = saved[key]
    if args.format is not None:
        opts["format"] = args.format
    if args.wrap is not None:
        opts["wrap"] = bool(args.wrap)
    if args.strict_align is not None:
        opts["unaligned"] = "error" if args.strict_align else "align"
    return opts


def build_config(args: argparse.Namespace):
    """The :class:`dram.DRAMConfig` the replay options describe (validated)."""
    import dataclasses

    from dram.config import DRAMConfig

    cfg = _load_config_file(args.config) if args.config is not None else DRAMConfig()
    changes: dict[str, Any] = {}
    for opt, field in _CONFIG_OPTIONS.items():
        value = getattr(args, opt)
        if value is not None:
            changes[field] = value
    if args.refresh is not None:
        changes["refresh"] = args.refresh == "on"
    if args.same_bank_refresh is not None:
        changes["same_bank_refresh"] = bool(args.same_bank_refresh)
    for opt in ("powerdown_idle_ns", "selfrefresh_idle_ns"):
        if getattr(args, opt) is not None:
            changes[opt] = getattr(args, opt)
    if args.queue_depth is not None:
        changes["read_queue_depth"] = changes["write_queue_depth"] = args.queue_depth
    if args.timing:
        overrides = dict(cfg.timing_overrides)
        for item in args.timing:
            name, sep, value = item.partition("=")
            if not sep or not value.strip().lstrip("-").isdigit():
                raise ValueError(f"--timing {item!r}: expected NAME=CYCLES, e.g. nCL=36")
            overrides[name.strip()] = int(value)
        changes["timing_overrides"] = tuple(overrides.items())
    cfg = dataclasses.replace(cfg, **changes)
    cfg.validate()
    return cfg


def _replay_function():
    """``dram.replay``, the contract's entry point."""
    import dram

    return dram.replay


def _cmd_replay(args: argparse.Namespace) -> int:
    from dram.jitcache import start_numba_lean
    from dram.output import new_run_dir

    start_numba_lean()      # this process runs only the DRAM kernels

    if args.threads is not None and args.threads < 1:
        raise ValueError(f"--workers must be at least 1, got {args.threads}")
    if args.epoch is not None:
        if args.epoch < 1:
            raise ValueError(f"--epoch must be at least 1 cycle, got {args.epoch}")
        if args.out is None:
            raise ValueError("--epoch writes epochs.csv into the results folder: give --out "
                             "DIR too")
    if args.command_trace is not None:
        _check_command_trace(args.command_trace)
    config = build_config(args)
    if args.memspec is not None:       # checked before anything is read or written
        from dram import memspec as _ms
        from dram.standards import ddr5 as _ddr5
        args.memspec = _ms.load_memspec(args.memspec)
        _ms.check_matches(args.memspec, _ddr5.ORG_PRESETS[config.org])
    opts = replay_options(args)
    trace_path = _trace_path(args.trace)
    requests_format = _requests_format(args)
    if args.out is None:
        _replay_and_write(args, config, opts, trace_path, None, None, requests_format)
        return 0
    # the output rule (cosmos_common.outdir): --out new or empty, checked writable and
    # created before the trace is read; INCOMPLETE in it until every file is written
    from cosmos_common.outdir import RunFolder

    created = not args.out.exists()
    folder = new_run_dir(args.out)
    with RunFolder(folder, "dram replay", run_files(requests_format, args.epoch is not None),
                   created=created) as rf:
        _replay_and_write(args, config, opts, trace_path, folder, rf, requests_format)
    print(f"results written to {folder}", file=sys.stderr)
    return 0


def _requests_format(args: argparse.Namespace) -> str | None:
    """The per-request records' format (``None``: not written), from --requests-format and
    --no-requests."""
    if args.no_requests:
        if args.requests_format is not None:
            raise ValueError("--no-requests and --requests-format contradict each other; "
                             "give one of them")
        return None
    return args.requests_format or REQUEST_FORMAT_CHOICES[0]


#: the files ``--out`` receives besides the per-request records (dram.output.write_run)
RUN_FILES = ("stats.json", "stats.csv", "config.json", "summary.txt")


def run_files(requests_format: str | None = REQUEST_FORMAT_CHOICES[0],
              epochs: bool = False) -> list[str]:
    """The files ``--out`` receives, as named in its INCOMPLETE marker: the per-request
    records (``requests.npz`` or ``requests.csv``; none for ``None``), then :data:`RUN_FILES`,
    then ``epochs.csv`` if ``epochs`` (``--epoch``)."""
    head = [] if requests_format is None else [f"requests.{requests_format}"]
    return head + list(RUN_FILES) + (["epochs.csv"] if epochs else [])


def _check_command_trace(path: Path) -> None:
    """Before any work: ``--command-trace FILE`` can be created (a new file in a folder that
    exists or can be made, and can be written; an existing file is never written over)."""
    from cosmos_common.outdir import check_new_file

    check_new_file(path, force=None, option="--command-trace")


def _replay_and_write(args, config, opts, trace_path: str, folder, rf,
                      requests_format: str | None = REQUEST_FORMAT_CHOICES[0]) -> None:
    import dataclasses

    from dram.output import _json_text, summary_table, write_run
    from dram.traces import read_trace

    t0 = time.perf_counter()
    trace = read_trace(args.trace, opts["format"], config=config, wrap=opts["wrap"],
                       unaligned=opts["unaligned"])  # read once: pipes and - work too
    read_s = time.perf_counter() - t0
    replay = _replay_function()
    progress, close = _progress_bar(len(trace), disable=args.no_progress)
    extra = {}                  # the options off: the very call of a plain replay
    command_trace = getattr(args, "command_trace", None)
    epoch = getattr(args, "epoch", None)
    if epoch is not None:
        extra["epoch_cycles"] = epoch
    writer = None
    if command_trace is not None:
        from dram.output import CommandTraceWriter
        writer = extra["command_sink"] = CommandTraceWriter(command_trace)
    t0 = time.perf_counter()
    try:
        try:
            result = replay(trace, config, progress=progress, threads=args.threads,
                            memspec=getattr(args, "memspec", None), **extra)
        finally:
            close()
        replay_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        if writer is not None:
            writer.finish()
        trace_write_s = time.perf_counter() - t0
    except BaseException:
        if writer is not None:
            writer.abort()
        raise

    stats = run_statistics(trace, result, read_s=read_s, replay_s=replay_s)
    table = summary_header(trace, config) + "\n" + summary_table(stats)
    if args.json:
        print(_json_text(stats), end="")
    else:
        print(table)
    if folder is not None:
        run_config = {
            "dram_config": dataclasses.asdict(config),
            "trace": {
                "path": trace_path,
                "format": trace.format,
                "bytes": trace.source_bytes,
                "sha256": trace.source_sha256,
                "n_requests": len(trace),
            },
            "replay": opts,
            "requests_format": requests_format,
            "epoch_cycles": epoch,
            "command_trace": None if command_trace is None else str(command_trace.resolve()),
            "command": shlex.join(sys.argv),     # as typed, in the folder "cwd"
            "cwd": str(Path.cwd()),
            "memspec": (None if getattr(args, "memspec", None) is None else
                        str(Path(args.memspec.source).resolve())),
            "rerun": _rerun_command(trace_path, folder / "config.json", opts)
                     + ("" if getattr(args, "memspec", None) is None else
                        " --memspec " + shlex.quote(str(Path(args.memspec.source).resolve()))),
            "versions": _versions(),
        }
        t0 = time.perf_counter()
        write_run(folder, trace=trace, result=result, stats=stats, config=run_config,
                  summary=table, requests_format=requests_format)
        write_s = time.perf_counter() - t0
        for name in run_files(requests_format, epoch is not None):
            rf.done(name)
    else:
        write_s = 0.0
    if args.verbose:
        print(time_split(stats, write_s, requests_format if folder is not None else None),
              file=sys.stderr)
        if writer is not None:
            print(f"      write command trace    {trace_write_s:8.3f} s  ({writer.n_commands:,} "
                  f"commands, {command_trace})", file=sys.stderr)


def time_split(stats: dict, write_s: float, requests_format: str | None) -> str:
    """The ``--verbose`` lines: wall time of each step of the replay, in this process."""
    sim_s = stats["sim_wall_s"]
    setup_s = max(stats["replay_wall_s"] - sim_s, 0.0)
    what = (f"requests.{requests_format} and statistics" if requests_format is not None
            else "statistics only" if write_s else "nothing written")
    since_start = time.perf_counter() - _PROCESS_T0
    return "\n".join([
        f"time  read and parse trace   {stats['trace_read_s']:8.3f} s",
        f"      simulate               {sim_s:8.3f} s  (+ {setup_s:.3f} s state set-up, "
        f"kernel load or compile)",
        f"      write results          {write_s:8.3f} s  ({what})",
        f"      since the CLI started  {since_start:8.3f} s  (imports included, interpreter "
        f"start not)",
    ])


def _trace_path(arg: str) -> str:
    """The trace as config.json records it: a regular file by its absolute path; standard
    input (``-``), a pipe or a device as given (their bytes cannot be read again: the sha256
    in config.json identifies them)."""
    path = Path(arg)
    return str(path.resolve()) if arg != "-" and path.is_file() else arg


def _rerun_command(trace_path: str, config_json: Path, opts: dict) -> str:
    """A command that repeats this run: the same trace, memory system and replay options
    (written out, although ``--config`` alone restores them)."""
    parts = ["cosmos", "dram", "replay", trace_path, "--config",
             str(config_json.resolve()), "--format", opts["format"],
             "--wrap" if opts["wrap"] else "--no-wrap",
             "--strict-align" if opts["unaligned"] == "error" else "--no-strict-align"]
    return " ".join(shlex.quote(p) for p in parts)


def _versions() -> dict:
    import numba
    import numpy

    try:
        from cosmos_common import __version__ as cosmos_version
    except Exception:  # pragma: no cover - dram is usable without the cosmos package
        cosmos_version = None
    return {"cosmos": cosmos_version, "numpy": numpy.__version__, "numba": numba.__version__,
            "python": sys.version.split()[0]}


def _progress_bar(total: int, *, disable: bool):
    """A tqdm bar over completed requests and the callback ``f(done, total)`` that advances it;
    shown on a terminal only, and only once the run has taken more than a second."""
    if not progress_wanted(disable):             # no bar (pipes, logs, tests): no tqdm import
        return (lambda done, total_=None: None), (lambda: None)
    from tqdm.auto import tqdm

    bar = tqdm(total=total, unit="req", unit_scale=True, desc="replay", mininterval=0.5,
               delay=1.0, file=sys.stderr, leave=False)
    state = {"done": 0}

    def progress(done: int, total_: int | None = None) -> None:
        done = int(done)
        if done > state["done"]:
            bar.update(done - state["done"])
            state["done"] = done

    return progress, bar.close


def summary_header(trace, config) -> str:
    """Two lines naming the trace and the memory system."""
    from dram.traces import _fmt_bytes

    kind = "timed" if trace.timed else "untimed"
    refresh = "refresh on" if config.refresh else "refresh off"
    return (
        f"trace   {trace.source} ({trace.format}, {kind})\n"
        f"memory  {config.standard} {config.org}, {config.channels} ch x {config.ranks} ranks "
        f"({_fmt_bytes(config.capacity_bytes)}), {config.mapping}, {config.scheduler}, "
        f"{config.row_policy} page, {refresh}, queues {config.read_queue_depth}/"
        f"{config.write_queue_depth}\n"
    )


def run_statistics(trace, result, *, read_s: float, replay_s: float) -> dict:
    """The statistics written to stats.json: the model's statistics (units in the names, see
    :mod:`dram.stats`) plus the run's bookkeeping."""
    from dram.output import stats_to_dict

    stats = stats_to_dict(result.stats)
    sim_s = float(getattr(result, "wall_s", 0.0) or replay_s)
    stats["trace_read_s"] = float(read_s)
    # compiling (or loading) the jitted driver, timed apart from the simulation
    stats["compile_s"] = float(getattr(result, "compile_s", 0.0))
    stats["replay_wall_s"] = float(replay_s)
    stats["sim_wall_s"] = sim_s
    stats["sim_requests_per_s"] = float(len(trace) / sim_s) if sim_s > 0 else None
    stats["sim_threads"] = int(getattr(result, "threads", 1))
    return stats
