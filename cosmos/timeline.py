"""The steps of the first queries of a run as a timeline to look at (issue 55).

``cosmos simulate --timeline FILE.json`` (and ``cosmos replay ... --timeline FILE.json``)
writes the steps of the first ``--timeline-queries N`` queries (default
:data:`DEFAULT_QUERIES`) in the Chrome trace event format, the JSON that Perfetto
(https://ui.perfetto.dev) and ``chrome://tracing`` open: ``{"traceEvents": [...]}`` with a
complete event (``"ph": "X"``, ``ts`` and ``dur`` in microseconds, fractional: the simulated
DRAM cycles x tCK = 416 ps) per step on each resource it occupies, and metadata events
(``"ph": "M"``) naming the processes and threads (the rows).

The engine logs each step of those queries when it ends (:mod:`cosmos.engine`, ``tl_log``:
query, task, context, step, start and end cycle); the results are the same with or without
the log. This module turns that log and the program into events:

- every step on its *execution context*: process ``host`` (threads ``core context i`` and
  ``I/O agent i``), ``CXL switch`` (``core context i``) or ``device d`` (``GPC context i``);
- a transfer (``xfer`` step) also on each link it crosses, from its start to its arrival
  (queueing behind other messages, serialization and the link's latency): ``CXL switch`` /
  ``host port out|in`` and ``device d`` / ``link out|in`` (out = away from the host);
- a MEM step also on the memory it reads (``<instance>`` / ``DRAM reads``) and, for
  rank-local reads, on ``device d`` / ``rank PUs``, from its first request to its last line;
- each query on ``queries`` / ``query q``, from its admission (or arrival) to its completion.

Steps that overlap on one row (several contexts reading one memory, messages queued on one
link) go to numbered lanes of that row (``DRAM reads #2``), so no two events of a thread
overlap. Not shown: single DRAM requests and each DRAM channel's busy periods (the engine
would have to log per request, which the timeline must not cost), the switch's latency (no
queue), and the link traffic of a MEM step's requests and data (shown on its context and
memory rows only).

Event names are the step kinds (``mem``, ``xfer``, ``compute``, as cosmos.program's
``STEP_*``); ``cat`` is the step's breakdown category; ``args`` give the query, task, step,
the task's device and clusters, and the requests and bytes (MEM), wire bytes and direction
(xfer) or cycles (compute), and the start and end cycle.

:func:`render_png` draws the same events as a Gantt chart with matplotlib
(``python -m cosmos.timeline A.json [B.json] --png OUT.png``; docs/timeline.md
shows one).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

__all__ = ["DEFAULT_QUERIES", "add_timeline_options", "check_timeline_options",
           "timeline_events", "write_timeline", "render_png"]

#: queries a ``--timeline`` shows unless ``--timeline-queries`` says otherwise
DEFAULT_QUERIES = 4
#: the step kinds' names (cosmos.program.STEP_MEM, STEP_XFER, STEP_COMPUTE)
KIND_NAMES = ("mem", "xfer", "compute")


# ----------------------------------------------------------------------------- options
def add_timeline_options(parser) -> None:
    """``--timeline FILE`` and ``--timeline-queries N`` (simulate and replay declare them
    here, once)."""
    parser.add_argument("--timeline", default=None, metavar="FILE.json",
                        help="write the steps of the first queries (--timeline-queries) as a "
                             "Chrome trace (open it in https://ui.perfetto.dev or "
                             "chrome://tracing; replaced if it exists; docs/timeline.md)")
    parser.add_argument("--timeline-queries", type=int, default=None, metavar="N",
                        help=f"with --timeline: the queries shown, the first N of the run "
                             f"(default {DEFAULT_QUERIES}; 0 writes nothing)")


def check_timeline_options(args) -> int:
    """Before any work: the queries the timeline shows (0 without ``--timeline``); a
    ``UserError`` of one line for a bad value or a path that cannot be written."""
    from cosmos_common import UserError

    n = getattr(args, "timeline_queries", None)
    path = getattr(args, "timeline", None)
    if n is not None and n < 0:
        raise UserError(f"--timeline-queries must be >= 0 (queries to show), got {n}")
    if path is None:
        if n is not None:
            raise UserError("--timeline-queries applies only with --timeline FILE.json")
        return 0
    n = DEFAULT_QUERIES if n is None else int(n)
    if n > 0:
        check_timeline_path(path)
    return n


def check_timeline_path(path) -> None:
    """``UserError`` (one line, naming the path) unless ``path`` can be written: not a folder,
    not an existing file, in an existing folder we may write into."""
    from cosmos_common import UserError
    from cosmos_common.outdir import check_new_file

    p = Path(path)
    if str(path).strip() == "":
        raise UserError("--timeline: give a file name, e.g. timeline.json")
    if p.is_dir():
        raise UserError(f"--timeline {path}: is a folder; give a file name, e.g. "
                        f"{p / 'timeline.json'}")
    folder = p.parent if str(p.parent) else Path(".")
    if not folder.is_dir():
        raise UserError(f"--timeline {path}: folder {folder} does not exist")
    check_new_file(p, force=None, option="--timeline")     # not an existing file; writable


# ----------------------------------------------------------------------------- events
def _us(cycles, tck_ps: int) -> float:
    """Simulated DRAM cycles -> microseconds (exact to the picosecond)."""
    return round(float(cycles) * tck_ps / 1e6, 6)


class _Rows:
    """Processes and threads of a timeline, numbered in order of first use, each thread with
    lanes for events that overlap."""

    def __init__(self, pid_base: int, prefix: str):
        self.pid_base, self.prefix = pid_base, prefix
        self.pids: dict[str, int] = {}
        self.tids: dict[tuple, int] = {}
        self.lane_ends: dict[tuple, list] = {}
        self.meta: list[dict] = []

    def pid(self, process: str) -> int:
        if process not in self.pids:
            pid = self.pid_base + len(self.pids)
            self.pids[process] = pid
            self.meta += [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                           "args": {"name": self.prefix + process}},
                          {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0,
                           "args": {"sort_index": pid}}]
        return self.pids[process]

    def tid(self, process: str, thread: str, order: int) -> tuple[int, int]:
        pid = self.pid(process)
        key = (pid, thread)
        if key not in self.tids:
            tid = 1 + sum(1 for k in self.tids if k[0] == pid)
            self.tids[key] = tid
            self.meta += [{"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                           "args": {"name": thread}},
                          {"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                           "args": {"sort_index": order}}]
        return pid, self.tids[key]

    def place(self, process: str, thread: str, order: int, start: int, end: int):
        """(pid, tid) of the first lane of the row whose events all end by ``start`` (events
        are placed in order of their start)."""
        ends = self.lane_ends.setdefault((process, thread), [])
        for lane, e in enumerate(ends):
            if e <= start:
                ends[lane] = end
                break
        else:
            ends.append(end)
            lane = len(ends) - 1
        name = thread if lane == 0 else f"{thread} #{lane + 1}"
        return self.tid(process, name, order * 100 + lane)


def timeline_events(res, label: str | None = None, pid_base: int = 1) -> list[dict]:
    """The Chrome trace events (metadata first) of the steps logged in the run ``res``
    (:class:`cosmos.simulate.SimResult` of a simulation with ``timeline_queries`` > 0; none
    for a run without). ``label``: a prefix of the process names (``cosmos replay`` puts the
    systems of one file side by side); ``pid_base``: the first process id."""
    import numpy as np

    from cosmos import engine as E
    from cosmos.config import TCK_PS
    from cosmos.program import (SEG_DEVICE_LINK, SEG_HOST_PORT, STEP_COMPUTE, STEP_MEM,
                                STEP_XFER, agent_pool, switch_pool)
    from cosmos.systems import CATEGORIES, model_for

    st, pg = res.state, res.program
    n = int(st.scal[E.SC_TL_N])
    log = np.asarray(st.tl_log[:n * E.TLW]).reshape(n, E.TLW)
    info = res.extra.get("timeline", {"queries": 0, "clusters": []})
    D = int(res.config.device.count)
    in_host = model_for(res.config).index_in_host
    pool_off = np.concatenate([[0], np.cumsum(res.pool_sizes)])
    prefix = f"{label}: " if label else ""
    rows = _Rows(pid_base, prefix)
    rows.pid("queries")
    rows.pid("host")

    def memory(inst: int) -> str:
        return "host" if in_host or inst >= D else f"device {inst}"

    def context(ctx: int) -> tuple[str, str, int]:
        p = int(np.searchsorted(pool_off, ctx, side="right") - 1)
        i = ctx - int(pool_off[p])
        if p == 0:
            return "host", f"core context {i}", i
        if p == agent_pool(D):
            return "host", f"I/O agent {i}", 10_000 + i
        if p == switch_pool(D):
            return "CXL switch", f"core context {i}", i
        return f"device {p - 1}", f"GPC context {i}", i

    events = []
    order = np.lexsort((log[:, E.TL_CTX], log[:, E.TL_START])) if n else np.zeros(0, int)
    for r in order:
        q, task, ctx, s, t0, t1 = (int(x) for x in log[r])
        c = int(pg.step_class[s])
        kind = int(pg.cls_kind[c])
        dev = int(pg.task_device[task])
        clusters = info["clusters"][q] if q < len(info["clusters"]) else []
        if dev >= 0 and not in_host:
            clusters = [k for k in clusters if int(res.cluster_device[k]) == dev]
        args = {"query": q, "task": task, "step": s,
                "category": CATEGORIES[int(pg.cls_cat[c])], "device": dev,
                "clusters": clusters, "start_cycle": t0, "end_cycle": t1}
        if kind == STEP_MEM:
            nreq = int(pg.step_nreq[s])
            args.update(requests=nreq, bytes=64 * nreq, memory=memory(int(pg.cls_dev[c])),
                        max_in_flight=int(pg.cls_mlp[c]),
                        rank_local=bool(pg.cls_rank_local[c]))
        elif kind == STEP_XFER:
            args.update(wire_bytes=float(pg.step_wire_bytes[s]),
                        direction="out" if int(pg.cls_link[c]) == 0 else "in")
        if int(pg.step_compute_after[s]) > 0 or kind == STEP_COMPUTE:
            args["compute_cycles"] = int(pg.step_compute_after[s])
        name = KIND_NAMES[kind]
        cat = args["category"]

        def emit(pid_tid, a, b, extra=None):
            pid, tid = pid_tid
            events.append({"name": name, "cat": cat, "ph": "X", "pid": pid, "tid": tid,
                           "ts": _us(a, TCK_PS), "dur": _us(b - a, TCK_PS),
                           "args": args if extra is None else {**args, **extra}})

        process, thread, rank = context(ctx)
        emit(rows.tid(process, thread, rank), t0, t1)
        if kind == STEP_XFER:
            arrive = t1 - int(pg.step_compute_after[s])
            route = int(pg.cls_route[c])
            d = "out" if int(pg.cls_link[c]) == 0 else "in"
            if route & SEG_HOST_PORT:
                emit(rows.place("CXL switch", f"host port {d}", 1000, t0, arrive), t0, arrive,
                     {"row": "link"})
            if route & SEG_DEVICE_LINK:
                emit(rows.place(f"device {int(pg.cls_dev[c])}", f"link {d}", 1000, t0,
                                arrive), t0, arrive, {"row": "link"})
        elif kind == STEP_MEM and int(pg.step_nreq[s]) > 0:
            inst = int(pg.cls_dev[c])
            emit(rows.place(memory(inst), "DRAM reads", 2000, t0, t1), t0, t1,
                 {"row": "memory"})
            if int(pg.cls_rank_local[c]):
                emit(rows.place(memory(inst), "rank PUs", 3000, t0, t1), t0, t1,
                     {"row": "rank PUs"})
    # the queries, arrival (admission) to completion
    for q in range(int(info["queries"])):
        a, d = int(st.q_arrival[q]), int(st.q_done[q])
        if a < 0 or d < 0:
            continue
        pid, tid = rows.tid("queries", f"query {q}", q)
        events.append({"name": "query", "cat": "query", "ph": "X", "pid": pid, "tid": tid,
                       "ts": _us(a, TCK_PS), "dur": _us(d - a, TCK_PS),
                       "args": {"query": q, "latency_ns": round((d - a) * TCK_PS / 1e3, 3),
                                "tasks": int(pg.query_task_ptr[q + 1] - pg.query_task_ptr[q]),
                                "clusters": info["clusters"][q],
                                "start_cycle": a, "end_cycle": d}})
    over = int(st.scal[E.SC_TL_OVER])
    if over:
        print(f"cosmos: note: the timeline holds {n} steps; {over} more did not fit "
              f"(at most {E.TL_MAX_RECORDS}): show fewer queries", file=sys.stderr)
    return rows.meta + events


def write_timeline(path, events: list[dict], meta: dict | None = None) -> Path:
    """Write ``events`` as a Chrome trace JSON to a new file ``path`` (a temporary name in its
    folder, then linked to ``path``: FileExistsError if ``path`` exists, even one made after the
    caller's check); ``meta`` goes to ``otherData``."""
    from cosmos_common.outdir import atomic_write

    doc = {"traceEvents": events, "displayTimeUnit": "ns",
           "otherData": {"generator": "cosmos.timeline", "time_unit": "us (DRAM cycles x "
                         "416 ps)", **(meta or {})}}
    text = json.dumps(doc, separators=(",", ":"))
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


# ----------------------------------------------------------------------------- picture
#: colours of the step kinds (and the query spans) in :func:`render_png`
COLORS = {"mem": "#4C78A8", "xfer": "#F58518", "compute": "#54A24B", "query": "#BAB0AC"}


def render_png(trace_json, out_png, *, query: int | None = 0, width: float = 11.0,
               dpi: int = 80) -> Path:
    """Draw the events of the Chrome traces ``trace_json`` (one file written by
    :func:`write_timeline`, or a list of them) as a Gantt chart PNG: one panel per system (the
    label before ``": "`` of the process names, else the file's first system), one bar row
    per thread that has an event, bars coloured by step kind, time from the query's
    admission. ``query``: only that query's events (None: all)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    files = [trace_json] if isinstance(trace_json, (str, os.PathLike)) else list(trace_json)
    panels: dict[str, list] = {}
    for k, f in enumerate(files):
        doc = json.loads(Path(f).read_text(encoding="utf-8"))
        ev = doc["traceEvents"]
        default = ",".join(doc.get("otherData", {}).get("systems", [])) or Path(f).stem
        pname = {e["pid"]: e["args"]["name"] for e in ev
                 if e["ph"] == "M" and e["name"] == "process_name"}
        tname = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
                 if e["ph"] == "M" and e["name"] == "thread_name"}
        for e in ev:
            if e["ph"] != "X" or (query is not None and e["args"].get("query") != query):
                continue
            proc = pname[e["pid"]]
            system, _, proc = proc.rpartition(": ")
            row = (k, e["pid"], e["tid"], f"{proc} / {tname[(e['pid'], e['tid'])]}")
            panels.setdefault(system or default, []).append((row, e))
    if not panels:
        raise ValueError(f"{', '.join(map(str, files))}: no events"
                         + ("" if query is None else f" of query {query}"))
    nrows = [len({r for r, _ in v}) for v in panels.values()]
    fig, axes = plt.subplots(1, len(panels), figsize=(width, 0.2 * max(nrows) + 1.3),
                             squeeze=False)
    for ax, (system, es) in zip(axes[0], panels.items()):
        keys = sorted({r for r, _ in es})
        y = {r: i for i, r in enumerate(keys)}
        t0 = min(e["ts"] for _, e in es)
        span = max(e["ts"] + e["dur"] for _, e in es) - t0
        scale, unit = (1.0, "us") if span > 20 else (1e3, "ns")     # (ts, dur: in us)
        for r, e in es:
            ax.barh(y[r], e["dur"] * scale, left=(e["ts"] - t0) * scale, height=0.75,
                    color=COLORS.get(e["name"], "#888888"), linewidth=0)
        ax.set_yticks(range(len(keys)), [r[3] for r in keys], fontsize=6)
        ax.set_ylim(len(keys) - 0.5, -0.5)
        ax.set_xlabel(f"{unit} since the first event shown (the query's admission)",
                      fontsize=7)
        ax.tick_params(axis="x", labelsize=6)
        ax.set_title(system + ("" if query is None else f", query {query}"), fontsize=8)
        ax.grid(axis="x", linewidth=0.3)
    fig.legend(handles=[Patch(color=v, label=k) for k, v in COLORS.items()],
               loc="lower center", ncol=len(COLORS), fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    out = Path(out_png)
    fig.savefig(out, dpi=dpi)
    plt.close(fig)
    return out


def main(argv=None) -> int:
    """``python -m cosmos.timeline A.json [B.json ...] --png OUT.png [--query Q | --all]``."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m cosmos.timeline",
                                description="draw timeline JSON files (cosmos simulate / "
                                            "replay --timeline) as one Gantt chart PNG")
    p.add_argument("json", nargs="+", help="timeline files (a panel per system)")
    p.add_argument("--png", required=True, help="the picture to write")
    p.add_argument("--query", type=int, default=0, help="the query to draw (default 0)")
    p.add_argument("--all", action="store_true", help="every query of the files")
    a = p.parse_args(argv)
    render_png(a.json, a.png, query=None if a.all else a.query)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
