"""Metrics: pure functions from decision logs to frames or numbers.

The first is the exact truth: for every decision, how many requests of that client had been
admitted in the trailing window (t - W, t], counting this one if it was admitted. It is
vectorised (sort + cumulative sum + binary search), so it runs at millions of rows per second.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = [
    "trailing_admitted",
    "rolling_admitted",
    "max_in_window",
    "burst_summary",
    "admitted_per_second",
]

_GROUP = ["run_id", "algorithm", "client"]


def trailing_admitted(
    group: np.ndarray,
    t_ms: np.ndarray,
    admitted: np.ndarray,
    window_ms: int,
    order: np.ndarray,
    *,
    including_self: bool = True,
) -> np.ndarray:
    """THE trailing-window count: for each row, admitted rows of its ``group`` in (t - W, t].

    ``order`` sorts the rows by (group, time, arrival); rows count in that order, so at a tie in
    time a row counts those before it (and itself if ``including_self`` and admitted). One sort
    (given), one cumulative sum and one binary search: millions of rows per second.
    """
    n = len(t_ms)
    if n == 0:
        return np.empty(0, dtype="int64")
    k = np.asarray(group, dtype="int64")[order]
    ts = np.asarray(t_ms, dtype="int64")[order]
    cum = np.zeros(n + 1, dtype="int64")  # cum[i] = admitted among the first i sorted rows
    np.cumsum(np.asarray(admitted, dtype=bool)[order], out=cum[1:])
    t0 = int(ts.min())
    span = int(ts.max()) - t0 + int(window_ms) + 1
    if (int(k.max()) + 1) * span < 2**62:  # one key per row, ascending along `order`
        key = k * span + (ts - t0 + window_ms)
        first = np.searchsorted(key, key - window_ms, side="right")  # first row with t > t_i - W
    else:  # so wide a span that the key would overflow: one search per group instead
        first = np.empty(n, dtype="int64")
        starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
        for lo, hi in zip(starts, np.r_[starts[1:], n], strict=True):
            part = ts[lo:hi]
            first[lo:hi] = lo + np.searchsorted(part, part - window_ms, side="right")
    out = np.empty(n, dtype="int64")
    out[order] = (cum[1:] if including_self else cum[:-1]) - cum[first]
    return out


def _group_codes(frame: pd.DataFrame, columns: list[str]) -> np.ndarray:
    """One int64 code per distinct combination of ``columns``' values (what a groupby's
    ``ngroup`` numbers, by first appearance), from each column's ``factorize``: no groupby
    built, which costs more than the count itself on a short log."""
    key = np.zeros(len(frame), dtype="int64")
    for column in columns:
        codes, uniques = pd.factorize(frame[column], sort=False)
        key, _ = pd.factorize(key * len(uniques) + codes, sort=False)
    return key.astype("int64", copy=False)


def rolling_admitted(frame: pd.DataFrame, window_ms: int) -> pd.Series:
    """Admitted requests of the same client (and run) in (t - W, t], up to and including each row.

    Rows with the same client and time count in log order.
    """
    n = len(frame)
    if n == 0:
        return pd.Series([], dtype="int64", index=frame.index, name="rolling_admitted")
    key = _group_codes(frame, [c for c in _GROUP if c in frame.columns])
    t = frame["t_ms"].to_numpy(dtype="int64")
    order = np.lexsort((np.arange(n), t, key))
    out = trailing_admitted(key, t, frame["allowed"].to_numpy(dtype=bool), window_ms, order)
    return pd.Series(out, index=frame.index, name="rolling_admitted")


def max_in_window(frame: pd.DataFrame, window_ms: int) -> pd.Series:
    """Per algorithm: the largest number of one client's requests admitted in any (t - W, t]."""
    rolling = rolling_admitted(frame, window_ms)
    return rolling.groupby(frame["algorithm"]).max().rename("max_in_window")


def burst_summary(frames: pd.DataFrame, window_ms: int, limit: int | None = None) -> pd.DataFrame:
    """Per algorithm: requests, admitted, the most admitted inside any window, and that most over
    the limit the run was set to (``ratio_to_limit``).

    ``limit``: the run's limit; by default the frame's ``attrs["limit"]`` (which
    :func:`simulator.engine.run.boundary_burst` sets), else each algorithm's ``limit`` column. That
    column is what the script replied, and a bucket replies its capacity (its burst) there, so a
    bucket's ratio needs the run's limit from one of the first two."""
    out = frames.groupby("algorithm", sort=False).agg(
        requests=("allowed", "size"), admitted=("allowed", "sum")
    )
    out["max_in_window"] = max_in_window(frames, window_ms)
    if limit is None:
        limit = frames.attrs.get("limit")
    if limit is None:
        out["ratio_to_limit"] = (
            out["max_in_window"] / frames.groupby("algorithm", sort=False)["limit"].first()
        )
    else:
        out["ratio_to_limit"] = out["max_in_window"] / limit
    return out


def admitted_per_second(frame: pd.DataFrame) -> pd.DataFrame:
    """Admitted and refused requests per (algorithm, whole second)."""
    second = (frame["t_ms"] // 1000).rename("second")
    table = frame.groupby([frame["algorithm"], second, frame["allowed"]]).size()
    wide = table.unstack("allowed", fill_value=0)
    wide = wide.rename(columns={True: "admitted", False: "refused"})
    for col in ("admitted", "refused"):
        if col not in wide.columns:
            wide[col] = 0
    return wide[["admitted", "refused"]].reset_index()


def rolling_curve(frame: pd.DataFrame, window_ms: int, t_grid_ms: np.ndarray) -> pd.DataFrame:
    """Per algorithm: admitted requests in (t - W, t] at each time of ``t_grid_ms`` (all clients)."""
    rows = []
    for algorithm, part in frame.groupby("algorithm", sort=False):
        times = np.sort(part.loc[part["allowed"], "t_ms"].to_numpy(dtype="int64"))
        upto = np.searchsorted(times, t_grid_ms, side="right")
        before = np.searchsorted(times, t_grid_ms - window_ms, side="right")
        rows.append(
            pd.DataFrame({"algorithm": algorithm, "t_ms": t_grid_ms, "in_window": upto - before})
        )
    if not rows:
        return pd.DataFrame({"algorithm": [], "t_ms": [], "in_window": []})
    return pd.concat(rows, ignore_index=True)
