"""Results of a trace replay on disk, and the summary table the command line prints.

One run writes one folder (see :func:`new_run_dir` for how it is chosen; nothing that exists is
ever overwritten) holding:

``requests.csv``
    One row per request, in trace order: ``id,addr,is_write,arrival_cycle,accept_cycle,
    completion_cycle,latency_cycles`` (``id`` = 0-based position in the trace, ``addr`` the
    byte address in decimal, cycles of the DRAM clock, ``latency_cycles`` = completion -
    arrival, which includes the wait in the frontend before acceptance).
``stats.json``
    The statistics of :mod:`dram.stats` (scalars and per-channel / per-rank lists) plus the
    run's bookkeeping (trace, request counts, wall time, simulated requests per second).
``stats.csv``
    The scalar statistics as one row, units in the column names.
``config.json``
    Everything needed to repeat the run: the :class:`dram.DRAMConfig` (as a dict), the trace
    path, format, size and sha256, the replay options, the command line and the version.
``summary.txt``
    The table printed by ``cosmos dram replay``.

Every file is written under a temporary name and renamed into place.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from dram.traces import MemTrace, atomic_write

__all__ = [
    "REQUEST_COLUMNS",
    "new_run_dir",
    "request_table",
    "write_requests_csv",
    "stats_to_dict",
    "scalar_stats",
    "write_run",
    "summary_table",
    "file_sha256",
]

REQUEST_COLUMNS = (
    "id",
    "addr",
    "is_write",
    "arrival_cycle",
    "accept_cycle",
    "completion_cycle",
    "latency_cycles",
)


# ----------------------------------------------------------------------------------------------
# The results folder
# ----------------------------------------------------------------------------------------------


def new_run_dir(out: str | os.PathLike) -> Path:
    """Return a fresh folder for one run's results, creating it.

    * ``out`` does not exist: it is created (with its parents) and used.
    * ``out`` is an empty folder: it is used.
    * ``out`` is a folder with anything in it: a new subfolder ``out/run-<N>`` is created, with
      the smallest ``N >= 1`` not taken yet (``os.mkdir`` fails on an existing name, so two runs
      started at the same time still get different folders).
    * ``out`` is a file: ``FileExistsError``.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out} exists and is not a folder; choose another --out")
    if not out.exists():
        try:
            out.mkdir(parents=True)
            return out
        except FileExistsError:
            pass  # created meanwhile: fall through
    if not any(out.iterdir()):
        return out
    for n in range(1, 1_000_000):
        path = out / f"run-{n}"
        try:
            os.mkdir(path)
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"no free run-<N> folder name under {out}")


def _write_text(path: Path, text: str) -> Path:
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    raise TypeError(f"cannot write {type(obj).__name__} to JSON")


def _json_text(obj: Any) -> str:
    return json.dumps(_finite(obj), indent=2, default=_json_default, allow_nan=False) + "\n"


def _finite(obj: Any) -> Any:
    """Replace NaN/inf floats (e.g. the mean write latency of a trace without writes) by None."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, np.floating) and not np.isfinite(obj):
        return None
    if isinstance(obj, Mapping):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    if isinstance(obj, np.ndarray) and obj.dtype.kind == "f":
        return [_finite(v) for v in obj.tolist()]
    return obj


def file_sha256(path: str | os.PathLike) -> str:
    """sha256 of a file's bytes (as stored, compressed or not)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


# ----------------------------------------------------------------------------------------------
# Per-request records
# ----------------------------------------------------------------------------------------------


def request_table(trace: MemTrace, result: Any):
    """The per-request records as a pandas DataFrame with :data:`REQUEST_COLUMNS`.

    ``result`` has ``arrival``, ``accept`` and ``completion`` (int64 cycles, one per request in
    trace order), as :func:`dram.replay` returns.
    """
    import pandas as pd

    n = len(trace)
    arrival = np.asarray(result.arrival, np.int64)
    accept = np.asarray(result.accept, np.int64)
    completion = np.asarray(result.completion, np.int64)
    for name, arr in (("arrival", arrival), ("accept", accept), ("completion", completion)):
        if arr.shape != (n,):
            raise ValueError(f"result.{name} has shape {arr.shape}, expected ({n},) for this trace")
    return pd.DataFrame(
        {
            "id": np.arange(n, dtype=np.int64),
            "addr": trace.addr,
            "is_write": trace.is_write,
            "arrival_cycle": arrival,
            "accept_cycle": accept,
            "completion_cycle": completion,
            "latency_cycles": completion - arrival,
        },
        columns=list(REQUEST_COLUMNS),
    )


def write_requests_csv(path: str | os.PathLike, trace: MemTrace, result: Any) -> Path:
    """Write the per-request records to ``path`` (atomically; never overwrites)."""
    frame = request_table(trace, result)
    return atomic_write(Path(path), lambda tmp: frame.to_csv(tmp, index=False))


# ----------------------------------------------------------------------------------------------
# Statistics
# ----------------------------------------------------------------------------------------------


