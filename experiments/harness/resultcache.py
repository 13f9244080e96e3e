"""A cache of finished simulations, so an interrupted or repeated reproduction resumes.

A sweep task (keyword arguments of :func:`experiments.harness.sim.simulate_task`) is a pure function
of its arguments, the trace file it reads and the simulator's code: the simulator is
deterministic (same inputs, same outputs, bit for bit). Its row is therefore stored under a
key that hashes exactly those:

- what decides the task's result (for ``simulate_task``: the system's resolved configuration
  and the run options, :func:`experiments.harness.sim.simulation_identity`; not its ``tags``), with
  ``trace_path`` replaced by a digest of the trace's content (:func:`file_digest`: the same
  trace saved in another results folder has the same key);
- a digest of the source of the packages a simulation runs (``cosmos``, ``dram``, ``graphs``,
  ``placement``) and of the sweep tasks' module (``experiments/harness/sim.py``), and the
  Python, numpy and numba versions: any edit to the simulator makes every earlier entry a
  miss, never a wrong hit.

Identical simulations asked for by different experiments therefore run once (``cosmos
reproduce --full`` asks for 83 closed-loop simulations, 50 of them distinct).

Entries are value entries of :mod:`cosmos_common.cacheio` (kind ``simulations``), JSON files
``<cache>/simulations/<key[:2]>/<key>.json`` holding the row, the key it answers, the names
and JSON types of the row's fields and a SHA-256 over all of it; they are written to a
temporary name and renamed, so a run killed mid-write leaves no partial entry. Every read
verifies the entry: a damaged one (a flipped byte, a missing field, a wrong type, another
key, an older layout) is reported in one warning line naming the file, simulated again and
overwritten, and does not count as read from the cache. Rows are normalized to plain Python
values (numpy scalars become ints and floats) whether they come from the cache or from a
fresh simulation, so a resumed run writes the same CSVs as an uninterrupted one. ``cosmos
cache verify`` checks every entry; delete the folder to drop the cache; ``--no-sim-cache``
neither reads nor writes it.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import zipfile
from pathlib import Path
from typing import Any, Callable

from cosmos_common import cacheio

__all__ = ["ResultCache", "code_digest", "file_digest", "normalize"]

#: packages whose source decides a simulation's result
_PACKAGES = ("cosmos", "dram", "graphs", "placement")
#: and the module of the sweep tasks themselves (simulate_task, retrieval_task)
_MODULES = ("experiments.harness.sim",)
_FORMAT = 1  # bump when what a key covers changes (the entry layout is cacheio's)
KIND = "simulations"

_file_digests: dict[tuple, str] = {}
_code_digest: str | None = None


def _update(h, fh) -> None:
    for block in iter(lambda: fh.read(1 << 22), b""):
        h.update(block)


def file_digest(path: str | os.PathLike) -> str:
    """BLAKE2b digest of a file's content (memoized per path, size and modification time).

    A zip archive (a trace ``.npz``) is digested by its members' names and uncompressed bytes,
    not by the archive's bytes, which also hold the time each member was written: the same
    trace saved twice has the same digest.
    """
    p = Path(path).resolve()
    st = p.stat()
    memo = (str(p), st.st_size, st.st_mtime_ns)
    if memo not in _file_digests:
        h = hashlib.blake2b(digest_size=20)
        if zipfile.is_zipfile(p):
            with zipfile.ZipFile(p) as z:
                for name in sorted(z.namelist()):
                    h.update(f"{name}\0{z.getinfo(name).file_size}\0".encode())
                    with z.open(name) as fh:
                        _update(h, fh)
        else:
            with open(p, "rb") as fh:
                _update(h, fh)
        _file_digests[memo] = h.hexdigest()
    return _file_digests[memo]


def code_digest() -> str:
    """Digest of the simulator's source (every ``.py`` file of :data:`_PACKAGES` by relative
    path and content, and each module of :data:`_MODULES` by name and content) and of the
    Python, numpy and numba versions."""
    global _code_digest
    if _code_digest is None:
        import importlib

        import numba
        import numpy

        h = hashlib.blake2b(digest_size=20)
        for name in _PACKAGES:
            root = Path(importlib.import_module(name).__file__).parent
            for f in sorted(root.rglob("*.py")):
                h.update(f"{name}/{f.relative_to(root).as_posix()}\0".encode())
                h.update(f.read_bytes())
        for name in _MODULES:
            h.update(f"{name}\0".encode())
            h.update(Path(importlib.import_module(name).__file__).read_bytes())
        h.update(f"{platform.python_version()} {numpy.__version__} {numba.__version__}"
                 .encode())
        _code_digest = h.hexdigest()
    return _code_digest


def normalize(value: Any) -> Any:
    """``value`` with numpy scalars as Python ints/floats/bools and tuples as lists
    (recursively), the form a JSON round trip returns."""
    if isinstance(value, dict):
        return {str(k): normalize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [normalize(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        return value.item()
    return value


class ResultCache:
    """Rows of finished simulation tasks under ``root`` (see the module docstring).

    ``identity(task)`` maps a task (without its ``tags``) to what decides its result besides
    the trace's content and the code (default: the task itself); for ``simulate_task`` it is
    :func:`experiments.harness.sim.simulation_identity`, which resolves the system's configuration, so
    the same simulation asked for by two experiments (e.g. four devices in the devices sweep
    and the saturation point of the load sweep) is run once.
    """

    def __init__(self, root: str | os.PathLike | None,
                 identity: Callable[[dict], dict] | None = None, memo: dict | None = None):
        self.root = None if root is None else Path(root)
        self.identity = identity or (lambda task: task)
        #: rows this process already has, by key: ``{key: (row, read_from_disk)}``, shared
        #: by the caches of one reproduction (None: none); ``root`` None: no disk, memo only
        self.memo = memo

    def key(self, fn: Callable, task: dict) -> str:
        """The key of ``fn(**task)``: its name, the identity of its arguments (the trace file
        by content; tags left out) and the code digest."""
        args = self.identity({k: v for k, v in task.items() if k != "tags"})
        if "trace_path" in args:
            args["trace_path"] = "blake2b:" + file_digest(args["trace_path"])
        blob = json.dumps({"format": _FORMAT, "fn": f"{fn.__module__}.{fn.__qualname__}",
                           "args": normalize(args), "code": code_digest()},
                          sort_keys=True, allow_nan=True)
        return hashlib.blake2b(blob.encode(), digest_size=20).hexdigest()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> Any | None:
        """The stored row, or None: no entry, or one that does not verify (reported by a
        one-line :class:`cosmos_common.cacheio.CacheWarning`; it is simulated again)."""
        if self.root is None:
            return None
        return cacheio.read_value(self._path(key), KIND, key)

    def put(self, key: str, row: Any) -> None:
        """Store ``row`` (atomically: a temporary file renamed into place)."""
        if self.root is None:
            return
        cacheio.write_value(self._path(key), KIND, key, normalize(row))

    def sweep(self, fn: Callable, tasks: list[dict],
              run: Callable[..., list[Any]]) -> tuple[list[Any], int]:
        """Rows of ``fn(**task)`` for every task, in order: stored ones are read, the others
        run by ``run(fn, missing_tasks, on_result=...)`` (:func:`experiments.harness.common.run_sweep`
        with its options bound), each stored as soon as it has finished; tasks with the same
        key run once. Returns (rows, how many tasks were served from the cache). A task whose
        key is in ``memo`` takes the row there (it counts as served from the cache if that row
        was); every row read or run here is added to ``memo``.

        ``fn`` must lead its row with the task's ``tags`` (``{**tags, **row without tags}``,
        as ``simulate_task`` does): what is stored is the row of the task without tags, and
        each task's tags are put in front again.
        """
        keys = [self.key(fn, t) for t in tasks]
        memo = self.memo if self.memo is not None else {}
        got: dict[str, Any] = {}
        from_disk: dict[str, bool] = {}
        for k in keys:
            if k in got:
                continue
            if k in memo:
                got[k], from_disk[k] = memo[k]
            else:
                got[k] = self.get(k)
                from_disk[k] = got[k] is not None
        todo = [k for k in got if got[k] is None]
        hits = sum(from_disk[k] for k in keys)
        if todo:
            first: dict[str, int] = {}                # key -> its first task
            for i, k in enumerate(keys):
                first.setdefault(k, i)
            bare = [{a: v for a, v in tasks[first[k]].items() if a != "tags"} for k in todo]

            def store(j: int, row: Any) -> None:
                self.put(todo[j], row)

            for k, row in zip(todo, run(fn, bare, on_result=store)):
                got[k] = normalize(row)
        for k in got:
            memo.setdefault(k, (got[k], from_disk[k]))
        rows = []
        for t, k in zip(tasks, keys):
            row = dict(normalize(t.get("tags") or {}))
            row.update(got[k])
            rows.append(row)
        return rows, hits
