"""Algorithm 1 (adjacency-aware placement) on hand-worked examples, with every loss written out.

Weights: with D devices the j-th nearest neighbor (j = 0, 1, ...) weighs D - j, so the first D
neighbors count and the rest weigh nothing. A device's loss for cluster c is the sum of the
weights of c's neighbors already on that device. Candidates are the devices with remaining
capacity >= size; the lowest loss wins, then the most remaining capacity, then the lowest index.
"""

import numpy as np
import pytest

import placement
import placement.policies as policies
from placement import CapacityError, adjacency_aware_steps, place


def _both(sizes, caps, adj):
    """Run the plain (step-recording) and the vectorized implementation; they must agree."""
    steps = adjacency_aware_steps(sizes, caps, adj)
    fast = place(sizes, len(caps), "adjacency", capacities=caps, adjacency=adj)
    ref = np.full(len(sizes), -1)
    for st in steps:
        ref[st["cluster"]] = st["device"]
    np.testing.assert_array_equal(fast, ref)
    return steps, fast


def test_example_two_devices_weights_stop_after_d_neighbors():
    # D = 2: weights 2 (nearest), 1 (second), 0 (third and beyond).
    sizes = [10, 8, 6, 4]  # distinct: placement order 0, 1, 2, 3
    caps = [100, 100]
    adj = [[1, 2, 3], [0, 2, 3], [3, 1, 0], [2, 0, 1]]
    steps, dev = _both(sizes, caps, adj)
    # cluster 0: nothing placed -> losses {0: 0, 1: 0}; remaining 100 = 100 -> lowest index, d0.
    assert steps[0]["cluster"] == 0 and steps[0]["losses"] == {0: 0, 1: 0} and steps[0]["device"] == 0
    # cluster 1: neighbor 0 (w=2) on d0, neighbor 2 (w=1) unplaced -> {0: 2, 1: 0} -> d1.
    assert steps[1]["losses"] == {0: 2, 1: 0} and steps[1]["device"] == 1
    # cluster 2: neighbor 3 (w=2) unplaced, neighbor 1 (w=1) on d1, neighbor 0 weighs 0
    # -> {0: 0, 1: 1} -> d0.
    assert steps[2]["losses"] == {0: 0, 1: 1} and steps[2]["device"] == 0
    # cluster 3: neighbor 2 (w=2) on d0, neighbor 0 (w=1) on d0 -> d0: 3; neighbor 1 weighs 0
    # -> {0: 3, 1: 0} -> d1.
    assert steps[3]["losses"] == {0: 3, 1: 0} and steps[3]["device"] == 1
    np.testing.assert_array_equal(dev, [0, 1, 0, 1])


def test_example_three_devices_tie_rules():
    # D = 3: weights 3, 2 for the two listed neighbors.
    sizes = [20, 20, 10, 10, 10]  # equal sizes keep id order: 0, 1, 2, 3, 4
    caps = [40, 30, 30]
    adj = [[1, 2], [0, 3], [0, 1], [4, 1], [3, 2]]
    steps, dev = _both(sizes, caps, adj)
    assert [s["cluster"] for s in steps] == [0, 1, 2, 3, 4]
    # c0 (20): losses all 0; remaining 40 > 30 = 30 -> d0 (more remaining). rem -> [20, 30, 30]
    assert steps[0]["losses"] == {0: 0, 1: 0, 2: 0} and steps[0]["device"] == 0
    # c1 (20): neighbor 0 (w=3) on d0 -> {0: 3, 1: 0, 2: 0}; d1, d2 tie on loss and on remaining
    # (30 = 30) -> lowest index d1. rem -> [20, 10, 30]
    assert steps[1]["losses"] == {0: 3, 1: 0, 2: 0} and steps[1]["device"] == 1
    # c2 (10): neighbor 0 (w=3) on d0, neighbor 1 (w=2) on d1 -> {0: 3, 1: 2, 2: 0} -> d2.
    # rem -> [20, 10, 20]
    assert steps[2]["losses"] == {0: 3, 1: 2, 2: 0} and steps[2]["device"] == 2
    # c3 (10): neighbor 4 unplaced, neighbor 1 (w=2) on d1 -> {0: 0, 1: 2, 2: 0}; d0 and d2 tie
    # on loss and remaining (20 = 20) -> d0. rem -> [10, 10, 20]
    assert steps[3]["losses"] == {0: 0, 1: 2, 2: 0} and steps[3]["device"] == 0
    # c4 (10): neighbor 3 (w=3) on d0, neighbor 2 (w=2) on d2 -> {0: 3, 1: 0, 2: 2} -> d1, which
    # has exactly enough room (10 >= 10). rem -> [10, 0, 20]
    assert steps[4]["losses"] == {0: 3, 1: 0, 2: 2} and steps[4]["device"] == 1
    np.testing.assert_array_equal(dev, [0, 1, 2, 0, 1])


