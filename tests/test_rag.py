"""The RAG pipeline model (rag): formulas, composition, saturation, bad input."""

import dataclasses
import subprocess
import sys

import numpy as np
import pytest

import rag
from cosmos_common import UserError
from experiments.harness.sim import retrieval_task
from rag import PipelineConfig, RetrievalProfile

CFG = PipelineConfig()                       # Llama-3.1-8B on one H100 SXM


def profile(latency_s=50e-6, n=200, seed=1, system="cosmos"):
    """A retrieval profile standing in for a simulation: jittered latencies around a mean."""
    lat = latency_s * np.random.default_rng(seed).uniform(0.5, 1.5, n)
    return RetrievalProfile(system, 1e5, 1e6, lat, False)


# --------------------------------------------------------------------------- formulas

def test_kv_bytes_per_token_from_the_model_card():
    # 2 (K, V) x 32 layers x 8 KV heads x 128 x 2 bytes = 128 KiB
    assert rag.get_model("llama-3.1-8b").kv_bytes_per_token == 131072
    # 2 x 80 x 8 x 128 x 2 = 320 KiB
    assert rag.get_model("llama-3.1-70b").kv_bytes_per_token == 327680


def test_prefill_equals_hand_computed_figure():
    # 2 x 8.03e9 x 1000 / (989e12 x 0.5) = 1.606e13 / 4.945e14 s
    assert rag.prefill_s(CFG, 1000) == pytest.approx(0.032477249747, rel=1e-9)
    # the default prompt: 64 question tokens + 10 passages x 128 = 1344 tokens
    assert CFG.prompt_tokens == 1344
    assert rag.prefill_s(CFG, 1344) == pytest.approx(2 * 8.03e9 * 1344 / 494.5e12, rel=1e-12)


def test_decode_equals_hand_computed_figure():
    # one step, batch 32 at 1000 tokens: (16.06e9 + 32 x 1000 x 131072) B / (3.35e12 x 0.8) B/s
    assert rag.decode_step_s(CFG, 1000) == pytest.approx(20.254304e9 / 2.68e12, rel=1e-12)
    # three steps from 1000 tokens: the closed form is the sum of the steps
    three = sum(rag.decode_step_s(CFG, 1000 + j) for j in range(3))
    assert rag.decode_s(CFG, 1000, 3) == pytest.approx(three, rel=1e-12)
    assert rag.decode_s(CFG, 1000, 3) == pytest.approx(
        (3 * 16.06e9 + 32 * 3003 * 131072) / 2.68e12, rel=1e-12)


def test_70b_needs_two_h100s_and_a100_is_slower():
    c70 = PipelineConfig(model="llama-3.1-70b")
    # 141 GB of BF16 weights: more than 80 % of 2 x 80 GB, so 4 chips
    assert rag.tensor_parallel(c70) == 4
    assert rag.prefill_s(c70, 1000) == pytest.approx(2 * 70.6e9 * 1000 / (4 * 494.5e12))
    assert rag.tensor_parallel(dataclasses.replace(c70, tensor_parallel=8)) == 8
    a100 = PipelineConfig(accelerator="a100-80gb-sxm")
    assert rag.prefill_s(a100, 1000) / rag.prefill_s(CFG, 1000) == pytest.approx(989 / 312)


def test_encoder_and_retrieval_counts():
    assert rag.encode_s(CFG) == pytest.approx(2 * 110e6 * 64 / 494.5e12)
    assert rag.encode_s(dataclasses.replace(CFG, encoder=None)) == 0.0
    assert rag.retrievals_per_request(CFG) == 1
    it = dataclasses.replace(CFG, retrieval_every_tokens=64)     # 256 tokens: 4 retrievals
    assert rag.retrievals_per_request(it) == 4
    assert rag.decode_segments(it) == [(1344, 64), (1344 + 64 + 1280, 64),
                                       (1344 + 2 * (64 + 1280), 64),
                                       (1344 + 3 * (64 + 1280), 64)]


# --------------------------------------------------------------------------- composition

