"""Vamana (DiskANN) graphs: RobustPrune by hand, degree bound, recall, thread-count determinism, CLI."""

import numba
import numpy as np
import pytest

import graphs
from cosmos.cli import main
from cosmos_common import UserError
from graphs.dataset import real_dataset
from graphs.index import IndexParams, build_index, index_key
from graphs.trace import load_trace
from graphs.vamana import build_vamana, robust_prune

# p = origin. a is the nearest point. b is "dominated" by a: d(a, b) = 4.16 <= d(p, b) = 4.36
# (squared L2), so alpha = 1 drops it, but alpha = 1.2 keeps it (1.2 * 4.16 = 4.99 > 4.36).
# c lies on the other side of p: d(a, c) = 4.41 > d(p, c) = 1.21, never dominated.
PTS = np.array([[0.0, 0.0], [1.0, 0.0], [0.6, 2.0], [-1.1, 0.0], [1.1, 0.1]], dtype=np.float32)
P, A, B, C, D = range(5)


def test_robust_prune_alpha_one_keeps_nearest_and_drops_dominated():
    kept = robust_prune(PTS, P, [B, C, A], alpha=1.0, R=10)
    assert kept.tolist() == [A, C]  # nearest first; b dominated by a


def test_robust_prune_alpha_above_one_keeps_the_longer_edge():
    kept = robust_prune(PTS, P, [B, C, A], alpha=1.2, R=10)
    assert kept.tolist() == [A, C, B]


def test_robust_prune_ignores_self_duplicates_and_respects_R():
    assert robust_prune(PTS, P, [A, A, P, C, C], alpha=1.0, R=10).tolist() == [A, C]
    assert robust_prune(PTS, P, [B, C, A], alpha=1.2, R=1).tolist() == [A]
    # d is just beyond a: d(a, d) = 0.02 <= d(p, d) = 1.22 even at alpha = 1.2 -> dropped
    assert robust_prune(PTS, P, [D, A, C], alpha=1.2, R=10).tolist() == [A, C]
    assert robust_prune(PTS, P, [], alpha=1.2, R=4).tolist() == []


@pytest.fixture(scope="module")
def bigann():
    return real_dataset("bigann10k")


def test_degree_bound_and_structure(bigann):
    idx = build_index(bigann, IndexParams(num_clusters=4, graph="vamana", R=12, L=24), progress=False)
    deg = idx.degrees()
    assert idx.max_degree == 12 and deg.max() <= 12
    assert deg.min() >= 1 and deg.mean() > 6  # alpha = 1.2 keeps a good part of R
    for c in range(idx.num_clusters):  # edges stay in their cluster, no self loops
        s, e = idx.cluster_ptr[c], idx.cluster_ptr[c + 1]
        nb = idx.indices[idx.indptr[s]:idx.indptr[e]]
        assert nb.min() >= s and nb.max() < e
    rows = np.repeat(np.arange(idx.n), deg)
    assert not np.any(rows == idx.indices)
    # each list has distinct neighbors
    assert all(len(set(idx.indices[idx.indptr[i]:idx.indptr[i + 1]].tolist())) == deg[i] for i in range(idx.n))
    # Vamana has no upper layers: the hierarchical entry is the medoid
    assert np.array_equal(idx.hnsw_entry, idx.medoid) and not idx.hnsw_levels.any()


def test_same_seed_same_graph_with_1_and_2_threads(bigann):
    x = np.asarray(bigann.base[:3000], dtype=np.float32)
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        a = build_vamana(x, "l2", 17, R=16, L=32, alpha=1.2, seed=5)
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        b = build_vamana(x, "l2", 17, R=16, L=32, alpha=1.2, seed=5)
    finally:
        numba.set_num_threads(old)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    c = build_vamana(x, "l2", 17, R=16, L=32, alpha=1.2, seed=6)
    assert not np.array_equal(a[1], c[1])  # the seed matters


def test_index_thread_independent(bigann):
    p = IndexParams(num_clusters=3, graph="vamana", R=16, L=32)
    a = build_index(bigann.subset(4000, None), p, threads=1, progress=False)
    b = build_index(bigann.subset(4000, None), p, threads=2, progress=False)
    assert np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)


