"""Cluster-template workloads: a logical clustered index of N vectors whose probes are real
searches on T real template clusters (docs/graphs.md, "Cluster templates").

A billion-vector clustered index cannot be built on a laptop, and it need not be: the work of
one probe depends on the probed cluster, and the index is many clusters of a size that *can* be
built. A templated workload has

- a **logical geometry** that is real at the logical size N: the C centroids of k-means on the
  family's distribution and the C cluster sizes. Both are measured on the first
  ``min(N, sample_rows)`` vectors of the family's base stream, which are the first rows of the
  N-vector set itself (``graphs.synthetic``: a smaller set is a prefix of a larger one). The
  centroids come from :func:`graphs.kmeans.kmeans`, which trains on at most 256 vectors per
  centroid (faiss' default) whatever N is: the same training-set size and procedure as the
  N-vector build, but with ``N > sample_rows`` another random draw of the training vectors
  (the build draws them from all N), so another, equally likely k-means of the family (a
  real index's own centroids can be given instead, ``centroids=``); every sample vector is
  then assigned to its nearest centroid and
  the sizes are ``N x`` the sample's shares (largest remainder, so they sum to N). With
  ``N <= sample_rows`` the geometry *is* the real index's: the same k-means on the same
  vectors, the same assignment. Each cluster's proximity order (Algorithm 1's adjacency) is
  that of its centroid.
- **T template clusters**, real data of the family at the sizes of T logical clusters, chosen
  at evenly spaced quantiles of the size distribution, each with a real graph (hnswlib or
  Vamana, as for the real index, seeded by its cluster id). A template's members are the
  sample's vectors of its cluster, in stream order; when the sample holds fewer than the
  cluster's size (``N > sample_rows``) the rest are drawn from the family's distribution
  conditioned on falling in that cluster: for each mixture mode, in proportion to the sample
  members' modes, vectors of that mode from an independent stream
  (:func:`graphs.synthetic.generate_mode`) are kept when their nearest centroid (over all C,
  the assignment rule of the index) is the template's.
- every query routed to its ``num_probes`` nearest logical centroids; a probe into logical
  cluster c is a real traced search on template ``t(c)`` (the template nearest in size; a
  template stands for itself, with the query itself). How a probe of another cluster reaches
  its template is ``carry``:

  - ``"surrogate"`` (default): the search runs a *surrogate query* of the template, a query of
    the family's query stream (after the workload's own, ``surrogate_pool`` of them) whose
    probe of the same rank is the template, with the nearest *gap* (its distance to that
    centroid over its distance to its nearest centroid; for inner product the score
    difference). The probe's work is then that of a query that relates to the template as
    the logical query relates to its cluster, drawn from the template's own queries.
  - ``"translate"``: the query carried into the template's frame, ``q - centroid(c) +
    centroid(t(c))`` (L2 keeps every distance; for inner product the query is searched as it
    is and the merge adds ``-<q, centroid(c) - centroid(t(c))>``). Measured at 50,000
    vectors and 64 clusters (docs/graphs.md), this makes 3-7 % more distance computations
    than the real index: the offset that places a query near cluster c places it off the
    template's own data, where a search explores more. Surrogates are within 0.3 %.

Each template member stands at a logical position of every cluster it serves: member ``p`` of
a template of size ``s_t`` is position ``cluster_ptr[c] + p * s_c // s_t`` of cluster c
(the identity when the sizes agree). The trace records logical positions, so placement, layout
and every system see each logical cluster as distinct data at its own addresses. It numbers
only the nodes it touches: ``node_pos`` holds their logical positions in increasing order, and
``hop_node``, ``read_node`` and ``search_entry`` are indices into it (``cluster_nodes`` is
empty: a billion positions are never materialized). ``result_ids`` are logical positions.

``result_ids`` merge each probe's own top-k (of the surrogate where one ran), so they are
logical positions but not the logical query's answer. Recall: end-to-end recall@k against the
N-vector ground truth cannot be computed; each
template's own recall@k (its searches' top-k against the exact top-k of the carried query
among the template's members) is measured on up to ``recall_samples`` of its searches and
recorded in the meta (``template_recall``), and the trace's ``recall`` is their mean weighted
by the searches each template served.
"""

from __future__ import annotations

import hashlib
import json
import os
from math import erf, sqrt
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from cosmos_common import UserError, cacheio, sysinfo

from . import synthetic
from .groundtruth import exact_knn, recall_at_k
from .index import (ClusteredIndex, IndexParams, _build_vamana_clusters, assemble_graphs,
                    build_hnsw_clusters, cluster_medoids, default_cache_dir)
from .kmeans import _scores, assign, centroid_adjacency, cluster_csr, kmeans
from .search import (METRIC_CODES, _NO_ID, _merge_topk, _run, check_search_params,
                     search_setup)
from .io import atomic_write_bytes
from .trace import TRACE_FORMAT_VERSION, LogicalTrace, load_trace, save_trace

__all__ = ["TemplateParams", "LogicalGeometry", "TemplateIndex", "logical_geometry",
           "choose_templates", "template_assignment", "build_templates", "trace_templates",
           "make_template_workload", "cached_templates", "estimate_bytes", "positional",
           "probe_coverage"]

#: bump when the templated workloads change (part of their cache keys)
TEMPLATE_VERSION = 1
#: vectors of the family's base stream the logical geometry is measured on by default: about
#: 2,000 per cluster at 1,024 clusters, so a cluster's size is known within about 2 % (the
#: binomial standard error of its share), and below the several-million-vector real index
#: check_templates builds, so that the grown templates are validated too (an estimate, for
#: run time: measuring on 2 M vectors takes about 10 s)
DEFAULT_SAMPLE_ROWS = 2_000_000
#: rows per block when growing a template from one mode
_GROW_BLOCK = 65_536
#: candidate centroids tested before the full assignment when growing a template
_GROW_CANDIDATES = 32
#: searches per template whose recall is measured
DEFAULT_RECALL_SAMPLES = 100