def test_zero_latency_retrieval_gives_the_llm_only_ttft():
    cfg = dataclasses.replace(CFG, encoder=None)
    zero = dataclasses.replace(profile(), latencies_s=np.zeros(50))
    for rate, reps in ((5.0, 1), (15.0, 1), (300.0, 20)):
        res = rag.simulate_pipeline(cfg, zero, rate, reps, num_requests=2000, seed=3)
        llm = rag.llm_only_ttft_s(cfg, rate, reps, num_requests=2000, seed=3)
        np.testing.assert_array_equal(res.ttft_s, llm)
        assert res.retrieval_share == 0.0


def test_idle_replica_ttft_is_the_sum_of_the_stages():
    # at a vanishing rate no request waits: TTFT = encoding + retrieval + prefill, exactly
    p = profile()
    res = rag.simulate_pipeline(CFG, p, 1e-3, 1, num_requests=500, seed=0)
    assert (res.queue_s == 0).all()
    want = rag.encode_s(CFG) + res.retrieval_s + rag.prefill_s(CFG, CFG.prompt_tokens)
    np.testing.assert_allclose(res.ttft_s, want, rtol=1e-12)


def test_unqueued_share_is_the_pipelines_share_at_no_load():
    p = profile(latency_s=5e-3)
    res = rag.simulate_pipeline(CFG, p, 1e-3, 1, num_requests=500, seed=0)
    # no queueing: mean TTFT = encode + mean retrieval + prefill
    share = rag.retrieval_share_unqueued(CFG, res.retrieval_s.mean())
    assert share == pytest.approx(res.retrieval_share, rel=1e-12)
    assert rag.retrieval_share_unqueued(CFG, [0.0, 1e9]) == pytest.approx([0.0, 1.0])


def test_twice_slower_retrieval_raises_the_share_accordingly():
    p = profile(latency_s=5e-3)
    one = rag.simulate_pipeline(CFG, p, 1e-3, 1, num_requests=1000, seed=0)
    two = rag.simulate_pipeline(CFG, p.scaled(2.0), 1e-3, 1, num_requests=1000, seed=0)
    r, t = one.retrieval_s.mean(), one.ttft_s.mean()
    # no queueing: only the retrieval term doubles, the rest of TTFT is unchanged
    assert two.retrieval_share == pytest.approx(2 * r / (t + r), rel=1e-12)
    assert two.retrieval_share > one.retrieval_share
    # under load the share still rises
    one_l = rag.simulate_pipeline(CFG, p, 15.0, 1, num_requests=4000, seed=0)
    two_l = rag.simulate_pipeline(CFG, p.scaled(2.0), 15.0, 1, num_requests=4000, seed=0)
    assert two_l.retrieval_share > one_l.retrieval_share


def test_queueing_grows_with_load_and_p99_exceeds_p50():
    p = profile()
    lo = rag.simulate_pipeline(CFG, p, 2.0, 1, num_requests=4000, seed=0).stats()
    hi = rag.simulate_pipeline(CFG, p, 12.0, 1, num_requests=20000, seed=0).stats()
    assert hi["prefill_queue_mean_s"] > lo["prefill_queue_mean_s"] > 0
    assert hi["ttft_p99_s"] > hi["ttft_p50_s"]
    # M/D/1 mean wait (Pollaczek-Khinchine): rho s / (2 (1 - rho)), s the prefill, rho = 12 s
    s = rag.prefill_s(CFG, CFG.prompt_tokens)
    rho = 12.0 * s
    assert hi["prefill_queue_mean_s"] == pytest.approx(rho * s / (2 * (1 - rho)), rel=0.15)


