"""The one output rule of every command that writes results (kept here, used by all).

Folders (``cosmos simulate``, ``replay``, ``reproduce``, ``run``, ``dram replay``):

- ``--out DIR``: DIR is created if it does not exist and used if it is an empty folder; if it
  holds anything, or is a file, the command refuses before doing any work, in one line naming
  DIR and saying to pass a new folder. Nothing is ever overwritten.
- no ``--out`` (reproduce, run, replay): a new folder ``ROOT/<name>-<YYYYmmdd-HHMMSS>`` under
  ``--out-root`` is created; on a clash ``-2``, ``-3``, ... is appended. A name that exists is
  never reused (``os.mkdir`` fails on it, so two runs started in the same second differ).
- writability is checked before the work: the folder is created and a temporary file is made
  and removed in it, so a read-only place fails at once.
- while a run writes a folder, the folder holds a file ``INCOMPLETE`` saying which command
  writes it and what is still to be written; it is removed only when everything was written.
  An interrupted (Ctrl-C) or failed run leaves it, with a final line saying why and what is
  missing (:class:`RunFolder`).

Single files (``graphs trace --out``, ``place --out``, ``--clusters-out``): an existing file is
refused unless ``--force`` (:func:`check_new_file`), and every file is written to a temporary
name in the same folder and then renamed (:func:`atomic_write`).

Every refusal is a :class:`cosmos_common.UserError` of one line naming the path and the option.
"""

from __future__ import annotations

import datetime as _dt
import os
import tempfile
from pathlib import Path
from typing import Callable, Iterable

from cosmos_common import UserError

__all__ = [
    "INCOMPLETE",
    "check_out_dir",
    "prepare_out_dir",
    "new_run_dir",
    "check_new_file",
    "atomic_write",
    "mark_incomplete",
    "mark_complete",
    "incomplete_folders",
    "RunFolder",
]

#: name of the marker file of a folder whose run has not finished writing it
INCOMPLETE = "INCOMPLETE"


def _nearest_existing(path: Path) -> Path:
    base = path
    while not (base.exists() or base.is_symlink()) and base != base.parent:
        base = base.parent
    return base


