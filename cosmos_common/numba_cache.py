"""numba's on-disk cache of compiled kernels, checked before it is trusted.

numba's ``cache=True`` keeps each jitted function's machine code in a ``__pycache__`` folder:
an index ``<module>.<function>-<line>.py311.nbi`` and one data file ``... .<n>.nbc`` per
compiled signature, pickles holding the object code and the LLVM bitcode of the function.
numba verifies neither: a damaged data file fails every later run with a traceback from deep
inside numba (``RuntimeError: LLVM bitcode parsing error``) until the folder is deleted, or,
worse, loads and runs damaged machine code.

:func:`install` (called by every module of the simulator that defines cached kernels, before
their first call) patches numba's cache classes in this process:

- every index and data file numba writes gets a *seal* beside it, ``<file>.sha256``: the
  SHA-256 of its bytes;
- a file is loaded only if its bytes match its seal; a file without a seal (written by an
  older version, or by numba outside the simulator) is sealed once it has loaded and its
  code rebuilt (numba writes its files by a rename, so a file that loads was written whole);
- a file that does not match its seal, cannot be unpickled or does not rebuild (its bitcode
  does not parse) is reported in one line naming it and its folder (a
  :class:`cosmos_common.cacheio.CacheWarning`), deleted, and the function compiled afresh:
  the run goes on, a minute or two slower.

:func:`check_file` checks one file without loading it into numba (``cosmos cache verify``):
its seal, or, without one, that it unpickles and its bitcode parses. :func:`package_folders`
lists the folders holding the simulator's own compiled kernels.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

__all__ = ["SEAL_SUFFIX", "install", "seal", "check_seal", "check_file", "is_numba_file",
           "numba_files", "package_folders", "remove", "first_run_note", "COMPILE_NOTE_ENV"]

#: the seal of a cache file ``F`` is ``F + SEAL_SUFFIX``: the hex SHA-256 of F's bytes
SEAL_SUFFIX = ".sha256"
#: the first bytes of an object file: ELF, Mach-O (64-bit), COFF (x86-64)
_OBJECT_MAGIC = (b"\x7fELF", b"\xcf\xfa\xed\xfe", b"\x64\x86")
#: the simulator's packages (and sub-packages) that define cached kernels (their ``__pycache__``
#: folders)
PACKAGES = ("dram", "dram.kernel", "cosmos", "graphs", "placement", "experiments",
            "cosmos_common")


def is_numba_file(path: Path) -> bool:
    """A numba cache file: an index (``.nbi``) or a data file (``.nbc``)."""
    return path.suffix in (".nbi", ".nbc")


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def seal(path: str | os.PathLike) -> None:
    """Write the seal of the numba cache file ``path`` (atomically; nothing if the file is
    gone or the folder is not writable)."""
    path = Path(path)
    try:
        digest = _digest(path.read_bytes())
        tmp = path.with_name(f".{path.name}{SEAL_SUFFIX}.{os.getpid()}.tmp")
        tmp.write_text(digest + "\n")
        os.replace(tmp, path.with_name(path.name + SEAL_SUFFIX))
    except OSError:
        pass


def check_seal(path: str | os.PathLike, retry_s: float = 0.2) -> str | None:
    """``"unsealed"`` if the numba cache file ``path`` has no seal, a problem if its bytes do
    not match it, None if they do. A mismatch is read again after ``retry_s`` seconds: another
    process may be between replacing the file and its seal."""
    path = Path(path)
    sealed = path.with_name(path.name + SEAL_SUFFIX)
    for attempt in (0, 1):
        try:
            want = sealed.read_text().strip()
        except FileNotFoundError:
            return "unsealed"
        except OSError as exc:
            return f"its checksum file {sealed.name} is unreadable ({exc.strerror or exc})"
        try:
            have = _digest(path.read_bytes())
        except OSError as exc:
            return f"unreadable ({exc.strerror or exc})"
        if have == want:
            return None
        if attempt == 0:
            time.sleep(retry_s)
    return (f"its bytes do not match their SHA-256 in {sealed.name} (the file was changed "
            f"after numba wrote it)")


def check_file(path: str | os.PathLike) -> str | None:
    """What is wrong with the numba cache file ``path``, or None: its seal if it has one,
    else whether it unpickles and, for a data file, whether its object code is an ELF,
    Mach-O or COFF object and its LLVM bitcode parses (numba's own load steps)."""
    path = Path(path)
    problem = check_seal(path)
    if problem != "unsealed":
        return problem
    try:
        data = path.read_bytes()
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    try:
        return _check_payload(path, data)
    except Exception as exc:    # noqa: BLE001  (any failure to load is damage)
        return f"does not load ({_one_line(exc)})"


class _Stub:
    """Stands for every object of a class an unpickled cache file names (:func:`_inert`)."""

    def __new__(cls, *args, **kwargs):
        return object.__new__(cls)

    def __init__(self, *args, **kwargs):
        pass

    def __setstate__(self, state):
        pass


def _inert(data: bytes):
    """Unpickle ``data`` without importing or calling anything it names: every class or
    function is :class:`_Stub` (unpickling numba's cache files as numba does would import
    the modules they were compiled from, which may not be importable here, and run them).
    Returns (the first object, the bytes after it)."""
    import io
    import pickle

    class Inert(pickle.Unpickler):
        def find_class(self, module, name):
            return _Stub

    f = io.BytesIO(data)
    first = Inert(f).load()
    return first, f.read()


def _check_payload(path: Path, data: bytes) -> str | None:
    """Unpickle an index or data file as numba does, without importing what it names, and
    check what it holds."""
    if path.suffix == ".nbi":
        _, rest = _inert(data)                      # numba's version, then the table
        stamp_overloads, _ = _inert(rest)
        if not (isinstance(stamp_overloads, tuple) and len(stamp_overloads) == 2
                and isinstance(stamp_overloads[1], dict)):
            return "does not load (no table of compiled signatures in it)"
        return None
    payload, _ = _inert(data)
    lib = payload[0] if isinstance(payload, tuple) and payload else None
    if not (isinstance(lib, tuple) and len(lib) == 3):
        return "does not load (no compiled library in it)"
    _, kind, body = lib
    if kind == "object":
        code, bitcode = body
        if not bytes(code[:4]).startswith(_OBJECT_MAGIC):
            return "does not load (its object code has no object file header)"
    elif kind == "bitcode":
        bitcode = body
    else:
        return f"does not load (unknown library kind {kind!r})"
    from llvmlite import binding as llvm

    llvm.parse_bitcode(bitcode)
    return None


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def remove(path: str | os.PathLike) -> None:
    """Delete a numba cache file and its seal (either may be gone already; a folder that
    cannot be written keeps them: numba then compiles the function at every run)."""
    path = Path(path)
    for p in (path, path.with_name(path.name + SEAL_SUFFIX)):
        try:
            p.unlink()
        except OSError:
            pass


def numba_files(folder: str | os.PathLike) -> list[Path]:
    """The numba cache files (index and data) in ``folder``, sorted."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and is_numba_file(p))


def package_folders() -> list[Path]:
    """The folders that hold the compiled kernels of the simulator's packages: each package's
    ``__pycache__`` (numba's default) and, with ``NUMBA_CACHE_DIR`` set, numba's folder for
    the package under it. Only folders that exist."""
    import importlib.util

    out = []
    cache_dir = os.environ.get("NUMBA_CACHE_DIR")
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            continue
        for loc in spec.submodule_search_locations:
            pkg = Path(loc).resolve()
            cands = [pkg / "__pycache__"]
            if cache_dir:
                cands.append(Path(cache_dir) / pkg.relative_to(pkg.anchor))
            out += [c for c in cands if c.is_dir() and c not in out]
    return out


#: ``off`` silences :func:`first_run_note` (the tests set it; a note once printed sets it, so
#: that the run's worker processes do not repeat it)
COMPILE_NOTE_ENV = "COSMOS_COMPILE_NOTE"


def first_run_note() -> str | None:
    """The line a run prints when none of the simulator's compiled kernels is cached yet
    (no numba index in any folder of :func:`package_folders`): this run compiles them. At
    most once per process tree (:data:`COMPILE_NOTE_ENV`); None otherwise."""
    if os.environ.get(COMPILE_NOTE_ENV) == "off":
        return None
    os.environ[COMPILE_NOTE_ENV] = "off"
    if any(next(folder.glob("*.nbi"), None) is not None for folder in package_folders()):
        return None
    return ("numba: no compiled kernels are cached yet, so this first run compiles them, about "
            "a minute on 2 cores for each kind it uses (DRAM model, system engine, graph search; "
            "docs/performance.md); later runs load them")


def _damaged(path: Path, problem: str) -> None:
    """Report the damaged cache file ``path`` in one line and delete it (numba then compiles
    the function again and writes it anew)."""
    from cosmos_common.cacheio import report

    remove(path)
    report(path, f"numba's compiled code is damaged: {problem}",
           f"deleted, compiling the function again (a minute or two); if this repeats, "
           f"delete the folder {path.parent}", stacklevel=4)


def install() -> bool:
    """Seal what numba's cache writes and check what it loads, in this process (module
    docstring). Idempotent; False (nothing patched) if this numba's cache classes are not
    the ones expected."""
    from numba.core import caching

    files, cache = getattr(caching, "IndexDataCacheFile", None), getattr(caching, "Cache", None)
    if getattr(files, "_cosmos_sealed", False):
        return True
    note = first_run_note()
    if note:
        import sys

        print(note, file=sys.stderr, flush=True)
    needed = {files: ("_load_index", "_save_index", "_load_data", "_save_data", "_data_path"),
              cache: ("_load_overload", "_index_key")}
    if not all(hasattr(c, n) for c, names in needed.items() for n in names):
        return False
    load_index, save_index = files._load_index, files._save_index
    load_data, save_data = files._load_data, files._save_data
    load_overload = cache._load_overload

    def _save_index(self, overloads):
        save_index(self, overloads)
        if getattr(self, "_index_path", None):
            seal(self._index_path)

    def _save_data(self, name, data):
        save_data(self, name, data)
        seal(self._data_path(name))

    def _load_index(self):
        if not getattr(self, "_index_path", None):
            return load_index(self)
        path = Path(self._index_path)
        problem = check_seal(path) if path.exists() else None
        if problem in (None, "unsealed"):
            try:
                return load_index(self)
            except Exception as exc:        # noqa: BLE001  (an index that does not unpickle)
                problem = f"does not load ({_one_line(exc)})"
        _damaged(path, problem)
        return {}                           # as an empty cache: compile, write a new index

    def _load_data(self, name):
        path = Path(self._data_path(name))
        problem = check_seal(path) if path.exists() else None
        if problem in (None, "unsealed"):
            try:
                return load_data(self, name)
            except OSError:
                raise
            except Exception as exc:        # noqa: BLE001  (a data file that does not unpickle)
                problem = f"does not load ({_one_line(exc)})"
        _damaged(path, problem)
        raise FileNotFoundError(path)       # numba takes it as a file removed: compiles again

    def _load_overload(self, sig, target_context):
        try:
            out = load_overload(self, sig, target_context)
        except Exception as exc:            # noqa: BLE001  (unpickled, but does not rebuild)
            path = _data_file_of(self, sig, target_context)
            if path is None:
                raise
            _damaged(path, f"does not load ({_one_line(exc)})")
            return None
        if out is not None:                 # loaded and rebuilt: seal what had no seal yet
            path = _data_file_of(self, sig, target_context)
            index = getattr(getattr(self, "_cache_file", None), "_index_path", None)
            for p in (path, Path(index) if index else None):
                if p is not None and not p.with_name(p.name + SEAL_SUFFIX).exists():
                    seal(p)
        return out

    files._save_index, files._save_data = _save_index, _save_data
    files._load_index, files._load_data = _load_index, _load_data
    cache._load_overload = _load_overload
    files._cosmos_sealed = True
    return True


def _data_file_of(cache, sig, target_context) -> Path | None:
    """The data file numba's ``cache`` holds for ``sig`` (None if its index has none)."""
    try:
        f = cache._cache_file
        key = cache._index_key(sig, target_context.codegen())
        name = f._load_index().get(key)
        return Path(f._data_path(name)) if name else None
    except Exception:                       # noqa: BLE001
        return None
