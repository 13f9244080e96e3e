"""Datasets, clustered graph ANNS indexes and the traced beam search. Knows nothing about DRAM or CXL.

Main entry points (imported lazily, so ``import graphs`` stays light):

- :func:`graphs.make_workload` -- dataset -> cached clustered index -> cached :class:`LogicalTrace`;
  :func:`graphs.cached_trace` -- the trace it has cached for the same arguments, or None;
  :func:`graphs.make_workloads` / :func:`graphs.cached_traces` -- the same at several probe
  counts, traced by one search at the largest
- :func:`graphs.make_template_workload` -- a logical clustered index of N vectors (up to a
  billion) whose probes are real searches on T template clusters (:mod:`graphs.templates`)
- :func:`graphs.get_dataset`, :class:`graphs.Dataset`, :func:`graphs.load_dataset`
- :func:`graphs.get_index` / :func:`graphs.build_index`, :class:`graphs.IndexParams`
- :func:`graphs.build_vamana` / :func:`graphs.robust_prune` -- DiskANN's Vamana graph of one set of
  points, as the DiskANN library builds it or as its paper does (``IndexParams(graph="vamana")``
  or ``graph="vamana-paper"`` builds one per cluster)
- :func:`graphs.search.search`, :func:`graphs.search.search_prefixes` (module functions),
  :func:`graphs.trace_index`, :func:`graphs.trace_indexes`
- :func:`graphs.save_trace` / :func:`graphs.load_trace`, :func:`graphs.export_clusters`
"""

_EXPORTS = {
    "make_workload": "workload",
    "make_workloads": "workload",
    "cached_trace": "workload",
    "cached_traces": "workload",
    "get_dataset": "workload",
    "trace_index": "workload",
    "trace_indexes": "workload",
    "export_clusters": "workload",
    "DEFAULTS": "workload",
    "make_template_workload": "templates",
    "Dataset": "dataset",
    "load_dataset": "dataset",
    "real_dataset": "dataset",
    "IndexParams": "index",
    "ClusteredIndex": "index",
    "build_index": "index",
    "get_index": "index",
    "build_vamana": "vamana",
    "robust_prune": "vamana",
    "LogicalTrace": "trace",
    "save_trace": "trace",
    "load_trace": "trace",
    "save_clusters": "trace",
    "load_clusters": "trace",
    "exact_knn": "groundtruth",
    "recall_at_k": "groundtruth",
    "generate": "synthetic",
}

__all__ = list(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'graphs' has no attribute {name!r}")
