"""Reading cluster metadata and probes, writing placements (numpy only).

Inputs (docs/contracts.md): ``clusters.npz`` with keys ``sizes`` (and optionally
``centroids``, ``cluster_adjacency``); a logical trace ``.npz`` (sizes = members per cluster
from ``cluster_ptr``, plus its ``centroids`` and ``cluster_adjacency``, and the probes
``query_ptr``/``search_cluster``); or a CSV with the header ``cluster,size[,c0,c1,...]``.
Every error names the file (and the line, for CSV) and what was expected.
"""

from __future__ import annotations

import csv
import io
import json
import zipfile
from pathlib import Path
from typing import NamedTuple

import numpy as np

from cosmos_common import UserError
from cosmos_common.npz import npz_array

from placement.load import WORK_KINDS, search_work, validate_probes
from placement.policies import _INT64_MAX, validate_sizes

__all__ = ["ClusterMetadata", "Probes", "load_clusters", "load_probes", "save_placement"]


class ClusterMetadata(NamedTuple):
    """Cluster metadata read from a file.

    Attributes
    ----------
    sizes : ndarray, shape (C,), int64
    centroids : ndarray, shape (C, d), float, or None
    adjacency : ndarray, shape (C, A), integer, or None
    unit : str
        ``"vectors"`` when sizes were counted from a trace's ``cluster_ptr``, otherwise
        ``"as given"`` (the file's own unit).
    path : str
    """

    sizes: np.ndarray
    centroids: np.ndarray | None
    adjacency: np.ndarray | None
    unit: str
    path: str


class Probes(NamedTuple):
    """The probes of a logical trace: CSR ``query_ptr`` (Q+1,), ``search_cluster`` (S,), the
    per-search ``weights`` (S,) float64 of the chosen work kind, and the trace's meta dict."""

    query_ptr: np.ndarray
    search_cluster: np.ndarray
    weights: np.ndarray
    work: str
    meta: dict


class _Npz:
    """An open NpzFile whose keys are read through :func:`cosmos_common.npz.npz_array` (an
    object array or a damaged member fails naming the file and the key)."""

    def __init__(self, z, path: Path):
        self._z, self._path, self.files = z, path, z.files

    def __getitem__(self, key: str):
        return npz_array(self._z, key, self._path)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._z.close()
        return False


def _open_npz(path: Path):
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    if path.is_dir():
        raise UserError(f"{path}: is a folder; expected a .npz file")
    with open(path, "rb") as fh:
        magic = fh.read(6)
    if magic.startswith(b"\x93NUMPY"):
        raise UserError(f"{path}: holds a single numpy array (.npy), not a .npz archive of "
                        f"named arrays")
    if not magic.startswith(b"PK"):
        raise UserError(f"{path}: not a .npz (zip) archive of named arrays")
    try:
        z = np.load(path, allow_pickle=False)
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        raise UserError(f"{path}: not a readable .npz file ({exc})") from None
    if not hasattr(z, "files"):  # a single array saved with np.save, renamed .npz
        raise UserError(f"{path}: holds a single numpy array (.npy), not a .npz archive of "
                        f"named arrays")
    return _Npz(z, path)


def _meta(npz, path: Path) -> dict:
    if "meta" not in npz.files:
        return {}
    try:
        meta = json.loads(str(npz["meta"][()]))
    except (ValueError, TypeError) as exc:
        raise UserError(f"{path}: key 'meta' is not a JSON string ({exc})") from None
    if not isinstance(meta, dict):
        raise UserError(f"{path}: key 'meta' must hold a JSON object")
    return meta


