"""`cosmos simulate`: listing, a run writing its results folder, refusals."""

import json

import numpy as np
import pandas as pd
import pytest

from cosmos.cli import main
from tests.cosmos_helpers import make_trace


def test_list_names_the_six_presets(capsys):
    assert main(["simulate", "--list"]) == 0
    out = capsys.readouterr().out
    for name in ("base", "dram-only", "cxl-anns", "cosmos-norank", "cosmos-noalgo", "cosmos"):
        assert name in out


def test_simulate_writes_summary_and_csvs_and_never_overwrites(tmp_path, capsys):
    trace = tmp_path / "t.npz"
    np.savez(trace, **make_trace(num_queries=30, hops=3, reads_per_hop=5))
    out = tmp_path / "res"
    argv = ["simulate", "--system", "cosmos", "--trace", str(trace), "--out", str(out),
            "--no-progress", "--set", "gpc.cores=4"]
    assert main(argv) == 0
    summ = json.loads((out / "summary.json").read_text())
    assert summ["system"] == "cosmos" and summ["qps"] > 0
    assert summ["latency_p50_ns"] <= summ["latency_p99_ns"]
    assert set(summ["breakdown_ns"]) == {"traversal", "distance", "candidate", "transfer",
                                         "queue"}
    pq = pd.read_csv(out / "per_query.csv")
    assert len(pq) == 30 and (pq["latency_ns"] > 0).all()
    assert len(pd.read_csv(out / "per_device.csv")) == 4
    conf = json.loads((out / "config.json").read_text())
    assert conf["system"]["gpc"]["cores"] == 4
    before = (out / "summary.json").read_text()
    assert main(argv) == 2
    assert "already holds results" in capsys.readouterr().err
    assert (out / "summary.json").read_text() == before


@pytest.mark.parametrize("argv, message", [
    (["simulate", "--system", "gpu", "--trace", "x.npz", "--out", "o"], "unknown system 'gpu'"),
    (["simulate", "--system", "base", "--trace", "missing.npz", "--out", "o"],
     "trace file not found"),
    (["simulate", "--system", "base", "--trace", "x.npz", "--out", "o", "--set", "gpc.x=1"],
     "unknown field 'x'"),
])
def test_bad_input_is_one_clear_line(tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.chdir(tmp_path)
    np.savez(tmp_path / "x.npz", **make_trace(num_queries=2, hops=1, reads_per_hop=1))
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_closed_stdout_ends_quietly():
    # `cosmos ... | head` closes the pipe early: exit 141 (SIGPIPE's code), no traceback
    import subprocess
    import sys

    code = ("import dram.cli as d\n"
            "def boom(reg):\n"
            "    raise BrokenPipeError(32, 'Broken pipe')\n"
            "d.format_presets = boom\n"
            "from cosmos.cli import main\n"
            "raise SystemExit(main(['dram', 'presets']))\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 141 and "Traceback" not in p.stderr, p.stderr
