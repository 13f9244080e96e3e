"""Configuration of the DRAM model: a frozen dataclass, and its resolution into integer arrays.

``DRAMConfig`` names presets; :meth:`DRAMConfig.resolve` validates it and returns
:data:`Params`, a numpy record of integer scalars and one dense table that the numba kernels
take. Change a config with ``dataclasses.replace``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
import numpy as np

from cosmos_common import UserError
from dram.standards import MAPPINGS, ROW_POLICIES, SCHEDULERS, ddr5

# Field ids of the address mapper (kernel constants).
F_CH, F_RA, F_BG, F_BA, F_RO, F_CO = 0, 1, 2, 3, 4, 5
_TOKENS = {"Ch": (F_CH,), "Ra": (F_RA,), "Ba": (F_BG, F_BA), "Ro": (F_RO,), "Co": (F_CO,)}

SCHED_ID = {"FRFCFS": 0, "FRFCFS_RowHit": 1, "FCFS": 2}
ROWPOL_ID = {"open": 0, "closed": 1}


def _h(text):
    return field(metadata={"help": text})


@dataclass(frozen=True)
class DRAMConfig:
    """A DDR5 memory system: presets, geometry and controller policy.

    Defaults are the configuration of the Ramulator 2.1 reference runs the model is validated
    against (docs/dram.md, "Fidelity"; their results are in tests/data/dram/results_setA.csv):
    DDR5-4800AN, 16 Gb x4 devices,
    4 channels (32-bit sub-channels) x 2 ranks, RoBaRaCoCh, FR-FCFS, open page, all-bank
    refresh, 32-entry read and write buffers, write drain between 80 % and 20 %.
    """

    standard: str = field(default="DDR5_4800AN", metadata={
        "help": "timing preset (JEDEC speed bin), e.g. DDR5_4800AN; see dram.list_presets()"})
    org: str = field(default="16Gb_x4", metadata={
        "help": "device organization preset <density>_<width>, e.g. 16Gb_x4"})
    channels: int = field(default=4, metadata={
        "help": "number of channels (DDR5 32-bit sub-channels), 1 to 4096"})
    ranks: int = field(default=2, metadata={"help": "ranks per channel, any positive integer"})
    mapping: str = field(default="RoBaRaCoCh", metadata={
        "help": "address mapping, fields MSB first (Ro row, Ba bank+bank group, Ra rank, "
                "Co column, Ch channel); any permutation of the five"})
    refresh: bool = field(default=True, metadata={
        "help": "all-bank refresh (REFab per rank every nREFI for nRFC); False = no refresh"})
    same_bank_refresh: bool = field(default=False, metadata={
        "help": "with refresh: same-bank refresh instead (REFsb per rank to bank index 0, 1, "
                "... in turn, every bank index once per nREFI2 = tREFI2 1.95 us; JESD79-5 "
                "fine-granularity refresh)"})
    powerdown_idle_ns: float | None = field(default=None, metadata={
        "help": "power a rank down (precharge power-down, PREab first if a row is open) once "
                "it has had no request and no command for this long; None or 0 = never "
                "(JESD79-5 PDE/PDX: tPD, tXP)"})
    selfrefresh_idle_ns: float | None = field(default=None, metadata={
        "help": "put a rank in self refresh once it has had no request for this long (no "
                "refresh is issued to it there); None or 0 = never (JESD79-5 SRE/SRX: tXS)"})
    read_queue_depth: int = field(default=32, metadata={
        "help": "read buffer entries per channel (Ramulator 2.1 default 32)"})
    write_queue_depth: int = field(default=32, metadata={
        "help": "write buffer entries per channel (Ramulator 2.1 default 32)"})
    scheduler: str = field(default="FRFCFS", metadata={
        "help": "FRFCFS (Ramulator 2.1: ready first, then oldest), FRFCFS_RowHit (a "
                "precharge may not overtake an older pending row hit), FCFS (oldest only)"})
    row_policy: str = field(default="open", metadata={
        "help": "open (rows stay open until a conflict or refresh) or closed (auto-precharge "
                "when no other buffered request hits the same row)"})
    wr_high_watermark: float = field(default=0.8, metadata={
        "help": "enter write mode when write buffer > this fraction of its depth"})
    wr_low_watermark: float = field(default=0.2, metadata={
        "help": "leave write mode when write buffer < this fraction and reads wait"})
    priority_queue_depth: int = field(default=1568, metadata={
        "help": "priority (refresh) buffer entries per channel (Ramulator 2.1 default 1568)"})
    timing_overrides: tuple = field(default=(), metadata={
        "help": "((name, cycles), ...) overriding timing parameters, e.g. (('nCL', 36),)"})

    # ------------------------------------------------------------------ derived quantities
    @property
    def timing(self) -> dict:
        """Resolved timing parameters (nCK, plus tCK_ps and rate) after overrides."""
        self.validate()
        org = ddr5.ORG_PRESETS[self.org]
        t = dict(ddr5.TIMING_PRESETS[self.standard])
        t.update(ddr5.derived_timings(t, org))
        for name, val in self.timing_overrides:
            t[name] = int(val)
        return t

    @property
    def lines_per_row(self) -> int:
        """64-B lines per row of one rank (columns / BL16)."""
        return ddr5.ORG_PRESETS[self.org]["columns"] // ddr5.BURST_LENGTH

    @property
    def capacity_bytes(self) -> int:
        """Bytes addressed by the mapping: channels x ranks x banks x rows x row size."""
        o = ddr5.ORG_PRESETS[self.org]
        return (self.channels * self.ranks * o["bankgroups"] * o["banks"] * o["rows"]
                * self.lines_per_row * ddr5.LINE_BYTES)

    @property
    def tCK_ps(self) -> int:
        return int(ddr5.TIMING_PRESETS[self.standard]["tCK_ps"])

    @property
    def peak_bandwidth_GBps(self) -> float:
        """Data-bus limit: one 64-B burst per nBL cycles per channel."""
        t = self.timing
        return self.channels * ddr5.LINE_BYTES / (t["nBL"] * t["tCK_ps"] * 1e-12) / 1e9

    def help(self) -> dict:
        """Field name -> help text."""
        return {f.name: f.metadata.get("help", "") for f in dataclasses.fields(self)}

    # ------------------------------------------------------------------ validation
    def validate(self) -> None:
        """Raise ``ValueError`` naming the field and the valid choices for any bad value."""
        def choices(fieldname, value, valid):
            if value not in valid:
                raise ValueError(f"DRAMConfig.{fieldname}={value!r} is unknown; valid: "
                                 f"{', '.join(map(str, valid))}")
        choices("standard", self.standard, list(ddr5.TIMING_PRESETS))
        choices("org", self.org, list(ddr5.ORG_PRESETS))
        choices("scheduler", self.scheduler, list(SCHEDULERS))
        choices("row_policy", self.row_policy, list(ROW_POLICIES))
        parse_mapping(self.mapping)
        for name in ("channels", "ranks", "read_queue_depth", "write_queue_depth",
                     "priority_queue_depth"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"DRAMConfig.{name}={v!r}: expected a positive integer")
            if name.endswith("queue_depth") and v > MAX_QUEUE_DEPTH:
                raise ValueError(f"DRAMConfig.{name}={v}: at most {MAX_QUEUE_DEPTH} entries "
                                 f"(the controller state grows with the depth)")
        if self.channels > 4096:
            raise ValueError(f"DRAMConfig.channels={self.channels}: at most 4096 channels")
        if self.ranks > 16:
            raise ValueError(f"DRAMConfig.ranks={self.ranks}: at most 16 ranks per channel")
        if not isinstance(self.refresh, (bool, np.bool_)):
            raise ValueError(f"DRAMConfig.refresh={self.refresh!r}: expected True or False")
        if not isinstance(self.same_bank_refresh, (bool, np.bool_)):
            raise ValueError(f"DRAMConfig.same_bank_refresh={self.same_bank_refresh!r}: "
                             f"expected True or False")
        for name in ("powerdown_idle_ns", "selfrefresh_idle_ns"):
            v = getattr(self, name)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) \
                    or not math.isfinite(v) or v < 0:
                raise UserError(f"DRAMConfig.{name}={v!r}: expected a non-negative number of "
                                f"nanoseconds (None or 0: off)")
            if v > 1e15:
                raise UserError(f"DRAMConfig.{name}={v!r}: at most 1e15 ns")
        if not (0.0 <= self.wr_low_watermark <= self.wr_high_watermark <= 1.0):
            raise ValueError(
                f"DRAMConfig watermarks: expected 0 <= wr_low_watermark "
                f"({self.wr_low_watermark}) <= wr_high_watermark ({self.wr_high_watermark}) <= 1")
        for item in self.timing_overrides:
            if not (isinstance(item, tuple) and len(item) == 2):
                raise ValueError(f"DRAMConfig.timing_overrides: expected (name, cycles) pairs, "
                                 f"got {item!r}")
            name, val = item
            if name not in ddr5.TIMING_PARAMS:
                raise ValueError(f"DRAMConfig.timing_overrides: unknown timing parameter "
                                 f"{name!r}; valid: {', '.join(ddr5.TIMING_PARAMS)}")
            if isinstance(val, bool) or not isinstance(val, (int, np.integer)) or val < 0:
                raise ValueError(f"DRAMConfig.timing_overrides: {name}={val!r}, expected a "
                                 f"non-negative integer number of cycles")
        t = dict(ddr5.TIMING_PRESETS[self.standard])
        t.update(ddr5.derived_timings(t, ddr5.ORG_PRESETS[self.org]))
        t.update({k: int(v) for k, v in self.timing_overrides})
        for name in ddr5.TIMING_PARAMS:
            low = TIMING_MIN.get(name, 1)
            if t[name] < low:
                raise UserError(f"DRAMConfig.timing_overrides: {name}={t[name]}, expected at "
                                f"least {low} cycle{'s' if low != 1 else ''}"
                                + (f" ({TIMING_MIN_WHY[name]})" if name in TIMING_MIN_WHY
                                   else ""))
        if t["nRC"] < t["nRAS"] + t["nRP"]:
            raise UserError(f"DRAMConfig.timing_overrides: nRC={t['nRC']} is below nRAS + nRP "
                            f"= {t['nRAS']} + {t['nRP']} (JESD79-5: tRC = tRAS + tRP, a row "
                            f"must be open tRAS and precharged tRP before the next ACT)")
        if t["nREFI"] <= t["nRFC"]:
            raise UserError(f"DRAMConfig: impossible timings: nRFC={t['nRFC']} >= "
                            f"nREFI={t['nREFI']} (a refresh must end before the next one)")
        if self.same_bank_refresh:
            per = t["nREFI2"] // ddr5.ORG_PRESETS[self.org]["banks"]
            if per <= t["nRFCsb"]:
                raise UserError(f"DRAMConfig: impossible timings for same-bank refresh: "
                                f"nRFCsb={t['nRFCsb']} >= nREFI2 / banks = {per} (a REFsb "
                                f"must end before the next one)")

    def resolve(self) -> "Params":
        """Validate and turn this config into the kernels' :class:`Params`."""
        self.validate()
        return _resolve(self)


