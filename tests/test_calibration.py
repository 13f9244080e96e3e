"""The joint calibration: its design is a Latin hypercube within the sensitivity table's ranges,
deterministic for a seed; a point passes only with all four figures within 15 % and every
ordering; the pair analysis finds the figures no point reconciles; and `cosmos run calibration
--scale tiny` gives the same CSVs for the same seed."""

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cosmos.cli import main
from cosmos.config import with_overrides
from cosmos.presets import PRESETS, get_preset
from experiments.figures import calibration as C
from experiments.figures import sensitivity as S
from experiments.figures.parts import sensitivity_regions as R
from experiments.figures.fig4a_qps import CONCLUSIONS
from experiments.harness.runner import Context
from experiments.harness.workloads import get_scale


def test_latin_hypercube_has_one_point_per_slice_and_follows_its_seed():
    u = C.latin_hypercube(12, 5, seed=3)
    assert u.shape == (12, 5) and (u >= 0).all() and (u < 1).all()
    for j in range(5):
        assert sorted(np.floor(u[:, j] * 12).astype(int)) == list(range(12))
    assert np.array_equal(u, C.latin_hypercube(12, 5, seed=3))
    assert not np.allclose(u, C.latin_hypercube(12, 5, seed=4))
    with pytest.raises(ValueError):
        C.latin_hypercube(0, 3, seed=0)


def test_design_is_within_the_documented_ranges_and_valid_for_every_system():
    assert 4 <= len(C.FACTORS) <= 8
    scale = get_scale("tiny")
    des = C.design(scale, seed=0)
    assert len(des) == C.DESIGN_POINTS["tiny"] + 1 and des.point.tolist() == list(range(len(des)))
    d0 = des.iloc[0]
    assert d0.kind == "defaults"
    assert d0["host.threads"] == get_preset("base").host.threads
    assert d0["switch.upstream_ports"] == 1.0 and d0["gpc.cores"] == get_preset("cosmos").gpc.cores
    for k in C.FACTORS:
        p = [p for p in S.PARAMETERS if p.key == k][0]
        assert des[k].between(p.low, p.high).all(), k
        assert C.factor_value(k, 0.0) == pytest.approx(p.low)
        assert C.factor_value(k, 1.0) == pytest.approx(p.high)
    assert des["host.threads"].map(lambda v: float(v).is_integer()).all()
    for row in des.to_dict("records"):
        ov = C.point_overrides(row, scale)
        for name in PRESETS:
            with_overrides(get_preset(name), ov)
    assert C.design(scale, seed=0).equals(des)
    assert not C.design(scale, seed=1).equals(des)


def _synthetic(points):
    """calibration.csv-like rows: per point a (sift, deep) pair of six-system QPS dicts."""
    rows = []
    for p, per_fam in points.items():
        for fam, qps in per_fam.items():
            rows += [{"point": p, "dataset": fam, "system": s, "qps": float(qps[s]),
                      "steady_state": True} for s in R.SYSTEMS]
    return pd.DataFrame(rows)


def _qps(cosmos, base, cxl, **extra):
    q = {"base": base, "dram-only": base * 1.1, "cxl-anns": cxl, "cosmos-norank": cxl * 1.2,
         "cosmos-noalgo": cosmos * 0.95, "cosmos": cosmos}
    q.update(extra)
    return q


