"""Turn each query of the logical trace into a program of dependent steps, per system kind.

A *program* is flat integer/float arrays (built by one numba kernel, no Python per hop):

- queries own a contiguous run of *tasks* (``query_task_ptr``); a task runs on one execution
  context of its *pool* (0 = host cores, ``1 + d`` = GPC contexts of device ``d``,
  ``D + 1`` = the host's I/O agent, which never runs out of contexts), has at most one
  successor task (``task_succ``, -1 = none) and waits for ``task_npred`` predecessors; the
  query's last task is its sink;
- a task is a chain of *steps* (``task_step_ptr``), each starting when the previous one has
  completed. A step has a *class* (``step_class``, a row of the small ``cls_*`` tables: what
  is the same for every step of one kind at one place of a search, on one device) and its
  own ``step_obj``, ``step_nreq``, ``step_compute_after`` and ``step_wire_bytes``. The
  properties ``step_kind``, ``step_dev``, ... give the class fields per step:

  ``STEP_MEM``     read ``step_nreq`` 64-byte lines of the step's objects from memory
                   instance ``cls_dev``, at most ``cls_mlp`` in flight; each request spends
                   ``cls_lat`` cycles on chip each way, crosses the CXL link both ways when
                   ``cls_link == 1``, and is rank-local when ``cls_rank_local == 1``; each
                   returned line costs ``cls_compute_line`` cycles of the context's core
                   (overlapped with the other lines in flight), then ``step_compute_after``.
  ``STEP_XFER``    a message of ``step_wire_bytes`` over the link of device ``cls_dev`` in
                   direction ``cls_link`` (0 = host to device, 1 = device to host); the step
                   completes when it arrives, then ``step_compute_after``.
  ``STEP_COMPUTE`` ``step_compute_after`` cycles on the context's core.

A MEM step's objects, by its class's ``cls_obj_src``:

  ``OBJ_VECTOR``    one object: the vector of node ``step_obj`` (at ``vector_addr``);
  ``OBJ_ADJACENCY`` one object: the adjacency list of node ``step_obj`` (at ``node_addr``);
  ``OBJ_READS``     the vectors of ``read_node[step_obj:]``, ``cls_obj_lines`` lines each
                    (``read_node`` is the trace's array, shared, not copied).

Line ``l`` of an object at address ``a`` is at ``a + (l % R) * rank_step + (l // R) *
col_step`` with ``(R, rank_step, col_step)`` of the class (``R = 1, col_step = 64`` =
contiguous lines). Nothing per object is stored: the objects' ids are the trace's and their
addresses the layout's (for 10,000 default ``cosmos`` queries, 15.7 M steps of 32 bytes and
no object array, where per-step fields and an object copy took 3 GB).

Every step carries a breakdown category (``CAT_*``, the paper's Fig. 4b). The step sequences
of the four kinds are documented in docs/system_model.md and in :func:`build_program`.
All times are DRAM cycles (tCK = 416 ps; cosmos.config).
"""

from __future__ import annotations

from typing import NamedTuple

import numba as nb
import numpy as np

from cosmos.config import SystemConfig, core_cycles_to_dram, ns_to_cycles, TCK_PS
import cosmos.config as _config
from dram.jitcache import drop_stale

drop_stale(__file__, _config.__file__)  # constants of cosmos.config are compiled in
from cosmos.layout import LINE_BYTES, Layout

STEP_MEM, STEP_XFER, STEP_COMPUTE = 0, 1, 2
CAT_TRAVERSAL, CAT_DISTANCE, CAT_CANDIDATE, CAT_TRANSFER, CAT_QUEUE = 0, 1, 2, 3, 4
CATEGORIES = ("traversal", "distance", "candidate", "transfer", "queue")
KIND_CODE = {"host-cxl": 0, "host-dram": 1, "cxl-anns": 2, "cosmos": 3}


OBJ_VECTOR, OBJ_ADJACENCY, OBJ_READS = 0, 1, 2