def load_clusters(path) -> ClusterMetadata:
    """Read cluster metadata from ``clusters.npz``, a logical trace ``.npz`` or a CSV."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".npz":
        return _load_clusters_npz(path)
    if suffix == ".csv":
        return _load_clusters_csv(path)
    raise UserError(f"{path}: unknown cluster file type {suffix or '(none)'!r}; expected .npz or .csv")


def _load_clusters_npz(path: Path) -> ClusterMetadata:
    with _open_npz(path) as z:
        files = set(z.files)
        if "sizes" in files:
            sizes = np.asarray(z["sizes"])
            unit = "as given"
            if sizes.ndim != 1:
                raise UserError(f"{path}: 'sizes' must be 1-D (one per cluster), got shape {sizes.shape}")
        elif "cluster_ptr" in files:
            ptr = np.asarray(z["cluster_ptr"]).astype(np.int64)
            if ptr.ndim != 1 or ptr.size < 1 or ptr[0] != 0 or np.any(np.diff(ptr) < 0):
                raise UserError(f"{path}: 'cluster_ptr' must be a non-decreasing CSR pointer starting at 0")
            sizes = np.diff(ptr)
            unit = "vectors"
        else:
            raise UserError(
                f"{path}: no 'sizes' (clusters.npz) or 'cluster_ptr' (logical trace) key; found {sorted(files)}"
            )
        C = sizes.shape[0]
        centroids = np.asarray(z["centroids"]) if "centroids" in files else None
        adjacency = np.asarray(z["cluster_adjacency"]) if "cluster_adjacency" in files else None
    if centroids is not None and (centroids.ndim != 2 or centroids.shape[0] != C):
        raise UserError(f"{path}: 'centroids' must have shape ({C}, dims), got {centroids.shape}")
    if adjacency is not None and (adjacency.ndim != 2 or adjacency.shape[0] != C):
        raise UserError(f"{path}: 'cluster_adjacency' must have shape ({C}, A), got {adjacency.shape}")
    if sizes.size and not np.issubdtype(sizes.dtype, np.integer):
        raise UserError(f"{path}: 'sizes' must be integers, got dtype {sizes.dtype}")
    return ClusterMetadata(_validated_sizes(path, sizes), centroids, adjacency, unit, str(path))


def _validated_sizes(path: Path, sizes: np.ndarray) -> np.ndarray:
    """:func:`placement.policies.validate_sizes` (int64, >= 0, fits int64, total below 2**62),
    its ValueError naming the file."""
    if np.asarray(sizes).size == 0:     # a header and no rows: nothing to place
        raise UserError(f"{path}: no clusters (the file holds no cluster rows); expected one "
                        "row per cluster")
    try:
        return validate_sizes(sizes)
    except ValueError as exc:
        raise UserError(f"{path}: {exc}") from None


def _read_text(path: Path) -> str:
    """The file as text: UTF-8 (a byte-order mark is allowed); else ValueError naming the
    line of the first undecodable byte."""
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    if not path.is_file():
        raise UserError(f"{path}: not a file; expected a CSV with the header cluster,size[,c0,c1,...]")
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise UserError(
            f"{path}, line {line}: byte 0x{data[exc.start]:02x} is not UTF-8 text; expected a CSV "
            "with the header cluster,size[,c0,c1,...]"
        ) from None


def _load_clusters_csv(path: Path) -> ClusterMetadata:
    text = _read_text(path)
    with io.StringIO(text, newline="") as fh:
        reader = csv.reader(fh)
        try:
            header = [h.strip() for h in next(reader)]
        except StopIteration:
            raise UserError(f"{path}: empty file; expected the header cluster,size[,c0,c1,...]") from None
        if header[:2] != ["cluster", "size"]:
            raise UserError(f"{path}, line 1: header must start with 'cluster,size', got {','.join(header)!r}")
        dims = len(header) - 2
        expected = [f"c{i}" for i in range(dims)]
        if header[2:] != expected:
            raise UserError(
                f"{path}, line 1: centroid columns must be named c0..c{dims - 1} in order, got {header[2:]}"
            )
        ids, sizes, rows = [], [], []
        for line_no, rec in enumerate(reader, start=2):
            if not rec or all(not f.strip() for f in rec):
                continue
            if len(rec) != len(header):
                raise UserError(f"{path}, line {line_no}: expected {len(header)} fields, got {len(rec)}")
            try:
                cid = int(rec[0])
            except ValueError:
                raise UserError(f"{path}, line {line_no}: cluster {rec[0]!r} is not an integer id") from None
            if abs(cid) > _INT64_MAX:
                raise UserError(f"{path}, line {line_no}: cluster id {cid} is out of range "
                                 "(ids are 0..clusters-1)")
            ids.append(cid)
            try:
                size = int(rec[1])
            except ValueError:
                raise UserError(f"{path}, line {line_no}: size {rec[1]!r} is not an integer") from None
            if size < 0:
                raise UserError(f"{path}, line {line_no}: size {size} is negative")
            if size > _INT64_MAX:
                raise UserError(f"{path}, line {line_no}: size {size} does not fit in int64 "
                                 "(at most 2**63 - 1)")
            sizes.append(size)
            if dims:
                try:
                    rows.append([float(v) for v in rec[2:]])
                except ValueError:
                    raise UserError(f"{path}, line {line_no}: centroid coordinates must be numbers") from None
    C = len(ids)
    ids_a = np.array(ids, dtype=np.int64)
    if C and (ids_a.min() < 0 or ids_a.max() >= C or np.unique(ids_a).size != C):
        raise UserError(f"{path}: cluster ids must be 0..{C - 1}, each exactly once (found {C} rows)")
    order = np.argsort(ids_a)
    sizes_a = np.array(sizes, dtype=np.int64)[order]
    centroids = np.array(rows, dtype=np.float64)[order] if dims else None
    if centroids is not None and not np.all(np.isfinite(centroids)):
        raise UserError(f"{path}: centroid coordinates must be finite")
    return ClusterMetadata(_validated_sizes(path, sizes_a), centroids, None, "as given", str(path))


def load_probes(path, work: str = "searches", num_clusters: int | None = None,
                clusters_file=None, cluster_sizes=None, centroids=None) -> Probes:
    """Read the probes (and optional per-search work) of a logical trace ``.npz``.

    ``work`` is one of ``searches`` (1 per search), ``hops`` or ``distances`` (see
    :func:`placement.search_work`). With ``num_clusters``, the trace must be of an index with
    that many clusters (its ``cluster_ptr``, else its meta ``num_clusters``, when it has one)
    and probe only those; ``clusters_file`` names where ``num_clusters`` came from in the
    message. With ``cluster_sizes`` (in vectors) and ``centroids``, a trace that states its
    clusters' sizes (``cluster_ptr``) or centroids must have those: the clusters file and the
    trace of one index.
    """
    path = Path(path)
    if work not in WORK_KINDS:
        raise UserError(f"unknown work kind {work!r}; valid choices: {', '.join(WORK_KINDS)}")
    with _open_npz(path) as z:
        missing = [k for k in ("query_ptr", "search_cluster") if k not in z.files]
        if work != "searches":
            missing += [k for k in ("search_hop_ptr", "hop_read_ptr") if k not in z.files]
        if missing:
            raise UserError(f"{path}: not a logical trace: missing key(s) {', '.join(missing)}")
        meta = _meta(z, path)
        try:
            qp, sc = validate_probes(z["query_ptr"], z["search_cluster"], num_clusters)
            arrays = {k: z[k] for k in ("search_cluster", "search_hop_ptr", "hop_read_ptr") if k in z.files}
            weights = search_work(arrays, work)
        except ValueError as exc:
            raise UserError(f"{path}: {exc}") from None
        if num_clusters is not None:  # probes in range, but of an index with other clusters?
            _check_cluster_count(z, meta, path, int(num_clusters), clusters_file)
        if cluster_sizes is not None and "cluster_ptr" in z.files:
            _check_cluster_sizes(np.asarray(z["cluster_ptr"]), path,
                                 np.asarray(cluster_sizes), clusters_file)
        if centroids is not None and "centroids" in z.files:
            _check_centroids(np.asarray(z["centroids"]), path, np.asarray(centroids),
                             clusters_file)
    return Probes(qp, sc, weights, work, meta)


def _check_centroids(own: np.ndarray, path: Path, given: np.ndarray, clusters_file) -> None:
    """The trace's centroids must be ``given`` (to float32 rounding) where both have them."""
    if own.shape != given.shape:
        if own.ndim == given.ndim == 2 and own.shape[0] == given.shape[0]:   # other dims
            raise UserError(f"{path}: the trace's centroids have shape {own.shape}, "
                            f"{clusters_file or 'the clusters file'}'s {given.shape}; give the "
                            "clusters file and the trace of the same index")
        return
    close = np.isclose(own.astype(np.float64), given.astype(np.float64), rtol=1e-5, atol=1e-6)
    bad = np.flatnonzero(~close.all(axis=1))
    if bad.size:
        raise UserError(f"{path}: cluster {int(bad[0])}'s centroid differs from "
                        f"{clusters_file or 'the clusters file'}'s ({bad.size} of "
                        f"{given.shape[0]} clusters differ); give the clusters file and the "
                        "trace of the same index")


