"""Are two reproductions' results the same? Compare two ``cosmos reproduce`` folders file by
file (a refactor must leave every experiment's outputs identical).

    python experiments/tools/compare_reproduce.py BEFORE AFTER

Both folders must hold the same files (relative paths). Each pair is compared by kind:

- CSV: the same columns in the same order and the same rows, every cell equal (floats bit
  for bit: the simulator is deterministic), except the columns of :data:`TIMING_COLUMNS`;
- JSON: equal after dropping the keys of :data:`PROVENANCE_KEYS` (at any depth);
- ``.npz`` (the traces): the same arrays, element for element;
- plots (``.png``, ``.pdf``): present in both, not compared (their bytes hold the drawing
  library's metadata);
- any other file (``summary.md``, ``validation.md``, ...): the same text, after removing what
  :data:`TIMING_TEXT` matches.

Prints one line per difference and a count; exits 1 if anything differs, 0 if not.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

#: CSV columns that measure this machine's time, not the simulation: wall-clock seconds of a
#: run and the rates computed from them (``*_per_wall_s``), which differ between any two runs
TIMING_COLUMNS = re.compile(r"(^|_)wall_s$|_per_wall_s$|^wall_|_wall_")

#: JSON keys of provenance: where and how a run was started (command line, working
#: folder, absolute paths of its results and caches, the git revision and installed
#: versions), which differ between two checkouts of the same code by design; and timing
PROVENANCE_KEYS = {"command", "cwd", "rerun", "cache_dir", "sim_cache", "code_revision",
                   "versions", "wall_s"}

#: text that measures time: "in 12 s", "12.3 s wall", "wall_s: 1.2"
TIMING_TEXT = re.compile(r"\b\d+(\.\d+)? ?s wall\b|\bwall_s[=:] ?\d+(\.\d+)?")

#: files compared by presence only
PLOT_SUFFIXES = {".png", ".pdf"}


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def _drop(value, keys=PROVENANCE_KEYS):
    if isinstance(value, dict):
        return {k: _drop(v, keys) for k, v in value.items() if k not in keys}
    if isinstance(value, list):
        return [_drop(v, keys) for v in value]
    return value


def compare_csv(a: Path, b: Path) -> list[str]:
    da, db = pd.read_csv(a), pd.read_csv(b)
    if list(da.columns) != list(db.columns):
        return [f"columns differ: {sorted(set(da.columns) ^ set(db.columns))} "
                f"(or their order)"]
    if len(da) != len(db):
        return [f"{len(da)} rows vs {len(db)}"]
    out = []
    for col in da.columns:
        if TIMING_COLUMNS.search(col):
            continue
        x, y = da[col], db[col]
        same = (x == y) | (x.isna() & y.isna())
        if not same.all():
            i = int(np.flatnonzero(~same.to_numpy())[0])
            out.append(f"column {col}: {int((~same).sum())} rows differ (row {i}: "
                       f"{x.iloc[i]!r} vs {y.iloc[i]!r})")
    return out


def compare_json(a: Path, b: Path) -> list[str]:
    ja, jb = _drop(json.loads(a.read_text())), _drop(json.loads(b.read_text()))
    if ja == jb:
        return []
    keys = sorted(k for k in set(ja) | set(jb) if ja.get(k) != jb.get(k)) \
        if isinstance(ja, dict) and isinstance(jb, dict) else ["(top level)"]
    return [f"differs at {', '.join(keys)}"]


def compare_npz(a: Path, b: Path) -> list[str]:
    with np.load(a, allow_pickle=False) as za, np.load(b, allow_pickle=False) as zb:
        if sorted(za.files) != sorted(zb.files):
            return [f"arrays differ: {sorted(set(za.files) ^ set(zb.files))}"]
        return [f"array {k} differs" for k in za.files
                if not np.array_equal(za[k], zb[k], equal_nan=za[k].dtype.kind == "f")]


def compare_text(a: Path, b: Path) -> list[str]:
    ta, tb = (TIMING_TEXT.sub("<time>", p.read_text()) for p in (a, b))
    if ta == tb:
        return []
    la, lb = ta.splitlines(), tb.splitlines()
    i = next((i for i, (x, y) in enumerate(zip(la, lb)) if x != y), min(len(la), len(lb)))
    return [f"line {i + 1}: {la[i] if i < len(la) else '<end>'!r} vs "
            f"{lb[i] if i < len(lb) else '<end>'!r}"]


def compare(before: Path, after: Path) -> tuple[list[str], dict]:
    """The differences between two reproduction folders (one line each) and counts of the
    files compared by kind."""
    fa, fb = _files(before), _files(after)
    diffs = [f"only in {before}: {f}" for f in sorted(fa - fb)]
    diffs += [f"only in {after}: {f}" for f in sorted(fb - fa)]
    counts: dict[str, int] = {}
    for rel in sorted(fa & fb):
        suffix = Path(rel).suffix
        kind = ("plot" if suffix in PLOT_SUFFIXES else
                {".csv": "csv", ".json": "json", ".npz": "npz"}.get(suffix, "text"))
        counts[kind] = counts.get(kind, 0) + 1
        if kind == "plot":
            continue
        fn = {"csv": compare_csv, "json": compare_json, "npz": compare_npz,
              "text": compare_text}[kind]
        diffs += [f"{rel}: {d}" for d in fn(before / rel, after / rel)]
    return diffs, counts


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="compare_reproduce.py", description=__doc__.split("\n\n")[0])
    p.add_argument("before", type=Path, help="a cosmos reproduce results folder")
    p.add_argument("after", type=Path, help="another one, of the same options")
    args = p.parse_args(argv)
    for d in (args.before, args.after):
        if not d.is_dir():
            p.error(f"{d}: not a folder")
    diffs, counts = compare(args.before, args.after)
    for d in diffs:
        print(d)
    what = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
    print(f"{len(diffs)} difference(s); files in both: {sum(counts.values())} ({what}; plots "
          f"by presence only; ignored: CSV columns matching {TIMING_COLUMNS.pattern!r}, JSON "
          f"keys {', '.join(sorted(PROVENANCE_KEYS))})")
    return 1 if diffs else 0


if __name__ == "__main__":
    raise SystemExit(main())