# class table rows (cls_* fields, int64 except cls_compute_line)
_CLS_INT = ("cls_kind", "cls_cat", "cls_dev", "cls_link", "cls_rank_local", "cls_mlp",
            "cls_lat", "cls_R", "cls_rank_step", "cls_col_step", "cls_obj_src", "cls_obj_lines")
(K_KIND, K_CAT, K_DEV, K_LINK, K_RANK_LOCAL, K_MLP, K_LAT, K_R, K_RSTEP, K_CSTEP, K_SRC,
 K_OLINES) = range(len(_CLS_INT))
N_CLS_INT = len(_CLS_INT)


class Program(NamedTuple):
    """Flat program arrays (see module docstring). Shapes: Q queries, T tasks, S steps,
    K step classes, R vectors read by the trace's hops, N nodes."""

    query_task_ptr: np.ndarray   # (Q+1,) int64
    task_query: np.ndarray       # (T,) int64
    task_pool: np.ndarray        # (T,) int64
    task_succ: np.ndarray        # (T,) int64, -1 = none
    task_npred: np.ndarray       # (T,) int64
    task_device: np.ndarray      # (T,) int64, device the task's search runs against, -1 = host
    task_step_ptr: np.ndarray    # (T+1,) int64
    step_class: np.ndarray       # (S,) int32 row of the cls_* tables
    step_obj: np.ndarray         # (S,) int64 node id, or first index into read_node (OBJ_*)
    step_nreq: np.ndarray        # (S,) int32 64-byte requests (0 for XFER and COMPUTE)
    step_compute_after: np.ndarray  # (S,) int64
    step_wire_bytes: np.ndarray  # (S,) float64 (0 but for XFER)
    cls_kind: np.ndarray         # (K,) int64 STEP_*
    cls_cat: np.ndarray          # (K,) int64 CAT_*
    cls_dev: np.ndarray          # (K,) int64 memory instance / link (-1 = none)
    cls_link: np.ndarray         # (K,) int64
    cls_rank_local: np.ndarray   # (K,) int64
    cls_mlp: np.ndarray          # (K,) int64
    cls_lat: np.ndarray          # (K,) int64
    cls_R: np.ndarray            # (K,) int64
    cls_rank_step: np.ndarray    # (K,) int64
    cls_col_step: np.ndarray     # (K,) int64
    cls_obj_src: np.ndarray      # (K,) int64 OBJ_*
    cls_obj_lines: np.ndarray    # (K,) int64 lines per object of OBJ_READS (0 otherwise)
    cls_compute_line: np.ndarray  # (K,) float64
    read_node: np.ndarray        # (R,) int32 (or int64) the trace's
    vector_addr: np.ndarray      # (N,) uint64 the layout's
    node_addr: np.ndarray        # (N,) uint64 the layout's

    @property
    def num_queries(self) -> int:
        return int(self.query_task_ptr.shape[0] - 1)

    # the class fields of every step, (S,) arrays (for analysis and tests; the engine reads
    # the tables)
    step_kind = property(lambda self: self.cls_kind[self.step_class])
    step_cat = property(lambda self: self.cls_cat[self.step_class])
    step_dev = property(lambda self: self.cls_dev[self.step_class])
    step_link = property(lambda self: self.cls_link[self.step_class])
    step_rank_local = property(lambda self: self.cls_rank_local[self.step_class])
    step_mlp = property(lambda self: self.cls_mlp[self.step_class])
    step_lat = property(lambda self: self.cls_lat[self.step_class])
    step_compute_line = property(lambda self: self.cls_compute_line[self.step_class])

    def requests_per_query(self) -> np.ndarray:
        """64-byte DRAM requests of each query, (Q,) int64."""
        task_req = np.add.reduceat(np.append(self.step_nreq, 0), self.task_step_ptr[:-1],
                                   dtype=np.int64) \
            if self.step_nreq.size else np.zeros(len(self.task_query), np.int64)
        task_req = np.where(np.diff(self.task_step_ptr) > 0, task_req, 0)
        return np.bincount(self.task_query, weights=task_req,
                           minlength=self.num_queries).astype(np.int64)


