"""Two-parameter maps of the strongest levers on the headline ratios.

The sensitivity study (:mod:`experiments.figures.sensitivity`) varies one parameter at a time;
its widest swings come from the switch's upstream bandwidth (Base reads every line through
it), the host's cores (Base and CXL-ANNS search on them) and the search contexts of each
device's GPC (Cosmos searches on them). This experiment varies them two at a time, over the
sensitivity table's own ranges, and maps each headline ratio:

- ``upstream_x_contexts``: ``switch.upstream_ports`` (x16 ports of 63 GB/s) x GPC contexts per
  device;
- ``host_x_contexts``: ``host.threads`` (host cores) x GPC contexts per device.

GPC contexts per device are ``gpc.cores x gpc.threads_per_core`` (the engine runs one search per
context; a core's threads share nothing in its timing, only its energy). The levels are made
from the sensitivity table's levels of those two fields (cores 4 / 8 / 16, threads 1 / 2 / 4):
4 = 4 x 1, 8 = 8 x 1, 16 = 8 x 2 (the default), 32 = 8 x 4 and 64 = 16 x 4 (:func:`gpc_split`).
The other axes take the table's low / default / high levels and, except at the tiny scale,
the geometric midpoints between the default and each end (:func:`axis_levels`): upstream
ports 0.5 / 0.71 / 1 / 2 / 4, host cores 16 / 23 / 32 / 44 / 60. A level whose
queries in flight the scale's trace cannot keep in a steady state (Cosmos keeps one query per
context of its four devices in flight, :func:`experiments.figures.sensitivity.queries_for`) is
left out and named in the summary.

At every grid point Base, CXL-ANNS and Cosmos run on both datasets, each simulation replaying
the scale's ``sweep_queries`` first queries (more where the point keeps more in flight), as
the sensitivity study's do. Outputs (plots and summary read only the CSVs):

- ``lever_maps.csv``: one row per map x grid point x dataset x system (QPS, its interval,
  steady state, queries simulated and in flight);
- ``lever_ratios.csv``: one row per map x grid point x dataset: Cosmos / Base and Cosmos /
  CXL-ANNS, the paper's figures and whether ours is within 15 % of each;
- ``lever_map_upstream_x_contexts.png`` and ``lever_map_host_x_contexts.png``: per map, a
  contour map of each ratio per dataset, the paper's figure drawn as a contour line with its
  15 % band, the defaults marked;
- ``summary.md``: each map's range, extremes and the grid points within 15 % of the paper.

Cost at ``--scale tiny``: 18 grid points (3 x 3 per map: the table's low / default / high of
the first axis, 4 / 8 / 16 contexts, the tiny trace's 100 queries being too few for 32 and 64;
the default x-level's three are on both maps), 90 simulations. Base and CXL-ANNS read no GPC
figure and Cosmos no host core count, so many of them repeat another point's simulation: the
sweep finds those by probing every task (:mod:`experiments.harness.equivalent`) and runs 38
of the 90 (all 52 repeats, simulated in full once as a check, equal their points' in every
figure).
"""

from __future__ import annotations

import math
import sys
from dataclasses import replace
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np
import pandas as pd

from experiments.figures import sensitivity as S
from experiments.figures.parts import sensitivity_regions as R
from experiments.harness.common import pyplot, save_figure, write_csv
from experiments.harness.equivalent import sweep_once
from experiments.harness.sim import simulate_task, simulation_identity

NAME = "lever_maps"
TITLE = "Headline ratios over two levers at a time (upstream ports, host cores, GPC contexts)"
#: the systems the two ratios need
SYSTEMS = ("base", "cxl-anns", "cosmos")
#: the contexts-per-device axis, made of these two fields (:func:`gpc_split`)
CONTEXTS = "gpc.contexts_per_device"
#: map name -> (x parameter, y parameter)
MAPS = {"upstream_x_contexts": ("switch.upstream_ports", CONTEXTS),
        "host_x_contexts": ("host.threads", CONTEXTS)}
