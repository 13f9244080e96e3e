"""Cluster-to-device placement policies and their registry.

A policy is one function ``policy(problem: PlacementProblem) -> device`` returning, for every
cluster, the index of the device it is placed on (``(C,)`` int64). Register it with
:func:`register_policy` and it is available to :func:`place` and ``cosmos place --policy``::

    @register_policy("my_policy", help="one line shown by `cosmos place --help`")
    def my_policy(problem):
        ...
        return device

:func:`place` validates the inputs before the policy runs and checks its answer afterwards
(every cluster on exactly one existing device, no device over capacity), so a policy only has to
decide. Capacities are in the caller's unit, the same as the sizes (bytes or vectors).

Policies shipped here (docs/placement.md has the details and the reading of the paper):

``adjacency``
    Algorithm 1 of Cosmos (IEEE CAL 2025): clusters largest first; each goes to the feasible
    device with the lowest proximity loss, ties to more remaining capacity, then lower index.
``round_robin``
    Cluster ``c`` to device ``c mod D`` (the paper's baseline); capacity-respecting.
``random``
    Each cluster to a uniformly random device with room (seeded).
``size_balanced``
    Largest first to the device with the most remaining capacity (Algorithm 1 without its
    adjacency term; classic LPT greedy).
``locality``
    The opposite of Algorithm 1: clusters in a breadth-first walk of the adjacency graph, cut
    into contiguous size-balanced runs, so nearby clusters share a device (region sharding).
"""

from __future__ import annotations

from bisect import insort
from dataclasses import dataclass
from typing import Callable, NamedTuple

import numpy as np

from cosmos_common import UserError

from placement.adjacency import cluster_adjacency, validate_adjacency
from placement.load import check_count

__all__ = [
    "PlacementProblem",
    "PolicySpec",
    "CapacityError",
    "POLICIES",
    "register_policy",
    "get_policy",
    "place",
    "validate_sizes",
    "resolve_capacities",
    "SIZE_TOTAL_LIMIT",
    "check_placement",
    "size_order",
    "adjacency_aware",
    "adjacency_aware_steps",
    "round_robin",
    "random_placement",
    "size_balanced",
    "locality",
]


class CapacityError(UserError):
    """A cluster does not fit on any device (the message names the cluster). A
    :class:`cosmos_common.UserError` (hence a ``ValueError``): the command line prints it as
    one line."""


class PlacementProblem(NamedTuple):
    """Validated inputs handed to a policy.

    Attributes
    ----------
    sizes : ndarray, shape (C,), int64
        Size of each cluster (>= 0), in the same unit as ``capacities``.
    capacities : ndarray, shape (D,), int64
        Capacity of each device (>= 0).
    adjacency : ndarray, shape (C, A), int64, or None
        Proximity-ordered neighbor clusters, nearest first, ``-1`` padded (validated).
    seed : int
        Seed for randomized policies.
    """

    sizes: np.ndarray
    capacities: np.ndarray
    adjacency: np.ndarray | None
    seed: int

    @property
    def num_clusters(self) -> int:
        return int(self.sizes.shape[0])

    @property
    def num_devices(self) -> int:
        return int(self.capacities.shape[0])


@dataclass(frozen=True)
class PolicySpec:
    """A registered placement policy."""

    name: str
    func: Callable[[PlacementProblem], np.ndarray]
    needs_adjacency: bool
    help: str


#: Registered policies by name, in registration order.
POLICIES: dict[str, PolicySpec] = {}


def register_policy(name: str, *, needs_adjacency: bool = False, help: str = ""):
    """Decorator registering ``func(problem) -> device`` as placement policy ``name``."""

    def deco(func):
        if name in POLICIES:
            raise UserError(f"placement policy {name!r} is already registered")
        POLICIES[name] = PolicySpec(name, func, needs_adjacency, help or (func.__doc__ or "").strip().split("\n")[0])
        return func

    return deco


def get_policy(name: str) -> PolicySpec:
    """The registered policy ``name``; unknown names raise ``ValueError`` listing the choices."""
    try:
        return POLICIES[name]
    except KeyError:
        raise UserError(
            f"unknown placement policy {name!r}; valid choices: {', '.join(POLICIES)}"
        ) from None


# ----------------------------------------------------------------------------------------------
# Validation


