"""Validate the DRAM model against the Ramulator 2.1 reference runs of set A (124 runs).

    python experiments/figures/validate_dram.py [--scale tiny|default|full] [--only SUBSTRING]
        [--check-sha] [--out-root DIR] [--workers N] [--scheduler ADDRESS]

Each selected set A trace is regenerated (:mod:`dram.synth`, bit-exact with the manifest) and
replayed with refresh on and off in the reference configuration
(:func:`dram.validation.reference_config`); the runs are independent, so they fan out over the
sweep's worker processes (``--workers``) or a Dask cluster (``--scheduler``). Runs selected:

* ``tiny``: the 12 unloaded-probe runs plus the ANNS-like pattern on four channels at offered
  loads 0.10, 0.50, 0.85 and 1.20 (8 runs of 100,000 requests): one latency-bandwidth curve
  from light load to past saturation, a few CPU seconds;
* ``default`` and ``full``: all 124 runs;
* ``--only SUBSTRING`` (standalone script only) keeps those of the scale's runs whose name
  contains SUBSTRING (e.g. ``1ch_anns``); ``--check-sha`` also checks each regenerated trace's
  sha256 against the manifest.

The results folder (a new one, as for every experiment) holds

* ``config.json``: the shared experiment record (scale, workers, scheduler, versions, command)
  plus ``only`` and ``check_sha`` (with either, ``rerun`` is this script's command line);
* ``validation.csv``: one row per run, our figures (``*_ours``) beside the reference's
  (``*_ref``), latencies in DRAM clock cycles (``*_cycles``; ``tCK_ps`` converts), relative
  deviations ``(ours - ref) / ref`` (``*_dev_fraction``) and the verdict under the issue's
  tolerances (``passed``) or exact agreement in every compared figure (``exact``);
* ``validation.md``: the same as a markdown table;
* ``latency_vs_bandwidth.png/.pdf``: mean read latency against achieved bandwidth per pattern
  and channel count, ours (lines) and the reference's (markers), refresh on and off;
* ``unloaded_latency.png/.pdf``: read latency of the unloaded hit / miss / conflict probes,
  ours (bars) and the reference's (markers);
* ``summary.md``: runs passed and identical, maximum deviations, the unloaded probe latencies.

Plots and summary are drawn from ``validation.csv`` only. The standalone script exits with 1 if
any run fails its tolerance. ``--dataset``, ``--seed`` and ``--cache-dir`` have no effect here
(set A's traces and seeds are fixed by the manifest).
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass, fields
from pathlib import Path

if __package__ in (None, ""):                      # run as a script: python experiments/...
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np
import pandas as pd

from experiments.harness.common import atomic_write_text, pyplot, save_figure, write_csv
from experiments.harness.runner import Context

NAME = "validate_dram"
TITLE = "DDR5 model vs Ramulator 2.1 (set A, 124 runs)"
#: no system simulation: DRAM replays (experiments.harness.plan)
RUNS_SIMULATIONS = False

#: the loaded runs the tiny scale adds to the unloaded probes: the ANNS-like pattern on four
#: channels from light load to past saturation (one latency-bandwidth curve per refresh setting)
TINY_LOADED = ("4ch_anns_L0.10_s22", "4ch_anns_L0.50_s24", "4ch_anns_L0.85_s26",
               "4ch_anns_L1.20_s28")

#: figure of dram.validation.run_case / the reference CSV -> our column stem (unit in the name)
FIGURES = {
    "mean_read_lat": "mean_read_lat_cycles",
    "p50_read_lat": "p50_read_lat_cycles",
    "p95_read_lat": "p95_read_lat_cycles",
    "p99_read_lat": "p99_read_lat_cycles",
    "max_read_lat": "max_read_lat_cycles",
    "mean_write_lat": "mean_write_lat_cycles",
    "achieved_bw_GBps": "achieved_bw_GBps",
    "row_hits": "row_hits",
    "row_misses": "row_misses",
    "row_conflicts": "row_conflicts",
    "refresh_cmds": "refresh_cmds",
    "total_cycles": "total_cycles",
}
#: relative deviations of dram.validation.check -> our column names
DEVIATIONS = {
    "mean_read_lat_dev": "mean_read_lat_dev_fraction",
    "p99_read_lat_dev": "p99_read_lat_dev_fraction",
    "achieved_bw_dev": "achieved_bw_dev_fraction",
}


def select_runs(scale: str, only: str = "") -> list[dict]:
    """Manifest entries replayed at ``scale`` whose name contains ``only``.

    Raises ``ValueError`` naming ``--only`` when nothing is left.
    """
    from dram import validation as V

    manifest = V.load_manifest()
    if scale == "tiny":
        manifest = [e for e in manifest if e["load"] is None or e["name"] in TINY_LOADED]
    picked = [e for e in manifest if only in e["name"]]
    if not picked:
        raise ValueError(f"--only {only!r}: no set A run of the {scale} scale has that in its "
                         f"name; names look like 4ch_anns_L0.50_s24 or 1ch_unloaded_hit_s60")
    return picked


def replay_case(entry: dict, refresh: bool, check_sha: bool = False) -> dict:
    """Sweep task: replay one manifest entry with refresh on or off; our figures as a dict."""
    from dram import validation as V

    ours = V.run_case(entry, refresh, check_sha=check_sha)
    res = ours.pop("_result")
    ours["tCK_ps"] = float(res.stats["tCK_ps"])
    return ours


#: CPU seconds of every replay of the full set in one process from a cold numba cache, most
#: of it compiling the DRAM kernels (measured on the CPU of docs/performance.md: the 124
#: replays of ``replay_tasks(select_runs("full"))`` one after another in a fresh process with
#: an empty NUMBA_CACHE_DIR, 48 s wall, 51 s CPU; warm, about 10 s)
REPLAYS_CPU_S = 50.0


def replay_tasks(entries: list[dict], check_sha: bool = False) -> list[dict]:
    """One :func:`replay_case` task per entry and refresh setting (on, then off)."""
    return [dict(entry=e, refresh=refresh, check_sha=check_sha)
            for e in entries for refresh in (True, False)]


def pool_batches(ctx) -> list:
    """For ``cosmos reproduce``'s shared pool (experiments.harness.plan.run_shared): every replay as
    one batch on one worker, which compiles the DRAM kernels once while the other workers
    simulate; :func:`run` then takes the rows from there."""
    entries = select_runs(ctx.scale.name, getattr(ctx, "only", ""))
    return [(replay_case, replay_tasks(entries, getattr(ctx, "check_sha", False)),
             REPLAYS_CPU_S)]


def plan_other(ctx) -> str:
    """What the plan of ``cosmos reproduce`` says of this experiment's work
    (experiments.harness.plan): the replays of :func:`pool_batches`."""
    runs = select_runs(ctx.scale.name, getattr(ctx, "only", ""))
    return (f"{2 * len(runs)} DRAM replays (refresh on and off) of the Ramulator 2.1 "
            "reference traces, one batch on one worker of the pool (under a minute)")


def compare(ctx, entries: list[dict], check_sha: bool = False) -> pd.DataFrame:
    """Replay ``entries`` (refresh on and off) through ``ctx.sweep``; one row per run."""
    from dram import validation as V

    tasks = replay_tasks(entries, check_sha)
    results = ctx.sweep(replay_case, tasks, desc="DRAM vs Ramulator")
    ref = V.load_reference()
    rows = []
    for task, ours in zip(tasks, results):
        e, refresh = task["entry"], task["refresh"]
        r = V.reference_row(ref, e, refresh)
        d = V.check(e, ours, r)
        row = {"name": e["name"], "config": f"{e['channels']}ch", "pattern": e["pattern"],
               "offered_load_fraction": e["load"], "seed": e["seed"],
               "refresh": "on" if refresh else "off", "tCK_ps": ours["tCK_ps"]}
        for k, col in FIGURES.items():
            row[f"{col}_ours"] = ours[k]
            row[f"{col}_ref"] = float(r[k])
        for k, col in DEVIATIONS.items():
            row[col] = d[k]
        row["passed"] = d["passed"]
        row["exact"] = d["exact"]
        row["wall_s_ours"] = ours["wall_s"]
        row["wall_s_ramulator"] = float(r["wall_s"])
        rows.append(row)
    return pd.DataFrame(rows)


def _verdict(r) -> str:
    return "exact" if r["exact"] else ("ok" if r["passed"] else "FAIL")


def _head(df: pd.DataFrame) -> list[str]:
    lines = [f"{len(df)} runs; passed {int(df['passed'].sum())}; identical in every compared "
             f"figure: {int(df['exact'].sum())}."]
    for col in DEVIATIONS.values():
        v = df[col].abs().replace([np.inf], np.nan)
        lines.append(f"- max |{col}| = {v.max():.4%}")
    return lines


def markdown(df: pd.DataFrame) -> str:
    """Every run as a markdown table (validation.md)."""
    lines = ["# DRAM model vs Ramulator 2.1 (set A)", "", *_head(df), "",
             "| run | refresh | mean rd lat [cycles] ours / ref | p99 [cycles] ours / ref "
             "| BW [GB/s] ours / ref | hits/misses/conflicts ours | ref | verdict |",
             "|---|---|---|---|---|---|---|---|"]
    for _, r in df.iterrows():
        lines.append(
            f"| {r['name']} | {r['refresh']} | {r['mean_read_lat_cycles_ours']:.1f} / "
            f"{r['mean_read_lat_cycles_ref']:.1f} | {r['p99_read_lat_cycles_ours']:.1f} / "
            f"{r['p99_read_lat_cycles_ref']:.1f} | {r['achieved_bw_GBps_ours']:.2f} / "
            f"{r['achieved_bw_GBps_ref']:.2f} | {int(r['row_hits_ours'])}/"
            f"{int(r['row_misses_ours'])}/{int(r['row_conflicts_ours'])} | "
            f"{int(r['row_hits_ref'])}/{int(r['row_misses_ref'])}/{int(r['row_conflicts_ref'])}"
            f" | {_verdict(r)} |")
    return "\n".join(lines) + "\n"


def run(ctx) -> dict:
    """The experiment protocol of experiments.harness.runner: replay, compare, write CSV and
    markdown.

    ``ctx`` may carry ``only`` and ``check_sha`` (:class:`ValidationContext`, the standalone
    script); the plain runner context selects by scale alone.
    """
    entries = select_runs(ctx.scale.name, getattr(ctx, "only", ""))
    df = compare(ctx, entries, check_sha=getattr(ctx, "check_sha", False))
    write_csv(ctx.out / "validation.csv", df)
    atomic_write_text(ctx.out / "validation.md", markdown(df))
    return {"runs": len(df), "passed": int(df["passed"].sum()), "identical": int(df["exact"].sum()),
            "max_abs_mean_read_lat_dev_fraction":
                float(df["mean_read_lat_dev_fraction"].abs().max())}


def summary_md(folder) -> str:
    df = pd.read_csv(Path(folder) / "validation.csv")
    lines = ["## DDR5 model vs Ramulator 2.1 (set A)", "", *_head(df)]
    probes = df[df["offered_load_fraction"].isna()]
    if not probes.empty:
        lines += ["", "Unloaded probes, mean read latency [cycles], ours / Ramulator 2.1:", "",
                  "| probe | channels | refresh on | refresh off |", "|---|---|---|---|"]
        for (pat, cfg), sub in probes.groupby(["pattern", "config"], sort=False):
            cells = []
            for refresh in ("on", "off"):
                s = sub[sub["refresh"] == refresh]
                cells.append("" if s.empty else f"{s['mean_read_lat_cycles_ours'].iloc[0]:.1f} / "
                             f"{s['mean_read_lat_cycles_ref'].iloc[0]:.1f}")
            lines.append(f"| {pat.replace('unloaded_', '')} | {cfg} | {cells[0]} | {cells[1]} |")
    loaded = df[df["offered_load_fraction"].notna()]
    if not loaded.empty:
        lines += ["", f"Loaded runs: {len(loaded)} ({', '.join(sorted(loaded['pattern'].unique()))}"
                  f"; offered load {loaded['offered_load_fraction'].min():.2f} to "
                  f"{loaded['offered_load_fraction'].max():.2f}); every run: validation.md."]
    return "\n".join(lines) + "\n"


def _plot_loaded(plt, df: pd.DataFrame, folder) -> list:
    pats = sorted(df["pattern"].unique())
    cfgs = [c for c in ("4ch", "1ch") if c in set(df["config"])]
    fig, axes = plt.subplots(len(pats), len(cfgs), figsize=(5 * len(cfgs), 3.2 * len(pats)),
                             squeeze=False)
    for i, p in enumerate(pats):
        for j, cfg in enumerate(cfgs):
            ax = axes[i][j]
            for refresh, color in (("on", "C0"), ("off", "C1")):
                d = df[(df["pattern"] == p) & (df["config"] == cfg) & (df["refresh"] == refresh)]
                d = d.sort_values("offered_load_fraction")
                ax.plot(d["achieved_bw_GBps_ours"], d["mean_read_lat_cycles_ours"], "-",
                        color=color, label=f"ours, refresh {refresh}")
                ax.plot(d["achieved_bw_GBps_ref"], d["mean_read_lat_cycles_ref"], "o",
                        mfc="none", color=color, label=f"Ramulator 2.1, refresh {refresh}")
            ax.set_yscale("log")
            ax.set_title(f"{p}, {cfg}")
            ax.set_xlabel("achieved bandwidth [GB/s]")
            ax.set_ylabel("mean read latency [cycles]")
            ax.grid(alpha=0.3)
            if i == 0 and j == 0:
                ax.legend(fontsize=7)
    fig.tight_layout()
    out = save_figure(fig, folder, "latency_vs_bandwidth")
    plt.close(fig)
    return out


def _plot_unloaded(plt, df: pd.DataFrame, folder) -> list:
    cfgs = [c for c in ("4ch", "1ch") if c in set(df["config"])]
    kinds = [k for k in ("unloaded_hit", "unloaded_miss", "unloaded_conflict")
             if k in set(df["pattern"])]
    fig, axes = plt.subplots(1, len(cfgs), figsize=(4.2 * len(cfgs), 3.2), squeeze=False)
    x = np.arange(len(kinds))
    for ax, cfg in zip(axes[0], cfgs):
        for k, (refresh, color) in enumerate((("on", "C0"), ("off", "C1"))):
            d = df[(df["config"] == cfg) & (df["refresh"] == refresh)].set_index("pattern")
            d = d.reindex(kinds)
            xs = x + (k - 0.5) * 0.38
            ax.bar(xs, d["mean_read_lat_cycles_ours"], 0.38, color=color, alpha=0.7,
                   label=f"ours, refresh {refresh}")
            ax.plot(xs, d["mean_read_lat_cycles_ref"], "o", mfc="none", color="k",
                    label="Ramulator 2.1" if k == 0 else None)
        ax.set_xticks(x, [k.replace("unloaded_", "") for k in kinds])
        ax.set_ylabel("mean read latency [cycles]")
        ax.set_title(f"unloaded probes, {cfg}", fontsize=9)
        ax.legend(frameon=False, fontsize=7)
    fig.tight_layout()
    out = save_figure(fig, folder, "unloaded_latency")
    plt.close(fig)
    return out


def plot(folder) -> list:
    """Latency against bandwidth (loaded runs) and the unloaded probes, ours vs Ramulator 2.1."""
    plt = pyplot()
    df = pd.read_csv(Path(folder) / "validation.csv")
    out = []
    loaded = df[df["offered_load_fraction"].notna()]
    if not loaded.empty:
        out += _plot_loaded(plt, loaded, folder)
    probes = df[df["offered_load_fraction"].isna()]
    if not probes.empty:
        out += _plot_unloaded(plt, probes, folder)
    return out


@dataclass
class ValidationContext(Context):
    """The runner's context plus the standalone script's own options (kept in config.json)."""

    only: str = ""
    check_sha: bool = False

    def config(self) -> dict:
        out = {**super().config(), "only": self.only, "check_sha": self.check_sha}
        if self.only or self.check_sha:  # `cosmos run validate_dram` has neither option
            extra = (["--only", self.only] if self.only else []) + \
                (["--check-sha"] if self.check_sha else [])
            out["rerun"] = shlex.join(["python", str(Path(__file__).resolve()),
                                       *getattr(self, "options", []), *extra])
        return out


def main(argv=None) -> int:
    """``python experiments/figures/validate_dram.py``: the shared options, ``--only``,
    ``--check-sha``."""
    import argparse

    from experiments.harness.common import results_dir
    from experiments.harness.runner import (add_common_arguments, check_args, context_from_args,
                                    run_experiment)

    p = argparse.ArgumentParser(prog=f"{NAME}.py", description=TITLE)
    add_common_arguments(p)
    p.add_argument("--only", default="", metavar="SUBSTRING",
                   help="only the scale's runs whose name contains SUBSTRING (e.g. 1ch_anns)")
    p.add_argument("--check-sha", action="store_true",
                   help="check each regenerated trace against the manifest's sha256")
    args = p.parse_args(argv)
    try:
        check_args(args)
        select_runs(args.scale, args.only)
    except (ValueError, FileNotFoundError) as exc:
        p.error(str(exc))
    out, created = results_dir(args.out, args.out_root, NAME, f"run {NAME}")
    base = context_from_args(args, out)
    ctx = ValidationContext(**{f.name: getattr(base, f.name) for f in fields(base)},
                            only=args.only, check_sha=args.check_sha)
    headline = run_experiment(NAME, ctx, created=created)
    print(f"{NAME}: results in {out}")
    for k, v in headline.items():
        print(f"  {k}: {v}")
    return 0 if headline["passed"] == headline["runs"] else 1


if __name__ == "__main__":
    sys.exit(main())
