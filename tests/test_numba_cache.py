"""numba's compiled kernels are checked before they are trusted (issue 55, bug 5).

A byte flipped in a ``.nbc`` file of a package's ``__pycache__`` failed every later run with
an LLVM bitcode traceback until the folder was deleted, while ``cosmos cache verify`` said
all was intact. Now every cache file numba writes is sealed with its SHA-256, a damaged one
is reported in one line naming it and its folder, deleted and compiled again, and ``cosmos
cache verify`` checks the compiled kernels.

The package's own ``__pycache__`` is never touched here (other tests run beside these): the
damaged files are a module of this test's own in a temporary folder, or copies.
"""

import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cosmos_common import numba_cache

ROOT = Path(__file__).resolve().parents[1]

KERNEL = '''
import numba
from cosmos_common.numba_cache import install

install()


@numba.njit(cache=True)
def twice_plus_one(x):
    return 2 * x + 1


print(twice_plus_one(20))
'''


def _run_kernel(folder: Path):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "kern.py"], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300)


def _flip(path: Path, where: str = "bitcode") -> None:
    """Flip one byte of a numba data file: in its LLVM bitcode (numba fails to parse it) or
    in its object code (numba would load it and run damaged machine code)."""
    raw = bytearray(path.read_bytes())
    start = raw.find(b"BC\xc0\xde") if where == "bitcode" else raw.find(b"\x7fELF")
    assert start > 0, where
    raw[start + 300] ^= 0xFF
    path.write_bytes(bytes(raw))


def _data_file(folder: Path) -> Path:
    (data,) = sorted((folder / "__pycache__").glob("kern.twice_plus_one-*.nbc"))
    return data


@pytest.mark.parametrize("sealed, where", [(True, "bitcode"), (True, "object code"),
                                           (False, "bitcode")])
def test_a_damaged_cache_file_is_reported_in_one_line_and_compiled_again(tmp_path, sealed,
                                                                         where):
    (tmp_path / "kern.py").write_text(KERNEL)
    first = _run_kernel(tmp_path)
    assert first.returncode == 0 and first.stdout.strip() == "41", first.stderr
    data = _data_file(tmp_path)
    seal = data.with_name(data.name + numba_cache.SEAL_SUFFIX)
    assert seal.is_file() and numba_cache.check_file(data) is None
    if not sealed:          # as written before seals existed: checked by loading it
        seal.unlink()
    _flip(data, "bitcode" if where == "bitcode" else "object")
    assert numba_cache.check_file(data) is not None          # what cosmos cache verify sees

    run = _run_kernel(tmp_path)
    assert run.returncode == 0 and run.stdout.strip() == "41", run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in run.stderr, run.stderr
    assert lines[0].startswith(f"cosmos cache: warning: {data}: numba's compiled code is "
                               f"damaged: ")
    assert ("do not match their SHA-256" if sealed else "LLVM bitcode parsing error") in lines[0]
    assert lines[0].endswith(f"; deleted, compiling the function again (a minute or two); if "
                             f"this repeats, delete the folder {data.parent}")
    assert numba_cache.check_file(_data_file(tmp_path)) is None   # compiled and sealed anew

    again = _run_kernel(tmp_path)
    assert again.returncode == 0 and again.stdout.strip() == "41" and again.stderr == ""


def _copy_of_compiled_kernels(dest: Path) -> Path:
    """A copy of dram's compiled kernels (the package's own files are left alone)."""
    src = ROOT / "dram" / "__pycache__"
    files = numba_cache.numba_files(src)
    if not any(f.suffix == ".nbc" for f in files):
        pytest.skip("dram's kernels are not compiled in this checkout")
    dest.mkdir(parents=True)
    for f in files:
        shutil.copy2(f, dest / f.name)
        seal = f.with_name(f.name + numba_cache.SEAL_SUFFIX)
        if seal.is_file():
            shutil.copy2(seal, dest / seal.name)
    return dest


