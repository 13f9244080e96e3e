"""Trace files: readers, writers, errors, capacity (dram.traces)."""

from __future__ import annotations

import gzip
import hashlib
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dram.traces import MemTrace, check_capacity, detect_format, read_trace, write_trace

DATA = Path(__file__).parent / "data" / "dram"
# First 2,000 lines of the set A reference trace 4ch_random_rw_L0.50_s10 (regenerated with
# ../shared/reference/dram/make_traces.py); sha256 of the uncompressed text:
SAMPLE = DATA / "4ch_random_rw_L0.50_s10.head2000.trace.gz"
SAMPLE_SHA256 = "5366c2de0d3bddf60ac67716537f346f1bb3cc5d7b081da665950ce03fecd128"


def write(tmp_path: Path, name: str, text: str, *, gz: bool = False) -> Path:
    path = tmp_path / name
    data = text.encode()
    path.write_bytes(gzip.compress(data, mtime=0) if gz else data)
    return path


# ---------------------------------------------------------------------------------------------
# Reading each format
# ---------------------------------------------------------------------------------------------

DRAMSIM3 = "# a comment\n0x40 READ 0\n\n0x1000 WRITE 5   # trailing comment\n  0x2a80\tread\t5\n1f00 write 9\n"
RAMULATOR = "# LoadStoreTrace\nLD 0x40\nST 4096\n\nld 0X2A80\nST 7936\n"
DRAMSYS = "# DRAMSys stl\n0:\tread\t0x40\n5:\twrite\t0x1000\t0x0123456789abcdef\n5: read 0x2a80\n9:  write  0x1f00\n"
EXPECTED_ADDR = [0x40, 0x1000, 0x2A80, 0x1F00]
EXPECTED_WRITE = [0, 1, 0, 1]


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize(
    "fmt, text, lines, arrival",
    [
        ("dramsim3", DRAMSIM3, [2, 4, 5, 6], [0, 5, 5, 9]),
        ("ramulator", RAMULATOR, [2, 3, 5, 6], None),
        ("dramsys", DRAMSYS, [2, 3, 4, 5], [0, 5, 5, 9]),
    ],
)
def test_read_each_format(tmp_path, fmt, text, lines, arrival, gz):
    path = write(tmp_path, f"t.{fmt}", text, gz=gz)
    for given_format, block in (("auto", 1 << 20), (fmt, 1 << 20), ("auto", 7)):
        t = read_trace(path, given_format, block_bytes=block)  # 7: lines longer than a block
        assert t.format == fmt
        assert t.source == str(path)
        assert t.addr.dtype == np.uint64 and t.is_write.dtype == np.uint8
        assert t.addr.tolist() == EXPECTED_ADDR
        assert t.is_write.tolist() == EXPECTED_WRITE
        assert t.line.tolist() == lines
        if arrival is None:
            assert t.arrival is None and not t.timed
        else:
            assert t.arrival.dtype == np.int64 and t.arrival.tolist() == arrival
        assert (t.n_reads, t.n_writes) == (2, 2)


def test_gzip_detected_by_content_not_name(tmp_path):
    # a gzip file without .gz, and a plain file named .gz
    a = write(tmp_path, "plain_name.trace", DRAMSIM3, gz=True)
    b = write(tmp_path, "looks_compressed.trace.gz", DRAMSIM3)
    assert read_trace(a).addr.tolist() == EXPECTED_ADDR
    assert read_trace(b).addr.tolist() == EXPECTED_ADDR


def test_crlf_and_missing_final_newline(tmp_path):
    path = write(tmp_path, "crlf.trace", "0x40 READ 1\r\n0x80 WRITE 2")
    t = read_trace(path)
    assert t.addr.tolist() == [0x40, 0x80] and t.arrival.tolist() == [1, 2] and t.line.tolist() == [1, 2]


def test_detect_format(tmp_path):
    for fmt, text in (("dramsim3", DRAMSIM3), ("ramulator", RAMULATOR), ("dramsys", DRAMSYS)):
        assert detect_format(write(tmp_path, f"d.{fmt}", text)) == fmt
    with pytest.raises(ValueError, match=r"x\.txt, line 3: cannot tell the trace format from 'foo bar'"):
        detect_format(write(tmp_path, "x.txt", "# c\n\nfoo bar\n"))


