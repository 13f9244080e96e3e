"""LogicalTrace save/load/statistics, clusters.npz, and the `cosmos graphs` command line."""

import numpy as np
import pytest

import graphs
from cosmos.cli import main
from graphs.io import write_vectors
from graphs.trace import LogicalTrace, load_clusters, load_trace, save_trace

from pathlib import Path

DATA = Path(__file__).parent / "data" / "graphs"
KW = dict(n=2000, num_queries=40, num_clusters=8, num_probes=3, cand_list_len=24, k=10, M=8, ef_construction=32,
          progress=False)


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    return graphs.make_workload("sift", cache_dir=tmp_path_factory.mktemp("c"), **KW)


def test_meta_has_contract_keys(trace):
    for key in ("dataset", "n", "dim", "dtype", "metric", "vector_bytes", "max_degree", "cand_list_len",
                "num_clusters", "num_probes", "k", "recall", "seed", "num_queries", "format_version"):
        assert key in trace.meta
    assert trace.meta["vector_bytes"] == 128 and trace.meta["dtype"] == "uint8"
    assert trace.cluster_nodes.dtype == np.int32 and trace.result_ids.dtype == np.int64
    assert trace.cluster_adjacency.shape == (8, 7)
    assert np.array_equal(np.sort(trace.cluster_nodes), np.arange(2000))


def test_save_load_roundtrip_and_overwrite(tmp_path, trace):
    p = save_trace(tmp_path / "t.npz", trace)
    t2 = load_trace(p)
    for key in ("query_ptr", "search_hop_ptr", "hop_node", "read_node", "result_ids", "query_recall"):
        assert np.array_equal(getattr(trace, key), getattr(t2, key))
    assert t2.meta["recall"] == trace.meta["recall"]
    with pytest.raises(FileExistsError):
        save_trace(p, trace)
    assert not [f for f in tmp_path.iterdir() if f.name.endswith(".tmp")]


def test_corrupted_trace_is_rejected(tmp_path, trace):
    p = save_trace(tmp_path / "t.npz", trace)
    with np.load(p) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["read_node"] = arrays["read_node"].copy()
    arrays["read_node"][0] += 1
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ValueError, match=r"bad\.npz: checksum of 'read_node'"):
        load_trace(tmp_path / "bad.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match=r"junk\.npz: not a trace file: not a \.npz \(zip\) "
                                         r"archive"):
        load_trace(tmp_path / "junk.npz")


def test_statistics_match_direct_counts(trace):
    pq = trace.per_query(node_bytes=300, vector_bytes=128)
    for qi in (0, 7, 39):
        s0, s1 = trace.query_ptr[qi], trace.query_ptr[qi + 1]
        h0, h1 = trace.search_hop_ptr[s0], trace.search_hop_ptr[s1]
        hops = h1 - h0
        reads = trace.hop_read_ptr[h1] - trace.hop_read_ptr[h0]
        assert pq["hops"][qi] == hops
        assert pq["distances"][qi] == (s1 - s0) + reads
        assert pq["cand_inserts"][qi] == trace.hop_cand_inserts[h0:h1].sum()
        assert pq["bytes"][qi] == hops * 300 + ((s1 - s0) + reads) * 128
    pc = trace.per_cluster()
    assert pc["searches"].sum() == 40 * 3 and pc["hops"].sum() == len(trace.hop_node)
    assert pc["reads"].sum() == len(trace.read_node)
    assert trace.node_bytes_default() == 4 + 4 * 16
    s = trace.summary()
    assert s["hops"]["mean"] == pytest.approx(pq["hops"].mean())
    assert np.isclose(pq["recall"].mean(), trace.meta["recall"])


def test_inconsistent_trace_rejected(trace):
    fields = {k: getattr(trace, k) for k in LogicalTrace.__dataclass_fields__ if k != "meta"}
    fields["hop_degree"] = fields["hop_degree"][:-1]
    with pytest.raises(ValueError, match="hop_degree"):
        LogicalTrace(meta=trace.meta, **fields)


