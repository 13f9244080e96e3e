"""One traced search serves several probe counts: the p-probe output derived from a P-probe
search equals a direct p-probe search array by array (graphs.search.search_prefixes,
graphs.trace_indexes), make_workloads stores each under the entry make_workload reads, and
experiments.harness.plan's workload job leaves traces that Context.trace reads unchanged."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import graphs
import graphs.workload as gw
from cosmos_common import UserError
from graphs.index import IndexParams, build_index
from graphs.search import search, search_prefixes
from graphs.trace import EXTRA_ARRAYS, TRACE_ARRAYS

DATA = Path(__file__).parent / "data" / "graphs"
INDEX = dict(num_clusters=8, M=8, ef_construction=32)
SEARCH = dict(cand_list_len=24, k=10)


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """A 3,000-vector SIFT-like set with 40 queries and exact ground truth, and its index."""
    ds = graphs.get_dataset("sift", 3000, 40, cache_dir=tmp_path_factory.mktemp("c"))
    return ds, build_index(ds, IndexParams(**INDEX), progress=False)


def _same_output(a, b):
    for name in a._fields:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.shape == y.shape, name
        assert np.array_equal(x, y), name


def _same_trace(a, b):
    assert a.meta == b.meta
    for name in (*TRACE_ARRAYS, *EXTRA_ARRAYS):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.shape == y.shape, name
        assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), name


@pytest.mark.parametrize("entry", ["medoid", "hnsw"])
def test_prefixes_of_one_search_equal_direct_searches(small, entry):
    """Chunks of 7 queries (not a divisor of 40): a query's searches never straddle a chunk
    in the derivation, whatever the search's chunking."""
    ds, index = small
    got = search_prefixes(index, ds.base, ds.queries, (4, 1, 8, 4, 3), entry=entry, chunk=7,
                          progress=False, **SEARCH)
    assert list(got) == [1, 3, 4, 8]
    for p, out in got.items():
        _same_output(out, search(index, ds.base, ds.queries, p, entry=entry, chunk=7,
                                 progress=False, **SEARCH))
        assert np.array_equal(out.query_ptr, np.arange(0, 40 * p + 1, p))
    # the prefix's searches are the first p of each query's P searches
    s8 = got[8].search_cluster.reshape(40, 8)
    assert np.array_equal(got[3].search_cluster.reshape(40, 3), s8[:, :3])


def test_bad_probe_counts_are_refused_before_searching(small):
    ds, index = small
    with pytest.raises(UserError, match="num_probes=9 must be in 1..num_clusters=8"):
        search_prefixes(index, ds.base, ds.queries, (4, 9), progress=False)
    with pytest.raises(UserError, match="probes: no probe count given"):
        search_prefixes(index, ds.base, ds.queries, (), progress=False)
    with pytest.raises(UserError, match=r"probes: 2.5 is not a probe count"):
        graphs.trace_indexes(index, ds, (2.5, 4), progress=False)
    with pytest.raises(UserError, match=r"probes=4: expected a sequence"):
        graphs.trace_indexes(index, ds, 4, progress=False)


def test_traces_of_one_search_equal_trace_index(small):
    ds, index = small
    got = graphs.trace_indexes(index, ds, (8, 1, 4), progress=False, **SEARCH)
    assert list(got) == [1, 4, 8]
    for p, tr in got.items():
        assert tr.meta["num_probes"] == p and tr.meta["recall"] is not None
        _same_trace(tr, graphs.trace_index(index, ds, p, progress=False, **SEARCH))
    assert got[8].meta["recall"] >= got[4].meta["recall"] > got[1].meta["recall"]


KW = dict(n=2000, num_queries=30, progress=False, **INDEX, **SEARCH)


class _Searches:
    """Records the probe counts of every traced search of graphs.workload (or refuses any)."""

    def __init__(self, monkeypatch, refuse=False):
        self.calls = []
        real = gw.iter_search_prefixes

        def spy(index, vectors, queries, probes, *a, **kw):
            if refuse:
                raise AssertionError(f"searched again at probes {list(probes)}")
            self.calls.append(list(probes))
            return real(index, vectors, queries, probes, *a, **kw)

        monkeypatch.setattr(gw, "iter_search_prefixes", spy)


def test_make_workloads_stores_what_make_workload_reads(tmp_path, monkeypatch):
    """One search at 8 probes for the counts not cached (4 was); each trace lands under the
    entry make_workload uses, which then reads it without searching; a fresh make_workload in
    another cache gives the identical trace."""
    cache = tmp_path / "cache"
    four = graphs.make_workload("sift", num_probes=4, cache_dir=cache, **KW)
    spy = _Searches(monkeypatch)
    got = graphs.make_workloads("sift", probes=(2, 8, 4), cache_dir=cache, **KW)
    assert spy.calls == [[2, 8]] and list(got) == [2, 4, 8]
    _same_trace(got[4], four)
    assert len(list((cache / "traces").glob("*.npz"))) == 3
    _Searches(monkeypatch, refuse=True)
    monkeypatch.setattr(gw, "get_index", lambda *a, **k: pytest.fail("read the index"))
    for p in (2, 4, 8):
        _same_trace(graphs.make_workload("sift", num_probes=p, cache_dir=cache, **KW), got[p])
    assert graphs.make_workloads("sift", probes=(2, 8), keep=(), cache_dir=cache, **KW) == {}
    only = graphs.make_workloads("sift", probes=(2, 4, 8), keep=[8], cache_dir=cache, **KW)
    assert list(only) == [8]
    _same_trace(only[8], got[8])
    spar = {k: KW[k] for k in ("num_clusters", "M", "ef_construction", "cand_list_len", "k")}
    ds = graphs.get_dataset("sift", KW["n"], KW["num_queries"], cache_dir=cache)
    cached = graphs.cached_traces(ds, probes=(2, 4, 8), keep=(4,), cache_dir=cache, **spar)
    assert list(cached) == [4]
    _same_trace(cached[4], four)
    assert graphs.cached_traces(ds, probes=(2, 3), cache_dir=cache, **spar) is None
    monkeypatch.undo()
    for p in (2, 8):
        fresh = graphs.make_workload("sift", num_probes=p, cache_dir=tmp_path / f"fresh{p}", **KW)
        _same_trace(fresh, got[p])


