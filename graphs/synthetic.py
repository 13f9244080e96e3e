"""Seeded synthetic datasets shaped like the billion-scale benchmarks (Cosmos Table I).

The generative model is a mixture of low-rank Gaussian "modes" plus isotropic noise, followed by
the post-processing of each real descriptor type:

    x = center[m] + A[m] @ z + noise * eps,   m ~ Categorical(w), z ~ N(0, I_rank), eps ~ N(0, I_d)

with lognormal mode weights (unequal cluster sizes, as k-means finds in real data), then

- ``sift``: uint8, 128-d, L2. Centers are Gamma(1, 1) (non-negative, sparse like gradient
  histograms); the vector is rectified, then normalized as SIFT does (Lowe, IJCV 2004, sec. 6.1:
  unit length, clip at 0.2, renormalize) and scaled by 512 and rounded (the BIGANN/TEXMEX
  convention; siftsmall and bigann10k have norms ~508-510 and integer values 0..255).
- ``deep``: float32, 96-d, unit norm, L2 (DEEP1B: PCA-compressed, L2-normalized GoogLeNet
  features; Babenko & Lempitsky, CVPR 2016). Signed centers.
- ``text2image``: float32, 200-d, inner product (Yandex Text-to-Image-1B). Base norms vary; the
  queries come from a different modality, modelled as the same mixture shifted by a fixed random
  "modality gap" vector (Liang et al., NeurIPS 2022), so queries are out of distribution.
- ``msspacev``: int8, 100-d, L2 (Microsoft SPACEV-1B). Signed, scaled to about +-60 and rounded.

Calibration (``python -m graphs.stats`` prints the full table, copied in docs/graphs.md): the
``sift`` parameters (16 modes, rank 22, spread 1.0, noise 0.3) were chosen so that a 10,000-vector
set matches bigann10k (the first 10,000 BIGANN vectors; base vectors as queries, self excluded) on
local intrinsic dimensionality (MLE, k=20: 18.5 vs 18.2), relative contrast (2.13 vs 2.07), the
fraction of zero components (0.244 vs 0.236), hnswlib's recall@10 against ef (M=16, efC=100;
ef=10: 0.987 vs 0.974, ef=24: 0.997 vs 0.993) and the routing concentration of a 64-cluster
k-means with 8 probes (max/mean probes per cluster 2.5; real: 1.5 bigann10k, 2.5 siftsmall). A
64-mode variant matched LID/RC equally well but routed 90% of the queries to one "hub" cluster
(concentration 7.3), which would distort every placement/load-balance result, so it was rejected.
The other three families reuse the same latent structure (no small public sample of them is
available here); their type, dimension, norm and metric follow the real sets.

Determinism and prefixes: rows are generated in fixed blocks of 8,192 from
``numpy.random.default_rng([seed, stream, block])``, so the first n rows of a size-N set equal the
set of size n generated with the same seed (a 100k development set is a prefix of the 1M set).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from cosmos_common.numba_cache import install as _check_numba_cache

_check_numba_cache()    # cached kernels are checked before use (cosmos_common.numba_cache)

__all__ = ["SyntheticSpec", "SPECS", "generate", "generate_with_modes", "generate_mode",
           "latents", "truncated_normal", "synthetic_dataset"]

_BLOCK = 8192
#: bump when the generated vectors change (part of the cache keys of synthetic datasets)
GENERATOR_VERSION = 2
_STREAM_MODEL, _STREAM_BASE, _STREAM_QUERY, _STREAM_MODE = 0, 1, 2, 3


@dataclass(frozen=True)
class SyntheticSpec:
    """Parameters of one synthetic family (all fields documented in the module docstring)."""

    name: str
    dim: int
    dtype: str
    metric: str  # "l2" or "ip"
    num_modes: int = 16
    rank: int = 22
    spread: float = 1.0
    noise: float = 0.3
    center_kind: str = "gamma"  # "gamma" (non-negative) or "normal" (signed)
    post: str = "sift"  # "sift", "unit", "raw", "int8"
    query_shift: float = 0.0  # modality gap (in units of the center scale)
    int_scale: float = 0.0  # for "int8": scale before rounding


SPECS: dict[str, SyntheticSpec] = {
    "sift": SyntheticSpec("sift", 128, "uint8", "l2", center_kind="gamma", post="sift"),
    "deep": SyntheticSpec("deep", 96, "float32", "l2", center_kind="normal", post="unit"),
    "text2image": SyntheticSpec(
        "text2image", 200, "float32", "ip", center_kind="normal", post="raw", query_shift=0.5
    ),
    "msspacev": SyntheticSpec(
        "msspacev", 100, "int8", "l2", center_kind="normal", post="int8", int_scale=20.0
    ),
}


def _model(spec: SyntheticSpec, seed: int):
    rng = np.random.default_rng([seed, _STREAM_MODEL])
    d, m, r = spec.dim, spec.num_modes, spec.rank
    if spec.center_kind == "gamma":
        centers = rng.gamma(1.0, 1.0, size=(m, d))
    else:
        centers = rng.normal(size=(m, d))
    basis = rng.normal(size=(m, r, d)) * (spec.spread / np.sqrt(r))
    w = rng.lognormal(0.0, 1.0, size=m)
    w /= w.sum()
    shift = rng.normal(size=d) * spec.query_shift
    return centers, basis, w, shift


def _post(spec: SyntheticSpec, x: np.ndarray) -> np.ndarray:
    if spec.post == "sift":
        x = np.maximum(x, 0.0)
        x /= np.linalg.norm(x, axis=1, keepdims=True) + 1e-12
        np.minimum(x, 0.2, out=x)
        x /= np.linalg.norm(x, axis=1, keepdims=True) + 1e-12
        return np.minimum(np.rint(x * 512.0), 255).astype(np.uint8)
    if spec.post == "unit":
        x /= np.linalg.norm(x, axis=1, keepdims=True) + 1e-12
        return x.astype(np.float32)
    if spec.post == "int8":
        return np.clip(np.rint(x * spec.int_scale), -128, 127).astype(np.int8)
    return x.astype(np.float32)


@njit(cache=True)
def _post_sift_rows(x):
    """The ``sift`` post-processing of :func:`_post`, fused per row (the same operations;
    sums of squares in row order, so a value on a rounding boundary may round the other
    way): what :func:`generate_mode` uses, as it draws tens of millions of rows."""
    n, d = x.shape
    out = np.empty((n, d), np.uint8)
    for i in range(n):
        ss = 0.0
        for j in range(d):
            v = max(x[i, j], 0.0)
            x[i, j] = v
            ss += v * v
        inv = 1.0 / (math.sqrt(ss) + 1e-12)
        ss = 0.0
        for j in range(d):
            v = min(x[i, j] * inv, 0.2)
            x[i, j] = v
            ss += v * v
        inv = 1.0 / (math.sqrt(ss) + 1e-12)
        for j in range(d):
            out[i, j] = np.uint8(min(np.rint(x[i, j] * inv * 512.0), 255.0))
    return out


def _block(spec, model, seed, stream, b, rows):
    return _block_modes(spec, model, seed, stream, b, rows)[0]


def _block_modes(spec, model, seed, stream, b, rows):
    """A block of rows and the mixture mode of each row."""
    centers, basis, w, shift = model
    rng = np.random.default_rng([seed, stream, b])
    m = rng.choice(len(w), size=rows, p=w)
    return _rows_of_modes(spec, model, rng, m, stream), m


def _rows_of_modes(spec, model, rng, m, stream):
    """Rows of the given modes ``m`` drawn from ``rng`` (latent, then noise, then post)."""
    centers, basis, w, shift = model
    rows = len(m)
    z = rng.normal(size=(rows, spec.rank))
    x = centers[m] + spec.noise * rng.normal(size=(rows, spec.dim))
    order = np.argsort(m, kind="stable")
    bounds = np.searchsorted(m[order], np.arange(len(w) + 1))
    for j in range(len(w)):  # low-rank part, one matrix product per mode (bounded memory)
        rows_j = order[bounds[j] : bounds[j + 1]]
        if rows_j.size:
            x[rows_j] += z[rows_j] @ basis[j]
    if stream == _STREAM_QUERY:
        x += shift
    return _post(spec, x)


def generate(spec: SyntheticSpec | str, n: int, seed: int = 0, queries: bool = False) -> np.ndarray:
    """Generate ``n`` base vectors (or queries) of a synthetic family.

    Parameters
    ----------
    spec : SyntheticSpec or str
        A family or its name in :data:`SPECS`.
    n : int
        Number of vectors.
    seed : int
        Seed; the same (spec, n, seed) gives the same array bit for bit.
    queries : bool
        Draw from the query stream (independent of the base stream).

    Returns
    -------
    numpy.ndarray, shape (n, spec.dim), dtype spec.dtype
    """
    return generate_with_modes(spec, n, seed, queries)[0]


def generate_with_modes(spec: SyntheticSpec | str, n: int, seed: int = 0,
                        queries: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """:func:`generate` and the mixture mode of each row, ``(vectors, (n,) int16 modes)``."""
    spec = _spec(spec)
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    model = _model(spec, seed)
    stream = _STREAM_QUERY if queries else _STREAM_BASE
    out = np.empty((n, spec.dim), dtype=spec.dtype)
    modes = np.empty(n, dtype=np.int16)
    for b, s in enumerate(range(0, n, _BLOCK)):
        e = min(n, s + _BLOCK)
        x, m = _block_modes(spec, model, seed, stream, b, _BLOCK)
        out[s:e], modes[s:e] = x[: e - s], m[: e - s]
    return out, modes


def generate_mode(spec: SyntheticSpec | str, mode: int, rows: int, seed: int,
                  key: tuple[int, ...], box: tuple | None = None) -> np.ndarray:
    """``rows`` base vectors of the family drawn from its mixture mode ``mode`` alone (the
    base distribution conditioned on that mode), from the independent stream
    ``default_rng([seed, 3, *key])``: what graphs.templates grows a template cluster from.

    ``box = (U, lo, hi)`` conditions the latent ``z`` further on ``lo <= U @ z <= hi``
    (``U`` (k, rank) orthonormal rows): the standard normal is rotation invariant, so ``z``'s
    components along ``U`` are independent normals truncated to the box (drawn by inverse
    CDF) and the rest of ``z`` is an unconditioned normal."""
    spec = _spec(spec)
    centers, basis, w, shift = _model(spec, seed)
    rng = np.random.default_rng([seed, _STREAM_MODE, *key])
    z = rng.normal(size=(rows, spec.rank))
    if box is not None:
        U, lo, hi = (np.asarray(a, np.float64) for a in box)
        s = truncated_normal(rng.random(size=(rows, len(lo))), lo, hi)
        z += (s - z @ U.T) @ U
    x = centers[mode] + spec.noise * rng.normal(size=(rows, spec.dim))
    x += z @ basis[mode]
    return _post_sift_rows(x) if spec.post == "sift" else _post(spec, x)


def latents(spec: SyntheticSpec | str, rows: np.ndarray, seed: int = 0) -> np.ndarray:
    """The latent ``z`` (len(rows), rank) of the base stream's rows ``rows`` (what
    :func:`generate` drew for them), regenerated block by block."""
    spec = _spec(spec)
    _, _, w, _ = _model(spec, seed)
    rows = np.asarray(rows, np.int64)
    out = np.empty((len(rows), spec.rank))
    blocks = rows // _BLOCK
    for b in np.unique(blocks):
        rng = np.random.default_rng([seed, _STREAM_BASE, int(b)])
        rng.choice(len(w), size=_BLOCK, p=w)
        z = rng.normal(size=(_BLOCK, spec.rank))
        sel = np.flatnonzero(blocks == b)
        out[sel] = z[rows[sel] - int(b) * _BLOCK]
    return out


def truncated_normal(u: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Standard normal values truncated to ``[lo, hi]`` from uniforms ``u`` in [0, 1)
    (inverse CDF, columns broadcast against ``lo`` and ``hi``)."""
    return _truncnorm(np.ascontiguousarray(u, np.float64),
                      np.ascontiguousarray(lo, np.float64), np.ascontiguousarray(hi, np.float64))


