"""Caches that cannot lie: every kind of cache entry is verified at each read; a damaged one
is reported in one warning line naming its file and recomputed, giving a clean run's result.

Kinds: simulations (value entries), datasets, ground truth, indexes, traces, specialized
kernels (file entries with a record). Plus fuzz tests (hypothesis) of the two loaders:
whatever bytes an entry holds, a read is a verified hit equal to what was written or a miss
with exactly one CacheWarning, never another exception.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cosmos_common import cacheio
from cosmos_common.cacheio import CacheWarning

ROW = {"system": "base", "qps": 229910.86582732477, "dram_requests": 197709,
       "steady_state": True, "rate_qps": None, "kind": "host-cxl", "latency_ns": [1.5, 2.0]}
KEY = "14f503bd482da4e33962a0b7dd7e04035a9b37af"


class Warned:
    """The CacheWarnings issued inside the block (all other warnings pass through)."""

    def __enter__(self):
        self._cm = warnings.catch_warnings(record=True)
        self.all = self._cm.__enter__()
        warnings.simplefilter("always")
        return self

    def __exit__(self, *exc):
        self._cm.__exit__(*exc)
        self.lines = [str(w.message) for w in self.all if issubclass(w.category, CacheWarning)]
        return False


def _one_line_about(w: Warned, path, what: str) -> str:
    assert len(w.lines) == 1, w.lines
    line = w.lines[0]
    assert "\n" not in line and str(path) in line and what in line, line
    return line


# ------------------------------------------------------------------------ value entries
def test_value_entry_round_trip_and_one_line_format(tmp_path, capsys):
    p = tmp_path / "e.json"
    cacheio.write_value(p, "simulations", KEY, ROW)
    with Warned() as w:
        got = cacheio.read_value(p, "simulations", KEY)
        assert got == ROW and list(got) == list(ROW)          # the fields' order is kept
        assert cacheio.read_value(tmp_path / "none.json", "simulations", KEY) is None  # a miss
    assert w.lines == []
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]
    # the warning prints as one line (whatever formatter the warnings module uses)
    text = warnings.formatwarning("x.json: checksum mismatch; recomputing", CacheWarning,
                                  __file__, 1)
    assert text == "cosmos cache: warning: x.json: checksum mismatch; recomputing\n"


def _edit(p: Path, fn) -> None:
    doc = json.loads(p.read_text())
    fn(doc)
    p.write_text(json.dumps(doc))


@pytest.mark.parametrize("change,what", [
    (lambda d: d["value"].__setitem__("qps", 329910.86582732477), "checksum mismatch"),
    (lambda d: d["value"].pop("qps"), "missing field 'value.qps'"),
    (lambda d: d["value"].__setitem__("qps", "229910"), "field 'value.qps' is a string, "
                                                        "expected a number"),
    (lambda d: d.__setitem__("value", [1, 2]), "field 'value' is an array, expected an object"),
    (lambda d: d.pop("sha256"), "missing field 'sha256'"),
    (lambda d: d.__setitem__("key", 7), "field 'key' is an integer, expected a string"),
    (lambda d: d.__setitem__("cosmos_cache", 0), "cache format 0, expected 1"),
    (lambda d: d.__setitem__("kind", "traces"), "checksum mismatch"),
    # found by the fuzz test below: a type name cut to nothing
    (lambda d: d["fields"].__setitem__("qps", ""), "field 'fields.qps' is '', not the name of "
                                                   "a JSON type"),
])
def test_value_entry_damage_is_reported_once_and_missed(tmp_path, change, what):
    p = tmp_path / "e.json"
    cacheio.write_value(p, "simulations", KEY, ROW)
    _edit(p, change)
    with Warned() as w:
        assert cacheio.read_value(p, "simulations", KEY) is None
    _one_line_about(w, p, what)
    assert what in cacheio.check_entry(p)


def test_old_layout_copy_and_non_json_are_misses(tmp_path):
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"key": KEY, "row": ROW}))       # the layout before checksums
    copy = tmp_path / "copy.json"
    cacheio.write_value(copy, "simulations", "another key", ROW)
    junk = tmp_path / "junk.json"
    junk.write_bytes(b"\xff\xfe[1,")
    listed = tmp_path / "list.json"
    listed.write_text("[1, 2]")
    for p, what in ((old, "no checksum header (written by an older version"),
                    (copy, "answers another key"), (junk, "not valid JSON"),
                    (listed, "holds an array, expected a JSON object")):
        with Warned() as w:
            assert cacheio.read_value(p, "simulations", KEY) is None
        _one_line_about(w, p, what)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzz_value_entry_loader(tmp_path, data):
    """Mutated bytes (flips, deletions, insertions, truncation) -> a verified hit equal to
    the original, or None with exactly one CacheWarning; never another exception."""
    p = tmp_path / "fuzz.json"
    cacheio.write_value(p, "simulations", KEY, ROW)
    raw = bytearray(p.read_bytes())
    for _ in range(data.draw(st.integers(1, 3))):
        op = data.draw(st.sampled_from(["flip", "delete", "insert", "truncate", "set"]))
        i = data.draw(st.integers(0, max(0, len(raw) - 1)))
        if op == "flip" and raw:
            raw[i] ^= data.draw(st.integers(1, 255))
        elif op == "set" and raw:
            raw[i] = data.draw(st.sampled_from(b'0123456789"{}[],:.-eE \nnulltrue'))
        elif op == "delete":
            del raw[i:i + data.draw(st.integers(1, 8))]
        elif op == "insert":
            raw[i:i] = data.draw(st.binary(min_size=1, max_size=8))
        elif op == "truncate":
            del raw[i:]
    p.write_bytes(bytes(raw))
    with Warned() as w:
        got = cacheio.read_value(p, "simulations", KEY)
    if got is None:
        assert len(w.lines) == 1 and str(p) in w.lines[0]
    else:
        assert got == ROW and w.lines == []
    assert (cacheio.check_entry(p) is None) == (got is not None)


# ------------------------------------------------------------------------ file entries
def _file_entry(tmp_path):
    a, b = tmp_path / "e-a.bin", tmp_path / "e-b.npz"
    arr = np.arange(40, dtype=np.int64)
    rec = cacheio.record_path(tmp_path, "e")
    cacheio.store_files(rec, "traces", KEY, {
        a: lambda p: cacheio.atomic_write(p, b"hello cache"),
        b: lambda p: np.savez(p, ids=arr)}, meta={"fingerprint": "abc"})
    return rec, [a, b]


def test_file_entry_round_trip_and_damage(tmp_path):
    rec, files = _file_entry(tmp_path)
    with Warned() as w:
        assert cacheio.read_files(rec, "traces", KEY, files) == {"fingerprint": "abc"}
        assert cacheio.read_files(cacheio.record_path(tmp_path, "x"), "traces", KEY,
                                  [tmp_path / "x.npz"]) is None       # nothing there: a miss
    assert w.lines == [] and cacheio.check_entry(rec) is None
    # the same bytes do not answer another key
    with Warned() as w:
        assert cacheio.read_files(rec, "traces", "other", files) is None
    _one_line_about(w, rec, "answers another key")
    # truncation, a flipped byte, a missing file, content without its record
    files[0].write_bytes(b"hello")
    with Warned() as w:
        assert cacheio.read_files(rec, "traces", KEY, files) is None
    _one_line_about(w, files[0], "5 bytes, its record says 11")
    files[0].write_bytes(b"hellp cache")
    with Warned() as w:
        assert cacheio.read_files(rec, "traces", KEY, files) is None
    _one_line_about(w, files[0], "checksum mismatch")
    assert "checksum mismatch in e-a.bin" in cacheio.check_entry(rec)
    files[0].unlink()
    with Warned() as w:
        assert cacheio.read_files(rec, "traces", KEY, files) is None
    _one_line_about(w, rec, "its file e-a.bin is missing")
    rec.unlink()
    with Warned() as w:
        assert cacheio.read_files(rec, "traces", KEY, files) is None
    _one_line_about(w, files[1], "no checksum record")


def test_an_interrupted_store_leaves_no_record(tmp_path):
    rec, files = _file_entry(tmp_path)

    def crash(p):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        cacheio.store_files(rec, "traces", KEY, {files[0]: crash})
    assert not rec.exists() and files[0].exists()      # old content, no record: a miss
    with Warned() as w:
        assert cacheio.read_files(rec, "traces", KEY, files) is None
    _one_line_about(w, files[0], "no checksum record")
    # a copy or rename reads the same way: the message says so (issue 55: it blamed an
    # older version only)
    assert "copied or renamed into the cache" in w.lines[0]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.integers(0, 2), pos=st.floats(0, 1, exclude_max=True), xor=st.integers(1, 255),
       cut=st.booleans())
def test_fuzz_file_entry_loader(tmp_path, which, pos, xor, cut):
    """A flipped byte or a truncation anywhere in the content files or the record -> None
    with exactly one CacheWarning naming the damaged file (or its record); never another
    exception."""
    for f in tmp_path.iterdir():
        f.unlink()
    rec, files = _file_entry(tmp_path)
    target = [rec, *files][which]
    raw = bytearray(target.read_bytes())
    i = int(pos * len(raw))
    if cut:
        del raw[i:]
    else:
        raw[i] ^= xor
    target.write_bytes(bytes(raw))
    with Warned() as w:
        got = cacheio.read_files(rec, "traces", KEY, files)
    if got is not None:   # only a change JSON ignores (whitespace) can keep the record valid
        assert target == rec and got == {"fingerprint": "abc"} and w.lines == []
        return
    assert len(w.lines) == 1 and (str(target) in w.lines[0] or str(rec) in w.lines[0])
    assert cacheio.check_entry(rec) is not None


# ------------------------------------------------------------------------ simulations
def _fake_sim(trace_path, x, tags=None):
    with np.load(trace_path) as z:
        total = z["a"].sum()
    return {**(tags or {}), "qps": np.float64(total * x + 0.5), "n": np.int64(x)}


def _bump_qps(path: Path) -> None:
    """Add one to the leading digit of the row's qps in the entry's text (229910 ->
    329910), the one-byte change of the issue."""
    text = path.read_text()
    i = re.search(r'"qps":(\d)', text).start(1)
    d = int(text[i])
    path.write_text(text[:i] + str(d + 1 if d < 9 else 8) + text[i + 1:])


def test_simulation_entry_damage_is_simulated_again(tmp_path):
    from experiments.harness.common import run_sweep
    from experiments.harness.resultcache import ResultCache

    tr = tmp_path / "t.npz"
    np.savez(tr, a=np.arange(5))
    tasks = [{"trace_path": str(tr), "x": x, "tags": {"x": x}} for x in (1, 2, 3)]
    cache = ResultCache(tmp_path / "sims")
    ran = []

    def run(fn, todo, on_result=None):
        ran.extend(t["x"] for t in todo)
        return run_sweep(fn, todo, workers=1, progress=False, on_result=on_result)

    clean, hits = cache.sweep(_fake_sim, tasks, run)
    assert hits == 0
    path = cache._path(cache.key(_fake_sim, tasks[1]))
    _bump_qps(path)                                    # 20.5 -> 30.5
    ran.clear()
    with Warned() as w:
        again, hits = cache.sweep(_fake_sim, tasks, run)
    _one_line_about(w, path, "checksum mismatch")
    assert hits == 2 and ran == [2] and again == clean
    with Warned() as w:                                # rewritten: a verified hit again
        assert cache.sweep(_fake_sim, tasks, run) == (clean, 3)
    assert w.lines == []


# ------------------------------------------------------------------------ graphs caches
SMALL = dict(n=1000, num_queries=8, num_clusters=8, num_probes=2, progress=False)


def _damage(path: Path) -> None:
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0x10
    path.write_bytes(bytes(raw))


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """A clean workload (trace, dataset, ground truth, index) in its own cache."""
    from graphs import make_workload
    from graphs.index import IndexParams, get_index
    from graphs.workload import get_dataset

    cache = tmp_path_factory.mktemp("clean")
    tr = make_workload("sift", cache_dir=cache, **SMALL)
    ds = get_dataset("sift", SMALL["n"], SMALL["num_queries"], cache_dir=cache)
    idx, _ = get_index(ds, IndexParams(num_clusters=8), cache, progress=False)
    return tr, ds, idx, cache


def clean_cache_dir(clean) -> Path:
    return clean[3]


def _same_trace(a, b) -> None:
    for k in ("read_node", "hop_node", "result_ids", "query_recall", "search_cluster"):
        assert np.array_equal(getattr(a, k), getattr(b, k)), k
    assert a.meta == b.meta


@pytest.mark.parametrize("kind,pattern", [
    ("datasets", "*-base.u8bin"), ("groundtruth", "*.npz"), ("traces", "*.npz"),
    ("indexes", "*.npz"), ("datasets", "*.entry.json"), ("traces", "*.entry.json")])
def test_flipped_byte_in_each_kind_is_reported_and_recomputed(tmp_path, clean, kind, pattern):
    from graphs import make_workload
    from graphs.index import IndexParams, get_index
    from graphs.workload import get_dataset

    make_workload("sift", cache_dir=tmp_path, **SMALL)
    (victim,) = (tmp_path / kind).glob(pattern)
    _damage(victim)
    with Warned() as w:
        if kind == "indexes":          # read only when no trace is cached
            ds = get_dataset("sift", SMALL["n"], SMALL["num_queries"], cache_dir=tmp_path)
            idx, _ = get_index(ds, IndexParams(num_clusters=8), tmp_path, progress=False)
            for k in ("indptr", "indices", "cluster_nodes", "centroids", "medoid"):
                assert np.array_equal(getattr(idx, k), getattr(clean[2], k)), k
        tr = make_workload("sift", cache_dir=tmp_path, **SMALL)
    line = _one_line_about(w, victim if victim.suffix != ".json" else victim,
                           "checksum mismatch")
    assert line.endswith("recomputing")
    _same_trace(tr, clean[0])
    with Warned() as w:                # rewritten: the next run reads it silently
        _same_trace(make_workload("sift", cache_dir=tmp_path, **SMALL), clean[0])
    assert w.lines == []
    assert _verify(tmp_path) == (0, "")


def test_groundtruth_rewritten_with_shifted_ids_is_not_trusted(tmp_path, clean):
    """The issue's case: a valid .npz with the ids shifted by one gave recall@10 0.005."""
    from graphs.workload import get_dataset

    get_dataset("sift", SMALL["n"], SMALL["num_queries"], cache_dir=tmp_path)
    (gt,) = (tmp_path / "groundtruth").glob("*.npz")
    with np.load(gt) as z:
        ids, fp = z["ids"], z["fingerprint"]
    np.savez(gt, ids=ids + 1, fingerprint=fp)
    with Warned() as w:
        ds = get_dataset("sift", SMALL["n"], SMALL["num_queries"], cache_dir=tmp_path)
    _one_line_about(w, gt, "")
    assert np.array_equal(ds.groundtruth, clean[1].groundtruth)


