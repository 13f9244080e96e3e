"""Validate cluster-template workloads against the real index at the same N and C.

Where the real clustered index can be built, a templated workload of the same size (the same
logical geometry, T of its clusters as templates) must give the same work and the same
system figures: hops, distance computations and DRAM requests per query, per-device load and
LIR, and every system's QPS. Prints one table (real, templated, relative difference) per
dataset and exits 1 if a difference is above the tolerance::

    python experiments/tools/check_templates.py --scale default          # 50k vectors, 64 clusters
    python experiments/tools/check_templates.py --scale full --templates 8
    python experiments/tools/check_templates.py --scale full --n 4000000 --datasets sift
    python experiments/tools/check_templates.py --scale full --n 4000000 --datasets sift --real-centroids

Beyond the sample (``--n`` above graphs.templates.DEFAULT_SAMPLE_ROWS) the templated workload's
k-means trains on vectors drawn from the sample, the real index's on vectors drawn from all n:
two equally likely k-means of the family, whose placements differ. ``--real-centroids`` gives
the templated workload the real index's centroids, so that the comparison tests the template
method alone.

``--n`` and ``--clusters`` change the scale's size and cluster count (the rest of the scale
stays: queries, probes, simulated queries), for a real index larger than the scales' own.

docs/graphs.md ("Cluster templates") holds the default-scale table.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np

import placement
from cosmos.presets import PAPER_SYSTEMS, get_preset
from cosmos.simulate import simulate
from experiments.harness.workloads import FAMILIES, SCALES, get_scale, workload
from graphs.templates import make_template_workload

DEVICES = 4     # the paper's four CXL devices


def _placement_load(tr) -> tuple[float, int]:
    """Mean per-query LIR and the busiest device's probes of ``tr``'s clusters placed by
    Algorithm 1 on :data:`DEVICES` devices."""
    sizes = np.diff(np.asarray(tr.cluster_ptr))
    dev = placement.place(sizes, DEVICES, "adjacency", adjacency=np.asarray(tr.cluster_adjacency))
    lir = placement.query_lir(dev, tr.query_ptr, tr.search_cluster, DEVICES).mean()
    return float(lir), int(placement.device_loads(dev, tr.query_ptr, tr.search_cluster,
                                                  DEVICES).max())


def compare(family: str, scale, templates: int, systems, queries: int | None,
            cache_dir=None, progress: bool = False, real_centroids: bool = False) -> list[dict]:
    """Rows ``{metric, real, templated, rel}`` of one dataset (module docstring);
    ``real_centroids``: the templated workload on the real index's centroids."""
    sc = get_scale(scale)
    real = workload(family, sc, cache_dir=cache_dir, progress=progress)
    tmpl = make_template_workload(family, n=sc.n, num_queries=sc.num_queries,
                                  num_clusters=sc.num_clusters, num_templates=templates,
                                  num_probes=sc.num_probes, cache_dir=cache_dir,
                                  progress=progress,
                                  centroids=real.centroids if real_centroids else None)
    rows = []

    def add(metric, a, b):
        rows.append({"metric": metric, "real": float(a), "templated": float(b),
                     "rel": float(b) / float(a) - 1.0 if a else 0.0})

    pa, pb = real.per_query(), tmpl.per_query()
    add("hops per query", pa["hops"].mean(), pb["hops"].mean())
    add("distances per query", pa["distances"].mean(), pb["distances"].mean())
    (lir_a, busy_a), (lir_b, busy_b) = _placement_load(real), _placement_load(tmpl)
    add("per-query LIR (adjacency, 4 devices)", lir_a, lir_b)
    add("busiest device's probes", busy_a, busy_b)
    n_q = queries or sc.sweep_queries
    for name in systems:
        cfg = get_preset(name)
        ra = simulate(cfg, real, num_queries=n_q, progress=False)
        rb = simulate(cfg, tmpl, num_queries=n_q, progress=False)
        add(f"{name}: DRAM requests per query",
            ra.program.requests_per_query()[:ra.queries].mean(),
            rb.program.requests_per_query()[:rb.queries].mean())
        add(f"{name}: QPS", ra.summary()["qps"], rb.summary()["qps"])
    return rows


def table(family: str, rows: list[dict], tolerance: float) -> str:
    out = [f"| {family} | real | templated | difference |", "|---|---|---|---|"]
    for r in rows:
        mark = "" if abs(r["rel"]) <= tolerance else " **over**"
        out.append(f"| {r['metric']} | {r['real']:,.4g} | {r['templated']:,.4g} | "
                   f"{100 * r['rel']:+.1f} %{mark} |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", default="default", choices=sorted(SCALES))
    ap.add_argument("--n", type=int, default=None,
                    help="base vectors (default: the scale's)")
    ap.add_argument("--clusters", type=int, default=None,
                    help="clusters of the index (default: the scale's)")
    ap.add_argument("--templates", type=int, default=None,
                    help="template clusters (default: an eighth of the clusters, at least 4)")
    ap.add_argument("--datasets", default=",".join(FAMILIES),
                    help="synthetic families, comma-separated (default: sift,deep)")
    ap.add_argument("--systems", default=",".join(PAPER_SYSTEMS),
                    help="systems whose QPS and DRAM requests are compared (default: the paper's six)")
    ap.add_argument("--queries", type=int, default=None,
                    help="queries simulated per run (default: the scale's sweep_queries)")
    ap.add_argument("--tolerance", type=float, default=0.05,
                    help="largest relative difference accepted (default 0.05)")
    ap.add_argument("--real-centroids", action="store_true",
                    help="build the templated workload on the real index's centroids instead "
                         "of k-means on its sample: beyond the sample (--n above 2,000,000) the "
                         "two k-means draw different training vectors, and this separates the "
                         "template method from that draw")
    ap.add_argument("--cache-dir", type=Path, default=None)
    ap.add_argument("--progress", action="store_true")
    args = ap.parse_args(argv)
    sc = get_scale(args.scale)
    if args.n is not None or args.clusters is not None:
        n = sc.n if args.n is None else args.n
        C = sc.num_clusters if args.clusters is None else args.clusters
        if not 1 <= C <= n:
            ap.error(f"--clusters {C}: expected 1 to --n ({n:,})")
        sc = dataclasses.replace(sc, name=f"{sc.name}-n{n}-c{C}", n=n, num_clusters=C)
    T = args.templates or min(sc.num_clusters, max(4, sc.num_clusters // 8))
    systems = [s for s in args.systems.split(",") if s]
    worst = 0.0
    print(f"scale {sc.name}: {sc.n:,} vectors, {sc.num_clusters} clusters, {T} templates")
    for family in [d for d in args.datasets.split(",") if d]:
        rows = compare(family, sc, T, systems, args.queries, args.cache_dir, args.progress,
                       args.real_centroids)
        print()
        print(table(family, rows, args.tolerance))
        worst = max(worst, max(abs(r["rel"]) for r in rows))
    ok = worst <= args.tolerance
    print(f"\nlargest difference {100 * worst:.1f} % "
          f"({'within' if ok else 'above'} the tolerance of {100 * args.tolerance:.0f} %)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
