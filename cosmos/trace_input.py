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

import dataclasses
import json
import os
from dataclasses import dataclass, field

import numpy as np

from cosmos.presets import presets_for_index
from cosmos_common import UserError
from cosmos_common.npz import npz_arrays
from graphs.trace import array_checksum as _checksum  # what save_trace stores
from graphs.trace import check_archive

#: Arrays cosmos needs from the logical trace (contract 1).
REQUIRED = ("cluster_ptr", "cluster_nodes", "query_ptr", "search_cluster", "search_entry",
            "search_hop_ptr", "hop_node", "hop_degree", "hop_read_ptr", "read_node",
            "hop_cand_inserts")
OPTIONAL = ("cluster_adjacency", "centroids", "result_ids")
META_REQUIRED = ("dim", "vector_bytes", "max_degree", "k", "cand_list_len")
#: CSR pointers (int64 in the contract; the other required arrays are ids and counts)
POINTERS = ("cluster_ptr", "query_ptr", "search_hop_ptr", "hop_read_ptr")
#: Index families (meta ``index_kind``; absent = "graph") and the scan arrays of a scan trace
#: (docs/contracts.md, "Scan traces")
INDEX_KINDS = ("graph", "ivfpq", "exact")
SCAN_ARRAYS = ("scan_first", "scan_count", "rerank_ptr", "rerank_node")


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
    #: scan traces only (empty for a graph trace): per search its first position and codes
    #: read, per query its re-rank reads (CSR over rerank_node, dataset rows)
    scan_first: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    scan_count: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    rerank_ptr: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    rerank_node: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    #: a cluster-template trace (docs/contracts.md, "Templated traces"): the logical position
    #: of each node id, increasing; ``cluster_nodes`` is then empty
    node_pos: np.ndarray | None = None

    @property
    def index_kind(self) -> str:
        """``"graph"`` (hops) or a scan (``"ivfpq"``, ``"exact"``): meta ``index_kind``."""
        return self.meta.get("index_kind", "graph")

    @property
    def num_queries(self) -> int:
        return int(self.query_ptr.shape[0] - 1)

    @property
    def num_clusters(self) -> int:
        return int(self.cluster_ptr.shape[0] - 1)

    @property
    def n(self) -> int:
        """Node ids of the trace: every vector, or the touched nodes of a templated trace."""
        if self.node_pos is not None:
            return int(self.node_pos.shape[0])
        return int(self.cluster_nodes.shape[0])

    @property
    def vectors(self) -> int:
        """Vectors of the (logical) index: the clusters' sizes summed."""
        return int(self.cluster_ptr[-1])

    def read_only(self) -> "TraceArrays":
        """The same trace with every array a read-only view (the arrays given stay as they
        are). numba compiles a function once per argument type, and an array's type includes
        whether it is writable: :func:`cosmos.simulate.simulate` passes every trace in this
        one form, so a run on a trace read from a file and one on a trace shared read-only
        (experiments.harness.sim) run the same compiled engine, not two (a recompilation of about a
        minute)."""
        def ro(a):
            if not isinstance(a, np.ndarray) or not a.flags.writeable:
                return a
            v = a.view()
            v.setflags(write=False)
            return v
        return dataclasses.replace(self, **{f.name: ro(getattr(self, f.name))
                                            for f in dataclasses.fields(self)
                                            if f.name != "meta"})

    def head(self, num_queries: int) -> "TraceArrays":
        """The first ``num_queries`` queries (clusters unchanged)."""
        q = min(int(num_queries), self.num_queries)
        s_end = int(self.query_ptr[q])
        h_end = int(self.search_hop_ptr[s_end])
        r_end = int(self.hop_read_ptr[h_end])
        meta = dict(self.meta, num_queries=q)
        scan = {}
        if self.index_kind != "graph":
            rr_end = int(self.rerank_ptr[q])
            scan = dict(scan_first=self.scan_first[:s_end], scan_count=self.scan_count[:s_end],
                        rerank_ptr=self.rerank_ptr[: q + 1],
                        rerank_node=self.rerank_node[:rr_end])
        return TraceArrays(
            meta=meta, cluster_ptr=self.cluster_ptr, cluster_nodes=self.cluster_nodes,
            query_ptr=self.query_ptr[: q + 1], search_cluster=self.search_cluster[:s_end],
            search_entry=self.search_entry[:s_end],
            search_hop_ptr=self.search_hop_ptr[: s_end + 1], hop_node=self.hop_node[:h_end],
            hop_degree=self.hop_degree[:h_end], hop_read_ptr=self.hop_read_ptr[: h_end + 1],
            read_node=self.read_node[:r_end], hop_cand_inserts=self.hop_cand_inserts[:h_end],
            cluster_adjacency=self.cluster_adjacency, centroids=self.centroids,
            node_pos=self.node_pos, **scan)


