"""DDR5 power data: supply voltages and IDD/IPP currents per device, beside the timing presets.

Used by :mod:`dram.energy`. Currents are per device (chip) in mA, voltages in V; the energy
model multiplies by the devices of a rank (``32 / dq`` data chips on a 32-bit sub-channel).

Sources and status
------------------
* VDD = 1.1 V and VPP = 1.8 V: JEDEC JESD79-5 (DDR5 SDRAM), supply voltages.
* The IDD/IPP figures below are ESTIMATES of the right order for a 16 Gb DDR5 die at
  DDR5-4800, not values transcribed from a datasheet: the text of a public DDR5 datasheet's IDD
  table (e.g. Micron's 16Gb DDR5 SDRAM, MT60B4G4/MT60B2G8/MT60B1G16, "IDD, IPP and IDDQ
  Current Limits") could not be read while this module was written, and DRAMPower's public
  DDR5 memspec in its tests carries test values, not a datasheet's. They are chosen so that
  the relations the JEDEC IDD definitions imply hold (IDD2N < IDD3N < IDD0 < IDD4W < IDD4R,
  IDD5B the largest, IDD6N below IDD2N; wider devices draw more burst current) and so that the
  resulting read energy per bit lies in the published DDR4/DDR5 range (tests/test_dram_energy.py,
  "sanity"). Replace them with the datasheet's table (same keys) before quoting absolute
  joules; every figure the simulator reports scales linearly with these currents.
* ``io_pJ_per_bit``: energy to move one bit over the DDR5 channel's data bus (driver,
  termination, receiver), an ESTIMATE of 5 pJ/bit: single-ended terminated DDR interfaces are
  reported at roughly 4-7 pJ/bit at 3-5 Gb/s per pin (e.g. the DDR4/GDDR5 I/O figures in
  O'Connor et al., "Fine-Grained DRAM", MICRO 2017); DDR5's lower VDDQ (1.1 V) and on-die
  termination put it at the lower-middle of that range.

Keys: ``VDD_V``, ``VPP_V``; currents ``IDD0`` (one bank ACT-PRE cycling at tRC), ``IDD2N``
(precharge standby), ``IDD3N`` (active standby), ``IDD4R`` / ``IDD4W`` (burst read / write,
all banks open), ``IDD5B`` (all-bank refresh at tRFC), ``IDD6N`` (self refresh; listed, not
used: the controller never enters self refresh), and the VPP currents ``IPP0``, ``IPP2N``,
``IPP3N``, ``IPP5B``; ``io_pJ_per_bit``.
"""

from __future__ import annotations

_COMMON = dict(VDD_V=1.1, VPP_V=1.8, IDD0=75.0, IDD2N=50.0, IDD3N=60.0, IDD5B=280.0,
               IDD6N=45.0, IPP0=4.0, IPP2N=3.0, IPP3N=3.0, IPP5B=25.0, io_pJ_per_bit=5.0)

#: Power presets keyed by (timing preset, organization). x4 and x8 draw the same core
#: currents; burst currents grow with the device width (more bits per burst per chip).
POWER_PRESETS = {}
for _bin in ("DDR5_4800AN", "DDR5_4800BN", "DDR5_4800C"):
    POWER_PRESETS[(_bin, "16Gb_x4")] = dict(_COMMON, IDD4R=200.0, IDD4W=190.0)
    POWER_PRESETS[(_bin, "16Gb_x8")] = dict(_COMMON, IDD4R=240.0, IDD4W=225.0)
    POWER_PRESETS[(_bin, "16Gb_x16")] = dict(_COMMON, IDD4R=340.0, IDD4W=320.0)

#: Keys every preset has.
POWER_KEYS = ("VDD_V", "VPP_V", "IDD0", "IDD2N", "IDD3N", "IDD4R", "IDD4W", "IDD5B", "IDD6N",
              "IPP0", "IPP2N", "IPP3N", "IPP5B", "io_pJ_per_bit")


def power_preset(standard: str, org: str) -> dict | None:
    """The power figures of (timing preset, organization), or None if there are none (the
    energy model then reports no energy rather than figures from another device)."""
    p = POWER_PRESETS.get((standard, org))
    return dict(p) if p is not None else None
