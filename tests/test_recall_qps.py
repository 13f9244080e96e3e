"""recall_qps: the CSV has every (system, knob) point with finite recall and QPS, the Pareto
front and the recall-target winners are computed as stated (hand-made sets), and two runs
give the same CSV."""

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cosmos.cli import main
from experiments.figures import recall_qps as R
from experiments.figures.parts import batch_sweep as B
from experiments.figures.parts import recall_winners as W
from experiments.harness.runner import Context
from experiments.harness.workloads import get_scale


def _run(root, name):
    rc = main(["run", "recall_qps", "--scale", "tiny", "--out", str(root / name),
               "--workers", "2", "--no-progress"])
    assert rc == 0
    return root / name


@pytest.fixture(scope="module")
def tiny_runs(tmp_path_factory):
    """Two `cosmos run recall_qps --scale tiny`: the second without the simulation cache, so
    it simulates every point again."""
    root = tmp_path_factory.mktemp("rq")
    mp = pytest.MonkeyPatch()
    mp.setenv("COSMOS_CACHE", str(root / "cache"))
    mp.setenv("MPLBACKEND", "Agg")
    try:
        first = _run(root, "a")
        rc = main(["run", "recall_qps", "--scale", "tiny", "--out", str(root / "b"),
                   "--workers", "2", "--no-progress", "--no-sim-cache"])
        assert rc == 0
    finally:
        mp.undo()
    return first, root / "b"


def test_csv_has_every_system_and_knob_point(tiny_runs):
    folder, _ = tiny_runs
    raw = pd.read_csv(folder / "recall_qps.csv")
    assert list(raw.columns) == [R.RECALL_COLUMN if c == "recall" else c for c in R.COLUMNS]
    assert R.RECALL_COLUMN == "recall_at_10"
    df = R.read_table(folder)
    assert list(df.columns) == R.COLUMNS
    grid, clusters = R.GRIDS["tiny"], get_scale("tiny").num_clusters
    want = set()
    for fam in ("sift", "deep"):
        for p in grid.graph_probes:
            for L in grid.cand_list_len:
                want |= {(fam, s, p, L, -1) for s in W.SYSTEMS["graph"]}
        for p in grid.ivfpq_probes:
            for r in grid.rerank:
                want |= {(fam, s, p, -1, r) for s in W.SYSTEMS["ivfpq"]}
        for p in grid.exact_probes:
            want |= {(fam, s, p, -1, -1) for s in W.SYSTEMS["exact"]}
    assert all(p <= clusters for p in grid.graph_probes + grid.ivfpq_probes + grid.exact_probes)
    got = {(r.dataset, r.system, int(r.num_probes), int(r.cand_list_len), int(r.rerank))
           for r in df.fillna(-1).itertuples()}
    assert got == want and len(df) == len(want)
    for col in ("recall", "index_bytes", "qps", "latency_mean_ns", "dram_bytes_per_query"):
        assert np.isfinite(df[col]).all() and (df[col] > 0).all(), col
    assert ((df.recall > 0) & (df.recall <= 1)).all()
    assert (df.family == df.system.map(W.FAMILY_OF)).all()
    # exact scan of the probed lists finds every neighbour the lists hold: more probes, no
    # less recall; re-ranking never lowers IVF-PQ recall at the same probes
    for (fam, s), g in df[df.family == "exact"].groupby(["dataset", "system"]):
        assert g.sort_values("num_probes").recall.is_monotonic_increasing
    iv = df[df.system == "ivfpq-host"].set_index(["dataset", "num_probes", "rerank"]).recall
    for (fam, p, r), v in iv.items():
        if r > 0:
            assert v >= iv[(fam, p, 0)] - 1e-12
    # the two systems of a family replay the same trace: the same recall at the same knobs
    key = ["dataset", "family", "num_probes", "cand_list_len", "rerank"]
    assert (df.fillna(-1).groupby(key).recall.nunique() == 1).all()
    # near-memory scans read the same codes as the host ones: bytes per query equal, but
    # for ivfpq-pnm's precomputed term tables, one pq_m x 256 float32 table (16 KiB) per
    # probed list read from the device (issue 54; the host adds its own from host DRAM)
    for fam in ("ivfpq", "exact"):
        h, p = (df[df.system == f"{fam}-{w}"].set_index(["dataset", "num_probes", "rerank"])
                .dram_bytes_per_query.sort_index() for w in ("host", "pnm"))
        terms = h.index.get_level_values("num_probes").to_numpy() * 16384 \
            if fam == "ivfpq" else 0
        assert np.allclose(h.to_numpy() + terms, p.to_numpy(), rtol=0.02)
    md = (folder / "summary.md").read_text()
    assert "recall 0.9" in md and "recall 0.95" in md and "23.72x" in md
    for ext in ("png", "pdf"):
        assert (folder / f"recall_qps.{ext}").stat().st_size > 1000