class Costs(NamedTuple):
    """Per-operation costs in DRAM cycles (floats: fractional cycles are kept per item)."""

    host_dist: float        # one distance on the host core
    host_visit: float       # one visited check per neighbor
    host_insert: float      # one candidate insertion
    host_select: float      # select next node
    host_merge: float       # per result merged
    host_lat: int           # host on-chip latency, one way
    host_mlp: int
    gpc_dist: float
    gpc_visit: float
    gpc_insert: float
    gpc_select: float
    gpc_partial: float      # add one rank PU partial distance
    dev_lat: int            # device on-chip latency, one way
    gpc_mlp: int
    pu_latency: int         # rank PU pipeline latency
    accel_latency: int      # CXL-ANNS accelerator latency
    accel_mlp: int
    req_wire: float         # wire bytes of a read request (one slot)
    data_wire: float        # wire bytes of a 64-byte data response
    slot_wire: float        # wire bytes per slot
    slot_bytes: int


def costs_for(cfg: SystemConfig, dim: int, cand_list_len: int) -> Costs:
    """Per-operation costs of ``cfg`` for vectors of ``dim`` dimensions and a candidate list
    of ``cand_list_len`` entries (the trace's L), in DRAM cycles."""
    h, g, tck = cfg.host, cfg.gpc, TCK_PS

    def hc(n):  # host cycles -> DRAM cycles (float)
        return n / h.clock_GHz * 1000.0 / tck

    def gc(n):
        return n / g.clock_GHz * 1000.0 / tck

    link = cfg.link
    return Costs(
        host_dist=hc(dim / h.distance_dims_per_cycle + h.distance_overhead_cycles),
        host_visit=hc(h.visit_check_cycles), host_insert=hc(h.insert_cycles(cand_list_len)),
        host_select=hc(h.select_cycles), host_merge=hc(h.merge_cycles_per_result),
        host_lat=ns_to_cycles(h.onchip_latency_ns), host_mlp=h.outstanding_misses,
        gpc_dist=gc(dim / g.distance_dims_per_cycle + g.distance_overhead_cycles),
        gpc_visit=gc(g.visit_check_cycles), gpc_insert=gc(g.insert_cycles(cand_list_len)),
        gpc_select=gc(g.select_cycles), gpc_partial=gc(g.partial_sum_cycles),
        dev_lat=ns_to_cycles(cfg.device.onchip_latency_ns), gpc_mlp=g.outstanding_requests,
        pu_latency=ns_to_cycles(cfg.rank_pu.pipeline_latency_ns),
        accel_latency=ns_to_cycles(cfg.cxl_anns.accel_latency_ns),
        accel_mlp=cfg.cxl_anns.accel_outstanding,
        req_wire=link.wire_bytes(link.request_slots), data_wire=link.wire_bytes(link.data_slots),
        slot_wire=link.wire_bytes(1), slot_bytes=link.slot_bytes,
    )


def pool_sizes(cfg: SystemConfig, agent_contexts: int) -> np.ndarray:
    """Contexts per pool: host cores, GPC contexts of each device, the host I/O agent."""
    D = cfg.device.count
    sizes = np.empty(D + 2, dtype=np.int64)
    sizes[0] = cfg.host.threads
    sizes[1:D + 1] = cfg.gpc.cores * cfg.gpc.threads_per_core
    sizes[D + 1] = agent_contexts
    return sizes


# ------------------------------------------------------------------------------------------
# The builder kernel. One pass with generous preallocated buffers (sizes from Python).
# ------------------------------------------------------------------------------------------


@nb.njit(cache=True)
def _adjacency_lines(degree, node_lines_max):
    """64-byte lines read for an adjacency list of ``degree`` 4-byte ids (1 .. node_lines_max)."""
    nl = (degree * 4 + LINE_BYTES - 1) // LINE_BYTES
    return min(max(nl, 1), node_lines_max)


