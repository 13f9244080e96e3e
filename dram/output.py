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
``epochs.csv`` (with ``--epoch N``)
    One row per epoch of N cycles and channel, the columns :func:`epoch_columns`
    (:func:`write_epochs_csv`).

Every file is written under a temporary name and renamed into place. The command trace
(``--command-trace FILE``, :class:`CommandTraceWriter`) is a file of its own, outside the
folder: one row per command issued, the columns :data:`COMMAND_TRACE_COLUMNS`.
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
    "COMMAND_TRACE_COLUMNS",
    "CommandTraceWriter",
    "EPOCH_LEAD_COLUMNS",
    "epoch_columns",
    "epoch_table",
    "write_epochs_csv",
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
    if getattr(result, "epoch_stats", None) is not None:
        write_epochs_csv(folder / "epochs.csv", result)
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


# ----------------------------------------------------------------------------------------------
# Command trace (--command-trace) and epoch statistics (--epoch)
# ----------------------------------------------------------------------------------------------

#: Columns of the command trace: the command's cycle (DRAM clock), where it went (-1 in a
#: field the command has no value for: bank group, bank and row of a rank-wide command such as
#: REFab or PREab; bank group and row of a same-bank REFsb/PREsb) and its name
#: (``dram.kernel.COMMAND_NAMES``).
COMMAND_TRACE_COLUMNS = ("cycle", "channel", "rank", "bank_group", "bank", "row", "command")

_TRACE_ROWS_PER_STEP = 1 << 16   # rows per channel read back per merge step


class CommandTraceWriter:
    """Writes every command of a replay to one CSV file, streaming: pass it as
    ``dram.replay(..., command_sink=writer)``, then call :meth:`finish`.

    While the replay runs, each channel's commands (issue order) are appended as raw int64
    rows to a file of their own in a hidden temporary folder next to ``path``; nothing is
    held in memory. :meth:`finish` merges the channels in chunks into CSV (header
    :data:`COMMAND_TRACE_COLUMNS`; rows ordered by cycle, then channel, then issue order),
    written under a temporary name and linked to ``path`` only when complete (never over an
    existing file), and removes the temporary folder. :meth:`abort` (also on leaving a
    ``with`` block by an exception) removes everything, so an interrupted run leaves no file
    under ``path``.
    """

    def __init__(self, path: str | os.PathLike):
        import tempfile
        import threading

        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._dir = Path(tempfile.mkdtemp(prefix=f".{self.path.name}.", suffix=".tmp",
                                          dir=self.path.parent))
        self._files: dict[int, Any] = {}
        self._lock = threading.Lock()
        self.n_commands = 0

    def _part(self, g: int) -> Path:
        return self._dir / f"channel{g}.bin"

    def __call__(self, g: int, rows: np.ndarray) -> None:
        """Append channel ``g``'s commands ``rows`` (int64 [k, 7], the kernel's log columns)."""
        with self._lock:
            f = self._files.get(g)
            if f is None:
                f = self._files[g] = open(self._part(g), "ab")
            self.n_commands += int(rows.shape[0])
        f.write(np.ascontiguousarray(rows, np.int64).tobytes())

    def _close_parts(self) -> None:
        for f in self._files.values():
            f.close()

    def _merged(self):
        """The commands of every channel in chunks, each sorted by (cycle, channel), the
        chunks in order: a k-way merge of the channels' files (each in cycle order)."""
        from dram import kernel as K

        parts = []
        for g in sorted(self._files):
            size = self._part(g).stat().st_size // (7 * 8)
            if size:
                parts.append(np.memmap(self._part(g), np.int64, "r", shape=(size, 7)))
        pos = [0] * len(parts)
        R = _TRACE_ROWS_PER_STEP
        while any(p < a.shape[0] for p, a in zip(pos, parts)):
            # every row before the earliest last cycle of the channels' next blocks is known
            # (a channel whose block is its file's end bounds nothing)
            cut = None
            for p, a in zip(pos, parts):
                if p + R < a.shape[0]:
                    last = int(a[p + R - 1, K.LOG_CLK])
                    cut = last if cut is None else min(cut, last)
            taken = []
            for k, (p, a) in enumerate(zip(pos, parts)):
                block = a[p:p + R]
                m = block.shape[0] if cut is None else \
                    int(np.searchsorted(block[:, K.LOG_CLK], cut, side="left"))
                if m:
                    taken.append(np.array(block[:m]))
                    pos[k] = p + m
            rows = np.concatenate(taken)
            yield rows[np.lexsort((rows[:, K.LOG_CH], rows[:, K.LOG_CLK]))]

    def finish(self) -> Path:
        """Write the CSV file (see the class) and remove the temporary folder."""
        from dram import kernel as K
        from dram.tracescan import csv_rows

        self._close_parts()
        names = [("," + c + "\n").encode() for c in K.COMMAND_NAMES]
        cols = [K.LOG_CLK, K.LOG_CH, K.LOG_RANK, K.LOG_BG, K.LOG_BANK, K.LOG_ROW]
        no_u = np.zeros((0, 0), np.uint64)

        def write(tmp: Path) -> None:
            with open(tmp, "wb") as f:
                f.write((",".join(COMMAND_TRACE_COLUMNS) + "\n").encode())
                for rows in self._merged():
                    text = csv_rows(no_u[:0].reshape(rows.shape[0], 0), rows[:, cols])
                    lines = text.split(b"\n")
                    f.write(b"".join([ln + names[c] for ln, c in
                                      zip(lines, rows[:, K.LOG_CMD].tolist())]))

        try:
            from cosmos_common.outdir import atomic_write as _atomic_write
            return _atomic_write(self.path, write)
        finally:
            self._remove_parts()

    def _remove_parts(self) -> None:
        import shutil

        shutil.rmtree(self._dir, ignore_errors=True)

    def abort(self) -> None:
        """Remove the temporary folder; nothing is written under ``path``."""
        self._close_parts()
        self._remove_parts()

    def __enter__(self) -> "CommandTraceWriter":
        return self

    def __exit__(self, kind, exc, tb) -> bool:
        if kind is not None:
            self.abort()
        return False