def test_batch_size_sweep(tiny_runs):
    """batch_sweep.csv: exact-pnm-batch at each B of BATCH_SWEEP on each workload's exact
    trace at its most probes. B = 1 is exact-pnm's run exactly; DRAM bytes per query never
    grow as B doubles (a batch of 2B reads at most its two halves' lists); with one batch in
    flight, the measured queries per second bend (their most) within one doubling of the
    roofline's B* at the unit's stream rate (cosmos.systems.roofline_batch)."""
    folder, _ = tiny_runs
    sw = pd.read_csv(folder / "batch_sweep.csv")
    assert list(sw.columns) == B.BATCH_COLUMNS
    assert len(sw) == 2 * len(B.BATCH_SWEEP) and set(sw.dataset) == {"sift", "deep"}
    for col in ("qps", "latency_mean_ns", "dram_bytes_per_query", "qps_one_batch",
                "latency_one_batch_ns", "roofline_batch", "roofline_batch_dram_share"):
        assert np.isfinite(sw[col]).all() and (sw[col] > 0).all(), col
    df = R.read_table(folder)
    bend = B.bend_batch(sw)
    for fam, g in sw.groupby("dataset"):
        g = g.sort_values("batch_queries")
        assert list(g.batch_queries) == list(B.BATCH_SWEEP)
        p = int(g.num_probes.iloc[0])
        assert p == max(R.GRIDS["tiny"].exact_probes)
        pnm = df[(df.dataset == fam) & (df.system == "exact-pnm") & (df.num_probes == p)]
        one = g.iloc[0]
        for col in ("qps", "latency_mean_ns", "dram_bytes_per_query"):
            assert one[col] == pytest.approx(float(pnm[col].iloc[0]), rel=1e-12), col
        assert g.dram_bytes_per_query.is_monotonic_decreasing
        b_star = float(g.roofline_batch.iloc[0])
        assert abs(math.log2(bend[fam]) - math.log2(b_star)) <= 1, (fam, bend[fam], b_star)
        # DEEP-like is float32 (B* = 8), SIFT-like uint8 (B* = 2): 128 MACs against 64 B
        assert b_star == {"deep": 8.0, "sift": 2.0}[fam]
        assert float(g.roofline_batch_dram_share.iloc[0]) > b_star
    md = (folder / "summary.md").read_text()
    assert "### Batched exact scan: B queries per pass (exact-pnm-batch)" in md
    for ext in ("png", "pdf"):
        assert (folder / f"batch_sweep.{ext}").stat().st_size > 1000


def test_two_runs_are_identical(tiny_runs):
    # index_build_s is a measured wall time (the one column allowed to differ)
    a, b = (pd.read_csv(f / "recall_qps.csv").drop(columns="index_build_s") for f in tiny_runs)
    pd.testing.assert_frame_equal(a, b)
    pd.testing.assert_frame_equal(*(pd.read_csv(f / "batch_sweep.csv") for f in tiny_runs))
    assert (tiny_runs[0] / "summary.md").read_text() == (tiny_runs[1] / "summary.md").read_text()


def test_pareto_front_on_a_hand_made_set():
    pts = pd.DataFrame({"recall": [0.5, 0.6, 0.6, 0.7, 0.8, 0.8, 0.9, 0.55, float("nan")],
                        "qps": [1000, 900, 950, 500, 600, 600, 100, 800, 5000]})
    front = W.pareto_front(pts)
    # (0.5, 1000), (0.6, 950), (0.8, 600) once, (0.9, 100); dominated: (0.6, 900),
    # (0.7, 500) by (0.8, 600), (0.55, 800) by (0.6, 950); the NaN row is ignored
    assert list(zip(front.recall, front.qps)) == [(0.5, 1000), (0.6, 950), (0.8, 600),
                                                  (0.9, 100)]
    assert front.qps.is_monotonic_decreasing
    assert W.pareto_front(pts.iloc[:0]).empty


