"""What to simulate: the limiter's parameters and the clients that hit it.

Scenarios and client specs are frozen dataclasses validated on construction, so a bad value fails
at once with one message naming the field (``limit: must be >= 1, got 0``). Sweeps are made with
``dataclasses.replace``. Nothing here does I/O or touches SimPy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from simulator.algorithms.base import own_params
from simulator.checks import (
    MAX_LIMIT,
    MAX_T_MS,
    MAX_WINDOW_MS,
    ConfigError,
    check_client_id,
    check_cost,
    check_int,
    check_number,
)
from simulator.policy import Policy, lookup

__all__ = ["ClientSpec", "ConstantRate", "Poisson", "BurstAt", "OnOff", "Polite", "Scenario"]


def _set(obj: object, name: str, value: object) -> None:
    object.__setattr__(obj, name, value)  # a frozen dataclass normalising its own field


def _finite_nonneg(obj: object, name: str, hi: float | None = None) -> None:
    value = check_number(type(obj).__name__, name, getattr(obj, name), hi=hi)
    _set(obj, name, value)


def _positive(obj: object, name: str, hi: float | None = None) -> None:
    value = check_number(type(obj).__name__, name, getattr(obj, name), positive=True, hi=hi)
    _set(obj, name, value)


@dataclass(frozen=True)
class ClientSpec:
    """One simulated client; ``name`` is its client id (any string).

    ``cost`` (keyword only): what each of its requests counts, an integer (default 1), or a mix
    ``((1, 0.9), (10, 0.1))`` each request draws from (weights in any scale).
    """

    name: str
    cost: int | tuple[tuple[int, float], ...] = field(default=1, kw_only=True, repr=False)

    def __post_init__(self) -> None:
        check_client_id(type(self).__name__, "name", self.name)
        _set(self, "cost", check_cost(type(self).__name__, "cost", self.cost))


@dataclass(frozen=True)
class ConstantRate(ClientSpec):
    """Requests evenly spaced at ``rate_per_s``, the first at ``start_ms``."""

    rate_per_s: float = 1.0
    start_ms: float = 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        _finite_nonneg(self, "rate_per_s")
        _finite_nonneg(self, "start_ms", MAX_T_MS)


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
        _set(self, "n", check_int("BurstAt", "n", self.n, 0, MAX_LIMIT))
        if not isinstance(self.at_s, tuple):
            raise ConfigError(f"BurstAt.at_s: must be a tuple of seconds, got {self.at_s!r}")
        seconds = tuple(check_number("BurstAt", "at_s", s, hi=MAX_T_MS / 1000) for s in self.at_s)
        _set(self, "at_s", seconds)

    def bursts(self) -> list[tuple[float, int]]:
        """``(at_ms, n)`` in time order: what the burst player plays."""
        return [(at_s * 1000.0, self.n) for at_s in sorted(self.at_s)]


@dataclass(frozen=True)
class OnOff(ClientSpec):
    """Poisson at ``rate_per_s`` for ``on_ms``, then silent for ``off_ms``, repeated."""

    rate_per_s: float = 10.0
    on_ms: float = 1000.0
    off_ms: float = 1000.0
    start_ms: float = 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        _finite_nonneg(self, "rate_per_s")
        _positive(self, "on_ms", MAX_T_MS)
        _finite_nonneg(self, "off_ms", MAX_T_MS)
        _finite_nonneg(self, "start_ms", MAX_T_MS)


@dataclass(frozen=True)
class Polite(ConstantRate):
    """Sends at ``rate_per_s``; after a refusal waits the Retry-After it got, then retries."""


@dataclass(frozen=True)
class Scenario:
    """One run: an algorithm, its limit per window, the clients, how long, which seed."""

    algorithm: str  # a Limiter class is taken too, and kept as its name
    limit: int
    window_ms: int
    duration_ms: float
    clients: tuple[ClientSpec, ...] = field(default_factory=tuple)
    seed: int = 0
    #: The algorithm's own parameters by name (a burst, a cost); the rest take their defaults.
    #: Left out of the repr so that a run without any keeps its id (see ``model.run_id_for``).
    params: Mapping[str, float] = field(default_factory=dict, repr=False, compare=False)
    #: The algorithm resolved with its numbers (set from the fields above): what the run uses.
    policy: Policy = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # a name or a Limiter class; the field keeps the name, as every frame's column says it
        cls = lookup(self.algorithm, owner="Scenario.algorithm")
        _set(self, "algorithm", cls.name)
        if not isinstance(self.params, Mapping):
            raise ConfigError(
                f"Scenario.params: must be a mapping of names to numbers, got {self.params!r}"
            )
        _set(self, "limit", check_int("Scenario", "limit", self.limit, 1, MAX_LIMIT))
        _set(
            self, "window_ms", check_int("Scenario", "window_ms", self.window_ms, 1, MAX_WINDOW_MS)
        )
        _positive(self, "duration_ms", MAX_T_MS)
        if not isinstance(self.clients, tuple) or not all(
            isinstance(c, ClientSpec) for c in self.clients
        ):
            raise ConfigError("Scenario.clients: must be a tuple of client specs")
        _set(self, "seed", check_int("Scenario", "seed", self.seed, 0))
        values = own_params(
            "Scenario", cls.params_declared, self.params, self.limit, self.window_ms
        )
        _set(self, "params", MappingProxyType(values))
        _set(self, "policy", Policy(cls, self.limit, self.window_ms, values))
