"""``--limits``: each configuration at other limits, checked against counts made here.

The fixed window's refusals per limit are counted by hand (requests past the limit in each
client's clock-aligned window), the peaks by brute force over every request's window, and the
exact log's clients refused against the peaks (a client is refused at a limit exactly when its
peak is above it).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest

from simulator.checks import ConfigError
from simulator.comparison.limits import at_limit, compare_limits, parse_limits
from simulator.comparison.spec import parse_spec

LIMITS = (2, 3, 5, 8)


def small_trace() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    t_ms = np.sort(rng.integers(0, 30_000, 400))
    clients = rng.choice(["a", "b", "c", "d", "e"], size=400, p=[0.4, 0.3, 0.15, 0.1, 0.05])
    return pd.DataFrame({"t_ms": t_ms, "client": clients})


def fixed_window_refused(trace: pd.DataFrame, limit: int, window_ms: int) -> tuple[int, int]:
    """Refused requests and clients refused, counted per clock-aligned window by hand."""
    cells = Counter(zip(trace["client"], trace["t_ms"] // window_ms, strict=True))
    refused = {k: n - limit for k, n in cells.items() if n > limit}
    return sum(refused.values()), len({client for client, _ in refused})


def trailing_peak(times: list[int], window_ms: int) -> int:
    return max(sum(1 for u in times if t - window_ms < u <= t) for t in times)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    trace = small_trace()
    path = tmp_path_factory.mktemp("limits") / "t.csv"
    trace.to_csv(path, index=False)
    return trace, compare_limits(
        path,
        "fixed_window:limit=3,window=2",
        ["sliding_log:limit=3,window=2", "token_bucket:limit=3,window=2"],
        LIMITS,
    )


def test_the_fixed_window_refused_per_limit_agrees_with_a_count_by_hand(run):
    trace, (_, _, table, _) = run
    mine = table[table["configuration"] == "fixed_window:limit=3,window=2"]
    assert list(mine["limit"]) == list(LIMITS)
    for row in mine.to_dict("records"):
        assert (row["refused"], row["clients_refused"]) == fixed_window_refused(
            trace, row["limit"], 2000
        )
        assert row["clients_over_limit"] == row["clients_refused"]  # its peak is per cell
    at_own = mine[mine["limit"] == 3].iloc[0]
    assert at_own["flips"] == 0  # the baseline at its own limit is the baseline


def test_the_peaks_are_the_most_in_any_window_and_the_log_refuses_exactly_those_over(run):
    trace, (_, _, table, peaks) = run
    mine = peaks[peaks["configuration"] == "sliding_log:limit=3,window=2"].set_index("client")
    for client, times in trace.groupby("client")["t_ms"]:
        assert mine.loc[client, "peak"] == trailing_peak(times.tolist(), 2000)
    log = table[table["configuration"] == "sliding_log:limit=3,window=2"]
    assert (log["clients_refused"] == log["clients_over_limit"]).all()
    assert (log["wrongly_refused"] == 0).all()


def test_the_scorecard_keeps_only_the_configurations_asked_for(run):
    _, (scorecard, clients, _, _) = run
    assert len(scorecard) == 3 and set(clients["candidate"]) <= set(scorecard["candidate"])


def test_a_bucket_at_another_limit_takes_the_default_burst_of_that_limit():
    c = parse_spec("token_bucket:limit=10,window=60")
    assert (
        at_limit(c, 20).params["burst"]
        == at_limit(parse_spec("token_bucket:limit=20,window=60"), 20).params["burst"]
    )
    given = parse_spec("token_bucket:limit=10,window=60,burst=3")
    assert at_limit(given, 20).params["burst"] == 3


def test_limits_are_a_list_or_a_range():
    assert parse_limits("5,10,20,50") == (5, 10, 20, 50)
    assert parse_limits("5..50:5") == tuple(range(5, 55, 5))
    assert parse_limits("20, 5, 5..10:5") == (5, 10, 20)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("5,x", "'x' is not a whole number"),
        ("0", "'0' is not a whole number"),
        ("50..5:5", "the range runs down"),
        ("1..100", "more than 24 limits"),
        (",", "no limit given"),
    ],
)
def test_bad_limits_are_one_message(text, needle):
    with pytest.raises(ConfigError, match="--limits") as err:
        parse_limits(text)
    assert needle in str(err.value)
