"""The engine compiled for one DRAM configuration: its controller parameters as constants.

The DRAM kernel (:mod:`dram.kernel`) reads its geometry and policy (banks per group, queue
depths, watermarks, table offsets, ...) from ``params`` and the offsets of the regions of a
controller state from that state's header, at every use: the same machine code serves every
configuration. In a long simulation those loads, and the address arithmetic the compiler
cannot fold around them, cost about an eighth of the time (13-15 % less CPU time for the
default ``cosmos`` workload with them as constants; docs/system_model.md, "Speed").

:func:`specialized_engine` writes a copy of the package ``dram/kernel/`` in which every read of
a declared compile-time parameter (:mod:`dram.kernel.compiletime`: ``params.<field>`` of a field
of ``CONSTANT_PARAMS``, ``H[_u(H_<SLOT>)]`` of a slot of ``CONSTANT_SLOTS``) in a jitted
function is replaced by the value it has for the engine's one-channel controller states, and a
copy of ``cosmos/engine.py`` that imports that package instead of ``dram.kernel``. Both are
found in the sources' syntax trees (:func:`constant_reads`), not by their text; each generated
file opens with a header naming its generator and its source, and each kernel module defines
the constants it uses (its configuration) after its imports. tests/test_specialize.py walks
the kernel's syntax tree and fails on a parameter read the specializer would not see. The
copies are files in the cache directory (``$COSMOS_CACHE`` or ``~/.cache/cosmos``, folder
``kernels``), named by a digest of the sources and the values, so numba caches their compiled
code like any module's: the first simulation of a configuration compiles them (about a
minute), later ones load them. The code is the same source, so the results are identical to
the generic engine's (tests/test_specialize.py compares them).

:func:`cosmos.simulate.simulate` uses it when a run is long enough to repay the compilation
(:data:`MIN_REQUESTS`), for a shorter run once the build has run on this machine (a marker in
the build's ``__pycache__``, :func:`mark_compiled`: then the short run loads code that exists
instead of compiling the generic engine), or as told by its ``specialize`` argument or
``COSMOS_SPECIALIZE``.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import os
import sys
import threading
from pathlib import Path

import numpy as np

__all__ = ["MIN_REQUESTS", "build_status", "constant_reads", "is_compiled", "jitted_functions",
           "kernel_constants", "mark_compiled", "specialized_engine", "use_specialized"]

#: Runs of at least this many DRAM requests use the specialized engine by default: about 20 s
#: of simulation at the generic engine's 1.5 M requests/s, which gains ~3 s per run against
#: a compilation of about a minute made once per configuration and machine.
MIN_REQUESTS = 30_000_000

#: Builds kept in the cache folder (the most recently used; a build is ~9 MB with its code).
KEEP_BUILDS = 8

_ENGINE_KERNEL = ("dram", "kernel", "dk")      # engine.py's ``from dram import kernel as dk``


def use_specialized(requested: bool | None, requests: int, compiled=False) -> bool:
    """Whether a run of ``requests`` DRAM requests uses the specialized engine: as
    ``requested`` if not None, else as ``COSMOS_SPECIALIZE`` (``0`` or ``1``) if set, else
    when ``requests >= MIN_REQUESTS`` or its build is already compiled (``compiled``: a bool,
    or a callable asked only then; :func:`is_compiled`), since then it costs nothing to
    load and a short run would otherwise compile the generic engine."""
    if requested is not None:
        return bool(requested)
    env = os.environ.get("COSMOS_SPECIALIZE", "").strip()
    if env:
        if env not in ("0", "1"):
            raise ValueError(f"COSMOS_SPECIALIZE={env!r}: expected 0 or 1")
        return env == "1"
    if requests >= MIN_REQUESTS:
        return True
    return bool(compiled() if callable(compiled) else compiled)


def _is_jitted(fn: ast.FunctionDef) -> bool:
    """Whether ``fn`` is decorated with numba's ``njit`` (called or not)."""
    for d in fn.decorator_list:
        f = d.func if isinstance(d, ast.Call) else d
        if (isinstance(f, ast.Name) and f.id == "njit") or (
                isinstance(f, ast.Attribute) and f.attr == "njit"):
            return True
    return False


