"""Accept a logical ANNS trace (docs/contracts.md, section 1) in any of its shapes.

``as_trace`` takes the object ``graphs.trace.load_trace`` returns (attributes named as in the
contract), a ``dict`` / ``np.lib.npyio.NpzFile`` with those keys, or a path to the ``.npz``
file, and returns a :class:`TraceArrays` with validated arrays: the CSR pointers int64, the
ids and counts int32 as in the contract (int64 only for an index of 2^31 or more nodes, which
int32 cannot number). Arrays already of those dtypes are used as they are, not copied: the
default 10,000-query trace holds 64 M vector reads, and a copy of them to int64 took 1.3 s
of the run. cosmos depends only on the contract's array names, never on graphs internals.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import numpy as np

from graphs.trace import array_checksum as _checksum  # what save_trace stores

#: Arrays cosmos needs from the logical trace (contract 1).
REQUIRED = ("cluster_ptr", "cluster_nodes", "query_ptr", "search_cluster", "search_entry",
            "search_hop_ptr", "hop_node", "hop_degree", "hop_read_ptr", "read_node",
            "hop_cand_inserts")
OPTIONAL = ("cluster_adjacency", "centroids", "result_ids")
META_REQUIRED = ("dim", "vector_bytes", "max_degree", "k", "cand_list_len")
#: CSR pointers (int64 in the contract; the other required arrays are ids and counts)
POINTERS = ("cluster_ptr", "query_ptr", "search_hop_ptr", "hop_read_ptr")


@dataclass(frozen=True)
class TraceArrays:
    """The logical trace as validated arrays (pointers int64, ids and counts int32 or, for
    2^31 nodes or more, int64; module docstring) plus its metadata dict."""

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


def _load_npz(path: str) -> dict:
    """Every array of the .npz at ``path``; any failure (not a zip, truncated, a .npy or text
    file, pickled objects, a damaged member) is a ValueError naming the file."""
    want = "expected a .npz archive of the trace's arrays (graphs.trace.save_trace)"
    try:
        with open(path, "rb") as f:
            magic = f.read(6)
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the trace file ({exc.strerror or exc})") from None
    if magic.startswith(b"\x93NUMPY"):
        raise ValueError(f"{path}: not a trace file: it holds a single numpy array (.npy); "
                         f"{want}")
    if not magic.startswith(b"PK"):
        raise ValueError(f"{path}: not a trace file: not a .npz (zip) archive; {want}")
    from cosmos_common import UserError
    from cosmos_common.npz import npz_arrays

    try:  # (a zip file: np.load opens it as an NpzFile)
        with np.load(path, allow_pickle=False) as z:
            return npz_arrays(z, z.files, path)
    except (MemoryError, UserError):
        raise
    except Exception as exc:
        raise ValueError(f"{path}: not a readable trace file (damaged or truncated .npz: "
                         f"{type(exc).__name__}: {exc})") from None


def _meta_int(label: str, meta: dict, key: str, low: int = 1, high: int | None = None,
              high_text: str = "") -> int:
    """``meta[key]`` as an int in [low, high]; ValueError naming the key and the value."""
    v = meta[key]
    ok = isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
    if not ok and isinstance(v, (float, np.floating)) and np.isfinite(v) and float(v).is_integer():
        v, ok = int(v), True
    if not ok:
        raise ValueError(f"{label}: meta {key!r} must be an integer, got {v!r}")
    if v < low or (high is not None and v > high):
        rng = f">= {low}" if high is None else f"in [{low}, {high}]{high_text}"
        raise ValueError(f"{label}: meta {key!r} must be {rng}, got {v}")
    return int(v)


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
        Not a readable .npz, missing key, checksum mismatch (when the meta holds
        ``checksums``, as files of ``graphs.trace.save_trace`` do), wrong shape or meta type,
        broken CSR pointers, ids or counts out of range; the message names the file (or
        ``name``), the array or meta key and what was expected.
    """
    if isinstance(src, TraceArrays):
        return src
    if isinstance(src, (str, os.PathLike)):
        path = os.fspath(src)
        if not os.path.exists(path):
            raise FileNotFoundError(f"trace file not found: {path}")
        return as_trace(_load_npz(path), name=name or path)
    label = name or "trace"
    meta = _get(src, "meta")
    if meta is None:
        raise ValueError(f"{label}: missing 'meta' (JSON dict)")
    if not isinstance(meta, dict):
        meta = np.asarray(meta)
        try:
            meta = json.loads(str(meta.item() if meta.shape == () else meta))
        except (json.JSONDecodeError, ValueError) as exc:
            raise ValueError(f"{label}: 'meta' is not a JSON dict: {exc}") from None
        if not isinstance(meta, dict):
            raise ValueError(f"{label}: 'meta' is not a JSON dict: got a "
                             f"{type(meta).__name__}")
    meta = dict(meta)
    kind = meta.get("index_kind", "graph")
    if kind != "graph":
        raise ValueError(f"{label}: an {kind!r} trace (scan elements of graphs.ivfpq): the "
                         f"system models replay graph traces (index_kind 'graph') only")
    sums = meta.pop("checksums", None) or {}
    if not isinstance(sums, dict):
        raise ValueError(f"{label}: meta 'checksums' must be a dict of array name -> checksum")

    def verify(key, a):
        if key in sums and _checksum(a) != sums[key]:
            raise ValueError(f"{label}: checksum of {key!r} does not match the one in its meta "
                             f"(corrupted file, or the array was changed after the trace was "
                             f"saved)")

    arrays = {}
    for key in REQUIRED:
        v = _get(src, key)
        if v is None:
            raise ValueError(f"{label}: missing array {key!r} (docs/contracts.md, section 1)")
        a = np.asarray(v)
        if a.ndim != 1 or not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"{label}: {key!r} must be a 1-D integer array, got {a.dtype} "
                             f"shape {a.shape}")
        verify(key, a)
        # the ids' and counts' own dtype when int32 (narrowed below when they fit)
        keep = key not in POINTERS and a.dtype == np.int32
        arrays[key] = a if keep else a.astype(np.int64, copy=False)
    for key in META_REQUIRED:
        if key not in meta:
            raise ValueError(f"{label}: meta lacks {key!r}")
    opt = {}
    for key in ("cluster_adjacency", "centroids"):
        v = _get(src, key)
        opt[key] = None if v is None else np.asarray(v)
        if opt[key] is not None:
            verify(key, opt[key])

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
    vector_bytes = _meta_int(label, meta, "vector_bytes")
    max_degree = _meta_int(label, meta, "max_degree")
    _meta_int(label, meta, "dim", high=vector_bytes, high_text=" (at most one dimension per "
              "byte of meta 'vector_bytes')")
    _meta_int(label, meta, "k", high=max(n, 1), high_text=" (at most the n = "
              f"{n} vectors of the clusters)")
    # the search's candidate-list size L sets the cost of an insertion (cosmos.config.
    # candidate_insert_cycles)
    _meta_int(label, meta, "cand_list_len", high=2**31 - 1)
    # A hop reads the adjacency list of its node: hop_degree 4-byte ids of the node's fixed
    # record of max_degree ids (cosmos.layout: node_lines = lines_for(4 x max_degree)), and
    # checks each id against the visited set (cosmos.program: hop_degree x visit_check_cycles).
    # Each insertion into the candidate list is a distance computed at that hop (graphs.search:
    # inserts <= vectors read at the hop).
    reads = np.diff(arrays["hop_read_ptr"])
    for key, hi, why in (("hop_degree", np.full(H, max_degree), "at most meta max_degree, "
                          "the size of a node's adjacency record"),
                         ("hop_cand_inserts", reads, "at most the vectors read at that hop, "
                          "from hop_read_ptr")):
        a = arrays[key]
        bad = np.nonzero((a < 0) | (a > hi))[0]
        if bad.size:
            h = int(bad[0])
            raise ValueError(f"{label}: {key}[{h}] = {int(a[h])} out of range [0, {int(hi[h])}] "
                             f"({why})")
    # ids and counts (checked >= 0 above) as int32 when they fit, so that the program builder
    # has one compiled variant whatever integer dtype the caller used
    for key in REQUIRED:
        a = arrays[key]
        if key not in POINTERS and a.dtype != np.int32 and (a.size == 0 or a.max() < 2**31):
            arrays[key] = a.astype(np.int32)
    return TraceArrays(meta=meta, **arrays, **opt)
