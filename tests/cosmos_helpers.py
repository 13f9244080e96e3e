"""Small hand-built logical traces (docs/contracts.md, section 1) for the cosmos tests."""

from __future__ import annotations

import json

import numpy as np


def make_trace(num_queries=20, num_clusters=8, cluster_size=200, probes=2, hops=10,
               reads_per_hop=8, dim=128, vector_bytes=128, max_degree=32, k=10, seed=0):
    """A seeded trace with the contract's arrays: every search makes ``hops`` hops, each
    reading ``reads_per_hop`` vectors of its cluster; probes are distinct clusters."""
    rng = np.random.default_rng(seed)
    n = num_clusters * cluster_size
    perm = rng.permutation(n)
    cluster_ptr = np.arange(num_clusters + 1, dtype=np.int64) * cluster_size
    cluster_nodes = perm.astype(np.int32)
    search_cluster, search_entry, hop_ptr = [], [], [0]
    hop_node, hop_degree, read_ptr, read_node, inserts = [], [], [0], [], []
    for q in range(num_queries):
        cl = rng.choice(num_clusters, size=probes, replace=False)
        for c in cl:
            members = cluster_nodes[cluster_ptr[c]:cluster_ptr[c + 1]]
            search_cluster.append(c)
            search_entry.append(members[0])
            for h in range(hops):
                hop_node.append(rng.choice(members))
                hop_degree.append(max_degree)
                reads = rng.choice(members, size=reads_per_hop, replace=False)
                read_node.extend(reads)
                read_ptr.append(len(read_node))
                inserts.append(reads_per_hop // 2)
            hop_ptr.append(len(hop_node))
    query_ptr = np.arange(num_queries + 1, dtype=np.int64) * probes
    adjacency = np.array([[(c + j) % num_clusters for j in range(1, num_clusters)]
                          for c in range(num_clusters)], dtype=np.int32)
    meta = dict(dataset="handmade", n=n, dim=dim, dtype="uint8" if vector_bytes == dim else
                "float32", metric="l2", vector_bytes=vector_bytes, max_degree=max_degree,
                cand_list_len=64, num_clusters=num_clusters, num_probes=probes, k=k,
                recall=float("nan"), seed=seed, num_queries=num_queries, format_version=1)
    return dict(
        meta=np.array(json.dumps(meta)), cluster_ptr=cluster_ptr, cluster_nodes=cluster_nodes,
        centroids=np.zeros((num_clusters, dim), np.float32), cluster_adjacency=adjacency,
        query_ptr=query_ptr, search_cluster=np.array(search_cluster, np.int32),
        search_entry=np.array(search_entry, np.int32),
        search_hop_ptr=np.array(hop_ptr, np.int64), hop_node=np.array(hop_node, np.int32),
        hop_degree=np.array(hop_degree, np.int32), hop_read_ptr=np.array(read_ptr, np.int64),
        read_node=np.array(read_node, np.int32), hop_cand_inserts=np.array(inserts, np.int32),
        result_ids=np.zeros((num_queries, k), np.int64))
