"""Joint calibration: is there a region of the unstated parameters that reproduces the paper?

The sensitivity study (:mod:`experiments.figures.sensitivity`) found no single parameter that
brings all four headline figures (Cosmos / Base and Cosmos / CXL-ANNS, SIFT-like and DEEP-like)
within 15 % of the paper's at once. This experiment moves several together: a deterministic
space-filling design (:func:`latin_hypercube`: a Latin hypercube of ``numpy.random`` seeded by
``--seed``) over the :data:`FACTORS`, each within the sensitivity table's documented range
(its low and high levels, whose reasons that table gives), plus the defaults as point 0. At
every point the six systems of Fig. 4a run on both datasets. A point **passes** when all four
figures are within :data:`experiments.figures.parts.sensitivity_regions.TOLERANCE` of the paper's and every
ordering the paper's Fig. 4a shows holds (:data:`experiments.figures.fig4a_qps.CONCLUSIONS`:
Cosmos above each other system, Cosmos w/o placement and CXL-ANNS above Base, Cosmos w/o rank
PUs above CXL-ANNS).

The region is reported as the points that pass and each factor's range among them. If none
passes, the experiment says which two figures pull apart: for every pair of figures, the
closest the design comes to both at once (the smallest, over the points, of the larger of the
two relative misses) and the correlation of the two ratios over the design; the pair whose
joint miss is largest is the one no point reconciles, and the factors most correlated with each
figure (Spearman, over the design) say why.

If a region exists, its point nearest the paper (smallest largest miss of the four) is written
as ``calibrated_set.txt``: a ``--set`` bundle of config fields for ``cosmos simulate`` /
``cosmos replay``, labelled as calibrated to the paper's figures at this scale and seed. It is
never a default: the defaults stay the sourced estimates of cosmos.config.SOURCE.

Outputs (plots and summary read only the CSVs):

- ``design.csv``: one row per design point: each factor's value and its position in [0, 1];
- ``calibration.csv``: one row per point x dataset x system: QPS and the run's figures;
- ``points.csv``: one row per point: the factors, the four figures, their relative misses, the
  orderings that hold, ``figures_within`` and ``passes``;
- ``region.csv``: one row per factor: its documented range and its range among the passing
  points (empty if none passes);
- ``pairs.csv``: one row per pair of figures: joint miss, correlation, points where both are
  within;
- ``calibration.png``: each figure over the design against each factor, the paper's 15 % band
  shaded, passing points marked;
- ``calibrated_set.txt`` (only if a region exists) and ``summary.md``.

Cost: ``--scale tiny`` 8 design points and the defaults, 108 simulations; the default scale
48 points and the defaults, 588 simulations; ``--full`` the same 588 on the 1M-vector traces,
2,000 queries each, about 4.4 CPU hours (docs/performance.md).
"""

from __future__ import annotations

import itertools
import math
import sys
from dataclasses import replace
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np
import pandas as pd

from experiments.figures import sensitivity as S
from experiments.figures.parts import sensitivity_regions as R
from experiments.figures.fig4a_qps import CONCLUSIONS
from experiments.harness.common import atomic_write_text, pyplot, save_figure, write_csv
from experiments.harness.sim import simulate_task, simulation_identity