def test_small_and_inner_product_clusters():
    rng = np.random.default_rng(0)
    # fewer points than R: complete graph minus self loops survives the prunes only partly
    ip, ix = build_vamana(rng.normal(size=(5, 4)).astype(np.float32), "l2", 0, R=64)
    assert ip[-1] == len(ix) and np.diff(ip).max() <= 4
    assert build_vamana(np.zeros((1, 4), np.float32), "l2", 0)[1].size == 0
    # R and L beyond the cluster size change nothing (and allocate nothing huge)
    y = rng.normal(size=(40, 4)).astype(np.float32)
    a = build_vamana(y, "l2", 0, R=39, L=40)
    b = build_vamana(y, "l2", 0, R=10**9, L=10**9)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    x = rng.normal(size=(500, 8)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    ip, ix = build_vamana(x, "ip", 0, R=8, L=16)
    assert np.diff(ip).max() <= 8 and np.diff(ip).min() >= 1


@pytest.mark.parametrize("name", ["siftsmall", "bigann10k"])
def test_recall_at_defaults(name, tmp_path):
    """Issue 33: recall@10 >= 0.90 at the default parameters with Vamana graphs."""
    tr = graphs.make_workload(name, cache_dir=tmp_path, graph="vamana", progress=False)
    m = tr.meta
    assert (m["graph"], m["R"], m["L"], m["alpha"]) == ("vamana", 64, 100, 1.2)
    assert m["num_clusters"] == 64 and m["num_probes"] == 8 and m["k"] == 10
    assert m["max_degree"] == 64 and m["max_degree_observed"] <= 64
    assert m["recall"] >= 0.90


def test_graph_parameters_in_cache_keys(bigann):
    keys = {index_key(bigann, IndexParams(**kw)) for kw in
            ({}, {"graph": "vamana"}, {"graph": "vamana", "R": 32}, {"graph": "vamana", "L": 50},
             {"graph": "vamana", "alpha": 1.0})}
    assert len(keys) == 5
    # an hnsw index is keyed by hnsw parameters only (its key does not involve R, L, alpha) and a
    # Vamana one by Vamana parameters only
    assert IndexParams().key_dict() == {"num_clusters": 64, "M": 32, "ef_construction": 100, "seed": 0,
                                        "kmeans_iters": 20}
    assert index_key(bigann, IndexParams(R=8)) == index_key(bigann, IndexParams())
    assert (index_key(bigann, IndexParams(graph="vamana", M=8))
            == index_key(bigann, IndexParams(graph="vamana")))


def test_cached_trace_of_other_graph_kind_not_reused(tmp_path):
    kw = dict(n=2000, num_queries=20, num_clusters=4, num_probes=2, cand_list_len=16, k=5, progress=False,
              cache_dir=tmp_path)
    h = graphs.make_workload("sift", **kw)
    v = graphs.make_workload("sift", graph="vamana", R=16, L=32, **kw)
    assert h.meta["graph"] == "hnsw" and v.meta["graph"] == "vamana" and v.meta["max_degree"] == 16
    assert not np.array_equal(h.read_node, v.read_node) or len(h.read_node) != len(v.read_node)
    again = graphs.cached_trace(graphs.get_dataset("sift", 2000, 20, cache_dir=tmp_path), num_clusters=4,
                                num_probes=2, cand_list_len=16, k=5, cache_dir=tmp_path, graph="vamana",
                                R=16, L=32)
    assert again is not None and np.array_equal(again.read_node, v.read_node)


@pytest.mark.parametrize("kw,what", [
    ({"R": 0}, "R=0"), ({"L": 0}, "L=0"), ({"alpha": 0.9}, "alpha=0.9"),
    ({"alpha": float("nan")}, "alpha=nan"), ({"graph": "nsg"}, "graph='nsg'"),
])
def test_bad_parameters_one_clear_error(kw, what):
    with pytest.raises(UserError, match=what.replace("(", r"\(")):
        IndexParams(**{"graph": "vamana", **kw}).validate(100)


def test_cli_trace_graph_flag(tmp_path, capsys):
    out = tmp_path / "t.npz"
    common = ["--dataset", "siftsmall", "--num-queries", "20", "--num-clusters", "4", "--cache-dir", str(tmp_path)]
    assert main(["graphs", "trace", *common, "--graph", "vamana", "--R", "24", "--L", "48", "--alpha", "1.1",
                 "--num-probes", "2", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "graph=vamana" in text
    tr = load_trace(out)
    assert (tr.meta["graph"], tr.meta["R"], tr.meta["L"], tr.meta["alpha"]) == ("vamana", 24, 48, 1.1)
    assert tr.meta["max_degree"] == 24 and tr.meta["max_degree_observed"] <= 24
    assert tr.meta["recall"] > 0.8
    assert main(["graphs", "build", *common, "--graph", "vamana", "--R", "24", "--L", "48", "--alpha", "1.1"]) == 0
    assert "graph: vamana R=24 L=48 alpha=1.1" in capsys.readouterr().out
    # bad values: exit 2 with one line naming the parameter, nothing written
    for bad, word in ((["--R", "0"], "R=0"), (["--alpha", "0.5"], "alpha=0.5"), (["--L", "-3"], "L=-3"),
                      (["--entry", "hnsw"], "entry 'hnsw'")):
        bad_out = tmp_path / "bad.npz"
        assert main(["graphs", "trace", *common, "--graph", "vamana", "--num-probes", "2", *bad,
                     "--out", str(bad_out)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and word in err[0], err
        assert not bad_out.exists()
