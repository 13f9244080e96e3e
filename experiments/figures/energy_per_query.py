"""Energy per query of every system, with its breakdown, and QPS per watt.

Every system replays the same logical trace of each dataset (SIFT-like and DEEP-like, or the
user's own) in the closed loop, exactly the simulations of Fig. 4a (so ``cosmos reproduce``
reads them from the result cache). Each run's energy comes from cosmos.energy: the DRAM
model's energy of every controller (array commands, background, channel I/O), CXL link and
switch per wire bit, host and GPC cores per busy cycle, rank PUs and accelerators per burst,
and the static power of the host and devices over the time. ``energy.csv`` has one
row per dataset x system: energy per query (mJ) by component, average power (W), QPS and QPS
per watt, and QPS/W over Base. The plot: stacked bars of energy per query, QPS/W beside.

Energy per query is taken over the same steady-state window as QPS (issue 51; cosmos.energy:
the warm-up and drain left out, time-proportional energy over the window's duration, the
queries' activity over the queries completed in it; ``energy_over`` says "whole run" where a
run has no steady state). The whole run's figures stay beside them: ``energy_per_query_run_mJ``,
``power_avg_run_W``, ``qps_per_W_run`` and ``energy_breakdown_run_mJ_per_query_<component>``.

Equal capacity: DRAM-only holds the data in host DRAM with a quarter of the CXL systems'
ranks (16 against 64). The row ``dram-only-equal-capacity`` is the same DRAM-only run with
its DRAM background (standby and refresh) at the CXL systems' rank count
(cosmos.energy.equal_capacity: the per-rank floor x 4, the accesses' part unchanged; its
timing is DRAM-only's, the extra ranks are not simulated), so the energy comparison can also
be made at equal capacity.

Most of every system's energy is estimated constants times time (host, static, GPC power).
``energy_tornado.csv`` moves each constant (cosmos.energy.CONSTANT_RANGES) to the low and the
high end of its plausible range, one at a time, and gives Cosmos / Base QPS per watt at each;
energy is linear in the constants, so each run's slopes give these exactly, without
simulating again. ``summary.md`` then says which conclusions hold at every one of the 2^9
combinations of the ranges' ends (where a ratio of linear functions takes its extremes):
Cosmos's QPS per watt above Base's, and Cosmos the most efficient of the paper's six systems.

Chameleon (Jiang et al., PVLDB 18(1), 2024) reports its near-memory vector search "up to
26.2x" more energy-efficient than its CPU baseline: its best case, a synthetic
1,024-dimensional set at batch size 1. On SIFT and Deep its energy table gives about 17.7x at
batch 1 and 6.7-6.9x at batch 16, with the FPGAs' power from the vendor's power estimator,
not measured (:data:`CHAMELEON_ENERGY_VS_CPU`). That is not like for like with any pair here
(IVF-PQ scans on FPGA accelerators against graph search on modeled CXL devices): the table
puts the SIFT and Deep rows beside our nearest analogue, Cosmos over Base (near-memory search
over the host CPU on the same memory, one query per context: batch 1), and says so.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pandas as pd

from cosmos.config import EnergyConfig
from cosmos.energy import COMPONENTS, CONSTANT_RANGES, extremes
from experiments.figures.fig4a_qps import EXTENDED, system_tasks
from experiments.figures.fig4a_qps import SYSTEMS as PAPER_SYSTEMS  # the paper's six
from experiments.harness.common import pyplot, save_figure, write_csv
from experiments.harness.sim import simulate_task, split_per_device

NAME = "energy_per_query"
TITLE = "Energy per query and QPS per watt of every system"
#: fig4a's systems: the paper's six, then those showing where else compute can sit
SYSTEMS = PAPER_SYSTEMS + EXTENDED
#: Chameleon's energy efficiency of near-memory vector search over its CPU baseline (Jiang et
#: al., "Chameleon: a Heterogeneous and Disaggregated Accelerator System for Retrieval-Augmented
#: Language Models", PVLDB 18(1), 2024), by dataset and batch size: its SIFT and Deep rows (as
#: read from the paper's energy table for this project's energy issue; FPGA power from the
#: vendor's estimator, not measured). The abstract's "up to 26.2x" is a synthetic
#: 1,024-dimensional set at batch 1 (:data:`CHAMELEON_BEST_CASE`).
CHAMELEON_ENERGY_VS_CPU = {("SIFT", 1): 17.7, ("Deep", 1): 17.7,
                           ("SIFT", 16): 6.7, ("Deep", 16): 6.9}
CHAMELEON_BEST_CASE = 26.2
#: our dataset -> Chameleon's row of the same family; Cosmos over Base is set beside batch 1
#: (one query per search context)
CHAMELEON_ROW = {"sift": "SIFT", "deep": "Deep"}


def simulation_tasks(ctx) -> list:
    """fig4a_qps's own tasks: one simulation serves both (at --full too, where they stop at
    the scale's confidence-interval target)."""
    return system_tasks(ctx, SYSTEMS)


