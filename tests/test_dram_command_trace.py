"""``cosmos dram replay --command-trace FILE`` and ``--epoch CYCLES`` (issue 55): every DRAM
command issued, streamed to a CSV file, and per-epoch statistics in ``epochs.csv``; neither
changes a simulated result."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cosmos.cli import main
from dram import DRAMConfig
from dram.output import COMMAND_TRACE_COLUMNS, CommandTraceWriter, epoch_columns

#: bookkeeping of stats.json that is not a simulated result (wall time, the driver's
#: iteration count: --epoch cuts idle stretches at its boundaries)
NOT_RESULTS = {"trace_read_s", "replay_wall_s", "sim_wall_s", "sim_requests_per_s", "compile_s",
               "sim_threads", "requests_write_s", "driver_iterations"}

EPOCH = 700


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def synthetic(n: int = 2500, seed: int = 5) -> dict:
    """A timed trace on the default memory system: requests a few cycles apart, half of them
    in a small region (row hits and conflicts), a third writes, and an idle gap of about ten
    refresh intervals in the middle (idle refreshes, skipped stretches)."""
    rng = np.random.default_rng(seed)
    cap = DRAMConfig().capacity_bytes
    addr = rng.integers(0, cap // 64, n) * 64
    small = rng.random(n) < 0.5
    addr[small] = rng.integers(0, (1 << 22) // 64, int(small.sum())) * 64
    gaps = rng.integers(0, 8, n)
    gaps[n // 2] = 100_000
    return {"addr": addr.astype(np.uint64), "is_write": (rng.random(n) < 0.33).astype(np.uint8),
            "arrival": np.cumsum(gaps).astype(np.int64)}


@pytest.fixture(scope="module")
def trace_file(tmp_path_factory) -> Path:
    t = synthetic()
    path = tmp_path_factory.mktemp("trace") / "synthetic.trace"
    kind = np.where(t["is_write"] != 0, "WRITE", "READ")
    path.write_text("".join(f"0x{a:x} {k} {c}\n"
                            for a, k, c in zip(t["addr"].tolist(), kind, t["arrival"].tolist())))
    return path


@pytest.fixture(scope="module")
def runs(trace_file, tmp_path_factory):
    """The trace replayed twice: plain, and with --epoch and --command-trace (on 2 threads)."""
    import contextlib
    import io

    base = tmp_path_factory.mktemp("runs")
    out = {}
    for name, extra in (("plain", []),
                        ("traced", ["--epoch", str(EPOCH), "--command-trace",
                                    str(base / "commands.csv"), "--workers", "2"])):
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            code = main(["dram", "replay", str(trace_file), "--out", str(base / name),
                         "--no-progress", *extra])
        assert code == 0
        out[name] = base / name
    out["commands"] = base / "commands.csv"
    return out


def _stats(folder: Path) -> dict:
    return json.loads((folder / "stats.json").read_text())


def test_command_trace_has_one_row_per_command(runs):
    cmds = pd.read_csv(runs["commands"])
    assert tuple(cmds.columns) == COMMAND_TRACE_COLUMNS
    stats = _stats(runs["traced"])
    from dram.kernel import COMMAND_NAMES

    counts = cmds["command"].value_counts().to_dict()
    for name in COMMAND_NAMES:
        assert counts.get(name, 0) == stats[f"n_{name}"], name
    assert len(cmds) == sum(stats[f"n_{name}"] for name in COMMAND_NAMES) > 5000
    assert counts["REFab"] == stats["refresh_cmds"] > 0
    # ordered by cycle, then channel
    key = cmds["cycle"].to_numpy() * 64 + cmds["channel"].to_numpy()
    assert (np.diff(key) >= 0).all()
    assert cmds["cycle"].max() <= stats["total_cycles"]
    # a rank-wide command has no bank group, bank or row
    ref = cmds[cmds["command"] == "REFab"]
    assert (ref[["bank_group", "bank", "row"]] == -1).all().all()
    acts = cmds[cmds["command"] == "ACT"]
    assert (acts[["bank_group", "bank", "row"]] >= 0).all().all()


def test_command_trace_respects_ddr5_timing(runs):
    """Per bank: consecutive ACTs at least nRC apart; a column command at least nRCD after
    the bank's ACT (values from the resolved timing of the run's configuration)."""
    from dram.cli import config_from_dict

    cfg = json.loads((runs["traced"] / "config.json").read_text())
    timing = config_from_dict(cfg["dram_config"]).timing
    cmds = pd.read_csv(runs["commands"])
    bank = ["channel", "rank", "bank_group", "bank"]
    acts = cmds[cmds["command"] == "ACT"].sort_values(bank + ["cycle"], kind="stable")
    gap = acts.groupby(bank)["cycle"].diff().dropna()
    assert len(gap) > 100 and gap.min() >= timing["nRC"]
    col = cmds[cmds["command"].isin(["RD", "WR", "RDA", "WRA"])]
    checked = 0
    for key, rows in cmds[cmds["command"].isin(["ACT", "RD", "WR", "RDA", "WRA"])].groupby(bank):
        last_act = None
        for cyc, c in zip(rows["cycle"].tolist(), rows["command"].tolist()):
            if c == "ACT":
                last_act = cyc
            elif last_act is not None:
                assert cyc - last_act >= timing["nRCD"], (key, cyc, last_act)
                checked += 1
    assert checked > len(col) // 2


def test_epoch_rows_sum_to_the_run(runs):
    stats = _stats(runs["traced"])
    ep = pd.read_csv(runs["traced"] / "epochs.csv")
    assert tuple(ep.columns) == epoch_columns()
    channels = stats["channels"] if "channels" in stats else 4
    E = stats["total_cycles"] // EPOCH + 1
    assert len(ep) == E * channels
    assert (ep["start_cycle"] == ep["epoch"] * EPOCH).all()
    assert ep["end_cycle"].max() == stats["total_cycles"] + 1
    from dram.kernel import STAT_NAMES

    for name in STAT_NAMES + ("row_hits", "row_misses", "row_conflicts"):
        assert int(ep[name].sum()) == stats[name], name
    assert int(ep["reads_completed"].sum()) == stats["n_reads"]
    assert int(ep["writes_completed"].sum()) == stats["n_writes"]
    # the mean read latency of the run, from the epochs' means weighted by their reads
    r = ep["reads_completed"]
    mean = (ep["mean_read_latency_cycles"].fillna(0) * r).sum() / r.sum()
    assert mean == pytest.approx(stats["mean_read_latency_cycles"], rel=1e-6)
    # each epoch's command counts are those of the command trace in its cycles
    cmds = pd.read_csv(runs["commands"])
    got = cmds.assign(epoch=cmds["cycle"] // EPOCH).groupby(
        ["epoch", "channel", "command"]).size()
    for (e, g, c), k in got.items():
        row = ep[(ep["epoch"] == e) & (ep["channel"] == g)]
        assert int(row[f"n_{c}"].iloc[0]) == k, (e, g, c)
    # the refreshes of the idle gap fall in the epochs of the gap
    idle = ep[(ep["reads_completed"] == 0) & (ep["writes_completed"] == 0)]
    assert idle["refresh_cmds"].sum() > 0


def test_results_are_identical_with_and_without_the_options(runs):
    a, b = runs["plain"], runs["traced"]
    with np.load(a / "requests.npz") as x, np.load(b / "requests.npz") as y:
        assert x.files == y.files
        for name in x.files:
            assert np.array_equal(x[name], y[name]), name
    sa, sb = _stats(a), _stats(b)
    assert {k: v for k, v in sa.items() if k not in NOT_RESULTS} == \
        {k: v for k, v in sb.items() if k not in NOT_RESULTS}
    assert not (a / "epochs.csv").exists()


@pytest.mark.parametrize("threads", [1, 3])
def test_api_streams_through_a_small_log_and_many_epochs(monkeypatch, tmp_path, threads):
    """With a log of a few dozen commands per call and a merge of a few rows per step, every
    command still reaches the file in order, and every statistic equals the plain run's."""
    import dram.openloop as O
    import dram.output as out
    from dram import replay

    trace = synthetic(1200, seed=11)
    plain = replay(trace, DRAMConfig(), threads=1)
    monkeypatch.setattr(O, "WORK_PER_CALL_LOGGED", 16)
    monkeypatch.setattr(out, "_TRACE_ROWS_PER_STEP", 37)
    path = tmp_path / "sub" / "cmds.csv"
    with CommandTraceWriter(path) as writer:
        got = replay(trace, DRAMConfig(), threads=threads, command_sink=writer,
                     epoch_cycles=97)
        writer.finish()
    for name in ("accept", "completion"):
        assert np.array_equal(getattr(plain, name), getattr(got, name)), name
    drop = {"driver_iterations"}
    assert {k: (v.tolist() if isinstance(v, np.ndarray) else v)
            for k, v in plain.stats.items() if k not in drop} == \
        {k: (v.tolist() if isinstance(v, np.ndarray) else v)
         for k, v in got.stats.items() if k not in drop}
    # the whole log, as the in-memory command_log of a plain run records it
    ref = replay(trace, DRAMConfig(), threads=1, command_log=10 ** 6).command_log
    cmds = pd.read_csv(path)
    assert len(cmds) == writer.n_commands == len(ref)
    from dram import kernel as K

    assert np.array_equal(cmds["cycle"].to_numpy(), ref[:, K.LOG_CLK])
    assert np.array_equal(cmds["channel"].to_numpy(), ref[:, K.LOG_CH])
    assert np.array_equal(cmds["row"].to_numpy(), ref[:, K.LOG_ROW])
    assert list(cmds["command"]) == [K.COMMAND_NAMES[c] for c in ref[:, K.LOG_CMD]]
    assert got.epoch_stats.shape == (int(got.completion.max()) // 97 + 1, 4, K.N_STATS)
    totals = got.epoch_stats.sum(axis=(0, 1))
    assert {name: int(totals[i]) for i, name in enumerate(K.STAT_NAMES)} == \
        {name: plain.stats[name] for name in K.STAT_NAMES}
    assert [p.name for p in path.parent.iterdir()] == ["cmds.csv"]     # no temporary left


def test_an_interrupted_trace_leaves_no_file(tmp_path):
    path = tmp_path / "cmds.csv"
    with pytest.raises(KeyboardInterrupt):
        with CommandTraceWriter(path) as writer:
            writer(0, np.zeros((3, 7), np.int64))
            raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv, fragment", [
    (["--epoch", "0", "--out", "{tmp}/o"], "--epoch must be at least 1 cycle, got 0"),
    (["--epoch", "-5", "--out", "{tmp}/o"], "--epoch must be at least 1 cycle, got -5"),
    (["--epoch", "100"], "--epoch writes epochs.csv into the results folder: give --out"),
    (["--command-trace", "{tmp}/file/cmds.csv"], "--command-trace {tmp}/file/cmds.csv: "
                                                  "{tmp}/file is not a folder"),
    (["--command-trace", "{tmp}/file"], "--command-trace {tmp}/file: already exists; "
                                         "pass a new file name"),
    (["--command-trace", "{tmp}"], "--command-trace {tmp}: is a folder; expected a file name"),
])
def test_bad_options_are_one_line_errors(capsys, tmp_path, trace_file, argv, fragment):
    (tmp_path / "file").write_text("keep me\n")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    code, out, err = run(capsys, "dram", "replay", str(trace_file), "--no-progress", *argv)
    assert code == 2 and out == "", err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert fragment.replace("{tmp}", str(tmp_path)) in err, err
    assert (tmp_path / "file").read_text() == "keep me\n"
    assert not (tmp_path / "o").exists()


def test_an_empty_trace_gives_no_rows(tmp_path):
    """(The API takes an empty trace; the command line refuses one before replaying.)"""
    import threading

    from dram import replay

    empty = {"addr": np.zeros(0, np.uint64), "is_write": np.zeros(0, np.uint8),
             "arrival": np.zeros(0, np.int64)}
    got = {}

    def work():
        with CommandTraceWriter(tmp_path / "cmds.csv") as writer:
            got["result"] = replay(empty, DRAMConfig(), command_sink=writer, epoch_cycles=10)
            writer.finish()

    t = threading.Thread(target=work, daemon=True)
    t.start()
    t.join(120)
    assert not t.is_alive(), "replay of an empty trace does not end"
    assert got["result"].epoch_stats.shape[0] == 0
    assert (tmp_path / "cmds.csv").read_text() == ",".join(COMMAND_TRACE_COLUMNS) + "\n"