def test_entry_of_the_old_layout_is_a_miss_with_a_note(tmp_path, clean):
    from graphs import make_workload

    make_workload("sift", cache_dir=tmp_path, **SMALL)
    (rec,) = (tmp_path / "traces").glob("*.entry.json")
    rec.unlink()                       # what an older version left: the .npz alone
    with Warned() as w:
        tr = make_workload("sift", cache_dir=tmp_path, **SMALL)
    _one_line_about(w, rec.with_name(rec.name.replace(".entry.json", ".npz")),
                    "no checksum record")
    _same_trace(tr, clean[0])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.sampled_from(["npz", "record"]), pos=st.floats(0, 1, exclude_max=True),
       xor=st.integers(1, 255))
def test_fuzz_trace_cache_loader(tmp_path_factory, clean, which, pos, xor):
    """A byte of a cached trace or its record changed anywhere -> the cached trace equal to
    the clean one, or None with one CacheWarning; never another exception."""
    import shutil

    from graphs.index import IndexParams
    from graphs.workload import _cached_trace, _trace_entry

    tr, ds, _, _ = clean
    params = IndexParams(num_clusters=8)
    spar = {"num_probes": 2, "cand_list_len": 64, "k": 10, "entry": "medoid"}
    root = tmp_path_factory.mktemp("fuzz")
    src_path, src_rec, _ = _trace_entry(ds, params, spar, Path(clean_cache_dir(clean)))
    path, rec, _ = _trace_entry(ds, params, spar, root)
    path.parent.mkdir(parents=True)
    shutil.copy(src_path, path)
    shutil.copy(src_rec, rec)
    target = path if which == "npz" else rec
    raw = bytearray(target.read_bytes())
    raw[int(pos * len(raw))] ^= xor
    target.write_bytes(bytes(raw))
    with Warned() as w:
        got, _ = _cached_trace(ds, params, spar, root, warn=True)
    if got is None:
        assert len(w.lines) == 1 and str(target) in w.lines[0]
    else:
        assert w.lines == []
        _same_trace(got, tr)