def test_iterative_retrieval_stalls_decode():
    p = profile(latency_s=2e-3)
    it = dataclasses.replace(CFG, retrieval_every_tokens=64)
    one = rag.simulate_pipeline(CFG, p, 1e-3, 1, num_requests=500, seed=0)
    four = rag.simulate_pipeline(it, p, 1e-3, 1, num_requests=500, seed=0)
    extra = four.decode_s - rag.decode_compute_s(it)
    assert extra == pytest.approx(3 * p.latencies_s.mean(), rel=0.1)   # 3 stalls per request
    assert rag.decode_compute_s(it) > rag.decode_compute_s(CFG)    # re-prefill, longer context
    assert four.e2e_s.mean() > one.e2e_s.mean()


def test_deterministic_in_the_seed():
    p = profile()
    a = rag.simulate_pipeline(CFG, p, 10.0, 1, num_requests=1000, seed=7)
    b = rag.simulate_pipeline(CFG, p, 10.0, 1, num_requests=1000, seed=7)
    c = rag.simulate_pipeline(CFG, p, 10.0, 1, num_requests=1000, seed=8)
    np.testing.assert_array_equal(a.e2e_s, b.e2e_s)
    assert not np.array_equal(a.e2e_s, c.e2e_s)


def test_qps_per_chip_meets_the_target_and_falls_with_slower_retrieval():
    p = profile(latency_s=20e-3)
    fast = rag.qps_per_chip(CFG, p, num_requests=2000)
    slow = rag.qps_per_chip(CFG, p.scaled(4.0), num_requests=2000)
    assert 0 < slow["qps_per_chip"] < fast["qps_per_chip"]
    res = rag.simulate_pipeline(CFG, p, fast["prefill_rate_per_replica_rps"], 1,
                                num_requests=2000)
    assert np.percentile(res.ttft_s, 99) <= CFG.ttft_target_s
    # a target below the bare prefill time cannot be met
    tight = dataclasses.replace(CFG, ttft_target_s=1e-3)
    assert np.isnan(rag.qps_per_chip(tight, p)["qps_per_chip"])


# --------------------------------------------------------------------------- saturation

def test_rate_above_retrieval_capacity_is_reported_saturated():
    prof = rag.retrieval_profile("base", 2e5, 1e5, None)
    assert prof.saturated and "closed-loop throughput" in prof.reason
    st = rag.simulate_pipeline(CFG, prof, 1e3, 100).stats()
    assert st["status"] == "saturated" and np.isnan(st["ttft_p99_s"])
    assert "saturated" in st["reason"]
    assert np.isnan(rag.qps_per_chip(CFG, prof)["qps_per_chip"])


def test_simulation_falling_behind_is_saturated():
    row = {"latencies_ns": [1e4, 2e5, 9e5], "backlog_growth": 1.7}
    prof = rag.retrieval_profile("base", 9e4, 1e5, row)
    assert prof.saturated and "fell behind" in prof.reason
    ok = rag.retrieval_profile("base", 9e4, 1e5, dict(row, backlog_growth=0.05))
    assert not ok.saturated and ok.latencies_s[0] == pytest.approx(1e-5)


def test_prefill_overload_is_saturated():
    s = rag.prefill_s(CFG, CFG.prompt_tokens)
    res = rag.simulate_pipeline(CFG, profile(), 1.01 / s, 1)
    assert res.saturated and "prefill saturated" in res.reason


# --------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("change, match", [
    (dict(model="gpt-5"), "unknown model preset 'gpt-5'; expected one of llama"),
    (dict(accelerator="tpu"), "unknown accelerator preset 'tpu'; expected one of h100"),
    (dict(encoder="e5"), "unknown encoder preset 'e5'"),
    (dict(question_tokens=0), "question_tokens must be an integer > 0, got 0"),
    (dict(tokens_per_passage=-5), "tokens_per_passage must be an integer > 0"),
    (dict(output_tokens=2.5), "output_tokens must be an integer > 0"),
    (dict(retrieval_every_tokens=0), "retrieval_every_tokens must be None"),
    (dict(prefill_utilization=1.5), r"prefill_utilization must be in \(0, 1\]"),
    (dict(ttft_target_s=0), "ttft_target_s must be > 0"),
])
def test_bad_config_is_one_clear_line(change, match):
    with pytest.raises(UserError, match=match) as exc:
        rag.simulate_pipeline(dataclasses.replace(CFG, **change), profile(), 1.0, 1)
    assert "\n" not in str(exc.value)