def test_qps_at_recall_interpolates_on_the_front():
    front = W.pareto_front(pd.DataFrame({"recall": [0.8, 0.9, 1.0], "qps": [1000, 100, 10]}))
    assert W.qps_at_recall(front, 0.9) == 100                       # a point on the front
    assert W.qps_at_recall(front, 0.85) == pytest.approx(math.sqrt(1000 * 100))  # log-linear
    assert W.qps_at_recall(front, 0.5) == 1000     # below the sweep: its lowest-effort point
    assert W.is_lower_bound(front, 0.5) and not W.is_lower_bound(front, 0.8)
    assert not W.is_lower_bound(front, 0.85)
    # a low-recall point the front drops still counts as swept: not a bound
    swept = pd.DataFrame({"recall": [0.5, 0.92], "qps": [10, 20]})
    assert len(W.pareto_front(swept)) == 1 and not W.is_lower_bound(swept, 0.9)
    assert math.isnan(W.qps_at_recall(front.iloc[:2], 0.95))       # cannot reach


def test_winners_on_a_hand_made_frame():
    rows = []

    def add(system, pts, dataset="sift"):
        rows.extend(dict(dataset=dataset, system=system, recall=r, qps=q) for r, q in pts)

    add("cosmos", [(0.85, 2000), (0.92, 1500), (0.97, 400)])
    add("base", [(0.85, 300), (0.92, 200), (0.97, 50)])
    add("ivfpq-pnm", [(0.88, 3000), (0.93, 1000)])       # reaches 0.9, not 0.95
    add("ivfpq-host", [(0.88, 300), (0.93, 100)])
    add("exact-pnm", [(1.0, 100)])
    add("cosmos", [(0.5, 100)], dataset="deep")           # nobody reaches either target
    win = W.winners(pd.DataFrame(rows))

    def at(dataset, target):
        (i,) = win.index[(win.dataset == dataset) & (win.target == target)]
        return win.loc[i]

    w = at("sift", 0.9)
    # ivfpq-pnm at 0.9: log-interpolated between 3000 and 1000 -> 3000 * (1/3)^(0.4)
    ivf = 3000 * (1000 / 3000) ** ((0.9 - 0.88) / (0.93 - 0.88))
    cos = 2000 * (1500 / 2000) ** ((0.9 - 0.85) / (0.92 - 0.85))
    assert w.system == "ivfpq-pnm" and w.family == "ivfpq" and w.qps == pytest.approx(ivf)
    assert w.runner_up == "cosmos" and w.runner_up_family == "graph"
    assert w.margin == pytest.approx(ivf / cos)
    w = at("sift", 0.95)
    assert w.system == "cosmos" and w.runner_up == "exact-pnm"
    assert w.margin == pytest.approx(1500 * (400 / 1500) ** (0.03 / 0.05) / 100)
    assert set(w.not_reached.split(", ")) == {"ivfpq-pnm", "ivfpq-host"}
    line = R._winner_line(w)
    assert "cannot reach 0.95: ivfpq-pnm, ivfpq-host" in line and "graph" in line
    assert w.lower_bounds == "exact-pnm"           # its one point is above 0.95 too
    w9 = at("sift", 0.9)
    assert w9.lower_bounds == "exact-pnm" and "at least" in R._winner_line(w9)
    d = at("deep", 0.9)
    assert pd.isna(d.system) and pd.isna(d.runner_up) and math.isnan(d.margin)
    assert "no system reaches" in R._winner_line(d)
    # a winner whose family alone reaches the target: no margin
    only = W.winners(pd.DataFrame([dict(dataset="x", system="cosmos", recall=0.99, qps=5),
                                   dict(dataset="x", system="base", recall=0.99, qps=1),
                                   dict(dataset="x", system="ivfpq-pnm", recall=0.5, qps=9)]))
    o = only.iloc[0]
    assert o.system == "cosmos" and pd.isna(o.runner_up) and math.isnan(o.margin)
    assert "no system of another family reaches it" in R._winner_line(o)


