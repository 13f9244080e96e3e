"""One simulation as a sweep task: a preset, a trace file and overrides in; a flat dict out.

:func:`simulate_task` is a module-level function of plain arguments, so it runs the same in
this process, in local worker processes and on Dask workers (which must see the trace path).
"""

from __future__ import annotations

from typing import Any

__all__ = ["simulate_task", "flatten_summary"]


def flatten_summary(summary: dict) -> dict:
    """``summary()`` of cosmos.metrics with nested dicts flattened to ``outer_inner`` keys."""
    flat: dict[str, Any] = {}
    for k, v in summary.items():
        if isinstance(v, dict):
            for kk, vv in v.items():
                flat[f"{k}_{kk}" if not k.endswith("_ns") else f"{k[:-3]}_{kk}_ns"] = vv
        elif isinstance(v, (list, tuple)):
            flat[k] = ";".join(f"{x:.6g}" if isinstance(x, float) else str(x) for x in v)
        else:
            flat[k] = v
    return flat


def simulate_task(system: str, trace_path: str, *, overrides: dict | None = None,
                  num_queries: int | None = None, mode: str = "closed",
                  rate_qps: float | None = None, max_inflight: int | None = None,
                  placement: str | None = None, seed: int = 0, warmup: float = 0.1,
                  tags: dict | None = None) -> dict:
    """Simulate preset ``system`` (with dotted-field ``overrides``) on the trace at ``trace_path``.

    Returns the flattened summary (qps, latency percentiles in ns, breakdown in ns, link and
    DRAM figures) plus the ``tags`` given, so a sweep's rows carry their own coordinates.
    """
    from cosmos.config import with_overrides
    from cosmos.presets import get_preset
    from cosmos.simulate import simulate

    cfg = get_preset(system)
    ov = dict(overrides or {})
    if placement is not None:
        ov["placement"] = placement
    if ov:
        cfg = with_overrides(cfg, ov)
    res = simulate(cfg, str(trace_path), num_queries=num_queries, mode=mode, rate_qps=rate_qps,
                   max_inflight=max_inflight, seed=seed, progress=False)
    row = dict(tags or {})
    row.update(flatten_summary(res.summary(warmup=warmup)))
    return row
