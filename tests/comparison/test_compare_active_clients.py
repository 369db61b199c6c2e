"""A shard holds state for every client active at once (a request within one window): more than
half this machine's memory holds is one message naming the shard and the --shards that fit,
instead of a machine swapping. The bound is on a count; no memory is measured here."""

from __future__ import annotations

import pandas as pd
import pytest

from simulator.checks import ConfigError
from simulator.comparison import compare
from simulator.comparison import score as compare_score


def crowd(clients: int) -> pd.DataFrame:
    """Every client sends once within the first second: all active at once (window 60 s)."""
    return pd.DataFrame({"t_ms": range(clients), "client": [f"c{i}" for i in range(clients)]})


def test_more_clients_active_at_once_than_a_shard_holds_is_one_message(monkeypatch):
    monkeypatch.setattr(compare_score, "PRUNE_EVERY", 100)
    monkeypatch.setattr(compare_score, "most_active_clients", lambda: 150)
    with pytest.raises(ConfigError, match=r"shard 0 \(.*\): 200 clients active at once .* "
                       r"over the 150 one shard holds.*--shards 3"):  # fmt: skip
        compare(crowd(400), "fixed_window:limit=5,window=60", ["gcra:limit=5,window=60"])


def test_as_many_as_a_shard_holds_and_more_shards_run(monkeypatch):
    monkeypatch.setattr(compare_score, "PRUNE_EVERY", 100)
    monkeypatch.setattr(compare_score, "most_active_clients", lambda: 150)
    scorecard, _ = compare(
        crowd(400), "fixed_window:limit=5,window=60", ["gcra:limit=5,window=60"], shards=4
    )
    assert len(scorecard) == 2
