"""`cosmos replay` compares systems on a user's logical trace; bad input fails in one line."""

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
               "--no-progress"])
    assert rc == 0
    (folder,) = tmp_path.iterdir()
    df = pd.read_csv(folder / "systems.csv")
    assert list(df.system) == ["base", "cosmos"]
    assert (df.qps > 0).all() and df.qps_vs_base.iloc[0] == pytest.approx(1.0)
    assert (folder / "config.json").is_file()
    out = capsys.readouterr().out
    assert "cosmos" in out and str(folder) in out


@pytest.mark.parametrize("argv, message", [
    (["replay", "missing.npz"], "trace file not found: missing.npz"),
    (["replay", "TRACE", "--systems", "base,warp"], "unknown ['warp']"),
    (["replay", "TRACE", "--set", "device.count"], "expected FIELD=VALUE"),
    (["reproduce", "--only", "fig9"], "unknown experiment(s) ['fig9']"),
    (["reproduce", "--queries", "q.fbin"], "--queries/--groundtruth need --dataset"),
    (["reproduce", "--dataset", "nowhere.fbin"], "--dataset nowhere.fbin: no such file"),
])
def test_bad_input_is_one_clear_line(argv, message, small_trace, tmp_path, capsys):
    argv = [str(small_trace) if a == "TRACE" else a for a in argv]
    rc = main(argv + ["--out-root", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2
    assert message in err and "Traceback" not in err
    assert not any(tmp_path.iterdir())  # nothing written
