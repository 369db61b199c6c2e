"""The trailing-window kernel against a count done by hand, and the frames built on it.

The brute-force count below is the definition, read literally: for row i, the admitted rows j of
the same run, algorithm and client with t_i - W < t_j <= t_i, where a row at the same millisecond
counts only if it comes no later in the log than row i.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.metrics import (
    admitted_per_second,
    burst_summary,
    max_in_window,
    rolling_admitted,
    rolling_curve,
    trailing_admitted,
)

GROUP = ("run_id", "algorithm", "client")


def brute_rolling(frame: pd.DataFrame, window_ms: int) -> list[int]:
    keys = [c for c in GROUP if c in frame.columns]
    rows = list(zip(*(frame[c].tolist() for c in [*keys, "t_ms", "allowed"]), strict=True))
    out = []
    for i, (*key, t, _) in enumerate(rows):
        out.append(
            sum(
                1
                for j, (*other, u, allowed) in enumerate(rows)
                if other == key and t - window_ms < u <= t and (u < t or j <= i) and allowed
            )
        )
    return out


def log(rows: list[tuple], limit: int = 2) -> pd.DataFrame:
    """A decision log from ``(run_id, algorithm, client, t_ms, allowed)`` rows."""
    frame = pd.DataFrame(rows, columns=[*GROUP, "t_ms", "allowed"])
    return frame.astype({"t_ms": "int64", "allowed": "bool"}).assign(limit=limit)


@st.composite
def logs(draw: st.DrawFn) -> tuple[pd.DataFrame, int]:
    start_ms = draw(st.sampled_from([0, 1_700_000_000_000]))
    n = draw(st.integers(0, 25))
    rows = [
        (
            draw(st.sampled_from(["r1", "r2"])),
            draw(st.sampled_from(["fixed_window", "sliding_log"])),
            draw(st.sampled_from(["a", "b", ""])),
            start_ms + draw(st.integers(0, 40)),
            draw(st.booleans()),
        )
        for _ in range(n)
    ]
    frame = log(rows)
    # an index that is neither sorted nor 0..n-1: results must follow the rows, not the labels
    frame.index = draw(st.permutations(range(100, 100 + n)))
    return frame, draw(st.integers(1, 30))


@settings(max_examples=100, deadline=None)
@given(logs())
def test_rolling_admitted_equals_the_brute_force_count(case):
    frame, window_ms = case
    got = rolling_admitted(frame, window_ms)
    assert got.index.equals(frame.index)
    assert got.dtype == "int64"
    assert got.tolist() == brute_rolling(frame, window_ms)


@settings(max_examples=60, deadline=None)
@given(logs())
def test_rolling_admitted_without_run_and_algorithm_columns_groups_by_client(case):
    frame, window_ms = case
    bare = frame[["client", "t_ms", "allowed"]]
    assert rolling_admitted(bare, window_ms).tolist() == brute_rolling(bare, window_ms)


@settings(max_examples=60, deadline=None)
@given(logs())
def test_the_kernel_can_leave_each_row_out_of_its_own_count(case):
    frame, window_ms = case
    group = frame.groupby(list(GROUP), sort=False).ngroup().to_numpy(dtype="int64")
    t_ms = frame["t_ms"].to_numpy(dtype="int64")
    admitted = frame["allowed"].to_numpy(dtype=bool)
    order = np.lexsort((np.arange(len(frame)), t_ms, group))
    before = trailing_admitted(group, t_ms, admitted, window_ms, order, including_self=False)
    want = np.array(brute_rolling(frame, window_ms), dtype="int64") - admitted
    assert before.dtype == "int64" and before.tolist() == want.tolist()


def test_the_window_excludes_t_minus_w_and_includes_t():
    frame = log([("r", "x", "a", t, True) for t in (0, 999, 1000, 1000, 1999, 2000)])
    # W = 1000: at 1000 the row at 0 (t - W) is out, at 1999 the row at 999, at 2000 both at 1000
    assert rolling_admitted(frame, 1000).tolist() == [1, 2, 2, 3, 3, 2]


def test_ties_at_one_millisecond_count_in_row_order_and_refusals_do_not_count():
    frame = log(
        [
            ("r", "x", "a", 5, True),
            ("r", "x", "a", 5, False),
            ("r", "x", "a", 5, True),
            ("r", "x", "a", 3, True),  # later in the log, earlier in time: counts for every row
            ("r", "x", "a", 5, False),
        ]
    )
    assert rolling_admitted(frame, 10).tolist() == [2, 2, 3, 1, 3]


def test_clients_runs_and_algorithms_are_counted_apart():
    frame = log(
        [
            ("r1", "x", "a", 0, True),
            ("r1", "x", "b", 0, True),
            ("r2", "x", "a", 0, True),
            ("r1", "y", "a", 0, True),
            ("r1", "x", "a", 1, True),
        ]
    )
    assert rolling_admitted(frame, 100).tolist() == [1, 1, 1, 1, 2]


def test_an_empty_frame_gives_an_empty_series():
    frame = log([])
    got = rolling_admitted(frame, 1000)
    assert len(got) == 0 and got.dtype == "int64" and got.index.equals(frame.index)
    assert len(max_in_window(frame, 1000)) == 0


def test_rolling_admitted_on_a_very_wide_time_span():
    """Where one sort key per row would overflow int64, the count is still exact."""
    frame = log([("r", "x", c, t, True) for c in ("a", "b") for t in (0, 4 * 10**18)])
    assert rolling_admitted(frame, 10**18).tolist() == brute_rolling(frame, 10**18)


def test_max_in_window_is_per_algorithm_and_per_client():
    rows = [("r", "fixed_window", "a", t, True) for t in (998, 999, 1000, 1001)]
    rows += [("r", "fixed_window", "b", t, True) for t in (998, 999)]  # not added to a's
    rows += [("r", "sliding_log", c, 500, True) for c in "abc"]
    rows += [("r", "sliding_log", "a", t, False) for t in (501, 502)]
    rows += [("r", "refuses_all", "a", 0, False)]
    got = max_in_window(log(rows), 1000)
    assert got.to_dict() == {"fixed_window": 4, "refuses_all": 0, "sliding_log": 1}
    assert got.name == "max_in_window"


@settings(max_examples=60, deadline=None)
@given(logs())
def test_max_in_window_is_the_largest_brute_force_count(case):
    frame, window_ms = case
    counts = pd.Series(brute_rolling(frame, window_ms), index=frame.index)
    want = counts.groupby(frame["algorithm"]).max()
    assert max_in_window(frame, window_ms).to_dict() == want.to_dict()


def test_burst_summary_counts_requests_admissions_and_the_ratio_to_the_limit():
    rows = [("r", "fixed_window", "u", t, True) for t in (59_000, 59_500, 60_000, 60_500)]
    rows += [("r", "fixed_window", "u", 60_600, False)]
    rows += [("r", "sliding_log", "u", t, ok) for t, ok in ((59_000, True), (59_500, True))]
    rows += [("r", "sliding_log", "u", t, False) for t in (60_000, 60_500, 60_600)]
    summary = burst_summary(log(rows, limit=2), 60_000)
    assert list(summary.columns) == ["requests", "admitted", "max_in_window", "ratio_to_limit"]
    assert summary.index.tolist() == ["fixed_window", "sliding_log"]
    assert summary.loc["fixed_window"].tolist() == [5, 4, 4, 2.0]
    assert summary.loc["sliding_log"].tolist() == [5, 2, 2, 1.0]


def test_admitted_per_second_keeps_a_second_that_has_only_refusals():
    rows = [("r", "x", "a", t, ok) for t, ok in ((0, True), (999, True), (500, False))]
    rows += [("r", "x", "a", t, False) for t in (1000, 1999)]  # second 1: refusals only
    rows += [("r", "x", "b", 3000, True), ("r", "y", "a", 1500, True)]
    got = admitted_per_second(log(rows))
    assert list(got.columns) == ["algorithm", "second", "admitted", "refused"]
    assert got.to_dict("records") == [
        {"algorithm": "x", "second": 0, "admitted": 2, "refused": 1},
        {"algorithm": "x", "second": 1, "admitted": 0, "refused": 2},
        {"algorithm": "x", "second": 3, "admitted": 1, "refused": 0},
        {"algorithm": "y", "second": 1, "admitted": 1, "refused": 0},
    ]


def test_admitted_per_second_of_a_log_with_no_admissions_has_both_columns():
    got = admitted_per_second(log([("r", "x", "a", t, False) for t in (10, 20, 2500)]))
    assert got[["second", "admitted", "refused"]].values.tolist() == [[0, 0, 2], [2, 0, 1]]


def test_rolling_curve_counts_admissions_of_all_clients_on_a_grid():
    rows = [("r", "x", "a", t, True) for t in (100, 200)]
    rows += [("r", "x", "b", 150, True), ("r", "x", "b", 160, False)]
    rows += [("r", "y", "a", 300, True)]
    grid = np.array([0, 99, 100, 150, 199, 200, 299, 300, 1100, 1150, 1200], dtype="int64")
    curve = rolling_curve(log(rows), 1000, grid)
    assert list(curve.columns) == ["algorithm", "t_ms", "in_window"]
    x = curve[curve["algorithm"] == "x"]
    y = curve[curve["algorithm"] == "y"]
    assert x["t_ms"].tolist() == y["t_ms"].tolist() == grid.tolist()
    # (t - 1000, t]: the admission at 100 leaves at 1100, the one at 150 at 1150
    assert x["in_window"].tolist() == [0, 0, 1, 2, 2, 3, 3, 3, 2, 1, 0]
    assert y["in_window"].tolist() == [0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1]


@settings(max_examples=60, deadline=None)
@given(logs(), st.lists(st.integers(-5, 80), min_size=1, max_size=10))
def test_rolling_curve_equals_a_count_at_each_grid_time(case, offsets):
    frame, window_ms = case
    if frame.empty:
        return
    grid = int(frame["t_ms"].min()) + np.array(sorted(offsets), dtype="int64")
    curve = rolling_curve(frame, window_ms, grid)
    for algorithm, part in frame.groupby("algorithm"):
        t = part.loc[part["allowed"], "t_ms"].to_numpy()
        want = [int(((t > g - window_ms) & (t <= g)).sum()) for g in grid]
        assert curve.loc[curve["algorithm"] == algorithm, "in_window"].tolist() == want