def _load_npz(path: str) -> dict:
    """Every array of the .npz at ``path``; any failure (not a zip, truncated, a .npy or text
    file, pickled objects, a damaged member) is a ValueError naming the file."""
    check_archive(path)
    try:  # (a zip file: np.load opens it as an NpzFile)
        with np.load(path, allow_pickle=False) as z:
            return npz_arrays(z, z.files, path, mmap=True)
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
    if kind not in INDEX_KINDS:
        raise ValueError(f"{label}: meta 'index_kind' {kind!r}; expected one of {INDEX_KINDS}")
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

    node_pos = _node_positions(src, label, kind, arrays, verify)
    n = arrays["cluster_nodes"].shape[0] if node_pos is None else node_pos.shape[0]
    S = arrays["search_cluster"].shape[0]
    H = arrays["hop_node"].shape[0]
    R = arrays["read_node"].shape[0]
    if node_pos is None:
        csr("cluster_ptr", n, "cluster_nodes")
    else:
        csr("cluster_ptr", int(meta.get("n", -1)), "the logical index (meta 'n')")
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
    for key in (("hop_node", "read_node") if kind != "graph" else
                ("search_entry", "hop_node", "read_node")):
        in_range(key, n)
    vector_bytes = _meta_int(label, meta, "vector_bytes")
    # (a scan index has no graph: max_degree 0)
    max_degree = _meta_int(label, meta, "max_degree", low=0 if kind != "graph" else 1)
    _meta_int(label, meta, "dim", high=vector_bytes, high_text=" (at most one dimension per "
              "byte of meta 'vector_bytes')")
    vecs = int(arrays["cluster_ptr"][-1])
    _meta_int(label, meta, "k", high=max(vecs, 1), high_text=" (at most the n = "
              f"{vecs} vectors of the clusters)")
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
        if key not in POINTERS and a.dtype != np.int32 and (a.size == 0 or a.max() < 2**31) \
                and (key != "search_entry" or kind == "graph"):
            arrays[key] = a.astype(np.int32)
    scan = _scan_arrays(src, label, kind, meta, arrays, verify) if kind != "graph" else {}
    return TraceArrays(meta=meta, **arrays, **opt, **scan, node_pos=node_pos)


def _node_positions(src, label, kind, arrays, verify) -> np.ndarray | None:
    """A templated trace's ``node_pos`` (int64, strictly increasing inside the logical
    positions), or None for a trace that numbers every vector."""
    v = _get(src, "node_pos")
    if v is None or np.asarray(v).size == 0:
        return None
    a = np.asarray(v)
    if a.ndim != 1 or not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"{label}: 'node_pos' must be a 1-D integer array, got {a.dtype} "
                         f"shape {a.shape}")
    verify("node_pos", a)
    if kind != "graph":
        raise ValueError(f"{label}: a {kind!r} trace cannot be templated (node_pos given)")
    if arrays["cluster_nodes"].shape[0]:
        raise ValueError(f"{label}: a templated trace (node_pos) must have an empty "
                         "'cluster_nodes'")
    a = a.astype(np.int64, copy=False)
    hi = int(arrays["cluster_ptr"][-1]) if arrays["cluster_ptr"].shape[0] else 0
    if a[0] < 0 or a[-1] >= hi or np.any(np.diff(a) <= 0):
        raise ValueError(f"{label}: 'node_pos' must increase strictly inside the logical "
                         f"positions [0, {hi})")
    return a