# Places in a search where _build adds a step (a step's class is its place and its device:
# every other class field is the same for all the steps of one place on one device).
(P_ANNS_ENTRY_DOWN, P_ANNS_ENTRY, P_ANNS_ENTRY_UP, P_HOST_ENTRY, P_HOST_ADJ, P_ANNS_IDS_DOWN,
 P_ANNS_VECTORS, P_ANNS_DIST_UP, P_HOST_VECTORS, P_HOST_CAND, P_MERGE, P_DISPATCH, P_GPC_ENTRY,
 P_GPC_ADJ, P_GPC_VECTORS, P_GPC_CAND, P_TOPK_UP) = range(17)
N_PLACES = 17


@nb.njit(cache=True, inline="always")
def _step(sa, ca, si, place, dev, kind, cat, link, rank_local, mlp, lat, cline, geo, src,
          obj, nreq, after, wire):
    """Append step ``si`` (arrays ``sa``) of class ``(place, dev)`` (tables ``ca``, whose row
    is filled by the class's first step); return ``si + 1``."""
    ct, cl, cset = ca
    D1 = cset.shape[0] // N_PLACES
    c = place * D1 + dev + 1
    if cset[c] == 0:
        cset[c] = 1
        ct[K_KIND, c] = kind
        ct[K_CAT, c] = cat
        ct[K_DEV, c] = dev
        ct[K_LINK, c] = link
        ct[K_RANK_LOCAL, c] = rank_local
        ct[K_MLP, c] = mlp
        ct[K_LAT, c] = lat
        ct[K_R, c] = geo[0]
        ct[K_RSTEP, c] = geo[1]
        ct[K_CSTEP, c] = geo[2]
        ct[K_SRC, c] = src
        ct[K_OLINES, c] = geo[3] if src == OBJ_READS else 0
        cl[c] = cline
    sa[0][si] = c
    sa[1][si] = obj
    sa[2][si] = nreq
    sa[3][si] = after
    sa[4][si] = wire
    return si + 1


@nb.njit(cache=True, inline="always")
def _xfer(sa, ca, si, place, dev, direction, wire):
    """A message of ``wire`` bytes over device ``dev``'s link in ``direction``."""
    return _step(sa, ca, si, place, dev, STEP_XFER, CAT_TRANSFER, direction, 0, 1, 0, 0.0,
                 (1, 0, LINE_BYTES, 0), 0, 0, 0, 0, wire)


@nb.njit(cache=True, inline="always")
def _compute(sa, ca, si, place, after):
    """``after`` cycles (rounded up) of the context's core, candidate list work."""
    return _step(sa, ca, si, place, -1, STEP_COMPUTE, CAT_CANDIDATE, 0, 0, 1, 0, 0.0,
                 (1, 0, LINE_BYTES, 0), 0, 0, 0, int(np.ceil(after)), 0.0)


