"""Power-down and self refresh: the commands PDE/PDX/SRE/SRX (table entries of the standard),
the controller's idle-timeout policy (DRAMConfig.powerdown_idle_ns, selfrefresh_idle_ns) and
their energy (IDD2P, IDD6N).

Hand values, DDR5-4800AN, 16 Gb x4 (tCK = 416 ps, 8 chips per rank): nRCD = nRP = nCL = 34,
nBL = 8, nRTP = 18, nRFC = 710; nXP = nPD = 18, nXS = tRFC1 + 10 ns = 734 (dram/standards/
ddr5.py, derived_timings). Currents of the preset (dram/standards/ddr5_power.py, per chip):
IDD2N 92, IDD2P 88, IDD6N 102, IPP2N = IPP2P = IPP6N = 6 mA; VDD 1.1 V, VPP 1.8 V.
"""

import numpy as np
import pytest

from cosmos_common import UserError
from dram import DRAMConfig, replay
from dram import kernel as K
from dram.config import FEATURE_POWER, PARAMS_DTYPE
from dram.energy import energy_stats

TCK_NS = 0.416
CHIPS = 8
P_PD_MW = 1.1 * 88 + 1.8 * 6          # 107.6 mW per chip in precharge power-down
P_SR_MW = 1.1 * 102 + 1.8 * 6         # 123.0 mW per chip in self refresh
P_PRE_MW = 1.1 * 92 + 1.8 * 6         # 112.0 mW per chip in precharge standby


def _run(cfg, offers, until, log=1000):
    """Offer (cycle, id, address) requests one by one, ticking in between; returns the state
    and the completions {id: cycle}."""
    p = cfg.resolve()
    st = K.new_state(p, log_capacity=log)
    ids, cyc = np.zeros(16, np.int64), np.zeros(16, np.int64)
    done, now = {}, 0
    for t, rid, addr in offers:
        now = K.ticks_until(p, st, now, t - 1)
        assert K.offer(p, st, 0, rid, addr, 0, 0, t)
    K.ticks_until(p, st, now, until)
    n = K.pop_completions(st, ids, cyc)
    done.update(zip(ids[:n].tolist(), cyc[:n].tolist()))
    return p, st, done


def _log(st):
    return [(int(c), K.COMMAND_NAMES[int(k)]) for c, _, k, *_ in K.views(st)["log"].tolist()]


def test_timings_derived_and_policy_off_by_default():
    t = DRAMConfig().timing
    assert (t["nXP"], t["nPD"], t["nCPDED"], t["nXS"]) == (18, 18, 12, 734)
    cfg = DRAMConfig()
    assert cfg.powerdown_idle_ns is None and cfg.selfrefresh_idle_ns is None
    p = cfg.resolve()
    # no feature: the record type (and so the compiled kernel) of the reference runs
    assert p.pd_idle == 0 and p.sr_idle == 0 and p.dtype == PARAMS_DTYPE
    q = DRAMConfig(powerdown_idle_ns=100).resolve()
    assert q.pd_idle == 241 and q.dtype != PARAMS_DTYPE        # 100 ns / 0.416 ns, rounded up
    assert "features_%d" % FEATURE_POWER in q.dtype.names


def test_idle_rank_powers_down_and_its_background_falls_to_idd2p():
    cfg = DRAMConfig(channels=1, ranks=1, refresh=False, powerdown_idle_ns=100)
    p, st, done = _run(cfg, [(0, 1, 0)], 20_000)
    # ACT 0, RD 34 (tRCD); idle from the RD: PREab at 34 + 241 = 275, PDE tRP later
    assert _log(st) == [(0, "ACT"), (34, "RD"), (275, "PREab"), (309, "PDE")]
    assert done == {1: 34 + 34 + 8}
    ra = K.views(st)["rank_residency"][0, 0]
    assert ra[K.RA_PS] == K.PS_PD and ra[K.RA_PS_SINCE] == 309
    e1 = energy_stats(cfg, st, 10_000)
    e2 = energy_stats(cfg, st, 20_000)
    assert e2["powerdown_cycles"] == [[20_000 - 309]]
    # hand: precharged standby only between PREab and PDE (34 cycles) ...
    assert e2["energy_background_precharged_nJ"] == pytest.approx(
        CHIPS * P_PRE_MW * 34 * TCK_NS / 1000, rel=1e-12)
    # ... then the whole rank at IDD2P + IPP2P: 860.8 mW
    assert e2["energy_powerdown_nJ"] == pytest.approx(
        CHIPS * P_PD_MW * (20_000 - 309) * TCK_NS / 1000, rel=1e-12)
    slope_mW = (e2["energy_total_nJ"] - e1["energy_total_nJ"]) / (10_000 * TCK_NS) * 1000
    assert slope_mW == pytest.approx(CHIPS * P_PD_MW, rel=1e-12)
    assert slope_mW < CHIPS * P_PRE_MW


def test_request_to_a_powered_down_rank_waits_txp():
    cfg = DRAMConfig(channels=1, ranks=1, refresh=False, powerdown_idle_ns=100)
    p, st, done = _run(cfg, [(0, 1, 0), (1000, 2, 0)], 5000)
    # PDX at the offer; ACT (two cycles) ends tXP after it: first cycle 1000 + 18 - 1; RD
    # tRCD later; data nCL + nBL after the RD
    assert _log(st)[4:7] == [(1000, "PDX"), (1017, "ACT"), (1051, "RD")]
    assert done[2] == 1051 + 34 + 8
    # the same request without the policy: the row is still open, a hit at once
    _, st0, done0 = _run(DRAMConfig(channels=1, ranks=1, refresh=False),
                         [(0, 1, 0), (1000, 2, 0)], 5000)
    assert done0[2] == 1000 + 34 + 8
    ra = K.views(st)["rank_residency"][0, 0]
    assert ra[K.RA_PD_CYC] == 1000 - 309


