"""Speed of the placement policies: 1,000,000 clusters on 64 devices (goal: under 10 s).

Clusters sit on a 1000 x 1000 torus grid (a stand-in for centroid geometry that costs nothing
to build); each cluster's adjacency lists its 64 nearest grid cells, nearest first (ties by
offset), so Algorithm 1 weighs all 64 of them on 64 devices: the O(C x D x A) worst case for
this D. Sizes are lognormal (median about 1100 vectors, seeded). The timed call is the full
``placement.place`` (input validation, the policy, the capacity check); wall and CPU time are
printed, since on a shared machine the wall time grows with the other jobs.

    python experiments/tools/bench_placement.py                       # adjacency, 1 M clusters, 64 devices
    python experiments/tools/bench_placement.py --policies adjacency size_balanced round_robin random
    python experiments/tools/bench_placement.py --capacity-slack 0.02 # equal devices, 2 % headroom
    python experiments/tools/bench_placement.py --json figures.json   # also write the figures as JSON
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import placement  # noqa: E402


def grid_adjacency(side: int, num_neighbors: int) -> np.ndarray:
    """(side^2, A) int32: the A nearest cells of each cell of a side x side torus, nearest first."""
    r = int(np.ceil(np.sqrt(num_neighbors))) + 1
    dx, dy = np.meshgrid(np.arange(-r, r + 1), np.arange(-r, r + 1))
    dx, dy = dx.ravel(), dy.ravel()
    o = np.lexsort((dx, dy, dx * dx + dy * dy))
    dx, dy = dx[o][1 : num_neighbors + 1], dy[o][1 : num_neighbors + 1]  # drop (0, 0)
    ids = np.arange(side * side)
    x, y = ids % side, ids // side
    adj = np.empty((side * side, num_neighbors), dtype=np.int32)
    for j in range(num_neighbors):
        adj[:, j] = ((y + dy[j]) % side) * side + (x + dx[j]) % side
    return adj


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--side", type=int, default=1000, help="grid side: clusters = side^2 (default 1,000,000)")
    ap.add_argument("--devices", type=int, default=64)
    ap.add_argument("--neighbors", type=int, default=64, help="adjacency length A")
    ap.add_argument("--policies", nargs="+", default=["adjacency"], choices=list(placement.POLICIES))
    ap.add_argument("--capacity-slack", type=float, default=None,
                    help="equal devices of (1 + slack) x total / D; default unconstrained")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    args = ap.parse_args(argv)

    t = time.perf_counter()
    adj = grid_adjacency(args.side, args.neighbors)
    C = adj.shape[0]
    sizes = np.random.default_rng(args.seed).lognormal(7.0, 0.5, C).astype(np.int64)
    caps = None
    if args.capacity_slack is not None:
        caps = int(np.ceil(sizes.sum() / args.devices * (1 + args.capacity_slack)))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"machine: {os.cpu_count()} CPUs, 1-minute load average {load:.2f} (timings scale with contention)")
    print(f"inputs: {C:,} clusters, adjacency {adj.shape} {adj.dtype}, {args.devices} devices, "
          f"capacity {'unconstrained' if caps is None else caps} (built in {time.perf_counter() - t:.1f} s)")
    def goal(dt):
        if C != 1_000_000 or args.devices != 64:
            return ""
        return f"  goal (1M clusters, 64 devices) < 10 s: {'met' if dt < 10 else 'MISSED'}"

    figures = {"clusters": int(C), "devices": args.devices, "neighbors": args.neighbors,
               "capacity_slack": args.capacity_slack, "load_average_1min": load, "policies": {}}
    for policy in args.policies:
        t, cpu = time.perf_counter(), time.process_time()
        dev = placement.place(sizes, args.devices, policy, adjacency=adj, capacities=caps, seed=args.seed)
        dt, dcpu = time.perf_counter() - t, time.process_time() - cpu
        used = np.bincount(dev, weights=sizes, minlength=args.devices)
        same = (dev[adj[:, 0]] == dev).mean()  # nearest neighbor on the same device
        print(f"{policy:14s} {dt:6.2f} s wall, {dcpu:5.2f} s CPU  ({dt / C * 1e6:.2f} us/cluster)  size max/mean {used.max() / used.mean():.4f}  "
              f"nearest neighbor co-located {same:.4f}" + goal(dt))
        figures["policies"][policy] = {"wall_s": dt, "cpu_s": dcpu,
                                       "size_max_over_mean": float(used.max() / used.mean()),
                                       "nearest_colocated_fraction": float(same)}
    if args.json:
        from experiments.harness.common import write_json

        write_json(args.json, figures, overwrite=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
