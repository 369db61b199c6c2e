"""Which runs go on real time is worked out in one function: an algorithm whose window is a key's
TTL (it follows the server's clock), on a server whose clock is the wall clock."""

from __future__ import annotations

import pytest

from simulator.algorithms import ALGORITHMS, EchoMQ, SlidingLog
from simulator.backends import FakeRedisBackend
from simulator.backends.specs import resolve_spec
from simulator.engine.realtime import runs_on_real_time, time_note
from simulator.policy import Policy


class _RealClock:
    """A server whose keys expire by the wall clock (any server but the fake one)."""

    virtual_time = False
    name = "valkey"


@pytest.mark.parametrize("cls", list(ALGORITHMS.values()), ids=list(ALGORITHMS))
def test_only_a_server_clock_algorithm_on_a_real_server_runs_on_real_time(cls):
    assert runs_on_real_time(FakeRedisBackend(), cls) is False
    assert runs_on_real_time(_RealClock(), cls) is cls.uses_server_time


def test_a_policy_and_its_class_give_the_same_answer():
    for cls in (EchoMQ, SlidingLog):
        policy = Policy(cls, 10, 1_000)
        assert runs_on_real_time(_RealClock(), policy) is runs_on_real_time(_RealClock(), cls)


def test_a_backend_spec_is_asked_as_the_backend_would_be():
    assert runs_on_real_time(resolve_spec("fakeredis"), EchoMQ) is False
    assert runs_on_real_time(resolve_spec("valkey"), EchoMQ) is True
    assert runs_on_real_time(resolve_spec("valkey"), SlidingLog) is False


def test_the_time_note_says_real_time_exactly_where_the_run_goes_on_it():
    assert "REAL TIME" in time_note(EchoMQ, _RealClock())  # type: ignore[arg-type]
    assert "REAL TIME" not in time_note(SlidingLog, _RealClock())  # type: ignore[arg-type]
    assert "REAL TIME" not in time_note(EchoMQ, FakeRedisBackend())
