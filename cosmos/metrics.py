"""Metrics of a simulation run: throughput, latency, breakdown, device load, links, DRAM.

Definitions
-----------
- Steady state: queries are ordered by completion time; the first and the last ``warmup``
  fraction of completions are excluded (warm-up and drain). ``qps`` = completions inside the
  window / window length -- if the window holds at least as many completions as queries can
  be in flight at once (``min(max_inflight, num_queries)``), i.e. every execution context
  turned over at least once inside it. With fewer (a run of fewer queries than contexts, or
  hardly more), there is no steady state: the window holds one burst of queries that all
  started at time 0, and its rate says nothing about throughput. Then ``steady_state`` is
  False and ``qps`` = ``qps_overall`` (all queries / simulated time); the window's own rate
  stays in ``qps_window``.
- Latency of a query = completion - admission (closed loop) or arrival (open loop), in ns;
  mean / p50 / p99 over the queries completing in the window.
- Breakdown (the paper's Fig. 4b): along each query's critical path (its last task and,
  recursively, the predecessor that finished last), the time spent in steps of each category:
  graph traversal (adjacency reads + visited checks), distance calculation (vector reads +
  distance compute), candidate update (insert/select/merge), host/link transfer (messages
  over CXL), and queue (waiting for an execution context). They sum to the latency.
- Per device (memory instance; a host graph cache, ``memory`` = ``host-cache``, is the row
  after the devices and is left out of the LIR): busy = summed context-holding time of tasks
  on its GPC pool / (contexts x simulated time) (systems whose searches run on the GPCs);
  DRAM data-bus busy = burst cycles on the channel data buses /
  (channels x simulated time), DRAM rank busy = burst cycles per rank (rank-local ones
  included) / (ranks x simulated time) (every system: its devices, or the host DRAM);
  load = DRAM requests served; LIR = max load / mean load.
- Simulated time = 0 to the completion of the last query (``SimResult.cycles``).
- Link utilization = busy (serialization) cycles / simulated cycles, per link and direction.
- DRAM bandwidth per memory instance = 64 B x requests served / simulated time.
- Energy (``energy_per_query_mJ``, ``power_avg_W``, ``energy_breakdown_mJ_per_query``,
  ``qps_per_W``): all queries of the run over the whole simulated time; see cosmos.energy.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from cosmos.config import TCK_PS
from cosmos.program import CATEGORIES
from cosmos.systems import model_for

NS_PER_CYCLE = TCK_PS / 1000.0


def _critical_breakdown(res) -> np.ndarray:
    """(Q, 5) cycles per category along each query's critical path."""
    pg, st = res.program, res.state
    sink = pg.query_task_ptr[1:] - 1
    out = np.zeros((pg.num_queries, len(CATEGORIES)), np.int64)
    cur = sink.copy()
    alive = cur >= 0
    for _ in range(64):
        if not alive.any():
            break
        out[alive] += st.task_bd[cur[alive]]
        nxt = np.full_like(cur, -1)
        nxt[alive] = st.task_crit[cur[alive]]
        cur = nxt
        alive = cur >= 0
    return out


def per_query(res) -> pd.DataFrame:
    """One row per query: arrival/completion (ns), latency (ns), breakdown columns (ns)."""
    st = res.state
    bd = _critical_breakdown(res) * NS_PER_CYCLE
    df = pd.DataFrame({
        "query": np.arange(res.program.num_queries),
        "arrival_ns": st.q_arrival * NS_PER_CYCLE,
        "done_ns": st.q_done * NS_PER_CYCLE,
        "latency_ns": (st.q_done - st.q_arrival) * NS_PER_CYCLE,
        "requests": res.program.requests_per_query(),
    })
    for j, name in enumerate(CATEGORIES):
        df[f"{name}_ns"] = bd[:, j]
    return df


