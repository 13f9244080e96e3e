"""graphs.io / graphs.dataset / graphs.groundtruth: formats, errors, exact ground truth."""

from pathlib import Path

import numpy as np
import pytest

from graphs.dataset import Dataset, load_dataset, real_dataset
from graphs.groundtruth import exact_knn, recall_at_k
from graphs.io import FormatError, read_groundtruth, read_vectors, write_groundtruth, write_vectors

DATA = Path(__file__).parent / "data" / "graphs"


@pytest.mark.parametrize(
    "fmt,dtype",
    [("fvecs", np.float32), ("ivecs", np.int32), ("bvecs", np.uint8), ("fbin", np.float32),
     ("u8bin", np.uint8), ("i8bin", np.int8), ("ibin", np.int32)],
)
def test_roundtrip_and_subset(tmp_path, fmt, dtype):
    rng = np.random.default_rng(1)
    x = rng.integers(-100 if dtype != np.uint8 else 0, 100, size=(37, 11)).astype(dtype)
    p = write_vectors(tmp_path / f"x.{fmt}", x)
    y = read_vectors(p)
    assert y.dtype == dtype and np.array_equal(y, x)
    assert np.array_equal(read_vectors(p, n=5), x[:5])
    assert read_vectors(p, n=0).shape == (0, 11)
    with pytest.raises(FileExistsError):
        write_vectors(p, x)
    with pytest.raises(FormatError, match="holds only 37"):
        read_vectors(p, n=38)


def test_subset_is_memory_mapped():
    x = read_vectors(DATA / "bigann10k_base.u8bin", n=100)
    assert isinstance(x, np.memmap) or isinstance(x.base, np.memmap)
    assert x.shape == (100, 128)


def test_size_mismatch_errors_name_the_file(tmp_path):
    x = np.arange(40, dtype=np.float32).reshape(10, 4)
    p = write_vectors(tmp_path / "a.fbin", x)
    raw = p.read_bytes()
    (tmp_path / "trunc.fbin").write_bytes(raw[:-4])
    with pytest.raises(FormatError, match=r"trunc\.fbin.*n=10, d=4.*168 bytes.*164"):
        read_vectors(tmp_path / "trunc.fbin")
    q = write_vectors(tmp_path / "a.fvecs", x)
    (tmp_path / "trunc.fvecs").write_bytes(q.read_bytes()[:-3])
    with pytest.raises(FormatError, match=r"trunc\.fvecs.*not a multiple"):
        read_vectors(tmp_path / "trunc.fvecs")
    bad = bytearray(q.read_bytes())
    bad[20:24] = np.int32(5).tobytes()  # second record claims d=5
    (tmp_path / "bad.fvecs").write_bytes(bytes(bad))
    with pytest.raises(FormatError, match=r"bad\.fvecs: record 1 has dimension 5, expected 4"):
        read_vectors(tmp_path / "bad.fvecs")
    with pytest.raises(FormatError, match="unknown vector file extension"):
        read_vectors(tmp_path / "x.npy")


def test_groundtruth_formats(tmp_path):
    ids = np.arange(12).reshape(3, 4)
    d = np.linspace(0, 1, 12, dtype=np.float32).reshape(3, 4)
    p = write_groundtruth(tmp_path / "gt.bin", ids, d)
    i2, d2 = read_groundtruth(p)
    assert np.array_equal(i2, ids) and np.array_equal(d2, d)
    (tmp_path / "bad.bin").write_bytes(p.read_bytes()[:-1])
    with pytest.raises(FormatError, match=r"bad\.bin.*ground-truth header says n=3, k=4"):
        read_groundtruth(tmp_path / "bad.bin")
    p2 = write_groundtruth(tmp_path / "gt.ivecs", ids)
    assert np.array_equal(read_groundtruth(p2, k=2)[0], ids[:, :2])


def test_dimension_mismatch_names_the_field(tmp_path):
    b = write_vectors(tmp_path / "b.u8bin", np.zeros((5, 8), np.uint8))
    q = write_vectors(tmp_path / "q.u8bin", np.zeros((2, 7), np.uint8))
    with pytest.raises(ValueError, match=r"q\.u8bin: queries have dimension 7 but .*b\.u8bin has dimension 8"):
        load_dataset(b, q)
    with pytest.raises(ValueError, match="queries have dimension 7 but base vectors have dimension 8"):
        Dataset("x", np.zeros((5, 8), np.uint8), np.zeros((2, 7), np.uint8))


@pytest.mark.parametrize("name", ["siftsmall", "bigann10k"])
def test_exact_groundtruth_matches_published(name):
    """Our blocked brute force reproduces the shipped ground truth (ties aside: the k-th
    distance must agree exactly; ids agree on >= 99.5% of entries)."""
    ds = real_dataset(name)
    ids, dist = exact_knn(ds.base, ds.queries, 100, query_block=33, base_block=2048)
    assert (ids == ds.groundtruth).mean() >= 0.995
    ref = ((ds.base[ds.groundtruth].astype(np.float64) - ds.queries[:, None, :].astype(np.float64)) ** 2).sum(-1)
    assert np.array_equal(np.sort(ref, axis=1), dist)
    assert recall_at_k(ids, ds.groundtruth, 10).mean() == 1.0