NAME = "calibration"
TITLE = "Joint calibration of the unstated parameters against the paper's four headline figures"
SYSTEMS = R.SYSTEMS
#: The factors of the design: the levers of every system's speed whose values the paper does
#: not give, one or two per system, each over the sensitivity table's range (low - high).
#: key -> why it is in the design
FACTORS = {
    "switch.upstream_ports": "Base reads every line through the switch's upstream port "
                             "(the widest swing of Cosmos / Base in the sensitivity study)",
    "host.threads": "Base and CXL-ANNS search on the host's cores",
    "host.op_cycles_scale": "the host's per-operation cycle estimates (Base's and CXL-ANNS's "
                            "traversal cost)",
    "gpc.cores": "Cosmos searches on the GPC's contexts (cores x 2 threads)",
    "gpc.clock_GHz": "the GPC's compute speed (Cosmos's traversal and candidate cost)",
    "cxl_anns.accel_outstanding": "CXL-ANNS's vector reads in flight per hop (its device "
                                  "accelerator's memory parallelism)",
}
#: design points besides the defaults, per scale: the tiny scale's fit CI's time (108
#: simulations); at the larger scales about 8 per factor, the usual rule of thumb for a first
#: space-filling design (Loeppky, Sacks and Welch, Technometrics 2009: n = 10 d; 8 d keeps the
#: default scale's run under an hour on 2 cores)
DESIGN_POINTS = {"tiny": 8, "default": 48, "full": 48, "paper": 48}
#: the four headline figures: name -> (ratio column of points.csv, dataset, the paper's value)
FIGURES = {f"{ratio}_{fam}": (ratio, fam, R.PAPER[ratio][fam])
           for ratio in R.PAPER for fam in ("sift", "deep")}
#: the tolerance as the summary writes it
TOL_TEXT = f"{R.TOLERANCE:.0%}"
#: stream of the design's random generator (numpy.random.default_rng([seed, DESIGN_STREAM])),
#: so that the design and the workload (seeded by the same --seed) draw different numbers
DESIGN_STREAM = 50


def _param(key: str) -> S.Parameter:
    (p,) = [p for p in S.PARAMETERS if p.key == key]
    return p


def latin_hypercube(n: int, d: int, seed: int) -> np.ndarray:
    """(n, d) points in [0, 1)^d, one in each of the n equal slices of every axis (a Latin
    hypercube, McKay, Beckman and Conover, Technometrics 1979), at a random place in its slice;
    the slices' pairing across axes is a random permutation per axis. Deterministic for
    ``seed`` (``numpy.random.default_rng([seed, DESIGN_STREAM])``)."""
    if n < 1 or d < 1:
        raise ValueError(f"a design needs n >= 1 points in d >= 1 dimensions, got {n}, {d}")
    rng = np.random.default_rng([int(seed), DESIGN_STREAM])
    u = np.empty((n, d))
    for j in range(d):
        u[:, j] = (rng.permutation(n) + rng.random(n)) / n
    return u


def factor_value(key: str, u: float):
    """The value of factor ``key`` at position ``u`` in [0, 1]: log-uniform between the
    sensitivity table's low and high levels (every range is a ratio of 2.6x or more, and each
    factor acts as a rate or a count, so equal ratios are equal steps); counts rounded."""
    p = _param(key)
    lo, hi = float(p.low), float(p.high)
    v = math.exp(math.log(lo) + u * (math.log(hi) - math.log(lo)))
    return int(round(v)) if isinstance(p.low, int) and isinstance(p.high, int) else round(v, 3)


def _default(key: str, scale):
    (pt,) = [pt for pt in S.points(_param(key), scale) if pt.level == "default"]
    return pt.value


def overrides_at(key: str, value, scale) -> dict:
    """Config overrides of factor ``key`` at ``value`` (sensitivity.points' own rule)."""
    for pt in S.points(replace(_param(key), low=value), scale):
        if pt.value == value:
            return dict(pt.overrides)
    raise AssertionError(f"{key}={value}: no point")   # pragma: no cover


def design(scale, seed: int) -> pd.DataFrame:
    """The design: point 0 the defaults, then :data:`DESIGN_POINTS` Latin-hypercube points;
    one column per factor and ``u_<factor>`` its position in [0, 1] (NaN for the defaults)."""
    keys = list(FACTORS)
    n = DESIGN_POINTS.get(scale.name, DESIGN_POINTS["default"])
    u = latin_hypercube(n, len(keys), seed)
    rows = [{"point": 0, "kind": "defaults",
             **{k: _default(k, scale) for k in keys}, **{f"u_{k}": float("nan") for k in keys}}]
    for i in range(n):
        rows.append({"point": i + 1, "kind": "design",
                     **{k: factor_value(k, u[i, j]) for j, k in enumerate(keys)},
                     **{f"u_{k}": float(u[i, j]) for j, k in enumerate(keys)}})
    return pd.DataFrame(rows)


