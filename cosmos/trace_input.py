"""Accept a logical ANNS trace (docs/contracts.md, section 1) in any of its shapes.

``as_trace`` takes the object ``graphs.trace.load_trace`` returns (attributes named as in the
contract), a ``dict`` / ``np.lib.npyio.NpzFile`` with those keys, or a path to the ``.npz``
file, and returns a :class:`TraceArrays` with validated int64 arrays. cosmos depends only on
the contract's array names, never on graphs internals.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import numpy as np

#: Arrays cosmos needs from the logical trace (contract 1).
REQUIRED = ("cluster_ptr", "cluster_nodes", "query_ptr", "search_cluster", "search_entry",
            "search_hop_ptr", "hop_node", "hop_degree", "hop_read_ptr", "read_node",
            "hop_cand_inserts")
OPTIONAL = ("cluster_adjacency", "centroids", "result_ids")
META_REQUIRED = ("dim", "vector_bytes", "max_degree", "k")


@dataclass(frozen=True)
class TraceArrays:
    """The logical trace as validated int64 arrays plus its metadata dict."""

    meta: dict
    cluster_ptr: np.ndarray
    cluster_nodes: np.ndarray
    query_ptr: np.ndarray
    search_cluster: np.ndarray
    search_entry: np.ndarray
    search_hop_ptr: np.ndarray
    hop_node: np.ndarray
    hop_degree: np.ndarray
    hop_read_ptr: np.ndarray
    read_node: np.ndarray
    hop_cand_inserts: np.ndarray
    cluster_adjacency: np.ndarray | None = None
    centroids: np.ndarray | None = None

    @property
    def num_queries(self) -> int:
        return int(self.query_ptr.shape[0] - 1)

    @property
    def num_clusters(self) -> int:
        return int(self.cluster_ptr.shape[0] - 1)

    @property
    def n(self) -> int:
        return int(self.cluster_nodes.shape[0])

    def head(self, num_queries: int) -> "TraceArrays":
        """The first ``num_queries`` queries (clusters unchanged)."""
        q = min(int(num_queries), self.num_queries)
        s_end = int(self.query_ptr[q])
        h_end = int(self.search_hop_ptr[s_end])
        r_end = int(self.hop_read_ptr[h_end])
        meta = dict(self.meta, num_queries=q)
        return TraceArrays(
            meta=meta, cluster_ptr=self.cluster_ptr, cluster_nodes=self.cluster_nodes,
            query_ptr=self.query_ptr[: q + 1], search_cluster=self.search_cluster[:s_end],
            search_entry=self.search_entry[:s_end],
            search_hop_ptr=self.search_hop_ptr[: s_end + 1], hop_node=self.hop_node[:h_end],
            hop_degree=self.hop_degree[:h_end], hop_read_ptr=self.hop_read_ptr[: h_end + 1],
            read_node=self.read_node[:r_end], hop_cand_inserts=self.hop_cand_inserts[:h_end],
            cluster_adjacency=self.cluster_adjacency, centroids=self.centroids)


def _get(src, key):
    if isinstance(src, dict) or hasattr(src, "files"):
        return src[key] if key in (src if isinstance(src, dict) else src.files) else None
    return getattr(src, key, None)


def as_trace(src, *, name: str | None = None) -> TraceArrays:
    """Validate and convert a logical trace.

    Parameters
    ----------
    src : str | os.PathLike | dict | NpzFile | object with the contract's attributes
    name : str, optional
        Shown in error messages (defaults to the path or ``"trace"``).

    Raises
    ------
    ValueError
        Missing key, wrong shape, broken CSR pointers or ids out of range; the message names
        the array and what was expected.
    """
    if isinstance(src, TraceArrays):
        return src
    if isinstance(src, (str, os.PathLike)):
        path = os.fspath(src)
        if not os.path.exists(path):
            raise FileNotFoundError(f"trace file not found: {path}")
        with np.load(path, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
        return as_trace(data, name=name or path)
    label = name or "trace"
    arrays = {}
    for key in REQUIRED:
        v = _get(src, key)
        if v is None:
            raise ValueError(f"{label}: missing array {key!r} (docs/contracts.md, section 1)")
        a = np.asarray(v)
        if a.ndim != 1 or not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"{label}: {key!r} must be a 1-D integer array, got {a.dtype} "
                             f"shape {a.shape}")
        arrays[key] = a.astype(np.int64, copy=False)
    meta = _get(src, "meta")
    if meta is None:
        raise ValueError(f"{label}: missing 'meta' (JSON dict)")
    if not isinstance(meta, dict):
        meta = np.asarray(meta)
        try:
            meta = json.loads(str(meta.item() if meta.shape == () else meta))
        except (json.JSONDecodeError, ValueError) as exc:
            raise ValueError(f"{label}: 'meta' is not a JSON dict: {exc}") from None
    for key in META_REQUIRED:
        if key not in meta:
            raise ValueError(f"{label}: meta lacks {key!r}")
    opt = {}
    for key in ("cluster_adjacency", "centroids"):
        v = _get(src, key)
        opt[key] = None if v is None else np.asarray(v)

    def csr(ptr_key, n_items, items_key):
        p = arrays[ptr_key]
        if p.shape[0] < 1 or p[0] != 0 or np.any(np.diff(p) < 0) or p[-1] != n_items:
            raise ValueError(f"{label}: {ptr_key!r} must start at 0, never decrease and end at "
                             f"len({items_key}) = {n_items}")

    n = arrays["cluster_nodes"].shape[0]
    S = arrays["search_cluster"].shape[0]
    H = arrays["hop_node"].shape[0]
    R = arrays["read_node"].shape[0]
    csr("cluster_ptr", n, "cluster_nodes")
    csr("query_ptr", S, "search_cluster")
    csr("search_hop_ptr", H, "hop_node")
    csr("hop_read_ptr", R, "read_node")
    C = arrays["cluster_ptr"].shape[0] - 1
    for key, length in (("search_entry", S), ("hop_degree", H), ("hop_cand_inserts", H)):
        if arrays[key].shape[0] != length:
            raise ValueError(f"{label}: {key!r} has {arrays[key].shape[0]} entries, expected "
                             f"{length}")

    def in_range(key, hi):
        a = arrays[key]
        if a.size and (a.min() < 0 or a.max() >= hi):
            bad = int(np.nonzero((a < 0) | (a >= hi))[0][0])
            raise ValueError(f"{label}: {key}[{bad}] = {int(a[bad])} out of range [0, {hi})")

    in_range("search_cluster", C)
    in_range("cluster_nodes", n)
    for key in ("search_entry", "hop_node", "read_node"):
        in_range(key, n)
    if arrays["hop_degree"].size and arrays["hop_degree"].min() < 0:
        raise ValueError(f"{label}: hop_degree must be >= 0")
    if arrays["hop_cand_inserts"].size and arrays["hop_cand_inserts"].min() < 0:
        raise ValueError(f"{label}: hop_cand_inserts must be >= 0")
    if int(meta["vector_bytes"]) <= 0 or int(meta["max_degree"]) <= 0:
        raise ValueError(f"{label}: meta vector_bytes and max_degree must be > 0")
    return TraceArrays(meta=dict(meta), **arrays, **opt)