@dataclass(frozen=True)
class TemplateParams:
    """What a templated workload is built from (besides the index parameters)."""

    family: str
    n: int                      # logical base vectors
    num_clusters: int
    num_templates: int
    seed: int = 0
    sample_rows: int = DEFAULT_SAMPLE_ROWS

    def to_dict(self) -> dict:
        return asdict(self)


def check_template_request(p: TemplateParams, num_queries: int, num_probes: int,
                           cand_list_len: int, k: int, entry: str) -> None:
    """One line (UserError naming the field) for a request that cannot be built."""
    if p.family not in synthetic.SPECS:
        raise UserError(f"family={p.family!r}: templated workloads are made from a synthetic "
                        f"family ({', '.join(synthetic.SPECS)})")
    for name in ("n", "num_clusters", "num_templates", "sample_rows"):
        v = getattr(p, name)
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise UserError(f"{name}={v!r} must be an integer >= 1")
    if p.seed < 0:
        raise UserError(f"seed={p.seed} must be >= 0")
    if p.num_clusters > p.n:
        raise UserError(f"num_clusters={p.num_clusters} must be at most n={p.n} (a cluster of "
                        "size 0 would have no vectors)")
    if p.num_clusters > min(p.n, p.sample_rows):
        raise UserError(f"num_clusters={p.num_clusters} must be at most sample_rows="
                        f"{p.sample_rows} (k-means needs a vector per centroid)")
    if p.num_templates > p.num_clusters:
        raise UserError(f"num_templates={p.num_templates} must be at most num_clusters="
                        f"{p.num_clusters} (a template is one of the logical clusters)")
    if p.n >= 2**31:
        raise UserError(f"n={p.n} must be below 2**31 (logical positions are int32 ids)")
    check_search_params(p.n, num_queries, p.num_clusters, num_probes, cand_list_len, k, entry)


