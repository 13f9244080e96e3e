"""Confidence intervals of the steady-state metrics (cosmos.metrics.batch_means_ci) and the
``ci_target`` stop of cosmos.simulate."""

from __future__ import annotations

import numpy as np
import pytest

from cosmos.config import TCK_PS
from cosmos.metrics import (CI_MIN_BATCHES, batch_means_ci, steady_window, t_quantile_975,
                            whole_turnovers)


def closed_loop_single_server(num_queries, in_flight, mean_requests, service_cycles, rng):
    """A closed loop around one FIFO server with a fixed service time per request: ``in_flight``
    queries at once, each needing a geometric number of requests (mean ``mean_requests``),
    served one after another; a completion admits the next query at once. The server is
    never idle, so the true throughput is exactly 1 / (mean_requests x service_cycles) queries
    per cycle and, by Little's law, the true mean latency is in_flight / throughput.
    Returns (completion cycle, admission cycle) per query."""
    reqs = rng.geometric(1.0 / mean_requests, size=num_queries)
    service = reqs * service_cycles
    # FIFO, never idle: query q is served after the ones before it, admitted when query
    # q - in_flight completed (time 0 for the first in_flight)
    done = np.cumsum(service)
    admit = np.zeros(num_queries, np.int64)
    admit[in_flight:] = done[:-in_flight]
    return done.astype(np.int64), admit


def _ci_of(done, admit, warmup=0.1, in_flight=None):
    """The interval as batch_means_ci computes it by default, or with ``in_flight`` as the
    summary computes it for a closed loop of that many queries in flight (batches of at
    least that many completions, the throughput over whole turnovers)."""
    lo, hi, mask = steady_window(done, warmup)
    lat_ns = (done[mask] - admit[mask]) * TCK_PS / 1000.0
    if in_flight is None:
        return batch_means_ci(done[mask], lat_ns, lo, hi)
    return batch_means_ci(done[mask], lat_ns, lo, hi, min_batch_queries=in_flight,
                          turnover=in_flight)


@pytest.mark.parametrize("as_summary", [False, True])
@pytest.mark.parametrize("in_flight", [8, 64])
def test_coverage_closed_loop_single_resource(in_flight, as_summary):
    """The 95 % QPS interval covers the true throughput in >= 90 of 100 seeded repetitions of
    a closed loop whose throughput is known exactly; the latency interval, where one is
    claimed, covers the true mean latency at least as often (with 64 in flight the latencies
    of neighbouring queries overlap and the rule declines some intervals rather than claim a
    false one)."""
    mean_requests, service_cycles = 20, 10
    true_qps = 1.0 / (mean_requests * service_cycles * TCK_PS * 1e-12)
    true_lat_ns = in_flight / true_qps * 1e9
    cover_qps = cover_lat = claimed_lat = 0
    for seed in range(100):
        rng = np.random.default_rng(seed)
        done, admit = closed_loop_single_server(2_000, in_flight, mean_requests,
                                                service_cycles, rng)
        ci = _ci_of(done, admit, in_flight=in_flight if as_summary else None)
        assert ci["ci_batches"] >= CI_MIN_BATCHES
        cover_qps += ci["qps_ci_low"] <= true_qps <= ci["qps_ci_high"]
        if not np.isnan(ci["latency_mean_ci_low_ns"]):
            claimed_lat += 1
            cover_lat += (ci["latency_mean_ci_low_ns"] <= true_lat_ns <=
                          ci["latency_mean_ci_high_ns"])
    assert cover_qps >= 90, cover_qps
    assert claimed_lat >= 80 and cover_lat >= 0.9 * claimed_lat, (cover_lat, claimed_lat)


