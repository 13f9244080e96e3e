"""The :class:`Dataset`: base vectors, queries, ground truth, metric and dtype."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from cosmos_common import UserError

from .io import check_finite, check_groundtruth_ids, read_groundtruth, read_vectors

__all__ = ["Dataset", "METRICS", "INPUT_METRICS", "load_dataset", "real_dataset", "unit_rows",
           "apply_metric"]

#: metrics of a :class:`Dataset` (every index, search and ground truth computes these two)
METRICS = ("l2", "ip")
#: metrics of the user's files: ``cosine`` (``angular``: ann-benchmarks' name) is the inner
#: product of the vectors scaled to unit length, as faiss does it (normalize, then
#: METRIC_INNER_PRODUCT): :func:`apply_metric`
INPUT_METRICS = ("l2", "ip", "cosine", "angular")
_COSINE = ("cosine", "angular")
_DTYPES = ("uint8", "int8", "float32")


@dataclass(frozen=True, eq=False)
class Dataset:
    """A vector dataset.

    Attributes
    ----------
    name : str
        Short name (used in cache keys and trace metadata).
    base : numpy.ndarray, shape (n, dim), uint8 / int8 / float32
        Database vectors; may be a read-only memory map. Float vectors must be finite
        (NaN or infinity: ValueError naming the array and the first bad row).
    queries : numpy.ndarray, shape (q, dim), same dtype family, or None
    groundtruth : numpy.ndarray, shape (q, K), int64, or None
        Ids of the exact nearest base vectors of each query, nearest first.
    metric : str
        ``"l2"`` (squared Euclidean) or ``"ip"`` (inner product, larger is closer).
    """

    name: str
    base: np.ndarray
    queries: np.ndarray | None = None
    groundtruth: np.ndarray | None = None
    metric: str = "l2"
    _fp: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        if self.metric not in METRICS:
            raise UserError(f"dataset {self.name}: metric '{self.metric}' unknown; expected one of {METRICS}")
        b = self.base
        if b.ndim != 2 or b.shape[0] == 0:
            raise UserError(f"dataset {self.name}: base must be a non-empty (n, dim) array, got shape {b.shape}")
        if str(b.dtype) not in _DTYPES:
            raise UserError(f"dataset {self.name}: base dtype {b.dtype} unsupported; expected one of {_DTYPES}")
        check_finite(b, f"dataset {self.name}: base vectors")
        if self.queries is not None:
            q = self.queries
            if q.ndim != 2 or q.shape[1] != b.shape[1]:
                raise UserError(
                    f"dataset {self.name}: queries have dimension {q.shape[1] if q.ndim == 2 else q.shape}"
                    f" but base vectors have dimension {b.shape[1]}"
                )
            check_finite(q, f"dataset {self.name}: queries")
        if self.groundtruth is not None:
            g = self.groundtruth
            if self.queries is None:
                raise UserError(f"dataset {self.name}: ground truth given without queries")
            if g.ndim != 2 or g.shape[0] < len(self.queries):
                raise UserError(
                    f"dataset {self.name}: ground truth has shape {g.shape}, expected at least "
                    f"{len(self.queries)} rows (one per query)"
                )
            if g.size and (g.min() < 0 or g.max() >= b.shape[0]):
                raise UserError(
                    f"dataset {self.name}: ground truth ids span [{g.min()}, {g.max()}], outside the "
                    f"{b.shape[0]} base vectors (was the base subset with n smaller than the ground truth's?)"
                )

    @property
    def n(self) -> int:
        return int(self.base.shape[0])

    @property
    def dim(self) -> int:
        return int(self.base.shape[1])

    @property
    def dtype(self) -> str:
        return str(self.base.dtype)

    @property
    def vector_bytes(self) -> int:
        return self.dim * self.base.dtype.itemsize

    def fingerprint(self) -> str:
        """Content hash (blake2b) of base, queries and metric: the dataset part of cache keys."""
        if "fp" not in self._fp:
            h = hashlib.blake2b(digest_size=16)
            h.update(f"{self.metric}|{self.dtype}|{self.base.shape}".encode())
            for s in range(0, self.n, 1 << 16):
                h.update(np.ascontiguousarray(self.base[s : s + (1 << 16)]).tobytes())
            if self.queries is not None:
                h.update(b"|q|" + np.ascontiguousarray(self.queries).tobytes())
            self._fp["fp"] = h.hexdigest()
        return self._fp["fp"]

    def with_groundtruth(self, groundtruth: np.ndarray) -> "Dataset":
        """The same vectors with ``groundtruth``; the fingerprint (vectors and metric only) is
        carried over, not computed again."""
        return Dataset(name=self.name, base=self.base, queries=self.queries,
                       groundtruth=groundtruth, metric=self.metric, _fp={"fp": self.fingerprint()})

    def subset(self, n: int | None = None, num_queries: int | None = None) -> "Dataset":
        """The first ``n`` base vectors and ``num_queries`` queries.

        Ground truth is kept only if the base is not cut (otherwise it would be wrong) or it is
        recomputed exactly when the base is cut.
        """
        from .groundtruth import exact_knn

        n = self.n if n is None else int(n)
        if not 0 < n <= self.n:
            raise UserError(f"dataset {self.name}: n={n} outside 1..{self.n}")
        q = self.queries
        nq = None if q is None else (len(q) if num_queries is None else int(num_queries))
        if q is not None:
            if not 0 <= nq <= len(q):
                raise UserError(f"dataset {self.name}: num_queries={nq} outside 0..{len(q)}")
            q = q[:nq]
        gt = self.groundtruth
        if gt is not None:
            gt = gt[:nq]
            if n < self.n:
                gt = exact_knn(self.base[:n], q, min(gt.shape[1], n), self.metric)[0]
        if n == self.n and nq == (None if self.queries is None else len(self.queries)):
            return self
        name = self.name if n == self.n else f"{self.name}[:{n}]"
        return Dataset(name=name, base=self.base[:n], queries=q, groundtruth=gt, metric=self.metric)


def _check_vector_file(path, x: np.ndarray, what: str) -> None:
    """A file of ``what`` must hold at least one vector of a dataset dtype (UserError naming
    it): an ``.ivecs``/``.ibin`` file holds ids (ground truth), not vectors."""
    if str(x.dtype) not in _DTYPES:
        raise UserError(f"{path}: holds {x.dtype} values (ids, as ground truth files do); "
                        f"{what} must be {' / '.join(_DTYPES)} (fvecs, fbin, bvecs, u8bin, "
                        f"i8bin)")
    if x.shape[0] == 0:
        raise UserError(f"{path}: holds no vectors; {what} need at least one")


def unit_rows(x: np.ndarray, what: str) -> np.ndarray:
    """``x`` as float32 rows of unit Euclidean length (a zero row has no direction:
    UserError naming ``what`` and the row)."""
    x = np.asarray(x, dtype=np.float32)
    norm = np.sqrt(np.einsum("ij,ij->i", x, x, dtype=np.float64))
    zero = np.flatnonzero(norm == 0)
    if zero.size:
        raise UserError(f"{what}: row {int(zero[0])} is a zero vector, which has no direction "
                        "for the cosine metric")
    return (x / norm[:, None]).astype(np.float32)


def apply_metric(base: np.ndarray, queries: np.ndarray | None, metric: str, what: str):
    """``(base, queries, dataset metric)`` for an input ``metric`` of :data:`INPUT_METRICS`:
    ``cosine``/``angular`` scale every vector to unit length (float32) and search by inner
    product, which then orders neighbours as cosine similarity does; ``l2``/``ip`` leave the
    vectors as they are."""
    if metric not in INPUT_METRICS:
        raise UserError(f"{what}: metric {metric!r} unknown; expected one of {INPUT_METRICS}")
    if metric not in _COSINE:
        return base, queries, metric
    q = None if queries is None else unit_rows(queries, f"{what} (queries)")
    return unit_rows(base, what), q, "ip"


def load_dataset(
    base: str | os.PathLike,
    queries: str | os.PathLike | None = None,
    groundtruth: str | os.PathLike | None = None,
    n: int | None = None,
    metric: str = "l2",
    name: str | None = None,
) -> Dataset:
    """Load a dataset from files in any supported format (see :mod:`graphs.io`).

    ``n`` reads only the first n base vectors (memory-mapped). If the base is cut and a ground
    truth file is given, the ground truth would refer to vectors that are not there, so it is
    recomputed exactly instead (with a note in the name). ``metric`` is one of
    :data:`INPUT_METRICS`; ``cosine`` loads the vectors scaled to unit length, searched by inner
    product (:func:`apply_metric`; the name ends in ``-cosine``).
    """
    b = read_vectors(base, n=n)
    _check_vector_file(base, b, "base vectors")
    check_finite(b, str(base))
    q = read_vectors(queries) if queries is not None else None
    if q is not None:
        _check_vector_file(queries, q, "queries")
        check_finite(q, str(queries))
    if q is not None and q.shape[1] != b.shape[1]:
        raise UserError(f"{queries}: queries have dimension {q.shape[1]} but {base} has dimension {b.shape[1]}")
    if metric in _COSINE:
        name = (name or Path(base).stem + (f"[:{n}]" if n is not None else "")) + "-cosine"
    b, q, metric = apply_metric(b, q, metric, str(base))
    gt = None
    if groundtruth is not None:
        if q is None:
            raise UserError(f"{groundtruth}: ground truth given without queries")
        ids, _ = read_groundtruth(groundtruth)
        if len(ids) < len(q):
            raise UserError(f"{groundtruth}: {len(ids)} rows of ground truth for {len(q)} queries in {queries}")
        total = read_vectors(base).shape[0]
        if n is not None and n < total:
            from .groundtruth import exact_knn

            # the file's ids refer to the full base: recompute exactly for the first n vectors
            gt = exact_knn(b, q, min(ids.shape[1], b.shape[0]), metric)[0]
        else:
            gt = ids[: len(q)]
            check_groundtruth_ids(gt, b.shape[0], f"{groundtruth} (for {base})")
    name = name or Path(base).stem + (f"[:{n}]" if n is not None else "")
    return Dataset(name=name, base=b, queries=q, groundtruth=gt, metric=metric)


_REAL = {
    "siftsmall": ("siftsmall_base.u8bin", "siftsmall_query.u8bin", "siftsmall_groundtruth.ivecs"),
    "bigann10k": ("bigann10k_base.u8bin", "bigann10k_query.u8bin", "bigann10k_groundtruth.ivecs"),
}


def real_dataset(name: str, data_dir: str | os.PathLike | None = None) -> Dataset:
    """One of the small real sets shipped in tests/data/graphs (``siftsmall``, ``bigann10k``).

    ``data_dir`` defaults to ``$COSMOS_DATA`` or the repository's tests/data/graphs.
    """
    if name not in _REAL:
        raise UserError(f"unknown real dataset '{name}'; expected one of {', '.join(_REAL)}")
    d = Path(data_dir or os.environ.get("COSMOS_DATA") or Path(__file__).resolve().parent.parent / "tests" / "data" / "graphs")
    b, q, g = (d / f for f in _REAL[name])
    return load_dataset(b, q, g, metric="l2", name=name)