#: the DRAM-only run with its background at the CXL systems' capacity (cosmos.energy)
EQUAL_CAPACITY = "dram-only-equal-capacity"


def with_equal_capacity(df):
    """``df`` with, after each host-DRAM row (a summary with ``equal_capacity_*``), its
    :data:`EQUAL_CAPACITY` row: DRAM background x ``equal_capacity_dram_background_factor``,
    window and whole run, totals, power and QPS per watt to match (same run: same time and
    queries, so power scales as the energy, QPS per watt inversely)."""
    col = "equal_capacity_dram_background_factor"
    if col not in df:
        return df
    out = []
    for _, r in df.iterrows():
        out.append(r)
        if pd.isna(r[col]):
            continue
        e = r.copy()
        e["system"] = EQUAL_CAPACITY
        for tag in ("", "_run"):
            bg = f"energy_breakdown{tag}_mJ_per_query_dram_background"
            old = r[f"energy_per_query{tag}_mJ"]
            e[bg] = r[bg] * r[col]
            new = old + e[bg] - r[bg]
            e[f"energy_per_query{tag}_mJ"] = new
            e[f"power_avg{tag}_W"] = r[f"power_avg{tag}_W"] * new / old
            e[f"qps_per_W{tag}"] = r[f"qps_per_W{tag}"] * old / new
        out.append(e)
    return pd.DataFrame(out).reset_index(drop=True)


def run(ctx) -> dict:
    rows = ctx.sweep(simulate_task, simulation_tasks(ctx), desc="energy per query")
    df, _ = split_per_device(rows, ["dataset", "system"])
    df = with_equal_capacity(df)
    base = df[df.system == "base"].set_index("dataset")["qps_per_W"]
    df["qps_per_W_vs_base"] = df["qps_per_W"] / df["dataset"].map(base)
    df["chameleon_efficiency_vs_cpu"] = [
        CHAMELEON_ENERGY_VS_CPU.get((CHAMELEON_ROW.get(d), 1), float("nan"))
        if s == "cosmos" else float("nan") for d, s in zip(df.dataset, df.system)]
    cols = (["dataset", "system", "qps", "energy_per_query_mJ", "power_avg_W", "qps_per_W",
             "qps_per_W_vs_base", "chameleon_efficiency_vs_cpu"]
            + [f"energy_breakdown_mJ_per_query_{c}" for c in COMPONENTS] + ["num_queries"]
            # over which stretch (issue 51), the whole run's figures, the equal-capacity factor
            + ["energy_over", "window_queries", "energy_window_ns", "energy_per_query_run_mJ",
               "power_avg_run_W", "qps_per_W_run"]
            + [f"energy_breakdown_run_mJ_per_query_{c}" for c in COMPONENTS]
            + ["equal_capacity_ranks", "equal_capacity_ranks_simulated",
               "equal_capacity_dram_background_factor"])
    for c in cols:                  # no host-DRAM system among them: no equal-capacity row
        if c not in df:
            df[c] = float("nan")
    write_csv(ctx.out / "energy.csv", df[cols])
    tornado, holds = constant_tornado(df)
    write_csv(ctx.out / "energy_tornado.csv", tornado)
    write_csv(ctx.out / "energy_conclusions.csv", holds)
    out = {}
    for fam in ctx.families:
        sub = df[df.dataset == fam].set_index("system")
        out[f"{fam}_energy_per_query_mJ"] = {s: float(f"{sub.loc[s, 'energy_per_query_mJ']:.4g}")
                                            for s in SYSTEMS + (EQUAL_CAPACITY,)
                                            if s in sub.index}
        out[f"{fam}_energy_per_query_run_mJ"] = {
            s: float(f"{sub.loc[s, 'energy_per_query_run_mJ']:.4g}") for s in SYSTEMS
            if s in sub.index}
        out[f"{fam}_cosmos_qps_per_W_vs_base"] = round(float(sub.loc["cosmos",
                                                                     "qps_per_W_vs_base"]), 2)
    return out




