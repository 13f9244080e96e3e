"""Replications (experiments.harness.replications, ``--replications R``): distinct seeds, R = 1 as
today's run, the across-replication Student-t interval and the Clopper-Pearson interval of a
count, and ``cosmos run fig4a_qps --scale tiny --replications 2`` end to end."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cosmos.cli import main
from experiments.harness.replications import (clopper_pearson, ordering_rows, parse_replications,
                                      replication_seed, replication_seeds, t_interval,
                                      t_quantile, within_interval)
from experiments.harness.runner import Context
from experiments.harness.workloads import get_scale


def echo(**task):
    """A sweep task that returns its arguments (module level: picklable)."""
    return dict(task)


# ----------------------------------------------------------------------------- seeds


def test_replications_use_distinct_seeds_and_the_first_is_the_seed():
    for seed in (0, 7, 1000):
        seeds = replication_seeds(seed, 6)
        assert seeds[0] == seed and len(set(seeds)) == 6
        assert seeds == [replication_seed(seed, r) for r in range(6)] == list(range(seed,
                                                                                  seed + 6))
    assert replication_seeds(3, 1) == [3]


def test_replica_contexts_have_distinct_seeds_and_trace_folders(tmp_path):
    ctx = Context(out=tmp_path, scale=get_scale("tiny"), seed=5, replications=3, workers=1,
                  progress=False, sim_cache=False)
    assert ctx.seeds == [5, 6, 7]
    assert ctx.replica(0) is ctx                 # replication 0 is the run itself
    reps = [ctx.replica(r) for r in range(3)]
    assert [c.seed for c in reps] == [5, 6, 7]
    assert all(c.replications == 1 for c in reps[1:])
    folders = {str(c.traces_dir or c.out / "traces") for c in reps}
    assert len(folders) == 3
    assert reps[1].traces_dir == tmp_path / "traces" / "seed6"
    assert reps[1].sims is ctx.sims              # one count of simulations for the run
    rows = ctx.replicated_sweep(echo, lambda c: [{"seed": c.seed, "x": i} for i in range(2)],
                                desc="echo")
    assert [(r["replication"], r["seed"], r["x"]) for r in rows] == [
        (0, 5, 0), (0, 5, 1), (1, 6, 0), (1, 6, 1), (2, 7, 0), (2, 7, 1)]


@pytest.mark.parametrize("value, message", [
    ("0", "--replications must be >= 1, got 0"),
    ("-3", "--replications must be >= 1, got -3"),
    ("2.5", "--replications must be a whole number >= 1, got '2.5'"),
    ("many", "--replications must be a whole number >= 1, got 'many'"),
])
def test_bad_replications_are_one_line(value, message, tmp_path, capsys):
    with pytest.raises(ValueError, match="--replications"):
        parse_replications(value)
    rc = main(["run", "fig4a_qps", "--scale", "tiny", "--replications", value,
               "--out-root", str(tmp_path / "r"), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "r").exists()


def test_an_experiment_without_replications_refuses_more_than_one(tmp_path, capsys):
    rc = main(["run", "fig5a_lir", "--scale", "tiny", "--replications", "2",
               "--out-root", str(tmp_path / "r"), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and "fig5a_lir runs one workload instance" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "r").exists()


# ----------------------------------------------------------------------------- statistics


@pytest.mark.parametrize("df, expected", [(1, 12.7062047362), (2, 4.3026527297),
                                          (3, 3.1824463053), (4, 2.7764451052),
                                          (5, 2.5705818356), (9, 2.2621571628),
                                          (29, 2.0452296421)])
def test_t_quantile_is_exact_for_integer_degrees_of_freedom(df, expected):
    """Against the tabulated 0.975 quantiles of Student's t."""
    assert t_quantile(df) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("replications", [2, 5, 10])
