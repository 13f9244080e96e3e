"""End to end: `cosmos reproduce --scale tiny` produces every figure, CSV and summary.

This runs the real pipeline (synthetic datasets -> indexes -> traces -> placement -> six
systems on the DRAM model -> CSV -> plots) at the smallest scale, in a temporary cache.
The experiments come from the registry (experiments.figures.REGISTRY): each must leave its
folder with config.json, summary.md, tidy CSVs and its plots as PNG and PDF; the tables
below add the columns and plot names of the experiments they name.
"""

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from experiments.harness.runner import EXPERIMENTS, reproduce_names

#: what `cosmos reproduce --scale tiny` runs: every experiment of the registry but those run
#: only when named
NAMES = reproduce_names("tiny")

#: experiment -> {CSV: columns it must have}, for the experiments named here
EXPECTED = {
    "fig4a_qps": {
        "qps.csv": ["dataset", "system", "qps", "qps_vs_base", "paper_qps_vs_base",
                    "qps_vs_cxl_anns", "paper_qps_vs_cxl_anns", "latency_mean_ns",
                    "latency_p99_ns", "upstream_util_down_fraction", "upstream_util_up_fraction",
                    "device_link_util_max_fraction"],
        "per_device.csv": ["dataset", "system", "device", "gpc_busy_fraction", "dram_requests",
                           "dram_bandwidth_GBps", "link_down_util_fraction", "cluster_searches"],
        "workload.csv": ["dataset", "n", "clusters", "templates", "num_probes", "num_queries",
                         "recall_at_10", "recall_kind"],
    },
    "fig4b_breakdown": {"breakdown.csv": ["dataset", "system", "latency_mean_ns",
                                          "breakdown_traversal_ns", "breakdown_distance_ns",
                                          "breakdown_candidate_ns", "breakdown_transfer_ns"]},
    "fig5a_lir": {"lir.csv": ["dataset", "num_probes", "policy", "lir_per_query_mean",
                              "lir_all_queries"]},
    "fig5b_heatmap": {"heatmap.csv": ["dataset", "policy", "device", "clusters_on_device",
                                      "queries"]},
    "validate_dram": {"validation.csv": ["name", "config", "pattern", "offered_load_fraction",
                                         "refresh", "tCK_ps", "mean_read_lat_cycles_ours",
                                         "mean_read_lat_cycles_ref", "p99_read_lat_cycles_ours",
                                         "p99_read_lat_cycles_ref", "achieved_bw_GBps_ours",
                                         "achieved_bw_GBps_ref", "mean_read_lat_dev_fraction",
                                         "passed", "exact"]},
    "scale_devices": {"devices.csv": ["system", "devices", "qps"]},
    "scale_ranks": {"ranks.csv": ["dataset", "system", "ranks", "qps"]},
    "latency_load": {"latency_load.csv": ["system", "load_fraction", "offered_qps",
                                          "latency_mean_ns", "latency_p99_ns"]},
    "rag_ttft": {"rag_ttft.csv": ["system", "schema", "request_rate_rps", "status",
                                  "ttft_p50_s", "ttft_p99_s", "e2e_p99_s",
                                  "retrieval_share_of_ttft", "qps_per_chip"]},
    "energy_per_query": {"energy.csv": ["dataset", "system", "qps", "energy_per_query_mJ",
                                        "power_avg_W", "qps_per_W", "qps_per_W_vs_base",
                                        "chameleon_efficiency_vs_cpu",
                                        "energy_breakdown_mJ_per_query_dram_array",
                                        "energy_breakdown_mJ_per_query_static"],
                         "energy_tornado.csv": ["dataset", "constant", "low", "high",
                                                "cosmos_vs_base_qps_per_W_at_low",
                                                "cosmos_vs_base_qps_per_W_at_high"],
                         "energy_conclusions.csv": ["dataset", "vertices",
                                                    "cosmos_more_efficient_than_base"]},
    "recall_qps": {"recall_qps.csv": ["dataset", "family", "system", "num_probes",
                                      "cand_list_len", "rerank", "recall_at_10", "index_bytes",
                                      "qps", "qps_ci_low",
                                      "qps_ci_high", "latency_mean_ns",
                                      "dram_bytes_per_query"]},
}
#: experiment -> the stems of its plots, for the experiments named here
PLOTS = {"fig4a_qps": ["fig4a_qps"], "fig4b_breakdown": ["fig4b_breakdown"],
         "fig5a_lir": ["fig5a_lir"], "fig5b_heatmap": ["fig5b_heatmap"],
         "validate_dram": ["latency_vs_bandwidth", "unloaded_latency"],
         "scale_devices": ["scale_devices"], "scale_ranks": ["scale_ranks"],
         "latency_load": ["latency_load"], "rag_ttft": ["rag_ttft"],
         "energy_per_query": ["energy_per_query"], "recall_qps": ["recall_qps"]}


