"""The sensitivity study's intervals, orderings and regions: pure functions over its tables.

From the rows of ``sensitivity.csv`` (one per parameter x level x dataset x system, with QPS
and its 95 % interval ``qps_ci_low`` / ``qps_ci_high``, and each ratio's interval from
experiments.harness.ratios.ratio_ci, the delta method on the log ratio): for every dataset and
pair of the six systems, the paper's order, ours, and where ours flips, by the point
estimates and by the two runs' intervals (:func:`separation`, :func:`orderings`:
``orderings.csv``); and per headline figure of the paper, dataset and parameter, the levels
and the value intervals where our ratio is within :data:`TOLERANCE` of it, by the point ratio
and by its interval (:func:`within_intervals`, :func:`band_intervals`, :func:`regions`:
``regions.csv``); with the text helpers these tables use (:func:`point_name`,
:func:`fmt_value`). Nothing here simulates or reads a run context: the experiment that makes
the tables is experiments/figures/sensitivity.py, which imports this module (never the other
way round).
docs/uncertainty.md, "Sensitivity with intervals", states the methods.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

#: the six systems, in the order of the paper's Fig. 4a bars, which rise from Base to Cosmos
SYSTEMS = ("base", "dram-only", "cxl-anns", "cosmos-norank", "cosmos-noalgo", "cosmos")
#: the paper's headline figures (Cosmos, IEEE CAL 2025, abstract and Sec. V): ratio -> dataset
#: -> value (the Cosmos / CXL-ANNS figure is one number for both datasets)
PAPER = {"cosmos_vs_base": {"sift": 6.72, "deep": 5.35},
         "cosmos_vs_cxl_anns": {"sift": 2.35, "deep": 2.35}}
#: "reproduces the paper's figure": ours within this fraction of it
TOLERANCE = 0.15
#: the levels of every parameter, in the order of the tables
LEVELS = ("low", "default", "high")
#: the interval columns of a QPS (added to sensitivity.csv; a folder written before them has
#: none, and every reader then draws and lists no interval)
QPS_CI = ("qps_ci_low", "qps_ci_high")


def point_name(r) -> str:
    """A point of a row (``parameter``, ``value``, ``level``) as text: ``"p=1 (low)"``."""
    return f"{r.parameter}={fmt_value(r.value)} ({r.level})"


def fmt_value(v) -> str:
    """A level's value as text: a number in ``%g`` form, anything else as it is."""
    try:
        x = float(v)
    except (TypeError, ValueError):
        return str(v)
    return f"{x:g}"


def separation(fast, fast_low, fast_high, slow, slow_low, slow_high) -> str:
    """How two runs' QPS intervals order them: ``"holds"`` if ``fast``'s interval lies wholly
    above ``slow``'s (the order is a property of the point, not a draw), ``"flipped"`` if wholly
    below, ``"tied"`` if they overlap; ``"no interval"`` where either run has none (then only
    the point estimates order them). Non-overlap of two 95 % intervals is the stricter test: it
    asks more than the ratio's interval excluding 1 (for two intervals of equal width, about a
    99.4 % test)."""
    vals = [float(x) for x in (fast_low, fast_high, slow_low, slow_high)]
    if any(math.isnan(x) for x in vals):
        return "no interval"
    f_lo, f_hi, s_lo, s_hi = vals
    if f_lo > s_hi:
        return "holds"
    if s_lo > f_hi:
        return "flipped"
    return "tied"


