"""Statistics of a replay, with their definitions (the same as the reference's columns).

Per request: ``arrival`` (trace cycle), ``accept`` (cycle the controller took it),
``completion`` (read: the cycle its data returned = RD issue + nCL + nBL; write: the cycle its
WR command issued). Latency = completion - arrival (includes the frontend wait
accept - arrival). All cycles are DRAM clock cycles of ``tCK_ps``.

Summary (:func:`latency_stats`, :func:`summarize`):

* ``mean/p50/p95/p99/max_read_latency_cycles`` and ``..._ns``: over reads; percentiles are
  ``numpy.percentile`` with linear interpolation. ``mean_write_latency_cycles`` / ``_ns``:
  over writes (NaN without reads or writes).
* ``achieved_bw_GBps`` = all requests x 64 B / ((last completion - first arrival) x tCK),
  1 GB = 1e9 B. ``offered_bw_GBps`` = all requests x 64 B / ((last arrival - first arrival) x
  tCK).
* ``mean/max_accept_delay_cycles`` = accept - arrival; ``first_arrival_cycle``,
  ``last_arrival_cycle``, ``last_completion_cycle``.
* ``row_hits/misses/conflicts`` (+ ``read_``/``write_`` split): taken when a request issues
  its first command, from the bank state just before it: open on the same row = hit, open on
  another row = conflict, closed = miss (summed over channels).
* ``refresh_cmds``: REFab commands issued (all channels and ranks).
* ``channel_busy_fraction[c]`` = cycles the channel's data bus carried bursts (nBL per RD/WR
  that crosses the channel) / total_cycles; ``rank_busy_fraction[c][r]`` = nBL per RD/WR of
  the rank, rank-local ones included / total_cycles. ``total_cycles`` = last completion cycle
  (the simulation runs from cycle 0).
* Energy and power over ``total_cycles``: ``energy_<component>_nJ``, ``energy_total_nJ``,
  ``power_<component>_W``, ``power_avg_W``, ``rank_active_cycles``, ``bank_open_cycles``;
  see :mod:`dram.energy`.
"""

from __future__ import annotations

import numpy as np

from dram import kernel as K
from dram.energy import energy_stats

LINE_BYTES = 64
#: The read-latency figures (``{agg}_read_latency_cycles`` / ``_ns``); writes have ``mean``.
READ_LATENCY_AGGREGATES = ("mean", "p50", "p95", "p99", "max")


def latency_stats(arrival, accept, completion, is_write, tCK_ps: float) -> dict:
    """Latency, bandwidth and frontend-wait figures of a set of requests (see module doc)."""
    arrival = np.asarray(arrival, np.int64)
    completion = np.asarray(completion, np.int64)
    accept = np.asarray(accept, np.int64)
    w = np.asarray(is_write).astype(bool)
    lat = completion - arrival
    rl = lat[~w]
    wl = lat[w]
    out = {"n_requests": int(lat.size), "n_reads": int(rl.size), "n_writes": int(wl.size)}
    tck_ns = tCK_ps / 1000.0
    if rl.size:
        p50, p95, p99 = np.percentile(rl, [50, 95, 99])
        reads = (rl.mean(), p50, p95, p99, rl.max())      # READ_LATENCY_AGGREGATES' order
    else:
        reads = (np.nan,) * len(READ_LATENCY_AGGREGATES)
    stat = {f"{agg}_read": float(v) for agg, v in zip(READ_LATENCY_AGGREGATES, reads)}
    stat["mean_write"] = float(wl.mean()) if wl.size else np.nan
    for k, v in stat.items():
        out[k + "_latency_cycles"] = v
        out[k + "_latency_ns"] = v * tck_ns
    if lat.size:
        span = int(completion.max() - arrival.min())
        out["achieved_bw_GBps"] = (lat.size * LINE_BYTES / (span * tCK_ps * 1e-12) / 1e9
                                   if span > 0 else np.nan)
        ospan = int(arrival.max() - arrival.min())
        out["offered_bw_GBps"] = (lat.size * LINE_BYTES / (ospan * tCK_ps * 1e-12) / 1e9
                                  if ospan > 0 else np.nan)
        d = accept - arrival
        out["mean_accept_delay_cycles"] = float(d.mean())
        out["max_accept_delay_cycles"] = int(d.max())
        out["first_arrival_cycle"] = int(arrival.min())
        out["last_arrival_cycle"] = int(arrival.max())
        out["last_completion_cycle"] = int(completion.max())
    return out


def busy_cycles(state):
    """Per channel of ``state``: (cycles its data bus carried bursts [G], cycles each of its
    ranks carried bursts [G, R]). A burst takes nBL cycles; a rank-local one (rank PU) holds
    its rank but not the channel's data bus. Busy fractions divide these by a run length."""
    v = K.views(state)
    return v["stats"][:, K.S_BUS_BUSY].copy(), v["rank_busy"].copy()


def summarize(config, params, state, arrival, accept, completion, is_write, timed=True) -> dict:
    """All statistics of a replay: :func:`latency_stats` plus the controller counters."""
    out = latency_stats(arrival, accept, completion, is_write, params.tCK_ps)
    v = K.views(state)
    st = v["stats"].sum(axis=0)
    names = K.STAT_NAMES
    for i, name in enumerate(names):
        out[name] = int(st[i])
    out["row_hits"] = out["read_row_hits"] + out["write_row_hits"]
    out["row_misses"] = out["read_row_misses"] + out["write_row_misses"]
    out["row_conflicts"] = out["read_row_conflicts"] + out["write_row_conflicts"]
    total = int(completion.max()) if completion.size else 0
    out["total_cycles"] = total
    out["tCK_ps"] = int(params.tCK_ps)
    out["timed"] = bool(timed)
    denom = max(total, 1)
    bus, rank = busy_cycles(state)
    out["channel_busy_fraction"] = (bus / denom).tolist()
    out["rank_busy_fraction"] = (rank / denom).tolist()
    out.update(energy_stats(config, state, total))
    return out