@pytest.fixture(scope="module")
def reproduction(tmp_path_factory):
    root = tmp_path_factory.mktemp("repro")
    env = {"COSMOS_CACHE": str(root / "cache"), "MPLBACKEND": "Agg"}
    import os

    env = {**os.environ, **env}
    out = subprocess.run(
        [sys.executable, "-m", "cosmos", "reproduce", "--scale", "tiny", "--out-root",
         str(root / "results"), "--workers", "2", "--no-progress"],
        capture_output=True, text=True, env=env, timeout=900,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    folders = list((root / "results").iterdir())
    assert len(folders) == 1 and folders[0].name.startswith("reproduce-")
    return folders[0], out.stdout


def test_the_tables_name_registered_experiments():
    assert set(EXPECTED) <= set(EXPERIMENTS) and set(PLOTS) <= set(EXPERIMENTS)
    assert NAMES == list(EXPERIMENTS)   # tiny runs every experiment not run only when named


def test_every_file_is_produced(reproduction):
    folder, stdout = reproduction
    assert (folder / "summary.md").read_text().startswith("# Cosmos simulator")
    assert sorted(p.name for p in folder.iterdir() if p.is_dir()) == sorted([*NAMES, "traces"])
    for name in NAMES:
        sub = folder / name
        csvs = EXPECTED.get(name, {})
        for f in ("config.json", "summary.md", *csvs):
            assert (sub / f).is_file(), f"{name}: {f} missing"
        assert list(sub.glob("*.csv")), f"{name}: no CSV"
        for path in sub.glob("*.csv"):
            assert len(pd.read_csv(path)) > 0, f"{name}/{path.name} is empty"
        for csv, cols in csvs.items():
            df = pd.read_csv(sub / csv)
            missing = [c for c in cols if c not in df.columns]
            assert not missing, f"{name}/{csv} lacks columns {missing}"
        stems = {p.stem for p in sub.glob("*.png")}
        assert stems, f"{name}: no plot"
        assert set(PLOTS.get(name, ())) <= stems, f"{name}: plots {sorted(stems)}"
        for stem in stems:
            for ext in ("png", "pdf"):
                assert (sub / f"{stem}.{ext}").stat().st_size > 1000, f"{name}: {stem}.{ext}"
        assert f"[{name}] done" in stdout
    # a headline prints figures, never an interval of nothing (issue 55: "ci95=[None, None]")
    assert "[None, None]" not in stdout and "nan" not in stdout.lower().split()


def test_values_are_plausible(reproduction):
    folder, _ = reproduction
    qps = pd.read_csv(folder / "fig4a_qps" / "qps.csv")
    assert (qps.qps > 0).all() and np.isfinite(qps.qps).all()
    assert (qps.latency_p99_ns >= qps.latency_mean_ns * 0.5).all()
    from experiments.figures.fig4a_qps import ROWS, SYSTEMS

    assert set(qps.system) == set(ROWS)
    for _, sub in qps.groupby("dataset"):
        s = sub.set_index("system").qps.loc[list(SYSTEMS)]     # the paper's six
        assert s.idxmax() == "cosmos" and s.idxmin() == "base"
        assert sub.set_index("system").qps_vs_base["base"] == pytest.approx(1.0)
        assert sub.set_index("system").qps_vs_cxl_anns["cxl-anns"] == pytest.approx(1.0)
    md = (folder / "summary.md").read_text()       # where compute sits (the 2 x 2 within)
    assert md.count(": where compute sits (QPS over CXL-ANNS") == 2      # one per dataset
    assert "| device GPCs | cosmos-norank: " in md and "| cosmos-accel: " in md
    assert "| host cores | base: " in md and "| cxl-anns: 1.00 |" in md
    assert "| switch cores | cosmos-switch: " in md
    paper = qps.dropna(subset=["paper_qps_vs_cxl_anns"])  # the paper's one figure, on Cosmos
    assert list(paper.system) == ["cosmos", "cosmos"]
    assert (paper.paper_qps_vs_cxl_anns == 2.35).all()
    util = qps[[c for c in qps.columns if c.endswith("util_down_fraction")
                or c.endswith("util_max_fraction")]]
    assert util.shape[1] == 2 and ((util.fillna(0) >= 0) & (util.fillna(0) <= 1)).all().all()
    dev = pd.read_csv(folder / "fig4a_qps" / "per_device.csv")  # one row per system x device
    runs = qps.set_index(["dataset", "system"])
    per_run = dev.groupby(["dataset", "system"])
    assert (per_run.dram_requests.sum() == runs.dram_requests.loc[per_run.size().index]).all()
    assert (per_run.size().xs("cosmos", level="system") == 4).all()  # the paper's 4 devices
    searched = per_run.cluster_searches.count() > 0
    assert set(searched[searched].index.get_level_values("system")) == {
        "cosmos", "cosmos-norank", "cosmos-noalgo", "cosmos-accel"}
    bd = pd.read_csv(folder / "fig4b_breakdown" / "breakdown.csv")
    parts = bd[[c for c in bd.columns if c.startswith("breakdown_")]].sum(axis=1)
    np.testing.assert_allclose(parts, bd.latency_mean_ns, rtol=1e-6)  # stages add up
    lir = pd.read_csv(folder / "fig5a_lir" / "lir.csv")
    assert (lir.lir_per_query_mean >= 1.0).all() and (lir.lir_all_queries >= 1.0).all()
    hm = pd.read_csv(folder / "fig5b_heatmap" / "heatmap.csv")
    per_device = hm.groupby(["dataset", "policy", "device"]).queries.sum()
    assert per_device.nunique() == 1  # each device row counts every query once
    val = pd.read_csv(folder / "validate_dram" / "validation.csv")
    assert val.passed.all() and val.exact.all()  # the model reproduces Ramulator 2.1
    loaded = val[val.offered_load_fraction.notna()]
    assert len(loaded) == 8 and set(loaded.refresh) == {"on", "off"}  # one curve per setting
    assert len(val) - len(loaded) == 12  # every unloaded probe, refresh on and off
    for _, sub in loaded.groupby("refresh"):
        sub = sub.sort_values("offered_load_fraction")  # more load: more bandwidth, longer waits
        assert sub.achieved_bw_GBps_ours.is_monotonic_increasing
        assert sub.mean_read_lat_cycles_ours.iloc[-1] > 10 * sub.mean_read_lat_cycles_ours.iloc[0]
    ll = pd.read_csv(folder / "latency_load" / "latency_load.csv")
    assert (ll.latency_mean_ns > 0).all()
    rk = pd.read_csv(folder / "scale_ranks" / "ranks.csv")
    assert (rk.qps > 0).all()
    two = rk[rk.ranks == 2].pivot(index="dataset", columns="system", values="qps")
    assert (two["cosmos"] > two["cosmos-norank"]).all()  # rank PUs help with 2 ranks
    dev = pd.read_csv(folder / "scale_devices" / "devices.csv")
    cos = dev[dev.system == "cosmos"].sort_values("devices").qps.to_numpy()
    assert cos[-1] > 2 * cos[0]  # Cosmos scales with devices (GPCs and rank PUs per device)
    # up to the presets' four devices every point has a steady state (enough queries for the
    # contexts); beyond, the tiny trace's 100 queries are too few for Cosmos, and it says so
    assert dev[dev.devices <= 4].steady_state.all()
    assert not dev[(dev.system == "cosmos") & (dev.devices == 16)].steady_state.any()


def test_csvs_are_tidy(reproduction):
    """One value per cell: no list joined into a cell, no Python list or dict written out."""
    folder, _ = reproduction
    csvs = [f for name in NAMES for f in (folder / name).glob("*.csv")]
    assert len(csvs) >= len(NAMES) + 1
    for path in csvs:
        df = pd.read_csv(path)
        for col in df.columns[df.dtypes == object]:
            bad = df[col].dropna().astype(str).str.contains(r"[;\[\]{}]")
            assert not bad.any(), f"{path.parent.name}/{path.name}: {col} = {df[col][bad].iloc[0]}"


def test_validate_dram_standalone_options(tmp_path, capsys):
    """`python experiments/figures/validate_dram.py`: the shared options plus --only / --check-sha,
    recorded in config.json; a filter matching nothing fails before anything is written."""
    import json

    from experiments.figures import validate_dram

    rc = validate_dram.main(["--scale", "tiny", "--only", "unloaded_hit", "--check-sha",
                             "--out-root", str(tmp_path / "ok"), "--workers", "1",
                             "--no-progress"])
    assert rc == 0
    (folder,) = (tmp_path / "ok").iterdir()
    cfg = json.loads((folder / "config.json").read_text())
    assert cfg["experiment"] == "validate_dram" and cfg["scale"]["name"] == "tiny"
    assert cfg["only"] == "unloaded_hit" and cfg["check_sha"] is True and cfg["workers"] == 1
    assert "validate_dram.py" in cfg["rerun"] and "--only unloaded_hit --check-sha" in cfg["rerun"]
    val = pd.read_csv(folder / "validation.csv")
    assert sorted(val.name.unique()) == ["1ch_unloaded_hit_s60", "4ch_unloaded_hit_s57"]
    assert len(val) == 4 and val.exact.all()
    off = val[val.refresh == "off"]
    assert (off.mean_read_lat_cycles_ours == 43).all()  # a row hit: tCL + burst, no refresh
    assert "| hit | 4ch | 80.9 / 80.9 | 43.0 / 43.0 |" in (folder / "summary.md").read_text()
    assert (folder / "unloaded_latency.png").is_file()
    assert not (folder / "latency_vs_bandwidth.png").exists()  # no loaded run selected
    with pytest.raises(SystemExit) as exc:
        validate_dram.main(["--only", "5ch_", "--out-root", str(tmp_path / "bad")])
    assert exc.value.code == 2
    assert "--only '5ch_': no set A run" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()


def test_experiments_share_identical_simulations(reproduction):
    """The simulations every experiment declares run first, in one pool, once each
    (experiments.harness.plan), as many as the plan counts from the declarations (at the
    tiny scale 83 asked for, 50 distinct: fig4a's 16 are energy_per_query's; the devices
    sweep's four-device points, the ranks sweep's two-rank points and the load sweep's and
    rag_ttft's saturation runs are fig4a's runs of those systems,
    experiments.figures.fig4a_qps.sweep_task). None was in the (empty) simulation cache, and
    no experiment reads one from it afterwards: they take the pool's rows."""
    import argparse

    from experiments.harness import plan as P

    _, stdout = reproduction
    args = argparse.Namespace(scale="tiny", dataset=None, queries=None, groundtruth=None,
                              metric=None, workers=2, scheduler=None, seed=0)
    p = P.plan(NAMES, P.plan_context(args))
    assert (f"[workloads and the simulations of every experiment] 2 workloads; "
            f"{len(p['simulations'])} distinct simulations for {p['asked']} asked by the "
            "experiments (0 read from the simulation cache)") in stdout
    assert "simulations_from_cache" not in stdout


def test_rerun_reads_every_simulation_from_the_cache(reproduction):
    """A second run of fig4a with the same cache simulates nothing and writes the same table
    (experiments.harness.resultcache)."""
    import os

    folder, _ = reproduction
    root = folder.parent.parent
    env = {**os.environ, "COSMOS_CACHE": str(root / "cache"), "MPLBACKEND": "Agg"}
    out = subprocess.run(
        [sys.executable, "-m", "cosmos", "run", "fig4a_qps", "--scale", "tiny", "--out-root",
         str(root / "rerun"), "--workers", "2", "--no-progress"],
        capture_output=True, text=True, env=env, timeout=600,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    first = pd.read_csv(folder / "fig4a_qps" / "qps.csv")
    from experiments.figures.fig4a_qps import ROWS

    n = 2 * len(ROWS)                               # fig4a's rows x 2 workloads
    assert f"simulations_from_cache: {n}/{n}" in out.stdout
    (again,) = (root / "rerun").iterdir()
    pd.testing.assert_frame_equal(pd.read_csv(again / "qps.csv"), first)
