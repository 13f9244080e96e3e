"""Cluster adjacency from centroids, input validation, and load accounting on hand examples."""

import numpy as np
import pytest

import placement
from placement import cluster_adjacency, place, validate_adjacency


def _brute(cen, k):
    C = len(cen)
    out = np.full((C, k), -1)
    for c in range(C):
        d = [(float(((cen[c] - cen[o]) ** 2).sum()), o) for o in range(C) if o != c]
        d.sort()
        ids = [o for _, o in d[:k]]
        out[c, : len(ids)] = ids
    return out


def test_adjacency_matches_brute_force_with_ties_by_id():
    # integer grid: many equal distances, ordered by the lower id
    g = np.array([(x, y) for y in range(5) for x in range(5)], dtype=float)
    np.testing.assert_array_equal(cluster_adjacency(g, 6), _brute(g, 6))
    rng = np.random.default_rng(0)
    cen = rng.normal(size=(57, 3))
    full = cluster_adjacency(cen, 10)
    np.testing.assert_array_equal(full, _brute(cen, 10))
    for rows in (1, 5, 56):  # chunking does not change the answer
        np.testing.assert_array_equal(cluster_adjacency(cen, 10, chunk_rows=rows), full)


def test_adjacency_padding_and_metrics():
    cen = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 0.1]])
    a = cluster_adjacency(cen, 4)
    assert a.shape == (3, 4) and a.dtype == np.int32
    np.testing.assert_array_equal(a[:, 2:], -1)  # only C - 1 = 2 neighbors exist
    np.testing.assert_array_equal(a[0, :2], [2, 1])
    # inner product: largest first. cluster 1 . others: 0 -> 0.0, 2 -> 0.1
    np.testing.assert_array_equal(cluster_adjacency(cen, 2, metric="ip")[1], [2, 0])
    # cosine: cluster 0 is nearly parallel to cluster 2
    np.testing.assert_array_equal(cluster_adjacency(cen, 1, metric="cosine")[0], [2])
    assert cluster_adjacency(cen[:1], 3).tolist() == [[-1, -1, -1]]
    with pytest.raises(ValueError, match="unknown metric 'l1'"):
        cluster_adjacency(cen, 1, metric="l1")
    with pytest.raises(ValueError, match="NaN or infinity .first in cluster 1"):
        cluster_adjacency(np.array([[0.0], [np.nan]]), 1)
    with pytest.raises(ValueError, match="2-D"):
        cluster_adjacency(np.zeros(3), 1)


@pytest.mark.parametrize(
    "adj, msg",
    [
        ([[1], [5]], r"adjacency\[1, 0\] = 5 is not a cluster id: expected 0..1"),
        ([[1], [-2]], r"adjacency\[1, 0\] = -2 is not a cluster id"),
        ([[-1, 1], [0, -1]], r"adjacency\[0, 1\] = 1 follows -1 padding"),
        ([[0], [0]], r"adjacency\[0, 0\]: cluster 0 lists itself"),
        ([[1]], r"adjacency has 1 rows but there are 2 clusters"),
        ([1, 0], r"must be a 2-D array"),
        ([[0.5], [0.0]], r"must hold integer cluster ids"),
    ],
)
def test_adjacency_validation_messages(adj, msg):
    with pytest.raises(ValueError, match=msg):
        validate_adjacency(adj, 2)


@pytest.mark.parametrize(
    "kwargs, msg",
    [
        (dict(sizes=[3, -1]), r"sizes\[1\] = -1 is negative"),
        (dict(sizes=[3, 1.5]), r"sizes\[1\] = 1.5 is not a whole number"),
        (dict(sizes=[[1, 2]]), r"sizes must be a 1-D array"),
        (dict(sizes=["a", "b"]), r"sizes must be numbers"),
        (dict(capacities=[10, 10, 10]), r"capacities must be one number or one per device \(2\)"),
        (dict(capacities=[10, -1]), r"capacities\[1\] = -1 is negative"),
        (dict(num_devices=0), r"num_devices must be >= 1"),
        (dict(policy="nearest"), r"unknown placement policy 'nearest'; valid choices: adjacency, round_robin"),
        (dict(policy="adjacency", adjacency=None), r"policy 'adjacency' needs the cluster adjacency"),
        (dict(centroids=np.zeros((3, 2))), r"give either adjacency or centroids"),
    ],
)
def test_place_validation_messages(kwargs, msg):
    args = dict(sizes=[3, 1], num_devices=2, policy="round_robin", adjacency=[[1], [0]])
    args.update(kwargs)
    with pytest.raises(ValueError, match=msg):
        place(args.pop("sizes"), args.pop("num_devices"), args.pop("policy"), **args)


def test_round_robin_respects_capacity_by_skipping_ahead():
    # c0 -> d0; c1 -> d1 (full: 5 < 6) -> d2; c2 -> d2 (4 left < 5) -> d0; c3 -> d0 (plain rule)
    dev = place([5, 6, 5, 1], 3, "round_robin", capacities=[20, 5, 10])
    np.testing.assert_array_equal(dev, [0, 2, 0, 0])


def test_size_balanced_is_lpt():
    # sizes 7, 5, 4, 3, 1 on 2 devices of 20, each to the device with the most room left;
    # remaining after each: [13,20] -> [13,15] -> [13,11] -> [10,11] -> [10,10]
    dev = place([7, 5, 4, 3, 1], 2, "size_balanced", capacities=20)
    np.testing.assert_array_equal(dev, [0, 1, 1, 0, 1])


