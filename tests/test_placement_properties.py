"""Property tests (hypothesis) of the placement policies and the load metrics."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import placement
import placement.policies as policies
from placement import CapacityError, adjacency_aware_steps, place

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def problems(draw, distinct_sizes=False):
    C = draw(st.integers(1, 25))
    D = draw(st.integers(1, 6))
    A = draw(st.integers(0, 8))
    if distinct_sizes:
        sizes = draw(st.lists(st.integers(0, 500), min_size=C, max_size=C, unique=True))
    else:
        sizes = draw(st.lists(st.integers(0, 12), min_size=C, max_size=C))
    rows = []
    for c in range(C):
        others = [x for x in range(C) if x != c]
        perm = draw(st.permutations(others)) if others else []
        rows.append(list(perm[: draw(st.integers(0, min(A, len(others))))]) + [-1] * 0)
    adj = np.full((C, A), -1, dtype=np.int64)
    for c, r in enumerate(rows):
        adj[c, : len(r)] = r
    total = sum(sizes)
    mode = draw(st.sampled_from(["none", "tight", "loose", "uneven"]))
    if mode == "none":
        caps = None
    elif mode == "tight":
        caps = [total // D + draw(st.integers(0, 3)) for _ in range(D)]
    elif mode == "loose":
        caps = [total // D + max(sizes) for _ in range(D)]
    else:
        caps = draw(st.lists(st.integers(0, total + 1), min_size=D, max_size=D))
    return np.array(sizes, dtype=np.int64), D, caps, adj


@SETTINGS
@given(problems(), st.sampled_from(sorted(placement.POLICIES)), st.integers(0, 3))
def test_every_cluster_placed_once_within_capacity(prob, policy, seed):
    sizes, D, caps, adj = prob
    try:
        dev = place(sizes, D, policy, capacities=caps, adjacency=adj, seed=seed)
    except CapacityError as exc:
        assert "cluster" in str(exc)
        return
    assert dev.shape == sizes.shape and dev.dtype == np.int64
    assert dev.min() >= 0 and dev.max() < D
    used = np.zeros(D, dtype=np.int64)
    np.add.at(used, dev, sizes)
    limit = np.full(D, sizes.sum()) if caps is None else np.asarray(caps)
    assert np.all(used <= limit)
    # deterministic: the same call gives the same answer
    np.testing.assert_array_equal(dev, place(sizes, D, policy, capacities=caps, adjacency=adj, seed=seed))


@SETTINGS
@given(problems())
def test_vectorized_algorithm1_equals_the_plain_one(prob):
    sizes, D, caps, adj = prob
    caps_arr = np.full(D, sizes.sum()) if caps is None else np.asarray(caps)
    try:
        steps = adjacency_aware_steps(sizes, caps_arr, adj)
    except CapacityError:
        with pytest.raises(CapacityError):
            place(sizes, D, "adjacency", capacities=caps_arr, adjacency=adj)
        return
    ref = np.full(sizes.shape[0], -1)
    for s in steps:
        ref[s["cluster"]] = s["device"]
        # the chosen device has the lowest loss among the candidates
        assert s["losses"][s["device"]] == min(s["losses"].values())
    old = policies._BLOCK, policies._BITMASK_MAX_DEVICES
    try:
        for block in (old[0], 2):
            for bitmask_max in (64, 0):  # bitmask and dense step rules
                policies._BLOCK, policies._BITMASK_MAX_DEVICES = block, bitmask_max
                np.testing.assert_array_equal(place(sizes, D, "adjacency", capacities=caps_arr, adjacency=adj), ref)
    finally:
        policies._BLOCK, policies._BITMASK_MAX_DEVICES = old


@SETTINGS
@given(problems(distinct_sizes=True), st.randoms(use_true_random=False))
def test_algorithm1_and_size_balanced_commute_with_relabeling(prob, rnd):
    # With distinct sizes the order does not depend on ids, so relabeling clusters by a
    # permutation relabels the placement the same way.
    sizes, D, caps, adj = prob
    C = sizes.shape[0]
    perm = np.array(rnd.sample(range(C), C))  # old id c -> new id perm[c]
    new_sizes = np.empty_like(sizes)
    new_sizes[perm] = sizes
    new_adj = np.full_like(adj, -1)
    new_adj[perm] = np.where(adj >= 0, perm[np.where(adj >= 0, adj, 0)], -1)
    for policy in ("adjacency", "size_balanced"):
        try:
            dev = place(sizes, D, policy, capacities=caps, adjacency=adj)
        except CapacityError:
            with pytest.raises(CapacityError):
                place(new_sizes, D, policy, capacities=caps, adjacency=new_adj)
            continue
        new_dev = place(new_sizes, D, policy, capacities=caps, adjacency=new_adj)
        np.testing.assert_array_equal(new_dev[perm], dev)


@SETTINGS
@given(problems(), st.integers(0, 5))
def test_random_fast_path_matches_its_sequential_definition(prob, seed):
    sizes, D, caps, adj = prob
    caps_arr = np.full(D, sizes.sum()) if caps is None else np.asarray(caps)
    u = np.random.default_rng(seed).random(sizes.shape[0])
    rem = caps_arr.astype(np.int64).copy()
    expected = []
    for c, s in enumerate(sizes.tolist()):
        cand = np.flatnonzero(rem >= s)
        if cand.size == 0:
            with pytest.raises(CapacityError, match=r"cluster \d+ \(size \d+\)"):
                place(sizes, D, "random", capacities=caps_arr, seed=seed)
            return
        d = int(cand[min(int(u[c] * cand.size), cand.size - 1)])
        expected.append(d)
        rem[d] -= s
    np.testing.assert_array_equal(place(sizes, D, "random", capacities=caps_arr, seed=seed), expected)


@st.composite
def probes(draw):
    C = draw(st.integers(1, 20))
    D = draw(st.integers(1, 6))
    device = draw(st.lists(st.integers(0, D - 1), min_size=C, max_size=C))
    counts = draw(st.lists(st.integers(1, 6), min_size=1, max_size=15))
    sc = draw(st.lists(st.integers(0, C - 1), min_size=sum(counts), max_size=sum(counts)))
    qp = np.concatenate([[0], np.cumsum(counts)])
    w = draw(st.lists(st.floats(0.5, 100), min_size=len(sc), max_size=len(sc)))
    return np.array(device), qp, np.array(sc), D, np.array(w)


@SETTINGS
@given(probes())
def test_lir_at_least_one_and_loads_add_up(pr):
    device, qp, sc, D, w = pr
    for weights in (None, w):
        loads = placement.device_loads(device, qp, sc, D, weights)
        total = sc.size if weights is None else w.sum()
        assert loads.sum() == pytest.approx(total)
        lir = placement.lir(loads)
        assert 1 - 1e-12 <= lir <= D + 1e-12
        q = placement.query_lir(device, qp, sc, D, weights)
        assert np.all(q >= 1 - 1e-12) and np.all(q <= D + 1e-12)
        b = placement.batch_lir(device, qp, sc, D, 4, weights)
        assert b.shape == ((qp.size - 1 + 3) // 4,) and np.all(b >= 1 - 1e-12)
        per_query = placement.query_device_loads(device, qp, sc, D, weights)
        np.testing.assert_allclose(per_query.sum(axis=0), loads)
    M = placement.device_cluster_count_matrix(device, qp, sc, D)
    assert np.all(M.sum(axis=1) == qp.size - 1)
    # sum over k of k * M[d, k] = searches on device d
    np.testing.assert_array_equal(M @ np.arange(M.shape[1]), placement.device_loads(device, qp, sc, D))


# ---------------------------------------------------------------- input validation (audit fixes)


@SETTINGS
@given(st.lists(st.integers(0, 2**62), min_size=1, max_size=6), st.integers(1, 5))
def test_size_totals_beyond_int64_sums_are_rejected_never_wrapped(sizes, D):
    """Any sizes: either rejected (total >= 2**62, the message names the total and the limit)
    or placed with every per-device sum exact (no int64 wrap-around, no negative capacity)."""
    total = sum(sizes)
    if total >= policies.SIZE_TOTAL_LIMIT:
        with pytest.raises(ValueError, match=rf"sizes add up to {total}, but their total must be below 2\*\*62"):
            place(sizes, D, "round_robin")
        return
    caps = policies.resolve_capacities(None, D, policies.validate_sizes(sizes))
    assert np.all(caps == total)
    for policy in ("round_robin", "size_balanced", "random"):
        dev = place(sizes, D, policy)
        used = [sum(s for s, d in zip(sizes, dev) if d == k) for k in range(D)]
        assert sum(used) == total and min(used) >= 0


def test_capacities_beyond_int64_and_bad_num_neighbors_are_rejected():
    with pytest.raises(ValueError, match=r"capacities\[1\] = 9223372036854775808 does not fit in int64"):
        place([1, 2], 2, "round_robin", capacities=[5, 2**63])
    with pytest.raises(ValueError, match=r"capacities\[0\] = 18446744073709551615 does not fit in int64"):
        place([1, 2], 2, "round_robin", capacities=np.array([2**64 - 1, 1], dtype=np.uint64))
    assert place([1, 2], 2, "round_robin", capacities=[2**63 - 1, 2**63 - 1]).tolist() == [0, 1]
    cen = np.random.default_rng(0).normal(size=(6, 3))
    for k in (0, -1):
        with pytest.raises(ValueError, match=rf"num_neighbors must be >= 1 .*got {k}"):
            place(np.ones(6, dtype=int), 2, "adjacency", centroids=cen, num_neighbors=k)
