"""Vamana as the DiskANN library builds it: the ``vamana`` graph kind (numba kernels, written by us).

What the library does, read in microsoft/DiskANN at tag 0.7.0 (the code of ``diskannpy`` 0.7.0,
the in-memory index: ``src/index.cpp``, ``include/defaults.h``, ``include/parameters.h``,
``src/in_mem_data_store.cpp``, ``python/src/builder.cpp``):

- ``Index::build_with_data_populated`` calls ``link()`` once. The graph starts empty (no
  random graph), and there is one pass, at the final ``alpha`` (no pass at alpha = 1).
- Entry point: ``link()`` sets ``_start = calculate_entry_point()``, which is
  ``InMemDataStore::calculate_medoid``: the point nearest (squared L2) to the mean of all points.
- Order: ``visit_order`` holds the points 0 .. n-1 in id order (an OpenMP loop,
  ``schedule(dynamic, 2048)``: in id order with one thread).
- Per point (``search_for_point_and_prune``): ``iterate_to_fixed_point`` from ``_start`` with
  a list of ``L`` candidates ordered by (distance, id); the prune pool is the *expanded* nodes
  only (the point's current list is not added) less the point itself; ``prune_neighbors``
  sorts the pool by (distance, id) and calls ``occlude_list``; the result *replaces* the
  point's list (``set_neighbours``).
- ``occlude_list``: the pool is cut to its ``max_occlusion_size`` nearest (default 750,
  ``defaults::MAX_OCCLUSION_SIZE``); every candidate has an occlusion factor, starting at 0;
  rounds with ``cur_alpha`` = 1, 1.2, 1.44, ... (``cur_alpha *= 1.2f``) while
  ``cur_alpha <= alpha`` and the result holds fewer than ``R``: a round scans the pool nearest
  first and takes every candidate whose factor is ``<= cur_alpha`` (its factor then becomes
  FLT_MAX); each taken ``s`` raises the factor of every later candidate ``c`` to
  ``max(factor, d(p, c) / d(s, c))`` (FLT_MAX if ``d(s, c) = 0``). At alpha = 1.2 that is
  two rounds, 1 and 1.2: the nearest, least occluded edges first, then longer ones.
  For inner product the library's rule is: ``c`` is occluded in the round (factor
  ``cur_alpha + 0.01``) if ``<s, c> > cur_alpha * <p, c>``; we apply it with
  ``<a, b> = 1 - d(a, b)``.
- ``saturate_graph`` is false (``python/src/builder.cpp`` sets ``with_saturate_graph(false)``):
  lists are not filled up to ``R`` after the prune.
- Reverse edges (``inter_insert``): for every ``j`` of the new list, if the point is not in
  ``j``'s list it is appended while ``j``'s list holds fewer than
  ``GRAPH_SLACK_FACTOR * R`` ids (1.3 R, 83 at R = 64); otherwise ``j``'s list plus the point is
  pruned to ``R`` (``prune_neighbors`` at alpha).
- After the pass, ``link()``'s final cleanup prunes every list longer than ``R`` to ``R``.

Our code follows all of that (distances are ours: float32, squared L2 or 1 - dot, as the traced
search; the library's L2 is squared too). What differs, for determinism:

- Batches. The points are taken in consecutive batches; the searches and prunes of a batch read
  the graph as it was at the batch start (numba ``prange``, each writing only its point's new
  list), then the new lists replace the old ones, then the batch's reverse edges are applied
  per target in batch order (one target per ``prange`` iteration, the library's append-or-prune
  step for each), so the graph is identical for any thread count. A batch's points do not see
  each other's new edges (the library's concurrent threads do not always see them either).
  Batch size: ``max(1, done // GROWTH)`` up to :data:`BATCH`, where ``done`` is the number of
  points already inserted: the first points go one by one, as in a single-threaded library
  build, and a batch never exceeds 1/GROWTH of the graph it reads. A reverse edge from a point
  to a later point of the same batch is dropped, as in the library, where the later point's
  own turn replaces its list.
- The search records at most ``4 * L`` expanded nodes (the library has no cap; a build search
  at L = 100 expands about 100-160 nodes).

No random number is drawn: the graph depends on the points, their order and R, L, alpha only.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .vamana_kernels import pair_dist

__all__ = ["BATCH", "GROWTH", "SLOTS", "GRAPH_SLACK_FACTOR", "MAX_OCCLUSION_SIZE", "build_diskann",
           "occlude", "slack_capacity"]

#: DiskANN's ``defaults::GRAPH_SLACK_FACTOR`` (include/defaults.h): a list takes reverse edges
#: without a prune until it holds this many times R ids
GRAPH_SLACK_FACTOR = 1.3

#: DiskANN's ``defaults::MAX_OCCLUSION_SIZE`` (include/defaults.h), the ``max_occlusion_size``
#: every build of ``diskannpy`` uses: a prune looks at the 750 nearest candidates at most
MAX_OCCLUSION_SIZE = 750

#: DiskANN's alpha step between occlusion rounds (``cur_alpha *= 1.2f`` in ``occlude_list``)
ALPHA_STEP = 1.2

#: largest batch of points whose searches run together (fixed: the graph must not depend on the
#: thread count): enough searches to keep 2-32 threads busy, few enough that the batch's points
#: miss little of each other's edges. With BATCH = 64 and GROWTH = 16 the mean out-degree is
#: 0.1-0.2 % below the single-threaded library's on siftsmall and bigann10k (256: 0.8-1.0 %;
#: experiments/tools/check_diskann.py and docs/graphs.md).
BATCH = 64

#: a batch holds at most 1/GROWTH of the points already inserted (and at least one): the first
#: points, which shape the graph around the entry point, go (nearly) one by one
GROWTH = 16

#: per-batch worker slots, each with its own scratch buffers (point i of a batch to slot
#: i % SLOTS): a constant, so the work of a slot does not depend on the thread count
SLOTS = 32

_FLT_MAX = np.float32(np.finfo(np.float32).max)


def slack_capacity(R: int) -> int:
    """Longest list during the build: ``(uint64_t)(GRAPH_SLACK_FACTOR * R)`` in float32, as
    DiskANN's ``inter_insert`` computes it (83 at R = 64); never below R."""
    return max(int(R), int(np.float32(GRAPH_SLACK_FACTOR) * np.float32(R)))


