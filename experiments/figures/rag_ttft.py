"""Beyond the paper: a RAG service's TTFT and QPS per chip with simulated retrieval.

The question of the paper's introduction: what does the retrieval system change for a
retrieval-augmented generation service? Each retrieval system (Base, CXL-ANNS, Cosmos) is
simulated open loop on the first workload at a few offered retrieval rates, fractions of
Cosmos's closed-loop throughput, so the same rates are offered to every system; a rate at or
above a system's own throughput is reported as saturated, not simulated. The simulated
per-query latencies then feed the pipeline model of :mod:`rag` (query encoding,
retrieval, a FIFO prefill queue per replica, decode, iterative retrieval stalls), once with
one retrieval per request and once with a retrieval every 64 generated tokens (so a request
rate of a quarter of the retrieval rate: 256 tokens make 4 retrievals).

Outputs: ``rag_ttft.csv`` (one row per system x schema x request rate), ``rag_ttft.png``
(TTFT p99, end-to-end p99, retrieval share of TTFT and QPS per chip against request rate),
``rag_share.csv`` / ``rag_share.png`` (retrieval share of TTFT against database size for IVF-PQ
on CPUs and each graph system, in Shen et al. 2024's pipeline, with the literature's points;
:mod:`rag.literature`), ``rag_literature.json`` and a summary with the RAG
literature's figures beside ours.

Every :class:`rag.PipelineConfig` field, the retrieval systems and a saved
simulation's profile are set with ``--set rag.FIELD=VALUE`` (:func:`rag.
parse_settings`); they reach :func:`run` through :func:`rag.current_settings`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np
import pandas as pd

from experiments.harness.common import pyplot, save_figure, write_csv, write_json
from experiments.harness.sim import retrieval_task, simulate_task
from rag import (RetrievalProfile, current_settings, get_accelerator, get_model, llm_only_ttft_s,
                 prefill_replicas, qps_per_chip, retrieval_profile, retrievals_per_request,
                 saved_profile, simulate_pipeline, tensor_parallel)

NAME = "rag_ttft"
TITLE = "RAG pipeline: TTFT and QPS per chip with simulated retrieval"
SYSTEMS = ("base", "cxl-anns", "cosmos")
#: retrieval schemas: None = one retrieval before prefill; N = one more every N tokens
#: (``--set rag.retrieval_every_tokens=N`` makes the iterative schema's N, ``none`` leaves
#: one-shot alone)
SCHEMAS = {"one-shot": None, "iterative": 64}
#: the system whose closed-loop throughput sets the offered rates, when it is simulated
#: (else the fastest of those simulated)
RATE_REFERENCE = "cosmos"
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


def systems() -> tuple:
    """The retrieval systems simulated: ``--set rag.systems=...`` or :data:`SYSTEMS`."""
    return current_settings().systems or SYSTEMS


def schemas() -> dict:
    """The retrieval schemas: :data:`SCHEMAS`, the iterative one at
    ``--set rag.retrieval_every_tokens`` when given (``none``: one-shot only)."""
    pipe = current_settings().pipeline
    if "retrieval_every_tokens" not in pipe:
        return dict(SCHEMAS)
    every = pipe["retrieval_every_tokens"]
    return {"one-shot": None} if every is None else {"one-shot": None, "iterative": every}


def simulation_tasks(ctx) -> list:
    """The closed-loop capacity runs: the load sweep's saturation points
    (experiments.figures.latency_load.simulation_tasks); the open-loop retrieval runs depend
    on them.
    The ``rag.`` settings other than ``rag.systems`` change no simulation: only the pipeline
    arithmetic done on their results."""
    from experiments.figures.latency_load import simulation_tasks as saturation_tasks

    return saturation_tasks(ctx, systems())


def _open_loop(ctx, closed: list[dict]):
    """(capacities, rates, [(system, rate)], tasks) of the open-loop retrieval runs from the
    rows of :func:`simulation_tasks`: each rate below a system's own capacity; up to
    experiments.figures.latency_load.STOP_UP_TO_LOAD of it, a run stops once its mean latency meets
    the scale's ``ci_target``, as the load sweep's points do."""
    from experiments.figures.latency_load import STOP_UP_TO_LOAD

    path = ctx.trace_file(ctx.families[0])
    cap = {r["system"]: r["qps"] for r in closed}
    ref = rate_reference(cap)
    rates = [f * cap[ref] for f in RETRIEVAL_FRACTIONS]
    todo = [(s, q) for s in systems() for q in rates if q < cap[s]]
    tasks = [dict(system=s, trace_path=str(path), num_queries=ctx.scale.sweep_queries,
                  mode="open", rate_qps=q, seed=ctx.seed, tags={"system": s},
                  ci_target=ctx.scale.ci_target if q <= STOP_UP_TO_LOAD * cap[s] else None)
             for s, q in todo]
    return cap, rates, todo, tasks


def rate_reference(cap: dict) -> str:
    """:data:`RATE_REFERENCE` if simulated, else the system of the highest throughput."""
    return RATE_REFERENCE if RATE_REFERENCE in cap else max(cap, key=cap.get)


def _profile_at(saved: RetrievalProfile, q: float) -> RetrievalProfile:
    """A saved simulation's profile offered ``q`` retrievals/s: its latencies as they are,
    saturated at or above its throughput."""
    if q >= saved.capacity_qps:
        return RetrievalProfile(saved.system, q, saved.capacity_qps, np.zeros(0), True,
                                f"offered {q:,.0f} retrievals/s >= the saved run's "
                                f"throughput {saved.capacity_qps:,.0f}/s")
    return dataclasses.replace(saved, offered_qps=q)


def dependent_tasks(ctx, closed: list[dict]) -> list:
    """``(fn, task)`` of the retrieval runs that wait for :func:`simulation_tasks`'s rows
    (experiments.harness.plan.run_shared starts them as soon as those are in)."""
    return [(retrieval_task, t) for t in _open_loop(ctx, closed)[3]]


def dependent_plan(ctx) -> tuple[int, str]:
    """The plan's line for :func:`dependent_tasks` (experiments.harness.plan): at most this
    many runs (those below each system's own saturation run), and what they are."""
    return (len(systems()) * len(RETRIEVAL_FRACTIONS),
            "open-loop retrieval runs at fractions of Cosmos's saturation QPS (those below "
            "each system's own saturation)")


def run(ctx) -> dict:
    settings = current_settings()
    cfg = settings.config()
    fam = ctx.families[0]
    closed = ctx.sweep(simulate_task, simulation_tasks(ctx), desc="retrieval saturation")
    cap, rates, todo, tasks = _open_loop(ctx, closed)
    ref = rate_reference(cap)
    rows = ctx.sweep(retrieval_task, tasks, desc="retrieval open loop")
    sims = dict(zip(todo, rows))
    saved = saved_profile(settings.profile) if settings.profile else None
    names = list(systems()) + ([saved.system] if saved else [])
    out = []
    for schema, every in schemas().items():
        c = dataclasses.replace(cfg, retrieval_every_tokens=every)
        k = retrievals_per_request(c)
        for s in names:
            for f, q in zip(RETRIEVAL_FRACTIONS, rates):
                if saved is not None and s == saved.system:
                    prof, s_cap = _profile_at(saved, q), saved.capacity_qps
                else:
                    prof, s_cap = retrieval_profile(s, q, cap[s], sims.get((s, q))), cap[s]
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
                    "retrieval_offered_qps": q, "retrieval_capacity_qps": s_cap,
                    "retrieval_load_fraction": q / s_cap,
                    "rate_reference_system": ref,
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
                    "chips_per_retrieval_system": s_cap / (k * qpc["qps_per_chip"]),
                    "ttft_target_s": c.ttft_target_s,
                    "model": c.model, "accelerator": c.accelerator,
                    "prompt_tokens": c.prompt_tokens, "output_tokens": c.output_tokens,
                })
    df = pd.DataFrame(out)
    write_csv(ctx.out / "rag_ttft.csv", df)
    m, a = get_model(cfg.model), get_accelerator(cfg.accelerator)
    write_json(ctx.out / "pipeline.json", {
        "pipeline": cfg.to_dict(), "schemas": schemas(),
        # the --set rag.* settings of this run (config.json's rerun line holds the common
        # options only: add these to rerun it)
        "settings": list(settings.items),
        "systems": names, "rate_reference_system": ref,
        "retrieval_fractions_of_reference_capacity": list(RETRIEVAL_FRACTIONS),
        "pipeline_requests": PIPELINE_REQUESTS, "model": dataclasses.asdict(m),
        "accelerator": dataclasses.asdict(a)})
    _write_share(ctx, df)
    head = {}
    one = df[df.schema == "one-shot"]
    for s in names:
        ok = one[(one.system == s) & (one.status == "ok")]
        head[f"{s}_max_unsaturated_rps"] = round(ok.request_rate_rps.max()) if len(ok) else 0
    low = one[one.cosmos_capacity_fraction == min(RETRIEVAL_FRACTIONS)].set_index("system")
    for s in names:
        head[f"{s}_retrieval_share_of_ttft_pct"] = round(
            100 * float(low.retrieval_share_of_ttft[s]), 4)
        chips = float(low.chips_per_retrieval_system[s])
        head[f"{s}_chips_per_retrieval_system"] = round(chips) if math.isfinite(chips) else chips
    return head


