"""Per-device search load from the queries' probed clusters, and the load imbalance ratio.

Probes come as the CSR pair of the logical trace (docs/contracts.md, section 1):
``query_ptr`` (Q+1,) and ``search_cluster`` (S,): query ``q`` searches clusters
``search_cluster[query_ptr[q]:query_ptr[q+1]]``. Each cluster search runs on the device that
holds the cluster, so a device's load is the number of searches it serves, or, with
``weights`` (S,), their summed work (hops or distance computations, see :func:`search_work`).

Load imbalance ratio (LIR) = max device load / ideal uniform load (total / D); 1 is perfect
balance, D means one device does everything. :func:`device_loads` + :func:`lir` give it for a
whole query set; :func:`query_lir` per query (a query's searches run in parallel on the
devices and it finishes when its busiest device does); :func:`batch_lir` per batch of
consecutive queries.
"""

from __future__ import annotations

import numpy as np

from cosmos_common import UserError

__all__ = [
    "validate_probes",
    "search_work",
    "device_loads",
    "query_device_loads",
    "load_imbalance_ratio",
    "lir",
    "query_lir",
    "batch_lir",
    "device_cluster_count_matrix",
]

WORK_KINDS = ("searches", "hops", "distances")


def check_count(value, name: str, minimum: int = 1) -> int:
    """``value`` as an int if it is a whole number (a Python or numpy integer, not a bool)
    of at least ``minimum``; UserError naming ``name`` otherwise (``2.5`` devices or ``True``
    neighbors are refused, not truncated)."""
    import numbers

    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise UserError(f"{name} must be a whole number >= {minimum}, got {value!r} "
                        f"({type(value).__name__})")
    if value < minimum:
        raise UserError(f"{name} must be >= {minimum} (a whole number), got {value}")
    return int(value)


def validate_probes(query_ptr, search_cluster, num_clusters: int | None = None):
    """Check the CSR probe arrays; return them as int64 arrays.

    ``query_ptr`` must start at 0, never decrease and end at ``len(search_cluster)``;
    cluster ids must lie in ``[0, num_clusters)`` when ``num_clusters`` is given.
    """
    qp = np.asarray(query_ptr)
    sc = np.asarray(search_cluster)
    for name, a in (("query_ptr", qp), ("search_cluster", sc)):
        if a.ndim != 1:
            raise UserError(f"{name} must be a 1-D array, got shape {a.shape}")
        if a.size and not np.issubdtype(a.dtype, np.integer):
            raise UserError(f"{name} must be integers, got dtype {a.dtype}")
    qp = qp.astype(np.int64, copy=False)
    sc = sc.astype(np.int64, copy=False)
    if qp.size < 1:
        raise UserError("query_ptr must have at least one entry (Q+1 entries for Q queries)")
    if qp[0] != 0:
        raise UserError(f"query_ptr[0] must be 0, got {int(qp[0])}")
    dec = np.flatnonzero(np.diff(qp) < 0)
    if dec.size:
        q = int(dec[0])
        raise UserError(f"query_ptr decreases at query {q}: {int(qp[q])} -> {int(qp[q + 1])}")
    if qp[-1] != sc.size:
        raise UserError(
            f"query_ptr ends at {int(qp[-1])} but search_cluster has {sc.size} entries (they must match)"
        )
    if sc.size and sc.min() < 0:
        i = int(np.argmin(sc))
        raise UserError(f"search_cluster[{i}] = {int(sc[i])} is negative")
    if num_clusters is not None and sc.size and sc.max() >= num_clusters:
        i = int(np.argmax(sc))
        raise UserError(
            f"search_cluster[{i}] = {int(sc[i])} but there are only {num_clusters} clusters (0..{num_clusters - 1})"
        )
    return qp, sc


def search_work(trace, kind: str = "searches") -> np.ndarray:
    """Work of every cluster search of a logical trace, as load weights.

    Parameters
    ----------
    trace : mapping of arrays
        A loaded logical trace (``numpy.load`` result or dict) with the keys of
        docs/contracts.md, section 1.
    kind : {"searches", "hops", "distances"}
        ``searches``: 1 per search. ``hops``: nodes expanded (adjacency lists read).
        ``distances``: distance computations = 1 (entry node) + vectors read at its hops.

    Returns
    -------
    work : ndarray, shape (S,), float64
    """
    if kind not in WORK_KINDS:
        raise UserError(f"unknown work kind {kind!r}; valid choices: {', '.join(WORK_KINDS)}")
    S = int(np.asarray(trace["search_cluster"]).shape[0])
    if kind == "searches":
        return np.ones(S, dtype=np.float64)
    hop_ptr = np.asarray(trace["search_hop_ptr"]).astype(np.int64)
    if hop_ptr.shape != (S + 1,) or hop_ptr[0] != 0 or np.any(np.diff(hop_ptr) < 0):
        raise UserError(f"search_hop_ptr must be a non-decreasing ({S + 1},) CSR pointer starting at 0")
    if kind == "hops":
        return np.diff(hop_ptr).astype(np.float64)
    read_ptr = np.asarray(trace["hop_read_ptr"]).astype(np.int64)
    H = int(hop_ptr[-1])
    if read_ptr.shape != (H + 1,) or read_ptr[0] != 0 or np.any(np.diff(read_ptr) < 0):
        raise UserError(f"hop_read_ptr must be a non-decreasing ({H + 1},) CSR pointer starting at 0")
    # reads of search s = read_ptr[hop_ptr[s+1]] - read_ptr[hop_ptr[s]]
    reads = np.diff(read_ptr[hop_ptr])
    return (1 + reads).astype(np.float64)


