"""DDR5 energy from the commands the controller issued and the time each bank was open.

The method is DRAMPower's DDR5 core model (Chandrasekar et al., DSD 2011; the bank-wise
split of Jung et al.; tukl-msd/DRAMPower ``standards/ddr5/core_calculation_DDR5.cpp``),
written here from its equations and checked against DRAMPower's own DDR5 test patterns
(tests/test_dram_drampower.py). Per supply (VDD and VPP, each with its currents), with the
memspec's bank-wise factor rho and precharge current IBeta (default IDD0):

* I_rho = IDD2N + rho (IDD3N - IDD2N): what a rank draws as soon as one bank is open;
* I_1 = (IDD3N + (B - 1) I_rho) / B: one bank open (B banks per device);
* I_theta = (IDD0 (tRAS + tRP) - IBeta tRP) / tRAS: the activation's current over tRAS;
* activation, per ACT: (I_theta - I_1) tRAS; precharge, per bank closed (PREpb, each open bank
  of a PREab, the implicit precharge of RDA/WRA): (IBeta - IDD2N) tRP;
* read / write burst: (IDD4R - IDD3N) nBL tCK, (IDD4W - IDD3N) nBL tCK (IPP4R/IPP4W on VPP);
* all-bank refresh: (IDD5B - IDD3N) tRFC, every bank counted open for tRFC (so the active
  background, IDD3N with all banks open, runs beneath it);
* background: IDD2N while a rank has no bank open (``background_precharged``); I_rho while it
  has one, plus (I_1 - I_rho) per open bank over its open time (``background_active``).

Each multiplied by its voltage (mA x V x ns = pJ). Over one IDD0 loop these add up to IDD0 x
tRC, and with every bank open the background is IDD3N (tested). The presets use rho = 0
(:mod:`dram.standards.ddr5_power` gives the reason); a memspec file gives its own
(:mod:`dram.memspec`). Device figures are multiplied by the devices of a rank: ``32 / dq``
data chips on a 32-bit sub-channel (x4: 8 chips); ECC chips are not modeled (scale by
(8+n)/8). Power-down and self refresh (the controller's power-state policy, off by default):
a rank's cycles in precharge power-down draw IDD2P (+ IPP2P), in self refresh IDD6N (+ IPP6N),
instead of any background (DRAMPower's E_PDNP and E_sref: V x I x t per device); self refresh
counts from SRE + tRFC, the entry's refresh of every bank being an all-bank refresh (energy
and tRFC of banks open), as DRAMPower counts SREFEN. The cycles come from the kernel's
per-rank counters (``RA_PD_CYC``, ``RA_SR_CYC``; :func:`low_power_cycles`).

Channel I/O: every burst that crosses the channel's data bus (RD, WR, RDA, WRA) costs 64 B x 8
bits x ``io_pJ_per_bit``. A rank-local burst (RD_L, WR_L, RDA_L, WRA_L: a rank PU reading or
writing its own rank) costs the array read or write and no channel I/O; the PU's own datapath
is not DRAM energy and is charged by the system model (cosmos.energy).

Residency of a replay comes from the kernel's per-rank counters (``dram.kernel.RA_*``): banks
open at ACT and close when the precharging command issues, or after RDA/WRA at the implicit
precharge, max(ACT + tRAS, RDA + tRTP) (write recovery's end for WRA), as DRAMPower keeps
them open (and as :func:`command_energy` does for an explicit command list). The tRP of a
precharge counts as precharged background, as in DRAMPower.
"""

from __future__ import annotations

import numpy as np

from dram import kernel as K
from dram.standards import ddr5, ddr5_power

LINE_BITS = 64 * 8

#: Energy components, in the order they are reported.
COMPONENTS = ("act", "pre", "read", "write", "refresh", "background_active",
              "background_precharged", "powerdown", "self_refresh", "io")

