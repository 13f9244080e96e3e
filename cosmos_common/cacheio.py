"""Cache entries that cannot lie: every entry carries checksums, every read verifies them.

Everything the simulator caches under the cache folder (``$COSMOS_CACHE`` or
``~/.cache/cosmos``) is an *entry* of one *kind* (the folder it lives in: ``simulations``,
``groundtruth``, ``indexes``, ``traces``, ``datasets``, ``kernels``). An entry answers one
question, identified by a *key* (a digest of everything the answer depends on, computed by
the caller, e.g. :func:`key_of` of a dict of parameters). Two layouts:

- **value entries** (``simulations``): one JSON file holding the value and its header::

      {"cosmos_cache": 1, "kind": ..., "key": ..., "fields": {name: JSON type},
       "sha256": ..., "value": ...}

  The value keeps its own key order (a row read back has its columns in the order they
  had). ``fields`` records the names and JSON types of a dict value's fields (so a damaged
  entry is reported as "missing field 'value.qps'" or "field 'value.qps' is a string,
  expected a number");
  ``sha256`` is the SHA-256 of the canonical JSON (sorted keys, no spaces) of every other
  member, so it covers the key the entry answers as well as its content.
- **file entries** (everything else): content files written by the caller (a ``.npz``, vector
  files, Python sources) and a *record* ``<name>.entry.json`` beside them::

      {"cosmos_cache": 1, "kind": ..., "key": ..., "meta": {...},
       "files": {file name: {"bytes": size, "sha256": digest}}, "sha256": ...}

  Each file's digest is the SHA-256 of ``key``, its name and its bytes (a file is only valid
  as the answer to its own key); ``sha256`` covers the record's other members, ``meta``
  included (e.g. a dataset's fingerprint, trusted once verified instead of being hashed
  again).

Writes are atomic: content files and records are written under a temporary name in the same
folder and renamed; the old record is removed before the content is replaced and the new one
is written last, so a run killed at any point leaves either a complete entry or content
without a record, which reads as a miss. Reads (:func:`read_value`, :func:`read_files`)
return None on a miss; when something is wrong (unreadable, not JSON, a missing field, a
wrong type, another format version, another key, a size or checksum mismatch, content
without a record) they also issue one :class:`CacheWarning` naming the file and the problem,
and the caller recomputes the entry and overwrites it. A bad entry is never trusted and never
fatal. :func:`check_entry` checks an entry without knowing its key (``cosmos cache verify``).

Cost: SHA-256 (hashlib, SHA extensions) hashes about 1.1 GB/s on one core of the AMD EPYC
(Zen 4) used for development (BLAKE2b: 0.86 GB/s there, hence SHA-256); the largest entries
of ``cosmos reproduce --full`` (datasets and traces of a few hundred MB) take well under a
second each to verify, against minutes of simulation.

Importing this module makes warnings of the :class:`CacheWarning` category print as one line
(``cosmos cache: warning: <file>: <problem>; recomputing``); other warnings are unchanged.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from cosmos_common.outdir import named_error

__all__ = [
    "FORMAT", "KINDS", "RECORD_SUFFIX", "CacheWarning", "default_cache_dir", "key_of",
    "canonical", "report", "write_value", "read_value", "store_files", "read_files",
    "quiet", "record_path", "check_entry", "entries", "sizes", "atomic_write",
]

#: version of the entry layout; an entry of another version reads as a miss (with a note)
FORMAT = 1
_MARK = "cosmos_cache"
#: the record of a file entry is ``<entry name>.entry.json``
RECORD_SUFFIX = ".entry.json"

#: the kinds of entries, by folder under the cache root, with what they hold
KINDS = {
    "simulations": "finished simulations (one JSON row per sweep task)",
    "groundtruth": "exact k-nearest-neighbor ids of synthetic and user datasets",
    "indexes": "clustered graph indexes (k-means + per-cluster graphs)",
    "traces": "logical ANNS traces (search of every query)",
    "datasets": "seeded synthetic base and query vectors",
    "kernels": "specialized DRAM kernel and engine sources (numba's code beside them)",
}


class CacheWarning(UserWarning):
    """A cache entry was unreadable or did not verify: it is recomputed."""


_format_orig = warnings.formatwarning


def _formatwarning(message, category, filename, lineno, line=None):
    if isinstance(category, type) and issubclass(category, CacheWarning):
        return f"cosmos cache: warning: {message}\n"
    return _format_orig(message, category, filename, lineno, line)


if getattr(warnings.formatwarning, "__module__", None) != __name__:
    warnings.formatwarning = _formatwarning


def default_cache_dir() -> Path:
    """``$COSMOS_CACHE`` or ``~/.cache/cosmos``."""
    return Path(os.environ.get("COSMOS_CACHE") or Path.home() / ".cache" / "cosmos")


def canonical(obj: Any) -> bytes:
    """The canonical JSON bytes of ``obj``: sorted keys, no spaces, NaN and infinities
    allowed, floats as Python's shortest round-tripping repr (so a JSON round trip of a
    value gives the same bytes)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=True,
                      ensure_ascii=True).encode()


