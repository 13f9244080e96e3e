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
                "qps_vs_base", "qps_vs_cxl_anns", "rank", "steady_state"):
        assert col in df.columns, col
    assert set(df.parameter) == set(E2E)
    assert set(df.dataset) == {"sift", "deep"}
    for (param, level, fam), g in df.groupby(["parameter", "level", "dataset"]):
        assert sorted(g.system) == sorted(S.SYSTEMS), (param, level, fam)
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
        # Base has no GPC: its QPS is the same, bit for bit, whatever the GPC's core count
        for level in ("low", "high"):
            assert _qps(df, "gpc.cores", level, fam, "base") == \
                _qps(df, "gpc.cores", "default", fam, "base")
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
    reg = pd.read_csv(tiny_run / "regions.csv")
    assert set(zip(reg.figure, reg.dataset)) == {(f, d) for f in S.PAPER for d in ("sift", "deep")}
    assert set(reg.parameter) == set(E2E)


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
    assert [cl[lv].value for lv in S.LEVELS] == [32, 64, 128]
    assert dict(cl["low"].workload) == {"num_clusters": 32, "num_probes": 8}
    pr = {pt.level: pt for pt in S.points(table["workload.num_probes"], scale)}
    assert [pr[lv].value for lv in S.LEVELS] == [4, 8, 16]
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
    spans = S.within_intervals([4, 1, 2], [10.0, 4.0, 6.0], 6.0)
    assert len(spans) == 1
    lo, hi = spans[0]
    assert lo == pytest.approx(1.55) and hi == pytest.approx(2.45)
    assert S.within_intervals([1, 2], [1.0, 2.0], 6.0) == []
    assert S.within_intervals([1, 2], [6.0, 6.0], 6.0) == [(1.0, 2.0)]
    # in the band at both ends, out of it in the middle: two intervals
    spans = S.within_intervals([0, 1, 2], [6.0, 12.0, 6.0], 6.0)
    assert len(spans) == 2 and spans[0][0] == 0 and spans[1][1] == 2


def test_orderings_find_the_flips():
    rows = []
    for param, level, q in [("a", "default", (1, 2, 3, 4, 5, 6)), ("a", "low", (1, 2, 3, 4, 6, 5)),
                            ("b", "default", (1, 2, 3, 4, 5, 6)), ("b", "high", (2, 1, 3, 4, 5, 6))]:
        rows += [{"parameter": param, "level": level, "value": 1.0, "dataset": "sift",
                  "system": s, "qps": float(v)} for s, v in zip(S.SYSTEMS, q)]
    o = S.orderings(pd.DataFrame(rows)).set_index(["faster", "slower"])
    assert len(o) == 15
    assert o.loc[("cosmos", "cosmos-noalgo"), "flips_at"] == "a=1 (low)"
    assert o.loc[("dram-only", "base"), "flips_at"] == "b=1 (high)"
    assert o.loc[("cosmos", "base"), "holds_everywhere"]
    assert o.paper_agrees.all()


def test_reproduce_runs_sensitivity_only_when_named():
    from experiments.harness.runner import ALL_EXPERIMENTS, EXPERIMENTS, ON_REQUEST, load

    assert "sensitivity" in ON_REQUEST and "sensitivity" not in EXPERIMENTS
    assert load("sensitivity") is S and set(ALL_EXPERIMENTS) == set(EXPERIMENTS) | set(ON_REQUEST)
