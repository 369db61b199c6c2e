"""Charts: decision logs and metric frames in, matplotlib Figures out.

One colour and one display name per algorithm, used by every chart and notebook. Charts compute
nothing a metric could; they lay out what :mod:`simulator.metrics` produced.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from simulator import metrics
from simulator.algorithms import ALGORITHMS

__all__ = [
    "PALETTE",
    "LABELS",
    "ROLE_COLOURS",
    "order",
    "boundary_burst_figure",
    "save",
    "subplots",
]

#: Colours of roles that are not algorithms, so that no algorithm's colour is borrowed.
ROLE_COLOURS = {
    "exact": "#555555",
    "local": "#9467bd",  # a counter inside each worker
    "split": "#8c564b",  # INCR and PEXPIRE as two commands
    "shared_queue": "#7f7f7f",  # one queue for everybody
    "per_room": "#17becf",  # one queue per room
    "variant": "#bcbd22",  # a tuned variant of a design
}


class _Palette(Mapping[str, str]):
    """An algorithm's colour from the registry, or a role's from :data:`ROLE_COLOURS`."""

    def __getitem__(self, name: str) -> str:
        cls = ALGORITHMS.get(name)
        return cls.colour if cls is not None else ROLE_COLOURS[name]

    def __iter__(self) -> Iterator[str]:
        return iter([*ALGORITHMS, *ROLE_COLOURS])

    def __len__(self) -> int:
        return len(ALGORITHMS) + len(ROLE_COLOURS)


class _Labels(Mapping[str, str]):
    def __getitem__(self, name: str) -> str:
        return ALGORITHMS[name].label

    def __iter__(self) -> Iterator[str]:
        return iter(ALGORITHMS)

    def __len__(self) -> int:
        return len(ALGORITHMS)


#: One colour per algorithm (and per role), on every chart and notebook.
PALETTE: Mapping[str, str] = _Palette()
#: One display name per algorithm.
LABELS: Mapping[str, str] = _Labels()


def order() -> tuple[str, ...]:
    """The algorithms in the order charts show them: the registry's."""
    return tuple(ALGORITHMS)


plt.rcParams.update(
    {
        "figure.dpi": 100,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "svg.hashsalt": "ratelimit-workbench",  # same chart, same SVG bytes
    }
)


def subplots(*args: Any, **kwargs: Any) -> tuple[Figure, Any]:
    """Like ``plt.subplots`` but outside pyplot's registry, so a notebook shows the figure once
    (as the cell's value) and a long run does not keep every figure alive."""
    fig = Figure(figsize=kwargs.pop("figsize", None))
    return fig, fig.subplots(*args, **kwargs)


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


def save(fig: Figure, name: str, out_dir: str | Path = "data") -> list[Path]:
    """Write ``name``.png and ``name``.svg under ``out_dir``; returns the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{name}.png", out / f"{name}.svg"]
    fig.savefig(paths[0], dpi=100, bbox_inches="tight")
    fig.savefig(paths[1], bbox_inches="tight", metadata={"Date": None})
    return paths


def replay_speed_figure(figures: pd.DataFrame) -> Figure:
    """Decisions per second on a real server: one round trip, pipelined, the ``limits`` package.

    ``figures`` is what :func:`simulator.bench_servers.bench_servers` returns, as a frame.
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
        ax.bar_label(bars, labels=[f"{v:,.0f}" for v in values], fontsize=8)
    ax.set_xticks(np.arange(len(methods)), list(methods.values()))
    ax.set_yscale("log")
    ax.set_ylabel("decisions per second (log scale)")
    ax.set_title("Same trace, same server, same decisions: pipelining sets the pace", fontsize=11)
    ax.legend(frameon=False, fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig
