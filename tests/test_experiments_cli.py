"""`cosmos replay` compares systems on a user's logical trace; `--dataset` runs on real files
(cut to the scale, ground truth once, config.json enough to rerun); bad input fails in one line.
"""

import json
import shlex

import numpy as np
import pandas as pd
import pytest

from cosmos.cli import main


@pytest.fixture(scope="module")
def small_trace(tmp_path_factory):
    from graphs import make_workload, save_trace

    root = tmp_path_factory.mktemp("replay")
    tr = make_workload("sift", n=2000, num_queries=30, num_clusters=8, num_probes=2,
                       cache_dir=root / "cache", progress=False)
    return save_trace(root / "mine.npz", tr)


def test_replay_compares_systems(small_trace, tmp_path, capsys):
    rc = main(["replay", str(small_trace), "--systems", "base,cosmos", "--num-queries", "20",
               "--set", "device.count=2", "--out-root", str(tmp_path), "--workers", "1",
               "--no-progress", "--seed", "3"])
    assert rc == 0
    (folder,) = tmp_path.iterdir()
    assert json.loads((folder / "config.json").read_text())["seed"] == 3
    df = pd.read_csv(folder / "systems.csv")
    assert list(df.system) == ["base", "cosmos"]
    assert (df.qps > 0).all() and df.qps_vs_base.iloc[0] == pytest.approx(1.0)
    assert (folder / "config.json").is_file()
    # energy per query, power and the breakdown: in systems.csv and printed
    parts = [c for c in df.columns if c.startswith("energy_breakdown_mJ_per_query_")]
    from cosmos.energy import COMPONENTS

    assert len(parts) == len(COMPONENTS) and (df.energy_per_query_mJ > 0).all() and (df.power_avg_W > 0).all()
    assert np.allclose(df[parts].sum(axis=1), df.energy_per_query_mJ, rtol=1e-9)
    out = capsys.readouterr().out
    assert "cosmos" in out and str(folder) in out
    assert "energy per query (mJ)" in out and "dram_array" in out and "pu_accel" in out