def test_example_full_device_is_not_a_candidate():
    # D = 2: weights 2, 1.
    sizes = [10, 10, 5]
    caps = [10, 25]
    adj = [[1], [0], [0, 1]]
    steps, dev = _both(sizes, caps, adj)
    # c0 (10): {0: 0, 1: 0}; remaining 25 > 10 -> d1. rem -> [10, 15]
    assert steps[0]["losses"] == {0: 0, 1: 0} and steps[0]["device"] == 1
    # c1 (10): neighbor 0 (w=2) on d1 -> {0: 0, 1: 2} -> d0 (exactly fits). rem -> [0, 15]
    assert steps[1]["losses"] == {0: 0, 1: 2} and steps[1]["device"] == 0
    # c2 (5): d0 has 0 < 5 left, so only d1 is a candidate: neighbor 0 (w=2) on d1 -> {1: 2}.
    # (d0 would have scored 1 via neighbor 1, but it is full.)
    assert steps[2]["losses"] == {1: 2} and steps[2]["device"] == 1
    np.testing.assert_array_equal(dev, [1, 0, 1])


def test_cluster_that_fits_nowhere_is_named():
    with pytest.raises(CapacityError, match="cluster 2 .size 1."):
        place([10, 10, 1], 2, "adjacency", capacities=[10, 10], adjacency=[[1], [0], [0]])
    with pytest.raises(CapacityError, match="cluster 2 .size 1."):
        adjacency_aware_steps([10, 10, 1], [10, 10], [[1], [0], [0]])
    # larger than any device at all: caught before the policy runs
    with pytest.raises(CapacityError, match="cluster 1 .size 50. is larger than every device"):
        place([5, 50], 2, "round_robin", capacities=[20, 30])


def test_every_policy_fails_clearly_when_full():
    adj = [[1], [0], [0]]
    for name in placement.POLICIES:
        with pytest.raises(CapacityError, match=r"cluster \d+ \(size \d+\) does not fit"):
            place([10, 10, 10], 2, name, capacities=[10, 15], adjacency=adj)


def test_without_adjacency_equals_size_balanced():
    rng = np.random.default_rng(3)
    sizes = rng.integers(1, 100, 200)
    empty = np.full((200, 4), -1)
    a = place(sizes, 5, "adjacency", adjacency=empty, capacities=[3000, 2500, 5000, 4000, 9000])
    b = place(sizes, 5, "size_balanced", capacities=[3000, 2500, 5000, 4000, 9000])
    np.testing.assert_array_equal(a, b)


def test_blocks_and_step_rules_do_not_change_the_answer(monkeypatch):
    # The vectorized version handles neighbors placed before a block and inside it differently,
    # and has two step rules (bitmask, dense); tiny blocks make every path run many times.
    rng = np.random.default_rng(7)
    C, D = 300, 12
    cen = rng.normal(size=(C, 5))
    adj = placement.cluster_adjacency(cen, 10)
    sizes = rng.integers(1, 50, C)
    caps = np.full(D, int(sizes.sum() / D * 1.08))
    whole = place(sizes, D, "adjacency", adjacency=adj, capacities=caps)
    for bitmask_max in (64, 0):  # 0 forces the dense step rule everywhere
        monkeypatch.setattr(policies, "_BITMASK_MAX_DEVICES", bitmask_max)
        for block in (1, 7, 64, 4096, 40000):  # 40000: 64-bit state fields
            monkeypatch.setattr(policies, "_BLOCK", block)
            np.testing.assert_array_equal(place(sizes, D, "adjacency", adjacency=adj, capacities=caps), whole)
    ref = np.full(C, -1)
    for st in adjacency_aware_steps(sizes, caps, adj):
        ref[st["cluster"]] = st["device"]
    np.testing.assert_array_equal(whole, ref)


