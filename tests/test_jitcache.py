"""Cached numba code of a module is dropped when a module it inlines changes; the SLP
vectorizer is on only inside :func:`dram.jitcache.vectorizing`."""

import pytest
from numba.core import config

from dram.jitcache import drop_stale, vectorizing


def test_cache_dropped_only_when_a_dependency_changes(tmp_path, monkeypatch):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    caller, callee = tmp_path / "engine.py", tmp_path / "kernel.py"
    caller.write_text("x = 1\n")
    callee.write_text("STATE_WIDTH = 12\n")
    cache = tmp_path / "__pycache__"
    cache.mkdir()
    entries = [cache / "engine.run-10.py311.nbi", cache / "engine.run-10.py311.1.nbc"]
    other = cache / "kernel.tick-5.py311.nbi"

    def fill():
        for f in entries + [other]:
            f.write_bytes(b"compiled")

    fill()
    assert drop_stale(str(caller), str(callee))  # first sight: no stamp, so nothing is trusted
    assert not any(f.exists() for f in entries) and other.exists()
    fill()
    assert not drop_stale(str(caller), str(callee))  # nothing changed: cache kept
    assert all(f.exists() for f in entries)
    callee.write_text("STATE_WIDTH = 20\n")  # the inlined module changed
    assert drop_stale(str(caller), str(callee))
    assert not any(f.exists() for f in entries) and other.exists()


def test_project_modules_stamp_their_caches():
    import os

    import pytest

    if os.environ.get("NUMBA_CACHE_DIR"):
        pytest.skip("numba keeps its cache under NUMBA_CACHE_DIR; the guard does not apply")
    import cosmos.engine  # noqa: F401  (importing runs the guard)
    import dram.openloop  # noqa: F401
    from pathlib import Path

    for mod in ("cosmos/__pycache__/engine.jitdeps", "dram/__pycache__/openloop.jitdeps",
                "dram/kernel/__pycache__/scheduler.jitdeps"):
        assert (Path(__file__).resolve().parents[1] / mod).is_file()


def test_vectorizing_is_scoped_and_restored():
    before = config.SLP_VECTORIZE
    with vectorizing():
        assert config.SLP_VECTORIZE == 1
    assert config.SLP_VECTORIZE == before
    with pytest.raises(RuntimeError):
        with vectorizing():
            raise RuntimeError("a failing compile or kernel")
    assert config.SLP_VECTORIZE == before          # restored on the way out of an error too


def test_vectorizing_without_the_switch(monkeypatch):
    monkeypatch.delattr(config, "SLP_VECTORIZE")
    with vectorizing():                              # nothing to set: the block still runs
        ran = True
    assert ran and not hasattr(config, "SLP_VECTORIZE")
