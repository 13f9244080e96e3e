"""Energy per query over the steady-state window QPS is taken over, the whole run's beside it,
and DRAM-only's background at the CXL systems' capacity (cosmos.energy; issue 51)."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from cosmos import energy as E
from cosmos.config import TCK_PS
from cosmos.presets import get_preset
from cosmos.simulate import simulate
from tests.cosmos_helpers import make_trace

S = TCK_PS * 1e-12      # seconds per cycle


@pytest.fixture(scope="module")
def trace():
    return make_trace(num_queries=80, hops=4, reads_per_hop=8, seed=5)


@pytest.fixture(scope="module")
def runs(trace):
    # 8 contexts: the window's 63 completions turn every context over (a steady state)
    return {name: simulate(get_preset(name), trace, progress=False, seed=2, specialize=False,
                           max_inflight=8)
            for name in ("dram-only", "cosmos")}


def test_held_in_window_clips_each_task_to_the_window():
    # [0,100) before, [50,150) half in, [120,130) inside, [190,260) partly, never ran
    start = np.array([0, 50, 120, 190, 0])
    end = np.array([100, 150, 130, 260, -1])
    assert E.held_in_window(start, end, 100, 200).tolist() == [0, 50, 10, 10, 0]


def _hand_run():
    """Four queries, one host task each, on DRAM-only's configuration over 1000 cycles."""
    pg = SimpleNamespace(task_pool=np.zeros(4, np.int64),
                         requests_per_query=lambda: np.array([10, 20, 30, 40]))
    st = SimpleNamespace(task_start=np.array([0, 100, 400, 500]),
                         task_end=np.array([400, 500, 800, 1000]))
    return SimpleNamespace(config=get_preset("dram-only"), state=st, program=pg, queries=4,
                           cycles=1000)


def test_hand_worked_window_against_whole_run():
    """Window [400, 800) of a 1000-cycle run holds queries 1 and 2 (done at 500 and 800):
    time-proportional energy over its 400 cycles, the queries' activity by their share of the
    DRAM requests (20 + 30 of 100), busy host time clipped to the window."""
    res = _hand_run()
    ec = res.config.energy
    mask = np.array([False, True, True, False])
    act = dict.fromkeys(E.CONSTANT_COMPONENT, 0.0)
    run = dict.fromkeys(E.COMPONENTS, 0.0) | {"dram_background": 2.0, "dram_array": 1.0,
                                              "dram_io": 0.4}
    assert E.request_share(res, mask) == 0.5
    w = E.window_energy_J(res, 400, 800, mask, run=run,
                          act_window=E.window_activity(res, 400, 800, mask, act))
    assert w["dram_background"] == pytest.approx(2.0 * 400 / 1000)
    assert w["dram_array"] == pytest.approx(0.5) and w["dram_io"] == pytest.approx(0.2)
    # busy cycles inside [400, 800): 0 + 100 + 400 + 300
    assert w["host"] == pytest.approx(ec.host_core_active_W * 800 * S)
    # constant power P over a window of T seconds with Q queries: P T / Q per query
    P, T, Q = ec.host_static_W, 400 * S, 2
    assert w["static"] / Q == pytest.approx(P * T / Q)
    assert w["link_switch"] == w["gpc"] == w["pu_accel"] == 0.0
    # the whole run's static per query, P x 1000 cycles / 4 queries, differs by a known amount
    assert P * 1000 * S / 4 - w["static"] / Q == pytest.approx(P * S * (250 - 200))


@pytest.mark.parametrize("name", ["dram-only", "cosmos"])
def test_window_is_qps_window_and_run_figures_stay(name, runs):
    res = runs[name]
    s = res.summary()
    assert s["steady_state"] and s["energy_over"] == "steady window"
    # the same window as qps_window: its completions and its duration
    n, secs = s["energy_window_queries"], s["energy_window_ns"] * 1e-9
    assert n == s["window_queries"]
    assert n / secs == pytest.approx(s["qps_window"], rel=1e-12)
    br = s["energy_breakdown_mJ_per_query"]
    assert s["energy_per_query_mJ"] == pytest.approx(sum(br.values()), rel=1e-12)
    assert s["power_avg_W"] == pytest.approx(s["energy_per_query_mJ"] * 1e-3 * n / secs)
    assert s["qps_per_W"] == pytest.approx(s["qps_window"] / s["power_avg_W"], rel=1e-9)
    # static power over the window's duration, per query completed in it: P T / Q
    ec, D = res.config.energy, res.config.device.count
    P = ec.host_static_W + (D * ec.device_static_W if name == "cosmos" else 0.0)
    assert br["static"] == pytest.approx(P * secs / n * 1e3, rel=1e-12)
    assert s["energy_slope_mJ_per_query"]["host_static_W"] == pytest.approx(secs / n * 1e3)
    # the whole run's, as before issue 51: all queries over all the simulated time
    e, Q, T = E.energy_J(res), res.queries, res.cycles * S
    assert s["energy_per_query_run_mJ"] == pytest.approx(sum(e.values()) / Q * 1e3, rel=1e-12)
    assert s["energy_breakdown_run_mJ_per_query"]["static"] == pytest.approx(P * T / Q * 1e3)
    assert s["power_avg_run_W"] == pytest.approx(sum(e.values()) / T, rel=1e-12)
    assert s["qps_per_W_run"] == pytest.approx(Q / T / s["power_avg_run_W"], rel=1e-12)
    # warm-up and drain left out: the two differ, by the fill's and drain's share of time
    assert s["energy_per_query_mJ"] != s["energy_per_query_run_mJ"]


