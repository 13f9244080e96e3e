"""The winners at a recall level: pure functions over ``recall_qps.csv`` tables.

From a table of (dataset, system, knob values) points with ``recall`` and ``qps`` (and the
runs' own 95 % intervals ``qps_ci_low`` / ``qps_ci_high``): each system's Pareto front
(:func:`pareto_front`), its QPS at a recall target read off that front
(:func:`qps_at_recall`) with the interval from the runs' intervals
(:func:`qps_interval_at_recall`), every system at each target (:func:`at_recall`), and per
dataset and target the winner and the best system of another family with the margin between
them (:func:`winners`, the columns of ``winners.csv``); over replications, each system at
each target across the replications' own curves (:func:`replicated_at_recall`) and the
replicated winners (:func:`replicated_winners`). Nothing here simulates or reads a run
context: the experiment that makes the tables is experiments/figures/recall_qps.py, which
imports this module (never the other way round).
"""

from __future__ import annotations

import math

import pandas as pd

from experiments.harness.ratios import ratio_ci
from experiments.harness.replications import clopper_pearson, t_interval, within_interval

#: retrieval family -> the systems that replay its traces (cosmos.presets): the systems
#: recall_qps simulates on each family's traces, and the families a runner-up is told apart by
SYSTEMS = {
    "graph": ("base", "cxl-anns", "cosmos"),
    "ivfpq": ("ivfpq-host", "ivfpq-host-precomputed", "ivfpq-host-precomputed-prefetch",
              "ivfpq-pnm", "ivfpq-pnm-chamvs", "ivfpq-pnm-chamvs-perlist"),
    "exact": ("exact-host", "exact-host-prefetch", "exact-pnm", "exact-pnm-batch"),
}
#: system -> its retrieval family (a name not in :data:`SYSTEMS` is its own family)
FAMILY_OF = {s: fam for fam, systems in SYSTEMS.items() for s in systems}
#: recall@10 targets of the summary
TARGETS = (0.9, 0.95)


def pareto_front(frame: pd.DataFrame) -> pd.DataFrame:
    """The points of ``frame`` (columns ``recall``, ``qps``) that no other point beats on both:
    none has recall >= and QPS >= with one of them strictly greater. Sorted by recall
    ascending (so QPS descending); of exact duplicates one is kept. Rows with a missing
    recall or QPS are ignored."""
    f = frame.dropna(subset=["recall", "qps"])
    f = f.sort_values(["recall", "qps"], ascending=[False, False], kind="mergesort")
    keep, best = [], -math.inf
    for idx, q in zip(f.index, f.qps):
        if q > best:          # more QPS than every point of higher (or equal) recall
            keep.append(idx)
            best = q
    return f.loc[keep].sort_values("recall", kind="mergesort")


def _bracket(front: pd.DataFrame, target: float):
    """Where recall ``target`` falls on ``front`` (:func:`pareto_front`): None if no point
    reaches it; else (low point, point at or above the target, t) with log QPS at the target
    = (1 - t) log QPS(low) + t log QPS(above); the low point is None (t = 1) when the front's
    first point is at or above the target or one point is exactly on it."""
    if front.empty or front.recall.max() < target:
        return None
    above = front[front.recall >= target].iloc[0]
    below = front[front.recall < target]
    if below.empty or above.recall == target:
        return None, above, 1.0
    lo = below.iloc[-1]
    return lo, above, (target - lo.recall) / (above.recall - lo.recall)


def qps_at_recall(front: pd.DataFrame, target: float) -> float:
    """The QPS a system reaches at recall ``target`` on its Pareto front (``front`` from
    :func:`pareto_front`): between the two front points around the target, log QPS
    interpolated linearly in recall; the front's first point if it is at or above the target
    already (its QPS: what the sweep shows at least); NaN if no point reaches the target."""
    br = _bracket(front, target)
    if br is None:
        return float("nan")
    lo, above, t = br
    if lo is None:
        return float(above.qps)
    return float(math.exp(math.log(lo.qps) + t * (math.log(above.qps) - math.log(lo.qps))))


