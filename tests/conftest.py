"""Shared fixtures: a fake server whose clock the test sets by hand, in milliseconds."""

from __future__ import annotations

import pytest

from simulator.backends import FakeRedisBackend


class ManualClock:
    """A clock a test moves by hand: ``clock.t_ms = 1234``."""

    def __init__(self, t_ms: float = 0.0) -> None:
        self.t_ms = t_ms

    def __call__(self) -> float:
        return self.t_ms


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def fake(clock: ManualClock) -> FakeRedisBackend:
    return FakeRedisBackend(clock)
