"""A retrieval-augmented generation (RAG) serving pipeline around simulated retrieval.

Each request of a RAG service goes through these stages (RAGO's RAGSchema, Jiang et al.,
ISCA 2025; HERMES, Wu et al., arXiv 2504.09775, 2025):

1. **query encoding** -- a small encoder embeds the question:
   ``2 x encoder_params x question_tokens / (peak_FLOPs x prefill_utilization)`` on the same
   kind of accelerator; a pure delay (the encoder is 0.03 % of a prefill's FLOPs, so its
   chips are not counted and it is not queued);
2. **retrieval** -- the latency of one search, drawn (seeded, with replacement) from the
   per-query latencies of *our* open-loop simulation of the chosen retrieval system at the
   offered retrieval rate (the system model's run, cosmos.simulate; the experiments run it as
   ``experiments.harness.sim.retrieval_task``). It already holds the retrieval system's own
   queueing. A rate at or above the system's closed-loop throughput, or one whose simulation
   falls behind its arrivals, is **saturated**: no latency is reported for it;
3. **prefill** -- compute-bound: ``2 x params x prompt_tokens / (tp x peak_FLOPs x
   prefill_utilization)``, the prompt being the question plus ``passages x
   tokens_per_passage`` retrieved tokens (the attention score FLOPs, about 5 % at 1.3 k tokens
   for an 8B model, are left out, as in RAGO's and the issue's roofline);
4. **decode** -- memory-bound: each step reads the weights once for the whole batch and the
   KV cache of every sequence in it:
   ``(weight_bytes + batch x context_tokens x kv_bytes_per_token) / (tp x HBM_bandwidth x
   bandwidth_utilization)`` per generated token, every sequence of the batch taken to be at
   the same context length as the request;
5. **iterative retrieval** (``retrieval_every_tokens = N``): after every N generated tokens
   the request's decode stalls for one more retrieval (a fresh latency draw) plus the prefill
   of the new passages on its decode replica, and the passages join its context.

Queueing model (a discrete-event simulation, not a sum of means, so p99 means something):

- requests arrive as a seeded Poisson process at ``rate_rps`` in total; prefill runs on
  ``prefill_replicas`` replicas of ``tp`` chips each, requests dispatched at random, so each
  replica sees a Poisson stream at ``rate_rps / replicas`` and is simulated alone: one
  server, FIFO in the order requests become ready (arrival + encoding + retrieval), one
  prefill at a time (a prefill is compute-bound, so batching prefills does not raise a chip's
  throughput). Prefills start at ``start_i = max(ready_i, start_{i-1} + prefill_s)``;
- TTFT = first token - arrival = encoding + retrieval + prefill queueing + prefill;
- decode replicas hold ``decode_batch`` sequences each and are provisioned by Little's law
  (``rate x mean decode time / batch`` replicas): a slot is free when a prefill finishes, so
  decode adds no queueing; end-to-end latency = TTFT + decode + stalls;
- **QPS per chip** (RAGO's metric) at a p99 TTFT target: the largest per-replica prefill rate
  meeting the target (bisection on the simulated queue with common random numbers), and the
  chips of prefill and decode together:
  ``1 / (tp x (1 / prefill_rate + mean_decode_s / decode_batch))`` requests per second per
  chip. The retrieval system's own hardware (CXL memory) is not counted as accelerator chips.

Every preset carries its source; utilization factors are marked as estimates with reasons.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cosmos_common import UserError

__all__ = ["LLMModel", "Accelerator", "Encoder", "PipelineConfig", "RetrievalProfile",
           "MODELS", "ACCELERATORS", "ENCODERS", "get_model", "get_accelerator",
           "prefill_s", "decode_s", "decode_step_s", "decode_segments", "decode_compute_s",
           "encode_s", "retrievals_per_request", "tensor_parallel", "prefill_replicas",
           "simulate_pipeline", "llm_only_ttft_s", "retrieval_share_unqueued", "qps_per_chip",
           "retrieval_profile", "saved_profile", "PipelineResult", "BACKLOG_GROWTH_LIMIT"]


# ----------------------------------------------------------------------------- presets

@dataclass(frozen=True)
class LLMModel:
    """A decoder-only transformer, as far as the roofline needs it."""

    name: str
    params: float              # parameter count
    layers: int
    kv_heads: int              # grouped-query attention: key/value heads per layer
    head_dim: int
    bytes_per_param: int = 2   # BF16 weights and KV cache
    source: str = ""

    @property
    def weight_bytes(self) -> float:
        return self.params * self.bytes_per_param

    @property
    def kv_bytes_per_token(self) -> int:
        """K and V of every layer: ``2 x layers x kv_heads x head_dim x bytes``."""
        return 2 * self.layers * self.kv_heads * self.head_dim * self.bytes_per_param


@dataclass(frozen=True)
class Accelerator:
    """One accelerator chip: dense BF16 peak and HBM bandwidth from its datasheet."""

    name: str
    peak_flops: float          # dense BF16 FLOP/s (without structured sparsity)
    hbm_bandwidth_Bps: float   # bytes per second
    memory_bytes: float
    source: str = ""


@dataclass(frozen=True)
class Encoder:
    """The query encoder (a BERT-class model): its parameters give its FLOPs per token."""

    name: str
    params: float
    source: str = ""


MODELS = {
    "llama-3.1-8b": LLMModel(
        "llama-3.1-8b", params=8.03e9, layers=32, kv_heads=8, head_dim=128,
        source="Meta Llama 3.1 model card and config.json (8.03 B parameters, 32 layers, "
               "hidden 4096, 32 query / 8 KV heads of 128)"),
    "llama-3.1-70b": LLMModel(
        "llama-3.1-70b", params=70.6e9, layers=80, kv_heads=8, head_dim=128,
        source="Meta Llama 3.1 model card and config.json (70.6 B parameters, 80 layers, "
               "hidden 8192, 64 query / 8 KV heads of 128)"),
    "llama-3.2-1b": LLMModel(
        "llama-3.2-1b", params=1.24e9, layers=16, kv_heads=8, head_dim=64,
        source="Meta Llama 3.2 model card and config.json (1.24 B parameters, 16 layers, "
               "hidden 2048, 32 query / 8 KV heads of 64)"),
}

ACCELERATORS = {
    "h100-sxm": Accelerator(
        "h100-sxm", peak_flops=989e12, hbm_bandwidth_Bps=3.35e12, memory_bytes=80e9,
        source="NVIDIA H100 Tensor Core GPU datasheet, SXM: 989 TFLOPS dense BF16 "
               "(1,979 with sparsity), 3.35 TB/s HBM3, 80 GB"),
    "a100-80gb-sxm": Accelerator(
        "a100-80gb-sxm", peak_flops=312e12, hbm_bandwidth_Bps=2.039e12, memory_bytes=80e9,
        source="NVIDIA A100 Tensor Core GPU datasheet, 80GB SXM: 312 TFLOPS dense BF16, "
               "2,039 GB/s HBM2e, 80 GB"),
}

ENCODERS = {
    "bert-base": Encoder("bert-base", params=110e6,
                         source="Devlin et al., NAACL 2019 (BERT-base: 110 M parameters), the "
                                "question encoder of DPR (Karpukhin et al., EMNLP 2020)"),
}


def _lookup(table: dict, name: str, what: str):
    if name not in table:
        raise UserError(f"unknown {what} preset {name!r}; expected one of {', '.join(table)}")
    return table[name]


def get_model(name: str) -> LLMModel:
    """The model preset ``name`` (UserError listing the known ones if there is none)."""
    return _lookup(MODELS, name, "model")


def get_accelerator(name: str) -> Accelerator:
    """The accelerator preset ``name`` (UserError listing the known ones if there is none)."""
    return _lookup(ACCELERATORS, name, "accelerator")


# ----------------------------------------------------------------------------- config

@dataclass(frozen=True)
class PipelineConfig:
    """One RAG service: model, chip, prompt shape, retrieval schema and serving targets.

    Every field is checked by :meth:`validate` (one UserError line naming the field).
    """

    model: str = "llama-3.1-8b"
    accelerator: str = "h100-sxm"
    encoder: str | None = "bert-base"     # None: no encoding stage
    #: question tokens: our choice, a short user question (RAGO's and DPR's questions are
    #: single sentences; 64 tokens leaves room for a system prompt)
    question_tokens: int = 64
    #: passages retrieved per retrieval (top-k); 10, as in RAGO's case studies and
    #: Shen et al. 2024 (our choice among their 1-10)
    passages: int = 10
    #: tokens per passage: 100-word passages (DPR's Wikipedia split, used by RAGO) at about
    #: 1.28 tokens per word with the Llama 3 tokenizer: 128 tokens (an estimate)
    tokens_per_passage: int = 128
    #: generated tokens per request (our choice: a paragraph-long answer)
    output_tokens: int = 256
    #: None: one retrieval before prefill; N: one more every N generated tokens
    retrieval_every_tokens: int | None = None
    #: estimate: prefill GEMMs reach 50 % of the dense peak (Pope et al., MLSys 2023, report
    #: 76 % MFU for large-batch prefill on TPU v4; production GPU stacks reach 40-60 %)
    prefill_utilization: float = 0.5
    #: estimate: decode streams weights and KV cache at 80 % of the HBM peak (measured
    #: STREAM-like bandwidth on H100 is 80-90 % of the datasheet figure)
    bandwidth_utilization: float = 0.8
    #: sequences per decode replica (continuous batching); an estimate of a latency-oriented
    #: deployment (vLLM's default allows up to 256; interactive services run far fewer)
    decode_batch: int = 32
    #: tensor-parallel degree; None = the fewest chips (a power of two) whose memory holds the
    #: weights with 20 % left for the KV cache (:func:`tensor_parallel`)
    tensor_parallel: int | None = None
    #: p99 TTFT target for QPS per chip (our choice: an interactive service)
    ttft_target_s: float = 0.25
    #: target prefill utilization used to size the prefill fleet of a rate sweep (estimate:
    #: headroom below saturation; at 0.6 an M/D/1 prefill queue of the default 8B prompt
    #: keeps the p99 TTFT near the default target)
    prefill_load: float = 0.6

    def validate(self) -> "PipelineConfig":
        get_model(self.model)
        get_accelerator(self.accelerator)
        if self.encoder is not None:
            _lookup(ENCODERS, self.encoder, "encoder")
        for f in ("question_tokens", "passages", "tokens_per_passage", "output_tokens",
                  "decode_batch"):
            v = getattr(self, f)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v <= 0:
                raise UserError(f"RAG pipeline: {f} must be an integer > 0, got {v!r}")
        n = self.retrieval_every_tokens
        if n is not None and (not isinstance(n, (int, np.integer)) or isinstance(n, bool)
                              or n <= 0):
            raise UserError(f"RAG pipeline: retrieval_every_tokens must be None (one-shot) or "
                            f"an integer > 0, got {n!r}")
        for f in ("prefill_utilization", "bandwidth_utilization", "prefill_load"):
            v = getattr(self, f)
            if not (isinstance(v, (int, float)) and 0 < v <= 1):
                raise UserError(f"RAG pipeline: {f} must be in (0, 1], got {v!r}")
        if not (isinstance(self.ttft_target_s, (int, float)) and self.ttft_target_s > 0):
            raise UserError(f"RAG pipeline: ttft_target_s must be > 0, got "
                            f"{self.ttft_target_s!r}")
        tp = self.tensor_parallel
        if tp is not None and (not isinstance(tp, (int, np.integer)) or tp <= 0):
            raise UserError(f"RAG pipeline: tensor_parallel must be None or an integer > 0, "
                            f"got {tp!r}")
        return self

    @property
    def prompt_tokens(self) -> int:
        """Question plus the first retrieval's passages."""
        return self.question_tokens + self.passages * self.tokens_per_passage

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def tensor_parallel(cfg: PipelineConfig) -> int:
    """Chips per model replica: ``cfg.tensor_parallel``, or the smallest power of two whose
    memory holds the weights in 80 % of it (the rest for the KV cache and activations; an
    estimate). Compute and bandwidth scale with it ideally (communication is left out)."""
    if cfg.tensor_parallel is not None:
        return int(cfg.tensor_parallel)
    m, a = get_model(cfg.model), get_accelerator(cfg.accelerator)
    tp = 1
    while m.weight_bytes > 0.8 * tp * a.memory_bytes:
        tp *= 2
    return tp


