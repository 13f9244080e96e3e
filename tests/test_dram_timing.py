"""Timing legality and tightness.

* Tightness: each effective constraint of the reference table (tests/data/dram/
  timing_constraints.txt, Ramulator 2.1's) is enforced exactly: after the preceding command, the
  following one is refused one cycle early and accepted on time, at every relation of the two
  addresses (same bank, same bank group, same rank, other rank).
* Legality (hypothesis): for random request streams, no two commands in the command log violate
  any constraint of the table (checked by an independent pairwise checker in Python).
"""

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from dram import DRAMConfig, replay
from dram import kernel as K
from dram.standards import ddr5
from test_dram_standard import _reference_constraints

CMDS = ("ACT", "PREpb", "PREab", "RD", "WR", "RDA", "WRA", "REFab")
RANK_SCOPE = ("PREab", "REFab")


def _expected(ref, p, f, rel):
    """Largest spacing of (p, f) from the reference table at address relation ``rel``."""
    best = None
    for level, pp, ff, lat, win, sib in ref:
        if pp != p or ff != f or win != 1:
            continue
        rank_scope = p in RANK_SCOPE or f in RANK_SCOPE
        applies = (
            level == "Channel"
            or (level == "Rank" and not sib and rel != "other_rank")
            or (level == "Rank" and sib and rel == "other_rank")
            or (level == "BankGroup" and rel in ("same_bank", "same_bg")
                or level == "BankGroup" and rank_scope and rel != "other_rank")
            or (level == "Bank" and (rel == "same_bank" or (rank_scope and rel != "other_rank"))))
        if applies:
            best = lat if best is None else max(best, lat)
    return best


def _location(params, rel):
    nb = params.n_banks
    if rel == "same_bank":
        return 0, 0
    if rel == "same_bg":
        return 0, 1
    if rel == "same_rank":
        return 0, nb          # bank group 1
    return 1, params.n_bg * nb  # rank 1


def test_every_reference_constraint_is_tight():
    ref = _reference_constraints()
    params = DRAMConfig(channels=1).resolve()
    clk0 = 1000
    checked = 0
    for p in CMDS:
        for f in CMDS:
            for rel in ("same_bank", "same_bg", "same_rank", "other_rank"):
                exp = _expected(ref, p, f, rel)
                state = K.new_state(params)
                H = state.heap
                K.issue_command(params, H, 0, ddr5.CMD[p], 0, 0, 5, clk0)
                rank, fb = _location(params, rel)
                rt = K.ready_time(params, H, 0, ddr5.CMD[f], rank, fb)
                if exp is None:
                    assert rt <= clk0, (p, f, rel, rt)
                    continue
                # refused one cycle early, accepted on time
                assert rt == clk0 + exp, (p, f, rel, rt - clk0, exp)
                assert not rt <= clk0 + exp - 1
                checked += 1
    assert checked > 150


def test_four_activate_window_is_tight():
    params = DRAMConfig(channels=1).resolve()
    state = K.new_state(params)
    H = state.heap
    nb = params.n_banks
    for k, clk in enumerate((100, 108, 116, 124)):          # nRRDS = 8 apart, 4 bank groups
        assert K.ready_time(params, H, 0, ddr5.CMD["ACT"], 0, k * nb) <= clk
        K.issue_command(params, H, 0, ddr5.CMD["ACT"], 0, k * nb, 7, clk)
    # fifth ACT in the rank: nFAW = 48 after the first (148), not nRRDS after the last (132)
    assert K.ready_time(params, H, 0, ddr5.CMD["ACT"], 0, 4 * nb) == 148
    # the other rank is not limited by this rank's window
    assert K.ready_time(params, H, 0, ddr5.CMD["ACT"], 1, params.n_bg * nb) == 126


def _applies(level, sib, a, b, rank_scope):
    same_rank = a[3] == b[3]
    if level == "Channel":
        return True
    if level == "Rank":
        return same_rank != sib
    if not same_rank:
        return False
    if rank_scope:
        return True
    if level == "BankGroup":
        return a[4] == b[4]
    return a[4] == b[4] and a[5] == b[5]