@pytest.mark.parametrize("bitmask_max", [64, 0])
def test_unpackable_capacities_use_the_exact_fallback(monkeypatch, bitmask_max):
    # Capacities near 2**62 cannot be packed with the loss into one int64 key (dense rule).
    monkeypatch.setattr(policies, "_BITMASK_MAX_DEVICES", bitmask_max)
    huge = 2**61
    sizes = [10, 8, 6, 4]
    adj = [[1, 2, 3], [0, 2, 3], [3, 1, 0], [2, 0, 1]]
    dev = place(sizes, 2, "adjacency", adjacency=adj, capacities=[huge, huge])
    np.testing.assert_array_equal(dev, [0, 1, 0, 1])
    dev = place([5, 5, 5], 2, "adjacency", adjacency=[[1], [0], [0]], capacities=[huge, huge - 3])
    # c0 -> d0 (more room); c1: neighbor 0 on d0 (w 2) -> d1; c2: neighbor 0 on d0 -> d1
    np.testing.assert_array_equal(dev, [0, 1, 1])


def test_centroids_give_the_same_answer_as_their_adjacency():
    rng = np.random.default_rng(11)
    cen = rng.normal(size=(80, 4))
    sizes = rng.integers(1, 20, 80)
    a = place(sizes, 4, "adjacency", centroids=cen)
    b = place(sizes, 4, "adjacency", adjacency=placement.cluster_adjacency(cen, 4))
    np.testing.assert_array_equal(a, b)


def test_neighbors_of_a_query_are_spread():
    # Clusters on a line, neighbors by distance: Algorithm 1 should put any D consecutive
    # clusters on D different devices (each cluster's nearest neighbors carry the most weight).
    C, D = 40, 4
    cen = np.arange(C, dtype=float)[:, None]
    dev = place(np.ones(C, dtype=int), D, "adjacency", centroids=cen)
    windows = np.lib.stride_tricks.sliding_window_view(dev, 2)
    assert np.all(windows[:, 0] != windows[:, 1])  # adjacent clusters never share a device
    rr = place(np.ones(C, dtype=int), D, "round_robin")
    np.testing.assert_array_equal(rr, np.arange(C) % D)


def _paper_listing(cluster_size, cluster_adj, devices, num_devices):
    """Algorithm 1 of the Cosmos paper (arXiv 2505.16096v1, p. 3), transcribed line by line.

    ``devices`` is a list of dicts with ``remain`` and ``clusters`` (a set); the chosen device's
    ``remain`` is reduced as in line 11. Returns ``bestd`` (an index into ``devices``).
    """
    bestd, max_cap, min_loss = -1, 0, float("inf")  # line 1
    for d, dev in enumerate(devices):  # line 2
        if dev["remain"] >= cluster_size:  # line 3
            loss, proximity = 0, num_devices  # line 4
            for adj in cluster_adj:  # line 5
                if adj in dev["clusters"]:  # line 6
                    loss += proximity  # line 7
                proximity -= 1  # line 8
            if bestd == -1 or loss < min_loss or (loss == min_loss and dev["remain"] > max_cap):  # l. 9
                bestd, min_loss, max_cap = d, loss, dev["remain"]  # line 10
    devices[bestd]["remain"] -= cluster_size  # line 11
    return bestd  # line 12


@pytest.mark.parametrize("seed", range(6))
def test_matches_the_papers_listing(seed):
    # The paper calls the listing once per cluster, "sorted by size in descending order"
    # (Section IV-C), with "a proximity-ordered list .adj of the nearby clusters". The listing
    # decrements the proximity weight for every entry, so a list longer than num_devices would
    # give far clusters negative weight; we pass the num_devices nearest (docs/placement.md).
    rng = np.random.default_rng(seed)
    C, D = int(rng.integers(20, 120)), int(rng.integers(2, 9))
    cen = rng.normal(size=(C, 6))
    sizes = rng.integers(1, 60, C)
    if seed % 2:
        caps = [int(sizes.sum() / D * 1.05) + int(sizes.max())] * D  # capacity binds sometimes
    else:
        caps = [int(sizes.sum())] * D  # unconstrained
    adj = placement.cluster_adjacency(cen, C - 1)
    devices = [{"remain": cap, "clusters": set()} for cap in caps]
    ref = np.full(C, -1)
    for c in np.argsort(-sizes, kind="stable"):
        d = _paper_listing(int(sizes[c]), [int(a) for a in adj[c, :D]], devices, D)
        devices[d]["clusters"].add(int(c))
        ref[c] = d
    np.testing.assert_array_equal(place(sizes, D, "adjacency", adjacency=adj, capacities=caps), ref)
