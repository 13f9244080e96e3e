"""Beyond the paper: how every headline moves with the index size N, up to the paper's billion.

The six systems of Fig. 4a run on the SIFT-like and DEEP-like workloads at sizes a decade apart
(:data:`SIZES`; the largest is the paper's 10^9 vectors). Up to the scale's own size the index
is real (``experiments.harness.workloads``); above it the workload is a cluster-template one
(``graphs.templates``: real geometry at N, probes searched on :data:`TEMPLATES` real template
clusters). The cluster count grows with N (:func:`clusters_for`), so that the clusters grow
too, as a billion-vector index's do. ``scale_n.csv`` has one row per dataset x N x system:
QPS with its 95 % interval, QPS over Base and over CXL-ANNS with their intervals, DRAM requests
per query, mean latency, the device LIR of the DRAM requests, the energy per query and the
retrieval share of a RAG service's TTFT (:func:`rag.retrieval_share_unqueued`:
the default pipeline, Llama 3.1 8B on an H100 with 10 passages, its prefill unqueued, and the
retrieval taking the system's closed-loop mean latency, its latency at full throughput, so
the largest share a service that keeps up would see). DRAM-only at 10^9 gets the host DRAM
that holds the index (experiments.harness.capacity). The plot draws both headline ratios against N
with the paper's figures marked at 10^9.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pandas as pd

from experiments.figures.fig4a_qps import PAPER_VS_BASE, PAPER_VS_CXLANNS, SYSTEMS
from experiments.harness.capacity import fit_overrides
from experiments.harness.common import error_bars, pyplot, save_figure, write_csv
from experiments.harness.ratios import add_ratio_ci
from experiments.harness.sim import simulate_task
from experiments.harness.workloads import SCALES, with_scale, workload
from rag import PipelineConfig, retrieval_share_unqueued

NAME = "scale_n"
TITLE = "Headline figures against the index size N"

#: index sizes per scale: a decade apart up to the paper's 10^9 (tiny: small enough for CI)
SIZES = {
    "tiny": (3_000, 30_000),
    "default": (100_000, 1_000_000, 10_000_000, 100_000_000, 1_000_000_000),
    "full": (100_000, 1_000_000, 10_000_000, 100_000_000, 1_000_000_000),
}
#: template clusters of the sizes above the real index: the paper scale's count, so that the
#: 10^9 point is the paper scale's workload (its reason: experiments.harness.workloads.SCALES)
TEMPLATES = SCALES["paper"].templates
#: the largest N built as a real index at each scale (a templated workload above it)
REAL_UP_TO = {"tiny": 3_000, "default": 1_000_000, "full": 1_000_000}
#: growth of the cluster count with N: clusters x 2^round(0.4 log2(N / N0)) above the scale's
#: N0, so that 10^6 -> 10^9 goes from the scales' 64 clusters to the paper scale's 1,024
#: (clusters then grow from 16k to about a million vectors, as a billion-vector index's are)
CLUSTER_GROWTH = 0.4


def clusters_for(scale, n: int) -> int:
    """Clusters of the index of ``n`` vectors at ``scale``: the scale's own count up to its
    size (at most n / 50), growing above it by :data:`CLUSTER_GROWTH`."""
    base_n = REAL_UP_TO.get(scale.name, scale.n)
    if n <= base_n:
        return max(1, min(scale.num_clusters, n // 50))
    return int(scale.num_clusters * 2 ** round(CLUSTER_GROWTH * math.log2(n / base_n)))


def _scale_at(ctx, n: int):
    """The scale of the point of ``n`` vectors (templated above the real limit)."""
    sc = ctx.scale
    c = clusters_for(sc, n)
    templated = n > REAL_UP_TO.get(sc.name, sc.n)
    return with_scale(sc, name=f"{sc.name}-n{n}", n=n, num_clusters=c,
                      num_probes=min(sc.num_probes, c),
                      templates=min(TEMPLATES, c) if templated else None)


def _trace_file(ctx, family: str, n: int) -> Path:
    from graphs import save_trace

    sc = _scale_at(ctx, n)
    folder = ctx.traces_dir or ctx.out / "traces"
    folder.mkdir(exist_ok=True, parents=True)
    path = folder / f"{family}-n{n}-c{sc.num_clusters}.npz"
    if not path.exists():
        tr = workload(family, sc, cache_dir=ctx.cache_dir, seed=ctx.seed,
                      progress=ctx.progress)
        tmp = path.with_name(path.stem + ".tmp.npz")
        save_trace(tmp, tr)
        tmp.replace(path)
    return path


def simulation_plan(ctx, trace_path=None) -> list[dict]:
    """The simulations of the sweep: the six systems at every size on every dataset.
    ``trace_path(family, n)``: the trace of each point (default :func:`_trace_file`, built if
    need be; the plan passes one that builds nothing)."""
    sizes = SIZES.get(ctx.scale.name, SIZES["default"])
    tasks = []
    for fam in ctx.families:
        for n in sizes:
            path = trace_path(fam, n) if trace_path else _trace_file(ctx, fam, n)
            c = _scale_at(ctx, n)
            for s in SYSTEMS:
                fit = fit_overrides(s, fam, c)
                tasks.append(dict(system=s, trace_path=str(path), seed=ctx.seed,
                                  **({"overrides": fit} if fit else {}),
                                  num_queries=ctx.scale.sweep_queries,
                                  ci_target=ctx.scale.ci_target,
                                  tags={"dataset": fam, "n": n, "clusters": c.num_clusters,
                                        "templates": c.templates or 0, "system": s}))
    return tasks


def plan_sweep(ctx) -> dict | None:
    """The estimate ``cosmos reproduce --dry-run`` gives of this sweep
    (experiments.harness.plan): each size's workload built from nothing (a real index up to
    :data:`REAL_UP_TO`, at the plan's measured CPU seconds per million vectors; a
    cluster-template one above it, :func:`experiments.harness.plan.templated_build_cpu_s`),
    and the simulations of :func:`simulation_plan` at the requests per query of each size
    (:func:`experiments.harness.plan.requests_per_query_at`). None with a user's dataset
    (the sweep makes each N itself)."""
    from experiments.harness.plan import (requests_per_query_at, sweep_estimate, sweep_requests,
                                          workload_build_cpu_s)

    if ctx.dataset:
        return None
    sc = ctx.scale
    sizes = SIZES.get(sc.name, SIZES["default"])
    points = [_scale_at(ctx, n) for n in sizes]
    build = sum(workload_build_cpu_s(fam, at, [at.num_probes])
                for fam in ctx.families for at in points)
    tasks = simulation_plan(ctx, trace_path=lambda fam, n: f"{fam}-n{n}")
    lo, hi = sweep_requests(tasks, sc.num_queries, lambda t: requests_per_query_at(
        t["tags"]["dataset"], t["tags"]["n"]))
    return sweep_estimate(f"{len(tasks)} simulations at N = {', '.join(f'{n:,}' for n in sizes)}",
                          lo, hi, ctx, build_cpu_s=build)


def check(ctx) -> None:
    """scale_n makes each N itself from the synthetic families: a user's dataset is refused
    with one line (ValueError, asked by the runner before anything is written)."""
    if ctx.dataset:
        raise ValueError("scale_n runs on the synthetic families (it makes each N itself); "
                         "--dataset is not supported")


def run(ctx) -> dict:
    tasks = simulation_plan(ctx)
    df = pd.DataFrame(ctx.sweep(simulate_task, tasks, desc="N sweep"))
    df["requests_per_query"] = df["dram_requests"] / df["num_queries"]
    df["point"] = df["dataset"] + "/" + df["n"].astype(str)
    df["rag_retrieval_share_of_ttft"] = retrieval_share_unqueued(
        PipelineConfig(), df["latency_mean_ns"].to_numpy() * 1e-9)
    for ref, col in (("base", "qps_vs_base"), ("cxl-anns", "qps_vs_cxl_anns")):
        qps = df[df.system == ref].set_index("point")["qps"]
        df[col] = df["qps"] / df["point"].map(qps)
        add_ratio_ci(df, col, ref, key="point")
    df["paper_qps_vs_base"] = [PAPER_VS_BASE.get((d, s), float("nan")) if n == 10**9
                               else float("nan") for d, s, n in zip(df.dataset, df.system, df.n)]
    df["paper_qps_vs_cxl_anns"] = [PAPER_VS_CXLANNS.get((d, s), float("nan")) if n == 10**9
                                   else float("nan")
                                   for d, s, n in zip(df.dataset, df.system, df.n)]
    cols = ["dataset", "n", "clusters", "templates", "system", "qps", "qps_ci_low",
            "qps_ci_high", "qps_vs_base", "qps_vs_base_ci_low", "qps_vs_base_ci_high",
            "paper_qps_vs_base", "qps_vs_cxl_anns", "qps_vs_cxl_anns_ci_low",
            "qps_vs_cxl_anns_ci_high", "paper_qps_vs_cxl_anns", "requests_per_query",
            "latency_mean_ns", "latency_mean_ci_low_ns", "latency_mean_ci_high_ns",
            "device_lir_requests", "energy_per_query_mJ", "rag_retrieval_share_of_ttft",
            "num_queries", "stopped"]
    write_csv(ctx.out / "scale_n.csv", df[[c for c in cols if c in df.columns]])
    out = {}
    for fam in ctx.families:
        sub = df[(df.dataset == fam) & (df.system == "cosmos")].set_index("n")
        out[f"{fam}_cosmos_vs_base"] = {int(n): round(float(v), 2)
                                        for n, v in sub["qps_vs_base"].items()}
        out[f"{fam}_cosmos_vs_cxl-anns"] = {int(n): round(float(v), 2)
                                            for n, v in sub["qps_vs_cxl_anns"].items()}
    return out


def plot(folder) -> None:
    plt = pyplot()
    df = pd.read_csv(Path(folder) / "scale_n.csv")
    cos = df[df.system == "cosmos"]
    fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.2))
    for ax, col, title in ((axes[0], "qps_vs_base", "Cosmos / Base"),
                           (axes[1], "qps_vs_cxl_anns", "Cosmos / CXL-ANNS")):
        for i, (fam, sub) in enumerate(cos.groupby("dataset", sort=False)):
            sub = sub.sort_values("n")
            ax.errorbar(sub.n, sub[col], yerr=error_bars(sub, col), marker="o", capsize=2,
                        color=f"C{i}", label=fam)
            paper = sub[f"paper_{col}"]
            ok = paper.notna().to_numpy()
            if ok.any():
                ax.scatter(sub.n[ok], paper[ok], marker="*", s=120, color=f"C{i}",
                           edgecolor="k", zorder=3, label=f"{fam}: paper")
            real = sub[sub.templates == 0]
            ax.scatter(real.n, real[col], marker="o", s=14, color="white", zorder=4)
        ax.set_xscale("log")
        ax.set_xlabel("vectors in the index (N)")
        ax.set_ylabel(title)
        ax.set_title(f"{title} against N (white dots: real index; others templated)",
                     fontsize=8)
        ax.legend(frameon=False, fontsize=7)
    fig.tight_layout()
    save_figure(fig, folder, "scale_n")
    plt.close(fig)


def summary_md(folder) -> str:
    df = pd.read_csv(Path(folder) / "scale_n.csv")
    lines = ["## Headline figures against the index size N", "",
             "| dataset | N | clusters | templates | Cosmos / Base (95 % CI) | "
             "Cosmos / CXL-ANNS (95 % CI) | DRAM requests / query (Base) | LIR (Cosmos) | "
             "RAG retrieval share of TTFT, Base / Cosmos |",
             "|---|---|---|---|---|---|---|---|---|"]
    for (fam, n), sub in df.groupby(["dataset", "n"], sort=False):
        s = sub.set_index("system")
        c = s.loc["cosmos"]

        def ci(col):
            lo, hi = c.get(f"{col}_ci_low"), c.get(f"{col}_ci_high")
            if lo is None or pd.isna(lo) or pd.isna(hi):
                return f"{c[col]:.2f}"
            return f"{c[col]:.2f} ({lo:.2f}-{hi:.2f})"
        def share(row):
            v = row.get("rag_retrieval_share_of_ttft")
            return "-" if v is None or pd.isna(v) else f"{100 * v:.2f} %"
        lines.append(f"| {fam} | {n:,} | {int(c.clusters)} | {int(c.templates) or 'real'} | "
                     f"{ci('qps_vs_base')} | {ci('qps_vs_cxl_anns')} | "
                     f"{s.loc['base', 'requests_per_query']:,.0f} | "
                     f"{c.device_lir_requests:.2f} | {share(s.loc['base'])} / {share(c)} |")
    lines += ["", "The paper (SIFT1B, DEEP1B): Cosmos / Base 6.72x and 5.35x, Cosmos / "
              "CXL-ANNS 2.35x. RAG share: the retrieval at the system's closed-loop mean "
              "latency, the default pipeline's encode and prefill unqueued (rag)."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    from experiments.harness.runner import script_main
    raise SystemExit(script_main(NAME))
