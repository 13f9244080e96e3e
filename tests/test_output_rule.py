"""Every command that writes a results folder follows cosmos_common.outdir's rule: --out new or
empty (else one line, exit 2, before any work), an INCOMPLETE marker until everything is
written, and an interrupted run (exit 130) leaves the marker saying what is missing."""

from pathlib import Path

import numpy as np
import pytest

from cosmos.cli import main
from cosmos_common.outdir import INCOMPLETE
from tests.cosmos_helpers import make_trace

DRAM_SAMPLE = Path(__file__).parent / "data" / "dram" / "4ch_random_rw_L0.50_s10.head2000.trace.gz"


@pytest.fixture(scope="module")
def graphs_trace(tmp_path_factory):
    from graphs import make_workload, save_trace

    root = tmp_path_factory.mktemp("rule")
    tr = make_workload("sift", n=1000, num_queries=12, num_clusters=4, num_probes=2,
                       cache_dir=root / "cache", progress=False)
    return save_trace(root / "mine.npz", tr)


def _interrupt(*a, **kw):
    raise KeyboardInterrupt


def _one_error_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_simulate_trace_positional_or_option_and_the_note_on_num_queries(tmp_path, capsys):
    trace = tmp_path / "t.npz"
    np.savez(trace, **make_trace(num_queries=6, hops=2, reads_per_hop=3))
    out = tmp_path / "empty"
    out.mkdir()  # an empty folder is used
    assert main(["simulate", str(trace), "--systems", "base", "--out", str(out),
                 "--num-queries", "100000", "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert f"note: --num-queries 100000 but {trace} holds 6 queries; simulating all 6" in err
    assert (out / "summary.json").exists() and not (out / INCOMPLETE).exists()
    # both spellings at once must agree
    assert main(["simulate", str(trace), "--trace", str(tmp_path / "other.npz"), "--systems",
                 "base", "--out", str(tmp_path / "o2"), "--no-progress"]) == 2
    assert "differ; give the trace once" in _one_error_line(capsys.readouterr().err)


def test_simulate_interrupted_leaves_the_marker(tmp_path, monkeypatch, capsys):
    import cosmos.simulate

    trace = tmp_path / "t.npz"
    np.savez(trace, **make_trace(num_queries=6, hops=2, reads_per_hop=3))
    monkeypatch.setattr(cosmos.simulate, "simulate", _interrupt)
    out = tmp_path / "res"
    assert main(["simulate", "--trace", str(trace), "--systems", "base", "--out", str(out),
                 "--no-progress"]) == 130
    text = (out / INCOMPLETE).read_text()
    assert "cosmos simulate" in text
    assert text.splitlines()[-1] == ("interrupted (Ctrl-C); missing: per_query.csv, "
                                     "per_device.csv, systems.csv, config.json, summary.json")
    capsys.readouterr()
    # the folder is not empty any more: a second run is refused before any work
    assert main(["simulate", "--trace", str(trace), "--systems", "base", "--out", str(out),
                 "--no-progress"]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert f"--out {out}: folder is not empty (INCOMPLETE); pass a new folder" in line


def test_replay_takes_trace_either_way_and_out(graphs_trace, tmp_path, capsys):
    out = tmp_path / "mine"
    assert main(["replay", "--trace", str(graphs_trace), "--systems", "base", "--out", str(out),
                 "--num-queries", "500", "--workers", "1", "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "note: --num-queries 500 but" in err and "simulating all 12" in err
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "systems.csv"]
    assert main(["replay", str(graphs_trace), "--systems", "base", "--out", str(out),
                 "--workers", "1", "--no-progress"]) == 2
    assert "folder is not empty" in _one_error_line(capsys.readouterr().err)
    assert main(["replay", "--systems", "base", "--no-progress"]) == 2
    assert "give the logical trace" in _one_error_line(capsys.readouterr().err)


def test_replay_interrupted_leaves_the_marker(graphs_trace, tmp_path, monkeypatch, capsys):
    import experiments.harness.common

    monkeypatch.setattr(experiments.harness.common, "run_sweep", _interrupt)
    root = tmp_path / "r"
    assert main(["replay", str(graphs_trace), "--systems", "base", "--out-root", str(root),
                 "--workers", "1", "--no-progress"]) == 130
    (folder,) = list(root.iterdir())
    assert folder.name.startswith("replay-mine-")
    assert (folder / INCOMPLETE).read_text().splitlines()[-1] == \
        "interrupted (Ctrl-C); missing: systems.csv"


def test_reproduce_names_its_incomplete_folders(tmp_path, monkeypatch, capsys):
    import experiments.harness.runner

    class Fake:
        TITLE = "fake"

        @staticmethod
        def run(ctx):
            raise RuntimeError("the sweep crashed")

    monkeypatch.setattr(experiments.harness.runner, "load", lambda name: Fake)
    out = tmp_path / "repro"
    with pytest.raises(RuntimeError, match="the sweep crashed"):  # a bug: its traceback
        main(["reproduce", "--scale", "tiny", "--only", "fig5a_lir", "--out", str(out),
              "--no-progress", "--no-sim-cache"])
    err = capsys.readouterr().err
    assert f"incomplete results (each holds an INCOMPLETE file saying what is missing): " \
           f"{out}, {out / 'fig5a_lir'}" in err, err
    assert (out / "fig5a_lir" / INCOMPLETE).read_text().splitlines()[-1] == (
        "failed: RuntimeError: the sweep crashed; missing: results (CSV), plots (PNG, PDF), "
        "summary.md")
    assert "missing: fig5a_lir/, summary.md" in (out / INCOMPLETE).read_text()


def test_run_out_must_be_new_or_empty(tmp_path, capsys):
    out = tmp_path / "full"
    out.mkdir()
    (out / "old.csv").write_text("mine")
    assert main(["run", "fig5a_lir", "--scale", "tiny", "--out", str(out), "--no-progress"]) == 2
    assert f"--out {out}: folder is not empty (old.csv)" in _one_error_line(
        capsys.readouterr().err)
    assert main(["reproduce", "--scale", "tiny", "--out-root", str(out / "old.csv"),
                 "--no-progress"]) == 2
    assert "exists and is not a folder" in _one_error_line(capsys.readouterr().err)
    assert sorted(p.name for p in out.iterdir()) == ["old.csv"]


def test_dram_replay_out_rule_and_interruption(tmp_path, monkeypatch, capsys):
    import dram.cli

    out = tmp_path / "d"
    monkeypatch.setattr(dram.cli, "_replay_function", lambda: _interrupt)
    assert main(["dram", "replay", str(DRAM_SAMPLE), "--out", str(out), "--no-progress"]) == 130
    lines = (out / INCOMPLETE).read_text().splitlines()
    assert "cosmos dram replay" in lines[0]
    assert lines[-1] == ("interrupted (Ctrl-C); missing: requests.npz, stats.json, stats.csv, "
                         "config.json, summary.txt")
    capsys.readouterr()
    # a bad trace is refused before anything is written: the folder made for it is removed
    bad = tmp_path / "bad.trace"
    bad.write_text("0x40 READ\n")
    monkeypatch.undo()
    assert main(["dram", "replay", str(bad), "--out", str(tmp_path / "d2"),
                 "--no-progress"]) == 2
    assert "bad.trace" in _one_error_line(capsys.readouterr().err)
    assert not (tmp_path / "d2").exists()


def test_an_error_writing_a_temporary_file_names_the_folder(tmp_path, monkeypatch, capsys):
    import placement.cli

    np.savez(tmp_path / "c.npz", sizes=np.array([3, 4], dtype=np.int64))

    def disk_full(path, *a, **kw):
        raise OSError(28, "No space left on device", str(tmp_path / ".p.csv.k2j3.tmp"))

    monkeypatch.setattr(placement.cli, "save_placement", disk_full)
    assert main(["place", "--clusters", str(tmp_path / "c.npz"), "--policy", "round_robin",
                 "--out", str(tmp_path / "p.csv")]) == 2
    assert _one_error_line(capsys.readouterr().err) == (
        f"cosmos place: error: cannot write into {tmp_path}: No space left on device")