def closed_loop_loaded_server(loads, in_flight, cycles_per_request, noise_cycles, rng):
    """A closed loop around one FIFO server that is never idle, like
    :func:`closed_loop_single_server`, whose queries carry a control: query q makes
    ``loads[q, i]`` requests on memory instance i and takes ``cycles_per_request`` x its
    requests plus an exponential number of cycles (mean ``noise_cycles``) that nothing
    predicts. Conditional on the trace's loads, the true throughput is exactly
    1 / (cycles_per_request x mean requests per query + noise_cycles) queries per cycle."""
    service = cycles_per_request * loads.sum(axis=1) + rng.exponential(noise_cycles, len(loads))
    done = np.cumsum(service)
    admit = np.zeros(len(loads), np.int64)
    admit[in_flight:] = done[:-in_flight]
    return done.astype(np.int64), admit


def test_control_variate_covers_the_traces_throughput_with_a_narrower_interval():
    """With the load control (cosmos.metrics.batch_means_ci): over 100 seeded traces of 4,000
    queries of which the first 2,000 are simulated (a run stopped early), the 95 % QPS
    interval covers the throughput on the whole trace's queries in >= 90, and its half-width
    is on average well under the plain batch-means one on the same completions (the batches'
    time per query correlates about 0.8 with the control here: 0.58 of the width measured).
    The batches are whole turnovers of the 32 queries in flight, as the summary cuts them; in
    one run of the 100 their means are still correlated at 10 batches and no interval is
    claimed (the rule declines rather than claim a false one)."""
    cover = claimed = 0
    ratios = []
    for seed in range(100):
        rng = np.random.default_rng(seed)
        loads = rng.geometric(1 / 20, size=(4_000, 2)).astype(np.int64)
        true_qps = 1.0 / ((10 * loads.sum(axis=1).mean() + 100) * TCK_PS * 1e-12)
        done, admit = closed_loop_loaded_server(loads[:2_000], 32, 10, 100, rng)
        lo, hi, mask = steady_window(done, 0.1)
        lat = (done[mask] - admit[mask]) * TCK_PS / 1000.0
        ci = batch_means_ci(done[mask], lat, lo, hi, min_batch_queries=32, turnover=32,
                            load=loads[:2_000][mask], load_trace=loads)
        plain = batch_means_ci(done[mask], lat, lo, hi, min_batch_queries=32, turnover=32)
        if np.isnan(plain["qps_ci_low"]):
            assert np.isnan(ci["qps_ci_low"]) and "still correlated" in ci["ci_note"]
            continue
        claimed += 1
        assert ci["qps_ci_control"] == "busiest memory instance"
        assert ci["ci_batches"] == plain["ci_batches"] >= CI_MIN_BATCHES
        assert ci["qps_ci_low"] < ci["qps_controlled"] < ci["qps_ci_high"]
        cover += ci["qps_ci_low"] <= true_qps <= ci["qps_ci_high"]
        ratios.append(ci["qps_ci_rel_halfwidth"] / plain["qps_ci_rel_halfwidth"])
        # the latency interval does not use the control
        assert np.array_equal(ci["latency_mean_ci_low_ns"], plain["latency_mean_ci_low_ns"],
                              equal_nan=True)
    assert cover >= 90 and claimed >= 95, (cover, claimed)
    assert np.mean(ratios) < 0.7, np.mean(ratios)


def closed_loop_in_step(num_queries, in_flight, latency_cycles, cv, rng):
    """A closed loop of ``in_flight`` contexts whose queries all take about the same time
    (normal, mean ``latency_cycles``, coefficient of variation ``cv``), started together, like
    the host's threads: the completions come in turnovers of ``in_flight`` that stay in step
    for the whole run, each ending in a pause. Each context completes its queries back to
    back, so the true throughput is exactly in_flight / latency_cycles queries per cycle.
    Returns (completion cycle, admission cycle) of the first ``num_queries`` completions."""
    per_context = num_queries // in_flight + 2
    lat = latency_cycles * (1 + cv * rng.standard_normal((in_flight, per_context)))
    done = np.cumsum(lat, axis=1).ravel()
    first = np.argsort(done, kind="stable")[:num_queries]
    return (np.round(done[first]).astype(np.int64),
            np.round(done[first] - lat.ravel()[first]).astype(np.int64))


