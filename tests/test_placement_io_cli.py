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
    with pytest.raises(ValueError, match="not a readable .npz"):
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
    assert rc == 2 and "refusing to overwrite" in capsys.readouterr().err


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
