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
* ``refresh_cmds``: refresh commands issued (REFab, or REFsb with same-bank refresh; all
  channels and ranks).
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
from numba import njit

from dram import kernel as K
from dram.energy import energy_stats

LINE_BYTES = 64
#: The read-latency figures (``{agg}_read_latency_cycles`` / ``_ns``); writes have ``mean``.
READ_LATENCY_AGGREGATES = ("mean", "p50", "p95", "p99", "max")


@njit(cache=True, nogil=True)
def _latency_pass(arrival, accept, completion, is_write, read_lat):
    """One pass over the requests: read latencies into ``read_lat`` (in order), and
    [reads, read latency sum, read latency max, writes, write latency sum, accept delay sum,
    accept delay max, first arrival, last arrival, last completion]."""
    out = np.zeros(10, np.int64)
    out[2] = np.iinfo(np.int64).min
    out[6] = np.iinfo(np.int64).min
    out[7] = np.iinfo(np.int64).max
    out[8] = np.iinfo(np.int64).min
    out[9] = np.iinfo(np.int64).min
    nr = 0
    for i in range(arrival.shape[0]):
        a = arrival[i]
        lat = completion[i] - a
        if is_write[i]:
            out[3] += 1
            out[4] += lat
        else:
            read_lat[nr] = lat
            nr += 1
            out[1] += lat
            out[2] = max(out[2], lat)
        d = accept[i] - a
        out[5] += d
        out[6] = max(out[6], d)
        out[7] = min(out[7], a)
        out[8] = max(out[8], a)
        out[9] = max(out[9], completion[i])
    out[0] = nr
    return out


def latency_stats(arrival, accept, completion, is_write, tCK_ps: float) -> dict:
    """Latency, bandwidth and frontend-wait figures of a set of requests (see module doc).

    One compiled pass (:func:`_latency_pass`); the sums are exact in int64, so the means equal
    numpy's over the same values."""
    arrival = np.ascontiguousarray(arrival, np.int64)
    completion = np.ascontiguousarray(completion, np.int64)
    accept = np.ascontiguousarray(accept, np.int64)
    w = np.ascontiguousarray(np.asarray(is_write) != 0).view(np.uint8)
    n = int(arrival.shape[0])
    rl = np.empty(n, np.int64)
    (n_r, r_sum, r_max, n_w, w_sum, d_sum, d_max, a_min, a_max,
     c_max) = (int(v) for v in _latency_pass(arrival, accept, completion, w, rl))
    rl = rl[:n_r]
    out = {"n_requests": n, "n_reads": n_r, "n_writes": n_w}
    tck_ns = tCK_ps / 1000.0
    if n_r:
        # linear interpolation (numpy's default); the scratch copy of read latencies is ours
        p50, p95, p99 = np.percentile(rl, [50, 95, 99], overwrite_input=True)
        reads = (r_sum / n_r, p50, p95, p99, r_max)      # READ_LATENCY_AGGREGATES' order
    else:
        reads = (np.nan,) * len(READ_LATENCY_AGGREGATES)
    stat = {f"{agg}_read": float(v) for agg, v in zip(READ_LATENCY_AGGREGATES, reads)}
    stat["mean_write"] = w_sum / n_w if n_w else np.nan
    for k, v in stat.items():
        out[k + "_latency_cycles"] = v
        out[k + "_latency_ns"] = v * tck_ns
    if n:
        span = c_max - a_min
        out["achieved_bw_GBps"] = (n * LINE_BYTES / (span * tCK_ps * 1e-12) / 1e9
                                   if span > 0 else np.nan)
        ospan = a_max - a_min
        out["offered_bw_GBps"] = (n * LINE_BYTES / (ospan * tCK_ps * 1e-12) / 1e9
                                  if ospan > 0 else np.nan)
        out["mean_accept_delay_cycles"] = d_sum / n
        out["max_accept_delay_cycles"] = d_max
        out["first_arrival_cycle"] = a_min
        out["last_arrival_cycle"] = a_max
        out["last_completion_cycle"] = c_max
    return out


def busy_cycles(state):
    """Per channel of ``state``: (cycles its data bus carried bursts [G], cycles each of its
    ranks carried bursts [G, R]). A burst takes nBL cycles; a rank-local one (rank PU) holds
    its rank but not the channel's data bus. Busy fractions divide these by a run length."""
    v = K.views(state)
    return v["stats"][:, K.S_BUS_BUSY].copy(), v["rank_busy"].copy()


def summarize(config, params, state, arrival, accept, completion, is_write, timed=True,
              power=None) -> dict:
    """All statistics of a replay: :func:`latency_stats` plus the controller counters
    (``power``: currents for the energy, default the preset's)."""
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
    out.update(energy_stats(config, state, total, power=power))
    return out