def _check_cluster_sizes(ptr: np.ndarray, path: Path, sizes: np.ndarray, clusters_file) -> None:
    """The trace's cluster sizes (``cluster_ptr``) must be ``sizes`` (same count checked)."""
    own = np.diff(ptr.astype(np.int64))
    if own.shape != sizes.shape:
        return                  # the count check names that mismatch
    differ = np.flatnonzero(own != sizes)
    if differ.size:
        c = int(differ[0])
        where = clusters_file or "the clusters file"
        raise UserError(
            f"{path}: cluster {c} holds {int(own[c])} vectors in the trace but {int(sizes[c])} in "
            f"{where} ({differ.size} of {sizes.size} clusters differ); give the clusters file "
            "and the trace of the same index"
        )


def _check_cluster_count(z, meta: dict, path: Path, num_clusters: int, clusters_file) -> None:
    """The trace's own cluster count must be ``num_clusters`` (when the trace states one)."""
    own, where = None, None
    if "cluster_ptr" in z.files:
        ptr = np.asarray(z["cluster_ptr"])
        if ptr.ndim == 1 and ptr.size >= 1:
            own, where = int(ptr.size) - 1, "cluster_ptr"
    elif isinstance(meta.get("num_clusters"), int) and not isinstance(meta["num_clusters"], bool):
        own, where = int(meta["num_clusters"]), "meta num_clusters"
    if own is not None and own != num_clusters:
        other = f"{clusters_file} has {num_clusters}" if clusters_file else f"{num_clusters} were expected"
        raise UserError(
            f"{path}: the trace is of an index with {own} clusters ({where}), but {other}; "
            "give the clusters file and the trace of the same index"
        )


def save_placement(path, device, sizes=None, *, overwrite: bool = False) -> Path:
    """Write ``cluster,device[,size]`` CSV through a temporary file and a rename
    (:func:`cosmos_common.outdir.atomic_write`).

    Refuses to replace an existing file unless ``overwrite`` is true (FileExistsError).
    """
    from cosmos_common.outdir import atomic_write

    path = Path(path)
    dev = np.asarray(device, dtype=np.int64)
    cols = [np.arange(dev.shape[0]), dev]
    header = "cluster,device"
    if sizes is not None:
        cols.append(np.asarray(sizes, dtype=np.int64))
        header += ",size"

    def write(tmp: Path) -> None:
        with open(tmp, "w") as fh:
            np.savetxt(fh, np.column_stack(cols), fmt="%d", delimiter=",", header=header,
                       comments="")

    return atomic_write(path, write, overwrite=overwrite)
