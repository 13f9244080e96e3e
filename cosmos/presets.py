"""The paper's six systems (Fig. 4 of the Cosmos paper) and six more graph systems, and four
scan systems, as named :class:`SystemConfig` instances.

All share the same hardware defaults (cosmos.config); they differ only in their execution
model (``kind``: a declaration registered in cosmos.systems), whether rank-level PUs are used,
and the placement policy:

- ``base``: data in CXL memory, the host does traversal, distances and candidate updates; every
  cache line crosses the CXL link.
- ``dram-only``: the same work with the data in host DRAM (capacity not limited).
- ``cxl-anns``: host traversal; device accelerators read the vectors locally and return only
  distances; fine-grained scheduling (candidate insert/sort deferred off the critical path).
- ``cosmos-norank``: full search offload to the device GPC, no rank-level PUs.
- ``cosmos-noalgo``: full Cosmos with round-robin cluster placement.
- ``cosmos``: everything (GPC offload, rank-level PUs, adjacency-aware placement).

Beyond the paper, completing the 2 x 2 of Cosmos's two contributions (where the traversal runs
x what computes the distances) and CXL-ANNS's graph cache:

- ``cxl-anns-cache``: CXL-ANNS with its hop-count graph cache in host DRAM (``graph_cache``).
- ``cosmos-accel``: full offload to the GPCs, distances on a CXL-ANNS-style device
  accelerator reading whole vectors (no rank PUs); adjacency-aware placement as Cosmos.
- ``cxl-anns-rankpu``: CXL-ANNS's host traversal, distances on the rank-level PUs;
  round-robin placement as CXL-ANNS.
- ``cxl-anns-switch``: CXL-ANNS's host traversal, distances on a distance accelerator in
  the CXL switch (BEACON's placement, MICRO 2022): vectors cross the device links but not
  the host's port; round-robin placement as CXL-ANNS.
- ``cxl-anns-dimm``: CXL-ANNS's host traversal, distances on accelerators in the DIMM
  buffers (AxDIMM's placement, IEEE Micro 2022): whole vectors read rank-locally, off the
  channel's data bus; round-robin placement as CXL-ANNS.
- ``cosmos-switch``: the whole search on general-purpose cores in the CXL switch
  (``switch_core``: as many contexts as the four devices' GPCs, with the GPC's figures),
  reading every device over its link (whole vectors, no rank PUs); adjacency-aware
  placement as Cosmos, so it differs from ``cosmos-norank`` in where the cores sit.

The scan systems (``SCAN_PRESETS``, replaying the IVF-PQ and exact-scan traces of
graphs.ivfpq): ``ivfpq-host``, ``ivfpq-pnm``, ``exact-host``, ``exact-pnm``, and (issue 54)
``ivfpq-host-precomputed``, ``ivfpq-host-precomputed-prefetch``, ``ivfpq-pnm-chamvs``,
``ivfpq-pnm-chamvs-perlist``, ``exact-host-prefetch``, ``exact-pnm-batch`` (B queries per
pass over the vectors; it replays cosmos.systems.batch_trace of an exact trace).

To add a system: declare its execution model in cosmos.systems (``register_system``), or
reuse one, and add a ``SystemConfig`` naming it here (docs/adding_a_system.md).
"""

from __future__ import annotations

import dataclasses

from cosmos.config import RankPUConfig, SystemConfig
from cosmos.systems import model_for, validate_system

_NO_RANK = RankPUConfig(enabled=False)

