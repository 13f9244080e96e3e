"""Vamana (DiskANN) graphs: both builders' pruning by hand, the library builder against diskannpy's
recorded graphs and figures, the paper builder against the graphs it gave before the library
builder existed, degree bound, recall, thread-count determinism, cache keys, CLI."""

import hashlib
import json
from pathlib import Path

import numba
import numpy as np
import pytest

import graphs
from cosmos.cli import main
from cosmos_common import UserError
from graphs.cli import GRAPH_KINDS as CLI_GRAPH_KINDS
from graphs.dataset import real_dataset
from graphs.index import GRAPH_KINDS, ClusteredIndex, IndexParams, build_index, index_key
from graphs.trace import load_trace
from graphs.vamana import build_vamana, robust_prune
from graphs.workload import trace_index

#: diskannpy 0.7.0's one-thread graphs and figures (R=64, L=100, alpha=1.2, one graph per set),
#: written by ``python experiments/tools/check_diskann.py --write-reference PATH``
REFERENCE = json.loads((Path(__file__).parent / "data" / "graphs" / "diskannpy_reference.json").read_text())

# p = origin. a is the nearest point. b is "dominated" by a: d(a, b) = 4.16 <= d(p, b) = 4.36
# (squared L2), so alpha = 1 drops it, but alpha = 1.2 keeps it (1.2 * 4.16 = 4.99 > 4.36).
# c lies on the other side of p: d(a, c) = 4.41 > d(p, c) = 1.21, never dominated.
PTS = np.array([[0.0, 0.0], [1.0, 0.0], [0.6, 2.0], [-1.1, 0.0], [1.1, 0.1]], dtype=np.float32)
P, A, B, C, D = range(5)


def test_robust_prune_alpha_one_keeps_nearest_and_drops_dominated():
    for variant in ("paper", "diskann"):
        assert robust_prune(PTS, P, [B, C, A], alpha=1.0, R=10, variant=variant).tolist() == [A, C]


def test_robust_prune_alpha_above_one_keeps_the_longer_edge():
    kept = robust_prune(PTS, P, [B, C, A], alpha=1.2, R=10, variant="paper")
    assert kept.tolist() == [A, C, B]
    # the library takes c in the round at alpha = 1 and b only in the round at 1.2
    assert robust_prune(PTS, P, [B, C, A], alpha=1.2, R=10, variant="diskann").tolist() == [A, C, B]


def test_robust_prune_ignores_self_duplicates_and_respects_R():
    for variant in ("paper", "diskann"):
        assert robust_prune(PTS, P, [A, A, P, C, C], alpha=1.0, R=10, variant=variant).tolist() == [A, C]
        assert robust_prune(PTS, P, [B, C, A], alpha=1.2, R=1, variant=variant).tolist() == [A]
        # d is just beyond a: d(a, d) = 0.02 <= d(p, d) = 1.22 even at alpha = 1.2 -> dropped
        assert robust_prune(PTS, P, [D, A, C], alpha=1.2, R=10, variant=variant).tolist() == [A, C]
        assert robust_prune(PTS, P, [], alpha=1.2, R=4, variant=variant).tolist() == []


# Rounds of alpha (DiskANN's occlude_list). p = origin, squared L2, candidates by distance to p:
# a (1.0), b (1.8), e (2.05), c (3.24). Occlusion factor d(p, x) / d(s, x) of x by a kept s:
#   b by a 1.125, e by a 1.108: above 1, below 1.2 -> skipped at alpha = 1, taken at 1.2 unless
#   occluded by then; c by a 0.76: free; c by b 4.5; e by b 205.
# Paper (one round at 1.2): a, then b (1.125 < 1.2), which drops e and c -> [a, b].
# Library (round 1 at alpha 1, then round 2 at 1.2): round 1 takes a, skips b and e, takes c; c
# raises only the factors of candidates after it, so round 2 takes b, and b drops e (205 > 1.2)
# -> [a, c, b]: the farther c kept, a nearer e dropped.
RPTS = np.array([[0, 0], [1, 0], [0.6, -1.2], [0, -1.8], [0.6, -1.3]], dtype=np.float32)
RP, RA, RB, RC, RE = range(5)