def test_whole_turnovers():
    assert whole_turnovers(1599, 32) == 1568 and whole_turnovers(1600, 64) == 1600
    assert whole_turnovers(1599, 1) == 1599 and whole_turnovers(20, 32) == 20


def test_in_step_turnovers_give_a_narrow_interval_that_covers():
    """Completions in turnovers of 32 that stay in step (the host's systems: latency CV 1-4 %
    at 1M vectors): batches cut across turnovers scatter with the pause each holds or not,
    giving a ~+-5 % interval around an estimate that moves with the window's phase; the
    throughput over whole turnovers with batches of whole turnovers gives an interval ten
    times narrower that still covers the true throughput in >= 90 of 100 seeded runs."""
    latency = 2_000_000
    true_qps = 32 / (latency * TCK_PS * 1e-12)
    cover, narrow, plain_w = 0, [], []
    for seed in range(100):
        done, admit = closed_loop_in_step(2_000, 32, latency, 0.02, np.random.default_rng(seed))
        ci = _ci_of(done, admit, in_flight=32)
        plain = _ci_of(done, admit)
        cover += ci["qps_ci_low"] <= true_qps <= ci["qps_ci_high"]
        narrow.append(ci["qps_ci_rel_halfwidth"])
        plain_w.append(plain["qps_ci_rel_halfwidth"])
    assert cover >= 90, cover
    assert np.median(plain_w) > 0.03 and np.median(narrow) < np.median(plain_w) / 10, \
        (np.median(narrow), np.median(plain_w))


def test_control_variate_with_a_constant_load_is_the_plain_interval():
    """A load that does not vary between batches cannot be regressed on: no control."""
    rng = np.random.default_rng(3)
    done, admit = closed_loop_single_server(2_000, 8, 20, 10, rng)
    lo, hi, mask = steady_window(done, 0.1)
    lat = (done[mask] - admit[mask]) * 0.416
    load = np.full((2_000, 2), 7, np.int64)
    ci = batch_means_ci(done[mask], lat, lo, hi, load=load[mask], load_trace=load)
    plain = batch_means_ci(done[mask], lat, lo, hi)
    assert ci["qps_ci_control"] == "" and np.isnan(ci["qps_controlled"])
    assert ci["qps_ci_low"] == plain["qps_ci_low"] and ci["qps_ci_high"] == plain["qps_ci_high"]
    with pytest.raises(ValueError, match="both load and load_trace"):
        batch_means_ci(done[mask], lat, lo, hi, load=load[mask])


def test_interval_contains_point_estimate_and_shrinks():
    rng = np.random.default_rng(1)
    done, admit = closed_loop_single_server(20_000, 8, 20, 10, rng)
    widths = []
    for n in (2_000, 20_000):
        lo, hi, mask = steady_window(done[:n], 0.1)
        ci = batch_means_ci(done[:n][mask], (done[:n] - admit[:n])[mask] * 0.416, lo, hi)
        qps = mask.sum() / ((hi - lo) * TCK_PS * 1e-12)
        assert ci["qps_ci_low"] < qps < ci["qps_ci_high"]
        widths.append(ci["qps_ci_rel_halfwidth"])
    # 10 x the completions: about sqrt(10) narrower
    assert widths[1] < widths[0] / 2


def test_too_few_completions_give_nan_with_note():
    done = np.arange(1, 16, dtype=np.int64) * 100
    ci = batch_means_ci(done, np.ones(15), 0, 1500)
    assert np.isnan(ci["qps_ci_low"]) and np.isnan(ci["latency_mean_ci_high_ns"])
    assert "no interval" in ci["ci_note"] and "15 completions" in ci["ci_note"]