def test_chameleon_ratios_pair_host_and_pnm_at_the_same_knobs():
    df = pd.DataFrame([
        dict(dataset="sift", system="ivfpq-host", num_probes=4, rerank=0, recall=0.7, qps=100.0,
             latency_unloaded_mean_ns=4000.0),
        dict(dataset="sift", system="ivfpq-pnm", num_probes=4, rerank=0, recall=0.7, qps=500.0,
             latency_unloaded_mean_ns=1000.0),
        dict(dataset="sift", system="ivfpq-pnm", num_probes=8, rerank=0, recall=0.8, qps=9.0,
             latency_unloaded_mean_ns=1.0),
    ])
    c = R.chameleon_ratios(df)
    assert len(c) == 1
    assert c.qps_ratio.iloc[0] == 5.0 and c.latency_ratio.iloc[0] == 4.0


def test_simulation_cost_counts_scan_lines(tiny_runs):
    """Sweeps start the costliest simulations first: a scan trace's cost is its lists' code
    lines plus its re-rank reads, so it grows with the probes and the re-rank depth."""
    from experiments.harness.sim import simulation_cost

    traces = tiny_runs[0] / "traces"
    cost = {p.stem: simulation_cost({"trace_path": str(p), "num_queries": 50})
            for p in traces.glob("sift-*.npz")}
    assert 0 < cost["sift-ivfpq-p2-r0"] < cost["sift-ivfpq-p4-r0"] < cost["sift-ivfpq-p4-r32"]
    assert 0 < cost["sift-exact-p1"] < cost["sift-exact-p2"]
    # a SIFT-like code is 16 bytes, a vector 128: the exact scan reads 8x the lines of IVF-PQ
    assert cost["sift-exact-p2"] > 4 * cost["sift-ivfpq-p2-r0"]


def test_dry_run_estimate_follows_the_measured_requests(tiny_runs):
    """The plan's estimate of the sweep (recall_qps.estimated_requests) against the DRAM
    requests the tiny run simulated, point by point: the graph points from the plan's table
    of measured requests, the scans from the lists' lines (the mean list, so probed lists,
    being larger, read somewhat more; exact-pnm-batch is estimated without sharing, an upper
    bound). Here 0.62-0.98 per point (DEEP-like's exact scans the lowest: its probed lists are
    the most above the mean) and 0.86 in all; at the default scale the same comparison gives
    0.85-1.03 per point and 0.98 in all (docs/experiments.md)."""
    est = R.estimated_requests(Context(out=Path("."), scale=get_scale("tiny")))
    got = pd.read_csv(tiny_runs[0] / "recall_qps.csv")
    got["measured"] = got.dram_bytes_per_query / 64
    key = ["dataset", "system", "num_probes", "cand_list_len", "rerank"]
    j = est.merge(got[key + ["measured"]], on=key, how="left", validate="one_to_one")
    assert len(j) == len(got) and j.measured.notna().all()
    ratio = j.requests_per_query / j.measured
    single = j.system != "exact-pnm-batch"
    assert ratio[single].between(0.55, 1.5).all(), j[single & ~ratio.between(0.55, 1.5)]
    assert (ratio[~single] >= 0.9).all()
    total = j.requests_per_query.sum() / j.measured.sum()
    assert 0.8 < total < 1.25, total
    text = R.plan_sweep(Context(out=Path("."), scale=get_scale("full")))["what"]
    assert text.startswith("estimate of its own sweep") and "CPU hours" in text


# ------------------------------------------------------------------ winners with intervals