def test_siftsmall_u8bin_is_lossless_copy():
    # SIFT values are integers 0..255: the uint8 copy keeps the published ground truth exact
    ds = real_dataset("siftsmall")
    assert ds.base.shape == (10000, 128) and ds.base.dtype == np.uint8
    assert ds.queries.shape == (100, 128)
    norms = np.linalg.norm(ds.base.astype(np.float64), axis=1)
    assert 480 < norms.mean() < 520  # SIFT vectors are scaled to ~512


def test_exact_knn_inner_product():
    rng = np.random.default_rng(0)
    b = rng.normal(size=(500, 16)).astype(np.float32)
    q = rng.normal(size=(20, 16)).astype(np.float32)
    ids, d = exact_knn(b, q, 7, "ip", query_block=6, base_block=64)
    ref = np.argsort(-(q.astype(np.float64) @ b.T.astype(np.float64)), axis=1)[:, :7]
    assert np.array_equal(ids, ref)


@pytest.mark.parametrize("metric", ["l2", "ip"])
def test_exact_knn_breaks_ties_by_the_smaller_id(metric):
    # 4 dimensions of values 0..3: most distances are shared by hundreds of base vectors, so
    # the top-k is decided by the tie rule at almost every position, across block boundaries
    rng = np.random.default_rng(5)
    b = rng.integers(0, 4, (3000, 4)).astype(np.uint8)
    q = rng.integers(0, 4, (200, 4)).astype(np.uint8)
    bf, qf = b.astype(np.float64), q.astype(np.float64)
    dist = ((qf[:, None, :] - bf[None]) ** 2).sum(-1) if metric == "l2" else -(qf @ bf.T)
    ref = np.lexsort((np.broadcast_to(np.arange(len(b)), dist.shape), dist), axis=-1)[:, :40]
    ids, d = exact_knn(b, q, 40, metric, query_block=17, base_block=300)
    assert np.array_equal(ids, ref)
    assert np.array_equal(d, np.take_along_axis(dist if metric == "l2" else -dist, ref, axis=1))


def test_exact_knn_rejects_non_finite_distances():
    b = np.ones((50, 3), dtype=np.float32)
    q = np.zeros((4, 3), dtype=np.float32)
    q[2, 1] = np.nan
    with pytest.raises(ValueError, match="query 2: fewer than 15 finite distances"):
        exact_knn(b, q, 5, margin=10)


def test_exact_knn_subset_cut_recomputes_gt():
    ds = real_dataset("bigann10k")
    sub = ds.subset(2000, 10)
    assert sub.groundtruth.max() < 2000
    ids, _ = exact_knn(sub.base, sub.queries, sub.groundtruth.shape[1])
    assert np.array_equal(ids, sub.groundtruth)


# ---------------------------------------------------------------- input validation (audit fixes)


def test_bin_header_with_zero_dimension_says_so(tmp_path):
    p = tmp_path / "d0.fbin"
    p.write_bytes(np.array([5, 0], dtype="<u4").tobytes())
    with pytest.raises(FormatError, match=r"d0\.fbin: header says n=5, d=0 .*dimension d must be >= 1"):
        read_vectors(p)


def test_non_finite_vectors_are_rejected_naming_file_array_and_row(tmp_path):
    from graphs.io import check_finite

    rng = np.random.default_rng(0)
    base = rng.normal(size=(50, 4)).astype(np.float32)
    q = rng.normal(size=(6, 4)).astype(np.float32)
    bad_q = q.copy()
    bad_q[4, 2] = np.nan
    with pytest.raises(ValueError, match=r"dataset x: queries: row 4 holds nan at column 2"):
        Dataset("x", base, bad_q)
    bad_b = base.copy()
    bad_b[37, 0] = np.inf
    with pytest.raises(ValueError, match=r"dataset x: base vectors: row 37 holds inf"):
        Dataset("x", bad_b, q)
    Dataset("x", base, q)  # finite: fine
    Dataset("u", np.full((3, 2), 255, np.uint8))  # integer vectors are never checked
    write_vectors(tmp_path / "b.fbin", base)
    write_vectors(tmp_path / "qnan.fbin", np.full((3, 4), np.nan, np.float32))
    with pytest.raises(ValueError, match=r"qnan\.fbin: row 0 holds nan"):
        load_dataset(tmp_path / "b.fbin", tmp_path / "qnan.fbin")
    write_vectors(tmp_path / "binf.fvecs", bad_b)
    with pytest.raises(ValueError, match=r"binf\.fvecs: row 37 holds inf"):
        load_dataset(tmp_path / "binf.fvecs")
    # blocks: the first bad row of a later block, with its offset in the file
    with pytest.raises(ValueError, match=r"w: row 137 holds -inf at column 1"):
        x = np.zeros((200, 3), np.float32)
        x[137, 1] = -np.inf
        x[190, 0] = np.nan
        check_finite(x[100:], "w", row_offset=100, chunk_rows=16)