def _rel_errors(point) -> tuple:
    """(relative distance down to ``qps_ci_low``, up to ``qps_ci_high``) of a row; NaN where
    the row has no interval."""
    q = float(point.qps)
    lo, hi = (float(point.get(c, float("nan"))) for c in ("qps_ci_low", "qps_ci_high"))
    return (q - lo) / q, (hi - q) / q


def qps_interval_at_recall(front: pd.DataFrame, target: float) -> tuple:
    """(low, high): the 95 % interval of :func:`qps_at_recall` from the runs' own intervals
    (``qps_ci_low`` / ``qps_ci_high`` of the front's points, cosmos.metrics' batch means).
    At a front point (or a lower bound: the front's first point) it is that run's interval.
    Between two points, log QPS at the target is (1 - t) log q_lo + t log q_above of two
    separate simulations, so to first order (delta method, as experiments.harness.ratios)
    its relative error is the root sum of squares of (1 - t) and t times theirs, taken below
    and above separately. It covers the
    simulations' sampling only: the recall of each point (a mean over ``recall_queries``
    queries) and the workload draw are held fixed; the replications' interval
    (:func:`replicated_at_recall`) covers those. NaN where a run used has no interval or no
    point reaches the target."""
    nan = (float("nan"), float("nan"))
    br = _bracket(front, target)
    if br is None:
        return nan
    lo, above, t = br
    if lo is None:
        return float(above.get("qps_ci_low", nan[0])), float(above.get("qps_ci_high", nan[0]))
    q = qps_at_recall(front, target)
    dn_a, up_a = _rel_errors(above)
    dn_l, up_l = _rel_errors(lo)
    dn = math.hypot((1 - t) * dn_l, t * dn_a)
    up = math.hypot((1 - t) * up_l, t * up_a)
    return q * (1 - dn), q * (1 + up)


def is_lower_bound(frame: pd.DataFrame, target: float) -> bool:
    """True when every swept point of a system (``frame``) is above recall ``target``:
    :func:`qps_at_recall` is then the QPS of a setting with more recall than needed, and a
    setting of less effort (not swept) could reach the target faster."""
    r = frame.recall.dropna()
    return not r.empty and bool(r.min() > target)


def at_recall(df: pd.DataFrame, targets=TARGETS) -> pd.DataFrame:
    """One row per dataset, recall target and system of ``df`` (a ``recall_qps.csv`` table
    with ``recall``): ``family``, ``qps`` at the target (:func:`qps_at_recall`, NaN if the
    system cannot reach it), its interval ``qps_ci_low`` / ``qps_ci_high``
    (:func:`qps_interval_at_recall`; NaN where the runs have none), ``lower_bound``
    (:func:`is_lower_bound`) and ``best_recall`` (the sweep's highest)."""
    rows = []
    for fam, sub in df.groupby("dataset", sort=False):
        for t in targets:
            for s, g in sub.groupby("system", sort=False):
                front = pareto_front(g)
                lo, hi = qps_interval_at_recall(front, t)
                rows.append(dict(dataset=fam, target=t, system=s, family=FAMILY_OF.get(s, s),
                                 qps=qps_at_recall(front, t), qps_ci_low=lo, qps_ci_high=hi,
                                 lower_bound=is_lower_bound(g, t),
                                 best_recall=float(g.recall.max())))
    return pd.DataFrame(rows, columns=["dataset", "target", "system", "family", "qps",
                                       "qps_ci_low", "qps_ci_high", "lower_bound",
                                       "best_recall"])


#: why a winner's interval is empty (``ci_note`` of winners.csv)
NO_RUN_INTERVAL = ("no interval: a run around the target has no 95 % interval of its own "
                   "(its ci_note in recall_qps.csv says why: at the tiny and default scales "
                   "too few completions for batch means)")

#: columns of ``winners.csv``, one row per dataset and recall target: the winner (the
#: system with the most QPS at the target) and the best system of another family (runner-up)
#: with the 95 % intervals of their QPS at the target and of the margin (winner / runner-up)
#: from the runs' own intervals (:func:`winners`); a replicated run adds
#: :data:`REPLICATED_WINNER_COLUMNS`
WINNER_COLUMNS = ["dataset", "target", "system", "family", "qps", "qps_ci_low", "qps_ci_high",
                  "runner_up", "runner_up_family", "runner_up_qps", "runner_up_qps_ci_low",
                  "runner_up_qps_ci_high", "margin", "margin_ci_low", "margin_ci_high",
                  "lower_bounds", "reached", "not_reached", "ci_note"]