def jitted_functions(tree: ast.Module):
    """The module-level functions of ``tree`` that numba compiles."""
    return [n for n in tree.body if isinstance(n, ast.FunctionDef) and _is_jitted(n)]


def constant_reads(tree: ast.Module) -> list[tuple[ast.AST, str]]:
    """Every read the specializer turns into a constant, in the jitted functions of ``tree``:
    (node, constant name) for ``params.<f>`` with f in ``CONSTANT_PARAMS`` (``_K_P_<f>``) and
    ``H[_u(H_<SLOT>)]`` with the slot in ``CONSTANT_SLOTS`` (``_K_H_<SLOT>``)."""
    from dram.kernel.compiletime import CONSTANT_PARAMS, CONSTANT_SLOTS

    out = []
    for fn in jitted_functions(tree):
        for n in ast.walk(fn):
            if (isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)
                    and isinstance(n.value, ast.Name) and n.value.id == "params"
                    and n.attr in CONSTANT_PARAMS):
                out.append((n, f"_K_P_{n.attr}"))
            elif (isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load)
                  and isinstance(n.value, ast.Name) and n.value.id == "H"
                  and isinstance(n.slice, ast.Call) and isinstance(n.slice.func, ast.Name)
                  and n.slice.func.id == "_u" and len(n.slice.args) == 1
                  and not n.slice.keywords and isinstance(n.slice.args[0], ast.Name)
                  and n.slice.args[0].id in CONSTANT_SLOTS):
                out.append((n, f"_K_{n.slice.args[0].id}"))
    return out


def _replace(src: str, edits: list[tuple[ast.AST, str]]) -> str:
    """``src`` with the source of each node of ``edits`` replaced by its text (positions from
    the syntax tree; everything else, comments included, stays as it is)."""
    raw = src.encode()
    starts = [0]
    for line in raw.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    spans = sorted(((starts[n.lineno - 1] + n.col_offset,
                     starts[n.end_lineno - 1] + n.end_col_offset, text) for n, text in edits),
                   reverse=True)
    for a, b, text in spans:
        raw = raw[:a] + text.encode() + raw[b:]
    return raw.decode()


_TREES: dict[str, ast.Module] = {}
_CONSTANT_NAMES: dict[str, frozenset] = {}


def _parse(src: str) -> ast.Module:
    """The syntax tree of ``src``, parsed once per source (the trees are only read).

    CPython 3.11's ``ast.parse`` can fail with "SystemError: AST constructor recursion depth
    mismatch" when called deep in a call stack (seen in a sweep worker running a simulation,
    about 190 frames down; python/cpython#106905), so it runs in a thread of its own, which
    starts with an empty stack."""
    key = hashlib.sha256(src.encode()).hexdigest()
    if key not in _TREES:
        out: list = []
        worker = threading.Thread(target=lambda: out.append(ast.parse(src)))
        worker.start()
        worker.join()
        if not out:
            ast.parse(src)              # raise the parser's own error here
        _TREES[key] = out[0]
    return _TREES[key]


def _constant_names(src: str) -> frozenset:
    """The constants (``_K_...``) the kernel module of source ``src`` reads, memoized."""
    key = hashlib.sha256(src.encode()).hexdigest()
    if key not in _CONSTANT_NAMES:
        _CONSTANT_NAMES[key] = frozenset(c for _, c in constant_reads(_parse(src)))
    return _CONSTANT_NAMES[key]


def kernel_constants(params, heap0: np.ndarray, srcs: dict[str, str] | None = None
                     ) -> dict[str, int]:
    """Name -> value of every constant of the specialized kernel: the parameters and header
    slots (:mod:`dram.kernel.compiletime`) that its jitted functions read, for controller
    states like ``heap0`` (``dram.kernel.new_state(params, ...)``). ``srcs``: the kernel's
    sources (:func:`_kernel_sources`), if already read."""
    from dram import kernel as dk

    srcs = srcs if srcs is not None else _kernel_sources()
    names = set().union(*(_constant_names(s) for s in srcs.values()))
    out = {}
    for c in sorted(names):
        if c.startswith("_K_P_"):
            out[c] = int(getattr(params, c[len("_K_P_"):]))
        else:
            out[c] = int(heap0[getattr(dk, c[len("_K_"):])])
    return out


