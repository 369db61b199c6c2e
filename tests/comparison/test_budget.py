"""A plan's budget: read from its text, held against the configuration the pick would adopt."""

from __future__ import annotations

import pandas as pd
import pytest

from simulator.checks import ConfigError
from simulator.comparison.budget import parse_budget


def test_a_budget_reads_counts_and_shares():
    budget = parse_budget(["flips_to_refused=0.1%,clients_affected=5", "retry_after_p99_s=30"])
    assert budget is not None
    assert budget.said() == "flips_to_refused=0.1%,clients_affected=5,retry_after_p99_s=30"
    row = pd.Series({"flips_to_refused": 11, "clients_affected": 5, "retry_after_p99_s": 2.0})
    assert budget.breaches(row, requests=10_000, clients=100) == [
        "flips_to_refused 11 is over 10 (0.1 % of 10,000 requests)"
    ]
    row["flips_to_refused"] = 10
    assert budget.breaches(row, requests=10_000, clients=100) == []


def test_no_budget_is_none():
    assert parse_budget([]) is None


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("flips=3", "unknown field 'flips'"),
        ("clients_affected=many", "'many' is not a number"),
        ("clients_affected=-1", "'-1' is not a number >= 0"),
        ("clients_affected", "is not FIELD=NUMBER"),
        ("most_in_window_ratio=5%", "is not a count, so it takes no %"),
        ("refused=1,refused=2", "refused: given twice"),
        ("", "is empty"),
        ("clients_affected=nan", "is not a number"),
    ],
)
def test_a_bad_budget_is_one_message_naming_it(text, needle):
    with pytest.raises(ConfigError, match="^--budget") as err:
        parse_budget([text])
    assert needle in str(err.value)
