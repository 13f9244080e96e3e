"""DDR5 power data: supply voltages and IDD/IPP currents per device, beside the timing presets.

Used by :mod:`dram.energy`. Currents are per device (chip) in mA, voltages in V; the energy
model multiplies by the devices of a rank (``32 / dq`` data chips on a 32-bit sub-channel).

Sources and status
------------------
The document: Micron, "16Gb DDR5 SDRAM Addendum, MT60B4G4, MT60B2G8, MT60B1G16, Die Revision
A" (16gb_ddr5_sdram_diereva.pdf), table "IDD, IPP and IDDQ Current Limits", DDR5-4800
column (the -48B speed bin; the IDD loops run at that bin's tCK and tRC). These are the
datasheet's maximum limits (worst-case process, voltage and temperature), not typical
currents: measured DRAM draws well below them (Ghose et al., SIGMETRICS 2018, found DDR3L
modules at 23-95 % of the datasheet IDDs depending on the current and vendor), so energies
from this table are upper-end figures.

The datasheet itself could not be opened where this module was written; its values were read
from public simulator configurations that transcribe it, and cross-checked between them:

* gem5, ``src/python/gem5/components/memory/dram_interfaces/ddr5.py`` (gem5/gem5, class
  ``DDR5_4400_4x8``, "Power related parameters ... 16gb_ddr5_sdram_diereva.pdf, Using the values
  for DDR5-4800"): IDD0 122, IDD2N 92, IDD3N 142, IDD4R 530, IDD4W 479, IDD5B 277 (its comment
  also lists IDD5C 135 and IDD5F 262), IDD6N 102, IDD2P 88, IDD3P 140 mA, VDD 1.1 V. It does not
  say which width column it used.
* Two further public configurations that name the x8 part (MT60B2G8, DDR5-4800B), one of them
  citing the addendum's Table 6 pp. 17-19, give the same IDD2N 92, IDD3N 142, IDD5B 277, IDD6N
  102, IDD2P 88 and IDD3P 140, with IDD0 103, IDD4R 377, IDD4W 349 and IPP0 8, IPP2N 6, IPP3N 7
  mA at VPP 1.8 V. (They were found through a code index that does not give their repositories.)
* ``illustration_script/chip_pow_config.py`` of Stardust-lf/ramulator2-latency-supported
  (``config_4800``, cells of Micron's DDR5 power calculator; no width named): the same IDD0 103,
  IDD2N 92, IDD3N 142, IDD5B 277, IDD2P 88, IDD3P 140, IPP0 8, IPP3N 7, with IDD4R 318, IDD4W
  345, IPP4R 9, IPP4W 36, IPP5B 28 mA.

Per width, therefore:

* x8: the x8 column as the two x8 configurations give it (sourced, via those configurations).
* x16: gem5's IDD0 / IDD4R / IDD4W. INFERRED width: its standby and refresh currents are the
  x8 ones and its activation and burst currents exceed them in the way a 2 KB page (x16) and a
  16-bit-wide burst imply; no configuration states that these are the x16 column.
* x4: the calculator configuration's IDD4R / IDD4W (INFERRED width, same reasoning: equal to
  x8 except a smaller burst-read current, as a 4-bit-wide burst implies); IDD0 is the x8 one
  (x4 and x8 share the 1 KB page).
* Shared by every width: IDD2N, IDD3N, IDD5B, IDD6N, IPP0, IPP2N, IPP3N (the x8 column), IPP5B
  28 mA, IPP4R 9 mA and IPP4W 36 mA (the VPP currents of burst read and write; the calculator
  configuration only).
* ``IDD5C`` 135 mA (same-bank refresh at tRFCsb: gem5's comment above, from the same
  datasheet) and ``IPP5C`` 28 mA, an ESTIMATE: IPP5B's value (no configuration gives the VPP
  current of same-bank refresh). Only REFsb uses them (``DRAMConfig.same_bank_refresh``).
* ``rho`` (DRAMPower's ``bankwisespec.factRho``, the share of the active-standby excess
  IDD3N - IDD2N that a rank draws as soon as one bank is open) = 0, OUR DEFAULT, not a
  datasheet figure: with these currents IDD0 (103 mA, one bank cycling) lies only 11 mA above
  IDD2N and below IDD3N (142 mA, all banks open), so the one-bank standby
  I_1 = (IDD3N + (B - 1) I_rho) / B, I_rho = IDD2N + rho (IDD3N - IDD2N), must stay below
  IDD0 for the activation energy to be positive: that needs rho < 0.25 at B = 32 (VDD and
  VPP together; x4 and x8), and
  rho = 0 (each open bank adds 1/B of the excess, the linear reading of IDD3N's all-banks
  definition) is the value the IDD definitions imply without a measured split. DRAMPower's
  own default when a memspec omits it is 1, which would make activation negative here.
* ``IBETA_VDD`` / ``IBETA_VPP`` (DRAMPower's ``iBeta_vdd`` / ``iBeta_vpp``, the current during
  the precharge's tRP in the IDD0 loop): absent, so IDD0 / IPP0, DRAMPower's default
  (MemSpecDDR5.cpp, tukl-msd/DRAMPower).
* VDD = 1.1 V and VPP = 1.8 V: JEDEC JESD79-5 and the datasheet's nominal supplies.
* ``io_pJ_per_bit``: energy to move one bit over the DDR5 channel's data bus (driver,
  termination, receiver), an ESTIMATE of 5 pJ/bit: single-ended terminated DDR interfaces are
  reported at roughly 4-7 pJ/bit at 3-5 Gb/s per pin (e.g. the DDR4/GDDR5 I/O figures in
  O'Connor et al., "Fine-Grained DRAM", MICRO 2017); DDR5's lower VDDQ (1.1 V) and on-die
  termination put it at the lower-middle of that range. The datasheet's IDDQ rows are not used:
  the Micron DDR5 core data sheet says IDDQ values cannot be used directly to calculate I/O
  power.

Keys: ``VDD_V``, ``VPP_V``; currents ``IDD0`` (one bank ACT-PRE cycling at tRC), ``IDD2N``
(precharge standby, all banks closed), ``IDD3N`` (active standby, all banks open), ``IDD4R`` /
``IDD4W`` (burst read / write, all banks open), ``IDD5B`` (all-bank refresh at tRFC),
``IDD6N`` (self refresh), ``IDD2P`` (precharge power-down), ``IDD3P`` (active power-down;
the controller's policy uses precharge power-down only, :func:`dram.energy.command_energy`
both), and the VPP currents ``IPP0``, ``IPP2N``, ``IPP3N``, ``IPP5B``, ``IPP2P``, ``IPP3P``,
``IPP6N``; ``io_pJ_per_bit``. IDD2P 88, IDD3P 140 and IDD6N 102 mA are the datasheet rows
the sources above give (gem5's configuration and the two x8 ones agree); ``IPP2P`` 6,
``IPP3P`` 7 and ``IPP6N`` 6 mA are ESTIMATES: no source gives the VPP currents of power-down
and self refresh, so they are IPP2N, IPP3N and IPP2N (the VPP pump's standby draw, which
power-down does not switch off). Note that these are maximum limits: IDD6N (102 mA) is above
IDD2N (92 mA) here, so with these figures self refresh saves the refresh commands (and the
controller's attention), not background current; measured parts draw far less in self
refresh. Each preset's
``source`` says which of the above its burst and activation currents come from.
"""

