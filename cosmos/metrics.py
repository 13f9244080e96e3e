"""Metrics of a simulation run: throughput, latency, breakdown, device load, links, DRAM.

Definitions
-----------
- Steady state: queries are ordered by completion time; the first and the last ``warmup``
  fraction of completions are excluded (warm-up and drain). ``qps`` = completions inside the
  window / window length (closed loop: of the window's first whole turnovers of the queries in
  flight, ``qps_queries`` completions, :func:`whole_turnovers`; the window's plain rate is
  ``qps_window``) -- if the window holds at least as many completions as queries can
  be in flight at once (``min(max_inflight, num_queries)``), i.e. every execution context
  turned over at least once inside it. With fewer (a run of fewer queries than contexts, or
  hardly more), there is no steady state: the window holds one burst of queries that all
  started at time 0, and its rate says nothing about throughput. Then ``steady_state`` is
  False and ``qps`` = ``qps_overall`` (all queries / simulated time); the window's own rate
  stays in ``qps_window``.
- Latency of a query = completion - admission (closed loop) or arrival (open loop), in ns;
  mean / p50 / p99 over the queries completing in the window.
- Confidence intervals (95 %) of the steady-state ``qps`` and ``latency_mean_ns``: batch
  means over the window's completions (:func:`batch_means_ci`, where the batch-size rule and
  why it is valid for this closed loop are stated). ``qps_ci_low`` / ``qps_ci_high``,
  ``latency_mean_ci_low_ns`` / ``latency_mean_ci_high_ns``, ``qps_ci_rel_halfwidth``,
  ``ci_batches``, ``ci_batch_queries``; NaN with ``ci_note`` saying why when the window
  cannot support an interval (too few completions, or batch means still correlated).
- Control variate of the QPS interval (closed loop): the time per query of a batch of
  completions tracks the DRAM requests its queries put on the busiest memory instance (the
  placement's load imbalance, the paper's LIR), a figure known for every query of the trace
  before anything is simulated. :func:`batch_means_ci` regresses the batches' time per query
  on it and corrects the estimate by how far the simulated batches' load strays from the
  trace's mean, where that narrows the interval (``qps_ci_control`` names the control when it
  is used; ``ci_control_corr`` is the correlation). ``qps`` is then the controlled estimate
  and the interval is for the throughput on the trace's queries; ``qps_window`` stays the
  window's plain rate.
- Control variates of the mean latency (open loop): a query's latency tracks its DRAM
  requests, in all (a search run by the host) or on the memory instance it loads most
  (searches run near the data), both known for every query of the trace
  (:func:`query_work`). :func:`batch_means_ci` corrects the mean latency by them in the same
  way, where that narrows the interval (``latency_ci_control`` names them then);
  ``latency_mean_ns`` is then the
  controlled estimate, for the trace's queries, and ``latency_ci_rel_halfwidth`` the
  interval's half-width over it. (Closed loop: the latency's interval is plain; its
  throughput carries the control.)
- A run stopped early (``simulate(ci_target=...)``) simulated only its first
  ``num_queries`` queries of the trace (``stopped`` = "ci-target"; else "all queries"),
  which all completed. Its steady-state window is the one its stop test passed on: the
  completions up to the test (``ci_until_cycle``), with the warm-up fraction left out at both
  ends; the queries still in flight then (admitted, never replaced: the loop drains) complete
  after it. So the reported interval is the one that met the target.
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
- Search unit: the unit whose contexts run the searches, by its label in the unit registry
  (``search_unit``: host core, device GPC context, switch core context); its busy fraction
  at each place it sits (``search_unit_busy_fraction_by_place``: the host, each device, the
  switch) = summed context-holding time of the place's tasks / (its contexts x simulated
  time), and their mean (``search_unit_busy_fraction``).
- Simulated time = 0 to the completion of the last query (``SimResult.cycles``).
- Link utilization = busy (serialization) cycles / simulated cycles, per link and direction.
- DRAM bandwidth per memory instance = 64 B x requests served / simulated time.
- Energy (``energy_per_query_mJ``, ``power_avg_W``, ``energy_breakdown_mJ_per_query``,
  ``qps_per_W``): over the steady-state window of ``qps_window`` (its duration and the
  queries completed in it; the whole run without a steady state, as ``qps``), the whole
  run's beside them (``energy_per_query_run_mJ``, ...); see cosmos.energy.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from numba import njit

from cosmos.config import TCK_PS
from cosmos.energy import summary_fields
from cosmos.program import POOL_HOST, switch_pool
from cosmos.systems import CATEGORIES, model_for
from cosmos.units import unit
from cosmos.window import steady_window  # noqa: F401  (re-exported)
from dram.stats import busy_cycles

NS_PER_CYCLE = TCK_PS / 1000.0


def _critical_breakdown(res) -> np.ndarray:
    """(Q, 5) cycles per category along each query's critical path."""
    pg, st = res.program, res.state
    Q = res.queries
    sink = pg.query_task_ptr[1:Q + 1] - 1
    out = np.zeros((Q, len(CATEGORIES)), np.int64)
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
    Q = res.queries                  # the first Q queries ran (all unless stopped early)
    bd = _critical_breakdown(res) * NS_PER_CYCLE
    arrival, done = st.q_arrival[:Q], st.q_done[:Q]
    df = pd.DataFrame({
        "query": np.arange(Q),
        "arrival_ns": arrival * NS_PER_CYCLE,
        "done_ns": done * NS_PER_CYCLE,
        "latency_ns": (done - arrival) * NS_PER_CYCLE,
        "requests": res.program.requests_per_query()[:Q],
    })
    for j, name in enumerate(CATEGORIES):
        df[f"{name}_ns"] = bd[:, j]
    return df