def key_of(request: Any) -> str:
    """A key: the SHA-256 (hex) of the canonical JSON of ``request``."""
    return hashlib.sha256(canonical(request)).hexdigest()


def report(path: str | os.PathLike, problem: str, action: str = "recomputing",
           stacklevel: int = 3) -> None:
    """Issue the one-line :class:`CacheWarning` ``<path>: <problem>; <action>`` (a
    ``problem`` that starts with the path, or wraps an error that does, has it once)."""
    lead = f"{path}: "
    problem = str(problem)
    if problem.startswith(lead):
        problem = problem[len(lead):]
    problem = problem.replace(f"({lead}", "(")     # "does not load (<path>: ...)"
    problem = " ".join(str(problem).split())        # one line, whatever the problem's text
    warnings.warn(f"{path}: {problem}; {action}", CacheWarning, stacklevel=stacklevel)


@contextlib.contextmanager
def quiet():
    """A context in which :class:`CacheWarning` is not shown (for a caller that only peeks
    at an entry and reads it again, reporting, if it needs it)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CacheWarning)
        yield


def atomic_write(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
        except OSError as exc:      # e.g. a full disk: name the cache file being written
            raise named_error(exc, path) from exc
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)      # mkstemp creates 0600; give the usual permissions
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


# ------------------------------------------------------------------------------- checking
class _Bad(Exception):
    """What is wrong with an entry (the text of the warning); ``path``: the content file it
    is about, if not the entry's JSON file."""

    def __init__(self, problem: str, path: Path | None = None, short: str | None = None):
        super().__init__(problem)
        self.path = path
        self.short = short or problem


_JSON_TYPES = (("boolean", bool), ("integer", int), ("number", float), ("string", str),
               ("array", list), ("object", dict), ("null", type(None)))
_JSON_TYPE_NAMES = frozenset(name for name, _ in _JSON_TYPES)


def _json_type(v: Any) -> str:
    for name, t in _JSON_TYPES:              # bool before int: True is an int in Python
        if isinstance(v, t):
            return name
    return type(v).__name__


def _article(t: str) -> str:
    return ("an " if t[0] in "aeiou" else "a ") + t


def _field(doc: dict, name: str, want: str, where: str = "") -> Any:
    if name not in doc:
        raise _Bad(f"missing field '{where}{name}'")
    got = _json_type(doc[name])
    if got != want and not (want == "number" and got == "integer"):
        raise _Bad(f"field '{where}{name}' is {_article(got)}, expected {_article(want)}")
    return doc[name]


def _parse(path: Path) -> dict:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise _Bad(f"unreadable ({exc.strerror or exc})") from None
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:   # UnicodeDecodeError is a ValueError
        raise _Bad(f"not valid JSON ({str(exc).splitlines()[0][:80]})") from None
    if not isinstance(doc, dict):
        raise _Bad(f"holds {_article(_json_type(doc))}, expected a JSON object")
    if _MARK not in doc:
        raise _Bad("no checksum header (written by an older version of the simulator)")
    fmt = _field(doc, _MARK, "integer")
    if fmt != FORMAT:
        raise _Bad(f"cache format {fmt}, expected {FORMAT}")
    return doc


def _header(doc: dict, kind: str | None, key: str | None) -> None:
    got_kind = _field(doc, "kind", "string")
    got_key = _field(doc, "key", "string")
    digest = _field(doc, "sha256", "string")
    body = {k: v for k, v in doc.items() if k != "sha256"}
    try:
        ok = hashlib.sha256(canonical(body)).hexdigest() == digest
    except (ValueError, RecursionError):
        ok = False
    if not ok:
        raise _Bad("checksum mismatch (the entry was changed after it was written)")
    if kind is not None and got_kind != kind:
        raise _Bad(f"an entry of kind '{got_kind}', expected '{kind}'")
    if key is not None and got_key != key:
        raise _Bad("answers another key (a renamed or copied entry)")


def _fields_of(value: Any) -> dict | None:
    return {k: _json_type(v) for k, v in value.items()} if isinstance(value, dict) else None


