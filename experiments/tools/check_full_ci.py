"""Are the ``--full`` preset's headline ratios inside the intervals of runs of every query?

At the ``full`` scale fig4a's simulations stop once their QPS interval is within +-1 %
(``ci_target``, cosmos.simulate). This script checks that stopping early does not move the
headline figures: for each dataset it simulates Base, CXL-ANNS and Cosmos twice,

- as the preset does (fig4a's own tasks, :func:`experiments.figures.fig4a_qps.system_tasks`: after a
  ``cosmos reproduce --full`` with the same cache these are read from the simulation cache), and
- over every query of the trace, with no stop test (the reference; a preset run that never
  stopped early is its own reference),

and reports, for Cosmos / Base and Cosmos / CXL-ANNS, the preset's ratio, the reference's ratio
and its 95 % interval (the two runs' half-widths on the log scale in quadrature,
experiments.harness.ratios.add_ratio_ci), and whether the preset's ratio lies inside it. Exit
status 0 if every ratio does, 1 if not::

    python experiments/tools/check_full_ci.py                       # the full scale (1M vectors)
    python experiments/tools/check_full_ci.py --n 20000 --queries 4000   # a smaller workload

``--n`` / ``--queries`` shrink the workload (base vectors, queries) while keeping the full
scale's clusters, probes and stopping rule (``ci_target`` 0.01, cosmos.simulate's minimum):
a quick check of the machinery, weaker than the full one, since with fewer queries the
preset's runs share more of their queries with the reference's. ``--json PATH`` writes the
table as JSON. Simulations go through the simulation cache under ``--cache-dir`` (default
``$COSMOS_CACHE``), so a second run is read back; the trace files the sweep workers read (1-2 GB
at the full scale) go to ``--out``, by default ``check_full_ci`` in that cache folder.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

#: the headline systems: numerators and denominators of the ratios checked
SYSTEMS = ("base", "cxl-anns", "cosmos")
RATIOS = (("cosmos", "base"), ("cosmos", "cxl-anns"))


def _ratio_rows(rows: list[dict]) -> dict:
    """{(dataset, num, den): (ratio, ci_low, ci_high, "queries of num/den", "stop reasons
    of num/den")} from simulate_task rows."""
    import pandas as pd

    from experiments.harness.ratios import add_ratio_ci

    df = pd.DataFrame(rows)
    out = {}
    for num, den in RATIOS:
        by = df[df.system == den].set_index("dataset")
        ref = by["qps"]
        sub = df[df.system.isin([num, den])].copy()
        sub["r"] = sub["qps"] / sub["dataset"].map(ref)
        add_ratio_ci(sub, "r", den)
        for r in sub[sub.system == num].itertuples():
            d = by.loc[r.dataset]
            out[(r.dataset, num, den)] = (float(r.r), float(r.r_ci_low), float(r.r_ci_high),
                                          f"{int(r.num_queries):,}/{int(d.num_queries):,}",
                                          f"{r.stopped}/{d.stopped}")
    return out


def check(ctx, ci_target: float) -> list[dict]:
    """The comparison table (one row per dataset and ratio) for the workloads of ``ctx``."""
    from experiments.figures.fig4a_qps import system_tasks
    from experiments.harness.sim import simulate_task

    preset = system_tasks(ctx, SYSTEMS)
    for t in preset:
        t["ci_target"] = ci_target
    rows = ctx.sweep(simulate_task, preset, desc="preset runs")
    # a preset run that never stopped early simulated every query: it is its own reference
    again = [i for i, r in enumerate(rows) if r["stopped"] != "all queries"]
    more = ctx.sweep(simulate_task, [dict(preset[i], ci_target=None) for i in again],
                     desc="reference runs") if again else []
    reference = list(rows)
    for i, r in zip(again, more):
        reference[i] = r
    got = _ratio_rows(rows)
    ref = _ratio_rows(reference)
    table = []
    for key in got:
        fam, num, den = key
        r, _, _, nq, stop = got[key]
        rr, lo, hi, rq, _ = ref[key]
        table.append({"dataset": fam, "ratio": f"{num} / {den}", "preset": r,
                      "preset_queries": nq, "preset_stopped": stop,
                      "reference": rr, "reference_ci_low": lo, "reference_ci_high": hi,
                      "reference_queries": rq, "inside": bool(lo <= r <= hi)})
    return table


def main(argv=None) -> int:
    from cosmos_common.cacheio import default_cache_dir
    from experiments.harness.runner import Context
    from experiments.harness.workloads import get_scale, with_scale

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=None, help="base vectors (default: the full "
                   "scale's 1,000,000)")
    p.add_argument("--queries", type=int, default=None, help="queries per dataset (default: "
                   "the full scale's 10,000)")
    p.add_argument("--ci-target", type=float, default=None,
                   help="the preset's stop target (default: the full scale's, 0.01)")
    p.add_argument("--cache-dir", default=None, help="workload and simulation cache "
                   "(default: $COSMOS_CACHE or ~/.cache/cosmos)")
    p.add_argument("--workers", type=int, default=None, help="local worker processes")
    p.add_argument("--out", default=None, help="folder for the sweep's trace files, 1-2 GB at "
                   "the full scale (default: check_full_ci in the cache folder)")
    p.add_argument("--json", default=None, help="also write the table to this JSON file")
    p.add_argument("--no-progress", action="store_true")
    a = p.parse_args(argv)
    full = get_scale("full")
    changes = {}
    if a.n is not None:
        changes["n"] = a.n
    if a.queries is not None:
        changes["num_queries"] = a.queries
    scale = with_scale(full, name="full" if not changes else "full-reduced", **changes)
    target = full.ci_target if a.ci_target is None else a.ci_target
    if not 0 < target < 1:
        p.error(f"--ci-target must be in (0, 1), got {target}")
    if a.json and Path(a.json).exists():
        p.error(f"--json {a.json}: exists; give a new file (nothing is written over)")
    # one folder of traces per workload size: a trace file is reused only for its own workload
    folder = Path(a.out) if a.out else \
        Path(a.cache_dir or default_cache_dir()) / "check_full_ci"
    out = folder / f"n{scale.n}-q{scale.num_queries}"
    out.mkdir(parents=True, exist_ok=True)
    ctx = Context(out=out, scale=scale, cache_dir=Path(a.cache_dir) if a.cache_dir else None,
                  workers=a.workers, progress=not a.no_progress)
    table = check(ctx, target)
    print(f"preset (ci_target {target:g}) against every query, {scale.n:,} vectors, "
          f"{scale.num_queries:,} queries:")
    print(f"  {'dataset':<8} {'ratio':<18} {'preset':>7} {'(queries)':>13} {'reference':>9} "
          f"{'95 % CI':>15} {'(queries)':>13}  inside")
    for r in table:
        print(f"  {r['dataset']:<8} {r['ratio']:<18} {r['preset']:>7.3f} "
              f"{r['preset_queries']:>13} {r['reference']:>9.3f} "
              f"{r['reference_ci_low']:>7.3f}-{r['reference_ci_high']:<7.3f} "
              f"{r['reference_queries']:>13}  {'yes' if r['inside'] else 'NO'}")
    if a.json:
        from experiments.harness.common import atomic_write_text

        atomic_write_text(Path(a.json), json.dumps({"scale": scale.to_dict(),
                                                    "ci_target": target, "rows": table},
                                                   indent=1))
    return 0 if all(r["inside"] for r in table) else 1


if __name__ == "__main__":
    raise SystemExit(main())