def point_overrides(row, scale) -> dict:
    ov = {}
    for k in FACTORS:
        ov.update(overrides_at(k, row[k], scale))
    return ov


def trace_file(ctx, family: str, queries: int) -> Path:
    """The trace of ``family`` the simulations replay: the scale's own, or, where the design's
    most queries in flight need more queries than the scale's trace holds for a steady state
    (the tiny scale's 100 queries against Cosmos's 128 in flight at 16 GPC cores), the same
    workload with ``queries`` queries (built once, cached like every workload)."""
    from graphs import save_trace

    from experiments.harness.workloads import with_scale, workload

    if queries <= ctx.scale.num_queries:
        return ctx.trace_file(family)
    folder = ctx.traces_dir or ctx.out / "traces"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{family}-q{queries}.npz"
    if not path.exists():
        tr = workload(family, with_scale(ctx.scale, num_queries=queries),
                      cache_dir=ctx.cache_dir, seed=ctx.seed, progress=ctx.progress,
                      **dict(ctx.dataset or {}))
        tmp = path.with_name(path.stem + ".tmp.npz")
        save_trace(tmp, tr)
        tmp.replace(path)
    return path


def simulation_plan(ctx, des: pd.DataFrame, trace_path=None) -> tuple[list, list, int]:
    """(tasks, wanted, queries) of the design ``des`` on every dataset: the distinct
    simulations, per (point, dataset, system) the index of its task, and the queries the
    trace needs (:func:`trace_file`). ``trace_path(family, queries)``: the trace each
    dataset's runs replay (default :func:`trace_file`, built if need be; the plan passes one
    that builds nothing)."""
    from cosmos.config import with_overrides
    from cosmos.presets import get_preset
    from cosmos.simulate import default_max_inflight

    runs = []                       # (point, overrides, system, queries in flight)
    for row in des.to_dict("records"):
        ov = point_overrides(row, ctx.scale)
        for s in SYSTEMS:
            runs.append((row["point"], ov, s,
                         default_max_inflight(with_overrides(get_preset(s), ov))))
    needed = max(S.queries_for(None, r[3], ctx.scale.sweep_queries) for r in runs)
    tasks, where, wanted = [], {}, []
    for fam in ctx.families:
        path = str(trace_path(fam, needed) if trace_path else trace_file(ctx, fam, needed))
        for point, ov, s, inflight in runs:
            task = dict(system=s, trace_path=path, overrides=ov,
                        num_queries=S.queries_for(None, inflight, ctx.scale.sweep_queries),
                        max_inflight=inflight, seed=ctx.seed, warmup=S.WARMUP,
                        tags={"dataset": fam, "system": s})
            ident = repr(simulation_identity(task))
            if ident not in where:
                where[ident] = len(tasks)
                tasks.append(task)
            wanted.append((point, fam, s, where[ident]))
    return tasks, wanted, needed


def plan_sweep(ctx) -> dict:
    """The estimate ``cosmos reproduce --dry-run`` gives of this experiment's own sweep
    (experiments.harness.plan): the simulations of :func:`simulation_plan`, each of the
    plan's ``REQUESTS_PER_QUERY`` of the scale per query (the design moves hardware, not the
    trace)."""
    from experiments.harness.plan import requests_per_query, sweep_estimate, sweep_requests

    sc = ctx.scale
    des = design(sc, ctx.seed)
    tasks, wanted, needed = simulation_plan(ctx, des, trace_path=lambda fam, q: fam)
    lo, hi = sweep_requests(tasks, max(needed, sc.num_queries),
                            lambda t: requests_per_query(sc, t["tags"]["dataset"]))
    return sweep_estimate(f"{len(tasks)} simulations for {len(wanted)} rows of "
                          f"{len(des)} design points", lo, hi, ctx)


