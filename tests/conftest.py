"""Shared fixtures: a fake server whose clock the test sets by hand, in milliseconds.

Tests that hold every registered algorithm at once (a line each in ``burst``, the palette, a
chart of them all) are marked ``every_algorithm``; with those whose id names an algorithm they
are what ``tests/test_toy.py`` runs over the toy algorithm of ``tests/toy/``.
"""

from __future__ import annotations

import signal

import pytest

from simulator.backends import FakeRedisBackend


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "every_algorithm: holds every registered algorithm at once (see test_toy.py)"
    )


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


@pytest.fixture(autouse=True)
def sigint_raises_in_children():
    """Subprocesses that a test stops with SIGINT must not inherit it ignored.

    A process started with SIGINT ignored keeps ignoring it (Python then installs no
    KeyboardInterrupt handler), and something in a test worker can leave it ignored (a kernel
    manager, a library). The tests send Ctrl-C to children and expect them to stop.
    """
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