def test_binary_junk_is_named_not_echoed(tmp_path):
    """A binary file's bytes are escaped and cut in the error, never sent to the terminal as
    they are (issue 55)."""
    junk = bytes(range(256)) * 4
    (tmp_path / "junk.trace").write_bytes(junk)
    with pytest.raises(ValueError) as err:
        detect_format(tmp_path / "junk.trace")
    msg = str(err.value)
    assert "line 1: cannot tell the trace format from binary data b'" in msg
    assert "(not a text trace)" in msg and msg.isprintable() and len(msg) < 800
    # a bad line of a trace whose format is known: the same rule
    (tmp_path / "mixed.trace").write_bytes(b"0x40 READ 1\n0x8\x00\xff READ 2\n")
    with pytest.raises(ValueError, match=r"line 2: .*binary data b'0x8\\x00\\xff READ 2'"):
        read_trace(tmp_path / "mixed.trace", "dramsim3")


def test_explicit_format_mismatch_names_the_line(tmp_path):
    path = write(tmp_path, "t.trace", DRAMSIM3)
    with pytest.raises(ValueError, match=r"t\.trace, line 2: .*expected ramulator lines"):
        read_trace(path, "ramulator")
    with pytest.raises(ValueError, match="unknown trace format 'csv'"):
        read_trace(path, "csv")


def test_reference_sample():
    text = gzip.decompress(SAMPLE.read_bytes())
    assert hashlib.sha256(text).hexdigest() == SAMPLE_SHA256
    t = read_trace(SAMPLE)
    assert t.format == "dramsim3" and len(t) == 2000 and t.n_writes == 601
    assert (int(t.addr[0]), int(t.arrival[0]), int(t.arrival[-1])) == (0xC6CB29980, 5, 7712)
    assert np.all(t.addr % 64 == 0) and t.line.tolist() == list(range(1, 2001))
    # the same values as a plain line-by-line parse
    rows = [line.split() for line in text.decode().splitlines()]
    assert t.addr.tolist() == [int(r[0], 16) for r in rows]
    assert t.is_write.tolist() == [int(r[1] == "WRITE") for r in rows]
    assert t.arrival.tolist() == [int(r[2]) for r in rows]


def test_block_size_does_not_change_the_result():
    whole = read_trace(SAMPLE)
    for block in (333, 4096):
        t = read_trace(SAMPLE, block_bytes=block)
        for name in ("addr", "is_write", "arrival", "line"):
            assert np.array_equal(getattr(t, name), getattr(whole, name)), (block, name)


# ---------------------------------------------------------------------------------------------
# Errors name the file and the line
# ---------------------------------------------------------------------------------------------

BAD = [
    # (format, text, bad line, what the message must say)
    ("dramsim3", "0x40 READ 0\n0x80 REED 4\n", 2, "bad request type 'REED'"),
    ("dramsim3", "0x40 READ 0\n0x8g READ 4\n", 2, "bad hex address '0x8g'"),
    ("dramsim3", "0x40 READ 0\n0x READ 4\n", 2, "empty hex address '0x'"),
    ("dramsim3", "0x40 READ 0\n0x80 READ\n", 2, "2 fields where 3 were expected"),
    ("dramsim3", "0x40 READ 0\n0x80 READ 4 9\n", 2, "4 fields where 3 were expected"),
    ("dramsim3", "0x40 READ 0\n0x80 READ -4\n", 2, "bad cycle (decimal integer >= 0) '-4'"),
    ("dramsim3", "0x40 READ 0\n0x80 READ 4.5\n", 2, "bad cycle (decimal integer >= 0) '4.5'"),
    ("dramsim3", "0x40 READ 0\n0x80 READ 99999999999999999999\n", 2, "has more than 19 digits"),
    ("dramsim3", "0x40 READ 0\n0x80 READ 9999999999999999999\n", 2, "is too large"),
    ("dramsim3", "0x11111111111111111 READ 0\n", 1, "hex address '0x11111111111111111' has more than 16"),
    ("dramsim3", "0x40 READ 7\n# c\n0x80 READ 5\n", 3, "arrival cycle 5 is before the previous request's 7"),
    ("dramsim3", "0x40 READ 0\n0x80 READ 1\n0x\u00e9 READ 2\n", 3, "bad hex address '0x\u00e9'"),
    ("ramulator", "LD 0x40\nLOAD 0x80\n", 2, "bad request type 'LOAD' (one of LD, ST)"),
    ("ramulator", "LD 0x40\nST 12a\n", 2, "bad address (0x-prefixed hex or decimal) '12a'"),
    ("ramulator", "LD 0x40\nST\n", 2, "1 fields where 2 were expected"),
    ("ramulator", "LD 0x40\nST 0x80 3\n", 2, "3 fields where 2 were expected"),
    ("dramsys", "1: read 0x40\n2 read 0x80\n", 2, "time stamp '2' does not end with ':'"),
    ("dramsys", "1: read 0x40\n2: load 0x80\n", 2, "bad command 'load'"),
    ("dramsys", "1: read 0x40\nx: read 0x80\n", 2, "bad cycle (decimal integer >= 0) 'x:'"),
    ("dramsys", "5: read 0x40\n2: read 0x80\n", 2, "arrival cycle 2 is before the previous request's 5"),
    ("dramsys", "1: read 0x40\n2: read\n", 2, "2 fields where 3 or 4 were expected"),
]