def orderings(df: pd.DataFrame) -> pd.DataFrame:
    """For every dataset and pair of systems: the paper's order (its Fig. 4a, :data:`SYSTEMS`
    rising), ours at the defaults, and every point where ours is the other way (or a tie).

    ``holds_everywhere``, ``flips`` and ``flips_at`` compare the point estimates (as before
    the intervals). With the intervals (:func:`separation`, each point's two QPS intervals):
    ``default_separation`` at the defaults; at the other points ``separated`` (our default
    order, intervals apart), ``tied`` / ``tied_at`` (intervals overlap: not a flip, a draw),
    ``flipped`` / ``flipped_at`` (the other order, intervals apart) and ``no_interval`` /
    ``no_interval_at``; ``holds_everywhere_ci``: the order holds with intervals apart at the
    defaults and at every point."""
    rows = []
    df = df.copy()
    for c in QPS_CI:
        if c not in df:
            df[c] = float("nan")
    for fam in dict.fromkeys(df.dataset):
        sub = df[df.dataset == fam]
        where = ["parameter", "level", "value"]
        # one row per point (in the order of the CSV), a column per system and figure
        wide = sub.set_index(where + ["system"])[["qps", *QPS_CI]].unstack("system")
        info = sub[where].drop_duplicates().reset_index(drop=True)
        wide = wide.reindex(pd.MultiIndex.from_frame(info))
        qps, lo, hi = wide["qps"], wide["qps_ci_low"], wide["qps_ci_high"]
        is_default = (info.level == "default").to_numpy()
        d0 = int(np.flatnonzero(is_default)[0])
        systems = [s for s in SYSTEMS if s in qps.columns]
        for a, b in itertools.combinations(systems, 2):   # paper: b above a
            fast, slow = (b, a) if qps[b].iloc[d0] >= qps[a].iloc[d0] else (a, b)
            other = ~is_default
            flips = other & ~(qps[fast] > qps[slow]).to_numpy()
            sep = np.array([separation(qps[fast].iloc[i], lo[fast].iloc[i], hi[fast].iloc[i],
                                       qps[slow].iloc[i], lo[slow].iloc[i], hi[slow].iloc[i])
                            for i in range(len(info))], dtype=object)

            def at(mask):
                return "; ".join(point_name(r) for r in info[mask].itertuples())

            rows.append({"dataset": fam, "faster": fast, "slower": slow,
                         "paper_faster": b, "paper_agrees": fast == b,
                         "default_qps_ratio": float(qps[fast].iloc[d0] / qps[slow].iloc[d0]),
                         "points": int(other.sum()), "holds_everywhere": not flips.any(),
                         "flips": int(flips.sum()), "flips_at": at(flips),
                         "default_separation": sep[d0],
                         "separated": int((other & (sep == "holds")).sum()),
                         "tied": int((other & (sep == "tied")).sum()),
                         "tied_at": at(other & (sep == "tied")),
                         "flipped": int((other & (sep == "flipped")).sum()),
                         "flipped_at": at(other & (sep == "flipped")),
                         "no_interval": int((other & (sep == "no interval")).sum()),
                         "no_interval_at": at(other & (sep == "no interval")),
                         "holds_everywhere_ci": bool((sep == "holds").all())})
    return pd.DataFrame(rows)


def _numeric(values) -> np.ndarray | None:
    x = pd.to_numeric(pd.Series(list(values)), errors="coerce").to_numpy(dtype=float)
    return None if np.isnan(x).any() else x


def _t_range(f0: float, f1: float, bound: float, above: bool) -> tuple[float, float]:
    """The t of [0, 1] where ``f0 + (f1 - f0) t`` is >= ``bound`` (``above``) or <= it: an
    interval (lo > hi: none)."""
    if f1 == f0:
        ok = f0 >= bound if above else f0 <= bound
        return (0.0, 1.0) if ok else (1.0, 0.0)
    t = (bound - f0) / (f1 - f0)
    rising = f1 > f0
    if above == rising:         # the condition holds from t on
        return max(t, 0.0), 1.0
    return 0.0, min(t, 1.0)


def band_intervals(values, low, high, target: float, tol: float = TOLERANCE,
                   how: str = "overlaps") -> list:
    """The intervals of the parameter's value where a ratio interval [``low``, ``high``],
    each end linear between the simulated ``values``, meets the band ``target`` x (1 +- tol):
    ``how="overlaps"`` where the interval reaches into the band (upper end >= the band's
    lower edge and lower end <= its upper edge: the ratio may be within it), ``"inside"``
    where it lies wholly in it (lower end >= the lower edge and upper end <= the upper edge:
    within it, the draw allowing). With ``low`` = ``high`` = the point ratio both are
    :func:`within_intervals`. A list of (lo, hi) pairs, empty if none; an interpolation, only
    the levels are simulated."""
    if how not in ("overlaps", "inside"):
        raise ValueError(f"how must be 'overlaps' or 'inside', got {how!r}")
    v = np.asarray(values, dtype=float)
    lo = np.asarray(low, dtype=float)
    hi = np.asarray(high, dtype=float)
    order = np.argsort(v, kind="stable")
    v, lo, hi = v[order], lo[order], hi[order]
    lo_t, hi_t = target * (1 - tol), target * (1 + tol)
    # (curve, bound, above): the conditions, each linear in t on a segment
    conds = ([(hi, lo_t, True), (lo, hi_t, False)] if how == "overlaps"
             else [(lo, lo_t, True), (hi, hi_t, False)])
    if len(v) == 1:
        ok = all((c[0] >= b) if above else (c[0] <= b) for c, b, above in conds)
        return [(v[0], v[0])] if ok else []
    spans = []
    for i in range(len(v) - 1):
        ta, tb = 0.0, 1.0
        for curve, bound, above in conds:
            a, b = _t_range(curve[i], curve[i + 1], bound, above)
            ta, tb = max(ta, a), min(tb, b)
        if ta <= tb:
            spans.append((v[i] + ta * (v[i + 1] - v[i]), v[i] + tb * (v[i + 1] - v[i])))
    merged: list = []
    for a, b in spans:
        if merged and a <= merged[-1][1] + 1e-12:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