def estimate_bytes(p: TemplateParams, index: IndexParams, sizes: np.ndarray | None = None,
                   threads: int = 1) -> int:
    """Peak memory of building the templates, an estimate: the sample (its vectors, a float32
    copy and the assignment scores of one block), the templates' vectors and graphs (vector +
    ``4 x max_degree + 8`` bytes each), and per building thread one template's float32 copy
    and graph inside hnswlib/Vamana. ``sizes`` (the logical sizes) gives the template sizes;
    without them every template is taken at twice the mean cluster size."""
    spec = synthetic.SPECS[p.family]
    item = np.dtype(spec.dtype).itemsize
    rows = min(p.n, p.sample_rows)
    sample = rows * spec.dim * (item + 4) + rows * 16
    if sizes is None:
        each = np.full(p.num_templates, 2 * -(-p.n // p.num_clusters), np.int64)
    else:
        each = np.sort(np.asarray(sizes, np.int64))[::-1][:p.num_templates]
    per_vec = spec.dim * item + 4 * index.max_degree + 8
    build = int(each[:max(1, threads)].sum()) * (4 * spec.dim + 4 * index.max_degree + 16)
    return int(sample + int(each.sum()) * per_vec + build)


def _check_fits(p: TemplateParams, index: IndexParams, sizes, threads: int) -> None:
    """UserError if building the templates would need more than 80 % of physical memory."""
    need = estimate_bytes(p, index, sizes, threads)
    have = sysinfo.physical_memory_bytes()
    if have is not None and need > 0.8 * have:
        raise UserError(f"num_templates={p.num_templates}: building them needs about "
                        f"{need / 1e9:.1f} GB, more than 80 % of this machine's "
                        f"{have / 1e9:.1f} GB; use fewer templates or clusters")


@dataclass
class LogicalGeometry:
    """Centroids and sizes of the logical index, and the sample they were measured on."""

    n: int
    centroids: np.ndarray       # (C, d) float32
    sizes: np.ndarray           # (C,) int64, sum n
    sample: np.ndarray          # (rows, d) the family's first rows
    sample_modes: np.ndarray    # (rows,) int16 mixture mode of each sample row
    labels: np.ndarray          # (rows,) int64 nearest centroid of each sample row

    @property
    def exact(self) -> bool:
        """The sample is the whole N-vector set: the geometry is the real index's."""
        return len(self.sample) == self.n


def _scaled_sizes(counts: np.ndarray, n: int) -> np.ndarray:
    """``n x counts / counts.sum()`` in integers summing to ``n`` (largest remainder, ties to
    the smaller cluster id)."""
    counts = np.asarray(counts, np.int64)
    total = int(counts.sum())
    exact = counts.astype(np.float64) * (n / total)
    sizes = np.floor(exact).astype(np.int64)
    rest = n - int(sizes.sum())
    order = np.lexsort((np.arange(len(counts)), -(exact - sizes)))
    sizes[order[:rest]] += 1
    return sizes


def logical_geometry(p: TemplateParams, metric: str, kmeans_iters: int = 20,
                     centroids: np.ndarray | None = None) -> LogicalGeometry:
    """The logical index's centroids and sizes (module docstring): k-means and assignment on
    the first ``min(n, sample_rows)`` vectors of the family, as :func:`graphs.index.build_index`
    runs them on a real set. ``centroids`` (C, d): use these instead of k-means (the sample is
    assigned to them), e.g. a real index's, to compare templates with it at the same geometry."""
    rows = min(p.n, p.sample_rows)
    x, modes = synthetic.generate_with_modes(p.family, rows, p.seed)
    C = p.num_clusters
    if centroids is not None:
        centroids = np.ascontiguousarray(centroids, np.float32)
        if centroids.shape != (C, x.shape[1]):
            raise UserError(f"centroids: expected shape ({C}, {x.shape[1]}) (num_clusters x "
                            f"the family's dimension), got {centroids.shape}")
        labels = assign(x, centroids, metric).astype(np.int64)
    elif C == 1:
        centroids = np.asarray(x, dtype=np.float64).mean(axis=0, keepdims=True).astype(np.float32)
        labels = np.zeros(rows, np.int64)
    else:
        centroids = kmeans(x, C, seed=p.seed, iters=kmeans_iters, metric=metric)
        labels = assign(x, centroids, metric).astype(np.int64)
    counts = np.bincount(labels, minlength=C)
    if np.any(counts == 0):
        raise UserError(f"num_clusters={C}: {int(np.sum(counts == 0))} clusters hold none of "
                        f"the {rows:,} sample vectors (a cluster of size 0); use fewer clusters "
                        "or a larger sample_rows")
    sizes = counts.astype(np.int64) if rows == p.n else _scaled_sizes(counts, p.n)
    return LogicalGeometry(p.n, np.ascontiguousarray(centroids, np.float32), sizes, x, modes,
                           labels)


def choose_templates(sizes: np.ndarray, num_templates: int) -> np.ndarray:
    """The template clusters: those at the quantiles ``(i + 1/2) / T`` of the size order
    (every cluster when ``T = C``), as increasing cluster ids."""
    sizes = np.asarray(sizes)
    C, T = len(sizes), int(num_templates)
    if T >= C:
        return np.arange(C, dtype=np.int64)
    order = np.argsort(sizes, kind="stable")
    picks = order[((np.arange(T) + 0.5) * C / T).astype(np.int64)]
    return np.sort(picks).astype(np.int64)


def template_assignment(sizes: np.ndarray, templates: np.ndarray) -> np.ndarray:
    """(C,) int32: the template each logical cluster's searches run on: itself if it is one,
    else the template nearest in log size (ties to the smaller template id)."""
    sizes = np.asarray(sizes, np.float64)
    templates = np.asarray(templates, np.int64)
    gap = np.abs(np.log(sizes)[:, None] - np.log(sizes[templates])[None, :])
    out = templates[np.argmin(gap, axis=1)]
    out[templates] = templates
    return out.astype(np.int32)


#: a mode's latent box needs at least this many sample members of the template from it
_BOX_MIN_MEMBERS = 200
#: latent directions of the box: the members' mean direction and the leading principal
#: directions around it
_BOX_DIMS = 4
#: the box spans the sample members' projections with this fraction of its width to spare on
#: each side
_BOX_SPARE = 0.25


def latent_box(z: np.ndarray) -> tuple | None:
    """The latent box ``(U, lo, hi)`` of a template's sample members of one mode (their
    latents ``z``): ``U`` the members' mean direction and the leading principal directions
    orthogonal to it, the bounds their projections' range widened by :data:`_BOX_SPARE` of
    it on each side; None with fewer than :data:`_BOX_MIN_MEMBERS` members."""
    if len(z) < _BOX_MIN_MEMBERS:
        return None
    mean = z.mean(axis=0)
    u1 = mean / max(np.linalg.norm(mean), 1e-12)
    rest = z - np.outer(z @ u1, u1)
    _, _, vt = np.linalg.svd(rest - rest.mean(axis=0), full_matrices=False)
    U = np.vstack([u1, vt[:_BOX_DIMS - 1]])
    U, _ = np.linalg.qr(U.T)              # orthonormal rows, u1's direction first
    U = U.T
    proj = z @ U.T
    lo, hi = proj.min(axis=0), proj.max(axis=0)
    spare = _BOX_SPARE * (hi - lo)
    return U, lo - spare, hi + spare


def _box_mass(box) -> float:
    """Probability of the box under the standard normal latent."""
    if box is None:
        return 1.0
    _, lo, hi = box
    return float(np.prod([0.5 * (erf(b / sqrt(2)) - erf(a / sqrt(2))) for a, b in zip(lo, hi)]))


def _grow(spec_name: str, geo: LogicalGeometry, metric: str, t: int, need: int, seed: int,
          members: np.ndarray, mode_total: np.ndarray, progress: bool = False
          ) -> tuple[np.ndarray, int]:
    """``need`` more members of cluster ``t`` from the family's distribution conditioned on
    the cluster (module docstring); ``members`` are its sample rows. Returns the new
    members and the rows drawn.

    Per mode, in the sample members' proportions: vectors of that mode, with the latent
    restricted to the box the sample members of that mode span (:func:`latent_box`, when
    there are enough of them), kept when their nearest centroid over all C is ``t`` (first
    among ``t`` and its nearest centroids, then exactly over all)."""
    spec = synthetic.SPECS[spec_name]
    modes = geo.sample_modes[members]
    share = np.bincount(modes, minlength=len(mode_total)).astype(np.float64)
    per_mode = _scaled_sizes(share, need) if need else np.zeros(len(share), np.int64)
    cent = geo.centroids
    near = np.argsort(((cent - cent[t]) ** 2).sum(axis=1), kind="stable")[:_GROW_CANDIDATES]
    near = np.concatenate([[t], near[near != t]])
    z_all = synthetic.latents(spec, members, seed)
    parts, drawn = [], 0
    t0 = time.perf_counter()
    for m in np.flatnonzero(per_mode):
        want, got, b = int(per_mode[m]), 0, 0
        box = latent_box(z_all[modes == m])
        # expected draws: want / P(t | m, box) from the sample; refuse to loop far past that
        rate = share[m] / max(mode_total[m], 1) / _box_mass(box)
        limit = 50 * want / max(rate, 1e-12) + 10 * _GROW_BLOCK
        while got < want:
            y = synthetic.generate_mode(spec, int(m), _GROW_BLOCK, seed, (t, int(m), b), box)
            drawn += len(y)
            b += 1
            score = _scores(y.astype(np.float32), cent[near], metric)
            cand = np.flatnonzero(np.argmin(score, axis=1) == 0)
            if cand.size:      # exact: the index's assignment rule over all C centroids
                cand = cand[assign(y[cand], cent, metric) == t]
            take = cand[: want - got]
            if take.size:
                parts.append(y[take])
                got += take.size
            if drawn > limit and got < want:
                raise RuntimeError(f"template {t}: only {got} of {want} members of mode {m} "
                                   f"after {drawn:,} draws (expected about "
                                   f"{want / max(rate, 1e-12):,.0f})")
        if progress:
            print(f"  cluster {t}, mode {m}: {want:,} members from {b * _GROW_BLOCK:,} draws "
                  f"(box mass {_box_mass(box):.3g}), {time.perf_counter() - t0:.0f} s",
                  flush=True)
    out = np.concatenate(parts) if parts else np.zeros((0, spec.dim), spec.dtype)
    return out, drawn


@dataclass
class TemplateIndex:
    """The logical geometry, the templates and their real index."""

    params: TemplateParams
    index_params: IndexParams
    metric: str
    centroids: np.ndarray       # (C, d) logical centroids
    sizes: np.ndarray           # (C,) logical sizes
    templates: np.ndarray       # (T,) cluster ids of the templates
    template_of: np.ndarray     # (C,) int32 template of each cluster
    index: ClusteredIndex       # T clusters: cluster j = template templates[j]
    vectors: np.ndarray         # (sum of template sizes, d) in position order
    exact_geometry: bool
    grown_rows: np.ndarray      # (T,) rows drawn to grow each template

    @property
    def cluster_ptr(self) -> np.ndarray:
        ptr = np.zeros(len(self.sizes) + 1, np.int64)
        np.cumsum(self.sizes, out=ptr[1:])
        return ptr


def build_templates(p: TemplateParams, index: IndexParams = IndexParams(),
                    threads: int | None = None, progress: bool = True,
                    geometry: LogicalGeometry | None = None,
                    timings: dict | None = None,
                    centroids: np.ndarray | None = None) -> TemplateIndex:
    """Geometry, templates and their graphs (module docstring). Refuses (UserError) a request
    that cannot be built or would not fit this machine's memory, before building anything.
    ``geometry``: the one :func:`logical_geometry` gave for ``p`` (else it is computed, on
    ``centroids`` if given); ``timings``: a dict that receives the wall seconds of ``grow`` and
    ``graphs``."""
    spec = synthetic.SPECS[p.family] if p.family in synthetic.SPECS else None
    if spec is None:
        raise UserError(f"family={p.family!r}: expected one of {', '.join(synthetic.SPECS)}")
    metric = spec.metric
    threads = threads or os.cpu_count() or 1
    if index.num_clusters != p.num_clusters:
        index = IndexParams(**{**index.key_dict(), "num_clusters": p.num_clusters})
    _check_fits(p, index, None, threads)
    geo = geometry if geometry is not None else logical_geometry(p, metric, index.kmeans_iters,
                                                                 centroids)
    _check_fits(p, index, geo.sizes, threads)
    templates = choose_templates(geo.sizes, p.num_templates)
    template_of = template_assignment(geo.sizes, templates)
    T = len(templates)
    # members: the sample's, then (beyond the sample) grown from the conditioned distribution
    sample_ptr, sample_nodes = cluster_csr(geo.labels, len(geo.sizes))
    modes = synthetic.num_modes(p.family)
    mode_total = np.bincount(geo.sample_modes, minlength=modes).astype(np.float64)
    grown = np.zeros(T, np.int64)
    t0 = time.perf_counter()
    parts: list = [None] * T

    def member_vectors(j):
        t = int(templates[j])
        members = sample_nodes[sample_ptr[t]:sample_ptr[t + 1]]
        x = geo.sample[members]
        need = int(geo.sizes[t]) - len(members)
        if need > 0:
            extra, grown[j] = _grow(p.family, geo, metric, t, need, p.seed, members,
                                    mode_total, progress)
            x = np.concatenate([x, extra])
            if progress:
                print(f"template {j + 1}/{T} (cluster {t}): {need:,} members grown from "
                      f"{grown[j]:,} draws, {time.perf_counter() - t0:.0f} s", flush=True)
        parts[j] = x[: int(geo.sizes[t])]

    # templates grow concurrently (numpy's generators, BLAS and large ufuncs release the
    # GIL); each from its own streams, so the result does not depend on ``threads``
    order = np.argsort(-geo.sizes[templates], kind="stable")
    with ThreadPoolExecutor(max_workers=threads) as ex:
        list(ex.map(member_vectors, order))
    vectors = np.concatenate(parts)
    del parts
    t_grown = time.perf_counter()
    tptr = np.zeros(T + 1, np.int64)
    np.cumsum(geo.sizes[templates], out=tptr[1:])
    nodes = np.arange(tptr[-1], dtype=np.int32)
    tcent = np.ascontiguousarray(geo.centroids[templates])
    medoid = cluster_medoids(vectors, tcent, tptr, nodes)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=int(tptr[-1]), desc=f"build {index.graph} templates", unit="vec")
    if index.graph == "hnsw":
        results = build_hnsw_clusters(vectors, metric, index, tptr, nodes, threads, bar,
                                      seed_ids=templates)
    else:
        results = _build_vamana_clusters(vectors, metric, index, tptr, nodes, medoid, threads,
                                         bar)
    if bar is not None:
        bar.close()
    indptr, indices, entry, levels, up_ptr, up_idx = assemble_graphs(results, tptr)
    del results
    if timings is not None:
        timings.update(grow=t_grown - t0, graphs=time.perf_counter() - t_grown)
    fp = hashlib.blake2b(json.dumps({**p.to_dict(), "v": TEMPLATE_VERSION,
                                     "gen": synthetic.GENERATOR_VERSION},
                                    sort_keys=True).encode(), digest_size=16).hexdigest()
    idx = ClusteredIndex(params=index, metric=metric, n=int(tptr[-1]), dim=spec.dim,
                         dataset_fingerprint=fp, centroids=tcent, cluster_ptr=tptr,
                         cluster_nodes=nodes, indptr=indptr, indices=indices, medoid=medoid,
                         hnsw_entry=entry, hnsw_levels=levels, upper_indptr=up_ptr,
                         upper_indices=up_idx)
    idx.check()
    return TemplateIndex(p, index, metric, geo.centroids, geo.sizes, templates, template_of,
                         idx, vectors, geo.exact, grown)


#: how a probe of a cluster that is not a template reaches its template (module docstring)
CARRY_MODES = ("surrogate", "translate")


def default_pool(num_clusters: int) -> int:
    """Surrogate pool size: queries of the family's query stream after the workload's own,
    about 100 per template and probe rank on average (an estimate: enough for the nearest
    gap to be close; the pool is routed once, a few seconds per million queries)."""
    return int(min(2_000_000, max(50_000, 100 * num_clusters)))


def _route_gaps(centroids: np.ndarray, q: np.ndarray, P: int, metric: str):
    """The ``P`` nearest logical centroids of each query (as :func:`graphs.search.route`) and
    each probe's gap: its distance over the nearest probe's (L2), or its score minus the
    nearest's (inner product)."""
    q = np.asarray(q, dtype=np.float32)
    score = _scores(q, centroids, metric)
    probes = np.argsort(score, axis=1, kind="stable")[:, :P].astype(np.int64)
    top = np.take_along_axis(score, probes, axis=1).astype(np.float64)
    if metric == "ip":
        gap = top - top[:, :1]
    else:
        d = np.sqrt(np.maximum(top + np.einsum("ij,ij->i", q, q)[:, None], 0.0))
        gap = d / np.maximum(d[:, :1], 1e-12)
    return probes, gap


class _Surrogates:
    """For a probe of logical cluster c at probe rank j standing in for template t: the pool
    query whose rank-j probe is t with the nearest gap (ties to the first in the pool)."""

    def __init__(self, centroids: np.ndarray, pool: np.ndarray, P: int, metric: str,
                 templates: np.ndarray):
        self.pool = np.asarray(pool, np.float32)
        probes, gap = _route_gaps(centroids, self.pool, P, metric)
        self.table = {}
        for t in templates:
            for j in range(P):
                rows = np.flatnonzero(probes[:, j] == t)
                if rows.size == 0:
                    continue
                order = np.lexsort((rows, gap[rows, j]))
                self.table[(int(t), j)] = (gap[rows[order], j], rows[order])

    def pick(self, t: np.ndarray, rank: np.ndarray, gap: np.ndarray) -> np.ndarray:
        out = np.empty((len(t), self.pool.shape[1]), np.float32)
        for i, (tt, j, g) in enumerate(zip(t.tolist(), rank.tolist(), gap.tolist())):
            entry = self.table.get((tt, j))
            if entry is None:       # no pool query probes t at this rank: the nearest rank
                js = [jj for (t2, jj) in self.table if t2 == tt]
                if not js:
                    raise RuntimeError(f"template {tt}: no pool query probes it; use a "
                                       "larger surrogate pool")
                entry = self.table[(tt, min(js, key=lambda x: (abs(x - j), x)))]
            gaps, rows = entry
            k = int(np.searchsorted(gaps, g))
            if k == len(gaps) or (k > 0 and g - gaps[k - 1] <= gaps[k] - g):
                k -= 1
            out[i] = self.pool[rows[max(k, 0)]]
        return out


def trace_templates(ti: TemplateIndex, queries: np.ndarray, num_probes: int = 8,
                    cand_list_len: int = 64, k: int = 10, entry: str = "medoid",
                    recall_samples: int = DEFAULT_RECALL_SAMPLES, chunk: int = 512,
                    progress: bool = True, carry: str = "surrogate",
                    surrogate_pool: int | None = None) -> LogicalTrace:
    """Route every query over the logical centroids, search each probe on its template with
    the carried query, and return the logical trace (module docstring)."""
    p = ti.params
    C, T = len(ti.sizes), len(ti.templates)
    check_search_params(p.n, len(queries), C, num_probes, cand_list_len, k, entry)
    surrogate_pool = default_pool(C) if surrogate_pool is None else int(surrogate_pool)
    idx = ti.index
    metric = ti.metric
    slot = np.full(C, -1, np.int64)
    slot[ti.templates] = np.arange(T)
    tslot = slot[ti.template_of]                      # (C,) template slot of each cluster
    cptr = ti.cluster_ptr
    tptr = idx.cluster_ptr
    tsize = np.diff(tptr)
    entries, levels, L, hcap, rcap = search_setup(idx, entry, cand_list_len)
    P = int(num_probes)
    code = METRIC_CODES[metric]
    cent = ti.centroids.astype(np.float32)

    def logical(pos, c):
        """Logical positions of template positions ``pos`` searched for clusters ``c``."""
        j = tslot[c]
        local = pos - tptr[j]
        return cptr[c] + (local * ti.sizes[c]) // tsize[j]

    Q = len(queries)
    if carry not in CARRY_MODES:
        raise UserError(f"carry={carry!r}: expected one of {CARRY_MODES}")
    surrogates = None
    if carry == "surrogate" and np.any(ti.template_of != np.arange(C)):
        pool = synthetic.generate(p.family, Q + surrogate_pool, p.seed, queries=True)[Q:]
        surrogates = _Surrogates(cent, pool, P, metric, ti.templates)
    out_ids = np.full((Q, k), -1, np.int64)
    parts = {name: [] for name in ("hop", "deg", "ins", "nread", "read")}
    nh_all = np.zeros(Q * P, np.int64)
    s_cluster_all = np.zeros(Q * P, np.int32)
    entry_all = np.zeros(Q * P, np.int64)
    rec_q = [[] for _ in range(T)]          # sampled carried queries per template
    rec_res = [[] for _ in range(T)]        # and their searches' local top-k
    served = np.zeros(T, np.int64)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=Q, desc="trace template queries", unit="q")
    for q0 in range(0, Q, chunk):
        qb = np.ascontiguousarray(queries[q0:q0 + chunk], dtype=np.float32)
        nq = len(qb)
        probes2, gap2 = _route_gaps(cent, qb, P, metric)
        probes = probes2.ravel()                               # (S,) logical clusters
        S = nq * P
        qrow = np.repeat(np.arange(nq), P)
        tc = ti.template_of[probes].astype(np.int64)
        qv = qb[qrow]
        moved = tc != probes
        if carry == "translate" and metric == "l2" and moved.any():
            qv[moved] = qv[moved] - cent[probes[moved]] + cent[tc[moved]]
        elif carry == "surrogate" and moved.any():
            rank = np.tile(np.arange(P), nq)
            qv[moved] = surrogates.pick(tc[moved], rank[moved], gap2.ravel()[moved])
        s_slot = tslot[probes]
        hn, hd, hi, hr, rn, nhops, nreads, res_pos, res_dist = _run(
            qv, np.arange(S, dtype=np.int64), s_slot, ti.vectors, idx, entries, levels, L, k,
            code, hcap, rcap)
        hmask = np.arange(hn.shape[1])[None, :] < nhops[:, None]
        rmask = np.arange(rn.shape[1])[None, :] < nreads[:, None]
        hc = np.repeat(probes, nhops)
        parts["hop"].append(logical(hn[hmask].astype(np.int64), hc))
        parts["deg"].append(hd[hmask])
        parts["ins"].append(hi[hmask])
        parts["nread"].append(hr[hmask])
        rc = np.repeat(probes, nreads)
        parts["read"].append(logical(rn[rmask].astype(np.int64), rc))
        sl = slice(q0 * P, q0 * P + S)
        nh_all[sl] = nhops
        s_cluster_all[sl] = probes
        entry_all[sl] = logical(entries[s_slot], probes)
        gid = np.where(res_pos >= 0, logical(np.maximum(res_pos, 0), probes[:, None]), _NO_ID)
        dist = res_dist
        if carry == "translate" and metric == "ip" and moved.any():
            off = np.einsum("ij,ij->i", qb[qrow], cent[probes] - cent[tc]).astype(np.float32)
            dist = np.where(res_pos >= 0, res_dist - off[:, None], res_dist)
        out_ids[q0:q0 + nq] = _merge_topk(gid.reshape(nq, P * k), dist.reshape(nq, P * k), k)[0]
        served += np.bincount(s_slot, minlength=T)
        for s in range(S):                                   # recall samples, in trace order
            j = s_slot[s]
            if len(rec_q[j]) < recall_samples:
                rec_q[j].append(qv[s])
                rec_res[j].append(np.where(res_pos[s] >= 0, res_pos[s] - tptr[j], -1))
        if bar is not None:
            bar.update(nq)
    if bar is not None:
        bar.close()
    hop = np.concatenate(parts.pop("hop"))
    read = np.concatenate(parts.pop("read"))
    # the touched positions, increasing: a mark per logical position (n bytes) holds less than
    # sorting the hundreds of millions of reads of a paper-scale trace would
    mark = np.zeros(p.n, np.bool_)
    for a in (entry_all, hop, read):
        mark[a] = True
    node_pos = np.flatnonzero(mark).astype(np.int64)
    del mark
    hop_node = np.searchsorted(node_pos, hop).astype(np.int32)
    del hop
    read_node = np.searchsorted(node_pos, read).astype(np.int32)
    del read
    nread = np.concatenate(parts.pop("nread")).astype(np.int64)
    hop_read_ptr = np.zeros(len(nread) + 1, np.int64)
    np.cumsum(nread, out=hop_read_ptr[1:])
    search_hop_ptr = np.zeros(Q * P + 1, np.int64)
    np.cumsum(nh_all, out=search_hop_ptr[1:])
    # each template's own recall@k on its sampled searches
    trecall = np.full(T, np.nan)
    for j in range(T):
        if rec_q[j]:
            s0, s1 = tptr[j], tptr[j + 1]
            gt, _ = exact_knn(ti.vectors[s0:s1], np.asarray(rec_q[j], np.float32),
                              min(k, int(s1 - s0)), metric)
            trecall[j] = float(recall_at_k(np.asarray(rec_res[j]), gt, min(k, int(s1 - s0))).mean())
    w = served / max(1, served.sum())
    recall = float(np.nansum(trecall * w)) if served.sum() else None
    spec = synthetic.SPECS[p.family]
    ip = ti.index_params
    degrees = idx.degrees()
    meta = {
        "dataset": f"{p.family}-N{p.n}-C{C}-T{T}-s{p.seed}",
        "n": p.n, "dim": spec.dim, "dtype": spec.dtype, "metric": metric,
        "vector_bytes": spec.dim * np.dtype(spec.dtype).itemsize,
        "max_degree": ip.max_degree, "cand_list_len": L, "num_clusters": C,
        "num_probes": P, "k": int(k), "recall": recall, "seed": p.seed,
        "num_queries": Q, "format_version": TRACE_FORMAT_VERSION,
        "M": ip.M, "ef_construction": ip.ef_construction, "graph": ip.graph, "R": ip.R,
        "L": ip.L, "alpha": ip.alpha, "entry": entry,
        "max_degree_observed": int(degrees.max(initial=0)),
        "mean_degree": float(degrees.mean()) if len(degrees) else 0.0,
        "templated": True, "num_templates": T, "templates": [int(t) for t in ti.templates],
        "template_sizes": [int(s) for s in tsize],
        "template_recall": [None if np.isnan(r) else float(r) for r in trecall],
        "template_searches": [int(s) for s in served],
        "template_grown_rows": [int(g) for g in ti.grown_rows],
        "sample_rows": min(p.n, p.sample_rows), "exact_geometry": bool(ti.exact_geometry),
        "template_version": TEMPLATE_VERSION, "carry": carry,
        "surrogate_pool": surrogate_pool if surrogates is not None else 0,
    }
    return LogicalTrace(
        meta=meta, cluster_ptr=cptr, cluster_nodes=np.zeros(0, np.int32),
        centroids=ti.centroids, cluster_adjacency=centroid_adjacency(ti.centroids, metric),
        query_ptr=np.arange(0, Q * P + 1, P, dtype=np.int64), search_cluster=s_cluster_all,
        search_entry=np.searchsorted(node_pos, entry_all).astype(np.int32),
        search_hop_ptr=search_hop_ptr, hop_node=hop_node,
        hop_degree=np.concatenate(parts.pop("deg")).astype(np.int32),
        hop_read_ptr=hop_read_ptr, read_node=read_node,
        hop_cand_inserts=np.concatenate(parts.pop("ins")).astype(np.int32),
        result_ids=out_ids, query_recall=np.full(Q, np.nan, np.float32),
        node_pos=node_pos, template_of=ti.template_of)


