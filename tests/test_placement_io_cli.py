"""Reading cluster metadata and traces, writing placements, and ``cosmos place``."""

import json

import numpy as np
import pytest

import placement
from cosmos.cli import main
from placement.io import load_clusters, load_probes, save_placement


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    C, dim = 24, 4
    cen = rng.normal(size=(C, dim)).astype(np.float32)
    sizes = rng.integers(10, 30, C)
    adj = placement.cluster_adjacency(cen, 8)
    np.savez(tmp_path / "clusters.npz", sizes=sizes, centroids=cen, cluster_adjacency=adj)
    with open(tmp_path / "clusters.csv", "w") as fh:
        fh.write("cluster,size," + ",".join(f"c{i}" for i in range(dim)) + "\n")
        for c in reversed(range(C)):  # any row order
            fh.write(f"{c},{sizes[c]}," + ",".join(repr(float(v)) for v in cen[c]) + "\n")
    # a logical trace in the contract's layout (only the keys placement reads, plus clusters)
    Q, P = 40, 3
    q = rng.normal(size=(Q, dim))
    probes = np.argsort(((q[:, None] - cen[None]) ** 2).sum(-1), axis=1)[:, :P]
    S = Q * P
    hops = rng.integers(1, 4, S)
    hop_ptr = np.concatenate([[0], np.cumsum(hops)])
    reads = rng.integers(0, 5, hop_ptr[-1])
    cluster_ptr = np.concatenate([[0], np.cumsum(sizes)])
    np.savez(
        tmp_path / "trace.npz",
        meta=np.array(json.dumps({"num_clusters": C, "num_probes": P})),
        cluster_ptr=cluster_ptr, centroids=cen, cluster_adjacency=adj,
        query_ptr=np.arange(0, S + 1, P), search_cluster=probes.ravel().astype(np.int32),
        search_hop_ptr=hop_ptr, hop_read_ptr=np.concatenate([[0], np.cumsum(reads)]),
    )
    return tmp_path, sizes, cen, adj, probes, hops, hop_ptr, reads


def test_readers_agree(files):
    d, sizes, cen, adj, probes, hops, hop_ptr, reads = files
    a = load_clusters(d / "clusters.npz")
    b = load_clusters(d / "clusters.csv")
    t = load_clusters(d / "trace.npz")
    for m in (a, b, t):
        np.testing.assert_array_equal(m.sizes, sizes)
        np.testing.assert_allclose(m.centroids, cen, rtol=1e-6)
    np.testing.assert_array_equal(a.adjacency, adj)
    assert b.adjacency is None and t.unit == "vectors"
    p = load_probes(d / "trace.npz", "hops", num_clusters=len(sizes))
    np.testing.assert_array_equal(p.search_cluster, probes.ravel())
    np.testing.assert_array_equal(p.weights, hops)
    dist = load_probes(d / "trace.npz", "distances").weights
    per_hop = np.add.reduceat(reads, hop_ptr[:-1])
    np.testing.assert_array_equal(dist, 1 + per_hop)
    assert p.meta["num_probes"] == 3


@pytest.mark.parametrize(
    "text, msg",
    [
        ("", "empty file"),
        ("id,size\n0,1\n", r"line 1: header must start with 'cluster,size'"),
        ("cluster,size,c1\n0,1,0.5\n", r"line 1: centroid columns must be named c0..c0"),
        ("cluster,size\n0,1\n1,x\n", r"line 3: size 'x' is not an integer"),
        ("cluster,size\n0,-4\n", r"line 2: size -4 is negative"),
        ("cluster,size\n0,1,2\n", r"line 2: expected 2 fields, got 3"),
        ("cluster,size\n0,1\n0,2\n", r"cluster ids must be 0..1, each exactly once"),
        ("cluster,size,c0\n0,1,abc\n", r"line 2: centroid coordinates must be numbers"),
    ],
)
def test_csv_errors_name_the_line(tmp_path, text, msg):
    f = tmp_path / "bad.csv"
    f.write_text(text)
    with pytest.raises(ValueError, match=msg):
        load_clusters(f)


def test_npz_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        load_clusters(tmp_path / "missing.npz")
    (tmp_path / "junk.npz").write_text("not a zip")
    with pytest.raises(ValueError, match=r"not a .npz \(zip\) archive"):
        load_clusters(tmp_path / "junk.npz")
    np.savez(tmp_path / "x.npz", foo=np.zeros(3))
    with pytest.raises(ValueError, match=r"no 'sizes' .* or 'cluster_ptr'"):
        load_clusters(tmp_path / "x.npz")
    with pytest.raises(ValueError, match="not a logical trace: missing key"):
        load_probes(tmp_path / "x.npz")
    np.savez(tmp_path / "y.npz", sizes=np.array([1, -2]))
    with pytest.raises(ValueError, match=r"sizes\[1\] = -2 is negative"):
        load_clusters(tmp_path / "y.npz")
    np.savez(tmp_path / "z.npz", sizes=np.array([1, 2]), centroids=np.zeros((3, 2)))
    with pytest.raises(ValueError, match=r"'centroids' must have shape \(2, dims\)"):
        load_clusters(tmp_path / "z.npz")
    with pytest.raises(ValueError, match="unknown cluster file type '.txt'"):
        load_clusters(tmp_path / "a.txt")


