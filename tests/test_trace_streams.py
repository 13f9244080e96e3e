"""Trace input read once: pipes, standard input, gzip through a pipe; the first bad line is the
one reported, whatever the block size; fuzzed input fails only with the project's error type."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from cosmos_common import UserError
from dram.traces import _BLOCK_BYTES, MAX_LINE_BYTES, TraceError, detect_format, read_trace

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "tests" / "data" / "dram" / "4ch_random_rw_L0.50_s10.head2000.trace.gz"
TEXT = gzip.decompress(SAMPLE.read_bytes())


class Trickle(io.RawIOBase):
    """A non-seekable binary stream that hands out at most ``step`` bytes per read, as a pipe
    may: the reader must neither seek nor rely on full reads."""

    def __init__(self, data: bytes, step: int):
        self._data, self._pos, self._step = data, 0, step

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        n = min(len(b), self._step, len(self._data) - self._pos)
        b[:n] = self._data[self._pos: self._pos + n]
        self._pos += n
        return n

    def seekable(self) -> bool:
        return False


def same_trace(a, b) -> None:
    for name in ("addr", "is_write", "arrival", "line"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            assert np.array_equal(x, y), name
    assert a.format == b.format


def outcome(source, **kw):
    """What read_trace gives: ('ok', trace) or ('error', message) for the project's errors."""
    try:
        return "ok", read_trace(source, **kw)
    except UserError as exc:
        return "error", str(exc)


# ---------------------------------------------------------------------------------------------
# One pass: the source is read exactly once
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("step", [1, 3, 4096])
@pytest.mark.parametrize("fmt", ["auto", "dramsim3"])
def test_a_stream_gives_the_same_trace_as_the_file(gz, step, fmt):
    data = gzip.compress(TEXT, mtime=0) if gz else TEXT
    whole = read_trace(SAMPLE, fmt)
    t = read_trace(Trickle(data, step), fmt)
    same_trace(t, whole)
    assert len(t) == 2000 and t.line.tolist() == list(range(1, 2001))
    assert t.source == "<stream>"
    assert t.source_bytes == len(data) and t.source_sha256 == hashlib.sha256(data).hexdigest()


def test_a_file_is_opened_once(tmp_path, monkeypatch):
    import builtins

    path = tmp_path / "t.trace.gz"
    path.write_bytes(SAMPLE.read_bytes())
    opened = []
    real_open = builtins.open

    def counting_open(file, *args, **kwargs):
        if str(file) == str(path):
            opened.append(file)
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", counting_open)
    t = read_trace(path)
    assert len(t) == 2000 and len(opened) == 1
    assert t.source_bytes == path.stat().st_size
    assert t.source_sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_fifo_is_read_once(tmp_path):
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "wb") as f:
            f.write(TEXT)

    writer = threading.Thread(target=feed)
    writer.start()
    try:
        t = read_trace(fifo)  # auto format: detection uses the blocks already read
    finally:
        writer.join(timeout=30)
    same_trace(t, read_trace(SAMPLE))
    assert t.source == str(fifo)


def test_standard_input_is_dash(monkeypatch):
    class Stdin(io.TextIOWrapper):
        def isatty(self) -> bool:
            return False

    monkeypatch.setattr(sys, "stdin", Stdin(io.BufferedReader(Trickle(SAMPLE.read_bytes(), 7))))
    t = read_trace("-")
    same_trace(t, read_trace(SAMPLE))
    assert t.source == "<stdin>"


def test_a_terminal_on_standard_input_is_refused_not_waited_for(tmp_path):
    import pty

    leader, follower = pty.openpty()
    try:
        proc = subprocess.run([sys.executable, "-m", "cosmos", "dram", "replay", "-"], cwd=ROOT,
                              stdin=follower, capture_output=True, text=True, timeout=120,
                              env=dict(os.environ, COSMOS_CACHE=str(tmp_path / "cache")))
    finally:
        os.close(leader)
        os.close(follower)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == ("cosmos dram: error: <stdin>: standard input is a terminal; pipe "
                                   "a trace into it, e.g. 'cat t.trace | cosmos dram replay -'")