def test_bad_token_counts_and_rates():
    with pytest.raises(UserError, match="prefill tokens must be an integer > 0, got 0"):
        rag.prefill_s(CFG, 0)
    with pytest.raises(UserError, match="generated tokens must be an integer > 0"):
        rag.decode_s(CFG, 100, -1)
    with pytest.raises(UserError, match="request rate must be a number > 0"):
        rag.simulate_pipeline(CFG, profile(), 0.0, 1)
    with pytest.raises(UserError, match="request rate must be a number > 0"):
        rag.simulate_pipeline(CFG, profile(), float("nan"), 1)
    with pytest.raises(UserError, match="prefill replicas must be an integer >= 1"):
        rag.simulate_pipeline(CFG, profile(), 1.0, 0)
    with pytest.raises(UserError, match="holds no latencies"):
        rag.simulate_pipeline(CFG, dataclasses.replace(profile(), latencies_s=np.zeros(0)),
                              1.0, 1)


def test_rag_does_not_reach_into_lower_packages():
    # rag models a system above the retrieval: dram/graphs/placement must not import it, and
    # it imports no experiments module
    out = subprocess.run([sys.executable, "-c",
                          "import sys, dram, graphs, placement; a = 'rag' in sys.modules; "
                          "import rag, rag.literature; "
                          "print(a, any(m.split('.')[0] == 'experiments' for m in sys.modules))"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False"


# --------------------------------------------------------------------------- simulations

@pytest.fixture(scope="module")
def small_trace(tmp_path_factory):
    from cosmos_helpers import make_trace

    path = tmp_path_factory.mktemp("rag") / "t.npz"
    np.savez(path, **make_trace(num_queries=40))
    return str(path)


def _ctx(cache):
    from experiments.harness.runner import Context
    from experiments.harness.workloads import get_scale

    return Context(out=cache / "out", scale=get_scale("tiny"), cache_dir=cache, workers=1,
                   progress=False)


def _task(trace, system, rate):
    return dict(system=system, trace_path=trace, num_queries=40, mode="open", rate_qps=rate,
                seed=0, tags={"system": system})


def test_retrieval_points_are_cached_and_only_new_ones_run(small_trace, tmp_path):
    ctx = _ctx(tmp_path)
    first = ctx.sweep(retrieval_task, [_task(small_trace, "cosmos", 2e4)], "t")
    assert ctx.sims == [0, 1]
    row = first[0]
    assert row["system"] == "cosmos" and len(row["latencies_ns"]) > 20
    assert all(v > 0 for v in row["latencies_ns"])
    # a new rate and a new system: only those two simulate, the first is read back
    again = ctx.sweep(retrieval_task, [_task(small_trace, "cosmos", 2e4),
                                           _task(small_trace, "cosmos", 4e4),
                                           _task(small_trace, "base", 2e4)], "t")
    assert ctx.sims == [1, 4]
    assert again[0] == first[0]
    direct = retrieval_task(**{k: v for k, v in _task(small_trace, "cosmos", 2e4).items()
                                   if k != "tags"})
    assert direct["latencies_ns"] == first[0]["latencies_ns"]     # bit for bit
    prof = rag.retrieval_profile("cosmos", 2e4, 1e9, first[0])
    assert not prof.saturated
    assert prof.latencies_s.mean() == pytest.approx(np.mean(row["latencies_ns"]) * 1e-9)


def test_an_overloaded_simulation_is_detected_as_saturated(small_trace):
    from experiments.harness.sim import simulate_task

    cap = simulate_task("base", small_trace, num_queries=40, seed=0)["qps"]
    row = retrieval_task("base", small_trace, num_queries=40, mode="open",
                             rate_qps=20 * cap, seed=0)
    # the capacity check alone would refuse it; the simulation itself shows the backlog
    assert row["backlog_growth"] > rag.BACKLOG_GROWTH_LIMIT
    assert rag.retrieval_profile("base", 20 * cap, 1e12, row).saturated
    ok = retrieval_task("base", small_trace, num_queries=40, mode="open",
                            rate_qps=0.3 * cap, seed=0)
    assert ok["backlog_growth"] < rag.BACKLOG_GROWTH_LIMIT


def test_rag_ttft_experiment_on_a_small_trace(tmp_path):
    import pandas as pd

    from cosmos_helpers import make_trace
    from experiments.figures import rag_ttft
    from experiments.harness.runner import Context
    from experiments.harness.workloads import get_scale

    scale = get_scale("tiny")
    traces = tmp_path / "traces"
    traces.mkdir()
    np.savez(traces / "sift.npz", **make_trace(num_queries=scale.sweep_queries))
    out = tmp_path / "out"
    out.mkdir()
    ctx = Context(out=out, scale=scale, cache_dir=tmp_path / "cache", workers=1,
                  progress=False, traces_dir=traces)
    head = rag_ttft.run(ctx)
    rag_ttft.plot(out)
    md = rag_ttft.summary_md(out)
    df = pd.read_csv(out / "rag_ttft.csv")
    assert len(df) == 2 * 3 * len(rag_ttft.RETRIEVAL_FRACTIONS)
    sat = df[df.status == "saturated"]
    ok = df[df.status == "ok"]
    # Cosmos sustains every rate (fractions of its own throughput, all < 1); Base does not
    assert set(ok[ok.system == "cosmos"].cosmos_capacity_fraction) == set(
        rag_ttft.RETRIEVAL_FRACTIONS)
    assert len(sat) > 0 and (sat.retrieval_load_fraction >= 1).all()
    assert sat.ttft_p99_s.isna().all() and sat.qps_per_chip.isna().all()
    assert (ok.retrieval_share_of_ttft > 0).all() and (ok.e2e_p99_s > ok.ttft_p99_s).all()
    assert (ok.ttft_p99_s >= ok.llm_only_ttft_p99_s).all()
    it, one = ok[ok.schema == "iterative"], ok[ok.schema == "one-shot"]
    assert it.e2e_p50_s.min() > one.e2e_p50_s.max()      # 3 more retrievals and re-prefills
    assert "saturated" in md and "RAGO" in md and "HERMES" in md
    assert (out / "rag_ttft.png").stat().st_size > 1000
    assert head["cosmos_max_unsaturated_rps"] > head["base_max_unsaturated_rps"]
    # a second run reads every simulation from the cache and writes the same CSV
    out2 = tmp_path / "out2"
    out2.mkdir()
    ctx2 = Context(out=out2, scale=scale, cache_dir=tmp_path / "cache", workers=1,
                   progress=False, traces_dir=traces)
    rag_ttft.run(ctx2)
    assert ctx2.sims[0] == ctx2.sims[1] > 0
    assert (out2 / "rag_ttft.csv").read_bytes() == (out / "rag_ttft.csv").read_bytes()


def test_retrieval_task_stopped_by_ci_target(tmp_path):
    """A retrieval run stopped by ci_target returns the latencies of the window its stop test
    passed on, as the summary of that run reports them."""
    from cosmos.metrics import steady_window
    from cosmos.presets import get_preset
    from cosmos.simulate import simulate
    from cosmos_helpers import make_trace

    path = tmp_path / "t.npz"
    np.savez(path, **make_trace(num_queries=1500, hops=3, reads_per_hop=4, seed=1))
    row = retrieval_task("base", str(path), num_queries=1500, mode="open", rate_qps=2e4,
                             seed=0, ci_target=0.02)
    assert row["num_queries"] < 1500
    res = simulate(get_preset("base"), str(path), mode="open", rate_qps=2e4, seed=0,
                   ci_target=0.02, progress=False)
    _, _, mask = steady_window(res.state.q_done[:res.queries], 0.1, res.ci_until_cycle)
    assert len(row["latencies_ns"]) == int(mask.sum()) < res.queries
