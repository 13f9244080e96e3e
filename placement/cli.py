"""``cosmos place``: place clusters on devices and report sizes, loads and the LIR."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from cosmos_common import UserError

from placement.io import load_clusters, load_probes, save_placement
from placement.load import WORK_KINDS, batch_lir, device_loads, load_imbalance_ratio, query_lir
from placement.policies import POLICIES, place


def _capacities(text: str | None):
    if text is None:
        return None
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        raise UserError("--capacity: expected one number or a comma-separated list, one per device")
    try:
        vals = [int(p) for p in parts]
    except ValueError:
        raise UserError(f"--capacity: {text!r} is not a whole number or a comma-separated list of them") from None
    for v in vals:
        if not 0 <= v <= 2**63 - 1:
            raise UserError(f"--capacity: {v} is outside 0..2**63-1 (capacities are non-negative int64)")
    return vals[0] if len(vals) == 1 else vals


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "place",
        help="place clusters on CXL devices (Algorithm 1 and baselines); report sizes and LIR",
        description=(
            "Place clusters on devices with a placement policy and print per-device sizes; given "
            "a logical trace, also the per-device search load and the load imbalance ratio "
            "(LIR = max device load / ideal uniform load)."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="policies:\n" + "\n".join(f"  {s.name:14s} {s.help}" for s in POLICIES.values()),
    )
    p.add_argument("--clusters", required=True, metavar="FILE",
                   help="clusters.npz (sizes[, centroids, cluster_adjacency]), a logical trace .npz, "
                        "or a CSV with header cluster,size[,c0,c1,...]")
    p.add_argument("--devices", type=int, default=4, metavar="D",
                   help="number of CXL devices (default 4, the paper's system)")
    p.add_argument("--policy", default="adjacency", choices=list(POLICIES), help="placement policy")
    p.add_argument("--capacity", default=None, metavar="N[,N...]",
                   help="device capacity in the sizes' unit: one value for all devices or one per "
                        "device (default: unconstrained)")
    p.add_argument("--neighbors", type=int, default=None, metavar="A",
                   help="neighbors per cluster (>= 1) when deriving the adjacency from centroids "
                        "(default min(C-1, D): Algorithm 1 weighs only the first D)")
    p.add_argument("--metric", default="l2", choices=["l2", "ip", "cosine", "angular"],
                   help="centroid distance used to derive the adjacency (default l2)")
    p.add_argument("--seed", type=int, default=0, help="seed of randomized policies (default 0)")
    p.add_argument("--trace", default=None, metavar="TRACE.npz",
                   help="logical trace whose probes give the per-device load and the LIR")
    p.add_argument("--work", default="searches", choices=list(WORK_KINDS),
                   help="load of one cluster search: 1 (searches), its hops, or its distance computations")
    p.add_argument("--batch", type=int, default=None, metavar="Q",
                   help="with --trace: also report the LIR of batches of Q >= 1 consecutive queries")
    p.add_argument("--out", default=None, metavar="FILE",
                   help="write the placement as CSV cluster,device,size (an existing file is "
                        "refused unless --force)")
    p.add_argument("--force", action="store_true", help="replace an existing --out file")
    p.set_defaults(func=run)


def _check_options(args) -> None:
    """Reject bad numeric options before any file is read."""
    if args.devices < 1:
        raise UserError(f"--devices must be >= 1, got {args.devices}")
    if args.seed < 0:
        raise UserError(f"--seed must be >= 0, got {args.seed}")
    if args.neighbors is not None and args.neighbors < 1:
        raise UserError(f"--neighbors must be >= 1 (neighbors per cluster), got {args.neighbors}")
    if args.batch is not None:
        if args.batch < 1:
            raise UserError(f"--batch must be >= 1 (queries per batch), got {args.batch}")
        if args.trace is None:
            raise UserError("--batch needs --trace (the batches are of the trace's queries)")


def run(args) -> int:
    _check_options(args)
    from cosmos_common.outdir import check_new_file

    check_new_file(args.out, args.force, "--out")
    meta = load_clusters(args.clusters)
    C = meta.sizes.shape[0]
    spec = POLICIES[args.policy]
    adjacency = centroids = None
    if spec.needs_adjacency:
        if meta.adjacency is not None and args.neighbors is None:
            adjacency = meta.adjacency
        elif meta.centroids is not None:
            centroids = meta.centroids
        elif meta.adjacency is not None:
            adjacency = meta.adjacency
        else:
            raise UserError(
                f"{args.clusters}: policy {args.policy!r} needs cluster_adjacency or centroids, and the file has neither"
            )
    device = place(
        meta.sizes, args.devices, args.policy,
        capacities=_capacities(args.capacity), adjacency=adjacency, centroids=centroids,
        num_neighbors=args.neighbors, metric=args.metric, seed=args.seed,
    )
    D = args.devices
    used = np.zeros(D, dtype=np.int64)
    np.add.at(used, device, meta.sizes)
    count = np.bincount(device, minlength=D)
    loads = None
    if args.trace is not None:
        probes = load_probes(args.trace, args.work, num_clusters=C, clusters_file=args.clusters,
                             cluster_sizes=meta.sizes if meta.unit == "vectors" else None,
                             centroids=meta.centroids)
        loads = device_loads(device, probes.query_ptr, probes.search_cluster, D, probes.weights)

    print(f"{C} clusters from {args.clusters} (sizes: {meta.unit}) on {D} devices, policy {args.policy}")
    head = f"{'device':>6} {'clusters':>9} {'size':>14} {'size_share':>10}"
    if loads is not None:
        head += f" {'load_' + args.work:>18} {'load_share':>10}"
    print(head)
    total = max(int(used.sum()), 1)
    for d in range(D):
        line = f"{d:>6} {int(count[d]):>9} {int(used[d]):>14} {used[d] / total:>10.4f}"
        if loads is not None:
            line += f" {loads[d]:>18.0f} {loads[d] / max(loads.sum(), 1e-300):>10.4f}"
        print(line)
    if used.sum() > 0:
        print(f"size imbalance (max / mean): {load_imbalance_ratio(used):.4f}")
    if loads is not None:
        Q = probes.query_ptr.shape[0] - 1
        print(f"queries {Q}, cluster searches {probes.search_cluster.shape[0]}")
        if loads.sum() > 0:
            print(f"LIR (all queries): {load_imbalance_ratio(loads):.4f}")
            ql = query_lir(device, probes.query_ptr, probes.search_cluster, D, probes.weights)
            print(f"LIR per query: mean {np.nanmean(ql):.4f}, max {np.nanmax(ql):.4f}")
            if args.batch:
                bl = batch_lir(device, probes.query_ptr, probes.search_cluster, D, args.batch, probes.weights)
                print(f"LIR per batch of {args.batch}: mean {np.nanmean(bl):.4f}, max {np.nanmax(bl):.4f}")
        else:
            print("LIR undefined: the trace has no load")
    if args.out:
        save_placement(args.out, device, meta.sizes, overwrite=args.force)
        print(f"wrote {args.out}")
    sys.stdout.flush()
    return 0
