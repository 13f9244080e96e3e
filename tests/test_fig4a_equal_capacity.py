"""fig4a's DRAM-only at the CXL systems' DRAM capacity (issue 51): the rank count, the task's
overrides at every scale, and its row label."""

from __future__ import annotations

from types import SimpleNamespace

from cosmos.presets import get_preset
from experiments.figures import fig4a_qps
from experiments.harness.workloads import get_scale


def _ctx(scale):
    return SimpleNamespace(dataset=None, seed=0, scale=get_scale(scale), families=("sift", "deep"),
                           trace_file=lambda fam: f"/nonexistent/{fam}.npz")


def test_equal_capacity_ranks_match_the_cxl_systems():
    dev, host = get_preset("cosmos").device, get_preset("dram-only").host
    r = fig4a_qps.equal_capacity_ranks()
    assert r == 4
    assert host.dram_channels * r == dev.count * dev.channels * dev.ranks == 64


def test_equal_capacity_task_at_every_scale():
    for scale in ("tiny", "default", "full", "paper"):
        for fam in ("sift", "deep"):
            t = fig4a_qps.equal_capacity_task(_ctx(scale), fam)
            assert t["system"] == "dram-only"
            assert t["tags"] == {"dataset": fam, "row_system": fig4a_qps.EQUAL_CAPACITY}
            # the CXL systems' 4 ranks per subchannel, or more where the index needs more
            # (never at these scales: DEEP-like at 10^9 needs exactly 4)
            assert t["overrides"]["host.dram_ranks"] == 4, (scale, fam)


def test_the_rows_of_qps_csv():
    assert fig4a_qps.ROWS[-1] == fig4a_qps.EQUAL_CAPACITY
    assert len(set(fig4a_qps.ROWS)) == len(fig4a_qps.ROWS)
