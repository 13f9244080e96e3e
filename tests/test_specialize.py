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


def unseen_reads(src: str, kernel_functions: set[str]) -> list[str]:
    """Every read, in the jitted functions of the module ``src``, of a parameter or a header
    slot that the specializer would not turn into a constant nor knowingly leave a load:
    ``params`` used otherwise than as ``params.<declared field>`` or passed whole to a kernel
    function, a header slot (``H_*``) used otherwise than as ``H[_u(H_<declared slot>)]``."""
    import ast

    from dram.kernel import layout
    from dram.kernel.compiletime import (CONSTANT_PARAMS, CONSTANT_SLOTS, RUNTIME_PARAMS,
                                         TYPE_CONSTANTS)

    slots = {n for n in vars(layout) if n.startswith("H_")}
    tree = ast.parse(src)
    parent = {}
    for n in ast.walk(tree):
        for ch in ast.iter_child_nodes(n):
            parent[ch] = n
    bad = []
    for fn in specialize.jitted_functions(tree):
        for n in ast.walk(fn):
            if not isinstance(n, ast.Name):
                continue
            up = parent[n]
            where = f"line {n.lineno}:{n.col_offset} ({fn.name}): {ast.unparse(up)}"
            if n.id == "params":
                if isinstance(up, ast.Attribute):
                    if up.attr not in CONSTANT_PARAMS + RUNTIME_PARAMS:
                        bad.append(f"undeclared parameter, {where}")
                elif not (isinstance(up, ast.Call) and n in up.args
                          and isinstance(up.func, ast.Name)
                          and (up.func.id in kernel_functions or up.func.id in TYPE_CONSTANTS)):
                    bad.append(f"params used otherwise, {where}")
            elif n.id in slots:
                call = up
                sub = parent.get(call)
                if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                        and call.func.id == "_u" and call.args == [n] and not call.keywords
                        and isinstance(sub, ast.Subscript) and sub.slice is call
                        and isinstance(sub.value, ast.Name) and sub.value.id == "H"
                        and isinstance(sub.ctx, ast.Load)):
                    bad.append(f"header slot used otherwise, {where}")
                elif n.id not in CONSTANT_SLOTS:
                    bad.append(f"undeclared header slot, {where}")
    return sorted(bad, key=lambda b: tuple(int(x) for x in b.split("line ")[1].split(" ")[0].split(":")))


def _kernel_function_names():
    import ast

    return {fn.name for s in specialize._kernel_sources().values()
            for fn in specialize.jitted_functions(ast.parse(s))}


def test_every_parameter_read_is_one_the_specializer_sees():
    names = _kernel_function_names()
    bad = {name: unseen_reads(src, names) for name, src in specialize._kernel_sources().items()}
    assert not any(bad.values()), bad


def test_the_walk_catches_reads_the_specializer_would_miss():
    src = '''
from numba import njit

@njit
def f(params, H, g):
    p = params
    a = p.read_q + getattr(params, "write_q") + params.not_declared
    b = H[H_O_SLOT] + H[_u(H_O_CH + g)] + H[_u(H_NSTAT)]
    H[_u(H_G)] = 1
    return g(params) + ok(params, H) + H[_u(H_O_Q)] + params.read_q + params.tab[0]

def not_jitted(params, H):
    return params, H[H_G]
'''
    bad = unseen_reads(src, {"ok"})
    assert [b.split(",")[0] for b in bad] == [
        "params used otherwise",            # p = params
        "params used otherwise",            # getattr(params, ...)
        "undeclared parameter",             # params.not_declared
        "header slot used otherwise",       # H[H_O_SLOT]
        "header slot used otherwise",       # H[_u(H_O_CH + g)]
        "undeclared header slot",           # H_NSTAT
        "header slot used otherwise",       # a store
        "params used otherwise",            # passed to a function not of the kernel
    ], bad


def test_the_generated_kernel_reads_no_declared_parameter_or_header_slot():
    import ast
    import dataclasses

    from cosmos.simulate import dram_config_for
    from dram import kernel as dk
    from dram.kernel.compiletime import RUNTIME_PARAMS

    params = dataclasses.replace(dram_config_for(get_preset("cosmos")), channels=1).resolve()
    heap0 = dk.new_state(params, completion_capacity=64, direct_reads=True).heap
    srcs = specialize._kernel_sources()
    consts = specialize.kernel_constants(params, heap0, srcs)
    left = set()
    for name, src in srcs.items():
        gen = specialize._specialize_kernel(src, consts, name)
        assert gen.startswith(f"# AUTO-GENERATED by cosmos.specialize from dram/kernel/{name}")
        tree = ast.parse(gen)
        assert specialize.constant_reads(tree) == []        # every declared read is a constant
        for fn in specialize.jitted_functions(tree):
            left |= {n.attr for n in ast.walk(fn) if isinstance(n, ast.Attribute)
                     and isinstance(n.value, ast.Name) and n.value.id == "params"}
        # the constants a module uses are defined in it, with this configuration's values
        for c in {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} & set(consts):
            assert f"\n{c} = {consts[c]}\n" in gen
        # below its header and besides its constants, it is the source line for line (comments
        # included), changed only where a line has such a read
        body = [ln for ln in gen.splitlines()[5:] if ln.strip()
                and not re.fullmatch(r"_K_\w+ = -?\d+|# this build's configuration .*", ln)]
        lines = [ln for ln in src.splitlines() if ln.strip()]
        assert len(body) == len(lines)
        assert all(a == b or "params." in b or "H[_u(H_" in b for a, b in zip(body, lines))
    assert left == set(RUNTIME_PARAMS)          # the table and nREFI stay loads
    assert consts["_K_P_read_q"] == params.read_q
    assert consts["_K_H_O_SLOT"] == heap0[dk.H_O_SLOT]
    assert consts["_K_H_DIRECT"] == 1


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
