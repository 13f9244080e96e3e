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


def test_the_console_script_runs_main_and_exits_with_its_status():
    import re
    from pathlib import Path

    pyproject = (Path(__file__).parents[1] / "pyproject.toml").read_text()
    assert re.findall(r'^cosmos = "(.*)"$', pyproject, re.M) == ["cosmos.cli:run"]
    code = "import sys; from cosmos.cli import run; sys.argv[1:] = {!r}; run()"
    ok = subprocess.run([sys.executable, "-c", code.format(["--version"])],
                        capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stdout.strip() == __import__("cosmos").__version__
    bad = subprocess.run([sys.executable, "-c", code.format(["dram", "replay", "no-such-file"])],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "no-such-file" in bad.stderr


def test_placement_import_is_light():
    # placement must stay importable without numba or hnswlib (a user may vendor it alone).
    code = (
        "import sys, placement; "
        "bad = [m for m in ('numba', 'hnswlib', 'dram', 'graphs', 'cosmos') if m in sys.modules]; "
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_commands_map_each_command_to_the_module_that_adds_it():
    import argparse
    import importlib

    from cosmos import cli

    seen = {}
    for name in cli.SUBCOMMAND_MODULES:
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(name).register(sub)
        seen.update({command: name for command in sub.choices})
    assert seen == cli.COMMANDS
    # a command line naming a command builds its module's parser alone, same subcommands
    full = cli.build_parser()._subparsers._group_actions[0].choices
    for command, name in cli.COMMANDS.items():
        alone = cli.build_parser(command)._subparsers._group_actions[0].choices
        assert set(alone) == {c for c, m in cli.COMMANDS.items() if m == name}
        assert alone[command].format_help() == full[command].format_help()


def test_dram_replay_imports_only_what_it_needs(tmp_path):
    # the heavy libraries of the other packages (and scipy.linalg, cffi: see
    # dram.jitcache.start_numba_lean) stay out of a `cosmos dram replay` process
    trace = tmp_path / "t.trace"
    trace.write_text("0x40 READ 0\n0x80 WRITE 3\n")
    code = (
        "import sys, runpy; sys.argv = ['cosmos', 'dram', 'replay', sys.argv[1], '--out', "
        "sys.argv[2], '--no-progress']\n"
        "try:\n    runpy.run_module('cosmos', run_name='__main__')\n"
        "except SystemExit as e:\n    assert not e.code, e.code\n"
        "heavy = ('pandas', 'matplotlib', 'scipy.linalg', 'cffi', 'dask', 'networkx', "
        "'hnswlib', 'pyarrow', 'graphs', 'placement', 'experiments', 'cosmos.engine', 'tqdm')\n"
        "print('heavy:' + ','.join(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code, str(trace), str(tmp_path / "out")],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "heavy:"
    assert (tmp_path / "out" / "requests.npz").is_file()
