"""The grader and the shipping take a Limiter class as they take a name: the name is looked up
once where it comes in, and the answer is the same. The foreign-server check takes either too,
and on the fake server it does nothing with them."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.algorithms import ALGORITHMS, FixedWindow
from simulator.backends import FakeRedisBackend
from simulator.userscripts import register_script
from simulator.userscripts.battery import traces_for
from simulator.userscripts.check import check, fields_of
from simulator.userscripts.foreign import check_foreign
from simulator.userscripts.shipping import digest, shipped

ROOT = Path(__file__).resolve().parents[2]
CARD = ROOT / "data" / "card"


@pytest.fixture
def card_log():
    """The card's sliding log, registered as ``card_log``, forgotten afterwards."""
    yield register_script(CARD / "sliding-log.lua", "card_log")
    ALGORITHMS.pop("card_log", None)


def test_check_grades_a_class_as_it_grades_its_name(card_log):
    by_name = check("card_log", "sliding_log", only=("allowed",))
    by_class = check(card_log, ALGORITHMS["sliding_log"], only=("allowed",))
    assert by_class == by_name and by_class.agrees
    assert fields_of(card_log) == fields_of("card_log")
    assert len(traces_for(card_log, FixedWindow)) == len(traces_for("card_log", "fixed_window"))


def test_shipped_and_digest_take_the_class(card_log):
    assert shipped(card_log) == shipped("card_log") is not None
    assert digest(card_log) == digest("card_log") is not None
    assert shipped(FixedWindow) is None and digest(FixedWindow) is None


def test_check_foreign_does_nothing_on_the_fake_server_whatever_it_is_given(card_log):
    def rehearse(name, backend):
        raise AssertionError("no rehearsal on the fake server")

    check_foreign(FakeRedisBackend(), [card_log, "fixed_window"], object(), rehearse)