#: Smallest value of a timing parameter (nCK) where it is not 1. Every timing is a duration
#: the DRAM needs (JESD79-5 gives each a positive minimum), so by default it is at least one
#: cycle: a zero nCL, nRCD, nRP, nRAS, nBL, ... would let data return, a row open or a bank
#: close in no time. These four may be 0, because they only add to a spacing that other,
#: positive timings already make and a what-if study may want them gone (JESD79-5 has
#: tPPD = 2 nCK, tWTR_S/L >= 2.5 / 10 ns, and Ramulator 2.1's rank-switch gap nCS = 2).
TIMING_MIN = {
    "nPPD": 0,      # PRE to PRE in the same rank: the command bus already spaces them a cycle
    "nWTRS": 0,     # write-to-read turnaround, added to nCWL + nBL
    "nWTRL": 0,
    "nCS": 0,       # rank-switch gap on the shared data bus, added to nBL (ideal bus: 0)
}
TIMING_MIN_WHY = {
    "nCL": "a read returns its data nCL cycles after the RD command",
    "nBL": "a burst occupies the data bus nBL cycles",
    "nREFI": "one all-bank refresh per rank every nREFI cycles",
    "nREFI2": "every bank index gets one same-bank refresh per nREFI2 cycles",
}


def parse_mapping(mapping: str):
    """Mapping string (MSB first) -> field ids LSB first, e.g. RoBaRaCoCh -> [Ch,Co,Ra,Bg,Ba,Ro].

    Raises ``ValueError`` unless it is a permutation of the tokens Ro, Ba, Ra, Co, Ch.
    """
    if not isinstance(mapping, str) or len(mapping) != 10:
        raise ValueError(f"DRAMConfig.mapping={mapping!r}: expected five two-letter fields "
                         f"(a permutation of Ro Ba Ra Co Ch, MSB first), e.g. "
                         f"{', '.join(MAPPINGS)}")
    toks = [mapping[i:i + 2] for i in range(0, 10, 2)]
    if sorted(toks) != sorted(_TOKENS):
        raise ValueError(f"DRAMConfig.mapping={mapping!r}: expected a permutation of "
                         f"Ro Ba Ra Co Ch (MSB first), e.g. {', '.join(MAPPINGS)}")
    fields = []
    for tok in reversed(toks):              # LSB first
        fields.extend(_TOKENS[tok])          # bank group below bank
    return fields


