"""IVF-PQ and exact scan on the k-means lists (graphs.ivfpq), their traces and CLI."""

from pathlib import Path

import numpy as np
import pytest

from cosmos.cli import main
from cosmos_common import UserError
from graphs.dataset import real_dataset
from graphs.groundtruth import exact_knn, recall_at_k
from graphs.index import IndexParams, build_index
from graphs.ivfpq import (IVFPQParams, build_ivfpq, coarse_lists, get_ivfpq, scan_search, scan_trace,
                          PQ_KSUB)
from graphs.kmeans import assign, cluster_csr, kmeans
from graphs.trace import LogicalTrace, load_trace, save_trace

#: documented defaults (docs/graphs.md): 64 lists, pq_m 16, 8 probes, re-rank 100
DEFAULTS = dict(num_clusters=64, num_probes=8, k=10, pq_m=16, rerank=100)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("ivfpq-cache")


@pytest.fixture(scope="module")
def sift_small():
    return real_dataset("siftsmall")


@pytest.mark.parametrize("name", ["siftsmall", "bigann10k"])
def test_recall_at_defaults_with_rerank(name, cache):
    ds = real_dataset(name)
    tr = scan_trace(ds, "ivfpq", cache_dir=cache, **DEFAULTS)
    assert tr.meta["recall"] >= 0.90
    # without re-ranking the PQ approximation loses recall: re-ranking must matter
    tr0 = scan_trace(ds, "ivfpq", cache_dir=cache, **{**DEFAULTS, "rerank": 0})
    assert tr0.meta["recall"] < tr.meta["recall"]
    # the results equal the exact scan of the same lists when the re-rank keeps the true top-k
    ex = scan_trace(ds, "exact", cache_dir=cache, **{**DEFAULTS, "rerank": 0})
    assert tr.meta["recall"] <= ex.meta["recall"] + 1e-12


def test_exact_scan_of_all_lists_is_exact(sift_small):
    ds = sift_small.subset(3000, 30)
    gt, _ = exact_knn(ds.base, ds.queries, 10, "l2")
    c, p, nodes = coarse_lists(ds.base, 16, 0, 5, "l2")
    out = scan_search("exact", ds.base, ds.queries, c, p, nodes, "l2", 16, 10)
    assert recall_at_k(out.result_ids, gt, 10).mean() == 1.0


def test_coarse_lists_are_the_graph_index_clusters(sift_small):
    ds = sift_small.subset(2000, 5)
    idx = build_index(ds, IndexParams(num_clusters=8, M=8, ef_construction=16, seed=3, kmeans_iters=5),
                      threads=1, progress=False)
    c, p, nodes = coarse_lists(ds.base, 8, 3, 5, ds.metric)
    assert np.array_equal(c, idx.centroids) and np.array_equal(p, idx.cluster_ptr)
    assert np.array_equal(nodes, idx.cluster_nodes)


def test_pq_codes_reproduce_bit_for_bit_from_the_seed(sift_small):
    ds = sift_small.subset(2000, 5)
    a = build_ivfpq(ds, IVFPQParams(num_clusters=8, pq_m=8, seed=1, kmeans_iters=5, pq_iters=5))
    b = build_ivfpq(ds, IVFPQParams(num_clusters=8, pq_m=8, seed=1, kmeans_iters=5, pq_iters=5))
    c = build_ivfpq(ds, IVFPQParams(num_clusters=8, pq_m=8, seed=2, kmeans_iters=5, pq_iters=5))
    assert a.codes.dtype == np.uint8 and a.codes.shape == (2000, 8)
    assert a.codebooks.shape == (8, PQ_KSUB, 16)
    assert np.array_equal(a.codes, b.codes) and a.codes.tobytes() == b.codes.tobytes()
    assert a.codebooks.tobytes() == b.codebooks.tobytes()
    assert not np.array_equal(a.codes, c.codes)
    # every code is the nearest sub-centroid of its residual's sub-vector
    lab = np.repeat(np.arange(8), np.diff(a.cluster_ptr))
    res = ds.base[a.cluster_nodes].astype(np.float32) - a.centroids[lab]
    for j in (0, 5):
        sub = res[:, j * 16:(j + 1) * 16]
        d = ((sub[:, None, :] - a.codebooks[j][None]) ** 2).sum(-1)
        assert np.mean(np.argmin(d, axis=1) == a.codes[:, j]) > 0.999  # float rounding ties only


