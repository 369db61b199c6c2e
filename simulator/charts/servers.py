"""Replay speed on a real server: one round trip per decision, pipelined, the ``limits`` package."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from simulator.charts import LABELS, PALETTE, subplots

__all__ = ["replay_speed_figure"]


def replay_speed_figure(figures: pd.DataFrame) -> Figure:
    """Decisions per second on a real server: one round trip, pipelined, the ``limits`` package.

    ``figures`` is what :func:`simulator.bench.servers.bench_servers` returns, as a frame.
    """
    methods = {
        "one_round_trip_per_s": "one round trip\nper decision",
        "pipelined_per_s": "pipelined replay",
        "limits_per_s": "limits package",
    }
    fig, ax = subplots(figsize=(8, 4.2))
    algorithms = list(figures["algorithm"])
    width = 0.8 / len(algorithms)
    for i, algorithm in enumerate(algorithms):
        row = figures[figures["algorithm"] == algorithm].iloc[0]
        values = [float(row[m]) for m in methods]
        x = np.arange(len(methods)) + (i - (len(algorithms) - 1) / 2) * width
        bars = ax.bar(x, values, width, color=PALETTE[algorithm], label=LABELS[algorithm])
        ax.bar_label(bars, labels=[f"{v:,.0f}" for v in values], fontsize=9)
    ax.set_xticks(np.arange(len(methods)), list(methods.values()))
    ax.set_yscale("log")
    ax.set_ylabel("decisions per second (log scale)")
    ax.set_title("Same trace, same server, same decisions: pipelining sets the pace", fontsize=11)
    ax.legend(frameon=False, fontsize=9, loc="upper left")
    fig.tight_layout()
    return fig
