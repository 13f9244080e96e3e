"""A corpus of bad input files, one per class, run through every reader and command that takes
such a file: each must fail with one clear line naming the file (exit 2 on the command line),
never a traceback, never a result written.

The corpus is built by the test itself (each file is a few bytes) in a temporary folder.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from cosmos.cli import main

# --------------------------------------------------------------------------------------------
# the corpus
# --------------------------------------------------------------------------------------------


def _fbin(n, d, values) -> bytes:
    return struct.pack("<II", n, d) + np.asarray(values, dtype="<f4").tobytes()


#: vector files: name -> (bytes, or None for a folder; what the message must say)
VECTOR_CORPUS = {
    "empty.fbin": (b"", "too short for the 8-byte (n, d) header"),
    "short_header.fbin": (b"\x01\x00\x00\x00", "too short for the 8-byte (n, d) header"),
    "size_mismatch.fbin": (_fbin(10, 4, np.ones(8)), "bytes"),
    "zero_dim.fbin": (_fbin(3, 0, []), ""),
    "ragged.fvecs": (struct.pack("<i", 2) + struct.pack("<2f", 1, 2)
                     + struct.pack("<i", 3) + struct.pack("<3f", 1, 2, 3), ""),
    "negative_dim.fvecs": (struct.pack("<i", -4) + b"\x00" * 16, "dimension"),
    "nan.fbin": (_fbin(3, 2, [1, 2, np.nan, 4, 5, 6]), "row 1 holds nan"),
    "inf.fbin": (_fbin(3, 2, [1, 2, 3, 4, np.inf, 6]), "row 2 holds inf"),
    "overflow.fbin": (_fbin(3, 2, [1, 2, 3e38, 4, 5, 6]), "row 1 has squared norm"),
    "text.fbin": (b"this is not a vector file\n", ""),
    "folder.fbin": (None, "is a folder"),
    "unknown.txt": (b"1 2 3\n", "unknown vector file extension"),
}

#: .npz files given where a logical trace or cluster metadata is expected
NPZ_CORPUS = {
    "object.npz": "",  # (readers missing other keys say so first; see the test below)
    "not_zip.npz": "",
    "npy_inside.npz": "",
    "truncated.npz": "",
    "missing_keys.npz": "",
    "folder.npz": "is a folder",
}


def _write_npz_corpus(d: Path) -> None:
    np.savez(d / "object.npz", sizes=np.array([1, "a", None], dtype=object),
             query_ptr=np.array([0, 1]), search_cluster=np.array([None], dtype=object),
             meta=np.array(json.dumps({"format_version": 1})))
    (d / "not_zip.npz").write_text("not a zip archive\n")
    np.save(open(d / "npy_inside.npz", "wb"), np.arange(5))
    np.savez(d / "full.npz", sizes=np.arange(100, dtype=np.int64))
    (d / "truncated.npz").write_bytes((d / "full.npz").read_bytes()[:60])
    np.savez(d / "missing_keys.npz", unrelated=np.arange(3))
    (d / "folder.npz").mkdir()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("bad_input")
    for name, (data, _) in VECTOR_CORPUS.items():
        if data is None:
            (d / name).mkdir()
        else:
            (d / name).write_bytes(data)
    _write_npz_corpus(d)
    good = d / "good"
    good.mkdir()
    rng = np.random.default_rng(0)
    (good / "base.fbin").write_bytes(_fbin(40, 4, rng.random(160)))
    np.savez(good / "clusters.npz", sizes=np.array([5, 7, 9, 11], dtype=np.int64))
    return d


def _one_line(capsys, path: Path, expect: str = "") -> str:
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert str(path) in lines[0], lines[0]
    assert expect in lines[0], lines[0]
    return lines[0]


# --------------------------------------------------------------------------------------------
# vector files: the dataset readers and every command taking one
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(VECTOR_CORPUS))
def test_vector_readers(corpus, name):
    from cosmos_common import UserError
    from graphs.dataset import load_dataset
    from graphs.io import check_finite, read_vectors

    path = corpus / name
    expect = VECTOR_CORPUS[name][1]
    with pytest.raises(UserError) as e:
        check_finite(read_vectors(path), str(path))
    assert str(path) in str(e.value) and expect in str(e.value)
    with pytest.raises(UserError) as e:
        load_dataset(path)
    assert str(path) in str(e.value) and expect in str(e.value)


@pytest.mark.parametrize("name", sorted(VECTOR_CORPUS))
def test_vector_files_on_the_command_line(corpus, name, tmp_path, capsys):
    path = corpus / name
    expect = VECTOR_CORPUS[name][1]
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert main(["graphs", "build", "--base", str(path), "--num-clusters", "1", *cache]) == 2
    _one_line(capsys, path, expect)
    assert main(["graphs", "trace", "--base", str(corpus / "good" / "base.fbin"), "--queries",
                 str(path), "--num-clusters", "1", "--num-probes", "1", "--out",
                 str(tmp_path / "t.npz"), *cache]) == 2
    _one_line(capsys, path, expect)
    assert main(["reproduce", "--scale", "tiny", "--dataset", str(path), "--out-root",
                 str(tmp_path / "r"), "--no-progress", *cache]) == 2
    _one_line(capsys, path)  # (a file too small to hold out queries is refused first)
    assert not (tmp_path / "t.npz").exists() and not (tmp_path / "r").exists()
    assert not (tmp_path / "cache" / "indexes").exists()


# --------------------------------------------------------------------------------------------
# .npz files: trace and cluster readers and every command taking one
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(NPZ_CORPUS))
def test_npz_readers(corpus, name):
    from cosmos.trace_input import as_trace
    from graphs import load_trace
    from placement.io import load_clusters, load_probes

    path = corpus / name
    for read in (load_trace, as_trace, load_clusters, load_probes):
        with pytest.raises((ValueError, FileNotFoundError)) as e:
            read(path)
        assert str(path) in str(e.value), (read, e.value)
        assert NPZ_CORPUS[name] in str(e.value) or name in ("folder.npz",), (read, e.value)


def test_an_object_array_in_a_trace_names_the_file_and_key(tmp_path, capsys):
    from cosmos.trace_input import as_trace
    from placement.io import load_probes
    from tests.cosmos_helpers import make_trace

    d = make_trace(num_queries=3, hops=1, reads_per_hop=2)
    d["search_cluster"] = np.array(list(d["search_cluster"]), dtype=object)
    path = tmp_path / "obj.npz"
    np.savez(path, **d)
    for read in (as_trace, load_probes):
        with pytest.raises(ValueError, match=rf"{path}: key 'search_cluster' holds Python "
                                             rf"objects \(dtype object\)"):
            read(path)
    assert main(["simulate", str(path), "--systems", "base", "--out", str(tmp_path / "o"),
                 "--no-progress"]) == 2
    _one_line(capsys, path, "key 'search_cluster' holds Python objects")


@pytest.mark.parametrize("name", sorted(NPZ_CORPUS))
def test_npz_files_on_the_command_line(corpus, name, tmp_path, capsys):
    path = corpus / name
    out = tmp_path / "o"
    assert main(["simulate", str(path), "--systems", "base", "--out", str(out),
                 "--no-progress"]) == 2
    _one_line(capsys, path)
    assert main(["replay", str(path), "--out", str(out), "--no-progress"]) == 2
    _one_line(capsys, path)
    assert main(["place", "--clusters", str(path)]) == 2
    _one_line(capsys, path)
    assert main(["place", "--clusters", str(corpus / "good" / "clusters.npz"), "--policy",
                 "round_robin", "--trace", str(path)]) == 2
    _one_line(capsys, path)
    assert not out.exists()


# --------------------------------------------------------------------------------------------
# options: accepted values that would write a trace or placement the simulator rejects
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("extra, expect", [
    (["-k", "41", "--cand-list-len", "64"], "-k=41 must be <= 40, the number of base vectors"),
    (["--k", "0"], "-k=0 must be >= 1"),
    (["--num-queries", "0"], "--num-queries=0 must be >= 1"),
    (["--M", "100000"], "--M=100000 must be in 2..10000"),
    (["--M", "1"], "--M=1 must be in 2..10000"),
    (["--num-clusters", "41"], "num_clusters=41 must be in 1..40"),
    (["--num-probes", "2"], "--num-probes=2 must be in 1..--num-clusters=1"),
    # the list length is named for a bad list length, not -k (issue 55)
    (["--cand-list-len", "0"], "--cand-list-len=0 must be >= 1"),
    (["--cand-list-len", "3"], "--cand-list-len=3 is below -k=5"),
])
def test_trace_options_are_refused_before_any_work(corpus, tmp_path, capsys, extra, expect):
    good = corpus / "good" / "base.fbin"
    out = tmp_path / "t.npz"
    assert main(["graphs", "trace", "--base", str(good), "--queries", str(good),
                 "--num-clusters", "1", "--num-probes", "1", "-k", "5",
                 "--cache-dir", str(tmp_path / "cache"), "--out", str(out), *extra]) == 2
    err = capsys.readouterr().err
    assert expect in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists() and not (tmp_path / "cache" / "indexes").exists()


def test_identical_vectors_name_the_file_and_the_cause(tmp_path, capsys):
    """k-means on a base of identical vectors: the file and why, not only "7 empty clusters"
    (issue 55)."""
    same = tmp_path / "same.fbin"
    same.write_bytes(_fbin(40, 4, np.ones(160)))
    out = tmp_path / "t.npz"
    assert main(["graphs", "trace", "--base", str(same), "--queries", str(same),
                 "--num-clusters", "8", "--num-probes", "1", "-k", "5",
                 "--cache-dir", str(tmp_path / "cache"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "same: k-means left" in err and "only 1 distinct vectors for num_clusters=8" in err
    assert "Traceback" not in err and not out.exists()


def test_place_refuses_fractional_devices_in_python_and_on_the_command_line(corpus, capsys):
    import placement
    from cosmos_common import UserError

    with pytest.raises(UserError, match=r"num_devices must be a whole number >= 1, got 2.5"):
        placement.place([1, 2, 3], 2.5, "round_robin")
    with pytest.raises(UserError, match=r"num_devices must be a whole number"):
        placement.place([1, 2, 3], True, "round_robin")
    assert issubclass(placement.CapacityError, UserError)
    with pytest.raises(placement.CapacityError):
        placement.place([5, 5], 2, "round_robin", capacities=4)
    assert main(["place", "--clusters", str(corpus / "good" / "clusters.npz"), "--devices",
                 "0"]) == 2
    assert "--devices must be >= 1" in capsys.readouterr().err


def test_outputs_in_unwritable_or_wrong_places_fail_at_once(corpus, tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("mine")
    good = corpus / "good" / "base.fbin"
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert main(["graphs", "trace", "--base", str(good), "--queries", str(good),
                 "--num-clusters", "1", "--num-probes", "1", "--out", str(afile / "t.npz"),
                 *cache]) == 2
    _one_line(capsys, afile, "is not a folder")
    assert main(["graphs", "trace", "--base", str(good), "--queries", str(good),
                 "--num-clusters", "1", "--num-probes", "1", "--out", str(tmp_path), *cache]) == 2
    _one_line(capsys, tmp_path, "is a folder; expected a file name")
    assert main(["place", "--clusters", str(corpus / "good" / "clusters.npz"), "--out",
                 str(afile)]) == 2
    _one_line(capsys, afile, "already exists (pass --force to replace it)")
    assert main(["run", "fig5a_lir", "--scale", "tiny", "--out-root", str(afile),
                 "--no-progress"]) == 2
    _one_line(capsys, afile, "exists and is not a folder")
    assert afile.read_text() == "mine" and not (tmp_path / "cache" / "indexes").exists()


def test_a_single_cluster_is_a_legitimate_configuration(tmp_path, capsys):
    """One cluster (one graph, no k-means: num_clusters=1) traces and simulates: it is not
    refused anywhere."""
    from tests.cosmos_helpers import make_trace

    trace = tmp_path / "one.npz"
    np.savez(trace, **make_trace(num_queries=5, num_clusters=1, probes=1, hops=2,
                                 reads_per_hop=3))
    for system in ("base", "cosmos"):
        assert main(["simulate", str(trace), "--systems", system, "--out",
                     str(tmp_path / system), "--no-progress"]) == 0, capsys.readouterr().err
        assert (tmp_path / system / "summary.json").exists()