#: The power-state currents (our keys) and the memspec field each comes from, for messages.
_LOW_POWER_FIELDS = {"IDD2P": "idd2p", "IPP2P": "ipp2p", "IDD3P": "idd3p", "IPP3P": "ipp3p",
                     "IDD6N": "idd6n", "IPP6N": "ipp6n"}


def domain_currents(power: dict, domain: str, banks: int, bankgroups: int, tras_ns: float,
                    trp_ns: float) -> dict:
    """DRAMPower's derived currents of one supply (``"VDD"`` or ``"VPP"``), mA: ``I_rho``
    (the rank's shared active background), ``I_1`` (one bank open), ``I_theta`` (the current
    the activation draws over tRAS), ``I_BG`` (one bank per group open, the REFsb baseline)
    and the memspec's ``I0``, ``I2N``, ``I3N``, ``I4R``, ``I4W``, ``I5B``, ``I5C``, ``Ibeta``."""
    k = ("IDD" if domain == "VDD" else "IPP")
    i = {n: float(power.get(k + n, 0.0)) for n in ("0", "2N", "3N", "4R", "4W", "5B", "5C",
                                                    "2P", "3P", "6N")}
    ibeta = power.get("IBETA_" + domain)
    ibeta = i["0"] if ibeta is None else float(ibeta)
    rho = float(power.get("rho", 0.0))
    i_rho = rho * (i["3N"] - i["2N"]) + i["2N"]
    i_1 = (i["3N"] + (banks - 1) * i_rho) / banks
    return dict(I0=i["0"], I2N=i["2N"], I3N=i["3N"], I4R=i["4R"], I4W=i["4W"], I5B=i["5B"],
                I5C=i["5C"], I2P=i["2P"], I3P=i["3P"], I6N=i["6N"], Ibeta=ibeta, I_rho=i_rho, I_1=i_1,
                I_theta=(i["0"] * (trp_ns + tras_ns) - ibeta * trp_ns) / tras_ns,
                I_BG=i_rho + (i_1 - i_rho) * bankgroups)


def device_energies_pJ(power: dict, timing: dict, banks: int, bankgroups: int = 1) -> dict:
    """Per-device energy of one event (pJ) and background powers (mW) of one device with
    ``banks`` banks in ``bankgroups`` groups, DRAMPower's DDR5 core equations summed over VDD
    and VPP: ``act``, ``pre`` (one bank closed), ``read``, ``write`` (one burst of ``nBL``
    cycles), ``refresh`` (REFab over tRFC), ``refresh_sb`` (REFsb over tRFCsb, when the timing
    has ``nRFCsb``); ``P_pre_mW`` (a rank with every bank closed), ``P_shared_mW`` (a rank with
    at least one bank open, the part shared by its banks) and ``P_bank_mW`` (what each open
    bank adds). ``timing`` needs ``tCK_ps``, ``nRAS``, ``nRP``, ``nBL``, ``nRFC``."""
    tck = timing["tCK_ps"] / 1000.0
    tras, trp = timing["nRAS"] * tck, timing["nRP"] * tck
    out = dict.fromkeys(("act", "pre", "read", "write", "refresh", "refresh_sb", "P_pre_mW",
                         "P_shared_mW", "P_bank_mW", "P_pdn_pre_mW", "P_pdn_act_mW",
                         "P_sref_mW"), 0.0)
    for dom, v in (("VDD", power["VDD_V"]), ("VPP", power["VPP_V"])):
        c = domain_currents(power, dom, banks, bankgroups, tras, trp)
        out["act"] += v * (c["I_theta"] - c["I_1"]) * tras
        out["pre"] += v * (c["Ibeta"] - c["I2N"]) * trp
        out["read"] += v * (c["I4R"] - c["I3N"]) * timing["nBL"] * tck
        out["write"] += v * (c["I4W"] - c["I3N"]) * timing["nBL"] * tck
        out["refresh"] += v * (c["I5B"] - c["I3N"]) * timing["nRFC"] * tck
        out["refresh_sb"] += v * (c["I5C"] - c["I_BG"]) * timing.get("nRFCsb", 0) * tck
        out["P_pre_mW"] += v * c["I2N"]
        out["P_shared_mW"] += v * c["I_rho"]
        out["P_bank_mW"] += v * (c["I_1"] - c["I_rho"])
        out["P_pdn_pre_mW"] += v * c["I2P"]       # DRAMPower: E_PDNP = V IXX2P t (per device)
        out["P_pdn_act_mW"] += v * c["I3P"]       # E_PDNA = V IXX3P t
        out["P_sref_mW"] += v * c["I6N"]          # E_sref = V IXX6N t
    return out


