"""The boundary burst: admitted per second and the trailing-window count, a row per algorithm."""

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
    """Per algorithm, one row: requests per second (admitted in its colour, refused in grey, each
    burst's admitted count written on it) and the trailing-window count against the limit.
    Sized for a notebook column (10 in wide), however many algorithms the registry holds."""
    per_second = metrics.admitted_per_second(frame)
    lo_s = max(0.0, min(first_s, second_s) - 5)
    hi_s = max(first_s, second_s) + window_ms / 1000 + 5
    grid = np.arange(int(lo_s * 1000), int(hi_s * 1000), 100, dtype="int64")
    curve = metrics.rolling_curve(frame, window_ms, grid)
    algorithms = [a for a in order() if a in set(frame["algorithm"])]
    n = len(algorithms)
    fig, axes = subplots(
        n, 2, figsize=(10, 1.9 * n + 1.1), sharex="col", squeeze=False,
        gridspec_kw={"width_ratios": [1, 1.5]},
    )  # fmt: skip
    seam_lo, seam_hi = min(first_s, second_s) - 3, max(first_s, second_s) + 4
    ymax = max(2 * limit, int(curve["in_window"].max())) * 1.3
    bursts = {int(first_s), int(second_s)}
    for row, algorithm in enumerate(algorithms):
        colour = PALETTE[algorithm]
        left, right = axes[row, 0], axes[row, 1]
        ps = per_second[per_second["algorithm"] == algorithm]
        left.bar(ps["second"], ps["admitted"], width=0.8, color=colour, label="admitted")
        left.bar(
            ps["second"], ps["refused"], width=0.8, bottom=ps["admitted"], color="#cccccc",
            label="refused",
        )  # fmt: skip
        for second, admitted in zip(ps["second"], ps["admitted"], strict=True):
            if int(second) in bursts:  # a count of 2 is a sliver of a bar: say it in words
                left.annotate(
                    f"{int(admitted)}", (second, admitted), xytext=(0, 3),
                    textcoords="offset points", ha="center", va="bottom", fontsize=8,
                    color="black",
                )  # fmt: skip
        left.set_xlim(seam_lo, seam_hi)
        left.set_ylim(0, ymax)
        left.set_ylabel("requests\nthat second", fontsize=9)
        total = int(ps[["admitted", "refused"]].sum().sum())
        left.set_title(
            f"{LABELS[algorithm]}: admitted {int(ps['admitted'].sum())} of {total}", fontsize=10
        )
        left.legend(
            loc="upper left",
            fontsize=8,
            frameon=False,
            ncol=2,
            title_fontsize=8,
            title="number on a bar: admitted that second",
        )
        c = curve[curve["algorithm"] == algorithm]
        right.plot(c["t_ms"] / 1000, c["in_window"], color=colour, lw=2)
        right.axhline(limit, color="black", lw=1, ls="--", label=f"limit ({limit})")
        peak = int(c["in_window"].max())
        right.set_title(
            f"most in any {window_ms / 1000:g} s: {peak} ({peak / limit:.2f}× the limit)",
            fontsize=10,
        )
        right.set_xlim(lo_s, hi_s)
        right.set_ylim(0, ymax)
        right.set_ylabel(f"admitted in\ntrailing {window_ms / 1000:g} s", fontsize=9)
        right.legend(loc="upper left", fontsize=8, frameon=False)
    axes[-1, 0].set_xlabel("second of the run (s)")
    axes[-1, 1].set_xlabel("time (s)")
    fig.suptitle(_title(frame, curve, limit, window_ms, first_s, second_s), fontsize=11)
    # a little more than tight_layout's own room under the two-line title, so that no font or
    # renderer puts its second line onto the first row's panel titles
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.3 / fig.get_figheight()))
    return fig


def _title(
    frame: pd.DataFrame,
    curve: pd.DataFrame,
    limit: int,
    window_ms: int,
    first_s: float,
    second_s: float,
) -> str:
    """What was sent, and what the run shows: the most any algorithm let through in a window."""
    one = frame[(frame["algorithm"] == frame["algorithm"].iloc[0])]
    one = one[one["client"] == one["client"].iloc[0]]
    first = int((one["t_ms"] == round(first_s * 1000)).sum())
    second = int((one["t_ms"] == round(second_s * 1000)).sum())
    peaks = curve.groupby("algorithm", sort=False)["in_window"].max()
    worst = str(peaks.idxmax())
    held = peaks[peaks <= limit]
    claim = f"{LABELS[worst]} lets {peaks[worst] / limit:.2f}x the limit through in one window"
    if peaks[worst] <= limit:
        claim = "every algorithm holds the limit in every window"
    elif len(held):
        claim += f"; {len(held)} of {len(peaks)} hold the limit"
    return (
        f"Boundary burst: {first} requests at second {first_s:g} and {second} at second "
        f"{second_s:g}, limit {limit} per {window_ms / 1000:g} s\n{claim}"
    )