#: Largest buffer depth a configuration may ask for. Controllers have tens of entries per
#: buffer (Ramulator 2.1's default 32); the limit only keeps a typing slip (an extra zero or
#: three) from allocating gigabytes per channel.
MAX_QUEUE_DEPTH = 65536

#: Integer fields of :data:`Params`, in record order (``tab`` follows them).
PARAM_FIELDS = (
    "n_channels", "n_ranks", "n_bg", "n_banks", "n_rows", "n_cols", "nb_ch", "n_nodes",
    "n_cmds", "hist_max", "read_latency", "nBL", "nREFI", "refresh", "read_q", "write_q",
    "prio_q", "active_q", "pend_q", "wr_high_n", "wr_low_n", "scheduler", "row_policy",
    "tCK_ps", "o_map_fields", "o_map_radix", "o_cons_ptr", "o_follow", "o_lat", "o_win",
    "o_sib", "o_hist_len", "o_has_sib", "o_win_end", "o_dlat", "o_cmeta", "o_fb_bg",
    "n_cons", "pd_idle", "sr_idle", "nRFC", "nRP")
#: Capacity of ``Params.tab`` (DDR5's 18 commands need about 4,700 entries, most of them the
#: dense constraint table of 8 x 18 x 18); fixed, so that every
#: configuration with the same features (below) has the same numba type and the kernels
#: compile once for it.
TAB_CAP = 8192

