"""Time and memory of building a cluster-template workload (graphs.templates) from nothing.

Goal (issue 49): the paper scale's workloads of both datasets (1e9 vectors, 1,024 clusters, 8
templates, 10,000 queries) within 60 minutes on 2 cores, at most 16 GB. Each phase is timed
on its own into a fresh cache folder (nothing reused): the logical geometry (k-means and the
sample's assignment), growing the templates beyond the sample, their graphs, and the traced
search of every query; peak memory is the process's maximum RSS.

    python experiments/tools/bench_templates.py                       # sift, the paper scale
    python experiments/tools/bench_templates.py --family deep
    python experiments/tools/bench_templates.py --n 100000000 --clusters 512 --templates 8
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from experiments.harness.workloads import SCALES  # noqa: E402
from graphs import synthetic  # noqa: E402
from graphs.index import IndexParams  # noqa: E402
from graphs.templates import (TemplateParams, build_templates, logical_geometry,  # noqa: E402
                              trace_templates)


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv=None) -> int:
    paper = SCALES["paper"]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--family", default="sift", choices=sorted(synthetic.SPECS))
    ap.add_argument("--n", type=int, default=paper.n)
    ap.add_argument("--clusters", type=int, default=paper.num_clusters)
    ap.add_argument("--templates", type=int, default=paper.templates)
    ap.add_argument("--num-queries", type=int, default=paper.num_queries)
    ap.add_argument("--num-probes", type=int, default=paper.num_probes)
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args(argv)
    p = TemplateParams(args.family, args.n, args.clusters, args.templates)
    index = IndexParams(num_clusters=args.clusters)
    rows = []

    def phase(name, fn):
        w, c = time.perf_counter(), _cpu_s()
        out = fn()
        rows.append((name, time.perf_counter() - w, _cpu_s() - c, _peak_mb()))
        print(f"{name}: {rows[-1][1]:.1f} s ({rows[-1][2]:.1f} s CPU), peak {rows[-1][3]:,.0f} MB",
              flush=True)
        return out

    metric = synthetic.SPECS[args.family].metric
    geo = phase("geometry", lambda: logical_geometry(p, metric, index.kmeans_iters))
    timings: dict = {}
    ti = phase("templates (grow + graphs)",
               lambda: build_templates(p, index, args.threads, progress=True, geometry=geo,
                                       timings=timings))
    print(f"  of which growing {timings['grow']:.1f} s, graphs {timings['graphs']:.1f} s; "
          f"template sizes {list(map(int, ti.sizes[ti.templates]))}, draws "
          f"{list(map(int, ti.grown_rows))}", flush=True)
    queries = synthetic.generate(args.family, args.num_queries, 0, queries=True)
    tr = phase("traced search", lambda: trace_templates(ti, queries, args.num_probes,
                                                         progress=False))
    pq = tr.per_query()
    total_w, total_c = sum(r[1] for r in rows), sum(r[2] for r in rows)
    print(f"total: {total_w:.1f} s ({total_c:.1f} s CPU), peak {_peak_mb():,.0f} MB; "
          f"{pq['hops'].mean():.0f} hops and {pq['distances'].mean():,.0f} distance "
          f"computations per query, template recall {tr.meta['template_recall']}, "
          f"{tr.num_nodes:,} nodes touched")
    return 0


if __name__ == "__main__":
    sys.exit(main())
