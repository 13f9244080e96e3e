"""experiments.capacity: the memory that holds the index where a preset's cannot."""

from types import SimpleNamespace

import pytest

from cosmos.presets import PAPER_SYSTEMS
from experiments.capacity import _capacity, fit_for, fit_overrides, index_bytes
from experiments.workloads import SCALES


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