#: database sizes of ``rag_share.csv`` (vectors): 10^6 to 10^10, half decades
SHARE_SIZES = tuple(10 ** (6 + 0.5 * i) for i in range(9))


def _write_share(ctx, df: pd.DataFrame) -> None:
    """``rag_share.csv``: retrieval share of TTFT against database size for IVF-PQ on CPUs
    (Shen et al.'s pipeline) and each simulated graph system (its mean latency at the lowest
    offered rate, scaled to each size; rag.literature), with the rest of TTFT
    Shen et al.'s LLM-only TTFT; and ``rag_literature.json``: the figures used, where each
    comes from, what is missing, and the reproduced vanilla share."""
    from rag.literature import (SHEN2024, SHEN2024_MISSING, SHARE_TOLERANCE,
                                            share_against_size, shen2024_reproduction)

    one = df[(df.schema == "one-shot") & (df.status == "ok")]
    low = one[one.cosmos_capacity_fraction == one.cosmos_capacity_fraction.min()]
    lat = {s: float(r) for s, r in zip(low.system, low.retrieval_mean_s)
           if not s.startswith("saved:")}
    plan = ctx.config().get("dataset_plan")
    n_run = float(plan["base_vectors_used"] if plan else ctx.scale.n)
    rows = share_against_size(SHARE_SIZES, lat, n_run)
    for r in rows:
        r["dataset"] = df.dataset.iloc[0]
        r["simulated_at_vectors"] = n_run
    write_csv(ctx.out / "rag_share.csv", pd.DataFrame(rows))
    write_json(ctx.out / "rag_literature.json", {
        "shen2024": {k: dataclasses.asdict(v) for k, v in SHEN2024.items()},
        "missing": list(SHEN2024_MISSING),
        "reproduction": shen2024_reproduction(),
        "tolerance": SHARE_TOLERANCE})