def _kernel_sources() -> dict[str, str]:
    """File name -> source of every module of the kernel package :mod:`dram.kernel`."""
    from dram import kernel as dk

    return {p.name: p.read_text() for p in sorted(Path(dk.__file__).parent.glob("*.py"))}


def _specialize_kernel(src: str, consts: dict[str, int], name: str) -> str:
    """The module ``name`` of the kernel package (source ``src``) with its constant reads
    replaced by the constants ``consts`` (defined after its ``from __future__`` import)."""
    tree = _parse(src)
    edits = constant_reads(tree)
    used = sorted({c for _, c in edits})
    lines = src.splitlines(keepends=True)
    fut = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "__future__"]
    at = fut[-1].end_lineno if fut else 0
    body = _replace("".join(lines[at:]), [(_shift(n, at), c) for n, c in edits])
    block = "".join(f"{c} = {consts[c]}\n" for c in used)
    if block:
        block = "\n# this build's configuration (cosmos.specialize.kernel_constants)\n" + block
    head = (f"# AUTO-GENERATED by cosmos.specialize from dram/kernel/{name}: do not edit.\n"
            "# Its jitted functions read the parameters and header slots that\n"
            "# dram/kernel/compiletime.py declares as the constants defined below the\n"
            "# __future__ import (one DRAM configuration, one controller-state shape).\n"
            "# Regenerate with cosmos.specialize.specialized_engine(params, heap0).\n")
    return head + "".join(lines[:at]) + block + body


def _shift(node: ast.AST, lines: int) -> ast.AST:
    """A copy of ``node``'s position, ``lines`` lines earlier."""
    return ast.Name(id="", lineno=node.lineno - lines, col_offset=node.col_offset,
                    end_lineno=node.end_lineno - lines, end_col_offset=node.end_col_offset)


def _engine_source(kname: str) -> str:
    """cosmos/engine.py with its import of the kernel package (``from dram import kernel as
    dk``, found in its syntax tree) importing the specialized package ``kname`` instead."""
    from cosmos import engine

    src = Path(engine.__file__).read_text()
    mod, name, alias = _ENGINE_KERNEL
    hits = [n for n in _parse(src).body if isinstance(n, ast.ImportFrom)
            and n.module == mod and [(a.name, a.asname) for a in n.names] == [(name, alias)]]
    if len(hits) != 1:
        raise RuntimeError("cosmos.specialize: cosmos/engine.py no longer imports the kernel "
                           f"as 'from {mod} import {name} as {alias}'")
    return ("# AUTO-GENERATED by cosmos.specialize from cosmos/engine.py: do not edit.\n"
            + _replace(src, [(hits[0], f"import {kname} as {alias}")]))


def _cache_root() -> Path:
    from cosmos_common.cacheio import default_cache_dir

    return default_cache_dir() / "kernels"


def _holds(path: Path, text: str) -> bool | None:
    """Whether ``path`` holds exactly ``text`` (None: there is no such file)."""
    try:
        return path.read_bytes() == text.encode()
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return False


def _write_build(folder: Path, tag: str, sources: dict[str, str]) -> None:
    """Make ``folder`` hold exactly ``sources`` (file name -> text) and their checksum
    record (a file entry of kind ``kernels`` of :mod:`cosmos_common.cacheio`, for ``cosmos
    cache verify``). A file that differs from its generated text (damaged, edited) is
    reported in one warning line and written again; its changed modification time makes
    numba compile it again instead of using its cached code. Files are written to a
    temporary name and renamed: another process may be writing the same build."""
    from cosmos_common import cacheio

    record = cacheio.record_path(folder, "build")
    same = {name: _holds(folder / name, text) for name, text in sources.items()}
    for name, ok in same.items():
        if ok is False:
            cacheio.report(folder / name, "differs from the source generated for this build",
                           "writing it again")
    if all(same.values()):
        with cacheio.quiet():       # a build of an older version has no record: no news
            if cacheio.read_files(record, "kernels", tag,
                                  [folder / n for n in sources]) is not None:
                return
    cacheio.store_files(record, "kernels", tag, {
        folder / name: (lambda p, t=text: None if _holds(p, t) else cacheio.atomic_write(p, t.encode()))
        for name, text in sources.items()})