#: the columns a replicated run adds to ``winners.csv`` (:func:`replicated_winners`)
REPLICATED_WINNER_COLUMNS = [
    "replications", "seeds", "qps_rep_ci_low", "qps_rep_ci_high", "qps_rep_sd",
    "runner_up_qps_rep_ci_low", "runner_up_qps_rep_ci_high", "margin_rep_ci_low",
    "margin_rep_ci_high", "margin_rep_sd", "wins", "wins_ci_low", "wins_ci_high",
    "family_wins", "margin_holds", "reached_in_some"]


def _margin_interval(w: dict, ru: dict) -> tuple:
    """(low, high) of winner QPS / runner-up QPS from their intervals at the target
    (experiments.harness.ratios.ratio_ci, the rule of every ratio of two runs)."""
    lo, hi = ratio_ci(w["qps"], w["qps_ci_low"], w["qps_ci_high"], ru["qps"], ru["qps_ci_low"],
                      ru["qps_ci_high"])
    return float(lo), float(hi)


def _pick(candidates: dict) -> tuple:
    """(winner, runner-up) among ``candidates`` (system -> QPS at the target): the most QPS
    (ties to the later name), then the most QPS of another family; None where there is none."""
    if not candidates:
        return None, None
    best = max(candidates, key=lambda s: (candidates[s], s))
    fam = FAMILY_OF.get(best, best)
    others = {s: q for s, q in candidates.items() if FAMILY_OF.get(s, s) != fam}
    return best, (max(others, key=lambda s: (others[s], s)) if others else None)


def winners(df: pd.DataFrame, targets=TARGETS) -> pd.DataFrame:
    """Per dataset and recall target: the system with the most QPS at the target (its family
    and QPS), the best system of any other family (``runner_up``, its family and QPS) and
    ``margin`` = winner QPS / runner-up QPS; ``lower_bounds`` lists the systems whose QPS at
    the target is a lower bound (:func:`is_lower_bound`). ``reached`` lists the systems that
    reach the target, ``not_reached`` those that do not; system and family are empty when none
    does, runner-up empty (None or NaN) when no other family does (margin NaN). Beside each
    QPS its 95 % interval (:func:`qps_interval_at_recall`) and beside the margin the
    interval of the ratio (:func:`_margin_interval`); ``ci_note`` says why they are empty
    when the runs have no intervals (:data:`NO_RUN_INTERVAL`). Columns: :data:`WINNER_COLUMNS`."""
    at = at_recall(df, targets)
    rows = []
    for (fam, t), sub in at.groupby(["dataset", "target"], sort=False):
        by = {r["system"]: r for r in sub.to_dict("records")}
        ok = {s: r["qps"] for s, r in by.items() if r["qps"] == r["qps"]}
        nan = float("nan")
        row = dict(dataset=fam, target=t, system=None, family=None, qps=nan, qps_ci_low=nan,
                   qps_ci_high=nan, runner_up=None, runner_up_family=None, runner_up_qps=nan,
                   runner_up_qps_ci_low=nan, runner_up_qps_ci_high=nan, margin=nan,
                   margin_ci_low=nan, margin_ci_high=nan,
                   lower_bounds=", ".join(s for s, r in by.items() if r["lower_bound"]),
                   reached=", ".join(ok), not_reached=", ".join(s for s in by if s not in ok),
                   ci_note="")
        best, ru = _pick(ok)
        if best is not None:
            w = by[best]
            row.update(system=best, family=w["family"], qps=w["qps"],
                       qps_ci_low=w["qps_ci_low"], qps_ci_high=w["qps_ci_high"])
            used = [w]
            if ru is not None:
                r = by[ru]
                lo, hi = _margin_interval(w, r)
                row.update(runner_up=ru, runner_up_family=r["family"], runner_up_qps=r["qps"],
                           runner_up_qps_ci_low=r["qps_ci_low"],
                           runner_up_qps_ci_high=r["qps_ci_high"], margin=w["qps"] / r["qps"],
                           margin_ci_low=lo, margin_ci_high=hi)
                used.append(r)
            if any(u["qps_ci_low"] != u["qps_ci_low"] or u["qps_ci_high"] != u["qps_ci_high"]
                   for u in used):
                row["ci_note"] = NO_RUN_INTERVAL
        rows.append(row)
    return pd.DataFrame(rows, columns=WINNER_COLUMNS)


