"""Tables for the notebook column: snake_case headers in words, wrapped, numbers rounded.

A frame with a dozen long column names is wider than a notebook column and is cut at its right
edge. :func:`compact` gives the same values with headers that wrap (``decided differently pct``
over three short lines) in a slightly smaller font, so the table fits about 1,000 pixels.
"""

from __future__ import annotations

import pandas as pd

__all__ = ["compact"]

_STYLES = [
    {"selector": "th", "props": "white-space: normal; max-width: 7.5em; font-size: 85%;"},
    {"selector": "td", "props": "font-size: 85%;"},
]


def compact(frame: pd.DataFrame, digits: int = 3) -> object:
    """``frame`` for display: headers in words that wrap, numbers to ``digits`` decimals."""
    shown = frame.rename(columns=lambda c: str(c).replace("_", " "))
    names = [str(n).replace("_", " ") if n is not None else None for n in shown.index.names]
    shown.index = shown.index.set_names(names if shown.index.nlevels > 1 else names[0])
    return shown.style.format(precision=digits, thousands=",").set_table_styles(_STYLES)
