"""DDR5 energy from the commands the controller issued and the time each bank was open.

The method is DRAMPower's core model (Chandrasekar et al., "Improved Power Modeling of DDR
SDRAMs", DSD 2011; the DDR4/DDR5 core calculation of tukl-msd/DRAMPower), written here from
its equations. Its active background is split into a part shared by the rank and a part per
open bank (factor rho); this model is its rho = 0 case: a rank with no open bank draws the
precharge standby current IDD2N, and each open bank adds 1/B of the active-standby excess
(IDD3N - IDD2N), B the banks of a device -- IDD3N is specified with all banks open. So the
one-bank active standby the IDD0 loop runs on is I1 = IDD2N + (IDD3N - IDD2N) / B. Per device,
with currents I in mA, voltages in V and times in ns (mA x V x ns = pJ):

* activation, per ACT:   E_ACT = (VDD (IDD0 - I1) + VPP (IPP0 - IPP1)) tRAS
* precharge, per bank closed (PREpb, the auto-precharge of RDA/WRA, each open bank of a
  PREab):                E_PRE = (VDD (IDD0 - IDD2N) + VPP (IPP0 - IPP2N)) tRP
* read / write burst:    E_RD = VDD (IDD4R - IDD3N) nBL tCK,  E_WR = VDD (IDD4W - IDD3N) nBL tCK
  (the IDD4R/W loops run with all banks open, so IDD3N is their baseline)
* all-bank refresh:      E_REF = (VDD (IDD5B - IDD2N) + VPP (IPP5B - IPP2N)) tRFC (REFab finds
  every bank precharged, so the precharged background runs beneath it)
* background:            precharged, per rank for all of the time: VDD IDD2N + VPP IPP2N;
  active excess, per bank while it is open: (VDD (IDD3N - IDD2N) + VPP (IPP3N - IPP2N)) / B.

IPP1 is I1's VPP counterpart. Over one IDD0 loop (one bank, ACT, tRAS open, PRE, tRP closed)
these terms add up to exactly IDD0 x tRC, and with all banks open to IDD3N: the split between
the increments and the background is the one the IDD definitions imply. The device figures
are multiplied by the devices of a rank: ``32 / dq`` data chips on a 32-bit DDR5 sub-channel
(x4: 8 chips). ECC chips are not modeled (an EC4/EC8 DIMM adds 1-2 chips per sub-channel;
scale by (8+n)/8 to include them). Power-down and self refresh are not modeled (the controller
never enters them).

Channel I/O: every burst that crosses the channel's data bus (RD, WR, RDA, WRA) costs 64 B x 8
bits x ``io_pJ_per_bit``. A rank-local burst (RD_L, WR_L, RDA_L, WRA_L: a rank PU reading or
writing its own rank) costs the array read or write and no channel I/O; the PU's own datapath
is not DRAM energy and is charged by the system model (cosmos.energy).

Residency comes from the kernel's per-rank counters (``dram.kernel.RA_*``): banks open at ACT
and close when the precharging command issues; the kernel sums the open banks over time at
each open/close event. The tRP of a precharge counts as precharged background, as in
DRAMPower. Parameters: :mod:`dram.standards.ddr5_power`.
"""

from __future__ import annotations

import numpy as np

from dram import kernel as K
from dram.standards import ddr5, ddr5_power

LINE_BITS = 64 * 8

#: Energy components, in the order they are reported.
COMPONENTS = ("act", "pre", "read", "write", "refresh", "background_active",
              "background_precharged", "io")


def device_energies_pJ(power: dict, timing: dict, banks: int) -> dict:
    """Per-device energy of one event (pJ) and background power (mW) of one device with
    ``banks`` banks: ``act``, ``pre``, ``read``, ``write``, ``refresh`` (pJ), ``P_pre_mW`` (a
    device with every bank closed) and ``P_bank_mW`` (what each open bank adds)."""
    tck = timing["tCK_ps"] / 1000.0
    vdd, vpp = power["VDD_V"], power["VPP_V"]
    i1 = power["IDD2N"] + (power["IDD3N"] - power["IDD2N"]) / banks
    ipp1 = power["IPP2N"] + (power["IPP3N"] - power["IPP2N"]) / banks
    return {
        "act": (vdd * (power["IDD0"] - i1) + vpp * (power["IPP0"] - ipp1)) * timing["nRAS"] * tck,
        "pre": (vdd * (power["IDD0"] - power["IDD2N"])
                + vpp * (power["IPP0"] - power["IPP2N"])) * timing["nRP"] * tck,
        "read": vdd * (power["IDD4R"] - power["IDD3N"]) * timing["nBL"] * tck,
        "write": vdd * (power["IDD4W"] - power["IDD3N"]) * timing["nBL"] * tck,
        "refresh": (vdd * (power["IDD5B"] - power["IDD2N"])
                    + vpp * (power["IPP5B"] - power["IPP2N"])) * timing["nRFC"] * tck,
        "P_pre_mW": vdd * power["IDD2N"] + vpp * power["IPP2N"],
        "P_bank_mW": (vdd * (power["IDD3N"] - power["IDD2N"])
                      + vpp * (power["IPP3N"] - power["IPP2N"])) / banks,
    }


