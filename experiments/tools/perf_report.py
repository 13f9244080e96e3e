"""Write docs/performance.md from the benchmark scripts: one table of the speed and memory figures.

    python experiments/tools/perf_report.py            # full sizes (5-10 minutes on 2 cores)
    python experiments/tools/perf_report.py --quick    # small sizes, about a minute with warm caches

Runs each benchmark script of ``experiments/tools/`` (bench_dram, bench_replay, bench_cosmos,
bench_graphs twice -- hnswlib and Vamana graphs --, bench_placement) in its own process with ``--json``, so each peak-memory figure is that of its
own process, reads the figures from those JSON files (never from printed text) and writes
the page atomically (a temporary file in the same folder, then a rename). The page names the
CPU model once, at the top, then gives one table: the command a reader can run, what it
measures, the figure.

Runs of an hour or more (a paper-scale workload's build, a sweep at the full scale) are not
benchmark scripts: their rows name the `cosmos` or `python -c` command that measured them and
the machine's load at the time. The page being replaced keeps them: every row whose command is
not one of the scripts above (with the continuation rows under it) is carried into the new page
as it stands, after the scripts' rows (:func:`carried_rows`).

Numba cache: before the system-model benchmark is timed, a short run of the same configuration
compiles (or loads) its kernels, with the same engine (generic or specialized, see
cosmos.specialize) the timed run will use, so the table reports warm-cache speed; the DRAM
benchmark reports its first call (compile or cache load) on a line of its own. Workloads
(datasets, indexes, traces) are cached under ``$COSMOS_CACHE`` and are not part of any timed
figure except in bench_graphs, which times building them from nothing.

Run it on a quiet machine: the figures are wall-clock times of one run each. ``--quick`` runs
every script at small sizes to check that the page can be made; its figures say nothing about
full-size speed, and the page says so in its header.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if __package__ in (None, ""):
    sys.path.insert(0, str(ROOT))

from experiments.harness.common import atomic_write_text  # noqa: E402


@dataclass(frozen=True)
class Bench:
    """One benchmark script, its arguments at full and quick size, and a warm-up run."""

    module: str
    full: tuple
    quick: tuple
    warmup_full: tuple | None = None     # arguments of an untimed run that compiles the kernels
    warmup_quick: tuple | None = None
    env_full: dict = field(default_factory=dict)   # environment of the warm-up at full size
    key: str | None = None               # name of its figures when a script runs twice (default: module)

    @property
    def name(self) -> str:
        return self.key or self.module


BENCHES = [
    Bench("bench_dram", (), ("--only", "1ch_anns")),
    # whole `cosmos dram replay` processes; it makes its own untimed warm-up run
    Bench("bench_replay", ("--runs", "3", "--variants", "npz,none,1thread"),
          ("--requests", "20000", "--runs", "1", "--variants", "npz")),
    Bench("bench_cosmos", ("--system", "cosmos", "--num-queries", "10000"),
          ("--system", "cosmos", "--num-queries", "300"),
          # 10,000 queries run the specialized engine (cosmos.specialize.MIN_REQUESTS): compile it
          # on a short run with COSMOS_SPECIALIZE=1, which specializes to the same configuration.
          warmup_full=("--system", "cosmos", "--num-queries", "100"),
          warmup_quick=("--system", "cosmos", "--num-queries", "50"),
          env_full={"COSMOS_SPECIALIZE": "1"}),
    Bench("bench_graphs", (), ("--n", "20000", "--num-queries", "500")),
    # the 1M-vector clustered Vamana index (goal: built within 10 minutes on 2 cores)
    Bench("bench_graphs", ("--graph", "vamana", "--num-queries", "2000"),
          ("--graph", "vamana", "--n", "20000", "--num-queries", "500"), key="bench_graphs_vamana"),
    Bench("bench_placement", ("--policies", "adjacency", "size_balanced", "round_robin", "random"),
          ("--side", "300", "--policies", "adjacency", "size_balanced", "round_robin", "random")),
]


def cpu_model() -> str:
    """The CPU's model name (from /proc/cpuinfo on Linux, else platform) and the CPU count."""
    name = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{name or platform.processor() or platform.machine()}, {os.cpu_count()} CPUs"


