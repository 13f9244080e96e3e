"""experiments.figures.scale_n: the headlines against N, real index below the scale's limit and
cluster templates above it."""

from __future__ import annotations

import pandas as pd

from experiments.figures.scale_n import clusters_for
from experiments.harness.workloads import SCALES


def test_cluster_count_grows_to_the_paper_scale():
    full = SCALES["full"]
    assert [clusters_for(full, n) for n in (10**5, 10**6, 10**7, 10**8, 10**9)] == \
        [64, 64, 128, 512, 1024]
    assert clusters_for(full, 10**9) == SCALES["paper"].num_clusters
    assert clusters_for(SCALES["tiny"], 500) == 10        # at most n / 50


def test_scale_n_runs_at_the_tiny_scale(tmp_path, monkeypatch):
    from cosmos.cli import main

    monkeypatch.setenv("COSMOS_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "sn"
    assert main(["run", "scale_n", "--scale", "tiny", "--out", str(out), "--no-progress",
                 "--workers", "2"]) == 0
    df = pd.read_csv(out / "scale_n.csv")
    assert sorted(set(df.n)) == [3_000, 30_000]
    assert set(df.system) == {"base", "dram-only", "cxl-anns", "cosmos-norank",
                              "cosmos-noalgo", "cosmos"}
    # the real index at the tiny scale's own size, templates above it
    assert set(df[df.n == 3_000].templates) == {0} and set(df[df.n == 30_000].templates) == {8}
    base = df[df.system == "base"]
    assert (base.qps_vs_base == 1.0).all() and (df.requests_per_query > 0).all()
    assert (df[df.system == "cosmos"].qps_vs_base > 1).all()
    share = df.rag_retrieval_share_of_ttft
    assert share.between(0, 1, inclusive="neither").all()
    assert (out / "scale_n.png").exists() and "Cosmos / Base" in (out / "summary.md").read_text()
