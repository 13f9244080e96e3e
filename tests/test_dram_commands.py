"""Commands are data: the kernel's ids, counters and next-command logic come from the standard's
command tables (dram/standards/ddr5.py), so a command added only to those tables is issued,
constrained by its timing records and counted."""

import json
import os
import subprocess
import sys
from pathlib import Path

from dram import kernel as K
from dram.standards import ddr5

ROOT = Path(__file__).resolve().parents[1]

# A command the standard does not have, added to its tables only: "REFx", a second all-bank
# refresh with its own spacing (nRFC + 100), made the command the refresh manager requests.
# The kernel runs as Python (NUMBA_DISABLE_JIT): the point is what it derives, not its speed.
ADD_REFX = r'''
import json, sys
import dram.standards.ddr5 as d

d.COMMANDS = d.COMMANDS + ("REFx",)
d.CMD = {n: i for i, n in enumerate(d.COMMANDS)}
d.COMMAND_CYCLES = {**d.COMMAND_CYCLES, "REFx": 1}
d.SCOPE = {**d.SCOPE, "REFx": "rank"}
d.REFRESHING = ("REFx", "REFsb")
d.FOLLOWS = {**d.FOLLOWS, "refresh": "REFx"}
d.TIMING_RECORDS = d.TIMING_RECORDS + (
    d.TimingRecord("Rank", ("ACT",), ("REFx",), "nRC"),
    d.TimingRecord("Rank", ("PREpb", "PREab"), ("REFx",), "nRP"),
    d.TimingRecord("Rank", ("REFx",), ("ACT", "PREab"), "nRFC + 100"),
)

from dram import DRAMConfig
from dram import kernel as K

cfg = DRAMConfig(channels=1)
params = cfg.resolve()
state = K.new_state(params, log_capacity=1000)
t = params.tab


def address(rank, bg, bank, row):
    val = [0, rank, bg, bank, row, 0]          # channel, rank, bank group, bank, row, column
    x, mult = 0, 1
    for k in range(6):
        f = int(t[params.o_map_fields + k])
        x += val[f] * mult
        mult *= int(t[params.o_map_radix + f])
    return x << 6


import numpy as np

done, now = {}, 0
ids, cyc = np.zeros(8, np.int64), np.zeros(8, np.int64)


def run_to(clk_to):
    global now
    now = K.ticks_until(params, state, now, clk_to)
    n = K.pop_completions(state, ids, cyc)
    done.update(zip(ids[:n].tolist(), cyc[:n].tolist()))


# a read, then, once the refresh fell due, another to the same row: it must open it again
assert K.offer(params, state, 0, 1, address(0, 0, 0, 5), 0, 0, 0)
run_to(params.nREFI)
assert K.offer(params, state, 0, 2, address(0, 0, 0, 5), 0, 0, now)
run_to(now + 4000)
v = K.views(state)
lat = {(lv, p, f): l for lv, p, f, l, w, s in d.constraint_table(cfg.timing) if w == 1 and not s}
print(json.dumps({
    "names": list(K.COMMAND_NAMES), "n_cmds": K.N_CMDS, "stat_names": list(K.STAT_NAMES),
    "log": v["log"][:, [K.LOG_CLK, K.LOG_CMD, K.LOG_RANK]].tolist(),
    "stats": v["stats"][0].tolist(), "done": done, "nREFI": int(params.nREFI),
    "ranks": int(params.n_ranks), "refx_act": lat[("Rank", "REFx", "ACT")],
}))
'''


def test_a_command_added_only_to_the_tables_is_issued_constrained_and_counted():
    env = dict(os.environ, NUMBA_DISABLE_JIT="1", PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", ADD_REFX], capture_output=True, text=True,
                         env=env, timeout=600, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    refx = r["names"].index("REFx")
    assert r["n_cmds"] == len(ddr5.COMMANDS) + 1 and refx == len(ddr5.COMMANDS)
    names = [r["names"][c] for _, c, _ in r["log"]]
    # issued: at the refresh, the open rank is precharged and each rank gets a REFx (no REFab)
    assert names == ["ACT", "RD", "PREab", "REFx", "REFx", "ACT", "RD"], names
    clk = {(r["names"][c], rank): k for k, c, rank in r["log"]}
    assert clk[("PREab", 0)] >= r["nREFI"]
    # constrained: the next ACT of rank 0 waits exactly its REFx -> ACT record (tight)
    assert clk[("ACT", 0)] - clk[("REFx", 0)] == r["refx_act"] == 710 + 100 - 1
    # counted: its own command counter, and as the refresh command
    stats = dict(zip(r["stat_names"], r["stats"]))
    assert stats["n_REFx"] == r["ranks"] and stats["n_REFab"] == 0
    assert stats["refresh_cmds"] == r["ranks"]
    assert sorted(r["done"]) == ["1", "2"]


def test_the_kernel_ids_and_counters_come_from_the_tables():
    assert K.COMMAND_NAMES == ddr5.COMMANDS and K.N_CMDS == len(ddr5.COMMANDS)
    for role, name in ddr5.FOLLOWS.items():
        assert getattr(K, {"read": "RD", "write": "WR", "open": "ACT", "close_bank": "PREpb",
                           "close_rank": "PREab", "refresh": "REFab", "close_same_bank": "PREsb",
                           "refresh_same_bank": "REFsb", "power_down": "PDE",
                           "power_down_exit": "PDX", "self_refresh": "SRE",
                           "self_refresh_exit": "SRX"}[role]) == ddr5.CMD[name]
    for name, i in ddr5.CMD.items():
        assert getattr(K, name) == i and K.CMD_ID[name] == i
    assert [ddr5.COMMANDS[c] for c in K.FINALS] == ["RD", "WR", "RD_L", "WR_L"]
    for name, i in ddr5.CMD.items():
        plain = {v: k for k, v in ddr5.AUTO_PRECHARGE.items()}.get(name, name)
        want = K.FINALS.index(ddr5.CMD[plain]) if name in ddr5.ACCESSING else -1
        assert K.FINAL_SLOT[i] == want
    assert K.STAT_NAMES[K.S_CMD0:] == tuple("n_" + c for c in ddr5.COMMANDS)
    assert K.N_STATS == K.S_CMD0 + len(ddr5.COMMANDS)
