"""Issue 55, "a path repeated twice in one message": a cache warning about a file that does
not load names the file once, though the loader's own error (wrapped in the warning) leads
with the same path."""

import json
import warnings

import numpy as np

from cosmos_common import cacheio


def _warnings(fn):
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in got if issubclass(w.category, cacheio.CacheWarning)]


def test_report_names_a_wrapped_path_once(tmp_path):
    path = tmp_path / "traces" / "t.npz"
    msgs = _warnings(lambda: cacheio.report(
        path, f"does not load ({ValueError(f'{path}: trace format_version 0, expected 9')})"))
    assert len(msgs) == 1 and msgs[0].count(str(path)) == 1, msgs
    assert msgs[0] == f"{path}: does not load (trace format_version 0, expected 9); recomputing"


def test_cached_trace_of_another_format_names_its_file_once(tmp_path):
    """A cached trace whose record verifies but whose file is of another trace format
    (graphs.workload._cached_trace): one warning, the file named once."""
    from graphs import Dataset
    from graphs.index import IndexParams
    from graphs.workload import _cached_trace, _search_params, _trace_entry

    rng = np.random.default_rng(0)
    ds = Dataset(name="tiny", base=rng.random((64, 8), dtype=np.float32),
                 queries=rng.random((4, 8), dtype=np.float32), metric="l2")
    params = IndexParams(num_clusters=2)
    spar = _search_params(1, 16, 10, "medoid")
    path, record, key = _trace_entry(ds, params, spar, tmp_path)

    def write(p):
        np.savez(p, meta=np.array(json.dumps({"format_version": -1})))
        if p.suffix != ".npz" or not p.exists():       # np.savez appends .npz to other names
            raise AssertionError(p)

    cacheio.store_files(record, "traces", key, {path: write})
    msgs = _warnings(lambda: _cached_trace(ds, params, spar, tmp_path, warn=True, arrays=False))
    assert len(msgs) == 1, msgs
    assert "does not load" in msgs[0] and msgs[0].count(str(path)) == 1, msgs
