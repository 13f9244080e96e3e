"""Cluster placement across CXL devices and load-imbalance metrics (numpy only).

Pure functions on plain arrays (docs/contracts.md, section 2; docs/placement.md)::

    import placement
    device = placement.place(sizes, num_devices=4, policy="adjacency", centroids=centroids)
    loads = placement.device_loads(device, query_ptr, search_cluster, num_devices=4)
    placement.load_imbalance_ratio(loads)

Importing this package imports numpy only (no numba, hnswlib or the simulator's packages).
"""

from placement.adjacency import cluster_adjacency, validate_adjacency
from placement.load import (
    batch_lir,
    device_cluster_count_matrix,
    device_loads,
    lir,
    load_imbalance_ratio,
    query_device_loads,
    query_lir,
    search_work,
    validate_probes,
)
from placement.policies import (
    POLICIES,
    CapacityError,
    PlacementProblem,
    adjacency_aware,
    adjacency_aware_steps,
    get_policy,
    place,
    register_policy,
)

__all__ = [
    "POLICIES",
    "CapacityError",
    "PlacementProblem",
    "adjacency_aware",
    "adjacency_aware_steps",
    "batch_lir",
    "cluster_adjacency",
    "device_cluster_count_matrix",
    "device_loads",
    "get_policy",
    "lir",
    "load_imbalance_ratio",
    "place",
    "query_device_loads",
    "query_lir",
    "register_policy",
    "search_work",
    "validate_adjacency",
    "validate_probes",
]
