"""Figures of the paper's six systems on small default-like traces, for the identity test.

``python -m tests.systems_identity`` (from the repository root) records them into
tests/data/systems_identity.json; tests/test_systems_identity.py recomputes them and compares
exactly. The traces are the project's own tiny SIFT-like and DEEP-like workloads
(experiments.harness.workloads, scale ``tiny``); each preset runs closed loop on both, and base and
cosmos also at one open-loop rate. Besides every summary figure (wall-clock fields excluded)
each run records a digest of its program: every step's resolved fields (class fields looked up
per step, so the digest does not depend on how classes are numbered) and the task graph.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np

DATA = Path(__file__).parent / "data" / "systems_identity.json"
SYSTEMS = ("base", "dram-only", "cxl-anns", "cosmos-norank", "cosmos-noalgo", "cosmos")
FAMILIES = ("sift", "deep")
OPEN_LOOP = (("base", 2.0e5), ("cosmos", 1.0e6))   # (system, arrivals per second) on sift
WALL = ("wall_s", "requests_per_wall_s")


def trace(family: str):
    from experiments.harness.workloads import workload

    return workload(family, "tiny", progress=False)


def program_digest(pg) -> str:
    """sha256 over the program's task graph and every step's resolved fields."""
    h = hashlib.sha256()
    arrays = [pg.query_task_ptr, pg.task_query, pg.task_pool, pg.task_succ, pg.task_npred,
              pg.task_device, pg.task_step_ptr, pg.step_obj, pg.step_nreq,
              pg.step_compute_after, pg.step_wire_bytes]
    c = pg.step_class
    for name in ("cls_kind", "cls_cat", "cls_dev", "cls_link", "cls_rank_local", "cls_mlp",
                 "cls_lat", "cls_R", "cls_rank_step", "cls_col_step", "cls_obj_src",
                 "cls_obj_lines", "cls_compute_line"):
        arrays.append(getattr(pg, name)[c])
    arrays += [pg.vector_addr, pg.node_addr]
    for a in arrays:
        a = np.ascontiguousarray(a)
        kind = "f8" if a.dtype.kind == "f" else ("u8" if a.dtype.kind == "u" else "i8")
        h.update(a.astype(kind).tobytes())
    return h.hexdigest()


def run(name: str, tr, mode: str = "closed", rate_qps=None) -> dict:
    from cosmos.presets import get_preset
    from cosmos.simulate import simulate

    res = simulate(get_preset(name), tr, mode=mode, rate_qps=rate_qps, progress=False)
    s = res.summary()
    for k in WALL:
        s.pop(k)
    s["program_sha256"] = program_digest(res.program)
    s["q_done_sha256"] = hashlib.sha256(
        np.ascontiguousarray(res.state.q_done, np.int64).tobytes()).hexdigest()
    return s


def figures() -> dict:
    out = {}
    traces = {f: trace(f) for f in FAMILIES}
    for f in FAMILIES:
        for name in SYSTEMS:
            out[f"{f}/{name}/closed"] = run(name, traces[f])
    for name, rate in OPEN_LOOP:
        out[f"sift/{name}/open@{rate:g}"] = run(name, traces["sift"], "open", rate)
    return out


def main() -> int:
    figs = figures()
    tmp = DATA.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(figs, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, DATA)
    print(f"wrote {DATA} ({DATA.stat().st_size} bytes, {len(figs)} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
