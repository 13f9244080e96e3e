"""The workloads the experiments run on, at three scales, built once and cached.

A workload is a logical trace (contract 1 in docs/contracts.md) made by
:func:`graphs.make_workload` from a dataset: a synthetic SIFT-like or DEEP-like set made by the
project (the default; nothing is downloaded), or the user's own files (``--dataset PATH``).
Index and trace are cached under the cache folder (``$COSMOS_CACHE`` or ``~/.cache/cosmos``)
under a key of dataset and parameters, so a second run reuses them. :func:`workloads` gives the
traces at several probe counts, those not cached from one search at the largest
(:func:`graphs.make_workloads`), each stored where :func:`workload` reads it. The user's base is
cut to the scale's size (:func:`user_dataset_plan`); its ground truth is computed only when no
trace is cached, once, and cached too.

Scales (sizes are ours, chosen for run time, except ``paper``: SIFT1B / DEEP1B's billion,
as a cluster-template workload, graphs.templates):

========  ===========  =======  ========  ======  ==================================================
scale     base vectors queries  clusters  probes  purpose
========  ===========  =======  ========  ======  ==================================================
tiny      3,000        100      16        4       end-to-end test in CI (seconds)
default   50,000       400      64        8       ``cosmos reproduce``: every figure in minutes
full      1,000,000    10,000   64        8       ``cosmos reproduce --full`` (hours: see below)
paper     10^9         10,000   1,024     8       ``--scale paper``: 8 template clusters of ~1M
========  ===========  =======  ========  ======  ==================================================

64 clusters = 16 per device on the paper's four devices; 8 probes (IVF-style routing) are the
defaults of :mod:`graphs.workload`, where their reasons are given. The query counts of the
default scale are set by the simulator's speed (about 500,000-1,000,000 DRAM requests per second
per core; a SIFT-like query of the 50,000-vector default trace makes about 9,500 requests, a
DEEP-like one about 2.8 times as many, its vectors being 3 times larger): with up
to 64 queries in flight, 400 queries give a short steady-state window, so ``--full`` is the
scale for figures to rely on.

Cost of ``--full``: building each 1M-vector workload (synthetic data, exact ground truth,
k-means, 64 hnswlib graphs, the traced search) takes a few minutes on 2 cores; a query makes
about 27,000 (SIFT-like) and 77,000 (DEEP-like) DRAM requests, so fig4a at full scale is
several billion DRAM requests and dominates the run. Each simulation worker holds 5-10 GB at
its peak. docs/experiments.md gives the measured cost of a whole ``--full`` run and the
command that measures it.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path

__all__ = ["Scale", "SCALES", "FAMILIES", "get_scale", "workload", "workloads", "trace_path",
           "user_dataset_plan", "user_dataset_note", "user_dataset", "index_build_seconds"]

#: synthetic families of the paper's Table I used by the figures, with the paper's dataset
FAMILIES = {"sift": "SIFT1B", "deep": "DEEP1B"}

#: graph kind of every cluster of the figures' indexes (one of graphs.index.GRAPH_KINDS: "hnsw",
#: "vamana" as the DiskANN library builds it, "vamana-paper" as its paper does). The paper
#: traced DiskANN (Vamana) graphs; hnswlib's stay the default because they are the closer of
#: the two to DiskANN's published per-query work (docs/graphs.md, "hnswlib and Vamana side by
#: side": 12,757 against Vamana's 17,627 distance computations per query at 1M vectors).
GRAPH = "hnsw"


@dataclass(frozen=True)
class Scale:
    """Size of the workloads of one reproduction run."""

    name: str
    n: int  # base vectors per dataset
    num_queries: int  # queries per dataset
    num_clusters: int
    num_probes: int
    #: queries simulated per run in sweeps with many points (devices, ranks, load); the
    #: headline figure (fig4a) always simulates every query. At least 85, so that the four
    #: devices of the paper's presets (Cosmos: 64 queries in flight) reach a steady state
    #: (experiments.figures.scale_devices.queries_for) and the sweeps share their common points.
    sweep_queries: int
    #: ``ci_target`` of fig4a's and the sweeps' simulations (cosmos.simulate): stop once the
    #: 95 % QPS interval's relative half-width is this small (None: simulate every query)
    ci_target: float | None = None
    #: template clusters of a cluster-template workload (graphs.templates): None builds the
    #: real index; T makes a logical index of ``n`` vectors whose probes are real searches on
    #: T of its clusters
    templates: int | None = None

    def to_dict(self) -> dict:
        return asdict(self)


SCALES = {
    "tiny": Scale("tiny", n=3_000, num_queries=100, num_clusters=16, num_probes=4,
                  sweep_queries=85),
    "default": Scale("default", n=50_000, num_queries=400, num_clusters=64, num_probes=8,
                     sweep_queries=160),
    "full": Scale("full", n=1_000_000, num_queries=10_000, num_clusters=64, num_probes=8,
                  sweep_queries=2_000, ci_target=0.01),
    # The paper's scale: SIFT1B / DEEP1B, 10,000 queries (Ko et al., CAL 2025). 1,024 clusters
    # (256 per device; the paper gives no count): clusters of about a million vectors, the
    # size of one in-memory DiskANN/HNSW index, so that a probe is a search of the scale
    # those graphs are built and tuned at; "hundreds to thousands" of clusters is what a
    # billion-vector clustered index has, and 8 probes keep the routing of the other scales.
    # 2 templates: both datasets' workloads then build in 38 minutes on 2 cores (8 take
    # about 170; goal 60, docs/performance.md). check_templates.py finds 2 templates
    # standing for 64 clusters within 4 % of the real index's work and QPS at 50,000 vectors
    # and 2.9 % at 1M (8: 3 % and 2 %), and at 10^9 2 templates move the six systems' QPS
    # by 0.1-0.4 % (SIFT-like) and 0.5-1.8 % (DEEP-like) from 8 templates' (docs/graphs.md).
    # `--templates T` sets another count.
    "paper": Scale("paper", n=1_000_000_000, num_queries=10_000, num_clusters=1024,
                   num_probes=8, sweep_queries=2_000, ci_target=0.01, templates=2),
}


def get_scale(name: str | Scale) -> Scale:
    if isinstance(name, Scale):
        return name
    if name not in SCALES:
        raise ValueError(f"unknown scale {name!r}; expected one of {sorted(SCALES)}")
    return SCALES[name]


#: ground-truth neighbors kept per query (as for the synthetic sets of graphs.get_dataset)
_GT_K = 100


def user_dataset_plan(dataset: str | os.PathLike, scale: str | Scale = "default",
                      queries: str | os.PathLike | None = None,
                      groundtruth: str | os.PathLike | None = None, metric: str = "l2") -> dict:
    """What ``--dataset PATH`` will use at ``scale``, read from the file headers only.

    The base is **cut to the scale's size**: the first ``scale.n`` vectors of the file (all of
    them if it holds fewer). Without a queries file, the last ``min(scale.num_queries, n // 10)``
    vectors of the file are held out as queries (never part of the base); with one, its first
    ``scale.num_queries`` vectors are the queries. A ground-truth file is used as given only if
    the base is not cut (its ids refer to the whole file); otherwise, and without one, the exact
    ground truth of the vectors used is computed once and cached.

    Returns a dict of plain values (it goes into ``config.json``).
    """
    from graphs.dataset import INPUT_METRICS as METRICS
    from graphs.io import read_vectors

    sc = get_scale(scale)
    path = dataset
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"--dataset {path}: no such file")
    if metric not in METRICS:
        raise ValueError(f"--metric {metric!r} unknown; expected one of {', '.join(METRICS)}")
    if groundtruth is not None and queries is None:
        raise ValueError(f"--groundtruth {groundtruth} needs --queries (the ground truth of "
                         "queries held out from --dataset is computed)")
    vectors = ("float32", "uint8", "int8")  # what graphs indexes (ids files are not vectors)
    arr = read_vectors(p)
    if str(arr.dtype) not in vectors:
        raise ValueError(f"--dataset {path}: holds {arr.dtype} values; expected base vectors of "
                         f"{', '.join(vectors)} (fbin/fvecs, u8bin/bvecs, i8bin)")
    total, dim = arr.shape
    if queries is None:
        nq = min(sc.num_queries, total // 10)
        if nq < 1:
            raise ValueError(f"--dataset {path}: {total} vectors are too few to hold out queries "
                             "(at least 10 needed, or give --queries)")
        available = total - nq
    else:
        qa = read_vectors(queries)
        if str(qa.dtype) not in vectors:
            raise ValueError(f"--queries {queries}: holds {qa.dtype} values; expected query "
                             f"vectors of {', '.join(vectors)}")
        qn, qd = qa.shape
        if qd != dim:
            raise ValueError(f"--queries {queries}: dimension {qd}, but --dataset {path} has {dim}")
        if qn < 1:
            raise ValueError(f"--queries {queries}: no vectors")
        nq = min(sc.num_queries, qn)
        available = total
    n = min(sc.n, available)
    gt_source = "file" if groundtruth is not None and n == total else "computed"
    return {
        "dataset": str(p), "queries": None if queries is None else str(queries),
        "groundtruth": None if groundtruth is None else str(groundtruth), "metric": metric,
        "vectors_in_file": total, "dim": dim, "base_vectors_used": n,
        "queries_used": nq, "queries_held_out": queries is None,
        "num_clusters": min(sc.num_clusters, max(1, n // 50)),
        "groundtruth_source": gt_source, "scale": sc.name, "scale_n": sc.n,
    }


def user_dataset_note(plan: dict) -> str:
    """One paragraph saying what of the user's files a run uses (printed before it starts)."""
    held_out = plan["queries_used"] if plan["queries_held_out"] else 0
    cut = plan["base_vectors_used"] < plan["vectors_in_file"] - held_out
    sizes = ", ".join(f"{s.name} {s.n:,}" for s in SCALES.values())
    head = (f"note: --dataset {plan['dataset']}: {plan['vectors_in_file']:,} vectors of dimension "
            f"{plan['dim']}; ")
    if cut:
        head += (f"the base is cut to the {plan['scale']} scale's size: only its first "
                 f"{plan['base_vectors_used']:,} vectors are used "
                 f"(base vectors per scale: {sizes}).")
    else:
        head += (f"all {plan['base_vectors_used']:,} base vectors are used "
                 f"(the {plan['scale']} scale "
                 f"takes up to {plan['scale_n']:,}).")
    parts = [head]
    if plan["queries_held_out"]:
        parts.append(f"Queries: the file's last {plan['queries_used']:,} vectors, "
                     "held out of the base.")
    else:
        parts.append(f"Queries: the first {plan['queries_used']:,} of {plan['queries']}.")
    c = plan["num_clusters"]
    parts.append(f"Metric {plan['metric']}; {c} cluster{'' if c == 1 else 's'}.")
    if plan["groundtruth_source"] == "file":
        parts.append(f"Ground truth from {plan['groundtruth']}.")
    else:
        why = " (the file's ids refer to the uncut base)" if plan["groundtruth"] else ""
        parts.append(f"Ground truth computed exactly on the vectors used{why}, once, and cached.")
    return " ".join(parts)


#: prepared user datasets of this process, by (plan, file identities): reading and
#: fingerprinting a large base once per run, not once per trace
_PREPARED: dict = {}


def _file_id(path) -> tuple | None:
    if path is None:
        return None
    st = os.stat(path)
    return (str(Path(path).resolve()), st.st_size, st.st_mtime_ns)


def _user_dataset(plan: dict):
    """The base and queries of ``plan`` as a graphs.Dataset without ground truth."""
    import numpy as np

    from graphs import Dataset
    from graphs.dataset import apply_metric
    from graphs.io import read_vectors

    key = (tuple(sorted(plan.items())), _file_id(plan["dataset"]), _file_id(plan["queries"]))
    if key in _PREPARED:
        return _PREPARED[key]
    p = Path(plan["dataset"])
    total, n, nq = plan["vectors_in_file"], plan["base_vectors_used"], plan["queries_used"]
    if plan["queries_held_out"]:
        q = np.asarray(read_vectors(p)[total - nq:])
        name = f"{p.stem}-holdout{nq}"
        available = total - nq
    else:
        q = np.asarray(read_vectors(plan["queries"], n=nq))
        name = p.stem
        available = total
    if n < available:
        name += f"[:{n}]"
    base, q, metric = apply_metric(read_vectors(p, n=n), q, plan["metric"], str(p))
    if metric != plan["metric"]:
        name += f"-{plan['metric']}"
    ds = Dataset(name=name, base=base, queries=q, metric=metric)
    _PREPARED.clear()  # one user dataset per run; do not hold on to older ones
    _PREPARED[key] = ds
    return ds


def _groundtruth(ds, plan: dict, cache: Path, progress: bool):
    """Ground truth of ``ds``: the user's file if it applies, else exact, cached by the
    dataset's fingerprint under ``cache/groundtruth`` (as graphs does for synthetic sets)."""
    from graphs.io import read_groundtruth
    from graphs.workload import cached_groundtruth

    if plan["groundtruth_source"] == "file":
        ids, _ = read_groundtruth(plan["groundtruth"])
        if len(ids) < len(ds.queries):
            raise ValueError(f"--groundtruth {plan['groundtruth']}: {len(ids)} rows for "
                             f"{len(ds.queries)} queries")
        return ids[: len(ds.queries)]
    return cached_groundtruth(ds, min(_GT_K, ds.n), cache, progress=progress)


def user_dataset(plan: dict, cache: Path, progress: bool = True):
    """The user's dataset of ``plan`` (:func:`user_dataset_plan`) with its ground truth: the
    file's if it applies, else exact, cached under ``cache/groundtruth``."""
    ds = _user_dataset(plan)
    return ds.with_groundtruth(_groundtruth(ds, plan, cache, progress))


def workload(family: str, scale: str | Scale = "default", *, num_probes: int | None = None,
             cache_dir: str | os.PathLike | None = None, dataset: str | None = None,
             queries: str | None = None, groundtruth: str | None = None, metric: str = "l2",
             seed: int = 0, progress: bool = True, graph: str | None = None,
             cand_list_len: int | None = None):
    """The logical trace of ``family`` at ``scale`` (built once, then read from the cache).

    :func:`workloads` with the one probe count ``num_probes``.

    Parameters
    ----------
    family : str
        A synthetic family of :mod:`graphs.synthetic` (``sift``, ``deep``, ...); ignored when
        ``dataset`` is given.
    num_probes : int, optional
        Overrides the scale's probes (fig5a sweeps them).
    dataset, queries, groundtruth : path, optional
        The user's own files (fbin/u8bin/i8bin/fvecs/bvecs; ground truth ivecs or big-ann). The
        base is cut to the scale's size (:func:`user_dataset_plan` says exactly what is used).
    metric : {"l2", "ip", "cosine", "angular"}
        Distance of the user's dataset (the synthetic families have their own); cosine
        (angular) scales the vectors to unit length and searches by inner product.
    graph : {"hnsw", "vamana", "vamana-paper"}, optional
        Graph kind of the clusters (default :data:`GRAPH`), with its default parameters.
    cand_list_len : int, optional
        Candidate list length of the search (default: graphs.workload's, 64; recall_qps
        sweeps it).
    """
    probes = get_scale(scale).num_probes if num_probes is None else int(num_probes)
    return workloads(family, scale, (probes,), cache_dir=cache_dir, dataset=dataset,
                     queries=queries, groundtruth=groundtruth, metric=metric, seed=seed,
                     progress=progress, graph=graph, cand_list_len=cand_list_len)[probes]


def workloads(family: str, scale: str | Scale = "default", probes=None, *, keep=None,
              cache_dir: str | os.PathLike | None = None, dataset: str | None = None,
              queries: str | None = None, groundtruth: str | None = None, metric: str = "l2",
              seed: int = 0, progress: bool = True, graph: str | None = None,
              cand_list_len: int | None = None) -> dict:
    """The logical traces of ``family`` at ``scale`` at several probe counts, those not cached
    yet traced by one search at the largest of them (:func:`graphs.make_workloads`); each is
    the trace :func:`workload` gives at that count, stored where :func:`workload` reads it.

    Parameters
    ----------
    probes : sequence of int, optional
        Probe counts (default: the scale's). With the user's ``dataset`` each is clipped to its
        number of clusters (:func:`user_dataset_plan`), as :func:`workload` clips it.
    keep : sequence of int, optional
        The counts whose traces are returned (default: all of ``probes``); the others are only
        made sure to be in the cache (:func:`graphs.make_workloads`), so memory stays bounded.
    Other parameters :
        As for :func:`workload`.

    Returns
    -------
    dict
        ``{p: LogicalTrace}`` for the distinct counts of ``keep`` as asked for (before
        clipping), in increasing order.
    """
    from graphs import cached_traces, make_workloads
    from graphs.index import default_cache_dir
    from graphs.search import probe_counts
    from graphs.workload import kept_counts

    sc = get_scale(scale)
    counts = probe_counts([sc.num_probes] if probes is None else probes)
    kept = kept_counts(counts, keep)
    graph = GRAPH if graph is None else graph
    search = {} if cand_list_len is None else {"cand_list_len": int(cand_list_len)}
    if dataset is not None:
        plan = user_dataset_plan(dataset, sc, queries, groundtruth, metric)
        ds = _user_dataset(plan)
        clusters = plan["num_clusters"]
        clip = {p: min(p, clusters) for p in counts}
        traced = sorted(set(clip.values()))
        kept_clipped = sorted({clip[p] for p in kept})
        cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        trs = cached_traces(ds, num_clusters=clusters, probes=traced, seed=seed, cache_dir=cache,
                            graph=graph, keep=kept_clipped, **search)
        if trs is None:     # something to trace: only now the ground truth is needed
            trs = make_workloads(user_dataset(plan, cache, progress), num_clusters=clusters,
                                 probes=traced, seed=seed, cache_dir=cache, progress=progress,
                                 graph=graph, keep=kept_clipped, **search)
        return {p: trs[clip[p]] for p in kept}
    if sc.templates:
        return _templated(family, sc, kept, seed, cache_dir, progress, graph, search)
    return make_workloads(family, n=sc.n, num_queries=sc.num_queries, num_clusters=sc.num_clusters,
                          probes=counts, seed=seed, cache_dir=cache_dir, progress=progress,
                          graph=graph, keep=kept, **search)


def _templated(family, sc: Scale, probes, seed, cache_dir, progress, graph, search) -> dict:
    """The cluster-template traces of ``family`` at ``sc`` (graphs.templates), one per probe
    count, over one cached template build."""
    from graphs.index import IndexParams
    from graphs.templates import make_template_workload

    index = IndexParams(num_clusters=sc.num_clusters, seed=seed, graph=graph)
    return {p: make_template_workload(family, n=sc.n, num_queries=sc.num_queries,
                                      num_clusters=sc.num_clusters, num_templates=sc.templates,
                                      num_probes=p, seed=seed, index=index,
                                      cache_dir=cache_dir, progress=progress, **search)
            for p in probes}


def index_build_seconds(ds, num_clusters: int, seed: int = 0,
                        cache_dir: str | os.PathLike | None = None,
                        graph: str | None = None) -> float | None:
    """Wall seconds the clustered graph index of dataset ``ds`` (the one :func:`workloads`
    traces with ``num_clusters``, ``seed`` and ``graph``) took to build, as its cache entry's
    record noted when it was built (graphs.index.index_build_seconds); None if unknown (not
    in the cache, cached before build times were recorded, or a cluster-template workload).
    A measurement: it is kept in the record's meta only, never in a file or a key."""
    from graphs.index import IndexParams
    from graphs.index import index_build_seconds as recorded

    params = IndexParams(num_clusters=int(num_clusters), seed=int(seed),
                         graph=GRAPH if graph is None else graph)
    return recorded(ds, params, cache_dir)


def workload_queries(family: str, scale: str | Scale = "default", *, seed: int = 0,
                     dataset: str | None = None, queries: str | None = None,
                     groundtruth: str | None = None, metric: str = "l2"):
    """The query vectors of :func:`workload`'s trace, without building or reading the trace:
    the family's query stream (graphs.synthetic, as the real and the templated workloads draw
    it), or the queries of the user's ``dataset`` (:func:`user_dataset_plan`)."""
    from graphs import synthetic

    sc = get_scale(scale)
    if dataset is not None:
        return _user_dataset(user_dataset_plan(dataset, sc, queries, groundtruth, metric)).queries
    return synthetic.generate(family, sc.num_queries, seed, queries=True)


def recall_row(trace, family: str) -> dict:
    """What is known of the recall of ``trace``'s searches, one row of a results table: the
    index (vectors, clusters, templates, probes, queries) and its recall@10. A real index's
    is measured against the exact top-10 of all its vectors. A cluster-template workload's
    end-to-end recall cannot be measured (docs/graphs.md, Cluster templates): its row gives
    each template's own recall@10, their mean weighted by the searches each template ran,
    and the probes' coverage of the true neighbours as far as it can be computed
    (graphs.templates.probe_coverage: about a minute for 10,000 queries at 10^9 vectors)."""
    m = trace.meta
    row = {"dataset": family, "n": int(m["n"]), "clusters": int(trace.num_clusters),
           "templates": int(m.get("num_templates", 0)), "num_probes": int(m["num_probes"]),
           "num_queries": int(trace.num_queries), "recall_at_10": float(m["recall"]),
           "recall_kind": "template-weighted" if trace.is_templated else "end-to-end"}
    if trace.is_templated:
        from graphs.templates import probe_coverage

        cov = probe_coverage(trace, family)
        row.update({"template_recall_at_10": " ".join(f"{r:.3f}" for r in m["template_recall"]),
                    "probe_coverage_mean": cov["mean"], "probe_coverage_p10": cov["p10"],
                    "probe_coverage_rows": cov["rows"],
                    "probe_coverage_stands_for_k": cov["stands_for_k"]})
    return row


def probed_clusters(trace, queries, num_probes: int):
    """``(query_ptr, search_cluster)`` of ``trace``'s queries at ``num_probes`` probes (clipped
    to its clusters): what the trace of that probe count holds, routed over ``trace``'s
    centroids (graphs.search.probe_lists) without searching. ``queries`` are the trace's own
    (:func:`workload_queries`); the placement figures need nothing else of a search."""
    import numpy as np

    from graphs.search import probe_lists

    if len(queries) != trace.num_queries:
        raise ValueError(f"{len(queries)} queries for a trace of {trace.num_queries}")
    p = min(int(num_probes), trace.num_clusters)
    probes = probe_lists(trace.centroids, queries, p, trace.meta["metric"])
    return np.arange(0, probes.size + 1, p, dtype=np.int64), probes.ravel().astype(np.int32)


def trace_path(trace, folder: str | os.PathLike, name: str) -> Path:
    """Save ``trace`` as ``folder/name.npz`` (for sweep workers, which load it by path)."""
    from graphs import save_trace

    path = Path(folder) / f"{name}.npz"
    if not path.exists():
        save_trace(path, trace)
    return path


def with_scale(scale: Scale, **changes) -> Scale:
    return replace(scale, **changes)
