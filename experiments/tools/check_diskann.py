"""Our Vamana graphs side by side with the DiskANN library's (``diskannpy``), on real data sets.

    python experiments/tools/check_diskann.py                          # siftsmall, bigann10k, sigmod24
    python experiments/tools/check_diskann.py --datasets siftsmall --library-threads 1,2
    python experiments/tools/check_diskann.py --write-reference tests/data/graphs/diskannpy_reference.json

For each data set it builds one unclustered graph (R, L, alpha; default 64, 100, 1.2) three
ways: ``diskannpy.build_memory_index`` (the library), our ``vamana`` and our ``vamana-paper``
(:mod:`graphs.vamana`). It compares their out-degree statistics (mean, quartiles, share of
points at R) and, with our traced beam search (:mod:`graphs.search`) from each graph's entry
point, recall@10, hops and distance computations per query at L_search 32, 64 and 100: the
same search code on each graph, so the differences are the graphs'. The library's own search
(``StaticMemoryIndex.batch_search``) gives its recall@10 as well, a check that its graph file
was read right.

The library runs in a virtual environment of its own, because ``diskannpy`` 0.7.0 pins numpy
1.25: ``--venv`` (default ``$COSMOS_CACHE/diskannpy-venv`` or ``~/.cache/cosmos/diskannpy-venv``)
is created and ``diskannpy==0.7.0`` installed into it if it has no ``diskannpy``, and reused
otherwise; the script says which. The main environment never imports ``diskannpy``.

Data sets: ``siftsmall`` and ``bigann10k`` are the shipped real sets (tests/data/graphs);
``sigmod24`` is the SIGMOD 2024 programming contest sample (10,000 x 100 float32, 2,516 queries
with ground truth), read from ``--sigmod24-dir`` (default ``$COSMOS_SIGMOD24`` or
``../shared/data/sigmod24_dummy`` next to the repository); it is skipped with a note when absent
unless named.

Writes ``comparison.csv`` (one row per data set, graph and L_search; units in the column names)
and ``config.json`` into a new folder under ``--out-root`` (or ``--out``); ``--write-reference``
also writes the library's figures at one thread (deterministic) as the JSON the tests compare
against (tests/test_graphs_vamana.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from cosmos_common import UserError  # noqa: E402
from cosmos_common.cacheio import default_cache_dir  # noqa: E402
from cosmos_common.outdir import mark_complete  # noqa: E402
from experiments.harness.common import results_dir, write_csv, write_json  # noqa: E402
from graphs.dataset import Dataset, real_dataset  # noqa: E402
from graphs.index import ClusteredIndex, IndexParams, build_index  # noqa: E402
from graphs.workload import trace_index  # noqa: E402

NAME = "check_diskann"

#: the diskannpy release whose source (microsoft/DiskANN, tag 0.7.0) graphs/vamana_diskann.py follows
DISKANNPY = "diskannpy==0.7.0"

#: search list sizes of the comparison (the issue's 32, 64 and 100; 100 = the build's L)
L_SEARCH = (32, 64, 100)

K = 10
DATASETS = ("siftsmall", "bigann10k", "sigmod24")
OUR_GRAPHS = ("vamana", "vamana-paper")

#: run by the virtual environment's Python: build with the library, save its graph, and search
#: with the library at every L_search. Arguments: one JSON object (paths and parameters).
_LIBRARY_RUN = r"""
import json, sys, time
import importlib.metadata as md
import numpy as np
import diskannpy

a = json.loads(sys.argv[1])
base = np.load(a["base"])
queries = np.load(a["queries"])
t0 = time.perf_counter()
diskannpy.build_memory_index(base, distance_metric="l2", index_directory=a["dir"], complexity=a["L"],
                             graph_degree=a["R"], num_threads=a["threads"], alpha=a["alpha"], index_prefix="ann")
build_s = time.perf_counter() - t0
index = diskannpy.StaticMemoryIndex(index_directory=a["dir"], num_threads=a["threads"],
                                    initial_search_complexity=max(a["L_search"]), index_prefix="ann")
for ls in a["L_search"]:
    ids, _ = index.batch_search(queries, k_neighbors=a["k"], complexity=ls, num_threads=a["threads"])
    np.save(a["dir"] + "/ids_L%d.npy" % ls, np.asarray(ids, dtype=np.int64))
with open(a["dir"] + "/run.json", "w") as f:
    json.dump({"diskannpy": md.version("diskannpy"), "numpy": np.__version__, "build_s": build_s}, f)