def test_a_conservative_interval_does_not_stop_a_run():
    """The stop test of ci_target accepts only an interval whose batch means passed the
    independence check, not one claimed as conservative."""
    from cosmos.simulate import _ci_reached

    rng = np.random.default_rng(0)
    pairs = np.repeat(np.tile([100.0, 300.0], 8), 2)[:30]
    done = np.cumsum(pairs + rng.normal(0, 3, pairs.size)).astype(np.int64)
    assert batch_means_ci(done, np.ones(done.size), 0, int(done[-1]))["qps_ci_conservative"]
    assert not _ci_reached(done, np.zeros_like(done), 0.99, 0.0, 1)
    steady = np.cumsum(np.full(400, 200.0) + rng.normal(0, 3, 400)).astype(np.int64)
    assert _ci_reached(steady, np.zeros_like(steady), 0.05, 0.0, 1)


def test_correlated_batches_give_nan():
    """A slowly drifting rate (batch means correlated at every admissible batch size): no
    interval is claimed."""
    gaps = np.repeat([100, 300], 500)          # two regimes: strongly correlated halves
    done = np.cumsum(gaps).astype(np.int64)
    ci = batch_means_ci(done, np.ones(done.size), 0, int(done[-1]))
    assert np.isnan(ci["qps_ci_rel_halfwidth"])
    assert "correlated" in ci["ci_note"]


def test_alternating_batches_give_a_conservative_interval():
    """Batch means that alternate (negative lag-1 at the fewest batches allowed) still give an
    interval, flagged as conservative, and it covers the true rate."""
    rng = np.random.default_rng(0)
    pairs = np.repeat(np.tile([100.0, 300.0], 8), 2)[:30]   # 15 batches of 2: high, low, ...
    gaps = pairs + rng.normal(0, 3, pairs.size)
    done = np.cumsum(gaps).astype(np.int64)
    ci = batch_means_ci(done, np.ones(done.size), 0, int(done[-1]))
    assert ci["ci_batches"] == 15 and ci["ci_lag1"] < -0.5
    assert np.isfinite(ci["qps_ci_rel_halfwidth"]) and "conservative" in ci["ci_note"]
    assert ci["qps_ci_conservative"]
    true_qps = 1.0 / (200.0 * TCK_PS * 1e-12)
    assert ci["qps_ci_low"] <= true_qps <= ci["qps_ci_high"]


def test_t_quantile_matches_scipy():
    stats = pytest.importorskip("scipy.stats")
    for df in (4, 5, 9, 10, 19, 39, 100, 1000):
        assert abs(t_quantile_975(df) - stats.t.ppf(0.975, df)) < 1e-3
    for df in (9, 19, 39):      # the batch counts the intervals use
        assert abs(t_quantile_975(df) - stats.t.ppf(0.975, df)) < 1e-4


def _trace(num_queries):
    from cosmos_helpers import make_trace
    return make_trace(num_queries=num_queries, hops=3, reads_per_hop=4, seed=1)


@pytest.mark.parametrize("name", ["base", "cxl-anns-cache", "cosmos"])
def test_the_controls_loads_are_the_requests_each_instance_served(name):
    """cosmos.metrics.query_instance_requests: per query and memory instance, the requests the
    program makes; summed over queries, what each instance's DRAM served (the host graph
    cache of cxl-anns-cache is an instance too); summed over instances, each query's."""
    from cosmos.metrics import query_instance_requests
    from cosmos.presets import get_preset
    from cosmos.simulate import simulate

    r = simulate(get_preset(name), _trace(60), progress=False)
    load = query_instance_requests(r.program, r.num_instances)
    assert load.shape == (60, r.num_instances)
    assert np.array_equal(load.sum(axis=0), r.state.inst_reqs)
    assert np.array_equal(load.sum(axis=1), r.program.requests_per_query())