def test_save_placement_never_overwrites(tmp_path):
    out = save_placement(tmp_path / "p.csv", [1, 0, 1], [5, 6, 7])
    assert out.read_text().splitlines() == ["cluster,device,size", "0,1,5", "1,0,6", "2,1,7"]
    with pytest.raises(FileExistsError):
        save_placement(tmp_path / "p.csv", [0, 0, 0])


def test_cli_place_with_trace(files, capsys):
    d, sizes, *_ = files
    out = d / "placement.csv"
    rc = main(["place", "--clusters", str(d / "clusters.npz"), "--devices", "4", "--policy", "adjacency",
               "--trace", str(d / "trace.npz"), "--work", "distances", "--batch", "8", "--out", str(out)])
    text = capsys.readouterr().out
    assert rc == 0
    assert "24 clusters" in text and "LIR (all queries)" in text and "LIR per batch of 8" in text
    dev = np.loadtxt(out, delimiter=",", skiprows=1, dtype=np.int64)[:, 1]
    expected = placement.place(sizes, 4, "adjacency", adjacency=np.load(d / "clusters.npz")["cluster_adjacency"])
    np.testing.assert_array_equal(dev, expected)
    # the printed per-device sizes are those of the placement
    rows = [line.split() for line in text.splitlines() if line.split() and line.split()[0] in "0123"]
    assert [int(r[2]) for r in rows] == np.bincount(dev, weights=sizes, minlength=4).astype(int).tolist()
    # the same command again refuses to overwrite the output
    rc = main(["place", "--clusters", str(d / "clusters.npz"), "--out", str(out)])
    assert rc == 2 and "already exists (pass --force to replace it)" in capsys.readouterr().err
    assert main(["place", "--clusters", str(d / "clusters.npz"), "--out", str(out),
                 "--force"]) == 0


def test_cli_errors_are_one_line(files, capsys):
    d, *_ = files
    rc = main(["place", "--clusters", str(d / "clusters.csv"), "--devices", "2", "--capacity", "10"])
    assert rc == 2
    err = capsys.readouterr().err
    assert err.startswith("cosmos place: error: cluster") and "larger than every device" in err
    rc = main(["place", "--clusters", str(d / "clusters.csv"), "--capacity", "1,2"])
    assert rc == 2 and "one per device (4)" in capsys.readouterr().err
    np.savez(d / "sizes_only.npz", sizes=np.array([1, 2, 3]))
    rc = main(["place", "--clusters", str(d / "sizes_only.npz")])
    assert rc == 2 and "needs cluster_adjacency or centroids" in capsys.readouterr().err
    rc = main(["place", "--clusters", str(d / "sizes_only.npz"), "--policy", "round_robin",
               "--trace", str(d / "trace.npz")])
    assert rc == 2 and "but there are only 3 clusters" in capsys.readouterr().err


# ---------------------------------------------------------------- input validation (audit fixes)


def test_non_utf8_csv_names_the_file_and_line(tmp_path, capsys):
    f = tmp_path / "bin.csv"
    f.write_bytes(b"cluster,size\n0,1\n1,\xff\xfe\n")
    with pytest.raises(ValueError, match=r"bin\.csv, line 3: byte 0xff is not UTF-8 text; expected a CSV"):
        load_clusters(f)
    rc = main(["place", "--clusters", str(f)])
    err = capsys.readouterr().err
    assert rc == 2 and "bin.csv, line 3" in err and "Traceback" not in err
    # a UTF-8 byte-order mark (spreadsheet export) is fine
    g = tmp_path / "bom.csv"
    g.write_bytes(b"\xef\xbb\xbfcluster,size\n0,1\n1,2\n")
    np.testing.assert_array_equal(load_clusters(g).sizes, [1, 2])


def test_trace_of_another_index_is_rejected_naming_both_files(files, capsys):
    d, sizes, cen, *_ = files
    C = len(sizes)  # the trace's index has C clusters; this clusters file has more
    np.savez(d / "more.npz", sizes=np.ones(C + 6, dtype=np.int64), centroids=np.zeros((C + 6, 4)))
    rc = main(["place", "--clusters", str(d / "more.npz"), "--policy", "round_robin",
               "--trace", str(d / "trace.npz")])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err
    assert f"trace.npz: the trace is of an index with {C} clusters (cluster_ptr), but " in err
    assert f"more.npz has {C + 6}" in err
    with pytest.raises(ValueError, match=rf"with {C} clusters \(cluster_ptr\), but {C + 6} were expected"):
        load_probes(d / "trace.npz", num_clusters=C + 6)
    # without cluster_ptr, the meta's num_clusters decides
    with np.load(d / "trace.npz") as z:
        arrays = {k: z[k] for k in z.files if k != "cluster_ptr"}
    np.savez(d / "probes_only.npz", **arrays)
    with pytest.raises(ValueError, match=rf"with {C} clusters \(meta num_clusters\)"):
        load_probes(d / "probes_only.npz", num_clusters=C + 1)
    assert load_probes(d / "probes_only.npz", num_clusters=C).query_ptr[-1] > 0