def test_text_streams_and_other_containers_are_named():
    with pytest.raises(TraceError, match="a text stream; expected a binary one"):
        read_trace(io.StringIO("0x40 READ 0\n"))
    with pytest.raises(TraceError, match=r"<stream>: is a bzip2 file; expected a text trace"):
        read_trace(io.BytesIO(b"BZh91AY&SY"))
    assert detect_format(io.BytesIO(b"# c\nLD 0x40\n")) == "ramulator"


# ---------------------------------------------------------------------------------------------
# The command line: cat t | cosmos dram replay -, <(gzip -c t)
# ---------------------------------------------------------------------------------------------

TIMING_KEYS = ("trace_read_s", "replay_wall_s", "sim_wall_s", "sim_requests_per_s",
               "requests_write_s", "compile_s")


def cli(command: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """Run a shell command line that calls ``python -m cosmos`` (as $COSMOS) from the repo."""
    env = dict(os.environ, COSMOS=f"{sys.executable} -m cosmos",
               COSMOS_CACHE=str(tmp_path / "cache"))
    return subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)


@pytest.fixture(scope="module")
def piped_runs(tmp_path_factory):
    """The 2,000-request sample replayed from a file, from standard input and from a pipe of
    gzip, each with --out."""
    tmp = tmp_path_factory.mktemp("pipes")
    plain = tmp / "t.trace"
    plain.write_bytes(TEXT)
    runs = {
        "file": f"$COSMOS dram replay {plain} --no-progress --out {tmp / 'file'}",
        "stdin": f"cat {plain} | $COSMOS dram replay - --no-progress --out {tmp / 'stdin'}",
        "gzip-stdin": f"gzip -c {plain} | $COSMOS dram replay - --no-progress --out {tmp / 'gzip-stdin'}",
        "pipe": f"$COSMOS dram replay <(cat {plain}) --format dramsim3 --no-progress --out {tmp / 'pipe'}",
        "gzip-pipe": f"$COSMOS dram replay <(gzip -c {plain}) --no-progress --out {tmp / 'gzip-pipe'}",
    }
    done = {}
    for name, command in runs.items():
        proc = cli(command, tmp)
        assert proc.returncode == 0, (name, proc.stderr)
        done[name] = (proc, tmp / name)
    return done


def test_pipes_and_stdin_replay_every_request_with_the_file_results(piped_runs):
    _, ref = piped_runs["file"]
    ref_requests = (ref / "requests.npz").read_bytes()
    assert len(np.load(ref / "requests.npz")["id"]) == 2000
    ref_stats = json.loads((ref / "stats.json").read_text())
    for name, (proc, folder) in piped_runs.items():
        assert (folder / "requests.npz").read_bytes() == ref_requests, name
        stats = json.loads((folder / "stats.json").read_text())
        assert stats["n_requests"] == 2000, name
        assert ({k: v for k, v in stats.items() if k not in TIMING_KEYS}
                == {k: v for k, v in ref_stats.items() if k not in TIMING_KEYS}), name


def test_config_json_identifies_a_piped_trace(piped_runs):
    gz = gzip.compress(TEXT)  # gzip -c output differs by header only; size/sha checked below
    for name, (proc, folder) in piped_runs.items():
        cfg = json.loads((folder / "config.json").read_text())["trace"]
        assert cfg["n_requests"] == 2000 and cfg["format"] == "dramsim3"
        if name in ("file", "stdin", "pipe"):
            assert cfg["bytes"] == len(TEXT) and cfg["sha256"] == hashlib.sha256(TEXT).hexdigest()
        else:
            assert abs(cfg["bytes"] - len(gz)) < 64 and len(cfg["sha256"]) == 64
    assert json.loads((piped_runs["stdin"][1] / "config.json").read_text())["trace"]["path"] == "-"
    assert json.loads((piped_runs["pipe"][1] / "config.json").read_text())["trace"]["path"].startswith("/dev/fd/")
    summary = piped_runs["stdin"][0].stdout
    assert summary.startswith("trace   <stdin> (dramsim3, timed)\n")


