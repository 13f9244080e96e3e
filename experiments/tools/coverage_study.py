"""Coverage of the QPS intervals the simulator reports, over hundreds of replicates.

Every steady-state ``qps`` carries a 95 % batch-means interval (cosmos.metrics.batch_means_ci).
In a closed loop the summary may correct it by a control variate (the requests of a batch's
queries on its busiest memory instance, ``ci_controls``), and uses the corrected interval when
the fitted slope is positive and the corrected interval is the narrower: a choice made after
seeing the data, which could cost coverage. This study measures the coverage of three
intervals of the same runs:

- ``plain``: batch means of the time per query, without the control (the interval of
  ``batch_means_ci`` called without ``load``; its point estimate is the window's whole-turnover
  rate, ``qps_window``'s whole-turnover counterpart);
- ``controlled``: the control-variate interval computed for every run, whatever the slope and
  width (the same batches and regression as ``batch_means_ci``, done here for every run:
  :func:`controlled_interval`);
- ``reported``: what the summary reports (``qps_ci_low`` / ``qps_ci_high``): ``controlled``
  where the rule picked it (``qps_ci_control`` non-empty), ``plain`` otherwise.

**Replicates.** One workload (the tiny scale's SIFT-like set, 3,000 vectors, with ``--queries``
queries instead of the scale's 100, built with ``--seed``), and for replicate ``i`` its
queries in the random order ``numpy.random.default_rng(ORDER_SEED + i).permutation``
(experiments.tools.check_ci_coverage.permuted_trace). Each replicate simulates every query of
its order; its intervals are those of the same run stopped after ``--stop`` completions, as
``simulate(ci_target=...)`` computes a stopped run's (the completions up to then, the control's
mean over the whole trace).

**The truth.** Every order holds the same queries, so every replicate estimates one quantity:
the system's steady-state throughput on this trace's queries. Its estimate is the mean over the
replicates of the every-query window rate (each run's own ``qps_window`` over all its queries,
about twice the completions of a stopped run); its standard error is reported beside it and is
small against the intervals' half-widths. The controlled interval is, by construction, for that
quantity (its control's mean is the trace's). The plain interval is for the distribution the
queries are drawn from, whose throughput differs from the trace's by the trace's own sampling
error, about sqrt(stop / queries) times the stopped runs' error or less, which only makes the
plain interval a little conservative here. Workload seeds are not varied: the batch-means
intervals are conditional on one workload by design; the variation across workloads is what
``--replications`` measures (experiments.harness.replications).

Outputs into ``--out`` (a new or empty folder): ``coverage_replicates.csv`` (one row per
replicate: the every-query rate and the three intervals of the stopped run),
``coverage.csv`` (one row per interval: intervals claimed, covering, the fraction with its 95 %
Clopper-Pearson interval, mean relative half-width, spread of the point estimates), and
``coverage_study.png``; the table is printed. ``--figure PATH`` also writes the PNG there (the
copy in docs/figures/)::

    python experiments/tools/coverage_study.py --workers 2     # 200 orders, Cosmos, tiny scale

Exit status 0 if every interval kind's Clopper-Pearson interval reaches 0.95 (coverage not
shown to be below 95 %), else 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np
import pandas as pd

from cosmos.config import TCK_PS
from cosmos.metrics import (_busiest_load, _busiest_load_mean, batch_means_ci, per_query,
                            query_instance_requests, steady_window, summary, t_quantile_975,
                            whole_turnovers)
from cosmos.presets import get_preset
from cosmos.simulate import simulate
from experiments.harness.common import pyplot, results_dir, write_csv
from experiments.harness.replications import clopper_pearson
from experiments.tools.check_ci_coverage import permuted_trace

#: the three intervals of each replicate, in the order of the table
KINDS = ("plain", "controlled", "reported")
#: fraction of first and last completions every summary leaves out (cosmos.metrics default)
WARMUP = 0.1
#: the confidence level the intervals claim
LEVEL = 0.95


def controlled_interval(done: np.ndarray, rows: np.ndarray, load_trace: np.ndarray, lo: int,
                        hi: int, turnover: int, batches: int) -> dict:
    """The closed loop's control-variate QPS interval of a window, computed whatever the
    slope's sign and the interval's width (``batch_means_ci`` uses it only when the slope is
    positive and it is the narrower).

    ``done``: completion cycles of the window's queries, ``rows`` their trace indices (the
    same order), ``load_trace`` the (Q, I) requests per query and memory instance
    (``query_instance_requests``), ``(lo, hi]`` the window, ``turnover`` the queries in flight,
    ``batches`` the batch count the batch-size rule chose (``ci_batches`` of the plain call).
    The batches, regression and half-width are those of ``batch_means_ci`` (whole turnovers;
    Lavenberg and Welch's one-control interval with ``batches - 2`` degrees of freedom).
    Returns ``qps``, ``low``, ``high``, ``slope`` (cycles per query per request) and ``corr``;
    NaN where the batches' control does not vary."""
    order = np.argsort(done, kind="stable")
    d = np.asarray(done, dtype=np.int64)[order]
    load = np.asarray(load_trace)[np.asarray(rows)[order]]
    n, u, k = len(d), max(1, int(turnover)), int(batches)
    n_t = whole_turnovers(n, u)
    edges = u * ((np.arange(k + 1) * (n_t // u)) // k)
    ends = d[edges[1:] - 1].astype(np.float64)
    starts = np.concatenate([[float(lo)], ends[:-1]])
    gap = (ends - starts) / np.diff(edges)
    g = (hi - lo) / n if n_t == n else (int(d[n_t - 1]) - lo) / n_t
    x = _busiest_load(load[:n_t], edges)
    xc, gc = x - x.mean(), gap - gap.mean()
    sxx, gg = float(xc @ xc), float(gc @ gc)
    nan = float("nan")
    if sxx <= 0 or k < 3:
        return {"qps": nan, "low": nan, "high": nan, "slope": nan, "corr": nan}
    b = float(xc @ gc) / sxx
    resid = gc - b * xc
    dx = float(x.mean()) - _busiest_load_mean(np.asarray(load_trace), np.diff(edges))
    h = t_quantile_975(k - 2) * np.sqrt(float(resid @ resid) / (k - 2) * (1.0 / k + dx * dx / sxx))
    g = g - b * dx
    sec = TCK_PS * 1e-12
    return {"qps": 1.0 / (g * sec), "low": 1.0 / ((g + h) * sec),
            "high": 1.0 / ((g - h) * sec) if g > h else float("inf"), "slope": b,
            "corr": float(xc @ gc / np.sqrt(sxx * gg)) if gg > 0 else 0.0}


def stopped_intervals(res, stop: int, warmup: float = WARMUP) -> dict:
    """The three QPS intervals of ``res`` as a run stopped after ``stop`` completions computes
    them (its window: the completions up to then, ``warmup`` left out at both ends)."""
    q_done = res.state.q_done[:res.queries]
    until = int(np.sort(q_done)[stop - 1])
    res.ci_until_cycle = until
    rep = summary(res, warmup)
    lo, hi, mask = steady_window(q_done, warmup, until)
    lat = per_query(res)["latency_ns"].to_numpy()[mask]
    in_flight = min(int(res.max_inflight), int(res.queries))
    plain = batch_means_ci(q_done[mask], lat, lo, hi, min_batch_queries=in_flight,
                           turnover=in_flight)
    n = int(mask.sum())
    n_t = whole_turnovers(n, in_flight)
    t_end = int(np.sort(q_done[mask], kind="stable")[n_t - 1])
    plain_qps = n_t / ((t_end - lo) * TCK_PS * 1e-12)
    nan = float("nan")
    ctrl = {"qps": nan, "low": nan, "high": nan, "slope": nan, "corr": nan}
    if np.isfinite(plain["qps_ci_low"]):
        ctrl = controlled_interval(q_done[mask], np.flatnonzero(mask),
                                   query_instance_requests(res.program, res.num_instances),
                                   lo, hi, in_flight, plain["ci_batches"])
    return {"window_queries": n, "ci_batches": int(plain["ci_batches"]),
            "plain_qps": plain_qps, "plain_low": plain["qps_ci_low"],
            "plain_high": plain["qps_ci_high"],
            "controlled_qps": ctrl["qps"], "controlled_low": ctrl["low"],
            "controlled_high": ctrl["high"], "control_slope": ctrl["slope"],
            "control_corr": ctrl["corr"],
            "reported_qps": rep["qps"], "reported_low": rep["qps_ci_low"],
            "reported_high": rep["qps_ci_high"],
            "reported_control": bool(rep["qps_ci_control"]),
            "stopped_qps_window": rep["qps_window"]}


def replicate(trace_path: str, system: str, order_seed: int, stop: int) -> dict:
    """One replicate: the trace's queries in the order of ``order_seed``, simulated over every
    query; the every-query rate and the three intervals of the run stopped after ``stop``."""
    with np.load(trace_path, allow_pickle=False) as z:
        trace = {k: z[k] for k in z.files}
    perm = np.random.default_rng(order_seed).permutation(len(trace["query_ptr"]) - 1)
    res = simulate(get_preset(system), permuted_trace(trace, perm), progress=False)
    full = summary(res, WARMUP)
    return {"order_seed": order_seed, "full_qps_window": full["qps_window"],
            **stopped_intervals(res, stop)}


def coverage_table(rows: pd.DataFrame, truth: float) -> pd.DataFrame:
    """Per interval kind: how many replicates claimed an interval, how many cover ``truth``,
    that fraction with its 95 % Clopper-Pearson interval, the mean relative half-width and
    the spread (sample standard deviation) of the point estimates around ``truth``."""
    out = []
    for kind in KINDS:
        low, high = rows[f"{kind}_low"].to_numpy(float), rows[f"{kind}_high"].to_numpy(float)
        est = rows[f"{kind}_qps"].to_numpy(float)
        claimed = np.isfinite(low) & ~np.isnan(high)
        covered = int(np.sum(claimed & (low <= truth) & (truth <= high)))
        n = int(claimed.sum())
        cp = clopper_pearson(covered, n) if n else (float("nan"), float("nan"))
        half = (high[claimed] - low[claimed]) / 2 / est[claimed]
        out.append({"interval": kind, "replicates": len(rows), "intervals": n,
                    "covered": covered, "coverage": covered / n if n else float("nan"),
                    "coverage_ci_low": cp[0], "coverage_ci_high": cp[1],
                    "mean_rel_halfwidth": float(np.mean(half)) if n else float("nan"),
                    "sd_rel_estimate": float(np.std(est[claimed] / truth - 1, ddof=1))
                    if n > 1 else float("nan"),
                    "mean_rel_bias": float(np.mean(est[claimed] / truth - 1))
                    if n else float("nan")})
    return pd.DataFrame(out)


def plot(rows: pd.DataFrame, table: pd.DataFrame, truth: float, title: str, folder: Path,
         stem: str = "coverage_study") -> list[Path]:
    """Left: every replicate's plain and reported interval, relative to the truth, sorted by
    the reported estimate (red: misses). Right: each kind's coverage with its
    Clopper-Pearson interval against the 95 % claimed."""
    plt = pyplot()
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(8.0, 3.2), width_ratios=(2.2, 1))
    order = np.argsort(rows["reported_qps"].to_numpy(float))
    x = np.arange(len(rows))
    for kind, dx, color in (("plain", -0.2, "0.55"), ("reported", 0.2, "C0")):
        lo = rows[f"{kind}_low"].to_numpy(float)[order] / truth - 1
        hi = rows[f"{kind}_high"].to_numpy(float)[order] / truth - 1
        miss = (lo > 0) | (hi < 0)
        ax.vlines(x[~miss] + dx, 100 * lo[~miss], 100 * hi[~miss], color=color, lw=0.6,
                  label=f"{kind} interval")
        ax.vlines(x[miss] + dx, 100 * lo[miss], 100 * hi[miss], color="C3", lw=0.8)
    ax.axhline(0, color="k", lw=0.8)
    ax.set_xlabel("replicate (sorted by the reported estimate); red: misses the truth")
    ax.set_ylabel("QPS interval - truth (%)")
    ax.legend(fontsize=7, loc="upper left", frameon=False)
    ax.set_title(title, fontsize=8)
    y = np.arange(len(table))
    cov = table["coverage"].to_numpy(float)
    err = np.vstack([cov - table["coverage_ci_low"], table["coverage_ci_high"] - cov])
    bx.errorbar(cov, y, xerr=err, fmt="o", color="C0", capsize=3)
    bx.axvline(LEVEL, color="0.4", ls="--", lw=0.8)
    bx.set_yticks(y, [f"{r.interval}\n{r.covered}/{r.intervals}" for r in table.itertuples()],
                  fontsize=7)
    bx.set_xlim(min(0.8, float(np.nanmin(table["coverage_ci_low"])) - 0.02), 1.01)
    bx.set_xlabel("coverage (95 % Clopper-Pearson)", fontsize=8)
    bx.invert_yaxis()
    fig.tight_layout()
    paths = [Path(folder) / f"{stem}.png"]
    fig.savefig(paths[0], format="png", dpi=100)
    plt.close(fig)
    return paths


def main(argv=None) -> int:
    from cosmos_common.cacheio import default_cache_dir
    from experiments.harness.runner import Context
    from experiments.harness.workloads import get_scale, trace_path, with_scale, workload

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--system", default="cosmos", help="preset (default: cosmos)")
    p.add_argument("--replicates", type=int, default=200, help="random orders (default 200)")
    p.add_argument("--queries", type=int, default=2_000,
                   help="queries of the tiny-scale workload (default 2,000)")
    p.add_argument("--stop", type=int, default=1_000,
                   help="completions of the stopped runs whose intervals are checked "
                        "(default 1,000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the workload (default 0)")
    p.add_argument("--order-seed", type=int, default=0,
                   help="replicate i orders the queries with seed ORDER_SEED + i (default 0)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="results folder, new or empty (default: results/coverage_study-<time>)")
    p.add_argument("--figure", default=None, metavar="PATH",
                   help="also write the PNG here (e.g. docs/figures/coverage_study.png)")
    p.add_argument("--cache-dir", default=None, help="workload cache (default: $COSMOS_CACHE "
                   "or ~/.cache/cosmos)")
    p.add_argument("--workers", type=int, default=None, help="local worker processes")
    p.add_argument("--no-progress", action="store_true")
    a = p.parse_args(argv)
    if a.replicates < 2:
        p.error(f"--replicates must be at least 2, got {a.replicates}")
    if not 0 < a.stop < a.queries:
        p.error(f"--stop must be in (0, --queries = {a.queries}), got {a.stop}")
    if a.seed < 0 or a.order_seed < 0:
        p.error("--seed and --order-seed must be >= 0")
    try:
        get_preset(a.system)
    except (KeyError, ValueError) as exc:
        p.error(f"--system: {exc}")
    try:
        out, _ = results_dir(a.out, "results", "coverage_study", "coverage_study")
    except (OSError, ValueError) as exc:
        p.error(f"--out: {exc}")
    cache = Path(a.cache_dir) if a.cache_dir else default_cache_dir()
    scale = with_scale(get_scale("tiny"), name="tiny-coverage", num_queries=a.queries)
    tr = workload("sift", scale, cache_dir=cache, seed=a.seed, progress=not a.no_progress)
    path = trace_path(tr, out, f"sift-n{scale.n}-q{a.queries}-seed{a.seed}")
    ctx = Context(out=out, scale=scale, cache_dir=cache, workers=a.workers,
                  progress=not a.no_progress, seed=a.seed)
    tasks = [{"trace_path": str(path), "system": a.system, "order_seed": a.order_seed + i,
              "stop": a.stop} for i in range(a.replicates)]
    rows = pd.DataFrame(ctx.sweep(replicate, tasks, desc="orders"))
    full = rows["full_qps_window"].to_numpy(float)
    truth, truth_se = float(full.mean()), float(full.std(ddof=1) / np.sqrt(len(full)))
    table = coverage_table(rows, truth)
    table.insert(0, "system", a.system)
    table["truth_qps"], table["truth_rel_se"] = truth, truth_se / truth
    write_csv(out / "coverage_replicates.csv", rows)
    write_csv(out / "coverage.csv", table)
    used = int(rows["reported_control"].sum())
    title = (f"{a.system}, {a.replicates} orders of {a.queries:,} tiny SIFT-like queries, "
             f"stopped at {a.stop:,}; control used in {used}")
    plot(rows, table, truth, title, out)
    if a.figure:
        import shutil

        shutil.copyfile(out / "coverage_study.png", a.figure)
    print(f"{title}.")
    print(f"truth: mean every-query window rate {truth:,.0f} QPS, standard error "
          f"{truth_se / truth:.3%}")
    print(f"{'interval':<11} {'covered':>13} {'coverage':>9} {'95 % CP':>13} "
          f"{'half-width':>11} {'sd of est.':>11} {'bias':>8}")
    for r in table.itertuples():
        print(f"{r.interval:<11} {r.covered:>6} of {r.intervals:<4} {r.coverage:>9.3f} "
              f"{r.coverage_ci_low:>6.3f}-{r.coverage_ci_high:<6.3f} "
              f"{r.mean_rel_halfwidth:>10.2%} {r.sd_rel_estimate:>11.2%} "
              f"{r.mean_rel_bias:>+8.2%}")
    print(f"results in {out}/")
    return 0 if (table["coverage_ci_high"] >= LEVEL).all() else 1


if __name__ == "__main__":
    sys.exit(main())
