"""The coverage study of the QPS intervals: its table counts coverage and gives the
Clopper-Pearson interval, its always-controlled interval is the one the summary reports where
the summary uses the control, and a short run writes its files."""

import numpy as np
import pandas as pd
import pytest

from experiments.harness.replications import clopper_pearson
from experiments.tools import coverage_study as CS


def test_coverage_table_counts_and_intervals():
    truth = 100.0
    rows = pd.DataFrame({
        # plain: 3 of 4 cover; one claims no interval
        "plain_qps": [99.0, 101.0, 97.0, 100.0, 100.0],
        "plain_low": [98.0, 99.5, 96.0, 99.0, float("nan")],
        "plain_high": [101.0, 102.0, 98.0, 101.0, float("nan")],
        # controlled: all 5 cover
        "controlled_qps": [100.0] * 5, "controlled_low": [99.0] * 5,
        "controlled_high": [101.0] * 5,
        # reported: 4 of 5 (the last misses from above)
        "reported_qps": [100.0, 100.0, 100.0, 100.0, 103.0],
        "reported_low": [99.0, 99.0, 99.0, 99.0, 102.0],
        "reported_high": [101.0, 101.0, 101.0, 101.0, 104.0]})
    t = CS.coverage_table(rows, truth).set_index("interval")
    assert t.loc["plain", "intervals"] == 4 and t.loc["plain", "covered"] == 3
    assert t.loc["controlled", "covered"] == 5 and t.loc["reported", "covered"] == 4
    lo, hi = clopper_pearson(3, 4)
    assert t.loc["plain", "coverage_ci_low"] == lo and t.loc["plain", "coverage_ci_high"] == hi
    assert t.loc["controlled", "coverage_ci_high"] == 1.0
    assert t.loc["reported", "mean_rel_bias"] == pytest.approx(np.mean([0, 0, 0, 0, 0.03]))
    assert t.loc["controlled", "mean_rel_halfwidth"] == pytest.approx(0.01)


@pytest.fixture(scope="module")
def short_study(tmp_path_factory):
    root = tmp_path_factory.mktemp("cov")
    mp = pytest.MonkeyPatch()
    mp.setenv("MPLBACKEND", "Agg")
    try:
        rc = CS.main(["--replicates", "3", "--queries", "1000", "--stop", "900",
                      "--cache-dir", str(root / "cache"), "--out", str(root / "out"),
                      "--workers", "1", "--no-progress"])
    finally:
        mp.undo()
    return rc, root / "out"


def test_short_study_writes_its_files_and_the_controlled_interval_is_the_reported_one(short_study):
    rc, out = short_study
    assert rc in (0, 1)
    rows = pd.read_csv(out / "coverage_replicates.csv")
    table = pd.read_csv(out / "coverage.csv")
    assert len(rows) == 3 and rows.order_seed.tolist() == [0, 1, 2]
    assert table.interval.tolist() == list(CS.KINDS) and (table.replicates == 3).all()
    assert (out / "coverage_study.png").stat().st_size > 5_000
    # every order holds the same queries: the every-query rates differ only by the order
    assert rows.full_qps_window.std() / rows.full_qps_window.mean() < 0.05
    claimed = rows[np.isfinite(rows.plain_low)]
    assert len(claimed) >= 1
    # where the summary used the control, its interval is the one computed here for every run
    used = rows[rows.reported_control.astype(bool)]
    assert len(used) >= 1           # Cosmos on four devices: the control is used (seeded run)
    for r in used.itertuples():
        assert r.controlled_low == pytest.approx(r.reported_low, rel=1e-9)
        assert r.controlled_high == pytest.approx(r.reported_high, rel=1e-9)
        assert r.control_slope > 0
    # where it did not, the reported interval is the plain one
    for r in rows[~rows.reported_control.astype(bool) & np.isfinite(rows.plain_low)].itertuples():
        assert r.reported_low == pytest.approx(r.plain_low, rel=1e-9)
        assert r.reported_high == pytest.approx(r.plain_high, rel=1e-9)