#: Sizes must add up to less than this (and each capacity be at most int64's maximum), so
#: that every per-device sum the policies form (a device's load plus one more cluster) fits
#: in int64.
SIZE_TOTAL_LIMIT = 2**62
_INT64_MAX = 2**63 - 1


def _as_int_array(values, name: str) -> np.ndarray:
    a = np.asarray(values)
    if not isinstance(values, np.ndarray) and a.dtype != object:
        obj = np.asarray(values, dtype=object)  # Python ints exactly (numpy may make them floats)
        if obj.size and all(isinstance(v, int) and not isinstance(v, bool) for v in obj.ravel()):
            a = obj
    if a.dtype == object and a.size and all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in a.ravel()
    ):
        flat = [int(v) for v in a.ravel()]  # Python ints beyond int64: name the first one
        big = [i for i, v in enumerate(flat) if not -_INT64_MAX - 1 <= v <= _INT64_MAX]
        if big:
            raise UserError(f"{name}[{big[0]}] = {flat[big[0]]} does not fit in int64 "
                             f"(at most 2**63 - 1 = {_INT64_MAX})")
        a = np.array(flat, dtype=np.int64).reshape(a.shape)
    if a.dtype == object or not (np.issubdtype(a.dtype, np.integer) or np.issubdtype(a.dtype, np.floating)):
        raise UserError(f"{name} must be numbers, got dtype {a.dtype}")
    if a.dtype == np.uint64 and a.size and a.max() > _INT64_MAX:
        i = int(np.argmax(a.ravel()))
        raise UserError(f"{name}[{i}] = {int(a.ravel()[i])} does not fit in int64 "
                         f"(at most 2**63 - 1 = {_INT64_MAX})")
    if np.issubdtype(a.dtype, np.floating):
        if not np.all(np.isfinite(a)):
            i = int(np.flatnonzero(~np.isfinite(a.ravel()))[0])
            raise UserError(f"{name}[{i}] is not finite ({a.ravel()[i]})")
        frac = a != np.round(a)
        if np.any(frac):
            i = int(np.flatnonzero(frac.ravel())[0])
            raise UserError(f"{name}[{i}] = {a.ravel()[i]} is not a whole number (sizes and capacities are integers)")
        if np.any(np.abs(a) >= 2.0**62):
            i = int(np.flatnonzero(np.abs(a.ravel()) >= 2.0**62)[0])
            raise UserError(f"{name}[{i}] = {a.ravel()[i]} is too large: float values must be "
                             f"below 2**62 = {SIZE_TOTAL_LIMIT} (give integers for larger ones)")
    return a.astype(np.int64, copy=False)


def _exact_sum(a: np.ndarray) -> int:
    """Exact sum of an int64 array as a Python int (no int64 overflow)."""
    if a.size == 0:
        return 0
    approx = float(np.sum(a, dtype=np.float64))
    if abs(approx) < 2.0**52:  # every partial sum is exact in int64 and float64
        return int(np.sum(a, dtype=np.int64))
    return sum(int(v) for v in a.ravel().tolist())


def validate_sizes(sizes) -> np.ndarray:
    """Cluster sizes as a ``(C,)`` int64 array; rejects non-integers, negative sizes and
    sizes adding up to :data:`SIZE_TOTAL_LIMIT` (2**62) or more."""
    s = _as_int_array(sizes, "sizes")
    if s.ndim != 1:
        raise UserError(f"sizes must be a 1-D array (one size per cluster), got shape {s.shape}")
    if s.size and s.min() < 0:
        c = int(np.argmin(s))
        raise UserError(f"sizes[{c}] = {int(s[c])} is negative: cluster sizes must be >= 0")
    total = _exact_sum(s)
    if total >= SIZE_TOTAL_LIMIT:
        raise UserError(f"sizes add up to {total}, but their total must be below 2**62 = "
                         f"{SIZE_TOTAL_LIMIT} (per-device sums are int64)")
    return s