from __future__ import annotations

_COMMON = dict(VDD_V=1.1, VPP_V=1.8, IDD2N=92.0, IDD3N=142.0, IDD5B=277.0, IDD6N=102.0,
               IDD2P=88.0, IDD3P=140.0, IPP2P=6.0, IPP3P=7.0, IPP6N=6.0,
               IPP0=8.0, IPP2N=6.0, IPP3N=7.0, IPP4R=9.0, IPP4W=36.0, IPP5B=28.0,
               IDD5C=135.0, IPP5C=28.0, rho=0.0, io_pJ_per_bit=5.0)

_X4 = dict(_COMMON, IDD0=103.0, IDD4R=318.0, IDD4W=345.0,
           source="Micron 16Gb DDR5 Die Rev A, DDR5-4800; IDD4R/IDD4W: x4 column inferred")
_X8 = dict(_COMMON, IDD0=103.0, IDD4R=377.0, IDD4W=349.0,
           source="Micron 16Gb DDR5 Die Rev A, DDR5-4800, x8 column")
_X16 = dict(_COMMON, IDD0=122.0, IDD4R=530.0, IDD4W=479.0,
            source="Micron 16Gb DDR5 Die Rev A, DDR5-4800; IDD0/IDD4R/IDD4W: x16 column "
                   "inferred (gem5 DDR5 config)")

#: Power presets keyed by (timing preset, organization): the DDR5-4800 currents for every
#: 4800 timing bin.
POWER_PRESETS = {}
for _bin in ("DDR5_4800AN", "DDR5_4800BN", "DDR5_4800C"):
    POWER_PRESETS[(_bin, "16Gb_x4")] = _X4
    POWER_PRESETS[(_bin, "16Gb_x8")] = _X8
    POWER_PRESETS[(_bin, "16Gb_x16")] = _X16

#: Numeric keys every preset has.
POWER_KEYS = ("VDD_V", "VPP_V", "IDD0", "IDD2N", "IDD3N", "IDD4R", "IDD4W", "IDD5B", "IDD6N",
              "IDD2P", "IDD3P", "IPP0", "IPP2N", "IPP3N", "IPP4R", "IPP4W", "IPP5B", "IPP2P",
              "IPP3P", "IPP6N", "rho", "io_pJ_per_bit")


def power_preset(standard: str, org: str) -> dict | None:
    """The power figures of (timing preset, organization), or None if there are none (the
    energy model then reports no energy rather than figures from another device)."""
    p = POWER_PRESETS.get((standard, org))
    return dict(p) if p is not None else None
