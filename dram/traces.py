"""Memory trace files: reading, checking and writing.

Three text formats are understood, one request per line, ``#`` starts a comment (to the end of
the line), blank lines are skipped, fields are separated by spaces or tabs:

==========  ====================================  ===========================================
format      line                                  meaning
==========  ====================================  ===========================================
dramsim3    ``0x<hex addr> READ|WRITE <cycle>``   timed; the native format (DRAMsim3's trace
                                                  CPU; also the format of the Ramulator 2.1
                                                  reference traces). ``0x`` is optional.
ramulator   ``LD|ST <addr>``                      untimed (Ramulator 2 ``LoadStoreTrace``);
                                                  the address is ``0x``-hex or decimal.
dramsys     ``<cycle>: read|write 0x<addr>``      timed (DRAMSys ``.stl``); an optional data
                                                  field after the address is ignored.
==========  ====================================  ===========================================

Keywords are case-insensitive. Cycles are DRAM clock cycles, from 0 to 2**48, and must not
decrease from one request to the next (ties keep file order). Files may be gzip-compressed
(recognised by their first two bytes, whatever the name). The format is detected from the first
request line unless given.

Every request is one 64-B line (Ramulator's request size). **Alignment rule:** an address that
is not a multiple of 64 is aligned down to its line (``addr & ~63``), which is what the address
mappers do anyway (they drop the six offset bits); ``unaligned="error"`` rejects such lines
instead.

**Capacity rule:** when a capacity is given (``capacity_bytes=`` or ``config=``), an aligned
address >= capacity is an error naming the line, unless ``wrap=True``, which takes it modulo the
capacity. For a power-of-two capacity that is exactly Ramulator's behaviour of dropping the
address bits above the mapped ones.

**Input:** a trace is read once, front to back, so anything that streams works: a file, a named
pipe, a shell's ``<(gzip -c t.trace)``, ``"-"`` for standard input, an open binary stream. Its
first bytes are read ahead to recognise gzip and kept for the parser (nothing is opened twice);
the format is detected from the blocks already read, which the parser then uses.

Parsing works over blocks of the text (no Python work per line): read the source once into
blocks of whole lines -> parse each block into arrays with one compiled pass over its bytes
(:mod:`dram.tracescan`; a block with a bad line goes to the vectorised numpy parser
:func:`_parse_block`, which builds the message) -> check what spans blocks (arrival order,
capacity) -> concatenate. Errors name the source, the 1-based line number in
the original (uncompressed) file, the offending text and what was expected, and the error
reported is the one on the first bad line of the file, whatever the block size.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import itertools
import os
import queue
import stat
import sys
import threading
import zlib
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterator, NamedTuple

import numpy as np

from cosmos_common import UserError

__all__ = [
    "FORMATS",
    "LINE_BYTES",
    "MemTrace",
    "TraceError",
    "read_trace",
    "write_trace",
    "detect_format",
    "check_capacity",
    "config_capacity_bytes",
]

#: Bytes per request: one DDR5 BL16 burst on a 32-bit subchannel = one 64-B cache line.
LINE_BYTES = 64

#: Format name -> what one line looks like (used in error messages and by the CLI help).
FORMATS = {
    "dramsim3": "'0x<hex address> READ|WRITE <cycle>' (DRAMsim3, timed)",
    "ramulator": "'LD|ST <address>' (Ramulator LoadStoreTrace, untimed; address 0x-hex or decimal)",
    "dramsys": "'<cycle>: read|write 0x<hex address>' (DRAMSys .stl, timed)",
}
_TIMED = {"dramsim3": True, "ramulator": False, "dramsys": True}

# Bytes of text parsed per block; bounds the temporary memory of the parser (about 40x this).
_BLOCK_BYTES = 16 << 20


# ----------------------------------------------------------------------------------------------
# The container
# ----------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class MemTrace:
    """A memory trace: one 64-B request per entry, in file (offer) order.

    This is the ``trace`` argument of :func:`dram.replay` (docs/contracts.md, section 3).

    Attributes
    ----------
    addr : ndarray, shape (N,), uint64
        Byte address of the request's 64-B line (a multiple of 64 when read from a file).
    is_write : ndarray, shape (N,), uint8
        1 for a write, 0 for a read.
    arrival : ndarray, shape (N,), int64, or None
        Arrival cycle (DRAM clock) of each request, non-decreasing; ``None`` for an untimed
        trace (every request available at cycle 0, offered in file order).
    rank_local : ndarray, shape (N,), uint8, or None
        1 marks a near-memory rank-PU access (stays inside its rank); ``None`` = all 0.
    line : ndarray, shape (N,), int64, or None
        1-based line of each request in its source file (for error messages); ``None`` when
        the trace was not read from a file.
    source : str or None
        Where the trace was read from: the path as given, ``<stdin>``, or a stream's name.
    format : str or None
        Format of that file (one of :data:`FORMATS`).
    source_bytes : int or None
        Bytes read from the source, as stored (compressed size for gzip).
    source_sha256 : str or None
        sha256 (hex) of those bytes: identifies the input of a run even when it came
        through a pipe.
    """

    addr: np.ndarray
    is_write: np.ndarray
    arrival: np.ndarray | None = None
    rank_local: np.ndarray | None = None
    line: np.ndarray | None = None
    source: str | None = None
    format: str | None = None
    source_bytes: int | None = None
    source_sha256: str | None = None

    def __post_init__(self) -> None:
        addr = _as_1d(self.addr, np.uint64, "addr")
        n = addr.shape[0]
        fields = {"addr": addr, "is_write": _as_flag(self.is_write, "is_write", n)}
        if self.arrival is not None:
            arrival = _as_1d(self.arrival, np.int64, "arrival", n)
            if n and arrival.min() < 0:
                i = int(np.flatnonzero(arrival < 0)[0])
                raise ValueError(f"{self._where(i)}arrival cycle {int(arrival[i])} is negative")
            if n and arrival.max() > MAX_ARRIVAL_CYCLE:
                i = int(np.flatnonzero(arrival > MAX_ARRIVAL_CYCLE)[0])
                raise ValueError(f"{self._where(i)}arrival cycle {int(arrival[i])} is beyond "
                                 f"the largest the model takes, 2**48 = {MAX_ARRIVAL_CYCLE}")
            if n > 1:
                bad = np.flatnonzero(arrival[1:] < arrival[:-1])
                if bad.size:
                    i = int(bad[0]) + 1
                    raise ValueError(
                        f"{self._where(i)}arrival cycle {int(arrival[i])} is before the previous "
                        f"request's {int(arrival[i - 1])}; arrival cycles must not decrease"
                    )
            fields["arrival"] = arrival
        if self.rank_local is not None:
            fields["rank_local"] = _as_flag(self.rank_local, "rank_local", n)
        if self.line is not None:
            fields["line"] = _as_1d(self.line, np.int64, "line", n)
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def _where(self, i: int) -> str:
        """Prefix naming request ``i`` (file and line when known) for an error message."""
        src = self.source or "trace"
        if self.line is not None and i < len(self.line):
            return f"{src}, line {int(np.asarray(self.line)[i])}: "
        return f"{src}, request {i}: "

    def __len__(self) -> int:
        return int(self.addr.shape[0])

    @property
    def timed(self) -> bool:
        """True when the trace carries arrival cycles."""
        return self.arrival is not None

    @property
    def n_reads(self) -> int:
        return int(len(self) - np.count_nonzero(self.is_write))

    @property
    def n_writes(self) -> int:
        return int(np.count_nonzero(self.is_write))

    def where(self, i: int) -> str:
        """Human-readable location of request ``i``: ``'<file>, line <n>'`` or ``'request <i>'``."""
        return self._where(i).rstrip(": ")

    def replace(self, **changes: Any) -> "MemTrace":
        """A copy with some fields replaced (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)


