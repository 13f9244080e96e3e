"""Speed and headline figures of the cosmos system model.

Speed (the issue's goal: 10,000 queries of the default SIFT-like workload, one system, at most
60 s on one core)::

    python experiments/tools/bench_cosmos.py --system cosmos --num-queries 10000

prints the wall and CPU time of the simulation (the first run also compiles the numba
kernels, and for 10,000 queries the engine specialized to the configuration, about a minute:
cosmos.specialize; they are cached, so run it twice), the DRAM requests simulated per second
and the QPS. ``COSMOS_SPECIALIZE=0`` measures the generic engine.
On a machine shared with other jobs the CPU time is the steadier figure. ``--json PATH`` also
writes the figures to one JSON file (experiments/tools/perf_report.py reads it).

Comparison of the paper's six systems on the default SIFT-like and DEEP-like workloads::

    python experiments/tools/bench_cosmos.py --compare --num-queries 1000 --out results

writes ``results/cosmos-systems-<stamp>/systems.csv`` (one row per workload and system:
qps, latency, breakdown, bandwidths) and prints our Cosmos/Base and Cosmos/CXL-ANNS ratios
next to the paper's (6.72x SIFT1B, 5.35x DEEP1B over Base; 2.35x over CXL-ANNS).
"""

from __future__ import annotations

import argparse
import json
import time

PAPER = {"sift": {"cosmos/base": 6.72, "cosmos/cxl-anns": 2.35},
         "deep": {"cosmos/base": 5.35, "cosmos/cxl-anns": 2.35}}


def _workload(name: str, num_queries: int):
    from graphs import make_workload

    t = time.perf_counter()
    tr = make_workload(name, num_queries=max(num_queries, 1000), progress=False)
    return tr, time.perf_counter() - t


def run_one(system: str, workload: str, num_queries: int) -> dict:
    from cosmos.presets import get_preset
    from cosmos.simulate import simulate

    tr, t_wl = _workload(workload, num_queries)
    cfg = get_preset(system)
    t0 = time.perf_counter()
    c0 = time.process_time()
    res = simulate(cfg, tr, num_queries=num_queries, progress=True)
    total = time.perf_counter() - t0
    cpu = time.process_time() - c0
    s = res.summary()
    return {"system": system, "workload": workload, "num_queries": num_queries,
            "workload_s": t_wl, "simulate_total_s": total, "simulate_cpu_s": cpu,
            "engine_s": res.wall_s, "requests": s["dram_requests"],
            "requests_per_s": s["dram_requests"] / total,
            "requests_per_cpu_s": s["dram_requests"] / cpu,
            "qps": s["qps"], "latency_mean_ns": s["latency_mean_ns"]}


def compare(num_queries: int, out: str | None) -> None:
    import pandas as pd

    from cosmos.presets import PRESETS
    from cosmos.simulate import simulate

    rows = []
    for wl in ("sift", "deep"):
        tr, _ = _workload(wl, num_queries)
        for name, cfg in PRESETS.items():
            t0 = time.perf_counter()
            res = simulate(cfg, tr, num_queries=num_queries, progress=True)
            s = res.summary()
            row = {"workload": wl, "system": name, "qps": s["qps"],
                   "latency_mean_ns": s["latency_mean_ns"], "latency_p50_ns": s["latency_p50_ns"],
                   "latency_p99_ns": s["latency_p99_ns"],
                   **{f"{k}_ns": v for k, v in s["breakdown_ns"].items()},
                   "dram_bandwidth_GBps": s["dram_bandwidth_GBps_total"],
                   "dram_bytes_per_query": s["dram_bytes_per_query"],
                   "upstream_util_up_fraction": s.get("upstream_util_up_fraction", float("nan")),
                   "lir_requests": s["device_lir_requests"],
                   "wall_s": time.perf_counter() - t0}
            rows.append(row)
            print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v)
                              for k, v in row.items()}), flush=True)
    df = pd.DataFrame(rows)
    print()
    for wl in ("sift", "deep"):
        q = df[df.workload == wl].set_index("system")["qps"]
        print(f"{wl}: QPS " + ", ".join(f"{k} {v:,.0f}" for k, v in q.items()))
        print(f"  cosmos/base = {q['cosmos'] / q['base']:.2f}x (paper {PAPER[wl]['cosmos/base']}x), "
              f"cosmos/cxl-anns = {q['cosmos'] / q['cxl-anns']:.2f}x (paper "
              f"{PAPER[wl]['cosmos/cxl-anns']}x), highest: {q.idxmax()}, lowest: {q.idxmin()}")
    if out:
        from experiments.harness.common import new_results_dir, write_csv, write_json

        d = new_results_dir(out, "cosmos-systems")
        write_csv(d / "systems.csv", df)
        write_json(d / "config.json", {"num_queries": num_queries, "workloads": ["sift", "deep"],
                                       "paper": PAPER})
        print(f"results in {d}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--system", default="cosmos")
    p.add_argument("--workload", default="sift")
    p.add_argument("--num-queries", type=int, default=10_000)
    p.add_argument("--compare", action="store_true", help="all six systems on sift and deep")
    p.add_argument("--out", default=None, help="results root for --compare")
    p.add_argument("--json", default=None, help="also write the figures of a single run to this JSON file")
    a = p.parse_args(argv)
    if a.compare:
        compare(a.num_queries, a.out)
        return 0
    r = run_one(a.system, a.workload, a.num_queries)
    import resource

    r["peak_rss_MB"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(r, indent=2))
    if a.json:
        from experiments.harness.common import write_json

        write_json(a.json, r, overwrite=True)
    per_10k = r["simulate_total_s"] * 10_000 / r["num_queries"]
    goal = "met" if per_10k <= 60 else "NOT met"
    print(f"{r['num_queries']} queries of {a.workload} on {a.system}: {r['simulate_total_s']:.1f} s "
          f"wall, {r['simulate_cpu_s']:.1f} s CPU ({r['requests_per_s']:,.0f} DRAM requests/s); "
          f"10,000 queries "
          f"{'measured' if r['num_queries'] == 10_000 else 'extrapolated'}: {per_10k:.0f} s; "
          f"goal <= 60 s: {goal}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
