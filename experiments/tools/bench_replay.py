"""End-to-end speed of ``cosmos dram replay`` as a user runs it, beside Ramulator 2.1's replay loop.

    python experiments/tools/bench_replay.py [--trace PATH] [--requests 2000000] [--runs 3]
                                       [--variants npz,csv,none,gz] [--out-root results]
                                       [--json FIGURES.json]

Each run is one whole process, ``python -m cosmos dram replay TRACE --out DIR``, timed from
spawn to exit (wall clock, and the child's user + system CPU from ``wait4``). The variants are
interleaved (run 1 of each, then run 2 of each, ...) so that a change of load on a shared
machine hits them alike; the figures printed are medians over the runs, with the load average
before and after. Per variant: ``npz`` (the default per-request output), ``csv``
(``--requests-format csv``), ``none`` (``--no-requests``), ``gz`` (the same trace gzip-compressed,
npz output), ``1thread`` (npz output, the channels simulated on one thread: ``--workers 1``).
The split comes from each run's stats.json: ``trace_read_s`` (read and parse),
``sim_wall_s`` (the simulation loop), ``replay_wall_s - sim_wall_s`` (model set-up: config
resolution, address mapping, state allocation, kernel load), ``requests_write_s``; the rest of
the process time is interpreter start, imports and the small files.

Without ``--trace`` the trace is made with :mod:`dram.synth`: the set A pattern ``random_rw`` at
offered load 0.7 on 4 channels (seed 12), ``--requests`` lines, written in the DRAMsim3 text
format (about 25 bytes per line: 2,000,000 lines are 50 MB), kept in ``--trace-dir`` for the
next call. Ramulator's time for the same number of requests is its request rate on the set A
runs of the same pattern, load and channel count with refresh on (``results_setA.csv``,
``wall_s``: its replay loop only, trace parsing and output excluded), times the request count:
the comparison is our whole process against its loop alone.

A benchmark, not a test: it asserts nothing about speed. Writes ``bench_replay.csv`` (one row
per run) and ``config.json`` into a new folder under ``--out-root``; ``--json`` also writes the
figures (medians per variant, Ramulator's time, load) to a file, for
``experiments/tools/perf_report.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from experiments.harness.common import new_results_dir, write_csv, write_json

ROOT = Path(__file__).resolve().parents[2]
PATTERN, LOAD, CHANNELS, SEED = "random_rw", 0.7, 4, 12
VARIANTS = {
    "npz": [],
    "csv": ["--requests-format", "csv"],
    "none": ["--no-requests"],
    "gz": [],
    "1thread": ["--workers", "1"],
}


def make_trace(folder: Path, n: int) -> Path:
    """The synthetic timed 4-channel trace (plain text; a .gz twin beside it), made once."""
    from dram import synth
    from dram.traces import MemTrace, write_trace

    path = folder / f"{CHANNELS}ch_{PATTERN}_L{LOAD:.2f}_s{SEED}_n{n}.trace"
    if not path.exists() or not Path(f"{path}.gz").exists():
        folder.mkdir(parents=True, exist_ok=True)
        t = synth.loaded(PATTERN, CHANNELS, LOAD, seed=SEED, n=n)
        trace = MemTrace(addr=t.addr, is_write=t.is_write, arrival=t.arrival)
        write_trace(trace, path, overwrite=True)
        write_trace(trace, f"{path}.gz", overwrite=True)
    return path


def ramulator_seconds(n: int, pattern: str = PATTERN, load: float = LOAD,
                      channels: int = CHANNELS) -> tuple[float, dict]:
    """Ramulator 2.1's replay-loop time for ``n`` requests: its request rate on the set A runs
    of this pattern, load and channel count, refresh on, times ``n``."""
    from dram import validation as V

    ref = V.load_reference()
    sel = ref[(ref["config"] == f"{channels}ch") & (ref["refresh"] == "on")
              & (ref["pattern"] == pattern) & ((ref["offered_load_fraction"] - load).abs() < 1e-9)]
    if sel.empty:
        raise SystemExit(f"no Ramulator reference row for {pattern} at load {load} on {channels}ch")
    rate = float(sel["n_requests"].sum() / sel["wall_s"].sum())
    return n / rate, {"rows": int(len(sel)), "requests": int(sel["n_requests"].sum()),
                      "wall_s": float(sel["wall_s"].sum()), "requests_per_s": rate}


def run_once(trace: Path, extra: list[str], out: Path, repo: Path = ROOT) -> dict:
    """One whole ``cosmos dram replay`` process (the checkout ``repo``'s): wall time, CPU time
    and its stats.json."""
    cmd = [sys.executable, "-m", "cosmos", "dram", "replay", str(trace), "--out", str(out),
           "--no-progress", *extra]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err}")
    stats = json.loads((out / "stats.json").read_text())
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime,
            "peak_rss_MB": usage.ru_maxrss / 1024,
            "parse_s": stats["trace_read_s"], "simulate_s": stats["sim_wall_s"],
            "setup_s": stats["replay_wall_s"] - stats["sim_wall_s"],
            "write_s": stats.get("requests_write_s", 0.0), "n_requests": stats["n_requests"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trace", type=Path, help="a timed 4-channel DRAMsim3 trace "
                    "(default: the synthetic one, see the module docstring)")
    ap.add_argument("--requests", type=int, default=2_000_000,
                    help="lines of the synthetic trace (default 2,000,000)")
    ap.add_argument("--trace-dir", type=Path,
                    default=Path(os.environ.get("COSMOS_CACHE", Path.home() / ".cache/cosmos"))
                    / "bench_replay", help="where the synthetic trace is kept")
    ap.add_argument("--runs", type=int, default=3, help="runs per variant (interleaved)")
    ap.add_argument("--variants", default="npz,none,gz",
                    help=f"comma-separated, of {', '.join(VARIANTS)} (default npz,none,gz)")
    ap.add_argument("--baseline", type=Path, metavar="CHECKOUT",
                    help="also time another checkout of the project (e.g. an earlier revision "
                         "exported with git archive), run with no output option, interleaved "
                         "with the variants as variant 'baseline'")
    ap.add_argument("--out-root", default="results")
    ap.add_argument("--json", type=Path, default=None,
                    help="also write the figures to this JSON file")
    a = ap.parse_args(argv)
    variants = [v.strip() for v in a.variants.split(",") if v.strip()]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown or not variants:
        ap.error(f"unknown variant(s) {', '.join(unknown)}; valid: {', '.join(VARIANTS)}")
    if a.runs < 1:
        ap.error("--runs must be at least 1")

    trace = a.trace if a.trace is not None else make_trace(a.trace_dir, a.requests)
    if "gz" in variants and not Path(f"{trace}.gz").exists():
        ap.error(f"variant gz needs {trace}.gz beside the trace")
    load_before = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="bench_replay."))
    rows = []
    try:
        # one untimed run first: numba's on-disk cache is filled, as after any first use
        run_once(trace, ["--no-requests"], work / "warm")
        if a.baseline is not None:
            run_once(trace, [], work / "warm-baseline", a.baseline)
            variants.append("baseline")
        for r in range(a.runs):
            for v in variants:
                src = Path(f"{trace}.gz") if v == "gz" else trace
                out = work / f"{v}-{r}"
                if v == "baseline":
                    got = run_once(src, [], out, a.baseline)
                else:
                    got = run_once(src, VARIANTS[v], out)
                rows.append({"variant": v, "run": r, **got})
                shutil.rmtree(out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load_after = os.getloadavg()

    n = rows[0]["n_requests"]
    ram_s, ram = ramulator_seconds(n)
    print(f"trace: {trace} ({n:,} requests, {trace.stat().st_size / 1e6:.1f} MB), "
          f"{a.runs} interleaved runs per variant, medians")
    print(f"load average (1/5/15 min): before {' '.join(f'{x:.2f}' for x in load_before)}, "
          f"after {' '.join(f'{x:.2f}' for x in load_after)}; {os.cpu_count()} CPUs")
    print(f"Ramulator 2.1 replay loop, same requests: {ram_s:.2f} s "
          f"({ram['requests_per_s']:,.0f} req/s over {ram['rows']} set A runs of {PATTERN} "
          f"L{LOAD} {CHANNELS}ch refresh on)")
    head = (f"{'variant':8s} {'wall s':>8s} {'CPU s':>8s} {'parse':>7s} {'set-up':>7s} "
            f"{'simulate':>8s} {'write':>7s} {'other':>7s} {'RSS MB':>7s} {'vs Ramulator':>13s}")
    print(head)
    summary = {}
    for v in variants:
        got = [row for row in rows if row["variant"] == v]
        med = {k: statistics.median(row[k] for row in got)
               for k in ("wall_s", "cpu_s", "parse_s", "setup_s", "simulate_s", "write_s",
                         "peak_rss_MB")}
        med["other_s"] = med["wall_s"] - med["parse_s"] - med["setup_s"] - med["simulate_s"] \
            - med["write_s"]
        med["speedup_vs_ramulator"] = ram_s / med["wall_s"]
        med["cpu_speedup_vs_ramulator"] = ram_s / med["cpu_s"]
        summary[v] = med
        print(f"{v:8s} {med['wall_s']:8.2f} {med['cpu_s']:8.2f} {med['parse_s']:7.2f} "
              f"{med['setup_s']:7.2f} {med['simulate_s']:8.2f} {med['write_s']:7.2f} "
              f"{med['other_s']:7.2f} {med['peak_rss_MB']:7.0f} "
              f"{med['speedup_vs_ramulator']:12.1f}x")
    print("wall = whole process, spawn to exit; other = interpreter start, imports, small files")

    import pandas as pd

    folder = new_results_dir(a.out_root, "bench_replay")
    write_csv(folder / "bench_replay.csv", pd.DataFrame(rows))
    figures = {
        "trace": str(trace), "trace_MB": trace.stat().st_size / 1e6, "n_requests": n,
        "pattern": PATTERN, "offered_load": LOAD, "channels": CHANNELS, "runs": a.runs,
        "variants": variants, "load_before": load_before, "load_after": load_after,
        "cpus": os.cpu_count(), "ramulator_s": ram_s, "ramulator": ram, "medians": summary,
        "command": " ".join(sys.argv)}
    write_json(folder / "config.json", figures)
    if a.json is not None:
        write_json(a.json, figures, overwrite=True)
    print(f"results written to {folder}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