def _as_1d(values: Any, dtype: type, name: str, n: int | None = None) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"MemTrace.{name} must be one-dimensional, got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"MemTrace.{name} has {arr.shape[0]} entries, addr has {n}")
    if arr.dtype == dtype:
        return arr
    if arr.size and arr.dtype.kind not in "biu":
        raise ValueError(f"MemTrace.{name} must hold integers, got dtype {arr.dtype}")
    if arr.size and arr.dtype.kind == "i" and np.dtype(dtype).kind == "u" and arr.min() < 0:
        raise ValueError(f"MemTrace.{name} must not be negative")
    return arr.astype(dtype)


def _as_flag(values: Any, name: str, n: int) -> np.ndarray:
    arr = np.asarray(values)
    arr = _as_1d(arr.astype(np.uint8) if arr.dtype == bool else arr, np.uint8, name, n)
    if arr.size and arr.max() > 1:
        raise ValueError(f"MemTrace.{name} must be 0 or 1")
    return arr


# ----------------------------------------------------------------------------------------------
# Capacity
# ----------------------------------------------------------------------------------------------


def config_capacity_bytes(config: Any) -> int:
    """Addressable bytes of the memory system described by a :class:`dram.DRAMConfig`.

    Uses the config's own ``capacity_bytes`` (the dram package's single definition).
    """
    cap = getattr(config, "capacity_bytes", None)
    if cap is None:
        raise ValueError(
            f"cannot tell the capacity of {type(config).__name__}: it has no capacity_bytes"
        )
    cap = cap() if callable(cap) else cap
    return int(cap)


def check_capacity(trace: MemTrace, capacity_bytes: int, *, wrap: bool = False) -> MemTrace:
    """Check (or wrap) every address against ``capacity_bytes``.

    Parameters
    ----------
    trace : MemTrace
    capacity_bytes : int
        Addressable bytes; addresses must be ``< capacity_bytes``.
    wrap : bool
        ``False``: an address at or beyond the capacity raises :class:`TraceError` (a
        ``ValueError``) naming its line.
        ``True``: addresses are taken modulo the capacity (``addr % capacity_bytes``).

    Returns
    -------
    MemTrace
        ``trace`` itself when nothing changed, else a copy with the wrapped addresses.
    """
    capacity_bytes = int(capacity_bytes)
    if capacity_bytes <= 0 or capacity_bytes % LINE_BYTES:
        raise TraceError(f"capacity_bytes must be a positive multiple of {LINE_BYTES}, "
                         f"got {capacity_bytes}")
    if len(trace) == 0:
        return trace
    cap = np.uint64(capacity_bytes)
    over = trace.addr >= cap
    if not over.any():
        return trace
    if wrap:
        return trace.replace(addr=trace.addr % cap)
    i = int(np.flatnonzero(over)[0])
    line = int(trace.line[i]) if trace.line is not None else None
    raise TraceError(_capacity_message(trace._where(i), int(trace.addr[i]), capacity_bytes,
                                       int(np.count_nonzero(over)), len(trace)), line)


def _fmt_bytes(n: int) -> str:
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} B"


# ----------------------------------------------------------------------------------------------
# Reading
# ----------------------------------------------------------------------------------------------

_GZIP_MAGIC = b"\x1f\x8b"
# Other containers a user might hand over by mistake: named in the error instead of parsed.
_OTHER_MAGIC = {
    b"BZh": "bzip2",
    b"\xfd7zXZ\x00": "xz",
    b"\x28\xb5\x2f\xfd": "zstd",
    b"PK\x03\x04": "zip",
    b"\x93NUMPY": "numpy .npy",
}
_SNIFF_BYTES = 8  # enough for every magic number above
_UTF8_BOM = b"\xef\xbb\xbf"
#: Longest accepted line (bytes, without its newline); a longer one means the file is not a
#: text trace. The rule holds for every line, comments included, whatever the block size.
MAX_LINE_BYTES = 1 << 20
#: Name of standard input in messages (the source ``"-"``).
STDIN_NAME = "<stdin>"


class TraceError(UserError):
    """A trace source that cannot be read as a trace.

    The message names the source (file path as given, ``<stdin>``, or a stream's name), the
    1-based line of the original file when the problem is on a line, the offending text and
    what was expected. ``line`` holds that line number (``None`` when the problem is not on one
    line: an empty file, a damaged compressed stream, a directory).
    """

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.line = line


def _open_source(source: Any) -> tuple[Any, str, bool]:
    """Open a trace source for reading bytes, once. Returns (binary stream, name, owned).

    ``source`` is a path (a regular file, a named pipe, ``/dev/fd/N`` of a shell's ``<(...)``),
    ``"-"`` for standard input, or a binary file object (read from where it stands, not closed
    here). ``owned`` says whether the caller must close the stream.
    """
    if hasattr(source, "read"):
        if isinstance(source, io.TextIOBase):
            raise TraceError(f"{getattr(source, 'name', '<stream>')}: a text stream; expected "
                             f"a binary one (open the trace with 'rb', or pass sys.stdin.buffer)")
        name = getattr(source, "name", None)
        return source, (name if isinstance(name, str) else "<stream>"), False
    text = os.fspath(source)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if text == "-":
        stdin = sys.stdin
        if stdin is None or not hasattr(stdin, "buffer"):
            raise TraceError(f"{STDIN_NAME}: standard input is closed; pipe a trace into it")
        if stdin.isatty():
            # reading a terminal would wait for typed requests: refuse instead of hanging
            raise TraceError(f"{STDIN_NAME}: standard input is a terminal; pipe a trace into it, "
                             f"e.g. 'cat t.trace | cosmos dram replay -'")
        return stdin.buffer, STDIN_NAME, False
    path = Path(text)
    if not path.exists():
        raise FileNotFoundError(f"{text}: no such trace file")
    if path.is_dir():
        raise TraceError(f"{text}: is a directory, expected a trace file")
    return open(path, "rb"), text, True