def require_low_power_currents(power: dict, states) -> None:
    """Refuse figures without the currents of the low-power ``states`` a replay used
    (``"powerdown"``: IDD2P/IPP2P, ``"self_refresh"``: IDD6N/IPP6N), in one line naming the
    field, rather than count those cycles at 0 mA."""
    need = {"powerdown": ("IDD2P", "IPP2P"), "self_refresh": ("IDD6N", "IPP6N"),
            "powerdown_active": ("IDD3P", "IPP3P")}
    from cosmos_common import UserError
    for s in states:
        for key in need[s]:
            if key not in power:
                raise UserError(f"energy: the device's {key} (memspec mempowerspec."
                                f"{_LOW_POWER_FIELDS[key]}) is missing, and the replay spent "
                                f"cycles in {s.replace('_', ' ')}")


def low_power_cycles(state, total_cycles: int) -> tuple[np.ndarray, np.ndarray]:
    """Cycles each rank spent in power-down and in self refresh, up to ``total_cycles`` (a
    state still on then counts until that cycle; self refresh from SRE + nRFC), int64
    [G, R] each. Zero without the power-state policy."""
    ra = K.views(state)["rank_residency"]
    T = int(total_cycles)
    open_ = np.maximum(T - ra[:, :, K.RA_PS_SINCE], 0)
    pd = ra[:, :, K.RA_PD_CYC] + np.where(ra[:, :, K.RA_PS] == K.PS_PD, open_, 0)
    sr = ra[:, :, K.RA_SR_CYC] + np.where(ra[:, :, K.RA_PS] == K.PS_SR, open_, 0)
    return pd, sr


def rank_active_cycles(state, total_cycles: int) -> np.ndarray:
    """Cycles each rank spent with at least one bank open, up to ``total_cycles`` (a rank
    still open then counts until that cycle; one whose last auto-precharge's implicit
    precharge comes after it, until that cycle too), int64 [G, R]."""
    ra = K.views(state)["rank_residency"]
    T = int(total_cycles)
    still = ra[:, :, K.RA_OPEN] > 0
    extra = np.where(still, np.maximum(T - ra[:, :, K.RA_SINCE], 0),
                     -np.maximum(ra[:, :, K.RA_ENDED] - T, 0))
    return ra[:, :, K.RA_CYCLES] + extra


def bank_open_cycles(state, total_cycles: int) -> np.ndarray:
    """Cycles each rank's banks spent open, summed over its banks, up to ``total_cycles``
    (banks still open then count until that cycle; a bank closed by RDA/WRA counts until its
    implicit precharge, which for the run's last ones may be up to tRAS past its end), int64
    [G, R]."""
    ra = K.views(state)["rank_residency"]
    extra = ra[:, :, K.RA_OPEN] * np.maximum(int(total_cycles) - ra[:, :, K.RA_LAST], 0)
    return ra[:, :, K.RA_BANKCYC] + extra


