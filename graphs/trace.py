"""The logical ANNS trace (docs/contracts.md section 1): container, save/load, statistics.

A trace is hardware independent: which clusters each query probed, and for each cluster search
the hops (expanded node, adjacency-list length, vectors read for distances, candidate-list
insertions). A trace of a scan index (IVF-PQ or exact scan, graphs.ivfpq) has no hops: each
of its searches is a scan element (list, first code, number of codes; bytes per code in the
meta ``code_bytes``) and each query may read some vectors in full to re-rank its candidates
(``rerank_ptr``/``rerank_node``). Arrays keep the dtypes of the contract table in memory and on disk (node ids
int32, pointers int64, ``result_ids`` int64); cast to int64 before computing byte addresses.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from cosmos_common import UserError
from cosmos_common.npz import npz_array, npz_arrays

from .io import atomic_write_bytes

__all__ = ["LogicalTrace", "save_trace", "load_trace", "TRACE_FORMAT_VERSION", "save_clusters", "load_clusters"]

TRACE_FORMAT_VERSION = 1

# key -> dtype (contract table, in order)
TRACE_ARRAYS = {
    "cluster_ptr": np.int64,
    "cluster_nodes": np.int32,
    "centroids": np.float32,
    "cluster_adjacency": np.int32,
    "query_ptr": np.int64,
    "search_cluster": np.int32,
    "search_entry": np.int32,
    "search_hop_ptr": np.int64,
    "hop_node": np.int32,
    "hop_degree": np.int32,
    "hop_read_ptr": np.int64,
    "read_node": np.int32,
    "hop_cand_inserts": np.int32,
    "result_ids": np.int64,
}
# keys added beyond the contract table (optional on load)
EXTRA_ARRAYS = {"query_recall": np.float32}
# scan elements (optional on load: empty for a graph trace and in files written before them)
SCAN_ARRAYS = {"scan_first": np.int64, "scan_count": np.int64, "rerank_ptr": np.int64,
               "rerank_node": np.int32}
#: a cluster-template trace (graphs.templates): its node ids number only the nodes it touches,
#: ``node_pos`` giving each one's logical position (``cluster_nodes`` is then empty), and
#: ``template_of`` the template cluster each logical cluster's searches ran on
TEMPLATE_ARRAYS = {"node_pos": np.int64, "template_of": np.int32}
#: meta ``index_kind`` of a trace without one (files written before scan traces existed)
DEFAULT_INDEX_KIND = "graph"
SCAN_KINDS = ("ivfpq", "exact")

REQUIRED_META = (
    "dataset", "n", "dim", "dtype", "metric", "vector_bytes", "max_degree", "cand_list_len",
    "num_clusters", "num_probes", "k", "recall", "seed", "num_queries", "format_version",
)


@dataclass(eq=False)
class LogicalTrace:
    """Logical trace of a batch of queries (fields: docs/contracts.md section 1).

    ``query_recall`` (Q,) float32 is an added key: recall@k of each query (NaN without
    ground truth).
    """

    meta: dict
    cluster_ptr: np.ndarray
    cluster_nodes: np.ndarray
    centroids: np.ndarray
    cluster_adjacency: np.ndarray
    query_ptr: np.ndarray
    search_cluster: np.ndarray
    search_entry: np.ndarray
    search_hop_ptr: np.ndarray
    hop_node: np.ndarray
    hop_degree: np.ndarray
    hop_read_ptr: np.ndarray
    read_node: np.ndarray
    hop_cand_inserts: np.ndarray
    result_ids: np.ndarray
    query_recall: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))
    scan_first: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    scan_count: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    rerank_ptr: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    rerank_node: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    node_pos: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    template_of: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))

    def __post_init__(self):
        for k, dt in {**TRACE_ARRAYS, **EXTRA_ARRAYS, **SCAN_ARRAYS, **TEMPLATE_ARRAYS}.items():
            setattr(self, k, np.asarray(getattr(self, k), dtype=dt))
        self.validate()

    # ------------------------------------------------------------------ structure
    @property
    def num_queries(self) -> int:
        return len(self.query_ptr) - 1

    @property
    def num_clusters(self) -> int:
        return len(self.cluster_ptr) - 1

    @property
    def num_searches(self) -> int:
        return len(self.search_cluster)

    @property
    def is_templated(self) -> bool:
        """A cluster-template trace (graphs.templates): node ids number the touched nodes,
        ``node_pos`` holds their logical positions."""
        return len(self.node_pos) > 0

    @property
    def num_nodes(self) -> int:
        """Node ids of the trace: the touched nodes of a templated trace, else every vector."""
        return len(self.node_pos) if self.is_templated else len(self.cluster_nodes)

    @property
    def index_kind(self) -> str:
        """``"graph"`` (hops), ``"ivfpq"`` or ``"exact"`` (scan elements)."""
        return self.meta.get("index_kind", DEFAULT_INDEX_KIND)

    @property
    def is_scan(self) -> bool:
        return self.index_kind in SCAN_KINDS

    def validate(self) -> None:
        """Check the CSR structure and the meta keys (ValueError naming the field)."""
        missing = [k for k in REQUIRED_META if k not in self.meta]
        if missing:
            raise ValueError(f"trace meta: missing keys {missing}")

        def csr(name, ptr, m):
            if len(ptr) < 1 or ptr[0] != 0 or ptr[-1] != m or np.any(np.diff(ptr) < 0):
                raise ValueError(f"trace: {name} is not a CSR pointer over {m} entries")

        csr("cluster_ptr", self.cluster_ptr,
            int(self.meta["n"]) if self.is_templated else len(self.cluster_nodes))
        csr("query_ptr", self.query_ptr, len(self.search_cluster))
        csr("search_hop_ptr", self.search_hop_ptr, len(self.hop_node))
        csr("hop_read_ptr", self.hop_read_ptr, len(self.read_node))
        S, H = len(self.search_cluster), len(self.hop_node)
        if len(self.search_entry) != S or len(self.search_hop_ptr) != S + 1:
            raise ValueError("trace: search_entry / search_hop_ptr lengths do not match search_cluster")
        if len(self.hop_degree) != H or len(self.hop_cand_inserts) != H or len(self.hop_read_ptr) != H + 1:
            raise ValueError("trace: hop_degree / hop_cand_inserts / hop_read_ptr lengths do not match hop_node")
        Q = self.num_queries
        if self.result_ids.ndim != 2 or self.result_ids.shape[0] != Q:
            raise ValueError(f"trace: result_ids shape {self.result_ids.shape}, expected ({Q}, k)")
        C = self.num_clusters
        if self.centroids.ndim != 2 or self.centroids.shape[0] != C:
            raise ValueError(f"trace: centroids shape {self.centroids.shape}, expected ({C}, dim)")
        if self.cluster_adjacency.shape[0] != C:
            raise ValueError(f"trace: cluster_adjacency has {self.cluster_adjacency.shape[0]} rows, expected {C}")
        if S and (self.search_cluster.min() < 0 or self.search_cluster.max() >= C):
            raise ValueError("trace: search_cluster out of range 0..C-1")
        if len(self.query_recall) not in (0, Q):
            raise ValueError(f"trace: query_recall has {len(self.query_recall)} entries, expected {Q}")
        self._validate_scan()
        self._validate_templates()

    def _validate_templates(self) -> None:
        """A templated trace: no ``cluster_nodes``, ``node_pos`` strictly increasing inside
        the logical positions, every node id below its length, ``template_of`` one template
        (a logical cluster) per cluster."""
        if not self.is_templated:
            if len(self.template_of):
                raise ValueError("trace: template_of given without node_pos")
            return
        if self.is_scan:
            raise ValueError("trace: a scan trace cannot be templated")
        n, m, C = int(self.meta["n"]), len(self.node_pos), self.num_clusters
        if len(self.cluster_nodes):
            raise ValueError("trace: a templated trace (node_pos) has no cluster_nodes")
        if self.node_pos[0] < 0 or self.node_pos[-1] >= n or np.any(np.diff(self.node_pos) <= 0):
            raise ValueError(f"trace: node_pos must increase strictly inside [0, {n})")
        for name in ("search_entry", "hop_node", "read_node"):
            a = getattr(self, name)
            if a.size and (a.min() < 0 or a.max() >= m):
                raise ValueError(f"trace: {name} outside the {m} node ids of node_pos")
        t = self.template_of
        if len(t) != C or (C and (t.min() < 0 or t.max() >= C)):
            raise ValueError(f"trace: template_of needs one cluster id in [0, {C}) per cluster")

    def _validate_scan(self) -> None:
        """A scan trace: one scan element per search inside its list, no hops, ``code_bytes``
        >= 1, re-rank reads as a CSR over the queries; a graph trace: no scan arrays."""
        kind = self.index_kind
        if kind != DEFAULT_INDEX_KIND and kind not in SCAN_KINDS:
            raise ValueError(f"trace meta: index_kind {kind!r}, expected one of "
                             f"{(DEFAULT_INDEX_KIND, *SCAN_KINDS)}")
        S, Q = self.num_searches, self.num_queries
        if not self.is_scan:
            for k in SCAN_ARRAYS:
                if len(getattr(self, k)):
                    raise ValueError(f"trace: {k} given in a graph trace (index_kind 'graph')")
            return
        cb = self.meta.get("code_bytes")
        if isinstance(cb, bool) or not isinstance(cb, int) or cb < 1:
            raise ValueError(f"trace meta: code_bytes {cb!r}, expected an integer >= 1 (bytes per code)")
        if len(self.scan_first) != S or len(self.scan_count) != S:
            raise ValueError(f"trace: scan_first / scan_count need one entry per search ({S})")
        if len(self.hop_node):
            raise ValueError(f"trace: a {kind} trace has scan elements, not hops")
        if S:
            c = self.search_cluster
            lo, hi = self.cluster_ptr[c], self.cluster_ptr[c + 1]
            if np.any(self.scan_count < 0) or np.any(self.scan_first < lo) or \
                    np.any(self.scan_first + self.scan_count > hi):
                raise ValueError("trace: a scan element (scan_first, scan_count) leaves its list")
        if len(self.rerank_ptr) != Q + 1:
            raise ValueError(f"trace: rerank_ptr has {len(self.rerank_ptr)} entries, expected {Q + 1}")
        csr_ok = self.rerank_ptr[0] == 0 and self.rerank_ptr[-1] == len(self.rerank_node) and \
            not np.any(np.diff(self.rerank_ptr) < 0)
        if not csr_ok:
            raise ValueError(f"trace: rerank_ptr is not a CSR pointer over {len(self.rerank_node)} entries")

    # ------------------------------------------------------------------ statistics
    def per_search(self) -> dict:
        """Per-search work: ``hops`` and ``reads`` (vectors read after the entry; for a scan
        trace: 0 hops, ``reads`` the codes scanned), (S,) int64."""
        if self.is_scan:
            return {"hops": np.zeros(self.num_searches, np.int64), "reads": self.scan_count.copy()}
        hops = np.diff(self.search_hop_ptr)
        reads = self.hop_read_ptr[self.search_hop_ptr[1:]] - self.hop_read_ptr[self.search_hop_ptr[:-1]]
        return {"hops": hops, "reads": reads}

    def node_bytes_default(self) -> int:
        """Adjacency-list bytes of a node: a uint32 degree + ``max_degree`` uint32 neighbor ids
        (DiskANN's fixed-size node layout without the inline vector, which is counted apart)."""
        return 4 + 4 * int(self.meta["max_degree"])

    def per_query(self, node_bytes: int | None = None, vector_bytes: int | None = None) -> dict:
        """Per-query work, each (Q,) int64 (``recall`` float64 if known).

        - ``searches``: clusters probed
        - ``hops``: node reads (adjacency lists)
        - ``distances``: searches (entry vector) + vectors read at the hops
        - ``cand_inserts``: candidate-list insertions
        - ``bytes``: hops x node_bytes + distances x vector_bytes

        ``node_bytes`` and ``vector_bytes`` must be >= 1 (ValueError otherwise).
        """
        if self.is_scan:
            return self._per_query_scan(vector_bytes)
        node_bytes = self.node_bytes_default() if node_bytes is None else int(node_bytes)
        vector_bytes = int(self.meta["vector_bytes"]) if vector_bytes is None else int(vector_bytes)
        for name, v in (("node_bytes", node_bytes), ("vector_bytes", vector_bytes)):
            if v < 1:
                raise ValueError(f"{name}={v} must be >= 1 (bytes read per node / per vector)")
        qp = self.query_ptr
        sp = self.search_hop_ptr
        searches = np.diff(qp)
        hops = sp[qp[1:]] - sp[qp[:-1]]
        hp = self.hop_read_ptr
        reads = hp[sp[qp[1:]]] - hp[sp[qp[:-1]]]
        ins_c = np.concatenate([[0], np.cumsum(self.hop_cand_inserts, dtype=np.int64)])
        inserts = ins_c[sp[qp[1:]]] - ins_c[sp[qp[:-1]]]
        distances = searches + reads
        out = {
            "searches": searches,
            "hops": hops,
            "distances": distances,
            "cand_inserts": inserts,
            "bytes": hops * node_bytes + distances * vector_bytes,
        }
        if len(self.query_recall):
            out["recall"] = self.query_recall.astype(np.float64)
        return out

    def _per_query_scan(self, vector_bytes: int | None = None) -> dict:
        """Per-query work of a scan trace, each (Q,) int64: ``searches`` (lists scanned),
        ``codes`` (codes or, for exact scan, vectors scanned), ``rerank_reads`` (vectors read
        in full to re-rank), ``distances`` (codes + rerank_reads), ``hops`` and
        ``cand_inserts`` (0: no graph), ``bytes`` = codes x code_bytes + rerank_reads x
        vector_bytes."""
        vector_bytes = int(self.meta["vector_bytes"]) if vector_bytes is None else int(vector_bytes)
        if vector_bytes < 1:
            raise ValueError(f"vector_bytes={vector_bytes} must be >= 1 (bytes read per vector)")
        qp = self.query_ptr
        cc = np.concatenate([[0], np.cumsum(self.scan_count, dtype=np.int64)])
        codes = cc[qp[1:]] - cc[qp[:-1]]
        rr = np.diff(self.rerank_ptr)
        zero = np.zeros(self.num_queries, np.int64)
        out = {"searches": np.diff(qp), "hops": zero, "codes": codes, "rerank_reads": rr,
               "distances": codes + rr, "cand_inserts": zero.copy(),
               "bytes": codes * int(self.meta["code_bytes"]) + rr * vector_bytes}
        if len(self.query_recall):
            out["recall"] = self.query_recall.astype(np.float64)
        return out

    def per_cluster(self) -> dict:
        """Accesses per cluster, each (C,) int64: ``searches``, ``hops``, ``reads``."""
        C = self.num_clusters
        ps = self.per_search()
        return {
            "searches": np.bincount(self.search_cluster, minlength=C).astype(np.int64),
            "hops": np.bincount(self.search_cluster, weights=ps["hops"], minlength=C).astype(np.int64),
            "reads": np.bincount(self.search_cluster, weights=ps["reads"], minlength=C).astype(np.int64),
        }

    def summary(self, node_bytes: int | None = None, vector_bytes: int | None = None) -> dict:
        """Mean / median / p99 / max of the per-query work, recall and per-cluster load spread."""
        pq = self.per_query(node_bytes, vector_bytes)
        out = {"num_queries": self.num_queries, "recall": self.meta.get("recall")}
        for key in ("hops", "distances", "cand_inserts", "bytes"):
            v = pq[key].astype(np.float64)
            out[key] = {
                "mean": float(v.mean()) if v.size else 0.0,
                "p50": float(np.percentile(v, 50)) if v.size else 0.0,
                "p99": float(np.percentile(v, 99)) if v.size else 0.0,
                "max": float(v.max(initial=0)),
            }
        pc = self.per_cluster()["searches"]
        out["cluster_searches_max_over_mean"] = float(pc.max() / pc.mean()) if pc.sum() else 0.0
        return out


def array_checksum(a: np.ndarray) -> str:
    """blake2b-128 over an array's dtype, shape and bytes: the per-array checksum
    :func:`save_trace` stores in the meta (``checksums``) and readers verify."""
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{a.dtype.str}{a.shape}".encode())
    h.update(np.ascontiguousarray(a).data)
    return h.hexdigest()


def save_trace(path: str | os.PathLike, trace: LogicalTrace, overwrite: bool = False) -> Path:
    """Write the trace as one .npz (temporary name, then rename). Refuses to overwrite unless asked.

    The JSON meta gets an added ``checksums`` entry (blake2b per array) checked by
    :func:`load_trace`.
    """
    keys = (*TRACE_ARRAYS, *EXTRA_ARRAYS, *(SCAN_ARRAYS if trace.is_scan else ()),
            *(TEMPLATE_ARRAYS if trace.is_templated else ()))
    arrays = {k: getattr(trace, k) for k in keys}
    meta = dict(trace.meta)
    meta["checksums"] = {k: array_checksum(v) for k, v in arrays.items()}
    arrays["meta"] = np.array(json.dumps(meta, sort_keys=True))
    return atomic_write_bytes(path, lambda f: np.savez(f, **arrays), overwrite=overwrite)


#: columns of the DRAM model's per-request records (dram.output.REQUEST_DTYPES), told apart
#: from a logical trace in load_trace's message
_DRAM_RECORDS = ("addr", "is_write", "arrival_cycle", "completion_cycle")


def check_archive(path: str | os.PathLike) -> None:
    """UserError naming what ``path`` holds when it is not a .npz (zip) archive at all: a
    single .npy array, or anything else (text, binary junk), before numpy reads it (the one
    check of both trace readers, this module's and cosmos.trace_input's)."""
    try:
        with open(path, "rb") as f:
            magic = f.read(6)
    except OSError as exc:
        raise UserError(f"{path}: cannot read the trace file ({exc.strerror or exc})") from None
    want = "expected a logical trace .npz (cosmos graphs trace, graphs.save_trace)"
    if magic.startswith(b"\x93NUMPY"):
        raise UserError(f"{path}: not a trace file: it holds a single numpy array (.npy); {want}")
    if not magic.startswith(b"PK"):
        raise UserError(f"{path}: not a trace file: not a .npz (zip) archive; {want}")


def load_trace(path: str | os.PathLike, verify: bool = True) -> LogicalTrace:
    """Read a trace written by :func:`save_trace`. Its arrays are read-only memory maps of
    the file (cosmos_common.npz): nothing is read until used.

    Raises
    ------
    ValueError
        If the file is not a readable trace, a key is missing, a checksum does not match
        (``verify``) or the structure is inconsistent; the message names the file and key.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such trace file")
    check_archive(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            if "meta" not in z.files and set(_DRAM_RECORDS) <= set(z.files):
                raise UserError(f"{path}: not a logical trace: it holds a DRAM model's "
                                "per-request records (requests.npz of cosmos dram replay); "
                                "a logical trace comes from cosmos graphs trace")
            meta = json.loads(str(npz_array(z, "meta", path)))
            missing = [k for k in TRACE_ARRAYS if k not in z.files]
            if missing:
                raise ValueError(f"missing keys {missing}")
            arrays = npz_arrays(z, TRACE_ARRAYS, path, mmap=True)
            for k in (*EXTRA_ARRAYS, *SCAN_ARRAYS, *TEMPLATE_ARRAYS):
                if k in z.files:
                    arrays[k] = npz_array(z, k, path, mmap=True)
    except UserError:
        raise
    except ValueError as exc:
        raise ValueError(f"{path}: not a valid trace file ({exc})") from exc
    except Exception as exc:
        raise ValueError(f"{path}: not a readable trace file ({type(exc).__name__}: {exc})") from exc
    if meta.get("format_version") != TRACE_FORMAT_VERSION:
        raise ValueError(f"{path}: trace format_version {meta.get('format_version')}, expected {TRACE_FORMAT_VERSION}")
    sums = meta.pop("checksums", {})
    if verify:
        for k, a in arrays.items():
            if k in sums and array_checksum(a) != sums[k]:
                raise ValueError(f"{path}: checksum of '{k}' does not match (corrupted file)")
    try:
        return LogicalTrace(meta=meta, **arrays)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from exc


def save_clusters(path: str | os.PathLike, sizes, centroids, cluster_adjacency, overwrite: bool = False) -> Path:
    """Write the cluster metadata of contract section 2 (``clusters.npz``: sizes, centroids,
    cluster_adjacency). ``sizes`` are in the caller's unit (graphs writes vectors)."""
    arrays = {
        "sizes": np.asarray(sizes, dtype=np.int64),
        "centroids": np.asarray(centroids, dtype=np.float32),
        "cluster_adjacency": np.asarray(cluster_adjacency, dtype=np.int32),
    }
    C = len(arrays["sizes"])
    if arrays["centroids"].shape[0] != C or arrays["cluster_adjacency"].shape[0] != C:
        raise ValueError(f"{path}: sizes, centroids and cluster_adjacency must all have {C} rows")
    return atomic_write_bytes(path, lambda f: np.savez(f, **arrays), overwrite=overwrite)


def load_clusters(path: str | os.PathLike) -> dict:
    """Read ``clusters.npz`` into a dict of the three arrays."""
    with np.load(path, allow_pickle=False) as z:
        missing = [k for k in ("sizes", "centroids", "cluster_adjacency") if k not in z.files]
        if missing:
            raise ValueError(f"{path}: missing keys {missing}")
        return npz_arrays(z, ("sizes", "centroids", "cluster_adjacency"), path)
