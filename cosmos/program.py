"""Turn each query of the logical trace into a program of dependent steps, per system kind.

A *program* is flat integer/float arrays (built by one numba kernel, no Python per hop):

- queries own a contiguous run of *tasks* (``query_task_ptr``); a task runs on one execution
  context of its *pool* (0 = host cores, ``1 + d`` = GPC contexts of device ``d``,
  ``D + 1`` = the host's I/O agent, which never runs out of contexts), has at most one
  successor task (``task_succ``, -1 = none) and waits for ``task_npred`` predecessors; the
  query's last task is its sink;
- a task is a chain of *steps* (``task_step_ptr``), each starting when the previous one has
  completed:

  ``STEP_MEM``     read ``sum(obj_lines)`` 64-byte lines of the step's objects from memory
                   instance ``step_dev``, at most ``step_mlp`` in flight; each request spends
                   ``step_lat`` cycles on chip each way, crosses the CXL link both ways when
                   ``step_link == 1``, and is rank-local when ``step_rank_local == 1``; each
                   returned line costs ``step_compute_line`` cycles of the context's core
                   (overlapped with the other lines in flight), then ``step_compute_after``.
  ``STEP_XFER``    a message of ``step_wire_bytes`` over the link of device ``step_dev`` in
                   direction ``step_link`` (0 = host to device, 1 = device to host); the step
                   completes when it arrives, then ``step_compute_after``.
  ``STEP_COMPUTE`` ``step_compute_after`` cycles on the context's core.

Line ``l`` of object ``o`` is at ``obj_addr[o] + (l % R) * rank_step + (l // R) * col_step``
with ``(R, rank_step, col_step)`` of the step (``R = 1, col_step = 64`` = contiguous lines).

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


class Program(NamedTuple):
    """Flat program arrays (see module docstring). Shapes: Q queries, T tasks, S steps, O objects."""

    query_task_ptr: np.ndarray   # (Q+1,) int64
    task_query: np.ndarray       # (T,) int64
    task_pool: np.ndarray        # (T,) int64
    task_succ: np.ndarray        # (T,) int64, -1 = none
    task_npred: np.ndarray       # (T,) int64
    task_device: np.ndarray      # (T,) int64, device the task's search runs against, -1 = host
    task_step_ptr: np.ndarray    # (T+1,) int64
    step_kind: np.ndarray        # (S,) int64
    step_cat: np.ndarray         # (S,) int64
    step_dev: np.ndarray         # (S,) int64
    step_link: np.ndarray        # (S,) int64
    step_rank_local: np.ndarray  # (S,) int64
    step_mlp: np.ndarray         # (S,) int64
    step_lat: np.ndarray         # (S,) int64
    step_compute_line: np.ndarray  # (S,) float64
    step_compute_after: np.ndarray  # (S,) int64
    step_wire_bytes: np.ndarray  # (S,) float64
    step_R: np.ndarray           # (S,) int64
    step_rank_step: np.ndarray   # (S,) int64
    step_col_step: np.ndarray    # (S,) int64
    step_obj_ptr: np.ndarray     # (S+1,) int64
    step_nreq: np.ndarray        # (S,) int64
    obj_addr: np.ndarray         # (O,) uint64
    obj_lines: np.ndarray        # (O,) int64

    @property
    def num_queries(self) -> int:
        return int(self.query_task_ptr.shape[0] - 1)

    def requests_per_query(self) -> np.ndarray:
        """64-byte DRAM requests of each query, (Q,) int64."""
        task_req = np.add.reduceat(np.append(self.step_nreq, 0), self.task_step_ptr[:-1]) \
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


@nb.njit(cache=True)
def _add_step(st, si, kind, cat, dev, link, rank_local, mlp, lat, cline, after, wire, R, rstep,
              cstep, oi):
    st[0][si] = kind
    st[1][si] = cat
    st[2][si] = dev
    st[3][si] = link
    st[4][si] = rank_local
    st[5][si] = mlp
    st[6][si] = lat
    st[7][si] = after
    st[8][si] = R
    st[9][si] = rstep
    st[10][si] = cstep
    st[11][si + 1] = oi  # obj ptr end
    return si + 1


@nb.njit(cache=True)
def _build(kind, query_ptr, search_cluster, search_entry, search_hop_ptr, hop_node, hop_degree,
           hop_read_ptr, read_node, hop_cand_inserts, cluster_device, node_addr, vector_addr,
           node_lines_max, vector_lines, num_devices, k, vector_bytes, rank_R, vec_R,
           vec_rstep, vec_cstep, host_dist, host_visit, host_insert, host_select, host_merge, host_lat,
           host_mlp, gpc_dist, gpc_visit, gpc_insert, gpc_select, gpc_partial, dev_lat, gpc_mlp,
           pu_latency, accel_latency, accel_mlp, req_wire, data_wire, slot_wire, slot_bytes,
           max_tasks, max_steps, max_objs):
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
    i64 = np.empty((12, max_steps + 1), np.int64)  # kind..cstep, obj_ptr at row 11
    i64[11, 0] = 0
    cline = np.zeros(max_steps, np.float64)
    wire = np.zeros(max_steps, np.float64)
    obj_addr = np.empty(max_objs, np.uint64)
    obj_lines = np.empty(max_objs, np.int64)
    st = (i64[0], i64[1], i64[2], i64[3], i64[4], i64[5], i64[6], i64[7], i64[8], i64[9],
          i64[10], i64[11])
    ti = 0
    si = 0
    oi = 0
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
                    wire[si] = (1 + (vector_bytes + 4 + slot_bytes - 1) // slot_bytes) * slot_wire
                    si = _add_step(st, si, STEP_XFER, CAT_TRANSFER, d, 0, 0, 1, 0, 0.0, 0, 0.0,
                                   1, 0, LINE_BYTES, oi)
                    obj_addr[oi] = vector_addr[e]
                    obj_lines[oi] = vector_lines
                    oi += 1
                    si = _add_step(st, si, STEP_MEM, CAT_DISTANCE, d, 0, 0, accel_mlp, dev_lat,
                                   0.0, accel_latency, 0.0, vec_R, vec_rstep, vec_cstep, oi)
                    wire[si] = (1 + (4 + slot_bytes - 1) // slot_bytes) * slot_wire
                    si = _add_step(st, si, STEP_XFER, CAT_TRANSFER, d, 1, 0, 1, 0, 0.0, 0, 0.0,
                                   1, 0, LINE_BYTES, oi)
                else:
                    obj_addr[oi] = vector_addr[e]
                    obj_lines[oi] = vector_lines
                    oi += 1
                    cline[si] = host_dist / vector_lines
                    si = _add_step(st, si, STEP_MEM, CAT_DISTANCE, mdev, mlink, 0, host_mlp,
                                   host_lat, cline[si], 0, 0.0, vec_R, vec_rstep, vec_cstep, oi)
                for h in range(search_hop_ptr[s], search_hop_ptr[s + 1]):
                    deg = hop_degree[h]
                    nl = _adjacency_lines(deg, node_lines_max)
                    obj_addr[oi] = node_addr[hop_node[h]]
                    obj_lines[oi] = nl
                    oi += 1
                    si = _add_step(st, si, STEP_MEM, CAT_TRAVERSAL, mdev, mlink, 0, host_mlp,
                                   host_lat, 0.0, int(np.ceil(deg * host_visit)), 0.0, 1, 0,
                                   LINE_BYTES, oi)
                    r0 = hop_read_ptr[h]
                    r1 = hop_read_ptr[h + 1]
                    nr = r1 - r0
                    if nr > 0:
                        if kind == 2:
                            wire[si] = (1 + (4 * nr + slot_bytes - 1) // slot_bytes) * slot_wire
                            si = _add_step(st, si, STEP_XFER, CAT_TRANSFER, d, 0, 0, 1, 0, 0.0,
                                           0, 0.0, 1, 0, LINE_BYTES, oi)
                        for r in range(r0, r1):
                            obj_addr[oi] = vector_addr[read_node[r]]
                            obj_lines[oi] = vector_lines
                            oi += 1
                        if kind == 2:
                            si = _add_step(st, si, STEP_MEM, CAT_DISTANCE, d, 0, 0, accel_mlp,
                                           dev_lat, 0.0, accel_latency, 0.0, vec_R, vec_rstep, vec_cstep,
                                           oi)
                            wire[si] = (1 + (4 * nr + slot_bytes - 1) // slot_bytes) * slot_wire
                            si = _add_step(st, si, STEP_XFER, CAT_TRANSFER, d, 1, 0, 1, 0, 0.0,
                                           0, 0.0, 1, 0, LINE_BYTES, oi)
                        else:
                            cline[si] = host_dist / vector_lines
                            si = _add_step(st, si, STEP_MEM, CAT_DISTANCE, mdev, mlink, 0,
                                           host_mlp, host_lat, cline[si], 0, 0.0, vec_R,
                                           vec_rstep, vec_cstep, oi)
                    if kind == 2:
                        # fine-grained scheduling: inserts deferred, only select-next critical
                        c_after = host_select
                    else:
                        c_after = hop_cand_inserts[h] * host_insert + host_select
                    si = _add_step(st, si, STEP_COMPUTE, CAT_CANDIDATE, -1, 0, 0, 1, 0, 0.0,
                                   int(np.ceil(c_after)), 0.0, 1, 0, LINE_BYTES, oi)
            si = _add_step(st, si, STEP_COMPUTE, CAT_CANDIDATE, -1, 0, 0, 1, 0, 0.0,
                           int(np.ceil(nprobe * k * host_merge)), 0.0, 1, 0, LINE_BYTES, oi)
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
            for j in range(nd):
                d = dev_order[j]
                seen[d] = 0
                # dispatch: query vector down the link
                task_query[ti] = q
                task_pool[ti] = agent
                task_succ[ti] = ti + 1
                task_npred[ti] = 0
                task_device[ti] = d
                wire[si] = (1 + (vector_bytes + slot_bytes - 1) // slot_bytes) * slot_wire
                si = _add_step(st, si, STEP_XFER, CAT_TRANSFER, d, 0, 0, 1, 0, 0.0, 0, 0.0, 1,
                               0, LINE_BYTES, oi)
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
                    e = search_entry[s]
                    obj_addr[oi] = vector_addr[e]
                    obj_lines[oi] = vector_lines
                    oi += 1
                    if rank_R > 0:
                        si = _add_step(st, si, STEP_MEM, CAT_DISTANCE, d, 0, 1, gpc_mlp, dev_lat,
                                       0.0, int(np.ceil(pu_latency + n_part * gpc_partial)),
                                       0.0, vec_R, vec_rstep, vec_cstep, oi)
                    else:
                        cline[si] = gpc_dist / vector_lines
                        si = _add_step(st, si, STEP_MEM, CAT_DISTANCE, d, 0, 0, gpc_mlp,
                                       dev_lat, cline[si], 0, 0.0, vec_R, vec_rstep, vec_cstep, oi)
                    for h in range(search_hop_ptr[s], search_hop_ptr[s + 1]):
                        deg = hop_degree[h]
                        nl = _adjacency_lines(deg, node_lines_max)
                        obj_addr[oi] = node_addr[hop_node[h]]
                        obj_lines[oi] = nl
                        oi += 1
                        si = _add_step(st, si, STEP_MEM, CAT_TRAVERSAL, d, 0, 0, gpc_mlp,
                                       dev_lat, 0.0, int(np.ceil(deg * gpc_visit)), 0.0, 1, 0,
                                       LINE_BYTES, oi)
                        r0 = hop_read_ptr[h]
                        r1 = hop_read_ptr[h + 1]
                        nr = r1 - r0
                        if nr > 0:
                            for r in range(r0, r1):
                                obj_addr[oi] = vector_addr[read_node[r]]
                                obj_lines[oi] = vector_lines
                                oi += 1
                            if rank_R > 0:
                                si = _add_step(st, si, STEP_MEM, CAT_DISTANCE, d, 0, 1, gpc_mlp,
                                               dev_lat, 0.0,
                                               int(np.ceil(pu_latency + nr * n_part * gpc_partial)),
                                               0.0, vec_R, vec_rstep, vec_cstep, oi)
                            else:
                                cline[si] = gpc_dist / vector_lines
                                si = _add_step(st, si, STEP_MEM, CAT_DISTANCE, d, 0, 0, gpc_mlp,
                                               dev_lat, cline[si], 0, 0.0, vec_R, vec_rstep, vec_cstep, oi)
                        c_after = hop_cand_inserts[h] * gpc_insert + gpc_select
                        si = _add_step(st, si, STEP_COMPUTE, CAT_CANDIDATE, -1, 0, 0, 1, 0, 0.0,
                                       int(np.ceil(c_after)), 0.0, 1, 0, LINE_BYTES, oi)
                # local top-k (id + distance, 8 bytes each) up the link
                wire[si] = (1 + (8 * k + slot_bytes - 1) // slot_bytes) * slot_wire
                si = _add_step(st, si, STEP_XFER, CAT_TRANSFER, d, 1, 0, 1, 0, 0.0, 0, 0.0, 1,
                               0, LINE_BYTES, oi)
                ti += 1
                task_step_ptr[ti] = si
            # merge on the host
            task_query[ti] = q
            task_pool[ti] = agent
            task_succ[ti] = -1
            task_npred[ti] = nd
            task_device[ti] = -1
            si = _add_step(st, si, STEP_COMPUTE, CAT_CANDIDATE, -1, 0, 0, 1, 0, 0.0,
                           int(np.ceil(nprobe * k * host_merge)), 0.0, 1, 0, LINE_BYTES, oi)
            ti += 1
            task_step_ptr[ti] = si
        query_task_ptr[q + 1] = ti
    # requests (64-byte lines) of each step: the lines of its objects (0 for XFER/COMPUTE)
    nreq = np.empty(si, np.int64)
    optr = i64[11]
    for j in range(si):
        n = 0
        for o in range(optr[j], optr[j + 1]):
            n += obj_lines[o]
        nreq[j] = n
    # Views, not copies: the arrays were sized for the worst case, but pages never written
    # take no memory, while copies raise the build's peak (7.11 -> 6.67 GB measured for
    # 10,000 queries of the 1M-vector SIFT-like trace).
    return (query_task_ptr, task_query[:ti], task_pool[:ti], task_succ[:ti], task_npred[:ti],
            task_device[:ti], task_step_ptr[:ti + 1], i64[:, :si], i64[11, :si + 1],
            cline[:si], wire[:si], obj_addr[:oi], obj_lines[:oi], nreq)


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
    R = trace.read_node.shape[0]
    max_tasks = Q * (2 * D + 1) + 1
    max_steps = S * 4 + H * 5 + Q * (2 * D + 2) + 1
    max_objs = S + H + R + 1
    use_rank = kind == 3 and cfg.rank_pu.enabled
    if use_rank and layout.rank_parts < 1:
        raise ValueError("rank-level PUs need a rank-partitioned layout")
    out = _build(
        kind, trace.query_ptr, trace.search_cluster, trace.search_entry, trace.search_hop_ptr,
        trace.hop_node, trace.hop_degree, trace.hop_read_ptr, trace.read_node,
        trace.hop_cand_inserts, np.asarray(cluster_device, np.int64), layout.node_addr,
        layout.vector_addr, layout.node_lines, layout.vector_lines, D, k, vector_bytes,
        1 if use_rank else 0, layout.rank_parts, layout.rank_step, layout.col_step,
        c.host_dist, c.host_visit, c.host_insert, c.host_select, c.host_merge, c.host_lat,
        c.host_mlp, c.gpc_dist, c.gpc_visit, c.gpc_insert, c.gpc_select, c.gpc_partial,
        c.dev_lat, c.gpc_mlp, c.pu_latency, c.accel_latency, c.accel_mlp, c.req_wire,
        c.data_wire, c.slot_wire, c.slot_bytes, max_tasks, max_steps, max_objs)
    (qtp, tq, tp, tsucc, tnpred, tdev, tsp, i64, optr, cline, wire, oaddr, olines, nreq) = out
    return Program(qtp, tq, tp, tsucc, tnpred, tdev, tsp, i64[0], i64[1], i64[2], i64[3],
                   i64[4], i64[5], i64[6], cline, i64[7], wire, i64[8], i64[9], i64[10], optr,
                   nreq, oaddr, olines)
