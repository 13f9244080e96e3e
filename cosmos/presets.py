"""The paper's six systems (Fig. 4 of the Cosmos paper) as named :class:`SystemConfig` instances.

All six share the same hardware defaults (cosmos.config); they differ only in where the work
runs (``kind``), whether rank-level PUs are used, and the placement policy:

- ``base``: data in CXL memory, the host does traversal, distances and candidate updates; every
  cache line crosses the CXL link.
- ``dram-only``: the same work with the data in host DRAM (capacity not limited).
- ``cxl-anns``: host traversal; device accelerators read the vectors locally and return only
  distances; fine-grained scheduling (candidate insert/sort deferred off the critical path).
- ``cosmos-norank``: full search offload to the device GPC, no rank-level PUs.
- ``cosmos-noalgo``: full Cosmos with round-robin cluster placement.
- ``cosmos``: everything (GPC offload, rank-level PUs, adjacency-aware placement).

To add a system: build a ``SystemConfig`` (``dataclasses.replace`` of one of these) and add it
to ``PRESETS``; a new execution model needs a new ``kind`` in cosmos.program.
"""

from __future__ import annotations

import dataclasses

from cosmos.config import RankPUConfig, SystemConfig

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
}

DESCRIPTIONS: dict[str, str] = {
    "base": "host CPU search, all data in CXL memory (every line crosses the link)",
    "dram-only": "host CPU search, all data in host DRAM",
    "cxl-anns": "host traversal + device distance accelerators, fine-grained scheduling",
    "cosmos-norank": "full offload to device GPCs, no rank-level PUs",
    "cosmos-noalgo": "Cosmos with round-robin cluster placement",
    "cosmos": "full offload to GPCs + rank-level PUs + adjacency-aware placement",
}


def get_preset(name: str, **replace) -> SystemConfig:
    """The preset ``name`` (optionally with top-level fields replaced); clear error if unknown."""
    if name not in PRESETS:
        raise ValueError(f"unknown system {name!r}; expected one of {sorted(PRESETS)}")
    cfg = PRESETS[name]
    if replace:
        cfg = dataclasses.replace(cfg, **replace)
    return cfg.validate()
