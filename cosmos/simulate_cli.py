"""``cosmos simulate``: run one of the paper's systems on a logical trace.

    cosmos simulate --list
    cosmos simulate --system cosmos --trace trace.npz --out results/cosmos-sift
    cosmos simulate --system base --workload sift --num-queries 2000 --out results/base-sift
    cosmos simulate --system cosmos --trace t.npz --mode open --rate 200000 --out r/open
    cosmos simulate --system cosmos --trace t.npz --set gpc.cores=4 --set link.latency_ns=60 --out r/x

Writes into DIR (created; refused if it already holds results): ``summary.json`` (qps, latency
mean/p50/p99 in ns, the breakdown, link and DRAM figures), ``per_query.csv``,
``per_device.csv`` and ``config.json`` (system config, trace metadata and the options).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def register(subparsers) -> None:
    p = subparsers.add_parser("simulate", help="simulate one system preset on a logical trace",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("--list", action="store_true", help="list the system presets and exit")
    p.add_argument("--system", help="preset name (see --list)")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--trace", help="logical trace .npz (graphs.trace.save_trace)")
    src.add_argument("--workload", help="build the default trace of a synthetic family or "
                     "real set (sift, deep, ...) with graphs.make_workload (cached)")
    p.add_argument("--out", help="results folder (must not already hold results)")
    p.add_argument("--num-queries", type=int, default=None,
                   help="simulate only the first N queries of the trace")
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
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def run(args) -> int:
    from cosmos.cli import UserError
    from cosmos.presets import DESCRIPTIONS, PRESETS, get_preset

    if args.list:
        for name in PRESETS:
            print(f"{name:15s} {DESCRIPTIONS[name]}")
        return 0
    if not args.system:
        raise UserError("--system is required (or --list)")
    if not args.out:
        raise UserError("--out DIR is required")
    if not args.trace and not args.workload:
        raise UserError("give --trace FILE or --workload NAME")
    out = Path(args.out)
    names = ("summary.json", "per_query.csv", "per_device.csv", "config.json")
    if out.exists():
        existing = [n for n in names if (out / n).exists()]
        if existing:
            raise FileExistsError(f"{out} already holds results ({', '.join(existing)}); "
                                  f"choose a new --out")
    cfg = get_preset(args.system)
    if args.set:
        from cosmos.config import parse_overrides, with_overrides

        cfg = with_overrides(cfg, parse_overrides(args.set))
    if args.trace:
        trace = args.trace
        if not os.path.exists(trace):
            raise FileNotFoundError(f"trace file not found: {trace}")
    else:
        from graphs import make_workload

        trace = make_workload(args.workload, progress=not args.no_progress)

    from cosmos.metrics import per_device, per_query, summary
    from cosmos.simulate import simulate

    res = simulate(cfg, trace, num_queries=args.num_queries, mode=args.mode,
                   rate_qps=args.rate, max_inflight=args.max_inflight, seed=args.seed,
                   progress=not args.no_progress)
    summ = summary(res, warmup=args.warmup)
    out.mkdir(parents=True, exist_ok=True)
    _write_atomic(out / "per_query.csv", per_query(res).to_csv(index=False))
    _write_atomic(out / "per_device.csv", per_device(res).to_csv(index=False))
    conf = {"system": cfg.to_dict(), "trace_meta": res.trace_meta,
            "options": {k: v for k, v in vars(args).items() if k != "func"}}
    _write_atomic(out / "config.json", json.dumps(conf, indent=2, default=str))
    _write_atomic(out / "summary.json", json.dumps(summ, indent=2))
    b = summ["breakdown_ns"]
    print(f"{cfg.name}: {summ['qps']:.0f} QPS, latency mean {summ['latency_mean_ns']:.0f} ns, "
          f"p99 {summ['latency_p99_ns']:.0f} ns; breakdown (ns) "
          + ", ".join(f"{k} {v:.0f}" for k, v in b.items()) + f"; results in {out}")
    return 0