def test_qps_interval_at_recall_on_a_hand_front():
    """At a front point (and at a lower bound: the front's first point) the interval is that
    run's; between two points the relative errors below and above are the root sum of
    squares of (1 - t) and t times the two runs' (delta method on the log-linear
    interpolation); no interval where a run has none or the target is not reached."""
    f = W.pareto_front(pd.DataFrame({"recall": [0.8, 0.9, 1.0], "qps": [1000.0, 100.0, 10.0],
                                     "qps_ci_low": [900.0, 95.0, 9.0],
                                     "qps_ci_high": [1200.0, 110.0, 11.0]}))
    assert W.qps_interval_at_recall(f, 0.9) == (95.0, 110.0)           # on a front point
    assert W.qps_interval_at_recall(f, 0.5) == (900.0, 1200.0)         # a lower bound
    q = W.qps_at_recall(f, 0.85)                                        # t = 0.5
    lo, hi = W.qps_interval_at_recall(f, 0.85)
    assert lo == pytest.approx(q * (1 - math.hypot(0.5 * 0.1, 0.5 * 0.05)))
    assert hi == pytest.approx(q * (1 + math.hypot(0.5 * 0.2, 0.5 * 0.1)))
    q = W.qps_at_recall(f, 0.92)                                        # t = 0.2
    lo, hi = W.qps_interval_at_recall(f, 0.92)
    assert lo == pytest.approx(q * (1 - math.hypot(0.8 * 0.05, 0.2 * 0.1)))
    assert hi == pytest.approx(q * (1 + math.hypot(0.8 * 0.1, 0.2 * 0.1)))
    assert all(math.isnan(v) for v in W.qps_interval_at_recall(f.iloc[:2], 0.95))
    bare = W.pareto_front(pd.DataFrame({"recall": [0.8, 1.0], "qps": [1000.0, 10.0]}))
    assert all(math.isnan(v) for v in W.qps_interval_at_recall(bare, 0.9))
    half = f.assign(qps_ci_low=[900.0, float("nan"), 9.0])
    assert math.isnan(W.qps_interval_at_recall(W.pareto_front(half), 0.85)[0])


def test_winners_carry_the_intervals_of_the_runs():
    """winners.csv's intervals on a hand-made frame: the winner on a front point has its
    run's interval, the runner-up's is interpolated, and the margin's is the ratio rule of
    experiments.harness.ratios; without intervals they are empty and ci_note says why."""
    rows = [dict(dataset="s", system="cosmos", recall=0.8, qps=1000.0, qps_ci_low=950.0,
                 qps_ci_high=1100.0),
            dict(dataset="s", system="cosmos", recall=1.0, qps=10.0, qps_ci_low=9.0,
                 qps_ci_high=11.0),
            dict(dataset="s", system="ivfpq-pnm", recall=0.9, qps=800.0, qps_ci_low=760.0,
                 qps_ci_high=880.0)]
    (w,) = W.winners(pd.DataFrame(rows), targets=(0.9,)).itertuples()
    assert (w.system, w.runner_up) == ("ivfpq-pnm", "cosmos")
    assert (w.qps, w.qps_ci_low, w.qps_ci_high) == (800.0, 760.0, 880.0)
    ru = 100.0                                    # sqrt(1000 * 10): halfway, log-linear
    assert w.runner_up_qps == pytest.approx(ru)
    assert w.runner_up_qps_ci_low == pytest.approx(ru * (1 - math.hypot(0.025, 0.05)))
    assert w.runner_up_qps_ci_high == pytest.approx(ru * (1 + math.hypot(0.05, 0.05)))
    # the margin's: the delta method on the log ratio (experiments.harness.ratios), the two
    # runs' log half-widths in quadrature around 8
    half = math.hypot(math.log(880 / 760) / 2,
                      math.log(w.runner_up_qps_ci_high / w.runner_up_qps_ci_low) / 2)
    assert w.margin == pytest.approx(8.0)
    assert w.margin_ci_low == pytest.approx(8.0 * math.exp(-half))
    assert w.margin_ci_high == pytest.approx(8.0 * math.exp(half))
    assert w.ci_note == "" and list(W.winners(pd.DataFrame(rows)).columns) == W.WINNER_COLUMNS
    line = R._winner_line(w)
    assert "800 QPS (95 % CI 760-880)" in line and "8.00x (95 % CI" in line
    bare = W.winners(pd.DataFrame(rows).drop(columns=["qps_ci_low", "qps_ci_high"]),
                     targets=(0.9,)).iloc[0]
    assert math.isnan(bare.qps_ci_low) and math.isnan(bare.margin_ci_high)
    assert bare.ci_note == W.NO_RUN_INTERVAL and "CI" not in R._winner_line(bare)