def test_cosmos_cache_verify_checks_the_compiled_kernels(tmp_path):
    # NUMBA_CACHE_DIR: numba's (and verify's) folder for the packages' kernels; a copy of
    # dram's compiled kernels is put where numba would keep them, one byte flipped
    numba_dir = tmp_path / "numba"
    copy = _copy_of_compiled_kernels(numba_dir / (ROOT / "dram").relative_to("/"))
    damaged = next(f for f in sorted(copy.glob("*.nbc")))
    _flip(damaged)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(numba_dir), PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "cosmos", "cache", "--cache-dir", str(tmp_path / "cache"),
           "verify"]
    run = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 1, run.stdout + run.stderr
    lines = run.stdout.strip().splitlines()
    bad = [line for line in lines if line.startswith(str(damaged))]
    assert len(bad) == 1 and "numba's compiled code is damaged" in bad[0], run.stdout
    assert bad[0].endswith(f"; delete the folder {copy} (or run cosmos cache verify --delete):"
                           f" its kernels are compiled again when next used")
    assert "compiled kernel files in " in lines[-1] and str(copy) in lines[-1]
    assert lines[-1].endswith(f": {len(lines) - 1} bad")

    run = subprocess.run(cmd + ["--kind", "kernels", "--delete"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 1 and not damaged.exists()
    assert f"{damaged}: numba's compiled code is damaged" in run.stdout
    run = subprocess.run(cmd + ["--kind", "kernels"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert not any(line.startswith(str(copy)) for line in run.stdout.splitlines())


def test_verify_checks_the_compiled_code_of_a_specialized_build(tmp_path):
    from cosmos.cache_cli import cache_verify
    from cosmos.specialize import _write_build

    folder = tmp_path / "kernels" / "abc"
    folder.mkdir(parents=True)
    _write_build(folder, "abc", {"_k.py": "X = 1\n"})
    copy = _copy_of_compiled_kernels(folder / "__pycache__")
    out = io.StringIO()
    assert cache_verify(tmp_path, ["kernels"], out=out) == (1, 0), out.getvalue()
    damaged = next(f for f in sorted(copy.glob("*.nbc")))
    _flip(damaged)
    assert cache_verify(tmp_path, ["kernels"], out=out) == (1, 1)
    assert out.getvalue().startswith(f"{folder / 'build.entry.json'}: numba's compiled code "
                                      f"{damaged.name} is damaged: ")


@pytest.mark.parametrize("module", ["dram.tracescan", "dram.kernel", "cosmos.program",
                                    "graphs.kmeans", "graphs.search", "graphs.groundtruth",
                                    "graphs.synthetic", "graphs.ivfpq", "graphs.vamana_diskann",
                                    "graphs.vamana_paper"])
def test_every_module_with_cached_kernels_checks_them(module):
    code = (f"import {module}; from numba.core.caching import IndexDataCacheFile as F; "
            f"print(getattr(F, '_cosmos_sealed', False))")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert run.stdout.strip() == "True", run.stderr


def test_the_kernel_package_folder_is_checked():
    """The DRAM kernel is a package of its own (dram/kernel/): its compiled code is checked
    like that of the top-level packages."""
    import dram.kernel
    from cosmos_common.numba_cache import PACKAGES, package_folders

    assert "dram.kernel" in PACKAGES
    folder = Path(dram.kernel.__file__).resolve().parent / "__pycache__"
    if folder.is_dir() and not os.environ.get("NUMBA_CACHE_DIR"):
        assert folder in package_folders()


def test_a_first_run_says_it_compiles_once(tmp_path, monkeypatch):
    """No compiled kernel cached anywhere: one line says this run compiles them, once per
    process tree; with a numba index in a package folder, or silenced, nothing."""
    monkeypatch.setattr(numba_cache, "package_folders", lambda: [tmp_path])
    monkeypatch.delenv(numba_cache.COMPILE_NOTE_ENV, raising=False)
    note = numba_cache.first_run_note()
    assert note and note.startswith("numba: no compiled kernels are cached yet")
    assert os.environ[numba_cache.COMPILE_NOTE_ENV] == "off"
    assert numba_cache.first_run_note() is None             # once
    monkeypatch.delenv(numba_cache.COMPILE_NOTE_ENV)
    (tmp_path / "search._run-1.py311.nbi").write_bytes(b"x")
    assert numba_cache.first_run_note() is None             # something is cached
    monkeypatch.setenv(numba_cache.COMPILE_NOTE_ENV, "off")
    (tmp_path / "search._run-1.py311.nbi").unlink()
    assert numba_cache.first_run_note() is None             # silenced