#: the ratios mapped: column of lever_ratios.csv -> (the paper's figures by dataset, label)
RATIOS = {"cosmos_vs_base": (R.PAPER["cosmos_vs_base"], "Cosmos / Base"),
          "cosmos_vs_cxl_anns": (R.PAPER["cosmos_vs_cxl_anns"], "Cosmos / CXL-ANNS")}


def _param(key: str) -> S.Parameter:
    (p,) = [p for p in S.PARAMETERS if p.key == key]
    return p


def _default(key: str) -> float:
    """The default value of a sensitivity parameter (its points()' default level)."""
    from experiments.harness.workloads import get_scale

    (pt,) = [pt for pt in S.points(_param(key), get_scale("tiny")) if pt.level == "default"]
    return float(pt.value)


def overrides_at(key: str, value, scale) -> dict:
    """The config overrides that put sensitivity parameter ``key`` at ``value`` (its own rule
    in :func:`experiments.figures.sensitivity.points`: ``switch.upstream_ports`` becomes the
    upstream bandwidth, a config field itself)."""
    for pt in S.points(replace(_param(key), low=value), scale):
        if pt.value == value:
            return dict(pt.overrides)
    raise AssertionError(f"{key}={value}: no point")   # pragma: no cover - points() keeps it


def gpc_split(contexts: int) -> tuple[int, int]:
    """(gpc.cores, gpc.threads_per_core) of ``contexts`` search contexts per device: from the
    default 8 x 2, threads move first (within the sensitivity table's 1-4), then cores (within
    its 4-16): 4 = 4 x 1, 8 = 8 x 1, 16 = 8 x 2, 32 = 8 x 4, 64 = 16 x 4."""
    cores = int(_default("gpc.cores"))
    t_lo, t_hi = int(_param("gpc.threads_per_core").low), int(_param("gpc.threads_per_core").high)
    c_lo, c_hi = int(_param("gpc.cores").low), int(_param("gpc.cores").high)
    t = min(t_hi, max(t_lo, contexts // cores))
    c = contexts // t
    if c * t != contexts or not (c_lo <= c <= c_hi and t_lo <= t <= t_hi):
        raise ValueError(f"{contexts} GPC contexts per device are not cores x threads within "
                         f"the sensitivity ranges (cores {c_lo}-{c_hi}, threads {t_lo}-{t_hi})")
    return c, t


def axis_levels(key: str, scale_name: str) -> list:
    """The levels of one axis: the sensitivity table's low, default and high, and, except at
    the tiny scale, the geometric midpoints between the default and each end (integers for
    counts)."""
    if key == CONTEXTS:
        cores, threads = _param("gpc.cores"), _param("gpc.threads_per_core")
        low, high = int(cores.low * threads.low), int(cores.high * threads.high)
        default = int(_default("gpc.cores") * _default("gpc.threads_per_core"))
    else:
        p = _param(key)
        low, high, default = float(p.low), float(p.high), _default(key)
    levels = [low, default, high]
    if scale_name != "tiny" or key == CONTEXTS:
        levels += [math.sqrt(low * default), math.sqrt(default * high)]
    integer = key == CONTEXTS or isinstance(_param(key).low, int)
    if key == CONTEXTS:       # powers of two: cores x threads of the table's levels
        levels = [2 ** round(math.log2(v)) for v in levels]
    elif integer:
        levels = [int(round(v)) for v in levels]
    else:
        levels = [round(v, 2) for v in levels]
    return sorted(set(levels))


def axis_overrides(key: str, value, scale) -> dict:
    """Config overrides that put one axis at ``value``."""
    if key == CONTEXTS:
        c, t = gpc_split(int(value))
        return {**overrides_at("gpc.cores", c, scale),
                **overrides_at("gpc.threads_per_core", t, scale)}
    return overrides_at(key, value, scale)


def point_overrides(x_key: str, x, y_key: str, y, scale) -> dict:
    """Config overrides of one grid point."""
    return {**axis_overrides(x_key, x, scale), **axis_overrides(y_key, y, scale)}


def grid(scale) -> tuple[list[dict], list[str]]:
    """The grid points of every map at ``scale`` (dicts: map, x and y parameter and value,
    overrides) and the levels left out (their queries in flight need more queries than the
    scale's trace holds for a steady state)."""
    from cosmos.config import with_overrides
    from cosmos.presets import get_preset
    from cosmos.simulate import default_max_inflight

    pts, dropped = [], []
    for name, (x_key, y_key) in MAPS.items():
        levels = {k: axis_levels(k, scale.name) for k in (x_key, y_key)}
        keep = {}
        for key, vals in levels.items():
            keep[key] = []
            for v in vals:
                ov = axis_overrides(key, v, scale)
                worst = max(default_max_inflight(with_overrides(get_preset(s), ov))
                            for s in SYSTEMS)
                if S.queries_for(None, worst, scale.sweep_queries) > scale.num_queries:
                    dropped.append(f"{key}={v:g} ({worst} queries in flight; the trace holds "
                                   f"{scale.num_queries})")
                else:
                    keep[key].append(v)
        for x in keep[x_key]:
            for y in keep[y_key]:
                pts.append({"map": name, "x_parameter": x_key, "x_value": x,
                            "y_parameter": y_key, "y_value": y,
                            "overrides": point_overrides(x_key, x, y_key, y, scale)})
    return pts, sorted(set(dropped))


def simulation_plan(ctx, pts: list, trace_path=None) -> tuple[list, list]:
    """(tasks, wanted) of the grid points ``pts`` on every dataset: the distinct simulations
    (the default point is on both maps) and, per (point, dataset, system), the index of its
    task. ``trace_path(family)``: the trace each dataset's runs replay (default: the
    context's trace file, built if need be; the plan passes one that builds nothing)."""
    from cosmos.config import with_overrides
    from cosmos.presets import get_preset
    from cosmos.simulate import default_max_inflight

    tasks, where, wanted = [], {}, []
    for fam in ctx.families:
        path = str(trace_path(fam) if trace_path else ctx.trace_file(fam))
        for pt in pts:
            for s in SYSTEMS:
                inflight = default_max_inflight(with_overrides(get_preset(s), pt["overrides"]))
                task = dict(system=s, trace_path=path, overrides=pt["overrides"],
                            num_queries=S.queries_for(None, inflight, ctx.scale.sweep_queries),
                            max_inflight=inflight, seed=ctx.seed, warmup=S.WARMUP,
                            tags={"dataset": fam, "system": s})
                ident = repr(simulation_identity(task))
                if ident not in where:                 # the default point is on both maps
                    where[ident] = len(tasks)
                    tasks.append(task)
                wanted.append((pt, fam, s, where[ident]))
    return tasks, wanted


def plan_sweep(ctx) -> dict:
    """The estimate ``cosmos reproduce --dry-run`` gives of this experiment's own sweep
    (experiments.harness.plan): the simulations of :func:`simulation_plan`, each of the
    plan's ``REQUESTS_PER_QUERY`` of the scale per query (the grid moves hardware, not the
    trace)."""
    from experiments.harness.plan import requests_per_query, sweep_estimate, sweep_requests

    sc = ctx.scale
    pts, _ = grid(sc)
    tasks, wanted = simulation_plan(ctx, pts, trace_path=lambda fam: fam)
    lo, hi = sweep_requests(tasks, sc.num_queries,
                            lambda t: requests_per_query(sc, t["tags"]["dataset"]))
    return sweep_estimate(f"at most {len(tasks)} simulations for {len(wanted)} rows of "
                          f"{len(pts)} grid points (repeats of another point's simulation are "
                          "merged after probing: Base and CXL-ANNS read no GPC figure, Cosmos "
                          "no host core count)", lo, hi, ctx)


def run(ctx) -> dict:
    """Simulate Base, CXL-ANNS and Cosmos at every grid point on every dataset; write the
    CSVs."""
    pts, dropped = grid(ctx.scale)
    tasks, wanted = simulation_plan(ctx, pts)
    # Base and CXL-ANNS read no GPC figure, Cosmos no host core count: each such repeat of
    # another point's simulation runs once (experiments.harness.equivalent)
    rows, _ = sweep_once(ctx, simulate_task, tasks, desc="lever maps")
    keep = ("qps", "qps_ci_low", "qps_ci_high", "steady_state", "num_queries", "max_inflight")
    records = []
    for pt, fam, s, i in wanted:
        c, t = gpc_split(int(pt["y_value"]))
        records.append({"map": pt["map"], "x_parameter": pt["x_parameter"],
                        "x_value": pt["x_value"], "y_parameter": pt["y_parameter"],
                        "y_value": pt["y_value"], "gpc_cores": c, "gpc_threads_per_core": t,
                        "dataset": fam, "system": s, **{k: rows[i][k] for k in keep}})
    df = pd.DataFrame(records)
    write_csv(ctx.out / "lever_maps.csv", df)
    ratios = ratio_table(df)
    ratios["dropped_levels"] = "; ".join(dropped)
    write_csv(ctx.out / "lever_ratios.csv", ratios)
    out = {}
    for (name, fam), g in ratios.groupby(["map", "dataset"], sort=False):
        for col in RATIOS:
            out[f"{name}_{fam}_{col}"] = f"{g[col].min():.2f}-{g[col].max():.2f}"
    return out


def ratio_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per map, grid point and dataset: Cosmos over Base and over CXL-ANNS, the paper's
    figures and whether ours is within :data:`experiments.figures.parts.sensitivity_regions.TOLERANCE`."""
    key = ["map", "x_parameter", "x_value", "y_parameter", "y_value", "dataset"]
    piv = df.pivot_table(index=key, columns="system", values="qps", aggfunc="first",
                         sort=False).reset_index()
    steady = df.groupby(key, sort=False)["steady_state"].all().reset_index()
    piv = piv.merge(steady, on=key)
    out = piv[key].copy()
    out["cosmos_vs_base"] = piv["cosmos"] / piv["base"]
    out["cosmos_vs_cxl_anns"] = piv["cosmos"] / piv["cxl-anns"]
    for col, (paper, _) in RATIOS.items():
        out[f"paper_{col}"] = [paper.get(f, float("nan")) for f in out.dataset]
        out[f"{col}_within"] = (out[col] / out[f"paper_{col}"] - 1).abs() <= R.TOLERANCE
    out["steady_state"] = piv["steady_state"]
    return out


def _label(key: str) -> str:
    if key == CONTEXTS:
        return "GPC contexts per device (cores x threads)"
    what, unit = S.describe(key)
    return f"{key} ({unit})" if unit else key


def plot(folder) -> None:
    """Per map: a contour map of each ratio (rows) per dataset (columns), log2 axes, the
    paper's figure as a dashed contour with its 15 % band dotted, the defaults marked."""
    plt = pyplot()
    folder = Path(folder)
    r = pd.read_csv(folder / "lever_ratios.csv")
    for name, m in r.groupby("map", sort=False):
        fams = list(dict.fromkeys(m.dataset))
        fig, axes = plt.subplots(len(RATIOS), len(fams),
                                 figsize=(4.6 * len(fams), 3.6 * len(RATIOS)), squeeze=False)
        x_key, y_key = m.x_parameter.iloc[0], m.y_parameter.iloc[0]
        for i, (col, (paper, label)) in enumerate(RATIOS.items()):
            for j, fam in enumerate(fams):
                ax = axes[i][j]
                g = m[m.dataset == fam].pivot_table(index="y_value", columns="x_value",
                                                    values=col).sort_index().sort_index(axis=1)
                X, Y = np.meshgrid(np.log2(g.columns.to_numpy(float)),
                                   np.log2(g.index.to_numpy(float)))
                Z = g.to_numpy(float)
                target = paper.get(fam)
                if Z.shape[0] >= 2 and Z.shape[1] >= 2:
                    cs = ax.contourf(X, Y, Z, levels=12, cmap="viridis")
                    fig.colorbar(cs, ax=ax, shrink=0.85)
                    if target is not None:
                        band = [v for v in (target * (1 - R.TOLERANCE), target,
                                            target * (1 + R.TOLERANCE))
                                if np.nanmin(Z) < v < np.nanmax(Z)]
                        if band:
                            c = ax.contour(X, Y, Z, levels=sorted(band), colors="w",
                                           linestyles=["dotted" if v != target else "dashed"
                                                       for v in sorted(band)], linewidths=1.2)
                            ax.clabel(c, fmt="%.2f", fontsize=6)
                ax.scatter(X, Y, s=6, color="k")
                for xv, yv, zv in zip(X.ravel(), Y.ravel(), Z.ravel()):
                    ax.annotate(f"{zv:.1f}", (xv, yv), fontsize=6, color="k",
                                xytext=(2, 2), textcoords="offset points",
                                bbox={"fc": "w", "alpha": 0.7, "lw": 0, "pad": 0.5})
                dx = np.log2(_default(x_key)) if x_key != CONTEXTS else None
                dy = np.log2(_default("gpc.cores") * _default("gpc.threads_per_core"))
                ax.plot([dx], [dy], marker="*", ms=11, color="C3", ls="none")
                for lim, v in ((ax.set_xlim, X[0]), (ax.set_ylim, Y[:, 0])):
                    pad = 0.08 * max(float(v.max() - v.min()), 1.0)   # edge labels inside
                    lim(float(v.min()) - pad, float(v.max()) + pad)
                ax.set_xticks(X[0], [f"{v:g}" for v in g.columns])
                ax.set_yticks(Y[:, 0], [f"{v:g}" for v in g.index])
                ax.set_xlabel(_label(x_key), fontsize=8)
                ax.set_ylabel(_label(y_key), fontsize=8)
                where = ("not reached on this grid" if target is None or not
                         (np.nanmin(Z) <= target <= np.nanmax(Z)) else "dashed")
                ax.set_title(f"{label}, {fam}: paper {target}x ({where}); star: defaults",
                             fontsize=8)
        fig.tight_layout()
        save_figure(fig, folder, f"lever_map_{name}")
        plt.close(fig)


def summary_md(folder) -> str:
    folder = Path(folder)
    r = pd.read_csv(folder / "lever_ratios.csv")
    lines = ["## Two-parameter maps of the strongest levers", "",
             "Each ratio over a grid of two parameters, everything else at the default "
             f"(paper: Cosmos / Base {R.PAPER['cosmos_vs_base']['sift']}x on SIFT1B, "
             f"{R.PAPER['cosmos_vs_base']['deep']}x on DEEP1B; Cosmos / CXL-ANNS "
             f"{R.PAPER['cosmos_vs_cxl_anns']['sift']}x). GPC contexts per device = cores x "
             "threads per core.", "",
             "| map | dataset | ratio | paper | at the defaults | lowest (where) | "
             "highest (where) | grid points within 15 % |", "|---|---|---|---|---|---|---|---|"]
    for (name, fam), g in r.groupby(["map", "dataset"], sort=False):
        x_key = g.x_parameter.iloc[0]
        dflt = g[(g.x_value == _default(x_key)) &
                 (g.y_value == _default("gpc.cores") * _default("gpc.threads_per_core"))]
        for col, (paper, label) in RATIOS.items():
            lo, hi = g.loc[g[col].idxmin()], g.loc[g[col].idxmax()]
            within = g[g[f"{col}_within"].astype(bool)]
            cells = ", ".join(f"({v.x_value:g}, {v.y_value:g}): {getattr(v, col):.2f}"
                              for v in within.itertuples()) or "none"
            d = f"{dflt[col].iloc[0]:.2f}" if len(dflt) else "-"
            lines.append(f"| {name} ({x_key} x contexts) | {fam} | {label} | "
                         f"{paper.get(fam, float('nan'))} | {d} | {lo[col]:.2f} "
                         f"({lo.x_value:g}, {lo.y_value:g}) | {hi[col]:.2f} "
                         f"({hi.x_value:g}, {hi.y_value:g}) | {cells} |")
    dropped = str(r["dropped_levels"].fillna("").iloc[0]) if len(r) else ""
    if dropped:
        lines += ["", f"Levels left out (too few queries in the trace for their queries in "
                  f"flight): {dropped}."]
    bad = r[~r.steady_state.astype(bool)]
    if len(bad):
        lines += ["", f"{len(bad)} grid points have a run without a steady state (QPS over the "
                  "whole run)."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    from experiments.harness.runner import script_main

    raise SystemExit(script_main(NAME))