def _energy_at(df, constants: dict):
    """Energy per query (mJ) of every row of ``df`` with the energy constants ``constants``
    (the others at the run's values): the run's plus the changes times its slopes."""
    default = EnergyConfig()
    e = df["energy_per_query_mJ"].to_numpy(dtype=float).copy()
    for name, value in constants.items():
        e += (value - getattr(default, name)) * df[f"energy_slope_mJ_per_query_{name}"].to_numpy(
            dtype=float)
    return e


def constant_tornado(df):
    """(tornado, conclusions): Cosmos / Base QPS per watt with each energy constant at the
    low and the high end of its range (the others at their defaults), per dataset; and, per
    dataset, whether each conclusion holds at every vertex of the ranges' box, with the
    ratio's least and most favorable values there."""
    rows, holds = [], []
    for fam in dict.fromkeys(df.dataset):
        sub = df[df.dataset == fam].reset_index(drop=True)
        idx = {s: i for i, s in enumerate(sub.system)}

        def ratio(e):
            return e[idx["base"]] / e[idx["cosmos"]]      # QPS/W = 1 / energy per query

        at_default = ratio(_energy_at(sub, {}))
        for name, (lo, hi) in CONSTANT_RANGES.items():
            rows.append({"dataset": fam, "constant": name, "default": getattr(EnergyConfig(), name),
                         "low": lo, "high": hi, "cosmos_vs_base_qps_per_W_default": at_default,
                         "cosmos_vs_base_qps_per_W_at_low": ratio(_energy_at(sub, {name: lo})),
                         "cosmos_vs_base_qps_per_W_at_high": ratio(_energy_at(sub, {name: hi}))})
        six = [idx[s] for s in PAPER_SYSTEMS if s in idx]
        ratios, best = [], []
        for v in extremes():
            e = _energy_at(sub, v)
            ratios.append(ratio(e))
            best.append(min(six, key=lambda i: e[i]) == idx["cosmos"])
        holds.append({"dataset": fam, "vertices": len(ratios),
                      "cosmos_more_efficient_than_base": bool(min(ratios) > 1),
                      "cosmos_most_efficient_of_six": bool(all(best)),
                      "cosmos_vs_base_qps_per_W_min": min(ratios),
                      "cosmos_vs_base_qps_per_W_max": max(ratios)})
    return pd.DataFrame(rows), pd.DataFrame(holds)


def plot(folder) -> None:
    plt = pyplot()
    import numpy as np

    df = pd.read_csv(Path(folder) / "energy.csv")
    fams = list(dict.fromkeys(df.dataset))
    fig, axes = plt.subplots(2, len(fams), figsize=(4.8 * len(fams), 6.4), squeeze=False)
    for j, fam in enumerate(fams):
        sub = df[df.dataset == fam]
        x = np.arange(len(sub))
        ax = axes[0][j]
        bottom = np.zeros(len(sub))
        for c in COMPONENTS:
            v = sub[f"energy_breakdown_mJ_per_query_{c}"].to_numpy()
            if np.nansum(v) > 0:
                ax.bar(x, v, bottom=bottom, label=c.replace("_", " "))
                bottom += v
        ax.set_xticks(x, sub.system, rotation=30, fontsize=7)
        ax.set_ylabel("energy per query (mJ)")
        ax.set_title(f"{fam}: energy per query by component", fontsize=9)
        ax.legend(frameon=False, fontsize=6)
        ax2 = axes[1][j]
        ax2.bar(x, sub.qps_per_W.to_numpy(), color="tab:green")
        ax2.set_xticks(x, sub.system, rotation=30, fontsize=7)
        ax2.set_ylabel("QPS per watt")
        ax2.set_title(f"{fam}: queries per joule", fontsize=9)
    fig.tight_layout()
    save_figure(fig, folder, "energy_per_query")
    plt.close(fig)


