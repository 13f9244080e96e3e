"""One simulation as a sweep task: a preset, a trace file and overrides in; a flat dict out.

:func:`simulate_task` is a module-level function of plain arguments, so it runs the same in
this process, in local worker processes and on Dask workers (which must see the trace path).

Its row is tidy: one scalar per field, units in the names. The summary's per-device lists
(``gpc_busy_fraction``, ``device_tasks``) are not in it; ask for ``per_device=True`` to get
one record per device (:func:`per_device_rows`) under the key ``"per_device"``, and split them
into a long table with :func:`split_per_device`.

:func:`retrieval_task` is the RAG pipeline's retrieval run (:mod:`rag`): one open-loop
simulation whose steady window's per-query latencies are the retrieval profile.
"""

from __future__ import annotations

import functools
from cosmos.metrics import flatten_summary, with_unit

__all__ = ["simulate_task", "simulation_identity", "simulation_cost", "flatten_summary",
           "per_device_rows", "split_per_device", "with_unit", "read_trace", "retrieval_task",
           "retrieval_identity"]

#: per-device list fields of the summary that :func:`per_device_rows` adds, and their column
#: there (cosmos.metrics: ``device_tasks`` = cluster-search tasks placed on each device)
LIST_COLUMNS = {"device_tasks": "cluster_searches"}


def per_device_rows(res, summary: dict) -> list[dict]:
    """One record per device (memory instance) of a run: cosmos.metrics.per_device plus the
    summary's per-device lists (:data:`LIST_COLUMNS`), utilizations named with their unit."""
    from cosmos.metrics import per_device

    rows = [{with_unit(k): (v.item() if hasattr(v, "item") else v) for k, v in r.items()}
            for r in per_device(res).to_dict("records")]
    for key, col in LIST_COLUMNS.items():
        values = summary.get(key)
        for i, r in enumerate(rows):
            r[col] = values[i] if values is not None and i < len(values) else float("nan")
    return rows


def split_per_device(rows: list[dict], keys: list[str]):
    """Sweep rows made with ``per_device=True`` -> (one row per run, one row per run x device).

    ``keys`` are the row fields (tags) that identify a run; they lead each per-device row.
    Returns two pandas DataFrames; the rows given are not modified.
    """
    import pandas as pd

    runs, devices = [], []
    for row in rows:
        row = dict(row)
        if "per_device" not in row:
            raise KeyError("split_per_device: a row has no 'per_device' field; run "
                           "simulate_task with per_device=True")
        per_dev = row.pop("per_device")
        missing = [k for k in keys if k not in row]
        if missing:
            raise KeyError(f"split_per_device: rows lack the key field(s) {missing}")
        runs.append(row)
        devices += [{**{k: row[k] for k in keys}, **d} for d in per_dev]
    return pd.DataFrame(runs), pd.DataFrame(devices)


def _system_config(system: str, overrides: dict | None, placement: str | None):
    """Preset ``system`` with the dotted-field ``overrides`` (and ``placement``) applied."""
    from cosmos.config import with_overrides
    from cosmos.presets import get_preset

    cfg = get_preset(system)
    ov = dict(overrides or {})
    if placement is not None:
        ov["placement"] = placement
    return with_overrides(cfg, ov) if ov else cfg


def simulation_identity(task: dict) -> dict:
    """What decides the result of ``simulate_task(**task)`` besides the trace's content and
    the code: the system's resolved configuration (so ``overrides={"device.count": 4}`` on a
    four-device preset is the preset itself) and the run options. ``tags`` are not part of it:
    they only lead the row. Used as the simulation cache's key (experiments.harness.resultcache)."""
    import inspect

    bound = inspect.signature(simulate_task).bind(**task)
    bound.apply_defaults()                       # seed=0 given or not: the same simulation
    t = dict(bound.arguments)
    del t["tags"]
    cfg = _system_config(t.pop("system"), t.pop("overrides"), t.pop("placement"))
    return {"config": cfg.to_dict(), **t}


def simulation_cost(task: dict) -> float:
    """A rough measure of the work of ``simulate_task(**task)``: the memory lines its queries
    read (one per hop for the adjacency list, ``ceil(vector_bytes / 64)`` per vector read; for
    a scan trace the lines of each scanned list's codes and the re-rank reads; of the first
    ``num_queries`` queries of the trace). Sweeps start the costliest simulations
    first, so the last ones to finish are short (it orders only: results do not depend on it).
    A trace it cannot read costs 0: the simulation itself then reports what is wrong with it.
    """
    import os
    import zipfile

    try:
        st = os.stat(task["trace_path"])
        nq = task.get("num_queries")
        return _trace_lines(str(task["trace_path"]), st.st_size, st.st_mtime_ns,
                            None if nq is None else int(nq))
    except (OSError, ValueError, KeyError, IndexError, TypeError, zipfile.BadZipFile):
        return 0.0