def test_window_follows_the_summarys_warmup(runs):
    res = runs["dram-only"]
    a, b = res.summary(warmup=0.1), res.summary(warmup=0.2)
    assert b["energy_window_queries"] == b["window_queries"] < a["window_queries"]
    assert b["energy_window_queries"] / (b["energy_window_ns"] * 1e-9) == pytest.approx(
        b["qps_window"], rel=1e-12)
    assert b["energy_per_query_run_mJ"] == a["energy_per_query_run_mJ"]


def test_without_steady_state_the_headline_is_the_whole_run(trace):
    res = simulate(get_preset("dram-only"), trace, num_queries=12, progress=False, seed=2,
                   specialize=False)
    s = res.summary()
    assert not s["steady_state"] and s["energy_over"] == "whole run"
    assert s["energy_per_query_mJ"] == s["energy_per_query_run_mJ"]
    assert s["energy_breakdown_mJ_per_query"] == s["energy_breakdown_run_mJ_per_query"]


def test_equal_capacity_has_the_cxl_ranks_and_scales_the_floor(runs, monkeypatch):
    res = runs["dram-only"]
    cfg = res.config
    s = res.summary()
    eq = s["equal_capacity"]
    assert eq["ranks"] == cfg.device.count * cfg.device.channels * cfg.device.ranks == 64
    assert eq["ranks_simulated"] == cfg.host.dram_channels * cfg.host.dram_ranks == 16
    k = eq["ranks"] / eq["ranks_simulated"]
    # the per-rank floor (standby, refresh) x the rank ratio; the accesses' part unchanged
    bg = E.energy_J(res)["dram_background"]
    access = E.access_background_J(res)
    assert 0 < access < bg
    assert eq["dram_background_factor"] * bg - bg == pytest.approx((k - 1) * (bg - access))
    for tag in ("", "_run"):
        b = s[f"energy_breakdown{tag}_mJ_per_query"]["dram_background"]
        assert eq[f"energy_per_query{tag}_mJ"] == pytest.approx(
            s[f"energy_per_query{tag}_mJ"] + (eq["dram_background_factor"] - 1) * b)
    # without accesses the whole background is floor: it scales by the rank ratio exactly
    monkeypatch.setattr(E, "access_background_J", lambda r: 0.0)
    assert E.equal_capacity(res)["dram_background_factor"] == pytest.approx(k, rel=1e-12)
    # a CXL system already has that capacity
    assert runs["cosmos"].summary()["equal_capacity"] == {}


def test_energy_figure_adds_the_equal_capacity_row():
    from experiments.figures.energy_per_query import EQUAL_CAPACITY, with_equal_capacity

    row = {"dataset": "sift", "system": "dram-only", "equal_capacity_dram_background_factor": 3.0}
    for tag, (total, bg, w, qw) in {"": (10.0, 2.0, 50.0, 100.0),
                                    "_run": (12.0, 3.0, 40.0, 80.0)}.items():
        row |= {f"energy_per_query{tag}_mJ": total, f"power_avg{tag}_W": w,
                f"qps_per_W{tag}": qw, f"energy_breakdown{tag}_mJ_per_query_dram_background": bg}
    other = dict(row, system="cosmos", equal_capacity_dram_background_factor=float("nan"))
    df = with_equal_capacity(pd.DataFrame([row, other]))
    assert list(df.system) == ["dram-only", EQUAL_CAPACITY, "cosmos"]
    e = df.iloc[1]
    assert e.energy_breakdown_mJ_per_query_dram_background == 6.0
    assert e.energy_per_query_mJ == 14.0 and e.energy_per_query_run_mJ == 18.0
    assert e.power_avg_W == pytest.approx(50.0 * 14 / 10)
    assert e.qps_per_W_run == pytest.approx(80.0 * 12 / 18)