def run(ctx) -> dict:
    """Simulate the six systems at every design point on every dataset; write the CSVs."""
    des = design(ctx.scale, ctx.seed)
    write_csv(ctx.out / "design.csv", des)
    tasks, wanted, _ = simulation_plan(ctx, des)
    rows = ctx.sweep(simulate_task, tasks, desc="calibration")
    keep = ("qps", "qps_ci_low", "qps_ci_high", "steady_state", "num_queries", "max_inflight")
    df = pd.DataFrame([{"point": p, "dataset": fam, "system": s,
                        **{k: rows[i][k] for k in keep}} for p, fam, s, i in wanted])
    write_csv(ctx.out / "calibration.csv", df)
    pts = point_table(des, df)
    write_csv(ctx.out / "points.csv", pts)
    write_csv(ctx.out / "region.csv", region(pts))
    write_csv(ctx.out / "pairs.csv", pairs(pts))
    passing = pts[pts.passes.astype(bool)]
    if len(passing):
        atomic_write_text(ctx.out / "calibrated_set.txt",
                          calibrated_set(passing, ctx.scale, ctx.seed))
    out = {"design_points": int((pts.kind == "design").sum()),
           "points_all_four_within": int(pts.figures_within.eq(4).sum()),
           "points_passing": len(passing)}
    pr = pairs(pts).iloc[0]
    out["hardest_pair"] = f"{pr.figure_a} / {pr.figure_b} (joint miss {pr.joint_miss:.0%})"
    return out


def point_table(des: pd.DataFrame, df: pd.DataFrame) -> pd.DataFrame:
    """Per design point: the factors, the four figures, their relative misses, how many are
    within the tolerance, the paper's orderings that hold and whether the point passes."""
    q = df.pivot_table(index=["point", "dataset"], columns="system", values="qps",
                       aggfunc="first")
    out = des[["point", "kind", *FACTORS]].copy().set_index("point")
    within = pd.Series(0, index=out.index)
    for name, (ratio, fam, paper) in FIGURES.items():
        other = "base" if ratio == "cosmos_vs_base" else "cxl-anns"
        v = (q["cosmos"] / q[other]).xs(fam, level="dataset")
        out[name] = v
        out[f"{name}_miss"] = v / paper - 1
        within += (out[f"{name}_miss"].abs() <= R.TOLERANCE).astype(int)
    out["figures_within"] = within
    held, total = pd.Series(0, index=out.index), 0
    broken = {p: [] for p in out.index}
    for fam in dict.fromkeys(df.dataset):
        qf = q.xs(fam, level="dataset")
        for hi, lo in CONCLUSIONS:
            total += 1
            ok = qf[hi] > qf[lo]
            held += ok.astype(int)
            for p in ok.index[~ok.to_numpy()]:
                broken[p].append(f"{fam}: {hi} > {lo}")
    out["orderings_held"] = held
    out["orderings"] = total
    out["orderings_broken"] = ["; ".join(broken[p]) for p in out.index]
    out["worst_miss"] = out[[f"{n}_miss" for n in FIGURES]].abs().max(axis=1)
    steady = df.groupby("point")["steady_state"].all()
    out["steady_state"] = steady
    out["passes"] = (out.figures_within.eq(len(FIGURES)) & out.orderings_held.eq(total)
                     & out.steady_state.astype(bool))
    return out.reset_index()


def region(pts: pd.DataFrame) -> pd.DataFrame:
    """Per factor: its documented range (the sensitivity table's low and high, with their
    reasons) and its range among the passing points (NaN if none passes)."""
    ok = pts[pts.passes.astype(bool)]
    rows = []
    for k, why in FACTORS.items():
        p = _param(k)
        rows.append({"factor": k, "why_in_design": why, "range_low": p.low, "range_high": p.high,
                     "why_low": p.why_low, "why_high": p.why_high,
                     "passing_points": len(ok),
                     "passing_low": ok[k].min() if len(ok) else float("nan"),
                     "passing_high": ok[k].max() if len(ok) else float("nan")})
    return pd.DataFrame(rows)