#: arrays of a TemplateIndex saved beside its ClusteredIndex
_TEMPLATE_ARRAYS = ("centroids", "sizes", "templates", "template_of", "vectors", "grown_rows")


def _centroids_key(centroids: np.ndarray | None) -> dict:
    """Cache-key entry of given centroids: their digest (nothing when k-means makes them, so
    those keys are what they were before centroids could be given)."""
    if centroids is None:
        return {}
    c = np.ascontiguousarray(centroids, np.float32)
    return {"centroids": hashlib.blake2b(c.tobytes(), digest_size=16).hexdigest()}


def cached_templates(p: TemplateParams, index: IndexParams, cache: Path,
                     threads: int | None = None, progress: bool = True,
                     centroids: np.ndarray | None = None) -> TemplateIndex:
    """:func:`build_templates`, built once and cached (kind ``indexes``: the templates'
    :class:`ClusteredIndex` and their vectors and logical geometry, under a key of every
    parameter), so the traces of several probe counts or query sets share one build."""
    request = {"kind": "templates", "v": TEMPLATE_VERSION, "gen": synthetic.GENERATOR_VERSION,
               "p": p.to_dict(), "index": index.key_dict(), **_centroids_key(centroids)}
    key = cacheio.key_of(request)
    short = hashlib.blake2b(json.dumps(request, sort_keys=True).encode(), digest_size=8).hexdigest()
    stem = f"templates-{p.family}-N{p.n}-C{p.num_clusters}-T{p.num_templates}-{short}"
    folder = cache / "indexes"
    ipath, apath = folder / f"{stem}.npz", folder / f"{stem}.arrays.npz"
    record = cacheio.record_path(folder, stem)
    meta = cacheio.read_files(record, "indexes", key, [ipath, apath])
    if meta is not None:
        try:
            idx = ClusteredIndex.load(ipath, verify=False)
            with np.load(apath, allow_pickle=False) as z:
                arrays = {name: z[name] for name in _TEMPLATE_ARRAYS}
            return TemplateIndex(p, index, idx.metric, arrays["centroids"], arrays["sizes"],
                                 arrays["templates"], arrays["template_of"], idx,
                                 arrays["vectors"], bool(meta["exact_geometry"]),
                                 arrays["grown_rows"])
        except (ValueError, KeyError, OSError) as exc:
            cacheio.report(ipath, f"does not load ({exc})")
    ti = build_templates(p, index, threads, progress, centroids=centroids)
    arrays = {name: getattr(ti, name) for name in _TEMPLATE_ARRAYS}
    cacheio.store_files(record, "indexes", key, {
        ipath: lambda f: ti.index.save(f, overwrite=True),
        apath: lambda f: atomic_write_bytes(f, lambda fh: np.savez(fh, **arrays), overwrite=True),
    }, meta={"exact_geometry": bool(ti.exact_geometry)})
    return ti


