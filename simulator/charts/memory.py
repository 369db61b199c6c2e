"""Charts of the memory tables: bytes per user, the total at 5 million users, the encoding cliff
and the big key.

Every chart is drawn from the tables ``python -m simulator memory`` committed under ``data/``, so
redrawing them needs no server. Colours and names come from :mod:`simulator.charts`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle
from matplotlib.text import Annotation

from simulator.algorithms import ALGORITHMS
from simulator.charts import LABELS, PALETTE, subplots
from simulator.studies.memory import TARGET_USERS

__all__ = ["per_user_figure", "encoding_cliff_figure", "bigkey_figure"]


def _layout_label(row: pd.Series) -> str:
    ids = f", {row['id_format']} ids" if row["id_format"] else ""
    return f"{LABELS[row['algorithm']]}: {row['state']}, {row['limit']:,}/min{ids}"


def per_user_figure(per_user: pd.DataFrame) -> Figure:
    """Bytes per user (log scale) and the total at 5M users, one bar per layout."""
    t = per_user.iloc[::-1].reset_index(drop=True)
    y = np.arange(len(t))
    colours = [PALETTE[a] for a in t["algorithm"]]
    fig, (left, right) = subplots(1, 2, figsize=(10, 0.5 * len(t) + 2.4), sharey=True)
    left.barh(y, t["bytes_per_user_used_memory"], color=colours)
    left.scatter(t["memory_usage_bytes_per_user"], y, color="black", marker="|", s=200, zorder=3)
    left.set_xscale("log")
    left.set_yticks(y, [_layout_label(r) for _, r in t.iterrows()], fontsize=9)
    left.set_xlabel(
        "bytes per user (log scale)\nbar: used_memory growth\n|: MEMORY USAGE", fontsize=9
    )
    for yi, v in zip(y, t["bytes_per_user_used_memory"], strict=True):
        left.text(v * 1.08, yi, f"{v:,.0f} B", va="center", fontsize=9)
    extrapolated = t["total_at_5m_source"] != "measured"
    right.barh(
        y,
        t["total_at_5m_bytes"] / 1e9,
        xerr=t["total_at_5m_error_bytes"] / 1e9,
        color=colours,
        hatch=["//" if e else "" for e in extrapolated],
        edgecolor="white",
    )
    right.set_xscale("log")
    right.set_xlabel(f"total at {TARGET_USERS / 1e6:g}M users\n(GB, log scale)")
    for yi, v, e, n in zip(
        y, t["total_at_5m_bytes"] / 1e9, extrapolated, t["users_measured"], strict=True
    ):
        note = f"extrapolated from {n:,} users" if e else "measured"
        right.text(v * 1.08, yi, f"{v:,.2f} GB ({note})", va="center", fontsize=9)
    fig.legend(  # under the panels: the right one is too narrow beside its notes
        handles=[
            Patch(color="grey", label="measured"),
            Patch(facecolor="grey", edgecolor="white", hatch="//", label="extrapolated (line fit)"),
        ],
        loc="lower right",
        ncol=2,
        fontsize=9,
        frameon=False,
    )
    steady = per_user[(per_user["state"] == "steady") & (per_user["limit"] == 100)]
    by = steady.groupby("algorithm")["bytes_per_user_used_memory"].min()
    version = per_user["server_version"].iloc[0]
    limits = sorted(int(v) for v in per_user["limit"].unique())
    also = " and ".join(f"{v:,}" for v in limits if v != 100)
    fig.suptitle(
        f"At 100 requests/min per user the sliding log costs "
        f"{by['sliding_log'] / by['fixed_window']:.0f}x a fixed-window counter per user"
        + (f" (rows marked {also}/min: the big key)" if also else "")
        + f"\nValkey {version}, used_memory growth",
        fontsize=11,
    )
    fig.tight_layout(rect=(0, 0.25 / fig.get_figheight(), 1, 1))  # 0.25 in for the legend
    return fig


def encoding_cliff_figure(sweep: pd.DataFrame) -> Figure:
    """Bytes per log entry and time per decision as the log grows past the listpack limit."""
    threshold = int(sweep["zset_max_listpack_entries"].iloc[0])
    colour = PALETTE["sliding_log"]
    fig, (left, right) = subplots(1, 2, figsize=(10, 4.2))
    for enc, marker in (("zset:listpack", "o"), ("zset:skiplist", "s")):
        s = sweep[sweep["encoding"] == enc]
        left.plot(s["entries"], s["bytes_per_entry"], marker=marker, color=colour, label=enc)
    left.axvline(threshold + 0.5, color="black", ls="--", lw=1)
    left.text(
        threshold * 1.15,
        0.5 * float(sweep["bytes_per_entry"].max()),
        f"zset-max-listpack-entries = {threshold}",
        fontsize=9,
    )
    left.set_xscale("log")
    left.set_ylim(bottom=0)
    left.set_xlabel("entries in the log (log scale)")
    left.set_ylabel("MEMORY USAGE / entries (bytes per entry)")
    below = sweep[sweep["entries"] == threshold]["bytes_per_entry"]
    above = sweep[sweep["entries"] == threshold + 1]["bytes_per_entry"]
    jump = (
        f" ({float(below.iloc[0]):.0f} -> {float(above.iloc[0]):.0f} B)"
        if len(below) and len(above)
        else ""
    )
    left.set_title(f"One entry past {threshold} the log's bytes per entry jump{jump}", fontsize=10)
    left.legend(fontsize=9, frameon=False)
    right.plot(
        sweep["entries"],
        sweep["server_us_per_decision"],
        marker="o",
        color=colour,
        label="steady: one in, one out",
    )
    right.plot(
        sweep["entries"],
        sweep["server_us_after_pause"],
        marker="^",
        color=colour,
        ls=":",
        label="after a pause: the whole log dropped",
    )
    right.axvline(threshold + 0.5, color="black", ls="--", lw=1)
    right.set_xscale("log")
    right.set_yscale("log")
    right.set_xlabel("entries in the log (log scale)")
    right.set_ylabel("server time per decision (µs, log scale)")
    right.set_title(
        "Steady decisions stay cheap;\nthe one after a pause grows with the log", fontsize=10
    )
    right.legend(fontsize=9, frameon=False)
    fig.suptitle(
        "The sliding log's encoding cliff (a sorted set: listpack, then skiplist + hash table)",
        fontsize=11,
    )
    fig.tight_layout()
    return fig


def bigkey_figure(bigkey: pd.DataFrame) -> Figure:
    """Bytes per user and server time per decision at login-, interview- and API-sized limits."""
    limits = sorted(bigkey["limit"].unique())
    algorithms = [a for a in ALGORITHMS if a in set(bigkey["algorithm"])]
    x = np.arange(len(limits))
    width = 0.8 / len(algorithms)
    fig, axes = subplots(1, 3, figsize=(10, 4.4))
    panels = (
        (
            "user_bytes",
            "bytes per user (MEMORY USAGE, log scale)",
            "Memory: the log grows with the limit",
        ),
        (
            "server_us_per_decision",
            "server µs per decision",
            "Steady decision: all cheap",
        ),
        (
            "server_us_after_pause",
            "server µs for that decision (log scale)",
            "First decision after a pause",
        ),
    )
    labelled: list[tuple[Annotation, Rectangle]] = []
    for ax, (column, ylabel, title) in zip(axes, panels, strict=True):
        for i, a in enumerate(algorithms):
            s = bigkey[bigkey["algorithm"] == a].set_index("limit").reindex(limits)
            bars = ax.bar(
                x + (i - (len(algorithms) - 1) / 2) * width,
                s[column],
                width,
                color=PALETTE[a],
                label=LABELS[a],
            )
            for bar, v in zip(bars.patches, s[column], strict=True):
                # Inside the bar's top, turned upright: a label above a log bar floats off it.
                note = ax.annotate(
                    f"{v:,.0f}",
                    (bar.get_x() + bar.get_width() / 2, v),
                    xytext=(0, -3),
                    textcoords="offset points",
                    ha="center",
                    va="top",
                    rotation=90,
                    fontsize=9,
                    color="white",
                )
                labelled.append((note, bar))
        if column != "server_us_per_decision":  # the steady times differ by less than 3x
            ax.set_yscale("log")
        ax.margins(y=0.08)
        ax.set_xticks(x, [f"{n:,}/min" for n in limits])
        ax.set_xlabel("limit per user (requests per minute)")
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=10)
    # under the panels: inside one, the legend would sit on the tallest bars' labels
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=9, frameon=False)
    log = bigkey[bigkey["algorithm"] == "sliding_log"].set_index("limit")
    top = max(limits)
    fig.suptitle(
        f"The big key: a sliding log at {top:,}/min holds {log.loc[top, 'user_bytes'] / 1e3:,.0f} kB per user\n"
        f"and one decision after a pause takes {log.loc[top, 'server_us_after_pause'] / 1e3:.1f} ms of server time",
        fontsize=11,
    )
    rows = -(-len(algorithms) // 4)  # the legend's rows under the panels, about 0.25 in each
    fig.tight_layout(rect=(0, 0.25 * rows / fig.get_figheight(), 1, 1))
    _lift_short_labels(fig, labelled)
    return fig


def _lift_short_labels(fig: Figure, labelled: list[tuple[Annotation, Rectangle]]) -> None:
    """A label longer than its bar goes above it, in black: inside, it would run past the
    axis into the white below. Measured once the layout is final, where the reader sees it."""
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    renderer = canvas.get_renderer()
    for note, bar in labelled:
        # a bar from 0 on a log axis starts below the view: what shows of it starts at the axis
        shown = bar.get_clip_box()  # the axes' box: a bar is drawn only inside it
        bottom = bar.get_window_extent(renderer).y0
        bottom = max(bottom, shown.y0) if shown is not None else bottom
        if not note.get_window_extent(renderer).y0 >= bottom - 1:
            note.set(va="bottom", color="black")
            note.xyann = (0, 3)
