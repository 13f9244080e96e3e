"""The sensitivity experiment: its parameter table resolves to valid configs and workloads, its
CSV has the six systems' QPS at every parameter and level, a result moves with a parameter it
depends on and not with one it cannot depend on, and its orderings and reproduction regions
are computed as stated."""

import dataclasses
import inspect
import json

import numpy as np
import pandas as pd
import pytest

from cosmos.cli import main
from cosmos.config import RANGES, SOURCE, with_overrides
from cosmos.presets import PRESETS, get_preset
from experiments.figures import sensitivity as S
from experiments.figures.parts import sensitivity_regions as R
from experiments.harness.ratios import ratio_ci
from experiments.harness.workloads import get_scale

#: the two parameters the end-to-end run varies (a couple, to keep it short on 2 cores)
E2E = ("switch.upstream_ports", "gpc.cores")


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """`cosmos run sensitivity --scale tiny`, its table cut to :data:`E2E`."""
    root = tmp_path_factory.mktemp("sens")
    mp = pytest.MonkeyPatch()
    mp.setattr(S, "PARAMETERS", tuple(p for p in S.PARAMETERS if p.key in E2E))
    mp.setenv("COSMOS_CACHE", str(root / "cache"))
    mp.setenv("MPLBACKEND", "Agg")
    try:
        rc = main(["run", "sensitivity", "--scale", "tiny", "--out-root", str(root / "results"),
                   "--workers", "2", "--no-progress"])
    finally:
        mp.undo()
    assert rc == 0
    (folder,) = (root / "results").iterdir()
    return folder


def test_csv_has_six_systems_at_every_parameter_and_level(tiny_run):
    df = pd.read_csv(tiny_run / "sensitivity.csv")
    for col in ("parameter", "level", "value", "reason", "dataset", "system", "qps",
                "qps_vs_base", "qps_vs_cxl_anns", "rank", "steady_state",
                "qps_ci_low", "qps_ci_high", "qps_window", "qps_vs_base_ci_low",
                "qps_vs_base_ci_high", "qps_vs_cxl_anns_ci_low", "qps_vs_cxl_anns_ci_high"):
        assert col in df.columns, col
    # the tiny scale has no ci_target: every run replays its sweep queries to the end, and its
    # intervals are what that window supports; the ratios' are those of the two runs'
    assert get_scale("tiny").ci_target is None and (df.stopped != "ci-target").all()
    for ratio, ref in (("qps_vs_base", "base"), ("qps_vs_cxl_anns", "cxl-anns")):
        den = df[df.system == ref].set_index(["parameter", "level", "dataset"])
        d = den.reindex(pd.MultiIndex.from_frame(df[["parameter", "level", "dataset"]]))
        lo, hi = ratio_ci(df.qps, df.qps_ci_low, df.qps_ci_high, d.qps.to_numpy(),
                          d.qps_ci_low.to_numpy(), d.qps_ci_high.to_numpy(),
                          same=(df.system == ref).to_numpy())
        assert np.allclose(df[f"{ratio}_ci_low"], lo, equal_nan=True)
        assert np.allclose(df[f"{ratio}_ci_high"], hi, equal_nan=True)
        have = df[f"{ratio}_ci_low"].notna()
        assert (df[f"{ratio}_ci_low"][have] <= df[ratio][have]).all()
        assert (df[ratio][have] <= df[f"{ratio}_ci_high"][have]).all()
    assert set(df.parameter) == set(E2E)
    assert set(df.dataset) == {"sift", "deep"}
    for (param, level, fam), g in df.groupby(["parameter", "level", "dataset"]):
        assert sorted(g.system) == sorted(R.SYSTEMS), (param, level, fam)
        assert (g.qps > 0).all()
        assert sorted(g["rank"]) == sorted(g.qps.rank(ascending=False, method="min"))
        base = g[g.system == "base"].qps.iloc[0]
        assert np.allclose(g.qps_vs_base, g.qps / base)
    for param in E2E:
        assert set(df[df.parameter == param].level) == {"low", "default", "high"}
    # every level says why: the table's reasons, the config's source note for the default
    assert df.reason.notna().all() and (df.reason.str.len() > 10).all()
    dflt = df[(df.parameter == "gpc.cores") & (df.level == "default")]
    assert (dflt.reason == SOURCE["gpc.cores"]).all()
    assert (dflt.value == 8).all()
    cfg = json.loads((tiny_run / "config.json").read_text())
    assert cfg["experiment"] == "sensitivity" and cfg["rerun"].startswith("cosmos run sensitivity")
    for stem in ("tornado_cosmos_vs_base", "tornado_cosmos_vs_cxl_anns"):
        assert (tiny_run / f"{stem}.png").stat().st_size > 1000
    summary = (tiny_run / "summary.md").read_text()
    assert "within 15%" in summary and "switch.upstream_ports" in summary