def resolve_capacities(capacities, num_devices: int, sizes: np.ndarray) -> np.ndarray:
    """Per-device capacities as a ``(D,)`` int64 array.

    ``None`` means unconstrained: every device gets ``sum(sizes)`` (it could hold every
    cluster), so Algorithm 1's tie rule "more remaining capacity" becomes "less used". A scalar
    is the capacity of every device; a sequence gives one capacity per device.
    """
    num_devices = check_count(num_devices, "num_devices")
    if capacities is None:
        total = _exact_sum(sizes)
        if total > _INT64_MAX:  # only for unvalidated sizes: validate_sizes keeps it below 2**62
            raise UserError(f"sizes add up to {total}, more than int64 holds; their total must "
                             f"be below 2**62 = {SIZE_TOTAL_LIMIT}")
        return np.full(num_devices, total, dtype=np.int64)
    c = _as_int_array(capacities, "capacities")
    if c.ndim == 0:
        c = np.full(num_devices, int(c), dtype=np.int64)
    if c.ndim != 1 or c.shape[0] != num_devices:
        raise UserError(
            f"capacities must be one number or one per device ({num_devices}), got shape {c.shape}"
        )
    if c.min() < 0:
        d = int(np.argmin(c))
        raise UserError(f"capacities[{d}] = {int(c[d])} is negative")
    return c.copy()


def _capacity_error(cluster: int, size: int, remaining: np.ndarray, capacities: np.ndarray, policy: str) -> CapacityError:
    d = int(np.argmax(remaining))
    return CapacityError(
        f"{policy}: cluster {cluster} (size {size}) does not fit on any device: the largest remaining "
        f"capacity is {int(remaining[d])} (device {d}); total capacity "
        f"{_exact_sum(np.asarray(capacities))}, still free {_exact_sum(np.asarray(remaining))}"
    )


def check_placement(device, sizes: np.ndarray, capacities: np.ndarray) -> np.ndarray:
    """Check a policy's answer: one valid device per cluster and no device over capacity."""
    dev = np.asarray(device)
    C, D = sizes.shape[0], capacities.shape[0]
    if dev.shape != (C,) or not np.issubdtype(dev.dtype, np.integer):
        raise RuntimeError(f"a placement must be a ({C},) integer array, got {dev.dtype} {dev.shape}")
    dev = dev.astype(np.int64, copy=False)
    if C and (dev.min() < 0 or dev.max() >= D):
        c = int(np.flatnonzero((dev < 0) | (dev >= D))[0])
        raise RuntimeError(f"cluster {c} was placed on device {int(dev[c])}, which does not exist (0..{D - 1})")
    used = _used(dev, sizes, D)
    over = used > capacities
    if over.any():
        d = int(np.flatnonzero(over)[0])
        raise RuntimeError(f"device {d} holds {int(used[d])} but its capacity is {int(capacities[d])}")
    return dev


def _used(device: np.ndarray, sizes: np.ndarray, num_devices: int) -> np.ndarray:
    """Exact int64 per-device sum of sizes."""
    used = np.zeros(num_devices, dtype=np.int64)
    np.add.at(used, device, sizes)
    return used


def place(
    sizes,
    num_devices: int,
    policy: str = "adjacency",
    *,
    capacities=None,
    adjacency=None,
    centroids=None,
    num_neighbors: int | None = None,
    metric: str = "l2",
    seed: int = 0,
) -> np.ndarray:
    """Place clusters on devices with a registered policy.

    Parameters
    ----------
    sizes : array_like, shape (C,), integer
        Size of each cluster (bytes or vectors: the same unit as ``capacities``).
    num_devices : int
        Number of devices ``D``.
    policy : str
        A name in :data:`POLICIES` (``adjacency``, ``round_robin``, ``random``,
        ``size_balanced``, ``locality`` or one you registered).
    capacities : int or array_like, shape (D,), optional
        Device capacities; ``None`` = unconstrained (each device could hold everything).
    adjacency : array_like, shape (C, A), integer, optional
        Proximity-ordered neighbor clusters, nearest first, ``-1`` padded.
    centroids : array_like, shape (C, d), optional
        Used to derive ``adjacency`` (with :func:`placement.cluster_adjacency`) when it is not
        given; ``num_neighbors`` defaults to ``min(C - 1, D)`` since Algorithm 1 gives zero
        weight beyond the ``D``-th neighbor.
    seed : int
        Seed for randomized policies.

    Returns
    -------
    device : ndarray, shape (C,), int64
        Device of each cluster.

    Raises
    ------
    CapacityError
        A cluster does not fit on any device (the message names it).
    ValueError
        Invalid inputs (the message names the field and what was expected).
    """
    num_devices = check_count(num_devices, "num_devices")
    if num_neighbors is not None:
        num_neighbors = check_count(num_neighbors, "num_neighbors")
    s = validate_sizes(sizes)
    caps = resolve_capacities(capacities, num_devices, s)
    spec = get_policy(policy)
    C = s.shape[0]
    if adjacency is not None and centroids is not None:
        raise UserError("give either adjacency or centroids, not both")
    adj = None
    if adjacency is not None:
        adj = validate_adjacency(adjacency, C)
    elif centroids is not None:
        cen = np.asarray(centroids)
        if cen.ndim != 2 or cen.shape[0] != C:
            raise UserError(f"centroids must have shape ({C}, dims) (one row per cluster), got {cen.shape}")
        if num_neighbors is not None and int(num_neighbors) < 1:
            raise UserError(f"num_neighbors must be >= 1 (neighbors per cluster in the derived "
                             f"adjacency), got {int(num_neighbors)}")
        k = min(C - 1, int(num_devices)) if num_neighbors is None else int(num_neighbors)
        adj = cluster_adjacency(cen, max(k, 0), metric=metric).astype(np.int64)
    if spec.needs_adjacency and adj is None:
        raise UserError(f"policy {policy!r} needs the cluster adjacency: give adjacency or centroids")
    if C and s.max() > caps.max():
        c = int(np.argmax(s))
        raise CapacityError(
            f"cluster {c} (size {int(s[c])}) is larger than every device (largest capacity {int(caps.max())})"
        )
    problem = PlacementProblem(s, caps, adj, int(seed))
    device = spec.func(problem)
    return check_placement(device, s, caps)