def replicated_at_recall(per_rep: pd.DataFrame, targets=TARGETS) -> pd.DataFrame:
    """Per dataset, recall target and system, over the replications of ``per_rep`` (one row
    per replication x point): :func:`at_recall` of each replication (its own curve: recall
    and QPS both vary with the workload), then ``reached_in`` (in how many replications the
    system reaches the target), ``qps`` the mean over them with its 95 % Student-t interval
    (``qps_rep_ci_low`` / ``qps_rep_ci_high``, ``qps_rep_sd``; only when it reaches the
    target in every replication, else NaN: a mean over the replications that reach it would
    leave out the ones where its curve is lowest), ``qps_ci_low`` / ``qps_ci_high`` the
    runs' own intervals carried to the mean (within_interval), and ``lower_bound`` if it is
    one in any replication."""
    per = pd.concat([at_recall(g.drop(columns=["replication", "seed"]), targets)
                     .assign(replication=r) for r, g in per_rep.groupby("replication",
                                                                        sort=True)],
                    ignore_index=True)
    n = int(per_rep.replication.nunique())
    rows = []
    for (fam, t, s), g in per.groupby(["dataset", "target", "system"], sort=False):
        k = int(g.qps.notna().sum())
        nan = float("nan")
        row = dict(dataset=fam, target=t, system=s, family=g.family.iloc[0], reached_in=k,
                   replications=n, qps=nan, qps_rep_ci_low=nan, qps_rep_ci_high=nan,
                   qps_rep_sd=nan, qps_ci_low=nan, qps_ci_high=nan,
                   lower_bound=bool(g.lower_bound.any()), best_recall=float(g.best_recall.mean()))
        if k == n:
            mean, lo, hi, sd = t_interval(g.qps)
            row.update(qps=mean, qps_rep_ci_low=lo, qps_rep_ci_high=hi, qps_rep_sd=sd)
            row["qps_ci_low"], row["qps_ci_high"] = within_interval(g.qps, g.qps_ci_low,
                                                                    g.qps_ci_high)
        rows.append(row)
    return pd.DataFrame(rows)