def test_locality_keeps_neighbors_together():
    C, D = 40, 4
    cen = np.arange(C, dtype=float)[:, None]  # clusters on a line
    dev = place(np.ones(C, dtype=int), D, "locality", centroids=cen, num_neighbors=2)
    np.testing.assert_array_equal(np.bincount(dev), [10, 10, 10, 10])
    assert np.sum(dev[1:] != dev[:-1]) == D - 1  # contiguous runs along the line


def test_random_is_seeded():
    a = place(np.ones(50, dtype=int), 4, "random", seed=1)
    np.testing.assert_array_equal(a, place(np.ones(50, dtype=int), 4, "random", seed=1))
    assert not np.array_equal(a, place(np.ones(50, dtype=int), 4, "random", seed=2))


def test_register_policy_makes_a_new_policy_one_function():
    @placement.register_policy("test_all_on_last")
    def _last(problem):
        return np.full(problem.num_clusters, problem.num_devices - 1)

    try:
        np.testing.assert_array_equal(place([1, 2, 3], 3, "test_all_on_last"), [2, 2, 2])
        with pytest.raises(RuntimeError, match="device 2 holds 6 but its capacity is 5"):
            place([1, 2, 3], 3, "test_all_on_last", capacities=5)
        with pytest.raises(ValueError, match="already registered"):
            placement.register_policy("test_all_on_last")(_last)
    finally:
        del placement.POLICIES["test_all_on_last"]


# ---------------------------------------------------------------------------------------------
# load accounting

# 3 clusters on 2 devices: cluster 0 -> d0, clusters 1, 2 -> d1
DEVICE = np.array([0, 1, 1])
# query 0 probes 0, 1; query 1 probes 1, 2, 0; query 2 probes 2
QPTR = np.array([0, 2, 5, 6])
SCL = np.array([0, 1, 1, 2, 0, 2])


def test_loads_and_lir_by_hand():
    loads = placement.device_loads(DEVICE, QPTR, SCL, 2)
    np.testing.assert_array_equal(loads, [2, 4])  # d0: searches 0, 4; d1: 1, 2, 3, 5
    assert placement.lir(loads) == pytest.approx(4 / 3)  # max 4 / ideal 6/2
    w = np.array([1, 2, 3, 4, 5, 6.0])
    np.testing.assert_array_equal(placement.device_loads(DEVICE, QPTR, SCL, 2, w), [6, 15])
    per_q = placement.query_device_loads(DEVICE, QPTR, SCL, 2)
    np.testing.assert_array_equal(per_q, [[1, 1], [1, 2], [0, 1]])
    # query LIR: q0 1/(2/2)=1; q1 2/(3/2)=4/3; q2 1/(1/2)=2
    np.testing.assert_allclose(placement.query_lir(DEVICE, QPTR, SCL, 2), [1, 4 / 3, 2])
    # batches of 2: (q0+q1) = [2, 3] -> 3/2.5 = 1.2; q2 alone -> 2
    np.testing.assert_allclose(placement.batch_lir(DEVICE, QPTR, SCL, 2, 2), [1.2, 2])
    # M[d, k] = queries with exactly k searches on device d
    np.testing.assert_array_equal(
        placement.device_cluster_count_matrix(DEVICE, QPTR, SCL, 2), [[1, 2, 0], [0, 2, 1]]
    )
    assert placement.lir([5, 5, 5]) == 1.0
    with pytest.raises(ValueError, match="undefined when the total load is zero"):
        placement.lir([0, 0])


def test_search_work_from_a_trace():
    # 2 searches: search 0 has hops 0, 1 (reading 2 and 1 vectors), search 1 has hop 2 (0 reads)
    trace = {
        "search_cluster": np.array([0, 1]),
        "search_hop_ptr": np.array([0, 2, 3]),
        "hop_read_ptr": np.array([0, 2, 3, 3]),
    }
    np.testing.assert_array_equal(placement.search_work(trace, "searches"), [1, 1])
    np.testing.assert_array_equal(placement.search_work(trace, "hops"), [2, 1])
    np.testing.assert_array_equal(placement.search_work(trace, "distances"), [4, 1])  # 1 + reads
    with pytest.raises(ValueError, match="unknown work kind 'bytes'"):
        placement.search_work(trace, "bytes")


@pytest.mark.parametrize(
    "qp, sc, dev, msg",
    [
        ([1, 2], [0], DEVICE, r"query_ptr\[0\] must be 0"),
        ([0, 2, 1, 3], [0, 1, 2], DEVICE, r"query_ptr decreases at query 1"),
        ([0, 2], [0], DEVICE, r"query_ptr ends at 2 but search_cluster has 1 entries"),
        ([0, 1], [3], DEVICE, r"search_cluster\[0\] = 3 but there are only 3 clusters"),
        ([0, 1], [-1], DEVICE, r"search_cluster\[0\] = -1 is negative"),
        ([0, 1], [0], [0, 5, 1], r"cluster 1 is on device 5, outside 0..1"),
    ],
)
def test_probe_validation_messages(qp, sc, dev, msg):
    with pytest.raises(ValueError, match=msg):
        placement.device_loads(dev, qp, sc, 2)