def pairs(pts: pd.DataFrame) -> pd.DataFrame:
    """Per pair of figures: the joint miss (the smallest, over the points, of the larger of
    the two absolute relative misses), the points where both are within the tolerance, the
    correlation (Pearson) of the two ratios over the points, and for each figure the factor
    most correlated with it (Spearman: ranks, as the factors were drawn log-uniform), sorted
    by joint miss, largest first."""
    rows = []
    why = {n: _strongest(pts, n) for n in FIGURES}
    for a, b in itertools.combinations(FIGURES, 2):
        ma, mb = pts[f"{a}_miss"].abs(), pts[f"{b}_miss"].abs()
        both = int(((ma <= R.TOLERANCE) & (mb <= R.TOLERANCE)).sum())
        corr = float(np.corrcoef(pts[a], pts[b])[0, 1]) if len(pts) > 2 else float("nan")
        quot = pts[a] / pts[b]
        paper_q = FIGURES[a][2] / FIGURES[b][2]
        qk, qc = _strongest(pts.assign(_q=quot), "_q")
        rows.append({"figure_a": a, "figure_b": b, "joint_miss": float(np.maximum(ma, mb).min()),
                     "both_within": both, "points": len(pts), "correlation": corr,
                     "a_strongest_factor": why[a][0], "a_factor_rank_corr": why[a][1],
                     "b_strongest_factor": why[b][0], "b_factor_rank_corr": why[b][1],
                     "quotient_paper": paper_q, "quotient_min": float(quot.min()),
                     "quotient_max": float(quot.max()),
                     "quotient_meaning": _quotient_meaning(a, b),
                     "quotient_strongest_factor": qk, "quotient_factor_rank_corr": qc})
    return pd.DataFrame(rows).sort_values("joint_miss", ascending=False, kind="stable") \
        .reset_index(drop=True)


def _quotient_meaning(a: str, b: str) -> str:
    """What figure ``a`` over figure ``b`` measures: two ratios of one dataset share Cosmos,
    so their quotient is CXL-ANNS over Base; one ratio on both datasets, how the systems'
    speeds move from one dataset to the other."""
    (ra, fa, _), (rb, fb, _) = FIGURES[a], FIGURES[b]
    if fa == fb and ra != rb:
        num, den = ("CXL-ANNS", "Base") if ra == "cosmos_vs_base" else ("Base", "CXL-ANNS")
        return f"{num} QPS / {den} QPS on {fa} (Cosmos cancels)"
    if ra == rb:
        return f"{ra} on {fa} / on {fb}"
    return f"{a} / {b}"


def _rank_corr(x, y) -> float:
    rx = pd.Series(np.asarray(x, float)).rank().to_numpy()
    ry = pd.Series(np.asarray(y, float)).rank().to_numpy()
    if rx.std() == 0 or ry.std() == 0:
        return 0.0
    return float(np.corrcoef(rx, ry)[0, 1])


def _strongest(pts: pd.DataFrame, figure: str) -> tuple[str, float]:
    """The factor whose values rank-correlate most (in absolute value) with ``figure`` over
    the points, and that correlation."""
    best = max(FACTORS, key=lambda k: abs(_rank_corr(pts[k], pts[figure])))
    return best, _rank_corr(pts[best], pts[figure])


def calibrated_set(passing: pd.DataFrame, scale, seed: int) -> str:
    """The ``--set`` bundle of the passing point nearest the paper (smallest worst miss),
    with a header saying what it is and is not."""
    best = passing.sort_values(["worst_miss", "point"]).iloc[0]
    ov = point_overrides(best, scale)
    head = (f"# CALIBRATED to the Cosmos paper's four headline figures (within "
            f"{R.TOLERANCE:.0%}) and its orderings, at scale {scale.name}, seed {seed}: design "
            f"point {int(best.point)} of experiments/figures/calibration.py (worst miss "
            f"{best.worst_miss:.1%}). Not a default, not a source: a fit. Use it as\n"
            f"#   cosmos simulate SYSTEM TRACE $(grep -v '^#' calibrated_set.txt)\n")
    return head + " ".join(f"--set {k}={v:g}" for k, v in sorted(ov.items())) + "\n"