def _qps(df, param, level, fam, system):
    row = df[(df.parameter == param) & (df.level == level) & (df.dataset == fam) &
             (df.system == system)]
    assert len(row) == 1
    return float(row.qps.iloc[0])


def test_base_moves_with_the_upstream_bandwidth_and_not_with_gpc_cores(tiny_run):
    df = pd.read_csv(tiny_run / "sensitivity.csv")
    for fam in ("sift", "deep"):
        # every cache line of Base crosses the host's upstream port: an x8 port slows it
        low = _qps(df, "switch.upstream_ports", "low", fam, "base")
        default = _qps(df, "switch.upstream_ports", "default", fam, "base")
        assert low < 0.95 * default, (fam, low, default)
        # Base has no GPC: its QPS is the same, bit for bit, whatever the GPC's core count,
        # and the sweep knew it before simulating (tests/test_equivalent.py simulates both)
        for level in ("low", "high"):
            assert _qps(df, "gpc.cores", level, fam, "base") == \
                _qps(df, "gpc.cores", "default", fam, "base")
        same = df[(df.dataset == fam) & (df.level != "default")].set_index(
            ["parameter", "level", "system"]).same_as_default
        assert same.xs(("gpc.cores", "base"), level=["parameter", "system"]).all()
        assert not same.xs("cosmos", level="system").any()
        assert not same.xs("switch.upstream_ports", level="parameter").any()
        # ... while Cosmos, which searches on the GPCs, does move with it
        assert _qps(df, "gpc.cores", "low", fam, "cosmos") < \
            0.9 * _qps(df, "gpc.cores", "default", fam, "cosmos")


def test_orderings_and_regions_files_cover_every_pair_and_figure(tiny_run):
    orders = pd.read_csv(tiny_run / "orderings.csv")
    assert len(orders) == 2 * 15                    # 15 pairs of six systems, per dataset
    df = pd.read_csv(tiny_run / "sensitivity.csv")
    for r in orders.itertuples():                   # "holds everywhere" checked from the CSV
        g = df[df.dataset == r.dataset].pivot_table(index=["parameter", "level"],
                                                    columns="system", values="qps")
        assert r.holds_everywhere == bool((g[r.faster] > g[r.slower]).all())
    for col in ("default_separation", "separated", "tied", "tied_at", "flipped", "flipped_at",
                "no_interval", "holds_everywhere_ci"):
        assert col in orders.columns, col
    assert ((orders.separated + orders.tied + orders.flipped + orders.no_interval)
            == orders.points).all()
    reg = pd.read_csv(tiny_run / "regions.csv")
    assert set(zip(reg.figure, reg.dataset)) == {(f, d) for f in R.PAPER for d in ("sift", "deep")}
    assert set(reg.parameter) == set(E2E)
    for col in ("levels_ci_overlap", "levels_ci_inside", "levels_no_ci", "interval_ci_overlap",
                "interval_ci_inside", "low_ratio_ci_low", "high_ratio_ci_high"):
        assert col in reg.columns, col
    for r in reg.astype(object).where(reg.notna(), "").itertuples():     # every level in exactly one of the lists' cases
        levels = [lv for lv in R.LEVELS if getattr(r, f"{lv}_ratio") != ""]
        inside, overlap = set(filter(None, r.levels_ci_inside.split(","))), \
            set(filter(None, r.levels_ci_overlap.split(",")))
        none = set(filter(None, r.levels_no_ci.split(",")))
        assert inside <= overlap and not (overlap & none) and none <= set(levels)


