"""Host routing + traced beam search per cluster (numba), merged top-k, recall.

The beam search is the one of DiskANN / hnswlib's level 0: a candidate list of at most
``cand_list_len`` (L) nodes sorted by distance; repeatedly expand the closest unexpanded
candidate (read its adjacency list), compute the distance of each neighbor not visited before
(read its vector), insert it if the list is not full or it beats the worst; stop when every
candidate in the list has been expanded. This is step for step hnswlib's
``searchBaseLayerST`` with ef = L (its stop rule "closest open candidate farther than the worst
result" is equivalent), so on a single graph with the hierarchical entry (``entry="hnsw"``) the
results match ``knn_query`` (see tests). Distances are computed in float32 like hnswlib: squared
L2, or ``1 - <q, x>`` for inner product.

Entry modes:

- ``"medoid"`` (default): each cluster search starts at the cluster member closest to the
  centroid and uses level 0 only, as DiskANN does (its fixed medoid entry point); the entry's
  vector is read once before the first hop (``search_entry`` in the trace).
- ``"hnsw"``: hnswlib's hierarchical entry: start at the top-level entry point and descend
  greedily through the upper layers; each greedy step is recorded as a hop (adjacency list of
  that layer read, every neighbor's vector read, no candidate insertions), then the level-0
  beam search starts from the node found.

Python drives the outer loop over query chunks (tqdm); within a chunk the searches run in a
numba ``prange``; each search writes only its own rows of preallocated buffers, so results do
not depend on the thread count.

Probe prefixes: the searches of one query are independent, and routing is a stable sort, so the
first ``p`` clusters of a ``P``-probe route are the ``p``-probe route. :func:`search_prefixes`
therefore derives the output of every ``p <= P`` from one search at ``P`` probes (each query's
first ``p`` searches, and the merge of their own top-k lists), identical to :func:`search` at
``p`` probes.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from cosmos_common.numba_cache import install as _check_numba_cache

_check_numba_cache()    # cached kernels are checked before use (cosmos_common.numba_cache)

from cosmos_common import UserError

from .index import ClusteredIndex
from .kmeans import nearest_centroids

__all__ = ["SearchParams", "search", "search_prefixes", "iter_search_prefixes", "probe_counts",
           "route", "probe_lists", "SearchOutput"]

METRIC_CODES = {"l2": 0, "ip": 1}
ENTRY_MODES = ("medoid", "hnsw")
#: id of an empty result slot while merging (sorts after every real id at equal distance)
_NO_ID = np.iinfo(np.int64).max


@dataclass(frozen=True)
class SearchParams:
    """Search parameters (validated by :func:`validate_search`)."""

    num_probes: int = field(default=8, metadata={"help": "nearest centroids (clusters) searched per query"})
    cand_list_len: int = field(default=64, metadata={"help": "beam search candidate list length L (>= k)"})
    k: int = field(default=10, metadata={"help": "neighbors returned per query"})
    entry: str = field(default="medoid", metadata={"help": "'medoid' (DiskANN) or 'hnsw' (hierarchical descent)"})


@njit(cache=True, fastmath=True)
def _dist(q, vecs, p, metric):
    s = np.float32(0.0)
    if metric == 0:
        for j in range(q.shape[0]):
            t = q[j] - np.float32(vecs[p, j])
            s += t * t
        return s
    for j in range(q.shape[0]):
        s += q[j] * np.float32(vecs[p, j])
    return np.float32(1.0) - s


@njit(cache=True)
def _search_one(
    q, vecs, indptr, indices, up_indptr, up_indices, n, c_start, c_size, entry, levels, L, k, metric,
    hop_node, hop_deg, hop_ins, hop_nread, read_node, res_pos, res_dist,
):
    """One traced search in one cluster. Returns (num_hops, num_reads, ok); ok=False = buffers too small."""
    H = hop_node.shape[0]
    R = read_node.shape[0]
    nh = 0
    nr = 0
    cur = entry
    curd = _dist(q, vecs, cur, metric)
    for lev in range(levels, 0, -1):  # hnsw mode: greedy descent through the upper layers
        changed = True
        while changed:
            changed = False
            row = (lev - 1) * n + cur
            a = up_indptr[row]
            b = up_indptr[row + 1]
            if nh >= H or nr + (b - a) > R:
                return nh, nr, False
            hop_node[nh] = cur
            hop_deg[nh] = b - a
            hop_ins[nh] = 0
            nxt = cur
            for e in range(a, b):
                v = up_indices[e]
                d = _dist(q, vecs, v, metric)
                read_node[nr] = v
                nr += 1
                if d < curd:
                    curd = d
                    nxt = v
                    changed = True
            hop_nread[nh] = b - a
            nh += 1
            cur = nxt
    visited = np.zeros((c_size + 7) // 8, dtype=np.uint8)
    cand_pos = np.empty(L, dtype=np.int64)
    cand_dist = np.empty(L, dtype=np.float32)
    cand_exp = np.zeros(L, dtype=np.bool_)
    lv = cur - c_start
    visited[lv >> 3] |= np.uint8(1 << (lv & 7))
    cand_pos[0] = cur
    cand_dist[0] = curd
    size = 1
    ptr = 0
    while True:
        while ptr < size and cand_exp[ptr]:
            ptr += 1
        if ptr >= size:
            break
        cand_exp[ptr] = True
        node = cand_pos[ptr]
        a = indptr[node]
        b = indptr[node + 1]
        if nh >= H or nr + (b - a) > R:
            return nh, nr, False
        hop_node[nh] = node
        hop_deg[nh] = b - a
        r0 = nr
        ins = 0
        for e in range(a, b):
            v = indices[e]
            lv = v - c_start
            byte = lv >> 3
            bit = np.uint8(1 << (lv & 7))
            if visited[byte] & bit:
                continue
            visited[byte] |= bit
            d = _dist(q, vecs, v, metric)
            read_node[nr] = v
            nr += 1
            if size < L or d < cand_dist[size - 1]:
                if size < L:
                    j = size
                    size += 1
                else:
                    j = L - 1
                while j > 0 and cand_dist[j - 1] > d:
                    cand_pos[j] = cand_pos[j - 1]
                    cand_dist[j] = cand_dist[j - 1]
                    cand_exp[j] = cand_exp[j - 1]
                    j -= 1
                cand_pos[j] = v
                cand_dist[j] = d
                cand_exp[j] = False
                ins += 1
                if j < ptr:
                    ptr = j
        hop_ins[nh] = ins
        hop_nread[nh] = nr - r0
        nh += 1
    for i in range(k):
        if i < size:
            res_pos[i] = cand_pos[i]
            res_dist[i] = cand_dist[i]
        else:
            res_pos[i] = -1
            res_dist[i] = np.inf
    return nh, nr, True


@njit(cache=True, parallel=True)
def _search_batch(
    queries, s_query, s_cluster, vecs, indptr, indices, up_indptr, up_indices, cluster_ptr, entries, levels,
    L, k, metric, hop_node, hop_deg, hop_ins, hop_nread, read_node, nhops, nreads, ok, res_pos, res_dist,
):
    """Run searches ``s`` = 0..S-1 (query row ``s_query[s]`` in cluster ``s_cluster[s]``).

    Parameters
    ----------
    queries : (Qb, d) float32
    s_query, s_cluster : (S,) int64
    vecs : (n, d) uint8/int8/float32, vectors in position order
    indptr : (n+1,) int64 ; indices : (E,) int32 -- level-0 CSR over positions
    up_indptr : (Lv*n+1,) int64 ; up_indices : int32 -- upper layers
    cluster_ptr : (C+1,) int64 ; entries : (C,) int64 positions ; levels : (C,) int32
    hop_node, hop_deg, hop_ins, hop_nread : (S, Hcap) int32 outputs
    read_node : (S, Rcap) int32 output
    nhops, nreads : (S,) int64 ; ok : (S,) bool ; res_pos : (S, k) int64 ; res_dist : (S, k) float32
    """
    n = vecs.shape[0]
    S = s_query.shape[0]
    for s in prange(S):
        c = s_cluster[s]
        c0 = cluster_ptr[c]
        nh, nr, good = _search_one(
            queries[s_query[s]], vecs, indptr, indices, up_indptr, up_indices, n, c0, cluster_ptr[c + 1] - c0,
            entries[c], levels[c], L, k, metric,
            hop_node[s], hop_deg[s], hop_ins[s], hop_nread[s], read_node[s], res_pos[s], res_dist[s],
        )
        nhops[s] = nh
        nreads[s] = nr
        ok[s] = good


def route(index: ClusteredIndex, queries: np.ndarray, num_probes: int, metric: str) -> np.ndarray:
    """The ``num_probes`` nearest centroids of each query, nearest first (ties -> smaller id).

    Returns
    -------
    numpy.ndarray, shape (q, num_probes), int64
    """
    return nearest_centroids(queries, index.centroids, num_probes, metric)


def probe_lists(centroids: np.ndarray, queries: np.ndarray, num_probes: int, metric: str,
                chunk: int = 512) -> np.ndarray:
    """The clusters each query probes, routed chunk by chunk as the tracers route them
    (:func:`search` and graphs.templates, ``chunk`` queries at a time): row ``q`` of the result
    is query ``q``'s ``search_cluster`` entries in its trace at ``num_probes`` probes, without
    searching. What the placement figures need (cluster searches per device), at any scale.

    Returns
    -------
    numpy.ndarray, shape (q, num_probes), int64
    """
    c = np.asarray(centroids, dtype=np.float32)
    out = np.empty((len(queries), int(num_probes)), np.int64)
    for q0 in range(0, len(queries), chunk):
        qb = np.ascontiguousarray(queries[q0 : q0 + chunk], dtype=np.float32)
        out[q0 : q0 + len(qb)] = nearest_centroids(qb, c, num_probes, metric)
    return out


class SearchOutput(NamedTuple):
    """Raw output of :func:`search`; ids are dataset rows (see docs/contracts.md section 1)."""

    result_ids: np.ndarray  # (Q, k) int64
    result_dists: np.ndarray  # (Q, k) float32
    query_ptr: np.ndarray  # (Q+1,) int64
    search_cluster: np.ndarray  # (S,) int32
    search_entry: np.ndarray  # (S,) int32
    search_hop_ptr: np.ndarray  # (S+1,) int64
    hop_node: np.ndarray  # (H,) int32
    hop_degree: np.ndarray  # (H,) int32
    hop_read_ptr: np.ndarray  # (H+1,) int64
    read_node: np.ndarray  # (R,) int32
    hop_cand_inserts: np.ndarray  # (H,) int32


def check_search_params(n: int, num_queries: int | None, num_clusters: int, num_probes: int,
                        cand_list_len: int, k: int, entry: str = "medoid") -> None:
    """The rules of a traced search, checked before anything is built (UserError naming the
    parameter): at least 1 query; 1 <= num_probes <= num_clusters; 1 <= k <= cand_list_len
    (the search keeps only L candidates); k <= n (no more neighbors than base vectors);
    entry one of :data:`ENTRY_MODES`. ``num_queries`` None: not checked (no queries known
    yet)."""
    if num_queries is not None and num_queries < 1:
        raise UserError(f"num_queries={num_queries}: a trace needs at least 1 query")
    if not 1 <= num_probes <= num_clusters:
        raise UserError(f"num_probes={num_probes} must be in 1..num_clusters={num_clusters}")
    if k < 1:
        raise UserError(f"k={k} must be >= 1")
    if cand_list_len < k:
        raise UserError(f"cand_list_len={cand_list_len} is below k={k} (the search keeps L "
                        "candidates and returns k of them)")
    if k > n:
        raise UserError(f"k={k} must be <= {n}, the number of base vectors")
    if entry not in ENTRY_MODES:
        raise UserError(f"entry='{entry}' unknown; expected one of {ENTRY_MODES}")


def validate_search(index: ClusteredIndex, queries: np.ndarray, num_probes, cand_list_len, k, entry) -> None:
    """Raise UserError (a ValueError) naming the field for invalid search parameters
    (:func:`check_search_params`, and the queries' dimension)."""
    if queries.ndim != 2 or queries.shape[1] != index.dim:
        raise UserError(f"queries: dimension {queries.shape[-1]} does not match the index dimension {index.dim}")
    check_search_params(index.n, len(queries), index.num_clusters, num_probes, cand_list_len, k,
                        entry)


def probe_counts(probes: Iterable[int], name: str = "probes", allow_empty: bool = False) -> list[int]:
    """``probes`` as a sorted list of distinct ints (UserError naming ``name`` if it is empty,
    unless ``allow_empty``, or holds anything but integers). The range 1..num_clusters is
    checked by :func:`check_search_params`."""
    if isinstance(probes, (str, bytes)) or not isinstance(probes, Iterable):
        raise UserError(f"{name}={probes!r}: expected a sequence of probe counts (integers)")
    out = set()
    for p in probes:
        if isinstance(p, (bool, np.bool_)):
            raise UserError(f"{name}: {p!r} is not a probe count (an integer)")
        try:
            out.add(operator.index(p))
        except TypeError:
            raise UserError(f"{name}: {p!r} is not a probe count (an integer)") from None
    if not out and not allow_empty:
        raise UserError(f"{name}: no probe count given (at least one needed)")
    return sorted(out)


def search(
    index: ClusteredIndex,
    vectors: np.ndarray,
    queries: np.ndarray,
    num_probes: int = 8,
    cand_list_len: int = 64,
    k: int = 10,
    entry: str = "medoid",
    chunk: int = 512,
    progress: bool = True,
) -> SearchOutput:
    """Route, search every probed cluster with tracing, merge the global top-k.

    Parameters
    ----------
    index : ClusteredIndex
    vectors : numpy.ndarray, shape (n, dim)
        The base vectors in dataset row order (the index's dataset).
    queries : numpy.ndarray, shape (Q, dim)
    num_probes, cand_list_len, k, entry :
        See :class:`SearchParams`.

    Returns
    -------
    SearchOutput
    """
    return _search(index, vectors, queries, num_probes, cand_list_len, k, entry, chunk, progress,
                   keep_topk=False)[0]


def search_prefixes(
    index: ClusteredIndex,
    vectors: np.ndarray,
    queries: np.ndarray,
    probes: Iterable[int] = (4, 8, 16),
    cand_list_len: int = 64,
    k: int = 10,
    entry: str = "medoid",
    chunk: int = 512,
    progress: bool = True,
) -> dict[int, SearchOutput]:
    """The :func:`search` output at every probe count of ``probes``, from one search at the
    largest.

    Each output is identical (every array, its dtype) to ``search(..., num_probes=p)``.
    All outputs are held at once; :func:`iter_search_prefixes` hands them out one at a time.

    Returns
    -------
    dict
        ``{p: SearchOutput}`` for the distinct counts of ``probes``, in increasing order.
    """
    return dict(iter_search_prefixes(index, vectors, queries, probes, cand_list_len, k, entry,
                                     chunk, progress))


def iter_search_prefixes(
    index: ClusteredIndex,
    vectors: np.ndarray,
    queries: np.ndarray,
    probes: Iterable[int] = (4, 8, 16),
    cand_list_len: int = 64,
    k: int = 10,
    entry: str = "medoid",
    chunk: int = 512,
    progress: bool = True,
) -> Iterator[tuple[int, SearchOutput]]:
    """``(p, SearchOutput)`` for every distinct count ``p`` of ``probes``, in increasing order,
    from one traced search at ``P = max(probes)`` probes; identical to :func:`search` at ``p``.

    The ``P``-probe output is computed first (its search runs before the first item) and held
    until it is handed out, last; each smaller output is derived from it when asked for (query
    ``q``'s searches ``0..p-1``; hops and reads selected by boolean masks built with
    ``np.repeat``; the global top-k merged from those searches' own top-k lists), so a caller
    that drops each output after use holds at most two at a time.

    Every count is checked (:func:`validate_search`) before the search: UserError naming the
    first one out of 1..num_clusters, or ``probes`` if it is empty or not integers.
    """
    counts = probe_counts(probes)
    queries = np.asarray(queries)
    for p in counts:
        validate_search(index, queries, p, cand_list_len, k, entry)
    out, topk_ids, topk_dists = _search(index, vectors, queries, counts[-1], cand_list_len, k,
                                        entry, chunk, progress, keep_topk=len(counts) > 1)
    return _prefixes(out, topk_ids, topk_dists, counts, k)


def _prefixes(out: SearchOutput, topk_ids, topk_dists, counts: list[int], k: int):
    P = counts[-1]
    for p in counts[:-1]:
        yield p, _prefix_output(out, topk_ids, topk_dists, P, p, k)
    del topk_ids, topk_dists
    yield P, out


def _prefix_output(out: SearchOutput, topk_ids: np.ndarray, topk_dists: np.ndarray, P: int,
                   p: int, k: int) -> SearchOutput:
    """The output of the first ``p`` of the ``P`` searches of every query of ``out``.

    ``topk_ids`` (S, k) int64 (global ids, :data:`_NO_ID` = empty slot) and ``topk_dists``
    (S, k) float32 are each search's own top-k, search ``s`` = query ``s // P``, probe ``s % P``.
    """
    Q = len(out.query_ptr) - 1
    hops = np.diff(out.search_hop_ptr)                       # (S,) hops per search
    kept = np.zeros((Q, P), dtype=np.bool_)
    kept[:, :p] = True
    hop_kept = np.repeat(kept.ravel(), hops)                 # (H,) hops of the kept searches
    del kept
    reads = np.diff(out.hop_read_ptr)                        # (H,) reads per hop
    read_kept = np.repeat(hop_kept, reads)                   # (R,) reads of the kept hops
    read_node = out.read_node[read_kept]
    del read_kept
    reads = reads[hop_kept]
    hop_read_ptr = np.zeros(len(reads) + 1, dtype=np.int64)
    np.cumsum(reads, out=hop_read_ptr[1:])
    del reads
    search_hop_ptr = np.zeros(Q * p + 1, dtype=np.int64)
    np.cumsum(hops.reshape(Q, P)[:, :p].ravel(), out=search_hop_ptr[1:])
    ids, dists = _merge_topk(topk_ids.reshape(Q, P * k)[:, : p * k],
                             topk_dists.reshape(Q, P * k)[:, : p * k], k)
    return SearchOutput(
        result_ids=ids,
        result_dists=dists,
        query_ptr=np.arange(0, Q * p + 1, p, dtype=np.int64),
        search_cluster=out.search_cluster.reshape(Q, P)[:, :p].ravel(),
        search_entry=out.search_entry.reshape(Q, P)[:, :p].ravel(),
        search_hop_ptr=search_hop_ptr,
        hop_node=out.hop_node[hop_kept],
        hop_degree=out.hop_degree[hop_kept],
        hop_read_ptr=hop_read_ptr,
        read_node=read_node,
        hop_cand_inserts=out.hop_cand_inserts[hop_kept],
    )


def _merge_topk(ids: np.ndarray, dists: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The global top-``k`` of each row of the cluster searches' top-k lists, by (distance, id).

    Parameters
    ----------
    ids : (q, m) int64, global ids (:data:`_NO_ID` = empty slot; ids are unique across clusters)
    dists : (q, m) float32

    Returns
    -------
    ids : (q, k) int64 (-1 = no result) ; dists : (q, k) float32 (inf = no result)
    """
    order = np.lexsort((ids, dists), axis=-1)[:, :k]
    top = np.take_along_axis(ids, order, axis=1)
    return np.where(top == _NO_ID, -1, top), np.take_along_axis(dists, order, axis=1)


def _search(index, vectors, queries, num_probes, cand_list_len, k, entry, chunk, progress,
            keep_topk):
    """(SearchOutput, per-search top-k ids, their distances) of :func:`search`.

    With ``keep_topk`` the top-k of every search is returned too: (S, k) int64 global ids
    (:data:`_NO_ID` = empty slot) and (S, k) float32 distances, search ``s`` = query
    ``s // num_probes``, probe ``s % num_probes``; else both are None."""
    queries = np.asarray(queries)
    validate_search(index, queries, num_probes, cand_list_len, k, entry)
    if vectors.shape != (index.n, index.dim):
        raise ValueError(f"vectors: shape {vectors.shape} does not match the index ({index.n}, {index.dim})")
    metric = METRIC_CODES[index.metric]
    vecs = np.ascontiguousarray(vectors[index.cluster_nodes])  # position order
    nodes = index.cluster_nodes
    entries, levels, L, hcap, rcap = search_setup(index, entry, cand_list_len)
    Q = len(queries)
    P = int(num_probes)

    out_ids = np.full((Q, k), -1, dtype=np.int64)
    out_d = np.full((Q, k), np.inf, dtype=np.float32)
    topk_ids = np.empty((Q * P, k), dtype=np.int64) if keep_topk else None
    topk_dists = np.empty((Q * P, k), dtype=np.float32) if keep_topk else None
    parts = {name: [] for name in ("hop_node", "hop_degree", "hop_ins", "hop_nread", "read_node")}
    nh_all = np.zeros(Q * P, dtype=np.int64)
    s_cluster_all = np.zeros(Q * P, dtype=np.int32)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=Q, desc="trace queries", unit="q")
    for q0 in range(0, Q, chunk):
        qb = np.ascontiguousarray(queries[q0 : q0 + chunk], dtype=np.float32)
        nq = len(qb)
        probes = route(index, qb, P, index.metric)
        S = nq * P
        s_query = np.repeat(np.arange(nq, dtype=np.int64), P)
        s_cluster = probes.ravel()
        bufs = _run(qb, s_query, s_cluster, vecs, index, entries, levels, L, k, metric, hcap, rcap)
        hn, hd, hi, hr, rn, nhops, nreads, res_pos, res_dist = bufs
        hmask = np.arange(hn.shape[1])[None, :] < nhops[:, None]
        rmask = np.arange(rn.shape[1])[None, :] < nreads[:, None]
        parts["hop_node"].append(nodes[hn[hmask]])
        parts["hop_degree"].append(hd[hmask])
        parts["hop_ins"].append(hi[hmask])
        parts["hop_nread"].append(hr[hmask])
        parts["read_node"].append(nodes[rn[rmask]])
        nh_all[q0 * P : q0 * P + S] = nhops
        s_cluster_all[q0 * P : q0 * P + S] = s_cluster
        # merge: global ids, sort by (distance, id); ids are unique across clusters
        gid = np.where(res_pos >= 0, nodes[np.maximum(res_pos, 0)], _NO_ID)
        if keep_topk:
            topk_ids[q0 * P : q0 * P + S] = gid
            topk_dists[q0 * P : q0 * P + S] = res_dist
        out_ids[q0 : q0 + nq], out_d[q0 : q0 + nq] = _merge_topk(
            gid.reshape(nq, P * k), res_dist.reshape(nq, P * k), k)
        if bar is not None:
            bar.update(nq)
    if bar is not None:
        bar.close()

    def cat(name, dtype):
        a = np.concatenate(parts.pop(name)) if parts[name] else np.zeros(0, dtype)
        return a.astype(dtype, copy=False)  # the chunk pieces are freed as soon as joined

    hop_nread = cat("hop_nread", np.int64)
    hop_read_ptr = np.zeros(len(hop_nread) + 1, dtype=np.int64)
    np.cumsum(hop_nread, out=hop_read_ptr[1:])
    del hop_nread
    search_hop_ptr = np.zeros(Q * P + 1, dtype=np.int64)
    np.cumsum(nh_all, out=search_hop_ptr[1:])
    out = SearchOutput(
        result_ids=out_ids,
        result_dists=out_d,
        query_ptr=np.arange(0, Q * P + 1, P, dtype=np.int64),
        search_cluster=s_cluster_all,
        search_entry=nodes[entries[s_cluster_all]].astype(np.int32),
        search_hop_ptr=search_hop_ptr,
        hop_node=cat("hop_node", np.int32),
        hop_degree=cat("hop_degree", np.int32),
        hop_read_ptr=hop_read_ptr,
        read_node=cat("read_node", np.int32),
        hop_cand_inserts=cat("hop_ins", np.int32),
    )
    return out, topk_ids, topk_dists


def search_setup(index: ClusteredIndex, entry: str, cand_list_len: int):
    """``(entries, levels, L, hcap, rcap)`` of searches of ``index``: each cluster's entry
    position and upper levels for ``entry`` (``"medoid"``: level 0 only); ``L``, the list
    length the search runs with: ``cand_list_len`` capped at the largest cluster's size (the
    list holds distinct nodes of one cluster, so a longer one never fills and the search is
    the same; the cap bounds the buffers by the data, whatever the option); and the first
    capacities of the per-search hop and read buffers (:func:`_run` widens them where a
    search needs more)."""
    if entry == "medoid":
        entries = index.medoid.astype(np.int64)
        levels = np.zeros(index.num_clusters, dtype=np.int32)
    else:
        entries = index.hnsw_entry.astype(np.int64)
        levels = index.hnsw_levels.astype(np.int32)
    maxdeg = max(1, int(index.degrees().max(initial=1)), int(np.diff(index.upper_indptr).max(initial=1)))
    L = min(int(cand_list_len), max(1, int(np.diff(index.cluster_ptr).max(initial=1))))
    hcap = 2 * L + 16 * int(levels.max(initial=0)) + 32
    rcap = hcap * max(8, maxdeg // 2)
    return entries, levels, L, hcap, rcap


def _alloc(S, hcap, rcap, k):
    return (
        np.zeros((S, hcap), np.int32),
        np.zeros((S, hcap), np.int32),
        np.zeros((S, hcap), np.int32),
        np.zeros((S, hcap), np.int32),
        np.zeros((S, rcap), np.int32),
        np.zeros(S, np.int64),
        np.zeros(S, np.int64),
        np.zeros(S, np.bool_),
        np.zeros((S, k), np.int64),
        np.zeros((S, k), np.float32),
    )


def _run(qb, s_query, s_cluster, vecs, index, entries, levels, L, k, metric, hcap, rcap):
    """Run a chunk of searches; searches that overflow their buffers are rerun with larger ones."""
    S = len(s_query)
    hn, hd, hi, hr, rn, nh, nr, ok, rp, rd = _alloc(S, hcap, rcap, k)
    args = (index.indptr, index.indices, index.upper_indptr, index.upper_indices, index.cluster_ptr, entries, levels)
    _search_batch(qb, s_query, s_cluster, vecs, *args, L, k, metric, hn, hd, hi, hr, rn, nh, nr, ok, rp, rd)
    bad = np.flatnonzero(~ok)
    h2, r2 = hcap, rcap
    while bad.size:
        h2, r2 = h2 * 4, r2 * 4
        b = _alloc(len(bad), h2, r2, k)
        _search_batch(qb, s_query[bad], s_cluster[bad], vecs, *args, L, k, metric, *b)
        # widen the chunk buffers to the new capacity and copy the rerun rows in
        if hn.shape[1] < h2:
            hn, hd, hi, hr = (np.pad(a, ((0, 0), (0, h2 - a.shape[1]))) for a in (hn, hd, hi, hr))
        if rn.shape[1] < r2:
            rn = np.pad(rn, ((0, 0), (0, r2 - rn.shape[1])))
        hn[bad], hd[bad], hi[bad], hr[bad], rn[bad] = b[0], b[1], b[2], b[3], b[4]
        nh[bad], nr[bad], rp[bad], rd[bad] = b[5], b[6], b[8], b[9]
        still = ~b[7]
        ok[bad] = b[7]
        bad = bad[still]
    return hn, hd, hi, hr, rn, nh, nr, rp, rd