def test_line_numbers_after_a_pipe(tmp_path):
    lines = TEXT.decode().splitlines(keepends=True)
    lines[1499] = lines[1499].replace("READ", "RAED").replace("WRITE", "WRTIE")
    bad = tmp_path / "bad.trace"
    bad.write_text("".join(lines))
    shown = lines[1499].rstrip("\n")
    for command, name in ((f"cat {bad} | $COSMOS dram replay -", "<stdin>"),
                          (f"gzip -c {bad} | $COSMOS dram replay - --format dramsim3", "<stdin>"),
                          (f"$COSMOS dram replay <(gzip -c {bad})", "/dev/fd/")):
        proc = cli(command, tmp_path)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
        assert proc.stderr.startswith(f"cosmos dram: error: {name}"), proc.stderr
        assert f", line 1500: bad request type " in proc.stderr and repr(shown) in proc.stderr


# ---------------------------------------------------------------------------------------------
# The first bad line is the one reported, whatever the block size
# ---------------------------------------------------------------------------------------------

GOOD = [f"0x{64 * (i + 1):x} READ {i}" for i in range(40)]


def with_lines(changes: dict[int, str]) -> bytes:
    lines = list(GOOD)
    for line, text in changes.items():
        lines[line - 1] = text
    return ("\n".join(lines) + "\n").encode()


def block_sizes(data: bytes) -> list[int]:
    """1 byte (one line per block), 7 lines, the default, and a few sizes that cut lines."""
    seven = len(b"".join(data.splitlines(keepends=True)[:7]))
    return [1, seven, _BLOCK_BYTES, 5, 64, 333]


FIRST_BAD = [
    # (lines changed, options, the line reported, what it must say)
    ({9: "0x40 READ x", 5: "0x40 READ 1"}, {}, 5, "arrival cycle 1 is before the previous request's 3"),
    ({30: "0x40 READ", 12: "0x1000 READ 999999999999999"}, {},
     12, "arrival cycle 999999999999999 is beyond the largest the model takes"),
    ({4: "0x43 READ 3", 6: "0x80 REED 5"}, {"unaligned": "error"}, 4, "address 0x43 is not a multiple of 64"),
    ({6: "0x43 READ 5", 4: "0x80 REED 3"}, {"unaligned": "error"}, 4, "bad request type 'REED'"),
    ({3: "0x40 READ 7 8", 2: "0x40 READ 1 # fine"}, {}, 3, "4 fields where 3 were expected"),
    ({20: "0x40 WRITE 19", 21: "0x40 WRITE 2"}, {}, 21, "arrival cycle 2 is before the previous request's 19"),
    # one line, two problems: the field checks come first, left to right
    ({7: "0xg0 READX 6"}, {}, 7, "bad hex address '0xg0'"),
    ({7: "0x40 READ -1"}, {}, 7, "bad cycle (decimal integer >= 0) '-1'"),
    # the capacity error is reported before a later malformed line, and counts what was read
    ({3: "0x100000 READ 2", 8: "0x100040 READ 7", 11: "0x40 READ"}, {"capacity_bytes": 1 << 20},
     3, "2 of the 10 requests before line 11 are (that line has an error too)"),
    ({3: "0x100000 READ 2", 8: "0x100040 READ 7"}, {"capacity_bytes": 1 << 20}, 3, "2 of 40 requests are"),
    ({11: "0x40 READ", 13: "0x100000 READ 12"}, {"capacity_bytes": 1 << 20}, 11, "2 fields where 3"),
    # a line longer than the limit, whether or not it fits in one block
    ({6: "0x40 READ 5 " + "#" * (MAX_LINE_BYTES + 10), 9: "bad"}, {}, 6, f"longer than {MAX_LINE_BYTES} bytes"),
    ({6: "0x40 READ 5", 9: "x" * (MAX_LINE_BYTES + 1), 12: "bad"}, {}, 9, f"longer than {MAX_LINE_BYTES} bytes"),
]


