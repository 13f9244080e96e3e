"""cosmos.specialize: the engine compiled with the DRAM parameters as constants gives the
generic engine's results exactly, and only the intended code changes."""

import re

import numpy as np
import pytest

from cosmos import specialize
from cosmos.presets import get_preset
from cosmos.simulate import simulate
from tests.cosmos_helpers import make_trace


@pytest.fixture(scope="module")
def kernel_cache(tmp_path_factory):
    """One cache folder for the module: the specialized build (about a minute to compile)
    is made once, not in the user's cache."""
    return tmp_path_factory.mktemp("cosmos-cache")


def _outcome(r):
    from dram import kernel as dk

    return (r.state.q_done.copy(), r.state.link_busy.copy(), r.state.task_bd.copy(),
            np.stack([dk.views(d)["stats"] for d in r.dram_state]),
            np.stack([dk.views(d)["rank_busy"] for d in r.dram_state]))


@pytest.mark.parametrize("name,mode", [("cosmos", "closed"), ("cxl-anns", "open")])
def test_specialized_engine_gives_the_generic_results(name, mode, kernel_cache, monkeypatch):
    monkeypatch.setenv("COSMOS_CACHE", str(kernel_cache))
    tr = make_trace(num_queries=24, hops=4, reads_per_hop=8, seed=5)
    kw = dict(progress=False, mode=mode, rate_qps=3e5 if mode == "open" else None, seed=2)
    generic = simulate(get_preset(name), tr, specialize=False, **kw)
    special = simulate(get_preset(name), tr, specialize=True, **kw)
    assert generic.extra["specialized"] is False and special.extra["specialized"] is True
    for a, b in zip(_outcome(generic), _outcome(special)):
        assert np.array_equal(a, b)
    timing = ("wall_s", "requests_per_wall_s")
    def figures(res):       # NaN (an interval not claimed) as "nan": equal runs compare equal
        return {k: ("nan" if isinstance(v, float) and v != v else v)
                for k, v in res.summary().items() if k not in timing}

    assert figures(generic) == figures(special)
    assert figures(generic)["energy_per_query_mJ"] > 0      # energy per query is compared too
    assert _outcome(generic)[3].sum() > 0
    assert list(kernel_cache.joinpath("kernels").glob("*/scheduler.py"))
    # the build has run: a short run of this configuration now loads it by default, and
    # only with the numba cache it was compiled into
    monkeypatch.delenv("COSMOS_SPECIALIZE", raising=False)
    assert list(kernel_cache.joinpath("kernels").glob("*/__pycache__/cosmos-compiled-*"))
    again = simulate(get_preset(name), tr, **kw)
    assert again.extra["specialized"] is True
    assert all(np.array_equal(a, b) for a, b in zip(_outcome(again), _outcome(generic)))
    import dataclasses

    from cosmos.simulate import dram_config_for
    from dram import kernel as dk

    params1 = dataclasses.replace(dram_config_for(get_preset(name)), channels=1).resolve()
    heap0 = dk.new_state(params1, instances=1, completion_capacity=64, direct_reads=True).heap
    assert specialize.is_compiled(params1, heap0)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(kernel_cache / "elsewhere"))
    assert not specialize.is_compiled(params1, heap0)


def test_the_generated_kernel_reads_no_parameter_or_header_slot_below_its_mark():
    import dataclasses

    from cosmos.simulate import dram_config_for
    from dram import kernel as dk

    params = dataclasses.replace(dram_config_for(get_preset("cosmos")), channels=1).resolve()
    heap0 = dk.new_state(params, completion_capacity=64, direct_reads=True).heap
    consts = specialize.kernel_constants(params, heap0)
    srcs = specialize._kernel_sources()
    src = specialize._specialize_kernel(srcs["scheduler.py"] + srcs["controller.py"], consts)
    head, body = src.split(specialize._MARK, 1)
    left = set(re.findall(r"\bparams\.([A-Za-z_]\w*)", body))
    assert left == specialize._KEEP          # the table and nREFI stay loads
    assert re.search(r"H\[_u\(H_[A-Z_]+\)\]", body) is None
    # the constants are this state's values: e.g. the read queue depth and the slot region
    assert consts["_K_P_read_q"] == params.read_q
    assert consts["_K_H_O_SLOT"] == heap0[dk.H_O_SLOT]
    assert consts["_K_H_DIRECT"] == 1
    # above the mark nothing changed
    orig_head = srcs["scheduler.py"].split(specialize._MARK, 1)[0]
    assert orig_head in head


def test_which_runs_use_it(monkeypatch):
    monkeypatch.delenv("COSMOS_SPECIALIZE", raising=False)
    assert specialize.use_specialized(None, specialize.MIN_REQUESTS)
    assert not specialize.use_specialized(None, specialize.MIN_REQUESTS - 1)
    assert specialize.use_specialized(True, 0)
    assert not specialize.use_specialized(False, 10**12)
    # a short run uses a build that is already compiled; the check is made only then
    assert specialize.use_specialized(None, 0, compiled=True)
    assert not specialize.use_specialized(None, 0, compiled=lambda: False)
    assert specialize.use_specialized(None, specialize.MIN_REQUESTS, compiled=lambda: 1 / 0)
    assert not specialize.use_specialized(False, 0, compiled=True)
    monkeypatch.setenv("COSMOS_SPECIALIZE", "0")
    assert not specialize.use_specialized(None, 10**12)
    monkeypatch.setenv("COSMOS_SPECIALIZE", "1")
    assert specialize.use_specialized(None, 0)
    monkeypatch.setenv("COSMOS_SPECIALIZE", "yes")
    with pytest.raises(ValueError, match="COSMOS_SPECIALIZE='yes': expected 0 or 1"):
        specialize.use_specialized(None, 0)


def test_an_unwritable_cache_falls_back_to_the_generic_engine(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("COSMOS_CACHE", str(blocker))        # kernels/ cannot be made in it
    tr = make_trace(num_queries=4, hops=2, reads_per_hop=4, seed=1)
    with pytest.warns(RuntimeWarning, match="no specialized engine"):
        r = simulate(get_preset("cosmos"), tr, specialize=True, progress=False)
    assert r.extra["specialized"] is False and r.summary()["qps"] > 0


def test_old_builds_are_pruned(tmp_path):
    import os

    for i in range(5):
        d = tmp_path / f"b{i}"
        d.mkdir()
        os.utime(d, (1000 + i, 1000 + i))
    specialize._prune(tmp_path, keep=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b3", "b4"]
