"""What the timeline is sent once per run: one client's requests in every algorithm's log.

The browser steps, scrubs, zooms and plays on its own, so a run's rows cross to it whole, as
compact JSON (plain lists of numbers, one list per field): per row the algorithm's name, label
and colour, the window it counts, and per request its instant (ms from the run's origin: the
trace's first request, or 0 for a traffic mix), whether it was admitted, its cost, what the
exact log counts admitted in the trailing window (t - W, t] (the mark's height), the script's
``count``, ``remaining``, ``retry_after_ms`` and ``reset_ms`` where the log has them (``None``
where not), and a short state text per request. Beside the rows go the window seams (where the
clock-aligned windows start), the limit, the chosen request and the view.

Every row keeps its own log's order, which is the order the time bar and the step-through count
a client's requests in; the chosen ``index`` counts the first row's requests.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from simulator import metrics
from simulator.algorithms import ALGORITHMS
from simulator.algorithms.palette import ROLE_COLOURS, check_colours
from simulator.explore.runs import Outcome, seams_ms
from simulator.explore.words import row_note
from simulator.policy import lookup

__all__ = ["timeline_payload", "row_of", "state_text", "ROW_FIELDS"]

#: The per-request lists of a row, each as long as its ``t_ms``.
ROW_FIELDS = (
    "t_ms",
    "admitted",
    "cost",
    "in_window",
    "count",
    "remaining",
    "retry_after_ms",
    "reset_ms",
    "state",
)


def _colour(algorithm: str) -> str:
    """The algorithm's colour from the registry, held to the colour rule first, as the charts'
    palette gives it (:data:`simulator.charts.PALETTE`, not imported: it brings pyplot, which
    a page's first run should not wait for)."""
    check_colours({n: cls.colour for n, cls in ALGORITHMS.items()}, ROLE_COLOURS)
    return lookup(algorithm, owner="PALETTE").colour


def _column(frame: pd.DataFrame, rows: np.ndarray, name: str, kind: type) -> list[Any]:
    """One column of ``rows`` as Python values (``None`` where the log has none)."""
    if name not in frame.columns:
        return [None] * len(rows)
    column = frame[name].iloc[rows]
    missing = column.isna().to_numpy(dtype=bool).tolist()  # once for the column, not per value
    return [None if m else kind(v) for v, m in zip(column.tolist(), missing, strict=True)]


def state_text(
    admitted: bool, count: float | None, remaining: int | None, retry_ms: int | None
) -> str:
    """A request's decision in a few words: ``refused · count 100 · 0 left · retry 58 s``."""
    parts = ["admitted" if admitted else "refused"]
    if count is not None:
        parts.append(f"count {count:g}")
    if remaining is not None:
        parts.append(f"{remaining:,} left")
    if not admitted and retry_ms is not None:
        parts.append(f"retry {retry_ms / 1000:g} s")
    return " · ".join(parts)


def row_of(
    algorithm: str,
    frame: pd.DataFrame,
    client: str | None,
    window_ms: int,
    origin_ms: int = 0,
    note: str = "",
) -> dict[str, Any]:
    """One algorithm's row: ``client``'s requests in ``frame`` (its log), in the log's order."""
    if client is None:
        rows = np.empty(0, dtype="int64")
    else:
        rows = np.flatnonzero((frame["client"] == client).to_numpy(dtype=bool, na_value=False))
    t_ms = frame["t_ms"].to_numpy(dtype="int64")[rows]
    admitted = frame["allowed"].to_numpy(dtype=bool)[rows]
    order = np.lexsort((np.arange(len(rows)), t_ms))
    in_window = metrics.trailing_admitted(
        np.zeros(len(rows), dtype="int64"), t_ms, admitted, window_ms, order
    )
    count = _column(frame, rows, "count", float)
    remaining = _column(frame, rows, "remaining", int)
    retry = _column(frame, rows, "retry_after_ms", int)
    cls = ALGORITHMS.get(algorithm)
    return {
        "algorithm": algorithm,
        "label": lookup(algorithm, owner="LABELS").label,
        "colour": _colour(algorithm),
        "note": note,
        "counted": cls.counted_window if cls is not None else "trailing",
        "window_ms": int(window_ms),
        "t_ms": (t_ms - origin_ms).tolist(),
        "admitted": admitted.tolist(),
        "cost": _column(frame, rows, "cost", int),
        "in_window": in_window.tolist(),
        "count": count,
        "remaining": remaining,
        "retry_after_ms": retry,
        "reset_ms": _column(frame, rows, "reset_ms", int),
        "state": [
            state_text(a, c, r, ra)
            for a, c, r, ra in zip(admitted.tolist(), count, remaining, retry, strict=True)
        ],
    }


def _span_ms(outcome: Outcome) -> int:
    """The run's length on the time axis (ms): the traffic's duration, or the trace's span."""
    s = outcome.settings
    last = max((int(f["t_ms"].max()) for f in outcome.frames.values() if len(f)), default=0)
    last -= outcome.origin_ms
    return max(last, 0) if s.trace is not None else max(round(s.duration_s * 1000), last)


def timeline_payload(
    outcome: Outcome,
    client: str | None,
    *,
    algorithms: Sequence[str] | None = None,
    index: int | None = None,
    notes: bool = True,
) -> dict[str, Any]:
    """The timeline's values for ``client`` in ``outcome`` (a finished explorer run): ``rows``
    (one per algorithm of the run, or of ``algorithms``, in that order), ``seams_ms``,
    ``limit``, ``index`` (given, or the first row's first refusal, or 0), ``view_ms`` (``[]``:
    the whole run) and ``unit``, plus a ``caption``; hand it to ``Timeline(**payload)`` or
    :func:`simulator.explore.export.export_html`."""
    s = outcome.settings
    names = [a for a in (algorithms or outcome.frames) if a in outcome.frames]
    rows = [
        row_of(
            a,
            outcome.frames[a],
            client,
            s.window_ms,
            outcome.origin_ms,
            row_note(outcome.summaries[a]) if notes and a in outcome.summaries else "",
        )
        for a in names
    ]
    caption = f"client {client}: limit {s.limit:,} per {s.window_s:g} s" if client else ""
    return {
        "rows": rows,
        "seams_ms": [float(x) for x in seams_ms(outcome, _span_ms(outcome)).tolist()],
        "limit": float(s.limit),
        "index": _chosen(rows, index),
        "view_ms": [],  # the whole run, as the page pads it (it sends the numbers back)
        "unit": "s",
        "caption": caption or "no client",
    }


def _chosen(rows: list[dict[str, Any]], index: int | None) -> int:
    """``index`` within the first row's requests; by default its first refusal (or 0)."""
    first = rows[0] if rows else {"t_ms": [], "admitted": []}
    if index is None:
        index = next((i for i, a in enumerate(first["admitted"]) if not a), 0)
    return int(min(max(index, 0), max(len(first["t_ms"]) - 1, 0)))
