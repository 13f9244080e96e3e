"""The two-parameter lever maps: the grid is the sensitivity table's ranges (GPC contexts as
cores x threads within theirs), levels the tiny trace cannot keep in a steady state are left
out, and at `--scale tiny` the maps hold every grid point, with Base moving with the upstream
port and the host's cores but not with the GPC's contexts."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cosmos.cli import main
from cosmos.config import with_overrides
from cosmos.presets import PRESETS, get_preset
from experiments.figures import lever_maps as L
from experiments.figures.parts import sensitivity_regions as R
from experiments.harness.runner import Context
from experiments.harness.workloads import get_scale


def test_contexts_are_cores_times_threads_within_the_sensitivity_ranges():
    assert [L.gpc_split(c) for c in (4, 8, 16, 32, 64)] == \
        [(4, 1), (8, 1), (8, 2), (8, 4), (16, 4)]
    with pytest.raises(ValueError, match="not cores x threads"):
        L.gpc_split(128)
    assert L.axis_levels(L.CONTEXTS, "tiny") == [4, 8, 16, 32, 64]
    assert L.axis_levels("switch.upstream_ports", "tiny") == [0.5, 1.0, 4.0]
    assert L.axis_levels("switch.upstream_ports", "default") == [0.5, 0.71, 1.0, 2.0, 4.0]
    assert L.axis_levels("host.threads", "default") == [16, 23, 32, 44, 60]


def test_grid_points_are_valid_configs_and_the_tiny_grid_drops_what_it_cannot_hold():
    pts, dropped = L.grid(get_scale("tiny"))
    assert len(pts) == 18 and len(dropped) == 2
    assert all("gpc.contexts_per_device=32" in d or "=64" in d for d in dropped)
    for pt in pts:
        for name in PRESETS:
            with_overrides(get_preset(name), pt["overrides"])     # valid, in range
    (up,) = [p for p in pts if p["map"] == "upstream_x_contexts" and p["x_value"] == 4.0
             and p["y_value"] == 8]
    assert up["overrides"] == {"switch.upstream_bandwidth_GBps": 252.0, "gpc.cores": 8,
                               "gpc.threads_per_core": 1}
    full, none = L.grid(get_scale("default"))
    assert none == [] and len(full) == 2 * 25


@pytest.fixture(scope="module")
def tiny_maps(tmp_path_factory):
    root = tmp_path_factory.mktemp("maps")
    mp = pytest.MonkeyPatch()
    mp.setenv("COSMOS_CACHE", str(root / "cache"))
    mp.setenv("MPLBACKEND", "Agg")
    try:
        rc = main(["run", "lever_maps", "--scale", "tiny", "--out", str(root / "out"),
                   "--workers", "2", "--no-progress"])
    finally:
        mp.undo()
    assert rc == 0
    return root / "out"


def test_tiny_maps_hold_every_point_and_the_physics(tiny_maps):
    df = pd.read_csv(tiny_maps / "lever_maps.csv")
    r = pd.read_csv(tiny_maps / "lever_ratios.csv")
    assert set(df["map"]) == set(L.MAPS) and set(df.dataset) == {"sift", "deep"}
    for (name, fam), g in df.groupby(["map", "dataset"]):
        for xy, cell in g.groupby(["x_value", "y_value"]):
            assert sorted(cell.system) == sorted(L.SYSTEMS), (name, fam, xy)
        assert g[["x_value", "y_value"]].drop_duplicates().shape[0] == 9, (name, fam)
    assert (df.gpc_cores * df.gpc_threads_per_core == df.y_value).all()
    q = df.pivot_table(index=["map", "dataset", "x_value", "y_value"], columns="system",
                       values="qps")
    for fam in ("sift", "deep"):
        up = q.loc[("upstream_x_contexts", fam)]
        # Base has no GPC: its QPS is the same whatever the contexts per device ...
        for x, g in up.groupby(level="x_value"):
            assert g["base"].nunique() == 1, (fam, x)
        # ... and it moves with the port every line of it crosses, and with the host's cores
        assert up.loc[(0.5, 16), "base"] < 0.95 * up.loc[(1.0, 16), "base"], fam
        host = q.loc[("host_x_contexts", fam)]
        assert host.loc[(16, 16), "base"] < 0.9 * host.loc[(60, 16), "base"], fam
        # Cosmos searches on the GPC contexts
        assert up.loc[(1.0, 4), "cosmos"] < 0.7 * up.loc[(1.0, 16), "cosmos"], fam
    # the ratios are those of the QPS table, and the paper's figures sit beside them
    m = r.merge(q.reset_index(), on=["map", "dataset", "x_value", "y_value"])
    assert np.allclose(m.cosmos_vs_base, m.cosmos / m.base)
    assert np.allclose(m.cosmos_vs_cxl_anns, m.cosmos / m["cxl-anns"])
    assert set(r[r.dataset == "deep"].paper_cosmos_vs_base) == {R.PAPER["cosmos_vs_base"]["deep"]}
    within = (r.cosmos_vs_base / r.paper_cosmos_vs_base - 1).abs() <= R.TOLERANCE
    assert (within == r.cosmos_vs_base_within).all()
    # the shared default point was simulated once and is the same on both maps
    d1 = q.loc[("upstream_x_contexts", "sift", 1.0, 16)]
    d2 = q.loc[("host_x_contexts", "sift", 32, 16)]
    assert (d1 == d2).all()
    for name in L.MAPS:
        assert (tiny_maps / f"lever_map_{name}.png").stat().st_size > 5_000
        assert (tiny_maps / f"lever_map_{name}.pdf").exists()
    summary = (tiny_maps / "summary.md").read_text()
    assert "6.72" in summary and "gpc.contexts_per_device=64" in summary
    cfg = json.loads((tiny_maps / "config.json").read_text())
    assert cfg["experiment"] == "lever_maps"


def test_dry_run_estimates_the_maps_simulations(tiny_maps):
    """`cosmos reproduce --dry-run`'s line for the maps counts the rows the run writes, from
    the same simulation plan, and gives them a CPU time (fixed queries: one figure)."""
    rows = len(pd.read_csv(tiny_maps / "lever_maps.csv"))
    est = L.plan_sweep(Context(out=Path("."), scale=get_scale("tiny")))
    assert f"for {rows} rows" in est["what"] and 0 < est["cpu_s_min"] == est["cpu_s_max"]
    full = L.plan_sweep(Context(out=Path("."), scale=get_scale("full")))
    assert full["cpu_s_max"] > 100 * est["cpu_s_max"] and "CPU hours" in full["what"]


def test_lever_maps_runs_only_when_named():
    from experiments.harness.runner import EXPERIMENTS, ON_REQUEST, load

    assert "lever_maps" in ON_REQUEST and "lever_maps" not in EXPERIMENTS
    assert load("lever_maps") is L