def test_rounds_of_alpha_keep_a_candidate_the_single_round_drops():
    cand = [RE, RC, RB, RA, RA, RP]
    assert robust_prune(RPTS, RP, cand, alpha=1.2, R=10, variant="paper").tolist() == [RA, RB]
    assert robust_prune(RPTS, RP, cand, alpha=1.2, R=10, variant="diskann").tolist() == [RA, RC, RB]
    # the rounds are 1, 1.2, 1.44 at alpha 1.5 and add 1.728 at alpha 2: no factor of e or c lies
    # between 1.2 and 2 once a and b are kept, so nothing changes
    for alpha in (1.5, 2.0):
        assert robust_prune(RPTS, RP, cand, alpha=alpha, R=10, variant="diskann").tolist() == [RA, RC, RB]
    # at alpha = 1 there is one round: b and e stay occluded by a
    assert robust_prune(RPTS, RP, cand, alpha=1.0, R=10, variant="diskann").tolist() == [RA, RC]
    # R counts across rounds: two slots are filled in round 1
    assert robust_prune(RPTS, RP, cand, alpha=1.2, R=2, variant="diskann").tolist() == [RA, RC]


def test_a_later_round_reaches_a_factor_between_its_alpha_and_the_previous():
    # f by a: d(p, f) / d(a, f) = 64 / 49 = 1.31, between the rounds at 1.2 and 1.44
    pts = np.array([[0, 0], [1, 0], [8, 0]], dtype=np.float32)
    for variant in ("paper", "diskann"):
        assert robust_prune(pts, 0, [1, 2], alpha=1.2, R=10, variant=variant).tolist() == [1]
        assert robust_prune(pts, 0, [1, 2], alpha=1.44, R=10, variant=variant).tolist() == [1, 2]
    # at alpha = 1.35 the paper's one round keeps f (1.31 < 1.35); the library's last round is the
    # last cur_alpha <= alpha, 1.2 (1.44 > 1.35), which does not
    assert robust_prune(pts, 0, [1, 2], alpha=1.35, R=10, variant="paper").tolist() == [1, 2]
    assert robust_prune(pts, 0, [1, 2], alpha=1.35, R=10, variant="diskann").tolist() == [1]
    with pytest.raises(UserError, match="variant 'nsg'"):
        robust_prune(pts, 0, [1, 2], alpha=1.2, R=10, variant="nsg")


@pytest.fixture(scope="module")
def bigann():
    return real_dataset("bigann10k")


@pytest.mark.parametrize("graph", ["vamana", "vamana-paper"])
def test_degree_bound_and_structure(bigann, graph):
    idx = build_index(bigann, IndexParams(num_clusters=4, graph=graph, R=12, L=24), progress=False)
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


@pytest.mark.parametrize("variant", ["diskann", "paper"])
def test_same_seed_same_graph_with_1_and_2_threads(bigann, variant):
    x = np.asarray(bigann.base[:3000], dtype=np.float32)
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        a = build_vamana(x, "l2", 17, R=16, L=32, alpha=1.2, seed=5, variant=variant)
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        b = build_vamana(x, "l2", 17, R=16, L=32, alpha=1.2, seed=5, variant=variant)
    finally:
        numba.set_num_threads(old)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    c = build_vamana(x, "l2", 17, R=16, L=32, alpha=1.2, seed=6, variant=variant)
    # the paper's random start graph and order come from the seed; the library draws no random number
    assert np.array_equal(a[1], c[1]) == (variant == "diskann")


@pytest.mark.parametrize("graph", ["vamana", "vamana-paper"])
def test_index_thread_independent(bigann, graph):
    p = IndexParams(num_clusters=3, graph=graph, R=16, L=32)
    a = build_index(bigann.subset(4000, None), p, threads=1, progress=False)
    b = build_index(bigann.subset(4000, None), p, threads=2, progress=False)
    assert np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)


def _digest16(indptr, indices) -> str:
    h = hashlib.sha256(np.ascontiguousarray(indptr, np.int64).tobytes())
    h.update(np.ascontiguousarray(indices, np.int32).tobytes())
    return h.hexdigest()[:16]


