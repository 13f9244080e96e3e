"""cosmos.energy: energy per query of a simulated run (components from the run's counters,
repeatable, consistent with the DRAM model). The specialized engine's identity with the
generic one covers these figures too: tests/test_specialize.py compares the whole summary."""

import numpy as np
import pytest

from cosmos import energy as E
from cosmos.config import TCK_PS
from cosmos.presets import get_preset
from cosmos.simulate import dram_config_for, simulate
from dram.energy import energy_stats
from tests.cosmos_helpers import make_trace


@pytest.fixture(scope="module")
def trace():
    return make_trace(num_queries=24, hops=4, reads_per_hop=8, seed=5)


def _run(name, trace):
    return simulate(get_preset(name), trace, progress=False, seed=2, specialize=False)


@pytest.mark.parametrize("name", ["base", "dram-only", "cxl-anns", "cosmos-norank", "cosmos"])
def test_components_from_the_run(name, trace):
    res = _run(name, trace)
    s = res.summary()
    Q = res.program.num_queries
    secs = res.cycles * TCK_PS * 1e-12
    br = s["energy_breakdown_mJ_per_query"]
    assert list(br) == list(E.COMPONENTS)
    assert s["energy_per_query_mJ"] == pytest.approx(sum(br.values()), rel=1e-12)
    assert s["power_avg_W"] == pytest.approx(s["energy_per_query_mJ"] * 1e-3 * Q / secs,
                                             rel=1e-12)
    assert s["qps_per_W"] == pytest.approx(Q / secs / s["power_avg_W"], rel=1e-12)
    # DRAM: the DRAM model's figures of every controller state over the run
    dcfg = dram_config_for(res.config)
    d = [energy_stats(dcfg, st, res.cycles) for st in res.dram_state]
    io = sum(x["energy_io_nJ"] for x in d) * 1e-9
    assert br["dram_io"] == pytest.approx(io / Q * 1e3, rel=1e-12)
    assert br["dram_array"] > 0 and br["dram_background"] > 0
    ec = E.EnergyConfig()
    D = res.config.device.count
    if name == "dram-only":
        assert br["link_switch"] == 0.0
        assert br["static"] == pytest.approx(ec.host_static_W * secs / Q * 1e3, rel=1e-12)
    else:
        lb = res.state.link_bytes
        link = (lb.sum() * 8 * ec.link_pJ_per_bit + lb[:D].sum() * 8 * ec.switch_pJ_per_bit)
        assert br["link_switch"] == pytest.approx(link * 1e-12 / Q * 1e3, rel=1e-12)
        assert br["static"] == pytest.approx(
            (ec.host_static_W + D * ec.device_static_W) * secs / Q * 1e3, rel=1e-12)
    on_gpc = name.startswith("cosmos")
    assert (br["gpc"] > 0) == on_gpc
    assert (br["host"] > 0) == (not on_gpc)
    assert (br["pu_accel"] > 0) == (name in ("cosmos", "cxl-anns"))
    if name == "cosmos":
        assert br["pu_accel"] == pytest.approx(
            res.state.inst_local.sum() * ec.rank_pu_pJ_per_burst * 1e-12 / Q * 1e3, rel=1e-12)


def test_repeat_is_identical(trace):
    keys = ("energy_per_query_mJ", "power_avg_W", "energy_breakdown_mJ_per_query", "qps_per_W")
    a = _run("cosmos", trace).summary()
    b = _run("cosmos", trace).summary()
    assert {k: a[k] for k in keys} == {k: b[k] for k in keys}


def test_constants_carry_their_reasoning():
    from cosmos.config import SOURCE
    for name in E.EnergyConfig().help():
        assert "Estimate" in SOURCE[f"energy.{name}"], name