#: queries of the run that compiles a specialized engine build (compile_task): a few, so it
#: costs the compilation and almost nothing else
COMPILE_QUERIES = 4


def engine_build(task: dict) -> str | None:
    """The specialized engine build (:mod:`cosmos.specialize`) that the simulation of
    ``task`` (``simulate_task``'s or ``rag.retrieval_task``'s arguments) would compile
    before it simulates, or None: a run too short to use one
    (:func:`cosmos.specialize.use_specialized` with :func:`simulation_cost` for its DRAM
    requests), ``COSMOS_SPECIALIZE=0``, or a build already compiled. A pool compiles each
    such build once (:func:`compile_task`) before the runs that need it
    (experiments.harness.plan.run_shared): every worker that started one of them would compile it
    again, about a minute each."""
    from cosmos.simulate import specialized_build
    from cosmos.specialize import use_specialized

    if not use_specialized(None, int(simulation_cost(task))):
        return None
    build = specialized_build(_system_config(task["system"], task.get("overrides"),
                                             task.get("placement")))
    return None if build is None or build[1] else build[0]


def compile_task(system: str, trace_path: str, *, overrides: dict | None = None,
                 placement: str | None = None) -> None:
    """Compile the specialized engine build that simulations of preset ``system`` (with
    ``overrides``, ``placement``) run, into numba's cache: a closed-loop run of the first
    :data:`COMPILE_QUERIES` queries of the trace at ``trace_path`` on it."""
    from cosmos.simulate import simulate

    tr = read_trace(trace_path)
    simulate(_system_config(system, overrides, placement), tr,
             num_queries=min(COMPILE_QUERIES, tr.num_queries), specialize=True, progress=False,
             trace_name=str(trace_path))


