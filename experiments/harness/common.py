"""Shared plumbing for experiment scripts: results folders, atomic writes, and sweeps.

Every experiment writes one fresh results folder (never reusing an earlier one) holding
``config.json`` (everything needed to rerun), tidy CSVs with units in column names, and plots
that are drawn only from those CSVs.

Sweeps (many independent simulations) run through :func:`run_sweep`: in this process, over local
processes (the default), or over a Dask distributed cluster given its scheduler address. Each
task is a top-level function called with keyword arguments and must be deterministic in them
(seeds are arguments), so the results are identical whichever way the sweep runs; they are
always returned in input order. A local sweep that is stopped (Ctrl-C, or SIGTERM / SIGHUP
under :func:`cosmos_common.signals.stop_on_signals`) ends its worker processes at once, and a
worker ends when this process does, however it ends (:func:`cosmos_common.signals.worker_init`).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

__all__ = [
    "pyplot",
    "new_results_dir",
    "results_dir",
    "atomic_write_text",
    "write_json",
    "write_csv",
    "save_figure",
    "run_sweep",
]


def pyplot():
    """matplotlib.pyplot on the non-interactive Agg backend (plots are files, never windows)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def new_results_dir(root: str | os.PathLike, name: str, *, stamp: str | None = None,
                    option: str = "--out-root") -> Path:
    """Create and return a new, empty folder ``root/name-<stamp>[-N]``
    (:func:`cosmos_common.outdir.new_run_dir`: the one output rule of every command).

    The folder is created with ``os.mkdir`` (which fails if it exists), so two runs never share
    or overwrite a folder, even when started in the same second.
    """
    from cosmos_common.outdir import new_run_dir

    return new_run_dir(root, name, stamp=stamp, option=option)


def results_dir(out: str | os.PathLike | None, root: str | os.PathLike, name: str,
                command: str) -> tuple[Path, bool]:
    """The results folder of a run: ``--out`` if given (new or empty, else refused:
    :func:`cosmos_common.outdir.prepare_out_dir`), else a new ``root/name-<stamp>``. Returns
    the folder and whether this call created it."""
    from cosmos_common.outdir import prepare_out_dir

    if out is None:
        return new_results_dir(root, name), True
    created = not Path(out).exists()
    return prepare_out_dir(out, command), created


def _atomic_replace(path: Path, write: Callable[[Path], None], *, overwrite: bool) -> Path:
    """``write(tmp)`` then link (``overwrite``: rename) into place
    (:func:`cosmos_common.outdir.atomic_write`)."""
    from cosmos_common.outdir import atomic_write

    return atomic_write(Path(path), write, overwrite=overwrite)


def atomic_write_text(path: str | os.PathLike, text: str, *, overwrite: bool = False) -> Path:
    """Write ``text`` to ``path`` through a temporary file and a rename."""
    return _atomic_replace(Path(path), lambda p: p.write_text(text), overwrite=overwrite)


def write_json(path: str | os.PathLike, obj: Any, *, overwrite: bool = False) -> Path:
    """Write ``obj`` as indented JSON (keys sorted) atomically."""
    text = json.dumps(obj, indent=2, sort_keys=True, default=_json_default) + "\n"
    return atomic_write_text(path, text, overwrite=overwrite)


def _json_default(obj: Any) -> Any:
    import dataclasses

    import numpy as np

    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"cannot write {type(obj).__name__} to JSON")


def write_csv(path: str | os.PathLike, frame, *, overwrite: bool = False) -> Path:
    """Write a pandas DataFrame to CSV (no index) atomically."""
    return _atomic_replace(Path(path), lambda p: frame.to_csv(p, index=False), overwrite=overwrite)


def save_figure(fig, folder: str | os.PathLike, stem: str,
                formats: Sequence[str] = ("png", "pdf")) -> list[Path]:
    """Save a matplotlib figure as ``folder/stem.<fmt>`` for each format, atomically.

    The files are the same, byte for byte, for the same figure: the PDF's creation date
    (which matplotlib would stamp) is left out."""
    out = []
    for fmt in formats:
        meta = {"CreationDate": None} if fmt == "pdf" else None
        out.append(
            _atomic_replace(
                Path(folder) / f"{stem}.{fmt}",
                lambda p, fmt=fmt, meta=meta: fig.savefig(p, format=fmt, dpi=150,
                                                          bbox_inches="tight", metadata=meta),
                overwrite=False,
            )
        )
    return out


