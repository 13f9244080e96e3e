"""experiments.figures.scale_n: the headlines against N, real index below the scale's limit and
cluster templates above it."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from experiments.figures.scale_n import TEMPLATES, clusters_for, plan_sweep
from experiments.harness.plan import (REQUESTS_PER_QUERY, requests_per_query_at,
                                      workload_build_cpu_s)
from experiments.harness.runner import Context
from experiments.harness.workloads import SCALES, get_scale


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
    assert set(df[df.n == 3_000].templates) == {0} and set(df[df.n == 30_000].templates) == {TEMPLATES}
    base = df[df.system == "base"]
    assert (base.qps_vs_base == 1.0).all() and (df.requests_per_query > 0).all()
    assert (df[df.system == "cosmos"].qps_vs_base > 1).all()
    share = df.rag_retrieval_share_of_ttft
    assert share.between(0, 1, inclusive="neither").all()
    assert (out / "scale_n.png").exists() and "Cosmos / Base" in (out / "summary.md").read_text()
    # the dry-run's estimate counts the simulations the run made
    est = plan_sweep(Context(out=Path("."), scale=get_scale("tiny")))
    assert est["what"].startswith(f"estimate of its own sweep (run after the pool): {len(df)} "
                                  "simulations at N = 3,000, 30,000")


def test_requests_per_query_between_the_scales():
    """The plan's requests per query at any N: the scales' measured figures at their sizes,
    linear in log N between them (13,549 for SIFT-like at 100,000 vectors, where the former
    100,000-vector default trace measured about 14,000), held beyond the ends."""
    for name, sc in SCALES.items():
        for fam, r in REQUESTS_PER_QUERY[name].items():
            assert requests_per_query_at(fam, sc.n) == pytest.approx(r)
    assert requests_per_query_at("sift", 100_000) == pytest.approx(13_549, abs=1)
    assert requests_per_query_at("sift", 10**12) == REQUESTS_PER_QUERY["paper"]["sift"]
    # at the full scale the estimate includes the templated workloads up to 10^9, the paper
    # scale's among them
    full = plan_sweep(Context(out=Path("."), scale=get_scale("full")))
    paper_builds = sum(workload_build_cpu_s(f, SCALES["paper"], [8]) for f in ("sift", "deep"))
    assert "of it building its workloads" in full["what"] and full["cpu_s_min"] > paper_builds
