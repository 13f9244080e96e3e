"""Beyond the paper: QPS against the number of CXL devices (1 to 16).

The same logical trace is spread over 1, 2, 4, 8 and 16 devices behind one switch (each
device as in the paper: 8 DDR5-4800 subchannels x 2 ranks). Host-side systems gain link and
DRAM bandwidth with more devices but keep the same host cores; Cosmos gains GPCs and rank PUs
with every device, and its placement decides how evenly they are used.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pandas as pd

from experiments.figures.fig4a_qps import sweep_task
from experiments.harness.common import error_bars, pyplot, save_figure, write_csv
from experiments.harness.sim import simulate_task

NAME = "scale_devices"
TITLE = "QPS against the number of CXL devices"
SYSTEMS = ("base", "cxl-anns", "cosmos-noalgo", "cosmos")
DEVICES = (1, 2, 4, 8, 16)


#: Fraction of first and last completions a summary leaves out (simulate_task's default).
WARMUP = 0.1


def queries_for(system: str, devices: int, sweep_queries: int) -> int:
    """Queries to simulate at one point: the scale's sweep count, or more where the system has
    more contexts than that fills. Cosmos has 16 search contexts per device, so 16 devices keep
    256 queries in flight; the steady-state window (the middle 1 - 2 x WARMUP of the
    completions, one fewer than 1 - 2 x WARMUP of them, less ties at its start) must hold at
    least that many for a steady state (cosmos.metrics.summary), so such a point simulates
    ceil((in flight + 2) / (1 - 2 x WARMUP)) + 2 queries (325), as far as the trace has them."""
    from cosmos.config import with_overrides
    from cosmos.presets import get_preset
    from cosmos.simulate import default_max_inflight

    inflight = default_max_inflight(with_overrides(get_preset(system), {"device.count": devices}))
    return max(int(sweep_queries), math.ceil((inflight + 2) / (1 - 2 * WARMUP)) + 2)


def _devices(ctx) -> list:
    return [d for d in DEVICES if d <= ctx.scale.num_clusters]


def simulation_tasks(ctx) -> list:
    """Every simulation of this experiment (experiments.harness.plan); the point at the preset's own
    device count is fig4a's run (experiments.figures.fig4a_qps.sweep_task)."""
    fam = ctx.families[0]
    return [sweep_task(ctx, fam, s, {"device.count": d},
                       {"dataset": fam, "system": s, "devices": d},
                       num_queries=queries_for(s, d, ctx.scale.sweep_queries), warmup=WARMUP,
                       ci_target=ctx.scale.ci_target)
            for s in SYSTEMS for d in _devices(ctx)]


def run(ctx) -> dict:
    devices = _devices(ctx)
    df = pd.DataFrame(ctx.sweep(simulate_task, simulation_tasks(ctx), desc="devices sweep"))
    cols = ["dataset", "system", "devices", "num_queries", "stopped", "steady_state", "qps",
            "qps_ci_low", "qps_ci_high", "latency_mean_ci_low_ns", "latency_mean_ci_high_ns",
            "latency_mean_ns", "latency_p99_ns", "device_lir_requests",
            "dram_bandwidth_GBps_total"]
    write_csv(ctx.out / "devices.csv", df[cols])
    out = {}
    for s in SYSTEMS:
        sub = df[df.system == s].set_index("devices")["qps"]
        out[f"{s}_qps_x{devices[-1]}_vs_x1"] = round(float(sub.iloc[-1] / sub.iloc[0]), 2)
    return out


def plot(folder) -> None:
    plt = pyplot()

    df = pd.read_csv(Path(folder) / "devices.csv")
    fig, ax = plt.subplots(figsize=(4.4, 3.2))
    for s, sub in df.groupby("system", sort=False):
        line, = ax.plot(sub.devices, sub.qps, marker="o", label=s)
        ax.errorbar(sub.devices, sub.qps, yerr=error_bars(sub, "qps"), fmt="none",
                    ecolor=line.get_color(), capsize=2, lw=0.8)
        if "steady_state" in sub:                  # open marker: no steady state (see summary)
            bad = sub[~sub.steady_state.astype(bool)]
            ax.plot(bad.devices, bad.qps, ls="none", marker="o", mfc="white",
                    mec=line.get_color())
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(sorted(df.devices.unique()), [str(d) for d in sorted(df.devices.unique())])
    ax.set_xlabel("CXL devices")
    ax.set_ylabel("QPS")
    ax.set_title(f"QPS vs devices ({df.dataset.iloc[0]})", fontsize=9)
    ax.legend(frameon=False, fontsize=8)
    save_figure(fig, folder, "scale_devices")
    plt.close(fig)


def summary_md(folder) -> str:
    df = pd.read_csv(Path(folder) / "devices.csv")
    piv = df.pivot(index="devices", columns="system", values="qps")
    lines = ["## QPS against the number of CXL devices", "",
             "| devices | " + " | ".join(piv.columns) + " |", "|---|" + "---|" * len(piv.columns)]
    for d, r in piv.iterrows():
        lines.append(f"| {d} | " + " | ".join(f"{v:,.0f}" for v in r) + " |")
    if "steady_state" in df and not df.steady_state.astype(bool).all():
        bad = df[~df.steady_state.astype(bool)]
        lines += ["", "No steady state (fewer queries in the trace than the contexts need; "
                  "QPS over the whole run instead): " + ", ".join(
                      f"{r.system} at {r.devices} devices ({r.num_queries} queries)"
                      for r in bad.itertuples()) + "."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    from experiments.harness.runner import script_main

    raise SystemExit(script_main(NAME))