def test_a_point_passes_only_with_four_figures_within_and_every_ordering():
    des = C.design(get_scale("tiny"), seed=0).iloc[:4]
    paper = {fam: (R.PAPER["cosmos_vs_base"][fam], R.PAPER["cosmos_vs_cxl_anns"][fam])
             for fam in ("sift", "deep")}
    good = {fam: _qps(100.0, 100.0 / vb, 100.0 / vc) for fam, (vb, vc) in paper.items()}
    df = _synthetic({
        0: good,
        1: {**good, "deep": _qps(100.0, 100.0 / 8.0, 100.0 / 2.35)},      # DEEP x Base off
        2: {**good, "sift": {**good["sift"], "cosmos-noalgo": 101.0}},     # an ordering broken
        3: {fam: _qps(100.0, 100.0 / (vb * 1.1), 100.0 / (vc * 0.9))      # within 15 %
            for fam, (vb, vc) in paper.items()},
    })
    pts = C.point_table(des, df)
    assert pts.passes.tolist() == [True, False, False, True]
    assert pts.figures_within.tolist() == [4, 3, 4, 4]
    assert pts.orderings.iloc[0] == 2 * len(CONCLUSIONS)
    assert pts.orderings_broken.iloc[2] == "sift: cosmos > cosmos-noalgo"
    assert pts.cosmos_vs_base_deep_miss.iloc[1] == pytest.approx(8.0 / 5.35 - 1)
    reg = C.region(pts)
    assert (reg.passing_points == 2).all()
    for r in reg.itertuples():
        assert r.passing_low == min(pts[r.factor].iloc[[0, 3]])
    text = C.calibrated_set(pts[pts.passes], get_scale("tiny"), 0)
    assert text.startswith("# CALIBRATED") and "Not a default" in text
    assert "--set switch.upstream_bandwidth_GBps=" in text     # derived knobs as config fields


def test_pairs_name_the_quotient_no_point_reaches():
    des = C.design(get_scale("tiny"), seed=0)
    # CXL-ANNS / Base stays 1.2-1.5 on SIFT-like while the paper's quotient is 6.72 / 2.35
    pts_in = {}
    for p in des.point:
        cos = 100.0 + 10 * p
        q = {fam: _qps(cos, cos / (4 + p * 0.5), cos / ((4 + p * 0.5) / (1.2 + 0.03 * p)))
             for fam in ("sift", "deep")}
        pts_in[p] = q
    pts = C.point_table(des, _synthetic(pts_in))
    pr = C.pairs(pts)
    assert len(pr) == len(list(itertools.combinations(C.FIGURES, 2)))
    assert (pr.joint_miss.diff().dropna() <= 0).all()          # hardest first
    row = pr[(pr.figure_a == "cosmos_vs_base_sift") &
             (pr.figure_b == "cosmos_vs_cxl_anns_sift")].iloc[0]
    assert row.quotient_paper == pytest.approx(6.72 / 2.35)
    assert row.quotient_min == pytest.approx(1.2) and row.quotient_max < 1.6
    assert row.quotient_meaning.startswith("CXL-ANNS QPS / Base QPS on sift")
    assert row.both_within == 0


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """`cosmos run calibration --scale tiny` twice with the same seed and cache."""
    root = tmp_path_factory.mktemp("cal")
    mp = pytest.MonkeyPatch()
    mp.setenv("COSMOS_CACHE", str(root / "cache"))
    mp.setenv("MPLBACKEND", "Agg")
    try:
        for out in ("a", "b"):
            rc = main(["run", "calibration", "--scale", "tiny", "--seed", "0", "--out",
                       str(root / out), "--workers", "2", "--no-progress"])
            assert rc == 0
    finally:
        mp.undo()
    return root / "a", root / "b"


def test_same_seed_same_csvs(two_runs):
    a, b = two_runs
    for name in ("design.csv", "calibration.csv", "points.csv", "region.csv", "pairs.csv"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    pts = pd.read_csv(a / "points.csv")
    assert len(pts) == C.DESIGN_POINTS["tiny"] + 1 and pts.steady_state.all()
    cal = pd.read_csv(a / "calibration.csv")
    assert len(cal) == len(pts) * 2 * len(R.SYSTEMS)
    assert (cal.qps > 0).all()
    assert (a / "calibration.png").stat().st_size > 5_000
    summary = (a / "summary.md").read_text()
    passing = int(pts.passes.sum())
    assert ("A region exists" in summary) == (passing > 0)
    # `cosmos reproduce --dry-run`'s line counts the rows the run wrote, from the same plan
    est = C.plan_sweep(Context(out=Path("."), scale=get_scale("tiny"), seed=0))
    assert f"for {len(cal)} rows of {len(pts)} design points" in est["what"]
    assert ("No point passes" in summary) == (passing == 0)
    assert (a / "calibrated_set.txt").exists() == (passing > 0)