def size_order(sizes: np.ndarray) -> np.ndarray:
    """Cluster ids largest first; equal sizes in increasing cluster id (a stable sort)."""
    return np.argsort(-sizes, kind="stable")


# ----------------------------------------------------------------------------------------------
# Algorithm 1 (adjacency-aware placement)


def adjacency_aware_steps(sizes, capacities, adjacency) -> list[dict]:
    """Algorithm 1 written plainly, recording every decision (for reading and for tests).

    Returns one dict per placed cluster, in placement order: ``cluster``, ``size``,
    ``losses`` (``{device: loss}`` for the devices with enough remaining capacity),
    ``remaining`` (list, before placing) and ``device`` (the choice). ``O(C x D x A)`` in pure
    Python: use :func:`adjacency_aware` (same answers, vectorized) for real sizes.
    """
    s = validate_sizes(sizes)
    C = s.shape[0]
    if np.ndim(capacities) != 1:
        raise UserError("adjacency_aware_steps needs one capacity per device (a 1-D sequence)")
    caps = resolve_capacities(capacities, len(capacities), s)
    adj = validate_adjacency(adjacency, C)
    D = caps.shape[0]
    remaining = [int(v) for v in caps]
    device = [-1] * C
    steps = []
    for c in size_order(s).tolist():
        size = int(s[c])
        losses = {}
        for d in range(D):
            if remaining[d] < size:
                continue  # not enough remaining capacity: not a candidate
            loss = 0
            for j, nb in enumerate(adj[c].tolist()):
                weight = D - j  # D for the nearest neighbor, D-1 for the next, ...
                if weight <= 0 or nb < 0:
                    break
                if device[nb] == d:
                    loss += weight
            losses[d] = loss
        if not losses:
            raise _capacity_error(c, size, np.array(remaining), caps, "adjacency")
        best = min(losses, key=lambda d: (losses[d], -remaining[d], d))
        steps.append({"cluster": c, "size": size, "losses": losses, "remaining": list(remaining), "device": best})
        device[c] = best
        remaining[best] -= size
    return steps


#: Clusters processed per vectorized block in :func:`adjacency_aware`.
_BLOCK = 4096
#: Largest device count for the bitmask step (device sets as 64-bit masks).
_BITMASK_MAX_DEVICES = 64