@pytest.mark.parametrize("changes, options, line, fragment", FIRST_BAD)
@pytest.mark.parametrize("gz", [False, True])
def test_first_bad_line_whatever_the_block_size(tmp_path, changes, options, line, fragment, gz):
    data = with_lines(changes)
    path = tmp_path / "bad.trace"
    path.write_bytes(gzip.compress(data, mtime=0) if gz else data)
    messages = set()
    for block in block_sizes(data):
        for fmt in ("auto", "dramsim3"):
            with pytest.raises(TraceError) as err:
                read_trace(path, fmt, block_bytes=block, **options)
            assert err.value.line == line, (block, str(err.value)[:300])
            messages.add(str(err.value))
    assert len(messages) == 1, messages
    msg = messages.pop()
    assert msg.startswith(f"{path}, line {line}: ") and fragment in msg, msg[:300]


def test_a_long_comment_line_before_the_first_request_fails_detection_the_same_way(tmp_path):
    path = tmp_path / "long.trace"
    path.write_bytes(b"# ok\n#" + b"c" * MAX_LINE_BYTES + b"\n0x40 READ 0\n")
    for block in (1, 1000, _BLOCK_BYTES):
        with pytest.raises(TraceError, match=rf"long\.trace, line 2: longer than {MAX_LINE_BYTES} bytes"):
            read_trace(path, block_bytes=block)
    ok = tmp_path / "ok.trace"
    ok.write_bytes(b"#" + b"c" * (MAX_LINE_BYTES - 1) + b"\n0x40 READ 0\n")  # exactly the limit
    assert read_trace(ok, block_bytes=4096).line.tolist() == [2]


# ---------------------------------------------------------------------------------------------
# Fuzz: mutated traces, random formats and options -> a trace or the project's error, the same
# one whatever the block size and however the bytes arrive
# ---------------------------------------------------------------------------------------------

_LINES = {
    "dramsim3": st.builds(lambda a, w, t: f"0x{a:x} {'WRITE' if w else 'READ'} {t}",
                          st.integers(0, 2**40), st.booleans(), st.integers(0, 50)),
    "ramulator": st.builds(lambda a, w: f"{'ST' if w else 'LD'} {a:#x}", st.integers(0, 2**40),
                           st.booleans()),
    "dramsys": st.builds(lambda a, w, t: f"{t}:\t{'write' if w else 'read'}\t0x{a:x}",
                         st.integers(0, 2**40), st.booleans(), st.integers(0, 50)),
}
_NOISE = st.sampled_from([b"#", b" ", b"\t", b"\n", b"\r\n", b":", b"0x", b"x", b"-", b"9" * 21,
                          b"\x00", b"\xff", b"\xef\xbb\xbf", b"\x1f\x8b", b"READ", b"ld", b"\xc2\x85"])


@st.composite
def mutated_traces(draw) -> bytes:
    fmt = draw(st.sampled_from(sorted(_LINES)))
    lines = draw(st.lists(st.one_of(_LINES[fmt], st.sampled_from(["", "# c", "  "])), max_size=25))
    data = bytearray(("\n".join(lines) + draw(st.sampled_from(["", "\n"]))).encode())
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["flip", "insert", "delete", "noise"]))
        pos = draw(st.integers(0, len(data)))
        if kind == "flip" and pos < len(data):
            data[pos] = draw(st.integers(0, 255))
        elif kind == "insert":
            data[pos:pos] = draw(st.binary(max_size=4))
        elif kind == "delete":
            del data[pos: pos + draw(st.integers(1, 8))]
        else:
            data[pos:pos] = draw(_NOISE)
    return bytes(data)


OPTIONS = st.fixed_dictionaries({
    "format": st.sampled_from(["auto", "dramsim3", "ramulator", "dramsys"]),
    "unaligned": st.sampled_from(["align", "error"]),
    "capacity_bytes": st.sampled_from([None, 1 << 20, 1 << 36]),
    "wrap": st.booleans(),
})


