"""Difficulty measures of a vector set, used to calibrate the synthetic generators.

- Local intrinsic dimensionality, maximum-likelihood estimate (Levina & Bickel, NIPS 2004; the
  per-query form of Amsaleg et al., KDD 2015, as used by ann-benchmarks):
  ``LID(q) = -( (1/k) sum_{i<k} log(r_i / r_k) )^-1`` over the k nearest neighbor distances.
  Reported as the mean over queries of LID(q).
- Relative contrast (He, Kumar & Chang, ICML 2012): ``RC(q) = mean_x d(q, x) / min_x d(q, x)``;
  reported as the mean over queries. Lower RC = harder.

Both use Euclidean distance (or, for ``metric="ip"``, the angular distance of the normalized
vectors would be the natural choice; we report L2 on the raw vectors for every set, which is what
the SIFT/DEEP calibration needs).
"""

from __future__ import annotations

import numpy as np

__all__ = ["knn_distances", "lid_mle", "relative_contrast", "difficulty", "probe_concentration", "recall_vs_ef"]


def knn_distances(base: np.ndarray, queries: np.ndarray, k: int, exclude_self: bool = False):
    """Exact L2 distances to the k nearest base vectors and the mean distance to all of them.

    Returns
    -------
    knn : numpy.ndarray, shape (q, k), float64, ascending
    mean : numpy.ndarray, shape (q,), float64
    """
    b = np.asarray(base, dtype=np.float64)
    bn = np.einsum("ij,ij->i", b, b)
    knn = []
    mean = []
    for s in range(0, len(queries), 256):
        q = np.asarray(queries[s : s + 256], dtype=np.float64)
        d2 = bn[None, :] - 2.0 * q @ b.T + np.einsum("ij,ij->i", q, q)[:, None]
        d = np.sqrt(np.maximum(d2, 0.0))
        if exclude_self:
            # drop the single closest point (the query itself, distance ~0)
            d.sort(axis=1)
            mean.append(d[:, 1:].mean(axis=1))
            knn.append(d[:, 1 : k + 1])
        else:
            mean.append(d.mean(axis=1))
            part = np.partition(d, k, axis=1)[:, :k]
            knn.append(np.sort(part, axis=1))
    return np.concatenate(knn), np.concatenate(mean)


def lid_mle(knn: np.ndarray) -> np.ndarray:
    """Per-query MLE of the local intrinsic dimensionality from sorted k-NN distances (q, k)."""
    r = np.maximum(np.asarray(knn, dtype=np.float64), 1e-12)
    logs = np.log(r[:, :-1] / r[:, -1:])
    m = logs.mean(axis=1)
    with np.errstate(divide="ignore"):
        return np.where(m < 0, -1.0 / m, np.inf)


def relative_contrast(knn: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """Per-query relative contrast: mean distance over nearest-neighbor distance."""
    return mean / np.maximum(knn[:, 0], 1e-12)


def difficulty(base: np.ndarray, queries: np.ndarray, k: int = 20, exclude_self: bool = False) -> dict:
    """Mean LID (MLE over ``k`` neighbors) and mean relative contrast of ``queries`` in ``base``."""
    knn, mean = knn_distances(base, queries, k, exclude_self=exclude_self)
    lid = lid_mle(knn)
    rc = relative_contrast(knn, mean)
    return {
        "lid_mean": float(np.mean(lid[np.isfinite(lid)])),
        "lid_median": float(np.median(lid)),
        "rc_mean": float(np.mean(rc)),
        "rc_median": float(np.median(rc)),
        "k": k,
        "num_queries": int(len(queries)),
    }


def recall_vs_ef(base: np.ndarray, queries: np.ndarray, efs=(10, 16, 24, 32, 48), exclude_self: bool = False,
                 M: int = 16, ef_construction: int = 100, seed: int = 1) -> list[float]:
    """recall@10 of hnswlib's ``knn_query`` at each ef (single-threaded build, seeded)."""
    import hnswlib

    from .groundtruth import exact_knn

    k = 10 + int(exclude_self)
    gt, _ = exact_knn(base, queries, k)
    g = hnswlib.Index(space="l2", dim=base.shape[1])
    g.init_index(len(base), M=M, ef_construction=ef_construction, random_seed=seed)
    g.add_items(np.asarray(base, dtype=np.float32), np.arange(len(base)), num_threads=1)
    out = []
    for ef in efs:
        g.set_ef(max(ef, k))
        lab, _ = g.knn_query(np.asarray(queries, dtype=np.float32), k=k)
        if exclude_self:
            lab, ref = lab[:, 1:], gt[:, 1:]
        else:
            ref = gt
        out.append(float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(lab, ref)])))
    return out


def probe_concentration(base: np.ndarray, queries: np.ndarray, num_clusters: int = 64, num_probes: int = 8,
                        seed: int = 0) -> float:
    """Max over mean of how often each k-means cluster is among a query's ``num_probes`` nearest
    centroids (1 = perfectly even routing; large = a "hub" cluster probed by most queries)."""
    from .kmeans import kmeans

    c = kmeans(base, num_clusters, seed=seed)
    q = np.asarray(queries, dtype=np.float32)
    s = np.einsum("ij,ij->i", c, c)[None, :] - 2.0 * q @ c.T
    pr = np.argsort(s, axis=1, kind="stable")[:, :num_probes]
    cnt = np.bincount(pr.ravel(), minlength=num_clusters)
    return float(cnt.max() / cnt.mean())


def main() -> None:  # pragma: no cover - prints the calibration table of docs/graphs.md
    """``python -m graphs.stats``: difficulty of the real sets and the synthetic families."""
    from .dataset import real_dataset
    from .synthetic import SPECS, generate

    rows = []
    big = real_dataset("bigann10k").base
    rows.append(("bigann10k (real)", big))
    rows.append(("siftsmall (real)", real_dataset("siftsmall").base))
    for seed in (0, 1, 2):
        rows.append((f"synthetic sift seed {seed}", generate("sift", 10000, seed)))
    for name in SPECS:
        if name != "sift":
            rows.append((f"synthetic {name} seed 0", generate(name, 10000, 0)))
    blob = np.clip(np.rint(np.random.default_rng(0).normal(30, 20, size=(10000, 128))), 0, 255)
    rows.append(("gaussian blob (naive)", blob))
    print("| set | LID (MLE, k=20) | RC | zero fraction | probe concentration | "
          "hnswlib recall@10 at ef=10/16/24/32/48 |")
    print("|---|---|---|---|---|---|")
    for name, b in rows:
        # first 300 vectors as queries against all 10,000 (self excluded); concentration:
        # 64 clusters of vectors 2000.. probed by vectors 0..1999 (8 probes)
        d = difficulty(b, b[:300], exclude_self=True)
        r = recall_vs_ef(b, b[:300], exclude_self=True)
        z = float(np.mean(np.asarray(b) == 0))
        pc = probe_concentration(b[2000:], b[:2000])
        print(f"| {name} | {d['lid_mean']:.1f} | {d['rc_mean']:.2f} | {z:.3f} | {pc:.2f} | "
              + " / ".join(f"{v:.3f}" for v in r) + " |", flush=True)


if __name__ == "__main__":  # pragma: no cover
    main()