@nb.njit(cache=True)
def _build(kind, query_ptr, search_cluster, search_entry, search_hop_ptr, hop_node, hop_degree,
           hop_read_ptr, read_node, hop_cand_inserts, cluster_device, node_lines_max,
           vector_lines, num_devices, k, vector_bytes, rank_R, vec_R, vec_rstep, vec_cstep,
           host_dist, host_visit, host_insert, host_select, host_merge, host_lat, host_mlp,
           gpc_dist, gpc_visit, gpc_insert, gpc_select, gpc_partial, dev_lat, gpc_mlp,
           pu_latency, accel_latency, accel_mlp, slot_wire, slot_bytes, max_tasks, max_steps):
    Q = query_ptr.shape[0] - 1
    D = num_devices
    agent = D + 1
    query_task_ptr = np.zeros(Q + 1, np.int64)
    task_query = np.empty(max_tasks, np.int64)
    task_pool = np.empty(max_tasks, np.int64)
    task_succ = np.empty(max_tasks, np.int64)
    task_npred = np.empty(max_tasks, np.int64)
    task_device = np.empty(max_tasks, np.int64)
    task_step_ptr = np.zeros(max_tasks + 1, np.int64)
    # every field of a step is written (empty, not zeros: pages never written take no memory)
    sa = (np.empty(max_steps, np.int32), np.empty(max_steps, np.int64),
          np.empty(max_steps, np.int32), np.empty(max_steps, np.int64),
          np.empty(max_steps, np.float64))
    K = N_PLACES * (D + 1)
    ca = (np.zeros((N_CLS_INT, K), np.int64), np.zeros(K, np.float64), np.zeros(K, np.int64))
    vec = (vec_R, vec_rstep, vec_cstep, vector_lines)     # a vector's lines (OBJ_READS: each)
    adj = (1, 0, LINE_BYTES, 0)                           # an adjacency list's: contiguous
    ti = 0
    si = 0
    dev_order = np.empty(D, np.int64)
    seen = np.zeros(D, np.int64)
    # partial distances per vector the GPC adds: one per rank holding a segment (a vector of
    # fewer 64-B lines than ranks leaves some ranks without one)
    n_part = min(vec_R, vector_lines)
    for q in range(Q):
        s0 = query_ptr[q]
        s1 = query_ptr[q + 1]
        nprobe = s1 - s0
        if kind <= 2:
            # one task on the host cores for the whole query
            task_query[ti] = q
            task_pool[ti] = 0
            task_succ[ti] = -1
            task_npred[ti] = 0
            task_device[ti] = -1
            for s in range(s0, s1):
                d = cluster_device[search_cluster[s]]
                mdev = 0 if kind == 1 else d
                mlink = 0 if kind == 1 else 1  # host reads cross the link except DRAM-only
                e = search_entry[s]
                if kind == 2:
                    # query vector + entry id down, device reads the entry vector, 1 distance up
                    si = _xfer(sa, ca, si, P_ANNS_ENTRY_DOWN, d, 0,
                               (1 + (vector_bytes + 4 + slot_bytes - 1) // slot_bytes) * slot_wire)
                    si = _step(sa, ca, si, P_ANNS_ENTRY, d, STEP_MEM, CAT_DISTANCE, 0, 0,
                               accel_mlp, dev_lat, 0.0, vec, OBJ_VECTOR, e, vector_lines,
                               accel_latency, 0.0)
                    si = _xfer(sa, ca, si, P_ANNS_ENTRY_UP, d, 1,
                               (1 + (4 + slot_bytes - 1) // slot_bytes) * slot_wire)
                else:
                    si = _step(sa, ca, si, P_HOST_ENTRY, mdev, STEP_MEM, CAT_DISTANCE, mlink, 0,
                               host_mlp, host_lat, host_dist / vector_lines, vec, OBJ_VECTOR,
                               e, vector_lines, 0, 0.0)
                for h in range(search_hop_ptr[s], search_hop_ptr[s + 1]):
                    deg = hop_degree[h]
                    si = _step(sa, ca, si, P_HOST_ADJ, mdev, STEP_MEM, CAT_TRAVERSAL, mlink, 0,
                               host_mlp, host_lat, 0.0, adj, OBJ_ADJACENCY, hop_node[h],
                               _adjacency_lines(deg, node_lines_max),
                               int(np.ceil(deg * host_visit)), 0.0)
                    r0 = hop_read_ptr[h]
                    nr = hop_read_ptr[h + 1] - r0
                    if nr > 0:
                        if kind == 2:
                            wire = (1 + (4 * nr + slot_bytes - 1) // slot_bytes) * slot_wire
                            si = _xfer(sa, ca, si, P_ANNS_IDS_DOWN, d, 0, wire)
                            si = _step(sa, ca, si, P_ANNS_VECTORS, d, STEP_MEM, CAT_DISTANCE, 0,
                                       0, accel_mlp, dev_lat, 0.0, vec, OBJ_READS, r0,
                                       nr * vector_lines, accel_latency, 0.0)
                            si = _xfer(sa, ca, si, P_ANNS_DIST_UP, d, 1, wire)
                        else:
                            si = _step(sa, ca, si, P_HOST_VECTORS, mdev, STEP_MEM, CAT_DISTANCE,
                                       mlink, 0, host_mlp, host_lat, host_dist / vector_lines,
                                       vec, OBJ_READS, r0, nr * vector_lines, 0, 0.0)
                    if kind == 2:
                        # fine-grained scheduling: inserts deferred, only select-next critical
                        si = _compute(sa, ca, si, P_HOST_CAND, host_select)
                    else:
                        si = _compute(sa, ca, si, P_HOST_CAND,
                                      hop_cand_inserts[h] * host_insert + host_select)
            si = _compute(sa, ca, si, P_MERGE, nprobe * k * host_merge)
            ti += 1
            task_step_ptr[ti] = si
        else:
            # Cosmos: per device with probed clusters: dispatch (agent) -> search (GPC) -> merge
            nd = 0
            for s in range(s0, s1):
                d = cluster_device[search_cluster[s]]
                if seen[d] == 0:
                    seen[d] = 1
                    dev_order[nd] = d
                    nd += 1
            merge_task = ti + 2 * nd
            rl = 1 if rank_R > 0 else 0
            cline = 0.0 if rank_R > 0 else gpc_dist / vector_lines
            for j in range(nd):
                d = dev_order[j]
                seen[d] = 0
                # dispatch: query vector down the link
                task_query[ti] = q
                task_pool[ti] = agent
                task_succ[ti] = ti + 1
                task_npred[ti] = 0
                task_device[ti] = d
                si = _xfer(sa, ca, si, P_DISPATCH, d, 0,
                           (1 + (vector_bytes + slot_bytes - 1) // slot_bytes) * slot_wire)
                ti += 1
                task_step_ptr[ti] = si
                # search task on the device GPC
                task_query[ti] = q
                task_pool[ti] = 1 + d
                task_succ[ti] = merge_task
                task_npred[ti] = 1
                task_device[ti] = d
                for s in range(s0, s1):
                    if cluster_device[search_cluster[s]] != d:
                        continue
                    # with rank PUs: rank-local segment reads, then the partial sums
                    after = int(np.ceil(pu_latency + n_part * gpc_partial)) if rank_R > 0 else 0
                    si = _step(sa, ca, si, P_GPC_ENTRY, d, STEP_MEM, CAT_DISTANCE, 0, rl,
                               gpc_mlp, dev_lat, cline, vec, OBJ_VECTOR, search_entry[s],
                               vector_lines, after, 0.0)
                    for h in range(search_hop_ptr[s], search_hop_ptr[s + 1]):
                        deg = hop_degree[h]
                        si = _step(sa, ca, si, P_GPC_ADJ, d, STEP_MEM, CAT_TRAVERSAL, 0, 0,
                                   gpc_mlp, dev_lat, 0.0, adj, OBJ_ADJACENCY, hop_node[h],
                                   _adjacency_lines(deg, node_lines_max),
                                   int(np.ceil(deg * gpc_visit)), 0.0)
                        r0 = hop_read_ptr[h]
                        nr = hop_read_ptr[h + 1] - r0
                        if nr > 0:
                            after = int(np.ceil(pu_latency + nr * n_part * gpc_partial)) \
                                if rank_R > 0 else 0
                            si = _step(sa, ca, si, P_GPC_VECTORS, d, STEP_MEM, CAT_DISTANCE, 0,
                                       rl, gpc_mlp, dev_lat, cline, vec, OBJ_READS, r0,
                                       nr * vector_lines, after, 0.0)
                        si = _compute(sa, ca, si, P_GPC_CAND,
                                      hop_cand_inserts[h] * gpc_insert + gpc_select)
                # local top-k (id + distance, 8 bytes each) up the link
                si = _xfer(sa, ca, si, P_TOPK_UP, d, 1,
                           (1 + (8 * k + slot_bytes - 1) // slot_bytes) * slot_wire)
                ti += 1
                task_step_ptr[ti] = si
            # merge on the host
            task_query[ti] = q
            task_pool[ti] = agent
            task_succ[ti] = -1
            task_npred[ti] = nd
            task_device[ti] = -1
            si = _compute(sa, ca, si, P_MERGE, nprobe * k * host_merge)
            ti += 1
            task_step_ptr[ti] = si
        query_task_ptr[q + 1] = ti
    # Views, not copies: the arrays were sized for the worst case, but pages never written
    # take no memory, while copies would raise the build's peak.
    return (query_task_ptr, task_query[:ti], task_pool[:ti], task_succ[:ti], task_npred[:ti],
            task_device[:ti], task_step_ptr[:ti + 1], sa[0][:si], sa[1][:si], sa[2][:si],
            sa[3][:si], sa[4][:si], ca[0], ca[1])


def build_program(cfg: SystemConfig, trace, layout: Layout, cluster_device: np.ndarray) -> Program:
    """Compile every query of ``trace`` into the flat program of system ``cfg``.

    Parameters
    ----------
    cfg : SystemConfig
    trace : cosmos.trace_input.TraceArrays
    layout : Layout
        Addresses of nodes and vectors (cosmos.layout.build_layout).
    cluster_device : (C,) int64
        Placement.

    Step sequences per search (``r`` = vectors read at a hop):

    - host-cxl / host-dram: MEM entry vector [distance]; per hop: MEM adjacency list
      [traversal] + visited checks; MEM r vectors [distance] with per-line distance compute;
      COMPUTE inserts + select [candidate]. Query end: COMPUTE merge [candidate].
    - cxl-anns: XFER query + entry id down, device MEM entry vector, XFER distance up; per hop:
      host MEM adjacency via link [traversal]; XFER r ids down, device MEM r vectors
      [distance], XFER r distances up [transfer]; COMPUTE select only (inserts deferred).
    - cosmos: per device: agent XFER query down; GPC task: per search the same hop sequence as
      the host, device-local, with rank-local segment reads and partial sums when rank PUs are
      enabled; XFER local top-k up. Host agent merges when every device has answered.
    """
    cfg.validate()
    kind = KIND_CODE[cfg.kind]
    meta = trace.meta
    dim = int(meta["dim"])
    k = int(meta["k"])
    vector_bytes = int(meta["vector_bytes"])
    c = costs_for(cfg, dim, int(meta["cand_list_len"]))
    D = cfg.device.count
    Q = trace.num_queries
    S = trace.search_cluster.shape[0]
    H = trace.hop_node.shape[0]
    max_tasks = Q * (2 * D + 1) + 1
    max_steps = S * 4 + H * 5 + Q * (2 * D + 2) + 1
    use_rank = kind == 3 and cfg.rank_pu.enabled
    if use_rank and layout.rank_parts < 1:
        raise ValueError("rank-level PUs need a rank-partitioned layout")
    out = _build(
        kind, trace.query_ptr, trace.search_cluster, trace.search_entry, trace.search_hop_ptr,
        trace.hop_node, trace.hop_degree, trace.hop_read_ptr, trace.read_node,
        trace.hop_cand_inserts, np.asarray(cluster_device, np.int64), layout.node_lines,
        layout.vector_lines, D, k, vector_bytes, 1 if use_rank else 0, layout.rank_parts,
        layout.rank_step, layout.col_step, c.host_dist, c.host_visit, c.host_insert,
        c.host_select, c.host_merge, c.host_lat, c.host_mlp, c.gpc_dist, c.gpc_visit,
        c.gpc_insert, c.gpc_select, c.gpc_partial, c.dev_lat, c.gpc_mlp, c.pu_latency,
        c.accel_latency, c.accel_mlp, c.slot_wire, c.slot_bytes, max_tasks, max_steps)
    (qtp, tq, tp, tsucc, tnpred, tdev, tsp, scls, sobj, snreq, safter, swire, ct, cl) = out
    return Program(qtp, tq, tp, tsucc, tnpred, tdev, tsp, scls, sobj, snreq, safter, swire,
                   *ct, cl, trace.read_node, layout.vector_addr, layout.node_addr)