@njit(cache=True)
def _query_instance_requests(task_query, task_step_ptr, step_class, step_nreq, cls_dev,
                             num_queries, num_instances):
    out = np.zeros((num_queries, num_instances), np.int64)
    for t in range(task_query.shape[0]):
        q = task_query[t]
        for s in range(task_step_ptr[t], task_step_ptr[t + 1]):
            if step_nreq[s] > 0:
                out[q, cls_dev[step_class[s]]] += step_nreq[s]
    return out


def query_instance_requests(program, num_instances: int) -> np.ndarray:
    """(Q, I) int64: the 64-byte DRAM requests each query of the program's trace makes on each
    memory instance (devices, the host DRAM or a host graph cache), known before simulating;
    a row sums to :meth:`cosmos.program.Program.requests_per_query`."""
    pg = program
    return _query_instance_requests(pg.task_query, pg.task_step_ptr, pg.step_class,
                                    pg.step_nreq, pg.cls_dev, int(pg.num_queries),
                                    int(num_instances))


def query_work(load: np.ndarray) -> np.ndarray:
    """(Q, 2) float64 (or (Q, 1), below) from :func:`query_instance_requests`'s (Q, I)
    ``load``: each query's DRAM requests in all and on the memory instance it loads most,
    the control variates of an open loop's mean latency (:func:`batch_means_ci`). A search
    run by the host waits on all of its reads, one after another; searches run near the data
    wait on their slowest memory. With one instance the two are the same: one column."""
    load = np.asarray(load)
    total = load.sum(axis=1).astype(np.float64)
    busiest = load.max(axis=1).astype(np.float64)
    if np.array_equal(total, busiest):
        return total[:, None]
    return np.stack([total, busiest], axis=1)


def ci_controls(mode: str, load_trace: np.ndarray, rows: np.ndarray) -> dict:
    """:func:`batch_means_ci`'s control-variate arguments for the completions ``rows``
    (indices into the trace's queries, in the order given to it) of a run of ``mode``, from
    :func:`query_instance_requests`'s ``load_trace``: a closed loop's throughput is
    controlled by the load per memory instance, an open loop's mean latency by
    :func:`query_work` (its rate is the arrivals')."""
    if mode == "closed":
        return {"load": load_trace[rows], "load_trace": load_trace}
    work = query_work(load_trace)
    return {"work": work[rows], "work_trace": work}


