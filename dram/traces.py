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

Parsing is vectorised numpy over blocks of the file (no Python work per line), so a
100,000-line trace parses in tens of milliseconds; errors still name the file, the 1-based line
number, the offending text and what was expected.
"""

from __future__ import annotations

import dataclasses
import gzip
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

__all__ = [
    "FORMATS",
    "LINE_BYTES",
    "MemTrace",
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
        Path of the file the trace was read from.
    format : str or None
        Format of that file (one of :data:`FORMATS`).
    """

    addr: np.ndarray
    is_write: np.ndarray
    arrival: np.ndarray | None = None
    rank_local: np.ndarray | None = None
    line: np.ndarray | None = None
    source: str | None = None
    format: str | None = None

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
        ``False``: an address at or beyond the capacity raises ``ValueError`` naming its line.
        ``True``: addresses are taken modulo the capacity (``addr % capacity_bytes``).

    Returns
    -------
    MemTrace
        ``trace`` itself when nothing changed, else a copy with the wrapped addresses.
    """
    capacity_bytes = int(capacity_bytes)
    if capacity_bytes <= 0 or capacity_bytes % LINE_BYTES:
        raise ValueError(f"capacity_bytes must be a positive multiple of {LINE_BYTES}, got {capacity_bytes}")
    if len(trace) == 0:
        return trace
    cap = np.uint64(capacity_bytes)
    over = trace.addr >= cap
    if not over.any():
        return trace
    if wrap:
        return trace.replace(addr=trace.addr % cap)
    i = int(np.flatnonzero(over)[0])
    n_over = int(np.count_nonzero(over))
    raise ValueError(
        f"{trace._where(i)}address 0x{int(trace.addr[i]):x} is beyond the memory's capacity of "
        f"{_fmt_bytes(capacity_bytes)} (0x{capacity_bytes:x}); {n_over} of {len(trace)} requests "
        f"are; use a larger configuration, or wrap=True (--wrap) to take addresses modulo the capacity"
    )


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
_UTF8_BOM = b"\xef\xbb\xbf"
#: Longest accepted line; a longer one means the file is not a text trace.
MAX_LINE_BYTES = 1 << 20


def _open_binary(path: Path):
    """Open ``path`` for reading bytes, decompressing gzip (detected by magic bytes)."""
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such trace file")
    if path.is_dir():
        raise ValueError(f"{path}: is a directory, expected a trace file")
    with open(path, "rb") as f:
        magic = f.read(8)
    if magic[:2] == _GZIP_MAGIC:
        return gzip.open(path, "rb")
    for sig, kind in _OTHER_MAGIC.items():
        if magic.startswith(sig):
            raise ValueError(f"{path}: is a {kind} file; expected a text trace, plain or gzip")
    return open(path, "rb")


def _blocks(path: Path, block_bytes: int) -> Iterator[bytes]:
    """Yield the file's text in blocks that end with a newline (the last one gets one added).

    A UTF-8 byte-order mark at the start becomes spaces. A line longer than
    :data:`MAX_LINE_BYTES` is an error (the file is not a text trace).
    """
    with _open_binary(path) as f:
        parts: list[bytes] = []  # pieces of an unfinished line
        pending = 0
        lines_done = 0
        head = None
        while True:
            try:
                if head is None:
                    head = f.read(len(_UTF8_BOM))
                    chunk = (b"   " if head == _UTF8_BOM else head) + f.read(block_bytes)
                else:
                    chunk = f.read(block_bytes)
            except (OSError, EOFError) as exc:  # corrupt or truncated gzip stream
                raise ValueError(f"{path}: cannot read the compressed file: {exc}") from None
            if not chunk:
                break
            cut = chunk.rfind(b"\n")
            if cut < 0:
                parts.append(chunk)
                pending += len(chunk)
                if pending > MAX_LINE_BYTES:
                    raise ValueError(f"{path}, line {lines_done + 1}: longer than "
                                     f"{MAX_LINE_BYTES} bytes; not a text trace file?")
                continue
            parts.append(chunk[: cut + 1])
            buf = b"".join(parts)
            parts = [chunk[cut + 1:]]
            pending = len(parts[0])
            lines_done += buf.count(b"\n")
            yield buf
        rest = b"".join(parts)
        if rest:
            yield rest + b"\n"


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


class _Block:
    """One block of text, tokenised; helpers that turn token columns into values or errors."""

    def __init__(self, buf: bytes, first_line: int, path: Path, fmt: str):
        self.path, self.fmt, self.first_line = path, fmt, first_line
        data = np.frombuffer(buf, np.uint8)
        nl = np.flatnonzero(data == 10)
        self.nl = nl
        self.n_lines = nl.shape[0]
        self.line_start = np.empty(self.n_lines, np.int64)
        self.line_start[0] = 0
        self.line_start[1:] = nl[:-1] + 1
        self.raw = buf
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
    def text(self, li: int) -> str:
        s, e = int(self.line_start[li]), int(self.nl[li])
        return self.raw[s:e].decode("utf-8", "replace").rstrip("\r")

    def token_text(self, t: int) -> str:
        return self.raw[int(self.tok_start[t]): int(self.tok_end[t])].decode("utf-8", "replace")

    def error(self, li: int, reason: str) -> ValueError:
        text = self.text(li)
        if len(text) > 200:
            text = text[:200] + "..."
        return ValueError(
            f"{self.path}, line {self.first_line + li}: {reason} in {text!r}; "
            f"expected {self.fmt} lines {FORMATS[self.fmt]}"
        )

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
    """Collects error candidates of one block; raises the one on the earliest line."""

    def __init__(self, block: _Block):
        self.block, self.best = block, None

    def add(self, lines: np.ndarray, mask: np.ndarray, reason: Callable[[int], str]) -> None:
        """``mask[k]`` marks an error on block line ``lines[k]``; ``reason(k)`` describes it."""
        if mask.any():
            k = int(np.flatnonzero(mask)[0])
            li = int(lines[k])
            if self.best is None or li < self.best[0]:
                self.best = (li, reason, k)

    def raise_first(self) -> None:
        if self.best is not None:
            li, reason, k = self.best
            raise self.block.error(li, reason(k))


_RW = {"READ": 0, "WRITE": 1}
_LDST = {"LD": 0, "ST": 1}
_FIELDS = {"dramsim3": (3,), "ramulator": (2,), "dramsys": (3, 4)}


def _parse_block(b: _Block) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
    """Parse one tokenised block. Returns (addr, is_write, arrival or None, block line index)."""
    fmt = b.fmt
    allowed = _FIELDS[fmt]
    data_lines = np.flatnonzero(b.ntok > 0)
    nt = b.ntok[data_lines]
    count_ok = np.isin(nt, allowed)
    errs = _Errors(b)
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
    errs.raise_first()
    return addr, kind.astype(np.uint8), arrival, lines


def detect_format(path: str | os.PathLike) -> str:
    """Detect a trace file's format from its first request line (comments and blanks skipped).

    Raises ``ValueError`` naming the file and line when the line fits no format, or when the
    file has no request line.
    """
    path = Path(path)
    line_no = 0
    for buf in _blocks(path, 1 << 16):
        for raw in buf.split(b"\n")[:-1]:
            line_no += 1
            text = raw.split(b"#", 1)[0].decode("utf-8", "replace")
            tokens = text.split()
            if not tokens:
                continue
            fmt = _classify(tokens)
            if fmt is None:
                shown = raw[:200].decode("utf-8", "replace").rstrip("\r")
                raise ValueError(
                    f"{path}, line {line_no}: cannot tell the trace format from {shown!r}; expected "
                    + "; or ".join(f"{k} {v}" for k, v in FORMATS.items())
                    + " (or pass the format explicitly)"
                )
            return fmt
    raise ValueError(f"{path}: no request lines (the file is empty or holds only comments)")


def _classify(tokens: list[str]) -> str | None:
    up = [t.upper() for t in tokens]
    if up[0] in _LDST:
        return "ramulator"
    if up[0].endswith(":"):
        return "dramsys"
    if len(up) >= 2 and up[1] in _RW:
        return "dramsim3"
    return None


def read_trace(
    path: str | os.PathLike,
    format: str = "auto",
    *,
    config: Any = None,
    capacity_bytes: int | None = None,
    wrap: bool = False,
    unaligned: str = "align",
    block_bytes: int = _BLOCK_BYTES,
) -> MemTrace:
    """Read a memory trace file.

    Parameters
    ----------
    path : path-like
        Text trace, optionally gzip-compressed (detected from the first bytes).
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
        Bytes of text parsed per vectorised step (memory bound; results do not depend on it).

    Returns
    -------
    MemTrace
        ``arrival`` is set for the timed formats (dramsim3, dramsys), ``None`` for ramulator;
        ``line`` holds each request's 1-based line number.

    Raises
    ------
    FileNotFoundError
        The file does not exist.
    ValueError
        Unknown format; a malformed line (the message names the file, the line number, the
        text and the expected form); decreasing arrival cycles; an unaligned address with
        ``unaligned="error"``; an address beyond the capacity without ``wrap``; no requests.
    """
    path = Path(path)
    if format not in ("auto", *FORMATS):
        raise ValueError(f"unknown trace format {format!r}; valid: auto, {', '.join(FORMATS)}")
    if unaligned not in ("align", "error"):
        raise ValueError(f"unaligned must be 'align' or 'error', got {unaligned!r}")
    fmt = detect_format(path) if format == "auto" else format
    addrs, kinds, arrivals, lines = [], [], [], []
    line0 = 1
    prev_arrival = None
    for buf in _blocks(path, block_bytes):
        b = _Block(buf, line0, path, fmt)
        addr, kind, arrival, li = _parse_block(b)
        if unaligned == "error" and addr.size:
            bad = (addr & np.uint64(LINE_BYTES - 1)) != 0
            if bad.any():
                k = int(np.flatnonzero(bad)[0])
                raise b.error(int(li[k]), f"address 0x{int(addr[k]):x} is not a multiple of {LINE_BYTES}")
        if arrival is not None and arrival.size:
            dec = np.flatnonzero(arrival[1:] < arrival[:-1]) + 1
            if prev_arrival is not None and arrival[0] < prev_arrival:
                dec = np.r_[0, dec]
            if dec.size:
                k = int(dec[0])
                before = prev_arrival if k == 0 else int(arrival[k - 1])
                raise b.error(int(li[k]), f"arrival cycle {int(arrival[k])} is before the previous "
                                          f"request's {before} (cycles must not decrease)")
            prev_arrival = int(arrival[-1])
            arrivals.append(arrival)
        addrs.append(addr)
        kinds.append(kind)
        lines.append(li + line0)
        line0 += b.n_lines
    n = sum(a.size for a in addrs)
    if n == 0:
        raise ValueError(f"{path}: no request lines (the file is empty or holds only comments)")
    addr = np.concatenate(addrs) & ~np.uint64(LINE_BYTES - 1)
    trace = MemTrace(
        addr=addr,
        is_write=np.concatenate(kinds),
        arrival=np.concatenate(arrivals) if _TIMED[fmt] else None,
        line=np.concatenate(lines),
        source=str(path),
        format=fmt,
    )
    if capacity_bytes is None and config is not None:
        capacity_bytes = config_capacity_bytes(config)
    if capacity_bytes is not None:
        trace = check_capacity(trace, capacity_bytes, wrap=wrap)
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

    Without ``overwrite`` an existing ``path`` is never replaced: the rename is a hard link that
    fails when the name exists (checked again at that moment, so a file created meanwhile is
    kept too). The temporary file is removed on any failure.
    """
    path = Path(path)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} exists; refusing to overwrite it")
    if not path.parent.is_dir():
        raise FileNotFoundError(f"{path.parent}: no such folder")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp_path, 0o666 & ~umask)  # mkstemp makes 0600; results are ordinary files
        write(tmp_path)
        if overwrite:
            os.replace(tmp_path, path)
        else:
            try:
                os.link(tmp_path, path)
            except FileExistsError:
                raise FileExistsError(f"{path} exists; refusing to overwrite it") from None
            except OSError:  # file system without hard links
                if path.exists():
                    raise FileExistsError(f"{path} exists; refusing to overwrite it") from None
                os.replace(tmp_path, path)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()
    return path