def test_bad_parameters_fail_before_building(tmp_path):
    with pytest.raises(ValueError, match="num_probes=9 must be in 1..num_clusters=8"):
        graphs.make_workload("sift", cache_dir=tmp_path, **{**KW, "num_probes": 9})
    with pytest.raises(ValueError, match="cand_list_len=24 is below k=30"):
        graphs.make_workload("sift", cache_dir=tmp_path, **{**KW, "k": 30})
    from cosmos_common import UserError

    # the Python API refuses what the command line refuses, before any build
    with pytest.raises(UserError, match="M=100000 must be in 2..10,000"):
        graphs.make_workload("sift", cache_dir=tmp_path, **{**KW, "M": 100_000})
    with pytest.raises(UserError, match="no queries"):
        graphs.make_workload("sift", cache_dir=tmp_path, **{**KW, "num_queries": 0})
    with pytest.raises(UserError, match="k=9 must be <= 8, the number of base vectors"):
        graphs.make_workload("sift", cache_dir=tmp_path,
                             **{**KW, "n": 8, "num_clusters": 2, "num_probes": 1, "k": 9})
    assert not (tmp_path / "indexes").exists()


def test_cli_build_and_trace(tmp_path, capsys):
    cache = tmp_path / "cache"
    common = ["--dataset", "bigann10k", "--num-clusters", "8", "--M", "8", "--ef-construction", "32",
              "--cache-dir", str(cache)]
    assert main(["graphs", "build", *common, "--clusters-out", str(tmp_path / "clusters.npz")]) == 0
    cl = load_clusters(tmp_path / "clusters.npz")
    assert cl["sizes"].sum() == 10000 and cl["centroids"].shape == (8, 128) and cl["cluster_adjacency"].shape == (8, 7)
    out = tmp_path / "t.npz"
    assert main(["graphs", "trace", *common, "--num-probes", "4", "--cand-list-len", "32", "-k", "10",
                 "--out", str(out), "--per-query", "--no-progress"]) == 0
    captured = capsys.readouterr()
    text = captured.out
    assert "trace queries" not in captured.err          # --no-progress, as on the other commands
    line = [x for x in text.splitlines() if x.startswith("recall@10: ")]
    assert line and float(line[0].split()[1]) > 0.8
    tr = load_trace(out)
    assert tr.num_queries == 100 and tr.meta["num_probes"] == 4
    assert float(line[0].split()[1]) == pytest.approx(tr.meta["recall"], abs=1e-4)
    # existing output is never overwritten without --force
    assert main(["graphs", "trace", *common, "--out", str(out)]) == 2
    assert "already exists" in capsys.readouterr().err


def test_cli_user_files_and_errors(tmp_path, capsys):
    base = DATA / "siftsmall_base.u8bin"
    q = tmp_path / "q.fvecs"
    write_vectors(q, np.zeros((3, 100), np.float32))
    assert main(["graphs", "build", "--base", str(base), "--queries", str(q), "--cache-dir", str(tmp_path)]) == 2
    assert "queries have dimension 100" in capsys.readouterr().err
    bad = tmp_path / "bad.u8bin"
    bad.write_bytes(base.read_bytes()[:1000])
    assert main(["graphs", "build", "--base", str(bad), "--cache-dir", str(tmp_path)]) == 2
    assert "bad.u8bin: header says n=10000" in capsys.readouterr().err
    assert main(["graphs", "trace", "--base", str(base), "--queries", str(DATA / "siftsmall_query.u8bin"),
                 "--num-clusters", "4", "--num-probes", "5", "--out", str(tmp_path / "x.npz"),
                 "--cache-dir", str(tmp_path)]) == 2
    assert "--num-probes=5 must be in 1..--num-clusters=4" in capsys.readouterr().err


def test_trace_cache_corruption_is_detected(tmp_path):
    a = graphs.make_workload("sift", cache_dir=tmp_path, **KW)
    (path,) = list((tmp_path / "traces").glob("*.npz"))
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 3] ^= 0x55
    path.write_bytes(bytes(raw))
    with pytest.warns(UserWarning, match="checksum mismatch"):
        b = graphs.make_workload("sift", cache_dir=tmp_path, **KW)
    assert np.array_equal(a.read_node, b.read_node) and np.array_equal(a.result_ids, b.result_ids)


