"""Speed of the DRAM model on the set A traces (124 runs), beside Ramulator 2.1's replay loop.

    python experiments/tools/bench_dram.py [--out results] [--only SUBSTRING] [--repeat 1] [--json PATH]

Prints the first-call compile time (numba, separately: 0 s once the on-disk cache is warm),
then simulated requests per second per pattern and in total (trace lines / seconds spent in the
simulation loop, trace generation excluded), Ramulator 2.1's figure on the same runs (its
``wall_s`` column: replay loop only, measured with 2 runs in parallel on a 2-core machine), and
the peak resident memory. Writes ``bench.csv`` and ``config.json`` into a new results folder;
``--json PATH`` also writes the printed figures to one JSON file (experiments/tools/perf_report.py
reads it).
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from experiments.harness.common import new_results_dir, write_csv, write_json


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="results")
    ap.add_argument("--only", default="", help="only traces whose name contains this")
    ap.add_argument("--repeat", type=int, default=1, help="replays per run (best time kept)")
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    ap.add_argument("--threads", type=int, default=1,
                    help="threads per replay (default 1: the model on one core, as Ramulator "
                         "2.1's loop runs; dram.replay's own default is every CPU)")
    a = ap.parse_args(argv)

    from dram import DRAMConfig, replay, synth
    from dram import validation as V

    t0 = time.perf_counter()
    replay({"addr": np.arange(64, dtype=np.int64) * 4096, "is_write": np.arange(64) % 2,
            "arrival": np.arange(64, dtype=np.int64)}, DRAMConfig())
    compile_s = time.perf_counter() - t0
    print(f"first call (numba compile or cache load): {compile_s:.2f} s")

    ref = V.load_reference()
    rows = []
    for e in V.load_manifest():
        if a.only not in e["name"]:
            continue
        tr = synth.from_manifest(e)
        for refresh in (True, False):
            cfg = V.reference_config(e["channels"], refresh)
            runs = [replay(tr, cfg, wrap="mapper", threads=a.threads) for _ in range(a.repeat)]
            best = min(r.wall_s for r in runs)
            best_cpu = min(r.cpu_s for r in runs)
            r = V.reference_row(ref, e, refresh)
            rows.append({"name": e["name"], "pattern": e["pattern"], "config": f"{e['channels']}ch",
                         "refresh": "on" if refresh else "off", "n_requests": len(tr.addr),
                         "wall_s": best, "cpu_s": best_cpu,
                         "ramulator_wall_s": float(r["wall_s"])})
    df = pd.DataFrame(rows)
    peak_MB = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    print(f"{'pattern':18s} {'runs':>4s} {'requests':>10s} {'ours req/s':>12s} "
          f"{'(per CPU s)':>12s} {'Ramulator req/s':>16s} {'speedup':>8s}")
    groups = list(df.groupby("pattern", sort=False)) + [("TOTAL", df)]
    figures = {"compile_or_cache_load_s": compile_s, "peak_rss_MB": peak_MB, "only": a.only,
               "repeat": a.repeat, "threads": a.threads, "patterns": {}}
    for pat, d in groups:
        n = d["n_requests"].sum()
        ours = n / d["wall_s"].sum()
        ours_cpu = n / d["cpu_s"].sum()
        theirs = n / d["ramulator_wall_s"].sum()
        print(f"{pat:18s} {len(d):4d} {n:10d} {ours:12,.0f} {ours_cpu:12,.0f} {theirs:16,.0f} "
              f"{ours / theirs:7.1f}x")
        figures["patterns"][pat] = {"runs": int(len(d)), "requests": int(n),
                                    "requests_per_s": ours, "requests_per_cpu_s": ours_cpu,
                                    "ramulator_requests_per_s": theirs, "speedup": ours / theirs}
    print(f"peak resident memory: {peak_MB:.0f} MB")
    if a.json:
        write_json(a.json, figures, overwrite=True)

    folder = new_results_dir(a.out, "bench_dram")
    write_json(folder / "config.json", {"only": a.only, "repeat": a.repeat,
                                        "compile_or_cache_load_s": compile_s,
                                        "peak_rss_MB": peak_MB})
    write_csv(folder / "bench.csv", df)
    print(f"results in {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
