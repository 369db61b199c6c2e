"""The reveal helper: no answer without a guess, then the guess beside the result."""

from __future__ import annotations

import pandas as pd
import pytest

from simulator.lessons import NO_GUESS, guessed, hold, reveal


@pytest.mark.parametrize("guess", [None, {}, {"a": None, "b": None}])
def test_no_guess_shows_no_answer(guess):
    text = reveal(guess, pd.Series({"a": 123, "b": 456}), "admitted").data
    assert NO_GUESS in text and "123" not in text and "456" not in text
    assert not guessed(guess)


def test_one_number_is_right_over_or_under():
    assert "right" in reveal(100, 100).data
    assert "over by 50 (50%)" in reveal(150, 100, "MB").data
    assert "100 MB" in reveal(150, 100, "MB").data
    assert "under by 1.50" in reveal(1.0, 2.5).data


def test_names_guessed_and_not():
    text = reveal({"a": 100, "zz": 3}, {"a": 200, "b": 5}, "admitted").data
    assert "| `a` | 100 | 200 | under by 100 (50%) |" in text
    assert "| `b` | – | 5 | not guessed |" in text
    assert "`zz`" in text and "not compared" in text


def test_a_guess_that_is_not_a_number_names_the_field():
    with pytest.raises(TypeError, match=r"my_guess\['a'\]"):
        reveal({"a": "lots"}, {"a": 1})
    with pytest.raises(TypeError, match="my_guess"):
        reveal("lots", 1)


def test_hold_keeps_a_result_until_a_guess():
    table = pd.DataFrame({"admitted": [200]})
    assert NO_GUESS in hold(None, table, "the summary").data
    assert hold({"fixed_window": 100}, table) is table
