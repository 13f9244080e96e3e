"""The pieces of experiments/tools/placement_lir.py: data, k-means, routing, one small run."""

import argparse

import numpy as np

from experiments.tools import placement_lir as exp


def test_kmeans_recovers_separated_blobs():
    rng = np.random.default_rng(0)
    centers = np.array([[0.0, 0.0], [20.0, 0.0], [0.0, 20.0]])
    x = np.concatenate([c + rng.normal(size=(200, 2)) for c in centers]).astype(np.float32)
    cent, lab = exp.kmeans(x, 3, 10, np.random.default_rng(1))
    # every blob is one cluster, and each centroid is within 0.3 of its blob's center
    for b in range(3):
        assert np.unique(lab[b * 200:(b + 1) * 200]).size == 1
    assert np.all(np.sort(np.linalg.norm(cent[:, None] - centers[None], axis=2).min(0)) < 0.3)
    # deterministic for the same seed
    np.testing.assert_array_equal(exp.kmeans(x, 3, 10, np.random.default_rng(1))[1], lab)


def test_route_probes_nearest_centroids_in_order():
    rng = np.random.default_rng(2)
    cent = rng.normal(size=(30, 5))
    q = rng.normal(size=(7, 5))
    qp, sc = exp.route(q, cent, 4)
    np.testing.assert_array_equal(qp, [0, 4, 8, 12, 16, 20, 24, 28])
    brute = np.argsort(((q[:, None] - cent[None]) ** 2).sum(-1), axis=1)[:, :4]
    np.testing.assert_array_equal(sc.reshape(7, 4), brute)


def test_small_synthetic_run_reports_every_policy_and_probe_count():
    args = argparse.Namespace(seed=0, seeds=1, points=3000, queries=300, dim=8, topics=4, topic_spread=3.0,
                              noise=1.0, clusters=32, kmeans_iters=5, devices=4, probes=[4, 8], batch=16,
                              heatmap_probes=8, capacity_slack=None)
    rows, heat = exp.run_synthetic(args)
    assert len(rows) == 2 * len(exp.POLICIES)
    for r in rows:
        assert 1.0 <= r["lir_all_queries"] <= 4.0 and 1.0 <= r["lir_per_query_mean"] <= 4.0
    # heatmap: for each policy and device, the query counts over k = 0..P sum to the queries
    for p in ("round_robin", "adjacency"):
        for d in range(4):
            assert sum(h["queries"] for h in heat if h["policy"] == p and h["device"] == d) == 300
