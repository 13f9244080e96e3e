"""Static memory layout of the clustered index on the devices (Cosmos paper, Section IV-B).

After placement, each device holds the clusters assigned to it, in cluster-id order. A node's
*local index* on its device is the running offset of its cluster plus its position inside the
cluster (``cluster_nodes`` order). Two regions per device:

- graph region: ``node address = graph base + local index x node stride``; a node entry holds
  its adjacency list (``max_degree`` 4-byte ids), rounded up to 64-byte lines;
- embedding region: ``vector address = embedding base + local index x vector stride``, the
  vector rounded up to 64-byte lines.

``spread=True`` multiplies both strides by an odd factor ``S`` (the largest odd integer with
the spread layout still inside the device capacity), so the small logical index is laid out
across the device's full capacity and the DRAM sees billion-scale address ranges: rows are
as sparse as in a full-size index (few row hits between unrelated nodes) and all banks and
rows are addressed. ``S`` is odd so that a power-of-two stride never folds all nodes onto a
subset of channels. What it does not capture: the real index has more nodes per cluster, so
traces of a full-size index have longer searches; spreading changes addresses, not the work.

Channel-local vectors (``vector_ranks=R >= 1``, what the simulator uses for every system):
each vector lives in one row of one channel (one activation reads it all), consecutive vectors
go to consecutive channels. With rank-level PUs (``R`` = ranks per channel) it is partitioned
column-wise across the ranks of that channel: 64-byte segment ``l`` goes to rank ``l % R`` at
column ``col0 + l // R`` of the same bank and row. The engine generates segment addresses as
``base + (l % R) * rank_step + (l // R) * col_step`` from the per-device pattern returned here.
Which address bits select channel, rank, column, ... is the DRAM model's address mapping; it is
described by an :class:`AddressFields` (LSB-first mixed-radix fields above the line offset).

A scan index (IVF-PQ or exact scan, ``code_bytes`` given) has no graph: its first region is
the *list region*, each device's lists in cluster-id order, each list's codes (for an exact
scan, its full vectors) packed contiguously from a 64-byte boundary, dense, never spread: a
list is one run of sequential addresses, which the address mapping interleaves over the
channels line by line and then walks column by column through the same rows, so the DRAM
model sees the row-hit streams of a scan. With ``term_table_bytes`` (an IVF-PQ index whose
near-memory scan reads the lists' precomputed term tables, faiss's ``precomputed_table``), the
*term region* follows: each device's lists' term tables in cluster-id order, one per list of
``term_table_bytes`` from a 64-byte boundary, dense. The embedding region (the full vectors
that re-ranking reads one by one) follows as above, spread.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

LINE_BYTES = 64


#: Nodes per block when the per-node addresses are computed: bounds the temporaries (about a
#: dozen int64 arrays of this length, ~400 MB) at any index size, a billion-vector templated
#: trace's 150 M touched nodes included. Results do not depend on it.
LAYOUT_BLOCK = 1 << 22


class CapacityError(ValueError):
    """The index does not fit the capacity of its fullest memory instance."""


def lines_for(nbytes: int) -> int:
    """Number of 64-byte lines needed for ``nbytes`` bytes."""
    return max(1, -(-int(nbytes) // LINE_BYTES))


#: Field ids of the DRAM model's address mapping (dram.config.Params.map_fields).
FIELD_NAMES = ("channel", "rank", "bankgroup", "bank", "row", "column")


@dataclass(frozen=True)
class AddressFields:
    """Mixed-radix fields of a physical address, least significant first, above the line offset.

    ``fields`` is a tuple of ``(name, radix)``: line number ``addr // 64`` =
    ``sum(value_i * prod(radix_j, j < i))``. Names: ``channel``, ``rank``, ``bankgroup``,
    ``bank``, ``row``, ``column`` (in 64-byte lines), as in the DRAM model's mapping.
    """

    fields: tuple[tuple[str, int], ...]
    line_bytes: int = LINE_BYTES

    @classmethod
    def from_dram_params(cls, params) -> "AddressFields":
        """The mapping of ``dram.DRAMConfig(...).resolve()`` (``map_fields``, ``map_radix``)."""
        from dram.config import tables

        t = tables(params)
        order = [int(f) for f in t["map_fields"]]
        return cls(tuple((FIELD_NAMES[f], int(t["map_radix"][f])) for f in order))

    def divisor(self, name: str) -> int:
        """Product of the radices below field ``name`` (its place value in lines)."""
        div = 1
        for n, r in self.fields:
            if n == name:
                return div
            div *= r
        raise KeyError(f"address mapping has no field {name!r}: {self.fields}")

    def radix(self, name: str) -> int:
        for n, r in self.fields:
            if n == name:
                return r
        raise KeyError(f"address mapping has no field {name!r}: {self.fields}")

    @property
    def capacity_bytes(self) -> int:
        total = self.line_bytes
        for _, r in self.fields:
            total *= r
        return total

    def compose(self, values: dict[str, np.ndarray]) -> np.ndarray:
        """Byte address from field values (missing fields = 0); values must be < radix."""
        line = None
        for name, r in self.fields:
            v = np.asarray(values.get(name, 0), dtype=np.int64)
            if np.any((v < 0) | (v >= r)):
                raise ValueError(f"address field {name!r} value outside [0, {r})")
            term = v * self.divisor(name)
            line = term if line is None else line + term
        return (np.asarray(line, dtype=np.uint64) * np.uint64(self.line_bytes))

    def field_of(self, name: str, addr: np.ndarray) -> np.ndarray:
        line = np.asarray(addr, dtype=np.uint64) // np.uint64(self.line_bytes)
        return ((line // np.uint64(self.divisor(name))) % np.uint64(self.radix(name))).astype(np.int64)

    def channel_of(self, addr: np.ndarray) -> np.ndarray:
        return self.field_of("channel", addr)

    def rank_of(self, addr: np.ndarray) -> np.ndarray:
        return self.field_of("rank", addr)


@dataclass(frozen=True)
class Layout:
    """Addresses of every node entry and vector, per device.

    Attributes
    ----------
    node_device : ndarray (n,), int64
        Device holding each node (global dataset row id).
    node_addr, vector_addr : ndarray (n,), uint64
        Device-local byte address of the node entry (adjacency list) and of the vector.
    node_lines, vector_lines : int
        64-byte lines per node entry (full ``max_degree`` list) and per vector.
    node_stride, vector_stride : int
        Bytes between consecutive entries (spread factor included).
    spread : int
        Stride multiplier (1 = dense).
    rank_parts : int
        Ranks a vector is partitioned across (1 = not partitioned).
    rank_step, col_step : int
        Address deltas to the same column of the next rank, and to the next column of the same
        rank (only meaningful when ``rank_parts > 1``; else ``col_step = 64``).
    bytes_used : ndarray (D,), int64
        Bytes of index data per device (dense, without spreading).
    node_cached : ndarray (n,), uint8, or None
        1 for a node whose adjacency list is held in the host DRAM graph cache
        (:func:`with_graph_cache`); its ``node_addr`` is then its address in the cache.
    list_addr : ndarray (C,), uint64, or None
        Scan index: device-local byte address of each list's first code (64-byte aligned);
        position ``p`` of list ``c`` is at ``list_addr[c] + (p - cluster_ptr[c]) x
        code_bytes``. None for a graph index.
    code_bytes : int
        Scan index: bytes per code (0 for a graph index).
    term_addr : ndarray (C,), uint64, or None
        Scan index with precomputed term tables on the devices: device-local byte address of
        each list's term table (64-byte aligned, in the term region after the list region).
        None when the layout holds none.
    term_bytes : int
        Bytes of one list's term table (0: none).
    """

    node_device: np.ndarray
    node_addr: np.ndarray
    vector_addr: np.ndarray
    node_lines: int
    vector_lines: int
    node_stride: int
    vector_stride: int
    spread: int
    rank_parts: int
    rank_step: int
    col_step: int
    bytes_used: np.ndarray
    node_cached: np.ndarray | None = None
    list_addr: np.ndarray | None = None
    code_bytes: int = 0
    term_addr: np.ndarray | None = None
    term_bytes: int = 0

    def adjacency_lines(self, degree: np.ndarray) -> np.ndarray:
        """Lines read for adjacency lists of the given lengths (4-byte ids, >= 1 line)."""
        d = np.asarray(degree, dtype=np.int64)
        return np.maximum(1, -(-(d * 4) // LINE_BYTES))


def _offsets_on_device(order, cluster_device, amount, num_devices):
    """Lay clusters out one after another on their devices, in ``order``: per cluster, the sum
    of ``amount`` over the clusters before it on its device (int64 [C]); per device, the total
    (int64 [num_devices])."""
    offset = np.zeros(len(amount), dtype=np.int64)
    total = np.zeros(num_devices, dtype=np.int64)
    for c in order:
        d = cluster_device[c]
        offset[c] = total[d]
        total[d] += amount[c]
    return offset, total


def build_layout(
    cluster_ptr: np.ndarray,
    cluster_nodes: np.ndarray,
    cluster_device: np.ndarray,
    num_devices: int,
    *,
    vector_bytes: int,
    max_degree: int,
    capacity_bytes: int,
    spread: bool = True,
    vector_ranks: int = 0,
    fields: AddressFields | None = None,
    code_bytes: int = 0,
    node_pos: np.ndarray | None = None,
    term_table_bytes: int = 0,
) -> Layout:
    """Lay out the clustered index on the devices.

    Parameters
    ----------
    cluster_ptr : (C+1,) int64 and cluster_nodes : (n,) int64
        Cluster membership CSR (logical trace, contract 1).
    cluster_device : (C,) int64
        Device of each cluster (a placement).
    num_devices : int
    vector_bytes, max_degree : int
        From the trace metadata.
    capacity_bytes : int
        DRAM capacity per device.
    spread : bool
        Spread the layout over the full capacity (see module docstring).
    vector_ranks : int
        0: vectors at linear addresses (``embedding base + index x stride``; the mapping
        interleaves their lines over channels). ``R >= 1``: channel-local vectors, each in
        one row of one channel, partitioned column-wise across ``R`` ranks (``R = 1``: not
        partitioned; ``R`` = ranks per channel for rank-level PUs). Needs ``fields``.
    fields : AddressFields
        The DRAM address mapping.
    code_bytes : int
        > 0: a scan index (module docstring): no node entries (``node_addr`` all 0), a list
        region of ``code_bytes`` per position first, then the embedding region.
    term_table_bytes : int
        > 0 (a scan index only): one precomputed term table of this many bytes per list, in
        the term region after the list region (module docstring); 0: none.
    node_pos : (m,) int64, optional
        A templated trace's node ids (graphs.templates): the logical position of each, in
        increasing order. The layout is that of the whole logical index, but the returned
        per-node arrays hold only these m nodes (``cluster_nodes`` is not used).

    Raises
    ------
    ValueError
        Placement names a device out of range, or the index does not fit a device.
    """
    cluster_ptr = np.asarray(cluster_ptr, dtype=np.int64)
    cluster_nodes = np.asarray(cluster_nodes, dtype=np.int64)
    cluster_device = np.asarray(cluster_device, dtype=np.int64)
    C = cluster_ptr.shape[0] - 1
    if node_pos is not None:
        node_pos = np.asarray(node_pos, dtype=np.int64)
        n = node_pos.shape[0]
    else:
        n = cluster_nodes.shape[0]
    if cluster_device.shape != (C,):
        raise ValueError(f"placement has {cluster_device.shape[0]} entries, expected one per "
                         f"cluster ({C})")
    if C and (cluster_device.min() < 0 or cluster_device.max() >= num_devices):
        raise ValueError(f"placement names a device outside [0, {num_devices})")
    node_lines = lines_for(4 * max_degree)
    vector_lines = lines_for(vector_bytes)
    node_bytes = node_lines * LINE_BYTES
    vec_bytes = vector_lines * LINE_BYTES

    sizes = np.diff(cluster_ptr)
    # local index: clusters of a device in cluster-id order
    order = np.lexsort((np.arange(C), cluster_device))
    per_dev_count = np.bincount(cluster_device, weights=sizes, minlength=num_devices).astype(np.int64)
    cl_offset, _ = _offsets_on_device(order, cluster_device, sizes, num_devices)
    if node_pos is None:
        member_cluster = np.repeat(np.arange(C, dtype=np.int64), sizes)
        pos_in_cluster = np.arange(n, dtype=np.int64) - np.repeat(cluster_ptr[:-1], sizes)
        all_local = np.empty(n, dtype=np.int64)
        node_device = np.full(n, -1, dtype=np.int64)
        all_local[cluster_nodes] = cl_offset[member_cluster] + pos_in_cluster
        node_device[cluster_nodes] = cluster_device[member_cluster]
        if n and node_device.min() < 0:
            raise ValueError("cluster_nodes does not cover every node exactly once")
    else:   # only the nodes a templated trace touches, by logical position (block by block)
        node_device = np.empty(n, dtype=np.int64)

    max_nodes = int(per_dev_count.max()) if C else 0
    list_addr = None
    term_addr = None
    if term_table_bytes and not code_bytes:
        raise ValueError("term tables (term_table_bytes) belong to a scan index (code_bytes)")
    if code_bytes:
        # the list region: each device's lists in cluster-id order, line-aligned, dense
        list_bytes = -(-(sizes * int(code_bytes)) // LINE_BYTES) * LINE_BYTES
        list_off, used = _offsets_on_device(order, cluster_device, list_bytes, num_devices)
        list_addr = list_off.astype(np.uint64)
        region = int(used.max()) if C else 0
        if term_table_bytes:
            # the term region: one line-aligned term table per list, after the list region
            tb = -(-int(term_table_bytes) // LINE_BYTES) * LINE_BYTES
            term_off, term_used = _offsets_on_device(order, cluster_device,
                                                     np.full(C, tb, np.int64), num_devices)
            term_addr = (region + term_off).astype(np.uint64)
            used = used + term_used
            region += int(term_used.max()) if C else 0
        bytes_used = used + per_dev_count * vec_bytes
        if region + max_nodes * vec_bytes > capacity_bytes:
            raise CapacityError(f"the index needs {region + max_nodes * vec_bytes} bytes on its "
                             f"fullest device, more than the capacity {capacity_bytes}")
        S = 1
        if spread and max_nodes > 0:
            S = max(1, (capacity_bytes - region) // (max_nodes * vec_bytes))
            if S % 2 == 0:
                S -= 1
            S = max(S, 1)
        node_stride = node_bytes
        vector_stride = vec_bytes * S
        graph_bytes = region
    else:
        bytes_used = per_dev_count * (node_bytes + vec_bytes)
        if max_nodes * (node_bytes + vec_bytes) > capacity_bytes:
            raise CapacityError(f"the index needs {max_nodes * (node_bytes + vec_bytes)} bytes on "
                             f"its fullest device, more than the capacity {capacity_bytes}")
        S = 1
        if spread and max_nodes > 0:
            S = max(1, capacity_bytes // (max_nodes * (node_bytes + vec_bytes)))
            if S % 2 == 0:
                S -= 1
            S = max(S, 1)
        node_stride = node_bytes * S
        vector_stride = vec_bytes * S
        graph_bytes = max_nodes * node_stride
    scan = {"list_addr": list_addr, "code_bytes": int(code_bytes), "term_addr": term_addr,
            "term_bytes": int(term_table_bytes) if term_addr is not None else 0}

    if vector_ranks:
        R = int(vector_ranks)
        vector_address = _channel_local(fields, R, vector_lines, graph_bytes, capacity_bytes,
                                        max_nodes, spread)
        rank_step = LINE_BYTES * fields.divisor("rank")
        col_step = LINE_BYTES * fields.divisor("column")
    else:
        R, rank_step, col_step = 1, 0, LINE_BYTES

        def vector_address(local):
            return (graph_bytes + local * vector_stride).astype(np.uint64)

    node_addr = np.zeros(n, dtype=np.uint64)      # a scan index has no node entries
    vector_addr = np.empty(n, dtype=np.uint64)
    for lo in range(0, n, LAYOUT_BLOCK):
        hi = min(n, lo + LAYOUT_BLOCK)
        if node_pos is None:
            local = all_local[lo:hi]
        else:
            pos = node_pos[lo:hi]
            member_cluster = np.searchsorted(cluster_ptr, pos, side="right") - 1
            local = cl_offset[member_cluster] + pos - cluster_ptr[member_cluster]
            node_device[lo:hi] = cluster_device[member_cluster]
        if not code_bytes:
            node_addr[lo:hi] = (local * node_stride).astype(np.uint64)
        vector_addr[lo:hi] = vector_address(local)

    return Layout(node_device, node_addr, vector_addr, node_lines, vector_lines,
                  node_stride, vector_stride, S, R, rank_step, col_step, bytes_used, **scan)


def _channel_local(fields, R, vector_lines, graph_bytes, capacity_bytes, max_nodes, spread):
    """The channel-local vector layout (module docstring) as a function of the local index:
    checks the mapping once, returns ``local (int64 array) -> vector address (uint64)``."""
    if fields is None:
        raise ValueError("a channel-local vector layout needs the DRAM address mapping (fields)")
    if R < 1 or fields.radix("rank") < R:
        raise ValueError(f"vector_ranks must be in [1, {fields.radix('rank')}] (ranks of the "
                         f"address mapping), got {R}")
    low = {n for n, _ in fields.fields[:3 if R > 1 else 2]}
    need = {"channel", "column", "rank"} if R > 1 else {"channel", "column"}
    if low != need:
        raise ValueError(f"a channel-local vector layout needs {sorted(need)} as the lowest "
                         f"address fields, the mapping has {fields.fields}")
    n_ch = fields.radix("channel")
    cols = fields.radix("column")
    seg_per_rank = -(-vector_lines // R)
    if seg_per_rank > cols:
        raise ValueError(f"a vector needs {seg_per_rank} columns per rank, a row has {cols}")
    vec_per_row = cols // seg_per_rank
    # units of (all channels x one row of columns [x the vector's ranks]); the graph region
    # (linear addresses from 0) occupies the first rest0 of them
    in_vec = {"channel", "column"} | ({"rank"} if R > 1 else set())
    unit_bytes = n_ch * cols * (fields.radix("rank") if R > 1 else 1) * LINE_BYTES
    rest0 = -(-graph_bytes // unit_bytes) if graph_bytes else 0
    # spread the vector slots over what the graph region leaves (odd factor, as above)
    S_v = 1
    if spread and max_nodes > 0:
        units = capacity_bytes // unit_bytes - rest0
        S_v = max(1, (units * n_ch * vec_per_row) // max_nodes)
        if S_v % 2 == 0:
            S_v -= 1

    def vector_address(local):
        slot = local * S_v
        channel = slot % n_ch
        k = slot // n_ch
        col = (k % vec_per_row) * seg_per_rank
        rest = rest0 + k // vec_per_row
        # fill the remaining fields (rank when not partitioned, bank group, bank, row),
        # lowest first
        values = {"channel": channel, "column": col}
        if R > 1:
            values["rank"] = np.zeros_like(channel)
        r = rest.copy()
        for name, radix in fields.fields:
            if name in in_vec:
                continue
            values[name] = r % radix
            r = r // radix
        if np.any(r > 0):
            raise ValueError("the channel-local vector layout does not fit the address space")
        return fields.compose(values)

    return vector_address


def graph_cache_nodes(trace, hops: int, capacity_bytes: int, node_lines: int) -> np.ndarray:
    """The nodes of the hop-count graph cache (CXL-ANNS, USENIX ATC'23): the nodes within
    ``hops`` hops of an entry point, nearest first (by hop count, then node id), as many as
    ``capacity_bytes`` holds at ``node_lines`` 64-byte lines per adjacency list.

    The logical trace carries no graph, only what the searches read: the edges it shows are
    (expanded node -> each neighbor whose vector was read at that hop). Hop counts are the
    breadth-first distances from the searches' entry points over those edges (over every
    query of ``trace``): never below the graph's own, equal wherever the searches walked a
    shortest path. Returns the cached node ids, (m,) int64.
    """
    hops = int(hops)
    n = int(trace.n)
    per_node = int(node_lines) * LINE_BYTES
    budget = int(capacity_bytes) // per_node
    if hops < 0 or budget <= 0 or n == 0:
        return np.zeros(0, np.int64)
    # the edges the searches show: hop h's node -> the nodes read at h
    hop_read_ptr = np.asarray(trace.hop_read_ptr, np.int64)
    src = np.repeat(np.asarray(trace.hop_node, np.int64), np.diff(hop_read_ptr))
    dst = np.asarray(trace.read_node, np.int64)[:hop_read_ptr[-1]]
    order = np.argsort(src, kind="stable")
    src, dst = src[order], dst[order]
    ptr = np.searchsorted(src, np.arange(n + 1))
    level = np.full(n, -1, np.int64)
    frontier = np.unique(np.asarray(trace.search_entry, np.int64))
    level[frontier] = 0
    for h in range(1, hops + 1):
        if frontier.size == 0:
            break
        nxt = np.concatenate([dst[ptr[v]:ptr[v + 1]] for v in frontier]) if frontier.size \
            else np.zeros(0, np.int64)
        nxt = np.unique(nxt)
        nxt = nxt[level[nxt] < 0]
        level[nxt] = h
        frontier = nxt
    inside = np.flatnonzero(level >= 0)
    ranked = inside[np.lexsort((inside, level[inside]))]
    return ranked[:budget]


def with_graph_cache(layout: Layout, cached_nodes: np.ndarray) -> Layout:
    """``layout`` with the adjacency lists of ``cached_nodes`` moved to the host DRAM graph
    cache: ``node_cached`` marks them, and their ``node_addr`` becomes their address in the
    cache, one dense entry of ``node_lines`` lines each in ``cached_nodes`` order (the memory
    instance of those reads is the host's, named by the system model)."""
    n = layout.node_addr.shape[0]
    cached = np.zeros(n, np.uint8)
    nodes = np.asarray(cached_nodes, np.int64)
    cached[nodes] = 1
    node_addr = layout.node_addr.copy()
    node_addr[nodes] = (np.arange(nodes.shape[0], dtype=np.uint64)
                        * np.uint64(layout.node_lines * LINE_BYTES))
    return replace(layout, node_addr=node_addr, node_cached=cached)