# ----------------------------------------------------------------------------- formulas

def _check_tokens(name: str, tokens) -> None:
    if not isinstance(tokens, (int, np.integer)) or isinstance(tokens, bool) or tokens <= 0:
        raise UserError(f"RAG pipeline: {name} must be an integer > 0, got {tokens!r}")


def prefill_s(cfg: PipelineConfig, tokens: int) -> float:
    """Seconds to prefill ``tokens`` on one replica:
    ``2 x params x tokens / (tp x peak_FLOPs x prefill_utilization)``."""
    _check_tokens("prefill tokens", tokens)
    m, a = get_model(cfg.model), get_accelerator(cfg.accelerator)
    return 2.0 * m.params * tokens / (tensor_parallel(cfg) * a.peak_flops
                                      * cfg.prefill_utilization)


def decode_step_s(cfg: PipelineConfig, context_tokens: float) -> float:
    """Seconds of one decode step of a batch of ``decode_batch`` sequences at
    ``context_tokens`` each: ``(weight_bytes + batch x context x kv_bytes_per_token) /
    (tp x HBM_bandwidth x bandwidth_utilization)``."""
    m, a = get_model(cfg.model), get_accelerator(cfg.accelerator)
    bw = tensor_parallel(cfg) * a.hbm_bandwidth_Bps * cfg.bandwidth_utilization
    return (m.weight_bytes + cfg.decode_batch * context_tokens * m.kv_bytes_per_token) / bw