def test_every_parameter_resolves_to_valid_configs_for_every_system():
    scale = get_scale("default")
    keys = [p.key for p in S.PARAMETERS]
    assert len(keys) == len(set(keys))
    for p in S.PARAMETERS:
        assert p.why_low and p.why_high, p.key
        if p.key not in S.DERIVED:
            assert p.key in RANGES and p.key in SOURCE, p.key
        pts = S.points(p, scale)
        assert [pt.level for pt in pts][0:1] in (["low"], ["default"])
        assert "default" in [pt.level for pt in pts] and len(pts) >= 2, p.key
        for pt in pts:
            assert pt.reason, (p.key, pt.level)
            for name in PRESETS:
                with_overrides(get_preset(name), dict(pt.overrides))   # valid, in range
        default = [pt for pt in pts if pt.level == "default"][0]
        if p.key in RANGES:       # the default level is the presets' own value
            section, field = p.key.split(".")
            assert default.value == getattr(getattr(get_preset("base"), section), field)
            assert default.overrides == ((p.key, default.value),)


def test_derived_levels():
    scale = get_scale("default")
    table = {p.key: p for p in S.PARAMETERS}
    ups = {pt.level: pt for pt in S.points(table["switch.upstream_ports"], scale)}
    assert ups["low"].overrides == (("switch.upstream_bandwidth_GBps", 31.5),)
    assert ups["high"].overrides == (("switch.upstream_bandwidth_GBps", 252.0),)
    ops = {pt.level: dict(pt.overrides) for pt in S.points(table["gpc.op_cycles_scale"], scale)}
    assert ops["high"]["gpc.distance_overhead_cycles"] == 40.0
    assert ops["low"]["gpc.partial_sum_cycles"] == 0.5
    assert all(k.startswith("gpc.") for k in ops["high"])
    cl = {pt.level: pt for pt in S.points(table["workload.num_clusters"], scale)}
    assert [cl[lv].value for lv in R.LEVELS] == [32, 64, 128]
    assert dict(cl["low"].workload) == {"num_clusters": 32, "num_probes": 8}
    pr = {pt.level: pt for pt in S.points(table["workload.num_probes"], scale)}
    assert [pr[lv].value for lv in R.LEVELS] == [4, 8, 16]
    # probes are capped at the clusters; a level equal to the default is left out
    small = dataclasses.replace(scale, num_clusters=8, num_probes=8)
    assert [pt.level for pt in S.points(table["workload.num_probes"], small)] == \
        ["low", "default"]
    assert [pt.level for pt in S.points(table["host.dram_ranks"], scale)] == \
        ["default", "high"]
    inf = {pt.level: pt.inflight_factor for pt in S.points(table["run.inflight_factor"], scale)}
    assert inf == {"low": 0.5, "default": 1.0, "high": 2.0}


def test_graph_kind_is_one_row_offered_only_when_workloads_take_it(monkeypatch):
    import experiments.harness.workloads as W

    graph = [p for p in S.PARAMETERS if p.key == "workload.graph"]
    assert len(graph) == 1
    has = "graph" in inspect.signature(W.workload).parameters
    assert S.available(graph[0]) == has

    def workload(family, scale="default", *, graph="hnsw", **kw):  # a workload() with the knob
        raise AssertionError("not called")

    monkeypatch.setattr(W, "workload", workload)
    assert S.available(graph[0])
    pts = {pt.level: pt for pt in S.points(graph[0], get_scale("tiny"))}
    assert dict(pts["high"].workload) == {"graph": "vamana"} and pts["default"].workload == ()


@pytest.mark.parametrize("figures_graph,other", [("hnsw", "vamana"), ("vamana", "hnsw")])
def test_graph_row_default_is_the_figures_graph_kind(monkeypatch, figures_graph, other):
    import experiments.harness.workloads as W

    monkeypatch.setattr(W, "GRAPH", figures_graph)
    (graph,) = [p for p in S.PARAMETERS if p.key == "workload.graph"]
    pts = S.points(graph, get_scale("tiny"))
    assert [(pt.level, pt.value) for pt in pts if pt.level == "default"] == \
        [("default", figures_graph)]
    # the default replays the figures' trace; the one other level names its graph kind
    (alt,) = [pt for pt in pts if pt.level != "default"]
    assert alt.value == other and dict(alt.workload) == {"graph": other}
    assert [pt.workload for pt in pts if pt.level == "default"] == [()]


