"""DDR5's same-bank commands (PREsb, REFsb) and same-bank refresh.

Each constraint is checked by a hand sequence of commands on DDR5-4800AN, 16 Gb x4 (tCK 416 ps;
8 bank groups x 4 banks), with the earliest legal cycle computed here from the standard's
values: the command is refused one cycle early and accepted on time. The values, JESD79-5:
tRFCsb = 130 ns (16 Gb) -> 313 nCK, tREFSBRD = 30 ns -> 73 nCK, tREFI2 = 1.95 us -> 4688 nCK
(refresh parameters); tRP = 34, tRAS = 77, tRC = 111, tPPD = 2 nCK (DDR5-4800AN bin); tRFC1
= 295 ns -> 710 nCK. A two-cycle preceding command (ACT) adds one cycle, a two-cycle following
command (ACT) takes one off (JESD79-5 counts from the last command cycle; dram.standards.ddr5
constraint_table).
"""

import numpy as np
import pytest

from dram import DRAMConfig, replay
from dram import kernel as K
from dram.energy import command_energy, energy_stats
from dram.memspec import Memspec
from dram.standards import ddr5, ddr5_power

N_RFCSB, N_REFSBRD, N_REFI2 = 313, 73, 4688          # JESD79-5 values at tCK = 416 ps
N_RP, N_RAS, N_RC, N_PPD, N_RFC = 34, 77, 111, 2, 710
NB, NBG = 4, 8                                        # banks per group, groups (16Gb_x4)


@pytest.fixture(scope="module")
def params():
    # the same-bank commands are compiled in with same-bank refresh only (FEATURE_SAME_BANK)
    return DRAMConfig(channels=1, same_bank_refresh=True).resolve()


def fb(rank, bg, bank):
    """Flat bank of (rank, bank group, bank) in a channel."""
    return (rank * NBG + bg) * NB + bank


def test_derived_values_are_the_standards():
    t = DRAMConfig().timing
    assert (t["nRFCsb"], t["nREFSBRD"], t["nREFI2"]) == (N_RFCSB, N_REFSBRD, N_REFI2)
    assert (t["nRP"], t["nRAS"], t["nRC"], t["nPPD"], t["nRFC"]) == (N_RP, N_RAS, N_RC, N_PPD,
                                                                      N_RFC)
    assert DRAMConfig(org="8Gb_x4").timing["nRFCsb"] == 277        # 115 ns
    assert DRAMConfig(org="32Gb_x4").timing["nRFCsb"] == 457       # 190 ns


def _tight(params, H, cmd, rank, f, when):
    """``cmd`` to flat bank f is refused at when - 1 and ready at ``when``."""
    rt = K.ready_time(params, H, 0, cmd, rank, f)
    assert rt == when, (K.COMMAND_NAMES[cmd], f, rt, when)
    assert not rt <= when - 1


def test_presb_waits_for_tras_of_every_bank_group_and_closes_them(params):
    H = K.new_state(params).heap
    K.issue_command(params, H, 0, K.ACT, 0, fb(0, 0, 1), 7, 1000)
    K.issue_command(params, H, 0, K.ACT, 0, fb(0, 3, 1), 9, 1020)
    # bank index 1: tRAS after the later ACT (+1: ACT takes two cycles)
    _tight(params, H, K.PREsb, 0, fb(0, 0, 1), 1020 + N_RAS + 1)
    # bank index 0 was not activated: only the command bus (ACT, 2 cycles)
    assert K.ready_time(params, H, 0, K.PREsb, 0, fb(0, 0, 0)) <= 1022
    # the refresh's next command: PREsb closes bank index 1 of every group before REFsb
    assert K.preq_command(params, H, 0, K.REFsb, 0, fb(0, 0, 1), -1) == K.PREsb
    assert K.preq_command(params, H, 0, K.REFsb, 0, fb(0, 0, 2), -1) == K.REFsb
    t = 1020 + N_RAS + 1
    K.issue_command(params, H, 0, K.PREsb, 0, fb(0, 0, 1), -1, t)
    bank = K.views(K.State(H))["bank"][0, :, 0]
    assert bank[fb(0, 0, 1)] == -1 and bank[fb(0, 3, 1)] == -1
    assert K.preq_command(params, H, 0, K.REFsb, 0, fb(0, 5, 1), -1) == K.REFsb
    # tRP to an ACT of any bank of the set (ACT two cycles: -1), not to another bank index
    for g in (0, 3, 7):
        _tight(params, H, K.ACT, 0, fb(0, g, 1), t + N_RP - 1)
    assert K.ready_time(params, H, 0, K.ACT, 0, fb(0, 1, 2)) <= t + 1
    # tPPD to the next precharge of the rank, any kind
    for cmd in (K.PREpb, K.PREab, K.PREsb):
        _tight(params, H, cmd, 0, fb(0, 6, 2), t + N_PPD)
    # the other rank: free
    assert K.ready_time(params, H, 0, K.ACT, 1, fb(1, 0, 1)) <= t + 1
    st = K.views(K.State(H))["stats"][0]
    assert st[K.S_CMD0 + K.PREsb] == 1