def make_template_workload(family: str, n: int, num_queries: int, num_clusters: int,
                           num_templates: int, num_probes: int = 8, cand_list_len: int = 64,
                           k: int = 10, seed: int = 0, index: IndexParams | None = None,
                           entry: str = "medoid", sample_rows: int = DEFAULT_SAMPLE_ROWS,
                           cache_dir: str | os.PathLike | None = None,
                           threads: int | None = None, progress: bool = True,
                           carry: str = "surrogate",
                           centroids: np.ndarray | None = None) -> LogicalTrace:
    """The templated trace of ``family`` at logical size ``n`` (module docstring), built once
    and cached (kind ``traces``, under a key of every parameter) like every other trace.

    ``index`` gives the graph parameters (default :class:`graphs.index.IndexParams`; its
    ``num_clusters`` and ``seed`` are set from these arguments). The queries are the family's
    query stream, as for :func:`graphs.make_workload`. ``centroids`` (num_clusters x dim):
    the logical centroids to use instead of k-means on the sample (:func:`logical_geometry`),
    e.g. a real index's, so that a comparison with it is at one geometry."""
    base = index or IndexParams()
    ip = IndexParams(**{**base.key_dict(), "num_clusters": int(num_clusters), "seed": int(seed)})
    p = TemplateParams(family, int(n), int(num_clusters), int(num_templates), int(seed),
                       int(sample_rows))
    check_template_request(p, num_queries, num_probes, cand_list_len, k, entry)
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    request = {"kind": "templated-trace", "v": TEMPLATE_VERSION, "trace": TRACE_FORMAT_VERSION,
               "gen": synthetic.GENERATOR_VERSION, "p": p.to_dict(), "index": ip.key_dict(),
               "q": int(num_queries), "s": {"num_probes": int(num_probes),
                                           "cand_list_len": int(cand_list_len), "k": int(k),
                                           "entry": entry}, "carry": carry,
               **_centroids_key(centroids)}
    key = cacheio.key_of(request)
    short = hashlib.blake2b(json.dumps(request, sort_keys=True).encode(), digest_size=8).hexdigest()
    path = cache / "traces" / f"{family}-N{n}-C{num_clusters}-T{num_templates}-{short}.npz"
    record = cacheio.record_path(path.parent, path.stem)
    if cacheio.read_files(record, "traces", key, [path]) is not None:
        try:
            return load_trace(path, verify=False)
        except ValueError as exc:
            cacheio.report(path, f"does not load ({exc})")
    ti = cached_templates(p, ip, cache, threads, progress, centroids)
    queries = synthetic.generate(family, int(num_queries), int(seed), queries=True)
    tr = trace_templates(ti, queries, num_probes, cand_list_len, k, entry, progress=progress,
                         carry=carry)
    del ti
    cacheio.store_files(record, "traces", key, {path: lambda f: save_trace(f, tr, overwrite=True)})
    return tr


