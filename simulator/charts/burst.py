"""The boundary burst: admitted per second and the trailing-window count, one panel each."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from simulator import metrics
from simulator.charts import LABELS, PALETTE, order, subplots

__all__ = ["boundary_burst_figure"]


def boundary_burst_figure(
    frame: pd.DataFrame, limit: int, window_ms: int, first_s: float, second_s: float
) -> Figure:
    """Admitted per second (bars) and the trailing-window count (line), one panel per algorithm."""
    per_second = metrics.admitted_per_second(frame)
    lo_s = max(0.0, min(first_s, second_s) - 5)
    hi_s = max(first_s, second_s) + window_ms / 1000 + 5
    grid = np.arange(int(lo_s * 1000), int(hi_s * 1000), 100, dtype="int64")
    curve = metrics.rolling_curve(frame, window_ms, grid)
    algorithms = [a for a in order() if a in set(frame["algorithm"])]
    fig, axes = subplots(
        2, len(algorithms), figsize=(4 * len(algorithms), 6.4), sharey="row", squeeze=False
    )
    seam_lo, seam_hi = min(first_s, second_s) - 3, max(first_s, second_s) + 4
    ymax = max(2 * limit, int(curve["in_window"].max())) * 1.12
    for col, algorithm in enumerate(algorithms):
        colour = PALETTE[algorithm]
        top, bottom = axes[0, col], axes[1, col]
        ps = per_second[per_second["algorithm"] == algorithm]
        top.bar(ps["second"], ps["admitted"], width=0.8, color=colour, label="admitted")
        top.bar(
            ps["second"],
            ps["refused"],
            width=0.8,
            bottom=ps["admitted"],
            color="#cccccc",
            label="refused",
        )
        top.set_xlim(seam_lo, seam_hi)
        top.set_ylim(0, ymax)
        top.set_xlabel("second of the run (s)")
        admitted = int(ps["admitted"].sum())
        top.set_title(
            f"{LABELS[algorithm]}\nadmitted {admitted} of {int(ps[['admitted', 'refused']].sum().sum())}",
            fontsize=10,
        )
        c = curve[curve["algorithm"] == algorithm]
        bottom.plot(c["t_ms"] / 1000, c["in_window"], color=colour, lw=2)
        bottom.axhline(limit, color="black", lw=1, ls="--", label=f"limit ({limit})")
        peak = int(c["in_window"].max())
        bottom.set_title(
            f"most in any {window_ms / 1000:g} s: {peak} ({peak / limit:.2f}x limit)", fontsize=10
        )
        bottom.set_xlim(lo_s, hi_s)
        bottom.set_ylim(0, ymax)
        bottom.set_xlabel("time (s)")
    axes[0, 0].set_ylabel("requests in that second")
    axes[1, 0].set_ylabel(f"admitted in trailing {window_ms / 1000:g} s")
    axes[0, 0].legend(loc="upper left", fontsize=8, frameon=False)
    axes[1, 0].legend(loc="upper right", fontsize=8, frameon=False)
    fig.suptitle(
        f"Boundary burst: {limit} requests at second {first_s:g} and {limit} at second {second_s:g}, "
        f"limit {limit} per {window_ms / 1000:g} s — the clock-grid window lets twice the limit through",
        fontsize=11,
    )
    fig.tight_layout()
    return fig