def test_graph_row_replays_a_trace_of_the_other_graph_kind(tmp_path, monkeypatch):
    """The graph row's Vamana level gets its own trace file, of Vamana graphs: its hops read
    the longer lists alpha = 1.2 pruning keeps (tiny scale, one family)."""
    import types

    import experiments.harness.workloads as W
    from graphs import load_trace

    monkeypatch.setattr(W, "GRAPH", "hnsw")
    (graph,) = [p for p in S.PARAMETERS if p.key == "workload.graph"]
    assert S.available(graph)     # the row is simulated, not named as missing in the summary
    (alt,) = [pt for pt in S.points(graph, get_scale("tiny")) if pt.level != "default"]
    ctx = types.SimpleNamespace(scale=get_scale("tiny"), traces_dir=None, out=tmp_path,
                                cache_dir=tmp_path / "cache", seed=0, progress=False,
                                dataset=None)
    path = S._trace_file(ctx, "sift", dict(alt.workload))
    assert path.name == "sift-c16-p4-graphvamana.npz"
    vam = load_trace(path)
    hnsw = W.workload("sift", "tiny", cache_dir=tmp_path / "cache", progress=False)
    assert vam.meta["graph"] == "vamana" and hnsw.meta.get("graph", "hnsw") == "hnsw"
    assert vam.meta["num_queries"] == hnsw.meta["num_queries"]
    assert vam.hop_degree.mean() > 1.2 * hnsw.hop_degree.mean()
    # a second call reads the saved file instead of building it again
    mtime = path.stat().st_mtime_ns
    assert S._trace_file(ctx, "sift", dict(alt.workload)) == path
    assert path.stat().st_mtime_ns == mtime


def test_unknown_parameter_is_named():
    with pytest.raises(ValueError, match=r"unknown parameter\(s\) \['gpc.warp'\]"):
        S.selected(["gpc.cores", "gpc.warp"])


def test_within_intervals_hand_worked():
    # ratio 4 -> 6 -> 10 at values 1, 2, 4; target 6 +- 15 % = [5.1, 6.9]
    spans = R.within_intervals([4, 1, 2], [10.0, 4.0, 6.0], 6.0)
    assert len(spans) == 1
    lo, hi = spans[0]
    assert lo == pytest.approx(1.55) and hi == pytest.approx(2.45)
    assert R.within_intervals([1, 2], [1.0, 2.0], 6.0) == []
    assert R.within_intervals([1, 2], [6.0, 6.0], 6.0) == [(1.0, 2.0)]
    # in the band at both ends, out of it in the middle: two intervals
    spans = R.within_intervals([0, 1, 2], [6.0, 12.0, 6.0], 6.0)
    assert len(spans) == 2 and spans[0][0] == 0 and spans[1][1] == 2


def test_orderings_find_the_flips():
    rows = []
    for param, level, q in [("a", "default", (1, 2, 3, 4, 5, 6)), ("a", "low", (1, 2, 3, 4, 6, 5)),
                            ("b", "default", (1, 2, 3, 4, 5, 6)), ("b", "high", (2, 1, 3, 4, 5, 6))]:
        rows += [{"parameter": param, "level": level, "value": 1.0, "dataset": "sift",
                  "system": s, "qps": float(v)} for s, v in zip(R.SYSTEMS, q)]
    o = R.orderings(pd.DataFrame(rows)).set_index(["faster", "slower"])
    assert len(o) == 15
    assert o.loc[("cosmos", "cosmos-noalgo"), "flips_at"] == "a=1 (low)"
    assert o.loc[("dram-only", "base"), "flips_at"] == "b=1 (high)"
    assert o.loc[("cosmos", "base"), "holds_everywhere"]
    assert o.paper_agrees.all()


def test_reproduce_runs_sensitivity_only_when_named():
    from experiments.harness.runner import ALL_EXPERIMENTS, EXPERIMENTS, ON_REQUEST, load

    assert "sensitivity" in ON_REQUEST and "sensitivity" not in EXPERIMENTS
    assert load("sensitivity") is S and set(ALL_EXPERIMENTS) == set(EXPERIMENTS) | set(ON_REQUEST)


