"""Results of a trace replay on disk, and the summary table the command line prints.

One run writes one folder (see :func:`new_run_dir` for how it is chosen; nothing that exists is
ever overwritten) holding:

``requests.npz`` (default) or ``requests.csv`` (or neither)
    One record per request, in trace order, with the columns :data:`REQUEST_COLUMNS`:
    ``id`` (0-based position in the trace), ``addr`` (byte address), ``is_write``,
    ``arrival_cycle``, ``accept_cycle``, ``completion_cycle``, ``latency_cycles`` (cycles of the
    DRAM clock; ``latency_cycles`` = completion - arrival, which includes the wait in the
    frontend before acceptance). ``.npz`` is numpy's zip of ``.npy`` arrays, one per column
    (:data:`REQUEST_DTYPES`), uncompressed, so writing and reading cost little more than the
    bytes; ``np.load`` or :func:`read_requests` reads it back exactly. ``.csv`` has the same
    columns as text (``addr`` in decimal).
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
import time
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from dram.stats import READ_LATENCY_AGGREGATES
from dram.traces import MemTrace, atomic_write

__all__ = [
    "REQUEST_COLUMNS",
    "REQUEST_DTYPES",
    "REQUEST_FORMATS",
    "new_run_dir",
    "request_columns",
    "request_table",
    "requests_file_name",
    "read_requests",
    "write_requests",
    "write_requests_csv",
    "write_requests_npz",
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

#: dtype of each per-request column (as held in memory and stored in ``requests.npz``).
REQUEST_DTYPES = {
    "id": np.int64,
    "addr": np.uint64,
    "is_write": np.uint8,
    "arrival_cycle": np.int64,
    "accept_cycle": np.int64,
    "completion_cycle": np.int64,
    "latency_cycles": np.int64,
}

#: Formats of the per-request records (``--requests-format``); the first is the default.
REQUEST_FORMATS = ("npz", "csv")


# ----------------------------------------------------------------------------------------------
# The results folder
# ----------------------------------------------------------------------------------------------


def new_run_dir(out: str | os.PathLike) -> Path:
    """Return the folder for one run's results, creating it (the output rule of every
    command, :func:`cosmos_common.outdir.prepare_out_dir`).

    * ``out`` does not exist: it is created (with its parents) and used.
    * ``out`` is an empty folder: it is used.
    * ``out`` holds anything, or is a file: UserError (a ValueError) naming it, before any
      work; nothing is ever written over.
    * a folder that cannot be written: UserError at once.
    """
    from cosmos_common.outdir import prepare_out_dir

    return prepare_out_dir(out, "dram replay")


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


def request_columns(trace: MemTrace, result: Any) -> dict[str, np.ndarray]:
    """The per-request records as a dict of column arrays (:data:`REQUEST_COLUMNS`, dtypes
    :data:`REQUEST_DTYPES`), in trace order.

    ``result`` has ``arrival``, ``accept`` and ``completion`` (int64 cycles, one per request in
    trace order), as :func:`dram.replay` returns.
    """
    n = len(trace)
    arrival = np.asarray(result.arrival, np.int64)
    accept = np.asarray(result.accept, np.int64)
    completion = np.asarray(result.completion, np.int64)
    for name, arr in (("arrival", arrival), ("accept", accept), ("completion", completion)):
        if arr.shape != (n,):
            raise ValueError(f"result.{name} has shape {arr.shape}, expected ({n},) for this trace")
    return {
        "id": np.arange(n, dtype=np.int64),
        "addr": np.asarray(trace.addr, np.uint64),
        "is_write": np.asarray(trace.is_write, np.uint8),
        "arrival_cycle": arrival,
        "accept_cycle": accept,
        "completion_cycle": completion,
        "latency_cycles": completion - arrival,
    }


def request_table(trace: MemTrace, result: Any):
    """The per-request records as a pandas DataFrame with :data:`REQUEST_COLUMNS`."""
    import pandas as pd

    return pd.DataFrame(request_columns(trace, result), columns=list(REQUEST_COLUMNS))


def requests_file_name(fmt: str) -> str:
    """File name of the per-request records in format ``fmt`` (one of :data:`REQUEST_FORMATS`)."""
    if fmt not in REQUEST_FORMATS:
        raise ValueError(f"unknown per-request format {fmt!r}; valid: {', '.join(REQUEST_FORMATS)}")
    return f"requests.{fmt}"


_CSV_ROWS_PER_STEP = 1 << 19  # rows formatted per compiled call (bounds the text buffer)


def write_requests_csv(path: str | os.PathLike, trace: MemTrace, result: Any) -> Path:
    """Write the per-request records to ``path`` as CSV (atomically; never overwrites): a
    header of :data:`REQUEST_COLUMNS`, then one line per request, integers in decimal (the
    bytes pandas' ``to_csv`` writes for this table, formatted by a compiled kernel)."""
    from dram.tracescan import csv_rows

    cols = request_columns(trace, result)
    unsigned = ("id", "addr", "is_write")

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            f.write((",".join(REQUEST_COLUMNS) + "\n").encode())
            n = cols["id"].shape[0]
            for s in range(0, n, _CSV_ROWS_PER_STEP):
                e = min(n, s + _CSV_ROWS_PER_STEP)
                u = np.empty((e - s, 3), np.uint64)
                for j, name in enumerate(unsigned):
                    u[:, j] = cols[name][s:e]
                t = np.empty((e - s, 4), np.int64)
                for j, name in enumerate(REQUEST_COLUMNS[3:]):
                    t[:, j] = cols[name][s:e]
                f.write(csv_rows(u, t))

    return atomic_write(Path(path), write)


# Time stamp of every member of requests.npz: the earliest a zip can hold, so that equal
# records give equal bytes (numpy's own savez stamps the current time).
_ZIP_DATE_TIME = (1980, 1, 1, 0, 0, 0)


def write_requests_npz(path: str | os.PathLike, trace: MemTrace, result: Any) -> Path:
    """Write the per-request records to ``path`` as an uncompressed ``.npz`` (one ``.npy``
    member per column of :data:`REQUEST_COLUMNS`, in that order), atomically, never over an
    existing file. Equal records give equal bytes. ``np.load(path)`` reads it."""
    import zipfile

    columns = request_columns(trace, result)

    def write(tmp: Path) -> None:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
            for name in REQUEST_COLUMNS:
                info = zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_DATE_TIME)
                info.compress_type = zipfile.ZIP_STORED
                info.external_attr = 0o644 << 16
                with zf.open(info, "w", force_zip64=True) as member:
                    np.lib.format.write_array(member, columns[name], allow_pickle=False)

    return atomic_write(Path(path), write)