def probe_coverage(trace: LogicalTrace, family: str, rows: int = 1_000_000, k: int = 10,
                   seed: int = 0) -> dict:
    """How much of each query's neighbourhood its probes cover, as far as it can be computed
    at ``trace.meta['n']`` vectors: the share of the query's ``k`` nearest vectors among the
    first ``rows`` vectors of the family's base stream (a uniform sample of the N-vector set,
    so these stand for its ``k x N / rows`` nearest) whose cluster is one the query probes.
    With ``rows >= N`` it is exact: the share of the true top-k in the probed clusters, the
    bound routing puts on recall. Returns ``{"mean", "p10", "rows", "stands_for_k"}``."""
    n = int(trace.meta["n"])
    rows = int(min(rows, n))
    x = synthetic.generate(family, rows, seed)
    metric = trace.meta["metric"]
    labels = assign(x, trace.centroids, metric) if trace.num_clusters > 1 \
        else np.zeros(rows, np.int64)
    queries = synthetic.generate(family, trace.num_queries, seed, queries=True)
    ids, _ = exact_knn(x, queries, min(k, rows), metric)
    Q, P = trace.num_queries, int(trace.meta["num_probes"])
    probed = np.zeros((Q, trace.num_clusters), bool)
    qrow = np.repeat(np.arange(Q), np.diff(trace.query_ptr))
    probed[qrow, np.asarray(trace.search_cluster, np.int64)] = True
    cov = probed[np.arange(Q)[:, None], labels[ids]].mean(axis=1)
    return {"mean": float(cov.mean()), "p10": float(np.percentile(cov, 10)), "rows": rows,
            "stands_for_k": int(round(k * n / rows)), "num_probes": P}


def positional(trace: LogicalTrace) -> dict:
    """The arrays of a trace with its node ids as logical positions (int64): a real trace's
    dataset rows mapped through ``cluster_nodes``, a templated trace's ids through
    ``node_pos``; ``result_ids`` likewise. What a templated trace with every cluster its own
    template must equal (tests)."""
    if trace.is_templated:
        pos = np.asarray(trace.node_pos, np.int64)
        res = np.asarray(trace.result_ids, np.int64)
    else:
        pos = np.empty(len(trace.cluster_nodes), np.int64)
        pos[trace.cluster_nodes] = np.arange(len(trace.cluster_nodes))
        r = np.asarray(trace.result_ids, np.int64)
        res = np.where(r >= 0, pos[np.maximum(r, 0)], -1)
    out = {name: pos[np.asarray(getattr(trace, name), np.int64)]
           for name in ("search_entry", "hop_node", "read_node")}
    out["result_ids"] = res
    for name in ("cluster_ptr", "query_ptr", "search_cluster", "search_hop_ptr", "hop_degree",
                 "hop_read_ptr", "hop_cand_inserts", "centroids", "cluster_adjacency"):
        out[name] = np.asarray(getattr(trace, name))
    return out
