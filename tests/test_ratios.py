"""experiments.harness.ratios: the one interval rule for a ratio of two simulated QPS, used by
fig4a, scale_n, `cosmos replay`, sensitivity and recall_qps's winners."""

import numpy as np
import pandas as pd
import pytest

from experiments.harness.ratios import add_ratio_ci, ratio_ci


def test_ratio_ci_hand_worked():
    e = np.exp
    # 200 QPS known to within x e^+-0.03, over 100 known to within x e^+-0.04: the logs'
    # half-widths add in quadrature, sqrt(0.03^2 + 0.04^2) = 0.05, about the ratio 2
    lo, hi = ratio_ci(200.0, 200 * e(-0.03), 200 * e(0.03), 100.0, 100 * e(-0.04),
                      100 * e(0.04))
    assert lo == pytest.approx(1.902459, abs=1e-6) and hi == pytest.approx(2.102542, abs=1e-6)
    # a +-1 % interval on each run (as the --full stop rule leaves them): on the log scale
    # ln(303 / 297) / 2 = 0.0100003 each, sqrt(2) x that = 0.0141426 for the ratio 3, so
    # [3 e^-0.0141426, 3 e^0.0141426] = [2.957871, 3.042729]
    lo, hi = ratio_ci(300.0, 297.0, 303.0, 100.0, 99.0, 101.0)
    assert lo == pytest.approx(2.957871, abs=2e-6) and hi == pytest.approx(3.042729, abs=2e-6)
    # the interval of den / num is the reciprocal of that of num / den
    lo2, hi2 = ratio_ci(100.0, 99.0, 101.0, 300.0, 297.0, 303.0)
    assert lo2 == pytest.approx(1 / hi) and hi2 == pytest.approx(1 / lo)
    # no interval on either run: none on the ratio; a run over itself: [1, 1]
    lo, hi = ratio_ci([2.0, 2.0], [np.nan, 1.9], [np.nan, 2.1], [1.0, 1.0], [0.9, np.nan],
                      [1.1, np.nan])
    assert np.isnan(lo).all() and np.isnan(hi).all()
    lo, hi = ratio_ci([5.0], [4.0], [6.0], [5.0], [4.0], [6.0], same=[True])
    assert lo[0] == 1.0 and hi[0] == 1.0


def test_add_ratio_ci_per_group():
    df = pd.DataFrame({
        "dataset": ["sift", "sift", "deep", "deep", "deep"],
        "system": ["base", "cosmos", "base", "cosmos", "other"],
        "qps": [100.0, 300.0, 50.0, 500.0, 80.0],
        "qps_ci_low": [99.0, 297.0, 50 * np.exp(-0.04), 500 * np.exp(-0.03), np.nan],
        "qps_ci_high": [101.0, 303.0, 50 * np.exp(0.04), 500 * np.exp(0.03), np.nan]})
    df["qps_vs_base"] = df.qps / df.dataset.map(df[df.system == "base"].set_index("dataset").qps)
    add_ratio_ci(df, "qps_vs_base", "base")
    r = df.set_index(["dataset", "system"])
    # each row against the reference of its own group
    assert r.loc[("sift", "cosmos"), "qps_vs_base_ci_low"] == pytest.approx(2.957871, abs=2e-6)
    assert r.loc[("deep", "cosmos"), "qps_vs_base_ci_high"] == pytest.approx(10 * np.exp(0.05))
    # the references: [1, 1]; a run without an interval: none on its ratio
    ref = (r.loc[("sift", "base")].qps_vs_base_ci_low, r.loc[("deep", "base")].qps_vs_base_ci_high)
    assert ref == (1.0, 1.0)
    assert np.isnan(r.loc[("deep", "other")].qps_vs_base_ci_low)