# --------------------------------------------------------------------------- kernels
@njit(cache=True)
def _search_pool(x, nbrs, deg, start, p, L, metric, stamp, tag, cid, cd, cexp, pool, pool_d):
    """Greedy search for point ``p`` from ``start`` with a list of ``L`` candidates ordered by
    (distance, id), as DiskANN's ``iterate_to_fixed_point``.

    ``stamp`` (m,) int32 marks visited nodes with ``tag``; ``cid``/``cd``/``cexp`` (L,) hold the
    candidate list. Writes the expanded nodes other than ``p`` and their distances to
    ``pool``/``pool_d`` (at most their length) and returns their number.
    """
    cap = pool.shape[0]
    nc = 1
    cid[0] = start
    cd[0] = pair_dist(x, p, start, metric)
    cexp[0] = False
    stamp[start] = tag
    npool = 0
    cur = 0  # the closest unexpanded candidate
    while cur < nc and npool < cap:
        u = cid[cur]
        cexp[cur] = True
        if u != p:
            pool[npool] = u
            pool_d[npool] = cd[cur]
            npool += 1
        for e in range(deg[u]):
            v = nbrs[u, e]
            if stamp[v] == tag:
                continue
            stamp[v] = tag
            dv = pair_dist(x, p, v, metric)
            if nc == L and (dv > cd[L - 1] or (dv == cd[L - 1] and v > cid[L - 1])):
                continue
            pos = nc if nc < L else L - 1
            while pos > 0 and (cd[pos - 1] > dv or (cd[pos - 1] == dv and cid[pos - 1] > v)):
                if pos < L:
                    cid[pos] = cid[pos - 1]
                    cd[pos] = cd[pos - 1]
                    cexp[pos] = cexp[pos - 1]
                pos -= 1
            cid[pos] = v
            cd[pos] = dv
            cexp[pos] = False
            if nc < L:
                nc += 1
            if pos < cur:
                cur = pos
        while cur < nc and cexp[cur]:
            cur += 1
    return npool


@njit(cache=True)
def _sort_pool(ids, ds, k, tid, td):
    """Sort ``ids[:k]``/``ds[:k]`` (distinct ids) in place by (distance, id), as DiskANN's
    ``Neighbor::operator<``; ``tid``/``td`` are scratch of at least k entries."""
    o1 = np.argsort(ids[:k])  # distinct ids: any sort gives the same order
    d1 = np.empty(k, dtype=np.float32)
    for i in range(k):
        d1[i] = ds[o1[i]]
    o2 = np.argsort(d1, kind="mergesort")  # stable: equal distances stay in id order
    for i in range(k):
        tid[i] = ids[o1[o2[i]]]
        td[i] = d1[o2[i]]
    for i in range(k):
        ids[i] = tid[i]
        ds[i] = td[i]


