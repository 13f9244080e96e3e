"""The workloads the experiments run on, at three scales, built once and cached.

A workload is a logical trace (contract 1 in docs/contracts.md) made by
:func:`graphs.make_workload` from a dataset: a synthetic SIFT-like or DEEP-like set made by the
project (the default; nothing is downloaded), or the user's own files (``--dataset PATH``).
Index and trace are cached under the cache folder (``$COSMOS_CACHE`` or ``~/.cache/cosmos``)
under a key of dataset and parameters, so a second run reuses them.

Scales (sizes are ours, chosen for run time; the paper's are SIFT1B / DEEP1B):

========  ===========  =======  ========  ======  ==================================================
scale     base vectors queries  clusters  probes  purpose
========  ===========  =======  ========  ======  ==================================================
tiny      3,000        100      16        4       end-to-end test in CI (seconds)
default   50,000       400      64        8       ``cosmos reproduce``: every figure in minutes
full      1,000,000    10,000   64        8       ``cosmos reproduce --full`` (< 60 min on 2 cores)
========  ===========  =======  ========  ======  ==================================================

64 clusters = 16 per device on the paper's four devices; 8 probes (IVF-style routing) are the
defaults of :mod:`graphs.workload`, where their reasons are given. The query counts of the
default scale are set by the simulator's speed (about 300,000-420,000 DRAM requests per second per
core; a SIFT-like query of the 100k default trace makes about 14,000 requests, a DEEP-like
one about 2.5 times as many, its vectors being 3 times larger): with up
to 64 queries in flight, 400 queries give a short steady-state window, so ``--full`` is the
scale for figures to rely on.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path

__all__ = ["Scale", "SCALES", "FAMILIES", "get_scale", "workload", "trace_path"]

#: synthetic families of the paper's Table I used by the figures, with the paper's dataset
FAMILIES = {"sift": "SIFT1B", "deep": "DEEP1B"}


@dataclass(frozen=True)
class Scale:
    """Size of the workloads of one reproduction run."""

    name: str
    n: int  # base vectors per dataset
    num_queries: int  # queries per dataset
    num_clusters: int
    num_probes: int
    #: queries simulated per run in sweeps with many points (devices, ranks, load); the
    #: headline figure (fig4a) always simulates every query
    sweep_queries: int

    def to_dict(self) -> dict:
        return asdict(self)


SCALES = {
    "tiny": Scale("tiny", n=3_000, num_queries=100, num_clusters=16, num_probes=4, sweep_queries=40),
    "default": Scale("default", n=50_000, num_queries=400, num_clusters=64, num_probes=8,
                     sweep_queries=160),
    "full": Scale("full", n=1_000_000, num_queries=10_000, num_clusters=64, num_probes=8,
                  sweep_queries=2_000),
}


def get_scale(name: str | Scale) -> Scale:
    if isinstance(name, Scale):
        return name
    if name not in SCALES:
        raise ValueError(f"unknown scale {name!r}; expected one of {sorted(SCALES)}")
    return SCALES[name]


def _user_dataset(path: str, scale: Scale, queries: str | None, groundtruth: str | None,
                  metric: str):
    """The user's base file (and optional queries / ground truth) as a graphs.Dataset.

    Without a queries file, the last ``num_queries`` base vectors become the queries and are
    left out of the index. A missing ground truth is computed exactly.
    """
    import numpy as np

    from graphs import Dataset, exact_knn, load_dataset

    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"--dataset {path}: no such file")
    ds = load_dataset(p, queries, groundtruth, metric=metric)
    if ds.queries is None:
        nq = min(scale.num_queries, ds.n // 10)
        if nq < 1:
            raise ValueError(f"--dataset {path}: {ds.n} vectors are too few to hold out queries")
        base = np.asarray(ds.base[: ds.n - nq])
        ds = Dataset(name=f"{p.stem}-holdout{nq}", base=base, queries=np.asarray(ds.base[ds.n - nq:]),
                     groundtruth=None, metric=metric)
    if ds.groundtruth is None:
        gt, _ = exact_knn(ds.base, ds.queries, min(100, ds.n), metric)
        ds = Dataset(name=ds.name, base=ds.base, queries=ds.queries, groundtruth=gt, metric=metric)
    return ds


def workload(family: str, scale: str | Scale = "default", *, num_probes: int | None = None,
             cache_dir: str | os.PathLike | None = None, dataset: str | None = None,
             queries: str | None = None, groundtruth: str | None = None, metric: str = "l2",
             seed: int = 0, progress: bool = True):
    """The logical trace of ``family`` at ``scale`` (built once, then read from the cache).

    Parameters
    ----------
    family : str
        A synthetic family of :mod:`graphs.synthetic` (``sift``, ``deep``, ...); ignored when
        ``dataset`` is given.
    num_probes : int, optional
        Overrides the scale's probes (fig5a sweeps them).
    dataset, queries, groundtruth : path, optional
        The user's own files (fbin/u8bin/i8bin/fvecs/bvecs; ground truth ivecs or big-ann).
    """
    from graphs import make_workload

    sc = get_scale(scale)
    probes = sc.num_probes if num_probes is None else int(num_probes)
    if dataset is not None:
        ds = _user_dataset(dataset, sc, queries, groundtruth, metric)
        n = min(sc.n, ds.n)
        nq = min(sc.num_queries, len(ds.queries))
        clusters = min(sc.num_clusters, max(1, n // 50))
        return make_workload(ds, n=n, num_queries=nq, num_clusters=clusters,
                             num_probes=min(probes, clusters), seed=seed, cache_dir=cache_dir,
                             progress=progress)
    return make_workload(family, n=sc.n, num_queries=sc.num_queries, num_clusters=sc.num_clusters,
                         num_probes=probes, seed=seed, cache_dir=cache_dir, progress=progress)


def trace_path(trace, folder: str | os.PathLike, name: str) -> Path:
    """Save ``trace`` as ``folder/name.npz`` (for sweep workers, which load it by path)."""
    from graphs import save_trace

    path = Path(folder) / f"{name}.npz"
    if not path.exists():
        save_trace(path, trace)
    return path


def with_scale(scale: Scale, **changes) -> Scale:
    return replace(scale, **changes)