def _probe_writable(folder: Path, what: str) -> None:
    """Create and remove a temporary file in ``folder`` (UserError naming ``what`` if not)."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=".cosmos-write-test.", dir=folder)
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise UserError(f"{what}: cannot write into {folder} "
                        f"({exc.strerror or type(exc).__name__})") from None


def check_out_dir(path: str | os.PathLike, option: str = "--out") -> Path:
    """Check, without creating anything, that ``path`` may become a results folder.

    It must not exist, or be an empty folder; the nearest existing folder above it must be
    writable (a file there, or a read-only folder, is refused). Returns ``Path(path)``.
    """
    out = Path(path)
    if out.exists() or out.is_symlink():
        if not out.is_dir():
            raise UserError(f"{option} {out}: exists and is not a folder; pass a new folder")
        try:
            entries = sorted(p.name for p in out.iterdir())
        except OSError as exc:
            raise UserError(f"{option} {out}: cannot list it ({exc.strerror})") from None
        if entries:
            shown = ", ".join(entries[:3]) + (", ..." if len(entries) > 3 else "")
            raise UserError(f"{option} {out}: folder is not empty ({shown}); pass a new folder "
                            f"(results are never written over)")
        base = out
    else:
        base = _nearest_existing(out.parent if str(out.parent) else Path("."))
        if not base.is_dir():
            raise UserError(f"{option} {out}: {base} is not a folder; pass a new folder")
    if not os.access(base, os.W_OK | os.X_OK):
        raise UserError(f"{option} {out}: cannot write into {base} (permission denied)")
    return out


def prepare_out_dir(path: str | os.PathLike, command: str, option: str = "--out",
                    pending: Iterable[str] | None = None) -> Path:
    """Apply the folder rule to ``--out``: create ``path`` (or take it if empty), check that a
    file can be written in it, and, if ``pending`` is given, write the ``INCOMPLETE`` marker
    naming ``command`` and what is still to be written.

    Raises UserError (one line naming ``option`` and the path) if ``path`` is a file, a folder
    that is not empty, or not writable.
    """
    out = check_out_dir(path, option)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"{option} {out}: cannot create it ({exc.strerror})") from None
    _probe_writable(out, f"{option} {out}")
    if pending is not None:
        mark_incomplete(out, command, pending)
    return out


def add_results_options(parser, folder: str) -> None:
    """``--out-root DIR`` and ``--out DIR`` on a command's ``parser``: results go to a new
    folder ``folder-<time>`` under ``--out-root`` (:func:`new_run_dir`), or to ``--out``
    (:func:`prepare_out_dir`)."""
    parser.add_argument("--out-root", default="results", metavar="DIR",
                        help=f"results go to a new folder {folder}-<time> under DIR (default: "
                             f"./results)")
    parser.add_argument("--out", metavar="DIR", default=None,
                        help="results go to DIR instead: created, or an empty folder (a folder "
                             "holding anything is refused; nothing is written over)")


def new_run_dir(root: str | os.PathLike, name: str, *, option: str = "--out-root",
                stamp: str | None = None) -> Path:
    """Create and return a new, empty folder ``root/<name>-<stamp>`` (``-2``, ``-3``, ... on a
    clash); ``root`` is created with its parents. The stamp defaults to the local time
    ``YYYYmmdd-HHMMSS``. A name that exists is never reused."""
    root = Path(root)
    if root.exists() and not root.is_dir():
        raise UserError(f"{option} {root}: exists and is not a folder; pass a folder "
                        f"(results go to a new folder under it)")
    base = _nearest_existing(root)
    if (base.exists() and not base.is_dir()):
        raise UserError(f"{option} {root}: {base} is not a folder")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"{option} {root}: cannot create it ({exc.strerror})") from None
    stamp = stamp or _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    stem = f"{name}-{stamp}"
    for n in range(1, 100_000):
        path = root / (stem if n == 1 else f"{stem}-{n}")
        try:
            os.mkdir(path)
        except FileExistsError:
            continue
        except OSError as exc:
            raise UserError(f"{option} {root}: cannot create a folder in it "
                            f"({exc.strerror})") from None
        _probe_writable(path, f"{option} {root}")
        return path
    raise UserError(f"{option} {root}: no free folder name {stem}-N; pass another --out-root")


def check_new_file(path: str | os.PathLike | None, force: bool | None = False,
                   option: str = "--out") -> Path | None:
    """Before any work: ``path`` may be written (a single-file output).

    An existing file is refused unless ``force`` (None: the command has no ``--force``, and
    the refusal says to pass a new name); a folder is always refused; the folder that will
    hold it (the nearest existing one above) must be writable. None passes.
    """
    if path is None:
        return None
    path = Path(path)
    if path.is_dir():
        raise UserError(f"{option} {path}: is a folder; expected a file name")
    if (path.exists() or path.is_symlink()) and not force:
        if force is None:
            raise UserError(f"{option} {path}: already exists; pass a new file name (a file "
                            f"is never written over)")
        raise UserError(f"{option} {path}: already exists (pass --force to replace it)")
    base = _nearest_existing(path.parent if str(path.parent) else Path("."))
    if not base.is_dir():
        raise UserError(f"{option} {path}: {base} is not a folder")
    if not os.access(base, os.W_OK | os.X_OK):
        raise UserError(f"{option} {path}: cannot write into {base} (permission denied)")
    return path


def named_error(exc: OSError, path: str | os.PathLike) -> OSError:
    """``exc`` naming ``path`` when it names no file, or only a temporary one (a full disk
    inside numpy's or zipfile's writer raises "No space left on device" without a name):
    the same errno, so the command line prints "PATH: No space left on device"."""
    name = getattr(exc, "filename", None)
    if name is not None and not Path(str(name)).name.endswith(".tmp"):
        return exc
    return OSError(exc.errno, exc.strerror or str(exc) or type(exc).__name__, str(path))


def atomic_write(path: str | os.PathLike, write: Callable[[Path], None], *,
                 overwrite: bool = False) -> Path:
    """Create ``path`` by ``write(tmp)`` into a temporary file of the same folder, then rename.

    Without ``overwrite`` an existing ``path`` is never replaced: the temporary file is linked
    to the name, which fails if the name exists at that moment (so a file created meanwhile is
    kept too); FileExistsError then names it. The temporary file is removed on any failure.
    The folder is created with its parents if needed.
    """
    path = Path(path)
    if (path.exists() or path.is_symlink()) and not overwrite:
        raise FileExistsError(f"{path} exists; refusing to overwrite it")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp_path, 0o666 & ~umask)  # mkstemp makes 0600; results are ordinary files
        try:
            write(tmp_path)
        except OSError as exc:
            raise named_error(exc, path) from exc
        if overwrite:
            os.replace(tmp_path, path)
        else:
            try:
                os.link(tmp_path, path)
            except FileExistsError:
                raise FileExistsError(f"{path} exists; refusing to overwrite it") from None
            except OSError:  # a file system without hard links
                if path.exists():
                    raise FileExistsError(f"{path} exists; refusing to overwrite it") from None
                os.replace(tmp_path, path)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()
    return path


def _marker_text(command: str, pending: Iterable[str]) -> str:
    pending = list(pending)
    todo = ", ".join(pending) if pending else "(nothing listed)"
    return (f"This folder is being written by `cosmos {command}`; until this file is removed "
            f"its results are not complete.\nstill to be written: {todo}\n")


def mark_incomplete(folder: str | os.PathLike, command: str, pending: Iterable[str]) -> Path:
    """Write (or rewrite) ``folder/INCOMPLETE``: which command writes the folder and what is
    still to be written."""
    return atomic_write(Path(folder) / INCOMPLETE,
                        lambda tmp: tmp.write_text(_marker_text(command, pending)),
                        overwrite=True)


def mark_complete(folder: str | os.PathLike) -> None:
    """Remove ``folder/INCOMPLETE``: everything was written."""
    try:
        (Path(folder) / INCOMPLETE).unlink()
    except FileNotFoundError:
        pass


def incomplete_folders(root: str | os.PathLike) -> list[Path]:
    """``root`` and the folders under it that hold an ``INCOMPLETE`` marker, sorted."""
    root = Path(root)
    return sorted(p.parent for p in root.rglob(INCOMPLETE) if p.is_file())


class RunFolder:
    """The ``INCOMPLETE`` marker of one run's folder, as a context manager.

    ``with RunFolder(folder, "simulate", ["per_query.csv", ...]) as rf:`` writes the marker;
    ``rf.done(name)`` records that ``name`` was written (the marker is rewritten with what is
    left); a normal exit removes the marker. An exception leaves it, with a final line:
    ``interrupted (Ctrl-C); missing: ...``, ``stopped by SIGTERM; missing: ...`` or
    ``failed: <error>; missing: ...``.

    One exception: a run refused because of its input (``ValueError``, which includes
    UserError) before it wrote anything leaves no trace: the marker is removed, and so is the
    folder if this run created it (``created=True``), so a refused command leaves nothing
    behind.
    """

    def __init__(self, folder: str | os.PathLike, command: str, pending: Iterable[str], *,
                 created: bool = False):
        self.folder = Path(folder)
        self.command = command
        self.pending = list(pending)
        self._all = list(self.pending)
        self.created = created

    def __enter__(self) -> "RunFolder":
        mark_incomplete(self.folder, self.command, self.pending)
        return self

    def done(self, name: str) -> None:
        if name in self.pending:
            self.pending.remove(name)
            mark_incomplete(self.folder, self.command, self.pending)

    def __exit__(self, kind, exc, tb) -> bool:
        if kind is None:
            mark_complete(self.folder)
            return False
        if issubclass(kind, ValueError) and self.pending == self._all and self._only_marker():
            mark_complete(self.folder)
            if self.created:
                try:
                    self.folder.rmdir()
                except OSError:
                    pass
            return False
        try:
            self.fail(exc)
        except OSError:
            pass  # the folder itself may be gone or unwritable: the original error matters
        return False

    def _only_marker(self) -> bool:
        try:
            return [p.name for p in self.folder.iterdir()] == [INCOMPLETE]
        except OSError:
            return False

    def fail(self, exc: BaseException | None) -> None:
        """Leave the marker with a final line saying why the run stopped and what is missing."""
        from cosmos_common.signals import Terminated

        if isinstance(exc, Terminated):     # SIGTERM or SIGHUP
            why = f"stopped by {exc.name}"
        elif isinstance(exc, KeyboardInterrupt):
            why = "interrupted (Ctrl-C)"
        else:
            text = " ".join(str(exc).split()) if exc is not None else ""
            why = f"failed: {type(exc).__name__}" + (f": {text}" if text else "")
        missing = ", ".join(self.pending) if self.pending else "(nothing listed)"
        atomic_write(self.folder / INCOMPLETE,
                     lambda tmp: tmp.write_text(_marker_text(self.command, self.pending)
                                                + f"{why}; missing: {missing}\n"),
                     overwrite=True)
