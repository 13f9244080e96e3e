"""DRAMPower-style DDR5 memspec files: a device's currents, voltages, timings and organization.

A memspec is the JSON DRAMPower (tukl-msd/DRAMPower) and DRAMSys read:
``{"memspec": {"memoryType": "DDR5", "memarchitecturespec": {...}, "mempowerspec": {...},
"memtimingspec": {...}, "bankwisespec": {"factRho": ...}}}``, currents in A, voltages in V,
``tCK`` in s and the other timings in clock cycles. :func:`load_memspec` reads one into a
:class:`Memspec` whose ``power`` has :mod:`dram.standards.ddr5_power`'s keys (mA, V), so
``dram.replay(..., memspec=...)`` and ``cosmos dram replay --memspec FILE`` take its
currents, and :func:`dram.energy.command_energy` computes the energy of a command list on it.

Fields read (the ones DRAMPower's DDR5 core energy uses): ``memarchitecturespec``:
``nbrOfBanks``, ``nbrOfBankGroups``, ``nbrOfDevices``, ``nbrOfRanks``, ``width``,
``burstLength``, ``dataRate``, ``RefMode`` (optional, 1; 2 selects ``idd5f``/``ipp5f`` and
``RFC2_slr``); ``mempowerspec``: ``vdd``, ``vpp``, ``idd0``, ``idd2n``, ``idd3n``, ``idd4r``,
``idd4w``, ``idd5b``, ``ipp0``, ``ipp2n``, ``ipp3n``, ``ipp4r``, ``ipp4w``, ``ipp5b``
(required); ``idd5c``, ``ipp5c``, ``idd5f``, ``ipp5f``, ``iBeta_vdd``, ``iBeta_vpp``
(optional; iBeta defaults to idd0 / ipp0 as in DRAMPower), and the currents of the power
states ``idd2p``, ``ipp2p`` (precharge power-down), ``idd3p``, ``ipp3p`` (active
power-down), ``idd6n``, ``ipp6n`` (self refresh): optional, but a replay or command list that
spends cycles in a state whose current is missing is refused, naming the field;
``memtimingspec``: ``tCK``, ``RAS``, ``RP``, ``RTP``, ``WL``, ``WR``, ``RFC1_slr`` (or
``RFC2_slr``), optional ``RFCsb_slr`` and ``RCD`` (power-down entry in
:func:`dram.energy.command_energy`); ``bankwisespec.factRho`` (optional: absent, DRAMPower's default 1, so a file
means the same here as there). The channel I/O energy is not a memspec figure: it stays at
:mod:`dram.standards.ddr5_power`'s estimate (``io_pJ_per_bit``) unless the file's
``mempowerspec`` has ``io_pJ_per_bit``. A bad file is one :class:`cosmos_common.UserError`
line naming the field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from cosmos_common import UserError

#: mempowerspec fields every memspec must give (A or V), and the key each becomes.
_POWER_REQUIRED = {"vdd": "VDD_V", "vpp": "VPP_V", "idd0": "IDD0", "idd2n": "IDD2N",
                   "idd3n": "IDD3N", "idd4r": "IDD4R", "idd4w": "IDD4W", "ipp0": "IPP0",
                   "ipp2n": "IPP2N", "ipp3n": "IPP3N", "ipp4r": "IPP4R", "ipp4w": "IPP4W"}
_POWER_OPTIONAL = {"idd5c": "IDD5C", "ipp5c": "IPP5C", "idd6n": "IDD6N", "ipp6n": "IPP6N",
                   "idd2p": "IDD2P", "ipp2p": "IPP2P", "idd3p": "IDD3P", "ipp3p": "IPP3P",
                   "iBeta_vdd": "IBETA_VDD", "iBeta_vpp": "IBETA_VPP"}
_ARCH_REQUIRED = ("nbrOfBanks", "nbrOfBankGroups", "nbrOfDevices", "nbrOfRanks", "width",
                  "burstLength", "dataRate")
_TIMING_REQUIRED = {"RAS": "nRAS", "RP": "nRP", "RTP": "nRTP", "WL": "nCWL", "WR": "nWR"}

#: DRAMPower's default factRho when a memspec has no bankwisespec (MemSpecDDR5.cpp).
DRAMPOWER_DEFAULT_RHO = 1.0


@dataclass(frozen=True)
class Memspec:
    """One DDR5 device type: ``power`` (ddr5_power keys; currents mA, voltages V),
    ``timing`` (``tCK_ps`` and cycles: ``nRAS``, ``nRP``, ``nRTP``, ``nCWL``, ``nWR``,
    ``nBL`` = burstLength / dataRate, ``nRFC``, ``nRFCsb``), organization (``banks`` per
    device, ``bankgroups``, ``devices`` per rank, ``ranks``, ``width`` bits) and ``name``."""
    power: dict
    timing: dict
    banks: int
    bankgroups: int
    devices: int
    ranks: int
    width: int
    name: str = ""
    source: str = field(default="", compare=False)


def _num(sec: dict, key: str, where: str, required: bool = True, integer: bool = False):
    if key not in sec or sec[key] is None:
        if required:
            raise UserError(f"memspec {where}.{key}: missing")
        return None
    v = sec[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise UserError(f"memspec {where}.{key}: {v!r} is not a number")
    if v != v or v in (float("inf"), float("-inf")):
        raise UserError(f"memspec {where}.{key}: {v!r} is not finite")
    if v < 0:
        raise UserError(f"memspec {where}.{key}: {v!r} is negative")
    if integer and int(v) != v:
        raise UserError(f"memspec {where}.{key}: {v!r} is not a whole number of cycles")
    return int(v) if integer else float(v)


def _section(ms: dict, name: str) -> dict:
    sec = ms.get(name)
    if not isinstance(sec, dict):
        raise UserError(f"memspec {name}: missing (expected an object)")
    return sec


def load_memspec(src, io_pJ_per_bit: float | None = None) -> Memspec:
    """Read a DRAMPower-style DDR5 memspec: a path to a JSON file, or the parsed dict (with
    or without the outer ``"memspec"`` key). Errors name the field (UserError, one line)."""
    where = ""
    if isinstance(src, (str, Path)):
        path = Path(src)
        where = str(path)
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise UserError(f"memspec {path}: no such file") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise UserError(f"memspec {path}: not readable JSON ({e})") from None
    else:
        data = src
    if not isinstance(data, dict):
        raise UserError("memspec: expected a JSON object")
    ms = data.get("memspec", data)
    if not isinstance(ms, dict):
        raise UserError("memspec: expected a JSON object under 'memspec'")
    mtype = ms.get("memoryType")
    if mtype is None:
        raise UserError("memspec memoryType: missing (expected DDR5)")
    if str(mtype).upper() != "DDR5":
        raise UserError(f"memspec memoryType: {mtype!r} is not supported (known: DDR5)")
    arch = _section(ms, "memarchitecturespec")
    pw = _section(ms, "mempowerspec")
    tm = _section(ms, "memtimingspec")
    a = {k: _num(arch, k, "memarchitecturespec", integer=True) for k in _ARCH_REQUIRED}
    for k in ("nbrOfBanks", "nbrOfBankGroups", "nbrOfDevices", "nbrOfRanks", "width",
              "dataRate"):
        if a[k] == 0:
            raise UserError(f"memspec memarchitecturespec.{k}: must be at least 1")
    if a["nbrOfBanks"] % a["nbrOfBankGroups"]:
        raise UserError(f"memspec memarchitecturespec.nbrOfBankGroups: "
                        f"{a['nbrOfBankGroups']} does not divide nbrOfBanks {a['nbrOfBanks']}")
    refmode = arch.get("RefMode", 1)
    if refmode not in (0, 1, 2):
        raise UserError(f"memspec memarchitecturespec.RefMode: {refmode!r}, expected 1 or 2")
    power = {}
    for k, ours in _POWER_REQUIRED.items():
        v = _num(pw, k, "mempowerspec")
        power[ours] = v if ours.endswith("_V") else v * 1000.0
    ref_i = ("idd5f", "ipp5f") if refmode == 2 else ("idd5b", "ipp5b")
    power["IDD5B"] = _num(pw, ref_i[0], "mempowerspec") * 1000.0
    power["IPP5B"] = _num(pw, ref_i[1], "mempowerspec") * 1000.0
    for k, ours in _POWER_OPTIONAL.items():
        v = _num(pw, k, "mempowerspec", required=False)
        if v is not None:
            power[ours] = v * 1000.0
    rho = DRAMPOWER_DEFAULT_RHO
    bw = ms.get("bankwisespec")
    if bw is not None:
        if not isinstance(bw, dict):
            raise UserError("memspec bankwisespec: expected an object")
        r = _num(bw, "factRho", "bankwisespec", required=False)
        if r is not None:
            rho = r
    if rho > 1:
        raise UserError(f"memspec bankwisespec.factRho: {rho!r} is above 1")
    power["rho"] = rho
    io = _num(pw, "io_pJ_per_bit", "mempowerspec", required=False)
    if io is None:
        from dram.standards.ddr5_power import _COMMON
        io = _COMMON["io_pJ_per_bit"] if io_pJ_per_bit is None else float(io_pJ_per_bit)
    power["io_pJ_per_bit"] = io
    tck_s = _num(tm, "tCK", "memtimingspec")
    if tck_s == 0:
        raise UserError("memspec memtimingspec.tCK: must be positive (seconds)")
    timing = {"tCK_ps": tck_s * 1e12}
    for k, ours in _TIMING_REQUIRED.items():
        timing[ours] = _num(tm, k, "memtimingspec", integer=True)
    if timing["nRAS"] == 0:
        raise UserError("memspec memtimingspec.RAS: must be at least 1 cycle")
    rfc = "RFC2_slr" if refmode == 2 else "RFC1_slr"
    timing["nRFC"] = _num(tm, rfc, "memtimingspec", integer=True)
    sb = _num(tm, "RFCsb_slr", "memtimingspec", required=False, integer=True)
    timing["nRFCsb"] = 0 if sb is None else sb
    rcd = _num(tm, "RCD", "memtimingspec", required=False, integer=True)
    if rcd is not None:
        timing["nRCD"] = rcd
    timing["nBL"] = a["burstLength"] // a["dataRate"]
    spec = Memspec(power=power, timing=timing, banks=a["nbrOfBanks"],
                   bankgroups=a["nbrOfBankGroups"], devices=a["nbrOfDevices"],
                   ranks=a["nbrOfRanks"], width=a["width"], name=str(ms.get("memoryId", "")),
                   source=where)
    _check_activation(spec)
    return spec


def _check_activation(spec: Memspec) -> None:
    """Refuse currents whose activation energy would be negative (the one-bank standby
    DRAMPower derives from factRho above the current of the IDD0 loop)."""
    from dram.energy import device_energies_pJ
    e = device_energies_pJ(spec.power, spec.timing, spec.banks, spec.bankgroups)
    if e["act"] < 0:
        raise UserError(
            f"memspec bankwisespec.factRho: {spec.power['rho']:g} makes the activation energy "
            f"negative ({e['act']:.4g} pJ: idd0 is below the one-bank standby current it "
            f"implies); give a smaller factRho (0 splits idd3n - idd2n evenly over the banks)")


def check_matches(spec: Memspec, org: dict, where: str = "--memspec") -> None:
    """Refuse a memspec for another device than the replay's organization (``org``: a
    :data:`dram.standards.ddr5.ORG_PRESETS` entry): its banks and width must agree, since
    the per-bank split and the chips per rank depend on them."""
    banks = int(org["bankgroups"]) * int(org["banks"])
    if spec.banks != banks:
        raise UserError(f"{where}: memarchitecturespec.nbrOfBanks {spec.banks} differs from the "
                        f"organization's {banks} banks")
    if spec.bankgroups != int(org["bankgroups"]):
        raise UserError(f"{where}: memarchitecturespec.nbrOfBankGroups {spec.bankgroups} "
                        f"differs from the organization's {org['bankgroups']}")
    if spec.width != int(org["dq"]):
        raise UserError(f"{where}: memarchitecturespec.width {spec.width} differs from the "
                        f"organization's x{org['dq']}")
