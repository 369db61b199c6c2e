"""What to simulate: the limiter's parameters and the clients that hit it.

Scenarios and client specs are frozen dataclasses validated on construction, so a bad value fails
at once with one message naming the field (``limit: must be >= 1, got 0``). Sweeps are made with
``dataclasses.replace``. Nothing here does I/O or touches SimPy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = [
    "ConfigError",
    "ClientSpec",
    "ConstantRate",
    "Poisson",
    "BurstAt",
    "OnOff",
    "Polite",
    "Scenario",
]

KNOWN_ALGORITHMS = ("fixed_window", "echomq", "sliding_log", "sliding_counter")


class ConfigError(ValueError):
    """A scenario or client field has a value the model cannot run with."""


def _finite_nonneg(owner: str, name: str, value: float) -> None:
    if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise ConfigError(f"{owner}.{name}: must be a finite number >= 0, got {value!r}")


def _positive(owner: str, name: str, value: float) -> None:
    if not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{owner}.{name}: must be a finite number > 0, got {value!r}")


@dataclass(frozen=True)
class ClientSpec:
    """One simulated client; ``name`` is its client id (any string)."""

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise ConfigError(f"{type(self).__name__}.name: must be a string, got {self.name!r}")


@dataclass(frozen=True)
class ConstantRate(ClientSpec):
    """Requests evenly spaced at ``rate_per_s``, the first at ``start_ms``."""

    rate_per_s: float = 1.0
    start_ms: float = 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        _finite_nonneg(type(self).__name__, "rate_per_s", self.rate_per_s)
        _finite_nonneg(type(self).__name__, "start_ms", self.start_ms)


@dataclass(frozen=True)
class Poisson(ConstantRate):
    """Requests as a Poisson process with mean ``rate_per_s``."""


@dataclass(frozen=True)
class BurstAt(ClientSpec):
    """``n`` requests at the same instant, at each of the seconds ``at_s``."""

    n: int = 1
    at_s: tuple[float, ...] = (0.0,)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.n, int) or self.n < 0:
            raise ConfigError(f"BurstAt.n: must be an integer >= 0, got {self.n!r}")
        if not isinstance(self.at_s, tuple):
            raise ConfigError(f"BurstAt.at_s: must be a tuple of seconds, got {self.at_s!r}")
        for s in self.at_s:
            _finite_nonneg("BurstAt", "at_s", s)


@dataclass(frozen=True)
class OnOff(ClientSpec):
    """Poisson at ``rate_per_s`` for ``on_ms``, then silent for ``off_ms``, repeated."""

    rate_per_s: float = 10.0
    on_ms: float = 1000.0
    off_ms: float = 1000.0
    start_ms: float = 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        _finite_nonneg("OnOff", "rate_per_s", self.rate_per_s)
        _positive("OnOff", "on_ms", self.on_ms)
        _finite_nonneg("OnOff", "off_ms", self.off_ms)
        _finite_nonneg("OnOff", "start_ms", self.start_ms)


@dataclass(frozen=True)
class Polite(ConstantRate):
    """Sends at ``rate_per_s``; after a refusal waits the Retry-After it got, then retries."""


@dataclass(frozen=True)
class Scenario:
    """One run: an algorithm, its limit per window, the clients, how long, which seed."""

    algorithm: str
    limit: int
    window_ms: int
    duration_ms: float
    clients: tuple[ClientSpec, ...] = field(default_factory=tuple)
    seed: int = 0

    def __post_init__(self) -> None:
        if self.algorithm not in KNOWN_ALGORITHMS:
            raise ConfigError(
                f"Scenario.algorithm: unknown {self.algorithm!r}; known: {', '.join(KNOWN_ALGORITHMS)}"
            )
        if not isinstance(self.limit, int) or isinstance(self.limit, bool) or self.limit < 1:
            raise ConfigError(f"Scenario.limit: must be an integer >= 1, got {self.limit!r}")
        if not isinstance(self.window_ms, int) or self.window_ms <= 0:
            raise ConfigError(f"Scenario.window_ms: must be an integer > 0, got {self.window_ms!r}")
        _positive("Scenario", "duration_ms", self.duration_ms)
        if not isinstance(self.clients, tuple) or not all(
            isinstance(c, ClientSpec) for c in self.clients
        ):
            raise ConfigError("Scenario.clients: must be a tuple of client specs")
        if not isinstance(self.seed, int) or self.seed < 0:
            raise ConfigError(f"Scenario.seed: must be an integer >= 0, got {self.seed!r}")
