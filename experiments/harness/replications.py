"""Replications: the same experiment on R independent workload instances, and the statistics
that say what holds across them.

A QPS's batch-means interval (cosmos.metrics) is conditional on one workload: one dataset
draw, one k-means, one query set, one placement seed. ``--replications R`` runs an experiment
on R workload instances and reports, for each figure, the mean over the replications with a
95 % Student-t interval over them (which includes the workload's variation), beside the
runs' own intervals, and, for each ordering of two systems, in how many of the R
replications it holds.

The seed rule (:func:`replication_seed`): replication ``r`` (0, 1, ..., R - 1) runs with
seed ``seed + r``, where ``seed`` is ``--seed`` (default 0). That seed decides everything
random of the workload (the synthetic base and query vectors, drawn from
``numpy.random.default_rng([seed, stream, block])``, so neighbouring seeds give independent
streams; k-means; every cluster's graph) and of the simulation (the placement policy's seed,
open-loop arrivals). Replication 0 is the run without ``--replications``: R = 1 is today's
run, bit for bit. Two sets of replications share no workload when their ``--seed`` values
are at least R apart.
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

__all__ = ["replication_seed", "replication_seeds", "parse_replications", "t_quantile",
           "t_interval", "within_interval", "clopper_pearson", "count_text", "ordering_rows",
           "CONFIDENCE"]

#: confidence level of every interval here (and of the runs' own, cosmos.metrics)
CONFIDENCE = 0.95


def replication_seed(seed: int, r: int) -> int:
    """The seed of replication ``r`` (0-based) of a run with ``seed``: ``seed + r``
    (replication 0 is the run itself)."""
    if r < 0:
        raise ValueError(f"replication must be >= 0, got {r}")
    return int(seed) + int(r)


def replication_seeds(seed: int, replications: int) -> list[int]:
    """The seeds of replications 0, ..., R - 1: ``seed, seed + 1, ..., seed + R - 1``."""
    return [replication_seed(seed, r) for r in range(int(replications))]


def parse_replications(value) -> int:
    """``--replications`` as an int >= 1 (ValueError in one line otherwise)."""
    text = str(value).strip()
    try:
        r = int(text)
    except ValueError:
        raise ValueError(f"--replications must be a whole number >= 1, got {value!r}") from None
    if r < 1:
        raise ValueError(f"--replications must be >= 1, got {r}")
    return r


def _t_two_sided_cdf(t: float, df: int) -> float:
    """P(|T| <= t) for Student's t with integer ``df`` >= 1: the closed form in
    theta = atan(t / sqrt(df)) (Abramowitz & Stegun 26.7.3 and 26.7.4), exact to rounding."""
    theta = math.atan(t / math.sqrt(df))
    s, c2 = math.sin(theta), math.cos(theta) ** 2
    if df % 2 == 0:
        term = total = 1.0
        for k in range(1, df // 2):               # 1 + (1/2) c^2 + (1*3)/(2*4) c^4 + ...
            term *= c2 * (2 * k - 1) / (2 * k)
            total += term
        return s * total
    if df == 1:
        return 2 * theta / math.pi
    term = total = 1.0
    for k in range(1, (df - 1) // 2):             # 1 + (2/3) c^2 + (2*4)/(3*5) c^4 + ...
        term *= c2 * (2 * k) / (2 * k + 1)
        total += term
    return 2 / math.pi * (theta + s * math.cos(theta) * total)


def t_quantile(df: int, confidence: float = CONFIDENCE) -> float:
    """The two-sided ``confidence`` quantile of Student's t with integer ``df`` >= 1 degrees of
    freedom (12.706 for df = 1, 2.776 for df = 4 at 95 %): the root of the exact two-sided
    CDF (:func:`_t_two_sided_cdf`) by bisection to 1e-12."""
    if int(df) != df or df < 1:
        raise ValueError(f"degrees of freedom must be a whole number >= 1, got {df}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    df = int(df)
    lo, hi = 0.0, 1.0
    while _t_two_sided_cdf(hi, df) < confidence:
        hi *= 2
    while hi - lo > 1e-12 * max(1.0, hi):
        mid = (lo + hi) / 2
        if _t_two_sided_cdf(mid, df) < confidence:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def t_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple:
    """(mean, low, high, sample standard deviation) of ``values``, one per replication:
    mean +- t(R - 1) s / sqrt(R), the Student-t interval of the mean of R independent draws
    (exact for normal draws; the replications are independent workload instances). With one
    value, or any value NaN, the interval is (NaN, NaN) (and the deviation NaN with one)."""
    xs = [float(v) for v in values]
    n = len(xs)
    if n == 0:
        return (float("nan"),) * 4
    mean = math.fsum(xs) / n
    if n < 2 or any(x != x for x in xs):
        return mean, float("nan"), float("nan"), float("nan")
    sd = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1))
    half = t_quantile(n - 1, confidence) * sd / math.sqrt(n)
    return mean, mean - half, mean + half, sd


def within_interval(values: Sequence[float], lows: Sequence[float],
                    highs: Sequence[float]) -> tuple:
    """(low, high): the runs' own intervals carried to the mean of their values: half-width
    sqrt(sum of squared half-widths) / R (independent runs, each interval symmetric and
    normal), about the mean. What the mean's interval would be if the R workloads were fixed
    and only the simulations' sampling varied. NaN if any run has no interval."""
    xs = [float(v) for v in values]
    halves = [(float(h) - float(lo)) / 2 for lo, h in zip(lows, highs)]
    if not xs or len(halves) != len(xs) or any(h != h for h in halves):
        return float("nan"), float("nan")
    mean = math.fsum(xs) / len(xs)
    half = math.sqrt(math.fsum(h * h for h in halves)) / len(xs)
    return mean - half, mean + half


