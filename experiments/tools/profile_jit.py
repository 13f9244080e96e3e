"""Exact instruction counts of the jitted kernels, per function and per simulated DRAM request
(or, with ``--perf``, where this CPU's time goes, sampled).

    python experiments/tools/profile_jit.py --system cosmos --num-queries 60
    python experiments/tools/profile_jit.py --dram-trace 4ch_random_rw_L1.00
    python experiments/tools/profile_jit.py --perf --dram-trace 4ch_random_rw_L1.00 --repeat 5

For whoever works on speed. Sampling profilers (perf) see numba's JIT code only as anonymous
addresses, and their samples pile up on the instruction after a slow one. This tool counts
instead: it runs the workload under valgrind's callgrind, which counts every executed
instruction by address, and names the addresses itself:

1. A native run compiles the kernels into a private numba cache (a temporary folder) for a CPU
   that valgrind can emulate (Haswell: AVX2, no AVX-512; with the host's AVX-512 kernels
   valgrind would stop at the first such instruction).
2. The workload runs under ``valgrind --tool=callgrind --dump-instr=yes`` from that cache. At
   the end the child reads, for every cached kernel of ``dram.kernel``, ``dram.openloop``,
   ``cosmos.engine`` and ``cosmos.program``, the object code numba stored (its ELF symbol
   table: each function's offset and size) and where the JIT loaded it (the address of the
   kernel's own entry point), and writes every function's address range.
3. Each instruction's count goes to the function whose range holds it; the table gives
   instructions per simulated DRAM request (the whole run's counts over its requests, so the
   few thousand instructions of Python-side setup per call do not show).

With ``--sims`` valgrind also runs its cache and branch-predictor models (their caches and
predictor, not this CPU's), and the table adds L1 data misses and mispredicted branches per
function and request.

The functions are those LLVM left as calls: a function it inlined counts in its caller.
Counts are of the Haswell build; the host's AVX-512 build runs somewhat fewer vector
instructions in the constraint update (``dram.kernel._dense_max``).

Needs valgrind on PATH (Debian/Ubuntu: ``apt install valgrind``). Run time: about a minute to
compile, then about 50x the native run time (measured here: 60 default ``cosmos`` queries
3 min 10 s in all, one replay of a set A trace 1 min 50 s). The counts are exact and repeat
to the instruction from run to run, so two versions of the code compare without the noise of
timing on a shared machine -- but fewer instructions need not mean less time (cache misses
and mispredictions are counted only with ``--sims``, and then in valgrind's models).
``--out FILE.json`` keeps the counts per function.

``--perf`` measures time instead: the workload runs natively (the host's own build, AVX-512
included, from the usual numba cache) under ``perf record -e cpu-clock``, a software clock that
needs no hardware counters (virtual machines often have none), and each sample's instruction
address goes to its jitted function as above. It answers what the counts cannot: where the
time goes on this CPU, cache misses and mispredictions included (a function can take a far
larger share of the time than of the instructions when its loads miss the cache). Samples
land on the instruction after a slow one, so read the shares per function, not per
instruction. Run time: the workload's own, about 1 s per 100,000 replayed requests.
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import pickle
import re
import shutil
import struct
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

#: A CPU valgrind 3.19 can run: Haswell with its features spelled out (numba otherwise adds
#: the host's, AVX-512 included).
CPU_NAME = "haswell"
CPU_FEATURES = ("+64bit,+avx,+avx2,+bmi,+bmi2,+cmov,+cx16,+cx8,+f16c,+fma,+fxsr,+lzcnt,+mmx,"
                "+movbe,+popcnt,+sse,+sse2,+sse3,+sse4.1,+sse4.2,+ssse3,+xsave")
MODULES = ("dram.kernel", "dram.openloop", "cosmos.engine", "cosmos.program")
#: name prefix of cosmos.specialize's generated modules -> the module each copies
SPECIALIZED = {"_cosmos_kernel_": "dram.kernel", "_cosmos_engine_": "cosmos.engine"}


# ----------------------------------------------------------------------------- parsing
def parse_callgrind(path) -> dict:
    """Counts per instruction address of a callgrind output file written with
    ``--dump-instr=yes``: {event name (``Ir``, and with the simulators ``D1mr``, ``Bcm``...):
    Counter}.

    Cost lines start with a position per entry of the ``positions:`` header (``instr`` or
    ``instr line``), each absolute (``0x..`` or decimal), relative to the previous one of its
    kind (``+n``, ``-n``) or the same (``*``), then the event counts (trailing zeros may be left
    out). The cost line after a ``calls=`` line is the call's inclusive cost; it is skipped (the
    callee's own lines count).
    """
    events: list = []
    per_ev: dict = {}
    npos = 1
    last = [0, 0]
    skip = False
    with open(path) as f:
        for lineno, ln in enumerate(f, 1):
            if not ln or ln[0] not in "0123456789+-*":
                if ln.startswith("positions:"):
                    npos = len(ln.split()[1:])
                    last = [0] * npos
                elif ln.startswith("events:"):
                    events = ln.split()[1:]
                    if "Ir" not in events:
                        raise ValueError(f"{path}:{lineno}: no Ir event in {ln.strip()!r}")
                    per_ev = {e: Counter() for e in events}
                elif ln.startswith("calls="):
                    skip = True
                continue
            p = ln.split()
            if len(p) < npos or len(p) > npos + len(events):
                raise ValueError(f"{path}:{lineno}: expected {npos} positions and at most "
                                 f"{len(events)} counts, got {ln.strip()!r}")
            for k in range(npos):
                tok = p[k]
                if tok == "*":
                    continue
                if tok[0] in "+-":
                    last[k] += int(tok[1:], 0) if tok[0] == "+" else -int(tok[1:], 0)
                else:
                    last[k] = int(tok, 0)
            if skip:
                skip = False
                continue
            for e, v in zip(events, p[npos:]):
                if v != "0":
                    per_ev[e][last[0]] += int(v)
    if not per_ev:
        raise ValueError(f"{path}: no 'events:' line (not a callgrind output file?)")
    return per_ev


def parse_perf_ips(text: str) -> Counter:
    """Samples per instruction address from ``perf script -F ip`` output (one hexadecimal
    address per line)."""
    out: Counter = Counter()
    for k, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        try:
            out[int(line, 16)] += 1
        except ValueError:
            raise ValueError(f"perf script output line {k}: expected a hexadecimal address, "
                             f"got {line[:60]!r}") from None
    return out


def elf_functions(obj: bytes) -> list:
    """``(value, size, name)`` of every function symbol of an ELF64 little-endian object."""
    if obj[:4] != b"\x7fELF" or obj[4] != 2 or obj[5] != 1:
        raise ValueError("not an ELF64 little-endian object")
    shoff, = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize) for i in range(shnum)]
    out = []
    for s in secs:
        if s[1] != 2:                                   # SHT_SYMTAB
            continue
        strtab = secs[s[6]]
        soff, ssize = strtab[4], strtab[5]
        for k in range(s[5] // 24):
            name, info, _, shndx, value, size = struct.unpack_from("<IBBHQQ", obj, s[4] + 24 * k)
            if info & 0xF != 2 or shndx == 0:           # STT_FUNC, defined
                continue
            end = obj.index(b"\0", soff + name, soff + ssize)
            out.append((value, size, obj[soff + name:end].decode()))
    return out


def attribute(per_ip: Counter, ranges: list) -> Counter:
    """Sum the counts of ``per_ip`` per function of ``ranges`` ([(address, size, name)])."""
    ranges = sorted(ranges)
    starts = [r[0] for r in ranges]
    out: Counter = Counter()
    for ip, c in per_ip.items():
        i = bisect.bisect_right(starts, ip) - 1
        if i >= 0 and ip < ranges[i][0] + ranges[i][1]:
            out[ranges[i][2]] += c
    return out


def short_name(mangled: str) -> str:
    """``_ZN4dram6kernel6_serveB4v151...`` -> ``dram.kernel._serve`` (numba's mangling: the
    Itanium nested name, then an ABI tag and the argument types)."""
    s = mangled
    for prefix in ("cfunc.", ""):
        if s.startswith(prefix + "_ZN"):
            s = s[len(prefix) + 3:]
            parts = []
            while s and s[0].isdigit():
                n = 0
                while s[0].isdigit():
                    n = 10 * n + int(s[0])
                    s = s[1:]
                parts.append(s[:n])
                s = s[n:]
            wrapper = bool(prefix) or (parts[:1] == ["cpython"])
            if parts[:1] == ["cpython"]:
                parts = parts[1:]
            # the specialized copies (cosmos.specialize) count as the modules they copy
            if parts and parts[0].startswith(tuple(SPECIALIZED)):
                parts = SPECIALIZED[parts[0][:parts[0].rindex("_") + 1]].split(".") + parts[1:]
            # literal arguments numba specialized on (e.g. the engine's channel 0 in _channel_tick)
            lits = re.findall(r"Literal_5b\w+?_5d_28(.+?)_29", s)
            lit = " [" + ", ".join(x.replace("_2d", "-") for x in lits) + "]" if lits else ""
            return ("(wrapper) " if wrapper else "") + ".".join(parts) + lit
    return mangled


# ----------------------------------------------------------------------------- child side
def jit_ranges(modules) -> list:
    """Address ranges of every function of every cached kernel of ``modules`` in this process:
    [(address, size, mangled name)]. Uses numba internals (the cache file's pickled library,
    the JIT engine's symbol lookup); raises RuntimeError if they changed.

    Each kernel's library is one object file loaded as a whole, so its functions sit at their
    object offsets from one base address, found from the kernel's own entry point (a name
    only its library defines: inner functions are linked into every library that calls them).
    """
    import importlib

    import numba

    rows = set()
    for modname in modules:
        mod = importlib.import_module(modname)
        for attr in dir(mod):
            d = getattr(mod, attr)
            if not isinstance(d, numba.core.registry.CPUDispatcher) or not d.overloads:
                continue
            try:
                files = sorted(Path(d._cache._cache_path).glob(f"*.{d.py_func.__name__}-*.nbc"))
                entries = [(c.fndesc.mangled_name, c.library._codegen._engine._ee)
                           for c in d.overloads.values()]
            except AttributeError as e:
                raise RuntimeError(f"numba {numba.__version__}: cache layout not understood "
                                   f"({e})") from e
            objs = []
            for f in files:
                try:
                    objs.append(elf_functions(pickle.loads(f.read_bytes())[0][2][0]))
                except Exception:                         # another numba's or a stale entry
                    continue
            for entry, engine in entries:
                addr = engine.get_function_address(entry)
                for funcs in objs:
                    value = next((v for v, _, name in funcs if name == entry), None)
                    if addr and value is not None:
                        rows.update((addr - value + v, size, name) for v, size, name in funcs)
                        break
    return sorted(rows)


def _set_a_entry(name: str) -> dict:
    """The set A trace named ``name`` (or the only one whose name contains it)."""
    from dram import validation as V

    man = V.load_manifest()
    hits = [e for e in man if e["name"] == name] or [e for e in man if name in e["name"]]
    if len(hits) != 1:
        some = ", ".join(e["name"] for e in (hits or man)[:6])
        raise SystemExit(f"--dram-trace {name!r}: {len(hits)} set A traces match, need one "
                         f"(e.g. {some}; all in {V.DATA / 'manifest_setA.json'})")
    return hits[0]


def _run_workload(a) -> int:
    """Run the workload; return the number of DRAM requests simulated."""
    if a.dram_trace:
        from dram import replay, synth
        from dram import validation as V

        e = _set_a_entry(a.dram_trace)
        tr = synth.from_manifest(e)
        n = 0
        for _ in range(a.repeat):
            r = replay(tr, V.reference_config(e["channels"], True), wrap="mapper")
            n += len(r.completion)
        return n
    from cosmos.presets import get_preset
    from cosmos.simulate import simulate
    from graphs import make_workload

    tr = make_workload(a.workload, num_queries=max(a.num_queries, 1000), progress=False)
    res = simulate(get_preset(a.system), tr, num_queries=a.num_queries, progress=False)
    return int(res.summary()["dram_requests"])


def _child(a) -> int:
    n = _run_workload(a)
    if a.child:
        with open(a.child, "w") as f:
            spec = tuple(m for m in list(sys.modules) if m.startswith(tuple(SPECIALIZED)))
            json.dump({"requests": n, "ranges": jit_ranges(MODULES + spec)}, f)
    return 0


# ----------------------------------------------------------------------------- driver
def _check_workload(a) -> int:
    """Resolve --dram-trace to its full name and check --system; 2 on a bad option."""
    if a.dram_trace:
        a.dram_trace = _set_a_entry(a.dram_trace)["name"]
        return 0
    from cosmos.presets import get_preset
    try:
        get_preset(a.system)
    except ValueError as e:
        print(f"profile_jit: --system: {e}", file=sys.stderr)
        return 2
    return 0


def _child_command(a):
    """(interpreter and this script, the workload's arguments) for a child run."""
    me = [sys.executable, str(Path(__file__).resolve())]
    args = [f"--systems={a.system}", f"--dataset={a.workload}",
            f"--num-queries={a.num_queries}", f"--dram-trace={a.dram_trace}",
            f"--repeat={a.repeat}"]
    return me, args


def _describe(a) -> str:
    """The profiled workload in words (the report's headline and the JSON's ``workload``)."""
    return (f"replay of {a.dram_trace} x{a.repeat}" if a.dram_trace else
            f"{a.num_queries} {a.workload} queries on {a.system}")


def _write_out(path: str, obj: dict) -> None:
    """``--out``: the counts as JSON, written to a temporary name and then renamed."""
    tmp_out = path + ".tmp"
    with open(tmp_out, "w") as f:
        json.dump(obj, f, indent=1)
    os.replace(tmp_out, path)
    print(f"wrote {path}")


def _perf_main(a) -> int:
    """--perf: sample the native run with perf's software clock, attribute the samples."""
    if shutil.which("perf") is None:
        print("profile_jit: --perf needs perf on PATH (Debian: apt install linux-perf)",
              file=sys.stderr)
        return 2
    if a.freq < 1:
        print(f"profile_jit: --freq must be >= 1, got {a.freq}", file=sys.stderr)
        return 2
    bad = _check_workload(a)
    if bad:
        return bad
    me, args = _child_command(a)
    with tempfile.TemporaryDirectory(prefix="profile_jit_") as tmp:
        data = os.path.join(tmp, "perf.data")
        ranges = os.path.join(tmp, "ranges.json")
        print("running the workload under perf record (native speed) ...", flush=True)
        r = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", str(a.freq),
                            "-o", data, "--"] + me + args + [f"--child={ranges}"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode or not os.path.exists(ranges):
            print(f"profile_jit: the run under perf failed (a kernel.perf_event_paranoid "
                  f"above 2 forbids it):\n{r.stderr[-3000:]}", file=sys.stderr)
            return 1
        r = subprocess.run(["perf", "script", "-i", data, "-F", "ip"], capture_output=True,
                           text=True)
        if r.returncode:
            print(f"profile_jit: perf script failed:\n{r.stderr[-3000:]}", file=sys.stderr)
            return 1
        ips = parse_perf_ips(r.stdout)
        with open(ranges) as f:
            child = json.load(f)
    n = max(child["requests"], 1)
    per_fn = attribute(ips, [tuple(x) for x in child["ranges"]])
    total, jit = sum(ips.values()), sum(per_fn.values())
    what = _describe(a)
    ns = 1e9 / a.freq / n
    print(f"\n{what}: {child['requests']:,} DRAM requests; {total:,} samples at {a.freq}/s, "
          f"{jit:,} in jitted code ({100 * jit / max(total, 1):.0f} %; the rest is setup: "
          f"Python, workload, mapping) = {jit * ns:,.0f} ns per request")
    print("ns/request  share  function")
    for name, c in per_fn.most_common(a.top):
        print(f"{c * ns:10.1f}  {100 * c / max(jit, 1):4.1f}%  {short_name(name)}")
    if a.out:
        _write_out(a.out, {"workload": what, "requests": child["requests"], "freq": a.freq,
                           "samples": total, "per_function": dict(per_fn.most_common())})
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--system", default="cosmos", help="system preset (default cosmos)")
    ap.add_argument("--workload", default="sift", choices=("sift", "deep"))
    ap.add_argument("--num-queries", type=int, default=60)
    ap.add_argument("--dram-trace", default="", help="profile the open-loop replay of this "
                    "set A trace (refresh on) instead of the system model")
    ap.add_argument("--repeat", type=int, default=1, help="replays of --dram-trace")
    ap.add_argument("--top", type=int, default=25, help="functions to print")
    ap.add_argument("--sims", action="store_true", help="also simulate the caches and branch "
                    "predictor (valgrind's models, not this CPU's): L1 data misses and "
                    "mispredicted branches per function (about 2x slower)")
    ap.add_argument("--perf", action="store_true", help="sample where this CPU's time goes "
                    "(perf record -e cpu-clock, native build) instead of counting instructions "
                    "under valgrind")
    ap.add_argument("--freq", type=int, default=4000, help="--perf: samples per second")
    ap.add_argument("--out", default="", help="write the counts per function to this JSON file")
    ap.add_argument("--child", default="", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child or os.environ.get("COSMOS_PROFILE_NATIVE"):
        return _child(a)
    if a.perf:
        return _perf_main(a)
    if shutil.which("valgrind") is None:
        print("profile_jit: valgrind is not on PATH (Debian/Ubuntu: apt install valgrind)",
              file=sys.stderr)
        return 2
    bad = _check_workload(a)
    if bad:
        return bad
    me, args = _child_command(a)
    sims = ["--cache-sim=yes", "--branch-sim=yes"] if a.sims else []
    with tempfile.TemporaryDirectory(prefix="profile_jit_") as tmp:
        env = {**os.environ, "NUMBA_CACHE_DIR": os.path.join(tmp, "numba"),
               "NUMBA_CPU_NAME": CPU_NAME, "NUMBA_CPU_FEATURES": CPU_FEATURES}
        print("1/3 compiling the kernels for valgrind (native run) ...", flush=True)
        r = subprocess.run(me + args, env={**env, "COSMOS_PROFILE_NATIVE": "1"},
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode:
            print(f"profile_jit: the native run failed:\n{r.stderr[-3000:]}", file=sys.stderr)
            return 1
        out = os.path.join(tmp, "callgrind.out")
        ranges = os.path.join(tmp, "ranges.json")
        print("2/3 running under callgrind (about 50x slower) ...", flush=True)
        r = subprocess.run(["valgrind", "--tool=callgrind", "--dump-instr=yes"] + sims +
                           [f"--callgrind-out-file={out}"] + me + args + [f"--child={ranges}"],
                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode or not os.path.exists(ranges):
            print(f"profile_jit: the run under valgrind failed:\n{r.stderr[-3000:]}",
                  file=sys.stderr)
            return 1
        print("3/3 attributing the counts ...", flush=True)
        with open(ranges) as f:
            child = json.load(f)
        per_ev = parse_callgrind(out)
    n = max(child["requests"], 1)
    rng = [tuple(r) for r in child["ranges"]]
    cols = {"instructions": ["Ir"]}
    if a.sims:
        cols["L1d misses"] = ["D1mr", "D1mw"]
        cols["mispredicts"] = ["Bcm", "Bim"]
    fn = {}
    for col, evs in cols.items():
        c: Counter = Counter()
        for e in evs:
            c.update(attribute(per_ev.get(e, Counter()), rng))
        fn[col] = c
    ir = fn["instructions"]
    total = sum(ir.values())
    what = _describe(a)
    print(f"\n{what}: {child['requests']:,} DRAM requests; jitted code {total:,} instructions = "
          f"{total / n:,.0f} per request (all code: {sum(per_ev['Ir'].values()):,})")
    if a.sims:
        print("jitted code per request: " + ", ".join(
            f"{col} {sum(fn[col].values()) / n:,.1f}" for col in cols if col != "instructions"))
    print("per request: " + "  ".join(f"{col:>12}" for col in cols) + "  share  function")
    for name, c in ir.most_common(a.top):
        vals = "  ".join(f"{fn[col][name] / n:12.1f}" for col in cols)
        print(f"             {vals}  {100 * c / max(total, 1):4.1f}%  {short_name(name)}")
    if a.out:
        _write_out(a.out, {"workload": what, "requests": child["requests"],
                           "per_function": {col: dict(c.most_common()) for col, c in fn.items()}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