class _Hasher:
    """SHA-256 of a stream's bytes, fed piece by piece in order; the large pieces are hashed
    in a thread of their own beside the parsing (hashlib releases the GIL on them)."""

    _LARGE = 1 << 16

    def __init__(self):
        self._sha = hashlib.sha256()
        self._queue: queue.SimpleQueue | None = None
        self._thread: threading.Thread | None = None

    def _drain(self) -> None:
        while (data := self._queue.get()) is not None:
            self._sha.update(data)

    def update(self, data: bytes) -> None:
        if self._queue is None and len(data) < self._LARGE:
            self._sha.update(data)
            return
        if self._queue is None:
            self._queue = queue.SimpleQueue()
            self._thread = threading.Thread(target=self._drain, daemon=True)
            self._thread.start()
        self._queue.put(data)

    def close(self) -> None:
        """Wait for the pieces given so far to be hashed; stop the thread."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread, self._queue = None, None

    def hexdigest(self) -> str:
        self.close()
        return self._sha.hexdigest()


class _Input:
    """One pass over a trace source: its bytes as stored are read once, counted and hashed on
    the way, and decompressed when they are gzip.

    The first bytes are read ahead to recognise gzip (magic ``1f 8b``, whatever the name) and
    other containers; they are kept and handed out again by :meth:`read`, so nothing is read
    twice and a pipe or standard input loses nothing. :attr:`text` is the stream of trace text
    (a :class:`gzip.GzipFile` over this object for gzip, else this object).
    """

    def __init__(self, source: Any):
        self._raw, self.name, self._owned = _open_source(source)
        self._sha = _Hasher()
        self.n_bytes = 0
        self._broken: TraceError | None = None  # the damage found in a gzip stream
        try:
            head = b""
            while len(head) < _SNIFF_BYTES:  # a pipe may hand out fewer bytes per read
                more = self._read_raw(_SNIFF_BYTES - len(head))
                if not more:
                    break
                head += more
            self._head = head
            for sig, kind in _OTHER_MAGIC.items():
                if head.startswith(sig):
                    raise TraceError(f"{self.name}: is a {kind} file; expected a text trace, "
                                     f"plain or gzip")
            self.compressed = head[:2] == _GZIP_MAGIC
            self.text = gzip.GzipFile(fileobj=self, mode="rb") if self.compressed else self
        except BaseException:
            self.close()
            raise

    def _read_raw(self, n: int) -> bytes:
        data = self._raw.read(n)
        if data is None:  # a non-blocking stream with nothing ready
            raise TraceError(f"{self.name}: a non-blocking stream; expected a blocking one")
        self._sha.update(data)
        self.n_bytes += len(data)
        return data

    def read(self, n: int = -1) -> bytes:
        """The source's bytes as stored: the kept head first, then the rest of the stream."""
        head = self._head
        if head:
            if 0 <= n <= len(head):
                self._head = head[n:]
                return head[:n]
            self._head = b""
            return head + self._read_raw(n - len(head) if n >= 0 else -1)
        return self._read_raw(n)

    def read_text(self, n: int) -> bytes:
        """Up to ``n`` bytes of trace text (decompressed); ``b""`` at the end.

        A damaged or truncated gzip stream raises :class:`TraceError`, but only once the text
        decompressed before the damage has been handed out (it is collected piecewise with
        ``read1``, so none is lost in a failed large read): the lines before the damage are
        parsed and checked first, whatever the block size.
        """
        if not self.compressed:
            return self.read(n)
        if self._broken is not None:
            raise self._broken
        got: list[bytes] = []
        size = 0
        while size < n:
            try:
                piece = self.text.read1(n - size)
            except (OSError, EOFError, zlib.error) as exc:  # corrupt or truncated gzip stream
                self._broken = TraceError(f"{self.name}: cannot read the compressed file: {exc}")
                if not got:
                    raise self._broken from None
                break
            if not piece:
                break
            got.append(piece)
            size += len(piece)
        return b"".join(got)

    def finish(self) -> tuple[int, str]:
        """Read what is left of the source (bytes after the end of a gzip stream) so that the
        count and the digest cover it all. Returns (bytes, sha256 hex digest)."""
        while self.read(1 << 20):
            pass
        return self.n_bytes, self._sha.hexdigest()

    def file_size(self) -> int | None:
        """The size of the source if it is a regular file, else None."""
        try:
            st = os.fstat(self._raw.fileno())
        except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
            return None
        return st.st_size if stat.S_ISREG(st.st_mode) else None

    def close(self) -> None:
        self._sha.close()
        if self._owned:
            self._raw.close()


def _blocks(inp: _Input, block_bytes: int) -> Iterator[tuple[bytes, int]]:
    """Yield the source's text as ``(block, first line)``: blocks of whole lines (each ends with
    a newline; the last line gets one added) and the 1-based line number, in the original file,
    of the block's first line.

    ``block_bytes`` of text are read per step; a line longer than that is carried over and
    completed by the following reads, which double in size while the line is unfinished (up to
    what the longest accepted line needs), so a long line costs few reads. A UTF-8 byte-order
    mark at the start becomes spaces. A line longer than :data:`MAX_LINE_BYTES` is an error as
    soon as it is seen to be; every line before it has been yielded by then.
    """
    parts: list[bytes] = []  # pieces of an unfinished line
    pending = 0              # their total length
    next_line = 1            # number of the first line not yet yielded
    read_bytes = block_bytes
    head = inp.read_text(len(_UTF8_BOM))
    chunk = b"   " if head == _UTF8_BOM else head
    while True:
        if not chunk:
            chunk = inp.read_text(read_bytes)
            if not chunk:
                break
        cut = chunk.rfind(b"\n")
        if cut < 0:
            parts.append(chunk)
            pending += len(chunk)
            if pending > MAX_LINE_BYTES:
                raise _long_line(inp.name, next_line)
            read_bytes = min(2 * read_bytes, max(block_bytes, MAX_LINE_BYTES + 1))
            chunk = b""
            continue
        read_bytes = block_bytes
        parts.append(memoryview(chunk)[: cut + 1])   # joined below: one copy, not two
        buf = b"".join(parts)
        parts = [chunk[cut + 1:]]
        pending = len(parts[0])
        first, next_line = next_line, next_line + buf.count(b"\n")
        chunk = b""
        yield buf, first
    rest = b"".join(parts)
    if rest:
        yield rest + b"\n", next_line