def test_the_paper_variant_gives_the_graphs_of_the_two_pass_builder(bigann):
    """``vamana-paper`` is the two-pass builder that ``vamana`` named before it followed the
    library: the same seed gives the same graph. The digests were taken from that builder."""
    x = np.asarray(bigann.base[:3000], dtype=np.float32)
    assert _digest16(*build_vamana(x, "l2", 17, R=16, L=32, alpha=1.2, seed=5, variant="paper")) == "27a9191c9fd37c1e"
    rng = np.random.default_rng(0)
    y = rng.normal(size=(500, 8)).astype(np.float32)
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    assert _digest16(*build_vamana(y, "ip", 0, R=8, L=16, variant="paper")) == "e23bc5b6b94139ef"
    sift = real_dataset("siftsmall")
    one = build_index(sift, IndexParams(num_clusters=1, graph="vamana-paper"), progress=False)
    assert _digest16(one.indptr, one.indices) == "d0dfbbdeeee39991"
    four = build_index(sift, IndexParams(num_clusters=4, graph="vamana-paper", R=24, L=48), progress=False)
    assert _digest16(four.indptr, four.indices) == "1e48aee17325a483"


@pytest.mark.parametrize("name", ["siftsmall", "bigann10k"])
def test_one_point_at_a_time_gives_the_library_graph(name):
    """Inserted one by one (max_batch=1) from the library's entry point, our builder gives
    diskannpy 0.7.0's one-thread graph, every list in the library's order."""
    ref = REFERENCE["datasets"][name]
    ds = real_dataset(name)
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)  # batches of one point: nothing to share among threads
        indptr, indices = build_vamana(ds.base, "l2", ref["entry_point"], 64, 100, 1.2, max_batch=1)
    finally:
        numba.set_num_threads(old)
    h = hashlib.sha256(np.ascontiguousarray(indptr, "<i8").tobytes())
    h.update(np.ascontiguousarray(indices, "<i4").tobytes())
    assert h.hexdigest() == ref["graph_sha256"]
    with pytest.raises(UserError, match="max_batch=0"):
        build_vamana(ds.base[:10], "l2", 0, max_batch=0)


def _stats(idx: ClusteredIndex, ds) -> dict:
    deg = idx.degrees()
    out = {"mean_degree": float(deg.mean()), "share_at_R": float(np.mean(deg == 64))}
    for ls in (32, 64, 100):
        tr = trace_index(idx, ds, num_probes=1, cand_list_len=ls, k=10, progress=False)
        pq = tr.per_query()
        out[ls] = (tr.meta["recall"], float(pq["hops"].mean()), float(pq["distances"].mean()))
    return out


@pytest.mark.parametrize("name", ["siftsmall", "bigann10k"])
def test_vamana_against_diskannpy(name):
    """Issue 56's targets against diskannpy 0.7.0 (one graph, R=64, L=100, alpha=1.2): mean
    out-degree and distance computations per query within 5 %, recall@10 within 0.01 at equal
    L_search (32, 64, 100); the entry point is the library's. The paper's builder is sparser."""
    ref = REFERENCE["datasets"][name]
    assert REFERENCE["diskannpy_version"] == "0.7.0" and (REFERENCE["R"], REFERENCE["L"]) == (64, 100)
    ds = real_dataset(name)
    lib = build_index(ds, IndexParams(num_clusters=1, graph="vamana"), progress=False)
    assert int(lib.medoid[0]) == ref["entry_point"]
    ours = _stats(lib, ds)
    assert abs(ours["mean_degree"] / ref["mean_degree"] - 1) < 0.05
    assert abs(ours["share_at_R"] - ref["share_at_R"]) < 0.01
    for ls in (32, 64, 100):
        want = ref["search"][str(ls)]
        recall, hops, dists = ours[ls]
        assert abs(recall - want["recall_at_10"]) <= 0.01
        assert abs(hops / want["hops_per_query"] - 1) < 0.05
        assert abs(dists / want["distances_per_query"] - 1) < 0.05
    paper = build_index(ds, IndexParams(num_clusters=1, graph="vamana-paper"), progress=False)
    assert paper.degrees().mean() < 0.9 * ref["mean_degree"]