@pytest.mark.parametrize("fmt, text, line, fragment", BAD)
@pytest.mark.parametrize("gz", [False, True])
def test_malformed_line_names_file_line_text_and_expected(tmp_path, fmt, text, line, fragment, gz):
    path = write(tmp_path, "bad.trace", text, gz=gz)
    bad_text = text.splitlines()[line - 1]
    for given_format in (fmt, "auto"):
        with pytest.raises(ValueError) as err:
            read_trace(path, given_format)
        msg = str(err.value)
        assert msg.startswith(f"{path}, line {line}: "), msg
        assert fragment in msg, msg
        assert repr(bad_text) in msg, msg
        assert f"expected {fmt} lines" in msg, msg


def test_earliest_error_wins(tmp_path):
    # line 2 has a bad cycle, line 3 a wrong field count: line 2 is reported
    path = write(tmp_path, "two.trace", "0x40 READ 0\n0x80 READ x\n0x80 READ\n")
    with pytest.raises(ValueError, match=r"two\.trace, line 2: bad cycle"):
        read_trace(path)


def test_decreasing_arrival_across_blocks(tmp_path):
    lines = [f"0x{64 * i:x} READ {i}" for i in range(500)]
    lines[321] = "0x40 READ 3"
    path = write(tmp_path, "dec.trace", "\n".join(lines) + "\n")
    for block in (64, 1 << 20):
        with pytest.raises(ValueError, match=r"dec\.trace, line 322: arrival cycle 3 is before the previous request's 320"):
            read_trace(path, block_bytes=block)


def test_missing_empty_and_comment_only_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.trace: no such trace file"):
        read_trace(tmp_path / "nope.trace")
    for text in ("", "# only\n\n   \n# comments\n"):
        path = write(tmp_path, "empty.trace", text)
        for fmt in ("auto", "dramsim3"):
            with pytest.raises(ValueError, match=r"empty\.trace: no request lines"):
                read_trace(path, fmt)
    with pytest.raises(ValueError, match="is a directory"):
        read_trace(tmp_path)


def test_corrupt_gzip(tmp_path):
    data = gzip.compress(DRAMSIM3.encode() * 50, mtime=0)
    path = tmp_path / "cut.trace.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="cut.trace.gz: cannot read the compressed file"):
        read_trace(path, "dramsim3")


# ---------------------------------------------------------------------------------------------
# Alignment and capacity
# ---------------------------------------------------------------------------------------------


def test_unaligned_addresses_are_aligned_down_or_rejected(tmp_path):
    path = write(tmp_path, "u.trace", "0x40 READ 0\n0x7f READ 1\n0x81 WRITE 2\n")
    assert read_trace(path).addr.tolist() == [0x40, 0x40, 0x80]
    with pytest.raises(ValueError, match=r"u\.trace, line 2: address 0x7f is not a multiple of 64"):
        read_trace(path, unaligned="error")


def test_capacity_error_names_the_line_and_wrap_takes_modulo(tmp_path):
    cap = 1 << 20
    path = write(tmp_path, "c.trace", f"0x40 READ 0\n# x\n0x{cap + 0x80:x} WRITE 1\n0x{3 * cap - 64:x} READ 2\n")
    with pytest.raises(ValueError) as err:
        read_trace(path, capacity_bytes=cap)
    msg = str(err.value)
    assert msg.startswith(f"{path}, line 3: address 0x{cap + 0x80:x} is beyond the memory's capacity of 1 MiB")
    assert "2 of 3 requests" in msg and "--wrap" in msg
    t = read_trace(path, capacity_bytes=cap, wrap=True)
    assert t.addr.tolist() == [0x40, 0x80, cap - 64]
    # exactly at the last line of capacity is fine, one line more is not
    ok = write(tmp_path, "edge.trace", f"0x{cap - 64:x} READ 0\n")
    assert read_trace(ok, capacity_bytes=cap).addr.tolist() == [cap - 64]
    with pytest.raises(ValueError, match="beyond the memory's capacity"):
        read_trace(write(tmp_path, "over.trace", f"0x{cap:x} READ 0\n"), capacity_bytes=cap)