def check_same_everywhere(data: bytes, options: dict, block: int, step: int) -> None:
    kind, ref = outcome(io.BytesIO(data), **options)
    for source, kw in ((io.BytesIO(data), {"block_bytes": block}),
                       (Trickle(data, step), {}),
                       (Trickle(data, step), {"block_bytes": block})):
        kind2, other = outcome(source, **options, **kw)
        assert kind2 == kind, (kind, ref if kind == "error" else "", other if kind2 == "error" else "")
        if kind == "error":
            assert other == ref
        else:
            same_trace(other, ref)
    if kind == "ok":
        assert len(ref) > 0 and ref.addr.dtype == np.uint64 and np.all(ref.addr % 64 == 0)
        assert np.all(np.diff(ref.line) > 0) and ref.line[0] >= 1
        if ref.arrival is not None:
            assert np.all(np.diff(ref.arrival) >= 0)
    else:
        assert ref.startswith("<stream>"), ref


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_traces(), OPTIONS, st.integers(1, 64), st.integers(1, 9))
def test_fuzz_mutated_traces(data, options, block, step):
    check_same_everywhere(data, options, block, step)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_traces(), OPTIONS, st.integers(1, 64), st.integers(0, 100))
def test_fuzz_gzip_whole_and_cut(data, options, block, cut_percent):
    packed = gzip.compress(data, mtime=0)
    check_same_everywhere(packed, options, block, 5)
    cut = packed[: len(packed) * cut_percent // 100]
    assume(cut[:2] == b"\x1f\x8b")
    check_same_everywhere(cut, options, block, 5)


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=200), OPTIONS, st.integers(1, 16))
def test_fuzz_arbitrary_bytes(data, options, block):
    check_same_everywhere(data, options, block, 3)


# ---------------------------------------------------------------------------------------------
# The compiled scanner (dram.tracescan) against the vectorised parser it stands in for
# ---------------------------------------------------------------------------------------------


def scanner_and_reference(data: bytes, fmt: str):
    from dram.traces import _Block, _parse_block
    from dram.tracescan import scan_block

    if not data.endswith(b"\n"):
        data += b"\n"  # blocks are whole lines (dram.traces._blocks)
    fast = scan_block(data, fmt, MAX_LINE_BYTES, threads=1)
    # cut into pieces scanned by parallel threads: the same result
    cut = scan_block(data, fmt, MAX_LINE_BYTES, threads=3, min_piece_bytes=1)
    for a, b in zip(fast, cut):
        assert (a is None and b is None) or np.array_equal(a, b) and \
            getattr(a, "dtype", None) == getattr(b, "dtype", None), (data, fmt)
    ref = _parse_block(_Block(data, 1, "<block>", fmt))
    return fast, ref


def assert_scanner_agrees(data: bytes, fmt: str) -> None:
    (addr, kind, arrival, line, bad), ref = scanner_and_reference(data, fmt)
    ref_bad = None if ref.errors.line is None else ref.errors.line - 1
    assert bad == ref_bad, (data, fmt, bad, ref_bad)
    # the requests before the first bad line (all of them when there is none) are the same
    keep = ref.line < (ref_bad if ref_bad is not None else np.iinfo(np.int64).max)
    assert line.tolist() == ref.line[keep].tolist()
    assert addr.dtype == np.uint64 and addr.tolist() == ref.addr[keep].tolist()
    assert kind.dtype == np.uint8 and kind.tolist() == ref.is_write[keep].tolist()
    if fmt == "ramulator":
        assert arrival is None and ref.arrival is None
    else:
        assert arrival.dtype == np.int64 and arrival.tolist() == ref.arrival[keep].tolist()


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_traces(), st.sampled_from(sorted(_LINES)))
def test_fuzz_scanner_matches_the_vectorised_parser(data, fmt):
    """Same requests, and the same first bad line, on mutated text of every format."""
    assert_scanner_agrees(data, fmt)


