"""experiments/tools/compare_reproduce.py: two reproduction folders compared file by file."""

import json

import numpy as np
import pandas as pd

from experiments.tools.compare_reproduce import compare, main


def _folder(root, qps=1.5, wall=3.0, cwd="/a", extra=None):
    (root / "fig").mkdir(parents=True)
    pd.DataFrame({"system": ["base", "cosmos"], "qps": [1.0, qps],
                  "wall_s": [wall, wall], "requests_per_wall_s": [wall, wall]}
                 ).to_csv(root / "fig" / "qps.csv", index=False)
    (root / "fig" / "config.json").write_text(json.dumps(
        {"experiment": "fig", "seed": 0, "cwd": cwd, "code_revision": {"commit": cwd},
         "scale": {"name": "tiny"}}))
    (root / "fig" / "summary.md").write_text("# fig\n\nCosmos 1.5x\n")
    (root / "fig" / "fig.png").write_bytes(b"png" + cwd.encode())
    np.savez(root / "trace.npz", a=np.arange(4), b=np.linspace(0, 1, 3))
    if extra:
        (root / extra).write_text("x")
    return root


def test_same_results_compare_equal_whatever_the_timing_and_provenance(tmp_path):
    a = _folder(tmp_path / "a")
    b = _folder(tmp_path / "b", wall=9.0, cwd="/elsewhere")
    diffs, counts = compare(a, b)
    assert diffs == []
    assert counts == {"csv": 1, "json": 1, "text": 1, "plot": 1, "npz": 1}
    assert main([str(a), str(b)]) == 0


def test_a_different_cell_or_a_missing_file_is_reported(tmp_path, capsys):
    a = _folder(tmp_path / "a")
    b = _folder(tmp_path / "b", qps=1.6, extra="more.md")
    diffs, _ = compare(a, b)
    assert any(d.startswith("fig/qps.csv: column qps: 1 rows differ") for d in diffs)
    assert any(d.endswith(": more.md") and "only in" in d for d in diffs)
    assert main([str(a), str(b)]) == 1
    assert "2 difference(s)" in capsys.readouterr().out


def test_json_and_arrays_are_compared_beyond_provenance(tmp_path):
    a = _folder(tmp_path / "a")
    b = _folder(tmp_path / "b")
    cfg = json.loads((b / "fig" / "config.json").read_text())
    cfg["seed"] = 1
    (b / "fig" / "config.json").write_text(json.dumps(cfg))
    np.savez(b / "trace.npz", a=np.arange(4), b=np.linspace(0, 1, 3) + 1e-12)
    diffs, _ = compare(a, b)
    assert diffs == ["fig/config.json: differs at seed", "trace.npz: array b differs"]
