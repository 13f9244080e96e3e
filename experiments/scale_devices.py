"""Beyond the paper: QPS against the number of CXL devices (1 to 16).

The same logical trace is spread over 1, 2, 4, 8 and 16 devices behind one switch (each
device as in the paper: 8 DDR5-4800 subchannels x 2 ranks). Host-side systems gain link and
DRAM bandwidth with more devices but keep the same host cores; Cosmos gains GPCs and rank PUs
with every device, and its placement decides how evenly they are used.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pandas as pd

from experiments.common import pyplot, save_figure, write_csv
from experiments.sim import simulate_task

NAME = "scale_devices"
TITLE = "QPS against the number of CXL devices"
SYSTEMS = ("base", "cxl-anns", "cosmos-noalgo", "cosmos")
DEVICES = (1, 2, 4, 8, 16)


def run(ctx) -> dict:
    fam = ctx.families[0]
    path = ctx.trace_file(fam)
    devices = [d for d in DEVICES if d <= ctx.scale.num_clusters]
    tasks = [dict(system=s, trace_path=str(path), overrides={"device.count": d},
                  num_queries=ctx.scale.sweep_queries, seed=ctx.seed,
                  tags={"dataset": fam, "system": s, "devices": d})
             for s in SYSTEMS for d in devices]
    df = pd.DataFrame(ctx.sweep(simulate_task, tasks, desc="devices sweep"))
    cols = ["dataset", "system", "devices", "qps", "latency_mean_ns", "latency_p99_ns",
            "device_lir_requests", "dram_bandwidth_GBps_total"]
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
        ax.plot(sub.devices, sub.qps, marker="o", label=s)
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
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    from experiments.runner import script_main

    raise SystemExit(script_main(NAME))
