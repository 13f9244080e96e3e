"""Memory-system configurations in the formats DRAM users already have.

:func:`read_config_file` turns a Ramulator 2 YAML file or a DRAMsim3 ``.ini`` file into a
:class:`dram.DRAMConfig`, for the parts this model has: the standard (DDR5 only), the device
organization, the timings, channels, ranks, the address mapping, the scheduler, the row
policy, refresh and the controller's buffers. A setting that would change the simulation and
that the model does not have (another standard, a row policy that counts accesses, per-bank
refresh, additive latency, ...) is refused in one line naming the file and the field; a
setting that does not change what this model computes (the frontend, statistics plugins,
power-down timings) is reported in a note.

Three layouts are read:

* **Ramulator 2.1** (``python -m ramulator export config.py -o config.yaml``): a
  ``memory_system`` with a list of ``controllers`` (one per channel), each holding a resolved
  ``dram`` (``org.count`` = [channel, rank, bank group, bank, row, column], ``timing`` = the
  values in the order of Ramulator's ``DDR5.timing_params``), its scheduler, refresh manager,
  row policy and address mapper, and a ``channel_mapper``. Ramulator 2.1's
  ``CacheLineInterleave`` takes the channel from the bits right above the 64-B offset and
  removes them before the controller's mapper (its ``apply``); with ``interleave_bits: 0``
  that is this model's mapping with ``Ch`` last.
* **Ramulator 2.0** (``MemorySystem: {DRAM: {org: {preset: ...}, timing: {preset: ...}},
  Controller: {...}, AddrMapper: {...}}``): presets by name, with overrides beside them.
* **DRAMsim3** (``[dram_structure]``, ``[timing]``, ``[system]`` ...): DRAMsim3 ships no DDR5
  part, so a file must say ``protocol = DDR5``; timings are in clock cycles, ``tCK`` in ns.

Timings are matched to this model's presets: the preset at the file's clock whose resolved
timings differ in the fewest values is chosen, and the differing values become
``timing_overrides`` (so a file that equals a preset reads back as that preset exactly).
"""

from __future__ import annotations

import configparser
from dataclasses import dataclass
from pathlib import Path

from cosmos_common import UserError
from dram.config import DRAMConfig, parse_mapping
from dram.standards import ddr5

__all__ = ["ForeignConfig", "read_config_file", "FOREIGN_SUFFIXES"]

#: file suffixes :func:`read_config_file` reads (anything else is this model's own JSON)
FOREIGN_SUFFIXES = (".yaml", ".yml", ".ini")

#: Ramulator 2.1's DDR5 timing list order (``python/ramulator/dram/ddr5.py``, ``timing_params``)
RAMULATOR_TIMING_ORDER = ("rate", "nBL", "nCL", "nRCD", "nRP", "nRAS", "nRC", "nWR", "nRTP",
                          "nCWL", "nPPD", "nCCDS", "nCCDL", "nCCDS_WR", "nCCDL_WR", "nRRDS",
                          "nRRDL", "nWTRS", "nWTRL", "nFAW", "nRFC", "nREFI", "nCS", "tCK_ps")

#: Ramulator implementation names -> this model's values
_SCHEDULERS = {"FRFCFS": "FRFCFS", "FRFCFS-RowHit": "FRFCFS_RowHit",
               "FRFCFS_RowHit": "FRFCFS_RowHit", "FRFCFSRowHit": "FRFCFS_RowHit",
               "FRFCFS_PriorHit": "FRFCFS_RowHit", "FCFS": "FCFS"}
_ROW_POLICIES = {"Open": "open", "OpenRowPolicy": "open", "OpenRow": "open"}
_REFRESH = {"AllBank": True, "AllBankRefresh": True, "NoRefresh": False}
#: controller plugins that only record or count (they change no timing)
_OUTPUT_PLUGINS = ("CommandCounter", "CmdTraceRecorder", "BinTraceRecorder",
                   "LiveTraceStreamer", "IssuedCommandValidationHook", "TraceRecorder")