def stats_to_dict(stats: Any) -> dict:
    """The statistics as a plain dict (from a dict, a dataclass, a NamedTuple or an object with
    ``to_dict()``); numpy scalars become Python numbers, arrays become lists."""
    if hasattr(stats, "to_dict"):
        d = stats.to_dict()
    elif dataclasses.is_dataclass(stats) and not isinstance(stats, type):
        d = dataclasses.asdict(stats)
    elif hasattr(stats, "_asdict"):
        d = stats._asdict()
    elif isinstance(stats, Mapping):
        d = dict(stats)
    else:
        raise TypeError(f"cannot read statistics from {type(stats).__name__}")
    out = {}
    for k, v in d.items():
        if isinstance(v, np.ndarray):
            v = v.tolist()
        elif isinstance(v, np.generic):
            v = v.item()
        out[str(k)] = v
    return out


def scalar_stats(stats: Mapping[str, Any]) -> dict:
    """The scalar entries (numbers, strings, booleans) of a statistics dict, in order."""
    return {k: v for k, v in stats.items() if isinstance(v, (int, float, str, bool)) or v is None}


# ----------------------------------------------------------------------------------------------
# One run
# ----------------------------------------------------------------------------------------------


def write_run(
    out: str | os.PathLike,
    *,
    trace: MemTrace,
    result: Any,
    stats: Mapping[str, Any],
    config: Mapping[str, Any],
    summary: str | None = None,
) -> Path:
    """Write one run's results into a fresh folder chosen by :func:`new_run_dir`.

    Parameters
    ----------
    out : path-like
        Requested results folder.
    trace : MemTrace
        The replayed trace (addresses and types of the records).
    result : object with ``arrival``, ``accept``, ``completion``
        Per-request cycles from :func:`dram.replay`.
    stats : mapping
        Statistics and run bookkeeping (written to stats.json; scalars also to stats.csv).
    config : mapping
        Everything needed to repeat the run (config.json).
    summary : str, optional
        The printed summary table (summary.txt).

    Returns
    -------
    Path
        The folder the files were written to.
    """
    import pandas as pd

    folder = new_run_dir(out)
    write_requests_csv(folder / "requests.csv", trace, result)
    _write_text(folder / "stats.json", _json_text(stats))
    row = pd.DataFrame([_finite(scalar_stats(stats))])
    atomic_write(folder / "stats.csv", lambda tmp: row.to_csv(tmp, index=False))
    _write_text(folder / "config.json", _json_text(config))
    if summary is not None:
        _write_text(folder / "summary.txt", summary.rstrip("\n") + "\n")
    return folder


# ----------------------------------------------------------------------------------------------
# Summary table
# ----------------------------------------------------------------------------------------------


def _num(v: Any, digits: int = 1) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    return f"{float(v):,.{digits}f}"


def summary_table(stats: Mapping[str, Any]) -> str:
    """A plain-text table of a replay's headline figures.

    ``stats`` is the flat statistics dict written to stats.json (see docs/dram_cli.md for the
    keys). Latencies are shown in cycles and in ns; a figure that does not apply (no writes:
    mean write latency) shows ``-``.
    """
    g = stats.get
    rows: list[tuple[str, str, str]] = []

    def lat(label: str, key: str) -> None:
        rows.append((label, _num(g(f"{key}_cycles")), _num(g(f"{key}_ns"))))

    rows.append(("requests (reads / writes)",
                 f"{_num(g('n_requests'))} ({_num(g('n_reads'))} / {_num(g('n_writes'))})", ""))
    lat("read latency mean", "mean_read_latency")
    lat("read latency p50", "p50_read_latency")
    lat("read latency p95", "p95_read_latency")
    lat("read latency p99", "p99_read_latency")
    lat("read latency max", "max_read_latency")
    lat("write latency mean", "mean_write_latency")
    rows.append(("achieved bandwidth", _num(g("achieved_bandwidth_GBps"), 2) + " GB/s", ""))
    rows.append(("row hits / misses / conflicts",
                 f"{_num(g('row_hits'))} / {_num(g('row_misses'))} / {_num(g('row_conflicts'))}", ""))
    rows.append(("refresh commands", _num(g("refresh_count")), ""))
    rows.append(("simulated time", f"{_num(g('total_cycles'))} cycles", _num(g("total_time_ns"), 0) + " ns"
                 if g("total_time_ns") is not None else ""))
    rows.append(("simulation speed", _num(g("sim_requests_per_s"), 0) + " requests/s",
                 f"{_num(g('wall_s'), 3)} s wall" if g("wall_s") is not None else ""))
    head = ("", "cycles", "ns")
    w0 = max(len(r[0]) for r in rows + [head])
    w1 = max(len(r[1]) for r in rows + [head])
    w2 = max(len(r[2]) for r in rows + [head])
    lines = [f"{head[0]:<{w0}}  {head[1]:>{w1}}  {head[2]:>{w2}}".rstrip()]
    lines.append("-" * (w0 + w1 + w2 + 4))
    for a, b, c in rows:
        lines.append(f"{a:<{w0}}  {b:>{w1}}  {c:>{w2}}".rstrip())
    return "\n".join(lines)
