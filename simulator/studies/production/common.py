"""What the production studies share: arrivals at the app servers, and counting in a window.

A study's requests are one user's (the limit is per user), arriving as a Poisson stream and
spread over ``servers`` app servers in turn, each of which asks the limiter. Time is the virtual
clock's: every decision is made at its exact ``t_ms`` on a fake server whose clock is that time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from simulator.backends import FakeRedisBackend
from simulator.checks import MAX_LIMIT, ConfigError, check_int, check_number

__all__ = [
    "Arrivals",
    "arrivals",
    "max_in_window",
    "Clock",
    "check_setup",
    "check_some",
    "USER",
    "MAX_SERVERS",
    "MAX_STUDY_MS",
]

#: The one user every request of a study is on behalf of.
USER = "user"
#: A study's runs are small enough to read; more is refused, so nothing can run for hours.
MAX_REQUESTS = 200_000
#: The most app servers (or users) a study spreads its requests over: each holds a little state
#: of its own, and past a run's requests more of them change nothing.
MAX_SERVERS = 10_000
#: The longest time a study's field may name (a window, a span, a delay): a year, in ms.
MAX_STUDY_MS = 365 * 24 * 3_600_000


@dataclass(frozen=True)
class Arrivals:
    """Request times (integer ms, sorted) and the app server each arrives at."""

    t_ms: np.ndarray
    server: np.ndarray


def arrivals(rate_per_s: float, duration_ms: int, servers: int, seed: int) -> Arrivals:
    """Poisson arrivals at ``rate_per_s`` over ``[0, duration_ms)``, handed to the app servers
    in turn (a round-robin balancer); one generator from ``seed``."""
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    n = rng.poisson(rate_per_s * duration_ms / 1000)
    t_ms = np.sort(rng.integers(0, duration_ms, size=n)).astype("int64")
    return Arrivals(t_ms, np.arange(n, dtype="int64") % servers)


def max_in_window(t_ms: np.ndarray, window_ms: int) -> int:
    """The most of ``t_ms`` (sorted) in any ``(t - window_ms, t]``."""
    if len(t_ms) == 0:
        return 0
    starts = np.searchsorted(t_ms, t_ms - window_ms, side="right")
    return int((np.arange(len(t_ms)) - starts + 1).max())


class Clock:
    """The virtual clock a fake server follows: set ``t_ms`` before each call."""

    def __init__(self) -> None:
        self.t_ms = 0

    def backend(self) -> FakeRedisBackend:
        return FakeRedisBackend(self.now)

    def now(self) -> float:
        return self.t_ms


def _most(name: str) -> int:
    """The largest value an integer field of a setup may hold, by its name."""
    if name in ("servers", "users"):
        return MAX_SERVERS
    return MAX_STUDY_MS if name.endswith("_ms") else MAX_LIMIT


def check_setup(owner: str, setup: object, ints: dict[str, int], numbers: tuple[str, ...]) -> None:
    """Each integer field from ``ints[name]`` to its most (:data:`MAX_SERVERS` app servers or
    users, :data:`MAX_STUDY_MS` for a time, else the largest limit) and each number field
    ``> 0``, one ConfigError naming the field and its range otherwise; and a run of at most
    :data:`MAX_REQUESTS` requests. Checked before anything is made, so no field can make a
    study run for hours or fill the memory."""
    for name, lo in ints.items():
        check_int(owner, name, getattr(setup, name), lo, _most(name))
    for name in numbers:
        check_number(owner, name, getattr(setup, name), positive=True, hi=1e6)
    rate, duration = getattr(setup, "rate_per_s", None), getattr(setup, "duration_ms", None)
    if rate is not None and duration is not None and rate * duration / 1000 > MAX_REQUESTS:
        raise ConfigError(
            f"{owner}.rate_per_s: {rate:g}/s for {duration / 1000:g} s is over "
            f"{MAX_REQUESTS:,} requests; shorten duration_ms or lower the rate"
        )


def check_some(owner: str, name: str, values: Sequence[object]) -> None:
    """One ConfigError naming ``owner.name`` when a study is given nothing to run."""
    if len(values) == 0:
        raise ConfigError(f"{owner}.{name}: give at least one, got none")