#: DRAMsim3 [timing] keys -> this model's timing parameters (both in clock cycles)
_DRAMSIM3_TIMINGS = {"CL": "nCL", "CWL": "nCWL", "tRCD": "nRCD", "tRP": "nRP", "tRAS": "nRAS",
                     "tRC": "nRC", "tWR": "nWR", "tRTP": "nRTP", "tRRD_S": "nRRDS",
                     "tRRD_L": "nRRDL", "tWTR_S": "nWTRS", "tWTR_L": "nWTRL", "tFAW": "nFAW",
                     "tRFC": "nRFC", "tREFI": "nREFI", "tCCD_S": "nCCDS", "tCCD_L": "nCCDL",
                     "tCCD_S_WR": "nCCDS_WR", "tCCD_L_WR": "nCCDL_WR", "tPPD": "nPPD",
                     "tRTRS": "nCS", "tRFCsb": "nRFCsb", "tREFSBRD": "nREFSBRD"}
#: DRAMsim3 [timing] keys of things this model does not simulate (read, named in a note)
_DRAMSIM3_UNUSED_TIMINGS = ("tRPRE", "tWPRE", "tCKE", "tCKESR", "tXS", "tXP", "tRFC2", "tRFC4",
                            "tWR2", "tRFCb", "tREFIb", "tRREFD", "tRCDRD", "tRCDWR", "tXPDLL",
                            "tXSDLL", "tCPDED", "tPD", "tCKSRE", "tCKSRX")
_DRAMSIM3_FIELDS = {"ch": "Ch", "ra": "Ra", "ro": "Ro", "co": "Co"}


@dataclass(frozen=True)
class ForeignConfig:
    """What :func:`read_config_file` read: the configuration, the format it came in and the
    notes on settings that were read but do not change this model's results."""

    config: DRAMConfig
    source: str                 # "ramulator2.1", "ramulator2.0" or "dramsim3"
    notes: tuple = ()


