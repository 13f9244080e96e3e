"""The commands of the standard and their ids.

Part of the cycle: none by itself; every other part names commands by these ids. They are the
positions of the commands in ``dram.standards.ddr5.COMMANDS`` (checked at import), and
compile-time constants of the kernels.
"""

from __future__ import annotations

from dram.standards import ddr5 as _ddr5

# Command ids (same order as dram.standards.ddr5.COMMANDS).
ACT, PREpb, PREab, RD, WR, RDA, WRA, REFab, RD_L, WR_L, RDA_L, WRA_L = range(12)
COMMAND_NAMES = ("ACT", "PREpb", "PREab", "RD", "WR", "RDA", "WRA", "REFab",
                 "RD_L", "WR_L", "RDA_L", "WRA_L")

#: Commands of the standard, a compile-time constant of the kernels (the command ids above
#: are compiled in too).
N_CMDS = len(COMMAND_NAMES)
if COMMAND_NAMES != _ddr5.COMMANDS:
    raise ImportError("dram.kernel's command ids differ from dram.standards.ddr5.COMMANDS")
if N_CMDS != 12:
    raise ImportError(f"dram.kernel._dense_max is written out for 12 commands, not {N_CMDS}")