#: Controller features that cost code in the cycle, compiled in only for the configurations
#: that use them: bits of ``Params``' numba type (:func:`params_dtype`), which the kernels read
#: as a compile-time constant (``dram.kernel.compiletime.features``), so with a feature off its
#: branches are not in the machine code at all. ``FEATURE_SAME_BANK``: same-bank refresh
#: (PREsb, REFsb and their same-bank scope); ``FEATURE_POWER``: the power-down and self-refresh
#: policy.
FEATURE_SAME_BANK, FEATURE_POWER = 1, 2
N_FEATURES = 2


def params_dtype(features: int = 0) -> np.dtype:
    """The record dtype of :data:`Params` for a set of features (bits ``FEATURE_*``): the
    fields of :data:`PARAM_FIELDS` and ``tab``, plus, when ``features`` is not 0, one field
    named ``features_<bits>`` whose name makes the record a numba type of its own (the kernels
    compile once per feature set; its value is unused)."""
    extra = [(f"features_{int(features)}", np.int64)] if features else []
    return np.dtype([(f, np.int64) for f in PARAM_FIELDS] + extra
                    + [("tab", np.int64, (TAB_CAP,))], align=True)


def record_features(field_names) -> int:
    """The feature bits of a :data:`Params` record type from its field names (0: none)."""
    for name in field_names:
        if name.startswith("features_"):
            return int(name[len("features_"):])
    return 0


PARAMS_DTYPE = params_dtype(0)