def _plot_share(folder) -> None:
    from rag.literature import SHEN2024

    path = Path(folder) / "rag_share.csv"
    if not path.exists():
        return
    plt = pyplot()
    df = pd.read_csv(path)
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for i, (fam, sub) in enumerate(df.groupby("family", sort=False)):
        ax.plot(sub.database_vectors, 100 * sub.retrieval_share_of_ttft, "-o", ms=3,
                color=f"C{i}", label=fam)
    n0 = SHEN2024["datastore_chunks"].value
    for key, mk, what in (("retrieval_share_of_ttft", "*", "Shen et al. (45-47 %)"),
                          ("vanilla_share_cited", "^", "36 %, vanilla (cited by Cosmos)"),
                          ("frequent_share_cited", "v", "97 %, frequent re-retrieval (cited)")):
        ax.plot([n0], [100 * SHEN2024[key].value], mk, color="k", ms=9, mfc="none",
                label=what)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("database size (vectors)")
    ax.set_ylabel("retrieval share of TTFT (%)")
    ax.legend(frameon=False, fontsize=7)
    ax.set_title("Retrieval share of TTFT, same pipeline (rest of TTFT 495 ms); literature "
                 "points at the estimated 10^8", fontsize=8)
    fig.tight_layout()
    save_figure(fig, folder, "rag_share")
    plt.close(fig)


def plot(folder) -> None:
    _plot_share(folder)
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