def _scan_arrays(src, label, kind, meta, arrays, verify) -> dict:
    """The scan elements and re-rank reads of a scan trace (docs/contracts.md, "Scan
    traces"), validated: one element per search inside its list, no hops, meta
    ``code_bytes`` >= 1 (= ``pq_m`` for IVF-PQ, ``vector_bytes`` for an exact scan), the
    re-rank reads a CSR over the queries of dataset rows."""
    out = {}
    for key in SCAN_ARRAYS:
        v = _get(src, key)
        if v is None:
            raise ValueError(f"{label}: an {kind!r} trace lacks its scan array {key!r} "
                             f"(docs/contracts.md, scan traces)")
        a = np.asarray(v)
        if a.ndim != 1 or not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"{label}: {key!r} must be a 1-D integer array, got {a.dtype} "
                             f"shape {a.shape}")
        verify(key, a)
        out[key] = a.astype(np.int32 if key == "rerank_node" else np.int64, copy=False)
    n = arrays["cluster_nodes"].shape[0]
    S = arrays["search_cluster"].shape[0]
    Q = arrays["query_ptr"].shape[0] - 1
    if arrays["hop_node"].shape[0]:
        raise ValueError(f"{label}: an {kind!r} trace has scan elements, not hops "
                         f"(hop_node must be empty)")
    for key in ("scan_first", "scan_count"):
        if out[key].shape[0] != S:
            raise ValueError(f"{label}: {key!r} has {out[key].shape[0]} entries, expected one "
                             f"per search ({S})")
    ptr = arrays["cluster_ptr"]
    sc = arrays["search_cluster"].astype(np.int64)
    lo, hi = ptr[sc], ptr[sc + 1]
    bad = np.nonzero((out["scan_count"] < 0) | (out["scan_first"] < lo)
                     | (out["scan_first"] + out["scan_count"] > hi))[0]
    if bad.size:
        s = int(bad[0])
        raise ValueError(f"{label}: scan element {s} (scan_first {int(out['scan_first'][s])}, "
                         f"scan_count {int(out['scan_count'][s])}) leaves its list "
                         f"{int(sc[s])} (positions [{int(lo[s])}, {int(hi[s])}))")
    rp = out["rerank_ptr"]
    R = out["rerank_node"].shape[0]
    if rp.shape[0] != Q + 1 or rp[0] != 0 or np.any(np.diff(rp) < 0) or rp[-1] != R:
        raise ValueError(f"{label}: 'rerank_ptr' must have {Q + 1} entries, start at 0, never "
                         f"decrease and end at len(rerank_node) = {R}")
    rn = out["rerank_node"]
    if rn.size and (rn.min() < 0 or rn.max() >= n):
        i = int(np.nonzero((rn < 0) | (rn >= n))[0][0])
        raise ValueError(f"{label}: rerank_node[{i}] = {int(rn[i])} out of range [0, {n})")
    # a re-ranked candidate comes from one of its query's probed lists (the near-memory
    # systems re-rank it on the device holding that list)
    C = ptr.shape[0] - 1
    list_of = np.empty(n, np.int64)
    list_of[arrays["cluster_nodes"]] = np.repeat(np.arange(C, dtype=np.int64), np.diff(ptr))
    probed = (np.repeat(np.arange(Q, dtype=np.int64), np.diff(arrays["query_ptr"])) * C + sc)
    rq = np.repeat(np.arange(Q, dtype=np.int64), np.diff(rp))
    outside = np.nonzero(~np.isin(rq * C + list_of[rn], probed))[0]
    if outside.size:
        i = int(outside[0])
        raise ValueError(f"{label}: rerank_node[{i}] = {int(rn[i])} (list "
                         f"{int(list_of[rn[i]])}) is not in a list its query {int(rq[i])} "
                         f"probed")
    if "code_bytes" not in meta:
        raise ValueError(f"{label}: an {kind!r} trace's meta lacks 'code_bytes'")
    cb = _meta_int(label, meta, "code_bytes")
    if kind == "ivfpq":
        pq_m = _meta_int(label, meta, "pq_m") if "pq_m" in meta else None
        if pq_m != cb:
            raise ValueError(f"{label}: meta 'code_bytes' {cb} must equal meta 'pq_m' {pq_m} "
                             f"(8-bit codes: one byte per sub-space)")
    elif cb != int(meta["vector_bytes"]):
        raise ValueError(f"{label}: meta 'code_bytes' {cb} of an exact scan must equal meta "
                         f"'vector_bytes' {int(meta['vector_bytes'])} (it reads full vectors)")
    return out


def check_trace_for(model, tr: "TraceArrays", label: str = "trace",
                    system: str | None = None) -> None:
    """Refuse (one line, UserError) a trace that ``model`` (cosmos.systems.SystemModel) does
    not replay: a scan trace given to a graph system, a graph trace to a scan system, an
    IVF-PQ trace to an exact-scan system and the reverse. ``system``: the name the user gave
    (a preset; default: the model's); the message lists the presets that do replay it."""
    kind = tr.index_kind
    if kind == model.index:
        return
    what = {"graph": "a 'graph' trace (hops)", "ivfpq": "an 'ivfpq' trace (IVF-PQ: scan "
            "elements of PQ codes)", "exact": "an 'exact' trace (exact scan: scan elements of "
            "full vectors)"}
    raise UserError(f"{label}: {what[kind]} cannot be replayed by system "
                    f"{system or model.name!r}, which replays {model.index!r} traces; systems "
                    f"for {kind!r} traces: "
                    f"{', '.join(presets_for_index(kind)) or 'no preset'}")