def _long_line(name: str, line: int) -> TraceError:
    return TraceError(f"{name}, line {line}: longer than {MAX_LINE_BYTES} bytes; not a text "
                      f"trace file?", line)


# Lookup tables over byte values.
_WS = np.zeros(256, bool)
_WS[[9, 10, 11, 12, 13, 32]] = True
_HEX = np.full(256, -1, np.int8)
_DEC = np.full(256, -1, np.int8)
for _c in range(10):
    _HEX[ord("0") + _c] = _c
    _DEC[ord("0") + _c] = _c
for _c in range(6):
    _HEX[ord("a") + _c] = 10 + _c
    _HEX[ord("A") + _c] = 10 + _c
_UPPER = np.arange(256, dtype=np.uint8)
_UPPER[ord("a"): ord("z") + 1] -= 32
_MAX_HEX_DIGITS = 16  # 64-bit addresses
#: Largest arrival cycle of a trace: 2**48 cycles are 32 hours of simulated time at
#: DDR5-4800's 416 ps, and keep every cycle sum of the kernels far from int64 overflow (the
#: kernels' "never" is 2**62).
MAX_ARRIVAL_CYCLE = 1 << 48
_MAX_DEC_DIGITS = 19  # fits int64 (cycles) and uint64 (addresses)


def _word_key(word: str) -> int:
    return sum(b << (8 * j) for j, b in enumerate(word.upper().encode()))


#: characters of a bad line quoted in an error; bytes of a binary one
SHOWN_CHARS, SHOWN_BYTES = 200, 32


def shown_line(raw: bytes) -> str:
    """A bad line as an error quotes it: its text, cut at :data:`SHOWN_CHARS` and escaped
    (``repr``); a line that is not printable UTF-8 text is named binary data, with its first
    :data:`SHOWN_BYTES` bytes escaped, so no junk reaches the terminal."""
    raw = raw.rstrip(b"\r")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is None or any(not (c.isprintable() or c == "\t") for c in text):
        cut = "..." if len(raw) > SHOWN_BYTES else ""
        return f"binary data {raw[:SHOWN_BYTES]!r}{cut} (not a text trace)"
    return repr(text[:SHOWN_CHARS] + "..." if len(text) > SHOWN_CHARS else text)


class _BlockText:
    """One block of text (whole lines, each ending with a newline) and the error message for
    one of its lines. Where the lines start is found only when a message needs it."""

    def __init__(self, buf: bytes, first_line: int, name: str, fmt: str):
        self.name, self.fmt, self.first_line = name, fmt, first_line
        self.raw = buf
        self._nl: np.ndarray | None = None
        self._line_start: np.ndarray | None = None

    def _index_lines(self) -> None:
        nl = np.flatnonzero(np.frombuffer(self.raw, np.uint8) == 10)
        line_start = np.empty(nl.shape[0], np.int64)
        line_start[0] = 0
        line_start[1:] = nl[:-1] + 1
        self._nl, self._line_start = nl, line_start

    @property
    def nl(self) -> np.ndarray:
        """Offset of each line's newline."""
        if self._nl is None:
            self._index_lines()
        return self._nl

    @property
    def line_start(self) -> np.ndarray:
        """Offset of each line's first byte."""
        if self._line_start is None:
            self._index_lines()
        return self._line_start

    def text(self, li: int) -> str:
        s, e = int(self.line_start[li]), int(self.nl[li])
        return self.raw[s:e].decode("utf-8", "replace").rstrip("\r")

    def error(self, li: int, reason: str) -> TraceError:
        """The error for block line ``li``: source, line number, reason, text, expected form."""
        s, e = int(self.line_start[li]), int(self.nl[li])
        line = self.first_line + li
        return TraceError(
            f"{self.name}, line {line}: {reason} in {shown_line(bytes(self.raw[s:e]))}; "
            f"expected {self.fmt} lines {FORMATS[self.fmt]}",
            line,
        )


