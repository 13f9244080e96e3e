"""cosmos_common.outdir: the one output rule every command follows."""

import os

import pytest

from cosmos_common import UserError
from cosmos_common.outdir import (INCOMPLETE, RunFolder, atomic_write, check_new_file,
                                  check_out_dir, incomplete_folders, new_run_dir,
                                  prepare_out_dir)


def test_out_dir_is_created_or_an_empty_folder_else_refused(tmp_path):
    fresh = tmp_path / "a" / "b"
    assert prepare_out_dir(fresh, "simulate") == fresh and fresh.is_dir()  # with parents
    assert prepare_out_dir(fresh, "simulate") == fresh  # empty: used
    (fresh / "mine.csv").write_text("keep")
    with pytest.raises(UserError, match=r"--out .*b: folder is not empty \(mine.csv\); pass a "
                                        r"new folder"):
        prepare_out_dir(fresh, "simulate")
    assert (fresh / "mine.csv").read_text() == "keep"
    (tmp_path / "f").write_text("")
    with pytest.raises(UserError, match="exists and is not a folder"):
        prepare_out_dir(tmp_path / "f", "simulate")
    with pytest.raises(UserError, match="f is not a folder"):
        check_out_dir(tmp_path / "f" / "sub")
    assert not (tmp_path / "f").is_dir()