# --- intervals (issue 50): regions and orderings with intervals, the stop rule at the full
# scale, the tornado's whiskers, and old folders still rendering (the ratio's interval itself:
# tests/test_ratios.py)


def _synthetic(cosmos_low_ci=True):
    """A sensitivity table of known QPS and intervals (SIFT-like only; no simulation).

    Parameter ``p`` at values 1 / 2 / 4: Base 100 QPS (interval x e^+-0.03), Cosmos 560 / 672 /
    900 (x e^+-0.04), so Cosmos / Base is 5.6 / 6.72 / 9.0, each within x e^+-0.05
    (sqrt(0.03^2 + 0.04^2)). The paper's 6.72 +- 15 % is [5.712, 7.728]. Cosmos w/o placement
    is 400 / 580 / 1,000 (x e^+-0.04): below Cosmos at the default with the intervals apart,
    above it at ``p`` = 1 with the intervals overlapping (580 e^-0.04 = 557 < 560 e^0.04 = 583),
    above it at ``p`` = 4 with the intervals apart (900 e^0.04 = 937 < 1,000 e^-0.04 = 961).
    Parameter ``q`` (values 1 / 2): its low level is Cosmos 600 with no interval (unless
    ``cosmos_low_ci``, then x e^+-0.04)."""
    e = np.exp
    others = {"base": 100.0, "dram-only": 150.0, "cxl-anns": 200.0, "cosmos-norank": 300.0}
    levels = [("p", "low", 1.0, 580.0, 560.0), ("p", "default", 2.0, 400.0, 672.0),
              ("p", "high", 4.0, 1000.0, 900.0), ("q", "low", 1.0, 400.0, 600.0),
              ("q", "default", 2.0, 400.0, 672.0)]
    rows = []
    for param, level, value, noalgo, cosmos in levels:
        qps = {**others, "cosmos-noalgo": noalgo, "cosmos": cosmos}
        for s in R.SYSTEMS:
            w = 0.03 if s == "base" else 0.04
            lo, hi = qps[s] * e(-w), qps[s] * e(w)
            if (param, level, s) == ("q", "low", "cosmos") and not cosmos_low_ci:
                lo = hi = float("nan")
            rows.append({"parameter": param, "what": param, "level": level, "value": value,
                         "unit": "", "reason": "synthetic", "dataset": "sift", "system": s,
                         "qps": qps[s], "qps_ci_low": lo, "qps_ci_high": hi,
                         "steady_state": True})
    return S.tidy(pd.DataFrame(rows))


def test_tidy_carries_the_ratio_intervals():
    df = _synthetic().set_index(["parameter", "level", "system"])
    r = df.loc[("p", "high", "cosmos")]
    assert r.qps_vs_base == pytest.approx(9.0)
    assert r.qps_vs_base_ci_low == pytest.approx(9.0 * np.exp(-0.05))
    assert r.qps_vs_base_ci_high == pytest.approx(9.0 * np.exp(0.05))
    # over CXL-ANNS (both runs x e^+-0.04): x e^+-0.04 sqrt(2)
    assert r.qps_vs_cxl_anns_ci_high == pytest.approx(4.5 * np.exp(0.04 * 2 ** 0.5))
    base = df.loc[("p", "high", "base")]
    assert base.qps_vs_base_ci_low == 1.0 and base.qps_vs_base_ci_high == 1.0