def run_bench(b: Bench, quick: bool, tmp: Path) -> dict:
    """Run one script (after its warm-up) with ``--json`` in a child process; its figures."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    warm = b.warmup_quick if quick else b.warmup_full
    if warm is not None:
        wenv = env if quick else dict(env, **b.env_full)
        print(f"[perf_report] warm-up: {b.module} {' '.join(warm)}", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, "-m", f"experiments.tools.{b.module}", *warm], cwd=ROOT,
                       env=wenv, check=True, stdout=sys.stderr)
    args = list(b.quick if quick else b.full)
    out = tmp / f"{b.name}.json"
    if b.module == "bench_dram":
        args += ["--out", str(tmp / "results")]
    elif b.module == "bench_replay":
        args += ["--out-root", str(tmp / "results")]
    print(f"[perf_report] {b.module} {' '.join(args)}", file=sys.stderr, flush=True)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", f"experiments.tools.{b.module}", *args, "--json", str(out)],
                   cwd=ROOT, env=env, check=True, stdout=sys.stderr)
    fig = json.loads(out.read_text())
    fig["_args"] = args
    fig["_script_s"] = time.perf_counter() - t
    return fig


def _cmd(module: str, args) -> str:
    args = [a for a in args if not a.startswith(str(Path(tempfile.gettempdir())))]
    for opt in ("--out", "--out-root"):
        if opt in args:
            i = args.index(opt)
            args = args[:i] + args[i + 2:]
    return "`" + " ".join(["python", f"experiments/tools/{module}.py", *args]) + "`"


def _n(x: float, digits: int = 0) -> str:
    return f"{x:,.{digits}f}"


def table_rows(figs: dict) -> list:
    """(command, what it measures, figure) rows from the benchmarks' JSON figures."""
    rows = []
    d = figs.get("bench_dram")
    if d:
        c = _cmd("bench_dram", d["_args"])
        tot = d["patterns"]["TOTAL"]
        rows.append((c, f"DDR5 model, open-loop replay of the Ramulator 2.1 reference traces "
                        f"({tot['runs']} runs, {_n(tot['requests'])} requests; trace generation "
                        f"not timed): simulated requests per second, all runs",
                     f"{_n(tot['requests_per_s'])} requests/s ({tot['speedup']:.1f}x Ramulator 2.1's "
                     f"{_n(tot['ramulator_requests_per_s'])}/s on the same runs)"))
        for pat, p in d["patterns"].items():
            if pat == "TOTAL" or len(d["patterns"]) <= 2:   # one pattern: its row is the total
                continue
            rows.append(("", f"the same, `{pat}` traces ({p['runs']} runs)",
                         f"{_n(p['requests_per_s'])} requests/s ({p['speedup']:.1f}x)"))
        rows.append(("", "first call of the DRAM kernels (numba compile, or load from its "
                         "on-disk cache when warm); peak memory of the process",
                     f"{d['compile_or_cache_load_s']:.1f} s; {_n(d['peak_rss_MB'])} MB"))
    r = figs.get("bench_replay")
    if r:
        c = _cmd("bench_replay", r["_args"])
        m = r["medians"]
        lead = next(v for v in ("npz", "csv", "gz", "none", "baseline") if v in m)
        out = {"npz": "per-request records in requests.npz",
               "csv": "per-request records in requests.csv (`--requests-format csv`)",
               "gz": "the trace gzip-compressed, requests.npz",
               "none": "no per-request records (`--no-requests`)",
               "1thread": "requests.npz, the channels simulated on one thread (`--workers 1`)"}
        load = " ".join(f"{x:.1f}" for x in r["load_before"])
        first = True
        for v in [lead] + [v for v in m if v not in (lead, "baseline")]:
            f = m[v]
            what = (f"`cosmos dram replay TRACE --out DIR`, whole process (spawn to exit), on a "
                    f"{_n(r['n_requests'])}-request timed {r['channels']}-channel "
                    f"`{r['pattern']}` DRAMsim3 trace ({r['trace_MB']:.1f} MB), {out[v]}, "
                    f"numba cache warm; median of {r['runs']} interleaved runs (load average "
                    f"{load} on {r['cpus']} CPUs); vs Ramulator 2.1's replay loop alone on the "
                    f"same requests ({r['ramulator_s']:.2f} s)" if first
                    else f"the same, {out[v]}")
            rows.append((c if first else "", what,
                         f"{f['wall_s']:.2f} s ({f['cpu_s']:.2f} s CPU): "
                         f"{f['speedup_vs_ramulator']:.1f}x Ramulator 2.1 by wall time, "
                         f"{f['cpu_speedup_vs_ramulator']:.1f}x by CPU time"))
            first = False
        f = m[lead]
        rows.append(("", "the same, where the wall time goes (from stats.json): read and parse "
                         "the trace; set-up (config, address mapping and request layout, state, "
                         "kernel load, statistics); simulate; write the files; the rest "
                         "(interpreter start, imports, numba start-up)",
                     f"{f['parse_s']:.2f} s; {f['setup_s']:.2f} s; {f['simulate_s']:.2f} s; "
                     f"{f['write_s']:.2f} s; {f['other_s']:.2f} s; peak memory "
                     f"{_n(f['peak_rss_MB'])} MB"))
    c_ = figs.get("bench_cosmos")
    if c_:
        c = _cmd("bench_cosmos", c_["_args"])
        rows.append((c, f"system model, closed loop: {_n(c_['num_queries'])} queries of the default "
                        f"SIFT-like workload on `{c_['system']}` ({_n(c_['requests'])} DRAM "
                        f"requests), numba kernels warm; wall (CPU) time of `simulate`",
                     f"{c_['simulate_total_s']:.1f} s ({c_['simulate_cpu_s']:.1f} s CPU), "
                     f"{_n(c_['requests_per_s'])} DRAM requests/s"))
        rows.append(("", "the same: setup before the engine (trace, layout, program) and peak "
                         "memory of the process",
                     f"{c_['simulate_total_s'] - c_['engine_s']:.1f} s; {_n(c_['peak_rss_MB'])} MB"))
    g = figs.get("bench_graphs")
    if g:
        c = _cmd("bench_graphs", g["_args"])
        cfg = g["config"]
        rows.append((c, f"graphs, {_n(cfg['n'])} synthetic SIFT-like vectors, "
                        f"{_n(cfg['num_queries'])} queries, {g['cpus']} threads: exact ground truth",
                     f"{g['groundtruth_s']:.1f} s ({g['groundtruth_cpu_s']:.1f} s CPU)"))
        rows.append(("", f"the same: index build (k-means + {cfg['num_clusters']} hnswlib graphs)",
                     f"{g['build_s']:.1f} s ({g['build_cpu_s']:.1f} s CPU); index file "
                     f"{_n(g['index_file_MB'])} MB"))
        rows.append(("", f"the same: traced search of every query ({cfg['num_probes']} probes, "
                         f"L = {cfg['cand_list_len']}), kernels warm",
                     f"{g['trace_s']:.1f} s ({_n(cfg['num_queries'] / g['trace_s'])} queries/s); "
                     f"recall@{cfg['k']} {g['recall_at_k']:.4f}"))
        rows.append(("", "the same: peak memory of the process",
                     f"{_n(g.get('peak_rss_MB', g['peak_rss_after_trace_MB']))} MB"))
    v = figs.get("bench_graphs_vamana")
    if v:
        cfg = v["config"]
        rows.append((_cmd("bench_graphs", v["_args"]),
                     f"graphs, {_n(cfg['n'])} synthetic SIFT-like vectors, {v['cpus']} threads: index build "
                     f"(k-means + {cfg['num_clusters']} Vamana graphs as the DiskANN library builds them, "
                     f"R = {cfg['R']}, L = {cfg['L']}, alpha = {cfg['alpha']}; goal 600 s)",
                     f"{v['build_s']:.1f} s ({v['build_cpu_s']:.1f} s CPU); index file "
                     f"{_n(v['index_file_MB'])} MB"))
        rows.append(("", f"the same: traced search of {_n(cfg['num_queries'])} queries "
                         f"({cfg['num_probes']} probes, L = {cfg['cand_list_len']}), kernels warm",
                     f"{v['trace_s']:.1f} s ({_n(cfg['num_queries'] / v['trace_s'])} queries/s); "
                     f"recall@{cfg['k']} {v['recall_at_k']:.4f}"))
    p = figs.get("bench_placement")
    if p:
        c = _cmd("bench_placement", p["_args"])
        first = True
        order = [a for a in p["_args"] if a in p["policies"]] or list(p["policies"])
        for pol in order:
            f = p["policies"][pol]
            what = (f"placement, {_n(p['clusters'])} clusters on {p['devices']} devices, "
                    f"{p['neighbors']} neighbors each: `placement.place(..., \"{pol}\")`"
                    if first else f"the same, policy `{pol}`")
            rows.append((c if first else "", what,
                         f"{f['wall_s']:.2f} s ({f['cpu_s']:.2f} s CPU)"))
            first = False
    return rows