def test_ci_target_stops_and_equals_a_run_of_its_queries():
    """A run stopped by ci_target simulated exactly its first N queries: the same completions
    as a run of num_queries=N; its summary says so and reports the interval its stop test
    passed on (the window of the completions the test saw: within the target); the same
    inputs stop at the same N."""
    from cosmos.presets import get_preset
    from cosmos.simulate import simulate

    tr = _trace(1500)
    cfg = get_preset("base")
    r = simulate(cfg, tr, ci_target=0.03, ci_min_queries=300, progress=False)
    s = r.summary()
    assert r.stopped == s["stopped"] == "ci-target"
    assert 300 <= r.queries == s["num_queries"] < 1500 and s["trace_queries"] == 1500
    assert (r.state.q_done[:r.queries] >= 0).all()
    assert s["qps_ci_low"] < s["qps"] < s["qps_ci_high"]
    assert s["qps_ci_rel_halfwidth"] <= 0.03
    assert 300 <= s["ci_stop_completions"] < r.queries   # the drained ones come after
    again = simulate(cfg, tr, ci_target=0.03, ci_min_queries=300, progress=False)
    assert again.queries == r.queries
    assert np.array_equal(again.state.q_done, r.state.q_done)
    ref = simulate(cfg, tr, num_queries=r.queries, progress=False)
    assert np.array_equal(ref.state.q_done, r.state.q_done[:r.queries])
    s_ref = ref.summary()
    assert s_ref["dram_requests"] == s["dram_requests"] and s_ref["ci_stop_completions"] is None
    # the whole run's energy is over the queries it simulated (not the trace's)
    for k in ("energy_per_query_run_mJ", "power_avg_run_W", "qps_per_W_run"):
        assert s_ref[k] == s[k] > 0, k
    # the stopped run's window is the stop test's: the N-query run's figures over that window
    # (energy per query too: it is taken over the QPS window, issue 51)
    ref.ci_until_cycle = r.ci_until_cycle
    s_win = ref.summary()
    for k in ("qps", "qps_ci_low", "latency_mean_ns", "dram_requests", "breakdown_ns",
              "energy_per_query_mJ", "power_avg_W", "qps_per_W"):
        assert s_win[k] == s[k], k
    # (base's host threads, not its busiest device, limit it: no control variate here; a
    # controlled QPS would be for the whole trace's queries, whose load is the control's mean)
    assert s["qps_ci_control"] == s_win["qps_ci_control"] == ""
    full = simulate(cfg, tr, progress=False).summary()
    assert full["stopped"] == "all queries" and full["num_queries"] == 1500
    # never stops before the minimum number of queries
    late = simulate(cfg, tr, ci_target=0.5, ci_min_queries=1400, progress=False)
    assert late.queries >= 1400


def test_ci_target_rejected_values():
    from cosmos.presets import get_preset
    from cosmos.simulate import simulate

    for bad in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError, match="ci_target"):
            simulate(get_preset("base"), _trace(10), ci_target=bad, progress=False)


def test_cli_reports_the_interval_and_the_stop(tmp_path, capsys):
    """`cosmos simulate --ci-target`: summary.json has the intervals, the queries simulated
    and why the run stopped; the printed line says them too."""
    import json

    from cosmos.cli import main
    from cosmos_helpers import make_trace

    trace = tmp_path / "t.npz"
    np.savez(trace, **make_trace(num_queries=1500, hops=3, reads_per_hop=4, seed=1))
    out = tmp_path / "res"
    assert main(["simulate", "--systems", "base", "--trace", str(trace), "--out", str(out),
                 "--no-progress", "--ci-target", "0.03", "--ci-min-queries", "300"]) == 0
    text = capsys.readouterr().out
    s = json.loads((out / "summary.json").read_text())
    assert s["stopped"] == "ci-target" and s["ci_target"] == 0.03
    assert 300 <= s["num_queries"] < s["trace_queries"] == 1500
    assert s["qps_ci_low"] < s["qps"] < s["qps_ci_high"]
    assert "95% CI" in text and f"{s['num_queries']} of 1500 queries" in text
    assert "stopped: ci-target" in text