@pytest.mark.parametrize("fmt", sorted(_LINES))
@pytest.mark.parametrize("text", [
    b"0x40 READ 1", b"0X40 read 1", b"40 Write 18446744073709551615", b"0x READ 1",
    b"0x" + b"f" * 16 + b" READ 0", b"0x" + b"0" * 17 + b" READ 0", b"0x40 READ " + b"9" * 19,
    b"0x40 READ 9223372036854775807", b"0x40 READ 9223372036854775808", b"0x40 READS 1",
    b"0x40 READ 1 2", b"0x40\tREAD\r1#c", b"#0x40 READ 1", b"LD 0x40", b"st 64", b"LD 0x",
    b"LD " + b"9" * 19, b"LD " + b"9" * 20, b"LD 0x" + b"f" * 16, b"LD 0x" + b"f" * 17,
    b"LD -1", b"5: read 0x40", b"5:\tWRITE\t40\tdata", b"5 read 0x40", b": read 0x40",
    b"5:: read 0x40", b"5: read 0x40 d e", b"9223372036854775808: read 0x40", b"\x0b\x0c",
    b"0x40 READ 1\x00", b"0x4g READ 1", b"0x40 REA\xc4 1",
    # keywords in mixed case, and bytes one bit (0x20 or 0x80) away from a keyword's letter
    b"0x40 rEaD 1", b"0x40 wRITe 1", b"Ld 0x40", b"sT 64", b"0x40 \xd2EAD 1", b"0x40 READ\x04 1",
    b"0x40 RE\x01D 1", b"\xccD 0x40", b"0x40 WRIT\x05 1",
    # hex digits next to the digit ranges
    b"0x40/ READ 1", b"0x40: READ 1", b"0x@0 READ 1", b"0x4G READ 1", b"0x`0 READ 1",
    b"0x4f READ 1", b"0xAF READ 1", b"LD 0x4F", b"5: read 0xaBc",
])
def test_scanner_edge_cases(text, fmt):
    assert_scanner_agrees(b"# head\n" + text + b"\n0x80 READ 2\n", fmt)
    assert_scanner_agrees(text, fmt)


def test_scanner_long_lines():
    ok = b"#" + b"c" * (MAX_LINE_BYTES - 1) + b"\n0x40 READ 0\n"
    assert_scanner_agrees(ok, "dramsim3")
    assert_scanner_agrees(b"0x40 READ 0\n#" + b"c" * MAX_LINE_BYTES + b"\n", "dramsim3")


def test_the_reader_grows_its_arrays_without_changing_the_trace(monkeypatch):
    """The requests are written into arrays that double when full: from a tiny start, over
    many small blocks with comments and blank lines between requests, the trace is the one
    read in one block."""
    import dram.traces as T

    rng = np.random.default_rng(3)
    lines = []
    for i in range(3000):
        lines.append(f"0x{int(rng.integers(0, 1 << 30)) * 64:x} "
                     f"{'READ' if i % 3 else 'WRITE'} {i * 2}".encode())
        if i % 97 == 0:
            lines.append(b"# a comment")
        if i % 89 == 0:
            lines.append(b"")
    text = b"\n".join(lines) + b"\n"
    whole = T.read_trace(io.BytesIO(text), block_bytes=1 << 24)
    monkeypatch.setattr(T, "_INITIAL_ROWS", 8)
    grown = T.read_trace(io.BytesIO(text), block_bytes=300)
    same_trace(whole, grown)
    assert len(grown) == 3000 and grown.line[-1] == len(lines)


def test_reading_with_and_without_the_scanner_gives_the_same_outcome(monkeypatch):
    """read_trace through the scanner equals read_trace through the vectorised parser alone,
    trace for trace and message for message."""
    import dram.traces as T

    cases = [b"0x40 READ 1\n0x80 WRITE 2\n", b"0x40 READ 1\n0x41 READ 0\n",
             b"0x40 READ 1\nLD 0x40\n", b"LD 0x41\nST 100\n", b"1: read 0x40\n0: read 0x80\n",
             b"0x40 READ 281474976710657\n", b"0x10000000000 READ 1\n0x40 READ x\n"]
    options = [{}, {"unaligned": "error"}, {"capacity_bytes": 1 << 20}]
    fast = [[outcome(io.BytesIO(c), **o) for o in options] for c in cases]
    monkeypatch.setattr(T, "_parse", lambda buf, first, name, fmt, room=None:
                        T._parse_block(T._Block(buf, first, name, fmt)))
    slow = [[outcome(io.BytesIO(c), **o) for o in options] for c in cases]
    for f_row, s_row in zip(fast, slow):
        for (kf, vf), (ks, vs) in zip(f_row, s_row):
            assert kf == ks
            if kf == "error":
                assert vf == vs
            else:
                same_trace(vf, vs)