def test_across_replication_interval_covers_a_known_mean(replications):
    """Synthetic replications with known mean and variance (normal, mean 100, sd 7): the 95 %
    Student-t interval covers the true mean in 95 % of 4,000 seeded draws (within 1.2 points:
    over three binomial standard errors), and the sample deviation estimates the true one."""
    rng = np.random.default_rng(20250)
    draws = rng.normal(100.0, 7.0, size=(4_000, replications))
    cover, sds = 0, []
    for row in draws:
        mean, lo, hi, sd = t_interval(row)
        assert lo < mean < hi and mean == pytest.approx(row.mean())
        cover += lo <= 100.0 <= hi
        sds.append(sd ** 2)
    assert abs(cover / len(draws) - 0.95) < 0.012, cover / len(draws)
    assert np.mean(sds) == pytest.approx(49.0, rel=0.05)   # unbiased variance


def test_t_interval_with_one_value_or_nan_has_no_interval():
    mean, lo, hi, sd = t_interval([3.0])
    assert mean == 3.0 and all(math.isnan(v) for v in (lo, hi, sd))
    assert math.isnan(t_interval([1.0, float("nan")])[1])


def test_within_interval_combines_the_runs_half_widths():
    lo, hi = within_interval([10.0, 20.0], [9.0, 17.0], [11.0, 23.0])
    assert (lo + hi) / 2 == pytest.approx(15.0)
    assert (hi - lo) / 2 == pytest.approx(math.sqrt(1 + 9) / 2)
    assert all(math.isnan(v) for v in within_interval([1.0, 2.0], [0.5, float("nan")],
                                                      [1.5, 2.5]))


def test_clopper_pearson_values_and_coverage():
    """Known values, and the exact coverage of the interval is at least 95 % at every true
    proportion on a grid, for 5 and 10 replications (the property it is chosen for)."""
    assert clopper_pearson(5, 5) == pytest.approx((0.025 ** (1 / 5), 1.0))
    assert clopper_pearson(0, 5) == pytest.approx((0.0, 1 - 0.025 ** (1 / 5)))
    assert clopper_pearson(3, 5) == pytest.approx((0.146633, 0.947255), abs=1e-6)
    for n in (5, 10):
        cis = [clopper_pearson(k, n) for k in range(n + 1)]
        for p in np.linspace(0.001, 0.999, 199):
            cov = sum(math.comb(n, k) * p ** k * (1 - p) ** (n - k)
                      for k, (lo, hi) in enumerate(cis) if lo <= p <= hi)
            assert cov >= 0.95 - 1e-9, (n, p, cov)


def test_ordering_rows_count_replications_where_the_higher_mean_is_above():
    frame = pd.DataFrame({"replication": [0, 0, 1, 1, 2, 2], "dataset": ["s"] * 6,
                          "system": ["a", "b"] * 3, "qps": [10, 9, 10, 11, 12, 8]})
    (row,) = ordering_rows(frame, ["dataset"], ["b", "a"])
    assert (row["higher"], row["lower"], row["holds"], row["replications"]) == ("a", "b", 2, 3)
    assert row["ratio_mean"] == pytest.approx((10 / 9 + 10 / 11 + 12 / 8) / 3)