#: Resolved configuration for the kernels (``DRAMConfig.resolve()``): a numpy record of dtype
#: :data:`PARAMS_DTYPE`, integer scalars plus ONE int64 array ``tab``.
#:
#: A record, because numba passes a record to a jitted function as one pointer; a NamedTuple
#: of 36 scalars and an array was copied onto the stack at every call between kernel
#: functions (about a fifth of the DRAM model's time went to those copies).
#:
#: Geometry: ``n_channels``, ``n_ranks``, ``n_bg`` (bank groups per rank), ``n_banks`` (banks
#: per bank group), ``n_rows``, ``n_cols`` (64-B lines per row), ``nb_ch`` (banks per
#: channel), ``n_nodes`` (timing nodes per channel: 1 channel + ranks + bank groups + banks),
#: ``n_cmds``, ``hist_max`` (longest constraint window).
#:
#: ``tab`` holds, at the offsets named ``o_*`` (see :func:`tables` for numpy views):
#: ``map_fields`` int64[6] address fields LSB first (0 ch, 1 rank, 2 bank group, 3 bank,
#: 4 row, 5 column) and ``map_radix`` int64[6] (radix per field id); the timing constraints
#: as CSR over (level, preceding command): entries ``cons_ptr[l * n_cmds + c]`` ..
#: ``cons_ptr[l * n_cmds + c + 1]`` of ``follow`` (command), ``lat`` (cycles), ``win``
#: (window, 1 = spacing), ``sib`` (1 = applies to the sibling ranks); ``hist_len`` [4, n_cmds]
#: (history depth per level and command), ``has_sib`` [4, n_cmds], ``win_end`` [4, n_cmds]
#: (within each CSR bucket the target records with a window > 1 come first, up to this
#: index); ``dlat`` [4, n_cmds, 2, n_cmds], the same constraints dense:
#: ``dlat[level, cmd, 0, follow]`` the latency of the spacing (window 1) record of the target
#: node, ``dlat[level, cmd, 1, follow]`` of the sibling record, ``NO_CONSTRAINT`` where there
#: is none (so an update is one max over every follow command, without a record loop); command
#: metadata
#: ``cmeta`` [8, n_cmds]: rows opening, closing, accessing, scope (``SCOPE_*``), rank-local variant,
#: auto-precharge variant, is read, uses the channel data bus; ``fb_bg`` [nb_ch] the flat
#: bank group ``fb // n_banks`` of each flat bank (a table read instead of an integer division,
#: which takes tens of cycles and ran several times per command). Entries past the tables are 0.
Params = np.record


def _params_record(tab: np.ndarray, features: int = 0, **fields) -> np.record:
    if tab.size > TAB_CAP:
        raise ValueError(f"resolved timing tables need {tab.size} entries; dram.config.TAB_CAP "
                         f"is {TAB_CAP}")
    if set(fields) != set(PARAM_FIELDS):
        raise ValueError(f"Params fields differ: {sorted(set(fields) ^ set(PARAM_FIELDS))}")
    a = np.zeros(1, params_dtype(features))
    for k, v in fields.items():
        a[k] = v
    a["tab"][0, :tab.size] = tab
    return a.view(np.recarray)[0]


#: ``dlat`` entry of a (level, command, follow) without a constraint: clk + it is never a
#: ready cycle (they are >= 0), so the max-update leaves the entry as it is.
NO_CONSTRAINT = -(1 << 60)

#: Rows of the command-metadata table.
M_OPEN, M_CLOSE, M_ACCESS, M_SCOPE, M_LOCAL, M_AUTOPRE, M_ISREAD, M_DBUS = range(8)
#: ``M_SCOPE`` values: the position of a command's scope in ``ddr5.SCOPES``.
SCOPE_BANK, SCOPE_RANK, SCOPE_SAME_BANK = (ddr5.SCOPES.index(s)
                                           for s in ("bank", "rank", "same_bank"))


def tables(params: Params) -> dict:
    """Numpy views of the tables inside ``params.tab`` (for inspection and tests)."""
    t, nc, m = params.tab, params.n_cmds, params.n_cons
    return {
        "map_fields": t[params.o_map_fields:params.o_map_fields + 6],
        "map_radix": t[params.o_map_radix:params.o_map_radix + 6],
        "cons_ptr": t[params.o_cons_ptr:params.o_cons_ptr + 4 * nc + 1],
        "follow": t[params.o_follow:params.o_follow + m],
        "lat": t[params.o_lat:params.o_lat + m],
        "win": t[params.o_win:params.o_win + m],
        "sib": t[params.o_sib:params.o_sib + m],
        "hist_len": t[params.o_hist_len:params.o_hist_len + 4 * nc].reshape(4, nc),
        "has_sib": t[params.o_has_sib:params.o_has_sib + 4 * nc].reshape(4, nc),
        "win_end": t[params.o_win_end:params.o_win_end + 4 * nc].reshape(4, nc),
        "dlat": t[params.o_dlat:params.o_dlat + 8 * nc * nc].reshape(4, nc, 2, nc),
        "cmeta": t[params.o_cmeta:params.o_cmeta + 8 * nc].reshape(8, nc),
        "fb_bg": t[params.o_fb_bg:params.o_fb_bg + params.nb_ch],
    }


