"""Synthetic generators (shape, determinism, calibration against real SIFT) and k-means."""

import numpy as np
import pytest

from graphs.dataset import real_dataset
from graphs.kmeans import assign, centroid_adjacency, cluster_csr, kmeans
from graphs.stats import difficulty, probe_concentration
from graphs.synthetic import SPECS, generate


@pytest.mark.parametrize("name,dim,dtype", [("sift", 128, np.uint8), ("deep", 96, np.float32),
                                            ("text2image", 200, np.float32), ("msspacev", 100, np.int8)])
def test_shapes_and_types(name, dim, dtype):
    x = generate(name, 300, seed=3)
    q = generate(name, 20, seed=3, queries=True)
    assert x.shape == (300, dim) and x.dtype == dtype and q.shape == (20, dim)
    if name == "deep":
        assert np.allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-5)
    if name == "sift":
        assert 480 < np.linalg.norm(x.astype(np.float64), axis=1).mean() < 520
    assert not np.array_equal(x[:20], q)


def test_deterministic_and_prefix():
    a = generate("sift", 10000, seed=5)
    b = generate("sift", 1000, seed=5)
    assert np.array_equal(a[:1000], b)  # a small set is a prefix of a larger one
    assert np.array_equal(generate("deep", 50, seed=5), generate("deep", 50, seed=5))
    assert not np.array_equal(generate("deep", 50, seed=5), generate("deep", 50, seed=6))


def test_sift_calibrated_against_bigann10k():
    """The synthetic SIFT set matches the first 10,000 BIGANN vectors in local intrinsic
    dimensionality and relative contrast (docs/graphs.md; base points as queries, self
    excluded). Tolerance 15%: the spread between seeds is ~5%, and siftsmall (another real
    SIFT sample) differs from bigann10k by >35% on both, so the test separates families."""
    real = real_dataset("bigann10k").base
    syn = generate("sift", 10000, seed=0)
    r = difficulty(real, real[:300], exclude_self=True)
    s = difficulty(syn, syn[:300], exclude_self=True)
    assert abs(s["lid_mean"] / r["lid_mean"] - 1) < 0.15, (s, r)
    assert abs(s["rc_mean"] / r["rc_mean"] - 1) < 0.15, (s, r)
    assert abs((syn == 0).mean() - (real == 0).mean()) < 0.05
    # routing is not dominated by one hub cluster (real: 1.54 bigann10k, 2.52 siftsmall)
    assert probe_concentration(syn[2000:], syn[:2000]) < 1.25 * probe_concentration(real[2000:], real[:2000]) + 1.0
    # a naive Gaussian blob of the same shape is far off (much higher LID)
    blob = np.clip(np.rint(np.random.default_rng(0).normal(30, 20, size=(10000, 128))), 0, 255)
    g = difficulty(blob, blob[:300], exclude_self=True)
    assert g["lid_mean"] > 2 * r["lid_mean"]


def test_specs_metrics():
    assert SPECS["text2image"].metric == "ip" and SPECS["sift"].metric == "l2"


def test_kmeans_seeded_and_assignment():
    x = generate("sift", 3000, seed=1)
    c1 = kmeans(x, 16, seed=2, iters=5)
    c2 = kmeans(x, 16, seed=2, iters=5)
    assert np.array_equal(c1, c2)
    a = assign(x, c1)
    ref = np.argmin(((x[:, None, :].astype(np.float64) - c1[None].astype(np.float64)) ** 2).sum(-1), axis=1)
    assert (a == ref).mean() > 0.999  # float32 ties aside
    ptr, nodes = cluster_csr(a, 16)
    assert ptr[-1] == 3000 and np.array_equal(np.sort(nodes), np.arange(3000))
    for c in range(16):
        assert np.all(a[nodes[ptr[c]:ptr[c + 1]]] == c)
    with pytest.raises(ValueError, match="num_clusters=3001"):
        kmeans(x, 3001)


def test_centroid_adjacency_is_proximity_ordered():
    c = np.random.default_rng(0).normal(size=(20, 5)).astype(np.float32)
    adj = centroid_adjacency(c)
    assert adj.shape == (20, 19)
    for i in range(20):
        assert i not in adj[i] and sorted(adj[i]) == [j for j in range(20) if j != i]
        d = ((c[adj[i]] - c[i]) ** 2).sum(1)
        assert np.all(np.diff(d) >= -1e-5)