def test_refsb_holds_its_banks_trfcsb_and_the_others_trefsbrd(params):
    H = K.new_state(params).heap
    t = 1000
    K.issue_command(params, H, 0, K.REFsb, 0, fb(0, 0, 2), -1, t)
    for g in (0, 4, 7):                               # bank index 2 of every group: tRFCsb
        _tight(params, H, K.ACT, 0, fb(0, g, 2), t + N_RFCSB - 1)
        _tight(params, H, K.REFsb, 0, fb(0, g, 2), t + N_RFCSB)
    for g, b in ((0, 0), (4, 3)):                     # another bank: tREFSBRD
        _tight(params, H, K.ACT, 0, fb(0, g, b), t + N_REFSBRD - 1)
        _tight(params, H, K.REFsb, 0, fb(0, g, b), t + N_REFSBRD)
    for cmd in (K.REFab, K.PREab):                    # the whole rank: tRFCsb
        _tight(params, H, cmd, 0, fb(0, 0, 0), t + N_RFCSB)
    assert K.ready_time(params, H, 0, K.ACT, 1, fb(1, 0, 2)) <= t + 1
    log = K.views(K.State(H))
    assert log["stats"][0][K.S_CMD0 + K.REFsb] == 1


def test_refsb_after_act_precharge_and_refab(params):
    H = K.new_state(params).heap
    K.issue_command(params, H, 0, K.ACT, 0, fb(0, 2, 1), 7, 1000)
    _tight(params, H, K.REFsb, 0, fb(0, 0, 1), 1000 + N_RC + 1)     # tRC, ACT two cycles
    K.issue_command(params, H, 0, K.PREsb, 0, fb(0, 0, 1), -1, 1100)
    _tight(params, H, K.REFsb, 0, fb(0, 0, 1), 1100 + N_RP)          # tRP wins
    H = K.new_state(params).heap
    K.issue_command(params, H, 0, K.PREab, 0, fb(0, 0, 0), -1, 1000)
    _tight(params, H, K.REFsb, 0, fb(0, 5, 3), 1000 + N_RP)
    K.issue_command(params, H, 0, K.REFab, 0, fb(0, 0, 0), -1, 1100)
    _tight(params, H, K.REFsb, 0, fb(0, 5, 3), 1100 + N_RFC)


def test_the_scope_is_a_table_column(params):
    from dram.config import M_SCOPE, SCOPE_BANK, SCOPE_RANK, SCOPE_SAME_BANK, tables
    scope = tables(params)["cmeta"][M_SCOPE]
    for name, i in ddr5.CMD.items():
        want = {"rank": SCOPE_RANK, "same_bank": SCOPE_SAME_BANK}.get(ddr5.SCOPE.get(name),
                                                                       SCOPE_BANK)
        assert scope[i] == want, name


def _trace(n, seed=5, span=200_000, write_frac=0.3):
    rng = np.random.default_rng(seed)
    return {"addr": rng.integers(0, 1 << 30, n) // 64 * 64,
            "is_write": (rng.random(n) < write_frac).astype(np.int64),
            "arrival": np.sort(rng.integers(0, span, n))}


def _refsb_by_set(log):
    """REFsb cycles per (channel, rank, bank index), from a replay's command log."""
    out = {}
    for clk, ch, cmd, rank, bg, bank, row in log.tolist():
        if cmd == K.REFsb:
            assert bg == -1 and row == -1
            out.setdefault((ch, rank, bank), []).append(clk)
    return out