def decode_s(cfg: PipelineConfig, context_tokens: int, new_tokens: int) -> float:
    """Seconds to generate ``new_tokens`` after a context of ``context_tokens``: the sum of
    :func:`decode_step_s` over contexts ``context, context + 1, ..., context + new - 1``
    (closed form: the KV term grows by one token per step)."""
    _check_tokens("context tokens", context_tokens)
    _check_tokens("generated tokens", new_tokens)
    m, a = get_model(cfg.model), get_accelerator(cfg.accelerator)
    bw = tensor_parallel(cfg) * a.hbm_bandwidth_Bps * cfg.bandwidth_utilization
    n = new_tokens
    kv_token_steps = n * context_tokens + n * (n - 1) / 2
    return (n * m.weight_bytes + cfg.decode_batch * kv_token_steps * m.kv_bytes_per_token) / bw


def encode_s(cfg: PipelineConfig) -> float:
    """Seconds to encode the question (0 without an encoder): ``2 x encoder_params x
    question_tokens / (peak_FLOPs x prefill_utilization)`` on one chip."""
    if cfg.encoder is None:
        return 0.0
    e, a = ENCODERS[cfg.encoder], get_accelerator(cfg.accelerator)
    return 2.0 * e.params * cfg.question_tokens / (a.peak_flops * cfg.prefill_utilization)