def _load(name: str, path: Path, package: bool = False):
    """Import the module (or, with ``package``, the package whose ``__init__.py`` is
    ``path``: its modules are the other files of its folder) as ``name``."""
    mod = sys.modules.get(name)
    if mod is not None:
        return mod
    spec = importlib.util.spec_from_file_location(
        name, path, submodule_search_locations=[str(path.parent)] if package else None)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        del sys.modules[name]
        raise
    return mod


def _sources(params, heap0: np.ndarray) -> tuple[str, dict[str, str]]:
    """(tag, specialized kernel package: file name -> source) of the build for ``params`` and
    states like ``heap0``: the tag is a digest of everything compiled in (the engine too)."""
    from cosmos import engine

    srcs = _kernel_sources()
    consts = kernel_constants(params, heap0, srcs)
    ksrc = {name: _specialize_kernel(s, consts, name) for name, s in srcs.items()}
    digest = hashlib.sha256()
    for part in (*ksrc.keys(), *ksrc.values(), Path(engine.__file__).read_text(),
                 *_dependency_sources()):
        digest.update(part.encode())
    return digest.hexdigest()[:16], ksrc


def _compiled_marker(folder: Path) -> Path:
    """The file that says the build in ``folder`` was compiled into numba's cache as it is
    now located (``NUMBA_CACHE_DIR``, or ``__pycache__`` beside the sources): in the build's
    ``__pycache__``, which belongs to the build (``cosmos cache``)."""
    where = hashlib.sha256(os.environ.get("NUMBA_CACHE_DIR", "").encode()).hexdigest()[:12]
    return folder / "__pycache__" / f"cosmos-compiled-{where}"


def build_status(params, heap0: np.ndarray) -> tuple[str, bool] | None:
    """``(tag, compiled)`` of the build for ``params`` and states like ``heap0``: its name (a
    digest of everything compiled in) and whether it has run on this machine with the current
    numba cache (:func:`mark_compiled`), so loading it compiles nothing. None if no build can
    be made (its sources cannot be read)."""
    try:
        tag = _sources(params, heap0)[0]
        return tag, _compiled_marker(_cache_root() / tag).is_file()
    except (OSError, RuntimeError):
        return None


def is_compiled(params, heap0: np.ndarray) -> bool:
    """Whether the build for ``params`` and states like ``heap0`` has run on this machine
    with the current numba cache (:func:`build_status`); False when no build can be made
    (the generic engine decides)."""
    status = build_status(params, heap0)
    return status is not None and status[1]


def mark_compiled(module) -> None:
    """Record that the specialized engine ``module`` (from :func:`specialized_engine`) has
    run, so its code is in numba's cache; silently nothing if the folder is not writable."""
    marker = _compiled_marker(Path(module.__file__).parent)
    if marker.is_file():
        return
    try:
        marker.parent.mkdir(exist_ok=True)
        marker.touch()
    except OSError:
        pass


def specialized_engine(params, heap0: np.ndarray):
    """The :mod:`cosmos.engine` module compiled for one-channel controller states like
    ``heap0`` of the DRAM configuration ``params`` (a module object with the same functions;
    use only with such states). Written to and loaded from the cache directory."""
    tag, ksrc = _sources(params, heap0)
    kname, ename = f"_cosmos_kernel_{tag}", f"_cosmos_engine_{tag}"
    esrc = _engine_source(kname)
    folder = _cache_root() / tag
    folder.mkdir(parents=True, exist_ok=True)
    os.utime(folder)                # most recently used: kept by _prune
    _prune(folder.parent)
    _write_build(folder, tag, {**ksrc, f"{ename}.py": esrc})
    _load(kname, folder / "__init__.py", package=True)
    return _load(ename, folder / f"{ename}.py")


def _prune(root: Path, keep: int = KEEP_BUILDS) -> None:
    """Delete all but the ``keep`` most recently used builds in ``root`` (each code change
    or new configuration makes a new one)."""
    import shutil

    builds = sorted((p for p in root.iterdir() if p.is_dir()),
                    key=lambda p: p.stat().st_mtime, reverse=True)
    for old in builds[keep:]:
        shutil.rmtree(old, ignore_errors=True)


def _dependency_sources():
    """Sources whose constants the engine and kernel compile in (part of the digest)."""
    import dram.config
    import dram.standards.ddr5
    from cosmos import program

    for m in (dram.config, dram.standards.ddr5, program):
        yield Path(m.__file__).read_text()