def _search_devices(device, query_ptr, search_cluster, num_devices, weights):
    dev = np.asarray(device)
    if dev.ndim != 1 or (dev.size and not np.issubdtype(dev.dtype, np.integer)):
        raise UserError(f"device must be a 1-D integer array (one device per cluster), got {dev.dtype} {dev.shape}")
    dev = dev.astype(np.int64, copy=False)
    num_devices = check_count(num_devices, "num_devices")
    if dev.size and (dev.min() < 0 or dev.max() >= num_devices):
        c = int(np.flatnonzero((dev < 0) | (dev >= num_devices))[0])
        raise UserError(f"cluster {c} is on device {int(dev[c])}, outside 0..{num_devices - 1}")
    qp, sc = validate_probes(query_ptr, search_cluster, dev.shape[0])
    if weights is None:
        w = None
    else:
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != sc.shape:
            raise UserError(f"weights must have one value per search ({sc.shape[0]}), got shape {w.shape}")
        if not np.all(np.isfinite(w)) or (w.size and w.min() < 0):
            raise UserError("weights must be finite and >= 0")
    return dev[sc], qp, w, num_devices


def device_loads(device, query_ptr, search_cluster, num_devices: int, weights=None) -> np.ndarray:
    """Total load of each device over all queries.

    Parameters
    ----------
    device : array_like, shape (C,), integer
        Device of each cluster (a placement).
    query_ptr, search_cluster : array_like, shapes (Q+1,), (S,)
        The probes, CSR (docs/contracts.md, section 1).
    num_devices : int
    weights : array_like, shape (S,), optional
        Work of each search; default 1 (load = number of cluster searches).

    Returns
    -------
    loads : ndarray, shape (D,), float64
    """
    sdev, _, w, D = _search_devices(device, query_ptr, search_cluster, num_devices, weights)
    return np.bincount(sdev, weights=w, minlength=D).astype(np.float64)


def query_device_loads(device, query_ptr, search_cluster, num_devices: int, weights=None) -> np.ndarray:
    """Load of each device for each query: ``(Q, D)`` float64 (searches or summed weights)."""
    sdev, qp, w, D = _search_devices(device, query_ptr, search_cluster, num_devices, weights)
    Q = qp.shape[0] - 1
    q = np.repeat(np.arange(Q, dtype=np.int64), np.diff(qp))
    return np.bincount(q * D + sdev, weights=w, minlength=Q * D).astype(np.float64).reshape(Q, D)


def load_imbalance_ratio(loads) -> float:
    """LIR = max device load / ideal uniform load (mean over devices). ``>= 1``.

    Raises ``ValueError`` for negative loads or when the total is zero (LIR undefined).
    """
    x = np.asarray(loads, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise UserError(f"loads must be a non-empty 1-D array (one per device), got shape {x.shape}")
    if not np.all(np.isfinite(x)) or x.min() < 0:
        raise UserError("loads must be finite and >= 0")
    total = x.sum()
    if total <= 0:
        raise UserError("LIR is undefined when the total load is zero")
    return float(x.max() * x.size / total)


lir = load_imbalance_ratio


def _row_lir(loads2d: np.ndarray) -> np.ndarray:
    total = loads2d.sum(axis=1)
    out = np.full(loads2d.shape[0], np.nan)
    ok = total > 0
    out[ok] = loads2d[ok].max(axis=1) * loads2d.shape[1] / total[ok]
    return out


def query_lir(device, query_ptr, search_cluster, num_devices: int, weights=None) -> np.ndarray:
    """LIR of each query on its own: ``(Q,)`` float64; NaN for a query with no load.

    A query probing ``P`` clusters has ideal load ``P / D`` per device; if two of its probes
    share a device while others are idle, its LIR is ``2 D / P``.
    """
    return _row_lir(query_device_loads(device, query_ptr, search_cluster, num_devices, weights))


def batch_lir(device, query_ptr, search_cluster, num_devices: int, batch_size: int, weights=None) -> np.ndarray:
    """LIR of each batch of ``batch_size`` consecutive queries (the last batch may be shorter)."""
    batch_size = int(batch_size)
    if batch_size < 1:
        raise UserError(f"batch_size must be >= 1, got {batch_size}")
    ql = query_device_loads(device, query_ptr, search_cluster, num_devices, weights)
    Q = ql.shape[0]
    if Q == 0:
        return np.zeros(0)
    starts = np.arange(0, Q, batch_size)
    return _row_lir(np.add.reduceat(ql, starts, axis=0))


def device_cluster_count_matrix(device, query_ptr, search_cluster, num_devices: int) -> np.ndarray:
    """The device x cluster-count matrix behind a Fig. 5b-style heatmap.

    ``M[d, k]`` = number of queries that search exactly ``k`` of their probed clusters on device
    ``d`` (``k = 0 .. P``, ``P`` = most searches of any query). Each row sums to ``Q``. A
    balanced placement puts the mass near ``k = P / D``; co-located neighbors push it to large
    ``k``.

    Returns
    -------
    M : ndarray, shape (D, P+1), int64
    """
    counts = query_device_loads(device, query_ptr, search_cluster, num_devices).astype(np.int64)
    Q, D = counts.shape
    P = int(counts.max()) if counts.size else 0
    M = np.zeros((D, P + 1), dtype=np.int64)
    for d in range(D):
        M[d] = np.bincount(counts[:, d], minlength=P + 1)
    return M