def replicated_winners(per_rep: pd.DataFrame, targets=TARGETS) -> tuple:
    """(winners.csv of a replicated run, each replication's :func:`winners` led by
    ``replication`` and ``seed``). Per dataset and target, among the systems that reach it in
    every replication (:func:`replicated_at_recall`), the winner has the most mean QPS at the
    target and the runner-up the most of another family. ``qps`` / ``runner_up_qps`` are the
    means with the runs' own intervals carried to them (``*_ci_*``) and their Student-t
    intervals over the replications (``*_rep_ci_*``); ``margin`` is the mean over the
    replications of winner / runner-up QPS at the target (each replication compares them on
    one workload), with ``margin_rep_ci_*`` its Student-t interval and ``margin_ci_*`` the
    replications' own ratio intervals (:func:`_margin_interval`) carried to the mean;
    ``margin_holds`` counts the replications in which the winner's QPS is above the
    runner-up's; ``wins`` those in which the winner is that replication's winner (with its
    Clopper-Pearson interval, ``wins_ci_*``), ``family_wins`` those in which its family is;
    ``reached_in_some`` names the systems that reach the target in some replications but
    not all ("system (k of R)"); ``not_reached`` those that reach it in none."""
    seeds = {int(r): int(g.seed.iloc[0]) for r, g in per_rep.groupby("replication")}
    n = len(seeds)
    each = pd.concat([winners(g.drop(columns=["replication", "seed"]), targets)
                      .assign(replication=r, seed=seeds[r])
                      for r, g in per_rep.groupby("replication", sort=True)], ignore_index=True)
    each = each[["replication", "seed"] + WINNER_COLUMNS]
    per = pd.concat([at_recall(g.drop(columns=["replication", "seed"]), targets)
                     .assign(replication=r) for r, g in per_rep.groupby("replication",
                                                                        sort=True)],
                    ignore_index=True)
    agg = replicated_at_recall(per_rep, targets)
    rows = []
    nan = float("nan")
    for (fam, t), sub in agg.groupby(["dataset", "target"], sort=False):
        by = {r["system"]: r for r in sub.to_dict("records")}
        ok = {s: r["qps"] for s, r in by.items() if r["reached_in"] == n}
        row = dict(dataset=fam, target=t, system=None, family=None, qps=nan, qps_ci_low=nan,
                   qps_ci_high=nan, runner_up=None, runner_up_family=None, runner_up_qps=nan,
                   runner_up_qps_ci_low=nan, runner_up_qps_ci_high=nan, margin=nan,
                   margin_ci_low=nan, margin_ci_high=nan,
                   lower_bounds=", ".join(s for s, r in by.items() if r["lower_bound"]),
                   reached=", ".join(ok),
                   not_reached=", ".join(s for s, r in by.items() if r["reached_in"] == 0),
                   ci_note="", replications=n, seeds=" ".join(map(str, seeds.values())),
                   qps_rep_ci_low=nan, qps_rep_ci_high=nan, qps_rep_sd=nan,
                   runner_up_qps_rep_ci_low=nan, runner_up_qps_rep_ci_high=nan,
                   margin_rep_ci_low=nan, margin_rep_ci_high=nan, margin_rep_sd=nan,
                   wins=nan, wins_ci_low=nan, wins_ci_high=nan, family_wins=nan,
                   margin_holds=nan,
                   reached_in_some=", ".join(f"{s} ({r['reached_in']} of {n})"
                                             for s, r in by.items() if 0 < r["reached_in"] < n))
        best, ru = _pick(ok)
        mine = each[(each.dataset == fam) & (each.target == t)]
        if best is not None:
            w = by[best]
            k = int((mine.system == best).sum())
            row.update(system=best, family=w["family"], qps=w["qps"], qps_ci_low=w["qps_ci_low"],
                       qps_ci_high=w["qps_ci_high"], qps_rep_ci_low=w["qps_rep_ci_low"],
                       qps_rep_ci_high=w["qps_rep_ci_high"], qps_rep_sd=w["qps_rep_sd"], wins=k,
                       family_wins=int((mine.family == w["family"]).sum()))
            row["wins_ci_low"], row["wins_ci_high"] = clopper_pearson(k, n)
            used = [w]
            if ru is not None:
                r = by[ru]
                p = per[(per.dataset == fam) & (per.target == t)].set_index(
                    ["replication", "system"])
                ratios, lows, highs = [], [], []
                for rep in sorted(seeds):
                    a, b = p.loc[(rep, best)].to_dict(), p.loc[(rep, ru)].to_dict()
                    ratios.append(a["qps"] / b["qps"])
                    lo, hi = _margin_interval(a, b)
                    lows.append(lo)
                    highs.append(hi)
                mean, lo, hi, sd = t_interval(ratios)
                wlo, whi = within_interval(ratios, lows, highs)
                row.update(runner_up=ru, runner_up_family=r["family"], runner_up_qps=r["qps"],
                           runner_up_qps_ci_low=r["qps_ci_low"],
                           runner_up_qps_ci_high=r["qps_ci_high"],
                           runner_up_qps_rep_ci_low=r["qps_rep_ci_low"],
                           runner_up_qps_rep_ci_high=r["qps_rep_ci_high"], margin=mean,
                           margin_ci_low=wlo, margin_ci_high=whi, margin_rep_ci_low=lo,
                           margin_rep_ci_high=hi, margin_rep_sd=sd,
                           margin_holds=int(sum(x > 1 for x in ratios)))
                used.append(r)
            if any(u["qps_ci_low"] != u["qps_ci_low"] for u in used):
                row["ci_note"] = NO_RUN_INTERVAL
        rows.append(row)
    return pd.DataFrame(rows, columns=WINNER_COLUMNS + REPLICATED_WINNER_COLUMNS), each