def test_same_bank_refresh_refreshes_every_bank_index_within_trefi():
    cfg = DRAMConfig(channels=2, same_bank_refresh=True)
    t = cfg.timing
    res = replay(_trace(20_000), cfg, command_log=1_000_000)
    total = res.stats["total_cycles"]
    by_set = _refsb_by_set(res.command_log)
    assert set(by_set) == {(c, r, b) for c in range(2) for r in range(2) for b in range(NB)}
    per = t["nREFI2"] // NB                            # a REFsb request per rank each 1172
    for (c, r, b), clks in by_set.items():
        # requested at k * per for k = b + 1, b + 1 + NB, ...: each issues before the next
        # request of the rank, so every bank index is refreshed once per tREFI2 (+ a delay
        # of less than one request interval), well within tREFI
        req = np.arange(b + 1, total // per + 1, NB) * per
        req = req[req <= total - per]
        got = np.array(clks[:req.size])
        assert got.size == req.size
        assert ((got >= req) & (got < req + per)).all()
        gaps = np.diff(np.concatenate([[0], got]))
        assert gaps.max() < N_REFI2 + per < t["nREFI"]
    assert res.stats["n_REFab"] == 0 and res.stats["n_REFsb"] == res.stats["refresh_cmds"]
    assert res.stats["n_PREsb"] > 0                   # open banks were closed for REFsb
    assert res.stats["n_PREab"] == 0
    assert res.stats["reads_served"] + res.stats["writes_served"] == 20_000


def test_same_bank_refresh_event_skipping_equals_every_cycle():
    cfg = DRAMConfig(channels=2, read_queue_depth=8, write_queue_depth=8,
                     same_bank_refresh=True)
    tr = _trace(4000, seed=9, span=60_000, write_frac=0.35)
    a = replay(tr, cfg, command_log=100_000)
    b = replay(tr, cfg, command_log=100_000, every_cycle=True)
    np.testing.assert_array_equal(a.accept, b.accept)
    np.testing.assert_array_equal(a.completion, b.completion)
    np.testing.assert_array_equal(a.command_log, b.command_log)
    assert a.stats["n_REFsb"] > 0


def test_default_is_all_bank_refresh():
    p = DRAMConfig().resolve()
    assert p.refresh == 1 and p.nREFI == DRAMConfig().timing["nREFI"]
    res = replay(_trace(3000, span=40_000), DRAMConfig(channels=1), command_log=100_000)
    assert res.stats["n_REFsb"] == 0 and res.stats["n_PREsb"] == 0
    assert res.stats["n_REFab"] > 0


def test_same_bank_refresh_energy_is_command_energy_of_its_log():
    """A run with same-bank refresh, 120 REFsb and then one read between two of them: the
    replay's energy equals DRAMPower's method applied to its command log
    (dram.energy.command_energy: REFsb holds bank BA of every group open for tRFCsb). (The
    replay adds each REFsb's tRFCsb to its rank's active time: exact while no other bank of
    the rank is open during it, as here; docs/dram.md, energy.)"""
    cfg = DRAMConfig(channels=1, ranks=1, same_bank_refresh=True)
    tr = {"addr": np.array([0], np.int64), "is_write": np.zeros(1, np.int64),
          "arrival": np.array([30 * N_REFI2 + 400], np.int64)}
    res = replay(tr, cfg, command_log=100_000)
    total = res.stats["total_cycles"]
    names = {K.ACT: "ACT", K.RD: "RD", K.REFsb: "REFSB", K.PREsb: "PRESB", K.PREpb: "PRE"}
    cmds = [(clk, names[cmd], bg * NB + bank if bg >= 0 else bank)
            for clk, ch, cmd, rank, bg, bank, row in res.command_log.tolist()]
    assert sum(1 for c in cmds if c[1] == "REFSB") == res.stats["n_REFsb"] > 100
    power = ddr5_power.power_preset(cfg.standard, cfg.org)
    spec = Memspec(power=power, timing=cfg.timing, banks=NB * NBG, bankgroups=NBG,
                   devices=8, ranks=1, width=4)
    want = command_energy(spec, cmds, total)
    got = res.stats
    for comp in ("refresh", "background_active", "background_precharged", "act", "read"):
        assert got[f"energy_{comp}_nJ"] == pytest.approx(want[comp] / 1000, rel=1e-9), comp
    assert got["energy_refresh_nJ"] > 0


def test_presb_then_refab_waits_trp(params):
    """PREsb -> REFab: tRP, at the rank (JESD79-5: an all-bank refresh needs every bank
    precharged, tRP after the precharge; Ramulator 2.0's DDR5, src/dram/impl/DDR5.cpp, has
    the same record, {PRE, PREsb} -> REFab: nRP at the rank level)."""
    H = K.new_state(params).heap
    K.issue_command(params, H, 0, K.PREsb, 0, fb(0, 0, 2), -1, 1000)
    for f in (fb(0, 0, 0), fb(0, 7, 3)):
        _tight(params, H, K.REFab, 0, f, 1000 + N_RP)
    assert K.ready_time(params, H, 0, K.REFab, 1, fb(1, 0, 0)) <= 1001   # another rank: free