class _Block(_BlockText):
    """One block of text, tokenised; helpers that turn token columns into values or errors."""

    def __init__(self, buf: bytes, first_line: int, name: str, fmt: str):
        super().__init__(buf, first_line, name, fmt)
        data = np.frombuffer(buf, np.uint8)
        nl = self.nl
        self.n_lines = nl.shape[0]
        hashes = np.flatnonzero(data == 35)  # '#'
        if hashes.size:
            data = data.copy()
            hline = np.searchsorted(nl, hashes)
            first = np.ones(hashes.size, bool)
            first[1:] = hline[1:] != hline[:-1]
            delta = np.zeros(data.size + 1, np.int8)
            delta[hashes[first]] = 1
            delta[nl[hline[first]]] = -1
            data[np.cumsum(delta[:-1], dtype=np.int8) > 0] = 32
        self.data = data
        nonws = ~_WS[data]
        edge = np.diff(nonws.astype(np.int8), prepend=np.int8(0), append=np.int8(0))
        self.tok_start = np.flatnonzero(edge == 1)
        self.tok_end = np.flatnonzero(edge == -1)
        self.tok_line = np.searchsorted(nl, self.tok_start)
        self.ntok = np.bincount(self.tok_line, minlength=self.n_lines)
        self.tok_ptr = np.zeros(self.n_lines + 1, np.int64)
        np.cumsum(self.ntok, out=self.tok_ptr[1:])

    # -- error reporting ------------------------------------------------------------------------
    def token_text(self, t: int) -> str:
        return self.raw[int(self.tok_start[t]): int(self.tok_end[t])].decode("utf-8", "replace")

    # -- token columns --------------------------------------------------------------------------
    def words(self, toks: np.ndarray, allowed: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
        """Match tokens against keywords (case-insensitive). Returns (code, bad mask)."""
        s, e = self.tok_start[toks], self.tok_end[toks]
        length = e - s
        width = max(len(w) for w in allowed)
        key = np.zeros(toks.size, np.uint64)
        for j in range(width):
            has = length > j
            b = np.where(has, _UPPER[self.data[np.minimum(s + j, self.data.size - 1)]], 0)
            key |= b.astype(np.uint64) << np.uint64(8 * j)
        code = np.full(toks.size, -1, np.int64)
        for w, c in allowed.items():
            code[(key == np.uint64(_word_key(w))) & (length == len(w))] = c
        return code, code < 0

    def numbers(self, toks: np.ndarray, base: int, skip: np.ndarray | int = 0,
                trim: np.ndarray | int = 0) -> tuple[np.ndarray, ...]:
        """Parse tokens as unsigned integers in ``base`` (16 or 10).

        ``skip`` leading bytes (a ``0x`` prefix) and ``trim`` trailing bytes (a ``:``) are left
        out. Returns (values uint64, and masks of tokens with a bad digit, with no digits, with
        too many digits). Digits are processed right-aligned, one column (digit position) at a
        time over all tokens, so the work is ``width`` vectorised passes over n tokens.
        """
        s = self.tok_start[toks] + skip
        e = self.tok_end[toks] - trim
        nd = e - s
        max_digits = _MAX_HEX_DIGITS if base == 16 else _MAX_DEC_DIGITS
        empty = nd <= 0
        too_long = nd > max_digits
        nd = np.clip(nd, 0, max_digits)
        width = int(nd.max()) if nd.size else 0
        values = np.zeros(toks.size, np.uint64)
        bad = np.zeros(toks.size, bool)
        if width == 0:
            return values, bad, empty, too_long
        lut = _HEX if base == 16 else _DEC
        first_col = width - nd  # right-aligned: token digits sit in columns first_col..width-1
        last = self.data.size - 1
        ubase = np.uint64(base)
        for j in range(width):
            valid = first_col <= j
            digit = lut[self.data[np.clip(e - (width - j), 0, last)]]
            bad |= valid & (digit < 0)
            values *= ubase
            values += np.where(valid & (digit >= 0), digit, 0).astype(np.uint64)
        bad &= ~too_long
        return values, bad, empty, too_long

    def has_prefix_0x(self, toks: np.ndarray) -> np.ndarray:
        s = self.tok_start[toks]
        length = self.tok_end[toks] - s
        ok = length >= 2
        s1 = np.minimum(s + 1, self.data.size - 1)
        return ok & (self.data[s] == ord("0")) & ((self.data[s1] | 0x20) == ord("x"))


class _Errors:
    """The error candidates of one block; the one on the earliest line is the block's error.

    Every check adds the first line its mask marks. Between checks that mark the same line, the
    first added wins; the checks run in a fixed order (line length, field count, then the fields
    left to right, then arrival range, order and alignment), so which error a line gets does
    not depend on how the file was cut into blocks.
    """

    def __init__(self, block: _Block):
        self.block = block
        self.best: tuple[int, Callable[[], TraceError]] | None = None

    def add(self, lines: np.ndarray, mask: np.ndarray, reason: Callable[[int], str]) -> None:
        """``mask[k]`` marks an error on block line ``lines[k]``; ``reason(k)`` describes it."""
        if mask.any():
            k = int(np.flatnonzero(mask)[0])
            li = int(lines[k])
            if self.best is None or li < self.best[0]:
                self.best = (li, lambda: self.block.error(li, reason(k)))

    def add_error(self, li: int, make: Callable[[], TraceError]) -> None:
        """An error on block line ``li`` whose whole message ``make()`` builds."""
        if self.best is None or li < self.best[0]:
            self.best = (li, make)

    @property
    def line(self) -> int | None:
        """Line number (in the file) of the block's first error; ``None`` if it has none."""
        return None if self.best is None else self.block.first_line + self.best[0]

    def error(self) -> TraceError:
        return self.best[1]()


_RW = {"READ": 0, "WRITE": 1}
_LDST = {"LD": 0, "ST": 1}
_FIELDS = {"dramsim3": (3,), "ramulator": (2,), "dramsys": (3, 4)}


class _Parsed(NamedTuple):
    """One block's requests and its first error (see :func:`_parse_block`)."""

    addr: np.ndarray             # (n,) uint64, as written (not yet aligned)
    is_write: np.ndarray         # (n,) uint8
    arrival: np.ndarray | None   # (n,) int64 for the timed formats
    line: np.ndarray             # (n,) int64, index of each request's line in the block
    errors: _Errors              # candidates; the values on and after errors.line are not valid


def _parse_block(b: _Block) -> _Parsed:
    """Parse one tokenised block into request arrays and its error candidates; raises nothing.

    This is the parser's reference step: text in, arrays out, with no state between blocks
    (the reader checks what spans blocks: arrival order, capacity). The reader runs the
    compiled scanner first (:func:`_parse`), which returns the same arrays for a valid block,
    and hands a block with an error to this function for the message.
    """
    fmt = b.fmt
    allowed = _FIELDS[fmt]
    errs = _Errors(b)
    long_lines = np.flatnonzero(b.nl - b.line_start > MAX_LINE_BYTES)
    if long_lines.size:
        li = int(long_lines[0])
        errs.add_error(li, lambda: _long_line(b.name, b.first_line + li))
    data_lines = np.flatnonzero(b.ntok > 0)
    nt = b.ntok[data_lines]
    count_ok = np.isin(nt, allowed)
    want = " or ".join(str(a) for a in allowed)
    errs.add(data_lines, ~count_ok, lambda k: f"{int(nt[k])} fields where {want} were expected")
    lines = data_lines[count_ok]
    first = b.tok_ptr[lines]

    def number_error(toks, bad, empty, long_, what, max_digits):
        def reason(k: int) -> str:
            text = b.token_text(int(toks[k]))
            if empty[k]:
                return f"empty {what} {text!r}"
            if bad[k]:
                return f"bad {what} {text!r}"
            return f"{what} {text!r} has more than {max_digits} digits"
        errs.add(lines, bad | empty | long_, reason)

    def hex_addr(toks: np.ndarray) -> np.ndarray:
        skip = 2 * b.has_prefix_0x(toks).astype(np.int64)
        val, bad, empty, long_ = b.numbers(toks, 16, skip=skip)
        number_error(toks, bad, empty, long_, "hex address", _MAX_HEX_DIGITS)
        return val

    def cycles(toks: np.ndarray, trim: int = 0) -> np.ndarray:
        val, bad, empty, long_ = b.numbers(toks, 10, trim=trim)
        number_error(toks, bad, empty, long_, "cycle (decimal integer >= 0)", _MAX_DEC_DIGITS)
        errs.add(lines, val > np.uint64(2**63 - 1),
                 lambda k: f"cycle {b.token_text(int(toks[k]))!r} is too large")
        return val.astype(np.int64)

    def keyword(toks: np.ndarray, allowed: dict[str, int], what: str) -> np.ndarray:
        code, bad = b.words(toks, allowed)
        errs.add(lines, bad, lambda k: f"bad {what} {b.token_text(int(toks[k]))!r} "
                                       f"(one of {', '.join(allowed)})")
        return code

    arrival = None
    if fmt == "dramsim3":
        addr = hex_addr(first)
        kind = keyword(first + 1, _RW, "request type")
        arrival = cycles(first + 2)
    elif fmt == "ramulator":
        kind = keyword(first, _LDST, "request type")
        t = first + 1
        pre = b.has_prefix_0x(t)
        addr = np.zeros(t.size, np.uint64)
        masks = [np.zeros(t.size, bool) for _ in range(3)]
        for sel, base in ((pre, 16), (~pre, 10)):
            if sel.any():
                val, *m = b.numbers(t[sel], base, skip=2 if base == 16 else 0)
                addr[sel] = val
                for mask, part in zip(masks, m):
                    mask[sel] = part
        number_error(t, *masks, "address (0x-prefixed hex or decimal)",
                     f"{_MAX_HEX_DIGITS} (hex) or {_MAX_DEC_DIGITS} (decimal)")
    else:  # dramsys
        colon = b.data[np.maximum(b.tok_end[first] - 1, 0)] == ord(":")
        errs.add(lines, ~colon, lambda k: f"time stamp {b.token_text(int(first[k]))!r} does not end with ':'")
        arrival = cycles(first, trim=1)
        kind = keyword(first + 1, _RW, "command")
        addr = hex_addr(first + 2)
    return _Parsed(addr, kind.astype(np.uint8), arrival, lines, errs)


def _parse(buf, first_line: int, name: str, fmt: str, room=None) -> _Parsed:
    """Parse one block: the compiled scanner (:func:`dram.tracescan.scan_block`, into
    ``room``'s arrays if given) first; a block it does not accept whole goes to the
    vectorised :func:`_parse_block`, which finds the same first bad line and builds its
    message (into arrays of its own)."""
    from dram.tracescan import scan_block

    addr, kind, arrival, line, bad = scan_block(buf, fmt, MAX_LINE_BYTES, room=room)
    if bad is not None:
        return _parse_block(_Block(bytes(buf), first_line, name, fmt))
    return _Parsed(addr, kind, arrival, line, _Errors(_BlockText(buf, first_line, name, fmt)))


def _detect(blocks: Iterator[tuple[bytes, int]], name: str) -> tuple[str, list[tuple[bytes, int]]]:
    """Detect the format from the first request line (comments and blanks skipped).

    Returns the format and the blocks read to find it, which the parser then reads first:
    detection reads no byte that the parser does not get.
    """
    kept = []
    for buf, line in blocks:
        kept.append((buf, line))
        pos = 0
        while pos < len(buf):
            end = buf.index(b"\n", pos)
            if end - pos > MAX_LINE_BYTES:
                raise _long_line(name, line)
            raw = buf[pos:end]
            tokens = raw.split(b"#", 1)[0].split()  # bytes.split(): the parser's whitespace
            if tokens:
                fmt = _classify(tokens)
                if fmt is None:
                    raise TraceError(
                        f"{name}, line {line}: cannot tell the trace format from "
                        f"{shown_line(bytes(raw))}; "
                        "expected " + "; or ".join(f"{k} {v}" for k, v in FORMATS.items())
                        + " (or pass the format explicitly)", line)
                return fmt, kept
            pos = end + 1
            line += 1
    raise _no_requests(name)


def _classify(tokens: list[bytes]) -> str | None:
    up = [t.upper() for t in tokens]
    if up[0] in (b"LD", b"ST"):
        return "ramulator"
    if up[0].endswith(b":"):
        return "dramsys"
    if len(up) >= 2 and up[1] in (b"READ", b"WRITE"):
        return "dramsim3"
    return None


def _no_requests(name: str) -> TraceError:
    return TraceError(f"{name}: no request lines (the file is empty or holds only comments)")


def detect_format(source: str | os.PathLike | BinaryIO) -> str:
    """Detect a trace's format from its first request line (comments and blanks skipped).

    ``source`` is what :func:`read_trace` takes. The source is read up to that line only (a
    stream is consumed that far).

    Raises :class:`TraceError` naming the source and line when the line fits no format, or when
    the source has no request line.
    """
    inp = _Input(source)
    try:
        return _detect(_blocks(inp, 1 << 16), inp.name)[0]
    finally:
        inp.close()


def _capacity_message(where: str, addr: int, capacity_bytes: int, n_over: int, n_seen: int,
                      stopped_at: int | None | bool = False) -> str:
    """The capacity error. ``stopped_at``: ``False`` when every request was read, else the line
    of the later error that stopped the reading (``None`` if that error is not on a line)."""
    if stopped_at is False:
        count = f"{n_over} of {n_seen} requests are"
    elif stopped_at is None:
        count = f"{n_over} of the {n_seen} requests read before a later error are"
    else:
        count = (f"{n_over} of the {n_seen} requests before line {stopped_at} are "
                 f"(that line has an error too)")
    return (
        f"{where}address 0x{addr:x} is beyond the memory's capacity of "
        f"{_fmt_bytes(capacity_bytes)} (0x{capacity_bytes:x}); {count}; use a larger "
        f"configuration, or wrap=True (--wrap) to take addresses modulo the capacity"
    )


#: Requests the reader's arrays hold at first (a stream of unknown size); doubled as needed.
_INITIAL_ROWS = 1 << 16


class _Reader:
    """Turns the blocks of one source into a :class:`MemTrace`, checking what spans blocks.

    The error reported is the one on the first bad line of the file, whatever the block size:
    within a block the earliest candidate wins (:class:`_Errors`), and blocks are read in
    order and stop at the first block with an error. An address beyond the capacity does not
    stop the reading (the message counts how many requests are beyond), but it is reported
    before any error on a later line.
    """

    def __init__(self, name: str, fmt: str, unaligned: str, capacity_bytes: int | None):
        self.name, self.fmt, self.unaligned = name, fmt, unaligned
        self.capacity_bytes = capacity_bytes
        # the requests so far, in arrays grown by doubling (the scanner writes into them)
        self._arrays: tuple | None = None
        self._size_hint = _INITIAL_ROWS
        self.prev_arrival: int | None = None
        self.n_requests = 0
        self.over: tuple[int, int] | None = None  # (line, address) of the first one beyond
        self.n_over = 0

    def size_hint(self, n_bytes: int) -> None:
        """Reserve room for a source of ``n_bytes`` bytes of text (a regular file's size):
        lines of about 16 bytes or more, so the arrays are seldom grown. Address space only:
        memory is used as requests are written."""
        self._size_hint = max(self._size_hint, n_bytes // 16 + 1)

    def _room(self, lines: int):
        """(addr, is_write, arrival, line, at) with room for ``lines`` more requests."""
        timed = _TIMED[self.fmt]
        need = self.n_requests + lines
        if self._arrays is None or need > self._arrays[0].shape[0]:
            cap = max(need, self._size_hint if self._arrays is None
                      else 2 * self._arrays[0].shape[0])
            new = (np.empty(cap, np.uint64), np.empty(cap, np.uint8),
                   np.empty(cap if timed else 0, np.int64), np.empty(cap, np.int64))
            if self._arrays is not None:
                n = self.n_requests
                for a, b in zip(new, self._arrays):
                    if b.shape[0]:
                        a[:n] = b[:n]
            self._arrays = new
        return (*self._arrays, self.n_requests)

    def add(self, buf, first_line: int) -> None:
        """Parse and check one block; raise :class:`TraceError` for its first bad line."""
        p = _parse(buf, first_line, self.name, self.fmt, room=self._room)
        errs, li = p.errors, p.line
        if p.arrival is not None and li.size:
            arr = p.arrival
            errs.add(li, arr > MAX_ARRIVAL_CYCLE,
                     lambda k: f"arrival cycle {int(arr[k])} is beyond the largest the model "
                               f"takes, 2**48 = {MAX_ARRIVAL_CYCLE}")
            prev = np.empty_like(arr)
            prev[1:] = arr[:-1]
            prev[0] = arr[0] if self.prev_arrival is None else self.prev_arrival
            errs.add(li, arr < prev,
                     lambda k: f"arrival cycle {int(arr[k])} is before the previous request's "
                               f"{int(prev[k])} (cycles must not decrease)")
        if self.unaligned == "error" and li.size:
            errs.add(li, (p.addr & np.uint64(LINE_BYTES - 1)) != 0,
                     lambda k: f"address 0x{int(p.addr[k]):x} is not a multiple of {LINE_BYTES}")
        stop = errs.line
        if stop is None:            # in place; an error's message still shows the address
            addr = np.bitwise_and(p.addr, ~np.uint64(LINE_BYTES - 1), out=p.addr)
        else:
            addr = p.addr & ~np.uint64(LINE_BYTES - 1)
        if self.capacity_bytes is not None and li.size:
            valid = li.size if stop is None else int(np.searchsorted(li, stop - first_line))
            over = np.flatnonzero(addr[:valid] >= np.uint64(self.capacity_bytes))
            if over.size and self.over is None:
                self.over = (first_line + int(li[over[0]]), int(addr[over[0]]))
            self.n_over += int(over.size)
            if stop is not None:
                self.n_requests += valid
        if stop is not None:
            raise errs.error()
        if self._arrays is None or p.addr.base is not self._arrays[0]:
            # parsed into arrays of its own (the vectorised parser): copy them in
            a, k, t, ln, at = self._room(li.size)
            a[at:at + li.size], k[at:at + li.size], ln[at:at + li.size] = addr, p.is_write, li
            if p.arrival is not None:
                t[at:at + li.size] = p.arrival
            li = ln[at:at + li.size]
        li += first_line                # in place: the file's line numbers
        if p.arrival is not None and li.size:
            self.prev_arrival = int(p.arrival[-1])
        self.n_requests += int(li.size)

    def capacity_error(self, stopped_at: int | None | bool = False) -> TraceError | None:
        """The error for the first address beyond the capacity, if there was one."""
        if self.over is None:
            return None
        line, addr = self.over
        return TraceError(_capacity_message(f"{self.name}, line {line}: ", addr,
                                            self.capacity_bytes, self.n_over, self.n_requests,
                                            stopped_at), line)

    def trace(self, n_bytes: int, sha256: str) -> MemTrace:
        if self.n_requests == 0:
            raise _no_requests(self.name)
        error = self.capacity_error()
        if error is not None:
            raise error
        timed = _TIMED[self.fmt]
        n = self.n_requests
        addr, kind, arrival, line = self._arrays
        return MemTrace(
            addr=addr[:n],
            is_write=kind[:n],
            arrival=arrival[:n] if timed else None,
            line=line[:n],
            source=self.name,
            format=self.fmt,
            source_bytes=n_bytes,
            source_sha256=sha256,
        )


def read_trace(
    source: str | os.PathLike | BinaryIO,
    format: str = "auto",
    *,
    config: Any = None,
    capacity_bytes: int | None = None,
    wrap: bool = False,
    unaligned: str = "align",
    block_bytes: int = _BLOCK_BYTES,
) -> MemTrace:
    """Read a memory trace, in one pass over its bytes.

    Parameters
    ----------
    source : path-like, ``"-"``, or binary file object
        A trace file, optionally gzip-compressed (detected from the first bytes, whatever the
        name). Anything that can be read once from start to end works: a named pipe, a shell's
        ``<(gzip -c t.trace)`` (``/dev/fd/N``), ``"-"`` for standard input, an open binary
        stream (read from its current position and left open). Messages name the source as
        given, ``<stdin>`` for standard input. (A file named ``-`` is ``./-``.)
    format : {"auto", "dramsim3", "ramulator", "dramsys"}
        ``"auto"`` detects it from the first request line.
    config : dram.DRAMConfig, optional
        Memory system whose capacity bounds the addresses (``config.capacity_bytes``).
    capacity_bytes : int, optional
        The bound given directly (overrides ``config``). Neither given: no bound.
    wrap : bool
        Take addresses modulo the capacity instead of rejecting those beyond it.
    unaligned : {"align", "error"}
        ``"align"``: an address that is not a multiple of 64 is aligned down to its 64-B line;
        ``"error"``: such a line is rejected.
    block_bytes : int
        Bytes of text parsed per vectorised step (bounds the parser's temporary memory, about
        40x this). Neither the result nor the error reported depends on it.

    Returns
    -------
    MemTrace
        ``arrival`` is set for the timed formats (dramsim3, dramsys), ``None`` for ramulator;
        ``line`` holds each request's 1-based line number in the original (uncompressed) file;
        ``source_bytes`` and ``source_sha256`` describe the bytes read, as stored.

    Raises
    ------
    FileNotFoundError
        The path does not exist.
    TraceError
        (a ``ValueError``) Unknown format; a malformed line (the message names the source, the
        line number, the text and the expected form); decreasing arrival cycles; an unaligned
        address with ``unaligned="error"``; an address beyond the capacity without ``wrap``;
        no requests; a damaged compressed file. When a trace has several problems, the one on
        its first bad line is reported.
    """
    if format not in ("auto", *FORMATS):
        raise TraceError(f"unknown trace format {format!r}; valid: auto, {', '.join(FORMATS)}")
    if unaligned not in ("align", "error"):
        raise TraceError(f"unaligned must be 'align' or 'error', got {unaligned!r}")
    if (isinstance(block_bytes, bool) or not isinstance(block_bytes, (int, np.integer))
            or block_bytes < 1):
        raise TraceError(f"block_bytes must be a positive integer, got {block_bytes!r}")
    if capacity_bytes is None and config is not None:
        capacity_bytes = config_capacity_bytes(config)
    if capacity_bytes is not None:
        capacity_bytes = int(capacity_bytes)
        if capacity_bytes <= 0 or capacity_bytes % LINE_BYTES:
            raise TraceError(f"capacity_bytes must be a positive multiple of {LINE_BYTES}, "
                             f"got {capacity_bytes}")
    inp = _Input(source)
    try:
        blocks = _blocks(inp, int(block_bytes))
        fmt, kept = _detect(blocks, inp.name) if format == "auto" else (format, [])
        reader = _Reader(inp.name, fmt, unaligned, None if wrap else capacity_bytes)
        size = inp.file_size()
        if size is not None and not inp.compressed:
            reader.size_hint(size)
        try:
            for buf, first_line in itertools.chain(kept, blocks):
                reader.add(buf, first_line)
        except TraceError as exc:
            earlier = reader.capacity_error(stopped_at=exc.line)
            if earlier is not None:
                raise earlier from None
            raise
        n_bytes, sha256 = inp.finish()
    finally:
        inp.close()
    trace = reader.trace(n_bytes, sha256)
    if wrap and capacity_bytes is not None:
        trace = check_capacity(trace, capacity_bytes, wrap=True)
    return trace


# ----------------------------------------------------------------------------------------------
# Writing
# ----------------------------------------------------------------------------------------------

_WRITE_ROWS = 1 << 20  # rows formatted per step


def _lines_dramsim3(addr, is_write, arrival) -> str:
    kinds = np.where(is_write.astype(bool), "WRITE", "READ").tolist()
    return "".join(f"0x{a:x} {k} {t}\n" for a, k, t in zip(addr.tolist(), kinds, arrival.tolist()))


def _lines_ramulator(addr, is_write, arrival) -> str:
    kinds = np.where(is_write.astype(bool), "ST", "LD").tolist()
    return "".join(f"{k} 0x{a:x}\n" for a, k in zip(addr.tolist(), kinds))


def _lines_dramsys(addr, is_write, arrival) -> str:
    kinds = np.where(is_write.astype(bool), "write", "read").tolist()
    return "".join(f"{t}:\t{k}\t0x{a:x}\n" for a, k, t in zip(addr.tolist(), kinds, arrival.tolist()))


_WRITERS = {"dramsim3": _lines_dramsim3, "ramulator": _lines_ramulator, "dramsys": _lines_dramsys}


def write_trace(
    trace: MemTrace,
    path: str | os.PathLike,
    format: str = "dramsim3",
    *,
    overwrite: bool = False,
    compress: bool | None = None,
    drop_timing: bool = False,
) -> Path:
    """Write ``trace`` as a text trace file, atomically (temporary name, then rename).

    Parameters
    ----------
    trace : MemTrace
    path : path-like
        Destination. An existing file is an error unless ``overwrite=True``.
    format : {"dramsim3", "ramulator", "dramsys"}
    compress : bool, optional
        gzip the file; default: when ``path`` ends with ``.gz``. The gzip header carries no
        time stamp or name, so equal traces give equal bytes.
    drop_timing : bool
        Writing a timed trace in the untimed ``ramulator`` format loses the arrival cycles;
        that is an error unless this is True.

    Notes
    -----
    An untimed trace written in a timed format gets arrival cycle 0 on every line, which
    replays identically (all requests available at cycle 0, offered in file order).
    ``rank_local`` cannot be represented in any of these formats: a trace with rank-local
    requests is refused.
    """
    if format not in FORMATS:
        raise ValueError(f"unknown trace format {format!r}; valid: {', '.join(FORMATS)}")
    if not isinstance(trace, MemTrace):
        raise TypeError(f"write_trace expects a MemTrace, got {type(trace).__name__}")
    if trace.rank_local is not None and trace.rank_local.any():
        raise ValueError(f"{format} trace files cannot mark rank-local requests; "
                         f"this trace has {int(np.count_nonzero(trace.rank_local))}")
    if trace.timed and not _TIMED[format] and not drop_timing:
        raise ValueError(f"the {format} format is untimed: writing this timed trace would drop its "
                         f"arrival cycles (pass drop_timing=True to do so)")
    path = Path(path)
    if compress is None:
        compress = path.suffix == ".gz"
    arrival = trace.arrival if trace.arrival is not None else np.zeros(len(trace), np.int64)
    emit = _WRITERS[format]

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as raw:
            out = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6) if compress else raw
            try:
                for s in range(0, len(trace), _WRITE_ROWS):
                    e = s + _WRITE_ROWS
                    out.write(emit(trace.addr[s:e], trace.is_write[s:e], arrival[s:e]).encode())
            finally:
                if compress:
                    out.close()

    return atomic_write(path, write, overwrite=overwrite)


def atomic_write(path: Path, write: Callable[[Path], None], *, overwrite: bool = False) -> Path:
    """Create ``path`` by ``write(tmp)`` into a temporary file of the same folder, then rename.

    Without ``overwrite`` an existing ``path`` is never replaced (a file created meanwhile is
    kept too): :func:`cosmos_common.outdir.atomic_write`, the one implementation of every
    package, except that the folder must exist (a trace or result is not written into a
    folder created by mistake).
    """
    from cosmos_common.outdir import atomic_write as _atomic_write

    path = Path(path)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} exists; refusing to overwrite it")
    if not path.parent.is_dir():
        raise FileNotFoundError(f"{path.parent}: no such folder")
    return _atomic_write(path, write, overwrite=overwrite)