PRESETS: dict[str, SystemConfig] = {
    "base": SystemConfig(name="base", kind="host-cxl", placement="round_robin",
                         rank_pu=_NO_RANK),
    "dram-only": SystemConfig(name="dram-only", kind="host-dram", placement="round_robin",
                              rank_pu=_NO_RANK),
    "cxl-anns": SystemConfig(name="cxl-anns", kind="cxl-anns", placement="round_robin",
                             rank_pu=_NO_RANK),
    "cosmos-norank": SystemConfig(name="cosmos-norank", kind="cosmos", placement="adjacency",
                                  rank_pu=_NO_RANK),
    "cosmos-noalgo": SystemConfig(name="cosmos-noalgo", kind="cosmos", placement="round_robin"),
    "cosmos": SystemConfig(name="cosmos", kind="cosmos", placement="adjacency"),
    "cxl-anns-cache": SystemConfig(name="cxl-anns-cache", kind="cxl-anns-cache",
                                   placement="round_robin", rank_pu=_NO_RANK),
    "cosmos-accel": SystemConfig(name="cosmos-accel", kind="cosmos-accel",
                                 placement="adjacency", rank_pu=_NO_RANK),
    "cxl-anns-rankpu": SystemConfig(name="cxl-anns-rankpu", kind="cxl-anns-rankpu",
                                    placement="round_robin"),
    "cxl-anns-switch": SystemConfig(name="cxl-anns-switch", kind="cxl-anns-switch",
                                    placement="round_robin", rank_pu=_NO_RANK),
    "cxl-anns-dimm": SystemConfig(name="cxl-anns-dimm", kind="cxl-anns-dimm",
                                  placement="round_robin", rank_pu=_NO_RANK),
    "cosmos-switch": SystemConfig(name="cosmos-switch", kind="cosmos-switch",
                                  placement="adjacency", rank_pu=_NO_RANK),
}

#: Scan systems (IVF-PQ and exact scan on the graph index's k-means lists): they replay the
#: scan traces of graphs.ivfpq (``cosmos graphs trace --index ivfpq|exact``), not graph
#: traces. Placement as the graph systems they mirror: the host systems as Base
#: (round-robin), the near-memory ones as Cosmos (Algorithm 1: the lists are the clusters).
SCAN_PRESETS: dict[str, SystemConfig] = {
    "ivfpq-host": SystemConfig(name="ivfpq-host", kind="ivfpq-host", placement="round_robin",
                               rank_pu=_NO_RANK),
    "ivfpq-pnm": SystemConfig(name="ivfpq-pnm", kind="ivfpq-pnm", placement="adjacency",
                              rank_pu=_NO_RANK),
    "exact-host": SystemConfig(name="exact-host", kind="exact-host", placement="round_robin",
                               rank_pu=_NO_RANK),
    "exact-pnm": SystemConfig(name="exact-pnm", kind="exact-pnm", placement="adjacency",
                              rank_pu=_NO_RANK),
    # issue 54: the same lookup-table strategy on both sides, ChamVS's flow, host prefetch
    **{n: SystemConfig(name=n, kind=n, placement="round_robin", rank_pu=_NO_RANK)
       for n in ("ivfpq-host-precomputed", "ivfpq-host-precomputed-prefetch",
                 "exact-host-prefetch")},
    **{n: SystemConfig(name=n, kind=n, placement="adjacency", rank_pu=_NO_RANK)
       for n in ("ivfpq-pnm-chamvs", "ivfpq-pnm-chamvs-perlist")},
    # issue 54: exact-pnm with B = scan_unit.batch_queries queries per pass over the vectors
    # (replays cosmos.systems.batch_trace of an exact trace)
    "exact-pnm-batch": SystemConfig(name="exact-pnm-batch", kind="exact-pnm-batch",
                                    placement="adjacency", rank_pu=_NO_RANK),
}

#: The paper's six systems (Fig. 4), in the paper's order.
PAPER_SYSTEMS = ("base", "dram-only", "cxl-anns", "cosmos-norank", "cosmos-noalgo", "cosmos")

#: Cosmos's two contributions as a 2 x 2: (where the traversal runs, what computes the
#: distances) -> preset. Device-side distance units: a CXL-ANNS-style accelerator reading
#: whole vectors, or Cosmos's rank-level PUs.
TWO_BY_TWO = {("host", "accelerator"): "cxl-anns", ("host", "rank PUs"): "cxl-anns-rankpu",
              ("device GPC", "accelerator"): "cosmos-accel", ("device GPC", "rank PUs"): "cosmos"}

