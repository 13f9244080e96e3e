"""Validate the DRAM model against all 124 Ramulator 2.1 reference runs of set A.

    python experiments/validate_dram.py [--out results] [--only SUBSTRING] [--check-sha]

Regenerates each set A trace (dram.synth, bit-exact with the manifest), replays it with refresh
on and off, and writes a NEW folder ``<out>/validate_dram-<stamp>/`` with:

* ``config.json``: what was run;
* ``validation.csv``: one row per run, our figures (``*_ours``) beside the reference's
  (``*_ref``), relative deviations and the verdict under the issue's tolerances;
* ``validation.md``: the same as a markdown table, with the maximum deviations;
* ``latency_vs_bandwidth.png/.pdf``: mean read latency against achieved bandwidth per pattern,
  ours (lines) and the reference's (markers), drawn from ``validation.csv`` only.

Exit code 1 if any run fails its tolerance. As part of ``cosmos reproduce`` (``run(ctx)``),
the tiny scale checks only the unloaded probes; the other scales check all 124 runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

if __package__ in (None, ""):                      # run as a script: python experiments/...
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from experiments.common import atomic_write_text, new_results_dir, save_figure, write_csv, write_json

NAME = "validate_dram"
TITLE = "DDR5 model vs Ramulator 2.1 (set A, 124 runs)"
#: runs checked by ``cosmos reproduce`` at each scale (substring of the run names; "" = all)
SUBSET = {"tiny": "unloaded", "default": "", "full": ""}

FIGURES = ("mean_read_lat", "p50_read_lat", "p95_read_lat", "p99_read_lat", "max_read_lat",
           "mean_write_lat", "achieved_bw_GBps", "row_hits", "row_misses", "row_conflicts",
           "refresh_cmds", "total_cycles")


def compare(only: str = "", check_sha: bool = False, progress: bool = True) -> pd.DataFrame:
    from dram import validation as V

    manifest = [e for e in V.load_manifest() if only in e["name"]]
    ref = V.load_reference()
    rows = []
    for e in manifest:
        from dram import synth
        tr = synth.from_manifest(e)
        if check_sha and V.trace_sha256(tr) != e["sha256_uncompressed"]:
            raise SystemExit(f"{e['name']}: regenerated trace differs from the manifest")
        for refresh in (True, False):
            t0 = time.perf_counter()
            ours = V.run_case(e, refresh, trace=tr)
            r = V.reference_row(ref, e, refresh)
            d = V.check(e, ours, r)
            row = {"name": e["name"], "config": f"{e['channels']}ch", "pattern": e["pattern"],
                   "offered_load_fraction": e["load"], "seed": e["seed"],
                   "refresh": "on" if refresh else "off"}
            for k in FIGURES:
                row[f"{k}_ours"] = ours[k]
                row[f"{k}_ref"] = float(r[k])
            row.update(d)
            row["wall_s_ours"] = ours["wall_s"]
            row["wall_s_ramulator"] = float(r["wall_s"])
            rows.append(row)
            if progress:
                print(f"{e['name']:32s} refresh {'on ' if refresh else 'off'} "
                      f"mean {ours['mean_read_lat']:9.1f} vs {float(r['mean_read_lat']):9.1f}  "
                      f"bw {ours['achieved_bw_GBps']:6.2f} vs {float(r['achieved_bw_GBps']):6.2f}"
                      f"  {'exact' if d['exact'] else ('ok' if d['passed'] else 'FAIL')}"
                      f"  ({time.perf_counter() - t0:.1f} s)", flush=True)
    return pd.DataFrame(rows)


def markdown(df: pd.DataFrame) -> str:
    lines = ["# DRAM model vs Ramulator 2.1 (set A)", ""]
    n = len(df)
    lines.append(f"{n} runs; passed {int(df['passed'].sum())}; identical in every compared "
                 f"figure: {int(df['exact'].sum())}.")
    for k in ("mean_read_lat_dev", "p99_read_lat_dev", "achieved_bw_dev"):
        v = df[k].abs().replace([np.inf], np.nan)
        lines.append(f"- max |{k}| = {v.max():.4%}")
    lines += ["", "| run | refresh | mean rd lat ours / ref | p99 ours / ref | BW GB/s ours / ref "
              "| hits/misses/conflicts ours | ref | verdict |", "|---|---|---|---|---|---|---|---|"]
    for _, r in df.iterrows():
        lines.append(
            f"| {r['name']} | {r['refresh']} | {r['mean_read_lat_ours']:.1f} / "
            f"{r['mean_read_lat_ref']:.1f} | {r['p99_read_lat_ours']:.1f} / {r['p99_read_lat_ref']:.1f}"
            f" | {r['achieved_bw_GBps_ours']:.2f} / {r['achieved_bw_GBps_ref']:.2f} | "
            f"{int(r['row_hits_ours'])}/{int(r['row_misses_ours'])}/{int(r['row_conflicts_ours'])} | "
            f"{int(r['row_hits_ref'])}/{int(r['row_misses_ref'])}/{int(r['row_conflicts_ref'])} | "
            f"{'exact' if r['exact'] else ('ok' if r['passed'] else 'FAIL')} |")
    return "\n".join(lines) + "\n"


def run(ctx) -> dict:
    """The experiment protocol of experiments.runner: compare, write CSV and markdown."""
    df = compare(SUBSET.get(ctx.scale.name, ""), progress=False)
    write_csv(ctx.out / "validation.csv", df)
    atomic_write_text(ctx.out / "validation.md", markdown(df))
    return {"runs": len(df), "passed": int(df["passed"].sum()), "identical": int(df["exact"].sum()),
            "max_abs_mean_read_lat_dev": float(df["mean_read_lat_dev"].abs().max())}


def summary_md(folder) -> str:
    df = pd.read_csv(Path(folder) / "validation.csv")
    head = markdown(df).split("\n\n| run")[0]
    return head.replace("# DRAM model vs Ramulator 2.1 (set A)",
                        "## DDR5 model vs Ramulator 2.1 (set A)") + "\n"


def plot(folder: Path):
    """Mean read latency against achieved bandwidth, ours vs Ramulator (loaded runs only)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    df = pd.read_csv(Path(folder) / "validation.csv")
    df = df[df["offered_load_fraction"].notna()]
    if df.empty:
        return []
    pats = sorted(df["pattern"].unique())
    fig, axes = plt.subplots(len(pats), 2, figsize=(10, 3.2 * len(pats)), squeeze=False)
    for i, p in enumerate(pats):
        for j, cfg in enumerate(("4ch", "1ch")):
            ax = axes[i][j]
            for refresh, color in (("on", "C0"), ("off", "C1")):
                d = df[(df["pattern"] == p) & (df["config"] == cfg) & (df["refresh"] == refresh)]
                d = d.sort_values("offered_load_fraction")
                ax.plot(d["achieved_bw_GBps_ours"], d["mean_read_lat_ours"], "-", color=color,
                        label=f"ours, refresh {refresh}")
                ax.plot(d["achieved_bw_GBps_ref"], d["mean_read_lat_ref"], "o", mfc="none",
                        color=color, label=f"Ramulator 2.1, refresh {refresh}")
            ax.set_yscale("log")
            ax.set_title(f"{p}, {cfg}")
            ax.set_xlabel("achieved bandwidth [GB/s]")
            ax.set_ylabel("mean read latency [cycles]")
            ax.grid(alpha=0.3)
            if i == 0 and j == 0:
                ax.legend(fontsize=7)
    fig.tight_layout()
    return save_figure(fig, folder, "latency_vs_bandwidth")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="results", help="root folder for the results folder")
    ap.add_argument("--only", default="", help="only runs whose name contains this")
    ap.add_argument("--check-sha", action="store_true",
                    help="verify each regenerated trace against the manifest sha256")
    a = ap.parse_args(argv)
    folder = new_results_dir(a.out, "validate_dram")
    write_json(folder / "config.json", {"only": a.only, "check_sha": a.check_sha,
                                        "reference": "tests/data/dram/results_setA.csv",
                                        "config": "dram.validation.reference_config"})
    df = compare(a.only, a.check_sha)
    write_csv(folder / "validation.csv", df)
    atomic_write_text(folder / "validation.md", markdown(df))
    plot(folder)
    print(markdown(df).split("\n\n")[1] if "\n\n" in markdown(df) else "")
    print(f"results in {folder}")
    return 0 if bool(df["passed"].all()) else 1


if __name__ == "__main__":
    sys.exit(main())
