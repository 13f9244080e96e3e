"""DRAMPower-style DDR5 memspec files (dram.memspec): replay with one, and bad input as one
line naming the field."""

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from cosmos.cli import main
from cosmos_common import UserError
from dram import DRAMConfig, replay
from dram.memspec import load_memspec
from dram.standards import ddr5_power

DATA = Path(__file__).parent / "data" / "dram"
TEST_SPEC = json.loads((DATA / "drampower_ddr5_test_memspec.json").read_text())
SAMPLE = DATA / "4ch_random_rw_L0.50_s10.head2000.trace.gz"


def preset_memspec(org="16Gb_x4"):
    """Our DDR5-4800 16 Gb power preset written as a memspec (A, V, s, cycles)."""
    p = ddr5_power.power_preset("DDR5_4800AN", org)
    t = DRAMConfig().timing
    a = lambda k: p[k] / 1000.0
    return {"memspec": {
        "memoryId": "preset", "memoryType": "DDR5",
        "memarchitecturespec": {"nbrOfBanks": 32, "nbrOfBankGroups": 8, "nbrOfDevices": 8,
                                "nbrOfRanks": 1, "width": 4, "burstLength": 16, "dataRate": 2},
        "mempowerspec": {"vdd": p["VDD_V"], "vpp": p["VPP_V"], "idd0": a("IDD0"),
                         "idd2n": a("IDD2N"), "idd3n": a("IDD3N"), "idd4r": a("IDD4R"),
                         "idd4w": a("IDD4W"), "idd5b": a("IDD5B"), "ipp0": a("IPP0"),
                         "ipp2n": a("IPP2N"), "ipp3n": a("IPP3N"), "ipp4r": a("IPP4R"),
                         "ipp4w": a("IPP4W"), "ipp5b": a("IPP5B")},
        "memtimingspec": {"tCK": t["tCK_ps"] * 1e-12, "RAS": t["nRAS"], "RP": t["nRP"],
                          "RTP": t["nRTP"], "WL": t["nCWL"], "WR": t["nWR"],
                          "RFC1_slr": t["nRFC"]},
        "bankwisespec": {"factRho": 0.0}}}


def _trace(n=400, seed=1):
    rng = np.random.default_rng(seed)
    return dict(addr=(rng.integers(0, 1 << 28, n) // 64 * 64).astype(np.uint64),
                is_write=(rng.random(n) < 0.3).astype(np.uint8),
                arrival=np.sort(rng.integers(0, 40_000, n)).astype(np.int64))


def test_preset_as_memspec_gives_the_preset_energy():
    cfg = DRAMConfig(channels=1, ranks=2)
    a = replay(_trace(), cfg).stats
    b = replay(_trace(), cfg, memspec=preset_memspec()).stats
    for k in [k for k in a if k.startswith("energy_") and k.endswith("_nJ")]:
        assert b[k] == pytest.approx(a[k], rel=1e-9), k
    assert a["total_cycles"] == b["total_cycles"]


def test_memspec_currents_move_the_energy_not_the_timing():
    m = preset_memspec()
    m["memspec"]["mempowerspec"]["idd4r"] *= 2
    cfg = DRAMConfig(channels=1, ranks=1)
    a = replay(_trace(), cfg)
    b = replay(_trace(), cfg, memspec=m)
    assert np.array_equal(a.completion, b.completion)
    assert b.stats["energy_read_nJ"] > a.stats["energy_read_nJ"]
    assert b.stats["energy_write_nJ"] == pytest.approx(a.stats["energy_write_nJ"], rel=1e-12)


def test_missing_rho_is_drampowers_default():
    m = copy.deepcopy(TEST_SPEC)
    del m["memspec"]["bankwisespec"]
    assert load_memspec(m).power["rho"] == 1.0
    assert load_memspec(TEST_SPEC).power["rho"] == 0.5


def _broken(path, value):
    m = copy.deepcopy(TEST_SPEC)
    sec = m["memspec"]
    *head, last = path
    for k in head:
        sec = sec[k]
    if value is KeyError:
        del sec[last]
    else:
        sec[last] = value
    return m


@pytest.mark.parametrize("path,value,fragment", [
    (("mempowerspec", "idd4r"), KeyError, "memspec mempowerspec.idd4r: missing"),
    (("mempowerspec", "ipp4w"), KeyError, "memspec mempowerspec.ipp4w: missing"),
    (("mempowerspec", "idd0"), -0.05, "memspec mempowerspec.idd0: -0.05 is negative"),
    (("memtimingspec", "RAS"), -3, "memspec memtimingspec.RAS: -3 is negative"),
    (("memtimingspec", "RP"), "ten", "memspec memtimingspec.RP: 'ten' is not a number"),
    (("memoryType",), "LPDDR5", "memspec memoryType: 'LPDDR5' is not supported (known: DDR5)"),
    (("memoryType",), KeyError, "memspec memoryType: missing"),
    (("memarchitecturespec", "nbrOfBanks"), KeyError,
     "memspec memarchitecturespec.nbrOfBanks: missing"),
    (("bankwisespec", "factRho"), 1.5, "memspec bankwisespec.factRho: 1.5 is above 1"),
])
def test_bad_memspec_is_one_line_naming_the_field(path, value, fragment):
    with pytest.raises(UserError) as e:
        load_memspec(_broken(path, value))
    assert fragment in str(e.value) and "\n" not in str(e.value)


def test_rho_making_activation_negative_is_refused():
    m = preset_memspec()
    m["memspec"]["bankwisespec"]["factRho"] = 1.0      # IDD0 < IDD3N: negative activation
    with pytest.raises(UserError, match="bankwisespec.factRho: 1 makes the activation"):
        load_memspec(m)


def test_cli_memspec(capsys, tmp_path):
    good = tmp_path / "x4.json"
    good.write_text(json.dumps(preset_memspec()))
    code = main(["dram", "replay", str(SAMPLE), "--memspec", str(good), "--json",
                 "--no-progress"])
    out, err = capsys.readouterr()
    assert code == 0, err
    bad = tmp_path / "bad.json"
    m = preset_memspec()
    del m["memspec"]["mempowerspec"]["idd3n"]
    bad.write_text(json.dumps(m))
    code = main(["dram", "replay", str(SAMPLE), "--memspec", str(bad)])
    out, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1, err
    assert "memspec mempowerspec.idd3n: missing" in err
    other = tmp_path / "x8.json"
    other.write_text(json.dumps(TEST_SPEC))                # 16 banks, x8: not 16Gb_x4
    code = main(["dram", "replay", str(SAMPLE), "--memspec", str(other)])
    out, err = capsys.readouterr()
    assert code == 2 and "nbrOfBanks 16 differs from the organization's 32 banks" in err