def test_capacity_from_a_config_object(tmp_path):
    class Config:  # anything with capacity_bytes, as dram.DRAMConfig has
        capacity_bytes = 4096

    path = write(tmp_path, "c.trace", "0x40 READ 0\n0x1040 READ 1\n")
    with pytest.raises(ValueError, match=r"c\.trace, line 2: address 0x1040 is beyond .* 4 KiB"):
        read_trace(path, config=Config())
    assert read_trace(path, config=Config(), wrap=True).addr.tolist() == [0x40, 0x40]


def test_check_capacity_on_arrays():
    t = MemTrace(addr=np.array([0, 64, 8192], np.uint64), is_write=np.zeros(3, np.uint8))
    with pytest.raises(ValueError, match="trace, request 2: address 0x2000 is beyond"):
        check_capacity(t, 8192)
    assert check_capacity(t, 8192, wrap=True).addr.tolist() == [0, 64, 0]
    assert check_capacity(t, 1 << 30) is t
    with pytest.raises(ValueError, match="positive multiple of 64"):
        check_capacity(t, 100)


def test_memtrace_validates_its_arrays():
    with pytest.raises(ValueError, match="arrival has 1 entries, addr has 2"):
        MemTrace(addr=[0, 64], is_write=[0, 1], arrival=[3])
    with pytest.raises(ValueError, match="request 1: arrival cycle 2 is before the previous request's 3"):
        MemTrace(addr=[0, 64], is_write=[0, 1], arrival=[3, 2])
    with pytest.raises(ValueError, match="is_write must be 0 or 1"):
        MemTrace(addr=[0, 64], is_write=[0, 2])
    with pytest.raises(ValueError, match="addr must not be negative"):
        MemTrace(addr=[-64], is_write=[0])
    t = MemTrace(addr=[0, 64], is_write=[False, True], rank_local=[1, 0])
    assert t.is_write.dtype == np.uint8 and t.rank_local.dtype == np.uint8 and t.addr.dtype == np.uint64


# ---------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------


def test_dramsim3_writer_reproduces_the_reference_text(tmp_path):
    t = read_trace(SAMPLE)
    out = write_trace(t, tmp_path / "copy.trace")
    assert hashlib.sha256(out.read_bytes()).hexdigest() == SAMPLE_SHA256
    gz = write_trace(t, tmp_path / "copy.trace.gz")
    assert gz.read_bytes()[:2] == b"\x1f\x8b"
    assert hashlib.sha256(gzip.decompress(gz.read_bytes())).hexdigest() == SAMPLE_SHA256
    # deterministic bytes (no time stamp in the gzip header)
    gz2 = write_trace(t, tmp_path / "again.trace.gz")
    assert gz2.read_bytes() == gz.read_bytes()


@pytest.mark.parametrize("fmt", ["dramsim3", "ramulator", "dramsys"])
@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_round_trip(tmp_path, fmt, suffix):
    t = read_trace(SAMPLE)
    path = write_trace(t, tmp_path / f"rt.{fmt}{suffix}", fmt, drop_timing=True)
    back = read_trace(path)
    assert back.format == fmt
    assert np.array_equal(back.addr, t.addr) and np.array_equal(back.is_write, t.is_write)
    if fmt == "ramulator":
        assert back.arrival is None
    else:
        assert np.array_equal(back.arrival, t.arrival)


def test_writer_refuses_to_overwrite_and_leaves_no_temporary_files(tmp_path):
    t = MemTrace(addr=[0, 64], is_write=[0, 1], arrival=[0, 1])
    path = tmp_path / "w.trace"
    path.write_text("precious\n")
    with pytest.raises(FileExistsError, match="w.trace exists; refusing to overwrite it"):
        write_trace(t, path)
    assert path.read_text() == "precious\n"
    write_trace(t, path, overwrite=True)
    assert path.read_text() == "0x0 READ 0\n0x40 WRITE 1\n"
    assert sorted(os.listdir(tmp_path)) == ["w.trace"]
    with pytest.raises(FileNotFoundError, match="no such folder"):
        write_trace(t, tmp_path / "missing" / "w.trace")


