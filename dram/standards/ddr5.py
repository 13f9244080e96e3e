"""The DDR5 standard as data: levels, commands, timing presets, organization presets, and the
timing-constraint table.

Everything here is plain data plus two small functions: :func:`derived_timings` (the timing
values JEDEC gives in nanoseconds or per device width, converted to clock cycles) and
:func:`constraint_table` (the records below evaluated for one preset, with the multi-cycle
command adjustment applied). :mod:`dram.config` turns the result into dense integer arrays.

Sources
-------
* JEDEC JESD79-5 (DDR5 SDRAM standard): speed bins (Table "DDR5-3200/4800 speed bins"),
  tRFC1 = 195 / 295 / 410 ns for 8 / 16 / 32 Gb, tREFI = 3.9 us, tFAW, tRRD_S / tRRD_L, the
  organization (bank groups x banks, rows, page size) per density and width, and the command
  truth table (ACT, RD, WR, RDA, WRA take two command/address cycles; PREpb, PREab, REFab one).
* Ramulator 2.1 (CMU-SAFARI/ramulator2, ``python/ramulator/dram/ddr5.py``): the same bins
  expressed in clock cycles, and the list of constraints as (level, preceding commands,
  following commands, latency expression, window, sibling) records, which we restate here.
  The reference data of this project was produced with that table; the effective values are
  in ``tests/data/dram/timing_constraints.txt``.

Names: ``n*`` are clock cycles (nCK), ``t*`` carry their unit (``tCK_ps``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: Hierarchy levels above the row, outermost first. Index = level id in the kernel arrays.
LEVELS = ("Channel", "Rank", "BankGroup", "Bank")

#: Commands. The first eight are the DDR5 commands of Ramulator 2.1's DDR5 (the reference runs);
#: the next four are *rank-local* variants of the column commands (a near-memory processing
#: unit on the rank reads or writes a burst that never crosses the channel's shared data bus),
#: which obey every constraint of their base command except those marked ``data_bus`` below;
#: the last two are DDR5's same-bank commands (JESD79-5, command truth table: PREsb and REFsb
#: act on bank BA of every bank group of the rank), issued only with same-bank refresh
#: (``DRAMConfig.same_bank_refresh``); then the power-state commands of a rank (JESD79-5:
#: power-down entry PDE and exit PDX, self-refresh entry SRE and exit SRX), issued only by the
#: power-state policy (``DRAMConfig.powerdown_idle_ns``, ``selfrefresh_idle_ns``).
COMMANDS = ("ACT", "PREpb", "PREab", "RD", "WR", "RDA", "WRA", "REFab",
            "RD_L", "WR_L", "RDA_L", "WRA_L", "PREsb", "REFsb", "PDE", "PDX", "SRE", "SRX")
CMD = {name: i for i, name in enumerate(COMMANDS)}

#: Commands that exist only with a controller feature (``DRAMConfig.same_bank_refresh``; the
#: power-state policy), each feature's commands after every command without one, in
#: ``COMMANDS`` order: a configuration without the feature never issues them, so the kernel
#: keeps no ready cycles for them (``dram.kernel.commands.LIVE_CMDS``).
FEATURE_COMMANDS = {"same_bank_refresh": ("PREsb", "REFsb"),
                    "power_states": ("PDE", "PDX", "SRE", "SRX")}

#: Rank-local variant of each column command.
LOCAL_VARIANT = {"RD": "RD_L", "WR": "WR_L", "RDA": "RDA_L", "WRA": "WRA_L"}

#: Command/address-bus cycles per command (JESD79-5 command truth table: ACT, RD, WR, RDA, WRA
#: are two-cycle commands; the others, PREsb, REFsb, PDE and SRE too, one cycle; PDX and SRX
#: are a CS_n pulse with NOPs, one cycle of the command bus here). Rank-local variants are
#: the same commands.
COMMAND_CYCLES = {"ACT": 2, "PREpb": 1, "PREab": 1, "RD": 2, "WR": 2, "RDA": 2, "WRA": 2,
                  "REFab": 1, "RD_L": 2, "WR_L": 2, "RDA_L": 2, "WRA_L": 2,
                  "PREsb": 1, "REFsb": 1, "PDE": 1, "PDX": 1, "SRE": 1, "SRX": 1}

#: Command properties: the tables the controller is derived from (dram.config's command
#: metadata; dram.kernel's ids, next-command logic and counters), so a command is added here
#: only (docs/dram.md, "Adding a command"). Which commands open a row, close one (every bank
#: of their scope), access a column, read, use the channel's data bus, refresh.
OPENING = ("ACT",)
CLOSING = ("PREpb", "PREab", "RDA", "WRA", "RDA_L", "WRA_L", "PREsb")
ACCESSING = ("RD", "WR", "RDA", "WRA", "RD_L", "WR_L", "RDA_L", "WRA_L")
READING = ("RD", "RDA", "RD_L", "RDA_L")
DATA_BUS = ("RD", "RDA", "WR", "WRA")
#: SRE refreshes every bank of its rank on entry (JESD79-5: self refresh begins with an
#: internal refresh; DRAMPower counts SREFEN as one all-bank refresh, the rank in self refresh
#: from SRE + tRFC): counted with the all-bank refreshes in the energy, not as a refresh the
#: refresh manager requested (``refresh_cmds``).
REFRESHING = ("REFab", "REFsb", "SRE")

#: Scopes a command can act on, in id order (the kernel's ``M_SCOPE`` values): ``bank`` one
#: bank (its request's), ``rank`` every bank of the rank, ``same_bank`` bank BA of every bank
#: group of the rank (JESD79-5's same-bank commands).
SCOPES = ("bank", "rank", "same_bank")
#: Scope of each command that does not act on one bank.
SCOPE = {"PREab": "rank", "REFab": "rank", "PREsb": "same_bank", "REFsb": "same_bank",
         "PDE": "rank", "PDX": "rank", "SRE": "rank", "SRX": "rank"}

#: Auto-precharge variant of each column command (the closed-row policy issues it when no
#: other buffered request wants the row).
AUTO_PRECHARGE = {"RD": "RDA", "WR": "WRA", "RD_L": "RDA_L", "WR_L": "WRA_L"}

#: The command each request's next command follows from (Ramulator 2.1's
#: ``get_preq_command``): a read or write request ends with its final column command
#: (``read`` / ``write``, or their rank-local variants); before it, a closed bank needs
#: ``open``, a bank open on another row needs ``close_bank``, a rank-scope command needs
#: every bank of its rank closed by ``close_rank``, a same-bank command its banks closed by
#: ``close_same_bank``. ``refresh`` is the command the refresh manager requests for every
#: rank each nREFI; ``refresh_same_bank`` the one it requests instead, for one bank index
#: after the other, with same-bank refresh. The power-state policy enters power-down with
#: ``power_down`` and self refresh with ``self_refresh`` (rank scope: every bank closed by
#: ``close_rank`` first), and wakes a rank with ``power_down_exit`` / ``self_refresh_exit``.
FOLLOWS = {"read": "RD", "write": "WR", "open": "ACT", "close_bank": "PREpb",
           "close_rank": "PREab", "refresh": "REFab", "close_same_bank": "PREsb",
           "refresh_same_bank": "REFsb", "power_down": "PDE", "power_down_exit": "PDX",
           "self_refresh": "SRE", "self_refresh_exit": "SRX"}


# --------------------------------------------------------------------------------------------
# Timing presets (primary timings in nCK). Source: Ramulator 2's DDR5 preset tables, which the
# reference runs used (DDR5_4800AN is checked cycle by cycle against them, docs/dram.md); the
# 5600/6400 AN bins are ours (below). Public summaries of the JEDEC JESD79-5 bins differ for some
# of Ramulator's values (e.g. DDR5-3200A 22-22-22 where it has 24; DDR5-4800B/C with CL 40/42
# where it has 36/38): model such a part with --timing overrides. nRRDS/nRRDL/nFAW/nRFC/nREFI
# are derived (derived_timings()).
# --------------------------------------------------------------------------------------------
TIMING_PRESETS = {
    # DDR5-3200 (tCK = 625 ps). Values as in Ramulator 2.1's DDR5 presets (CL-nRCD-nRP of the
    # A/B/C bins, nRAS = 32 ns, nWR = 30 ns, nRTP = 7.5 ns, all rounded up to whole nCK).
    "DDR5_3200AN": dict(rate=3200, tCK_ps=625, nBL=8, nCL=24, nRCD=24, nRP=24, nRAS=52, nRC=76,
                        nWR=48, nRTP=12, nCWL=22, nPPD=2, nCCDS=8, nCCDL=8, nCCDS_WR=8,
                        nCCDL_WR=32, nWTRS=6, nWTRL=16, nCS=2),
    "DDR5_3200BN": dict(rate=3200, tCK_ps=625, nBL=8, nCL=26, nRCD=26, nRP=26, nRAS=52, nRC=78,
                        nWR=48, nRTP=12, nCWL=24, nPPD=2, nCCDS=8, nCCDL=8, nCCDS_WR=8,
                        nCCDL_WR=32, nWTRS=6, nWTRL=16, nCS=2),
    "DDR5_3200C": dict(rate=3200, tCK_ps=625, nBL=8, nCL=28, nRCD=28, nRP=28, nRAS=52, nRC=80,
                       nWR=48, nRTP=12, nCWL=26, nPPD=2, nCCDS=8, nCCDL=8, nCCDS_WR=8,
                       nCCDL_WR=32, nWTRS=6, nWTRL=16, nCS=2),
    # DDR5-4800 (tCK = 416 ps; 2e6/4800 = 416.7 ps, Ramulator rounds to 416). AN is the bin of
    # the reference runs (nCL 34 = 14.2 ns); BN and C as in Ramulator 2.1 (nCL 36, 38).
    "DDR5_4800AN": dict(rate=4800, tCK_ps=416, nBL=8, nCL=34, nRCD=34, nRP=34, nRAS=77, nRC=111,
                        nWR=72, nRTP=18, nCWL=32, nPPD=2, nCCDS=8, nCCDL=12, nCCDS_WR=8,
                        nCCDL_WR=48, nWTRS=6, nWTRL=24, nCS=2),
    "DDR5_4800BN": dict(rate=4800, tCK_ps=416, nBL=8, nCL=36, nRCD=36, nRP=36, nRAS=77, nRC=113,
                        nWR=72, nRTP=18, nCWL=34, nPPD=2, nCCDS=8, nCCDL=12, nCCDS_WR=8,
                        nCCDL_WR=48, nWTRS=6, nWTRL=24, nCS=2),
    "DDR5_4800C": dict(rate=4800, tCK_ps=416, nBL=8, nCL=38, nRCD=38, nRP=38, nRAS=77, nRC=115,
                       nWR=72, nRTP=18, nCWL=36, nPPD=2, nCCDS=8, nCCDL=12, nCCDS_WR=8,
                       nCCDL_WR=48, nWTRS=6, nWTRL=24, nCS=2),
    # DDR5-5600 (tCK = 357 ps) and DDR5-6400 (tCK = 312 ps), AN bins: nCL = nRCD = nRP of about
    # 14.3 ns like DDR5-4800AN's 14.2 ns; the other timings by the same nanosecond values as the
    # 4800 bins, in whole nCK: nRAS 32 ns, nWR 30 ns, nRTP 7.5 ns, nCCDL 5 ns (nCCDL_WR 4x that),
    # nWTRS 2.5 ns, nWTRL 10 ns (so nRTP 21, nCCDL 14 and nWTRS 7 at 5600, nWTRS 8 at 6400).
    "DDR5_5600AN": dict(rate=5600, tCK_ps=357, nBL=8, nCL=40, nRCD=40, nRP=40, nRAS=90, nRC=130,
                        nWR=84, nRTP=21, nCWL=38, nPPD=2, nCCDS=8, nCCDL=14, nCCDS_WR=8,
                        nCCDL_WR=56, nWTRS=7, nWTRL=28, nCS=2),
    "DDR5_6400AN": dict(rate=6400, tCK_ps=312, nBL=8, nCL=46, nRCD=46, nRP=46, nRAS=103,
                        nRC=149, nWR=96, nRTP=24, nCWL=44, nPPD=2, nCCDS=8, nCCDL=16,
                        nCCDS_WR=8, nCCDL_WR=64, nWTRS=8, nWTRL=32, nCS=2),
}

#: Timing parameters a user may override (``DRAMConfig.timing_overrides``).
TIMING_PARAMS = ("nBL", "nCL", "nRCD", "nRP", "nRAS", "nRC", "nWR", "nRTP", "nCWL", "nPPD",
                 "nCCDS", "nCCDL", "nCCDS_WR", "nCCDL_WR", "nWTRS", "nWTRL", "nCS",
                 "nRRDS", "nRRDL", "nFAW", "nRFC", "nREFI", "nRFCsb", "nREFSBRD", "nREFI2",
                 "nXP", "nPD", "nCPDED", "nXS")

# --------------------------------------------------------------------------------------------
# Organization presets, per device (chip). JESD79-5: 8 Gb = 8 BG x 2 banks (x4/x8), 4 BG x 2
# (x16); 16 Gb = 8 BG x 4 (x4/x8), 4 BG x 4 (x16); 32 Gb = same banks, 128 K rows.
# Columns per row per chip: 2048 (x4: 2048 x 4 bit = 1 KB page), 1024 (x8: 1 KB page;
# x16: 2 KB page); a 64-B line = BL16 = 16 columns. A channel is a 32-bit DDR5 sub-channel: 32/dq chips per rank.
# --------------------------------------------------------------------------------------------
ORG_PRESETS = {
    "8Gb_x4": dict(density_Mb=8192, dq=4, bankgroups=8, banks=2, rows=1 << 16, columns=1 << 11),
    "8Gb_x8": dict(density_Mb=8192, dq=8, bankgroups=8, banks=2, rows=1 << 16, columns=1 << 10),
    "8Gb_x16": dict(density_Mb=8192, dq=16, bankgroups=4, banks=2, rows=1 << 16, columns=1 << 10),
    "16Gb_x4": dict(density_Mb=16384, dq=4, bankgroups=8, banks=4, rows=1 << 16, columns=1 << 11),
    "16Gb_x8": dict(density_Mb=16384, dq=8, bankgroups=8, banks=4, rows=1 << 16, columns=1 << 10),
    "16Gb_x16": dict(density_Mb=16384, dq=16, bankgroups=4, banks=4, rows=1 << 16,
                     columns=1 << 10),
    "32Gb_x4": dict(density_Mb=32768, dq=4, bankgroups=8, banks=4, rows=1 << 17, columns=1 << 11),
    "32Gb_x8": dict(density_Mb=32768, dq=8, bankgroups=8, banks=4, rows=1 << 17, columns=1 << 10),
    "32Gb_x16": dict(density_Mb=32768, dq=16, bankgroups=4, banks=4, rows=1 << 17,
                     columns=1 << 10),
}

#: DDR5 sub-channel width (bits) and burst length: one RD/WR moves 32 bit x BL16 = 64 B.
CHANNEL_WIDTH_BITS = 32
BURST_LENGTH = 16
LINE_BYTES = CHANNEL_WIDTH_BITS * BURST_LENGTH // 8   # 64


def derived_timings(timing: dict, org: dict) -> dict:
    """Timings JEDEC gives in ns or per device width, in clock cycles (rounded up).

    * nRRDS: tRRD_S = 8 nCK (JESD79-5, all widths and bins up to 6400).
    * nRRDL: tRRD_L = max(8 nCK, 5 ns): 8 at 3200, 12 at 4800 (Ramulator 2.1 lists 5 at 3200,
      below the 8 nCK floor; we keep the floor).
    * nFAW: tFAW = max(32 nCK, 20 ns) for 1 KB pages (x4, x8), max(32 nCK, 25 ns) for 2 KB
      pages (x16), with tCK taken from the data rate (2e6 / rate ps).
    * nRFC: tRFC1 = 195 / 295 / 410 ns for 8 / 16 / 32 Gb (all-bank refresh).
    * nREFI: tREFI = 3.9 us (normal refresh rate, DDR5 halves DDR4's 7.8 us).
    * nRFCsb: tRFCsb = 115 / 130 / 190 ns for 8 / 16 / 32 Gb (same-bank refresh, REFsb; JESD79-5
      refresh parameters table; DDR5-4800, 16 Gb: 313 nCK).
    * nREFSBRD: tREFSBRD = 30 ns for every density (JESD79-5, same-bank refresh: REFsb to an
      ACT of another bank; DDR5-4800: 73 nCK).
    * nREFI2: tREFI2 = 1.95 us, the fine-granularity refresh interval (JESD79-5: same-bank
      refresh is a fine-granularity-refresh mode command; every bank index gets one REFsb per
      tREFI2; DDR5-4800: 4688 nCK).

    Power-down and self refresh (the power-state policy's commands). Neither Ramulator 2 (2.0's
    ``src/dram/impl/DDR5.cpp``, 2.1's ``ddr5.py``) nor DRAMPower's DDR5 memspec has these
    timings, and the JESD79-5 power-down and self-refresh AC tables could not be opened where
    this was written, so these four are ESTIMATES in JEDEC's form, to be checked against the
    standard's tables (override with ``timing_overrides``):

    * nXP: tXP, power-down exit to any command, max(8 nCK, 7.5 ns) (JESD79-4 DDR4 has
      max(4 nCK, 6 ns); DDR5 doubles the nCK floor as it does for tRRD): 18 nCK at 4800.
    * nPD: tPD, the shortest power-down (PDE to PDX), max(8 nCK, 7.5 ns), as tXP: 18 nCK.
    * nCPDED: tCPDED, command pass disable delay after PDE, max(8 nCK, 5 ns): 12 nCK at 4800
      (below nPD, so it never binds in this controller; kept for overrides).
    * nXS: tXS, self-refresh exit to any command, tRFC1 + 10 ns (DDR4's JESD79-4 form): 734
      nCK at 4800, 16 Gb. Reads that need the DLL relocked (tXS_DLL = tDLLK) are not modeled
      apart: after SRX every bank is closed, so a read waits tXS + tRCD at least.
    """
    rate = timing["rate"]
    tck_rate_ps = 2_000_000 / rate          # exact period from the data rate
    tck_ps = timing["tCK_ps"]
    dq = org["dq"]
    out = {}
    out["nRRDS"] = 8
    out["nRRDL"] = max(8, math.ceil(5000 / tck_rate_ps))
    faw_ns = 20 if dq <= 8 else 25
    out["nFAW"] = max(32, math.ceil(faw_ns * 1000 / tck_rate_ps))
    trfc_ns = {8192: 195, 16384: 295, 32768: 410}[org["density_Mb"]]
    out["nRFC"] = math.ceil(trfc_ns * 1000 / tck_ps)
    out["nREFI"] = math.ceil(3_900_000 / tck_ps)
    trfcsb_ns = {8192: 115, 16384: 130, 32768: 190}[org["density_Mb"]]
    out["nRFCsb"] = math.ceil(trfcsb_ns * 1000 / tck_ps)
    out["nREFSBRD"] = math.ceil(30_000 / tck_ps)
    out["nREFI2"] = math.ceil(1_950_000 / tck_ps)
    out["nXP"] = max(8, math.ceil(7500 / tck_rate_ps))
    out["nPD"] = max(8, math.ceil(7500 / tck_rate_ps))
    out["nCPDED"] = max(8, math.ceil(5000 / tck_rate_ps))
    out["nXS"] = math.ceil((trfc_ns + 10) * 1000 / tck_ps)
    return out


# --------------------------------------------------------------------------------------------
# The timing-constraint table. Each record: level, preceding commands, following commands,
# latency (expression over the timing parameters), window (at most `window` preceding commands
# in `latency` cycles; 1 = plain spacing), sibling (applies between a rank and the OTHER ranks of
# the channel), data_bus (a constraint of the shared channel data bus: does not apply to
# rank-local column commands). Latencies are JEDEC values between the *ends* of the commands;
# constraint_table() converts them to first-cycle-to-first-cycle spacing.
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TimingRecord:
    level: str
    preceding: tuple
    following: tuple
    latency: str
    window: int = 1
    sibling: bool = False
    data_bus: bool = False


_RD = ("RD", "RDA")
_WR = ("WR", "WRA")
_CAS = ("RD", "RDA", "WR", "WRA")
#: the commands a rank takes when it is neither powered down nor in self refresh
_AWAKE = ("ACT", "PREpb", "PREab", "RD", "WR", "RDA", "WRA", "REFab", "PREsb", "REFsb", "PDE",
          "SRE")

TIMING_RECORDS = (
    # Channel: data bus occupancy (one burst per nBL)
    TimingRecord("Channel", _RD, _RD, "nBL", data_bus=True),
    TimingRecord("Channel", _WR, _WR, "nBL", data_bus=True),
    # Rank: CAS to CAS, different bank group
    TimingRecord("Rank", _RD, _RD, "nCCDS"),
    TimingRecord("Rank", _WR, _WR, "nCCDS_WR"),
    # Rank: read-to-write and write-to-read turnarounds (read postamble / write preamble 2 nCK)
    TimingRecord("Rank", _RD, _WR, "nCL + nBL + 2 - nCWL + 2"),
    TimingRecord("Rank", _WR, _RD, "nCWL + nBL + nWTRS"),
    # Rank switching on the shared data bus (applies to the other ranks)
    TimingRecord("Rank", _RD, _CAS, "nBL + nCS", sibling=True, data_bus=True),
    TimingRecord("Rank", _WR, _RD, "nCWL + nBL + nCS - nCL", sibling=True, data_bus=True),
    # Rank: CAS to precharge-all
    TimingRecord("Rank", ("RD",), ("PREab",), "nRTP"),
    TimingRecord("Rank", ("WR",), ("PREab",), "nCWL + nBL + nWR"),
    # Rank: activation rate
    TimingRecord("Rank", ("ACT",), ("ACT",), "nRRDS"),
    TimingRecord("Rank", ("ACT",), ("ACT",), "nFAW", window=4),
    TimingRecord("Rank", ("ACT",), ("PREab",), "nRAS"),
    TimingRecord("Rank", ("PREab",), ("ACT",), "nRP"),
    TimingRecord("Rank", ("PREpb", "PREab"), ("PREpb", "PREab"), "nPPD"),
    # Rank: refresh
    TimingRecord("Rank", ("ACT",), ("REFab",), "nRC"),
    TimingRecord("Rank", ("PREpb", "PREab"), ("REFab",), "nRP"),
    TimingRecord("Rank", ("RDA",), ("REFab",), "nRP + nRTP"),
    TimingRecord("Rank", ("WRA",), ("REFab",), "nCWL + nBL + nWR + nRP"),
    TimingRecord("Rank", ("REFab",), ("ACT", "PREab"), "nRFC"),
    # Bank group: same-group CAS and activation
    TimingRecord("BankGroup", _RD, _RD, "nCCDL"),
    TimingRecord("BankGroup", _WR, _WR, "nCCDL_WR"),
    TimingRecord("BankGroup", _WR, _RD, "nCWL + nBL + nWTRL"),
    TimingRecord("BankGroup", ("ACT",), ("ACT",), "nRRDL"),
    # Bank
    TimingRecord("Bank", ("ACT",), ("ACT",), "nRC"),
    TimingRecord("Bank", ("ACT",), _CAS, "nRCD"),
    TimingRecord("Bank", ("ACT",), ("PREpb",), "nRAS"),
    TimingRecord("Bank", ("PREpb",), ("ACT",), "nRP"),
    TimingRecord("Bank", ("RD",), ("PREpb",), "nRTP"),
    TimingRecord("Bank", ("WR",), ("PREpb",), "nCWL + nBL + nWR"),
    TimingRecord("Bank", ("RDA",), ("ACT",), "nRTP + nRP"),
    TimingRecord("Bank", ("WRA",), ("ACT",), "nCWL + nBL + nWR + nRP"),
    # Same-bank commands (JESD79-5 same-bank precharge PREsb and same-bank refresh REFsb; the
    # constraint set as in Ramulator 2.0's DDR5, src/dram/impl/DDR5.cpp, plus tREFSBRD). A
    # same-bank command targets bank BA of every bank group of its rank, so its Bank records
    # act on each of those banks.
    # PREsb: a precharge of each target bank (tRAS, tRTP, tWR before; tRP after) and a
    # precharge for tPPD (JESD79-5: PRE to PRE delay, any precharge command).
    TimingRecord("Bank", ("ACT",), ("PREsb",), "nRAS"),
    TimingRecord("Bank", ("RD",), ("PREsb",), "nRTP"),
    TimingRecord("Bank", ("WR",), ("PREsb",), "nCWL + nBL + nWR"),
    TimingRecord("Bank", ("PREsb",), ("ACT",), "nRP"),
    TimingRecord("Rank", ("PREpb", "PREab", "PREsb"), ("PREsb",), "nPPD"),
    TimingRecord("Rank", ("PREsb",), ("PREpb", "PREab"), "nPPD"),
    TimingRecord("Rank", ("PREsb",), ("REFab",), "nRP"),
    # REFsb: its banks closed (tRC after ACT, tRP after a precharge, the auto-precharge
    # recovery after RDA/WRA), busy tRFCsb (to ACT and REFsb of those banks, and to PREab
    # and REFab of the rank); an ACT of another bank waits tREFSBRD, and so does the next
    # REFsb (JESD79-5: tREFSBRD, REFsb to ACT or REFsb of a different bank).
    TimingRecord("Bank", ("ACT",), ("REFsb",), "nRC"),
    TimingRecord("Bank", ("PREpb", "PREsb"), ("REFsb",), "nRP"),
    TimingRecord("Bank", ("RDA",), ("REFsb",), "nRTP + nRP"),
    TimingRecord("Bank", ("WRA",), ("REFsb",), "nCWL + nBL + nWR + nRP"),
    TimingRecord("Bank", ("REFsb",), ("ACT", "REFsb"), "nRFCsb"),
    TimingRecord("Rank", ("PREab",), ("REFsb",), "nRP"),
    TimingRecord("Rank", ("REFab",), ("REFsb",), "nRFC"),
    TimingRecord("Rank", ("REFsb",), ("PREab", "REFab"), "nRFCsb"),
    TimingRecord("Rank", ("REFsb",), ("ACT", "REFsb"), "nREFSBRD"),
    # Power-down (PDE .. PDX) and self refresh (SRE .. SRX), rank records. The policy enters
    # either only with every bank of the rank closed, and this controller waits until the
    # closing and refreshing operations have ended: after a precharge tRP, an auto-precharge
    # its recovery, a refresh tRFC / tRFCsb, an ACT tRC (JESD79-5 lets PDE register earlier,
    # tPRPDEN / tREFPDEN of a few nCK, with the power-down current reached only when the
    # operation ends: waiting makes the cycles in power-down the cycles at IDD2P, which is
    # how DRAMPower counts them: its power-down starts at the latest tRP / tRFC end). Data of
    # a read or write must be done too (tRDPDEN = RL + BL/2 + 1, tWRPDEN = WL + BL/2 + tWR + 1
    # in nCK; implied here by the precharge that follows every access).
    TimingRecord("Rank", ("ACT",), ("PDE", "SRE"), "nRC"),
    TimingRecord("Rank", ("PREpb", "PREab", "PREsb"), ("PDE", "SRE"), "nRP"),
    TimingRecord("Rank", ("RDA",), ("PDE", "SRE"), "nRTP + nRP"),
    TimingRecord("Rank", ("WRA",), ("PDE", "SRE"), "nCWL + nBL + nWR + nRP"),
    TimingRecord("Rank", _RD, ("PDE", "SRE"), "nCL + nBL + 1"),
    TimingRecord("Rank", _WR, ("PDE", "SRE"), "nCWL + nBL + nWR + 1"),
    TimingRecord("Rank", ("REFab",), ("PDE", "SRE"), "nRFC"),
    TimingRecord("Rank", ("REFsb",), ("PDE", "SRE"), "nRFCsb"),
    # a power-down lasts tPD at least (and tCPDED, shorter); after its exit every command of
    # the rank waits tXP
    TimingRecord("Rank", ("PDE",), ("PDX",), "nPD"),
    TimingRecord("Rank", ("PDE",), ("PDX",), "nCPDED"),
    TimingRecord("Rank", ("PDX",), _AWAKE, "nXP"),
    # self refresh: SRE begins with a refresh of every bank, so the rank stays in it tRFC at
    # least (DRAMPower counts the self-refresh state from SRE + tRFC); after SRX every command
    # waits tXS
    TimingRecord("Rank", ("SRE",), ("SRX",), "nRFC"),
    TimingRecord("Rank", ("SRX",), _AWAKE, "nXS"),
)


def _eval_latency(expr: str, timing: dict) -> int:
    """Evaluate a latency expression: integers and parameter names joined by + and -."""
    total = 0
    sign = 1
    for tok in expr.replace("+", " + ").replace("-", " - ").split():
        if tok == "+":
            sign = 1
        elif tok == "-":
            sign = -1
        else:
            if tok.isdigit():
                val = int(tok)
            elif tok in timing:
                val = int(timing[tok])
            else:
                raise ValueError(f"timing expression {expr!r}: unknown parameter {tok!r}")
            total += sign * val
    return total


def _with_local(cmds, include_local: bool):
    out = list(cmds)
    if include_local:
        out += [LOCAL_VARIANT[c] for c in cmds if c in LOCAL_VARIANT]
    return out


def constraint_table(timing: dict):
    """Evaluate :data:`TIMING_RECORDS` for one set of timings.

    Returns a list of ``(level, preceding, following, latency, window, sibling)`` tuples, one per
    (level, preceding command, following command, window, sibling) combination, with the
    latency converted from JEDEC end-to-end spacing to first-cycle spacing:
    ``latency + (cycles(preceding) - 1) - (cycles(following) - 1)``: a two-cycle preceding
    command starts the DRAM operation one cycle later, a two-cycle following command may start
    one cycle earlier (the rule Ramulator 2.1 applies). Also adds the command-bus occupancy:
    a command of k > 1 cycles blocks every command on the channel for k cycles.

    Rank-local column commands (``RD_L`` ...) are added to every record except the
    ``data_bus`` ones.
    """
    out = []
    # Command bus occupancy (channel level), first.
    for c in COMMANDS:
        k = COMMAND_CYCLES[c]
        if k > 1:
            for f in COMMANDS:
                out.append(("Channel", c, f, k, 1, False))
    for rec in TIMING_RECORDS:
        nominal = _eval_latency(rec.latency, timing)
        local = not rec.data_bus
        for p in _with_local(rec.preceding, local):
            for f in _with_local(rec.following, local):
                lat = nominal + (COMMAND_CYCLES[p] - 1) - (COMMAND_CYCLES[f] - 1)
                out.append((rec.level, p, f, lat, rec.window, rec.sibling))
    return out


def read_latency(timing: dict) -> int:
    """Cycles from RD issue to the data returned to the controller: nCL + nBL (Ramulator 2.1)."""
    return int(timing["nCL"]) + int(timing["nBL"])