# ----------------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """fig4a at the tiny scale: two replications, then the run without --replications (its
    own simulations: no simulation cache), then --replications 1 (from the cache)."""
    import os

    root = tmp_path_factory.mktemp("replications")
    old = os.environ.get("COSMOS_CACHE")
    os.environ["COSMOS_CACHE"] = str(root / "cache")
    try:
        common = ["--scale", "tiny", "--workers", "2", "--no-progress"]
        assert main(["run", "fig4a_qps", *common, "--replications", "2",
                     "--out", str(root / "r2")]) == 0
        assert main(["run", "fig4a_qps", *common, "--no-sim-cache",
                     "--out", str(root / "today")]) == 0
        assert main(["run", "fig4a_qps", *common, "--replications", "1",
                     "--out", str(root / "r1")]) == 0
    finally:
        if old is None:
            os.environ.pop("COSMOS_CACHE", None)
        else:
            os.environ["COSMOS_CACHE"] = old
    return root


#: columns that measure this machine's wall clock, not the simulation
WALL = ["wall_s", "requests_per_wall_s"]


def test_two_replications_end_to_end(runs):
    out = runs / "r2"
    for f in ("qps.csv", "qps_replications.csv", "orderings.csv", "per_device.csv",
              "summary.md", "fig4a_qps.png", "config.json", "traces/sift.npz",
              "traces/seed1/sift.npz", "traces/deep.npz", "traces/seed1/deep.npz"):
        assert (out / f).is_file(), f
    from experiments.figures.fig4a_qps import ROWS

    n = len(ROWS)                        # rows per dataset
    agg = pd.read_csv(out / "qps.csv")
    per = pd.read_csv(out / "qps_replications.csv")
    assert (agg["replications"] == 2).all() and len(agg) == 2 * n
    assert sorted(per["seed"].unique()) == [0, 1] and len(per) == 4 * n
    # distinct workloads: every system's QPS differs between the two replications
    wide = per.pivot_table(index=["dataset", "system"], columns="seed", values="qps")
    assert (wide[0] != wide[1]).all()
    # the mean and its Student-t interval (df = 1) of each figure
    for (fam, system), sub in per.groupby(["dataset", "system"]):
        row = agg[(agg.dataset == fam) & (agg.system == system)].iloc[0]
        mean, lo, hi, _ = t_interval(sub["qps"])
        assert row.qps == pytest.approx(mean) and row.qps_rep_ci_low == pytest.approx(lo)
        assert row.qps_rep_ci_high == pytest.approx(hi)
        assert row.qps_vs_base == pytest.approx(sub["qps_vs_base"].mean())
    orders = pd.read_csv(out / "orderings.csv")
    m = n - 1                            # orderings: between the systems, not the variant row
    assert len(orders) == 2 * m * (m - 1) // 2 and orders["holds"].between(0, 2).all()
    summary = (out / "summary.md").read_text()
    assert "2 replications" in summary and "Clopper-Pearson" in summary
    assert "cosmos above cosmos-noalgo" in summary
    import json

    cfg = json.loads((out / "config.json").read_text())
    assert cfg["replications"] == 2 and cfg["replication_seeds"] == [0, 1]
    assert "--replications 2" in cfg["rerun"]


def test_one_replication_is_todays_run(runs):
    """Without --replications, replication 0 of the replicated run, and --replications 1 give
    the same figures, bit for bit (each simulated on its own: the simulator is
    deterministic), in today's files."""
    today = pd.read_csv(runs / "today" / "qps.csv")
    assert "replications" not in today
    rep0 = pd.read_csv(runs / "r2" / "qps_replications.csv")
    rep0 = rep0[rep0.replication == 0].drop(columns=["replication", "seed"])
    rep0 = rep0.reset_index(drop=True)
    pd.testing.assert_frame_equal(today.drop(columns=WALL), rep0.drop(columns=WALL),
                                  check_exact=True, check_dtype=False)
    one = pd.read_csv(runs / "r1" / "qps.csv")
    pd.testing.assert_frame_equal(today.drop(columns=WALL), one.drop(columns=WALL),
                                  check_exact=True)
    files = sorted(p.name for p in (runs / "today").iterdir())
    assert sorted(p.name for p in (runs / "r1").iterdir()) == files
    assert "orderings.csv" not in files
    for name in ("per_device.csv",):
        assert (runs / "today" / name).read_bytes() == (runs / "r1" / name).read_bytes()
    trace = Path(runs / "today" / "traces" / "sift.npz")
    assert trace.is_file()


def test_recall_qps_is_replicated(tmp_path, capsys):
    """recall_qps runs --replications R too (its R = 1 identity and R = 2 run:
    tests/test_recall_qps.py); an experiment without replications names both in its refusal."""
    from experiments.harness.runner import REPLICATED

    assert {"fig4a_qps", "recall_qps"} <= set(REPLICATED)
    rc = main(["run", "fig5a_lir", "--scale", "tiny", "--replications", "2",
               "--out-root", str(tmp_path / "r"), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and "fig4a_qps, recall_qps" in err