@pytest.mark.parametrize("name, write", [
    ("empty.csv", lambda p: p.write_text("cluster,size\n")),
    ("empty.npz", lambda p: np.savez(p, sizes=np.zeros(0, np.int64))),
])
def test_cluster_metadata_without_clusters_is_refused(tmp_path, capsys, name, write):
    """A header without rows once printed a table for 0 clusters (issue 55)."""
    path = tmp_path / name
    write(path)
    rc = main(["place", "--clusters", str(path), "--policy", "round_robin"])
    err = capsys.readouterr().err
    assert rc == 2 and f"{path}: no clusters" in err and "Traceback" not in err


def test_trace_of_another_index_with_as_many_clusters_is_rejected(files, capsys):
    """Same cluster count, other index (issue 55, bug 4): the sizes or centroids differ."""
    d, sizes, cen, adj, *_ = files
    with np.load(d / "trace.npz") as z:
        arrays = {k: z[k] for k in z.files}
    other = dict(arrays, cluster_ptr=np.concatenate([[0], np.cumsum(sizes[::-1])]))
    np.savez(d / "other_sizes.npz", **other)            # a trace as the clusters file
    rc = main(["place", "--clusters", str(d / "other_sizes.npz"), "--policy", "round_robin",
               "--trace", str(d / "trace.npz")])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err
    assert "vectors in the trace but" in err and "other_sizes.npz" in err
    np.savez(d / "other_cen.npz", sizes=sizes, centroids=cen + 1.0, cluster_adjacency=adj)
    rc = main(["place", "--clusters", str(d / "other_cen.npz"), "--policy", "round_robin",
               "--trace", str(d / "trace.npz")])
    err = capsys.readouterr().err
    assert rc == 2 and "cluster 0's centroid differs from" in err and "Traceback" not in err
    # the same index's clusters file is taken
    assert main(["place", "--clusters", str(d / "clusters.npz"), "--policy", "round_robin",
                 "--trace", str(d / "trace.npz")]) == 0


@pytest.mark.parametrize("extra, message", [
    (["--neighbors", "-1"], "--neighbors must be >= 1"),
    (["--neighbors", "0"], "--neighbors must be >= 1"),
    (["--batch", "0", "--trace", "TRACE"], "--batch must be >= 1"),
    (["--batch", "-2", "--trace", "TRACE"], "--batch must be >= 1"),
    (["--batch", "4"], "--batch needs --trace"),
    (["--devices", "0"], "--devices must be >= 1"),
    (["--seed", "-5"], "--seed must be >= 0, got -5"),
    (["--capacity", str(2**63)], f"--capacity: {2**63} is outside 0..2**63-1"),
])
def test_cli_rejects_bad_counts(files, capsys, extra, message):
    d, *_ = files
    extra = [str(d / "trace.npz") if a == "TRACE" else a for a in extra]
    rc = main(["place", "--clusters", str(d / "clusters.npz"), *extra])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and "Traceback" not in err


def test_sizes_whose_sum_overflows_int64_are_rejected(tmp_path, capsys):
    np.savez(tmp_path / "big.npz", sizes=np.full(3, 2**62, dtype=np.int64), centroids=np.eye(3))
    rc = main(["place", "--clusters", str(tmp_path / "big.npz")])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err and "-4611686018427387904" not in err
    assert f"big.npz: sizes add up to {3 * 2**62}, but their total must be below 2**62" in err
    (tmp_path / "big.csv").write_text(f"cluster,size\n0,{2**62 - 1}\n1,1\n")
    with pytest.raises(ValueError, match=r"big\.csv: sizes add up to 4611686018427387904"):
        load_clusters(tmp_path / "big.csv")
    (tmp_path / "huge.csv").write_text(f"cluster,size\n0,{2**64}\n")
    with pytest.raises(ValueError, match=r"huge\.csv, line 2: size 18446744073709551616 does not fit in int64"):
        load_clusters(tmp_path / "huge.csv")
    np.savez(tmp_path / "u64.npz", sizes=np.array([1, 2**63 + 5], dtype=np.uint64))
    with pytest.raises(ValueError, match=r"u64\.npz: sizes\[1\] = 9223372036854775813 does not fit in int64"):
        load_clusters(tmp_path / "u64.npz")
    # just below the limit: placed, with a positive capacity
    (tmp_path / "ok.csv").write_text(f"cluster,size\n0,{2**62 - 2}\n1,1\n")
    assert main(["place", "--clusters", str(tmp_path / "ok.csv"), "--policy", "round_robin",
                 "--devices", "2"]) == 0
    assert str(2**62 - 2) in capsys.readouterr().out