def retrievals_per_request(cfg: PipelineConfig) -> int:
    """1 (one-shot), or 1 + one per full N generated tokens before the last token."""
    n = cfg.retrieval_every_tokens
    return 1 if n is None else 1 + (cfg.output_tokens - 1) // n


def decode_segments(cfg: PipelineConfig) -> list[tuple[int, int]]:
    """(context tokens at its start, tokens generated) of each decode segment between
    retrievals; each later retrieval adds ``passages x tokens_per_passage`` to the context."""
    ctx, left = cfg.prompt_tokens, cfg.output_tokens
    step = cfg.output_tokens if cfg.retrieval_every_tokens is None else cfg.retrieval_every_tokens
    segs = []
    while left > 0:
        n = min(step, left)
        segs.append((ctx, n))
        ctx += n
        left -= n
        if left > 0:
            ctx += cfg.passages * cfg.tokens_per_passage
    return segs


def decode_compute_s(cfg: PipelineConfig) -> float:
    """Decode time of one request without retrieval stalls: the segments' decode plus the
    prefill of each later retrieval's passages (on the decode replica)."""
    segs = decode_segments(cfg)
    t = sum(decode_s(cfg, c, n) for c, n in segs)
    if len(segs) > 1:
        t += (len(segs) - 1) * prefill_s(cfg, cfg.passages * cfg.tokens_per_passage)
    return t