@njit(cache=True)
def _occlude(x, p, ids, ds, k, alpha, R, maxc, metric, factor, out):
    """DiskANN's ``occlude_list`` of point ``p`` over ``ids[:k]`` (distinct, without p, sorted
    by (distance to p, id), distances in ``ds``): see the module docstring. Writes the kept
    neighbors to ``out`` (nearest first within each round) and returns their number (<= R)."""
    if k > maxc:
        k = maxc
    for i in range(k):
        factor[i] = np.float32(0.0)
    a = np.float32(alpha)
    cur = np.float32(1.0)
    nout = 0
    while cur <= a and nout < R:
        eps = cur + np.float32(0.01)
        for i in range(k):
            if nout >= R:
                break
            if factor[i] > cur:
                continue
            factor[i] = _FLT_MAX
            s = ids[i]
            out[nout] = s
            nout += 1
            for j in range(i + 1, k):
                if factor[j] > a:
                    continue
                djk = pair_dist(x, ids[j], s, metric)
                if metric == 0:
                    if djk == np.float32(0.0):
                        factor[j] = _FLT_MAX
                    else:
                        r = ds[j] / djk
                        if r > factor[j]:
                            factor[j] = r
                else:
                    if np.float32(1.0) - djk > cur * (np.float32(1.0) - ds[j]) and eps > factor[j]:
                        factor[j] = eps
        cur = cur * np.float32(ALPHA_STEP)
    return nout


@njit(cache=True)
def _prune_list(x, j, nbrs, deg, extra, alpha, R, maxc, metric, ids, ds, tid, td, factor, out):
    """Prune point ``j``'s list plus ``extra`` (-1: none; not in the list, not j) to at most R
    and install it: DiskANN's ``prune_neighbors`` of ``inter_insert`` and of the final cleanup."""
    k = 0
    for e in range(deg[j]):
        ids[k] = nbrs[j, e]
        ds[k] = pair_dist(x, j, ids[k], metric)
        k += 1
    if extra >= 0:
        ids[k] = extra
        ds[k] = pair_dist(x, j, extra, metric)
        k += 1
    _sort_pool(ids, ds, k, tid, td)
    kept = _occlude(x, j, ids, ds, k, alpha, R, maxc, metric, factor, out)
    for e in range(kept):
        nbrs[j, e] = out[e]
    deg[j] = kept