def within_intervals(values, ratios, target: float, tol: float = TOLERANCE) -> list:
    """The intervals of the parameter's value over which the ratio, linear between the
    simulated ``(values, ratios)`` points, lies within ``tol`` of ``target``: a list of
    (lo, hi) pairs, empty if none (an estimate between levels: only the levels are simulated)."""
    return band_intervals(values, ratios, ratios, target, tol, how="inside")


def _spans_text(spans) -> str:
    return "; ".join(f"{a:.3g}-{b:.3g}" for a, b in spans)


def regions(df: pd.DataFrame) -> pd.DataFrame:
    """Per paper figure, dataset and parameter: our ratio at each level, the levels within
    :data:`TOLERANCE` of the paper, and the interpolated value interval(s) within it.

    With the ratio's intervals (experiments.harness.ratios.ratio_ci): each level's interval
    (``<level>_ratio_ci_low`` / ``_high``); ``levels_ci_overlap``, the levels whose interval
    reaches into the band, and ``levels_ci_inside``, those whose interval lies wholly in it
    (a level in ``levels_within`` but not ``levels_ci_inside`` is within 15 % by the draw, not
    surely); ``levels_no_ci``, levels without an interval (in neither list). And the value
    intervals of :func:`band_intervals`, each end of the ratio's interval linear between the
    levels: ``interval_ci_overlap`` (where the interval reaches into the band: outside it the
    ratio is out of the band at 95 %) and ``interval_ci_inside`` (where it lies wholly in the
    band); ``interval_within`` (the point ratio's) lies between the two. Both are empty when
    some level of the parameter has no interval (nothing to interpolate)."""
    rows = []
    cos = df[df.system == "cosmos"]
    for ratio, per_fam in PAPER.items():
        col = f"qps_vs_{ratio.split('_vs_')[1]}"
        c_lo, c_hi = f"{col}_ci_low", f"{col}_ci_high"
        for fam in dict.fromkeys(cos.dataset):
            if fam not in per_fam:
                continue
            target = per_fam[fam]
            band = (target * (1 - TOLERANCE), target * (1 + TOLERANCE))
            for param, sub in cos[cos.dataset == fam].groupby("parameter", sort=False):
                by = {r.level: r for r in sub.itertuples()}
                ok = [lv for lv in LEVELS if lv in by and
                      abs(getattr(by[lv], col) / target - 1) <= TOLERANCE]

                def ci(lv):
                    if lv not in by or c_lo not in sub:
                        return float("nan"), float("nan")
                    return float(getattr(by[lv], c_lo)), float(getattr(by[lv], c_hi))

                have = [lv for lv in LEVELS if lv in by and not any(map(math.isnan, ci(lv)))]
                overlap = [lv for lv in have if ci(lv)[1] >= band[0] and ci(lv)[0] <= band[1]]
                inside = [lv for lv in have if ci(lv)[0] >= band[0] and ci(lv)[1] <= band[1]]
                vals = _numeric(sub.value)
                spans = within_intervals(vals, sub[col], target) if vals is not None else []
                with_ci = vals is not None and len(have) == len(sub)
                lo_ci = sub[c_lo] if with_ci else None
                hi_ci = sub[c_hi] if with_ci else None
                rows.append({
                    "figure": ratio, "dataset": fam, "paper": target, "parameter": param,
                    **{f"{lv}_value": by[lv].value if lv in by else None for lv in LEVELS},
                    **{f"{lv}_ratio": getattr(by[lv], col) if lv in by else float("nan")
                       for lv in LEVELS},
                    "levels_within": ",".join(ok),
                    "interval_within": _spans_text(spans),
                    "band_low": band[0], "band_high": band[1],
                    **{f"{lv}_ratio_ci_{end}": ci(lv)[k] for lv in LEVELS
                       for k, end in enumerate(("low", "high"))},
                    "levels_ci_overlap": ",".join(overlap),
                    "levels_ci_inside": ",".join(inside),
                    "levels_no_ci": ",".join(lv for lv in LEVELS if lv in by and lv not in have),
                    "interval_ci_overlap": _spans_text(band_intervals(
                        vals, lo_ci, hi_ci, target, how="overlaps")) if with_ci else "",
                    "interval_ci_inside": _spans_text(band_intervals(
                        vals, lo_ci, hi_ci, target, how="inside")) if with_ci else "",
                })
    return pd.DataFrame(rows)