# ----------------------------------------------------------------------------- retrieval

@dataclass(frozen=True)
class RetrievalProfile:
    """The retrieval system at one offered rate, from a simulation (or a stand-in in tests).

    ``latencies_s``: per-query latencies of the steady window (empty when saturated);
    ``saturated``: the offered rate is at or above what the system sustains.
    """

    system: str
    offered_qps: float
    capacity_qps: float
    latencies_s: np.ndarray
    saturated: bool
    reason: str = ""

    def scaled(self, factor: float) -> "RetrievalProfile":
        """The same profile with every latency multiplied by ``factor``."""
        return dataclasses.replace(self, latencies_s=np.asarray(self.latencies_s) * factor)


#: an open-loop run counts as fallen behind its arrivals when its completions spread over
#: this much more time than its arrivals did (a backlog that grew by half the run: a stable
#: queue's completions track its arrivals within a few latencies)
BACKLOG_GROWTH_LIMIT = 0.5


def retrieval_profile(system: str, offered_qps: float, capacity_qps: float,
                      row: dict | None) -> RetrievalProfile:
    """The profile of ``system`` at ``offered_qps`` from its open-loop run's row
    (``experiments.harness.sim.retrieval_task``; None: not simulated because the rate is at
    or above ``capacity_qps``)."""
    if offered_qps >= capacity_qps:
        return RetrievalProfile(system, offered_qps, capacity_qps, np.zeros(0), True,
                                f"offered {offered_qps:,.0f} retrievals/s >= the system's "
                                f"closed-loop throughput {capacity_qps:,.0f}/s")
    if row is None:
        raise ValueError(f"{system} at {offered_qps:g}/s below saturation needs a simulation")
    if row["backlog_growth"] > BACKLOG_GROWTH_LIMIT:
        return RetrievalProfile(system, offered_qps, capacity_qps, np.zeros(0), True,
                                f"completions fell behind arrivals (backlog grew by "
                                f"{row['backlog_growth']:.0%} of the run)")
    lat = np.asarray(row["latencies_ns"], dtype=np.float64) * 1e-9
    return RetrievalProfile(system, offered_qps, capacity_qps, lat, False)


# ----------------------------------------------------------------------------- pipeline