def test_regions_carry_the_intervals_hand_worked():
    reg = R.regions(_synthetic(cosmos_low_ci=False))
    r = reg[(reg.figure == "cosmos_vs_base") & (reg.parameter == "p")].iloc[0]
    assert (r.band_low, r.band_high) == (pytest.approx(5.712), pytest.approx(7.728))
    assert r.low_ratio_ci_low == pytest.approx(5.6 * np.exp(-0.05))
    assert r.high_ratio_ci_high == pytest.approx(9.0 * np.exp(0.05))
    # points: only the default's 6.72 within; intervals: low's [5.327, 5.887] reaches into
    # the band, the default's [6.392, 7.065] lies in it, high's [8.561, 9.461] is out of it
    assert r.levels_within == "default"
    assert r.levels_ci_overlap == "low,default"
    assert r.levels_ci_inside == "default"
    assert r.levels_no_ci == ""
    # the point ratio leaves the band where 6.72 -> 9.0 over 2 -> 4 crosses 7.728:
    # 2 + 2 x 1.008 / 2.28 = 2.884; enters it where 5.6 -> 6.72 over 1 -> 2 crosses 5.712: 1.1
    assert r.interval_within == "1.1-2.88"
    # surely within: lower end 5.327 -> 6.392 over 1 -> 2 reaches 5.712 at
    # 1 + 0.3851 / 1.0654 = 1.361; upper end 7.065 -> 9.461 over 2 -> 4 reaches 7.728 at
    # 2 + 2 x 0.6635 / 2.3969 = 2.554
    assert r.interval_ci_inside == "1.36-2.55"
    # possibly within: the upper end is above 5.712 from value 1 on; the lower end
    # 6.392 -> 8.561 over 2 -> 4 passes 7.728 at 2 + 2 x 1.3357 / 2.1688 = 3.232
    assert r.interval_ci_overlap == "1-3.23"
    # a parameter with a level without an interval: that level in neither list, and no
    # interpolated interval of the bounds
    q = reg[(reg.figure == "cosmos_vs_base") & (reg.parameter == "q")].iloc[0]
    assert q.levels_no_ci == "low" and q.levels_ci_inside == "default"
    assert q.interval_ci_inside == "" and q.interval_ci_overlap == ""
    assert q.interval_within != ""           # the point ratios still interpolate


def test_band_intervals_bracket_the_point_interval():
    rng = np.random.default_rng(0)
    for _ in range(200):
        v = np.sort(rng.uniform(0, 10, 3))
        r = rng.uniform(3, 10, 3)
        w = rng.uniform(0, 0.2, 3)
        inside = R.band_intervals(v, r * np.exp(-w), r * np.exp(w), 6.72, how="inside")
        point = R.within_intervals(v, r, 6.72)
        overlap = R.band_intervals(v, r * np.exp(-w), r * np.exp(w), 6.72, how="overlaps")

        def length(spans):
            return sum(b - a for a, b in spans)

        assert length(inside) <= length(point) + 1e-9 <= length(overlap) + 2e-9
        for a, b in inside:          # every surely-within value is within by the points too
            assert any(c - 1e-9 <= a and b <= d + 1e-9 for c, d in point)
    with pytest.raises(ValueError, match="how must be"):
        R.band_intervals([1, 2], [1, 1], [2, 2], 1.5, how="around")


def test_orderings_mark_overlaps_as_ties():
    o = R.orderings(_synthetic(cosmos_low_ci=False)).set_index(["faster", "slower"])
    r = o.loc[("cosmos", "cosmos-noalgo")]
    # by the point estimates both non-default points of p are flips (as before)
    assert r.flips == 2 and not r.holds_everywhere
    # with the intervals: p = 1 a tie, p = 4 a flip, the defaults apart
    assert r.default_separation == "holds"
    assert r.tied == 1 and r.tied_at == "p=1 (low)"
    assert r.flipped == 1 and r.flipped_at == "p=4 (high)"
    assert r.separated == 0 and r.no_interval == 1 and r.no_interval_at == "q=1 (low)"
    assert not r.holds_everywhere_ci
    # Cosmos over Base: apart everywhere but at q's low level, where Cosmos has no interval
    r = o.loc[("cosmos", "base")]
    assert r.holds_everywhere and r.separated == 2 and r.no_interval == 1
    assert not r.holds_everywhere_ci
    o = R.orderings(_synthetic(cosmos_low_ci=True)).set_index(["faster", "slower"])
    assert o.loc[("cosmos", "base"), "holds_everywhere_ci"]
    assert o.loc[("cxl-anns", "dram-only"), "holds_everywhere_ci"]
    assert R.separation(10, 9, 11, 10.5, 10.2, 10.8) == "tied"
    assert R.separation(10, 9, 11, 5, 4, 6) == "holds"
    assert R.separation(10, 9, 11, 20, 19, 21) == "flipped"
    assert R.separation(10, 9, 11, 20, float("nan"), 21) == "no interval"