def test_synthetic_vectors_cached_and_verified(tmp_path):
    from graphs.synthetic import generate
    from graphs.workload import get_dataset

    a = get_dataset("msspacev", 3000, 20, seed=4, cache_dir=tmp_path)
    assert np.array_equal(a.base, generate("msspacev", 3000, 4))
    (base_file,) = (tmp_path / "datasets").glob("*-base.i8bin")
    b = get_dataset("msspacev", 3000, 20, seed=4, cache_dir=tmp_path)
    assert isinstance(b.base, np.memmap) and np.array_equal(a.groundtruth, b.groundtruth)
    raw = bytearray(base_file.read_bytes())
    raw[-1] ^= 0x01
    base_file.write_bytes(bytes(raw))
    with pytest.warns(UserWarning, match="checksum mismatch"):
        c = get_dataset("msspacev", 3000, 20, seed=4, cache_dir=tmp_path)
    assert np.array_equal(a.base, c.base)


# ---------------------------------------------------------------- input validation (audit fixes)


def _float_files(tmp_path, gt_k=3):
    from graphs.groundtruth import exact_knn
    from graphs.io import write_groundtruth

    rng = np.random.default_rng(3)
    base = rng.normal(size=(1500, 8)).astype(np.float32)
    q = rng.normal(size=(20, 8)).astype(np.float32)
    write_vectors(tmp_path / "base.fbin", base)
    write_vectors(tmp_path / "q.fbin", q)
    gt = exact_knn(base, q, gt_k, "l2")[0]
    write_groundtruth(tmp_path / f"gt_k{gt_k}.ivecs", gt)
    return base, q, gt


SMALL = dict(num_clusters=4, num_probes=2, cand_list_len=24, k=10, M=8, ef_construction=32, progress=False)


def test_groundtruth_narrower_than_k_is_an_error_before_building(tmp_path, capsys):
    base, q, gt = _float_files(tmp_path)
    ds = graphs.Dataset("f", base, q, gt)
    with pytest.raises(ValueError, match=r"dataset f: the ground truth has 3 neighbors per query, "
                                         r"but k=10 needs at least 10"):
        graphs.make_workload(ds, cache_dir=tmp_path / "c", **SMALL)
    assert not (tmp_path / "c" / "indexes").exists()
    cache = tmp_path / "c2"
    rc = main(["graphs", "trace", "--base", str(tmp_path / "base.fbin"), "--queries", str(tmp_path / "q.fbin"),
               "--groundtruth", str(tmp_path / "gt_k3.ivecs"), "--num-clusters", "4", "--num-probes", "2",
               "--out", str(tmp_path / "t.npz"), "--cache-dir", str(cache)])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err
    assert "gt_k3.ivecs: the ground truth has 3 neighbors per query, but k=10 needs at least 10" in err
    assert not (tmp_path / "t.npz").exists() and not (cache / "indexes").exists()
    # -k 3 fits that ground truth
    assert main(["graphs", "trace", "--base", str(tmp_path / "base.fbin"), "--queries", str(tmp_path / "q.fbin"),
                 "--groundtruth", str(tmp_path / "gt_k3.ivecs"), "--num-clusters", "4", "--num-probes", "2",
                 "-k", "3", "--M", "8", "--out", str(tmp_path / "t.npz"), "--cache-dir", str(cache)]) == 0
    assert "recall@3: n/a" not in capsys.readouterr().out
    assert load_trace(tmp_path / "t.npz").meta["recall"] is not None


@pytest.mark.parametrize("extra, message", [
    (["--workers", "-3"], "--workers=-3 must be >= 1"),
    (["--workers", "0"], "--workers=0 must be >= 1"),
    (["--node-bytes", "-8"], "--node-bytes=-8 must be >= 1"),
    (["--node-bytes", "0"], "--node-bytes=0 must be >= 1"),
    (["--seed", "-1"], "--seed=-1 must be >= 0"),
    (["--queries", "QNAN"], "qnan.fbin: row 0 holds nan at column 0"),
])
def test_cli_bad_options_and_non_finite_queries_are_one_line(tmp_path, capsys, extra, message):
    _float_files(tmp_path)
    write_vectors(tmp_path / "qnan.fbin", np.full((5, 8), np.nan, np.float32))
    extra = [str(tmp_path / "qnan.fbin") if a == "QNAN" else a for a in extra]
    argv = ["graphs", "trace", "--base", str(tmp_path / "base.fbin"), "--num-clusters", "4",
            "--num-probes", "2", "--out", str(tmp_path / "t.npz"), "--cache-dir", str(tmp_path / "c")]
    if "--queries" not in extra:
        argv += ["--queries", str(tmp_path / "q.fbin")]
    rc = main(argv + extra)
    err = capsys.readouterr().err
    assert rc == 2 and message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "t.npz").exists() and not (tmp_path / "c").exists()