def run_sweep(
    fn: Callable[..., Any],
    tasks: Iterable[dict],
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    progress: bool = True,
    desc: str | None = None,
    on_result: Callable[[int, Any], None] | None = None,
    cost: Callable[[dict], float] | None = None,
    follow: Callable[[int, Any], Iterable[dict]] | None = None,
) -> list[Any]:
    """Run ``fn(**task)`` for every task; return the results in task order.

    Parameters
    ----------
    fn : callable
        A module-level (picklable) function; deterministic in its keyword arguments.
    tasks : iterable of dict
        Keyword arguments, one dict per simulation.
    workers : int, optional
        Local worker processes. ``None`` = ``os.cpu_count()``; ``1`` (or a single task) runs in
        this process.
    scheduler : str, optional
        Address of a Dask distributed scheduler (``tcp://host:port``), or ``"local"`` to start a
        local Dask cluster with ``workers`` processes. Requires the ``dask`` extra.
    on_result : callable, optional
        ``on_result(i, result)`` is called in this process as soon as task ``i`` has finished
        (in completion order), e.g. to store it, so an interrupted sweep keeps what it did.
    cost : callable, optional
        ``cost(task)``, an estimate of a task's run time: tasks start in decreasing cost (ties
        in task order), so the workers do not wait at the end for one long task started last.
        Only the order of work changes; the results are the same and in task order.
    follow : callable, optional
        ``follow(i, result)``, called in this process after ``on_result``: tasks that can
        start now that task ``i`` has finished (e.g. runs at rates set by its result). They
        join the waiting tasks (in cost order on local workers) and their results follow the
        given tasks' in the returned list, in the order they were added.
    """
    from tqdm.auto import tqdm

    tasks = list(tasks)
    bar = tqdm(total=len(tasks), desc=desc or getattr(fn, "__name__", "sweep"),
               disable=not progress)
    results: list[Any] = [None] * len(tasks)

    def finished(i: int, result: Any) -> list[int]:
        """Record task ``i``'s result; the indices of the tasks it makes ready."""
        results[i] = result
        if on_result is not None:
            on_result(i, result)
        bar.update(1)
        added = []
        for t in (follow(i, result) if follow is not None else ()):
            tasks.append(t)
            results.append(None)
            added.append(len(tasks) - 1)
        if added:
            bar.total += len(added)
            bar.refresh()
        return added

    try:
        if scheduler is not None:
            _run_dask(fn, tasks, scheduler, workers, finished)
        else:
            n_workers = workers if workers is not None else (os.cpu_count() or 1)
            if follow is None:
                n_workers = min(n_workers, len(tasks))
            _run_local(fn, tasks, n_workers, cost, finished)
        return results
    finally:
        bar.close()


def _run_local(fn, tasks: list, n_workers: int, cost, finished) -> None:
    """Local part of :func:`run_sweep`: in this process (``n_workers <= 1``) or on worker
    processes, the costliest waiting task first whenever a worker is free."""
    import heapq
    from concurrent.futures import FIRST_COMPLETED, wait

    waiting: list = []

    def add(i: int) -> None:
        heapq.heappush(waiting, (-float(cost(tasks[i])) if cost is not None else 0.0, i))

    for i in range(len(tasks)):
        add(i)
    if n_workers <= 1:
        while waiting:
            _, i = heapq.heappop(waiting)
            for j in finished(i, fn(**tasks[i])):
                add(j)
        return
    from cosmos_common.signals import worker_init

    with ProcessPoolExecutor(max_workers=n_workers, initializer=worker_init,
                             initargs=(os.getpid(),)) as pool:
        running: dict = {}
        try:
            while waiting or running:
                while waiting and len(running) < n_workers:
                    _, i = heapq.heappop(waiting)
                    running[pool.submit(fn, **tasks[i])] = i
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in sorted(done, key=running.get):
                    for j in finished(running.pop(fut), fut.result()):
                        add(j)
        except BaseException as exc:
            # failed: start no more tasks (the pool's exit then waits only for the ones
            # running); stopped (Ctrl-C, SIGTERM, SIGHUP: a KeyboardInterrupt, or an exit):
            # the running tasks' results would be dropped, so their workers end now
            for fut in running:
                fut.cancel()
            if not isinstance(exc, Exception):
                _stop_workers(pool)
            raise


def _stop_workers(pool: ProcessPoolExecutor, wait_s: float = 5.0) -> None:
    """End ``pool``'s worker processes now, running tasks included (SIGTERM, which they do not
    catch: :func:`cosmos_common.signals.worker_init`; SIGKILL for one still there after
    ``wait_s`` seconds), and start no more."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    for proc in procs:
        try:
            proc.terminate()
        except (OSError, ValueError):
            pass            # already ended
    for proc in procs:
        try:
            proc.join(wait_s)
            if proc.exitcode is None:
                proc.kill()
                proc.join(wait_s)
        except (OSError, ValueError, AssertionError):
            pass
    pool.shutdown(wait=False, cancel_futures=True)


def _run_dask(fn, tasks: list, scheduler: str, workers: int | None, finished) -> None:
    """Dask part of :func:`run_sweep`: every task submitted at once (Dask orders them)."""
    try:
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ValueError("--dask-scheduler needs dask.distributed: pip install -e '.[dask]'") from exc
    if scheduler == "local":
        cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                               processes=True, dashboard_address=None)
        client = Client(cluster)
    else:
        cluster = None
        client = Client(scheduler)
    try:
        index = {}

        def submit(i):
            fut = client.submit(fn, pure=False, **tasks[i])
            index[fut.key] = i
            return fut

        ac = as_completed([submit(i) for i in range(len(tasks))])
        for fut in ac:
            for j in finished(index[fut.key], fut.result()):
                ac.add(submit(j))
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def error_bars(frame, column: str, low: str | None = None, high: str | None = None,
               scale: float = 1.0):
    """(2, n) asymmetric error bars of ``column`` from its interval columns (``low`` /
    ``high``, default ``<column>_ci_low`` / ``<column>_ci_high``), times ``scale`` (the unit
    of the plotted values); 0 where there is no interval; None if the frame has no interval
    columns."""
    import numpy as np

    lo_c, hi_c = low or f"{column}_ci_low", high or f"{column}_ci_high"
    if lo_c not in frame or hi_c not in frame:
        return None
    v = frame[column].to_numpy(float)
    lo = np.nan_to_num(v - frame[lo_c].to_numpy(float), nan=0.0)
    hi = np.nan_to_num(frame[hi_c].to_numpy(float) - v, nan=0.0, posinf=0.0)
    return np.vstack([np.maximum(lo, 0), np.maximum(hi, 0)]) * scale
