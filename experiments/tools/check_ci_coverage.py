"""Does the QPS interval of a run stopped early cover the throughput it estimates?

``tests/test_confidence.py`` checks the coverage of the 95 % intervals (cosmos.metrics) on
synthetic closed loops whose throughput is known. This script checks it on the simulator itself.
It takes one SIFT-like workload at the default scale (50,000 vectors, ``--queries`` 4,000 by
default) and, for ``--replicates`` seeds, puts its queries in a random order and simulates the
system (``--system``, Cosmos by default) over all of them. Each run's summary is computed twice:

- over every query (the run's own window), and
- as a run stopped after ``--stop`` completions (2,000) computes it: the completions up to then,
  with the control variate's mean taken over the whole trace, exactly as ``ci_target`` does
  (cosmos.simulate: a stopped run's completions are those of the run that went on); with
  ``--ci-target REL``, stopped instead where ``ci_target`` would stop it: at the first stop
  test (cosmos.simulate's minimum, then every ci_check_every completions) whose interval is
  within REL.

Every order holds the same queries, so every run estimates the same throughput: the reference
is the mean of the every-query window rates over the orders (its standard error is printed).
Printed: how many stopped runs' intervals cover the reference, how many used the control
variate, their mean relative half-width, and the spread of the stopped runs' estimates around
the reference (the plain window rate and the reported QPS)::

    python experiments/tools/check_ci_coverage.py                  # 40 orders, about 6 minutes on 2 cores
    python experiments/tools/check_ci_coverage.py --replicates 10 --system cosmos-noalgo
    python experiments/tools/check_ci_coverage.py --system base --ci-target 0.01   # the stop rule

Exit status 0 if the coverage is at least 90 % of the replicates, else 1. The workload is built
once and cached under ``--cache-dir`` (default ``$COSMOS_CACHE``); the trace the workers read
goes to ``check_ci_coverage`` in that folder.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def _ranges(ptr: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The elements of the CSR rows ``idx`` of ``ptr``, in that order, and each row's length."""
    lens = ptr[idx + 1] - ptr[idx]
    shift = ptr[idx] - np.concatenate([[0], np.cumsum(lens)[:-1]])
    return np.repeat(shift, lens) + np.arange(int(lens.sum())), lens


def permuted_trace(trace: dict, perm: np.ndarray) -> dict:
    """The graph trace ``trace`` (arrays of docs/contracts.md, section 1) with its queries in
    the order ``perm``: the same searches, hops and reads, re-pointed. Its meta loses the
    arrays' checksums (the arrays changed)."""
    t = dict(trace)
    s_idx, s_len = _ranges(trace["query_ptr"], perm)
    h_idx, h_len = _ranges(trace["search_hop_ptr"], s_idx)
    r_idx, r_len = _ranges(trace["hop_read_ptr"], h_idx)
    for key, lens in (("query_ptr", s_len), ("search_hop_ptr", h_len), ("hop_read_ptr", r_len)):
        t[key] = np.concatenate([[0], np.cumsum(lens)]).astype(trace[key].dtype)
    for key in ("search_cluster", "search_entry"):
        t[key] = trace[key][s_idx]
    for key in ("hop_node", "hop_degree", "hop_cand_inserts"):
        t[key] = trace[key][h_idx]
    t["read_node"] = trace["read_node"][r_idx]
    for key in ("result_ids", "query_recall"):
        if key in trace:
            t[key] = trace[key][perm]
    meta = json.loads(str(trace["meta"]))
    meta.pop("checksums", None)
    t["meta"] = json.dumps(meta)
    return t


def _stopped_at(res, completions: int) -> dict:
    """The summary of ``res`` as a run stopped after ``completions`` completions computes it."""
    from cosmos.metrics import summary

    res.ci_until_cycle = int(np.sort(res.state.q_done)[completions - 1])
    return summary(res)


def sequential_stop(res, ci_target: float, warmup: float = 0.1) -> dict:
    """The summary of ``res`` as ``simulate(ci_target=...)`` would have stopped it: at the
    first stop test (cosmos.simulate.ci_min_completions completions, then every
    ci_check_every) that passes, the test being simulate's own on the completions up to
    then; the run's every-query summary if no test passes."""
    from cosmos.metrics import query_instance_requests, summary
    from cosmos.simulate import _ci_reached, ci_check_every, ci_min_completions

    n = int(res.queries)
    done = res.state.q_done
    order = np.sort(done[done >= 0])
    load = query_instance_requests(res.program, res.num_instances) \
        if res.mode == "closed" else None
    c, every = ci_min_completions(res.max_inflight), ci_check_every(res.max_inflight)
    while c < n:
        seen = np.where(done <= order[c - 1], done, -1)     # the completions a test at c sees
        if _ci_reached(seen, res.state.q_arrival, ci_target, warmup, res.max_inflight, load):
            return _stopped_at(res, c)
        c += every
    res.ci_until_cycle = None
    return summary(res)


def replicate(trace_path: str, system: str, seed: int, stop: int,
              ci_target: float | None = None) -> dict:
    """One order of the trace's queries: the every-query and the stopped-run figures (stopped
    after ``stop`` completions, or by the stop rule of ``ci_target`` if given)."""
    from cosmos.metrics import summary
    from cosmos.presets import get_preset
    from cosmos.simulate import simulate

    with np.load(trace_path, allow_pickle=False) as z:
        trace = {k: z[k] for k in z.files}
    perm = np.random.default_rng(seed).permutation(len(trace["query_ptr"]) - 1)
    res = simulate(get_preset(system), permuted_trace(trace, perm), progress=False)
    full = summary(res)
    part = _stopped_at(res, stop) if ci_target is None else sequential_stop(res, ci_target)
    keys = ("qps", "qps_window", "qps_ci_low", "qps_ci_high", "qps_ci_rel_halfwidth",
            "qps_ci_control", "ci_control_corr", "ci_stop_completions", "window_queries")
    return {"seed": seed, "full_qps_window": full["qps_window"], "full_qps": full["qps"],
            **{f"stopped_{k}": part[k] for k in keys}}


