"""Keep numba's on-disk cache honest across modules.

numba's ``cache=True`` keys a cached function on its own source file only. A jitted function
that calls (and inlines) jitted code of another module, for example ``cosmos.engine`` calling
``dram.kernel.tick``, is not recompiled when that other module changes: after an update its
cached machine code would keep running the old callee against the new state layout (wrong
results, or a crash). :func:`drop_stale` closes that gap: called at the top of the calling
module, before its jitted functions are defined, it compares a digest of the module's source
and of every module it depends on with the digest stored beside the cache, and deletes the
module's cached entries when they differ, so numba compiles them afresh.

It handles numba's default cache location (``__pycache__`` beside the source). With
``NUMBA_CACHE_DIR`` set, numba keeps the cache elsewhere and this function does nothing.
It also has numba check every cache file it loads in this process against the checksum
written with it (:func:`cosmos_common.numba_cache.install`): a damaged file is reported in
one line, deleted and compiled again.

:func:`vectorizing` compiles the simulator's entry points with LLVM's SLP vectorizer on.
:func:`start_numba_lean` keeps numba's start-up from importing scipy.linalg and cffi, which the
simulator's kernels never use (about a quarter of a second of a short command's time).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

__all__ = ["drop_stale", "start_numba_lean", "vectorizing"]

#: Modules numba's start-up imports only to offer features the simulator's kernels do not use:
#: ``numba.np.arraymath`` imports scipy.linalg's BLAS to decide whether ``np.correlate`` and
#: ``np.convolve`` use it, ``numba.core.typing.cffi_utils`` imports cffi to type cffi calls.
_LEAN_START = {"numba.np.arraymath": "scipy.linalg.cython_blas",
               "numba.core.typing.cffi_utils": "cffi"}


def start_numba_lean() -> bool:
    """Import numba's start-up modules without scipy.linalg and cffi; True if it did.

    For processes that run only the simulator's kernels (``cosmos dram replay``): called
    before the first jitted call, it imports the numba modules of :data:`_LEAN_START` while
    their optional dependency is hidden, so numba records it as absent, then unhides it.
    Afterwards, in this process only, jitted ``np.correlate``/``np.convolve`` use numba's own
    loop instead of BLAS and jitted code cannot call cffi functions; every other numba
    feature (BLAS-backed ``np.dot`` and ``np.linalg`` included, which import scipy when they
    compile) and scipy itself work as usual, and machine code loaded from numba's cache is
    the same. Does nothing once numba has started (the modules are imported already).
    """
    import sys

    todo = {mod: dep for mod, dep in _LEAN_START.items() if mod not in sys.modules}
    if not todo:
        return False
    hidden = [dep for dep in todo.values() if dep not in sys.modules]
    for dep in hidden:
        sys.modules[dep] = None         # "import dep" raises ImportError
    try:
        import importlib

        for mod in todo:
            importlib.import_module(mod)
    finally:
        for dep in hidden:
            if sys.modules.get(dep, 0) is None:
                del sys.modules[dep]
    return True


@contextlib.contextmanager
def vectorizing():
    """Within this block, numba compiles with LLVM's SLP (straight-line code) vectorizer on.

    numba turned it off by default in 0.57 (numba pull request 8852) after miscompilations
    reported with vectorized math-library calls (numba issues 8681 and 8705). The kernels of
    this project do integer arithmetic only, and it is what turns the constraint table's
    max-updates (``dram.kernel._dense_max``) into vector instructions. The simulator's entry
    points (``dram.openloop.replay``, ``cosmos.simulate``) call their kernels inside this
    block, so the setting applies to the compilation their first call triggers and to
    nothing of the user's; a kernel already compiled (or loaded from numba's cache) is used
    as it is. Results do not depend on it: the Ramulator 2.1 comparisons and the
    every-cycle equivalence tests are exact and run the vectorized code.
    """
    from numba.core import config

    old = getattr(config, "SLP_VECTORIZE", None)
    if old is None:  # a numba without this switch: compile as it does by default
        yield
        return
    config.SLP_VECTORIZE = 1
    try:
        yield
    finally:
        config.SLP_VECTORIZE = old


def drop_stale(module_file: str, *dependencies: str) -> bool:
    """Delete the numba cache of ``module_file`` if it or a dependency changed since it was made
    (and check every cache file numba loads from now on: :mod:`cosmos_common.numba_cache`).

    Parameters
    ----------
    module_file : str
        ``__file__`` of the module whose jitted functions call into the dependencies.
    *dependencies : str
        ``__file__`` of each module whose jitted code the module calls. A package's
        ``__init__.py`` stands for every module of the package (``dram/kernel/``).

    Returns
    -------
    bool
        True when stale cache entries were deleted.
    """
    from cosmos_common.numba_cache import install

    install()       # the callers have imported numba: check what its cache loads
    if os.environ.get("NUMBA_CACHE_DIR"):
        return False
    src = Path(module_file)
    h = hashlib.sha256()
    for f in (src, *_with_package_modules(map(Path, dependencies))):
        h.update(f.read_bytes())
    digest = h.hexdigest()
    cache = src.parent / "__pycache__"
    stamp = cache / f"{src.stem}.jitdeps"
    try:
        if stamp.read_text() == digest:
            return False
    except OSError:
        pass
    dropped = False
    try:
        cache.mkdir(exist_ok=True)
        for entry in cache.glob(f"{src.stem}.*.nb[ic]*"):   # with their checksum files
            if not entry.name.endswith((".nbi", ".nbc", ".nbi.sha256", ".nbc.sha256")):
                continue
            try:
                entry.unlink()
                dropped = True
            except FileNotFoundError:  # another process dropped it first
                pass
        tmp = cache / f".{stamp.name}.{os.getpid()}"
        tmp.write_text(digest)
        os.replace(tmp, stamp)
    except OSError:  # read-only install: numba then caches elsewhere or not at all
        return dropped
    return dropped


def _with_package_modules(paths):
    """The files of ``paths``, a package's ``__init__.py`` followed by its other modules (in
    name order): code that inlines a package's functions depends on all of them."""
    for p in paths:
        yield p
        if p.name == "__init__.py":
            yield from sorted(q for q in p.parent.glob("*.py") if q.name != "__init__.py")
