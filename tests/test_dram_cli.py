"""``cosmos dram`` (dram.cli) and the results folder (dram.output)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cosmos.cli import main
from dram.output import REQUEST_COLUMNS, new_run_dir, read_requests
from dram.standards import list_presets

DATA = Path(__file__).parent / "data" / "dram"
SAMPLE = DATA / "4ch_random_rw_L0.50_s10.head2000.trace.gz"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# ---------------------------------------------------------------------------------------------
# Results folder rule
# ---------------------------------------------------------------------------------------------


def test_new_run_dir_never_reuses_a_folder_with_content(tmp_path):
    from cosmos_common import UserError

    fresh = tmp_path / "a" / "b"
    assert new_run_dir(fresh) == fresh and fresh.is_dir()  # created with parents
    assert new_run_dir(fresh) == fresh  # still empty: used as is
    (fresh / "requests.csv").write_text("x\n")
    with pytest.raises(UserError, match="folder is not empty .*pass a new folder"):
        new_run_dir(fresh)
    assert (fresh / "requests.csv").read_text() == "x\n"
    (tmp_path / "file").write_text("")
    with pytest.raises(UserError, match="is not a folder"):
        new_run_dir(tmp_path / "file")


# ---------------------------------------------------------------------------------------------
# presets
# ---------------------------------------------------------------------------------------------


def test_presets_lists_the_registry(capsys):
    code, out, err = run(capsys, "dram", "presets")
    assert code == 0 and err == ""
    reg = list_presets()
    for key in ("standards", "orgs", "mappings", "schedulers", "row_policies"):
        for name in reg[key]:
            assert name in out, (key, name)
    for fmt in ("dramsim3", "ramulator", "dramsys"):
        assert fmt in out
    code, out, _ = run(capsys, "dram", "presets", "--json")
    data = json.loads(out)
    assert data["standards"] == reg["standards"] and data["orgs"] == reg["orgs"]
    assert set(data["trace_formats"]) == {"dramsim3", "ramulator", "dramsys"}


# ---------------------------------------------------------------------------------------------
# errors: one line on stderr, exit code 2, no traceback
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--standard", "DDR5_9999"], "DRAMConfig.standard='DDR5_9999' is unknown; valid: DDR5_3200AN"),
        (["--org", "16Gb_x5"], "DRAMConfig.org='16Gb_x5' is unknown"),
        (["--mapping", "RoRoRaCoCh"], "DRAMConfig.mapping='RoRoRaCoCh'"),
        (["--scheduler", "LIFO"], "DRAMConfig.scheduler='LIFO' is unknown"),
        (["--channels", "0"], "DRAMConfig.channels=0: expected a positive integer"),
        (["--timing", "nXY=3"], "unknown timing parameter 'nXY'"),
        (["--timing", "nCL"], "--timing 'nCL': expected NAME=CYCLES"),
        (["--config", "missing.json"], "missing.json: no such config file"),
    ],
)
def test_bad_options_are_one_line_errors(capsys, argv, fragment):
    code, out, err = run(capsys, "dram", "replay", str(SAMPLE), *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("cosmos dram: error: "), err
    assert fragment in err, err
    assert "Traceback" not in err


def test_bad_trace_files_are_one_line_errors(capsys, tmp_path):
    bad = tmp_path / "bad.trace"
    bad.write_text("0x40 READ 0\n0x80 READ oops\n")
    code, _, err = run(capsys, "dram", "replay", str(bad))
    assert code == 2 and err.count("\n") == 1
    assert f"{bad}, line 2: bad cycle (decimal integer >= 0) 'oops'" in err
    code, _, err = run(capsys, "dram", "replay", str(tmp_path / "none.trace"))
    assert code == 2 and "none.trace: no such trace file" in err
    big = tmp_path / "big.trace"
    big.write_text(f"0x40 READ 0\n0x{64 << 30:x} READ 1\n")  # 64 GiB > 1 ch x 2 ranks = 32 GiB
    code, _, err = run(capsys, "dram", "replay", str(big), "--channels", "1")
    assert code == 2 and f"{big}, line 2: address 0x1000000000 is beyond the memory's capacity of 32 GiB" in err
    bad_cfg = tmp_path / "config.json"
    bad_cfg.write_text(json.dumps({"dram_config": {"standard": "DDR5_4800AN", "colour": 3}}))
    code, _, err = run(capsys, "dram", "replay", str(SAMPLE), "--config", str(bad_cfg))
    assert code == 2 and "unknown DRAMConfig field(s) colour" in err


# ---------------------------------------------------------------------------------------------
# replay end to end
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    """One replay of the 2,000-line reference sample, with --out (shared by several tests)."""
    out = tmp_path_factory.mktemp("runs") / "results"
    import contextlib
    import io

    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(["dram", "replay", str(SAMPLE), "--out", str(out)])
    return code, stdout.getvalue(), stderr.getvalue(), out


def test_replay_prints_the_summary_and_writes_the_results(first_run):
    code, out, err, folder = first_run
    assert code == 0, err
    assert f"results written to {folder}" in err
    assert sorted(p.name for p in folder.iterdir()) == [
        "config.json", "requests.npz", "stats.csv", "stats.json", "summary.txt"]
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]  # no temporary files left

    req = pd.DataFrame(read_requests(folder / "requests.npz"))
    assert tuple(req.columns) == REQUEST_COLUMNS
    text = gzip.decompress(SAMPLE.read_bytes()).decode().split()
    assert req["id"].tolist() == list(range(2000))
    assert req["addr"].tolist() == [int(a, 16) for a in text[0::3]]
    assert req["is_write"].tolist() == [int(k == "WRITE") for k in text[1::3]]
    assert req["arrival_cycle"].tolist() == [int(c) for c in text[2::3]]
    assert (req["latency_cycles"] == req["completion_cycle"] - req["arrival_cycle"]).all()
    assert (req["accept_cycle"] >= req["arrival_cycle"]).all()
    assert (req["completion_cycle"] > req["accept_cycle"]).all()
    # the unloaded minimum: a read needs at least RD issue + nCL + nBL = 43 cycles (row hit)
    assert req.loc[req["is_write"] == 0, "latency_cycles"].min() >= 43

    stats = json.loads((folder / "stats.json").read_text())
    reads = req.loc[req["is_write"] == 0, "latency_cycles"].to_numpy()
    writes = req.loc[req["is_write"] == 1, "latency_cycles"].to_numpy()
    assert (stats["n_requests"], stats["n_reads"], stats["n_writes"]) == (2000, 1399, 601)
    assert stats["mean_read_latency_cycles"] == pytest.approx(reads.mean(), rel=1e-12)
    for q in (50, 95, 99):
        assert stats[f"p{q}_read_latency_cycles"] == pytest.approx(np.percentile(reads, q), rel=1e-12)
    assert stats["max_read_latency_cycles"] == reads.max()
    assert stats["mean_write_latency_cycles"] == pytest.approx(writes.mean(), rel=1e-12)
    assert stats["mean_read_latency_ns"] == pytest.approx(reads.mean() * 0.416, rel=1e-12)
    span_s = (req["completion_cycle"].max() - req["arrival_cycle"].min()) * 416e-12
    assert stats["achieved_bw_GBps"] == pytest.approx(2000 * 64 / span_s / 1e9, rel=1e-12)
    assert stats["row_hits"] + stats["row_misses"] + stats["row_conflicts"] == 2000
    assert len(stats["channel_busy_fraction"]) == 4 and len(stats["rank_busy_fraction"]) == 4
    assert stats["sim_requests_per_s"] > 0

    row = pd.read_csv(folder / "stats.csv")
    assert len(row) == 1
    for col in ("mean_read_latency_cycles", "p99_read_latency_ns", "mean_write_latency_cycles",
                "achieved_bw_GBps", "row_conflicts", "refresh_cmds", "total_cycles",
                "sim_requests_per_s", "first_arrival_cycle", "mean_accept_delay_cycles"):
        assert row[col].iloc[0] == pytest.approx(stats[col]), col
    assert "mean_read_lat" not in row.columns  # every latency carries its unit

    # the printed table shows these figures
    assert out.startswith(f"trace   {SAMPLE} (dramsim3, timed)\n")
    assert "DDR5_4800AN 16Gb_x4, 4 ch x 2 ranks (128 GiB), RoBaRaCoCh" in out
    for key in ("mean_read_latency", "p50_read_latency", "p95_read_latency", "p99_read_latency",
                "max_read_latency", "mean_write_latency"):
        assert f"{stats[key + '_cycles']:,.1f}" in out and f"{stats[key + '_ns']:,.1f}" in out, key
    assert f"{stats['achieved_bw_GBps']:.2f} GB/s" in out
    assert f"{stats['row_hits']:,} / {stats['row_misses']:,} / {stats['row_conflicts']:,}" in out
    assert "requests/s" in out
    assert (folder / "summary.txt").read_text() == out

    cfg = json.loads((folder / "config.json").read_text())
    assert cfg["dram_config"]["standard"] == "DDR5_4800AN" and cfg["dram_config"]["channels"] == 4
    assert cfg["trace"]["format"] == "dramsim3" and cfg["trace"]["n_requests"] == 2000
    assert cfg["rerun"].startswith("cosmos dram replay ")


def test_second_run_does_not_overwrite_the_first_and_config_repeats_it(first_run, capsys):
    _, _, _, folder = first_run
    before = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    assert "INCOMPLETE" not in before
    # the same --out again: refused in one line, before any work, the first run untouched
    code, _, err = run(capsys, "dram", "replay", str(SAMPLE), "--out", str(folder),
                       "--config", str(folder / "config.json"), "--no-progress")
    assert code == 2 and f"--out {folder}: folder is not empty" in err, err
    assert "pass a new folder" in err and "Traceback" not in err
    second = folder.parent / (folder.name + "-again")
    code, _, err = run(capsys, "dram", "replay", str(SAMPLE), "--out", str(second),
                       "--config", str(folder / "config.json"), "--no-progress")
    assert code == 0, err
    assert f"results written to {second}" in err
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()} == before
    # same config -> same per-request results, bit for bit
    assert (second / "requests.npz").read_bytes() == before["requests.npz"]
    s1 = json.loads(before["stats.json"])
    s2 = json.loads((second / "stats.json").read_text())
    timing = ("trace_read_s", "replay_wall_s", "sim_wall_s", "sim_requests_per_s", "compile_s",
              "requests_write_s")
    assert {k: v for k, v in s1.items() if k not in timing} == {k: v for k, v in s2.items() if k not in timing}


def test_options_reach_the_model_wrap_and_untimed_traces(capsys, tmp_path):
    from dram.traces import read_trace, write_trace

    # 1 channel (32 GiB): the 64-GiB sample addresses need --wrap
    code, _, err = run(capsys, "dram", "replay", str(SAMPLE), "--channels", "1")
    assert code == 2 and "beyond the memory's capacity of 32 GiB" in err
    untimed = write_trace(read_trace(SAMPLE), tmp_path / "ldst.trace", "ramulator", drop_timing=True)
    code, out, err = run(capsys, "dram", "replay", str(untimed), "--channels", "1", "--ranks", "1",
                         "--refresh", "off", "--queue-depth", "8", "--wrap", "--json",
                         "--out", str(tmp_path / "o"))
    assert code == 0, err
    stats = json.loads(out)
    assert stats["refresh_cmds"] == 0 and stats["timed"] is False
    assert len(stats["channel_busy_fraction"]) == 1 and len(stats["rank_busy_fraction"][0]) == 1
    req = read_requests(tmp_path / "o" / "requests.npz")
    assert (req["arrival_cycle"] == 0).all()  # untimed: every request available at cycle 0
    assert req["addr"].max() < 32 << 30  # wrapped modulo the capacity
    cfg = json.loads((tmp_path / "o" / "config.json").read_text())["dram_config"]
    assert (cfg["channels"], cfg["ranks"], cfg["refresh"]) == (1, 1, False)
    assert (cfg["read_queue_depth"], cfg["write_queue_depth"]) == (8, 8)
    # one channel cannot beat its data-bus limit: 64 B per nBL = 8 cycles of 416 ps = 19.23 GB/s
    assert 0 < stats["achieved_bw_GBps"] <= 64 / (8 * 416e-12) / 1e9


def test_config_repeats_the_trace_options_too(capsys, tmp_path):
    # a run that needed --wrap is repeated by --config alone; the command line still wins
    code, _, err = run(capsys, "dram", "replay", str(SAMPLE), "--channels", "1", "--wrap",
                       "--no-progress", "--out", str(tmp_path / "a"))
    assert code == 0, err
    cfg = json.loads((tmp_path / "a" / "config.json").read_text())
    assert cfg["replay"] == {"format": "auto", "wrap": True, "unaligned": "align"}
    import os
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "a" / "requests.npz").stat().st_mode & 0o777 == 0o666 & ~umask
    assert "--wrap" in cfg["rerun"] and "--config" in cfg["rerun"] and cfg["command"]
    code, _, err = run(capsys, "dram", "replay", str(SAMPLE), "--config",
                       str(tmp_path / "a" / "config.json"), "--no-progress",
                       "--out", str(tmp_path / "b"))
    assert code == 0, err
    assert ((tmp_path / "b" / "requests.npz").read_bytes()
            == (tmp_path / "a" / "requests.npz").read_bytes())
    code, _, err = run(capsys, "dram", "replay", str(SAMPLE), "--config",
                       str(tmp_path / "a" / "config.json"), "--no-wrap")
    assert code == 2 and "beyond the memory's capacity of 32 GiB" in err
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"dram_config": cfg["dram_config"], "replay": {"wrap": "yes"}}))
    code, _, err = run(capsys, "dram", "replay", str(SAMPLE), "--config", str(bad))
    assert code == 2 and f"{bad}: field 'replay.wrap' is 'yes'; expected one of True, False" in err


def test_system_errors_and_absurd_values_are_one_line(capsys, tmp_path):
    code, _, err = run(capsys, "dram", "replay", str(SAMPLE), "--config", str(tmp_path))
    assert code == 2 and f"{tmp_path}: Is a directory" in err and "Traceback" not in err
    (tmp_path / "f").write_text("")
    code, _, err = run(capsys, "dram", "replay", str(SAMPLE), "--out", str(tmp_path / "f"))
    assert code == 2 and "f: exists and is not a folder; pass a new folder" in err
    code, _, err = run(capsys, "dram", "replay", str(SAMPLE), "--queue-depth", "100000000")
    assert code == 2 and "read_queue_depth=100000000: at most 65536" in err
    code, _, err = run(capsys, "dram", "replay", str(SAMPLE), "--workers", "0")
    assert code == 2 and "--workers must be at least 1, got 0" in err
    huge = tmp_path / "huge.trace"
    huge.write_text("0x40 READ 0\n0x80 READ 9223372036854775807\n")
    code, _, err = run(capsys, "dram", "replay", str(huge))
    assert code == 2 and f"{huge}, line 2: arrival cycle 9223372036854775807 is beyond" in err
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"dram_config": {"timing_overrides": 5}}))
    code, _, err = run(capsys, "dram", "replay", str(SAMPLE), "--config", str(cfg))
    assert code == 2 and "field 'timing_overrides' is 5; expected a list of [name, cycles]" in err
    cfg.write_bytes(b"\xff\xfe{")
    code, _, err = run(capsys, "dram", "replay", str(SAMPLE), "--config", str(cfg))
    assert code == 2 and f"{cfg}: not valid JSON" in err


def test_read_only_trace_has_no_write_latency(capsys, tmp_path):
    trace = tmp_path / "reads.stl"
    trace.write_text("".join(f"{10 * i}: read 0x{(i * 4096 + 64 * (i % 3)):x}\n" for i in range(50)))
    code, out, err = run(capsys, "dram", "replay", str(trace), "--json", "--format", "dramsys")
    assert code == 0, err
    stats = json.loads(out)  # strict JSON: no NaN
    assert stats["n_writes"] == 0 and stats["mean_write_latency_cycles"] is None
    code, out, err = run(capsys, "dram", "replay", str(trace))
    line = next(s for s in out.splitlines() if s.startswith("write latency"))
    assert line.split()[-2:] == ["-", "-"]


def test_dram_without_subcommand_prints_help(capsys):
    code, out, err = run(capsys, "dram")
    assert code == 2 and "replay" in err and "presets" in err


def test_replay_matches_ramulator_request_by_request(capsys, tmp_path):
    """End to end against the reference: file -> cosmos dram replay -> requests.csv.

    Reference: Ramulator 2.1, set A run 1ch / unloaded_conflict / seed 62 / refresh on
    (results_setA.csv row and per-request records, tests/data/dram/cli/README.md).
    """
    import hashlib

    trace = DATA / "cli" / "1ch_unloaded_conflict_s62.trace.gz"
    assert hashlib.sha256(gzip.decompress(trace.read_bytes())).hexdigest() == (
        "c31d1f2204639afba395c3e8665e5e4b4c1d34279c7271e8811fea1e9d39c547")
    code, out, err = run(capsys, "dram", "replay", str(trace), "--channels", "1", "--refresh", "on",
                         "--requests-format", "csv", "--out", str(tmp_path / "r"))
    assert code == 0, err
    ours = pd.read_csv(tmp_path / "r" / "requests.csv")
    ref = pd.read_csv(DATA / "cli" / "1ch_unloaded_conflict_s62.refON.requests.csv.gz")
    assert len(ours) == len(ref) == 2001
    for mine, theirs in (("arrival_cycle", "arrival"), ("accept_cycle", "accept"),
                         ("completion_cycle", "completion"), ("is_write", "is_write")):
        assert np.array_equal(ours[mine].to_numpy(), ref[theirs].to_numpy()), mine
    stats = json.loads((tmp_path / "r" / "stats.json").read_text())
    # the reference row: 0 / 214 / 1787 hits/misses/conflicts, 426 REFab, last completion 2,000,110,
    # achieved 0.153915 GB/s over all 2,001 lines; mean read latency 140.80 over the 2,000 probes
    assert (stats["row_hits"], stats["row_misses"], stats["row_conflicts"]) == (0, 214, 1787)
    assert stats["refresh_cmds"] == 426 and stats["total_cycles"] == 2_000_110
    assert stats["achieved_bw_GBps"] == pytest.approx(0.153915, rel=1e-5)
    assert ours["latency_cycles"].iloc[1:].mean() == pytest.approx(140.8, abs=0.005)
    assert "0 / 214 / 1,787" in out and "refresh commands          426" in out


def test_format_choices_are_the_readers_formats():
    from dram.cli import FORMAT_CHOICES
    from dram.traces import FORMATS

    assert FORMAT_CHOICES == ("auto", *FORMATS)


@pytest.mark.parametrize("field, value, expected", [
    ("channels", "x", "DRAMConfig.channels='x': expected a positive integer"),
    ("refresh", 3, "refresh"),
])
def test_a_wrong_typed_field_of_config_names_the_file(capsys, tmp_path, field, value, expected):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"dram_config": {field: value}}))
    trace = tmp_path / "t.trace"
    trace.write_text("0x0 READ 0\n")
    rc, out, err = run(capsys, "dram", "replay", str(trace), "--config", str(cfg))
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert f"{cfg}: " in err and expected in err


@pytest.mark.parametrize("content", [{}, {"dram_config": {}}])
def test_an_empty_config_is_refused(capsys, tmp_path, content):
    """``--config`` holding ``{}`` once ran the defaults silently (issue 55)."""
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(content))
    trace = tmp_path / "t.trace"
    trace.write_text("0x0 READ 0\n")
    rc, out, err = run(capsys, "dram", "replay", str(trace), "--config", str(cfg),
                       "--out", str(tmp_path / "r"))
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert f"{cfg}: holds no DRAM configuration field" in err
    assert not (tmp_path / "r").exists()


def test_a_partial_config_names_the_defaulted_fields(capsys, tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"dram_config": {"channels": 2}}))
    trace = tmp_path / "t.trace"
    trace.write_text("0x0 READ 0\n")
    rc, out, err = run(capsys, "dram", "replay", str(trace), "--config", str(cfg),
                       "--out", str(tmp_path / "r"))
    assert rc == 0
    assert f"{cfg}: fields not given, defaults used: " in err and "ranks" in err
    assert "channels," not in err.split("defaults used: ")[1]


# ---------------------------------------------------------------------------------------------
# Per-request records: npz (default), csv, none; read back equal to the in-memory result
# ---------------------------------------------------------------------------------------------


def test_per_request_records_round_trip_in_every_format(tmp_path):
    from dram import DRAMConfig, replay
    from dram.output import REQUEST_DTYPES, request_columns, write_requests
    from dram.traces import read_trace

    trace = read_trace(SAMPLE)
    result = replay(trace, DRAMConfig())
    mem = request_columns(trace, result)
    assert list(mem) == list(REQUEST_COLUMNS)
    assert np.array_equal(mem["completion_cycle"], result.completion)
    assert np.array_equal(mem["latency_cycles"], result.completion - result.arrival)
    for fmt in ("npz", "csv"):
        path = write_requests(tmp_path / f"requests.{fmt}", trace, result, fmt)
        back = read_requests(path)
        assert list(back) == list(REQUEST_COLUMNS)
        for name in REQUEST_COLUMNS:
            assert back[name].dtype == REQUEST_DTYPES[name], (fmt, name)
            assert np.array_equal(back[name], mem[name]), (fmt, name)
    # the compiled CSV writer writes what pandas writes for the same table
    from dram.output import request_table

    assert (tmp_path / "requests.csv").read_text() == request_table(trace, result).to_csv(index=False)
    # the npz is plain numpy: np.load reads it, and equal records give equal bytes
    with np.load(tmp_path / "requests.npz") as z:
        assert z.files == list(REQUEST_COLUMNS)
        assert np.array_equal(z["addr"], trace.addr)
    again = write_requests(tmp_path / "again.npz", trace, result, "npz")
    assert again.read_bytes() == (tmp_path / "requests.npz").read_bytes()
    with pytest.raises(FileExistsError):  # never written over
        write_requests(tmp_path / "requests.npz", trace, result, "npz")


def test_reading_a_bad_per_request_file_names_it(tmp_path):
    from cosmos_common import UserError

    junk = tmp_path / "requests.npz"
    junk.write_bytes(b"not a zip")
    with pytest.raises(UserError, match=r"requests\.npz: not a per-request \.npz file"):
        read_requests(junk)
    part = tmp_path / "part.npz"
    np.savez(part, id=np.arange(3))
    with pytest.raises(UserError, match=r"part\.npz: column\(s\) addr, is_write.* missing"):
        read_requests(part)
    with pytest.raises(UserError, match=r"x\.parquet: expected a per-request file ending in"):
        read_requests(tmp_path / "x.parquet")


def test_requests_format_csv_and_no_requests(capsys, tmp_path):
    code, _, err = run(capsys, "dram", "replay", str(SAMPLE), "--requests-format", "csv",
                       "--no-progress", "--out", str(tmp_path / "c"))
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == [
        "config.json", "requests.csv", "stats.csv", "stats.json", "summary.txt"]
    csv = read_requests(tmp_path / "c" / "requests.csv")
    code, _, err = run(capsys, "dram", "replay", str(SAMPLE), "--no-progress",
                       "--out", str(tmp_path / "n"))
    assert code == 0, err
    npz = read_requests(tmp_path / "n" / "requests.npz")
    assert all(np.array_equal(csv[k], npz[k]) for k in REQUEST_COLUMNS)
    code, out, err = run(capsys, "dram", "replay", str(SAMPLE), "--no-requests", "--verbose",
                         "--no-progress", "--out", str(tmp_path / "s"))
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == [
        "config.json", "stats.csv", "stats.json", "summary.txt"]
    # --verbose: the time split on stderr, the table on stdout as without it
    for step in ("read and parse trace", "simulate", "write results", "since the CLI started"):
        assert step in err, err
    assert "statistics only" in err and "read and parse" not in out
    assert json.loads((tmp_path / "s" / "config.json").read_text())["requests_format"] is None
    code, _, err = run(capsys, "dram", "replay", str(SAMPLE), "--no-requests",
                       "--requests-format", "npz", "--out", str(tmp_path / "x"))
    assert code == 2 and "--no-requests and --requests-format contradict" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "x").exists()


def test_stats_csv_is_what_pandas_writes(first_run):
    """stats.csv is written without pandas (not imported by a replay); same bytes as its to_csv."""
    from dram.output import _finite, scalar_stats, stats_csv_text

    _, _, _, folder = first_run
    stats = json.loads((folder / "stats.json").read_text())
    stats.update(nan=float("nan"), text='a,b "c"', flag=True, tiny=1e-7, huge=1e16, sum=0.1 + 0.2)
    assert stats_csv_text(stats) == pd.DataFrame([_finite(scalar_stats(stats))]).to_csv(index=False)
    assert (folder / "stats.csv").read_text() == stats_csv_text(json.loads(
        (folder / "stats.json").read_text()))


def test_same_bank_refresh_and_power_state_options(capsys, tmp_path):
    """--same-bank-refresh, --powerdown-idle-ns and --selfrefresh-idle-ns reach the model, are
    recorded in config.json and repeated by --config; a bad value is one line. (Two runs, not
    one with all three: each feature set is a compilation of its own.)"""
    code, out, err = run(capsys, "dram", "replay", str(SAMPLE), "--same-bank-refresh",
                         "--json", "--no-requests", "--out", str(tmp_path / "s"))
    assert code == 0, err
    stats = json.loads(out)
    assert stats["n_REFsb"] > 0 and stats["n_REFab"] == 0
    cfg = json.loads((tmp_path / "s" / "config.json").read_text())["dram_config"]
    assert cfg["same_bank_refresh"] is True
    code, out, err = run(capsys, "dram", "replay", str(SAMPLE), "--powerdown-idle-ns", "50",
                         "--selfrefresh-idle-ns", "2000", "--json", "--no-requests",
                         "--out", str(tmp_path / "o"))
    assert code == 0, err
    stats = json.loads(out)
    assert stats["n_PDE"] > 0 and stats["n_PDX"] > 0
    assert stats["energy_powerdown_nJ"] > 0
    cfg = json.loads((tmp_path / "o" / "config.json").read_text())["dram_config"]
    assert (cfg["powerdown_idle_ns"], cfg["selfrefresh_idle_ns"]) == (50, 2000)
    code, out2, err = run(capsys, "dram", "replay", str(SAMPLE), "--config",
                          str(tmp_path / "o" / "config.json"), "--json", "--no-requests")
    assert code == 0, err
    again = json.loads(out2)
    for k in ("n_PDE", "n_SRE", "total_cycles", "energy_total_nJ"):
        assert again[k] == stats[k], k
    code, _, err = run(capsys, "dram", "replay", str(SAMPLE), "--powerdown-idle-ns", "-5")
    assert code == 2 and "powerdown_idle_ns" in err and err.count("\n") == 1