def summary_md(folder) -> str:
    df = pd.read_csv(Path(folder) / "energy.csv")
    run_col = "energy_per_query_run_mJ" in df
    head = ("| dataset | system | mJ/query | W | QPS/W | QPS/W vs Base | Chameleon (vs CPU) | "
            + ("mJ/query, whole run | " if run_col else "") + " | ".join(COMPONENTS) + " |")
    lines = ["## Energy per query (mJ) by component, average power and QPS per watt", "",
             "Over the steady-state window QPS is taken over (warm-up and drain left out; "
             "cosmos.energy), where a run has one; the whole run's energy per query (warm-up "
             "and drain included) beside it. `dram-only-equal-capacity`: the DRAM-only run "
             "with its DRAM background at the CXL systems' rank count (64, DRAM-only has 16), "
             "its timing DRAM-only's.", "", head,
             "|" + "---|" * (7 + run_col + len(COMPONENTS))]
    for _, r in df.iterrows():
        parts = " | ".join(f"{r[f'energy_breakdown_mJ_per_query_{c}']:.3g}" for c in COMPONENTS)
        cham = (f"{r.chameleon_efficiency_vs_cpu:.1f}x"
                if pd.notna(r.chameleon_efficiency_vs_cpu) else "")
        whole = ""
        if run_col:
            whole = f"{r.energy_per_query_run_mJ:.4g}" + (
                " (no steady state: the same)" if r.get("energy_over") == "whole run" else "")
            whole += " | "
        lines.append(f"| {r.dataset} | {r.system} | {r.energy_per_query_mJ:.4g} | "
                     f"{r.power_avg_W:.1f} | {r.qps_per_W:.4g} | {r.qps_per_W_vs_base:.2f}x | "
                     f"{cham} | {whole}{parts} |")
    rows = ", ".join(f"{d} {r:.1f}x at batch {b}"
                     for (d, b), r in sorted(CHAMELEON_ENERGY_VS_CPU.items(), key=lambda x: x[0][1]))
    lines += ["", f"Chameleon (near-memory vector search over its CPU baseline): {rows}; its "
              f"\"up to {CHAMELEON_BEST_CASE}x\" is a synthetic 1,024-dimensional set at batch 1, "
              "and its FPGA power comes from the vendor's estimator, not a measurement. The "
              "column above is its batch-1 row of the same family. Not like for like: it is "
              "IVF-PQ on FPGA accelerators, "
              "ours graph search on modeled CXL devices: DRAM from datasheet maximum "
              "currents (dram.standards.ddr5_power), every other resource from estimated "
              "constants (cosmos.config.EnergyConfig). It sits beside Cosmos over Base, "
              "the nearest analogue (near-memory search against the host CPU on the same "
              "memory). No pair here matches Chameleon's GPU baseline."]
    tornado = Path(folder) / "energy_tornado.csv"
    if tornado.exists():
        t = pd.read_csv(tornado)
        h = pd.read_csv(Path(folder) / "energy_conclusions.csv")
        lines += ["", "## Which energy conclusions hold whatever the estimated constants",
                  "", "Cosmos / Base QPS per watt with one constant at each end of its range "
                  "(cosmos.energy.CONSTANT_RANGES), the others at their defaults:", "",
                  "| dataset | constant | range | at low | default | at high |",
                  "|---|---|---|---|---|---|"]
        for _, r in t.iterrows():
            lines.append(f"| {r.dataset} | {r.constant} | {r.low:g}-{r.high:g} | "
                         f"{r.cosmos_vs_base_qps_per_W_at_low:.2f}x | "
                         f"{r.cosmos_vs_base_qps_per_W_default:.2f}x | "
                         f"{r.cosmos_vs_base_qps_per_W_at_high:.2f}x |")
        lines.append("")
        for _, r in h.iterrows():
            lines.append(
                f"- {r.dataset}: at all {r.vertices} combinations of the ranges' ends, Cosmos / "
                f"Base QPS per watt is {r.cosmos_vs_base_qps_per_W_min:.2f}x to "
                f"{r.cosmos_vs_base_qps_per_W_max:.2f}x; Cosmos more efficient than Base: "
                f"{'holds' if r.cosmos_more_efficient_than_base else 'does not hold'}; the most "
                f"efficient of the paper's six: "
                f"{'holds' if r.cosmos_most_efficient_of_six else 'does not hold'}.")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    from experiments.harness.runner import script_main

    raise SystemExit(script_main(NAME))