@njit(cache=True)
def _ndtr(x):
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


@njit(cache=True)
def _ndtri(p):
    """Inverse standard normal CDF: Acklam's rational approximation (relative error 1.2e-9)
    refined by one Halley step on erfc."""
    if p <= 0.0:
        return -np.inf
    if p >= 1.0:
        return np.inf
    a = (-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
         1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00)
    b = (-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
         6.680131188771972e+01, -1.328068155288572e+01)
    c = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
         -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00)
    d = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
         3.754408661907416e+00)
    if p < 0.02425:
        q = math.sqrt(-2.0 * math.log(p))
        x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / \
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0)
    elif p > 1.0 - 0.02425:
        q = math.sqrt(-2.0 * math.log(1.0 - p))
        x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / \
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0)
    else:
        q = p - 0.5
        r = q * q
        x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q / \
            (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0)
    e = _ndtr(x) - p
    g = e * math.sqrt(2.0 * math.pi) * math.exp(0.5 * x * x)
    return x - g / (1.0 + 0.5 * x * g)


@njit(cache=True)
def _truncnorm(u, lo, hi):
    out = np.empty_like(u)
    for i in range(u.shape[0]):
        for j in range(u.shape[1]):
            a, b = _ndtr(lo[j]), _ndtr(hi[j])
            out[i, j] = min(max(_ndtri(a + u[i, j] * (b - a)), lo[j]), hi[j])
    return out


def num_modes(spec: SyntheticSpec | str) -> int:
    return _spec(spec).num_modes


def _spec(spec: SyntheticSpec | str) -> SyntheticSpec:
    if isinstance(spec, str):
        if spec not in SPECS:
            raise ValueError(f"unknown synthetic dataset '{spec}'; expected one of {', '.join(SPECS)}")
        spec = SPECS[spec]
    return spec


def synthetic_dataset(name: str, n: int, num_queries: int = 1000, seed: int = 0, gt_k: int = 100):
    """A :class:`graphs.dataset.Dataset` of a synthetic family with exact ground truth (``gt_k``)."""
    from .dataset import Dataset
    from .groundtruth import exact_knn

    if name not in SPECS:
        raise ValueError(f"unknown synthetic dataset '{name}'; expected one of {', '.join(SPECS)}")
    spec = SPECS[name]
    base = generate(spec, n, seed)
    q = generate(spec, num_queries, seed, queries=True)
    gt = exact_knn(base, q, min(gt_k, n), spec.metric)[0] if num_queries else None
    return Dataset(
        name=f"{name}-n{n}-q{num_queries}-s{seed}",
        base=base,
        queries=q,
        groundtruth=gt,
        metric=spec.metric,
    )