def _binom_tail_ge(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p)."""
    return math.fsum(math.comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(k, n + 1))


def _bisect(f, target: float, increasing: bool) -> float:
    lo, hi = 0.0, 1.0
    for _ in range(100):
        mid = (lo + hi) / 2
        if (f(mid) < target) == increasing:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def clopper_pearson(k: int, n: int, confidence: float = CONFIDENCE) -> tuple:
    """(low, high): the Clopper-Pearson ("exact") interval of a proportion after ``k``
    successes in ``n`` trials: low solves P(X >= k | low) = alpha / 2 (0 if k = 0), high
    solves P(X <= k | high) = alpha / 2 (1 if k = n). Its coverage is at least
    ``confidence`` for every true proportion and every n, the property wanted for a count of
    5 or 10 replications (Wilson's interval is narrower but falls below 95 % for some
    proportions at such n); 5 of 5 gives (0.478, 1)."""
    if not (0 <= k <= n) or n < 1:
        raise ValueError(f"need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    a = (1 - confidence) / 2
    low = 0.0 if k == 0 else _bisect(lambda p: _binom_tail_ge(k, n, p), a, increasing=True)
    high = 1.0 if k == n else _bisect(lambda p: 1 - _binom_tail_ge(k + 1, n, p), a,
                                      increasing=False)
    return low, high


def count_text(k: int, n: int, what: str = "holds") -> str:
    """"holds in k of n replications (95 % Clopper-Pearson: lo-hi)" (``what``: the verb)."""
    lo, hi = clopper_pearson(k, n)
    return f"{what} in {k} of {n} replications (95 % CI of the proportion {lo:.2f}-{hi:.2f})"


def ordering_rows(frame, key: Sequence[str], systems: Iterable[str], value: str = "qps",
                  replication: str = "replication") -> list[dict]:
    """One row per ``key`` group (e.g. dataset) and pair of ``systems``: the system with the
    higher mean ``value`` over the replications first (``higher``, ``lower``), in how many
    replications its ``value`` is strictly above the other's (``holds``) out of
    ``replications``, that fraction, its Clopper-Pearson 95 % interval, and the mean over the
    replications of the ratio higher / lower. ``frame`` holds one row per replication x
    group x system."""
    systems = list(systems)
    out = []
    for grp, sub in frame.groupby(list(key), sort=False):
        grp = grp if isinstance(grp, tuple) else (grp,)
        wide = sub.pivot(index=replication, columns="system", values=value)
        names = [s for s in systems if s in wide.columns]
        means = wide[names].mean()
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                hi, lo = (a, b) if means[a] >= means[b] else (b, a)
                n = int(len(wide))
                k = int((wide[hi] > wide[lo]).sum())
                ci = clopper_pearson(k, n)
                out.append({**dict(zip(key, grp)), "higher": hi, "lower": lo, "holds": k,
                            "replications": n, "fraction": k / n, "fraction_ci_low": ci[0],
                            "fraction_ci_high": ci[1],
                            "ratio_mean": float((wide[hi] / wide[lo]).mean())})
    return out
