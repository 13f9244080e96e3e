"""Seeded synthetic memory traces: the reference patterns of the Ramulator 2.1 validation set.

Every generator returns a :class:`Trace` (``addr`` int64 byte addresses of 64-B lines,
``is_write`` uint8, ``arrival`` int64 DRAM cycles, non-decreasing). Same arguments -> same
trace, bit for bit (numpy ``default_rng(seed)``; the order of the random draws is part of
the definition below, so the set A traces are reproduced exactly).

Arrivals are Poisson: offered load ``f`` means ``f x 19.2 GB/s x channels``; the mean gap per
64-B line is ``mu = 64 / (f x 19.2e9 x C) / tCK`` cycles (tCK = 416 ps), event gaps are
exponential with mean ``mu x L`` (L = lines per event: 1, or 4 for ``anns``), the event time is
the float64 running sum and the arrival cycle its floor.

Patterns (``loaded``): ``random_read`` (uniform lines over 64 GiB, all reads), ``random_rw``
(same, each a write with probability 0.3), ``stream_read`` (line i at 64 i), ``anns`` (groups of
9 events: 8 vector bursts of 2 or 6 lines with probability 1/2 each at a random 128-B-aligned
address, then 1 adjacency burst of 4 lines at a random 256-B-aligned address; all lines of a
burst arrive together; cut at N lines). ``unloaded``: 2,000 probes 1,000 cycles apart to one
bank (``hit``: same row as a warm-up read at cycle 0; ``conflict``: alternating two rows after
a warm-up to the second; ``miss``: probe k to bank perm[k mod NB], random rows).
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np

TCK_S = 416e-12                 # DDR5-4800 clock period of the reference runs
PEAK_PER_CHANNEL_Bps = 19.2e9   # offered-load definition of the reference (per channel)
LINE = 64
SPACE_BYTES = 64 << 30          # the random patterns span 64 GiB
# Geometry of the reference configuration (DDR5 16Gb x4, 2 ranks) used to build probes.
RANKS, BANKGROUPS, BANKS, ROWS, COLUMNS = 2, 8, 4, 65536, 128

PATTERNS = ("random_read", "random_rw", "stream_read", "anns")
UNLOADED = ("hit", "miss", "conflict")


class Trace(NamedTuple):
    """A memory trace: int64 addr [N], uint8 is_write [N], int64 arrival [N] (or None)."""
    addr: np.ndarray
    is_write: np.ndarray
    arrival: Optional[np.ndarray]
    rank_local: Optional[np.ndarray] = None
    meta: Optional[dict] = None


def mean_gap_cycles(load: float, channels: int) -> float:
    """Mean cycles between 64-B lines at offered load ``load`` on ``channels`` channels."""
    return LINE / (load * PEAK_PER_CHANNEL_Bps * channels) / TCK_S


def _poisson_cycles(rng, n_events, mean_gap):
    gaps = rng.exponential(mean_gap, n_events)
    return np.floor(np.cumsum(gaps)).astype(np.int64)


def loaded(pattern: str, channels: int, load: float, seed: int, n: int = 100_000) -> Trace:
    """A loaded trace of ``n`` lines (see module docstring for the patterns)."""
    if pattern not in PATTERNS:
        raise ValueError(f"pattern={pattern!r}: expected one of {', '.join(PATTERNS)}")
    if not load > 0:
        raise ValueError(f"load={load!r}: expected a positive offered-load fraction")
    rng = np.random.default_rng(seed)
    mu = mean_gap_cycles(load, channels)
    meta = {"pattern": pattern, "channels": channels, "load": load, "seed": seed}
    if pattern == "random_read" or pattern == "random_rw":
        lines = rng.integers(0, SPACE_BYTES // LINE, n, dtype=np.int64)
        if pattern == "random_rw":
            is_write = (rng.random(n) < 0.3).astype(np.uint8)
        else:
            is_write = np.zeros(n, np.uint8)
        arrival = _poisson_cycles(rng, n, mu)
        return Trace(lines * LINE, is_write, arrival, None, meta)
    if pattern == "stream_read":
        arrival = _poisson_cycles(rng, n, mu)
        return Trace(np.arange(n, dtype=np.int64) * LINE, np.zeros(n, np.uint8), arrival,
                     None, meta)
    # anns: groups of 8 vector bursts + 1 adjacency burst (36 lines on average per group)
    groups = n // 36 + 64
    vec_lines = np.where(rng.random((groups, 8)) < 0.5, 2, 6)
    vec_base = rng.integers(0, SPACE_BYTES // 128, (groups, 8), dtype=np.int64) * 128
    adj_base = rng.integers(0, SPACE_BYTES // 256, groups, dtype=np.int64) * 256
    lens = np.hstack([vec_lines, np.full((groups, 1), 4)]).reshape(-1)
    bases = np.hstack([vec_base, adj_base[:, None]]).reshape(-1)
    kinds = np.tile(np.r_[np.zeros(8, np.int64), 1], groups)
    n_events = int(np.searchsorted(np.cumsum(lens), n) + 1)
    lens, bases, kinds = lens[:n_events], bases[:n_events], kinds[:n_events]
    times = _poisson_cycles(rng, n_events, 4.0 * mu)
    ev = np.repeat(np.arange(n_events), lens)
    starts = np.cumsum(lens) - lens
    offset = np.arange(ev.size) - starts[ev]
    addr = (bases[ev] + offset * LINE)[:n]
    arrival = times[ev][:n]
    meta.update(events=n_events, sift=int(((kinds == 0) & (lens == 2)).sum()),
                deep=int(((kinds == 0) & (lens == 6)).sum()), adj=int((kinds == 1).sum()))
    return Trace(addr.astype(np.int64), np.zeros(n, np.uint8), arrival.astype(np.int64),
                 None, meta)


def compose_address(channels, ch, rank, bg, bank, row, col):
    """Byte address of (channel, rank, bank group, bank, row, column) under RoBaRaCoCh."""
    x = np.asarray(row, np.int64)
    x = ((((x * BANKS + bank) * BANKGROUPS + bg) * RANKS + rank) * COLUMNS + col)
    return (x * channels + ch) * LINE


def unloaded(case: str, channels: int, seed: int, n_probe: int = 2000,
             spacing: int = 1000) -> Trace:
    """Unloaded probes (see module docstring). ``meta['n_warmup']`` = leading warm-up lines."""
    if case not in UNLOADED:
        raise ValueError(f"case={case!r}: expected one of {', '.join(UNLOADED)}")
    rng = np.random.default_rng(seed)
    slots = np.arange(n_probe + 1, dtype=np.int64) * spacing
    cols = rng.integers(0, COLUMNS, n_probe + 1)
    meta = {"pattern": f"unloaded_{case}", "channels": channels, "seed": seed}
    if case in ("hit", "conflict"):
        ch = int(rng.integers(0, channels))
        rank = int(rng.integers(0, RANKS))
        bg = int(rng.integers(0, BANKGROUPS))
        bank = int(rng.integers(0, BANKS))
        r1, r2 = (int(v) for v in rng.choice(ROWS, 2, replace=False))
        if case == "hit":
            rows = np.full(n_probe + 1, r1)
        else:
            rows = np.where(np.arange(n_probe + 1) % 2 == 1, r1, r2)
        addr = compose_address(channels, ch, rank, bg, bank, rows, cols)
        meta["n_warmup"] = 1
        return Trace(addr.astype(np.int64), np.zeros(n_probe + 1, np.uint8), slots, None, meta)
    nb = channels * RANKS * BANKGROUPS * BANKS
    perm = rng.permutation(nb)
    b = perm[np.arange(n_probe) % nb]
    ch = b % channels
    rest = b // channels
    rank = rest % RANKS
    rest = rest // RANKS
    bg = rest % BANKGROUPS
    bank = rest // BANKGROUPS
    rows = rng.integers(0, ROWS, n_probe)
    addr = compose_address(channels, ch, rank, bg, bank, rows, cols[1:])
    meta["n_warmup"] = 0
    return Trace(addr.astype(np.int64), np.zeros(n_probe, np.uint8), slots[1:], None, meta)


def from_manifest(entry: dict) -> Trace:
    """The trace described by one entry of the reference manifest (manifest_setA.json)."""
    if entry.get("load") is None:
        return unloaded(entry["pattern"].split("_", 1)[1], entry["channels"], entry["seed"])
    return loaded(entry["pattern"], entry["channels"], entry["load"], entry["seed"],
                  entry.get("lines", 100_000))


def trace_text(trace: Trace) -> str:
    """DRAMsim3 text (``0x<hex addr> READ|WRITE <cycle>`` per line), as hashed in manifests."""
    kinds = np.where(np.asarray(trace.is_write).astype(bool), "WRITE", "READ")
    return "".join(f"0x{a:x} {k} {t}\n" for a, k, t in
                   zip(trace.addr.tolist(), kinds.tolist(), trace.arrival.tolist()))