@dataclass(frozen=True)
class PipelineResult:
    """Per-request figures of one pipeline simulation (seconds), warm-up requests dropped;
    all arrays empty and ``saturated`` set when a stage cannot keep up."""

    saturated: bool
    reason: str
    encode_s: np.ndarray
    retrieval_s: np.ndarray      # the first retrieval (before prefill)
    queue_s: np.ndarray          # prefill queueing
    prefill_s: np.ndarray
    ttft_s: np.ndarray
    e2e_s: np.ndarray
    decode_s: float              # mean decode time incl. stalls (s)

    @property
    def retrieval_share(self) -> float:
        """Mean retrieval latency over mean TTFT (NaN when saturated)."""
        if self.saturated or self.ttft_s.size == 0:
            return float("nan")
        return float(self.retrieval_s.mean() / self.ttft_s.mean())

    def stats(self) -> dict:
        """TTFT and end-to-end p50/p99 (s), mean stage times and the retrieval share."""
        nan = float("nan")
        if self.saturated:
            return {"status": "saturated", "reason": self.reason,
                    **{k: nan for k in ("ttft_p50_s", "ttft_p99_s", "e2e_p50_s", "e2e_p99_s",
                                        "encode_mean_s", "retrieval_mean_s",
                                        "prefill_queue_mean_s", "prefill_mean_s",
                                        "decode_mean_s", "retrieval_share_of_ttft")}}
        return {"status": "ok", "reason": "",
                "ttft_p50_s": float(np.percentile(self.ttft_s, 50)),
                "ttft_p99_s": float(np.percentile(self.ttft_s, 99)),
                "e2e_p50_s": float(np.percentile(self.e2e_s, 50)),
                "e2e_p99_s": float(np.percentile(self.e2e_s, 99)),
                "encode_mean_s": float(self.encode_s.mean()),
                "retrieval_mean_s": float(self.retrieval_s.mean()),
                "prefill_queue_mean_s": float(self.queue_s.mean()),
                "prefill_mean_s": float(self.prefill_s.mean()),
                "decode_mean_s": float(self.decode_s),
                "retrieval_share_of_ttft": self.retrieval_share}


def _saturated(reason: str) -> PipelineResult:
    e = np.zeros(0)
    return PipelineResult(True, reason, e, e, e, e, e, e, float("nan"))


def _check_run(rate_rps, replicas, num_requests, warmup) -> None:
    if not (isinstance(rate_rps, (int, float, np.floating)) and math.isfinite(rate_rps)
            and rate_rps > 0):
        raise UserError(f"RAG pipeline: request rate must be a number > 0 (requests/s), got "
                        f"{rate_rps!r}")
    if not isinstance(replicas, (int, np.integer)) or replicas < 1:
        raise UserError(f"RAG pipeline: prefill replicas must be an integer >= 1, got "
                        f"{replicas!r}")
    if not isinstance(num_requests, (int, np.integer)) or num_requests < 10:
        raise UserError(f"RAG pipeline: num_requests must be an integer >= 10, got "
                        f"{num_requests!r}")
    if not 0 <= warmup < 0.5:
        raise UserError(f"RAG pipeline: warmup must be in [0, 0.5), got {warmup!r}")


def _fifo_starts(ready: list, service_s: float) -> list:
    """Start times of a FIFO single server (ready times sorted): ``start_i = max(ready_i,
    start_{i-1} + service)`` (a request that finds the server idle starts when ready, with no
    rounding: its queueing is exactly 0)."""
    out = []
    free = -math.inf
    for r in ready:
        s = r if r >= free else free
        out.append(s)
        free = s + service_s
    return out