def test_adc_distances_equal_decoded_vectors(sift_small):
    """The ADC distance of a code = the squared l2 distance to its decoded vector."""
    ds = sift_small.subset(2000, 4)
    idx = build_ivfpq(ds, IVFPQParams(num_clusters=4, pq_m=8, seed=0, kmeans_iters=3, pq_iters=3))
    out_pos = np.empty((4, 2000), np.int64)
    out_d = np.empty((4, 2000), np.float32)
    cnt = np.empty(4, np.int64)
    from graphs.ivfpq import _pq_scan
    q = ds.queries.astype(np.float32)
    probes = np.tile(np.arange(4), (4, 1))
    _pq_scan(q, probes, idx.centroids, idx.cluster_ptr, idx.codes, idx.codebooks, 0, out_pos, out_d, cnt)
    assert np.all(cnt == 2000)
    lab = np.repeat(np.arange(4), np.diff(idx.cluster_ptr))
    dec = idx.centroids[lab] + np.concatenate([idx.codebooks[j][idx.codes[:, j]] for j in range(8)], axis=1)
    for qi in range(4):
        want = ((dec[out_pos[qi]] - q[qi]) ** 2).sum(1)
        np.testing.assert_allclose(out_d[qi], want, rtol=1e-4)
        assert np.all(np.diff(out_d[qi]) >= 0)


def test_index_cache_roundtrip_and_corruption(tmp_path, sift_small):
    ds = sift_small.subset(1000, 5)
    p = IVFPQParams(num_clusters=4, pq_m=4, kmeans_iters=2, pq_iters=2)
    a, path = get_ivfpq(ds, p, tmp_path)
    b, path2 = get_ivfpq(ds, p, tmp_path)
    assert path == path2 and np.array_equal(a.codes, b.codes)
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.warns(UserWarning):
        c, _ = get_ivfpq(ds, p, tmp_path)
    assert np.array_equal(a.codes, c.codes)


def test_bad_parameters_one_line(sift_small):
    with pytest.raises(UserError, match="pq_m=7 must be >= 1 and divide the dimension 128"):
        IVFPQParams(pq_m=7).validate(10000, 128)
    with pytest.raises(UserError, match=r"num_probes=65 must be in 1..num_clusters=64"):
        scan_trace(sift_small, "ivfpq", num_probes=65)
    with pytest.raises(UserError, match="rerank=5 must be 0"):
        scan_trace(sift_small, "ivfpq", rerank=5)
    with pytest.raises(UserError, match="at least 256 base vectors"):
        IVFPQParams(num_clusters=2, pq_m=4).validate(100, 128)


# ------------------------------------------------------------------------------------ traces
@pytest.fixture(scope="module")
def pq_trace(cache, sift_small):
    return scan_trace(sift_small.subset(None, 50), "ivfpq", cache_dir=cache, **DEFAULTS)


def test_trace_bytes_equal_probed_codes_times_code_size_plus_rerank(pq_trace, sift_small):
    tr = pq_trace
    sizes = np.diff(tr.cluster_ptr)
    pq = tr.per_query()
    m, vb = tr.meta["code_bytes"], tr.meta["vector_bytes"]
    assert m == 16 and vb == 128
    for qi in range(tr.num_queries):
        lists = tr.search_cluster[tr.query_ptr[qi]:tr.query_ptr[qi + 1]]
        assert len(set(lists.tolist())) == 8
        rr = tr.rerank_ptr[qi + 1] - tr.rerank_ptr[qi]
        assert rr == 100
        assert pq["bytes"][qi] == int(sizes[lists].sum()) * m + rr * vb
    # the re-ranked vectors hold the returned top-k
    for qi in range(tr.num_queries):
        rr = set(tr.rerank_node[tr.rerank_ptr[qi]:tr.rerank_ptr[qi + 1]].tolist())
        assert set(tr.result_ids[qi].tolist()) <= rr
    assert tr.summary()["bytes"]["mean"] == pytest.approx(pq["bytes"].mean())


def test_exact_trace_bytes_are_full_vectors(cache, sift_small):
    tr = scan_trace(sift_small.subset(None, 20), "exact", num_clusters=64, num_probes=4, cache_dir=cache)
    sizes = np.diff(tr.cluster_ptr)
    pq = tr.per_query()
    assert tr.meta["code_bytes"] == 128 and len(tr.rerank_node) == 0
    for qi in range(tr.num_queries):
        lists = tr.search_cluster[tr.query_ptr[qi]:tr.query_ptr[qi + 1]]
        assert pq["bytes"][qi] == int(sizes[lists].sum()) * 128


def test_scan_trace_save_load_checksum(tmp_path, pq_trace):
    p = save_trace(tmp_path / "t.npz", pq_trace)
    t2 = load_trace(p)
    assert t2.index_kind == "ivfpq" and t2.is_scan
    for k in ("scan_first", "scan_count", "rerank_ptr", "rerank_node", "result_ids", "search_cluster"):
        assert np.array_equal(getattr(pq_trace, k), getattr(t2, k))
    with np.load(p) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["scan_count"] = arrays["scan_count"].copy()
    arrays["scan_count"][0] -= 1
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ValueError, match=r"bad\.npz: checksum of 'scan_count'"):
        load_trace(tmp_path / "bad.npz")