@functools.lru_cache(maxsize=64)
def _trace_lines(path: str, size: int, mtime_ns: int, num_queries: int | None) -> float:
    import json

    import numpy as np

    from cosmos.layout import lines_for
    from cosmos_common.npz import npz_array

    with np.load(path, allow_pickle=False) as z:
        def arr(key):       # mapped: only the few entries used are read from the file
            return npz_array(z, key, path, mmap=True)

        meta = json.loads(str(arr("meta")))
        query_ptr = arr("query_ptr")
        nq = len(query_ptr) - 1 if num_queries is None else min(len(query_ptr) - 1, num_queries)
        searches = int(query_ptr[nq])
        hops = int(arr("search_hop_ptr")[searches])
        reads = int(arr("hop_read_ptr")[hops])
        lines = hops + reads * lines_for(meta["vector_bytes"])
        if "scan_count" in z.files:            # scan traces (graphs.ivfpq): the lists' codes
            codes = arr("scan_count")[:searches].astype(np.int64) * int(meta["code_bytes"])
            lines += int(np.sum(-(-codes // 64)))
            lines += int(arr("rerank_ptr")[nq]) * lines_for(meta["vector_bytes"])
    return float(lines)


#: Traces this process has read, the most recently used last: [((real path, size,
#: modification time), TraceArrays)]. A worker of a sweep runs one task after another, on the
#: few traces of the run's workloads; reading and verifying a 1M-vector trace takes one to two
#: seconds, holding one costs little memory (its arrays map the file: cosmos_common.npz), so
#: the last :data:`KEEP_TRACES` are kept.
_TRACES: list = []
KEEP_TRACES = 4


def read_trace(path: str):
    """The trace at ``path`` (cosmos.trace_input.as_trace), read again only when this process
    has not read the same file unchanged among its last :data:`KEEP_TRACES`; its arrays are
    read-only, so no run can change what the next one reads."""
    import os

    from cosmos.trace_input import as_trace

    try:
        st = os.stat(path)
    except OSError:
        return as_trace(str(path))          # its own error, naming the file
    key = (os.path.realpath(path), st.st_size, st.st_mtime_ns)
    for i, (k, tr) in enumerate(_TRACES):
        if k == key:
            _TRACES.append(_TRACES.pop(i))
            return tr
    tr = as_trace(str(path)).read_only()
    _TRACES.append((key, tr))
    del _TRACES[:-KEEP_TRACES]
    return tr


def simulate_task(system: str, trace_path: str, *, overrides: dict | None = None,
                  num_queries: int | None = None, mode: str = "closed",
                  rate_qps: float | None = None, max_inflight: int | None = None,
                  placement: str | None = None, seed: int = 0, warmup: float = 0.1,
                  tags: dict | None = None, per_device: bool = False,
                  ci_target: float | None = None, timeline_queries: int = 0,
                  timeline_pid_base: int = 1) -> dict:
    """Simulate preset ``system`` (with dotted-field ``overrides``) on the trace at ``trace_path``.

    Returns the flattened summary (qps, latency percentiles in ns, breakdown in ns, link and
    DRAM figures) plus the ``tags`` given, so a sweep's rows carry their own coordinates; with
    ``per_device``, also ``"per_device"``: a list of per-device records (:func:`per_device_rows`).
    With ``ci_target``, the simulation stops once its QPS interval (closed loop) or mean
    latency interval (open loop) is that tight (cosmos.simulate); ``num_queries`` and
    ``stopped`` of the row say how it ended. With ``timeline_queries`` N > 0, also
    ``"timeline"``: the Chrome trace events of the first N queries' steps
    (:func:`cosmos.timeline.timeline_events`, processes named ``"<system>: ..."`` and numbered
    from ``timeline_pid_base``; the figures are the same as without).
    """
    from cosmos.simulate import simulate

    cfg = _system_config(system, overrides, placement)
    res = simulate(cfg, read_trace(trace_path), num_queries=num_queries, mode=mode,
                   rate_qps=rate_qps, max_inflight=max_inflight, seed=seed, progress=False,
                   ci_target=ci_target, warmup=warmup, trace_name=str(trace_path),
                   timeline_queries=timeline_queries)
    summary = res.summary(warmup=warmup)
    row = dict(tags or {})
    row.update(flatten_summary(summary))
    if per_device:
        row["per_device"] = per_device_rows(res, summary)
    if timeline_queries > 0:
        from cosmos.timeline import timeline_events

        row["timeline"] = timeline_events(res, label=system, pid_base=timeline_pid_base)
    return row


def retrieval_task(system: str, trace_path: str, *, num_queries: int | None = None,
                   mode: str = "open", rate_qps: float | None = None, seed: int = 0,
                   warmup: float = 0.1, ci_target: float | None = None) -> dict:
    """Open-loop simulation of retrieval system ``system`` at ``rate_qps``: the steady
    window's per-query latencies (ns, in arrival order) and whether the run fell behind its
    arrivals. With ``ci_target`` the run stops once its mean latency is known that well
    (cosmos.simulate). A sweep task, kept in the simulation cache like a simulation
    (:meth:`experiments.harness.runner.Context.sweep`)."""
    import numpy as np

    from cosmos.metrics import per_query, steady_window
    from cosmos.presets import get_preset
    from cosmos.simulate import simulate
    from cosmos_common import UserError

    if mode != "open":
        raise UserError(f"retrieval_task simulates arrivals at a rate: mode must be 'open', "
                        f"got {mode!r}")
    # the worker's copy of the trace if it has read the same file (:func:`read_trace`)
    res = simulate(get_preset(system), read_trace(trace_path), num_queries=num_queries,
                   mode=mode, rate_qps=rate_qps, seed=seed, progress=False,
                   ci_target=ci_target, trace_name=str(trace_path))
    pq = per_query(res)
    # the summary's window: a run stopped by ci_target, up to its stop test
    _, _, mask = steady_window(res.state.q_done[:res.queries], warmup, res.ci_until_cycle)
    win = pq[mask].sort_values("arrival_ns")
    arr, done = pq["arrival_ns"].to_numpy(), pq["done_ns"].to_numpy()
    arrival_span = float(arr.max() - arr.min())
    done_span = float(done.max() - done.min())
    growth = (done_span - arrival_span) / arrival_span if arrival_span > 0 else 0.0
    return {"system": system, "offered_qps": float(rate_qps), "num_queries": len(pq),
            "latencies_ns": [float(v) for v in win["latency_ns"]],
            "backlog_growth": growth,
            "latency_p50_ns": float(np.percentile(win["latency_ns"], 50)),
            "latency_p99_ns": float(np.percentile(win["latency_ns"], 99))}


def retrieval_identity(task: dict) -> dict:
    """Cache identity of a :func:`retrieval_task`: the simulation's (resolved system
    configuration, run options) and the source of the task function itself."""
    import inspect

    ident = simulation_identity(task)
    ident["task_source"] = inspect.getsource(retrieval_task)
    return ident
