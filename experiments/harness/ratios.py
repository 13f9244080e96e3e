"""The 95 % interval of a ratio of two simulated QPS, from each run's own interval.

Every headline ratio (Cosmos / Base, a recall-level winner over its runner-up, a sensitivity
level's ratio) divides the QPS of one simulation by that of another, and each run carries its
own 95 % batch-means interval (cosmos.metrics). :func:`ratio_ci` is the one rule that turns
the two intervals into the ratio's: the delta method on the log ratio. ``ln(num / den) =
ln num - ln den`` and the runs are separate simulations, so the variances of the two logs
add; each run's interval on the log scale has the half-width ``w = (ln high - ln low) / 2``
(about its relative half-width: the QPS interval is ``1 / (g +- h)`` for a mean time per
query ``g``, so ``w`` ~ ``h / g``), and the ratio's is ``sqrt(w_num^2 + w_den^2)`` around the
point ratio: ``[r exp(-w), r exp(+w)]``.

Both intervals being 95 % (Student t with their own batches), the root sum of the two
half-widths is the t-quantile-weighted sum, a Welch-like approximation, and the result is a
95 % interval to first order. On the log scale it stays positive and the interval of
``den / num`` is the reciprocal of this one. The runs replay the same trace queries, so if
their errors are correlated at all it is positively, which the sum overstates
(conservative). These intervals cover the simulations' sampling only; the across-seed
interval of experiments.harness.replications covers the workload draw.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ratio_ci", "add_ratio_ci"]


def ratio_ci(num, num_low, num_high, den, den_low, den_high, same=None):
    """(low, high): the 95 % interval of ``num / den`` from each run's 95 % interval
    (``*_low`` / ``*_high``; module docstring). Array-like or scalar arguments; NaN where either
    run has no interval; ``same`` (booleans): rows where ``num`` and ``den`` are one run, whose
    ratio is 1 with the interval [1, 1] if the run has an interval."""
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        w_num = (np.log(np.asarray(num_high, dtype=float))
                 - np.log(np.asarray(num_low, dtype=float))) / 2
        w_den = (np.log(np.asarray(den_high, dtype=float))
                 - np.log(np.asarray(den_low, dtype=float))) / 2
        w = np.sqrt(w_num ** 2 + w_den ** 2)
        if same is not None:
            w = np.where(np.asarray(same, dtype=bool), 0.0 * w_num, w)
        r = num / den
        return r * np.exp(-w), r * np.exp(w)


def add_ratio_ci(df, ratio: str, reference: str, key: str = "dataset") -> None:
    """Add ``<ratio>_ci_low`` / ``<ratio>_ci_high`` to ``df`` (in place): the interval
    (:func:`ratio_ci`) of the column ``ratio``, which holds a row's qps / the qps of system
    ``reference`` in the same ``key`` group, from the two runs' ``qps_ci_low`` /
    ``qps_ci_high``. The reference's own row gets [1, 1] if its interval is known (a run over
    itself)."""
    is_ref = df.system == reference
    ref = df.loc[is_ref].set_index(key)
    cols = {c: df[key].map(ref[c]).to_numpy(dtype=float)
            for c in ("qps", "qps_ci_low", "qps_ci_high")}
    lo, hi = ratio_ci(df["qps"], df["qps_ci_low"], df["qps_ci_high"], cols["qps"],
                      cols["qps_ci_low"], cols["qps_ci_high"], same=is_ref.to_numpy())
    df[f"{ratio}_ci_low"], df[f"{ratio}_ci_high"] = lo, hi
