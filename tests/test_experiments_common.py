"""Results folders never collide; sweeps return the same results in order, however they run."""

import json

import pandas as pd
import pytest

from experiments.common import atomic_write_text, new_results_dir, run_sweep, write_csv, write_json


def _square_plus_seed(x, seed):
    import numpy as np

    return float(np.random.default_rng(seed).random() + x * x)


def test_results_dirs_are_new_each_time(tmp_path):
    a = new_results_dir(tmp_path, "fig", stamp="T")
    b = new_results_dir(tmp_path, "fig", stamp="T")
    assert a != b and a.name == "fig-T" and b.name == "fig-T-2"


def test_atomic_writes_refuse_to_overwrite(tmp_path):
    p = atomic_write_text(tmp_path / "a.txt", "one")
    with pytest.raises(FileExistsError, match="a.txt"):
        atomic_write_text(p, "two")
    assert p.read_text() == "one"
    write_json(tmp_path / "c.json", {"b": 1, "a": [1, 2]})
    assert json.loads((tmp_path / "c.json").read_text()) == {"a": [1, 2], "b": 1}
    write_csv(tmp_path / "d.csv", pd.DataFrame({"qps": [1.5]}))
    assert (tmp_path / "d.csv").read_text().splitlines() == ["qps", "1.5"]
    assert not [f for f in tmp_path.iterdir() if f.name.startswith(".")]


def test_sweep_results_identical_serial_processes_and_dask():
    tasks = [{"x": i, "seed": 10 + i} for i in range(5)]
    serial = run_sweep(_square_plus_seed, tasks, workers=1, progress=False)
    local = run_sweep(_square_plus_seed, tasks, workers=2, progress=False)
    assert serial == local
    dask_results = run_sweep(_square_plus_seed, tasks, workers=1, scheduler="local", progress=False)
    assert dask_results == serial
