"""The DDR5 standard as data, the config and its validation (no numba needed)."""

import dataclasses
import re
from pathlib import Path

import pytest

from dram import DRAMConfig, list_presets
from dram.config import parse_mapping, tables, watermark_counts
from dram.standards import ddr5

DATA = Path(__file__).parent / "data" / "dram"


def _reference_constraints():
    """Parse the effective constraint table Ramulator 2.1 used for the reference runs."""
    out = set()
    pat = re.compile(r"^\s+(\w+)\s+\[(.*?)\] -> \[(.*?)\] : (\d+)(\s+window=(\d+))?(\s+sibling)?")
    for line in (DATA / "timing_constraints.txt").read_text().splitlines():
        m = pat.match(line)
        if not m:
            continue
        level = m.group(1)
        pre = [c.strip().strip("'") for c in m.group(2).split(",")]
        fol = [c.strip().strip("'") for c in m.group(3).split(",")]
        win = int(m.group(6)) if m.group(6) else 1
        sib = bool(m.group(7))
        for p in pre:
            for f in fol:
                out.add((level, p, f, int(m.group(4)), win, sib))
    return out


def test_constraint_table_equals_reference_effective_table():
    ref = _reference_constraints()
    assert len(ref) > 100
    cfg = DRAMConfig()
    # Ramulator 2.1's DDR5 has neither the rank-local variants nor the same-bank commands
    theirs = set(ddr5.COMMANDS[:8])
    ours = {c for c in ddr5.constraint_table(cfg.timing) if c[1] in theirs and c[2] in theirs}
    assert ours == ref


def test_rank_local_commands_skip_only_data_bus_constraints():
    table = ddr5.constraint_table(DRAMConfig().timing)
    local = [c for c in table if c[1] == "RD_L" or c[2] == "RD_L"]
    # no channel data-bus spacing and no rank-switch (sibling) constraint involves RD_L
    assert not [c for c in local if c[0] == "Channel" and c[3] == 8]
    assert not [c for c in local if c[5]]
    # but the command bus and the rank/bank-group/bank constraints do
    assert ("Channel", "RD_L", "ACT", 2, 1, False) in local
    assert ("BankGroup", "RD_L", "RD_L", 12, 1, False) in local
    assert ("Rank", "RD_L", "RD", 8, 1, False) in local


def test_reference_timings_and_derived_values():
    t = DRAMConfig().timing
    assert (t["nCL"], t["nRCD"], t["nRP"], t["nRAS"], t["nRC"]) == (34, 34, 34, 77, 111)
    assert (t["nRRDS"], t["nRRDL"], t["nFAW"], t["nRFC"], t["nREFI"]) == (8, 12, 48, 710, 9375)
    assert ddr5.read_latency(t) == 42
    assert DRAMConfig(org="8Gb_x16").timing["nFAW"] == 60          # 25 ns at 416.7 ps
    assert DRAMConfig(org="32Gb_x4").timing["nRFC"] == 986         # 410 ns


def test_geometry_of_reference_config():
    cfg = DRAMConfig()
    assert cfg.lines_per_row == 128
    assert cfg.capacity_bytes == 4 * 32 * 2**30
    p = cfg.resolve()
    assert (p.n_ranks, p.n_bg, p.n_banks, p.nb_ch) == (2, 8, 4, 64)
    assert list(tables(p)["map_fields"]) == [0, 5, 1, 2, 3, 4]   # Ch Co Ra Bg Ba Ro (LSB first)
    # flat bank -> flat bank group, the table the kernels read instead of dividing
    assert list(tables(p)["fb_bg"]) == [fb // p.n_banks for fb in range(p.nb_ch)]
    assert watermark_counts(0.8, 0.2, 32) == (26, 6)


def test_presets_listing():
    pr = list_presets()
    for name in ("DDR5_3200AN", "DDR5_4800AN", "DDR5_4800BN", "DDR5_4800C"):
        assert name in pr["standards"]
    for d in ("8Gb", "16Gb", "32Gb"):
        for w in ("x4", "x8", "x16"):
            assert f"{d}_{w}" in pr["orgs"]
    assert {"RoBaRaCoCh", "RoCoBaRaCh", "ChRaBaRoCo"} <= set(pr["mappings"])
    assert pr["schedulers"][0] == "FRFCFS" and "open" in pr["row_policies"]


def test_every_timing_and_organization_preset_resolves():
    # a new preset entry is checked here: derived timings, constraint table, geometry
    for std in list_presets()["standards"]:
        for org in list_presets()["orgs"]:
            cfg = DRAMConfig(standard=std, org=org)
            p = cfg.resolve()
            t = cfg.timing
            assert p.tCK_ps == t["tCK_ps"] > 0
            assert p.read_latency == t["nCL"] + t["nBL"]
            assert cfg.capacity_bytes > 0 and cfg.peak_bandwidth_GBps > 0


@pytest.mark.parametrize("field,value,needle", [
    ("standard", "DDR5_9999", "DDR5_4800AN"),
    ("org", "16Gb_x32", "16Gb_x4"),
    ("scheduler", "LIFO", "FRFCFS"),
    ("row_policy", "half", "closed"),
    ("mapping", "RoRoBaCoCh", "permutation"),
    ("mapping", "RoBa", "permutation"),
    ("channels", 0, "positive integer"),
    ("ranks", 2.5, "positive integer"),
    ("read_queue_depth", -1, "positive integer"),
    ("timing_overrides", (("nXYZ", 3),), "unknown timing parameter"),
    ("timing_overrides", (("nCL", -3),), "non-negative"),
    ("timing_overrides", (("nRFC", 20000),), "impossible"),
    ("wr_high_watermark", 0.1, "watermark"),
])
def test_validate_rejects_bad_values(field, value, needle):
    cfg = dataclasses.replace(DRAMConfig(), **{field: value})
    with pytest.raises(ValueError) as e:
        cfg.resolve()
    assert needle in str(e.value)
    if field not in ("timing_overrides", "wr_high_watermark"):
        assert field in str(e.value)


def test_mappings_parse_and_help():
    assert parse_mapping("ChRaBaRoCo") == [5, 4, 2, 3, 1, 0]
    assert parse_mapping("RoCoBaRaCh") == [0, 1, 2, 3, 5, 4]
    h = DRAMConfig().help()
    assert all(h[f.name] for f in dataclasses.fields(DRAMConfig))


def test_timing_override_applies():
    p = DRAMConfig(timing_overrides=(("nCL", 40),)).resolve()
    assert p.read_latency == 48