"""


# --------------------------------------------------------------------------- the library's side
def default_venv() -> Path:
    return default_cache_dir() / "diskannpy-venv"


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def ensure_venv(venv: Path) -> Path:
    """The Python of ``venv`` with ``diskannpy`` importable: reused if it has it, else created
    (``python -m venv``) and ``diskannpy==0.7.0`` installed by pip. Says which on stdout."""
    py = venv_python(venv)
    if py.exists() and subprocess.run([str(py), "-c", "import diskannpy"], capture_output=True).returncode == 0:
        print(f"diskannpy: reusing the virtual environment {venv}")
        return py
    print(f"diskannpy: creating the virtual environment {venv} and installing {DISKANNPY} into it")
    if not py.exists():
        r = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True)
        if r.returncode != 0:
            raise UserError(f"--venv {venv}: python -m venv failed: {_last_line(r.stderr)}")
    r = subprocess.run([str(py), "-m", "pip", "install", "-q", DISKANNPY], capture_output=True, text=True)
    if r.returncode != 0:
        raise UserError(f"--venv {venv}: pip install {DISKANNPY} failed: {_last_line(r.stderr)}")
    return py


def _last_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else "(no message)"


def run_library(py: Path, ds: Dataset, R: int, L: int, alpha: float, threads: int, work: Path) -> dict:
    """Build and search with the library in its environment; its graph, entry point, search ids
    (one (Q, k) array per L_search) and versions."""
    work.mkdir(parents=True, exist_ok=True)
    np.save(work / "base.npy", np.asarray(ds.base, dtype=np.float32))
    np.save(work / "queries.npy", np.asarray(ds.queries, dtype=np.float32))
    args = {"base": str(work / "base.npy"), "queries": str(work / "queries.npy"), "dir": str(work), "R": R,
            "L": L, "alpha": alpha, "threads": threads, "L_search": list(L_SEARCH), "k": K}
    r = subprocess.run([str(py), "-c", _LIBRARY_RUN, json.dumps(args)], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"diskannpy run on {ds.name} failed: {_last_line(r.stderr)}")
    run = json.loads((work / "run.json").read_text())
    indptr, indices, start = read_diskann_graph(work / "ann", ds.n)
    run.update(indptr=indptr, indices=indices, start=start,
               ids={ls: np.load(work / f"ids_L{ls}.npy") for ls in L_SEARCH})
    return run


def read_diskann_graph(path: Path, n: int) -> tuple[np.ndarray, np.ndarray, int]:
    """The graph file of DiskANN's in-memory index (``InMemGraphStore::save_graph``): uint64 file
    size, uint32 max degree, uint32 entry point, uint64 frozen points, then per point a uint32
    count and that many uint32 ids. Returns (indptr (n+1,) int64, indices int32, entry point)."""
    raw = path.read_bytes()
    size, _, start, frozen = np.frombuffer(raw[:24], dtype=np.dtype([("s", "<u8"), ("m", "<u4"), ("e", "<u4"),
                                                                     ("f", "<u8")]))[0]
    if size != len(raw) or frozen != 0:
        raise ValueError(f"{path}: not a static in-memory DiskANN graph (size {size}, frozen points {frozen})")
    words = np.frombuffer(raw[24:], dtype="<u4")
    deg = np.empty(n, dtype=np.int64)
    pos = 0
    rows = []
    for p in range(n):
        deg[p] = words[pos]
        rows.append(words[pos + 1: pos + 1 + deg[p]])
        pos += 1 + int(deg[p])
    if pos != len(words):
        raise ValueError(f"{path}: {len(words) - pos} words after the last of {n} points")
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(deg, out=indptr[1:])
    return indptr, np.concatenate(rows).astype(np.int32), int(start)


# --------------------------------------------------------------------------- data sets
def sigmod24(folder: Path) -> Dataset:
    """The SIGMOD 2024 contest sample: ``dummy-data.bin`` (uint32 count, then records of 102
    float32: category, timestamp, 100-d vector), ``dummy-unfiltered-queries.bin`` (records of 104
    float32: type, v, l, r, vector) and ``dummy-unfiltered-groundtruth.bin`` (uint32 count, then
    100 uint32 ids per query)."""
    def records(name, width):
        a = np.fromfile(folder / name, dtype="<f4", offset=4)
        return a.reshape(-1, width)

    base = np.ascontiguousarray(records("dummy-data.bin", 102)[:, 2:])
    queries = np.ascontiguousarray(records("dummy-unfiltered-queries.bin", 104)[:, 4:])
    gt = np.fromfile(folder / "dummy-unfiltered-groundtruth.bin", dtype="<u4", offset=4).reshape(-1, 100)
    return Dataset(name="sigmod24", base=base, queries=queries, groundtruth=gt.astype(np.int64), metric="l2")


def default_sigmod24_dir() -> Path:
    env = os.environ.get("COSMOS_SIGMOD24")
    return Path(env) if env else Path(__file__).resolve().parents[3] / "shared" / "data" / "sigmod24_dummy"


def load(name: str, sigmod_dir: Path, named: bool) -> Dataset | None:
    if name in ("siftsmall", "bigann10k"):
        return real_dataset(name)
    if name == "sigmod24":
        if (sigmod_dir / "dummy-data.bin").exists():
            return sigmod24(sigmod_dir)
        if named:
            raise UserError(f"--sigmod24-dir {sigmod_dir}: no dummy-data.bin there")
        print(f"note: sigmod24 skipped ({sigmod_dir} holds no dummy-data.bin; --sigmod24-dir names it)")
        return None
    raise UserError(f"data set {name!r} unknown; expected siftsmall, bigann10k or sigmod24")


# --------------------------------------------------------------------------- figures
def degree_stats(indptr: np.ndarray, R: int) -> dict:
    deg = np.diff(indptr)
    q25, q50, q75 = np.percentile(deg, [25, 50, 75])
    return {"mean_degree": float(deg.mean()), "degree_p25": float(q25), "degree_p50": float(q50),
            "degree_p75": float(q75), "share_at_R": float(np.mean(deg == R)), "max_degree": int(deg.max())}


def search_stats(index: ClusteredIndex, ds: Dataset) -> dict:
    """Our traced search on one graph at every L_search: recall@10, hops and distance
    computations (the entry's included) per query."""
    out = {}
    for ls in L_SEARCH:
        tr = trace_index(index, ds, num_probes=1, cand_list_len=ls, k=K, progress=False)
        pq = tr.per_query()
        out[ls] = {"recall_at_10": float(tr.meta["recall"]), "hops_per_query": float(pq["hops"].mean()),
                   "distances_per_query": float(pq["distances"].mean())}
    return out


def library_recall(ids: np.ndarray, ds: Dataset) -> float:
    from graphs.groundtruth import recall_at_k

    return float(np.mean(recall_at_k(ids, ds.groundtruth[: len(ids)], K)))


def with_graph(index: ClusteredIndex, indptr: np.ndarray, indices: np.ndarray, start: int) -> ClusteredIndex:
    """``index`` (one cluster, positions = data set rows) with another graph and entry point."""
    entry = np.array([start], dtype=np.int64)
    g = dataclasses.replace(index, indptr=indptr, indices=indices, medoid=entry, hnsw_entry=entry)
    g.check()
    return g


def rows_of(ds: Dataset, graph: str, threads, deg: dict, srch: dict, build_s: float, lib_recall=None) -> list:
    return [{"dataset": ds.name, "graph": graph, "library_threads": threads, **deg, "L_search": ls,
             **srch[ls], "library_recall_at_10": (lib_recall or {}).get(ls), "build_s": build_s}
            for ls in L_SEARCH]


def print_table(rows: list, R: int) -> None:
    head = (f"{'dataset':<10} {'graph':<13} {'thr':>3} {'mean deg':>8} {'q25/q50/q75':>12} {'at R':>6} "
            + " ".join(f"{'L=' + str(ls) + ' recall/hops/dists':>27}" for ls in L_SEARCH))
    print(head)
    key = {}
    for r in rows:
        key.setdefault((r["dataset"], r["graph"], r["library_threads"]), []).append(r)
    for (name, graph, thr), rs in key.items():
        r0 = rs[0]
        q = f"{r0['degree_p25']:.0f}/{r0['degree_p50']:.0f}/{r0['degree_p75']:.0f}"
        cells = " ".join(f"{r['recall_at_10']:>9.4f} {r['hops_per_query']:>7.1f} {r['distances_per_query']:>9.1f}"
                         for r in rs)
        print(f"{name:<10} {graph:<13} {thr if thr else '':>3} {r0['mean_degree']:>8.2f} {q:>12} "
              f"{100 * r0['share_at_R']:>5.1f}% {cells}")


def print_gaps(rows: list) -> None:
    """Our graphs against the one-thread library build: mean degree and distance computations
    per query in per cent, recall@10 as a difference."""
    lib = {(r["dataset"], r["L_search"]): r for r in rows if r["graph"] == "diskannpy" and r["library_threads"] == 1}
    print("\nagainst diskannpy (1 thread): mean degree %, distances/query % at L_search "
          + "/".join(map(str, L_SEARCH)) + ", largest |recall@10 difference|")
    seen = {}
    for r in rows:
        if r["graph"] in OUR_GRAPHS and (r["dataset"], r["L_search"]) in lib:
            seen.setdefault((r["dataset"], r["graph"]), []).append((r, lib[(r["dataset"], r["L_search"])]))
    for (name, graph), pairs in seen.items():
        r, b = pairs[0]
        dd = "/".join(f"{100 * (x['distances_per_query'] / y['distances_per_query'] - 1):+.1f}" for x, y in pairs)
        rec = max(abs(x["recall_at_10"] - y["recall_at_10"]) for x, y in pairs)
        print(f"  {name:<10} {graph:<13} degree {100 * (r['mean_degree'] / b['mean_degree'] - 1):+.1f} %  "
              f"distances {dd} %  recall {rec:.4f}")


def graph_sha256(indptr: np.ndarray, indices: np.ndarray) -> str:
    """SHA-256 of a CSR graph: indptr as int64, then indices as int32, little-endian bytes."""
    h = hashlib.sha256(np.ascontiguousarray(indptr, dtype="<i8").tobytes())
    h.update(np.ascontiguousarray(indices, dtype="<i4").tobytes())
    return h.hexdigest()


def one_by_one(ds: Dataset, run_: dict, args) -> int:
    """How many of the library's lists our ``vamana`` builder gives exactly when it inserts the
    points one by one (``max_batch=1``, one numba thread: nothing to share) from the library's
    entry point."""
    import numba

    from graphs.vamana import build_vamana

    old = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        ip, ix = build_vamana(ds.base, ds.metric, run_["start"], args.R, args.L, args.alpha, max_batch=1)
    finally:
        numba.set_num_threads(old)
    lp, li = run_["indptr"], run_["indices"]
    return sum(np.array_equal(ix[ip[p]:ip[p + 1]], li[lp[p]:lp[p + 1]]) for p in range(ds.n))


def reference(rows: list, runs: dict, args) -> dict:
    """The library's figures at one thread, per data set: what the tests compare against."""
    out = {"source": "python experiments/tools/check_diskann.py --write-reference PATH", "package": DISKANNPY,
           "R": args.R, "L": args.L, "alpha": args.alpha, "library_threads": 1, "k": K, "datasets": {}}
    for (name, thr), run in runs.items():
        if thr != 1:
            continue
        out["diskannpy_version"], out["numpy_version"] = run["diskannpy"], run["numpy"]
        rs = [r for r in rows if r["dataset"] == name and r["graph"] == "diskannpy" and r["library_threads"] == 1]
        r0 = rs[0]
        out["datasets"][name] = {
            "entry_point": run["start"],
            "graph_sha256": graph_sha256(run["indptr"], run["indices"]),
            **{k: r0[k] for k in ("mean_degree", "degree_p25", "degree_p50", "degree_p75", "share_at_R",
                                  "max_degree")},
            "search": {str(r["L_search"]): {k: r[k] for k in ("recall_at_10", "hops_per_query",
                                                               "distances_per_query", "library_recall_at_10")}
                       for r in rs},
        }
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default=None,
                    help="comma-separated: siftsmall, bigann10k, sigmod24 (default all three; sigmod24 "
                         "skipped with a note when its folder is absent, unless named here)")
    ap.add_argument("--sigmod24-dir", type=Path, default=None,
                    help="folder of the SIGMOD 2024 sample (default $COSMOS_SIGMOD24 or ../shared/data/sigmod24_dummy)")
    ap.add_argument("--venv", type=Path, default=None,
                    help="virtual environment of diskannpy (default $COSMOS_CACHE/diskannpy-venv); created if missing")
    ap.add_argument("--library-threads", default="1,2",
                    help="thread counts of the library's builds (1: deterministic, the reference; default 1,2)")
    ap.add_argument("--R", type=int, default=64, help="max out-degree (default 64, DiskANN's)")
    ap.add_argument("--L", type=int, default=100, help="build search list size (default 100, DiskANN's)")
    ap.add_argument("--alpha", type=float, default=1.2, help="pruning factor (default 1.2, DiskANN's)")
    ap.add_argument("--threads", type=int, default=None, help="numba threads of our builds (the graph does not depend on it)")
    ap.add_argument("--out", type=Path, default=None, help="results folder (new or empty)")
    ap.add_argument("--out-root", type=Path, default=Path("results"), help="parent of a new results folder")
    ap.add_argument("--write-reference", type=Path, default=None,
                    help="also write the one-thread library figures as JSON here (the tests' reference)")
    args = ap.parse_args(argv)
    try:
        return run(args)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def run(args) -> int:
    from graphs.vamana import validate_vamana

    validate_vamana(args.R, args.L, args.alpha)
    names = [s.strip() for s in (args.datasets or ",".join(DATASETS)).split(",") if s.strip()]
    named = args.datasets is not None or args.sigmod24_dir is not None
    try:
        lib_threads = [int(t) for t in args.library_threads.split(",")]
    except ValueError:
        raise UserError(f"--library-threads {args.library_threads!r}: expected comma-separated integers") from None
    if not lib_threads or min(lib_threads) < 1:
        raise UserError(f"--library-threads {args.library_threads!r}: each count must be >= 1")
    sigmod_dir = args.sigmod24_dir or default_sigmod24_dir()
    datasets = [d for d in (load(n, sigmod_dir, named) for n in names) if d is not None]
    folder, _ = results_dir(args.out, args.out_root, NAME, f"experiments/{NAME}.py")
    py = ensure_venv(args.venv or default_venv())
    rows, runs = [], {}
    with tempfile.TemporaryDirectory(prefix="check_diskann-") as tmp:
        for ds in datasets:
            for thr in lib_threads:
                run_ = run_library(py, ds, args.R, args.L, args.alpha, thr, Path(tmp) / f"{ds.name}-{thr}")
                runs[(ds.name, thr)] = run_
                idx = build_index(ds, IndexParams(num_clusters=1, graph="vamana", R=args.R, L=args.L,
                                                  alpha=args.alpha), threads=args.threads, progress=False)
                g = with_graph(idx, run_["indptr"], run_["indices"], run_["start"])
                lib_rec = {ls: library_recall(run_["ids"][ls], ds) for ls in L_SEARCH}
                rows += rows_of(ds, "diskannpy", thr, degree_stats(g.indptr, args.R), search_stats(g, ds),
                                run_["build_s"], lib_rec)
                if thr == 1:
                    same = one_by_one(ds, run_, args)
                    print(f"{ds.name}: vamana inserting one point at a time (max_batch=1) gives {same:,} of the "
                          f"library's {ds.n:,} lists exactly (1-thread library build)")
            for graph in OUR_GRAPHS:
                t0 = time.perf_counter()
                idx = build_index(ds, IndexParams(num_clusters=1, graph=graph, R=args.R, L=args.L, alpha=args.alpha),
                                  threads=args.threads, progress=False)
                build_s = time.perf_counter() - t0
                rows += rows_of(ds, graph, None, degree_stats(idx.indptr, args.R), search_stats(idx, ds), build_s)
                print(f"{ds.name}: {graph} entry point {int(idx.medoid[0])}, library's "
                      f"{runs[(ds.name, lib_threads[0])]['start']}")
    versions = {k: v for k, v in next(iter(runs.values())).items() if k in ("diskannpy", "numpy")} if runs else {}
    print(f"\ndiskannpy {versions.get('diskannpy')} (numpy {versions.get('numpy')}), R={args.R} L={args.L} "
          f"alpha={args.alpha}, one graph per data set; our traced search on every graph, k={K}\n")
    print_table(rows, args.R)
    print_gaps(rows)
    import pandas as pd

    write_csv(folder / "comparison.csv", pd.DataFrame(rows))
    write_json(folder / "config.json", {"command": " ".join([f"python experiments/{NAME}.py", *sys.argv[1:]]),
                                        "datasets": [d.name for d in datasets], "R": args.R, "L": args.L,
                                        "alpha": args.alpha, "library_threads": lib_threads, "L_search": L_SEARCH,
                                        "k": K, **versions})
    if args.write_reference is not None:
        write_json(args.write_reference, reference(rows, runs, args), overwrite=True)
        print(f"reference: {args.write_reference}")
    mark_complete(folder)
    print(f"results: {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
