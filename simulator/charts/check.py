"""The grading chart: a trace as a script and a reference decided it, up to the first difference."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from simulator.charts import ROLE_COLOURS, subplots
from simulator.userscripts.check import Mismatch

__all__ = ["mismatch_figure"]


def mismatch_figure(m: Mismatch, script: str = "your script", last: int = 40) -> Figure:
    """The last ``last`` requests before (and including) the first differing decision: what the
    script and the reference said to each, the differing one marked."""
    rows = m.history[-last:]
    t = np.array([r[0] for r in rows], dtype="float64") / 1000
    fig, ax = subplots(figsize=(9.5, 3.2))
    for y, k in ((1, 2), (0, 3)):
        ok = np.array([r[k] for r in rows], dtype=bool)
        ax.scatter(
            t[ok],
            np.full(ok.sum(), y),
            marker="o",
            color="#2ca02c",
            s=28,
            label="admitted" if y else None,
        )
        ax.scatter(
            t[~ok],
            np.full((~ok).sum(), y),
            marker="x",
            color="#d62728",
            s=36,
            label="refused" if y else None,
        )
    ax.axvline(m.t_ms / 1000, color=ROLE_COLOURS["exact"], lw=1, ls="--")
    ax.annotate(
        f"request {m.index}, client {m.client!r}:\nscript {'admits' if m.said.allowed else 'refuses'}, "
        f"reference {'admits' if m.expected.allowed else 'refuses'} (count {m.expected.count:g})",
        (m.t_ms / 1000, 0.5),
        xytext=(8, 0),
        textcoords="offset points",
        fontsize=9,
        va="center",
    )
    for seam in range(
        int(t.min() * 1000 // m.window_ms) + 1, int(t.max() * 1000 // m.window_ms) + 1
    ):
        ax.axvline(seam * m.window_ms / 1000, color="#bbbbbb", lw=0.6, ls=":")
    ax.set_yticks([0, 1], ["reference", script])
    ax.set_ylim(-0.6, 1.6)
    ax.set_xlabel("time (s); dotted: grid seams")
    ax.set_ylabel("decided by")
    ax.legend(fontsize=8, frameon=False, loc="upper left", ncol=2)
    ax.set_title(
        f"First difference in {m.trace!r} (limit {m.limit} per {m.window_ms} ms)", fontsize=10
    )
    fig.tight_layout()
    return fig
