"""``cosmos cache info`` and ``cosmos cache verify``: what the cache folder holds, and whether
every entry is intact.

The cache folder (``$COSMOS_CACHE`` or ``~/.cache/cosmos``, or ``--cache-dir``) holds one
folder per kind of entry (:data:`cosmos_common.cacheio.KINDS`); every entry carries the
checksums of :mod:`cosmos_common.cacheio`, which the simulator verifies at each read (and
recomputes a bad entry). ``verify`` checks every entry now, without running anything, and
the compiled kernels the simulator loads: numba's cache files of its packages (their
``__pycache__`` folders, or under ``NUMBA_CACHE_DIR``) and of the specialized builds in the
cache folder, each against the checksum written with it, or, without one, by loading it as
numba would (:func:`cosmos_common.numba_cache.check_file`).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

__all__ = ["register", "cache_info", "cache_verify"]


def _human(n: int) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n} B"  # pragma: no cover


def _root(args) -> Path:
    from cosmos_common.cacheio import default_cache_dir

    return Path(args.cache_dir) if args.cache_dir else default_cache_dir()


def cache_info(root: Path) -> list[dict]:
    """One dict per kind (and per other folder found under ``root``): ``kind``, ``entries``,
    ``bytes``, ``holds``."""
    from cosmos_common import cacheio

    rows = []
    for kind, holds in cacheio.KINDS.items():
        ents = cacheio.entries(root, kind)
        rows.append({"kind": kind, "entries": len(ents),
                     "bytes": sum(cacheio.sizes(files) for _, files, _ in ents),
                     "holds": holds})
    if root.is_dir():
        for p in sorted(root.iterdir()):
            if p.name in cacheio.KINDS:
                continue
            files = [f for f in p.rglob("*") if f.is_file()] if p.is_dir() else [p]
            rows.append({"kind": p.name, "entries": len(files),
                         "bytes": cacheio.sizes(files), "holds": "not the simulator's (not checked)"})
    return rows


def cache_verify(root: Path, kinds: list[str], delete: bool = False, out=None):
    """Check every entry of ``kinds`` under ``root``; print one line per bad entry (and delete
    its files if ``delete``). Returns (entries checked, bad entries)."""
    from cosmos_common import cacheio

    out = out or sys.stdout
    checked = bad = 0
    for kind in kinds:
        for path, files, problem in cacheio.entries(root, kind):
            checked += 1
            # a simulation entry is found by its key: its file name must be the key it answers
            problem = problem or cacheio.check_entry(
                path, key=path.stem if kind == "simulations" else None)
            if problem is None and kind == "kernels":
                problem = _compiled_problem(files)      # numba's code of the build
            if problem is None:
                continue
            bad += 1
            note = ""
            if delete:
                for f in files:
                    try:
                        f.unlink()
                    except FileNotFoundError:
                        pass
                _prune_empty(path.parent, root / kind)
                note = " (deleted)"
            print(f"{path}: {problem}{note}", file=out)
    return checked, bad


def _compiled_problem(files: list[Path]) -> str | None:
    """What is wrong with the first damaged numba cache file among ``files``, or None."""
    from cosmos_common import numba_cache

    for f in files:
        if numba_cache.is_numba_file(f):
            problem = numba_cache.check_file(f)
            if problem is not None:
                return f"numba's compiled code {f.name} is damaged: {problem}"
    return None


def verify_compiled(folders: list[Path], delete: bool = False, out=None) -> tuple[int, int]:
    """Check every numba cache file in ``folders`` (the simulator's compiled kernels:
    :func:`cosmos_common.numba_cache.package_folders`); print one line per damaged file,
    naming the folder to clear (or delete the file and its checksum if ``delete``: numba
    compiles the function again when it is next used). Returns (files checked, damaged)."""
    from cosmos_common import numba_cache

    out = out or sys.stdout
    checked = bad = 0
    for folder in folders:
        for f in numba_cache.numba_files(folder):
            checked += 1
            problem = numba_cache.check_file(f)
            if problem is None:
                continue
            bad += 1
            if delete:
                numba_cache.remove(f)
                note = " (deleted: compiled again when next used)"
            else:
                note = (f"; delete the folder {folder} (or run cosmos cache verify --delete): "
                        f"its kernels are compiled again when next used")
            print(f"{f}: numba's compiled code is damaged: {problem}{note}", file=out)
    return checked, bad


def _prune_empty(folder: Path, top: Path) -> None:
    """Remove ``folder`` and its parents up to (not including) ``top`` while they hold
    nothing but empty ``__pycache__`` folders."""
    folder, top = folder.resolve(), top.resolve()
    while folder != top and top in folder.parents:
        rest = [p for p in folder.iterdir()
                if not (p.is_dir() and p.name == "__pycache__" and not any(p.iterdir()))]
        if rest:
            return
        shutil.rmtree(folder, ignore_errors=True)
        folder = folder.parent


def _info(args) -> int:
    root = _root(args)
    rows = cache_info(root)
    print(f"cache folder: {root.resolve()}{'' if root.is_dir() else ' (does not exist yet)'}")
    w = max(len(r["kind"]) for r in rows)
    print(f"{'kind':<{w}}  {'entries':>8}  {'size':>9}  holds")
    for r in rows:
        print(f"{r['kind']:<{w}}  {r['entries']:>8}  {_human(r['bytes']):>9}  {r['holds']}")
    total = sum(r["bytes"] for r in rows)
    print(f"{'total':<{w}}  {sum(r['entries'] for r in rows):>8}  {_human(total):>9}")
    return 0


def _verify(args) -> int:
    from cosmos_common import cacheio

    root = _root(args)
    kinds = list(dict.fromkeys(args.kind)) if args.kind else list(cacheio.KINDS)
    checked, bad = cache_verify(root, kinds, delete=args.delete)
    what = f"checked {checked} entries ({', '.join(kinds)}) in {root.resolve()}"
    if "kernels" in kinds:      # and the compiled kernels of the simulator's own packages
        from cosmos_common.numba_cache import package_folders

        folders = package_folders()
        n, damaged = verify_compiled(folders, delete=args.delete)
        what += (f" and {n} compiled kernel files in "
                 f"{', '.join(str(f) for f in folders) or '(none compiled yet)'}")
        checked += n
        bad += damaged
    print(f"{what}: {bad} {'deleted' if args.delete else 'bad'}"
          + ("" if bad or not checked else ", all intact"))
    return 1 if bad else 0


def register(sub) -> None:
    from cosmos_common.cacheio import KINDS

    p = sub.add_parser(
        "cache", help="inspect and verify the cache folder",
        description="The cache folder ($COSMOS_CACHE or ~/.cache/cosmos) keeps datasets, ground "
                    "truth, indexes, traces, finished simulations and specialized kernels. Every "
                    "entry carries SHA-256 checksums of its content and of the key it answers; "
                    "every read verifies them and recomputes a bad entry.")
    p.add_argument("--cache-dir", type=Path, default=None,
                   help="the cache folder (default: $COSMOS_CACHE or ~/.cache/cosmos)")
    csub = p.add_subparsers(dest="cache_command", metavar="ACTION")
    pi = csub.add_parser("info", help="entries and bytes per kind, and the location",
                         description="Print the cache folder and, per kind of entry, the number "
                                     "of entries and their size.")
    pi.set_defaults(func=_info)
    pv = csub.add_parser(
        "verify", help="check every entry's checksums and the compiled kernels",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Check every cache entry (record, fields, types, sizes and SHA-256 "
                    "checksums) and print one line per bad entry, then a summary. With the "
                    "kernels (the default, or --kind kernels), also numba's compiled code the "
                    "simulator loads: its packages' __pycache__ folders (or NUMBA_CACHE_DIR) "
                    "and the specialized builds, each file against its checksum.\n\n"
                    "exit status: 0 if every entry is intact, 1 if bad entries were found "
                    "(also with --delete), 2 on a usage error.")
    pv.add_argument("--delete", action="store_true",
                    help="delete the files of every bad entry and damaged compiled kernel (the "
                         "simulator recomputes or recompiles them when it needs them)")
    pv.add_argument("--kind", action="append", choices=list(KINDS), default=None,
                    help="check only this kind (repeatable; default: all)")
    pv.set_defaults(func=_verify)
    for action in (pi, pv):     # after the action too, where every other command takes it
        action.add_argument("--cache-dir", type=Path, default=argparse.SUPPRESS,
                            help="the cache folder (as before the action)")

    def usage(args) -> int:
        p.print_help()
        return 2

    p.set_defaults(func=usage)