def _ctx(scale):
    import types

    return types.SimpleNamespace(scale=get_scale(scale), families=("sift", "deep"), seed=0)


def test_full_scale_simulations_stop_by_the_scales_interval_rule():
    full = get_scale("full")

    def trace(fam, kw):       # as _trace_file: the scale's own index is the scale's trace
        kw = {k: v for k, v in kw.items()
              if (k, v) not in (("num_clusters", full.num_clusters),
                                ("num_probes", full.num_probes))}
        return f"{fam}-{sorted(kw.items())}.npz"

    assert full.ci_target == 0.01
    tasks, wanted = S.simulation_plan(_ctx("full"), trace_path=trace)
    assert len(tasks) == 540 and len(wanted) == 12 * len(
        [pt for p in S.PARAMETERS if S.available(p) for pt in S.points(p, full)])
    assert all(t["ci_target"] == 0.01 and t["num_queries"] is None for t in tasks)
    # tiny and default: no ci_target; each run replays its sweep queries, as before
    for scale in ("tiny", "default"):
        tasks, _ = S.simulation_plan(_ctx(scale), trace_path=trace)
        assert all(t.get("ci_target") is None for t in tasks)
        assert all(t["num_queries"] >= get_scale(scale).sweep_queries for t in tasks)
    # the dry-run's estimate counts the same simulations
    est = S.plan_sweep(_ctx("full"))
    text = est["what"]
    assert 0 < est["cpu_s_min"] < est["cpu_s_max"]
    assert text.startswith("estimate of its own sweep") and "540 simulations" in text
    assert "+-1% interval rule" in text


def _folder(tmp_path, df, old=False):
    """A results folder of ``df``'s sensitivity.csv, orderings.csv and regions.csv; with
    ``old``, without every column the intervals added (as a folder written before them)."""
    orders, reg = R.orderings(df), R.regions(df)
    if old:
        new = [c for c in df.columns if "_ci_" in c] + ["qps_window"]
        df = df.drop(columns=[c for c in new if c in df.columns])
        orders = orders.drop(columns=["default_separation", "separated", "tied", "tied_at",
                                      "flipped", "flipped_at", "no_interval", "no_interval_at",
                                      "holds_everywhere_ci"])
        reg = reg[[c for c in reg.columns if "_ci" not in c and not c.startswith("band_")]]
    df.to_csv(tmp_path / "sensitivity.csv", index=False)
    orders.to_csv(tmp_path / "orderings.csv", index=False)
    reg.to_csv(tmp_path / "regions.csv", index=False)
    return tmp_path


@pytest.mark.parametrize("old", [False, True])
def test_tornado_whiskers_where_intervals_exist(tmp_path, monkeypatch, old):
    from matplotlib.container import ErrorbarContainer

    monkeypatch.setenv("MPLBACKEND", "Agg")
    figs = {}
    monkeypatch.setattr(S, "save_figure", lambda fig, folder, stem: figs.setdefault(stem, fig))
    folder = _folder(tmp_path, _synthetic(cosmos_low_ci=False), old=old)
    S.plot(folder)
    assert set(figs) == {"tornado_cosmos_vs_base", "tornado_cosmos_vs_cxl_anns"}
    ax = figs["tornado_cosmos_vs_base"].axes[0]
    bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    if old:
        assert bars == []                   # an old folder: the bars alone
    else:
        # a whisker at each end that has an interval: p's low and high, not q's low (none)
        assert sum(len(c.lines[2][0].get_segments()) for c in bars) == 2
        segs = [s for c in bars for s in c.lines[2][0].get_segments()]
        xs = sorted((round(s[0][0], 3), round(s[1][0], 3)) for s in segs)
        assert xs == [(round(5.6 * np.exp(-0.05), 3), round(5.6 * np.exp(0.05), 3)),
                      (round(9.0 * np.exp(-0.05), 3), round(9.0 * np.exp(0.05), 3))]
    text = S.summary_md(folder)
    assert "### Orderings" in text
    assert ("[" in text) != old            # the ratios' intervals in the table, if any
    if not old:
        assert ("levels surely within default, possibly within low,default; values surely "
                "within 1.36-2.55, possibly 1-3.23") in text