def adjacency_aware(sizes: np.ndarray, capacities: np.ndarray, adjacency: np.ndarray | None) -> np.ndarray:
    """Algorithm 1 on validated arrays (see :func:`adjacency_aware_steps` for the plain version).

    Clusters are taken largest first (equal sizes: lower id first). For cluster ``c``, each
    device ``d`` with ``remaining[d] >= size[c]`` gets
    ``loss[d] = sum_j w_j [adjacency[c, j] is on d]`` with ``w_j = D - j`` for the ``j``-th
    nearest neighbor (``j = 0, 1, ...``), so only the first ``D`` neighbors count. The cluster
    goes to the candidate with the lowest loss, then the most remaining capacity, then the
    lowest device index.

    Implementation (same answers as the plain version; tested): the order is fixed in advance,
    so which neighbors of ``c`` are placed before it is known up front. Clusters are handled in
    blocks; for each block, the devices of neighbors placed before the block are gathered at
    once, and neighbors placed inside the block are added as they are placed. Two exact step
    rules, chosen per block:

    * bitmask (``D <= 64``, when most clusters have a device with loss 0): every weight is
      positive, so the lowest loss is 0 whenever some device holds none of the ``D`` nearest
      neighbors; the answer is then the device with the most remaining capacity outside the
      cluster's neighbor-device mask, read from a list of devices kept sorted by remaining
      capacity. Otherwise (all devices hold a neighbor, or the best zero-loss device is full)
      the step falls back to the exact loss computation.
    * dense: the losses of the block as a ``(b, D)`` histogram (``bincount``) and one ``argmin``
      per step over packed keys ``loss * M - remaining`` (``M`` > any capacity), which orders
      devices exactly by (loss, -remaining, index); an exact two-step comparison when the
      capacities are too large to pack into int64.
    """
    C = sizes.shape[0]
    D = capacities.shape[0]
    device = np.full(C, -1, dtype=np.int64)
    if C == 0:
        return device
    order = size_order(sizes)
    A = 0 if adjacency is None else min(adjacency.shape[1], D)
    weights = (D - np.arange(A)).astype(np.int64)
    nbrs = adjacency[:, :A] if A else np.zeros((C, 0), dtype=np.int32)
    # Per-cluster state for the gathers, one integer: low field = device + 1 (0 = not placed),
    # high field = position in the current block + 1 (0 = not in it). Index C is a sentinel
    # that the -1 padding of the adjacency lands on (never placed, never in a block).
    block = int(_BLOCK)
    if D + 1 < 2**15 and block + 1 < 2**15:
        st_dtype, shift = np.int32, 16
    else:
        st_dtype, shift = np.int64, 32
    low = (1 << shift) - 1
    st = np.zeros(C + 1, dtype=st_dtype)
    remaining = capacities.astype(np.int64).copy()
    M = int(remaining.max()) + 1
    packed = (int(weights.sum()) + 1) * M < 2**62
    sizes_sorted = sizes[order]
    big = np.iinfo(np.int64).max
    w_float = weights.astype(np.float64)
    use_bits = D <= _BITMASK_MAX_DEVICES
    if use_bits:
        bit_table = np.zeros(D + 1, dtype=np.uint64)  # low field -> device bit (0 -> none)
        bit_table[1:] = np.left_shift(np.uint64(1), np.arange(D, dtype=np.uint64))
        full = (1 << D) - 1

    def exact_choice(c, s, rem_np, loss_row):
        """The Algorithm 1 choice for one cluster from its loss row (int64, length D)."""
        feas = rem_np >= s
        if not feas.any():
            raise _capacity_error(c, s, rem_np, capacities, "adjacency")
        li = np.where(feas, loss_row, big)
        cand = feas & (li == li.min())
        return int(np.where(cand, rem_np, -1).argmax())

    for p0 in range(0, C, block):
        p1 = min(C, p0 + block)
        b = p1 - p0
        blk = order[p0:p1]
        blk_l = blk.tolist()
        sz = sizes_sorted[p0:p1].tolist()
        nb = nbrs[blk]  # (b, A)
        st[blk] = (np.arange(1, b + 1, dtype=st_dtype) << shift)  # mark block positions
        comb = st[nb]
        lo = comb & low  # device + 1 of neighbors placed before the block, else 0
        hi = comb >> shift  # position + 1 of neighbors inside the block, else 0
        # Neighbors placed earlier inside this block: applied when they are placed.
        idx = np.flatnonzero(hi)  # in the block at all (rare: about b / C of the entries)
        er, ec = np.divmod(idx, A) if A else (idx, idx)
        hsel = hi.ravel()[idx]
        keep = hsel <= er  # placed before this row (position + 1 <= row)
        er, ec = er[keep], ec[keep]
        esrc = (hsel[keep] - 1).astype(np.int64)
        eo = np.argsort(esrc, kind="stable")
        esrc_l = esrc[eo].tolist()
        edst_l = er[eo].tolist()
        ecol_l = ec[eo].tolist()
        ne = len(esrc_l)
        e = 0
        chosen = [0] * b

        masks = None
        if use_bits:
            m_arr = np.bitwise_or.reduce(bit_table[lo], axis=1)
            if np.count_nonzero(m_arr == np.uint64(full)) * 2 <= b:
                masks = m_arr.tolist()

        if masks is not None:
            rem = remaining.tolist()
            flushed = 0  # chosen[:flushed] are already written to st
            ranked = sorted((-r, d) for d, r in enumerate(rem))  # most remaining first, then index
            for i in range(b):
                m = masks[i]
                s = sz[i]
                d = -1
                if m != full:
                    for pos, (nr, dd) in enumerate(ranked):
                        if not (m >> dd) & 1:
                            break
                    if -nr >= s:  # best zero-loss device has room: it is the answer
                        d = dd
                        del ranked[pos]
                        insort(ranked, (nr + s, d))
                if d < 0:  # exact step: losses from the current devices of the neighbors
                    if flushed < i:  # record this block's placements so far in the state
                        st[blk[flushed:i]] = np.array(chosen[flushed:i], dtype=st_dtype) + 1
                        flushed = i
                    row_lo = st[nb[i]] & low
                    loss_row = np.bincount(row_lo, weights=w_float, minlength=D + 1)[1:].astype(np.int64)
                    d = exact_choice(blk_l[i], s, np.array(rem, dtype=np.int64), loss_row)
                    ranked.remove((-rem[d], d))
                    insort(ranked, (-(rem[d] - s), d))
                rem[d] -= s
                chosen[i] = d
                while e < ne and esrc_l[e] == i:
                    masks[edst_l[e]] |= 1 << d
                    e += 1
            remaining[:] = rem
        else:
            flat = (np.arange(b)[:, None] * (D + 1) + lo).ravel()
            loss = np.bincount(flat, weights=np.broadcast_to(w_float, (b, A)).ravel(), minlength=b * (D + 1))
            loss = loss.reshape(b, D + 1)[:, 1:].astype(np.int64)
            if packed:
                key = loss * M
                # Every device keeps room for the largest cluster of the block even after the
                # whole block is placed: no feasibility test needed inside it.
                always_feasible = int(remaining.min()) - int(sizes_sorted[p0:p1].sum()) >= sz[0]
                for i, (row, s) in enumerate(zip(key, sz)):  # rows are views: later edits show
                    row -= remaining  # loss * M - remaining: argmin = (min loss, max remaining, min index)
                    d = int(row.argmin())
                    if not always_feasible and remaining[d] < s:
                        d = exact_choice(blk_l[i], s, remaining, loss[i])
                    remaining[d] -= s
                    chosen[i] = d
                    while e < ne and esrc_l[e] == i:
                        key[edst_l[e], d] += int(weights[ecol_l[e]]) * M
                        loss[edst_l[e], d] += int(weights[ecol_l[e]])
                        e += 1
            else:  # capacities too large to pack (loss, remaining) into one int64 key
                for i in range(b):
                    s = sz[i]
                    d = exact_choice(blk_l[i], s, remaining, loss[i])
                    remaining[d] -= s
                    chosen[i] = d
                    while e < ne and esrc_l[e] == i:
                        loss[edst_l[e], d] += int(weights[ecol_l[e]])
                        e += 1
        ch = np.array(chosen, dtype=np.int64)
        device[blk] = ch
        st[blk] = (ch + 1).astype(st_dtype)  # placed; block positions cleared
    return device