def check_log(log, timing):
    """Independent pairwise check of a command log against the constraint table.

    Returns a list of violations (empty if legal)."""
    table = ddr5.constraint_table(timing)
    by_pair = {}
    for level, p, f, lat, win, sib in table:
        by_pair.setdefault((ddr5.CMD[p], ddr5.CMD[f]), []).append((level, lat, win, sib))
    names = ddr5.COMMANDS
    bad = []
    log = [tuple(int(x) for x in row) for row in log]
    for ch in {r[1] for r in log}:
        cmds = [r for r in log if r[1] == ch]
        clks = [r[0] for r in cmds]
        if len(set(clks)) != len(clks):
            bad.append(("two commands in one cycle", ch))
        for j, b in enumerate(cmds):
            for i in range(j):
                a = cmds[i]
                for level, lat, win, sib in by_pair.get((a[2], b[2]), ()):
                    rs = names[a[2]] in RANK_SCOPE or names[b[2]] in RANK_SCOPE
                    if not _applies(level, sib, a, b, rs):
                        continue
                    if win == 1:
                        if b[0] - a[0] < lat:
                            bad.append((level, names[a[2]], names[b[2]], a, b, lat))
                    else:
                        # a window: at most `win` preceding commands within `lat` cycles
                        same = [c for c in cmds[:j] if c[2] == a[2]
                                and _applies(level, sib, c, b, rs)]
                        if len(same) >= win and b[0] - same[-win][0] < lat:
                            bad.append((level, "window", names[b[2]], b))
    return bad


@st.composite
def streams(draw):
    n = draw(st.integers(5, 60))
    banks = draw(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 7), st.integers(0, 3)),
                          min_size=1, max_size=4))
    rows = draw(st.lists(st.integers(0, 65535), min_size=1, max_size=3))
    reqs = []
    t = 0
    for _ in range(n):
        rank, bg, bank = draw(st.sampled_from(banks))
        row = draw(st.sampled_from(rows))
        col = draw(st.integers(0, 127))
        t += draw(st.integers(0, 40))
        reqs.append((rank, bg, bank, row, col, draw(st.booleans()), draw(st.booleans()), t))
    cfg = DRAMConfig(
        channels=1,
        refresh=draw(st.booleans()),
        scheduler=draw(st.sampled_from(["FRFCFS", "FRFCFS_RowHit", "FCFS"])),
        row_policy=draw(st.sampled_from(["open", "closed"])),
        read_queue_depth=draw(st.integers(1, 8)),
        write_queue_depth=draw(st.integers(1, 8)),
        timing_overrides=(("nREFI", 1500),))
    return cfg, reqs


def _addr(rank, bg, bank, row, col):
    # RoBaRaCoCh on one channel: col 6-12, rank 13, bg 14-16, bank 17-18, row 19-34
    return ((((row * 4 + bank) * 8 + bg) * 2 + rank) * 128 + col) * 64


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams())
def test_random_streams_never_violate_a_constraint(stream):
    cfg, reqs = stream
    addr = np.array([_addr(*r[:5]) for r in reqs], np.int64)
    trace = {"addr": addr, "is_write": np.array([r[5] for r in reqs]),
             "rank_local": np.array([r[6] for r in reqs]),
             "arrival": np.array([r[7] for r in reqs], np.int64)}
    res = replay(trace, cfg, command_log=100_000)
    assert (res.completion >= res.accept).all() and (res.accept >= res.arrival).all()
    log = res.command_log
    assert len(log) > 0
    assert check_log(log, cfg.timing) == []
    # every request got exactly one column command
    n_cas = sum(int((log[:, 2] == ddr5.CMD[c]).sum()) for c in ddr5.ACCESSING)
    assert n_cas == len(reqs) - res.stats["writes_coalesced"] - res.stats["reads_forwarded"]


def test_checker_detects_a_violation():
    t = DRAMConfig().timing
    # RD then RD to the same bank group 5 cycles later: violates nCCDL (12) and nBL (8)
    log = np.array([[100, 0, ddr5.CMD["RD"], 0, 0, 0, 1], [105, 0, ddr5.CMD["RD"], 0, 0, 1, 1]])
    assert check_log(log, t)