def rank_active_cycles(state, total_cycles: int) -> np.ndarray:
    """Cycles each rank spent with at least one bank open, up to ``total_cycles`` (a rank
    still open then counts until that cycle), int64 [G, R]."""
    ra = K.views(state)["rank_residency"]
    still = ra[:, :, K.RA_OPEN] > 0
    extra = np.where(still, np.maximum(int(total_cycles) - ra[:, :, K.RA_SINCE], 0), 0)
    return ra[:, :, K.RA_CYCLES] + extra


def bank_open_cycles(state, total_cycles: int) -> np.ndarray:
    """Cycles each rank's banks spent open, summed over its banks, up to ``total_cycles``
    (banks still open then count until that cycle), int64 [G, R]."""
    ra = K.views(state)["rank_residency"]
    extra = ra[:, :, K.RA_OPEN] * np.maximum(int(total_cycles) - ra[:, :, K.RA_LAST], 0)
    return ra[:, :, K.RA_BANKCYC] + extra


def energy_stats(config, state, total_cycles: int) -> dict:
    """Energy (nJ) and average power (W) of a replay, total and by component
    (:data:`COMPONENTS`), and per-channel totals; empty if the device has no power preset.

    ``background_precharged`` is the precharge standby of every rank over the whole time,
    ``background_active`` the active-standby excess of the open banks (their open cycles x
    ``P_bank_mW``). Keys: ``energy_<component>_nJ``, ``energy_total_nJ``,
    ``power_<component>_W``, ``power_avg_W`` (energy / (total_cycles x tCK)),
    ``energy_per_channel_nJ`` [G], ``rank_active_cycles`` [G][R] (cycles with a bank open),
    ``bank_open_cycles`` [G][R] (summed over the rank's banks), ``access_energy_pJ_per_bit``
    (activation, precharge, read, write and I/O energy over the bits read and written; NaN
    without requests).
    """
    power = ddr5_power.power_preset(config.standard, config.org)
    if power is None:
        return {}
    timing = config.timing
    org = ddr5.ORG_PRESETS[config.org]
    chips = 32 // int(org["dq"])
    e = device_energies_pJ(power, timing, int(org["bankgroups"]) * int(org["banks"]))
    v = K.views(state)
    st = v["stats"]                                          # [G, N_STATS]
    n = {c: st[:, K.S_CMD0 + i].astype(np.float64) for i, c in enumerate(K.COMMAND_NAMES)}
    T = max(int(total_cycles), 0)
    R = v["rank_busy"].shape[1]
    n_open_end = (v["bank"][:, :, 0] >= 0).sum(axis=1)
    n_pre = n["ACT"] - n_open_end                            # banks closed
    bank_cyc = bank_open_cycles(state, T).sum(axis=1).astype(np.float64)
    tck_ns = timing["tCK_ps"] / 1000.0
    def total(names):           # counts of the standard's commands in one of its tables
        return sum(n[c] for c in names)

    reads = total(ddr5.READING)
    writes = total(c for c in ddr5.ACCESSING if c not in ddr5.READING)
    bus_bursts = total(ddr5.DATA_BUS)
    per = {                                                  # pJ per channel
        "act": chips * e["act"] * n["ACT"],
        "pre": chips * e["pre"] * n_pre,
        "read": chips * e["read"] * reads,
        "write": chips * e["write"] * writes,
        "refresh": chips * e["refresh"] * total(ddr5.REFRESHING),
        "background_active": chips * e["P_bank_mW"] * bank_cyc * tck_ns,
        "background_precharged": chips * e["P_pre_mW"] * np.full(st.shape[0], float(R * T))
                                 * tck_ns,
        "io": power["io_pJ_per_bit"] * LINE_BITS * bus_bursts,
    }
    out = {}
    seconds = T * timing["tCK_ps"] * 1e-12
    total = 0.0
    for c in COMPONENTS:
        nj = float(per[c].sum()) / 1000.0
        total += nj
        out[f"energy_{c}_nJ"] = nj
        out[f"power_{c}_W"] = nj * 1e-9 / seconds if seconds > 0 else float("nan")
    out["energy_total_nJ"] = total
    out["power_avg_W"] = total * 1e-9 / seconds if seconds > 0 else float("nan")
    out["energy_per_channel_nJ"] = (sum(per.values()) / 1000.0).tolist()
    out["rank_active_cycles"] = rank_active_cycles(state, T).tolist()
    out["bank_open_cycles"] = bank_open_cycles(state, T).tolist()
    bits = float((reads + writes).sum()) * LINE_BITS
    access = sum(out[f"energy_{c}_nJ"] for c in ("act", "pre", "read", "write", "io"))
    out["access_energy_pJ_per_bit"] = access * 1000.0 / bits if bits else float("nan")
    return out