def steady_window(done_cycles: np.ndarray, warmup: float = 0.1):
    """(lo, hi, mask): the steady-state window in cycles and the queries completing in it."""
    if not 0 <= warmup < 0.5:
        raise ValueError(f"warmup must be in [0, 0.5), got {warmup}")
    d = np.sort(done_cycles)
    Q = d.shape[0]
    i_lo = int(np.floor(warmup * Q))
    i_hi = max(i_lo + 1, int(np.ceil((1 - warmup) * Q)) - 1)
    i_hi = min(i_hi, Q - 1)
    lo = d[i_lo] if i_lo > 0 else 0
    hi = d[i_hi]
    mask = (done_cycles > lo) & (done_cycles <= hi) if i_lo > 0 else done_cycles <= hi
    return int(lo), int(hi), mask


def _dram_busy(res) -> list:
    """Per memory instance: (data-bus busy fraction averaged over its channels, burst-busy
    fraction averaged over its ranks), from :func:`dram.stats.busy_cycles` of each of its
    channels (one controller state per channel)."""
    from dram.stats import busy_cycles

    cycles = max(res.cycles, 1)
    nch = res.dram_params.n_channels
    out = []
    for i in range(res.num_instances):
        bus = rank = 0.0
        for g in range(i * nch, (i + 1) * nch):
            b, r = busy_cycles(res.dram_state[g])
            bus += float(b.sum())
            rank += float(r.mean())
        out.append((bus / (nch * cycles), rank / (nch * cycles)))
    return out


def per_device(res) -> pd.DataFrame:
    """One row per memory instance / device: busy fraction, load, DRAM bandwidth, link use."""
    st, pg, cfg = res.state, res.program, res.config
    cycles = max(res.cycles, 1)
    seconds = cycles * TCK_PS * 1e-12
    n_inst = res.num_instances
    D = cfg.device.count
    rows = []
    held = np.where(st.task_end >= 0, st.task_end - st.task_start, 0)
    dram_busy = _dram_busy(res)
    model = model_for(cfg)
    on_gpc = model.search_pool == "gpc"
    for i in range(max(n_inst, D if model.uses_link else 1)):
        pool = 1 + i
        ctx = res.pool_sizes[pool] if pool < len(res.pool_sizes) - 1 and i < D else 0
        busy = held[pg.task_pool == pool].sum() / (ctx * cycles) if (ctx and on_gpc) \
            else np.nan
        reqs = int(st.inst_reqs[i]) if i < n_inst else 0
        bus, rank = dram_busy[i] if i < n_inst else (np.nan, np.nan)
        row = {
            "device": i,
            "memory": "host-cache" if (model.host_cache and i == D) else
            ("host" if model.index_in_host else "device"),
            "gpc_busy_fraction": busy,
            "dram_requests": reqs,
            "rank_local_requests": int(st.inst_local[i]) if i < n_inst else 0,
            "dram_bandwidth_GBps": reqs * 64 / seconds / 1e9,
            "dram_bus_busy_fraction": bus,
            "dram_rank_busy_fraction": rank,
        }
        if model.uses_link and i < D:
            row["link_down_util_fraction"] = st.link_busy[i, 0] / cycles
            row["link_up_util_fraction"] = st.link_busy[i, 1] / cycles
            row["link_down_GBps"] = st.link_bytes[i, 0] / seconds / 1e9
            row["link_up_GBps"] = st.link_bytes[i, 1] / seconds / 1e9
        rows.append(row)
    return pd.DataFrame(rows)


