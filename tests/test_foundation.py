"""The distribution installs four importable packages and a working command line."""

import subprocess
import sys

import pytest

from cosmos.cli import main


@pytest.mark.parametrize("name", ["cosmos", "dram", "graphs", "placement"])
def test_packages_import(name):
    __import__(name)


def test_cli_help_exits_cleanly(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    assert "cosmos" in capsys.readouterr().out


def test_cli_version_via_module():
    out = subprocess.run(
        [sys.executable, "-m", "cosmos", "--version"], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == __import__("cosmos").__version__


def test_placement_import_is_light():
    # placement must stay importable without numba or hnswlib (a user may vendor it alone).
    code = (
        "import sys, placement; "
        "bad = [m for m in ('numba', 'hnswlib', 'dram', 'graphs', 'cosmos') if m in sys.modules]; "
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
