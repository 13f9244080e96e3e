"""experiments.harness.capacity: the memory that holds the index where a preset's cannot."""

from types import SimpleNamespace

import pytest

from cosmos.presets import PAPER_SYSTEMS
from experiments.harness.capacity import _capacity, fit_for, fit_overrides, index_bytes
from experiments.harness.workloads import SCALES


@pytest.mark.parametrize("scale", ["tiny", "default", "full"])
@pytest.mark.parametrize("family", ["sift", "deep"])
def test_presets_hold_every_index_up_to_the_full_scale(scale, family):
    for system in PAPER_SYSTEMS:
        assert fit_overrides(system, family, SCALES[scale]) == {}
        one = {"device.count": 1}
        assert fit_overrides(system, family, SCALES[scale], one) == one


def test_a_billion_vectors_get_the_host_dram_ranks_and_devices_that_hold_them():
    paper = SCALES["paper"]
    # 1e9 x (256 B adjacency + 128 B vector) and 1e9 x (256 B + 384 B), as docs/experiments.md
    assert index_bytes("sift", paper) == 384 * 10**9
    assert index_bytes("deep", paper) == 640 * 10**9
    for family, ranks in (("sift", 2), ("deep", 4)):
        fit = fit_overrides("dram-only", family, paper)
        assert fit == {"host.dram_ranks": ranks}
        assert _capacity("dram-only", fit) >= index_bytes(family, paper)
        # the fewest: half the ranks would not hold it
        assert _capacity("dram-only", {"host.dram_ranks": ranks // 2}) < index_bytes(family, paper)
        # fig4b's one device cannot hold it: the preset's four devices, one query in flight
        assert fit_overrides("cosmos", family, paper, {"device.count": 1}) == {}
        # a system already on its preset's devices is left alone
        assert fit_overrides("base", family, paper) == {}


def test_a_users_dataset_is_left_as_it_is():
    ctx = SimpleNamespace(dataset={"dataset": "sift.npy"}, scale=SCALES["paper"])
    assert fit_for(ctx, "sift", "dram-only") == {}
    ctx = SimpleNamespace(dataset=None, scale=SCALES["paper"])
    assert fit_for(ctx, "sift", "dram-only") == {"host.dram_ranks": 2}


@pytest.mark.parametrize("kind", ["graph", "ivfpq", "exact"])
def test_an_index_occupies_what_the_layout_lays_out(tmp_path, kind):
    """trace_index_bytes (recall_qps's index_bytes) is the sum of the layout's bytes per device."""
    import numpy as np

    from cosmos.layout import build_layout
    from experiments.harness.capacity import trace_index_bytes
    from graphs import make_workload
    from graphs.ivfpq import scan_trace
    from graphs.workload import get_dataset

    if kind == "graph":
        tr = make_workload("sift", n=2000, num_queries=5, num_clusters=8, num_probes=2,
                           cache_dir=tmp_path, progress=False)
    else:
        ds = get_dataset("sift", 2000, 5, 0, tmp_path, progress=False)
        tr = scan_trace(ds, kind, num_clusters=8, num_probes=2, rerank=0, cache_dir=tmp_path)
    C = tr.num_clusters
    layout = build_layout(tr.cluster_ptr, tr.cluster_nodes, np.arange(C) % 3, 3,
                          vector_bytes=int(tr.meta["vector_bytes"]),
                          max_degree=int(tr.meta["max_degree"]), capacity_bytes=1 << 34,
                          code_bytes=int(tr.meta.get("code_bytes", 0)) if tr.is_scan else 0)
    assert trace_index_bytes(tr) == int(np.sum(layout.bytes_used)) > 0
