"""Comparison with the Ramulator 2.1 reference runs (set A).

The reference (``results_setA.csv``, a copy of which is in ``tests/data/dram``) lists, per
trace and refresh setting, the figures defined in :mod:`dram.stats`. The traces are
regenerated with :mod:`dram.synth` (bit-exact: their sha256 is in the manifest) and replayed
with the reference configuration (DDR5-4800AN, 16Gb x4, 2 ranks, RoBaRaCoCh, FR-FCFS, open
page, 32/32 buffers) on 4 or 1 channels.

Tolerances (from the issue): offered load <= 0.85 and unloaded probes: mean read latency
within 5 %, p99 read latency within 10 %, achieved bandwidth within 2 %; loads 1.0 and 1.2
(past saturation; latencies depend on the trace length there): achieved bandwidth within 3 %.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from dram.config import DRAMConfig
from dram.stats import READ_LATENCY_AGGREGATES, latency_stats
from dram import synth

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "dram"

TOL_MEAN, TOL_P99, TOL_BW, TOL_BW_OVERLOAD = 0.05, 0.10, 0.02, 0.03

#: Columns compared with the reference, exactly or by tolerance.
COMPARED = ("mean_read_lat", "p50_read_lat", "p95_read_lat", "p99_read_lat", "max_read_lat",
            "mean_write_lat", "achieved_bw_GBps", "row_hits", "row_misses", "row_conflicts",
            "read_row_hits", "read_row_misses", "read_row_conflicts", "write_row_hits",
            "write_row_misses", "write_row_conflicts", "refresh_cmds", "total_cycles",
            "mean_accept_delay", "max_accept_delay")


#: The reference's column names of our statistics (dram.stats names carry their units; the
#: reference's latency columns are in cycles).
REFERENCE_NAMES = {f"{a}_{k}_lat": f"{a}_{k}_latency_cycles"
                   for k, aggs in (("read", READ_LATENCY_AGGREGATES), ("write", ("mean",)))
                   for a in aggs}
REFERENCE_NAMES.update(mean_accept_delay="mean_accept_delay_cycles",
                       max_accept_delay="max_accept_delay_cycles", n_requests="n_requests",
                       n_reads="n_reads", n_writes="n_writes")


def load_manifest(path=None) -> list:
    """Entries of manifest_setA.json (name, seed, pattern, channels, load, lines, sha256...)."""
    with open(path or DATA / "manifest_setA.json") as f:
        return json.load(f)


def load_reference(path=None):
    """results_setA.csv as a pandas DataFrame."""
    import pandas as pd
    return pd.read_csv(path or DATA / "results_setA.csv")


def reference_config(channels: int, refresh: bool) -> DRAMConfig:
    """The configuration of the reference runs."""
    return DRAMConfig(standard="DDR5_4800AN", org="16Gb_x4", channels=channels, ranks=2,
                      mapping="RoBaRaCoCh", refresh=refresh, read_queue_depth=32,
                      write_queue_depth=32, scheduler="FRFCFS", row_policy="open")


def trace_sha256(trace) -> str:
    return hashlib.sha256(synth.trace_text(trace).encode()).hexdigest()


def run_case(entry: dict, refresh: bool, check_sha: bool = False, trace=None) -> dict:
    """Replay one manifest entry; return our figures under the reference's column names.

    Latency figures exclude the ``n_warmup`` leading lines (as the reference does); bandwidth
    and row statistics include every line.
    """
    from dram.openloop import replay
    tr = trace if trace is not None else synth.from_manifest(entry)
    if check_sha and trace_sha256(tr) != entry["sha256_uncompressed"]:
        raise ValueError(f"{entry['name']}: regenerated trace does not match the manifest sha256")
    res = replay(tr, reference_config(entry["channels"], refresh), wrap="mapper")
    w = int(entry.get("n_warmup", 0) or 0)
    lat = latency_stats(res.arrival[w:], res.accept[w:], res.completion[w:],
                        res.is_write[w:], res.stats["tCK_ps"])
    out = {ref: lat[ours] for ref, ours in REFERENCE_NAMES.items()}
    full = res.stats
    out["achieved_bw_GBps"] = full["achieved_bw_GBps"]
    for k in ("row_hits", "row_misses", "row_conflicts", "read_row_hits", "read_row_misses",
              "read_row_conflicts", "write_row_hits", "write_row_misses", "write_row_conflicts",
              "refresh_cmds", "total_cycles", "reads_forwarded", "writes_coalesced"):
        out[k] = full[k]
    out["wall_s"] = res.wall_s
    out["_result"] = res
    return out


def reference_row(ref, entry: dict, refresh: bool):
    """The reference row of a manifest entry and refresh setting."""
    cfg = f"{entry['channels']}ch"
    sel = ref[(ref["config"] == cfg) & (ref["refresh"] == ("on" if refresh else "off"))
              & (ref["seed"] == entry["seed"])]
    if len(sel) != 1:
        raise KeyError(f"no unique reference row for {entry['name']} refresh={refresh}")
    return sel.iloc[0]


def rel_dev(ours: float, theirs: float) -> float:
    """(ours - theirs) / theirs; 0 when both are 0; nan if either is nan."""
    if theirs != theirs or ours != ours:
        return float("nan")
    if theirs == 0:
        return 0.0 if ours == 0 else float("inf")
    return (ours - theirs) / theirs


def check(entry: dict, ours: dict, ref_row) -> dict:
    """Deviations and the pass/fail verdict of one run under the issue's tolerances."""
    load = entry.get("load")
    overload = load is not None and load > 0.85
    d = {
        "mean_read_lat_dev": rel_dev(ours["mean_read_lat"], float(ref_row["mean_read_lat"])),
        "p99_read_lat_dev": rel_dev(ours["p99_read_lat"], float(ref_row["p99_read_lat"])),
        "achieved_bw_dev": rel_dev(ours["achieved_bw_GBps"], float(ref_row["achieved_bw_GBps"])),
    }
    if overload:
        ok = abs(d["achieved_bw_dev"]) <= TOL_BW_OVERLOAD
    else:
        ok = (abs(d["mean_read_lat_dev"]) <= TOL_MEAN and abs(d["p99_read_lat_dev"]) <= TOL_P99
              and abs(d["achieved_bw_dev"]) <= TOL_BW)
    d["passed"] = bool(ok)
    # "exact": every integer figure equal, every float figure equal up to the reference CSV's
    # rounding (6 significant digits).
    exact = True
    for k in COMPARED:
        if k not in ours or k not in ref_row.index:
            continue
        a, b = float(ours[k]), float(ref_row[k])
        if np.isnan(a) and np.isnan(b):
            continue
        if not abs(a - b) <= 1e-5 * max(1.0, abs(b)):
            exact = False
    d["exact"] = exact
    return d
