"""Compiled text kernels: the trace parser's fast path (one pass over a block's bytes), and
the CSV formatter of integer columns used for ``requests.csv`` (:func:`csv_rows`).

:func:`scan_block` reads a block of whole lines of trace text (see :mod:`dram.traces` for the
three formats) byte by byte in a numba kernel and returns the requests as arrays. It accepts
exactly the lines the vectorised parser :func:`dram.traces._parse_block` accepts and returns
the same values for them; at the first line it cannot accept it stops and reports that line.
It builds no messages: the reader then hands that block to the vectorised parser, which names
the same line with the full message (file, line number, reason, text, expected form). So the
messages are those of the vectorised parser by construction, and a valid trace costs one pass
over its bytes (tests/test_trace_streams.py checks the two parsers agree on fuzzed text).

What a line must be (the vectorised parser's rules, restated for the scanner):

* ``#`` starts a comment to the end of the line; whitespace is space, ``\\t``, ``\\n``, ``\\v``,
  ``\\f``, ``\\r`` (what ``bytes.split()`` splits on); a line with no field is skipped; a line
  (without its newline) longer than ``max_line_bytes`` is an error even if it is a comment.
* Field counts: dramsim3 3, ramulator 2, dramsys 3 or 4 (the 4th, data, is not read).
* Hex address: optional ``0x``/``0X``, then 1 to 16 hex digits (leading zeros count).
  Decimal cycle: 1 to 19 digits, value at most 2**63 - 1. Ramulator address: ``0x`` + 1-16 hex
  digits, or 1-19 decimal digits. Keywords (READ/WRITE, LD/ST) are ASCII case-insensitive.
  A dramsys time stamp ends with ``:`` (the cycle is the digits before it).

The kernel is compiled once and kept in numba's on-disk cache (``cache=True``); it is a small
function, so a cold compile costs about a second and a warm start loads it in milliseconds.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from cosmos_common.numba_cache import install as _check_numba_cache

_check_numba_cache()    # cached kernels are checked before use (cosmos_common.numba_cache)

from dram.parallel import available_cpus, run_in_threads

__all__ = ["FORMAT_CODES", "scan_block", "csv_rows"]

#: Format name -> the integer the kernel takes.
FORMAT_CODES = {"dramsim3": 0, "ramulator": 1, "dramsys": 2}

_INT63_MAX = (1 << 63) - 1


#: Value of each byte as a hex digit, -1 if it is none (a global array: numba compiles it in as a
#: constant table).
_HEX_VALUE = np.full(256, -1, np.int8)
_HEX_VALUE[48:58] = np.arange(10)        # 0-9
_HEX_VALUE[65:71] = np.arange(10, 16)    # A-F
_HEX_VALUE[97:103] = np.arange(10, 16)   # a-f


@njit(cache=True, nogil=True)
def _hex_digit(c):
    return _HEX_VALUE[c]


@njit(cache=True, nogil=True)
def _parse_hex(data, s, e):
    """Value of hex digits data[s:e] (optional 0x prefix); ok False on any deviation."""
    if e - s >= 2 and data[s] == 48 and (data[s + 1] | 32) == 120:
        s += 2
    n = e - s
    if n <= 0 or n > 16:
        return np.uint64(0), False
    v = np.uint64(0)
    for i in range(s, e):
        d = _hex_digit(data[i])
        if d < 0:
            return np.uint64(0), False
        v = (v << np.uint64(4)) | np.uint64(d)
    return v, True


@njit(cache=True, nogil=True)
def _parse_dec(data, s, e):
    """Value of decimal digits data[s:e] (at most 19); ok False on any deviation."""
    n = e - s
    if n <= 0 or n > 19:
        return np.uint64(0), False
    v = np.uint64(0)
    for i in range(s, e):
        d = data[i] - 48
        if d < 0 or d > 9:
            return np.uint64(0), False
        v = v * np.uint64(10) + np.uint64(d)
    return v, True


@njit(cache=True, nogil=True)
def _is_word(data, s, e, w):
    """True if data[s:e] is the upper-case ASCII word ``w`` in any case (``w`` holds letters
    only: a byte ``c`` with ``c & 0xDF == w[i]`` is that letter, upper or lower case)."""
    if e - s != w.shape[0]:
        return False
    for i in range(w.shape[0]):
        if (data[s + i] & 0xDF) != w[i]:
            return False
    return True


@njit(cache=True, nogil=True)
def _keyword(data, s, e, w0, w1):
    """0 if data[s:e] is the upper-case ASCII word w0, 1 if w1 (case-insensitive), else -1."""
    if _is_word(data, s, e, w0):
        return 0
    if _is_word(data, s, e, w1):
        return 1
    return -1


@njit(cache=True, nogil=True)
def _scan(data, fmt, max_line_bytes, addr, kind, arrival, line, rw, ldst):
    """Scan ``data`` (whole lines, each ending with a newline) into the output arrays.

    Returns (requests written, index in the block of the first line not accepted or -1,
    lines read).
    """
    n = data.shape[0]
    starts = np.empty(5, np.int64)
    ends = np.empty(5, np.int64)
    cycle_max = np.uint64(_INT63_MAX)
    pos = 0
    li = 0
    nreq = 0
    while pos < n:
        # one line: tokens up to the newline, '#' ends the fields
        line_start = pos
        ntok = 0
        comment = False
        while True:
            c = data[pos]
            if c == 10:
                break
            if comment or c == 32 or (9 <= c <= 13):
                pos += 1
                continue
            if c == 35:
                comment = True
                pos += 1
                continue
            s = pos
            while True:
                c = data[pos]
                if c == 35 or c == 32 or (9 <= c <= 13):
                    break
                pos += 1
            if ntok < 5:
                starts[ntok] = s
                ends[ntok] = pos
            ntok += 1
        if pos - line_start > max_line_bytes:
            return nreq, li, li
        pos += 1  # past the newline
        if ntok == 0:
            li += 1
            continue
        if fmt == 0:  # dramsim3: 0x<addr> READ|WRITE <cycle>
            if ntok != 3:
                return nreq, li, li
            a, ok = _parse_hex(data, starts[0], ends[0])
            if not ok:
                return nreq, li, li
            k = _keyword(data, starts[1], ends[1], rw[0], rw[1])
            if k < 0:
                return nreq, li, li
            t, ok = _parse_dec(data, starts[2], ends[2])
            if not ok or t > cycle_max:
                return nreq, li, li
            arrival[nreq] = np.int64(t)
        elif fmt == 1:  # ramulator: LD|ST <addr>
            if ntok != 2:
                return nreq, li, li
            k = _keyword(data, starts[0], ends[0], ldst[0], ldst[1])
            if k < 0:
                return nreq, li, li
            s = starts[1]
            e = ends[1]
            if e - s >= 2 and data[s] == 48 and (data[s + 1] | 32) == 120:
                a, ok = _parse_hex(data, s, e)
            else:
                a, ok = _parse_dec(data, s, e)
            if not ok:
                return nreq, li, li
        else:  # dramsys: <cycle>: read|write 0x<addr> [data]
            if ntok != 3 and ntok != 4:
                return nreq, li, li
            if data[ends[0] - 1] != 58:  # ':'
                return nreq, li, li
            t, ok = _parse_dec(data, starts[0], ends[0] - 1)
            if not ok or t > cycle_max:
                return nreq, li, li
            k = _keyword(data, starts[1], ends[1], rw[0], rw[1])
            if k < 0:
                return nreq, li, li
            a, ok = _parse_hex(data, starts[2], ends[2])
            if not ok:
                return nreq, li, li
            arrival[nreq] = np.int64(t)
        addr[nreq] = a
        kind[nreq] = np.uint8(k)
        line[nreq] = li
        nreq += 1
        li += 1
    return nreq, -1, li


def _word(text: str) -> np.ndarray:
    """A keyword for :func:`_keyword`: upper-case ASCII letters only (its case folding relies
    on it)."""
    if not (text.isascii() and text.isalpha() and text.isupper()):
        raise ValueError(f"a keyword is upper-case ASCII letters, got {text!r}")
    return np.frombuffer(text.encode("ascii"), np.uint8).copy()


_RW = (_word("READ"), _word("WRITE"))
_LDST = (_word("LD"), _word("ST"))


#: Blocks are cut into pieces of at least this many bytes for the threads of :func:`scan_block`.
_MIN_PIECE_BYTES = 1 << 20


@njit(cache=True, nogil=True)
def _count_lines(data):
    n = 0
    for i in range(data.shape[0]):
        if data[i] == 10:
            n += 1
    return n


def scan_block(buf, fmt: str, max_line_bytes: int, threads: int | None = None,
               min_piece_bytes: int = _MIN_PIECE_BYTES, room=None):
    """Parse one block of whole lines (each ending with ``\\n``) in one compiled pass.

    Parameters
    ----------
    buf : bytes-like
        The block's text.
    fmt : {"dramsim3", "ramulator", "dramsys"}
    max_line_bytes : int
        Longest accepted line, without its newline.
    threads : int, optional
        Cut the block at line ends into this many pieces (default: the CPUs this process may
        use), each of at least ``min_piece_bytes``, and scan them in parallel threads (the
        scanner releases the GIL); the result is the same for any cut.
    room : callable, optional
        ``room(lines)`` returns ``(addr, is_write, arrival, line, at)``: arrays with room for
        ``lines`` requests from index ``at`` on, into which the requests are written (the
        caller's growing arrays: no copy per block). Default: new arrays.

    Returns
    -------
    addr : ndarray (n,) uint64
        Addresses as written (not aligned).
    is_write : ndarray (n,) uint8
    arrival : ndarray (n,) int64, or None for the untimed ramulator format
    line : ndarray (n,) int64
        Index in the block (0-based) of each request's line.
    bad_line : int or None
        Index in the block of the first line that is not a valid request line (the arrays hold
        the requests before it); ``None`` when every line was accepted.

    The arrays are views of ``room``'s at ``[at, at + n)`` when it is given.
    """
    data = np.frombuffer(buf, np.uint8)
    code, timed = FORMAT_CODES[fmt], fmt != "ramulator"
    max_line_bytes = int(max_line_bytes)
    size = data.shape[0]
    pieces = max(1, min(available_cpus() if threads is None else int(threads),
                        size // max(1, int(min_piece_bytes))))
    cuts = [0]
    for k in range(1, pieces):
        start = max(cuts[-1], k * size // pieces)
        step = 1 << 16
        while start < size:         # the next line end at or after start
            hit = np.flatnonzero(data[start:start + step] == 10)
            if hit.size:
                start += int(hit[0]) + 1
                break
            start += step
            step *= 2
        if 0 < start < size:
            cuts.append(start)
    cuts.append(size)
    P = len(cuts) - 1
    lines = [0] * P

    def count(k: int) -> None:
        lines[k] = _count_lines(data[cuts[k]:cuts[k + 1]])

    run_in_threads(count, P)
    total = sum(lines)
    if room is None:
        out = (np.empty(total, np.uint64), np.empty(total, np.uint8),
               np.empty(total if timed else 0, np.int64), np.empty(total, np.int64), 0)
    else:
        out = room(total)
    addr, kind, arrival, line, at = out
    first = [0] * P             # each piece's first line, in the block
    for k in range(1, P):
        first[k] = first[k - 1] + lines[k - 1]
    got = [(0, -1)] * P

    def scan(k: int) -> None:
        o = at + first[k]
        e = o + lines[k]
        n, bad, _ = _scan(data[cuts[k]:cuts[k + 1]], code, max_line_bytes, addr[o:e],
                          kind[o:e], arrival[o:e] if timed else arrival, line[o:e], _RW, _LDST)
        if first[k]:
            line[o:o + n] += first[k]
        got[k] = (n, bad)

    run_in_threads(scan, P)
    # close the gaps left by lines that hold no request (comments, blanks), up to the first
    # piece with a bad line
    n, bad = 0, None
    for k in range(P):
        m, bad_k = got[k]
        src, dst = at + first[k], at + n
        if src != dst and m:
            for a in ((addr, kind, line, arrival) if timed else (addr, kind, line)):
                a[dst:dst + m] = a[src:src + m].copy()
        n += m
        if bad_k >= 0:
            bad = first[k] + int(bad_k)
            break
    end = at + n
    return (addr[at:end], kind[at:end], arrival[at:end] if timed else None, line[at:end],
            bad)


# ----------------------------------------------------------------------------------------------
# Writing: integer columns as CSV text
# ----------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _put_uint(out, pos, v):
    """Write the decimal digits of uint64 ``v`` at out[pos:]; return the position after them."""
    if v == 0:
        out[pos] = 48
        return pos + 1
    n = 0
    t = v
    while t > 0:
        t //= np.uint64(10)
        n += 1
    end = pos + n
    i = end - 1
    while v > 0:
        out[i] = np.uint8(np.uint64(48) + v % np.uint64(10))
        v //= np.uint64(10)
        i -= 1
    return end


@njit(cache=True, nogil=True)
def _format_rows(unsigned, signed, out):
    """Format row i as ``unsigned[i, :]`` then ``signed[i, :]``, comma-separated, one line per
    row, into ``out`` (large enough); return the bytes written."""
    n = unsigned.shape[0]
    nu = unsigned.shape[1]
    ns = signed.shape[1]
    pos = 0
    for i in range(n):
        for j in range(nu):
            if j:
                out[pos] = 44
                pos += 1
            pos = _put_uint(out, pos, unsigned[i, j])
        for j in range(ns):
            if nu or j:
                out[pos] = 44
                pos += 1
            v = signed[i, j]
            if v < 0:
                out[pos] = 45
                pos += 1
                pos = _put_uint(out, pos, np.uint64(-(v + 1)) + np.uint64(1))
            else:
                pos = _put_uint(out, pos, np.uint64(v))
        out[pos] = 10
        pos += 1
    return pos


def csv_rows(unsigned: np.ndarray, signed: np.ndarray) -> bytes:
    """CSV text of integer rows: the columns of ``unsigned`` (uint64, shape (n, a)) then those
    of ``signed`` (int64, shape (n, b)), in decimal, ``,`` between fields, ``\\n`` after each
    row: the bytes pandas' ``to_csv`` writes for integer columns."""
    unsigned = np.ascontiguousarray(unsigned, np.uint64)
    signed = np.ascontiguousarray(signed, np.int64)
    # 20 digits per uint64 field, 20 + sign per int64 field, one separator or newline each
    width = 21 * unsigned.shape[1] + 21 * signed.shape[1] + 1
    out = np.empty(unsigned.shape[0] * width, np.uint8)
    n = _format_rows(unsigned, signed, out)
    return out[:n].tobytes()
