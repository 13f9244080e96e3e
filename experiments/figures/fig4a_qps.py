"""Fig. 4a: throughput (QPS) of the paper's six systems, normalized to Base, and the 2 x 2 of
Cosmos's two contributions.

Every system replays the same logical trace of each dataset (SIFT-like and DEEP-like, or the
user's own) in the closed loop: queries stream into the system as its search contexts free up.
The paper's reported ratios (Cosmos over Base: 6.72x on SIFT1B, 5.35x on DEEP1B; Cosmos over
CXL-ANNS: 2.35x) are columns of ``qps.csv`` and drawn beside ours (left panel: every system over
Base; right panel: Cosmos over CXL-ANNS). ``per_device.csv`` has one row per dataset x system x
device (memory instance): DRAM requests and bandwidth, DRAM bus, rank, link and GPC busy
fractions, and the cluster searches placed on each device (systems searching on the GPCs).

Five more systems run beside the paper's six (:data:`EXTENDED`), to show where compute can
sit: ``cxl-anns-rankpu`` (host traversal, rank-PU distances) and ``cosmos-accel`` (GPC
traversal, accelerator distances) complete the 2 x 2 of Cosmos's contributions
(cosmos.presets.TWO_BY_TWO); ``cxl-anns-switch`` (distances on an accelerator in the CXL
switch), ``cxl-anns-dimm`` (on the DIMM buffers, AxDIMM) and ``cosmos-switch`` (the whole
search on cores in the switch) put compute in the other places a near-memory design can.
They are rows of ``qps.csv`` and, in the summary, one table "where compute sits": rows where
the traversal runs, columns the unit that computes the distances, both read from each system's
declaration (:func:`where_compute_sits`); the plot shows the paper's six.

One more row, ``dram-only-equal-capacity``, is DRAM-only simulated with the CXL systems' DRAM
capacity (4 ranks per host subchannel, 64 ranks as their 4 devices x 8 x 2; the preset's has a
quarter of them): :func:`equal_capacity_task`.

With ``--replications R`` (R > 1, experiments.harness.replications) every simulation runs on R
workload instances: ``qps.csv`` holds the means over them with their Student-t intervals
beside the runs' own, ``qps_replications.csv`` each replication's table, and ``orderings.csv``
in how many replications each ordering of two systems holds (:func:`run_replications`).
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pandas as pd

from cosmos.presets import get_preset
from cosmos.systems import Read, model_for
from cosmos.units import UNITS, unit
from experiments.harness.capacity import fit_for
from experiments.harness.common import error_bars, pyplot, save_figure, write_csv
from experiments.harness.ratios import add_ratio_ci
from experiments.harness.sim import simulate_task, split_per_device
from experiments.harness.workloads import recall_row

NAME = "fig4a_qps"
TITLE = "Relative QPS of the six systems (Cosmos paper, Fig. 4a)"
SYSTEMS = ("base", "dram-only", "cxl-anns", "cosmos-norank", "cosmos-noalgo", "cosmos")
#: the systems run beside the paper's six (module docstring): the two that complete the 2 x 2
#: (cosmos.presets.TWO_BY_TWO) with cxl-anns and cosmos, then compute in the switch and on the
#: DIMM buffers
EXTENDED = ("cxl-anns-rankpu", "cosmos-accel", "cxl-anns-switch", "cxl-anns-dimm",
            "cosmos-switch")
#: the systems of the "where compute sits" table: all on CXL memory with the default placement
#: (DRAM-only and Cosmos w/o placement algorithm differ in what else they change)
WHERE_SYSTEMS = ("base", "cxl-anns", "cosmos-norank", "cosmos") + EXTENDED
#: where a search's traversal runs (cosmos.systems search_location) -> its row label
TRAVERSAL_PLACES = {"host": "host cores", "switch": "switch cores", "device": "device GPCs"}
#: the distance column of systems whose traversing cores compute the distances themselves
OWN_CORES = "the traversal's cores"
#: the paper's reported ratios over Base (Cosmos, IEEE CAL 2025, abstract and Sec. V)
PAPER_VS_BASE = {("sift", "cosmos"): 6.72, ("deep", "cosmos"): 5.35}
#: the paper's reported Cosmos / CXL-ANNS throughput ratio (one figure for both datasets)
PAPER_COSMOS_VS_CXLANNS = 2.35
PAPER_VS_CXLANNS = {("sift", "cosmos"): PAPER_COSMOS_VS_CXLANNS,
                    ("deep", "cosmos"): PAPER_COSMOS_VS_CXLANNS}


def system_task(ctx, family: str, system: str, tags: dict | None = None) -> dict:
    """fig4a's simulation of preset ``system`` on ``family``'s trace: every query of the
    trace, closed loop, or until the scale's ``ci_target`` (with ``tags``; default: dataset
    and system). Where the preset's memory cannot hold the index (DRAM-only at the paper
    scale), with the overrides that make it fit (experiments.harness.capacity)."""
    fit = fit_for(ctx, family, system)
    return dict(system=system, trace_path=str(ctx.trace_file(family)), seed=ctx.seed,
                per_device=True, ci_target=ctx.scale.ci_target,
                tags={"dataset": family, "system": system} if tags is None else tags,
                **({"overrides": fit} if fit else {}))


def system_tasks(ctx, systems) -> list:
    """fig4a's simulations: every query of each dataset's trace, closed loop, on each system.
    An experiment that needs the same runs (energy_per_query) builds its tasks here, so that
    the simulation cache serves both at every scale."""
    return [system_task(ctx, fam, s) for fam in ctx.families for s in systems]


def is_preset(system: str, overrides: dict | None) -> bool:
    """Whether ``overrides`` leave preset ``system`` as it is (e.g. ``device.count`` 4 on a
    four-device preset)."""
    from cosmos.presets import get_preset
    from experiments.harness.sim import _system_config

    return _system_config(system, overrides, None).to_dict() == get_preset(system).to_dict()


def sweep_task(ctx, family: str, system: str, overrides: dict | None, tags: dict,
               **options) -> dict:
    """A sweep's simulation of ``system`` with ``overrides`` on ``family``'s trace.

    At the preset's own configuration it is fig4a's run (:func:`system_task`: every query of
    the trace, or until the scale's ``ci_target``), so the sweeps' points at the paper's
    configuration, the load sweep's and rag_ttft's saturation runs and fig4a's bars are one
    simulation (``cosmos reproduce`` runs it once) and agree. Elsewhere it is
    ``simulate_task(system, trace, overrides=overrides, **options)``: the sweep's own
    queries (``num_queries``) and options (overrides completed by experiments.harness.capacity
    where the memory cannot hold the index)."""
    if is_preset(system, overrides):
        return system_task(ctx, family, system, tags)
    return dict(system=system, trace_path=str(ctx.trace_file(family)),
                overrides=fit_for(ctx, family, system, overrides),
                seed=ctx.seed, tags=tags, **options)


#: the row of DRAM-only with as many DRAM ranks as the CXL systems (:func:`equal_capacity_task`)
EQUAL_CAPACITY = "dram-only-equal-capacity"
#: the rows of ``qps.csv`` per dataset, in order
ROWS = SYSTEMS + EXTENDED + (EQUAL_CAPACITY,)


def equal_capacity_ranks() -> int:
    """Ranks per host DRAM subchannel that give DRAM-only the CXL systems' rank count: the
    Cosmos preset's ``device.count`` x ``device.channels`` x ``device.ranks`` (4 x 8 x 2 = 64)
    over DRAM-only's ``host.dram_channels`` (16): 4, i.e. the same DRAM capacity."""
    dev, host = get_preset("cosmos").device, get_preset("dram-only").host
    cxl = int(dev.count) * int(dev.channels) * int(dev.ranks)
    if cxl % int(host.dram_channels):
        raise ValueError(f"{cxl} CXL ranks do not split over {host.dram_channels} host "
                         f"subchannels")
    return cxl // int(host.dram_channels)


def equal_capacity_task(ctx, family: str) -> dict:
    """DRAM-only simulated with the CXL systems' DRAM capacity (``host.dram_ranks`` =
    :func:`equal_capacity_ranks`, or more where the index needs it): the preset's host DRAM has a
    quarter of their ranks, so its DRAM energy and rank parallelism are those of a smaller
    memory. Row ``dram-only-equal-capacity`` of ``qps.csv`` (energy_per_query's row of that name
    scales the background of the preset's run instead)."""
    task = system_task(ctx, family, "dram-only",
                       tags={"dataset": family, "row_system": EQUAL_CAPACITY})
    fit = task.get("overrides", {})
    ranks = max(equal_capacity_ranks(), int(fit.get("host.dram_ranks", 1)))
    return {**task, "overrides": {**fit, "host.dram_ranks": ranks}}


def simulation_tasks(ctx) -> list:
    """Every simulation of this experiment (``cosmos reproduce`` runs the simulations of all
    its experiments in one pool first: experiments.harness.plan): the paper's six, the
    extended ones, and DRAM-only at the CXL systems' capacity."""
    return (system_tasks(ctx, SYSTEMS + EXTENDED)
            + [equal_capacity_task(ctx, fam) for fam in ctx.families])


#: the columns of ``qps.csv`` (of one replication) that lead, in order; the rest follow
COLUMNS = ["dataset", "system", "qps", "qps_ci_low", "qps_ci_high", "qps_vs_base",
           "qps_vs_base_ci_low", "qps_vs_base_ci_high", "paper_qps_vs_base", "qps_vs_cxl_anns",
           "qps_vs_cxl_anns_ci_low", "qps_vs_cxl_anns_ci_high",
           "paper_qps_vs_cxl_anns", "latency_mean_ns", "latency_mean_ci_low_ns",
           "latency_mean_ci_high_ns", "latency_p50_ns", "latency_p99_ns",
           "dram_bytes_per_query", "num_queries", "stopped", "window_queries", "wall_s",
           "requests_per_wall_s"]


def table(rows: list) -> tuple:
    """One replication's simulation rows -> (qps table: one row per dataset x system with
    both ratios and their intervals, per-device table). A row tagged ``row_system`` (a
    preset run as a variant: :func:`equal_capacity_task`) is labelled by it."""
    rows = [{**{k: v for k, v in r.items() if k != "row_system"},
             "system": r.get("row_system") or r["system"]} for r in rows]
    df, per_dev = split_per_device(rows, ["dataset", "system"])
    base = df[df.system == "base"].set_index("dataset")["qps"]
    cxl = df[df.system == "cxl-anns"].set_index("dataset")["qps"]
    df["qps_vs_base"] = df["qps"] / df["dataset"].map(base)
    df["paper_qps_vs_base"] = [PAPER_VS_BASE.get((d, s), float("nan"))
                               for d, s in zip(df.dataset, df.system)]
    df["qps_vs_cxl_anns"] = df["qps"] / df["dataset"].map(cxl)
    add_ratio_ci(df, "qps_vs_base", "base")
    add_ratio_ci(df, "qps_vs_cxl_anns", "cxl-anns")
    df["paper_qps_vs_cxl_anns"] = [PAPER_VS_CXLANNS.get((d, s), float("nan"))
                                   for d, s in zip(df.dataset, df.system)]
    rest = [c for c in df.columns if c not in COLUMNS]
    return df[COLUMNS + rest], per_dev


def run(ctx) -> dict:
    if ctx.replications > 1:
        return run_replications(ctx)
    rows = ctx.sweep(simulate_task, simulation_tasks(ctx), desc="fig4a systems")
    df, per_dev = table(rows)
    write_csv(ctx.out / "qps.csv", df)
    write_csv(ctx.out / "per_device.csv", per_dev)
    write_csv(ctx.out / "workload.csv",
              pd.DataFrame([recall_row(ctx.trace(fam), fam) for fam in ctx.families]))
    out = {}
    for fam in ctx.families:
        sub = df[df.dataset == fam].set_index("system")
        out[f"{fam}_cosmos_vs_base"] = round(float(sub.loc["cosmos", "qps_vs_base"]), 2)
        out[f"{fam}_cosmos_vs_cxl-anns"] = round(float(sub.loc["cosmos", "qps_vs_cxl_anns"]), 2)
        for ratio, name in (("qps_vs_base", "base"), ("qps_vs_cxl_anns", "cxl-anns")):
            # the 95 % interval of the ratio, where both runs have one (left out otherwise:
            # a headline line of "[None, None]" says nothing)
            ci = [float(sub.loc["cosmos", f"{ratio}_ci_{e}"]) for e in ("low", "high")]
            if all(v == v for v in ci):
                out[f"{fam}_cosmos_vs_{name}_ci95"] = [round(v, 3) for v in ci]
    return out


#: the figures of ``qps.csv`` that a replicated run gives as a mean over the replications
#: with both intervals: (column, its run's own interval columns, the across-replication
#: interval columns written)
REPLICATED_FIGURES = [
    (v, (f"{v}_ci_low", f"{v}_ci_high"), (f"{v}_rep_ci_low", f"{v}_rep_ci_high"), f"{v}_rep_sd")
    for v in ("qps", "qps_vs_base", "qps_vs_cxl_anns")
] + [("latency_mean_ns", ("latency_mean_ci_low_ns", "latency_mean_ci_high_ns"),
      ("latency_mean_rep_ci_low_ns", "latency_mean_rep_ci_high_ns"), "latency_mean_rep_sd_ns")]
#: figures of a replicated ``qps.csv`` given as the mean over the replications alone
MEAN_ONLY = ("latency_p50_ns", "latency_p99_ns", "dram_bytes_per_query", "num_queries")


def aggregate(per_rep: pd.DataFrame) -> pd.DataFrame:
    """The replications' qps tables (one row per replication x dataset x system) -> one row per
    dataset x system: the mean of each figure over the replications with its 95 %
    Student-t interval over them (``*_rep_ci_*``, experiments.harness.replications.t_interval) and
    the runs' own intervals carried to that mean (``*_ci_*``, within_interval); the ratios
    are means of each replication's ratio (each replication compares the systems on one
    workload)."""
    from experiments.harness.replications import t_interval, within_interval

    out = []
    for (fam, system), sub in per_rep.groupby(["dataset", "system"], sort=False):
        row = {"dataset": fam, "system": system, "replications": len(sub),
               "seeds": " ".join(str(int(s)) for s in sub["seed"])}
        for col, (lo, hi), (rlo, rhi), sd in REPLICATED_FIGURES:
            mean, a, b, s = t_interval(sub[col])
            row[col] = mean
            row[rlo], row[rhi], row[sd] = a, b, s
            row[lo], row[hi] = within_interval(sub[col], sub[lo], sub[hi])
        for col in ("paper_qps_vs_base", "paper_qps_vs_cxl_anns"):
            row[col] = float(sub[col].iloc[0])
        for col in MEAN_ONLY:
            row[col] = float(sub[col].mean())
        row["wall_s"] = float(sub["wall_s"].sum())
        out.append(row)
    return pd.DataFrame(out)


def run_replications(ctx) -> dict:
    """fig4a on ``ctx.replications`` workload instances (experiments.harness.replications):
    ``qps_replications.csv`` (each replication's qps table, led by ``replication`` and
    ``seed``), ``qps.csv`` (:func:`aggregate`), ``orderings.csv`` (every pair of systems per
    dataset: in how many replications the one with the higher mean QPS is above the other)
    and ``per_device.csv`` (led by ``replication`` and ``seed``)."""
    from experiments.harness.replications import ordering_rows

    rows = ctx.replicated_sweep(simulate_task, simulation_tasks, desc="fig4a systems")
    tables, devices = [], []
    for r, seed in enumerate(ctx.seeds):
        df, per_dev = table([{k: v for k, v in row.items() if k not in ("replication", "seed")}
                             for row in rows if row["replication"] == r])
        tables.append(df.assign(replication=r, seed=seed))
        devices.append(per_dev.assign(replication=r, seed=seed))
    lead = ["replication", "seed"]
    per_rep = pd.concat(tables, ignore_index=True)
    per_rep = per_rep[lead + [c for c in per_rep.columns if c not in lead]]
    per_dev = pd.concat(devices, ignore_index=True)
    per_dev = per_dev[lead + [c for c in per_dev.columns if c not in lead]]
    agg = aggregate(per_rep)
    orders = pd.DataFrame(ordering_rows(per_rep, ["dataset"], SYSTEMS + EXTENDED))
    write_csv(ctx.out / "qps.csv", agg)
    write_csv(ctx.out / "qps_replications.csv", per_rep)
    write_csv(ctx.out / "orderings.csv", orders)
    write_csv(ctx.out / "per_device.csv", per_dev)
    out = {"replications": ctx.replications, "seeds": ctx.seeds}
    for fam in ctx.families:
        sub = agg[agg.dataset == fam].set_index("system")
        for ratio, name in (("qps_vs_base", "base"), ("qps_vs_cxl_anns", "cxl-anns")):
            key = f"{fam}_cosmos_vs_{name}"
            out[key] = round(float(sub.loc["cosmos", ratio]), 2)
            ci = [float(sub.loc["cosmos", f"{ratio}_rep_ci_{e}"]) for e in ("low", "high")]
            out[f"{key}_ci95_over_replications"] = [round(v, 3) for v in ci]
            within = [float(sub.loc["cosmos", f"{ratio}_ci_{e}"]) for e in ("low", "high")]
            if all(v == v for v in within):
                out[f"{key}_ci95_within_runs"] = [round(v, 3) for v in within]
        o = orders[orders.dataset == fam]
        pick = o[((o.higher == "cosmos") & (o.lower == "cosmos-noalgo"))
                 | ((o.higher == "cosmos-noalgo") & (o.lower == "cosmos"))]
        if len(pick):
            p = pick.iloc[0]
            out[f"{fam}_{p.higher}_above_{p.lower}"] = f"{p.holds} of {p.replications}"
    return out


def plot(folder) -> None:
    plt = pyplot()
    import numpy as np

    df = pd.read_csv(Path(folder) / "qps.csv")
    df = df[df.system.isin(SYSTEMS)]           # the paper's six (the 2 x 2 is a table)
    # a replicated run: bars are means over the replications, error bars their 95 %
    # Student-t interval, dots each replication's figure
    rep = "replications" in df
    per = pd.read_csv(Path(folder) / "qps_replications.csv") if rep else None

    def bars(frame, col):
        if not rep:
            return error_bars(frame, col)
        return error_bars(frame, col, f"{col}_rep_ci_low", f"{col}_rep_ci_high")

    def dots(axis, xs, fam, col, systems_):
        if per is None:
            return
        sub = per[per.dataset == fam]
        for xi, system in zip(xs, systems_):
            v = sub.loc[sub.system == system, col].to_numpy()
            axis.scatter(np.full(len(v), xi), v, s=6, color="k", alpha=0.6, zorder=4,
                         linewidths=0)
    fams = list(dict.fromkeys(df.dataset))
    systems = list(dict.fromkeys(df.system))
    fig, (ax, ax2) = plt.subplots(
        1, 2, figsize=(2.4 + 1.1 * len(systems) * len(fams) / 2 + 0.9 * len(fams), 3.4),
        gridspec_kw={"width_ratios": [len(systems), 0.9 * len(fams)]})
    width = 0.8 / len(fams)
    x = np.arange(len(systems))
    for i, fam in enumerate(fams):
        sub = df[df.dataset == fam].set_index("system").reindex(systems)
        xs = x + (i - (len(fams) - 1) / 2) * width
        ax.bar(xs, sub["qps_vs_base"], width, color=f"C{i}", label=f"{fam} (ours)",
               yerr=bars(sub, "qps_vs_base"), capsize=2, error_kw={"lw": 0.8})
        dots(ax, xs, fam, "qps_vs_base", systems)
        paper = sub["paper_qps_vs_base"]
        ok = paper.notna().to_numpy()
        if ok.any():
            ax.scatter(xs[ok], paper[ok], marker="_", s=400, linewidths=2.5, color="k", zorder=3,
                       label="paper" if i == 0 else None)
    ax.set_xticks(x, systems, rotation=20)
    ax.set_ylabel("QPS normalized to Base")
    ax.axhline(1.0, color="0.6", lw=0.8)
    ax.legend(frameon=False, fontsize=8)
    ax.set_title("Fig. 4a: relative throughput" + (
        f" (mean of {int(df['replications'].iloc[0])} replications)" if rep else ""))

    # Cosmos over CXL-ANNS, ours (bars) and the paper's (markers), per dataset
    cos = df[df.system == "cosmos"].set_index("dataset").reindex(fams)
    xf = np.arange(len(fams))
    ax2.bar(xf, cos["qps_vs_cxl_anns"], 0.6, color=[f"C{i}" for i in range(len(fams))],
            yerr=bars(cos, "qps_vs_cxl_anns"), capsize=2, error_kw={"lw": 0.8})
    for xi, fam in zip(xf, fams):
        dots(ax2, [xi], fam, "qps_vs_cxl_anns", ["cosmos"])
    paper = cos["paper_qps_vs_cxl_anns"]
    ok = paper.notna().to_numpy()
    if ok.any():
        ax2.scatter(xf[ok], paper[ok], marker="_", s=400, linewidths=2.5, color="k", zorder=3,
                    label="paper")
        ax2.legend(frameon=False, fontsize=8)
    for xi, v in zip(xf, cos["qps_vs_cxl_anns"]):
        ax2.annotate(f"{v:.2f}x", (xi, v), ha="center", va="bottom", fontsize=7)
    ax2.set_xticks(xf, fams)
    ax2.set_ylabel("Cosmos QPS / CXL-ANNS QPS")
    ax2.axhline(1.0, color="0.6", lw=0.8)
    ax2.set_title("over CXL-ANNS", fontsize=9)
    fig.tight_layout()
    save_figure(fig, folder, "fig4a_qps")
    plt.close(fig)


def summary_md(folder) -> str:
    df = pd.read_csv(Path(folder) / "qps.csv")
    if "replications" in df:
        return replications_md(folder, df)
    lines = ["## Fig. 4a: relative QPS (ours vs paper)", "",
             "| dataset | system | QPS (95 % CI) | x Base (ours, 95 % CI) | x Base (paper) "
             "| x CXL-ANNS (ours) "
             "| x CXL-ANNS (paper) |", "|---|---|---|---|---|---|---|"]

    def fmt(v):
        return "" if pd.isna(v) else f"{v:.2f}"

    def ci(r, col, spec):
        lo, hi = getattr(r, f"{col}_ci_low", float("nan")), getattr(r, f"{col}_ci_high",
                                                                       float("nan"))
        return "" if pd.isna(lo) or pd.isna(hi) else f" ({lo:{spec}}-{hi:{spec}})"

    for r in df.itertuples():
        lines.append(f"| {r.dataset} | {r.system} | {r.qps:,.0f}{ci(r, 'qps', ',.0f')} | "
                     f"{r.qps_vs_base:.2f}{ci(r, 'qps_vs_base', '.2f')} | "
                     f"{fmt(r.paper_qps_vs_base)} | "
                     f"{r.qps_vs_cxl_anns:.2f}{ci(r, 'qps_vs_cxl_anns', '.2f')} | "
                     f"{fmt(r.paper_qps_vs_cxl_anns)} |")
    lines.append("")
    for fam in dict.fromkeys(df.dataset):
        r = df[(df.dataset == fam) & (df.system == "cosmos")].iloc[0]
        lines.append(f"- {fam}: Cosmos / Base = {r.qps_vs_base:.2f} (paper: "
                     f"{fmt(r.paper_qps_vs_base) or 'not reported'}); Cosmos / CXL-ANNS = "
                     f"{r.qps_vs_cxl_anns:.2f} "
                     f"(paper: {fmt(r.paper_qps_vs_cxl_anns) or 'not reported'})")
    lines += where_compute_md(df)
    lines += workload_md(folder)
    return "\n".join(lines) + "\n"


def workload_md(folder) -> list:
    """The summary's lines on the workloads' recall (``workload.csv``, written by :func:`run`
    for one workload instance: experiments.harness.workloads.recall_row); none for a folder
    without it."""
    path = Path(folder) / "workload.csv"
    if not path.exists():
        return []
    w = pd.read_csv(path)
    lines = ["", "### The workloads' recall", "",
             "| dataset | vectors | clusters | templates | probes | recall@10 |",
             "|---|---|---|---|---|---|"]
    for r in w.itertuples():
        rec = f"{r.recall_at_10:.3f}"
        if r.recall_kind != "end-to-end":
            own = ", ".join(str(r.template_recall_at_10).split())
            rec += f": the templates' own ({own}), weighted by their searches"
        lines.append(f"| {r.dataset} | {r.n:,} | {r.clusters:,} | {r.templates or 'real index'} | "
                     f"{r.num_probes} | {rec} |")
    for r in w[w.recall_kind != "end-to-end"].itertuples():
        lines.append(f"\n{r.dataset}: end-to-end recall is not measured at {r.n:,} vectors. Of each "
                     f"query's 10 nearest among the first {r.probe_coverage_rows:,} vectors (a "
                     f"uniform sample, standing for its {r.probe_coverage_stands_for_k:,} nearest), "
                     f"{100 * r.probe_coverage_mean:.1f} % lie in a probed cluster (10th percentile "
                     f"over the queries: {100 * r.probe_coverage_p10:.0f} %). With every vector in "
                     f"the sample this share is the bound routing puts on recall@10; here it is "
                     f"that of a wider neighbourhood, which the probed clusters hold less of.")
    return lines


#: the orderings the summary names as the paper's conclusions: (higher, lower), per dataset
CONCLUSIONS = [("cosmos", s) for s in SYSTEMS if s != "cosmos"] + [
    ("cosmos-noalgo", "base"), ("cxl-anns", "base"), ("cosmos-norank", "cxl-anns")]


def replications_md(folder, df: pd.DataFrame) -> str:
    """The summary of a replicated run (:func:`run_replications`): means over the
    replications with both intervals, the paper's figures beside, and the orderings of the
    systems as counts of replications."""
    from experiments.harness.replications import count_text

    n = int(df["replications"].iloc[0])
    seeds = df["seeds"].iloc[0]
    lines = [f"## Fig. 4a: relative QPS (ours vs paper), {n} replications", "",
             f"Each figure is the mean over {n} workload instances (seeds {seeds}: dataset "
             "draw, k-means, query set and placement seed each; experiments.harness.replications), "
             "with its 95 % Student-t interval over them (\"over seeds\"), and the runs' own "
             "batch-means intervals carried to the same mean (\"within runs\": the interval if "
             "the workloads were fixed). Each replication's figures are in "
             "`qps_replications.csv`.", "",
             "| dataset | system | QPS (over seeds) | QPS (within runs) | x Base (over seeds) "
             "| x Base (within runs) | x Base (paper) | x CXL-ANNS (over seeds) "
             "| x CXL-ANNS (within runs) | x CXL-ANNS (paper) |",
             "|---|---|---|---|---|---|---|---|---|---|"]

    def fmt(v):
        return "" if pd.isna(v) else f"{v:.2f}"

    def ci(lo, hi, spec):
        return "" if pd.isna(lo) or pd.isna(hi) else f"{lo:{spec}}-{hi:{spec}}"

    def both(r, col, spec):
        """The mean (over seeds) | the within-runs interval."""
        row = r._asdict()
        over = ci(row[f"{col}_rep_ci_low"], row[f"{col}_rep_ci_high"], spec)
        within = ci(row[f"{col}_ci_low"], row[f"{col}_ci_high"], spec)
        return f"{row[col]:{spec}} ({over}) | {within}"

    for r in df.itertuples():
        lines.append(f"| {r.dataset} | {r.system} | {both(r, 'qps', ',.0f')} "
                     f"| {both(r, 'qps_vs_base', '.2f')} | {fmt(r.paper_qps_vs_base)} "
                     f"| {both(r, 'qps_vs_cxl_anns', '.2f')} | {fmt(r.paper_qps_vs_cxl_anns)} |")
    lines.append("")
    if df["qps_ci_low"].isna().all():
        lines += ["The runs have no interval of their own at this scale (too few completions "
                  "in their steady-state windows for batch means: `ci_note` in "
                  "`qps_replications.csv`): the "
                  "\"within runs\" columns are empty and only the interval over seeds is "
                  "given.", ""]
    for fam in dict.fromkeys(df.dataset):
        r = df[(df.dataset == fam) & (df.system == "cosmos")].iloc[0]
        lines.append(
            f"- {fam}: Cosmos / Base = {r.qps_vs_base:.2f} "
            f"({ci(r.qps_vs_base_rep_ci_low, r.qps_vs_base_rep_ci_high, '.2f')} over seeds; "
            f"paper: {fmt(r.paper_qps_vs_base) or 'not reported'}); Cosmos / CXL-ANNS = "
            f"{r.qps_vs_cxl_anns:.2f} "
            f"({ci(r.qps_vs_cxl_anns_rep_ci_low, r.qps_vs_cxl_anns_rep_ci_high, '.2f')} over "
            f"seeds; paper: {fmt(r.paper_qps_vs_cxl_anns) or 'not reported'})")
    lines += ["", f"### Orderings of the systems over the {n} replications", "",
              "Higher QPS than the other system in k of the replications, with the 95 % "
              "Clopper-Pearson interval of that proportion (exact: at least 95 % coverage "
              "at every proportion and every number of replications; all pairs in "
              "`orderings.csv`)."]
    for fam in dict.fromkeys(df.dataset):
        sub = df[(df.dataset == fam) & df.system.isin(SYSTEMS)].sort_values(
            "qps", ascending=False)
        lines += ["", f"**{fam}**, the paper's six by mean QPS: "
                  + " > ".join(sub.system) + "."]
        always, not_always = [], []
        per = pd.read_csv(Path(folder) / "qps_replications.csv")
        wide = per[per.dataset == fam].pivot(index="replication", columns="system",
                                             values="qps")
        for hi, lo in CONCLUSIONS:
            if hi not in wide or lo not in wide:
                continue
            held = int((wide[hi] > wide[lo]).sum())
            text = f"{hi} above {lo}: {count_text(held, n)}"
            (always if held == n else not_always).append(text)
        if always:
            lines += ["", "Holds in every replication:", ""] + [f"- {t}" for t in always]
        if not_always:
            lines += ["", "Does not hold in every replication:", ""] + \
                [f"- {t}" for t in not_always]
    lines += where_compute_md(df)
    return "\n".join(lines) + "\n"


def where_compute_sits(system: str) -> tuple[str, str]:
    """(where the traversal runs, what computes the distances) of a graph system, read from
    its declaration: the search's location, and the unit of its hop-vector reads (the
    rank-level PUs when they reduce the segments)."""
    model = model_for(get_preset(system))
    reads = {s.objects: s for _, _, s in model.steps() if isinstance(s, Read)}
    read = reads["hop-vectors"]
    if read.rank_pus:
        dist = unit("rank-pu").label
    elif read.unit == reads["adjacency"].unit:     # the cores that walk the graph
        dist = OWN_CORES
    else:
        dist = unit(read.unit).label
    return TRAVERSAL_PLACES[model.search_location], dist


#: places from the host toward the DRAM cells (cosmos.units locations)
_PATH = ("host", "switch", "device", "dimm-buffer", "rank")


def _nearer_memory(label: str) -> int:
    """Order of a distance column: the traversal's own cores first, then by how near the
    memory its unit sits."""
    if label == OWN_CORES:
        return -1
    (loc,) = {u.location for u in UNITS.values() if u.label == label}
    return _PATH.index(loc)


def where_compute_md(df: pd.DataFrame) -> list:
    """Per dataset, the "where compute sits" table: QPS over CXL-ANNS of every system of
    :data:`WHERE_SYSTEMS` that ran, in the cell of its traversal (row) and distance unit
    (column); the 2 x 2 of Cosmos's contributions is four of its cells."""
    systems = [s for s in WHERE_SYSTEMS if s in set(df.system)]
    if not systems:
        return []
    place = {s: where_compute_sits(s) for s in systems}
    rows = [r for r in TRAVERSAL_PLACES.values() if any(p[0] == r for p in place.values())]
    cols = sorted(dict.fromkeys(p[1] for p in place.values()), key=_nearer_memory)
    out = []
    for fam in dict.fromkeys(df.dataset):
        sub = df[df.dataset == fam].set_index("system")
        out += ["", f"### {fam}: where compute sits (QPS over CXL-ANNS; rows: where the "
                    "traversal runs, columns: what computes the distances)", "",
                "| traversal \\ distances | " + " | ".join(cols) + " |",
                "|---|" + "---|" * len(cols)]
        for r in rows:
            cells = [", ".join(f"{s}: {sub.loc[s, 'qps_vs_cxl_anns']:.2f}" for s in systems
                               if place[s] == (r, c) and s in sub.index) for c in cols]
            out.append(f"| {r} | " + " | ".join(cells) + " |")
    return out


if __name__ == "__main__":
    from experiments.harness.runner import script_main

    raise SystemExit(script_main(NAME))