def simulate_pipeline(cfg: PipelineConfig, retrieval: RetrievalProfile | None, rate_rps: float,
                      replicas: int, *, num_requests: int = 4000, seed: int = 0,
                      warmup: float = 0.1) -> PipelineResult:
    """Simulate one prefill replica's share of ``rate_rps`` requests per second (see the
    module docstring). ``retrieval`` None: the LLM-only pipeline (no encoding, no retrieval;
    the prompt still holds the passages). Deterministic in ``seed``.

    Saturated (no latencies) when the retrieval profile is, or when the replica's offered
    prefill work ``rate / replicas x prefill_s`` is at least 1 (its queue grows without
    bound).
    """
    cfg = cfg.validate()
    _check_run(rate_rps, replicas, num_requests, warmup)
    if retrieval is not None and retrieval.saturated:
        return _saturated(f"retrieval ({retrieval.system}) saturated: {retrieval.reason}")
    if retrieval is not None and len(retrieval.latencies_s) == 0:
        raise UserError(f"RAG pipeline: the retrieval profile of {retrieval.system} holds no "
                        "latencies")
    t_pre = prefill_s(cfg, cfg.prompt_tokens)
    lam = rate_rps / replicas
    if lam * t_pre >= 1.0:
        return _saturated(f"prefill saturated: {lam:.3g} requests/s per replica x "
                          f"{t_pre * 1e3:.3g} ms per prefill >= 1")
    rng = np.random.default_rng(seed)
    n = int(num_requests)
    arrival = np.cumsum(rng.exponential(1.0 / lam, size=n))
    k = retrievals_per_request(cfg)
    if retrieval is None:
        enc = np.zeros(n)
        retr = np.zeros((n, k))
    else:
        enc = np.full(n, encode_s(cfg))
        lat = np.asarray(retrieval.latencies_s, dtype=np.float64)
        retr = lat[rng.integers(0, lat.size, size=(n, k))]
    ready = arrival + enc + retr[:, 0]
    order = np.argsort(ready, kind="stable")
    start = np.empty(n)
    start[order] = _fifo_starts(ready[order].tolist(), t_pre)
    queue = start - ready
    # TTFT from its parts (not first token - arrival: at large absolute times that
    # difference would carry the rounding of the arrival time)
    ttft = enc + retr[:, 0] + queue + t_pre
    decode_compute = decode_compute_s(cfg)
    stalls = retr[:, 1:].sum(axis=1)
    e2e = ttft + decode_compute + stalls
    keep = np.argsort(arrival, kind="stable")[int(math.floor(warmup * n)):]
    return PipelineResult(False, "", enc[keep], retr[keep, 0], queue[keep],
                          np.full(keep.size, t_pre), ttft[keep], e2e[keep],
                          float(decode_compute + stalls[keep].mean()))


def retrieval_share_unqueued(cfg: PipelineConfig, retrieval_s) -> np.ndarray:
    """Retrieval's share of TTFT with no prefill queueing: ``r / (encode + r + prefill)``
    for one-shot retrieval latencies ``r`` (s) and the prompt of ``cfg``: the share a
    lightly loaded service sees (a queued prefill only lowers it)."""
    cfg = cfg.validate()
    r = np.asarray(retrieval_s, dtype=np.float64)
    return r / (encode_s(cfg) + r + prefill_s(cfg, cfg.prompt_tokens))


def llm_only_ttft_s(cfg: PipelineConfig, rate_rps: float, replicas: int, *,
                    num_requests: int = 4000, seed: int = 0, warmup: float = 0.1) -> np.ndarray:
    """TTFT (s) of each request of the same service without encoding or retrieval."""
    return simulate_pipeline(cfg, None, rate_rps, replicas, num_requests=num_requests,
                             seed=seed, warmup=warmup).ttft_s


def prefill_replicas(cfg: PipelineConfig, rate_rps: float) -> int:
    """Prefill replicas that keep each at ``cfg.prefill_load`` of its capacity at
    ``rate_rps``: ``ceil(rate x prefill_s / prefill_load)``."""
    return max(1, math.ceil(rate_rps * prefill_s(cfg, cfg.prompt_tokens) / cfg.prefill_load))


