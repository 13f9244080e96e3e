"""recall_qps: the CSV has every (system, knob) point with finite recall and QPS, the Pareto
front and the recall-target winners are computed as stated (hand-made sets), and two runs
give the same CSV."""

import math

import numpy as np
import pandas as pd
import pytest

from cosmos.cli import main
from experiments.figures import recall_qps as R
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
                want |= {(fam, s, p, L, -1) for s in R.SYSTEMS["graph"]}
        for p in grid.ivfpq_probes:
            for r in grid.rerank:
                want |= {(fam, s, p, -1, r) for s in R.SYSTEMS["ivfpq"]}
        for p in grid.exact_probes:
            want |= {(fam, s, p, -1, -1) for s in R.SYSTEMS["exact"]}
    assert all(p <= clusters for p in grid.graph_probes + grid.ivfpq_probes + grid.exact_probes)
    got = {(r.dataset, r.system, int(r.num_probes), int(r.cand_list_len), int(r.rerank))
           for r in df.fillna(-1).itertuples()}
    assert got == want and len(df) == len(want)
    for col in ("recall", "index_bytes", "qps", "latency_mean_ns", "dram_bytes_per_query"):
        assert np.isfinite(df[col]).all() and (df[col] > 0).all(), col
    assert ((df.recall > 0) & (df.recall <= 1)).all()
    assert (df.family == df.system.map(R.FAMILY_OF)).all()
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
    assert list(sw.columns) == R.BATCH_COLUMNS
    assert len(sw) == 2 * len(R.BATCH_SWEEP) and set(sw.dataset) == {"sift", "deep"}
    for col in ("qps", "latency_mean_ns", "dram_bytes_per_query", "qps_one_batch",
                "latency_one_batch_ns", "roofline_batch", "roofline_batch_dram_share"):
        assert np.isfinite(sw[col]).all() and (sw[col] > 0).all(), col
    df = R.read_table(folder)
    bend = R.bend_batch(sw)
    for fam, g in sw.groupby("dataset"):
        g = g.sort_values("batch_queries")
        assert list(g.batch_queries) == list(R.BATCH_SWEEP)
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
    front = R.pareto_front(pts)
    # (0.5, 1000), (0.6, 950), (0.8, 600) once, (0.9, 100); dominated: (0.6, 900),
    # (0.7, 500) by (0.8, 600), (0.55, 800) by (0.6, 950); the NaN row is ignored
    assert list(zip(front.recall, front.qps)) == [(0.5, 1000), (0.6, 950), (0.8, 600),
                                                  (0.9, 100)]
    assert front.qps.is_monotonic_decreasing
    assert R.pareto_front(pts.iloc[:0]).empty


def test_qps_at_recall_interpolates_on_the_front():
    front = R.pareto_front(pd.DataFrame({"recall": [0.8, 0.9, 1.0], "qps": [1000, 100, 10]}))
    assert R.qps_at_recall(front, 0.9) == 100                       # a point on the front
    assert R.qps_at_recall(front, 0.85) == pytest.approx(math.sqrt(1000 * 100))  # log-linear
    assert R.qps_at_recall(front, 0.5) == 1000     # below the sweep: its lowest-effort point
    assert R.is_lower_bound(front, 0.5) and not R.is_lower_bound(front, 0.8)
    assert not R.is_lower_bound(front, 0.85)
    # a low-recall point the front drops still counts as swept: not a bound
    swept = pd.DataFrame({"recall": [0.5, 0.92], "qps": [10, 20]})
    assert len(R.pareto_front(swept)) == 1 and not R.is_lower_bound(swept, 0.9)
    assert math.isnan(R.qps_at_recall(front.iloc[:2], 0.95))       # cannot reach


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
    win = R.winners(pd.DataFrame(rows))

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
    only = R.winners(pd.DataFrame([dict(dataset="x", system="cosmos", recall=0.99, qps=5),
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