STATIC = """\
## How to measure

- Every figure above comes from the command in its row: one script in `experiments/tools/`
  (run it alone to repeat that figure, or `python experiments/tools/perf_report.py` to remake
  this page; `--quick` runs every script at small sizes in about a minute, to check the
  tooling, not the speed), or, for runs of an hour or more, the `cosmos` or `python -c` command
  shown, measured once under the load its row states; `perf_report.py` carries those rows into
  the page it writes as they stand.
- **Warm vs cold numba cache.** The kernels are compiled on first use and cached on disk
  (`__pycache__` beside each module; the specialized engine under `$COSMOS_CACHE/kernels`). A
  cold cache adds about a minute per kernel family (DRAM kernel, system engine, graph search),
  and about another minute the first time a configuration runs the specialized engine (runs of
  at least 30 M DRAM requests, and shorter ones once their configuration's build has run,
  `cosmos/specialize.py`). `bench_dram.py` reports its first call
  separately; `perf_report.py` warms the system engine before timing it. To measure a cold
  start, point `NUMBA_CACHE_DIR` and `COSMOS_CACHE` at empty folders.
- **Comparing two versions of the code.** The wall time of one run on a shared or virtual
  machine varies by 10-30 % from hour to hour, more than most changes are worth. Compare in
  alternation: run A, B, A, B, ... in the same minutes (one at a time, the other core idle),
  at least three rounds, and compare the best (or the median) of each; report CPU time
  (`bench_cosmos.py` prints both) when other jobs share the machine. Check that both versions
  give identical results first (the tests compare engines and kernels request by request).
- **Instruction counts and time per function.** `python experiments/tools/profile_jit.py --system
  cosmos --num-queries 60` counts every instruction of the jitted code under valgrind's
  callgrind and attributes it to the kernels' functions (exact and repeatable, so two versions
  compare without timing noise); `--perf` samples where this CPU's time goes instead (needs
  `perf`); `--dram-trace NAME` profiles an open-loop replay of a reference trace.

## Where the time goes

- **System model** (`cosmos simulate`, `bench_cosmos.py`): almost all of a long run is the
  numba engine (`cosmos/engine.py`) and the DRAM controllers it drives (`dram/kernel/`).
  Setup before the engine (reading the trace, placement, layout, building the program) is
  about 2 s for 10,000 queries. A time profile of the jitted code (`profile_jit.py --perf`)
  is flat: roughly a quarter in the scheduler's decision (FR-FCFS scans of the read/write and
  active buffers), a sixth in the engine's own part of each window (queries, contexts, links,
  events), an eighth in the channels' part (FIFOs, offers, ticks), about a tenth each in the
  timing-constraint updates and in serving commands (bookkeeping, scheduler-cache refresh),
  the rest in the channel cycle and refresh. No single function holds more than a quarter.
- **`cosmos reproduce --full` from nothing** (docs/experiments.md gives its wall time): both
  cores busy to the end, so the CPU time is the wall time. Sampled with py-spy over a whole cold
  run (`py-spy record -s -r 25 -f raw -o prof.txt -- python -m cosmos reproduce --full`,
  every process, frames grouped by the pool job they ran in): about two thirds in the engine
  (the simulations), a fifth building the two workloads (about half of that the 64 hnswlib
  cluster graphs of each, then the exact ground truth, the traced search and writing the
  files), a tenth compiling the three specialized engine builds (about 42 CPU s each, a
  third of it the DRAM controller's tick function with its inlined scheduler), about
  5 % in each run's set-up (building the program from the trace, the layout, reading the
  trace, the summary) and 3 % replaying the DRAM validation traces; the experiments' tables
  and plots and the main process take the rest.
- **DRAM replay** (`cosmos dram replay`, `bench_dram.py`): the same controller code, driven by
  `dram/openloop.py`. Per request a loaded trace costs about 5-6 driver iterations, 4-6
  scheduler evaluations and 3 commands (each updating about 20 timing constraints); the time
  is spread over the driver, the buffer scans, the constraint updates, the scheduler-cache
  refresh, serving and the offers, none above about a fifth.
- **A whole `cosmos dram replay`** (`bench_replay.py`; `--verbose` prints the split of one
  run): besides the simulation, a fixed start-up of about half a second (interpreter, numpy and
  numba imports, numba's first-use set-up and loading the cached kernels; the command starts
  numba without scipy.linalg and cffi, which the kernels never use), reading the trace (a
  compiled scanner over 16 MiB blocks, each cut at line ends into one piece per CPU scanned in
  parallel threads straight into the trace's arrays, hex digits from a lookup table and
  keywords matched with one case fold per byte, with the SHA-256 of the source computed in
  another thread, `dram/tracescan.py`), laying the requests out for the driver (one compiled
  pass: address mapping and a counting sort by channel and FIFO, 17 bytes per request), the
  simulation (the channels on parallel threads, one channel per thread at a time), the
  statistics and the files; the process then exits without the interpreter's final garbage
  collections, which would walk numba's object graph for about 0.15 s (`cosmos.cli.run`). On a
  virtual machine, first-touching fresh memory costs a few milliseconds per MB, so the reader
  and the replay's set-up avoid copies of the trace's arrays.
- **Graphs** (`bench_graphs.py`): the exact ground truth is BLAS matrix products; the index
  build is k-means plus hnswlib graph construction (clusters built in parallel), or with
  `--graph vamana` the Vamana graphs one cluster after the other, each by numba threads over
  batches of points (`graphs/vamana_diskann.py`; the first points of a cluster go nearly one by
  one, so about 1.4 of 2 cores are busy); the traced search is a numba `prange` over queries.
- **Placement** (`bench_placement.py`): Algorithm 1 is vectorized per block of 4,096 clusters
  plus one short Python step per cluster (about half of its time).

## What scales with what

- System model time grows with the number of **DRAM requests** simulated, not with queries as
  such: a default SIFT-like query (50,000-vector index) makes about 9,500, a DEEP-like one
  about 2.8 times as many, and at the `full` scale's 1M vectors about 27,000 and 77,000. More
  devices or channels add controller states (about 78 KB each) and requests in flight; a
  loaded channel costs more per request than an idle one (longer buffers to scan).
- System model memory: the per-query program is about 50 KB per default SIFT-like query (0.5 GB
  for 10,000), plus the trace and the controller states; `cosmos reproduce --full` needs 5-10
  GB per worker process (`experiments/harness/workloads.py`).
- DRAM replay time grows with requests and with load (buffer occupancy); an idle gap between
  requests costs only the refreshes that fall in it. Reading a trace needs about 25 bytes per
  request plus a 16 MiB block buffer.
- Ground truth: base vectors x queries (products), memory independent of n (a fixed 128 MB
  product buffer). Index build: about linear in n for a fixed number of clusters (hnswlib
  build grows slightly faster than linear in the cluster size). Trace: queries x probes x hops
  per search; its memory grows with the vector reads recorded (about 12 per hop at 100,000
  vectors, 24 at 1M).
- Placement: O(C x min(A, D)) vectorized work plus C Python steps for Algorithm 1; the
  adjacency from centroids is O(C^2 d) in chunks of memory O(chunk x C).
"""