@pytest.mark.parametrize("variant", ["diskann", "paper"])
def test_small_and_inner_product_clusters(variant):
    rng = np.random.default_rng(0)
    # fewer points than R: complete graph minus self loops survives the prunes only partly
    ip, ix = build_vamana(rng.normal(size=(5, 4)).astype(np.float32), "l2", 0, R=64, variant=variant)
    assert ip[-1] == len(ix) and np.diff(ip).max() <= 4
    assert build_vamana(np.zeros((1, 4), np.float32), "l2", 0, variant=variant)[1].size == 0
    # R and L beyond the cluster size change nothing (and allocate nothing huge)
    y = rng.normal(size=(40, 4)).astype(np.float32)
    a = build_vamana(y, "l2", 0, R=39, L=40, variant=variant)
    b = build_vamana(y, "l2", 0, R=10**9, L=10**9, variant=variant)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    x = rng.normal(size=(500, 8)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    ip, ix = build_vamana(x, "ip", 0, R=8, L=16, variant=variant)
    assert np.diff(ip).max() <= 8 and np.diff(ip).min() >= 1
    # duplicate points (distance 0) occlude each other: the lists stay distinct and bounded
    z = np.repeat(rng.normal(size=(30, 4)).astype(np.float32), 3, axis=0)
    ip, ix = build_vamana(z, "l2", 0, R=6, L=12, variant=variant)
    assert np.diff(ip).max() <= 6
    assert all(len(set(ix[ip[i]:ip[i + 1]].tolist())) == ip[i + 1] - ip[i] for i in range(len(z)))


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


def test_the_builder_is_in_the_cache_key(bigann, tmp_path):
    """The two Vamana kinds never share a cache entry, and an index whose parameters do not name
    the library builder (as the two-pass builder's "vamana" indexes did not) is not read as one."""
    lib, paper = IndexParams(graph="vamana"), IndexParams(graph="vamana-paper")
    assert lib.key_dict()["builder"] == "diskann" and paper.key_dict()["builder"] == "paper"
    assert index_key(bigann, lib) != index_key(bigann, paper)
    unnamed = {k: v for k, v in lib.key_dict().items() if k != "builder"}
    assert lib.key_dict() != unnamed
    # a key dict gives its parameters back; a builder of another kind is refused
    for params in (lib, paper, IndexParams(graph="vamana", R=8, num_clusters=3)):
        assert IndexParams(**params.key_dict()) == params
    with pytest.raises(UserError, match="builder='paper' does not belong to graph='vamana'"):
        IndexParams(graph="vamana", builder="paper")
    # a file whose meta lacks the builder is stale for the library kind
    p = IndexParams(num_clusters=2, graph="vamana", R=8, L=16)
    idx = build_index(bigann.subset(500, None), p, progress=False)
    path = idx.save(tmp_path / "i.npz")
    assert ClusteredIndex.load(path, expect={"params": p.key_dict()}).params == p
    with pytest.raises(ValueError, match="stale index, meta 'params'"):
        ClusteredIndex.load(path, expect={"params": {k: v for k, v in p.key_dict().items() if k != "builder"}})


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


@pytest.mark.parametrize("graph", ["vamana", "vamana-paper"])
@pytest.mark.parametrize("kw,what", [
    ({"R": 0}, "R=0"), ({"L": 0}, "L=0"), ({"alpha": 0.9}, "alpha=0.9"),
    ({"alpha": float("nan")}, "alpha=nan"), ({"graph": "nsg"}, "graph='nsg'"),
])
def test_bad_parameters_one_clear_error(kw, what, graph):
    with pytest.raises(UserError, match=what.replace("(", r"\(")):
        IndexParams(**{"graph": graph, **kw}).validate(100)


def test_the_command_line_offers_every_graph_kind():
    assert CLI_GRAPH_KINDS == GRAPH_KINDS


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
    assert main(["graphs", "build", *common, "--graph", "vamana-paper", "--R", "24", "--L", "48"]) == 0
    assert "graph: vamana-paper R=24 L=48 alpha=1.2" in capsys.readouterr().out
    # bad values: exit 2 with one line naming the parameter, nothing written
    for graph, bad, word in (("vamana", ["--R", "0"], "R=0"), ("vamana", ["--alpha", "0.5"], "alpha=0.5"),
                             ("vamana", ["--L", "-3"], "L=-3"), ("vamana", ["--entry", "hnsw"], "entry 'hnsw'"),
                             ("vamana-paper", ["--entry", "hnsw"], "entry 'hnsw'")):
        bad_out = tmp_path / "bad.npz"
        assert main(["graphs", "trace", *common, "--graph", graph, "--num-probes", "2", *bad,
                     "--out", str(bad_out)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and word in err[0], err
        assert not bad_out.exists()
