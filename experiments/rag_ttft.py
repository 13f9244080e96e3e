"""Beyond the paper: a RAG service's TTFT and QPS per chip with simulated retrieval.

The question of the paper's introduction: what does the retrieval system change for a
retrieval-augmented generation service? Each retrieval system (Base, CXL-ANNS, Cosmos) is
simulated open loop on the first workload at a few offered retrieval rates, fractions of
Cosmos's closed-loop throughput, so the same rates are offered to every system; a rate at or
above a system's own throughput is reported as saturated, not simulated. The simulated
per-query latencies then feed the pipeline model of :mod:`experiments.rag` (query encoding,
retrieval, a FIFO prefill queue per replica, decode, iterative retrieval stalls), once with
one retrieval per request and once with a retrieval every 64 generated tokens (so a request
rate of a quarter of the retrieval rate: 256 tokens make 4 retrievals).

Outputs: ``rag_ttft.csv`` (one row per system x schema x request rate), ``rag_ttft.png``
(TTFT p99, end-to-end p99, retrieval share of TTFT and QPS per chip against request rate)
and a summary with the RAG literature's figures beside ours.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pandas as pd

from experiments.common import pyplot, save_figure, write_csv, write_json
from experiments.rag import (PipelineConfig, get_accelerator, get_model, llm_only_ttft_s,
                             prefill_replicas, qps_per_chip, retrieval_profile,
                             retrieval_task, retrievals_per_request, simulate_pipeline,
                             tensor_parallel)
from experiments.sim import simulate_task

NAME = "rag_ttft"
TITLE = "RAG pipeline: TTFT and QPS per chip with simulated retrieval"
SYSTEMS = ("base", "cxl-anns", "cosmos")
#: retrieval schemas: None = one retrieval before prefill; N = one more every N tokens
SCHEMAS = {"one-shot": None, "iterative": 64}
#: offered retrieval rates as fractions of Cosmos's closed-loop throughput (few: the run is
#: part of every reproduction)
RETRIEVAL_FRACTIONS = (0.05, 0.15, 0.5, 0.9)
#: requests simulated per pipeline point (one prefill replica's share of the stream)
PIPELINE_REQUESTS = 4000

#: the RAG literature's figures, shown beside ours in summary.md
LITERATURE = [
    ("Shen et al., arXiv 2412.11854 (2024)",
     "retrieval can make TTFT about twice as long (a retrieval share of about 50 %); with a "
     "retrieval every 4 tokens, retrieval is 41 % of end-to-end latency"),
    ("RAGO, Jiang et al., ISCA 2025",
     "scheduling RAG stages as one pipeline gives up to 2x QPS per chip and 55 % lower TTFT "
     "than RAG built as an extension of LLM serving (retrieval modeled as a bandwidth "
     "roofline of the bytes scanned)"),
    ("HERMES, arXiv 2504.09775 (2025)",
     "multi-stage pipelines (RAG, prefill, decode, reasoning) reported as P50/P90/P99 "
     "end-to-end latency; retrieval modeled analytically from hardware traces"),
]


def simulation_tasks(ctx) -> list:
    """The closed-loop capacity runs: the load sweep's saturation points
    (experiments.latency_load.simulation_tasks); the open-loop retrieval runs depend on them."""
    from experiments.latency_load import simulation_tasks as saturation_tasks

    return saturation_tasks(ctx, SYSTEMS)


def _open_loop(ctx, closed: list[dict]):
    """(capacities, rates, [(system, rate)], tasks) of the open-loop retrieval runs from the
    rows of :func:`simulation_tasks`: each rate below a system's own capacity; up to
    experiments.latency_load.STOP_UP_TO_LOAD of it, a run stops once its mean latency meets
    the scale's ``ci_target``, as the load sweep's points do."""
    from experiments.latency_load import STOP_UP_TO_LOAD

    path = ctx.trace_file(ctx.families[0])
    cap = {r["system"]: r["qps"] for r in closed}
    rates = [f * cap["cosmos"] for f in RETRIEVAL_FRACTIONS]
    todo = [(s, q) for s in SYSTEMS for q in rates if q < cap[s]]
    tasks = [dict(system=s, trace_path=str(path), num_queries=ctx.scale.sweep_queries,
                  mode="open", rate_qps=q, seed=ctx.seed, tags={"system": s},
                  ci_target=ctx.scale.ci_target if q <= STOP_UP_TO_LOAD * cap[s] else None)
             for s, q in todo]
    return cap, rates, todo, tasks


def dependent_tasks(ctx, closed: list[dict]) -> list:
    """``(fn, task)`` of the retrieval runs that wait for :func:`simulation_tasks`'s rows
    (experiments.plan.run_shared starts them as soon as those are in)."""
    return [(retrieval_task, t) for t in _open_loop(ctx, closed)[3]]


def run(ctx) -> dict:
    cfg = PipelineConfig().validate()
    fam = ctx.families[0]
    closed = ctx.sweep(simulate_task, simulation_tasks(ctx), desc="retrieval saturation")
    cap, rates, todo, tasks = _open_loop(ctx, closed)
    rows = ctx.sweep(retrieval_task, tasks, desc="retrieval open loop")
    sims = dict(zip(todo, rows))
    out = []
    for schema, every in SCHEMAS.items():
        c = dataclasses.replace(cfg, retrieval_every_tokens=every)
        k = retrievals_per_request(c)
        for s in SYSTEMS:
            for f, q in zip(RETRIEVAL_FRACTIONS, rates):
                prof = retrieval_profile(s, q, cap[s], sims.get((s, q)))
                lam = q / k
                reps = prefill_replicas(c, lam)
                res = simulate_pipeline(c, prof, lam, reps, num_requests=PIPELINE_REQUESTS,
                                        seed=ctx.seed)
                llm = llm_only_ttft_s(c, lam, reps, num_requests=PIPELINE_REQUESTS,
                                      seed=ctx.seed)
                qpc = qps_per_chip(c, prof, num_requests=PIPELINE_REQUESTS, seed=ctx.seed)
                st = res.stats()
                out.append({
                    "dataset": fam, "system": s, "schema": schema,
                    "retrieval_every_tokens": every if every is not None else 0,
                    "retrievals_per_request": k, "request_rate_rps": lam,
                    "retrieval_offered_qps": q, "retrieval_capacity_qps": cap[s],
                    "retrieval_load_fraction": q / cap[s],
                    "cosmos_capacity_fraction": f,
                    "status": st.pop("status"),
                    "reason": st.pop("reason") or qpc["reason"],
                    "retrieval_p99_s": (float(pd.Series(prof.latencies_s).quantile(0.99))
                                        if not prof.saturated else float("nan")),
                    **st,
                    "llm_only_ttft_p50_s": (float(pd.Series(llm).quantile(0.5))
                                            if llm.size else float("nan")),
                    "llm_only_ttft_p99_s": (float(pd.Series(llm).quantile(0.99))
                                            if llm.size else float("nan")),
                    "prefill_replicas": reps, "chips_per_replica": tensor_parallel(c),
                    "qps_per_chip": qpc["qps_per_chip"],
                    # accelerator chips one retrieval system can feed at its throughput
                    "chips_per_retrieval_system": cap[s] / (k * qpc["qps_per_chip"]),
                    "ttft_target_s": c.ttft_target_s,
                    "model": c.model, "accelerator": c.accelerator,
                    "prompt_tokens": c.prompt_tokens, "output_tokens": c.output_tokens,
                })
    df = pd.DataFrame(out)
    write_csv(ctx.out / "rag_ttft.csv", df)
    m, a = get_model(cfg.model), get_accelerator(cfg.accelerator)
    write_json(ctx.out / "pipeline.json", {
        "pipeline": cfg.to_dict(), "schemas": SCHEMAS,
        "retrieval_fractions_of_cosmos_capacity": list(RETRIEVAL_FRACTIONS),
        "pipeline_requests": PIPELINE_REQUESTS, "model": dataclasses.asdict(m),
        "accelerator": dataclasses.asdict(a)})
    head = {}
    one = df[df.schema == "one-shot"]
    for s in SYSTEMS:
        ok = one[(one.system == s) & (one.status == "ok")]
        head[f"{s}_max_unsaturated_rps"] = round(ok.request_rate_rps.max()) if len(ok) else 0
    low = one[one.cosmos_capacity_fraction == min(RETRIEVAL_FRACTIONS)].set_index("system")
    for s in SYSTEMS:
        head[f"{s}_retrieval_share_of_ttft_pct"] = round(
            100 * float(low.retrieval_share_of_ttft[s]), 4)
        head[f"{s}_chips_per_retrieval_system"] = round(float(low.chips_per_retrieval_system[s]))
    return head


def plot(folder) -> None:
    plt = pyplot()

    df = pd.read_csv(Path(folder) / "rag_ttft.csv")
    fig, axes = plt.subplots(2, 3, figsize=(12, 6.4))
    axes = axes.ravel()
    panels = (("ttft_p50_s", 1e3, "p50 TTFT (ms)"), ("ttft_p99_s", 1e3, "p99 TTFT (ms)"),
              ("retrieval_share_of_ttft", 100.0, "retrieval share of TTFT (%)"),
              ("e2e_p99_s", 1.0, "p99 end-to-end latency (s)"),
              ("qps_per_chip", 1.0, "QPS per chip at the p99 TTFT target"),
              ("chips_per_retrieval_system", 1.0, "chips one retrieval system feeds"))
    colors = {s: f"C{i}" for i, s in enumerate(dict.fromkeys(df.system))}
    for (s, schema), sub in df.groupby(["system", "schema"], sort=False):
        ls = "-" if schema == "one-shot" else "--"
        sat = sub[sub.status == "saturated"]
        for ax, (col, mult, _) in zip(axes, panels):
            ax.plot(sub.request_rate_rps, sub[col] * mult, ls, color=colors[s], marker="o",
                    ms=3, label=f"{s}, {schema}")
            if len(sat):      # saturated: an x on the rate axis, no latency
                ax.plot(sat.request_rate_rps, [0] * len(sat), "x", color=colors[s],
                        transform=ax.get_xaxis_transform(), clip_on=False)
    for ax, (_, _, label) in zip(axes, panels):
        ax.set_xscale("log")
        ax.set_xlabel("request rate (requests/s)")
        ax.set_ylabel(label)
    axes[5].set_yscale("log")
    axes[0].legend(frameon=False, fontsize=7)
    r = df.iloc[0]
    fig.suptitle(f"RAG with simulated retrieval ({r.dataset}; {r.model} on {r.accelerator}; "
                 "solid: one retrieval, dashed: iterative; x on the axis: retrieval "
                 "saturated)", fontsize=9)
    fig.tight_layout()
    save_figure(fig, folder, "rag_ttft")
    plt.close(fig)


def summary_md(folder) -> str:
    df = pd.read_csv(Path(folder) / "rag_ttft.csv")
    r = df.iloc[0]
    lines = ["## RAG pipeline: TTFT and QPS per chip with simulated retrieval", "",
             f"{r.model} on {r.accelerator} ({r.chips_per_replica} chip(s) per replica), "
             f"{r.prompt_tokens} prompt tokens, {r.output_tokens} generated; retrieval "
             f"simulated on {r.dataset}; p99 TTFT target {r.ttft_target_s * 1e3:.0f} ms.", "",
             "| schema | system | request rate (/s) | retrieval load | p50 / p99 TTFT (ms) | "
             "LLM-only p99 TTFT (ms) | retrieval share of TTFT | p99 end-to-end (s) | "
             "QPS per chip | chips fed by one retrieval system |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for _, x in df.iterrows():
        if x.status != "ok":
            lines.append(f"| {x.schema} | {x.system} | {x.request_rate_rps:,.0f} | "
                         f"{x.retrieval_load_fraction:.2f} | saturated | "
                         f"{x.llm_only_ttft_p99_s * 1e3:.1f} | - | - | - | - |")
            continue
        lines.append(f"| {x.schema} | {x.system} | {x.request_rate_rps:,.0f} | "
                     f"{x.retrieval_load_fraction:.2f} | {x.ttft_p50_s * 1e3:.2f} / "
                     f"{x.ttft_p99_s * 1e3:.2f} | {x.llm_only_ttft_p99_s * 1e3:.2f} | "
                     f"{100 * x.retrieval_share_of_ttft:.3f} % | {x.e2e_p99_s:.3f} | "
                     f"{x.qps_per_chip:.2f} | {x.chips_per_retrieval_system:,.0f} |")
    ok = df[df.status == "ok"]
    if len(ok):
        rest = (ok.ttft_p50_s - ok.retrieval_mean_s).median()
        lines += ["", f"Retrieval would be half of TTFT at about {rest * 1e3:.0f} ms per "
                  f"retrieval (the rest of TTFT: encoding, prefill queueing and prefill); the "
                  f"simulated retrievals take {ok.retrieval_mean_s.min() * 1e6:.0f} to "
                  f"{ok.retrieval_mean_s.max() * 1e6:.0f} us. What the retrieval system "
                  "changes here is the request rate at which retrieval saturates, i.e. how "
                  "many accelerator chips one retrieval system can feed."]
    lines += ["", "Model (experiments/rag.py): encoding (BERT-base FLOPs) + retrieval (latencies "
              "drawn from the open-loop simulation at the offered retrieval rate) + a FIFO "
              "prefill queue per replica (Poisson arrivals, 2 x params x tokens over 50 % of "
              "the dense BF16 peak) = TTFT; decode bandwidth-bound (weights + KV cache over "
              "80 % of HBM bandwidth, batch 32); iterative: a retrieval and a passage prefill "
              "stall the decode every 64 tokens. Utilizations, batch and target are estimates "
              "stated in pipeline.json."]
    lines += ["", "The RAG literature, for comparison (its retrieval runs on CPUs over "
              "billion-scale or compressed indexes, milliseconds per query; ours is the "
              "simulated in-memory search of this run's dataset):", ""]
    lines += [f"- {src}: {what}." for src, what in LITERATURE]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    from experiments.runner import script_main

    raise SystemExit(script_main(NAME))