@njit(cache=True, parallel=True)
def _link(x, nbrs, deg, start, L, alpha, R, wcap, maxc, metric, growth, bmax, slots):
    """DiskANN's ``link()`` pass over the points 0..m-1 in batches (see the module docstring)."""
    m = x.shape[0]
    pcap = max(4 * L, wcap + 1)  # search pool, and a reverse-edge prune's list + 1
    stamp = np.zeros((slots, m), dtype=np.int32)
    tags = np.zeros(slots, dtype=np.int32)
    cid = np.empty((slots, L), dtype=np.int32)
    cd = np.empty((slots, L), dtype=np.float32)
    cexp = np.empty((slots, L), dtype=np.bool_)
    pool = np.empty((slots, pcap), dtype=np.int32)
    pool_d = np.empty((slots, pcap), dtype=np.float32)
    tid = np.empty((slots, pcap), dtype=np.int32)
    td = np.empty((slots, pcap), dtype=np.float32)
    factor = np.empty((slots, pcap), dtype=np.float32)
    rout = np.empty((slots, R), dtype=np.int32)
    newl = np.empty((bmax, R), dtype=np.int32)
    newd = np.zeros(bmax, dtype=np.int32)
    src = np.empty(bmax * R, dtype=np.int32)
    tgt = np.empty(bmax * R, dtype=np.int64)
    b0 = 0
    while b0 < m:
        nb = min(bmax, max(1, b0 // growth), m - b0)
        # 1. searches + prunes against the graph as of the batch start
        for w in prange(slots):
            for i in range(w, nb, slots):
                p = b0 + i
                tags[w] += 1
                k = _search_pool(x, nbrs, deg, start, p, L, metric, stamp[w], tags[w], cid[w], cd[w], cexp[w],
                                 pool[w], pool_d[w])
                _sort_pool(pool[w], pool_d[w], k, tid[w], td[w])
                newd[i] = _occlude(x, p, pool[w], pool_d[w], k, alpha, R, maxc, metric, factor[w], newl[i])
        # 2. the new lists replace the old ones (distinct rows)
        ne = 0
        for i in range(nb):
            p = b0 + i
            deg[p] = newd[i]
            for e in range(newd[i]):
                nbrs[p, e] = newl[i, e]
                src[ne] = p
                # key: target, then the edge's rank in batch order (unique keys: any sort is exact)
                tgt[ne] = np.int64(newl[i, e]) * (bmax * R) + ne
                ne += 1
        # 3. reverse edges, per target in batch order: append, or prune when the list is full
        o = np.argsort(tgt[:ne])
        gstart = np.empty(ne + 1, dtype=np.int64)
        ng = 0
        prev = -1
        for t in range(ne):
            j = tgt[o[t]] // (bmax * R)
            if j != prev:
                gstart[ng] = t
                ng += 1
                prev = j
        gstart[ng] = ne
        for w in prange(slots):
            for g in range(w, ng, slots):
                j = np.int32(tgt[o[gstart[g]]] // (bmax * R))
                for t in range(gstart[g], gstart[g + 1]):
                    s = src[o[t]]
                    if b0 <= j < b0 + nb and s < j:
                        continue  # j's own turn comes after s's in the library and replaces j's list
                    present = False
                    for e in range(deg[j]):
                        if nbrs[j, e] == s:
                            present = True
                            break
                    if present:
                        continue
                    if deg[j] < wcap:
                        nbrs[j, deg[j]] = s
                        deg[j] += 1
                    else:
                        _prune_list(x, j, nbrs, deg, s, alpha, R, maxc, metric, pool[w], pool_d[w], tid[w],
                                    td[w], factor[w], rout[w])
        b0 += nb


@njit(cache=True, parallel=True)
def _cleanup(x, nbrs, deg, alpha, R, wcap, maxc, metric, slots):
    """``link()``'s final cleanup: every list longer than R is pruned to R (one row per iteration)."""
    m = x.shape[0]
    ids = np.empty((slots, wcap), dtype=np.int32)
    ds = np.empty((slots, wcap), dtype=np.float32)
    tid = np.empty((slots, wcap), dtype=np.int32)
    td = np.empty((slots, wcap), dtype=np.float32)
    factor = np.empty((slots, wcap), dtype=np.float32)
    out = np.empty((slots, R), dtype=np.int32)
    for w in prange(slots):
        for j in range(w, m, slots):
            if deg[j] > R:
                _prune_list(x, j, nbrs, deg, -1, alpha, R, maxc, metric, ids[w], ds[w], tid[w], td[w], factor[w],
                            out[w])


def build_diskann(xf: np.ndarray, metric: int, start: int, R: int, L: int, alpha: float,
                  max_batch: int = BATCH) -> tuple[np.ndarray, np.ndarray]:
    """The library's build of ``xf`` ((m, d) float32, m >= 2; R <= m - 1, L <= m), in batches of
    at most ``max_batch`` points (1: one by one, the single-threaded library's graph).

    Returns
    -------
    nbrs (m, slack_capacity(R)) int32 (row p's first deg[p] entries are its out-neighbors),
    deg (m,) int32, every entry <= R
    """
    m = xf.shape[0]
    wcap = slack_capacity(R)
    nbrs = np.full((m, wcap), -1, dtype=np.int32)
    deg = np.zeros(m, dtype=np.int32)
    _link(xf, nbrs, deg, int(start), int(L), float(alpha), int(R), wcap, MAX_OCCLUSION_SIZE, metric, GROWTH,
          int(max_batch), SLOTS)
    _cleanup(xf, nbrs, deg, float(alpha), int(R), wcap, MAX_OCCLUSION_SIZE, metric, SLOTS)
    return nbrs, deg


def occlude(xf: np.ndarray, p: int, cand: np.ndarray, alpha: float, R: int, metric: int) -> np.ndarray:
    """``occlude_list`` (:func:`_occlude`) of point ``p`` over the distinct ids ``cand`` (int32,
    without p), after DiskANN's sort by (distance, id). Returns the kept ids (int32)."""
    k = cand.size
    ids = cand.copy()
    ds = np.array([pair_dist(xf, int(p), int(c), metric) for c in cand], dtype=np.float32)
    out = np.empty(max(R, 1), dtype=np.int32)
    if k:
        _sort_pool(ids, ds, k, np.empty(k, np.int32), np.empty(k, np.float32))
    n = _occlude(xf, int(p), ids, ds, k, float(alpha), int(R), MAX_OCCLUSION_SIZE, metric,
                 np.empty(max(k, 1), np.float32), out)
    return out[:n].copy()
