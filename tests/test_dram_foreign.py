"""Ramulator 2 YAML and DRAMsim3 .ini configurations read as DRAMConfig (dram.foreign)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cosmos_common import UserError
from dram import DRAMConfig
from dram.foreign import read_config_file

DATA = Path(__file__).parent / "data" / "dram"
FILES = {"ramulator2.1": "ramulator21_ddr5_4800.yaml", "ramulator2.0": "ramulator20_ddr5_4800.yaml",
         "dramsim3": "dramsim3_ddr5_4800.ini"}


@pytest.mark.parametrize("source", sorted(FILES))
def test_reference_configuration_reads_back_as_the_default(source):
    """Each file holds the Ramulator 2.1 reference runs' configuration (DRAMConfig's default)
    in its own layout: read, it is that configuration exactly, with no timing override."""
    read = read_config_file(DATA / FILES[source])
    assert read.source == source
    assert read.config == DRAMConfig()


def _edit(tmp_path, name, old, new, count=1):
    text = (DATA / name).read_text()
    assert old in text, old
    out = tmp_path / name
    out.write_text(text.replace(old, new, count))
    return out


def test_changed_timing_becomes_an_override(tmp_path):
    # nCL 34 -> 36 in every controller (Ramulator 2.1 timing list: rate, nBL, nCL, ...)
    f = _edit(tmp_path, FILES["ramulator2.1"], "[4800, 8, 34,", "[4800, 8, 36,", count=-1)
    cfg = read_config_file(f).config
    assert cfg.standard == "DDR5_4800AN" and cfg.timing_overrides == (("nCL", 36),)
    assert cfg.timing["nCL"] == 36


def test_ramulator21_channels_ranks_and_parts(tmp_path):
    text = (DATA / FILES["ramulator2.1"]).read_text()
    head, _, ctrls = text.partition("  controllers:\n")
    one = ctrls[: len(ctrls) // 4]
    one = (one.replace("[1, 2, 8, 4, 65536, 2048]", "[1, 1, 8, 4, 65536, 2048]")
              .replace("{impl: FRFCFS}", "{impl: FRFCFS-RowHit}")
              .replace("{impl: AllBank}", "{impl: NoRefresh}")
              .replace("{impl: RoBaRaCoCh}", "{impl: ChRaBaRoCo}")
              .replace("read_buffer_size: 32", "read_buffer_size: 48"))
    f = tmp_path / "two.yaml"
    f.write_text(head + "  controllers:\n" + one * 2)
    cfg = read_config_file(f).config
    assert (cfg.channels, cfg.ranks, cfg.scheduler, cfg.refresh, cfg.read_queue_depth) == (
        2, 1, "FRFCFS_RowHit", False, 48)
    # the channel mapper takes the channel bits first; the controller maps the rest
    assert cfg.mapping == "RaBaRoCoCh"


def test_dramsim3_mapping_ranks_and_close_page(tmp_path):
    f = _edit(tmp_path, FILES["dramsim3"], "address_mapping = robabgracoch",
              "address_mapping = rababgrococh")
    f.write_text(f.read_text().replace("channel_size = 32768", "channel_size = 65536")
                 .replace("OPEN_PAGE", "CLOSE_PAGE"))
    cfg = read_config_file(f).config
    assert (cfg.mapping, cfg.ranks, cfg.row_policy) == ("RaBaRoCoCh", 4, "closed")


BAD = [
    ("ramulator2.1", "impl: DDR5\n", "impl: DDR4\n", "dram.impl: 'DDR4': this DRAM model is DDR5"),
    ("ramulator2.1", "{impl: Open}", "{impl: ClosedCAP, cap: 4}", "row_policy.impl: row policy "
     "'ClosedCAP' is not modeled"),
    ("ramulator2.1", "interleave_bits: 0", "interleave_bits: 2", "channel_mapper.interleave_bits: "
     "2: only 0"),
    ("ramulator2.1", "{impl: AllBank}", "{impl: PerBank}", "refresh manager 'PerBank'"),
    ("ramulator2.1", "controller_plugins: []", "controller_plugins: [{impl: Graphene}]",
     "plugin 'Graphene' changes the controller"),
    ("ramulator2.1", "count: [1, 2, 8, 4, 65536, 2048]", "count: [1, 2, 8, 3, 65536, 2048]",
     "dram.org: x4, 8 bank groups x 3 banks"),
    ("ramulator2.1", ", 2, 416]", ", 2, 500]", "a clock of 500 ps"),
    ("ramulator2.0", "preset: DDR5_16Gb_x4", "preset: DDR5_64Gb_x4", "org.preset: 'DDR5_64Gb_x4'"),
    ("ramulator2.0", "preset: DDR5_4800AN", "preset: DDR5_4800AN\n      nXYZ: 3",
     "timing.nXYZ: not a timing parameter"),
    ("ramulator2.0", "AddrMapper:\n    impl: RoBaRaCoCh", "AddrMapper:\n    impl: MOP4CLXOR",
     "address mapper 'MOP4CLXOR'"),
    ("dramsim3", "protocol = DDR5", "protocol = DDR4", "[dram_structure] protocol: DDR4: this "
     "DRAM model is DDR5"),
    ("dramsim3", "AL = 0", "AL = 2", "[timing] AL: 2: additive latency"),
    ("dramsim3", "CL = 34", "CL = x", "[timing] CL: expected an integer, got 'x'"),
    ("dramsim3", "RANK_LEVEL_SIMULTANEOUS", "RANK_LEVEL_STAGGERED", "[system] refresh_policy: "
     "RANK_LEVEL_STAGGERED is not modeled"),
    ("dramsim3", "robabgracoch", "robgbaracoch", "bank right above the bank group"),
    ("dramsim3", "bus_width = 32", "bus_width = 64", "[system] bus_width: 64: a DDR5 channel"),
    ("dramsim3", "channel_size = 32768", "channel_size = 20000", "[system] channel_size: 20000 MB"),
    ("dramsim3", "tRAS = 77", "tRAS = 77\ntFOO = 3", "[timing] tFOO: not a DRAMsim3 timing"),
]


@pytest.mark.parametrize("source,old,new,message", BAD, ids=[b[3][:40] for b in BAD])
def test_unmodeled_settings_are_refused_by_name(tmp_path, source, old, new, message):
    f = _edit(tmp_path, FILES[source], old, new, count=-1)
    with pytest.raises(UserError) as err:
        read_config_file(f)
    text = str(err.value)
    assert message in text and str(f) in text and "\n" not in text


def test_malformed_files_are_one_line(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("memory_system: [1, 2\n")
    with pytest.raises(UserError, match=r"bad\.yaml: line \d+ not valid YAML"):
        read_config_file(f)
    g = tmp_path / "bad.ini"
    g.write_text("no section header\n")
    with pytest.raises(UserError, match=r"bad\.ini: not a valid \.ini file"):
        read_config_file(g)
    h = tmp_path / "empty.ini"
    h.write_text("[dram_structure]\n")
    with pytest.raises(UserError, match=r"\[timing\]: missing"):
        read_config_file(h)


def test_cli_replay_takes_a_ramulator_config(tmp_path):
    """`cosmos dram replay --config FILE.yaml` simulates the configuration the file holds:
    the same statistics as the same replay with no config (the file holds the default)."""
    trace = tmp_path / "t.trace"
    trace.write_text("".join(f"0x{64 * 977 * i:x} {'WRITE' if i % 3 == 0 else 'READ'} {4 * i}\n"
                             for i in range(300)))
    exe = shutil.which("cosmos")
    cmd = [exe] if exe else [sys.executable, "-m", "cosmos"]
    outs = []
    for extra in ([], ["--config", str(DATA / FILES["ramulator2.1"])],
                  ["--config", str(DATA / FILES["dramsim3"])]):
        p = subprocess.run([*cmd, "dram", "replay", str(trace), "--json", "--no-requests",
                            "--no-progress", *extra], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        stats = json.loads(p.stdout)
        outs.append({k: v for k, v in stats.items()      # the run's own timings aside
                     if not (k.endswith("_s") or k in ("sim_requests_per_s", "sim_threads"))})
        if extra and extra[1].endswith(".ini"):
            assert "trans_queue_size = 32: read as" in p.stderr
    assert outs[0] == outs[1] == outs[2]
