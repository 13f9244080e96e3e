"""DESIGN: nothing below imports from above it. dram, graphs and placement (and their command
line modules) never import the cosmos or experiments packages; they share the error type and
the version through cosmos_common."""

import subprocess
import sys

import pytest


@pytest.mark.parametrize("modules", [
    "cosmos_common, cosmos_common.outdir, cosmos_common.npz",
    "placement, placement.cli, placement.io",
    "graphs, graphs.cli, graphs.io, graphs.dataset, graphs.workload",
    "dram, dram.cli, dram.output",
])
def test_lower_packages_do_not_import_cosmos_or_experiments(modules):
    code = (f"import sys; import {modules}; "
            "print(','.join(m for m in sys.modules if m.split('.')[0] in ('cosmos', 'experiments')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=300)
    assert out.stdout.strip() == "", out.stdout


def test_graphs_cli_runs_alone_with_one_line_errors():
    p = subprocess.run([sys.executable, "-m", "graphs.cli", "trace", "--dataset", "sift",
                        "--M", "1", "--out", "never.npz"], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.strip() == ("graphs: error: --M=1 must be in 2..10000 (hnswlib caps M at "
                                "10000; the level-0 degree limit is 2*M)")