def _cells(line: str) -> tuple | None:
    """The three cells of a table row of the page, or None for any other line."""
    if not line.startswith("| ") or not line.rstrip().endswith("|") or line.startswith("|---"):
        return None
    cells = tuple(c.strip() for c in line.strip()[1:-1].split(" | "))
    return cells if len(cells) == 3 else None


def carried_rows(page_text: str) -> list:
    """The rows of an existing page that no benchmark script makes: each row whose command cell
    is not ``python experiments/tools/<script>.py`` of :data:`BENCHES`, with its continuation
    rows (empty command cell), in page order. The header row is not a row."""
    scripts = tuple(f"`python experiments/tools/{b.module}.py" for b in BENCHES)
    rows, keep = [], False
    for line in page_text.splitlines():
        cells = _cells(line)
        if cells is None or cells == ("benchmark command", "what it measures", "figure"):
            continue
        if cells[0]:
            keep = not cells[0].startswith(scripts)
        if keep:
            rows.append(cells)
    return rows


def render(figs: dict, quick: bool, cpu: str, carried=()) -> str:
    size = ("**quick mode (small sizes): these figures only show that the tooling works; they "
            "say nothing about full-size speed.** Regenerate with "
            "`python experiments/tools/perf_report.py` on a quiet machine.") if quick else (
            "Full sizes, one run of each script, numba kernels warm unless the row says otherwise.")
    lines = [
        "# Performance",
        "",
        f"Measured on {cpu} by "
        f"`python experiments/tools/perf_report.py{' --quick' if quick else ''}`. {size}",
        "",
        "| benchmark command | what it measures | figure |",
        "|---|---|---|",
    ]
    for cmd, what, value in [*table_rows(figs), *carried]:
        lines.append(f"| {cmd} | {what} | {value} |")
    lines += ["", STATIC]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (tooling check, about a minute)")
    ap.add_argument("--out", default=str(ROOT / "docs" / "performance.md"),
                    help="the page to write (default docs/performance.md)")
    ap.add_argument("--only", nargs="+", default=None, choices=list(dict.fromkeys(b.name for b in BENCHES)),
                    help="run only these scripts (the page then has only their rows)")
    a = ap.parse_args(argv)
    figs = {}
    with tempfile.TemporaryDirectory(prefix="perf_report-") as tmp:
        for b in BENCHES:
            if a.only and b.name not in a.only:
                continue
            figs[b.name] = run_bench(b, a.quick, Path(tmp))
    old = Path(a.out)
    carried = carried_rows(old.read_text()) if old.exists() else []
    text = render(figs, a.quick, cpu_model(), carried)
    atomic_write_text(a.out, text, overwrite=True)
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