def test_scan_trace_validation(pq_trace):
    kw = {k: getattr(pq_trace, k) for k in ("cluster_ptr", "cluster_nodes", "centroids", "cluster_adjacency",
                                            "query_ptr", "search_cluster", "search_entry", "search_hop_ptr",
                                            "hop_node", "hop_degree", "hop_read_ptr", "read_node",
                                            "hop_cand_inserts", "result_ids", "scan_first", "scan_count",
                                            "rerank_ptr", "rerank_node")}
    bad = kw["scan_count"].copy()
    bad[0] += 1
    with pytest.raises(ValueError, match="leaves its list"):
        LogicalTrace(meta=dict(pq_trace.meta), **{**kw, "scan_count": bad})
    with pytest.raises(ValueError, match="code_bytes"):
        LogicalTrace(meta={**pq_trace.meta, "code_bytes": 0}, **kw)
    with pytest.raises(ValueError, match="scan_first given in a graph trace"):
        LogicalTrace(meta={**pq_trace.meta, "index_kind": "graph"}, **kw)


def test_old_graph_trace_without_scan_keys_still_loads(tmp_path):
    """A graph trace file written before scan elements existed (no scan keys, no index_kind)."""
    import graphs

    tr = graphs.make_workload("sift", n=1500, num_queries=10, num_clusters=4, num_probes=2, cand_list_len=16,
                              k=5, M=8, ef_construction=16, cache_dir=tmp_path / "c", progress=False)
    p = save_trace(tmp_path / "g.npz", tr)
    with np.load(p) as z:
        files = set(z.files)
        meta = str(z["meta"])
    assert not files & {"scan_first", "scan_count", "rerank_ptr", "rerank_node"}
    assert "index_kind" not in meta
    t2 = load_trace(p)
    assert t2.index_kind == "graph" and not t2.is_scan
    assert np.array_equal(t2.per_query()["bytes"], tr.per_query()["bytes"])


# ------------------------------------------------------------------------------------ CLI
def test_cli_ivfpq_and_exact_trace(tmp_path, capsys, cache):
    out = tmp_path / "t.npz"
    rc = main(["graphs", "trace", "--dataset", "siftsmall", "--num-queries", "20", "--index", "ivfpq",
               "--pq-m", "16", "--num-probes", "16", "--rerank", "100", "--out", str(out),
               "--cache-dir", str(cache)])
    text = capsys.readouterr().out
    assert rc == 0 and "recall@10:" in text and "code_bytes=16" in text
    tr = load_trace(out)
    assert tr.index_kind == "ivfpq" and tr.meta["rerank"] == 100 and tr.meta["num_probes"] == 16
    rc = main(["graphs", "trace", "--dataset", "siftsmall", "--num-queries", "20", "--index", "exact",
               "--num-probes", "64", "--out", str(tmp_path / "e.npz"), "--cache-dir", str(cache)])
    assert rc == 0 and load_trace(tmp_path / "e.npz").meta["recall"] == 1.0


@pytest.mark.parametrize("args,msg", [
    (["--index", "ivfpq", "--pq-m", "7"], "--pq-m=7 must divide the dimension 128"),
    (["--index", "ivfpq", "--num-probes", "65"], "--num-probes=65 must be in 1..--num-clusters=64"),
    (["--index", "ivfpq", "--rerank", "5"], "--rerank=5 must be 0"),
    (["--index", "exact", "--rerank", "100"], "--rerank applies to --index ivfpq only"),
])
def test_cli_bad_input_one_line(tmp_path, capsys, args, msg, cache):
    rc = main(["graphs", "trace", "--dataset", "siftsmall", *args, "--out", str(tmp_path / "x.npz"),
               "--cache-dir", str(cache)])
    err = capsys.readouterr().err
    assert rc == 2 and msg in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "x.npz").exists()


def test_cosmos_refuses_a_scan_trace_in_one_line(tmp_path, capsys, pq_trace):
    p = save_trace(tmp_path / "s.npz", pq_trace)
    rc = main(["simulate", "--systems", "cosmos", str(p), "--no-progress", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and "an 'ivfpq' trace" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_inner_product_adc_converges_to_exact_with_rerank(tmp_path):
    """ip metric: the ADC table holds -<q_j, sub-centroid> plus the 1 - <q, centroid> bias; a
    deeper re-rank recovers the exact scan's results."""
    from graphs.workload import get_dataset

    ds = get_dataset("text2image", 3000, 20, 0, tmp_path)
    assert ds.metric == "ip"
    kw = dict(num_clusters=8, num_probes=3, k=10, pq_m=4, cache_dir=tmp_path)
    ex = scan_trace(ds, "exact", **kw)
    rec = [scan_trace(ds, "ivfpq", rerank=r, **kw).meta["recall"] for r in (0, 50, 400)]
    assert rec[0] <= rec[1] <= rec[2]
    assert rec[2] >= ex.meta["recall"] - 0.02 and rec[0] < ex.meta["recall"]