def test_make_workloads_refuses_bad_probes_before_building(tmp_path):
    with pytest.raises(UserError, match="num_probes=9 must be in 1..num_clusters=8"):
        graphs.make_workloads("sift", probes=(4, 9), cache_dir=tmp_path, **KW)
    with pytest.raises(UserError, match=r"keep: probe counts \[2\] are not among probes=\[4, 8\]"):
        graphs.make_workloads("sift", probes=(4, 8), keep=(2,), cache_dir=tmp_path, **KW)
    assert not (tmp_path / "indexes").exists()


def _scale():
    from experiments.harness.workloads import Scale

    return Scale("t", n=2000, num_queries=30, num_clusters=8, num_probes=4, sweep_queries=10)


def _context(out, cache, **kw):
    from experiments.harness.runner import Context

    out.mkdir()
    return Context(out=out, scale=_scale(), cache_dir=cache, progress=False, sim_cache=False,
                   **kw)


def test_workload_job_then_trace_gives_the_same_traces(tmp_path, monkeypatch):
    """The pool's workload job (experiments.harness.plan.workload_job): the counts 4, 8 and 16
    clipped to the 8 clusters, and the scale's own 4, come from one 8-probe search, and the
    trace file it writes is the scale's trace; the others are then read without searching,
    identical to the traces each count's own search gives."""
    from graphs import load_trace

    from experiments.harness.plan import workload_job

    counts = [4, 8, 8]
    before = _context(tmp_path / "before", tmp_path / "c1")
    for fam in before.families:
        for p in counts:
            before.trace(fam, p)              # each trace from its own search

    ctx = _context(tmp_path / "after", tmp_path / "c2")
    files = {fam: tmp_path / "after" / "traces" / f"{fam}.npz" for fam in ctx.families}
    spy = _Searches(monkeypatch)
    for fam in ctx.families:
        assert workload_job(fam, ctx.scale, counts, [(None, str(files[fam]))],
                            cache_dir=ctx.cache_dir) == fam
    assert spy.calls == [[4, 8], [4, 8]]
    written = files["sift"].stat().st_mtime_ns
    _Searches(monkeypatch, refuse=True)
    workload_job("sift", ctx.scale, [8], [(None, str(files["sift"]))], cache_dir=ctx.cache_dir)
    assert files["sift"].stat().st_mtime_ns == written      # all cached, the file kept
    for fam in ctx.families:
        _same_trace(load_trace(files[fam]), before.trace(fam))
        for p in (4, 8):
            _same_trace(ctx.trace(fam, p), before.trace(fam, p))


def test_fig5a_routes_exactly_what_the_traces_search(tmp_path, monkeypatch):
    """fig5a needs only each probe count's cluster searches: routed over the scale trace's
    centroids (experiments.harness.workloads.probed_clusters), they are the traces' own
    ``query_ptr`` / ``search_cluster`` at 2, 4, 8 and 16 (clipped to 8) probes, and fig5a
    searches nothing beyond the scale's trace."""
    from experiments.figures import fig5a_lir
    from experiments.harness.workloads import probed_clusters, workload_queries

    ctx = _context(tmp_path / "out", tmp_path / "c")
    for fam in ctx.families:
        q = workload_queries(fam, ctx.scale)
        for p in (2, 4, 8, 16):
            qp, sc = probed_clusters(ctx.trace(fam), q, p)
            tr = ctx.trace(fam, min(p, 8))
            np.testing.assert_array_equal(qp, tr.query_ptr)
            np.testing.assert_array_equal(sc, tr.search_cluster)
    again = _context(tmp_path / "again", tmp_path / "c")
    for fam in again.families:
        again.trace(fam)                      # the scale's trace, read from the cache
    _Searches(monkeypatch, refuse=True)
    fig5a_lir.run(again)
    lir = pd.read_csv(again.out / "lir.csv")
    assert sorted(set(lir.num_probes)) == [4, 8, 16] and (lir.lir_all_queries >= 1).all()


def test_user_dataset_probes_are_clipped_to_its_clusters(tmp_path, monkeypatch):
    """With the user's file (1,000 base vectors kept, 8 clusters), 16 probes are clipped to 8:
    the traces at 2, 8 and 16 come from one 8-probe search, and workload() reads each."""
    from experiments.harness.workloads import workload, workloads

    files = dict(dataset=str(DATA / "siftsmall_base.u8bin"))
    sc = _scale()
    spy = _Searches(monkeypatch)
    got = workloads("ignored", sc, (16, 2, 8), keep=(2, 16), cache_dir=tmp_path, **files)
    assert spy.calls == [[2, 8]] and list(got) == [2, 16]
    assert got[16].meta["num_probes"] == 8 and got[16].meta["num_clusters"] == 8
    _Searches(monkeypatch, refuse=True)
    monkeypatch.setattr(gw, "cached_groundtruth",
                        lambda *a, **k: pytest.fail("computed a ground truth"))
    for p in (2, 8, 16):
        _same_trace(workload("ignored", sc, num_probes=p, cache_dir=tmp_path, **files),
                    got[2] if p == 2 else got[16])
