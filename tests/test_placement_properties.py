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