def read_config_file(path: str | Path) -> ForeignConfig:
    """The :class:`DRAMConfig` of a Ramulator 2 YAML file (``.yaml``/``.yml``) or a DRAMsim3
    ``.ini`` file (module docstring). Raises :class:`UserError` naming the file and field."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in FOREIGN_SUFFIXES:
        raise UserError(f"{path}: expected a Ramulator 2 .yaml/.yml or a DRAMsim3 .ini file")
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise UserError(f"{path}: no such config file") from None
    except UnicodeDecodeError:
        raise UserError(f"{path}: not a text file") from None
    if suffix == ".ini":
        return _from_dramsim3(text, str(path))
    return _from_ramulator(text, str(path))


# ---------------------------------------------------------------------------------- helpers
class _Reader:
    """Field access with the file and the field path in every error."""

    def __init__(self, where: str):
        self.where = where
        self.notes: list[str] = []

    def fail(self, field: str, what: str):
        raise UserError(f"{self.where}: {field}: {what}")

    def get(self, node, key: str, field: str, required: bool = True, default=None):
        if not isinstance(node, dict):
            self.fail(field, f"expected a mapping, got {type(node).__name__}")
        if key not in node:
            if required:
                self.fail(f"{field}.{key}" if field else key, "missing")
            return default
        return node[key]

    def integer(self, value, field: str, low: int = 0) -> int:
        if isinstance(value, bool):
            self.fail(field, f"expected an integer, got {value!r}")
        try:
            out = int(value)
        except (TypeError, ValueError):
            self.fail(field, f"expected an integer, got {value!r}")
        if isinstance(value, float) and out != value:
            self.fail(field, f"expected an integer, got {value!r}")
        if out < low:
            self.fail(field, f"expected an integer >= {low}, got {out}")
        return out

    def impl(self, node, field: str) -> str:
        name = self.get(node, "impl", field)
        if not isinstance(name, str):
            self.fail(f"{field}.impl", f"expected a name, got {name!r}")
        return name


def _org_preset(r: _Reader, dq: int, bankgroups: int, banks: int, rows: int, columns: int,
                field: str) -> str:
    for name, o in ddr5.ORG_PRESETS.items():
        if (o["dq"], o["bankgroups"], o["banks"], o["rows"], o["columns"]) == (
                dq, bankgroups, banks, rows, columns):
            return name
    have = "; ".join(f"{n} (x{o['dq']}, {o['bankgroups']} BG x {o['banks']} banks, "
                     f"{o['rows']} rows, {o['columns']} columns)"
                     for n, o in ddr5.ORG_PRESETS.items())
    r.fail(field, f"x{dq}, {bankgroups} bank groups x {banks} banks, {rows} rows, {columns} "
                  f"columns is no DDR5 organization this model has; it has: {have}")


def _timing_config(r: _Reader, given: dict, org: str, field: str) -> tuple[str, tuple]:
    """(timing preset, overrides) for the timings ``given`` (``n*`` in cycles, plus
    ``tCK_ps`` and optionally ``rate``): the preset at that clock with the fewest
    differences; the differences become overrides."""
    tck = given["tCK_ps"]
    rate = given.get("rate")
    candidates = [n for n, t in ddr5.TIMING_PRESETS.items()
                  if abs(t["tCK_ps"] - tck) <= 1 and (rate is None or t["rate"] == rate)]
    if not candidates:
        clocks = ", ".join(f"{n} ({t['tCK_ps']} ps)" for n, t in ddr5.TIMING_PRESETS.items())
        r.fail(field, f"a clock of {tck} ps" + (f" at {rate} MT/s" if rate else "")
               + f" matches no DDR5 timing preset of this model: {clocks}")
    unknown = sorted(set(given) - set(ddr5.TIMING_PARAMS) - {"rate", "tCK_ps"})
    if unknown:
        r.fail(field, f"timing parameter(s) {', '.join(unknown)} are not modeled; "
                      f"modeled: {', '.join(ddr5.TIMING_PARAMS)}")
    best = None
    for name in candidates:
        t = dict(ddr5.TIMING_PRESETS[name])
        t.update(ddr5.derived_timings(t, ddr5.ORG_PRESETS[org]))
        diff = tuple((k, int(given[k])) for k in ddr5.TIMING_PARAMS
                     if k in given and int(given[k]) != t[k])
        if best is None or len(diff) < len(best[1]):
            best = (name, diff)
    return best


def _config(r: _Reader, fields: dict) -> DRAMConfig:
    try:
        cfg = DRAMConfig(**fields)
        cfg.validate()
    except (TypeError, ValueError) as exc:
        raise UserError(f"{r.where}: {exc}") from None
    return cfg


# ------------------------------------------------------------------------------- Ramulator
def _from_ramulator(text: str, where: str) -> ForeignConfig:
    import yaml

    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark is not None else ""
        raise UserError(f"{where}:{line} not valid YAML "
                        f"({getattr(exc, 'problem', None) or exc})") from None
    r = _Reader(where)
    if not isinstance(doc, dict):
        r.fail("top level", "expected a Ramulator 2 configuration (a mapping with "
                            "'memory_system' or 'MemorySystem')")
    if "memory_system" in doc:
        cfg = _ramulator21(r, doc)
        return ForeignConfig(cfg, "ramulator2.1", tuple(r.notes))
    if "MemorySystem" in doc:
        cfg = _ramulator20(r, doc)
        return ForeignConfig(cfg, "ramulator2.0", tuple(r.notes))
    r.fail("top level", f"expected 'memory_system' (Ramulator 2.1 export) or 'MemorySystem' "
                        f"(Ramulator 2.0); found {', '.join(map(str, doc)) or 'nothing'}")


def _frontend_note(r: _Reader, doc: dict, key: str):
    if key in doc and isinstance(doc[key], dict):
        r.notes.append(f"{key} ({doc[key].get('impl', '?')}): not read; the replayed trace is "
                       f"the frontend")


def _controller_parts(r: _Reader, ctrl: dict, base: str, keys: dict) -> dict:
    """scheduler, row policy and refresh of one Ramulator controller section."""
    out = {}
    sched = r.impl(r.get(ctrl, keys["scheduler"], base), f"{base}.{keys['scheduler']}")
    if sched not in _SCHEDULERS:
        r.fail(f"{base}.{keys['scheduler']}.impl", f"scheduler {sched!r} is not modeled; "
               f"modeled: {', '.join(sorted(set(_SCHEDULERS)))}")
    out["scheduler"] = _SCHEDULERS[sched]
    rp_node = r.get(ctrl, keys["row_policy"], base)
    rp = r.impl(rp_node, f"{base}.{keys['row_policy']}")
    if rp not in _ROW_POLICIES:
        r.fail(f"{base}.{keys['row_policy']}.impl",
               f"row policy {rp!r} is not modeled (Ramulator's closed policies close a row "
               f"after a number of accesses; this model has 'open' and 'closed' = close-page "
               f"when no other buffered request hits the row: DRAMConfig.row_policy)")
    out["row_policy"] = _ROW_POLICIES[rp]
    ref = r.impl(r.get(ctrl, keys["refresh"], base), f"{base}.{keys['refresh']}")
    if ref not in _REFRESH:
        r.fail(f"{base}.{keys['refresh']}.impl",
               f"refresh manager {ref!r} is not modeled; modeled: AllBank (all-bank REFab "
               f"every nREFI), NoRefresh (same-bank refresh: DRAMConfig.same_bank_refresh)")
    out["refresh"] = _REFRESH[ref]
    plugins = ctrl.get(keys["plugins"]) or []
    if not isinstance(plugins, list):
        plugins = [plugins]
    for i, p in enumerate(plugins):
        name = r.impl(p, f"{base}.{keys['plugins']}[{i}]") if isinstance(p, dict) else str(p)
        if name not in _OUTPUT_PLUGINS:
            r.fail(f"{base}.{keys['plugins']}[{i}]",
                   f"controller plugin {name!r} changes the controller and is not modeled")
        r.notes.append(f"{base}.{keys['plugins']}[{i}] ({name}): an output plugin, not read")
    return out


def _memory_system(r: _Reader, doc: dict, frontend: str, key: str) -> dict:
    """The memory-system section ``key`` of a Ramulator file (a GenericDRAM), noting that
    the ``frontend`` section is not read."""
    _frontend_note(r, doc, frontend)
    ms = r.get(doc, key, "")
    impl = r.impl(ms, key)
    if impl != "GenericDRAM":
        r.fail(f"{key}.impl", f"{impl!r}: expected GenericDRAM")
    return ms


def _ddr5(r: _Reader, dram, field: str) -> None:
    std = r.impl(dram, field)
    if std != "DDR5":
        r.fail(f"{field}.impl", f"{std!r}: this DRAM model is DDR5 (JESD79-5) only")


def _check_mapper(r: _Reader, name: str, field: str) -> None:
    try:
        parse_mapping(name)
    except ValueError:
        r.fail(field, f"address mapper {name!r} is not modeled; modeled: any order of Ro, Ba, "
                      f"Ra, Co, Ch (e.g. RoBaRaCoCh)")


def _ramulator21(r: _Reader, doc: dict) -> DRAMConfig:
    ms = _memory_system(r, doc, "frontend", "memory_system")
    ctrls = r.get(ms, "controllers", "memory_system")
    if not isinstance(ctrls, list) or not ctrls:
        r.fail("memory_system.controllers", "expected a list of one controller per channel")
    first = ctrls[0]
    for i, c in enumerate(ctrls[1:], start=1):
        if c != first:
            r.fail(f"memory_system.controllers[{i}]", "differs from controllers[0]; this "
                   "model gives every channel the same configuration")
    base = "memory_system.controllers[0]"
    cm = r.get(ms, "channel_mapper", "memory_system", required=len(ctrls) > 1)
    if cm is not None:
        cm_impl = r.impl(cm, "memory_system.channel_mapper")
        if cm_impl != "CacheLineInterleave":
            r.fail("memory_system.channel_mapper.impl", f"{cm_impl!r}: only "
                   "CacheLineInterleave is modeled (the channel bits right above the offset)")
        bits = r.integer(cm.get("interleave_bits", 0), "memory_system.channel_mapper."
                         "interleave_bits")
        if bits != 0:
            r.fail("memory_system.channel_mapper.interleave_bits", f"{bits}: only 0 is "
                   "modeled (channel = the line address modulo the channel count)")
    ctrl_impl = r.impl(first, base)
    if ctrl_impl not in ("GenericDDR", "Generic"):
        r.fail(f"{base}.impl", f"controller {ctrl_impl!r} is not modeled; expected GenericDDR")
    fields: dict = {"channels": len(ctrls)}
    fields.update(_controller_parts(r, first, base, {
        "scheduler": "scheduler", "row_policy": "row_policy", "refresh": "refresh_manager",
        "plugins": "controller_plugins"}))
    for ours, theirs in (("read_queue_depth", "read_buffer_size"),
                         ("write_queue_depth", "write_buffer_size"),
                         ("priority_queue_depth", "priority_buffer_size")):
        if theirs in first:
            fields[ours] = r.integer(first[theirs], f"{base}.{theirs}", 1)
    for key in ("wr_low_watermark", "wr_high_watermark"):
        if key in first:
            try:
                fields[key] = float(first[key])
            except (TypeError, ValueError):
                r.fail(f"{base}.{key}", f"expected a number, got {first[key]!r}")
    am = r.impl(r.get(first, "addr_mapper", base), f"{base}.addr_mapper")
    fields["mapping"] = _mapping_with_channel_last(r, am, f"{base}.addr_mapper.impl")
    dram = r.get(first, "dram", base)
    _ddr5(r, dram, f"{base}.dram")
    org = r.get(dram, "org", f"{base}.dram")
    dq = r.integer(r.get(org, "dq", f"{base}.dram.org"), f"{base}.dram.org.dq", 1)
    count = r.get(org, "count", f"{base}.dram.org")
    if not isinstance(count, list) or len(count) != 6:
        r.fail(f"{base}.dram.org.count", "expected [channel, rank, bankgroup, bank, row, "
                                         "column] (six counts)")
    ch, ranks, bg, banks, rows, cols = (r.integer(v, f"{base}.dram.org.count[{i}]", 1)
                                        for i, v in enumerate(count))
    if ch != 1:
        r.fail(f"{base}.dram.org.count[0]", f"{ch}: a Ramulator 2.1 controller has one "
                                            "channel (channels are the controller list)")
    width = dram.get("channel_width", ddr5.CHANNEL_WIDTH_BITS)
    if r.integer(width, f"{base}.dram.channel_width", 1) != ddr5.CHANNEL_WIDTH_BITS:
        r.fail(f"{base}.dram.channel_width", f"{width}: this model's DDR5 channel is a "
               f"{ddr5.CHANNEL_WIDTH_BITS}-bit sub-channel")
    fields["org"] = _org_preset(r, dq, bg, banks, rows, cols, f"{base}.dram.org")
    fields["ranks"] = ranks
    timing = r.get(dram, "timing", f"{base}.dram")
    if not isinstance(timing, list) or len(timing) != len(RAMULATOR_TIMING_ORDER):
        r.fail(f"{base}.dram.timing", f"expected {len(RAMULATOR_TIMING_ORDER)} values in "
               f"the order {', '.join(RAMULATOR_TIMING_ORDER)} (Ramulator 2.1's DDR5)")
    given = {k: r.integer(v, f"{base}.dram.timing[{i}] ({k})", 0)
             for i, (k, v) in enumerate(zip(RAMULATOR_TIMING_ORDER, timing))}
    fields["standard"], fields["timing_overrides"] = _timing_config(
        r, given, fields["org"], f"{base}.dram.timing")
    return _config(r, fields)


def _mapping_with_channel_last(r: _Reader, name: str, field: str) -> str:
    """A Ramulator 2.1 controller's mapper below a CacheLineInterleave(0) channel mapper: its
    own fields (the channel field is empty in a one-channel controller), then the channel."""
    _check_mapper(r, name, field)
    tokens = [name[i:i + 2] for i in range(0, len(name), 2)]
    return "".join(t for t in tokens if t != "Ch") + "Ch"


def _ramulator20(r: _Reader, doc: dict) -> DRAMConfig:
    ms = _memory_system(r, doc, "Frontend", "MemorySystem")
    dram = r.get(ms, "DRAM", "MemorySystem")
    _ddr5(r, dram, "MemorySystem.DRAM")
    org = dict(r.get(dram, "org", "MemorySystem.DRAM"))
    preset = r.get(org, "preset", "MemorySystem.DRAM.org")
    ours = str(preset).removeprefix("DDR5_")
    if ours not in ddr5.ORG_PRESETS:
        r.fail("MemorySystem.DRAM.org.preset", f"{preset!r} is not modeled; modeled: "
               + ", ".join(f"DDR5_{n}" for n in ddr5.ORG_PRESETS))
    o = ddr5.ORG_PRESETS[ours]
    fields: dict = {"org": ours,
                    "channels": r.integer(org.pop("channel", 1), "MemorySystem.DRAM.org."
                                          "channel", 1),
                    "ranks": r.integer(org.pop("rank", 1), "MemorySystem.DRAM.org.rank", 1)}
    org.pop("preset")
    level_keys = {"bankgroup": "bankgroups", "bank": "banks", "row": "rows", "column": "columns",
                  "dq": "dq"}
    for key, value in org.items():
        if key not in level_keys:
            r.fail(f"MemorySystem.DRAM.org.{key}", "not an organization field this model has")
        if r.integer(value, f"MemorySystem.DRAM.org.{key}", 1) != o[level_keys[key]]:
            r.fail(f"MemorySystem.DRAM.org.{key}", f"{value} differs from the preset "
                   f"{preset}'s {o[level_keys[key]]}; choose the organization preset instead")
    timing = dict(r.get(dram, "timing", "MemorySystem.DRAM"))
    tpreset = r.get(timing, "preset", "MemorySystem.DRAM.timing")
    if tpreset not in ddr5.TIMING_PRESETS:
        r.fail("MemorySystem.DRAM.timing.preset", f"{tpreset!r} is not modeled; modeled: "
               + ", ".join(ddr5.TIMING_PRESETS))
    timing.pop("preset")
    fields["standard"] = tpreset
    overrides = []
    for key, value in timing.items():
        if key not in ddr5.TIMING_PARAMS:
            r.fail(f"MemorySystem.DRAM.timing.{key}", f"not a timing parameter this model "
                   f"has; modeled: {', '.join(ddr5.TIMING_PARAMS)}")
        overrides.append((key, r.integer(value, f"MemorySystem.DRAM.timing.{key}", 0)))
    fields["timing_overrides"] = tuple(overrides)
    ctrl = r.get(ms, "Controller", "MemorySystem")
    ctrl_impl = r.impl(ctrl, "MemorySystem.Controller")
    if ctrl_impl not in ("Generic", "GenericDDR"):
        r.fail("MemorySystem.Controller.impl", f"controller {ctrl_impl!r} is not modeled; "
                                               f"expected Generic")
    fields.update(_controller_parts(r, ctrl, "MemorySystem.Controller", {
        "scheduler": "Scheduler", "row_policy": "RowPolicy", "refresh": "RefreshManager",
        "plugins": "plugins"}))
    am = r.impl(r.get(ms, "AddrMapper", "MemorySystem"), "MemorySystem.AddrMapper")
    _check_mapper(r, am, "MemorySystem.AddrMapper.impl")
    fields["mapping"] = am
    return _config(r, fields)


# -------------------------------------------------------------------------------- DRAMsim3
def _from_dramsim3(text: str, where: str) -> ForeignConfig:
    cp = configparser.ConfigParser(inline_comment_prefixes=(";", "#"))
    cp.optionxform = str            # DRAMsim3's keys are case-sensitive (tRRD_S, CL)
    try:
        cp.read_string(text, source=where)
    except configparser.Error as exc:
        raise UserError(f"{where}: not a valid .ini file "
                        f"({str(exc).splitlines()[0]})") from None
    r = _Reader(where)
    for section in ("dram_structure", "timing", "system"):
        if not cp.has_section(section):
            r.fail(f"[{section}]", "missing (a DRAMsim3 configuration has [dram_structure], "
                                   "[timing] and [system])")
    ds, tm, sy = cp["dram_structure"], cp["timing"], cp["system"]

    def num(sec, key, cast=int, required=True, low=0):
        name = f"[{sec.name}] {key}"
        if key not in sec:
            if required:
                r.fail(name, "missing")
            return None
        raw = sec[key]
        try:
            value = cast(raw)
        except ValueError:
            r.fail(name, f"expected {'an integer' if cast is int else 'a number'}, got {raw!r}")
        if value < low:
            r.fail(name, f"expected at least {low}, got {raw}")
        return value

    protocol = ds.get("protocol", "").strip()
    if protocol.upper() != "DDR5":
        r.fail("[dram_structure] protocol", f"{protocol or 'missing'}: this DRAM model is "
               f"DDR5 (JESD79-5) only")
    dq = num(ds, "device_width", low=1)
    org = _org_preset(r, dq, num(ds, "bankgroups", low=1), num(ds, "banks_per_group", low=1),
                      num(ds, "rows", low=1), num(ds, "columns", low=1), "[dram_structure]")
    bl = num(ds, "BL", required=False)
    given: dict = {}
    if bl is not None:
        if bl != ddr5.BURST_LENGTH:
            r.fail("[dram_structure] BL", f"{bl}: this model's DDR5 bursts are BL16")
        given["nBL"] = bl // 2      # double data rate: BL16 takes 8 clock cycles
    tck_ns = num(tm, "tCK", float, low=1e-6)
    given["tCK_ps"] = round(tck_ns * 1000)
    al = num(tm, "AL", required=False)
    if al:
        r.fail("[timing] AL", f"{al}: additive latency is not modeled (DDR5 has none)")
    for theirs, ours in _DRAMSIM3_TIMINGS.items():
        v = num(tm, theirs, required=False)
        if v is not None:
            given[ours] = v
    unused = [k for k in tm if k in _DRAMSIM3_UNUSED_TIMINGS]
    if unused:
        r.notes.append(f"[timing] {', '.join(unused)}: read, not modeled (power-down, "
                       f"self-refresh, fine-granularity refresh and preamble timings)")
    unknown = [k for k in tm if k not in _DRAMSIM3_TIMINGS and k not in _DRAMSIM3_UNUSED_TIMINGS
               and k not in ("tCK", "AL")]
    if unknown:
        r.fail(f"[timing] {unknown[0]}", f"not a DRAMsim3 timing this model reads; it reads: "
               f"tCK, AL, {', '.join(_DRAMSIM3_TIMINGS)}")
    standard, overrides = _timing_config(r, given, org, "[timing]")
    channels = num(sy, "channels", low=1)
    bus = num(sy, "bus_width", low=1)
    if bus != ddr5.CHANNEL_WIDTH_BITS:
        r.fail("[system] bus_width", f"{bus}: a DDR5 channel is a {ddr5.CHANNEL_WIDTH_BITS}-bit "
               f"sub-channel (a 64-bit DIMM is two channels)")
    o = ddr5.ORG_PRESETS[org]
    rank_MB = (bus // dq) * o["density_Mb"] // 8
    size_MB = num(sy, "channel_size", low=1)
    if size_MB % rank_MB:
        r.fail("[system] channel_size", f"{size_MB} MB is not a whole number of {rank_MB} MB "
               f"ranks ({bus // dq} x{dq} devices of {o['density_Mb']} Mb)")
    fields: dict = {"standard": standard, "org": org, "timing_overrides": overrides,
                    "channels": channels, "ranks": size_MB // rank_MB}
    fields["mapping"] = _dramsim3_mapping(r, sy.get("address_mapping", "rochrababgco"))
    policy = sy.get("row_buf_policy", "OPEN_PAGE").strip().upper()
    pol = {"OPEN_PAGE": "open", "CLOSE_PAGE": "closed"}
    if policy not in pol:
        r.fail("[system] row_buf_policy", f"{policy}: expected OPEN_PAGE or CLOSE_PAGE")
    fields["row_policy"] = pol[policy]
    refresh = sy.get("refresh_policy", "RANK_LEVEL_SIMULTANEOUS").strip().upper()
    if refresh != "RANK_LEVEL_SIMULTANEOUS":
        r.fail("[system] refresh_policy", f"{refresh} is not modeled: this model refreshes "
               f"every rank of a channel at once (REFab every nREFI, as Ramulator's AllBank); "
               f"set RANK_LEVEL_SIMULTANEOUS")
    if sy.get("enable_self_refresh", "false").strip().lower() in ("true", "1", "yes"):
        r.fail("[system] enable_self_refresh", "self-refresh is not modeled by this reader")
    depth = num(sy, "trans_queue_size", required=False, low=1)
    if depth is not None:
        fields["read_queue_depth"] = fields["write_queue_depth"] = depth
        r.notes.append(f"[system] trans_queue_size = {depth}: read as the read and the write "
                       f"buffer depth of each channel")
    for key in ("queue_structure", "cmd_queue_size"):
        if key in sy:
            r.notes.append(f"[system] {key}: not modeled (the controller's buffers are "
                           f"Ramulator 2.1's read/write/active buffers)")
    for section in ("power", "other", "thermal"):
        if cp.has_section(section):
            r.notes.append(f"[{section}]: not read (DRAM currents: --memspec)")
    return ForeignConfig(_config(r, fields), "dramsim3", tuple(r.notes))


def _dramsim3_mapping(r: _Reader, text: str) -> str:
    """DRAMsim3's ``address_mapping`` (two letters per field, most significant first, bank
    group ``bg`` and bank ``ba`` separate) as this model's mapping string (``Ba`` = bank above
    bank group, so ``ba`` must sit right above ``bg``)."""
    text = text.strip().lower()
    tokens = [text[i:i + 2] for i in range(0, len(text), 2)]
    if sorted(tokens) != sorted(["ch", "ra", "bg", "ba", "ro", "co"]):
        r.fail("[system] address_mapping", f"{text!r}: expected each of ch, ra, bg, ba, ro, co "
                                           f"once, most significant first")
    i = tokens.index("ba")
    if i + 1 >= len(tokens) or tokens[i + 1] != "bg":
        r.fail("[system] address_mapping", f"{text!r}: this model's bank field has the bank "
               f"right above the bank group ('babg'); other splits are not modeled")
    out = []
    for t in tokens:
        if t == "ba":
            out.append("Ba")
        elif t != "bg":
            out.append(_DRAMSIM3_FIELDS[t])
    return "".join(out)