def _replications_frame():
    """Three synthetic replications of one dataset (recall target 0.9): cosmos (graph) at
    632.46 (sqrt(1000 x 400)), 848.53 (sqrt(1200 x 600)) and 900 QPS at the target;
    ivfpq-pnm at 700, 650, 800; exact-pnm at 5000 in replication 0 only (it cannot reach 0.9
    in the others); base low in all; exact-host never reaches it. Every run has a +-5 %
    interval."""
    pts = {0: {"cosmos": [(0.85, 1000), (0.95, 400)], "ivfpq-pnm": [(0.9, 700)],
               "exact-pnm": [(0.92, 5000)], "base": [(0.95, 100)], "exact-host": [(0.8, 50)]},
           1: {"cosmos": [(0.85, 1200), (0.95, 600)], "ivfpq-pnm": [(0.9, 650)],
               "exact-pnm": [(0.85, 5000)], "base": [(0.95, 90)], "exact-host": [(0.8, 50)]},
           2: {"cosmos": [(0.9, 900)], "ivfpq-pnm": [(0.9, 800)], "exact-pnm": [(0.85, 5000)],
               "base": [(0.95, 80)], "exact-host": [(0.8, 50)]}}
    return pd.DataFrame([dict(replication=r, seed=10 + r, dataset="s", system=s, recall=rc,
                              qps=float(q), qps_ci_low=0.95 * q, qps_ci_high=1.05 * q)
                         for r, systems in pts.items() for s, curve in systems.items()
                         for rc, q in curve])


def test_replicated_winners_on_synthetic_replications():
    """The winner is the most mean QPS among the systems that reach the target in every
    replication (exact-pnm's 5,000 in one replication does not count), with its Student-t
    interval over the replications; it wins in 2 of 3 (replication 0's own winner is
    exact-pnm), its family in 2 of 3; the margin is the mean of the replications' ratios
    with their Student-t interval, above 1 in 2 of 3."""
    from experiments.harness.replications import clopper_pearson, t_interval, within_interval

    per = _replications_frame()
    win, each = W.replicated_winners(per, targets=(0.9,))
    assert list(win.columns) == W.WINNER_COLUMNS + W.REPLICATED_WINNER_COLUMNS
    assert list(each.system) == ["exact-pnm", "cosmos", "cosmos"]
    assert list(each.seed) == [10, 11, 12]
    (w,) = win.itertuples()
    cos = [math.sqrt(1000 * 400), math.sqrt(1200 * 600), 900.0]
    ivf = [700.0, 650.0, 800.0]
    assert (w.system, w.family, w.runner_up, w.runner_up_family) == (
        "cosmos", "graph", "ivfpq-pnm", "ivfpq")
    mean, lo, hi, sd = t_interval(cos)
    assert (w.qps, w.qps_rep_ci_low, w.qps_rep_ci_high, w.qps_rep_sd) == pytest.approx(
        (mean, lo, hi, sd))
    # the runs' own intervals carried to the mean: cosmos's first two at t = 0.5 between
    # two +-5 % runs (0.05 / sqrt(2) each way), the third on a point (5 %)
    rel = [0.05 / math.sqrt(2), 0.05 / math.sqrt(2), 0.05]
    assert (w.qps_ci_low, w.qps_ci_high) == pytest.approx(within_interval(
        cos, [q * (1 - e) for q, e in zip(cos, rel)], [q * (1 + e) for q, e in zip(cos, rel)]))
    assert w.runner_up_qps == pytest.approx(sum(ivf) / 3)
    ratios = [c / i for c, i in zip(cos, ivf)]
    mean, lo, hi, sd = t_interval(ratios)
    assert (w.margin, w.margin_rep_ci_low, w.margin_rep_ci_high) == pytest.approx((mean, lo, hi))
    assert (w.wins, w.family_wins, w.margin_holds) == (2, 2, 2)
    assert (w.wins_ci_low, w.wins_ci_high) == pytest.approx(clopper_pearson(2, 3))
    assert w.reached == "cosmos, ivfpq-pnm, base" and w.not_reached == "exact-host"
    assert w.reached_in_some == "exact-pnm (1 of 3)"
    assert w.lower_bounds == "exact-pnm, base" and w.replications == 3 and w.seeds == "10 11 12"
    line = R._winner_line(w)
    assert "wins in 2 of 3 replications" in line and "its family in 2 of 3" in line
    assert "above it in 2 of 3 replications" in line and "exact-pnm (1 of 3)" in line
    # a frame of one replication gives winners() of that replication
    one = per[per.replication == 1]
    w1, each1 = W.replicated_winners(one, targets=(0.9,))
    pd.testing.assert_frame_equal(
        each1.drop(columns=["replication", "seed"]),
        W.winners(one.drop(columns=["replication", "seed"]), targets=(0.9,)))
    assert w1.wins.iloc[0] == 1 and math.isnan(w1.qps_rep_ci_low.iloc[0])