DESCRIPTIONS: dict[str, str] = {
    "base": "host CPU search, all data in CXL memory (every line crosses the link)",
    "dram-only": "host CPU search, all data in host DRAM",
    "cxl-anns": "host traversal + device distance accelerators, fine-grained scheduling",
    "cosmos-norank": "full offload to device GPCs, no rank-level PUs",
    "cosmos-noalgo": "Cosmos with round-robin cluster placement",
    "cosmos": "full offload to GPCs + rank-level PUs + adjacency-aware placement",
    "cxl-anns-cache": "CXL-ANNS + hop-count graph cache in host DRAM (graph_cache.hops, "
                      "graph_cache.capacity_bytes)",
    "cosmos-accel": "full offload to GPCs, distances on a device accelerator (no rank PUs)",
    "cxl-anns-rankpu": "host traversal as CXL-ANNS, distances on rank-level PUs",
    "cxl-anns-switch": "host traversal as CXL-ANNS, distances on an accelerator in the CXL "
                       "switch (vectors cross the device links, not the host's port)",
    "cxl-anns-dimm": "host traversal as CXL-ANNS, distances on accelerators in the DIMM "
                     "buffers (whole vectors read rank-locally, off the channel bus)",
    "cosmos-switch": "full search on cores in the CXL switch, reading every device over its "
                     "link (whole vectors, no rank PUs)",
    "ivfpq-host": "IVF-PQ scan on the host, a lookup table per probed list, codes and "
                  "re-rank vectors over the CXL link (scan traces)",
    "ivfpq-pnm": "IVF-PQ near memory (ChamVS-style decoding units per device), precomputed "
                 "tables: the query's table built on the host and sent down; host merges "
                 "(scan traces)",
    "exact-host": "exact scan on the host, full vectors over the CXL link (scan traces)",
    "exact-pnm": "exact scan near memory (dot-product units per device), host merges "
                 "(scan traces)",
    "ivfpq-host-precomputed": "IVF-PQ scan on the host with precomputed tables (one query "
                              "table, per list its term table added), over the CXL link "
                              "(scan traces)",
    "ivfpq-host-precomputed-prefetch": "ivfpq-host-precomputed with the L2 stream "
                                       "prefetcher on the list reads (scan traces)",
    "ivfpq-pnm-chamvs": "IVF-PQ near memory, ChamVS's flow: query broadcast, the query's "
                        "table built on each device (precomputed tables) (scan traces)",
    "ivfpq-pnm-chamvs-perlist": "IVF-PQ near memory, ChamVS's flow with a table per probed "
                                "list built on the device (scan traces)",
    "exact-host-prefetch": "exact-host with the L2 stream prefetcher on the list reads "
                           "(scan traces)",
    "exact-pnm-batch": "exact-pnm with batched GEMM reuse: scan_unit.batch_queries queries "
                       "share one read of each probed list (batched exact scan traces)",
}


def presets_for_index(index: str) -> tuple[str, ...]:
    """The presets (graph and scan) whose system replays traces of ``index`` (``"graph"``,
    ``"ivfpq"``, ``"exact"``): the names ``--system`` accepts for such a trace."""
    return tuple(name for name, cfg in {**PRESETS, **SCAN_PRESETS}.items()
                 if model_for(cfg).index == index)


def get_preset(name: str, **replace) -> SystemConfig:
    """The preset ``name`` (optionally with top-level fields replaced); clear error if unknown."""
    known = {**PRESETS, **SCAN_PRESETS}
    if name not in known:
        raise ValueError(f"unknown system {name!r}; expected one of {sorted(known)}")
    cfg = known[name]
    if replace:
        cfg = dataclasses.replace(cfg, **replace)
    return validate_system(cfg)