def _check_value(doc: dict, kind: str | None, key: str | None) -> Any:
    if "value" not in doc:
        raise _Bad("missing field 'value'")
    value = doc["value"]
    fields = doc.get("fields")
    if fields is not None:
        if not isinstance(fields, dict):
            raise _Bad(f"field 'fields' is {_article(_json_type(fields))}, expected an object")
        if not isinstance(value, dict):
            raise _Bad(f"field 'value' is {_article(_json_type(value))}, expected an object")
        for name, want in fields.items():
            if isinstance(want, str):
                if want not in _JSON_TYPE_NAMES:
                    raise _Bad(f"field 'fields.{name}' is {want!r}, not the name of a JSON type")
                _field(value, name, want, "value.")
        extra = sorted(set(value) - set(fields))
        if extra:
            raise _Bad(f"unexpected field 'value.{extra[0]}'")
    _header(doc, kind, key)
    return value


def _digest_file(path: Path, key: str) -> str:
    h = hashlib.sha256()
    h.update(f"{key}\0{path.name}\0".encode())
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def _check_record(record: Path, doc: dict, kind: str | None, key: str | None,
                  names: Iterable[str] | None) -> dict:
    files = _field(doc, "files", "object")
    meta = _field(doc, "meta", "object")
    _header(doc, kind, key)
    if names is not None and set(files) != set(names):
        raise _Bad(f"lists files {sorted(files)}, expected {sorted(names)}")
    for name, info in files.items():
        if not isinstance(info, dict):
            raise _Bad(f"field 'files.{name}' is {_article(_json_type(info))}, expected an object")
        size = _field(info, "bytes", "integer", f"files.{name}.")
        digest = _field(info, "sha256", "string", f"files.{name}.")
        path = record.parent / name
        if Path(name).name != name or name.startswith("."):
            raise _Bad(f"lists a file outside its folder ('{name}')")
        try:
            got = path.stat().st_size
        except OSError:
            raise _Bad(f"its file {name} is missing") from None
        if got != size:
            raise _Bad(f"its file {name} has {got} bytes, expected {size} (truncated or changed)",
                       path, f"{got} bytes, its record says {size} (truncated or changed)")
        try:
            ok = _digest_file(path, doc["key"]) == digest
        except OSError as exc:
            raise _Bad(f"its file {name} is unreadable ({exc.strerror or exc})", path,
                       f"unreadable ({exc.strerror or exc})") from None
        if not ok:
            raise _Bad(f"checksum mismatch in {name} (changed after it was written)", path,
                       "checksum mismatch (changed after it was written)")
    return meta


# ------------------------------------------------------------------------------- value entries
def write_value(path: str | os.PathLike, kind: str, key: str, value: Any) -> Path:
    """Store ``value`` (JSON-able: dicts, lists, str, int, float, bool, None) as the value
    entry ``path`` of ``kind`` answering ``key`` (atomically)."""
    doc = {_MARK: FORMAT, "kind": kind, "key": key, "value": value}
    fields = _fields_of(value)
    if fields is not None:
        doc["fields"] = fields
    doc["sha256"] = hashlib.sha256(canonical(doc)).hexdigest()
    # stored in the value's own order (a row's columns come back in the order they had),
    # checked in canonical form
    text = json.dumps(doc, separators=(",", ":"), allow_nan=True, ensure_ascii=True)
    return atomic_write(path, text.encode() + b"\n")


