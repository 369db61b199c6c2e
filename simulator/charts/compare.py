"""What a switch of limiter would change: flips over time, who they fall on, the scorecard.

Frames in (a :func:`simulator.comparison.compare` scorecard, with its timeline, and its
per-client table), Figures out; each configuration in its algorithm's colour.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from simulator.charts import PALETTE, save, subplots

__all__ = [
    "flips_over_time_figure",
    "client_flips_figure",
    "scorecard_figure",
    "client_peaks_figure",
    "save_compare_charts",
]

_REFUSED = "#444444"  # flips to refused: somebody who got through before and would not now
_GREY = "#999999"


def _colour(algorithm: str) -> str:
    try:
        return PALETTE[algorithm]
    except KeyError:
        return _GREY


def _candidates(scorecard: pd.DataFrame) -> pd.DataFrame:
    return scorecard[scorecard["role"] == "candidate"]


def _nothing(ax: Axes, text: str) -> None:
    """A panel with nothing to draw says so, without axes that would suggest a scale."""
    ax.text(0.5, 0.5, text, ha="center", va="center", fontsize=10, transform=ax.transAxes)
    ax.set_axis_off()  # this panel's only: a shared axis keeps its ticks for the others


def flips_over_time_figure(scorecard: pd.DataFrame, bins: int = 120) -> Figure:
    """One row per candidate on a shared time axis: flips to admitted above the line (in the
    candidate's colour), flips to refused below it (dark), in ``bins`` spans of time."""
    timeline = scorecard.attrs["timeline"]
    rows = _candidates(scorecard)
    t0 = int(timeline["t_ms"].min())
    span_h = (int(timeline["t_ms"].max()) - t0) / 3_600_000
    hours = span_h >= 3
    fig, axes = subplots(
        len(rows), 1, figsize=(10, 1.8 * len(rows) + 1), sharex=True, squeeze=False
    )
    edges = np.linspace(0, max(span_h, 1e-9), bins + 1) if hours else None
    for ax, row in zip(axes[:, 0], rows.to_dict("records"), strict=True):
        if not row["flips_to_refused"] and not row["flips_to_admitted"]:
            ax.set_title(row["candidate"], fontsize=10, loc="left")
            _nothing(ax, "no flips: every request decided as the baseline decides it")
            continue
        t = timeline[timeline["candidate"] == row["candidate"]]
        x = (t["t_ms"].to_numpy() - t0) / (3_600_000 if hours else 1000)
        if edges is None:
            edges_here = np.linspace(0, max(float(x.max()), 1e-9), bins + 1)
        else:
            edges_here = edges
        up, _ = np.histogram(x, edges_here, weights=t["flips_to_admitted"])
        down, _ = np.histogram(x, edges_here, weights=t["flips_to_refused"])
        width = edges_here[1] - edges_here[0]
        ax.bar(edges_here[:-1], up, width=width, align="edge", color=_colour(row["algorithm"]),
               label=f"now admitted ({row['flips_to_admitted']:,})")  # fmt: skip
        ax.bar(edges_here[:-1], -down, width=width, align="edge", color=_REFUSED,
               label=f"now refused ({row['flips_to_refused']:,})")  # fmt: skip
        ax.axhline(0, color="black", lw=0.6)
        ax.set_title(row["candidate"], fontsize=10, loc="left")
        ax.set_ylabel("flips", fontsize=9)
        ax.legend(loc="upper right", fontsize=9, frameon=False, ncol=2)
    drawn = [ax for ax in axes[:, 0] if ax.axison]
    if drawn:  # the time axis under the lowest panel that has one
        drawn[-1].tick_params(labelbottom=True)
        drawn[-1].set_xlabel(
            "hours since the trace's first request"
            if hours
            else "seconds since the trace's first request"
        )
    base = scorecard.iloc[0]["candidate"]
    fig.suptitle(
        f"Which requests each candidate decides differently from {base}, over time", fontsize=11
    )
    fig.tight_layout()
    return fig


def client_flips_figure(scorecard: pd.DataFrame, clients: pd.DataFrame, top: int = 12) -> Figure:
    """One panel per candidate: the ``top`` clients it affects most, their flips each way."""
    rows = _candidates(scorecard)
    # two panels to a row at most: three side by side would be 1,360 px, shrunk to the 848-px
    # notebook column with their labels under 10 px
    cols = min(2, len(rows))
    lines = -(-len(rows) // cols)
    fig, axes = subplots(
        lines, cols, figsize=(4.2 * cols + 1, (0.32 * top + 1.2) * lines + 0.4), squeeze=False
    )
    for ax in axes.flat[len(rows) :]:
        ax.set_visible(False)
    for ax, row in zip(axes.flat, rows.to_dict("records"), strict=False):
        mine = clients[clients["candidate"] == row["candidate"]].head(top).iloc[::-1]
        if not len(mine):
            ax.set_title(f"{row['candidate']}\nno clients affected", fontsize=9)
            _nothing(ax, "no flips: every request\ndecided as the baseline\ndecides it")
            continue
        y = np.arange(len(mine))
        ax.barh(y, mine["flips_to_admitted"], color=_colour(row["algorithm"]), label="now admitted")
        ax.barh(
            y,
            mine["flips_to_refused"],
            left=mine["flips_to_admitted"],
            color=_REFUSED,
            label="now refused",
        )
        ax.set_yticks(
            y,
            [str(c).encode("utf-8", "backslashreplace").decode() for c in mine["client"]],
            fontsize=9,
        )
        ax.set_xlabel("requests flipped")
        affected = row["clients_affected"]
        ax.set_title(f"{row['candidate']}\n{affected:,} clients affected", fontsize=9)
        ax.legend(loc="lower right", fontsize=9, frameon=False)
    fig.suptitle("The clients who would notice: most flips first", fontsize=11)
    fig.tight_layout()
    return fig


_PANELS = (
    ("refused", "refused requests"),
    ("flips_to_refused", "flips to refused"),
    ("flips_to_admitted", "flips to admitted"),
    ("wrongly_admitted", "admitted, exact log refuses"),
    ("wrongly_refused", "refused, exact log admits"),
    ("most_in_window_ratio", "most in one window / limit"),
    ("retry_after_p99_s", "Retry-After p99 (s)"),
    ("bytes_per_active_client", "bytes per active client"),
)


def scorecard_figure(scorecard: pd.DataFrame) -> Figure:
    """The scorecard side by side: one panel per figure, one bar per configuration (the
    baseline hatched), its value written on it. Three panels to a row at 8.4 in, the width of
    a notebook column, so that its 9-pt labels are shown at their size; configurations that
    share their parameters are named by algorithm alone, the parameters said once in the title."""
    cols = 3
    rows = -(-len(_PANELS) // cols)
    height = 0.9 + rows * (0.3 * len(scorecard) + 0.6)
    fig, axes = subplots(rows, cols, figsize=(8.4, height), squeeze=False)
    names, shared = _short_names(list(scorecard["candidate"]))
    y = np.arange(len(names))[::-1]
    for ax, (column, title) in zip(axes.ravel(), _PANELS, strict=False):
        values = scorecard[column].astype(float).to_numpy()
        _bars(ax, y, values, [_colour(a) for a in scorecard["algorithm"]])
        ax.set_title(title, fontsize=10)
        ax.set_yticks(y, names if ax in axes[:, 0] else [""] * len(names), fontsize=9)
        ax.tick_params(axis="x", labelsize=9)
    for ax in axes.ravel()[len(_PANELS) :]:
        ax.set_visible(False)
    which = f" ({shared})" if shared else ""
    fig.suptitle(
        f"Scorecard{which}: {names[0]} (hatched, the baseline) beside each candidate",
        fontsize=11,
    )
    fig.tight_layout()
    return fig


def _bars(ax: Axes, y: np.ndarray, values: np.ndarray, colours: list[str]) -> None:
    """One bar per configuration, its figure written after it (the baseline's hatched); a
    panel where every figure is 0 says so instead of drawing a scale for nothing."""
    if np.isfinite(values).all() and not values.any():
        ax.text(0.5, 0.5, "0 for every configuration", ha="center", va="center", fontsize=9,
                transform=ax.transAxes)  # fmt: skip
        ax.set_xticks([])
        ax.set_ylim(-0.6, len(y) - 0.4)  # the rows where the other panels draw their bars
        ax.spines["bottom"].set_visible(False)
        return
    bars = ax.barh(y, np.nan_to_num(values), color=colours)
    bars[0].set_hatch("//")
    top = float(np.nanmax(values)) if np.isfinite(values).any() else 0.0
    ax.set_xlim(0, (top or 1.0) * 1.4)  # room for the figure written after each bar
    for yi, v in zip(y, values, strict=True):
        text = "-" if np.isnan(v) else (f"{v:,.0f}" if float(v).is_integer() else f"{v:,.2f}")
        ax.annotate(
            text, (0 if np.isnan(v) else v, yi), xytext=(3, 0), textcoords="offset points",
            va="center", fontsize=9,
        )  # fmt: skip


def _short_names(candidates: list[str]) -> tuple[list[str], str]:
    """The configurations by algorithm alone when they all carry the same parameters (and
    those parameters), else as they are (and an empty string)."""
    parts = [c.partition(":") for c in candidates]
    params = {p[2] for p in parts}
    names = [p[0] for p in parts]
    if len(params) == 1 and len(set(names)) == len(names):
        return names, params.pop()
    return candidates, ""


def client_peaks_figure(peaks: pd.DataFrame, limits: list[int], top: int = 30) -> Figure:
    """One row per configuration: its ``top`` clients' peaks (the most requests each sent in
    one window of the configuration's length), highest first, in the algorithm's colour, and
    each limit drawn across them with how many of all the clients it is below."""
    names = list(dict.fromkeys(peaks["configuration"]))
    fig, axes = subplots(len(names), 1, figsize=(10, 2.2 * len(names) + 1), squeeze=False)
    for ax, name in zip(axes[:, 0], names, strict=True):
        mine = peaks[peaks["configuration"] == name]
        shown = mine.head(top)
        x = np.arange(1, len(shown) + 1)
        ax.bar(x, shown["peak"], color=_colour(str(mine["algorithm"].iloc[0])), width=0.8)
        for n in limits:
            over = int((mine["peak"] > n).sum())
            ax.axhline(n, color="black", lw=0.8, ls="--")
            ax.annotate(
                f"limit {n:,}: {over:,} clients above", (1.0, n), xycoords=("axes fraction", "data"),
                xytext=(4, 0), textcoords="offset points", va="center", fontsize=9,
            )  # fmt: skip
        ax.set_xlim(0.4, max(len(shown), 1) + 0.6)
        ax.set_title(f"{name} (window {mine['window_s'].iloc[0]:g} s)", fontsize=10, loc="left")
        ax.set_ylabel("peak requests\nin one window", fontsize=9)
        ax.tick_params(labelsize=9)
    axes[-1, 0].set_xlabel(f"client, by its peak (the {top} highest of each configuration)")
    fig.suptitle(
        "Whom each limit touches: a client whose peak is above a limit is refused at that limit",
        fontsize=11,
    )
    fig.tight_layout()
    return fig


def save_compare_charts(
    scorecard: pd.DataFrame,
    clients: pd.DataFrame,
    out_dir: str | Path,
    peaks: pd.DataFrame | None = None,
    limits: pd.DataFrame | None = None,
) -> list[Path]:
    """The charts as PNG and SVG under ``out_dir``: compare_flips_over_time,
    compare_client_flips, compare_scorecard, and compare_client_peaks when ``peaks`` and the
    ``limits`` table are given. The PNG paths."""
    figures = {
        "compare_flips_over_time": flips_over_time_figure(scorecard),
        "compare_client_flips": client_flips_figure(scorecard, clients),
        "compare_scorecard": scorecard_figure(scorecard),
    }
    if peaks is not None and limits is not None:
        wanted = sorted(set(limits["limit"].tolist()))
        figures["compare_client_peaks"] = client_peaks_figure(peaks, wanted)
    return [save(fig, name, out_dir)[0] for name, fig in figures.items()]