def main(argv=None) -> int:
    from cosmos_common.cacheio import default_cache_dir
    from experiments.harness.runner import Context
    from experiments.harness.workloads import get_scale, trace_path, with_scale, workload

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--system", default="cosmos", help="preset (default: cosmos)")
    p.add_argument("--replicates", type=int, default=40, help="random orders (default 40)")
    p.add_argument("--queries", type=int, default=4_000, help="queries of the workload "
                   "(default 4,000)")
    p.add_argument("--stop", type=int, default=2_000, help="completions of the stopped runs "
                   "(default 2,000)")
    p.add_argument("--ci-target", type=float, default=None, metavar="REL",
                   help="instead of --stop, stop each run as ci_target does: at the first "
                        "stop test whose interval is within REL (e.g. 0.01)")
    p.add_argument("--cache-dir", default=None, help="workload cache (default: $COSMOS_CACHE "
                   "or ~/.cache/cosmos)")
    p.add_argument("--workers", type=int, default=None, help="local worker processes")
    p.add_argument("--json", default=None, help="also write the rows and the result here")
    p.add_argument("--no-progress", action="store_true")
    a = p.parse_args(argv)
    if a.replicates < 2:
        p.error(f"--replicates must be at least 2, got {a.replicates}")
    if a.ci_target is None and not 0 < a.stop < a.queries:
        p.error(f"--stop must be in (0, --queries = {a.queries}), got {a.stop}")
    if a.ci_target is not None and not 0 < a.ci_target < 1:
        p.error(f"--ci-target must be in (0, 1), got {a.ci_target}")
    if a.json and Path(a.json).exists():
        p.error(f"--json {a.json}: exists; give a new file (nothing is written over)")
    from cosmos.presets import get_preset
    try:
        get_preset(a.system)
    except (KeyError, ValueError) as exc:
        p.error(f"--system: {exc}")
    cache = Path(a.cache_dir) if a.cache_dir else default_cache_dir()
    scale = with_scale(get_scale("default"), name="default-coverage", num_queries=a.queries)
    out = cache / "check_ci_coverage"
    out.mkdir(parents=True, exist_ok=True)
    tr = workload("sift", scale, cache_dir=cache, progress=not a.no_progress)
    path = trace_path(tr, out, f"sift-n{scale.n}-q{a.queries}")
    ctx = Context(out=out, scale=scale, cache_dir=cache, workers=a.workers,
                  progress=not a.no_progress)
    tasks = [{"trace_path": str(path), "system": a.system, "seed": s, "stop": a.stop,
              "ci_target": a.ci_target} for s in range(a.replicates)]
    rows = ctx.sweep(replicate, tasks, desc="orders")
    full = np.array([r["full_qps_window"] for r in rows])
    ref, ref_se = float(full.mean()), float(full.std(ddof=1) / np.sqrt(len(full)))
    claimed = [r for r in rows if np.isfinite(r["stopped_qps_ci_low"])]
    cover = sum(r["stopped_qps_ci_low"] <= ref <= r["stopped_qps_ci_high"] for r in claimed)
    used = sum(bool(r["stopped_qps_ci_control"]) for r in rows)
    hw = float(np.mean([r["stopped_qps_ci_rel_halfwidth"] for r in claimed])) if claimed \
        else float("nan")
    sd_plain = float(np.std([r["stopped_qps_window"] / ref - 1 for r in rows], ddof=1))
    sd_qps = float(np.std([r["stopped_qps"] / ref - 1 for r in rows], ddof=1))
    stops = np.array([r["stopped_ci_stop_completions"] or a.queries for r in rows])
    result = {"system": a.system, "replicates": a.replicates, "queries": a.queries,
              "stop": a.stop, "ci_target": a.ci_target,
              "stop_completions_min": int(stops.min()),
              "stop_completions_median": float(np.median(stops)),
              "stop_completions_max": int(stops.max()),
              "reference_qps": ref, "reference_se": ref_se,
              "intervals": len(claimed), "covered": int(cover), "control_used": int(used),
              "mean_rel_halfwidth": hw, "sd_rel_plain": sd_plain, "sd_rel_qps": sd_qps}
    how = f"stopped after {a.stop:,} completions" if a.ci_target is None else \
        (f"stopped at +-{a.ci_target:.1%} after {result['stop_completions_min']:,} to "
         f"{result['stop_completions_max']:,} completions (median "
         f"{result['stop_completions_median']:,.0f})")
    print(f"{a.system}, {a.replicates} orders of {a.queries:,} SIFT-like queries "
          f"({scale.n:,} vectors), {how}:")
    print(f"  reference (mean every-query window rate): {ref:,.0f} QPS, standard error "
          f"{ref_se / ref:.2%}")
    print(f"  95 % intervals covering it: {cover} of {len(claimed)} "
          f"(control variate used in {used})")
    print(f"  mean relative half-width {hw:.2%}; spread of the stopped estimates around it: "
          f"{sd_plain:.2%} (plain window rate), {sd_qps:.2%} (reported QPS)")
    if a.json:
        from experiments.harness.common import atomic_write_text

        atomic_write_text(Path(a.json), json.dumps({"result": result, "rows": rows}, indent=2))
    return 0 if claimed and cover >= 0.9 * len(claimed) else 1


if __name__ == "__main__":
    sys.exit(main())