def qps_per_chip(cfg: PipelineConfig, retrieval: RetrievalProfile | None, *,
                 num_requests: int = 4000, seed: int = 0, warmup: float = 0.1,
                 iterations: int = 40) -> dict:
    """RAGO's QPS per chip at the p99 TTFT target ``cfg.ttft_target_s``.

    The largest per-replica prefill rate whose simulated p99 TTFT meets the target
    (bisection, the same random numbers at every rate), then
    ``1 / (tp x (1 / rate + mean_decode_s / decode_batch))``. NaN with a ``reason`` when the
    retrieval is saturated or even an idle replica misses the target.
    """
    cfg = cfg.validate()
    nan = {"qps_per_chip": float("nan"), "prefill_rate_per_replica_rps": float("nan")}
    if retrieval is not None and retrieval.saturated:
        return {**nan, "reason": f"retrieval saturated: {retrieval.reason}"}
    t_pre = prefill_s(cfg, cfg.prompt_tokens)

    def p99(rate):
        res = simulate_pipeline(cfg, retrieval, rate, 1, num_requests=num_requests, seed=seed,
                                warmup=warmup)
        return float(np.percentile(res.ttft_s, 99)) if not res.saturated else math.inf

    lo, hi = 0.0, 1.0 / t_pre           # hi: the replica's saturation rate
    if p99(hi * 1e-6) > cfg.ttft_target_s:
        return {**nan, "reason": f"the p99 TTFT target {cfg.ttft_target_s:g} s is missed "
                                 "even at no load"}
    lo = hi * 1e-6
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        if p99(mid) <= cfg.ttft_target_s:
            lo = mid
        else:
            hi = mid
    res = simulate_pipeline(cfg, retrieval, lo, 1, num_requests=num_requests, seed=seed,
                            warmup=warmup)
    tp = tensor_parallel(cfg)
    q = 1.0 / (tp * (1.0 / lo + res.decode_s / cfg.decode_batch))
    return {"qps_per_chip": q, "prefill_rate_per_replica_rps": lo, "reason": ""}


def saved_profile(path, *, warmup: float = 0.1, where: str | None = None) -> RetrievalProfile:
    """The retrieval profile of a saved simulation (a ``cosmos simulate --out`` folder, or
    its ``per_query.csv``): the per-query latencies after the first ``warmup`` of the
    completions, at the load that run had (they are used as they are at every rate);
    ``capacity_qps`` is a closed-loop run's QPS (its throughput: rates at or above it are
    saturated), infinite for an open-loop run or a bare CSV (no throughput known)."""
    import json

    import pandas as pd

    where = where or f"rag.profile={path}"
    p = Path(path)
    csv = p / "per_query.csv" if p.is_dir() else p
    if not csv.is_file():
        raise UserError(f"{where}: no saved simulation there: expected a `cosmos simulate "
                        f"--out` folder holding per_query.csv, or that file")
    try:
        pq = pd.read_csv(csv)
    except (OSError, ValueError) as exc:
        raise UserError(f"{where}: {csv} is not readable as CSV: {exc}") from None
    if "latency_ns" not in pq or len(pq) < 10:
        raise UserError(f"{where}: {csv} needs a latency_ns column and at least 10 queries")
    order = pq.sort_values("done_ns") if "done_ns" in pq else pq
    lat = order["latency_ns"].to_numpy(dtype=np.float64)[int(warmup * len(order)):] * 1e-9
    system, qps = csv.parent.name, float("inf")
    try:
        conf = json.loads((csv.parent / "config.json").read_text())
        system = str(conf["system"]["name"])
        closed = conf.get("options", {}).get("mode", "closed") == "closed"
        if closed:    # an open-loop run's QPS is its offered rate, not what it sustains
            qps = float(json.loads((csv.parent / "summary.json").read_text())["qps"])
    except (OSError, ValueError, TypeError, KeyError):
        pass          # a bare per_query.csv: named by its folder, no capacity known
    if not (np.all(np.isfinite(lat)) and np.all(lat >= 0)):
        raise UserError(f"{where}: {csv} holds latencies that are not finite numbers >= 0")
    return RetrievalProfile(f"saved:{system}", float("nan"), qps, lat, False)
