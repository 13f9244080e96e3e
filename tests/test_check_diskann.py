"""experiments/tools/check_diskann.py without diskannpy: the library's graph file, the SIGMOD 2024 sample
layout, and the refusals that come before any work."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.tools import check_diskann as C


def _graph_file(path, lists, start, frozen=0, size=None):
    body = b"".join(np.array([len(x), *x], dtype="<u4").tobytes() for x in lists)
    head = np.array([(size if size is not None else 24 + len(body), max(map(len, lists)), start, frozen)],
                    dtype=[("s", "<u8"), ("m", "<u4"), ("e", "<u4"), ("f", "<u8")]).tobytes()
    path.write_bytes(head + body)
    return path


def test_the_library_graph_file_reads_back(tmp_path):
    lists = [[1, 2], [], [0]]
    indptr, indices, start = C.read_diskann_graph(_graph_file(tmp_path / "ann", lists, 2), 3)
    assert indptr.tolist() == [0, 2, 2, 3] and indices.tolist() == [1, 2, 0] and start == 2
    assert indices.dtype == np.int32 and indptr.dtype == np.int64
    with pytest.raises(ValueError, match="not a static in-memory DiskANN graph"):
        C.read_diskann_graph(_graph_file(tmp_path / "bad", lists, 2, size=7), 3)
    with pytest.raises(ValueError, match="not a static in-memory DiskANN graph"):
        C.read_diskann_graph(_graph_file(tmp_path / "frozen", lists, 2, frozen=1), 3)
    with pytest.raises(ValueError, match="words after the last of 2 points"):
        C.read_diskann_graph(_graph_file(tmp_path / "more", lists, 2), 2)


def test_the_sigmod24_layout(tmp_path):
    rng = np.random.default_rng(0)
    base = rng.normal(size=(20, 100)).astype("<f4")
    queries = rng.normal(size=(3, 100)).astype("<f4")
    gt = rng.integers(0, 20, size=(3, 100)).astype("<u4")
    (tmp_path / "dummy-data.bin").write_bytes(np.uint32(20).tobytes() + np.hstack(
        [np.zeros((20, 2), "<f4"), base]).tobytes())
    (tmp_path / "dummy-unfiltered-queries.bin").write_bytes(np.uint32(3).tobytes() + np.hstack(
        [np.zeros((3, 4), "<f4"), queries]).tobytes())
    (tmp_path / "dummy-unfiltered-groundtruth.bin").write_bytes(np.uint32(3).tobytes() + gt.tobytes())
    ds = C.sigmod24(tmp_path)
    assert np.array_equal(ds.base, base) and np.array_equal(ds.queries, queries)
    assert np.array_equal(ds.groundtruth, gt.astype(np.int64)) and ds.metric == "l2"


@pytest.mark.parametrize("argv,word", [
    (["--datasets", "nosuch"], "data set 'nosuch' unknown"),
    (["--library-threads", "0"], "--library-threads '0'"),
    (["--datasets", "sigmod24", "--sigmod24-dir", "/nonexistent"], "--sigmod24-dir /nonexistent"),
    (["--R", "0"], "R=0"),
])
def test_bad_options_one_line_before_any_work(argv, word, tmp_path, capsys):
    out = tmp_path / "out"
    assert C.main([*argv, "--out", str(out), "--venv", str(tmp_path / "venv")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and word in err[0], err
    assert not out.exists() and not (tmp_path / "venv").exists()


def test_the_graph_digest_is_of_int64_indptr_and_int32_indices():
    a = C.graph_sha256(np.array([0, 1]), np.array([0]))
    assert a == C.graph_sha256(np.array([0, 1], np.int32), np.array([0], np.int64))
    assert a != C.graph_sha256(np.array([0, 1]), np.array([1]))