def plot(folder) -> None:
    """Each figure (rows) over the design against each factor (columns), log x, the paper's
    15 % band shaded, passing points in red, the defaults as a star."""
    plt = pyplot()                      # matplotlib is imported on plotting only (start-up)
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    pts = pd.read_csv(Path(folder) / "points.csv")
    fig, axes = plt.subplots(len(FIGURES), len(FACTORS),
                             figsize=(2.1 * len(FACTORS), 1.9 * len(FIGURES)), squeeze=False,
                             sharey="row")
    ok = pts.passes.astype(bool)
    dflt = pts.kind == "defaults"
    reg = pd.read_csv(Path(folder) / "region.csv").set_index("factor")
    ticks = {k: sorted({float(reg.range_low[k]), float(pts[k][dflt].iloc[0]),
                        float(reg.range_high[k])}) for k in FACTORS}
    for i, (name, (ratio, fam, paper)) in enumerate(FIGURES.items()):
        for j, k in enumerate(FACTORS):
            ax = axes[i][j]
            ax.axhspan(paper * (1 - R.TOLERANCE), paper * (1 + R.TOLERANCE), color="0.88")
            ax.axhline(paper, color="0.4", ls="--", lw=0.8)
            sel = ~dflt & ~ok
            ax.scatter(pts[k][sel], pts[name][sel], s=10, color="C0")
            ax.scatter(pts[k][ok], pts[name][ok], s=14, color="C3", label="passes")
            ax.scatter(pts[k][dflt], pts[name][dflt], s=60, marker="*", color="k",
                       label="defaults")
            ax.set_xscale("log")
            # ticks at the factor's documented range and its default, no minor labels: a log
            # axis over a range under a decade otherwise labels 2x10^0, 3x10^0... on top of
            # each other
            ax.xaxis.set_major_locator(FixedLocator(ticks[k]))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.tick_params(labelsize=6)
            if i == len(FIGURES) - 1:
                ax.set_xlabel(k, fontsize=7)
            if j == 0:
                label = "Cosmos / Base" if ratio == "cosmos_vs_base" else "Cosmos / CXL-ANNS"
                ax.set_ylabel(f"{label}\n{fam} (paper {paper})", fontsize=7)
    axes[0][0].legend(fontsize=6, loc="best")
    fig.suptitle(f"{int((~dflt).sum())} design points; {int(ok.sum())} pass (all four within "
                 f"{R.TOLERANCE:.0%} and the paper's orderings)", fontsize=9)
    fig.tight_layout()
    save_figure(fig, folder, "calibration")
    plt.close(fig)