def _share_md(folder) -> list[str]:
    """The Shen et al. reproduction and the share against database size (rag_share.csv)."""
    lit_path = Path(folder) / "rag_literature.json"
    if not lit_path.exists():
        return []
    lit = json.loads(lit_path.read_text())
    rep = lit["reproduction"]
    out = ["", "### Retrieval share of TTFT: the literature first", "",
           f"Shen et al. 2024's pipeline (IVF-PQ searched by CPUs) through our arithmetic, "
           f"with their measured stages (LLM-only TTFT 495 ms, RAG TTFT 965 ms; everything "
           f"RAG adds counted as retrieval): retrieval {rep['retrieval_s'] * 1e3:.0f} ms, "
           f"**{100 * rep['share']:.1f} % of TTFT** against their 45-47 % "
           f"({100 * rep['difference']:+.1f} points; tolerance "
           f"{100 * lit['tolerance']:.0f}) and the 36 % the Cosmos paper cites "
           f"({100 * rep['difference_cited']:+.1f} points). Cause: the 470 ms RAG adds holds "
           f"encoding and the passages' prefill beside retrieval; 36 % means "
           f"{rep['retrieval_s_at_cited_share'] * 1e3:.0f} ms of retrieval and "
           f"{rep['other_added_s_at_cited_share'] * 1e3:.0f} ms of the rest, a split the "
           "sources found do not give. The 97 % with frequent re-retrieval is not a TTFT "
           "share in our model (re-retrievals come after the first token); how it was "
           "measured is not in the sources found. Missing from the sources: "
           + "; ".join(lit["missing"]) + "."]
    share = pd.read_csv(Path(folder) / "rag_share.csv")
    big = share[share.database_vectors == share.database_vectors.max()]
    at = share[np.isclose(share.database_vectors, 1e8)]
    out += ["", "The same pipeline with graph search (`rag_share.csv`, `rag_share.png`; each "
            "system's simulated mean latency at "
            f"{share.simulated_at_vectors.iloc[0]:,.0f} vectors scaled by the measured DRAM "
            "requests per query of scale_n, an estimate):", "",
            "| retrieval | share at 10^8 vectors | share at 10^10 vectors |", "|---|---|---|"]
    for fam in share.family.unique():
        a = at[at.family == fam].retrieval_share_of_ttft
        b = big[big.family == fam].retrieval_share_of_ttft
        out.append(f"| {fam} | {100 * float(a.iloc[0]):.3g} % | {100 * float(b.iloc[0]):.3g} % |")
    return out


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
    pipe_path = Path(folder) / "pipeline.json"
    pj = json.loads(pipe_path.read_text()) if pipe_path.exists() else {}
    c = pj.get("pipeline", {})
    iterative = [v for v in pj.get("schemas", {}).values() if v]
    lines += ["", f"Model (rag/pipeline.py): encoding ({c.get('encoder')} FLOPs) + retrieval "
              "(latencies drawn from the open-loop simulation at the offered retrieval rate) + "
              "a FIFO prefill queue per replica (Poisson arrivals, 2 x params x tokens over "
              f"{100 * c.get('prefill_utilization', float('nan')):.0f} % of the dense BF16 "
              "peak) = TTFT; decode bandwidth-bound (weights + KV cache over "
              f"{100 * c.get('bandwidth_utilization', float('nan')):.0f} % of HBM bandwidth, "
              f"batch {c.get('decode_batch')})"
              + (f"; iterative: a retrieval and a passage prefill stall the decode every "
                 f"{iterative[0]} tokens" if iterative else "")
              + ". Utilizations, batch and target are estimates stated in pipeline.json."
              + (f" Settings of this run: `{' '.join('--set ' + x for x in pj['settings'])}`."
                 if pj.get("settings") else "")]
    lines += _share_md(folder)
    lines += ["", "The RAG literature, for comparison (its retrieval runs on CPUs over "
              "billion-scale or compressed indexes, milliseconds per query; ours is the "
              "simulated in-memory search of this run's dataset):", ""]
    lines += [f"- {src}: {what}." for src, what in LITERATURE]
    return "\n".join(lines) + "\n"


def _main(argv: list[str]) -> int:
    """``python experiments/figures/rag_ttft.py [options] [--set rag.FIELD=VALUE ...]``."""
    from cosmos_common import UserError
    from rag import parse_settings, settings_applied
    from experiments.harness.runner import script_main

    items, rest, it = [], [], iter(argv)
    for a in it:
        if a == "--set":
            items.append(next(it, ""))
        elif a.startswith("--set="):
            items.append(a[len("--set="):])
        else:
            rest.append(a)
    if not items:
        return script_main(NAME)
    try:
        with settings_applied(parse_settings(items)):
            return script_main(NAME, rest)
    except (UserError, ValueError, FileNotFoundError) as exc:
        print(f"{NAME}.py: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
