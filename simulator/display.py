"""Tables for the notebook column: snake_case headers in words, wrapped, numbers rounded.

A frame with a dozen long column names is wider than a notebook column and is cut at its right
edge. :func:`compact` gives the same values with headers that wrap (``decided differently pct``
over three short lines) in a slightly smaller font, so the table fits about 1,000 pixels.
A table that still would not fit JupyterLab's 848-pixel output column at 1280x800 is shown in a
scroll box of that width (``scroll=True``): a deliberate horizontal scroll bar under the
table instead of a page that scrolls sideways.
"""

from __future__ import annotations

import pandas as pd

__all__ = ["compact", "scroll_box"]

#: JupyterLab's output column at a 1280x800 window, in CSS pixels.
COLUMN_PX = 848

_STYLES = [
    # columns as wide as their contents (JupyterLab lays tables out "fixed": from the header row
    # alone, so a row label wider than its empty header cell would spill into the next column)
    {"selector": "", "props": "table-layout: auto;"},
    # column headers wrap; the row labels (an algorithm's name) keep their width
    {"selector": "thead th", "props": "white-space: normal; max-width: 7.5em; font-size: 85%;"},
    {"selector": "tbody th", "props": "white-space: nowrap; font-size: 85%;"},
    {"selector": "td", "props": "font-size: 85%;"},
]


def compact(
    frame: pd.DataFrame, digits: int = 3, trim: bool = False, scroll: bool = False
) -> object:
    """``frame`` for display: headers in words that wrap, numbers to ``digits`` decimals.

    ``trim``: drop a number's trailing zeros (a count of ``1.0`` beside an estimate of
    ``98.333`` reads ``1`` and ``98.333``, not ``1.000``). ``scroll``: in a scroll box the
    output column's width (:func:`scroll_box`)."""
    styled = _styled(frame, digits, trim)
    return scroll_box(styled) if scroll else styled


def scroll_box(table: object) -> object:
    """``table`` (a Styler or a frame) in a box :data:`COLUMN_PX` wide that scrolls sideways."""
    from IPython.display import HTML

    inner = table.to_html()  # type: ignore[attr-defined]
    return HTML(
        f'<div class="workbench-scroll" style="overflow-x: auto; max-width: {COLUMN_PX}px;">'
        f"{inner}</div>"
    )


def _styled(frame: pd.DataFrame, digits: int, trim: bool) -> object:
    """The Styler :func:`compact` shows."""
    shown = frame.rename(columns=lambda c: str(c).replace("_", " "))
    names = [str(n).replace("_", " ") if n is not None else None for n in shown.index.names]
    shown.index = shown.index.set_names(names if shown.index.nlevels > 1 else names[0])
    if trim:
        floats = [c for c in shown.columns if pd.api.types.is_float_dtype(shown[c])]
        styler = shown.style.format(precision=digits, thousands=",")
        styler = styler.format(lambda v: _trimmed(v, digits), subset=floats)
        return styler.set_table_styles(_STYLES)
    return shown.style.format(precision=digits, thousands=",").set_table_styles(_STYLES)


def _trimmed(value: float, digits: int) -> str:
    """``value`` to ``digits`` decimals without trailing zeros (``nan`` as a dash)."""
    if pd.isna(value):
        return "–"
    return f"{value:,.{digits}f}".rstrip("0").rstrip(".")