def watermark_counts(high: float, low: float, depth: int):
    """Integer thresholds equivalent to Ramulator's float comparisons.

    Write mode starts when ``size > high * depth`` and ends when ``size < low * depth`` (float32
    products, as in Ramulator 2.1). Returns (smallest size that starts it, largest size that
    ends it).
    """
    hx = float(np.float32(high) * np.float32(depth))
    lx = float(np.float32(low) * np.float32(depth))
    high_n = math.floor(hx) + 1
    low_n = math.ceil(lx) - 1
    return high_n, low_n


def _resolve(cfg: DRAMConfig) -> Params:
    org = ddr5.ORG_PRESETS[cfg.org]
    t = cfg.timing
    n_cmds = len(ddr5.COMMANDS)
    R, BG, B = cfg.ranks, org["bankgroups"], org["banks"]
    n_cols = cfg.lines_per_row
    radix = np.zeros(6, np.int64)
    radix[F_CH], radix[F_RA], radix[F_BG], radix[F_BA] = cfg.channels, R, BG, B
    radix[F_RO], radix[F_CO] = org["rows"], n_cols
    fields = np.array(parse_mapping(cfg.mapping), np.int64)

    table = ddr5.constraint_table(t)
    lvl = {name: i for i, name in enumerate(ddr5.LEVELS)}
    buckets = [[] for _ in range(4 * n_cmds)]
    hist_len = np.zeros((4, n_cmds), np.int64)
    has_sib = np.zeros((4, n_cmds), np.int64)
    for level, p, f, lat, win, sib in table:
        li, pi, fi = lvl[level], ddr5.CMD[p], ddr5.CMD[f]
        if win < 1:
            raise ValueError(f"timing record {level} {p}->{f}: window must be >= 1")
        buckets[li * n_cmds + pi].append((fi, lat, win, int(sib)))
        if sib:
            if win != 1:
                raise ValueError(f"timing record {level} {p}->{f}: a sibling record must have "
                                 f"window 1 (the kernel keeps no history for siblings)")
            has_sib[li, pi] = 1
        elif win > 1:                    # only windowed records read the issue history
            hist_len[li, pi] = max(hist_len[li, pi], win)
    ptr = np.zeros(4 * n_cmds + 1, np.int64)
    win_end = np.zeros(4 * n_cmds, np.int64)
    dlat = np.full((4 * n_cmds, 2, n_cmds), NO_CONSTRAINT, np.int64)
    fol, lat_a, win_a, sib_a = [], [], [], []
    for k, b in enumerate(buckets):
        # windowed target records first (up to win_end), which the kernel reads through the
        # issue history; every window-1 record (target or sibling) also goes into the dense
        # table, from which the kernel applies them
        # records that act on the same (follow, window, sibling) are one max-update: keep
        # the largest latency (e.g. RD->RD 2 cycles on the command bus and 8 on the data
        # bus), an exact reduction
        merged = {}
        for fi, lat, win, sib in b:
            key = (fi, win, sib)
            merged[key] = max(merged.get(key, lat), lat)
        b = [(fi, lat, win, sib) for (fi, win, sib), lat in merged.items()]
        b = [r for r in b if r[2] > 1] + [r for r in b if r[2] == 1]   # siblings: window 1
        win_end[k] = len(fol) + sum(1 for r in b if r[2] > 1)
        for fi, lat, win, sib in b:
            if win == 1:
                dlat[k, sib, fi] = max(dlat[k, sib, fi], lat)
            fol.append(fi); lat_a.append(lat); win_a.append(win); sib_a.append(sib)
        ptr[k + 1] = len(fol)

    def meta(names):
        a = np.zeros(n_cmds, np.int64)
        for n in names:
            a[ddr5.CMD[n]] = 1
        return a

    cmd_local = np.arange(n_cmds, dtype=np.int64)
    for base, loc in ddr5.LOCAL_VARIANT.items():
        cmd_local[ddr5.CMD[base]] = ddr5.CMD[loc]
    cmd_autopre = np.arange(n_cmds, dtype=np.int64)
    for a, b in ddr5.AUTO_PRECHARGE.items():
        cmd_autopre[ddr5.CMD[a]] = ddr5.CMD[b]
    scope = np.array([ddr5.SCOPES.index(ddr5.SCOPE.get(c, "bank")) for c in ddr5.COMMANDS],
                     np.int64)
    cmeta = np.stack([meta(ddr5.OPENING), meta(ddr5.CLOSING), meta(ddr5.ACCESSING),
                      scope, cmd_local, cmd_autopre,
                      meta(ddr5.READING), meta(ddr5.DATA_BUS)])
    parts = [("map_fields", fields), ("map_radix", radix), ("cons_ptr", ptr),
             ("follow", np.array(fol, np.int64)), ("lat", np.array(lat_a, np.int64)),
             ("win", np.array(win_a, np.int64)), ("sib", np.array(sib_a, np.int64)),
             ("hist_len", hist_len.ravel()), ("has_sib", has_sib.ravel()),
             ("win_end", win_end), ("dlat", dlat.ravel()),
             ("cmeta", cmeta.ravel()), ("fb_bg", np.arange(R * BG * B, dtype=np.int64) // B)]
    offs = {}
    pos = 0
    for name, arr in parts:
        offs["o_" + name] = pos
        pos += arr.size
    tab = np.concatenate([np.asarray(a, np.int64).ravel() for _, a in parts])
    rl = ddr5.read_latency(t)
    high_n, low_n = watermark_counts(cfg.wr_high_watermark, cfg.wr_low_watermark,
                                     cfg.write_queue_depth)
    nb_ch = R * BG * B
    refresh_mode = (0 if not cfg.refresh else 2 if cfg.same_bank_refresh else 1)
    return _params_record(
        n_channels=int(cfg.channels), n_ranks=int(R), n_bg=int(BG), n_banks=int(B),
        n_rows=int(org["rows"]), n_cols=int(n_cols), nb_ch=int(nb_ch),
        n_nodes=int(1 + R + R * BG + nb_ch), n_cmds=n_cmds,
        hist_max=int(max(1, hist_len.max())),
        read_latency=int(rl), nBL=int(t["nBL"]),
        # cycles between refresh requests: one REFab per rank each tREFI, or with same-bank
        # refresh one REFsb per rank each tREFI2 / banks (every bank index once per tREFI2)
        nREFI=int(t["nREFI2"] // B if refresh_mode == 2 else t["nREFI"]),
        refresh=refresh_mode,
        read_q=int(cfg.read_queue_depth), write_q=int(cfg.write_queue_depth),
        prio_q=int(cfg.priority_queue_depth), active_q=int(nb_ch),
        pend_q=int(rl + 2 + cfg.read_queue_depth),
        wr_high_n=int(high_n), wr_low_n=int(low_n),
        scheduler=SCHED_ID[cfg.scheduler], row_policy=ROWPOL_ID[cfg.row_policy],
        tCK_ps=int(t["tCK_ps"]),
        n_cons=len(fol), tab=tab, **{k: int(v) for k, v in offs.items()},
        # idle cycles before power-down / self refresh (0: off), rounded up
        nRFC=int(t["nRFC"]), nRP=int(t["nRP"]),
        pd_idle=_idle_cycles(cfg.powerdown_idle_ns, t["tCK_ps"]),
        sr_idle=_idle_cycles(cfg.selfrefresh_idle_ns, t["tCK_ps"]),
        features=((FEATURE_SAME_BANK if refresh_mode == 2 else 0)
                  | (FEATURE_POWER if cfg.powerdown_idle_ns or cfg.selfrefresh_idle_ns else 0)),
    )


def _idle_cycles(ns, tck_ps) -> int:
    """An idle timeout in ns as whole clock cycles (rounded up; 0: off)."""
    if not ns:
        return 0
    return max(1, math.ceil(float(ns) * 1000.0 / float(tck_ps) - 1e-9))