def test_groundtruth_shape_reads_only_headers(tmp_path):
    from graphs.io import groundtruth_shape

    ids = np.arange(12).reshape(4, 3)
    write_groundtruth(tmp_path / "g.ivecs", ids)
    write_groundtruth(tmp_path / "g.bin", ids, np.zeros((4, 3), np.float32))
    assert groundtruth_shape(tmp_path / "g.ivecs") == (4, 3)
    assert groundtruth_shape(tmp_path / "g.bin") == (4, 3)
    ids0, d0 = read_groundtruth(tmp_path / "g.bin", n=0)
    assert ids0.shape == (0, 3) and d0.shape == (0, 3)


def test_npz_members_stored_uncompressed_are_mapped_read_only(tmp_path):
    """npz_array(mmap=True): the bytes of an uncompressed member mapped, not read (equal
    arrays, read-only, any dtype and order); a member that cannot be mapped (compressed,
    empty) or a damaged one is read as without mmap, with the same errors."""
    import zipfile

    from cosmos_common import UserError
    from cosmos_common.npz import npz_array

    arrays = {"i32": np.arange(7, dtype=np.int32), "f64": np.asfortranarray(np.ones((3, 5))),
              "u8": np.arange(256, dtype=np.uint8), "empty": np.zeros(0, np.int64),
              "meta": np.array('{"k": 1}')}
    plain, packed = tmp_path / "plain.npz", tmp_path / "packed.npz"
    np.savez(plain, **arrays)
    np.savez_compressed(packed, **arrays)
    for path, mapped in ((plain, True), (packed, False)):
        with np.load(path) as z:
            for key, want in arrays.items():
                got = npz_array(z, key, path, mmap=True)
                assert type(got) is np.ndarray and got.dtype == want.dtype
                assert np.array_equal(got, want) and got.shape == want.shape
                assert got.flags.writeable == (not mapped or want.size == 0), key
    with zipfile.ZipFile(plain) as zf:                  # damage the .npy header of "u8"
        info = zf.getinfo("u8.npy")
    raw = bytearray(plain.read_bytes())
    name_len, extra_len = np.frombuffer(raw[info.header_offset + 26:info.header_offset + 30],
                                        "<u2")
    at = info.header_offset + 30 + int(name_len) + int(extra_len)
    assert raw[at:at + 6] == b"\x93NUMPY"
    raw[at:at + 6] = b"garbag"
    bad = tmp_path / "bad.npz"
    bad.write_bytes(bytes(raw))
    with np.load(bad) as z:
        with pytest.raises(UserError, match=r"bad.npz: key 'u8' cannot be read"):
            npz_array(z, "u8", bad, mmap=True)


def test_cosine_is_inner_product_on_unit_vectors(tmp_path, capsys):
    """--metric cosine (or angular) scales the user's vectors to unit length and searches by
    inner product: its exact neighbours are those of cosine similarity, the trace says ip,
    a zero vector is one line, and the command line's list is graphs.dataset's."""
    from graphs import cli as gcli
    from graphs.dataset import INPUT_METRICS, load_dataset
    from graphs.groundtruth import exact_knn

    assert gcli.INPUT_METRICS == INPUT_METRICS
    rng = np.random.default_rng(0)
    base = (rng.random((300, 8)) * [1, 1, 1, 1, 9, 9, 9, 9]).astype(np.float32)
    q = rng.random((7, 8)).astype(np.float32)
    write_vectors(tmp_path / "b.fbin", base, "fbin")
    write_vectors(tmp_path / "q.fbin", q, "fbin")
    for name in ("cosine", "angular"):
        ds = load_dataset(tmp_path / "b.fbin", tmp_path / "q.fbin", metric=name)
        assert ds.metric == "ip" and ds.name.endswith("-cosine")
        np.testing.assert_allclose(np.linalg.norm(ds.base, axis=1), 1, rtol=1e-6)
        cos = (q @ base.T) / np.linalg.norm(q, axis=1)[:, None] / np.linalg.norm(base, axis=1)
        want = np.argsort(-cos, axis=1, kind="stable")[:, :5]
        np.testing.assert_array_equal(exact_knn(ds.base, ds.queries, 5, "ip")[0], want)
    zero = base.copy()
    zero[3] = 0
    write_vectors(tmp_path / "z.fbin", zero, "fbin")
    from cosmos.cli import main

    rc = main(["graphs", "build", "--base", str(tmp_path / "z.fbin"), "--metric", "cosine",
               "--num-clusters", "1", "--cache-dir", str(tmp_path / "c")])
    err = capsys.readouterr().err
    assert rc == 2 and "row 3 is a zero vector" in err and len(err.strip().splitlines()) == 1