def write_requests(path: str | os.PathLike, trace: MemTrace, result: Any, fmt: str) -> Path:
    """Write the per-request records in format ``fmt`` (``"npz"`` or ``"csv"``)."""
    requests_file_name(fmt)  # validates fmt
    writer = write_requests_npz if fmt == "npz" else write_requests_csv
    return writer(path, trace, result)


def read_requests(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Read per-request records written by :func:`write_requests` (``.npz`` or ``.csv``, told
    by the name) into a dict of column arrays with the dtypes of :data:`REQUEST_DTYPES`.

    Raises UserError (a ValueError) naming the file when a column is missing or the file is
    not such a record file.
    """
    from cosmos_common import UserError

    path = Path(path)
    if path.suffix == ".npz":
        import zipfile

        try:
            with np.load(path, allow_pickle=False) as z:
                got = {name: z[name] for name in z.files}
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            if isinstance(exc, FileNotFoundError):
                raise
            raise UserError(f"{path}: not a per-request .npz file ({exc})") from None
    elif path.suffix == ".csv":
        import pandas as pd

        frame = pd.read_csv(path, dtype={name: REQUEST_DTYPES[name] for name in REQUEST_COLUMNS})
        got = {name: frame[name].to_numpy() for name in frame.columns}
    else:
        raise UserError(f"{path}: expected a per-request file ending in .npz or .csv")
    missing = [name for name in REQUEST_COLUMNS if name not in got]
    if missing:
        raise UserError(f"{path}: column(s) {', '.join(missing)} missing; expected "
                        f"{', '.join(REQUEST_COLUMNS)}")
    n = got["id"].shape[0]
    out = {}
    for name in REQUEST_COLUMNS:
        arr = got[name]
        if arr.ndim != 1 or arr.shape[0] != n:
            raise UserError(f"{path}: column {name} has shape {arr.shape}; expected ({n},)")
        out[name] = arr.astype(REQUEST_DTYPES[name], copy=False)
    return out


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


def stats_csv_text(stats: Mapping[str, Any]) -> str:
    """stats.csv: the scalar statistics as a header and one row (what pandas' ``to_csv`` writes
    for that one-row table, without importing pandas: a float is its shortest repr, a missing or
    non-finite value is empty, text is quoted only when it must be)."""
    import csv
    import io

    row = _finite(scalar_stats(stats))
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(list(row))
    writer.writerow(["" if v is None else v for v in row.values()])
    return buf.getvalue()


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
    requests_format: str | None = "npz",
) -> Path:
    """Write one run's results into the folder ``out`` (made by :func:`new_run_dir`; created
    if missing). Each file is written to a temporary name and linked into place, never over
    an existing file.

    Parameters
    ----------
    out : path-like
        The results folder.
    trace : MemTrace
        The replayed trace (addresses and types of the records).
    result : object with ``arrival``, ``accept``, ``completion``
        Per-request cycles from :func:`dram.replay`.
    stats : mapping
        Statistics and run bookkeeping (written to stats.json; scalars also to stats.csv),
        plus ``requests_write_s``, the seconds spent writing the per-request records.
    config : mapping
        Everything needed to repeat the run (config.json).
    summary : str, optional
        The printed summary table (summary.txt).
    requests_format : {"npz", "csv"} or None
        Format of the per-request records (``requests.npz`` / ``requests.csv``); ``None``
        writes none.

    Returns
    -------
    Path
        The folder the files were written to.
    """
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    stats = dict(stats)
    if requests_format is not None:
        t0 = time.perf_counter()
        write_requests(folder / requests_file_name(requests_format), trace, result,
                       requests_format)
        stats["requests_write_s"] = time.perf_counter() - t0
    _write_text(folder / "stats.json", _json_text(stats))
    _write_text(folder / "stats.csv", stats_csv_text(stats))
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
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    return f"{float(v):,.{digits}f}"


def _duration(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:,.2f} {unit}"
    return f"{seconds * 1e9:,.1f} ns"


def summary_table(stats: Mapping[str, Any]) -> str:
    """A plain-text table of a replay's headline figures.

    ``stats`` is the statistics dict of a run (:mod:`dram.stats` names, units in the names, as
    written to stats.json; docs/dram_cli.md lists the keys). Latencies are shown in cycles
    and ns. A figure that does not apply (no writes: mean write latency) shows ``-``.
    """
    g = stats.get
    lines = [f"{'':<26}{'cycles':>12}{'ns':>12}"]
    for kind, aggs in (("read", READ_LATENCY_AGGREGATES), ("write", ("mean",))):
        for i, agg in enumerate(aggs):
            label = f"{kind} latency" if i == 0 else ""
            lines.append(f"{label:<20}{agg:<6}{_num(g(f'{agg}_{kind}_latency_cycles')):>12}"
                         f"{_num(g(f'{agg}_{kind}_latency_ns')):>12}")
    lines.append(f"{'frontend wait':<20}{'mean':<6}{_num(g('mean_accept_delay_cycles')):>12}")
    lines.append(f"{'':<20}{'max':<6}{_num(g('max_accept_delay_cycles')):>12}")
    lines.append("")
    rows = [
        ("requests", f"{_num(g('n_requests'))} ({_num(g('n_reads'))} reads, "
                     f"{_num(g('n_writes'))} writes)"),
        ("achieved bandwidth", f"{_num(g('achieved_bw_GBps'), 2)} GB/s "
                               f"(offered {_num(g('offered_bw_GBps'), 2)} GB/s)"),
        ("row hits/misses/conflicts", f"{_num(g('row_hits'))} / {_num(g('row_misses'))} / "
                                      f"{_num(g('row_conflicts'))}"),
        ("refresh commands", _num(g("refresh_cmds"))),
    ]
    total, tck = g("total_cycles"), g("tCK_ps")
    if total is not None and tck is not None:
        rows.append(("simulated time", f"{_num(total)} cycles = {_duration(total * tck * 1e-12)}"))
    if g("sim_requests_per_s") is not None:
        rows.append(("simulation speed", f"{_num(g('sim_requests_per_s'), 0)} requests/s "
                                         f"({_num(g('sim_wall_s'), 3)} s simulating"
                                         + (f" on {g('sim_threads')} threads"
                                            if (g("sim_threads") or 1) > 1 else "") + ", "
                                         + (f"compile {_num(g('compile_s'), 3)} s, "
                                            if g("compile_s") is not None else "")
                                         + f"{_num(g('replay_wall_s'), 3)} s with set-up)"))
    for label, value in rows:
        lines.append(f"{label:<26}{value}")
    lines.extend(_energy_lines(stats))
    return "\n".join(line.rstrip() for line in lines)


def _energy_lines(stats: Mapping[str, Any]) -> list:
    """The energy block of :func:`summary_table` (nothing if the run has no energy figures:
    a device without a power preset)."""
    from dram.energy import COMPONENTS

    g = stats.get
    if g("energy_total_nJ") is None:
        return []
    lines = ["", f"{'energy':<26}{'nJ':>14}{'avg W':>12}{'share':>9}"]
    total = g("energy_total_nJ") or 0.0
    for c in COMPONENTS + ("total",):
        e = g(f"energy_{c}_nJ")
        w = g("power_avg_W") if c == "total" else g(f"power_{c}_W")
        share = f"{100.0 * e / total:.1f} %" if total else "-"
        lines.append(f"{'  ' + c.replace('_', ' '):<26}{_num(e, 3):>14}{_num(w, 4):>12}"
                     f"{share:>9}")
    if g("access_energy_pJ_per_bit") is not None:
        lines.append(f"{'access energy':<26}{_num(g('access_energy_pJ_per_bit'), 2)} pJ/bit "
                     "(ACT, PRE, array and I/O, no background)")
    return lines
