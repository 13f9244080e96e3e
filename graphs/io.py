"""Readers and writers for the common ANN vector file formats.

Formats (all little-endian):

- ``fvecs`` / ``ivecs`` / ``bvecs`` (INRIA TEXMEX): per vector an int32 dimension ``d`` followed by
  ``d`` values (float32 / int32 / uint8).
- ``fbin`` / ``u8bin`` / ``i8bin`` / ``ibin`` (big-ann-benchmarks): a header of uint32 ``n``,
  uint32 ``d``, then ``n*d`` values (float32 / uint8 / int8 / int32) row-major.
- big-ann ground truth (``.bin`` with ``kind="gt"``): uint32 ``n``, uint32 ``k``, then ``n*k``
  uint32 ids, then ``n*k`` float32 distances.

Readers memory-map the file and, given ``n``, touch only the first ``n`` rows (the returned
array is a view into the map unless ``copy=True``; for the ``*vecs`` formats the per-row
dimension prefix is stripped by a strided view). Every reader checks the file size against the
header and raises :class:`FormatError` naming the file and what was expected.

Writers write to a temporary name in the same directory and rename it into place; they refuse
to overwrite an existing file unless ``overwrite=True``.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from cosmos_common import UserError

__all__ = [
    "FormatError",
    "FORMATS",
    "detect_format",
    "read_vectors",
    "write_vectors",
    "read_groundtruth",
    "check_groundtruth_ids",
    "write_groundtruth",
    "atomic_write_bytes",
    "check_finite",
    "groundtruth_shape",
]

# format name -> (dtype of the values, layout) ; layout "vecs" = per-row int32 dim prefix,
# "bin" = 8-byte (n, d) header.
FORMATS: dict[str, tuple[np.dtype, str]] = {
    "fvecs": (np.dtype("<f4"), "vecs"),
    "ivecs": (np.dtype("<i4"), "vecs"),
    "bvecs": (np.dtype("u1"), "vecs"),
    "fbin": (np.dtype("<f4"), "bin"),
    "u8bin": (np.dtype("u1"), "bin"),
    "i8bin": (np.dtype("i1"), "bin"),
    "ibin": (np.dtype("<i4"), "bin"),
}


class FormatError(UserError):
    """A vector file whose content does not match its format (a
    :class:`cosmos_common.UserError`, hence a ``ValueError``)."""


def detect_format(path: str | os.PathLike) -> str:
    """Return the format name from the file extension (``.fvecs`` ... ``.i8bin``).

    Raises
    ------
    FormatError
        If the extension is not one of :data:`FORMATS`.
    """
    if Path(path).is_dir():
        raise FormatError(f"{path}: is a folder; expected a vector file (.fvecs, .bvecs, .fbin, "
                          f".u8bin, .i8bin, ...)")
    ext = Path(path).suffix.lower().lstrip(".")
    if ext not in FORMATS:
        raise FormatError(
            f"{path}: unknown vector file extension '.{ext}'; expected one of "
            + ", ".join("." + f for f in FORMATS)
        )
    return ext


def _check_n(path, n, total):
    if n is None:
        return total
    n = int(n)
    if n < 0:
        raise UserError(f"{path}: n must be >= 0, got {n}")
    if n > total:
        raise FormatError(f"{path}: asked for n={n} vectors but the file holds only {total}")
    return n


def read_vectors(
    path: str | os.PathLike, n: int | None = None, fmt: str | None = None, copy: bool = False
) -> np.ndarray:
    """Read (memory-map) the first ``n`` vectors of a vector file.

    Parameters
    ----------
    path : path-like
        The file.
    n : int, optional
        Number of leading vectors to read; all if None. Only those rows are touched.
    fmt : str, optional
        Format name (see :data:`FORMATS`); inferred from the extension if None.
    copy : bool
        Return an in-memory, C-contiguous copy instead of a view into the memory map.

    Returns
    -------
    numpy.ndarray, shape (n, d), dtype of the format (float32, int32, uint8 or int8)

    Raises
    ------
    FormatError
        If the file size does not match its header or per-row dimensions disagree.
    """
    path = Path(path)
    fmt = fmt or detect_format(path)
    if fmt not in FORMATS:
        raise FormatError(f"{path}: unknown format '{fmt}'; expected one of {', '.join(FORMATS)}")
    dtype, layout = FORMATS[fmt]
    if path.is_dir():
        raise FormatError(f"{path}: is a folder; expected a {fmt} file")
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    size = path.stat().st_size
    if layout == "bin":
        if size < 8:
            raise FormatError(f"{path}: {size} bytes, too short for the 8-byte (n, d) header of {fmt}")
        hdr = np.fromfile(path, dtype="<u4", count=2)
        total, d = int(hdr[0]), int(hdr[1])
        if d == 0:
            raise FormatError(
                f"{path}: header says n={total}, d=0 ({fmt}); the dimension d must be >= 1"
            )
        expected = 8 + total * d * dtype.itemsize
        if size != expected:
            raise FormatError(
                f"{path}: header says n={total}, d={d} ({fmt}, {dtype.itemsize} B per value), "
                f"so the file should be {expected} bytes, but it is {size} bytes"
            )
        n = _check_n(path, n, total)
        if n == 0:
            return np.empty((0, d), dtype=dtype)
        arr = np.memmap(path, dtype=dtype, mode="r", offset=8, shape=(n, d))
        return np.array(arr) if copy else arr
    # *vecs layout
    if size < 4:
        raise FormatError(f"{path}: {size} bytes, too short for a {fmt} record")
    d = int(np.fromfile(path, dtype="<i4", count=1)[0])
    if d <= 0:
        raise FormatError(f"{path}: first record has dimension {d}; expected a positive int32")
    row_bytes = 4 + d * dtype.itemsize
    if size % row_bytes:
        raise FormatError(
            f"{path}: size {size} bytes is not a multiple of the record size {row_bytes} "
            f"(int32 dimension {d} + {d} x {dtype.itemsize} B); truncated or not {fmt}"
        )
    total = size // row_bytes
    n = _check_n(path, n, total)
    if n == 0:
        return np.empty((0, d), dtype=dtype)
    raw = np.memmap(path, dtype=np.uint8, mode="r", shape=(n, row_bytes))
    dims = raw[:, :4].copy().view("<i4").ravel()
    bad = np.flatnonzero(dims != d)
    if bad.size:
        raise FormatError(
            f"{path}: record {int(bad[0])} has dimension {int(dims[bad[0]])}, expected {d} "
            "(all records of a *vecs file must have the same dimension)"
        )
    if dtype.itemsize == 1:
        arr = raw[:, 4:]
        arr = arr.view(dtype) if dtype != np.uint8 else arr
    else:
        # rows are 4-byte aligned, so a strided view of the values exists
        words = np.memmap(path, dtype=dtype, mode="r", shape=(n, d + 1))
        arr = words[:, 1:]
    return np.ascontiguousarray(arr) if copy else arr


#: Largest squared norm a float vector may have: a quarter of float32's largest value, so
#: that every squared L2 distance (at most (|a| + |b|)^2 <= 4 max |x|^2) and every inner
#: product (at most max |x|^2) of two such vectors is a finite float32. Vectors beyond it
#: made k-means overflow and traces with infinite distances.
MAX_SQUARED_NORM = float(np.finfo(np.float32).max) / 4


def check_finite(x: np.ndarray, what: str, row_offset: int = 0, chunk_rows: int = 1 << 15) -> None:
    """Raise UserError if a float array holds NaN or infinite values, or a row whose squared
    norm exceeds :data:`MAX_SQUARED_NORM` (integer arrays pass: uint8/int8 vectors cannot).

    One vectorized pass per block of ``chunk_rows`` rows (about 0.1 s for 1M x 128 float32),
    so a memory-mapped file is read once, block by block. The message names ``what`` (a file
    or "dataset NAME: queries") and the first bad row (``row_offset`` + its index).
    """
    x = np.asarray(x) if not isinstance(x, np.ndarray) else x
    if x.dtype.kind not in "fc" or x.size == 0:
        return
    rows = x.reshape(len(x), -1) if x.ndim != 2 else x
    # a row whose every |value| is at most this cannot exceed MAX_SQUARED_NORM: one pass of
    # max(|x|) per block clears ordinary data (NaN makes the max NaN: checked below)
    per_value = float(np.sqrt(MAX_SQUARED_NORM / max(rows.shape[1], 1)))
    for s in range(0, len(rows), chunk_rows):
        block = rows[s : s + chunk_rows]
        if float(np.max(np.abs(block))) <= per_value:
            continue
        ok = np.isfinite(block)
        if not ok.all():
            r, c = np.argwhere(~ok)[0]
            v = rows[s + r, c]
            raise UserError(
                f"{what}: row {row_offset + s + int(r)} holds {v} at column {int(c)}; "
                "vectors must be finite numbers (no NaN or infinity)"
            )
        b64 = block.astype(np.float64) if x.dtype.kind == "f" else np.abs(block)
        sq = np.einsum("ij,ij->i", b64, b64)
        big = sq > MAX_SQUARED_NORM
        if big.any():
            r = int(np.flatnonzero(big)[0])
            raise UserError(
                f"{what}: row {row_offset + s + r} has squared norm {sq[r]:.3g}, above "
                f"{MAX_SQUARED_NORM:.3g} (float32's largest value / 4): its distances would "
                "overflow float32; scale the vectors down"
            )


def groundtruth_shape(path: str | os.PathLike) -> tuple[int, int]:
    """``(rows, neighbors per row)`` of a ground-truth file, from its header (and, for
    ``.ivecs``, the record dimensions) without reading the ids. Same checks as
    :func:`read_groundtruth`."""
    path = Path(path)
    ext = path.suffix.lower().lstrip(".")
    if ext in ("ivecs", "ibin"):
        return tuple(read_vectors(path, fmt=ext).shape)
    ids, _ = read_groundtruth(path, n=0)
    total = int(np.fromfile(path, dtype="<u4", count=1)[0])
    return total, int(ids.shape[1])


def atomic_write_bytes(path: str | os.PathLike, writer, overwrite: bool = False) -> Path:
    """Create ``path`` atomically: ``writer(fileobj)`` fills a temporary file of the same
    folder that is then linked (or, with ``overwrite``, renamed) into place
    (:func:`cosmos_common.outdir.atomic_write`: a file that appears meanwhile is kept).

    Raises
    ------
    FileExistsError
        If ``path`` exists and ``overwrite`` is False.
    """
    from cosmos_common.outdir import atomic_write

    path = Path(path)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path}: already exists (pass overwrite=True to replace it)")

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            writer(f)

    try:
        return atomic_write(path, write, overwrite=overwrite)
    except FileExistsError:
        raise FileExistsError(f"{path}: already exists (pass overwrite=True to replace "
                              f"it)") from None


def write_vectors(
    path: str | os.PathLike, x: np.ndarray, fmt: str | None = None, overwrite: bool = False
) -> Path:
    """Write a (n, d) array in a vector format (atomic; refuses to overwrite by default).

    The array is cast to the format's dtype only if that is lossless; otherwise ValueError.
    """
    path = Path(path)
    fmt = fmt or detect_format(path)
    dtype, layout = FORMATS[fmt]
    x = np.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"{path}: expected a 2-d array (n, d), got shape {x.shape}")
    y = x.astype(dtype)
    float_to_float = x.dtype.kind == "f" and dtype.kind == "f"
    if not float_to_float and not np.array_equal(y, x):
        raise ValueError(f"{path}: values of dtype {x.dtype} do not fit {fmt} ({dtype}) losslessly")
    n, d = y.shape

    def writer(f):
        if layout == "bin":
            f.write(np.array([n, d], dtype="<u4").tobytes())
            f.write(np.ascontiguousarray(y).tobytes())
        else:
            rec = np.empty((n, 4 + d * dtype.itemsize), dtype=np.uint8)
            rec[:, :4] = np.full((n, 1), d, dtype="<i4").view(np.uint8)
            rec[:, 4:] = np.ascontiguousarray(y).view(np.uint8).reshape(n, -1)
            f.write(rec.tobytes())

    return atomic_write_bytes(path, writer, overwrite)


def read_groundtruth(
    path: str | os.PathLike, n: int | None = None, k: int | None = None
) -> tuple[np.ndarray, np.ndarray | None]:
    """Read ground truth neighbor ids (and distances when the format has them).

    ``.ivecs`` / ``.ibin`` hold ids only; any other extension is read as the big-ann
    ground-truth format (uint32 n, uint32 k, n*k uint32 ids, n*k float32 distances).

    Returns
    -------
    ids : numpy.ndarray, shape (n, k), int64
    dists : numpy.ndarray, shape (n, k), float32, or None
    """
    path = Path(path)
    ext = path.suffix.lower().lstrip(".")
    if ext in ("ivecs", "ibin"):
        ids = np.asarray(read_vectors(path, n=n, fmt=ext), dtype=np.int64)
        dists = None
    else:
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such file")
        size = path.stat().st_size
        if size < 8:
            raise FormatError(f"{path}: {size} bytes, too short for the ground-truth header")
        total, kk = (int(v) for v in np.fromfile(path, dtype="<u4", count=2))
        expected = 8 + total * kk * 8
        if size != expected:
            raise FormatError(
                f"{path}: big-ann ground-truth header says n={total}, k={kk}, so the file should "
                f"be {expected} bytes (ids uint32 + distances float32), but it is {size} bytes"
            )
        n = _check_n(path, n, total)
        if n == 0 or kk == 0:  # nothing to map (numpy cannot map zero bytes)
            ids, dists = np.empty((n, kk), dtype=np.int64), np.empty((n, kk), dtype=np.float32)
        else:
            ids = np.array(np.memmap(path, dtype="<u4", mode="r", offset=8, shape=(n, kk)), dtype=np.int64)
            dists = np.array(
                np.memmap(path, dtype="<f4", mode="r", offset=8 + total * kk * 4, shape=(n, kk))
            )
    if k is not None:
        if k > ids.shape[1]:
            raise FormatError(f"{path}: asked for k={k} neighbors but the file holds {ids.shape[1]}")
        ids = ids[:, :k]
        dists = None if dists is None else dists[:, :k]
    return ids, dists


def check_groundtruth_ids(ids: np.ndarray, num_base: int, label: str) -> None:
    """A ground truth's ids must be base rows, ``0 .. num_base - 1``, and distinct within
    each query's row (a query's k nearest are k vectors): UserError naming ``label`` and the
    first offending row otherwise (a file repeating one id would read as recall 0)."""
    from cosmos_common import UserError

    ids = np.asarray(ids)
    if ids.size == 0:
        return
    lo, hi = int(ids.min()), int(ids.max())
    if lo < 0 or hi >= num_base:
        row = int(np.flatnonzero(((ids < 0) | (ids >= num_base)).any(axis=1))[0])
        raise UserError(f"{label}: ids span [{lo}, {hi}], outside the {num_base} base vectors "
                        f"(expected 0..{num_base - 1}; first in row {row})")
    srt = np.sort(ids, axis=1)
    dup = np.flatnonzero((srt[:, 1:] == srt[:, :-1]).any(axis=1))
    if dup.size:
        r = int(dup[0])
        same = srt[r, 1:][srt[r, 1:] == srt[r, :-1]][0]
        raise UserError(f"{label}: row {r} repeats id {int(same)} ({dup.size} of {len(ids)} "
                        "rows repeat an id); a query's nearest neighbors are distinct vectors")


def write_groundtruth(
    path: str | os.PathLike, ids: np.ndarray, dists: np.ndarray | None = None, overwrite: bool = False
) -> Path:
    """Write ground truth: ``.ivecs`` (ids only) or the big-ann binary format (ids + distances)."""
    path = Path(path)
    ids = np.asarray(ids)
    if path.suffix.lower() == ".ivecs":
        return write_vectors(path, ids.astype(np.int32), "ivecs", overwrite)
    if dists is None:
        raise ValueError(f"{path}: the big-ann ground-truth format needs distances")
    n, k = ids.shape
    if np.asarray(dists).shape != (n, k):
        raise ValueError(f"{path}: ids shape {ids.shape} and dists shape {np.shape(dists)} differ")
    if ids.min(initial=0) < 0:
        raise ValueError(f"{path}: ids must be >= 0 for the uint32 ground-truth format")

    def writer(f):
        f.write(np.array([n, k], dtype="<u4").tobytes())
        f.write(ids.astype("<u4").tobytes())
        f.write(np.asarray(dists, dtype="<f4").tobytes())

    return atomic_write_bytes(path, writer, overwrite)