def test_writer_timing_rules(tmp_path):
    timed = MemTrace(addr=[0, 64], is_write=[0, 1], arrival=[3, 4])
    with pytest.raises(ValueError, match="drop its arrival cycles"):
        write_trace(timed, tmp_path / "a.trace", "ramulator")
    assert not (tmp_path / "a.trace").exists()
    write_trace(timed, tmp_path / "a.trace", "ramulator", drop_timing=True)
    assert (tmp_path / "a.trace").read_text() == "LD 0x0\nST 0x40\n"
    untimed = MemTrace(addr=[0, 64], is_write=[0, 1])
    write_trace(untimed, tmp_path / "b.stl", "dramsys")
    assert (tmp_path / "b.stl").read_text() == "0:\tread\t0x0\n0:\twrite\t0x40\n"
    with pytest.raises(ValueError, match="cannot mark rank-local requests"):
        write_trace(MemTrace(addr=[0], is_write=[0], rank_local=[1]), tmp_path / "c.trace")
    with pytest.raises(ValueError, match="unknown trace format"):
        write_trace(timed, tmp_path / "d.trace", "auto")


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 2**58 - 1), st.booleans(), st.integers(0, 1000)),
        min_size=1,
        max_size=60,
    ),
    st.sampled_from(["dramsim3", "ramulator", "dramsys"]),
)
def test_round_trip_property(tmp_path_factory, rows, fmt):
    addr = np.array([r[0] * 64 for r in rows], np.uint64)
    is_write = np.array([r[1] for r in rows], np.uint8)
    arrival = np.cumsum([r[2] for r in rows]).astype(np.int64)
    t = MemTrace(addr=addr, is_write=is_write, arrival=arrival)
    folder = tmp_path_factory.mktemp("prop")
    back = read_trace(write_trace(t, folder / "p.trace", fmt, drop_timing=True), block_bytes=256)
    assert np.array_equal(back.addr, addr) and np.array_equal(back.is_write, is_write)
    assert back.arrival is None if fmt == "ramulator" else np.array_equal(back.arrival, arrival)


def test_capacity_of_a_real_dram_config():
    from dram.config import DRAMConfig

    # the sample's addresses span 64 GiB: within 4 ch x 2 ranks x 16Gb_x4 (128 GiB), not 1 ch (32 GiB)
    assert DRAMConfig().capacity_bytes == 128 << 30
    assert len(read_trace(SAMPLE, config=DRAMConfig())) == 2000
    one = DRAMConfig(channels=1)
    with pytest.raises(ValueError, match=r"head2000\.trace\.gz, line \d+: address 0x[0-9a-f]+ is beyond the memory's capacity of 32 GiB"):
        read_trace(SAMPLE, config=one)
    wrapped = read_trace(SAMPLE, config=one, wrap=True)
    # wrap = modulo the capacity = dropping address bit 35, what Ramulator's RoBaRaCoCh does on 1 ch
    assert np.array_equal(wrapped.addr, read_trace(SAMPLE).addr & np.uint64((1 << 35) - 1))


def test_not_a_text_trace(tmp_path):
    bom = tmp_path / "bom.trace"
    bom.write_bytes(b"\xef\xbb\xbf0x40 READ 0\n0x80 READ 1\n")
    for block in (1, 1 << 20):
        assert read_trace(bom, block_bytes=block).addr.tolist() == [0x40, 0x80]
    npy = tmp_path / "addr.npy"
    np.save(npy, np.arange(4))
    with pytest.raises(ValueError, match=r"addr\.npy: is a numpy \.npy file; expected a text trace"):
        read_trace(npy)
    blob = tmp_path / "blob.bin"
    blob.write_bytes(b"\x01" * ((1 << 20) + 10))
    with pytest.raises(ValueError, match=r"blob\.bin, line 1: longer than 1048576 bytes"):
        read_trace(blob, "dramsim3", block_bytes=1 << 16)
    long_line = tmp_path / "long.trace"
    long_line.write_bytes(b"0x40 READ 0\n" + b"x" * 5000 + b"\n")
    with pytest.raises(ValueError, match=r"long\.trace, line 2: .*xxx\.\.\.'; expected") as err:
        read_trace(long_line)
    assert len(str(err.value)) < 600  # the offending text is shortened
