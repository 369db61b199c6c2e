"""The pick follows its one-sentence rule, and keeping the baseline is one of the options.

A change that decides every request as the baseline does and holds more memory per client is
not recommended; one that decides the same and holds less is; a baseline that lets clients far
over the limit is left for the candidate that holds them within it.
"""

from __future__ import annotations

import pandas as pd

from simulator.comparison import compare
from simulator.comparison.choice import pick, rule, verdict


def card(**columns: list) -> pd.DataFrame:
    base = {
        "candidate": ["base", "a", "b"],
        "role": ["baseline", "candidate", "candidate"],
        "refused": [10, 10, 10],
        "most_in_window_ratio": [1.0, 1.0, 1.0],
        "flips_to_refused": [0, 0, 0],
        "clients_affected": [0, 0, 0],
        "bytes_per_active_client": [90.0, 180.0, 360.0],
    }
    base.update(columns)
    return pd.DataFrame(base)


def test_a_change_that_flips_nothing_and_costs_more_keeps_the_baseline():
    best, why = pick(card())
    assert best["role"] == "baseline" and "no candidate that does refuses fewer" in why
    assert verdict(card()).startswith("Pick: keep the baseline base:")


def test_a_change_that_flips_nothing_and_costs_less_is_taken():
    best, _ = pick(card(bytes_per_active_client=[90.0, 60.0, 360.0]))
    assert best["candidate"] == "a"
    assert verdict(card(bytes_per_active_client=[90.0, 60.0, 360.0])).startswith(
        "Pick: switch to a:"
    )


def test_a_baseline_without_the_protection_gives_way():
    best, why = pick(card(most_in_window_ratio=[1.9, 1.2, 1.0], flips_to_refused=[0, 5, 3]))
    assert best["candidate"] == "b" and "1 of the 3 options does not" in why


def test_when_no_option_has_the_protection_the_closest_is_taken():
    best, why = pick(card(most_in_window_ratio=[2.0, 1.9, 1.5]), 1.25)
    assert best["candidate"] == "b" and "comes closest (1.50x)" in why


def test_the_rule_is_one_sentence_that_names_keeping_the_baseline():
    text = rule(1.25)
    assert text.count(". ") == 0 and text.endswith(".")
    assert "keeping the baseline" in text and "1.25x" in text


def test_on_a_trace_where_nothing_flips_the_pick_is_keep_the_baseline():
    trace = pd.DataFrame({"t_ms": [i * 500 for i in range(40)], "client": ["a", "b"] * 20})
    scorecard, _ = compare(
        trace,
        "fixed_window:limit=20,window=60",
        ["sliding_counter:limit=20,window=60", "sliding_log:limit=20,window=60"],
    )
    assert (scorecard["flips_to_refused"] == 0).all()
    assert verdict(scorecard).startswith("Pick: keep the baseline fixed_window:limit=20,window=60")