def _busiest_load(load: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Per batch (completions ``edges[j]:edges[j+1]`` of ``load``'s rows): the requests of its
    queries on its busiest memory instance, per query."""
    return np.add.reduceat(load, edges[:-1], axis=0).max(axis=1) / np.diff(edges)


def _busiest_load_mean(load_trace: np.ndarray, sizes: np.ndarray) -> float:
    """Expected :func:`_busiest_load` of batches of ``sizes`` completions (one entry per
    batch): for each size, its mean over every run of consecutive trace queries of that size,
    averaged over the batches."""
    cs = np.concatenate([np.zeros((1, load_trace.shape[1]), np.int64),
                         np.cumsum(load_trace, axis=0)])
    Q = load_trace.shape[0]

    def mean_of(size):
        size = min(size, Q)
        return float((cs[size:] - cs[:-size]).max(axis=1).mean()) / size

    values, counts = np.unique(np.asarray(sizes, dtype=np.int64), return_counts=True)
    total = 0.0
    for v, c in zip(values, counts):
        total = total + int(c) * mean_of(int(v))
    return total / int(counts.sum())


def _multi_controlled(y: np.ndarray, x: np.ndarray, mu: np.ndarray):
    """(estimate correction, half-width) of the ``k`` batch means ``y`` regressed on the
    controls' batch means ``x`` (k, c) of known means ``mu`` (c,) (:func:`batch_means_ci`);
    None without the degrees of freedom or where the controls are collinear."""
    k, c = x.shape
    if k - 1 - c < 1:
        return None
    xc = x - x.mean(axis=0)
    sxx = xc.T @ xc
    if np.linalg.matrix_rank(sxx) < c:
        return None
    yc = y - y.mean()
    b = np.linalg.solve(sxx, xc.T @ yc)
    resid = yc - xc @ b
    d = x.mean(axis=0) - mu
    df = k - 1 - c
    var = float(resid @ resid) / df * (1.0 / k + float(d @ np.linalg.solve(sxx, d)))
    return float(b @ d), t_quantile_975(df) * np.sqrt(var)


def whole_turnovers(n: int, turnover: int) -> int:
    """Completions of a steady-state window of ``n`` that the throughput estimate spans: the
    largest multiple of ``turnover`` (the queries in flight of a closed loop; 1 for an open
    loop) not above ``n``, or ``n`` itself if it holds less than one turnover.

    Why: in a closed loop each completion admits the next query, so the completions come in
    turnovers of ``max_inflight``, one per context; where the queries' latencies are alike
    (the host's threads: latency CV 1-4 % at 1M vectors) the turnovers stay in step for the
    whole run, and each one ends with a pause (up to ~40 % of the period for Base). A window
    of a fraction of a turnover more or less then counts that pause or not, which moved the
    point estimate of CXL-ANNS on the 1M-vector SIFT-like trace by up to 1.2 % from one
    query count to the next, and batches cut across turnovers made the batch means scatter
    (a +-8 % interval where whole turnovers give +-0.3 %; docs/system_model.md)."""
    turnover = max(1, int(turnover))
    return n if n < turnover else turnover * (n // turnover)


#: Confidence level of every interval the metrics report.
CI_LEVEL = 0.95
#: Batch-means rule (:func:`batch_means_ci`): start with this many batches ...
CI_START_BATCHES = 40
#: ... halve their number (double the batch size) while the lag-1 autocorrelation of the batch
#: means is at least this ...
CI_MAX_LAG1 = 0.2
#: ... or at most this: batch means alternating high / low (the closed loop's completions come
#: in waves, and batch boundaries falling before or after a pause split the waves unevenly:
#: measured -0.95 at 40 batches on a default-scale CXL-ANNS run, where pairs of batches sum
#: to a steady rate and the naive variance overstated the error up to 30x). Strongly negative
#: (more than 3 standard errors of the estimate at 40 batches below 0); an estimate.
CI_MIN_LAG1 = -0.5
#: ... but never use fewer batches than this (below it the Student-t interval is too wide to
#: be useful and the autocorrelation check meaningless): no interval then.
CI_MIN_BATCHES = 10


def t_quantile_975(df: float) -> float:
    """Two-sided 95 % Student-t quantile (the 0.975 quantile) for ``df`` >= 1 degrees of
    freedom: the Cornish-Fisher expansion of t about the normal quantile (Abramowitz & Stegun
    26.7.5) to the 1/df**4 term; within 1e-3 of the exact value from df = 5 on (the intervals use
    df >= 8: 10 batches, less one for the control variate), checked against scipy in the tests."""
    if not df >= 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    z = 1.959963984540054
    z3, z5, z7, z9 = z**3, z**5, z**7, z**9
    return float(z + (z3 + z) / (4 * df)
                 + (5 * z5 + 16 * z3 + 3 * z) / (96 * df**2)
                 + (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * df**3)
                 + (79 * z9 + 776 * z7 + 1482 * z5 - 1920 * z3 - 945 * z) / (92160 * df**4))


def _lag1(x: np.ndarray) -> float:
    """Lag-1 sample autocorrelation of ``x`` (0 for a constant series)."""
    d = x - x.mean()
    den = float(d @ d)
    return float(d[:-1] @ d[1:]) / den if den > 0 else 0.0


def batch_means_ci(done_cycles: np.ndarray, latency_ns: np.ndarray, lo_cycles: int,
                   hi_cycles: int, level: float = CI_LEVEL, min_batch_queries: int = 1,
                   load: np.ndarray | None = None,
                   load_trace: np.ndarray | None = None, turnover: int = 1,
                   work: np.ndarray | None = None,
                   work_trace: np.ndarray | None = None) -> dict:
    """95 % confidence intervals of the steady-state throughput and mean latency by batch means.

    Parameters
    ----------
    done_cycles : (n,) int64
        Completion cycles of the queries completing in the steady-state window
        ``(lo_cycles, hi_cycles]``, any order.
    latency_ns : (n,) float
        Their latencies, in the same order.
    lo_cycles, hi_cycles : int
        The window (:func:`steady_window`).
    load, load_trace : (n, I) and (Q, I) int arrays, optional
        The control variate of a closed-loop run (both or neither): the DRAM requests of each
        query on each memory instance (:func:`query_instance_requests`), for the completions
        given (in their order) and for every query of the trace, in trace order.
    turnover : int
        The throughput's unit of completions (:func:`whole_turnovers`): the queries in
        flight of a closed loop, 1 for an open loop.
    work, work_trace : (n, c) and (Q, c) arrays, optional
        The control variates of the mean latency (both or neither; the summary gives them for
        an open loop): each query's DRAM requests in all and on the memory instance it loads
        most (:func:`query_work`), for the completions given and for every query of the trace.

    Method
    ------
    The window's completions, in completion order (ties: the order given, which is query order),
    are cut into ``k`` consecutive batches of (nearly) equal size; batch ``j`` covers the time
    from the previous batch's last completion (the window start for the first) to its own last
    one. Per batch: the time per query (span / completions) and the mean latency. For the
    throughput only the window's first ``n_t`` = :func:`whole_turnovers` completions count,
    and its batches are whole turnovers too (``turnover`` times ``T // k`` or one more, for
    the ``T`` turnovers): each batch then spans the same phases of the loop's cycle. Throughput
    is a ratio: its point estimate is ``n_t / (t - lo)``, ``t`` the ``n_t``-th completion
    (the window's own ``n / (hi - lo)`` for an open loop) = 1 / (mean time per
    query), so its interval is the interval of the mean time per query ``g`` turned over,
    ``[1 / (g + h), 1 / (g - h)]`` (not the average of per-batch rates, which is biased up).
    Half-width ``h = t(k-1) s / sqrt(k)`` with ``s`` the standard deviation of the batch means
    and ``t`` the Student-t 0.975 quantile.

    Batch-size rule, for each series on its own (time per query; latency): start with
    :data:`CI_START_BATCHES` batches and halve their number while the lag-1 autocorrelation of
    the batch means is >= :data:`CI_MAX_LAG1` or <= :data:`CI_MIN_LAG1` or a batch holds
    fewer than ``min_batch_queries`` completions (the summary passes the queries in flight);
    a throughput batch of whole turnovers holds at least that many;
    stop at :data:`CI_MIN_BATCHES` batches: if the batch means are still positively
    correlated there (lag-1 >= :data:`CI_MAX_LAG1`), their batches are shorter than
    ``min_batch_queries``, or the window holds fewer than ``2 x CI_MIN_BATCHES`` completions,
    no interval is claimed (NaN, and ``ci_note`` says why). If they still alternate there
    (lag-1 <= :data:`CI_MIN_LAG1`), the interval is claimed, ``qps_ci_conservative`` (for the
    QPS interval) is True and ``ci_note`` says it is conservative: for k batch means of
    variance s2 and autocorrelations r_j, the variance of their mean is
    s2 / k x (1 + 2 sum_j (1 - j/k) r_j) while the sample variance has expectation
    s2 x (1 - 2/(k-1) sum_j (1 - j/k) r_j) (Law, the same chapter), so a negative correlation
    makes the half-width larger than the error, never smaller. This is the method of batch
    means as in A. M. Law, "Simulation Modeling and Analysis" (the chapter on output analysis
    of steady-state simulations, method of batch means: 10 to 30-40 batches, with a check
    that the batch means' lag-1 correlation is small, after Law & Carson 1979).

    Control variate (with ``load``): the same batches also give ``x_j``, the requests of the
    batch's queries on its busiest memory instance, per query. Its expectation ``mu`` is
    known without simulating: the mean of the same figure over every run of as many
    consecutive trace queries (completions follow admissions, which follow the trace). The
    time per query is regressed on it, ``b`` = the least-squares slope of the ``k`` pairs,
    and the estimate becomes ``g - b (mean x - mu)``: the batches simulated are corrected for
    having drawn a busier or quieter mix of queries than the trace holds. Half-width
    ``t(k-2) sqrt(s_r**2 (1/k + (mean x - mu)**2 / sum (x_j - mean x)**2))`` with ``s_r`` the
    residual standard deviation (``k - 2`` degrees of freedom); the batch count is the one the
    rule above chose. The variance shrinks by the factor ``1 - r**2`` (``r``: the correlation
    of time per query and ``x_j``, ``ci_control_corr``), less a small price for estimating
    ``b``. The method and its interval, under joint normality of the batch pairs, are those
    of S. S. Lavenberg and P. D. Welch, "A perspective on the use of control variables to
    increase the efficiency of Monte Carlo simulations", Management Science 27(3), 1981 (one
    control).

    The mean latency has controls of the same kind (with ``work``): per batch, the means over
    its queries of each query's DRAM requests in all and on the instance it loads most, whose
    expectations are those figures' means over the trace's queries (means of per-query
    figures, so any batch size has the same ones). Latency batch means are regressed on both
    (least squares, ``c`` controls: half-width ``t(k-1-c) sqrt(s_r**2 (1/k + d' S^-1 d))``,
    ``d`` the controls' deviations from their expectations and ``S`` their centered
    cross-product matrix, Lavenberg & Welch's multiple-control form), and
    ``latency_ci_control`` names the controls when they are used. Why these: a query's
    latency is mostly the time it waits on memory, all of its reads in turn when the host
    runs the search, its slowest memory when the searches run near the data (per query, the
    correlation of latency with the figure that fits is 0.99 on the 1M-vector SIFT-like trace
    at 20 % load for Base, Cosmos and Cosmos without rank PUs); the queueing of a loaded
    system is left to the residual. They are used when the controlled interval is the
    narrower.

    The control is used only where it belongs: when ``b > 0`` (a batch that loads its busiest
    instance more runs slower, as it must if that load limits the run) and the controlled
    interval is the narrower; ``qps_ci_control`` names the control then, and is empty
    otherwise. Where something else limits the run (a saturated link, the host's threads)
    ``r`` is near 0, a fitted slope is noise, and the plain interval stands. Why this
    control: searches that run near the data queue at the device holding their clusters, so
    a batch whose queries pile onto one device runs slowly. On the 1M-vector traces (64
    queries in flight on four devices) ``r`` measured 0.76 (SIFT-like) and 0.91 (DEEP-like)
    over 10,000 Cosmos queries, and the half-width fell by a third and by more than half;
    for Base it is near 0. With the control the interval is for the throughput on the
    trace's queries (``mu`` is their mean), which is what a comparison of systems on the
    same trace needs; without it, for the distribution the queries are drawn from.

    Why it is valid here: after warm-up the closed loop (a fixed number of queries in flight,
    each replaced by the next trace query as it completes) is a stationary process whose
    memory is short: a query's completion depends on the queries in flight with it, i.e. on
    about one latency (``max_inflight`` completions) of history, and the trace's queries are
    independent draws of the same search. Batches much longer than that correlation time
    have nearly independent means, which are nearly normal by the central limit theorem; the
    lag-1 check rejects batch sizes for which that is not yet true, so a window that is too
    short for the correlation time gives no interval rather than a false one.
    """
    d = np.asarray(done_cycles, dtype=np.int64)
    lat = np.asarray(latency_ns, dtype=np.float64)
    n = int(d.shape[0])
    nan = float("nan")
    out = {"qps_ci_low": nan, "qps_ci_high": nan, "qps_ci_rel_halfwidth": nan,
           "latency_mean_ci_low_ns": nan, "latency_mean_ci_high_ns": nan,
           "ci_level": level, "ci_batches": 0, "ci_batch_queries": 0, "ci_lag1": nan,
           "qps_ci_conservative": False,
           "ci_latency_batches": 0, "ci_latency_lag1": nan, "ci_note": "",
           "qps_controlled": nan, "qps_ci_control": "", "ci_control_corr": nan,
           "latency_mean_ns": nan, "latency_ci_rel_halfwidth": nan,
           "latency_ci_conservative": False, "latency_ci_control": ""}
    if (load is None) != (load_trace is None):
        raise ValueError("batch_means_ci: give both load and load_trace, or neither")
    if (work is None) != (work_trace is None):
        raise ValueError("batch_means_ci: give both work and work_trace, or neither")
    if level != CI_LEVEL:
        raise ValueError(f"only {CI_LEVEL} confidence intervals are implemented, got {level}")
    if n < 2 * CI_MIN_BATCHES or hi_cycles <= lo_cycles:
        out["ci_note"] = (f"no interval: {n} completions in the steady-state window, fewer "
                          f"than {2 * CI_MIN_BATCHES} (simulate more queries)")
        return out
    order = np.argsort(d, kind="stable")
    d, lat = d[order], lat[order]
    if load is not None:
        load = np.asarray(load)[order]
    if work is not None:
        work = np.asarray(work, dtype=np.float64)[order]

    u = max(1, int(turnover))
    n_t = whole_turnovers(n, u)       # the throughput's completions: d[:n_t]

    def edges_of(k, m=n, unit=1):
        """Batch j = completions edges[j]:edges[j+1] of the first m, in k batches of whole
        units (m // unit of them, shared out as evenly as they go)."""
        return unit * ((np.arange(k + 1) * (m // unit)) // k)

    def batches(k, which):
        if which == 0:
            edges = edges_of(k, n_t, u)
            ends = d[edges[1:] - 1].astype(np.float64)
            starts = np.concatenate([[float(lo_cycles)], ends[:-1]])
            return (ends - starts) / np.diff(edges).astype(np.float64)
        edges = edges_of(k)
        return np.add.reduceat(lat, edges[:-1]) / np.diff(edges).astype(np.float64)

    def choose(which):
        """(batches, their means, lag-1 autocorrelation, note) of one series by the rule."""
        m, unit = (n_t, u) if which == 0 else (n, 1)
        units = m // unit
        if units < CI_MIN_BATCHES:
            return units, None, float("nan"), (
                f"{m} completions in the window are {units} turnovers of {unit} (the queries "
                f"in flight), fewer than {CI_MIN_BATCHES} batches"), False
        k = min(CI_START_BATCHES, m // max(2, unit))
        while True:
            means = batches(k, which)
            rho = _lag1(means)
            if (CI_MIN_LAG1 < rho < CI_MAX_LAG1 and unit * (units // k) >= min_batch_queries) \
                    or k // 2 < CI_MIN_BATCHES:
                break
            k //= 2
        note, ok = "", True
        if unit * (units // k) < min_batch_queries:
            note, ok = (f"{m} completions in the window make batches of {m // k}, shorter "
                        f"than {min_batch_queries} (the queries in flight: one correlation "
                        f"time)"), False
        elif rho >= CI_MAX_LAG1:
            note, ok = (f"the means of {k} batches of {m // k} completions are still "
                        f"correlated (lag-1 autocorrelation {rho:.2f}, at least "
                        f"{CI_MAX_LAG1})"), False
        elif rho <= CI_MIN_LAG1:
            # negatively correlated batch means: the batch-means variance overstates the
            # variance of their mean, so the interval is wider than the error, never narrower
            note = (f"conservative: the means of {k} batches of {m // k} completions "
                    f"alternate (lag-1 autocorrelation {rho:.2f}, at most {CI_MIN_LAG1}), "
                    f"so the interval is wider than the error")
        return k, means, rho, note, ok

    sec = TCK_PS * 1e-12
    k, gap, rho, note, ok = choose(0)
    out["ci_batches"], out["ci_batch_queries"], out["ci_lag1"] = k, int(n_t // k), rho
    notes, caveats = [], []
    if not ok:
        notes.append(f"no QPS interval: {note}")
    else:
        if note:
            caveats.append(f"QPS interval {note}")
            out["qps_ci_conservative"] = True
        # the point estimate's cycles per query
        g = (hi_cycles - lo_cycles) / n if n_t == n else (int(d[n_t - 1]) - lo_cycles) / n_t
        h = t_quantile_975(k - 1) * gap.std(ddof=1) / np.sqrt(k)
        if load is not None:
            edges = edges_of(k, n_t, u)
            x = _busiest_load(load[:n_t], edges)
            xc = x - x.mean()
            sxx = float(xc @ xc)
            if sxx > 0:
                gc = gap - gap.mean()
                b = float(xc @ gc) / sxx
                resid = gc - b * xc
                dx = float(x.mean()) - _busiest_load_mean(np.asarray(load_trace),
                                                               np.diff(edges))
                h_c = t_quantile_975(k - 2) * np.sqrt(float(resid @ resid) / (k - 2)
                                                      * (1.0 / k + dx * dx / sxx))
                gg = float(gc @ gc)
                out["ci_control_corr"] = float(xc @ gc / np.sqrt(sxx * gg)) if gg > 0 else 0.0
                if b > 0 and h_c < h and g - b * dx > h_c:
                    g, h = g - b * dx, h_c
                    out["qps_ci_control"] = "busiest memory instance"
                    out["qps_controlled"] = 1.0 / (g * sec)
        out["qps_ci_low"] = 1.0 / ((g + h) * sec)
        out["qps_ci_high"] = 1.0 / ((g - h) * sec) if g > h else float("inf")
        out["qps_ci_rel_halfwidth"] = float(h / g)
    k, lat_b, rho, note, ok = choose(1)   # latency: every completion of the window
    out["ci_latency_batches"], out["ci_latency_lag1"] = k, rho
    lm = float(np.asarray(latency_ns, dtype=np.float64).mean())   # in the order given
    out["latency_mean_ns"] = lm
    if not ok:
        notes.append(f"no latency interval: {note}")
    else:
        if note:
            caveats.append(f"latency interval {note}")
            out["latency_ci_conservative"] = True
        lh = t_quantile_975(k - 1) * float(lat_b.std(ddof=1)) / np.sqrt(k)
        if work is not None:
            edges = edges_of(k)
            x = np.add.reduceat(work.reshape(n, -1), edges[:-1], axis=0) \
                / np.diff(edges)[:, None]
            c = _multi_controlled(lat_b, x, np.asarray(work_trace, dtype=np.float64)
                                  .reshape(len(work_trace), -1).mean(axis=0))
            if c is not None:
                shift, h_c = c
                if h_c < lh and lm - shift > h_c:
                    lm, lh = lm - shift, h_c
                    out["latency_ci_control"] = ("DRAM requests in all and on the busiest "
                                                 "memory instance" if x.shape[1] > 1 else
                                                 "DRAM requests")
        out["latency_mean_ns"] = lm
        out["latency_mean_ci_low_ns"], out["latency_mean_ci_high_ns"] = lm - lh, lm + lh
        out["latency_ci_rel_halfwidth"] = float(lh / lm)
    if notes:
        out["ci_note"] = "; ".join(notes) + "; simulate more queries"
    if caveats:
        out["ci_note"] = "; ".join(([out["ci_note"]] if notes else []) + caveats)
    return out


def _dram_busy(res) -> list:
    """Per memory instance: (data-bus busy fraction averaged over its channels, burst-busy
    fraction averaged over its ranks), from :func:`dram.stats.busy_cycles` of each of its
    channels (one controller state per channel)."""

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
    on_gpc = model.search_location == "device"
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


def unit_busy(res) -> tuple:
    """``(label, fractions)``: the unit whose contexts run the searches, by its label in the
    unit registry (cosmos.units), and its busy fraction at each place it sits (one for the
    host's cores or the switch's, one per device for the GPC contexts): the context-holding
    time of the place's tasks / (its contexts x simulated time)."""
    st, pg, cfg = res.state, res.program, res.config
    model = model_for(cfg)
    u = unit(model.search_pool)
    D = cfg.device.count
    pools = {"host": [POOL_HOST], "device": list(range(1, D + 1)),
             "switch": [switch_pool(D)]}[u.location]
    cycles = max(res.cycles, 1)
    held = np.where(st.task_end >= 0, st.task_end - st.task_start, 0)
    out = []
    for p in pools:
        ctx = int(res.pool_sizes[p])
        out.append(float(held[pg.task_pool == p].sum() / (ctx * cycles)) if ctx else
                   float("nan"))
    return u.label, out


def summary(res, warmup: float = 0.1) -> dict:
    """Headline figures as a JSON-ready dict (times in ns, bandwidths in GB/s).

    ``qps`` is the steady-state throughput: completions in the window (``window_queries``)
    over its length, reported as ``qps_window``; in a closed loop, of the window's first whole
    turnovers (``qps_queries`` completions, :func:`whole_turnovers`), and the controlled
    estimate where the control variate is used. It is a steady state only if the window
    holds at least as many completions as queries can be in flight at once,
    ``min(max_inflight, num_queries)`` (each context turned over once inside it):
    ``steady_state`` says whether it does. Without a steady state (too few queries for the
    system's contexts) the window's rate is an artifact of one burst of queries all started at
    time 0, so ``qps`` falls back to ``qps_overall`` = num_queries / simulated time, and the
    CLI warns. Latency and breakdown figures are over the window's queries either way.
    """
    st, cfg = res.state, res.config
    pq = per_query(res)
    q_done = st.q_done[:res.queries]
    lo, hi, mask = steady_window(q_done, warmup, getattr(res, "ci_until_cycle", None))
    win_s = (hi - lo) * TCK_PS * 1e-12
    n_win = int(mask.sum())
    qps_window = n_win / win_s if win_s > 0 else float("nan")
    cycles = max(res.cycles, 1)
    seconds = cycles * TCK_PS * 1e-12
    Q = res.queries
    in_flight = min(int(res.max_inflight), Q)
    steady = bool(win_s > 0 and n_win >= in_flight)
    lat = pq["latency_ns"].to_numpy()[mask]
    qps_queries = n_win
    if steady:
        turnover = in_flight if res.mode == "closed" else 1
        control = ci_controls(res.mode, query_instance_requests(res.program, res.num_instances),
                              np.flatnonzero(mask))
        ci = batch_means_ci(q_done[mask], lat, lo, hi, min_batch_queries=in_flight,
                            turnover=turnover, **control)
        # the throughput of the window's whole turnovers (whole_turnovers)
        qps_queries = whole_turnovers(n_win, turnover)
        qps = qps_window
        if qps_queries < n_win:
            t_end = int(np.sort(q_done[mask], kind="stable")[qps_queries - 1])
            qps = qps_queries / ((t_end - lo) * TCK_PS * 1e-12)
        if np.isfinite(ci["qps_controlled"]):
            qps = ci["qps_controlled"]
    else:
        qps = Q / seconds
        ci = batch_means_ci(q_done[:0], lat[:0], lo, hi)
        ci["ci_note"] = ("no interval: no steady state (fewer completions in the window than "
                         "queries in flight)")
    dev = per_device(res)
    busy = unit_busy(res)
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
        "trace_queries": res.program.num_queries,
        "stopped": res.stopped,
        "ci_target": res.ci_target,
        # completions the passing stop test saw (a run stopped by ci_target; else None)
        "ci_stop_completions": (None if getattr(res, "ci_until_cycle", None) is None else
                                int((q_done <= res.ci_until_cycle).sum())),
        "warmup_fraction": warmup,
        "window_queries": n_win,
        "qps_queries": qps_queries,
        "steady_state": steady,
        "qps": qps,
        "qps_window": qps_window,
        "qps_overall": Q / seconds,
        "qps_ci_low": ci["qps_ci_low"],
        "qps_ci_high": ci["qps_ci_high"],
        "qps_ci_rel_halfwidth": ci["qps_ci_rel_halfwidth"],
        "latency_mean_ns": (ci["latency_mean_ns"] if np.isfinite(ci["latency_mean_ns"])
                            else float(lat.mean()) if lat.size else float("nan")),
        "latency_mean_ci_low_ns": ci["latency_mean_ci_low_ns"],
        "latency_mean_ci_high_ns": ci["latency_mean_ci_high_ns"],
        "latency_ci_rel_halfwidth": ci["latency_ci_rel_halfwidth"],
        "latency_ci_control": ci["latency_ci_control"],
        "ci_level": ci["ci_level"],
        "ci_batches": ci["ci_batches"],
        "qps_ci_conservative": ci["qps_ci_conservative"],
        "ci_batch_queries": ci["ci_batch_queries"],
        "ci_lag1": ci["ci_lag1"],
        "ci_note": ci["ci_note"],
        "qps_ci_control": ci["qps_ci_control"],
        "ci_control_corr": ci["ci_control_corr"],
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
        "search_unit": busy[0],
        "search_unit_busy_fraction": float(np.mean(busy[1])),
        "search_unit_busy_fraction_by_place": busy[1],
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
        on_gpc = model.search_location == "device"
        if on_gpc:
            out["gpc_busy_fraction"] = [float(x) for x in dev["gpc_busy_fraction"][:D]]
        # LIR of the placement by cluster searches (placement package's definition)
        pg = res.program
        ran = slice(0, int(pg.query_task_ptr[Q]))      # the tasks of the queries simulated
        tdev, tpool = pg.task_device[ran], pg.task_pool[ran]
        search_dev = tdev[tpool == 1 + tdev] if on_gpc else None
        if search_dev is not None and search_dev.size:
            loads = np.bincount(search_dev, minlength=D).astype(float)
            out["device_tasks"] = [int(x) for x in loads]
            out["device_lir_tasks"] = float(loads.max() / loads.mean())

    # energy over the same window as qps_window (issue 51)
    out.update(summary_fields(res, window=(lo, hi, mask), steady=steady))
    return out


def with_unit(name: str) -> str:
    """``name`` with ``_fraction`` appended if it is a utilization (``util``) without a unit.

    cosmos.metrics names its utilizations (busy cycles / simulated cycles) with the unit
    already (``upstream_util_down_fraction``, ``link_down_util_fraction``, ...); this keeps
    any other ``util`` name a caller adds from reaching a table without one.
    """
    if "util" in name.split("_") and not name.endswith("_fraction"):
        return f"{name}_fraction"
    return name


def flatten_summary(summary: dict) -> dict:
    """``summary()`` of cosmos.metrics as one flat row of scalars.

    Nested dicts become ``outer_inner`` keys (``breakdown_ns`` -> ``breakdown_<stage>_ns``);
    utilizations get ``_fraction`` (:func:`with_unit`); list-valued (per-device) fields are
    left out: they belong to a per-device table (:func:`per_device`). A row of ``cosmos
    replay``'s and ``cosmos simulate``'s ``systems.csv`` is this, after the system's name.
    """
    flat: dict = {}
    for k, v in summary.items():
        if isinstance(v, dict):
            for kk, vv in v.items():
                flat[with_unit(f"{k}_{kk}" if not k.endswith("_ns") else f"{k[:-3]}_{kk}_ns")] = vv
        elif isinstance(v, (list, tuple)):
            continue
        else:
            flat[with_unit(k)] = v
    return flat
