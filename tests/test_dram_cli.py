"""``cosmos dram`` (dram.cli) and the results folder (dram.output)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cosmos.cli import main
from dram.output import REQUEST_COLUMNS, new_run_dir
from dram.standards import list_presets

DATA = Path(__file__).parent / "data" / "dram"
SAMPLE = DATA / "4ch_random_rw_L0.50_s10.head2000.trace.gz"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# ---------------------------------------------------------------------------------------------
# Results folder rule
# ---------------------------------------------------------------------------------------------


def test_new_run_dir_never_reuses_a_folder_with_content(tmp_path):
    fresh = tmp_path / "a" / "b"
    assert new_run_dir(fresh) == fresh and fresh.is_dir()  # created with parents
    assert new_run_dir(fresh) == fresh  # still empty: used as is
    (fresh / "requests.csv").write_text("x\n")
    assert new_run_dir(fresh) == fresh / "run-1"
    assert new_run_dir(fresh) == fresh / "run-2"  # run-1 exists (empty) -> next name
    (tmp_path / "file").write_text("")
    with pytest.raises(FileExistsError, match="is not a folder"):
        new_run_dir(tmp_path / "file")


# ---------------------------------------------------------------------------------------------
# presets
# ---------------------------------------------------------------------------------------------


def test_presets_lists_the_registry(capsys):
    code, out, err = run(capsys, "dram", "presets")
    assert code == 0 and err == ""
    reg = list_presets()
    for key in ("standards", "orgs", "mappings", "schedulers", "row_policies"):
        for name in reg[key]:
            assert name in out, (key, name)
    for fmt in ("dramsim3", "ramulator", "dramsys"):
        assert fmt in out
    code, out, _ = run(capsys, "dram", "presets", "--json")
    data = json.loads(out)
    assert data["standards"] == reg["standards"] and data["orgs"] == reg["orgs"]
    assert set(data["trace_formats"]) == {"dramsim3", "ramulator", "dramsys"}


# ---------------------------------------------------------------------------------------------
# errors: one line on stderr, exit code 2, no traceback
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--standard", "DDR5_9999"], "DRAMConfig.standard='DDR5_9999' is unknown; valid: DDR5_3200AN"),
        (["--org", "16Gb_x5"], "DRAMConfig.org='16Gb_x5' is unknown"),
        (["--mapping", "RoRoRaCoCh"], "DRAMConfig.mapping='RoRoRaCoCh'"),
        (["--scheduler", "LIFO"], "DRAMConfig.scheduler='LIFO' is unknown"),
        (["--channels", "0"], "DRAMConfig.channels=0: expected a positive integer"),
        (["--timing", "nXY=3"], "unknown timing parameter 'nXY'"),
        (["--timing", "nCL"], "--timing 'nCL': expected NAME=CYCLES"),
        (["--config", "missing.json"], "missing.json: no such config file"),
    ],
)
def test_bad_options_are_one_line_errors(capsys, argv, fragment):
    code, out, err = run(capsys, "dram", "replay", str(SAMPLE), *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("cosmos dram: error: "), err
    assert fragment in err, err
    assert "Traceback" not in err


def test_bad_trace_files_are_one_line_errors(capsys, tmp_path):
    bad = tmp_path / "bad.trace"
    bad.write_text("0x40 READ 0\n0x80 READ oops\n")
    code, _, err = run(capsys, "dram", "replay", str(bad))
    assert code == 2 and err.count("\n") == 1
    assert f"{bad}, line 2: bad cycle (decimal integer >= 0) 'oops'" in err
    code, _, err = run(capsys, "dram", "replay", str(tmp_path / "none.trace"))
    assert code == 2 and "none.trace: no such trace file" in err
    big = tmp_path / "big.trace"
    big.write_text(f"0x40 READ 0\n0x{64 << 30:x} READ 1\n")  # 64 GiB > 1 ch x 2 ranks = 32 GiB
    code, _, err = run(capsys, "dram", "replay", str(big), "--channels", "1")
    assert code == 2 and f"{big}, line 2: address 0x1000000000 is beyond the memory's capacity of 32 GiB" in err
    bad_cfg = tmp_path / "config.json"
    bad_cfg.write_text(json.dumps({"dram_config": {"standard": "DDR5_4800AN", "colour": 3}}))
    code, _, err = run(capsys, "dram", "replay", str(SAMPLE), "--config", str(bad_cfg))
    assert code == 2 and "unknown DRAMConfig field(s) colour" in err