def summary(res, warmup: float = 0.1) -> dict:
    """Headline figures as a JSON-ready dict (times in ns, bandwidths in GB/s).

    ``qps`` is the steady-state throughput: completions in the window (``window_queries``)
    over its length, reported as ``qps_window``. It is a steady state only if the window
    holds at least as many completions as queries can be in flight at once,
    ``min(max_inflight, num_queries)`` (each context turned over once inside it):
    ``steady_state`` says whether it does. Without a steady state (too few queries for the
    system's contexts) the window's rate is an artifact of one burst of queries all started at
    time 0, so ``qps`` falls back to ``qps_overall`` = num_queries / simulated time, and the
    CLI warns. Latency and breakdown figures are over the window's queries either way.
    """
    st, cfg = res.state, res.config
    pq = per_query(res)
    lo, hi, mask = steady_window(st.q_done, warmup)
    win_s = (hi - lo) * TCK_PS * 1e-12
    n_win = int(mask.sum())
    qps_window = n_win / win_s if win_s > 0 else float("nan")
    cycles = max(res.cycles, 1)
    seconds = cycles * TCK_PS * 1e-12
    Q = res.program.num_queries
    in_flight = min(int(res.max_inflight), Q)
    steady = bool(win_s > 0 and n_win >= in_flight)
    qps = qps_window if steady else Q / seconds
    lat = pq["latency_ns"].to_numpy()[mask]
    dev = per_device(res)
    # load imbalance over the index's memory (a host graph cache is not a device)
    loads = dev.loc[dev["memory"] != "host-cache", "dram_requests"].to_numpy(dtype=float)
    lir = float(loads.max() / loads.mean()) if loads.size and loads.mean() > 0 else float("nan")
    out = {
        "system": cfg.name,
        "kind": cfg.kind,
        "placement": cfg.placement,
        "mode": res.mode,
        "rate_qps": res.rate_qps,
        "max_inflight": res.max_inflight,
        "num_queries": Q,
        "warmup_fraction": warmup,
        "window_queries": n_win,
        "steady_state": steady,
        "qps": qps,
        "qps_window": qps_window,
        "qps_overall": Q / seconds,
        "latency_mean_ns": float(lat.mean()) if lat.size else float("nan"),
        "latency_p50_ns": float(np.percentile(lat, 50)) if lat.size else float("nan"),
        "latency_p99_ns": float(np.percentile(lat, 99)) if lat.size else float("nan"),
        "breakdown_ns": {c: float(pq[f"{c}_ns"].to_numpy()[mask].mean()) if n_win else
                         float("nan") for c in CATEGORIES},
        "simulated_ns": cycles * NS_PER_CYCLE,
        "dram_requests": int(st.inst_reqs.sum()),
        "dram_bytes_per_query": float(st.inst_reqs.sum() * 64 / Q),
        "dram_bandwidth_GBps_total": float(st.inst_reqs.sum() * 64 / seconds / 1e9),
        "dram_bus_busy_fraction_max": float(dev["dram_bus_busy_fraction"].max()),
        "dram_rank_busy_fraction_max": float(dev["dram_rank_busy_fraction"].max()),
        "device_lir_requests": lir,
        "wall_s": res.wall_s,
        "requests_per_wall_s": float(st.inst_reqs.sum() / res.wall_s) if res.wall_s > 0 else
        float("nan"),
    }
    model = model_for(cfg)
    if model.uses_link:
        D = cfg.device.count
        # wire bytes: payload plus flit and slot overhead (dram_bytes_per_query is payload)
        out["link_wire_bytes_per_query"] = {"down": float(st.link_bytes[:D, 0].sum() / Q),
                                            "up": float(st.link_bytes[:D, 1].sum() / Q)}
        out["upstream_util_down_fraction"] = float(st.link_busy[D, 0] / cycles)
        out["upstream_util_up_fraction"] = float(st.link_busy[D, 1] / cycles)
        out["device_link_util_max_fraction"] = float(st.link_busy[:D].max() / cycles)
        on_gpc = model.search_pool == "gpc"
        if on_gpc:
            out["gpc_busy_fraction"] = [float(x) for x in dev["gpc_busy_fraction"][:D]]
        # LIR of the placement by cluster searches (placement package's definition)
        pg = res.program
        search_dev = pg.task_device[pg.task_pool == 1 + pg.task_device] if on_gpc else None
        if search_dev is not None and search_dev.size:
            loads = np.bincount(search_dev, minlength=D).astype(float)
            out["device_tasks"] = [int(x) for x in loads]
            out["device_lir_tasks"] = float(loads.max() / loads.mean())
    from cosmos.energy import summary_fields   # energy per query and power (cosmos.energy)

    out.update(summary_fields(res))
    return out