def energy_stats(config, state, total_cycles: int, power: dict | None = None) -> dict:
    """Energy (nJ) and average power (W) of a replay, total and by component
    (:data:`COMPONENTS`), and per-channel totals; empty if the device has no power figures.

    ``power``: the device's currents and voltages (:mod:`dram.standards.ddr5_power` keys, as
    :func:`dram.memspec.load_memspec` gives them); default: the preset of ``config``'s
    timing bin and organization. ``background_precharged`` is IDD2N over the time each rank
    has no bank open, ``background_active`` the shared part (I_rho) over the time a rank has
    a bank open plus each open bank's part (I_1 - I_rho) over its open cycles; an all-bank
    refresh holds every bank open for tRFC (DRAMPower's split). Keys:
    ``energy_<component>_nJ``, ``energy_total_nJ``, ``power_<component>_W``,
    ``power_avg_W`` (energy / (total_cycles x tCK)), ``energy_per_channel_nJ`` [G],
    ``rank_active_cycles`` [G][R] (cycles with a bank open, refresh not included),
    ``bank_open_cycles`` [G][R] (summed over the rank's banks), ``access_energy_pJ_per_bit``
    (activation, precharge, read, write and I/O energy over the bits read and written; NaN
    without requests).
    """
    if power is None:
        power = ddr5_power.power_preset(config.standard, config.org)
    if power is None:
        return {}
    timing = config.timing
    org = ddr5.ORG_PRESETS[config.org]
    chips = 32 // int(org["dq"])
    banks = int(org["bankgroups"]) * int(org["banks"])
    e = device_energies_pJ(power, timing, banks, int(org["bankgroups"]))
    v = K.views(state)
    st = v["stats"]                                          # [G, N_STATS]
    pd_cyc, sr_cyc = low_power_cycles(state, total_cycles)
    require_low_power_currents(power, [s for s, c in (("powerdown", pd_cyc),
                                                      ("self_refresh", sr_cyc)) if c.any()])
    pd_ch = pd_cyc.sum(axis=1).astype(np.float64)
    sr_ch = sr_cyc.sum(axis=1).astype(np.float64)
    n = {c: st[:, K.S_CMD0 + i].astype(np.float64) for i, c in enumerate(K.COMMAND_NAMES)}
    T = max(int(total_cycles), 0)
    R = v["rank_busy"].shape[1]
    n_open_end = (v["bank"][:, :, 0] >= 0).sum(axis=1)
    n_pre = n["ACT"] - n_open_end                            # banks closed
    tck_ns = timing["tCK_ps"] / 1000.0
    def total(names):           # counts of the standard's commands in one of its tables
        return sum(n[c] for c in names)

    # refresh commands by scope: an all-bank refresh (REFab) finds every bank of its rank
    # closed and holds them all open for tRFC; a same-bank refresh (REFsb) holds its bank in
    # every bank group open for tRFCsb (DRAMPower's split, as command_energy)
    n_ref = total(c for c in ddr5.REFRESHING if ddr5.SCOPE.get(c) == "rank")
    n_refsb = total(c for c in ddr5.REFRESHING if ddr5.SCOPE.get(c) == "same_bank")
    groups = int(org["bankgroups"])
    ref_full = n_ref * timing["nRFC"] + n_refsb * timing["nRFCsb"]
    ref_cyc = np.minimum(ref_full, float(R * T) - rank_active_cycles(state, T).sum(axis=1)
                         - pd_ch - sr_ch)
    rank_act = rank_active_cycles(state, T).sum(axis=1).astype(np.float64) + ref_cyc
    # open banks during refresh (scaled as ref_cyc is, if a refresh overlapped open banks)
    sb_banks = np.where(ref_full > 0, ref_cyc / np.maximum(ref_full, 1), 0.0) * (
        banks * n_ref * timing["nRFC"] + groups * n_refsb * timing["nRFCsb"])
    bank_cyc = bank_open_cycles(state, T).sum(axis=1).astype(np.float64) + np.where(
        n_refsb == 0, banks * ref_cyc, sb_banks)
    reads = total(ddr5.READING)
    writes = total(c for c in ddr5.ACCESSING if c not in ddr5.READING)
    bus_bursts = total(ddr5.DATA_BUS)
    per = {                                                  # pJ per channel
        "act": chips * e["act"] * n["ACT"],
        "pre": chips * e["pre"] * n_pre,
        "read": chips * e["read"] * reads,
        "write": chips * e["write"] * writes,
        "refresh": chips * (e["refresh"] * n_ref + e["refresh_sb"] * n_refsb),
        "background_active": chips * (e["P_shared_mW"] * rank_act + e["P_bank_mW"] * bank_cyc)
                             * tck_ns,
        "background_precharged": chips * e["P_pre_mW"]
                                 * np.maximum(R * T - rank_act - pd_ch - sr_ch, 0.0) * tck_ns,
        # precharge power-down (the policy closes every bank first) and self refresh
        "powerdown": chips * e["P_pdn_pre_mW"] * pd_ch * tck_ns,
        "self_refresh": chips * e["P_sref_mW"] * sr_ch * tck_ns,
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
    out["powerdown_cycles"] = pd_cyc.tolist()
    out["self_refresh_cycles"] = sr_cyc.tolist()
    out["bank_open_cycles"] = bank_open_cycles(state, T).tolist()
    bits = float((reads + writes).sum()) * LINE_BITS
    access = sum(out[f"energy_{c}_nJ"] for c in ("act", "pre", "read", "write", "io"))
    out["access_energy_pJ_per_bit"] = access * 1000.0 / bits if bits else float("nan")
    return out


#: Command names :func:`command_energy` takes (DRAMPower's and this model's spellings).
_CMD_ALIASES = {"ACT": "ACT", "PRE": "PRE", "PREPB": "PRE", "PREA": "PREA", "PREAB": "PREA",
                "PRESB": "PRESB", "RD": "RD", "WR": "WR", "RDA": "RDA", "WRA": "WRA",
                "REFA": "REFA", "REFAB": "REFA", "REFSB": "REFSB", "RD_L": "RD", "WR_L": "WR",
                "RDA_L": "RDA", "WRA_L": "WRA", "NOP": "NOP",
                "PDEA": "PDEA", "PDXA": "PDXA", "PDEP": "PDEP", "PDXP": "PDXP",
                "SREFEN": "SREFEN", "SREFEX": "SREFEX", "SRE": "SREFEN", "SRX": "SREFEX"}


def command_energy(spec, commands, end_cycle: int) -> dict:
    """Energy (pJ) of an explicit command list for one rank of ``spec`` (a
    :class:`dram.memspec.Memspec`), by DRAMPower's DDR5 core method: what DRAMPower's own
    tests compute from a command list.

    ``commands``: (cycle, name, bank) in issue order, ``bank`` the flat bank index
    (group x banks per group + bank; ignored by rank commands). Names: ACT, PRE (PREpb),
    PREA (PREab), PRESB (the same bank in every group), RD, WR, RDA, WRA, REFA (REFab), REFSB,
    PDEA / PDXA (active power-down entry / exit), PDEP / PDXP (precharge power-down),
    SREFEN / SREFEX (self refresh; also SRE / SRX). Bank state as DRAMPower keeps it: an ACT
    opens a bank; a precharge closes it (nothing if closed); RDA / WRA close it at
    max(ACT + tRAS, RDA + tRTP) / max(ACT + tRAS, WRA + WL + BL/2 + WR); REFA holds every bank
    open for tRFC and REFSB its banks for tRFCsb. A power-down entry or exit takes effect at
    the later of its cycle and the end of the rank's pending operations (the last ACT + tRCD,
    the last precharge + tRP, the refresh's end), in command order; in active power-down the
    open banks count no active time; SREFEN is an all-bank refresh, the rank in self refresh
    from tRFC later until SREFEX. Time runs to ``end_cycle``; intervals still open count up
    to it.

    Returns pJ for the rank (all its devices): ``act``, ``pre`` (explicit and implicit
    precharges), ``read``, ``write`` (RDA/WRA included), ``refresh`` (REFA, REFSB and the
    refresh of SREFEN), ``background_active`` (shared part and per-bank part),
    ``background_active_shared`` (the shared part alone), ``background_precharged``,
    ``powerdown_active`` (IDD3P), ``powerdown`` (precharge power-down, IDD2P),
    ``self_refresh`` (IDD6N), ``total``; and the cycle counts ``rank_active_cycles``,
    ``bank_active_cycles`` [B], ``powerdown_active_cycles``, ``powerdown_cycles``,
    ``self_refresh_cycles``, counts ``n_act``, ``n_pre``.
    """
    import heapq

    B, BG = int(spec.banks), int(spec.bankgroups)
    per_group = B // BG
    t = spec.timing
    end = int(end_cycle)
    open_at = [None] * B              # cycle each open bank opened
    act_start = [0] * B               # start of the bank's last open interval
    n_bank_act = [0] * B              # ACTs of each bank
    n_bank_pre = [0] * B              # precharges of each bank, and the last one's cycle
    last_pre = [0] * B
    ref_end = [0] * B                 # end of the bank's last refresh
    queue = []                        # (cycle, order, action): effects that come later
    intervals = [[] for _ in range(B)]
    low = {"A": [], "P": [], "S": []}  # power-down active / precharge, self refresh intervals
    state = {"mode": None, "since": 0, "paused": []}
    n = dict(act=0, pre=0, rd=0, wr=0, ref=0, refsb=0)
    order = [0]

    def later(clk, action):
        order[0] += 1
        heapq.heappush(queue, (clk, order[0], action))

    def open_bank(b, clk):
        if open_at[b] is None:
            open_at[b] = clk
            act_start[b] = clk

    def close(b, clk, count):
        if open_at[b] is None:
            return
        intervals[b].append((open_at[b], clk))
        open_at[b] = None
        if count:
            n["pre"] += 1

    def precharge(b, clk, count=True):
        if open_at[b] is not None:
            n_bank_pre[b] += 1
            last_pre[b] = clk
        close(b, clk, count)

    def run_until(upto):
        while queue and queue[0][0] <= upto:
            clk, _, action = heapq.heappop(queue)
            action(clk)

    def earliest_entry():
        """DRAMPower's earliest power-down entry (and exit) of the rank."""
        need = t.get("nRCD")
        e = 0
        for b in range(B):
            if n_bank_act[b]:
                if need is None:
                    raise ValueError("command_energy: a power-down command needs the memspec's "
                                     "memtimingspec.RCD")
                e = max(e, act_start[b] + need)
            if n_bank_pre[b]:
                e = max(e, last_pre[b] + t["nRP"])
            e = max(e, ref_end[b])
        return e

    def enter(kind):
        def act(clk):
            state["mode"], state["since"] = kind, clk
            if kind == "A":               # open banks count no active time in power-down
                state["paused"] = [b for b in range(B) if open_at[b] is not None]
                for b in state["paused"]:
                    close(b, clk, False)
        return act

    def leave(kind):
        def act(clk):
            if state["mode"] != kind:
                return
            low[kind].append((state["since"], clk))
            state["mode"] = None
            if kind == "A":
                for b in state["paused"]:
                    open_bank(b, clk)
                state["paused"] = []
        return act

    def refresh(banks_, clk, dur):
        for k in banks_:
            open_bank(k, clk)
            ref_end[k] = clk + dur
            later(clk + dur, lambda c, k=k: close(k, c, False))

    for clk, name, bank in commands:
        clk = int(clk)
        cmd = _CMD_ALIASES.get(str(name).upper())
        if cmd is None:
            raise ValueError(f"command_energy: unknown command {name!r}; known: "
                             f"{', '.join(sorted(set(_CMD_ALIASES.values())))}")
        run_until(clk)
        b = int(bank) if bank is not None else 0
        if cmd in ("ACT", "PRE", "RD", "WR", "RDA", "WRA", "PRESB", "REFSB") and \
                not 0 <= b < B:
            raise ValueError(f"command_energy: bank {b} out of range (0..{B - 1})")
        if cmd == "ACT":
            n["act"] += 1
            n_bank_act[b] += 1
            open_bank(b, clk)
        elif cmd == "PRE":
            precharge(b, clk)
        elif cmd == "PREA":
            for k in range(B):
                precharge(k, clk)
        elif cmd == "PRESB":
            for g in range(BG):
                precharge(g * per_group + b % per_group, clk)
        elif cmd in ("RD", "WR", "RDA", "WRA"):
            n["rd" if cmd in ("RD", "RDA") else "wr"] += 1
            if cmd == "RDA":
                later(max(act_start[b] + t["nRAS"], clk + t["nRTP"]),
                      lambda c, b=b: precharge(b, c))
            elif cmd == "WRA":
                later(max(act_start[b] + t["nRAS"], clk + t["nBL"] + t["nCWL"] + t["nWR"]),
                      lambda c, b=b: precharge(b, c))
        elif cmd in ("REFA", "SREFEN"):
            n["ref"] += 1
            refresh(range(B), clk, t["nRFC"])
            if cmd == "SREFEN":
                later(clk + t["nRFC"], enter("S"))
        elif cmd == "REFSB":
            n["refsb"] += 1
            refresh([g * per_group + b % per_group for g in range(BG)], clk,
                    t.get("nRFCsb", 0))
        elif cmd == "SREFEX":
            leave("S")(clk)
        elif cmd in ("PDEA", "PDEP"):
            later(max(clk, earliest_entry()), enter(cmd[-1]))
        elif cmd in ("PDXA", "PDXP"):
            later(max(clk, earliest_entry()), leave(cmd[-1]))
    run_until(end)
    for k in range(B):
        if open_at[k] is not None:
            intervals[k].append((open_at[k], end))
    if state["mode"] is not None:
        low[state["mode"]].append((state["since"], end))

    def clipped(iv):
        return sum(max(0, min(e, end) - max(s, 0)) for s, e in iv)

    bank_cyc = [clipped(iv) for iv in intervals]
    # the rank is active while any bank is: the union of the banks' intervals
    allv = sorted((max(s, 0), min(e, end)) for iv in intervals for s, e in iv if s < end)
    rank_cyc, cur_s, cur_e = 0, None, None
    for s, e in allv:
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                rank_cyc += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        rank_cyc += cur_e - cur_s
    pda, pdp, sref = (clipped(low[k]) for k in ("A", "P", "S"))
    if pda:
        require_low_power_currents(spec.power, ["powerdown_active"])
    if pdp:
        require_low_power_currents(spec.power, ["powerdown"])
    if sref:
        require_low_power_currents(spec.power, ["self_refresh"])
    e = device_energies_pJ(spec.power, t, B, BG)
    tck = t["tCK_ps"] / 1000.0
    d = int(spec.devices)
    shared = d * e["P_shared_mW"] * rank_cyc * tck
    out = {
        "act": d * e["act"] * n["act"],
        "pre": d * e["pre"] * n["pre"],
        "read": d * e["read"] * n["rd"],
        "write": d * e["write"] * n["wr"],
        "refresh": d * (e["refresh"] * n["ref"] + e["refresh_sb"] * n["refsb"]),
        "background_active": shared + d * e["P_bank_mW"] * sum(bank_cyc) * tck,
        "background_active_shared": shared,
        "background_precharged": d * e["P_pre_mW"] * max(end - rank_cyc - pda - pdp - sref, 0)
                                 * tck,
        "powerdown_active": d * e["P_pdn_act_mW"] * pda * tck,
        "powerdown": d * e["P_pdn_pre_mW"] * pdp * tck,
        "self_refresh": d * e["P_sref_mW"] * sref * tck,
    }
    out["total"] = sum(v for k, v in out.items() if k != "background_active_shared")
    out.update(rank_active_cycles=rank_cyc, bank_active_cycles=bank_cyc,
               powerdown_active_cycles=pda, powerdown_cycles=pdp, self_refresh_cycles=sref,
               n_act=n["act"], n_pre=n["pre"])
    return out
