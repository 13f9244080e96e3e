"""Vamana as the DiskANN paper describes it: the ``vamana-paper`` graph kind (numba kernels).

Subramanya et al., "DiskANN: Fast Accurate Billion-point Nearest Neighbor Search on a Single
Node", NeurIPS 2019, Algorithms 1-3:

1. start from a random directed graph in which every point has ``R`` distinct out-neighbors
   (all other points if there are at most ``R`` of them);
2. the entry point ``s`` is the given start (the index passes the member nearest to the
   cluster's centroid, the node the traced search enters at);
3. two passes over the points in one seeded random order, the first with ``alpha = 1``, the
   second with the user's ``alpha`` (default 1.2): for each point ``p``, a greedy search for
   ``p`` from ``s`` with a list of ``L`` candidates gives the set ``V`` of expanded nodes;
   ``N_out(p) = RobustPrune(p, V u N_out(p), alpha, R)``; then for every new neighbor ``j``
   the reverse edge ``j -> p`` is added, and if ``j`` now has more than ``R`` neighbors,
   ``N_out(j) = RobustPrune(j, N_out(j) u {p}, alpha, R)``.

RobustPrune(p, C, alpha, R) (:func:`_prune`): sort C by distance to p; repeatedly move the
nearest remaining ``p*`` into the result and drop every remaining ``c`` with
``alpha * d(p*, c) <= d(p, c)``; stop at R results. One round, at the pass's alpha.

Determinism with a parallel build: the points of a pass are taken in fixed batches of
:data:`BATCH` points (a constant, independent of the thread count). Within a batch every
point's greedy search and prune read the graph as it was at the batch start and write only that
point's new list into a batch buffer (numba ``prange``); the new lists are then installed; then
the reverse edges of the batch are grouped by their target, in batch order, and each target
merges its incoming edges (pruning once if it overflows R), one target per ``prange``
iteration. Every iteration writes only what it owns and computes the same floating-point
operations whatever thread runs it, so the graph is identical for any number of threads.

Bounds: a point's list never exceeds ``R``. The greedy search records at most ``4 * L``
expanded nodes (at ``L`` = 100 a build search expands about ``L`` to ``1.5 L`` nodes, so the cap
is not reached in practice).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .vamana_kernels import pair_dist

__all__ = ["BATCH", "SLOTS", "build_paper", "prune_paper"]

#: points per batch of a pass (fixed: the graph must not depend on the thread count). An
#: estimate: small enough that a batch is a small fraction of a 1M/64 = 15,600-point cluster
#: (each batch's points miss only each other's new edges), large enough to keep 2-64 threads
#: busy on the batch's searches.
BATCH = 256

#: per-batch worker slots: the batch's points are dealt to this many fixed slots (point i to
#: slot i % SLOTS), each with its own scratch buffers; a constant, so the work of a slot does not
#: depend on the thread count.
SLOTS = 32


@njit(cache=True)
def _greedy(x, nbrs, deg, start, p, L, metric, stamp, tag, cid, cd, cexp, vis, vis_d):
    """Greedy (beam) search for point ``p`` from ``start`` with list size ``L``.

    ``stamp`` (m,) int32 marks visited nodes with ``tag``; ``cid``/``cd``/``cexp`` (L+1,) hold
    the sorted candidate list. Writes the expanded nodes and their distances to ``vis``/``vis_d``
    (capacity = their length) and returns their number.
    """
    cap = vis.shape[0]
    nc = 1
    cid[0] = start
    cd[0] = pair_dist(x, p, start, metric)
    cexp[0] = False
    stamp[start] = tag
    nv = 0
    while nv < cap:
        # closest unexpanded candidate
        i = 0
        while i < nc and cexp[i]:
            i += 1
        if i == nc:
            break
        cexp[i] = True
        u = cid[i]
        vis[nv] = u
        vis_d[nv] = cd[i]
        nv += 1
        for e in range(deg[u]):
            v = nbrs[u, e]
            if stamp[v] == tag:
                continue
            stamp[v] = tag
            dv = pair_dist(x, p, v, metric)
            if nc == L and dv >= cd[nc - 1]:
                continue
            # insert sorted (ties: the earlier stays first)
            pos = nc if nc < L else L - 1
            while pos > 0 and cd[pos - 1] > dv:
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
    return nv


@njit(cache=True)
def _prune(x, p, cand, cand_d, nc, alpha, R, metric, mark, tag, order_buf, alive, out):
    """RobustPrune of point ``p`` over ``cand[:nc]`` (distances to p in ``cand_d``).

    Duplicates and ``p`` itself are ignored (``mark`` (m,) int32 stamped with ``tag``). The
    candidates are taken by increasing distance to p (ties by position in ``cand``, a
    deterministic order). Writes the kept neighbors to ``out`` and returns their number (<= R).
    """
    k = 0
    for i in range(nc):
        c = cand[i]
        if c == p or mark[c] == tag:
            continue
        mark[c] = tag
        order_buf[k] = i
        k += 1
    keys = np.empty(k, dtype=np.float32)
    for i in range(k):
        keys[i] = cand_d[order_buf[i]]
    o = np.argsort(keys, kind="mergesort")  # stable: ties keep candidate order
    ids = np.empty(k, dtype=np.int32)
    ds = np.empty(k, dtype=np.float32)
    for i in range(k):
        ids[i] = cand[order_buf[o[i]]]
        ds[i] = keys[o[i]]
        alive[i] = True
    a = np.float32(alpha)
    nout = 0
    for i in range(k):
        if not alive[i]:
            continue
        s = ids[i]
        out[nout] = s
        nout += 1
        if nout == R:
            break
        for j in range(i + 1, k):
            if alive[j] and a * pair_dist(x, s, ids[j], metric) <= ds[j]:
                alive[j] = False
    return nout


@njit(cache=True, parallel=True)
def _pass(x, nbrs, deg, start, perm, L, alpha, R, metric, batch, slots):
    """One Vamana pass over the points in ``perm`` order, in batches (see the module docstring)."""
    m = x.shape[0]
    cap = 4 * L
    ccap = cap + R  # candidates of a point: expanded set + its current list
    rcap = R + batch  # candidates of a reverse-edge target: its list + the batch's sources
    stamp = np.zeros((slots, m), dtype=np.int32)
    mark = np.zeros((slots, m), dtype=np.int32)
    tags = np.zeros(slots, dtype=np.int32)
    cid = np.empty((slots, L + 1), dtype=np.int32)
    cd = np.empty((slots, L + 1), dtype=np.float32)
    cexp = np.empty((slots, L + 1), dtype=np.bool_)
    cand = np.empty((slots, max(ccap, rcap)), dtype=np.int32)
    cand_d = np.empty((slots, max(ccap, rcap)), dtype=np.float32)
    obuf = np.empty((slots, max(ccap, rcap)), dtype=np.int64)
    alive = np.empty((slots, max(ccap, rcap)), dtype=np.bool_)
    newl = np.empty((batch, R), dtype=np.int32)
    rout = np.empty((slots, R), dtype=np.int32)
    newd = np.zeros(batch, dtype=np.int32)
    src = np.empty(batch * R, dtype=np.int32)
    tgt = np.empty(batch * R, dtype=np.int64)
    for b0 in range(0, m, batch):
        nb = min(batch, m - b0)
        # 1. searches + prunes against the graph as of the batch start
        for w in prange(slots):
            for i in range(w, nb, slots):
                p = perm[b0 + i]
                tags[w] += 1
                nv = _greedy(x, nbrs, deg, start, p, L, metric, stamp[w], tags[w], cid[w], cd[w], cexp[w],
                             cand[w], cand_d[w])
                nc = nv
                for e in range(deg[p]):
                    v = nbrs[p, e]
                    cand[w, nc] = v
                    cand_d[w, nc] = pair_dist(x, p, v, metric)
                    nc += 1
                newd[i] = _prune(x, p, cand[w], cand_d[w], nc, alpha, R, metric, mark[w], tags[w],
                                 obuf[w], alive[w], newl[i])
        # 2. install the new lists (distinct rows)
        ne = 0
        for i in range(nb):
            p = perm[b0 + i]
            deg[p] = newd[i]
            for e in range(newd[i]):
                nbrs[p, e] = newl[i, e]
                src[ne] = p
                # key: target, then the edge's rank in batch order (unique keys: any sort is exact)
                tgt[ne] = np.int64(newl[i, e]) * (batch * R) + ne
                ne += 1
        # 3. reverse edges, grouped by target in batch order
        o = np.argsort(tgt[:ne])
        gstart = np.empty(ne + 1, dtype=np.int64)
        ng = 0
        prev = -1
        for t in range(ne):
            j = tgt[o[t]] // (batch * R)
            if j != prev:
                gstart[ng] = t
                ng += 1
                prev = j
        gstart[ng] = ne
        for w in prange(slots):
            for g in range(w, ng, slots):
                j = np.int32(tgt[o[gstart[g]]] // (batch * R))
                tags[w] += 1
                tg = tags[w]
                st = mark[w]
                nc = 0
                for e in range(deg[j]):
                    v = nbrs[j, e]
                    st[v] = tg
                    cand[w, nc] = v
                    nc += 1
                for t in range(gstart[g], gstart[g + 1]):
                    s = src[o[t]]
                    if s != j and st[s] != tg:
                        st[s] = tg
                        cand[w, nc] = s
                        nc += 1
                if nc <= R:
                    for e in range(nc):
                        nbrs[j, e] = cand[w, e]
                    deg[j] = nc
                else:
                    for e in range(nc):
                        cand_d[w, e] = pair_dist(x, j, cand[w, e], metric)
                    tags[w] += 1
                    kept = _prune(x, j, cand[w], cand_d[w], nc, alpha, R, metric, mark[w], tags[w],
                                  obuf[w], alive[w], rout[w])
                    for e in range(kept):
                        nbrs[j, e] = rout[w, e]
                    deg[j] = kept


@njit(cache=True)
def _random_init(m, R, seed, nbrs, deg):
    """Random start graph: every point gets min(R, m-1) distinct out-neighbors other than
    itself, drawn uniformly (numba's generator seeded with ``seed``: deterministic)."""
    np.random.seed(seed)
    r = min(R, m - 1)
    for p in range(m):
        if r == m - 1:
            k = 0
            for v in range(m):
                if v != p:
                    nbrs[p, k] = v
                    k += 1
            deg[p] = k
            continue
        k = 0
        while k < r:
            v = np.random.randint(0, m - 1)
            if v >= p:
                v += 1
            dup = False
            for e in range(k):
                if nbrs[p, e] == v:
                    dup = True
                    break
            if not dup:
                nbrs[p, k] = v
                k += 1
        deg[p] = k


def build_paper(xf: np.ndarray, metric: int, start: int, R: int, L: int, alpha: float,
                seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The paper's two-pass build of ``xf`` ((m, d) float32, m >= 2; R <= m - 1, L <= m).

    Returns
    -------
    nbrs (m, R) int32 (row p's first deg[p] entries are its out-neighbors), deg (m,) int32
    """
    m = xf.shape[0]
    nbrs = np.full((m, R), -1, dtype=np.int32)
    deg = np.zeros(m, dtype=np.int32)
    ss = np.random.SeedSequence([int(seed), 0x7A3A4A]).generate_state(2)
    _random_init(m, R, int(ss[0] % (2**31 - 1)), nbrs, deg)
    perm = np.random.default_rng(int(ss[1])).permutation(m).astype(np.int64)
    for a in (1.0, float(alpha)):
        _pass(xf, nbrs, deg, int(start), perm, L, a, R, metric, BATCH, SLOTS)
    return nbrs, deg


def prune_paper(xf: np.ndarray, p: int, cand: np.ndarray, cand_d: np.ndarray, alpha: float, R: int,
                metric: int) -> np.ndarray:
    """RobustPrune (:func:`_prune`) of point ``p`` over ``cand`` (int32) with distances ``cand_d``."""
    nc = cand.size
    out = np.empty(max(R, 1), dtype=np.int32)
    k = _prune(xf, int(p), cand, cand_d, nc, float(alpha), int(R), metric, np.zeros(xf.shape[0], np.int32), 1,
               np.empty(max(nc, 1), np.int64), np.empty(max(nc, 1), np.bool_), out)
    return out[:k].copy()