def test_cli_reports_the_control_variate(tmp_path, capsys):
    """A Cosmos run whose batches' speed follows their busiest device's load: summary.json has
    the controlled qps (qps_window keeps the plain rate) and the printed line names the
    control."""
    import json

    from cosmos.cli import main
    from cosmos_helpers import make_trace

    trace = tmp_path / "t.npz"
    # 3,000 queries: a window of 37 turnovers of the 64 queries in flight, one per batch
    np.savez(trace, **make_trace(num_queries=3000, hops=3, reads_per_hop=4, seed=1))
    out = tmp_path / "res"
    assert main(["simulate", "--systems", "cosmos", "--trace", str(trace), "--out", str(out),
                 "--no-progress"]) == 0
    text = capsys.readouterr().out
    s = json.loads((out / "summary.json").read_text())
    assert s["qps_ci_control"] == "busiest memory instance" and s["ci_control_corr"] > 0.5
    assert s["qps"] != s["qps_window"] and abs(s["qps"] / s["qps_window"] - 1) < 0.05
    assert s["qps_ci_low"] < s["qps"] < s["qps_ci_high"]
    assert "control variate: busiest memory instance" in text


def test_a_permuted_trace_holds_the_same_queries_in_the_new_order():
    """experiments.tools.check_ci_coverage.permuted_trace: query q of the permuted trace is query
    perm[q] of the original, searches, hops and reads alike; the result is a valid trace."""
    from cosmos.simulate import simulate
    from cosmos.presets import get_preset
    from cosmos_helpers import make_trace
    from experiments.tools.check_ci_coverage import permuted_trace

    tr = {k: np.asarray(v) for k, v in make_trace(num_queries=30, hops=3, reads_per_hop=4,
                                                  seed=2).items()}
    perm = np.random.default_rng(0).permutation(30)
    pt = permuted_trace(tr, perm)
    a = simulate(get_preset("cosmos"), tr, progress=False)
    b = simulate(get_preset("cosmos"), pt, progress=False)
    assert np.array_equal(b.program.requests_per_query(), a.program.requests_per_query()[perm])
    for q in (0, 7, 29):
        s0, s1 = tr["query_ptr"][perm[q]], tr["query_ptr"][perm[q] + 1]
        t0, t1 = pt["query_ptr"][q], pt["query_ptr"][q + 1]
        assert np.array_equal(pt["search_cluster"][t0:t1], tr["search_cluster"][s0:s1])
        hs = tr["search_hop_ptr"][s0], tr["search_hop_ptr"][s1]
        ht = pt["search_hop_ptr"][t0], pt["search_hop_ptr"][t1]
        assert np.array_equal(pt["hop_node"][ht[0]:ht[1]], tr["hop_node"][hs[0]:hs[1]])
        rs = tr["hop_read_ptr"][hs[0]], tr["hop_read_ptr"][hs[1]]
        rt = pt["hop_read_ptr"][ht[0]], pt["hop_read_ptr"][ht[1]]
        assert np.array_equal(pt["read_node"][rt[0]:rt[1]], tr["read_node"][rs[0]:rs[1]])
    ident = permuted_trace(tr, np.arange(30))
    for k in ("query_ptr", "search_hop_ptr", "hop_read_ptr", "read_node", "hop_node"):
        assert np.array_equal(ident[k], tr[k]), k