def summary_md(folder) -> str:
    folder = Path(folder)
    pts = pd.read_csv(folder / "points.csv")
    reg = pd.read_csv(folder / "region.csv")
    pr = pd.read_csv(folder / "pairs.csv")
    n = int((pts.kind == "design").sum())
    ok = pts[pts.passes.astype(bool)]
    lines = ["## Joint calibration against the paper's headline figures", "",
             f"A Latin hypercube of {n} points (and the defaults) over {len(FACTORS)} "
             "parameters the paper does not give, each within the sensitivity table's range; "
             "the six systems on both datasets at each point. A point passes when all four "
             f"figures are within {R.TOLERANCE:.0%} of the paper's (Cosmos / Base "
             f"{R.PAPER['cosmos_vs_base']['sift']}x SIFT, {R.PAPER['cosmos_vs_base']['deep']}x "
             f"DEEP; Cosmos / CXL-ANNS {R.PAPER['cosmos_vs_cxl_anns']['sift']}x) and every "
             "ordering of the paper's Fig. 4a holds.", "",
             "| factor | range | why in the design | range among passing points |",
             "|---|---|---|---|"]
    for r in reg.itertuples():
        among = "-" if pd.isna(r.passing_low) else f"{r.passing_low:g}-{r.passing_high:g}"
        lines.append(f"| {r.factor} | {r.range_low:g}-{r.range_high:g} | {r.why_in_design} | "
                     f"{among} |")
    lines += ["", "| point | " + " | ".join(FIGURES) + " | within | orderings held | passes |",
              "|---|" + "---|" * (len(FIGURES) + 3)]
    for r in pts.itertuples():
        cells = " | ".join(f"{getattr(r, f):.2f} ({getattr(r, f + '_miss'):+.0%})"
                           for f in FIGURES)
        lines.append(f"| {r.point} ({r.kind}) | {cells} | {r.figures_within} of "
                     f"{len(FIGURES)} | {r.orderings_held} of {r.orderings} | "
                     f"{'yes' if r.passes else 'no'} |")
    lines += [""]
    if len(ok):
        lines += [f"**A region exists at this scale and seed:** {len(ok)} of {n} points pass "
                  f"(points {', '.join(str(p) for p in ok.point)}); the factors' ranges among "
                  "them are in the first table. `calibrated_set.txt` holds the passing point "
                  "nearest the paper as a `--set` bundle, labelled as a fit: never a default."]
    else:
        all4 = int(pts.figures_within.eq(len(FIGURES)).sum())
        top = pr.iloc[0]
        lines += [f"**No point passes** ({all4} of {len(pts)} have all four figures within "
                  f"{TOL_TEXT}; the orderings broken most: {_most_broken(pts)}). The two figures "
                  f"that pull apart most: **{top.figure_a}** and **{top.figure_b}**: no point "
                  f"has both within {top.joint_miss:.0%} of the paper (both within "
                  f"{TOL_TEXT} at {top.both_within} of {top.points} points; correlation of the "
                  f"two over the design {top.correlation:+.2f}). {top.figure_a} follows "
                  f"{top.a_strongest_factor} (rank correlation {top.a_factor_rank_corr:+.2f}), "
                  f"{top.figure_b} follows {top.b_strongest_factor} "
                  f"({top.b_factor_rank_corr:+.2f}). Their quotient, {top.quotient_meaning}, "
                  f"is {top.quotient_min:.2f}-{top.quotient_max:.2f} over the design against "
                  f"the paper's {top.quotient_paper:.2f}"
                  + (" (outside the design's range: no setting of these factors within their "
                     "ranges gives both" if not top.quotient_min <= top.quotient_paper
                     <= top.quotient_max else " (inside the design's range")
                  + f"; it follows {top.quotient_strongest_factor}, rank correlation "
                  f"{top.quotient_factor_rank_corr:+.2f})."]
    lines += ["", "Pairs of figures, hardest first (joint miss: the smallest over the points of "
              "the larger of the two misses):", "",
              "| figures | joint miss | both within | correlation | strongest factor of each | "
              "quotient: ours over the design (paper) | quotient follows |",
              "|---|---|---|---|---|---|---|"]
    for r in pr.itertuples():
        lines.append(f"| {r.figure_a} / {r.figure_b} | {r.joint_miss:.0%} | {r.both_within} "
                     f"of {r.points} | {r.correlation:+.2f} | {r.a_strongest_factor} "
                     f"({r.a_factor_rank_corr:+.2f}) / {r.b_strongest_factor} "
                     f"({r.b_factor_rank_corr:+.2f}) | {r.quotient_meaning}: "
                     f"{r.quotient_min:.2f}-{r.quotient_max:.2f} ({r.quotient_paper:.2f}) | "
                     f"{r.quotient_strongest_factor} ({r.quotient_factor_rank_corr:+.2f}) |")
    bad = pts[~pts.steady_state.astype(bool)]
    if len(bad):
        lines += ["", f"Points with a run without a steady state (QPS over the whole run): "
                  f"{', '.join(str(p) for p in bad.point)}."]
    return "\n".join(lines) + "\n"



def _most_broken(pts: pd.DataFrame) -> str:
    counts: dict = {}
    for text in pts.orderings_broken:
        for o in filter(None, text.split("; ") if isinstance(text, str) else []):
            counts[o] = counts.get(o, 0) + 1
    if not counts:
        return "none"
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
    return ", ".join(f"{o} (broken at {c} of {len(pts)})" for o, c in top)


if __name__ == "__main__":
    from experiments.harness.runner import script_main

    raise SystemExit(script_main(NAME))
