"""The commands of the standard, derived from its tables: ids, the roles the controller
gives them, and the counters of active requests.

Part of the cycle: none by itself; every other part names commands through this module. A
command's id is its position in ``dram.standards.ddr5.COMMANDS``; what the controller does
with it comes from the standard's command tables (``OPENING``, ``CLOSING``, ``SCOPE``,
``FOLLOWS`` ...: here, and as the rows of ``params``' command metadata, ``dram.config``), so
adding a command to the standard adds it here (docs/dram.md, "Adding a command"). The ids and
the count are compile-time constants of the kernels.
"""

from __future__ import annotations

from dram.standards import ddr5 as _ddr5

#: The standard's commands, in id order, and their number.
COMMAND_NAMES = tuple(_ddr5.COMMANDS)
N_CMDS = len(COMMAND_NAMES)

#: Id of every command by name (``dram.kernel`` also exports each as a constant: ``K.RDA``).
CMD_ID = {name: i for i, name in enumerate(COMMAND_NAMES)}

# The roles of commands in the controller (the standard's ``FOLLOWS``): the final commands of
# read and write requests (rank-local accesses and the closed-row policy use their variants,
# ``M_LOCAL`` and ``M_AUTOPRE`` of the command metadata), the commands that open a bank and
# close one or a whole rank before a request's final command, and the refresh command.
RD = CMD_ID[_ddr5.FOLLOWS["read"]]
WR = CMD_ID[_ddr5.FOLLOWS["write"]]
ACT = CMD_ID[_ddr5.FOLLOWS["open"]]
PREpb = CMD_ID[_ddr5.FOLLOWS["close_bank"]]
PREab = CMD_ID[_ddr5.FOLLOWS["close_rank"]]
REFab = CMD_ID[_ddr5.FOLLOWS["refresh"]]
# the same-bank roles: the command that closes bank BA of every bank group of a rank before a
# same-bank command, and the same-bank refresh (``DRAMConfig.same_bank_refresh``)
PREsb = CMD_ID[_ddr5.FOLLOWS["close_same_bank"]]
REFsb = CMD_ID[_ddr5.FOLLOWS["refresh_same_bank"]]
# the power-state roles: power-down entry and exit, self-refresh entry and exit of a rank
# (``DRAMConfig.powerdown_idle_ns``, ``selfrefresh_idle_ns``)
PDE = CMD_ID[_ddr5.FOLLOWS["power_down"]]
PDX = CMD_ID[_ddr5.FOLLOWS["power_down_exit"]]
SRE = CMD_ID[_ddr5.FOLLOWS["self_refresh"]]
SRX = CMD_ID[_ddr5.FOLLOWS["self_refresh_exit"]]

#: Commands the kernel keeps ready cycles for, per feature set (``dram.config.FEATURE_*``
#: bits: same-bank refresh 1, power states 2): the ids up to the last command the set can
#: issue (the commands of no feature and those of its features, ``ddr5.FEATURE_COMMANDS``).
#: A command beyond it is never issued in such a configuration and its ready cycles are never
#: read, so the dense timing update (``timing._dense_max``) skips its column: with DDR5's
#: order (feature commands last) the default configuration updates the 12 commands it uses,
#: not 18.
def _live_counts():
    feats = (_ddr5.FEATURE_COMMANDS["same_bank_refresh"], _ddr5.FEATURE_COMMANDS["power_states"])
    featured = {c for f in feats for c in f}
    base = [i for i, c in enumerate(COMMAND_NAMES) if c not in featured]
    out = []
    for mask in range(1 << len(feats)):
        used = [CMD_ID[c] for k, f in enumerate(feats) if mask >> k & 1 for c in f]
        out.append(max(base + used) + 1)
    return tuple(out)


LIVE_CMDS = _live_counts()

#: The plain final commands (accessing, not an auto-precharge variant): each has a counter of
#: the active requests that end with it or its auto-precharge variant (channel scalars
#: ``C_NA + k``), which bounds when any of them can issue.
FINALS = tuple(CMD_ID[c] for c in COMMAND_NAMES
               if c in _ddr5.ACCESSING and c not in _ddr5.AUTO_PRECHARGE.values())
N_FINALS = len(FINALS)
_PLAIN = {v: k for k, v in _ddr5.AUTO_PRECHARGE.items()}
#: Per command id: the position in :data:`FINALS` of its plain form (-1: not a final command).
FINAL_SLOT = tuple(FINALS.index(CMD_ID[_PLAIN.get(c, c)]) if c in _ddr5.ACCESSING else -1
                   for c in COMMAND_NAMES)