def test_the_marker_is_written_with_the_pending_files(tmp_path):
    out = prepare_out_dir(tmp_path / "o", "replay", pending=["config.json", "systems.csv"])
    text = (out / INCOMPLETE).read_text()
    assert "cosmos replay" in text and "still to be written: config.json, systems.csv" in text


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_place_fails_at_once(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(UserError, match="cannot write into"):
            prepare_out_dir(ro / "new", "simulate")
        with pytest.raises(UserError, match="cannot"):
            new_run_dir(ro, "reproduce")
        with pytest.raises(UserError, match="cannot write into"):
            check_new_file(ro / "t.npz")
    finally:
        ro.chmod(0o700)


def test_a_read_only_folder_is_detected_by_a_probe_file(tmp_path, monkeypatch):
    """Even where permission bits do not tell (root, network file systems), the temporary file
    made in the folder is what decides."""
    import tempfile

    def refuse(*a, **kw):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    with pytest.raises(UserError, match=r"--out .*: cannot write into .*Permission denied"):
        prepare_out_dir(tmp_path / "x", "simulate")


def test_new_run_dirs_are_never_reused(tmp_path):
    a = new_run_dir(tmp_path / "r", "reproduce", stamp="T")
    b = new_run_dir(tmp_path / "r", "reproduce", stamp="T")
    c = new_run_dir(tmp_path / "r", "reproduce", stamp="T")
    assert [p.name for p in (a, b, c)] == ["reproduce-T", "reproduce-T-2", "reproduce-T-3"]
    (tmp_path / "file").write_text("")
    with pytest.raises(UserError, match=r"--out-root .*file: exists and is not a folder"):
        new_run_dir(tmp_path / "file", "reproduce")
    with pytest.raises(UserError, match=r"file is not a folder"):
        new_run_dir(tmp_path / "file" / "deeper", "reproduce")


def test_single_files_need_force_and_are_written_temp_then_rename(tmp_path):
    p = tmp_path / "t.npz"
    assert check_new_file(p) == p and check_new_file(None) is None
    atomic_write(p, lambda tmp: tmp.write_text("one"))
    with pytest.raises(UserError, match=r"already exists \(pass --force to replace it\)"):
        check_new_file(p)
    assert check_new_file(p, force=True) == p
    with pytest.raises(FileExistsError):
        atomic_write(p, lambda tmp: tmp.write_text("two"))
    assert p.read_text() == "one"
    atomic_write(p, lambda tmp: tmp.write_text("two"), overwrite=True)
    assert p.read_text() == "two"
    with pytest.raises(UserError, match="is a folder; expected a file name"):
        check_new_file(tmp_path)

    def half_then_fail(tmp):
        tmp.write_text("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write(tmp_path / "u.npz", half_then_fail)
    assert sorted(x.name for x in tmp_path.iterdir()) == ["t.npz"]  # no temporary left


def test_run_folder_marks_until_complete(tmp_path):
    out = prepare_out_dir(tmp_path / "o", "simulate")
    with RunFolder(out, "simulate", ["a.csv", "b.json"]) as rf:
        assert "a.csv, b.json" in (out / INCOMPLETE).read_text()
        (out / "a.csv").write_text("x")
        rf.done("a.csv")
        text = (out / INCOMPLETE).read_text()
        assert "still to be written: b.json" in text and "a.csv" not in text
    assert not (out / INCOMPLETE).exists()


@pytest.mark.parametrize("exc, line", [
    (KeyboardInterrupt(), "interrupted (Ctrl-C); missing: b.json"),
    (RuntimeError("disk\nfull"), "failed: RuntimeError: disk full; missing: b.json"),
    (ValueError("late"), "failed: ValueError: late; missing: b.json"),
])
def test_an_interrupted_or_failed_run_leaves_the_marker_with_a_last_line(tmp_path, exc, line):
    out = prepare_out_dir(tmp_path / "o", "simulate")
    with pytest.raises(type(exc)):
        with RunFolder(out, "simulate", ["a.csv", "b.json"]) as rf:
            (out / "a.csv").write_text("x")
            rf.done("a.csv")
            raise exc
    assert (out / INCOMPLETE).read_text().splitlines()[-1] == line
    assert incomplete_folders(tmp_path) == [out]


def test_a_refusal_before_anything_was_written_leaves_nothing(tmp_path):
    out = tmp_path / "o"
    prepare_out_dir(out, "simulate")
    with pytest.raises(UserError):
        with RunFolder(out, "simulate", ["a.csv"], created=True):
            raise UserError("bad trace")
    assert not out.exists()
    kept = tmp_path / "mine"
    kept.mkdir()  # the user's own empty folder stays, empty
    with pytest.raises(UserError):
        with RunFolder(kept, "simulate", ["a.csv"], created=False):
            raise UserError("bad trace")
    assert kept.is_dir() and not any(kept.iterdir())


def test_a_full_disk_names_the_file_being_written(tmp_path, monkeypatch):
    """A writer that fails without a file name (numpy, zipfile on a full disk) is reported
    with the path being written, output or cache (issue 55)."""
    import errno

    from cosmos_common import cacheio
    from cosmos_common.outdir import atomic_write

    def full(tmp):
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError) as err:
        atomic_write(tmp_path / "out.npz", full)
    assert err.value.errno == errno.ENOSPC and err.value.filename == str(tmp_path / "out.npz")
    assert list(tmp_path.iterdir()) == []            # the temporary file is gone too

    class FullFile:
        def __init__(self, fd, mode):
            os.close(fd)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cacheio.os, "fdopen", FullFile)
    with pytest.raises(OSError) as err:
        cacheio.atomic_write(tmp_path / "entry.json", b"x")
    monkeypatch.undo()
    assert err.value.filename == str(tmp_path / "entry.json")
    assert list(tmp_path.iterdir()) == []
    # an error that already names a file of its own keeps it
    def denied(tmp):
        raise PermissionError(errno.EACCES, "Permission denied", "/elsewhere/x")

    with pytest.raises(PermissionError) as err:
        atomic_write(tmp_path / "y.npz", denied)
    assert err.value.filename == "/elsewhere/x"


def test_progress_bars_are_drawn_on_a_terminal_only():
    """cosmos_common.terminal: a redirected stderr (a file, a pipe, a closed stream) gets no
    bars, nor does --no-progress; a terminal does."""
    import io

    from cosmos_common.terminal import progress_wanted

    class Tty(io.StringIO):
        def isatty(self):
            return True

    class Closed(io.StringIO):
        def isatty(self):
            raise ValueError("I/O operation on closed file")

    assert progress_wanted(False, Tty()) is True
    assert progress_wanted(True, Tty()) is False
    assert progress_wanted(False, io.StringIO()) is False
    assert progress_wanted(False, Closed()) is False
    assert progress_wanted(False, object()) is False
