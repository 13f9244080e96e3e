"""The tornado plots of the sensitivity study, drawn from the rows of ``sensitivity.csv``.

:func:`tornado_figure` draws one headline ratio (Cosmos / Base or Cosmos / CXL-ANNS), a panel
per dataset: the ratio at each parameter's low and high level against the default, the widest
swing on top, the paper's figure and its band of
:data:`~experiments.figures.parts.sensitivity_regions.TOLERANCE` behind; where the rows have
the ratios' 95 % intervals, each bar's end with its interval as a whisker and the default's
interval dotted. The experiment experiments/figures/sensitivity.py reads its CSV, saves each
figure and closes it (its ``plot``); this module imports nothing of it.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from experiments.figures.parts.sensitivity_regions import LEVELS, PAPER, TOLERANCE, fmt_value
from experiments.harness.common import pyplot


def tornado_figure(cos: pd.DataFrame, ratio: str):
    """The tornado of headline ratio ``ratio`` (a key of
    :data:`~experiments.figures.parts.sensitivity_regions.PAPER`), a panel per dataset, from
    ``cos``, the Cosmos rows of ``sensitivity.csv``: a matplotlib figure, not saved. Where the
    rows have the ratio's intervals, each bar's end carries its 95 % interval as an error
    whisker and the default's interval is drawn as two dotted lines about its line; rows
    written before the intervals (or levels without one) draw the bars alone."""
    plt = pyplot()
    fams = list(dict.fromkeys(cos.dataset))
    nan = float("nan")
    col = f"qps_vs_{ratio.split('_vs_')[1]}"
    c_lo, c_hi = f"{col}_ci_low", f"{col}_ci_high"
    has_ci = c_lo in cos and c_hi in cos and cos[[c_lo, c_hi]].notna().any().any()
    nparam = cos.parameter.nunique()
    fig, axes = plt.subplots(1, len(fams), figsize=(5.2 * len(fams), 1.2 + 0.3 * nparam),
                             squeeze=False)
    for ax, fam in zip(axes[0], fams):
        sub = cos[cos.dataset == fam]
        drow = sub[sub.level == "default"].iloc[0]
        d = float(drow[col])

        def ends(r):
            if r is None:
                return d, nan, nan
            return (float(getattr(r, col)), float(getattr(r, c_lo, nan)),
                    float(getattr(r, c_hi, nan)))

        bars = []
        for param, g in sub.groupby("parameter", sort=False):
            by = {r.level: r for r in g.itertuples()}
            lo, hi = ends(by.get("low")), ends(by.get("high"))
            label = f"{param} ({'/'.join(fmt_value(by[lv].value) for lv in LEVELS if lv in by)})"
            bars.append((max(abs(lo[0] - d), abs(hi[0] - d)), label, lo, hi,
                         "low" in by, "high" in by))
        bars.sort(key=lambda b: (b[0], b[1]))
        y = np.arange(len(bars))
        ax.barh(y, [b[2][0] - d for b in bars], left=d, height=0.7, color="C0",
                label="low level")
        ax.barh(y, [b[3][0] - d for b in bars], left=d, height=0.4, color="C1",
                label="high level")
        if has_ci:
            first = True
            for k, color in ((2, "navy"), (3, "darkred")):
                keep = [i for i, b in enumerate(bars) if b[k + 2]
                        and not math.isnan(b[k][1]) and not math.isnan(b[k][2])]
                if not keep:
                    continue
                x = np.array([bars[i][k][0] for i in keep])
                err = np.array([[x_ - bars[i][k][1] for x_, i in zip(x, keep)],
                                [bars[i][k][2] - x_ for x_, i in zip(x, keep)]])
                err = np.where(np.isfinite(err), np.maximum(err, 0.0), 0.0)
                ax.errorbar(x, y[keep], xerr=err, fmt="none", ecolor=color, elinewidth=0.9,
                            capsize=2.5, zorder=3,
                            label="95 % interval of the level's ratio" if first else None)
                first = False
            d_lo, d_hi = float(drow.get(c_lo, nan)), float(drow.get(c_hi, nan))
            if np.isfinite(d_lo) and np.isfinite(d_hi):
                ax.axvline(d_lo, color="k", ls=":", lw=0.8, zorder=3,
                           label="95 % interval at the defaults")
                ax.axvline(d_hi, color="k", ls=":", lw=0.8, zorder=3)
        ax.axvline(d, color="k", lw=0.8)
        target = PAPER[ratio].get(fam)
        if target is not None:
            ax.axvspan(target * (1 - TOLERANCE), target * (1 + TOLERANCE), color="0.88",
                       zorder=0, label=f"the paper's figure +-{TOLERANCE:.0%}")
            ax.axvline(target, color="0.4", ls="--", lw=0.8)
        ax.set_yticks(y, [b[1] for b in bars], fontsize=7)
        ax.set_xlabel(f"Cosmos QPS / {'Base' if ratio.endswith('base') else 'CXL-ANNS'} QPS")
        paper = "" if target is None else f", paper {target}x"
        ax.set_title(f"{fam}: ours {d:.2f}x at the defaults{paper}", fontsize=9)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, frameon=False, fontsize=7)
    height = fig.get_figheight()
    fig.tight_layout(rect=(0, (0.35 if len(handles) <= 3 else 0.6) / height, 1, 1))
    return fig