def test_statistics_reject_bytes_below_one(trace):
    with pytest.raises(ValueError, match="node_bytes=-8 must be >= 1"):
        trace.per_query(node_bytes=-8)
    with pytest.raises(ValueError, match="vector_bytes=0 must be >= 1"):
        trace.summary(vector_bytes=0)


def test_make_workload_rejects_threads_below_one(tmp_path):
    with pytest.raises(ValueError, match=r"threads=-3 must be >= 1"):
        graphs.make_workload("sift", cache_dir=tmp_path, threads=-3, **KW)
    assert not (tmp_path / "indexes").exists()


def test_cached_trace_without_recall_gets_it_from_the_ground_truth(tmp_path, monkeypatch):
    """A trace cached before its ground truth was known (recall None) is not handed out as is:
    cached_trace skips it and make_workload fills in the recall without searching again."""
    import graphs.workload as gw
    from graphs.groundtruth import exact_knn, recall_at_k

    base, q, _ = _float_files(tmp_path)
    plain = graphs.Dataset("f", base, q)
    t0 = graphs.make_workload(plain, cache_dir=tmp_path, **SMALL)
    assert t0.meta["recall"] is None
    gt = exact_knn(base, q, 10, "l2")[0]
    with_gt = graphs.Dataset("f", base, q, gt)
    spar = {k: SMALL[k] for k in ("num_clusters", "num_probes", "cand_list_len", "k", "M", "ef_construction")}
    assert graphs.cached_trace(with_gt, cache_dir=tmp_path, **spar) is None

    def no_search(*a, **kw):
        raise AssertionError("searched again although the trace is cached")

    monkeypatch.setattr(gw, "iter_search_prefixes", no_search)
    t1 = graphs.make_workload(with_gt, cache_dir=tmp_path, **SMALL)
    expect = recall_at_k(t0.result_ids, gt, 10)
    assert t1.meta["recall"] == pytest.approx(float(expect.mean()))
    np.testing.assert_allclose(t1.query_recall, expect.astype(np.float32))
    t2 = graphs.cached_trace(with_gt, cache_dir=tmp_path, **spar)
    assert t2 is not None and t2.meta["recall"] == pytest.approx(t1.meta["recall"])


def test_user_files_get_their_ground_truth_and_the_ann_option_names(tmp_path, capsys):
    """`graphs trace --base --queries` without --groundtruth computes the exact top-k once (then
    reads it from the cache) and reports recall; faiss's and DiskANN's option names are the
    same parameters as ours."""
    _float_files(tmp_path)
    cache = tmp_path / "c"
    files = ["--base", str(tmp_path / "base.fbin"), "--queries", str(tmp_path / "q.fbin"),
             "--M", "8", "--cache-dir", str(cache), "--no-progress"]
    ours = ["--num-clusters", "4", "--num-probes", "2", "--cand-list-len", "24"]
    theirs = ["--nlist", "4", "--nprobe", "2", "--ef-search", "24"]
    assert main(["graphs", "trace", *files, *ours, "--out", str(tmp_path / "a.npz")]) == 0
    out = capsys.readouterr().out
    assert "ground truth: the exact top-" in out and "recall@10: n/a" not in out
    assert len(list((cache / "groundtruth").glob("*.npz"))) == 1
    assert main(["graphs", "trace", *files, *theirs, "--out", str(tmp_path / "b.npz")]) == 0
    assert main(["graphs", "trace", *files, "--nlist", "4", "--nprobe", "2", "--L-search", "24",
                 "--out", str(tmp_path / "c.npz")]) == 0
    a, b, c = (load_trace(tmp_path / f"{x}.npz") for x in "abc")
    assert a.meta["recall"] is not None and a.meta["recall"] == b.meta["recall"] == c.meta["recall"]
    np.testing.assert_array_equal(a.read_node, b.read_node)
    np.testing.assert_array_equal(a.read_node, c.read_node)
    assert main(["graphs", "trace", *files, *ours, "--no-groundtruth",
                 "--out", str(tmp_path / "d.npz")]) == 0
    assert "recall@10: n/a" in capsys.readouterr().out
    assert load_trace(tmp_path / "d.npz").meta["recall"] is None