@pytest.mark.parametrize("argv, message", [
    (["replay", "missing.npz"], "trace file not found: missing.npz"),
    (["replay", "TRACE", "--systems", "base,warp"], "unknown ['warp']"),
    # refused before any simulation (a duplicate once ran them all, then failed in pandas)
    (["replay", "TRACE", "--systems", "base,cosmos,base"], "base named more than once"),
    (["replay", "TRACE", "--set", "device.count"], "expected FIELD=VALUE"),
    (["replay", "TRACE", "--set", "device.capacity_bytes=1099511627776"],
     "is more than a device's DRAM holds"),
    (["reproduce", "--only", "fig9"], "unknown experiment(s) ['fig9']"),
    (["reproduce", "--only", ""], "--only '': no experiment named"),       # not: run all
    (["reproduce", "--only", " , "], "--only ' , ': no experiment named"),
    (["reproduce", "--queries", "q.fbin"], "--queries/--groundtruth/--metric need --dataset"),
    (["reproduce", "--dataset", "nowhere.fbin"], "--dataset nowhere.fbin: no such file"),
    (["reproduce", "--metric", "ip"], "--queries/--groundtruth/--metric need --dataset"),
    (["run", "fig5a_lir", "--dataset", "TRACE"], "unknown vector file extension '.npz'"),
    (["run", "fig5a_lir", "--dataset", "GT"], "siftsmall_groundtruth.ivecs: holds int32 values"),
    (["reproduce", "--dataset", "BASE", "--groundtruth", "BASE"], "needs --queries"),
    (["replay", "JUNK"], "junk.npz: not a trace file: not a .npz (zip) archive"),
    (["replay", "TEXT"], "text.npz: not a trace file: not a .npz (zip) archive"),
])
def test_bad_input_is_one_clear_line(argv, message, small_trace, tmp_path, capsys):
    (tmp_path / "junk.npz").write_bytes(bytes(range(256)) * 8)    # once: numpy's pickle hint
    (tmp_path / "text.npz").write_text("hello\n")
    names = {"TRACE": str(small_trace), "BASE": str(DATA / "siftsmall_base.u8bin"),
             "GT": str(DATA / "siftsmall_groundtruth.ivecs"), "JUNK": str(tmp_path / "junk.npz"),
             "TEXT": str(tmp_path / "text.npz")}
    argv = [names.get(a, a) for a in argv]
    rc = main(argv + ["--out-root", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2
    assert message in err and "Traceback" not in err
    assert not any(p.name not in ("junk.npz", "text.npz") for p in tmp_path.iterdir())


DATA = __import__("pathlib").Path(__file__).parent / "data" / "graphs"


def _count_exact_knn(monkeypatch, fail=False):
    """Count (or forbid) exact ground-truth computations."""
    import graphs.groundtruth
    import graphs.workload

    calls = []
    real = graphs.groundtruth.exact_knn

    def counted(*a, **kw):
        if fail:
            raise AssertionError("ground truth computed although the cache has everything")
        calls.append(len(a[1]))
        return real(*a, **kw)

    monkeypatch.setattr(graphs.groundtruth, "exact_knn", counted)
    monkeypatch.setattr(graphs.workload, "exact_knn", counted)  # cached_groundtruth's name
    return calls


def test_user_dataset_is_cut_to_the_scale_and_its_ground_truth_computed_once(tmp_path, capsys,
                                                                             monkeypatch):
    """`reproduce --dataset` on a real 10,000-vector file at the tiny scale: a note says the base
    is cut to 3,000 vectors, the ground truth of the cut base is computed once for three traces
    (probes 4, 8, 16) and cached, and a rerun finds the traces without computing it again."""

    monkeypatch.setenv("COSMOS_CACHE", str(tmp_path / "cache"))
    files = ["--dataset", str(DATA / "siftsmall_base.u8bin"), "--queries",
             str(DATA / "siftsmall_query.u8bin"), "--groundtruth",
             str(DATA / "siftsmall_groundtruth.ivecs")]
    calls = _count_exact_knn(monkeypatch)
    rc = main(["reproduce", "--scale", "tiny", "--only", "fig5a_lir,fig5b_heatmap", *files,
               "--out-root", str(tmp_path / "r"), "--workers", "1", "--no-progress"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "the base is cut to the tiny scale's size: only its first 3,000 vectors" in out
    assert "file's ids refer to the uncut base" in out
    assert calls == [100]  # one computation (100 queries) for every trace of the run
    assert len(list((tmp_path / "cache" / "groundtruth").glob("*.npz"))) == 1
    (root,) = (tmp_path / "r").iterdir()
    lir = pd.read_csv(root / "fig5a_lir" / "lir.csv")
    assert set(lir.dataset) == {"siftsmall_base"} and sorted(set(lir.num_probes)) == [4, 8, 16]
    assert (lir.lir_all_queries >= 1).all()
    cfg = json.loads((root / "fig5a_lir" / "config.json").read_text())
    plan = cfg["dataset_plan"]
    used = (plan["vectors_in_file"], plan["base_vectors_used"], plan["queries_used"])
    assert used == (10000, 3000, 100)
    assert plan["groundtruth_source"] == "computed" and cfg["dataset"]["metric"] == "l2"
    # config.json holds what a rerun needs: resolved cache (here from $COSMOS_CACHE), code
    # revision, versions from the installed metadata, the command line and a rerun command
    from importlib.metadata import version

    assert cfg["cache_dir"] == str((tmp_path / "cache").resolve())
    assert cfg["versions"]["hnswlib"] == version("hnswlib")
    assert cfg["versions"]["numpy"] == np.__version__
    rev = cfg["code_revision"]
    assert rev == "unknown" or (len(rev["commit"]) == 40 and rev["describe"])
    assert cfg["command"].split()[0] and "--only" not in cfg["rerun"]
    assert cfg["rerun"].startswith("cosmos run fig5a_lir --scale tiny --dataset ")
    # the final table: every folder with exactly the files in it
    table = out[out.index("reproduce: 2 experiments"):]
    assert str(root) in table.splitlines()[0]
    listed, folder = {}, None
    for line in table.split("\n\n")[0].splitlines()[3:]:  # below the header and its rule
        words = line.split()
        if not line.startswith("   "):  # a folder's first line; continuations are indented
            folder, words = words[0], words[1:]
        listed.setdefault(folder, []).extend(w for w in words if "." in w and not w.startswith("("))
    on_disk = {f"{d.name}/": sorted(p.name for p in d.iterdir())
               for d in root.iterdir() if d.is_dir()}
    on_disk["./"] = ["summary.md"]
    assert {k: sorted(v) for k, v in listed.items()} == on_disk
    assert "lir.csv" in on_disk["fig5a_lir/"] and "heatmap.csv" in on_disk["fig5b_heatmap/"]

    _count_exact_knn(monkeypatch, fail=True)  # the rerun must not compute any ground truth
    monkeypatch.delenv("COSMOS_CACHE")  # the rerun command names the cache itself
    assert main(shlex.split(cfg["rerun"])[1:]) == 0
    (again,) = set((tmp_path / "r").iterdir()) - {root}
    pd.testing.assert_frame_equal(pd.read_csv(again / "lir.csv"), lir)
    assert json.loads((again / "config.json").read_text())["rerun"] == cfg["rerun"]


def test_code_revision_is_unknown_without_git(monkeypatch):
    from experiments.harness.runner import code_revision

    rev = code_revision()
    assert rev == "unknown" or rev["commit"]
    monkeypatch.setenv("PATH", "")
    assert code_revision() == "unknown"


def test_user_dataset_uncut_with_its_ground_truth_and_ip_metric(tmp_path, capsys, monkeypatch):
    """A base smaller than the scale is used whole and its ground-truth file as given; --metric
    ip reaches the index and the trace; queries held out of the base."""

    from graphs import load_trace
    from graphs.groundtruth import exact_knn
    from graphs.io import read_vectors, write_groundtruth, write_vectors

    base = np.asarray(read_vectors(DATA / "bigann10k_base.u8bin", n=1200))
    q = np.asarray(read_vectors(DATA / "bigann10k_query.u8bin", n=30))
    write_vectors(tmp_path / "mine.u8bin", base, "u8bin")
    write_vectors(tmp_path / "q.u8bin", q, "u8bin")
    write_groundtruth(tmp_path / "gt.ivecs", exact_knn(base, q, 20, "l2")[0])
    cache = tmp_path / "cache"
    monkeypatch.setenv("COSMOS_CACHE", str(cache))
    _count_exact_knn(monkeypatch, fail=True)  # the file's ground truth applies: none computed
    rc = main(["run", "fig5a_lir", "--scale", "tiny", "--dataset", str(tmp_path / "mine.u8bin"),
               "--queries", str(tmp_path / "q.u8bin"), "--groundtruth", str(tmp_path / "gt.ivecs"),
               "--out-root", str(tmp_path / "r"), "--workers", "1", "--no-progress"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "all 1,200 base vectors are used" in out and "Ground truth from" in out
    (folder,) = (tmp_path / "r").iterdir()
    plan = json.loads((folder / "config.json").read_text())["dataset_plan"]
    assert plan["groundtruth_source"] == "file" and plan["num_clusters"] == 16
    metas = [load_trace(p).meta for p in sorted((cache / "traces").glob("*.npz"))]
    # one trace, at the scale's probes: fig5a routes its other counts (probed_clusters)
    assert len(metas) == 1 and all(m["n"] == 1200 and m["num_queries"] == 30 for m in metas)
    assert all(m["recall"] is not None and m["recall"] > 0.5 for m in metas)

    monkeypatch.undo()
    monkeypatch.setenv("COSMOS_CACHE", str(cache))
    rc = main(["run", "fig5b_heatmap", "--scale", "tiny", "--dataset", str(tmp_path / "mine.u8bin"),
               "--metric", "ip", "--out-root", str(tmp_path / "r"), "--workers", "1",
               "--no-progress"])
    assert rc == 0
    assert "the file's last 100 vectors, held out of the base" in capsys.readouterr().out
    ip = [load_trace(p).meta for p in (cache / "traces").glob("*.npz")]
    ip = [m for m in ip if m["metric"] == "ip"]
    assert len(ip) == 1 and ip[0]["n"] == 1100 and ip[0]["num_queries"] == 100


# ------------------------------------------- user files checked before anything runs (fixB)


def _bad_user_files(tmp_path):
    from graphs.groundtruth import exact_knn
    from graphs.io import write_groundtruth, write_vectors

    rng = np.random.default_rng(5)
    base = rng.normal(size=(1200, 8)).astype(np.float32)
    q = rng.normal(size=(20, 8)).astype(np.float32)
    write_vectors(tmp_path / "base.fbin", base)
    write_vectors(tmp_path / "q.fbin", q)
    write_vectors(tmp_path / "qnan.fbin", np.full_like(q, np.nan))
    tail = base.copy()
    tail[-3, 5] = np.inf  # in the queries held out of the base (its last 100 vectors)
    write_vectors(tmp_path / "tailinf.fbin", tail)
    write_groundtruth(tmp_path / "gt_k3.ivecs", exact_knn(base, q, 3, "l2")[0])
    write_groundtruth(tmp_path / "gt_few.ivecs", exact_knn(base, q[:5], 10, "l2")[0])
    bad_ids = exact_knn(base, q, 10, "l2")[0]
    bad_ids[2, 0] = 5000
    write_groundtruth(tmp_path / "gt_ids.ivecs", bad_ids)
    # one id repeated in every row: once read as a recall of 0.0 (issue 55)
    write_groundtruth(tmp_path / "gt_same.ivecs", np.full((len(q), 10), 7, np.int64))


@pytest.mark.parametrize("args, message", [
    (["--queries", "q.fbin", "--groundtruth", "gt_k3.ivecs"],
     "gt_k3.ivecs: has 3 neighbors per query, but recall@10 needs at least 10"),
    (["--queries", "qnan.fbin"], "qnan.fbin: row 0 holds nan at column 0"),
    (["--dataset", "tailinf.fbin"], "tailinf.fbin: row 1197 holds inf at column 5"),
    (["--queries", "q.fbin", "--groundtruth", "gt_few.ivecs"], "gt_few.ivecs: 5 rows for the 20 queries"),
    (["--queries", "q.fbin", "--groundtruth", "gt_ids.ivecs"],
     ", 5000], outside the 1200 base vectors (expected 0..1199; first in row 2)"),
    (["--queries", "q.fbin", "--groundtruth", "gt_same.ivecs"],
     "base.fbin): row 0 repeats id 7 (20 of 20 rows repeat an id)"),
    (["--seed", "-1"], "--seed must be >= 0, got -1"),
])
def test_run_rejects_bad_user_files_and_seed_in_one_line(tmp_path, capsys, monkeypatch, args,
                                                         message):
    """Bad ground truth, non-finite vectors and a negative seed fail before anything is built
    or written, in one line naming the option and the file (no traceback)."""
    _bad_user_files(tmp_path)
    monkeypatch.setenv("COSMOS_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    if "--dataset" not in args:
        args = ["--dataset", "base.fbin", *args]
    rc = main(["run", "fig5a_lir", "--scale", "tiny", *args, "--out-root", str(tmp_path / "r"),
               "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists() and not (tmp_path / "cache").exists()


@pytest.mark.parametrize("args, message", [
    (["--scale", "tiny", "--templates", "2"],
     "--templates 2: --scale tiny builds the real index; template clusters apply to the "
     "cluster-template scale (paper)"),
    (["--scale", "paper", "--templates", "0"], "--templates 0: expected 1 to the scale's 1024"),
    (["--scale", "paper", "--templates", "1025"], "--templates 1025: expected 1 to the scale's"),
])
def test_templates_option_is_checked_in_one_line(tmp_path, capsys, args, message):
    """--templates applies to the cluster-template scale alone, within its cluster count; a bad
    value is one line before anything is built or written."""
    rc = main(["run", "fig4a_qps", *args, "--out-root", str(tmp_path / "r"), "--cache-dir",
               str(tmp_path / "cache"), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "r").exists() and not (tmp_path / "cache").exists()


def test_templates_option_reaches_the_plan(capsys):
    """`cosmos reproduce --scale paper --templates 8 --dry-run`: the workloads are templated on
    8 clusters, and the default 2's estimated build is about a quarter of theirs."""
    def build_cpu_s(extra):
        assert main(["reproduce", "--scale", "paper", "--only", "fig4a_qps", "--dry-run",
                     *extra]) == 0
        out = capsys.readouterr().out
        line = next(x for x in out.splitlines() if x.strip().startswith("sift:"))
        return line, float(line.rsplit("~", 1)[1].split()[0].replace(",", ""))

    line2, two = build_cpu_s([])
    line8, eight = build_cpu_s(["--templates", "8"])
    assert "2 template clusters" in line2 and "8 template clusters" in line8
    assert 0.2 < two / eight < 0.4, (two, eight)


@pytest.mark.parametrize("extra, message", [
    (["--systems", ","], "--systems ',': no system named"),
    (["--systems", " "], "no system named"),
    (["--set", "gpc.cores=4.5"], "gpc.cores='4.5': expected an integer"),
    (["--set", "rank_pu.enabled=maybe"], "rank_pu.enabled='maybe': expected a boolean"),
    (["--set", "link.slots_per_flit=0"], "system.link.slots_per_flit: must be >= 1"),
    (["--set", "placement=nope"], "unknown placement policy 'nope'"),
    (["--num-queries", "0"], "--num-queries must be >= 1, got 0"),
    (["--workers", "0"], "--workers must be >= 1, got 0"),
    (["--seed", "-1"], "--seed must be >= 0, got -1"),
])
def test_replay_checks_everything_before_creating_its_folder(extra, message, small_trace,
                                                             tmp_path, capsys):
    rc = main(["replay", str(small_trace), "--out-root", str(tmp_path), "--no-progress"] + extra)
    err = capsys.readouterr().err
    assert rc == 2
    assert message in err and "Traceback" not in err, err
    assert not any(tmp_path.iterdir())  # no folder holding only config.json


def test_replay_refuses_a_trace_the_simulator_cannot_use(small_trace, tmp_path, capsys):

    d = dict(np.load(small_trace))
    meta = json.loads(str(d["meta"]))
    del meta["checksums"]  # a hand-edited trace: load_trace cannot see the damage
    d["meta"] = np.array(json.dumps(meta))
    d["hop_degree"] = d["hop_degree"].copy()
    d["hop_degree"][0] = 10**9
    bad = tmp_path / "bad.npz"
    np.savez(bad, **d)
    root = tmp_path / "results"
    rc = main(["replay", str(bad), "--out-root", str(root), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and "hop_degree[0] = 1000000000 out of range" in err, err
    assert not root.exists() or not any(root.iterdir())


def test_devices_sweep_simulates_enough_queries_for_a_steady_state():
    """experiments.figures.scale_devices.queries_for against the window rule of cosmos.metrics: with
    that many queries (distinct completion cycles) the window holds at least the queries in
    flight."""
    from cosmos.config import with_overrides
    from cosmos.metrics import steady_window
    from cosmos.presets import get_preset
    from cosmos.simulate import default_max_inflight
    from experiments.figures.scale_devices import WARMUP, queries_for

    for system in ("base", "cosmos"):
        for devices in (1, 4, 16):
            q = queries_for(system, devices, 10)
            inflight = default_max_inflight(
                with_overrides(get_preset(system), {"device.count": devices}))
            _, _, mask = steady_window(np.arange(1, q + 1), WARMUP)
            assert mask.sum() >= inflight, (system, devices, q)
    assert queries_for("cosmos", 16, 160) == 325 and queries_for("cosmos", 4, 160) == 160


def test_replay_names_a_dram_requests_file(tmp_path, capsys):
    """A DRAM model's requests.npz given as a logical trace is named for what it is (issue 55:
    it was called damaged)."""
    from pathlib import Path

    dram_trace = Path(__file__).parent / "data" / "dram" / "4ch_random_rw_L0.50_s10.head2000.trace.gz"
    assert main(["dram", "replay", str(dram_trace), "--out", str(tmp_path / "d")]) == 0
    capsys.readouterr()
    records = tmp_path / "d" / "requests.npz"
    assert main(["replay", str(records), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "requests.npz: not a logical trace: it holds a DRAM model's per-request records" in err
    assert "Traceback" not in err and not (tmp_path / "r").exists()


def test_simulate_writes_the_replay_row_into_a_default_folder(small_trace, tmp_path):
    """`cosmos simulate` without --out makes a new folder simulate-<system>-<time> under
    --out-root, and its systems.csv is the row `cosmos replay` writes for that system."""
    sim_root, rep_root = tmp_path / "s", tmp_path / "r"
    assert main(["simulate", str(small_trace), "--systems", "cosmos", "--num-queries", "20",
                 "--set", "device.count=2", "--out-root", str(sim_root), "--no-progress",
                 "--seed", "3"]) == 0
    (folder,) = sim_root.iterdir()
    assert folder.name.startswith("simulate-cosmos-")
    assert main(["replay", str(small_trace), "--systems", "cosmos", "--num-queries", "20",
                 "--set", "device.count=2", "--out-root", str(rep_root), "--workers", "1",
                 "--no-progress", "--seed", "3"]) == 0
    (rfolder,) = rep_root.iterdir()
    sim = pd.read_csv(folder / "systems.csv")
    rep = pd.read_csv(rfolder / "systems.csv")
    assert list(sim.columns) == list(rep.columns)
    timing = [c for c in sim.columns if c.endswith("wall_s")]      # the runs' own durations
    pd.testing.assert_frame_equal(sim.drop(columns=timing), rep.drop(columns=timing))
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["qps"] == pytest.approx(sim.qps.iloc[0], rel=1e-12)


@pytest.mark.parametrize("argv", [
    ["run", "recall_qps", "--scale", "paper"],
    ["reproduce", "--scale", "paper", "--only", "fig5a_lir,recall_qps"],
    ["reproduce", "--scale", "paper", "--only", "recall_qps", "--dry-run"],
])
def test_recall_qps_refuses_the_template_scale_in_one_line(tmp_path, capsys, argv):
    """recall_qps needs a real index; at --scale paper (cluster templates) it is refused with
    one line before any workload is built or folder written, alone or in a reproduction."""
    rc = main([*argv, "--out-root", str(tmp_path / "r"), "--cache-dir", str(tmp_path / "cache"),
               "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and "recall_qps needs a real index" in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "r").exists() and not (tmp_path / "cache").exists()


def test_reproduce_at_the_template_scale_names_only_what_it_can_run(capsys):
    assert main(["reproduce", "--scale", "paper", "--dry-run"]) == 0
    line = capsys.readouterr().out.splitlines()[0]
    assert "latency_load not included" in line and "recall_qps" not in line, line