@register_policy(
    "adjacency",
    needs_adjacency=True,
    help="Algorithm 1 (Cosmos): largest first; lowest proximity loss, then most remaining capacity",
)
def _adjacency_policy(problem: PlacementProblem) -> np.ndarray:
    return adjacency_aware(problem.sizes, problem.capacities, problem.adjacency)


# ----------------------------------------------------------------------------------------------
# Baselines


@register_policy(
    "round_robin",
    help="cluster c on device c mod D (the paper's baseline); skips to the next device with room if full",
)
def round_robin(problem: PlacementProblem) -> np.ndarray:
    """Cluster ``c`` goes to device ``c mod D``, in cluster-id order, ignoring adjacency and size.

    Capacity is respected: when device ``c mod D`` lacks room, the cluster goes to the next
    device in cyclic order (``c+1 mod D``, ...) that has room; the next cluster still starts
    from its own ``(c+1) mod D``. With enough capacity everywhere this is exactly ``c mod D``.
    """
    s, caps = problem.sizes, problem.capacities
    C, D = s.shape[0], caps.shape[0]
    device = np.arange(C, dtype=np.int64) % D
    used = _used(device, s, D)
    if np.all(used <= caps):
        return device  # nothing ever overflowed: the plain rule holds throughout
    remaining = caps.copy()
    for c in range(C):
        size = int(s[c])
        for k in range(D):
            d = (c + k) % D
            if remaining[d] >= size:
                break
        else:
            raise _capacity_error(c, size, remaining, caps, "round_robin")
        device[c] = d
        remaining[d] -= size
    return device