# ------------------------------------------------------------------------ kernels
def test_kernel_build_damage_is_rewritten(tmp_path):
    from cosmos.specialize import _write_build

    folder = tmp_path / "kernels" / "abc"
    folder.mkdir(parents=True)
    src = {"_k.py": "X = 1\n", "_e.py": "import _k\nY = 2\n"}
    with Warned() as w:
        _write_build(folder, "abc", src)
        _write_build(folder, "abc", src)                  # intact: nothing to say or write
    assert w.lines == [] and cacheio.check_entry(folder / "build.entry.json") is None
    _damage(folder / "_e.py")
    assert _verify(tmp_path, "--kind", "kernels")[0] == 1
    with Warned() as w:
        _write_build(folder, "abc", src)
    _one_line_about(w, folder / "_e.py", "differs from the source generated")
    assert (folder / "_e.py").read_text() == src["_e.py"]
    assert _verify(tmp_path) == (0, "")


# ------------------------------------------------------------------------ cosmos cache
def _verify(root, *opts):
    from cosmos.cli import main
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(["cache", "--cache-dir", str(root), "verify", *opts])
    lines = out.getvalue().splitlines()
    assert lines[-1].startswith("checked ")
    return rc, "\n".join(lines[:-1])


def test_cache_info_and_verify(tmp_path, capsys):
    from cosmos.cli import main
    from experiments.harness.resultcache import ResultCache
    from graphs import make_workload

    make_workload("sift", cache_dir=tmp_path, **SMALL)
    ResultCache(tmp_path / "simulations").put(KEY, ROW)
    assert main(["cache", "info", "--cache-dir", str(tmp_path)]) == 0    # as every command
    after = capsys.readouterr().out
    assert main(["cache", "--cache-dir", str(tmp_path), "info"]) == 0    # and before the action
    out = capsys.readouterr().out
    assert out == after and str(tmp_path.resolve()) in out
    counts = {line.split()[0]: int(line.split()[1]) for line in out.splitlines()[2:]}
    assert counts == {"simulations": 1, "groundtruth": 1, "indexes": 1, "traces": 1,
                      "datasets": 1, "kernels": 0, "total": 5}
    assert _verify(tmp_path) == (0, "")
    # one bad entry per kind damaged, plus debris: a temporary file and an orphan
    sim = ResultCache(tmp_path / "simulations")._path(KEY)
    _damage(sim)
    (ds_rec,) = (tmp_path / "datasets").glob("*.entry.json")
    _damage(ds_rec)
    (tmp_path / "traces" / ".x.npz.123.tmp").write_bytes(b"half")
    (tmp_path / "indexes" / "lost.npz").write_bytes(b"old")
    rc, lines = _verify(tmp_path)
    assert rc == 1 and len(lines.splitlines()) == 4
    for what in (sim.name, ds_rec.name, ".x.npz.123.tmp", "lost.npz: no checksum record",
                 "interrupted write"):
        assert what in lines
    rc, lines = _verify(tmp_path, "--kind", "simulations")
    assert rc == 1 and lines.count("\n") == 0 and sim.name in lines
    moved = sim.with_name("0" * 40 + ".json")          # an intact entry under another key
    ResultCache(tmp_path / "simulations").put(KEY, ROW)
    sim.rename(moved)
    rc, lines = _verify(tmp_path, "--kind", "simulations")
    assert rc == 1 and "answers another key" in lines
    moved.rename(sim)
    _damage(sim)
    rc, lines = _verify(tmp_path, "--delete")
    assert rc == 1 and lines.count("(deleted)") == 4
    assert not sim.exists() and not list((tmp_path / "datasets").iterdir())
    assert _verify(tmp_path) == (0, "")
    # and the deleted entries are made again by the next run, silently
    with Warned() as w:
        make_workload("sift", cache_dir=tmp_path, **SMALL)
    assert w.lines == [] and _verify(tmp_path) == (0, "")


