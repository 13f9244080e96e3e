"""experiments/tools/profile_jit.py: the callgrind parser, the ELF symbol reader and the attribution
(the valgrind run itself is a developer tool, not run in CI)."""

from collections import Counter

import pytest
from llvmlite import binding as llvm

from experiments.tools.profile_jit import attribute, elf_functions, parse_callgrind, short_name

CALLGRIND = """\
# callgrind format
version: 1
positions: instr line
events: Ir Dr

fl=(1) ???
fn=(1) 0x1000
0x1000 0 5 1
+4 * 3 0
+2 0 7 2
cfn=(2) 0x2000
calls=1 0x2000 0
+3 0 900 40
-1 0 2 0
fn=(2) 0x2000
0x2000 0 11 0
0x1009 0 1
"""


def test_parse_callgrind_positions_and_calls(tmp_path):
    p = tmp_path / "cg.out"
    p.write_text(CALLGRIND)
    ev = parse_callgrind(p)
    ips = ev["Ir"]
    # 0x1000: 5; +4 -> 0x1004: 3; +2 -> 0x1006: 7; the call's inclusive line at +3 (0x1009)
    # is skipped; -1 -> 0x1008: 2; 0x2000: 11; 0x1009 (its own line): 1
    assert ips == Counter({0x1000: 5, 0x1004: 3, 0x1006: 7, 0x1008: 2, 0x2000: 11, 0x1009: 1})
    assert ev["Dr"] == Counter({0x1000: 1, 0x1006: 2})        # trailing zeros left out too


def test_parse_callgrind_instr_only_and_errors(tmp_path):
    p = tmp_path / "cg.out"
    p.write_text("positions: instr\nevents: Ir\n0x10 4\n+1 6\n* 1\n")
    assert parse_callgrind(p)["Ir"] == Counter({0x10: 4, 0x11: 7})
    p.write_text("positions: instr\nevents: Ir\n0x10 4 5\n")
    with pytest.raises(ValueError, match="at most 1 counts"):
        parse_callgrind(p)
    p.write_text("positions: instr\nevents: Dr\n0x10 4\n")
    with pytest.raises(ValueError, match="no Ir event"):
        parse_callgrind(p)


IR = """
define i64 @alpha(i64 %x) {
  %y = add i64 %x, 3
  ret i64 %y
}
define internal i64 @beta(i64 %x) noinline {
  %y = mul i64 %x, 7
  ret i64 %y
}
define i64 @gamma(i64 %x) {
  %y = call i64 @beta(i64 %x)
  ret i64 %y
}
"""


def test_elf_functions_of_a_compiled_module():
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    tm = llvm.Target.from_default_triple().create_target_machine(codemodel="small")
    mod = llvm.parse_assembly(IR)
    obj = tm.emit_object(mod)
    funcs = {name: (value, size) for value, size, name in elf_functions(obj)}
    assert {"alpha", "beta", "gamma"} <= set(funcs)
    assert all(size > 0 for _, size in funcs.values())
    spans = sorted(funcs.values())
    assert all(a[0] + a[1] <= b[0] for a, b in zip(spans, spans[1:]))   # disjoint
    with pytest.raises(ValueError, match="ELF64"):
        elf_functions(b"not an object")


def test_attribute_and_names():
    ranges = [(0x2000, 0x10, "_ZN4dram6kernel6_serveB4v1Ex23Literal_5bint_5d_282_29x"),
              (0x1000, 0x10, "_ZN6cosmos6engine10_run_chunkB3v48E")]
    ips = Counter({0x1000: 5, 0x100F: 1, 0x1010: 9, 0x2004: 3, 0x0FFF: 4})
    got = attribute(ips, ranges)
    assert got == Counter({ranges[1][2]: 6, ranges[0][2]: 3})     # 0x1010, 0x0FFF: outside
    assert short_name(ranges[0][2]) == "dram.kernel._serve [2]"
    assert short_name(ranges[1][2]) == "cosmos.engine._run_chunk"
    # cosmos.specialize's copies count as the modules they copy
    assert short_name("_ZN31_cosmos_kernel_ae6c629ddb4c86606_serveB3v54E") == "dram.kernel._serve"
    assert short_name("_ZN7cpython6cosmos6engine10_run_chunkB3v48E") == \
        "(wrapper) cosmos.engine._run_chunk"
    assert short_name("NRT_incref") == "NRT_incref"


def test_parse_perf_ips_counts_samples_and_names_a_bad_line():
    from experiments.tools.profile_jit import parse_perf_ips

    ips = parse_perf_ips("    7f00a0\n7f00a0\n\n  7f00b4  \n")
    assert ips == Counter({0x7F00A0: 2, 0x7F00B4: 1})
    assert attribute(ips, [(0x7F0000, 0xB0, "f"), (0x7F00B0, 0x10, "g")]) == \
        Counter({"f": 2, "g": 1})
    with pytest.raises(ValueError, match="line 2: expected a hexadecimal address"):
        parse_perf_ips("7f00a0\n[unknown]\n")