def test_self_refresh_waits_txs_and_gets_no_refresh():
    nrefi = DRAMConfig().timing["nREFI"]                          # 9375
    cfg = DRAMConfig(channels=1, ranks=1, powerdown_idle_ns=100, selfrefresh_idle_ns=10_000)
    sr_idle = cfg.resolve().sr_idle                               # 10 us: 24,039 cycles
    assert sr_idle == 24_039
    t_wake = 12 * nrefi + 500
    p, st, done = _run(cfg, [(0, 1, 0), (t_wake, 2, 0)], t_wake + 3000, log=10_000)
    log = _log(st)
    names = [n for _, n in log]
    sre = [c for c, n in log if n == "SRE"]
    srx = [c for c, n in log if n == "SRX"]
    assert len(sre) == 1 and srx == [t_wake]
    # the self-refresh timer runs from the last request command (RD at 34); the refreshes at
    # nREFI and 2 nREFI woke the powered-down rank (PDX, REFab) without resetting it
    assert names.count("REFab") == 2 and sre[0] >= 34 + sr_idle
    assert all(n != "REFab" for c, n in log if sre[0] < c < t_wake)   # none in self refresh
    k = names.index("SRX")
    assert log[k + 1] == (t_wake + 734 - 1, "ACT")                      # tXS, ACT two cycles
    assert done[2] == t_wake + 734 - 1 + 34 + 34 + 8
    # residency: self refresh from SRE + tRFC to SRX; energy at IDD6N + IPP6N meanwhile
    ra = K.views(st)["rank_residency"][0, 0]
    assert ra[K.RA_SR_CYC] == t_wake - (sre[0] + 710)
    # the same run stopped in self refresh: its energy grows at IDD6N + IPP6N (984 mW), with
    # no refresh, whatever the background was before
    t0 = sre[0] + 710
    _, st2, _ = _run(cfg, [(0, 1, 0)], t0 + 3000, log=10_000)
    e1 = energy_stats(cfg, st2, t0 + 1000)
    e2 = energy_stats(cfg, st2, t0 + 3000)
    assert e2["self_refresh_cycles"] == [[3000]]
    slope_mW = (e2["energy_total_nJ"] - e1["energy_total_nJ"]) / (2000 * TCK_NS) * 1000
    assert slope_mW == pytest.approx(CHIPS * P_SR_MW, rel=1e-12)
    assert e2["energy_refresh_nJ"] == e1["energy_refresh_nJ"]


def _trace(n, seed, span, write_frac=0.3):
    rng = np.random.default_rng(seed)
    arrival = np.sort(rng.integers(0, span, n))
    arrival[n // 2:] += 200_000                       # a long idle gap in the middle
    return {"addr": rng.integers(0, 1 << 30, n) // 64 * 64,
            "is_write": (rng.random(n) < write_frac).astype(np.int64), "arrival": arrival}


@pytest.mark.parametrize("kw", [dict(powerdown_idle_ns=50),
                                dict(powerdown_idle_ns=200, selfrefresh_idle_ns=30_000)])
def test_event_skipping_equals_every_cycle_with_the_policy(kw):
    cfg = DRAMConfig(channels=2, read_queue_depth=8, write_queue_depth=8, **kw)
    tr = _trace(3000, seed=4, span=400_000)
    a = replay(tr, cfg, command_log=200_000)
    b = replay(tr, cfg, command_log=200_000, every_cycle=True)
    np.testing.assert_array_equal(a.accept, b.accept)
    np.testing.assert_array_equal(a.completion, b.completion)
    np.testing.assert_array_equal(a.command_log, b.command_log)
    assert a.stats["n_PDE"] > 0 and a.stats["n_PDX"] > 0
    if "selfrefresh_idle_ns" in kw:
        assert a.stats["n_SRE"] > 0 and a.stats["n_SRX"] > 0
    assert a.stats["reads_served"] + a.stats["writes_served"] == 3000


def test_without_the_policy_no_power_command_is_issued():
    res = replay(_trace(2000, seed=3, span=100_000), DRAMConfig(channels=1), command_log=10)
    for c in ("PDE", "PDX", "SRE", "SRX"):
        assert res.stats[f"n_{c}"] == 0
    assert res.stats["energy_powerdown_nJ"] == 0 and res.stats["energy_self_refresh_nJ"] == 0


@pytest.mark.parametrize("field,value", [("powerdown_idle_ns", -1.0),
                                         ("selfrefresh_idle_ns", float("nan")),
                                         ("powerdown_idle_ns", "10")])
def test_bad_timeouts_are_one_line_naming_the_field(field, value):
    with pytest.raises((UserError, ValueError)) as e:
        DRAMConfig(**{field: value}).validate()
    assert f"DRAMConfig.{field}" in str(e.value) and "\n" not in str(e.value)


def test_missing_low_power_current_is_named():
    cfg = DRAMConfig(channels=1, ranks=1, refresh=False, powerdown_idle_ns=100)
    _, st, _ = _run(cfg, [(0, 1, 0)], 2000)
    from dram.standards import ddr5_power
    power = ddr5_power.power_preset(cfg.standard, cfg.org)
    del power["IDD2P"]
    with pytest.raises(UserError, match="IDD2P.*mempowerspec.idd2p"):
        energy_stats(cfg, st, 2000, power=power)