def test_aggregate_gives_each_points_means_over_the_replications():
    from experiments.harness.replications import t_interval, within_interval

    rows = []
    for r, (rc, q) in enumerate([(0.90, 100.0), (0.92, 130.0), (0.91, 115.0)]):
        base = {c: 1.0 for c in R.COLUMNS}
        base.update(dataset="s", family="graph", system="cosmos", num_probes=2,
                    cand_list_len=16, rerank=float("nan"), recall=rc, qps=q,
                    qps_ci_low=q - 2, qps_ci_high=q + 2, steady_state=r != 1,
                    ci_note="note" if r else "", latency_mean_ns=1000.0 * (r + 1),
                    index_build_s=float("nan") if r == 2 else 1.0)
        rows.append({"replication": r, "seed": r, **base})
    agg = R.aggregate(pd.DataFrame(rows))
    assert len(agg) == 1 and list(agg.columns[:len(R.COLUMNS)]) == R.COLUMNS
    a = agg.iloc[0]
    m, lo, hi, sd = t_interval([100.0, 130.0, 115.0])
    assert (a.qps, a.qps_rep_ci_low, a.qps_rep_ci_high, a.qps_rep_sd) == pytest.approx(
        (m, lo, hi, sd))
    assert (a.qps_ci_low, a.qps_ci_high) == pytest.approx(within_interval(
        [100, 130, 115], [98, 128, 113], [102, 132, 117]))
    assert a.recall == pytest.approx(0.91) and a.latency_mean_ns == pytest.approx(2000.0)
    assert math.isnan(a.index_build_s) and not a.steady_state and a.ci_note == "note"
    assert a.replications == 3 and a.seeds == "0 1 2" and math.isnan(a.rerank)


def test_winners_csv_of_the_tiny_run(tiny_runs):
    """winners.csv is winners() of recall_qps.csv; at the tiny scale the runs have no
    interval of their own (85 queries: too few completions for batch means), so the
    intervals are empty and ci_note and summary.md say why."""
    folder, _ = tiny_runs
    df = R.read_table(folder)
    assert df.qps_ci_low.isna().all()
    got = R.read_winners(folder)
    want = W.winners(df)
    assert list(got.columns) == W.WINNER_COLUMNS and len(got) == 2 * len(W.TARGETS)
    text = ["system", "family", "runner_up", "runner_up_family"]   # None where empty
    pd.testing.assert_frame_equal(got.drop(columns=text), want.drop(columns=text),
                                  check_dtype=False)
    assert (got[text].fillna("") == want[text].fillna("")).all().all()
    for col in ("qps_ci_low", "qps_ci_high", "margin_ci_low", "margin_ci_high"):
        assert got[col].isna().all(), col
    assert (got.ci_note == W.NO_RUN_INTERVAL).all()
    md = (folder / "summary.md").read_text()
    assert "no interval of their own at this scale" in md


@pytest.fixture(scope="module")
def replicated_runs(tiny_runs):
    """recall_qps --replications 1 and --replications 2 at the tiny scale, with the
    simulation cache of :func:`tiny_runs` (replication 0's simulations are read from it;
    replication 1 builds its workloads and simulates)."""
    root = tiny_runs[0].parent
    mp = pytest.MonkeyPatch()
    mp.setenv("COSMOS_CACHE", str(root / "cache"))
    mp.setenv("MPLBACKEND", "Agg")
    try:
        for r in (1, 2):
            assert main(["run", "recall_qps", "--scale", "tiny", "--replications", str(r),
                         "--out", str(root / f"r{r}"), "--workers", "2", "--no-progress"]) == 0
    finally:
        mp.undo()
    return root / "r1", root / "r2"