def test_cache_verify_help_states_the_exit_status(capsys):
    from cosmos.cli import main

    with pytest.raises(SystemExit):
        main(["cache", "verify", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "0 if every entry is intact, 1 if bad entries were found" in out


# ------------------------------------------------------------------------ end to end
def test_fig4a_with_a_flipped_simulation_entry_matches_a_clean_run(tmp_path):
    """The issue's check: one flipped digit in a simulation entry; the rerun says so in one
    line, simulates that point again and writes the clean run's CSV (all but one from the
    cache: fig4a's systems x 2 workloads)."""
    from experiments.figures.fig4a_qps import ROWS

    n = 2 * len(ROWS)
    env = {**os.environ, "COSMOS_CACHE": str(tmp_path / "cache"), "MPLBACKEND": "Agg"}

    def run():
        out = subprocess.run(
            [sys.executable, "-m", "cosmos", "run", "fig4a_qps", "--scale", "tiny",
             "--out-root", str(tmp_path / "res"), "--workers", "1", "--no-progress"],
            capture_output=True, text=True, env=env, cwd=Path(__file__).parents[1], timeout=600)
        assert out.returncode == 0, out.stderr[-2000:]
        folder = out.stdout.split("results in ")[1].split()[0]
        csv = pd.read_csv(Path(folder) / "qps.csv").drop(columns=["wall_s", "requests_per_wall_s"])
        return out, csv

    _, first = run()
    entries = sorted((tmp_path / "cache" / "simulations").rglob("*.json"))
    assert len(entries) == n
    _bump_qps(entries[0])
    out, again = run()
    warned = [ln for ln in out.stderr.splitlines() if "cosmos cache: warning" in ln]
    assert len(warned) == 1 and str(entries[0]) in warned[0] and "checksum mismatch" in warned[0]
    assert f"simulations_from_cache: {n - 1}/{n}" in out.stdout
    pd.testing.assert_frame_equal(first, again)