def read_value(path: str | os.PathLike, kind: str, key: str) -> Any | None:
    """The value stored at ``path`` if it is a valid entry of ``kind`` answering ``key``;
    else None: silently if there is no file, with one :class:`CacheWarning` otherwise."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        return _check_value(_parse(path), kind, key)
    except _Bad as bad:
        report(path, str(bad))
        return None


# ------------------------------------------------------------------------------- file entries
def record_path(folder: str | os.PathLike, name: str) -> Path:
    """The record of the file entry ``name`` in ``folder``."""
    return Path(folder) / f"{name}{RECORD_SUFFIX}"


def store_files(record: str | os.PathLike, kind: str, key: str,
                writers: Mapping[str | os.PathLike, Callable[[Path], Any]],
                meta: dict | None = None) -> Path:
    """Write a file entry: remove its old ``record``, call ``writers[path](path)`` for each
    content file (each must create its file atomically, e.g. with ``atomic_write_bytes``;
    the files must sit beside the record), then hash the files and write the record (JSON-able
    ``meta`` included) atomically."""
    record = Path(record)
    record.parent.mkdir(parents=True, exist_ok=True)
    try:
        record.unlink()
    except FileNotFoundError:
        pass
    files = {}
    for p, write in writers.items():
        p = Path(p)
        if p.parent.resolve() != record.parent.resolve():
            raise ValueError(f"{p}: a cache entry's files must sit beside its record {record}")
        write(p)
        files[p.name] = {"bytes": p.stat().st_size, "sha256": _digest_file(p, key)}
    doc = {_MARK: FORMAT, "kind": kind, "key": key, "meta": meta or {}, "files": files}
    doc["sha256"] = hashlib.sha256(canonical(doc)).hexdigest()
    return atomic_write(record, canonical(doc) + b"\n")


#: what a content file without its own checksum record is: its record names other files, so
#: a copy or rename of an entry reads as this too, not only an old or interrupted write
NO_RECORD = ("no checksum record of its own (copied or renamed into the cache, written by an "
             "older version of the simulator, or left by an interrupted write)")


def read_files(record: str | os.PathLike, kind: str, key: str,
               files: Iterable[str | os.PathLike]) -> dict | None:
    """The ``meta`` of the file entry ``record`` if it is a valid entry of ``kind`` answering
    ``key`` whose content files are exactly ``files`` (paths beside the record), each of the
    recorded size and checksum; else None: silently if neither the record nor any of the
    files exists, with one :class:`CacheWarning` otherwise (content without its record, as
    left by an older version of the simulator or an interrupted write, is such a case)."""
    record = Path(record)
    files = [Path(f) for f in files]
    if not record.exists():
        present = [f for f in files if f.exists()]
        if present:
            report(present[0], NO_RECORD)
        return None
    try:
        return _check_record(record, _parse(record), kind, key, [f.name for f in files])
    except _Bad as bad:
        if bad.path is not None:
            report(bad.path, bad.short)
        else:
            report(record, str(bad))
        return None


# ------------------------------------------------------------------------------- scanning
def check_entry(path: str | os.PathLike, key: str | None = None) -> str | None:
    """What is wrong with the entry whose value file or record is ``path``, or None if it is
    intact: header, fields, types and checksums, and, if ``key`` is given, that it answers
    ``key`` (else only the consistency of its key with its checksums is checked)."""
    path = Path(path)
    try:
        doc = _parse(path)
        if path.name.endswith(RECORD_SUFFIX):
            _check_record(path, doc, None, key, None)
        else:
            _check_value(doc, None, key)
    except _Bad as bad:
        return str(bad)
    return None


def _size(p: Path) -> int:
    try:
        return p.stat().st_size
    except OSError:
        return 0


def entries(root: str | os.PathLike, kind: str) -> list[tuple[Path, list[Path], str | None]]:
    """Every entry of ``kind`` under the cache folder ``root``, as (the file to check, all its
    files, a problem found while listing or None). Files that belong to no entry are
    listed as entries of their own with their problem: content without a record, a
    temporary file left by an interrupted write. For ``kernels`` numba's compiled code
    (``__pycache__``) belongs to its build (``cosmos cache verify`` checks it with
    :func:`cosmos_common.numba_cache.check_file`)."""
    folder = Path(root) / kind
    if not folder.is_dir():
        return []
    out: list[tuple[Path, list[Path], str | None]] = []
    if kind == "simulations":
        for p in sorted(folder.rglob("*")):
            if not p.is_file():
                continue
            if p.name.startswith(".") and p.name.endswith(".tmp"):
                out.append((p, [p], "temporary file left by an interrupted write"))
            elif p.suffix == ".json":
                out.append((p, [p], None))
            else:
                out.append((p, [p], "not a cache entry"))
        return out
    all_files = sorted(p for p in folder.rglob("*") if p.is_file())
    owned: set[Path] = set()
    for rec in (p for p in all_files if p.name.endswith(RECORD_SUFFIX)):
        members = [rec]
        try:
            doc = json.loads(rec.read_text())
            listed = doc.get("files", {}) if isinstance(doc, dict) else {}
            if isinstance(listed, dict):
                members += [rec.parent / n for n in listed
                            if isinstance(n, str) and Path(n).name == n
                            and (rec.parent / n).is_file()]
        except (OSError, ValueError, RecursionError):
            pass
        if kind == "kernels":
            members += [p for p in all_files if p.parent.parent == rec.parent
                        and p.parent.name == "__pycache__"]
        owned.update(members)
        out.append((rec, members, None))
    for p in all_files:
        if p in owned:
            continue
        if p.name.startswith(".") and p.name.endswith(".tmp"):
            out.append((p, [p], "temporary file left by an interrupted write"))
        elif kind == "kernels" and p.parent.name == "__pycache__":
            out.append((p, [p], "compiled code of a build without its checksum record"))
        else:
            out.append((p, [p], NO_RECORD))
    return out


def sizes(files: Iterable[Path]) -> int:
    """Total bytes of ``files`` (missing ones count 0)."""
    return sum(_size(p) for p in files)
