"""Fuzz tests (hypothesis) of the dataset readers, graphs/io.py and graphs/dataset.py: on any
bytes, a reader returns a well-formed array or raises the project's own error type
(cosmos_common.UserError, of which graphs.io.FormatError is one) naming the file; never
another exception, never a crash inside numpy."""

from __future__ import annotations

import struct
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cosmos_common import UserError
from graphs.dataset import load_dataset
from graphs.io import FORMATS, check_finite, groundtruth_shape, read_groundtruth, read_vectors

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

_DIR = Path(tempfile.mkdtemp(prefix="cosmos-fuzz-"))


def _file(name: str, data: bytes) -> Path:
    path = _DIR / name
    path.write_bytes(data)
    return path


def _bin_header(draw, itemsize: int) -> bytes:
    """A ``(n, d)`` header, often consistent with the payload, sometimes not."""
    n = draw(st.one_of(st.integers(0, 6), st.integers(0, 2**32 - 1)))
    d = draw(st.one_of(st.integers(0, 6), st.integers(0, 2**32 - 1)))
    consistent = n * d * itemsize if n * d * itemsize < 4096 else 0
    extra = draw(st.integers(-8, 8))
    size = max(0, consistent + (extra if draw(st.booleans()) else 0))
    return struct.pack("<II", n, d) + draw(st.binary(min_size=size, max_size=size))


@st.composite
def bin_files(draw):
    fmt = draw(st.sampled_from([f for f, (_, layout) in FORMATS.items() if layout == "bin"]))
    itemsize = FORMATS[fmt][0].itemsize
    data = _bin_header(draw, itemsize) if draw(st.booleans()) else draw(st.binary(max_size=64))
    return fmt, data


@st.composite
def vecs_files(draw):
    fmt = draw(st.sampled_from([f for f, (_, layout) in FORMATS.items() if layout == "vecs"]))
    itemsize = FORMATS[fmt][0].itemsize
    if draw(st.booleans()):
        return fmt, draw(st.binary(max_size=64))
    rows = []
    for _ in range(draw(st.integers(0, 4))):
        d = draw(st.one_of(st.integers(-2, 5), st.integers(-2**31, 2**31 - 1)))
        payload = max(0, min(d, 5)) * itemsize + draw(st.integers(0, 2)) * draw(st.booleans())
        rows.append(struct.pack("<i", d) + draw(st.binary(min_size=payload, max_size=payload)))
    return fmt, b"".join(rows)


def _check_array(x: np.ndarray, fmt: str) -> None:
    assert isinstance(x, np.ndarray) and x.ndim == 2
    assert x.dtype == FORMATS[fmt][0]


@SETTINGS
@given(st.one_of(bin_files(), vecs_files()), st.one_of(st.none(), st.integers(0, 8)))
def test_read_vectors_returns_an_array_or_a_user_error(spec, n):
    fmt, data = spec
    path = _file(f"v.{fmt}", data)
    try:
        x = read_vectors(path, n=n)
    except UserError as exc:
        assert str(path) in str(exc)
        return
    _check_array(x, fmt)
    if n is not None:
        assert len(x) == n
    try:
        check_finite(x, str(path))
    except UserError as exc:
        assert str(path) in str(exc) and "row" in str(exc)


@SETTINGS
@given(st.sampled_from(["ivecs", "ibin", "bin"]), st.binary(max_size=96),
       st.booleans(), st.integers(0, 5), st.integers(0, 5), st.booleans())
def test_ground_truth_readers_return_ids_or_a_user_error(ext, junk, structured, n, k, exact):
    if structured and ext == "bin":  # big-ann: n, k, n*k uint32 ids, n*k float32 distances
        body = n * k * 8 + (0 if exact else len(junk) % 7)
        data = struct.pack("<II", n, k) + (junk * (body // max(len(junk), 1) + 1))[:body]
    else:
        data = junk
    path = _file(f"gt.{ext}", data)
    try:
        ids, _ = read_groundtruth(path)
        rows, width = groundtruth_shape(path)
    except UserError as exc:
        assert str(path) in str(exc)
        return
    assert ids.ndim == 2 and (rows, width) == ids.shape


@SETTINGS
@given(st.one_of(bin_files(), vecs_files()), st.one_of(st.none(), bin_files(), vecs_files()),
       st.one_of(st.none(), st.sampled_from(["ivecs", "ibin"])),
       st.one_of(st.none(), st.integers(1, 6)))
def test_load_dataset_returns_a_dataset_or_a_user_error(base, queries, gt_ext, n):
    bpath = _file(f"base.{base[0]}", base[1])
    qpath = None if queries is None else _file(f"queries.{queries[0]}", queries[1])
    gpath = None
    if gt_ext is not None:  # ids 0..3 for every query of a well-formed queries file
        rows = 3
        gt = np.tile(np.arange(4, dtype="<i4"), (rows, 1))
        if gt_ext == "ibin":
            data = struct.pack("<II", rows, 4) + gt.tobytes()
        else:
            data = b"".join(struct.pack("<i", 4) + r.tobytes() for r in gt)
        gpath = _file(f"gt.{gt_ext}", data)
    try:
        ds = load_dataset(bpath, qpath, gpath, n=n)
    except UserError as exc:
        assert any(str(p) in str(exc) for p in (bpath, qpath, gpath) if p is not None), exc
        return
    assert ds.n >= 1 and ds.base.ndim == 2
    if ds.queries is not None:
        assert ds.queries.shape[1] == ds.dim