#: The first columns of ``epochs.csv``: the epoch (0, 1, ...), the channel, the epoch's cycles
#: [start_cycle, end_cycle), the requests of the channel that completed in it (a read when its
#: data returned, a write when its WR issued) and the mean latency of those reads (empty if
#: none), then what the channel's controller counted in it (``dram.kernel.STAT_NAMES``: row
#: hits/misses/conflicts, reads and writes served, refresh commands, data-bus busy cycles, one
#: count per command) and the row hits/misses/conflicts of reads and writes together.
EPOCH_LEAD_COLUMNS = ("epoch", "channel", "start_cycle", "end_cycle", "reads_completed",
                      "writes_completed", "mean_read_latency_cycles")


def epoch_columns() -> tuple:
    """The columns of ``epochs.csv``: :data:`EPOCH_LEAD_COLUMNS`, then the controller's
    statistics (``dram.kernel.STAT_NAMES``), then ``row_hits``, ``row_misses``,
    ``row_conflicts`` (reads and writes together)."""
    from dram import kernel as K

    return EPOCH_LEAD_COLUMNS + tuple(K.STAT_NAMES) + ("row_hits", "row_misses",
                                                        "row_conflicts")


def epoch_table(result: Any) -> tuple[tuple, np.ndarray, np.ndarray]:
    """The rows of ``epochs.csv`` for a replay run with ``epoch_cycles``: (column names,
    int64 [rows, columns] of every column but the mean read latency, float64 [rows] of that),
    rows by epoch, then channel."""
    from dram import kernel as K

    N = int(result.epoch_cycles)
    ep = np.asarray(result.epoch_stats, np.int64)          # [E, C, N_STATS]
    E, C = ep.shape[0], ep.shape[1]
    total = int(result.completion.max()) + 1 if result.completion.size else 0
    e_of = result.completion // N if N else result.completion
    ch = np.asarray(result.channel, np.int64)
    w = np.asarray(result.is_write) != 0
    flat = (e_of * C + ch).astype(np.int64)
    size = E * C
    reads = np.bincount(flat[~w], minlength=size)[:size]
    writes = np.bincount(flat[w], minlength=size)[:size]
    lat = np.bincount(flat[~w], weights=(result.completion - result.arrival)[~w].astype(
        np.float64), minlength=size)[:size]
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(reads > 0, lat / np.maximum(reads, 1), np.nan)
    e_idx = np.repeat(np.arange(E, dtype=np.int64), C)
    g_idx = np.tile(np.arange(C, dtype=np.int64), E)
    start = e_idx * N
    end = np.minimum(start + N, total)
    st = ep.reshape(size, ep.shape[2])
    rw = np.stack([st[:, K.S_RD_HIT] + st[:, K.S_WR_HIT], st[:, K.S_RD_MISS] + st[:, K.S_WR_MISS],
                   st[:, K.S_RD_CONF] + st[:, K.S_WR_CONF]], axis=1)
    ints = np.column_stack([e_idx, g_idx, start, end, reads, writes, st, rw]).astype(np.int64)
    return epoch_columns(), ints, mean


def write_epochs_csv(path: str | os.PathLike, result: Any) -> Path:
    """Write ``epochs.csv`` (atomically; never overwrites): a header of
    :func:`epoch_columns`, then one row per epoch and channel, integers in decimal, the mean
    read latency with 3 decimals (empty when no read completed)."""
    from dram.tracescan import csv_rows

    names, ints, mean = epoch_table(result)
    lead = 6                                # integer columns before the mean latency
    no_u = np.zeros((0, 0), np.uint64)

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            f.write((",".join(names) + "\n").encode())
            for s in range(0, ints.shape[0], _CSV_ROWS_PER_STEP):
                e = min(ints.shape[0], s + _CSV_ROWS_PER_STEP)
                a = csv_rows(no_u.reshape(e - s, 0), ints[s:e, :lead]).split(b"\n")
                b = csv_rows(no_u.reshape(e - s, 0), ints[s:e, lead:]).split(b"\n")
                m = [b"" if v != v else f"{v:.3f}".encode() for v in mean[s:e].tolist()]
                f.write(b"".join([x + b"," + y + b"," + z + b"\n"
                                  for x, y, z in zip(a, m, b)]))

    return atomic_write(Path(path), write)