def test_one_replication_is_todays_run(tiny_runs, replicated_runs):
    """--replications 1 writes the files of the run without it with the same figures, and
    replication 0 of a replicated run is that run (the run without --replications here
    simulated everything itself: --no-sim-cache). index_build_s is a measured wall time."""
    today, (r1, r2) = tiny_runs[1], replicated_runs
    files = sorted(p.name for p in today.iterdir())
    assert sorted(p.name for p in r1.iterdir()) == files and "winners.csv" in files
    t = pd.read_csv(today / "recall_qps.csv").drop(columns="index_build_s")
    pd.testing.assert_frame_equal(t, pd.read_csv(r1 / "recall_qps.csv").drop(
        columns="index_build_s"), check_exact=True)
    for name in ("winners.csv", "batch_sweep.csv", "summary.md"):
        assert (today / name).read_bytes() == (r1 / name).read_bytes(), name
    per = pd.read_csv(r2 / "recall_qps_replications.csv")
    rep0 = per[per.replication == 0].drop(columns=["replication", "seed", "index_build_s"])
    pd.testing.assert_frame_equal(t, rep0.reset_index(drop=True), check_exact=True,
                                  check_dtype=False)
    each = pd.read_csv(r2 / "winners_replications.csv")
    each0 = each[each.replication == 0].drop(columns=["replication", "seed"])
    pd.testing.assert_frame_equal(pd.read_csv(today / "winners.csv"),
                                  each0.reset_index(drop=True), check_exact=True,
                                  check_dtype=False)
    assert (today / "batch_sweep.csv").read_bytes() == (r2 / "batch_sweep.csv").read_bytes()


def test_two_replications_end_to_end(replicated_runs):
    from experiments.harness.replications import t_interval

    out = replicated_runs[1]
    for f in ("recall_qps.csv", "recall_qps_replications.csv", "winners.csv",
              "winners_replications.csv", "batch_sweep.csv", "summary.md", "recall_qps.png",
              "traces/sift-exact-p1.npz", "traces/seed1/sift-exact-p1.npz",
              "traces/seed1/deep-graph-p1-L16.npz"):
        assert (out / f).is_file(), f
    per = pd.read_csv(out / "recall_qps_replications.csv").rename(
        columns={R.RECALL_COLUMN: "recall"})
    agg = R.read_table(out)
    assert sorted(per.seed.unique()) == [0, 1] and len(per) == 2 * len(agg)
    assert (agg.replications == 2).all()
    # distinct workloads: the recall of the points differs between the replications
    key = ["dataset", "system", "num_probes", "cand_list_len", "rerank"]
    wide = per.fillna({"cand_list_len": -1, "rerank": -1}).pivot_table(
        index=key, columns="seed", values="recall")
    assert (wide[0] != wide[1]).any()
    (grp, sub), = list(per[(per.dataset == "sift") & (per.system == "cosmos")
                           & (per.num_probes == 1) & (per.cand_list_len == 16)]
                       .groupby("system"))
    row = agg[(agg.dataset == "sift") & (agg.system == "cosmos") & (agg.num_probes == 1)
              & (agg.cand_list_len == 16)].iloc[0]
    mean, lo, hi, _ = t_interval(sub.qps)
    assert (row.qps, row.qps_rep_ci_low, row.qps_rep_ci_high) == pytest.approx((mean, lo, hi))
    win = R.read_winners(out)
    want, each = W.replicated_winners(per.drop(columns=[]))
    assert list(win.columns) == W.WINNER_COLUMNS + W.REPLICATED_WINNER_COLUMNS
    assert list(win.system.fillna("")) == list(want.system.fillna(""))
    assert len(pd.read_csv(out / "winners_replications.csv")) == 2 * len(win)
    for r in win.itertuples():
        if isinstance(r.system, str):
            assert 0 <= r.wins <= 2 and r.family_wins >= r.wins
    md = (out / "summary.md").read_text()
    assert "2 replications" in md and "replications (95 % CI of the proportion" in md
    assert "The batch-size sweep runs on replication 0 alone" in md