def test_energy_fields_are_settable_and_change_only_the_energy(trace):
    """``--set energy.*`` works like any field: recorded in the config, validated, and it
    changes the energy figures (linearly, the link part here) and nothing of the timing."""
    from cosmos.config import parse_overrides, with_overrides
    base = get_preset("cosmos")
    cfg = with_overrides(base, parse_overrides(["energy.link_pJ_per_bit=10",
                                                "energy.switch_pJ_per_bit=0"]))
    assert cfg.energy.link_pJ_per_bit == 10.0 and cfg.to_dict()["energy"]["switch_pJ_per_bit"] == 0
    a = simulate(base, trace, progress=False, seed=2, specialize=False)
    b = simulate(cfg, trace, progress=False, seed=2, specialize=False)
    assert a.cycles == b.cycles
    sa, sb = a.summary(), b.summary()
    assert sa["qps"] == sb["qps"]
    Q = a.program.num_queries
    bits = a.state.link_bytes.sum() * 8
    assert sb["energy_breakdown_mJ_per_query"]["link_switch"] == pytest.approx(
        bits * 10 * 1e-12 / Q * 1e3, rel=1e-12)
    for c in ("dram_array", "host", "gpc", "pu_accel", "static"):
        assert sa["energy_breakdown_mJ_per_query"][c] == sb["energy_breakdown_mJ_per_query"][c]


@pytest.mark.parametrize("item,msg", [
    ("energy.link_pJ_per_bit=-1", "system.energy.link_pJ_per_bit: must be >= 0"),
    ("energy.host_static_W=nan", "system.energy.host_static_W: must be a number"),
    ("energy.device_static_W=inf", "system.energy.device_static_W: must be <="),
    ("energy.gpc_core_active_W=lots", "override energy.gpc_core_active_W='lots': expected a "
                                      "number"),
    ("energy.dram_pJ_per_bit=1", "override 'energy.dram_pJ_per_bit': unknown field"),
])
def test_bad_energy_values_are_one_clear_line(item, msg):
    from cosmos.config import parse_overrides, with_overrides
    with pytest.raises(ValueError) as e:
        with_overrides(get_preset("cosmos"), parse_overrides([item]))
    assert str(e.value).startswith(msg) and "\n" not in str(e.value)


def test_energy_is_the_constants_times_their_activity(tiny_run_for_slopes):
    """activity() is exact: energy_J at other constants equals the run's energy plus the
    changes times the activities (energy is linear in every constant), and the summary's
    slopes are the activities per query in mJ."""
    import dataclasses

    from cosmos.energy import CONSTANT_COMPONENT, activity, energy_J, summary_fields

    res = tiny_run_for_slopes
    e0, act = energy_J(res), activity(res)
    new = dataclasses.replace(res.config.energy, link_pJ_per_bit=9.0, host_static_W=60.0,
                              gpc_core_active_W=1.7, rank_pu_pJ_per_burst=40.0)
    e1 = energy_J(res, new)
    for comp in e0:
        expect = e0[comp] + sum((getattr(new, c) - getattr(res.config.energy, c)) * act[c]
                                for c, k in CONSTANT_COMPONENT.items() if k == comp)
        assert e1[comp] == pytest.approx(expect, rel=1e-12, abs=1e-18)
    slopes = summary_fields(res)["energy_slope_mJ_per_query"]
    assert slopes["host_static_W"] == pytest.approx(act["host_static_W"] / res.queries * 1e3)
    assert act["link_pJ_per_bit"] > 0 and act["gpc_core_active_W"] > 0


@pytest.fixture(scope="module")
def tiny_run_for_slopes():
    from cosmos.presets import get_preset
    from cosmos.simulate import simulate
    from graphs import make_workload

    tr = make_workload("sift", n=2000, num_queries=40, num_clusters=8, num_probes=2,
                       progress=False)
    return simulate(get_preset("cosmos"), tr, num_queries=40, progress=False)


def test_extremes_are_the_vertices_of_the_ranges():
    import dataclasses

    from cosmos.config import EnergyConfig
    from cosmos.energy import CONSTANT_RANGES, extremes

    vertices = list(extremes())
    assert len(vertices) == 2 ** len(CONSTANT_RANGES)
    assert set(CONSTANT_RANGES) == {f.name for f in dataclasses.fields(EnergyConfig)}
    for name, (lo, hi) in CONSTANT_RANGES.items():
        assert lo < getattr(EnergyConfig(), name) <= hi        # the default inside its range
        assert {v[name] for v in vertices} == {lo, hi}