@register_policy("random", help="each cluster on a uniformly random device with room (seeded)")
def random_placement(problem: PlacementProblem) -> np.ndarray:
    """Each cluster, in id order, on a uniformly random device among those with room.

    Uses ``numpy.random.default_rng(seed)``: one uniform draw ``u`` per cluster picks the
    ``floor(u x k)``-th of the ``k`` devices with enough remaining capacity (in index order).
    When no device can ever run short (every final load plus the largest cluster fits), all
    devices are always candidates and the draws are applied at once.
    """
    s, caps = problem.sizes, problem.capacities
    C, D = s.shape[0], caps.shape[0]
    u = np.random.default_rng(problem.seed).random(C)
    device = np.minimum((u * D).astype(np.int64), D - 1)
    used = _used(device, s, D)
    if C == 0 or np.all(used + s.max() <= caps):
        return device
    remaining = caps.copy()
    for c in range(C):
        size = int(s[c])
        cand = np.flatnonzero(remaining >= size)
        if cand.size == 0:
            raise _capacity_error(c, size, remaining, caps, "random")
        d = int(cand[min(int(u[c] * cand.size), cand.size - 1)])
        device[c] = d
        remaining[d] -= size
    return device


@register_policy(
    "size_balanced",
    help="largest first to the device with the most remaining capacity (Algorithm 1 without adjacency)",
)
def size_balanced(problem: PlacementProblem) -> np.ndarray:
    """Greedy size balancing (LPT): clusters largest first (ties: lower id), each to the device
    with the most remaining capacity (ties: lower index). With equal capacities this is "the
    least-loaded device". It is Algorithm 1 with every loss zero."""
    return adjacency_aware(problem.sizes, problem.capacities, None)


@register_policy(
    "locality",
    needs_adjacency=True,
    help="nearby clusters together: breadth-first walk of the adjacency, cut into size-balanced runs",
)
def locality(problem: PlacementProblem) -> np.ndarray:
    """Co-locate nearby clusters (the opposite of Algorithm 1), as region-based sharding does.

    Clusters are ordered by a breadth-first walk of the adjacency graph (start: the lowest
    unvisited id; neighbors in proximity order), and that sequence is cut into ``D`` contiguous
    runs of about equal total size: a cluster goes to device
    ``floor(D x (size placed before it + half its size) / total size)``. If that device lacks
    room, the next device (cyclic) with room takes it. ``O(C x A)`` in Python.
    """
    s, caps, adj = problem.sizes, problem.capacities, problem.adjacency
    C, D = s.shape[0], caps.shape[0]
    seen = np.zeros(C, dtype=bool)
    seq: list[int] = []
    rows = adj.tolist()
    for start in range(C):
        if seen[start]:
            continue
        seen[start] = True
        queue = [start]
        head = 0
        while head < len(queue):
            c = queue[head]
            head += 1
            for nb in rows[c]:
                if nb < 0:
                    break
                if not seen[nb]:
                    seen[nb] = True
                    queue.append(nb)
        seq.extend(queue)
    order = np.array(seq, dtype=np.int64)
    total = int(s.sum())
    device = np.empty(C, dtype=np.int64)
    remaining = caps.copy()
    before = 0
    for c in order.tolist():
        size = int(s[c])
        target = min(D - 1, (D * (2 * before + size)) // (2 * total)) if total else 0
        for k in range(D):
            d = (target + k) % D
            if remaining[d] >= size:
                break
        else:
            raise _capacity_error(c, size, remaining, caps, "locality")
        device[c] = d
        remaining[d] -= size
        before += size
    return device