def open_loop_infinite_server(num_queries, rate_per_cycle, work, base_cycles, per_req_cycles,
                              noise_cycles, rng):
    """An open loop without queueing: Poisson arrivals, each query served at once in a time
    that grows with its work (``base + per_req x work`` cycles, plus exponential noise).
    Returns (completion cycle, arrival cycle) per query."""
    arrival = np.cumsum(rng.exponential(1.0 / rate_per_cycle, num_queries))
    service = base_cycles + per_req_cycles * work + rng.exponential(noise_cycles, num_queries)
    return (arrival + service).astype(np.int64), arrival.astype(np.int64)


def test_latency_control_variates_cover_and_narrow():
    """An open loop's mean latency with its controls (each query's requests in all and on its
    busiest instance): on a process whose latency grows with a query's work, the controlled
    interval covers the mean latency of the trace's query mix in >= 90 of 100 seeded runs
    and is several times narrower than the plain one; the controls' names are reported."""
    cover, ratio = 0, []
    ns = TCK_PS / 1000.0
    for seed in range(100):
        rng = np.random.default_rng(seed)
        q = 1_000
        load = rng.geometric(1 / 200, size=(q, 4))      # requests per query and instance
        work = np.stack([load.sum(axis=1), load.max(axis=1)], axis=1).astype(float)
        done, arr = open_loop_infinite_server(q, 1e-4, work[:, 1], 20_000, 50, 2_000, rng)
        truth = (20_000 + 50 * work[:, 1].mean() + 2_000) * ns
        lo, hi, mask = steady_window(done, 0.1)
        lat = (done[mask] - arr[mask]) * ns
        ci = batch_means_ci(done[mask], lat, lo, hi, work=work[mask], work_trace=work)
        plain = batch_means_ci(done[mask], lat, lo, hi)
        assert ci["latency_ci_control"].startswith("DRAM requests in all")
        assert ci["latency_mean_ci_low_ns"] < ci["latency_mean_ns"] < ci["latency_mean_ci_high_ns"]
        cover += ci["latency_mean_ci_low_ns"] <= truth <= ci["latency_mean_ci_high_ns"]
        ratio.append(plain["latency_ci_rel_halfwidth"] / ci["latency_ci_rel_halfwidth"])
    assert cover >= 90, cover
    assert np.median(ratio) > 3, np.median(ratio)
    with pytest.raises(ValueError, match="both work and work_trace"):
        batch_means_ci(done[mask], lat, lo, hi, work=work[mask])


def test_query_work_columns():
    """cosmos.metrics.query_work: requests in all and on the busiest instance; one column
    when they are the same (one memory instance)."""
    from cosmos.metrics import query_work

    load = np.array([[3, 1], [0, 5]])
    assert np.array_equal(query_work(load), [[4, 3], [5, 5]])
    assert np.array_equal(query_work(load[:, :1]), [[3], [0]])


def test_open_loop_ci_target_stops_on_the_mean_latency():
    """In an open loop ci_target is a target for the mean latency's interval (the throughput
    is the arrival rate's): the run stops once that interval is tight enough, after the open
    loop's minimum (half of the closed loop's), and reports it."""
    from cosmos.presets import get_preset
    from cosmos.simulate import ci_min_completions, simulate

    assert ci_min_completions(32, "open") == 1_000 and ci_min_completions(32) == 2_000
    assert ci_min_completions(256, "open") == ci_min_completions(256) // 2 == 3_840
    tr = _trace(1500)
    cfg = get_preset("base")
    r = simulate(cfg, tr, mode="open", rate_qps=2e4, ci_target=0.02, ci_min_queries=300,
                 progress=False)
    s = r.summary()
    assert s["stopped"] == "ci-target" and 300 <= s["num_queries"] < 1500
    assert s["latency_ci_rel_halfwidth"] <= 0.02
    assert np.isnan(s["qps_ci_rel_halfwidth"]) or s["qps_ci_rel_halfwidth"] > 0.02
    ref = simulate(cfg, tr, mode="open", rate_qps=2e4, num_queries=r.queries, progress=False)
    assert np.array_equal(ref.state.q_done, r.state.q_done[:r.queries])
