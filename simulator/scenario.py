"""What to simulate: the limiter's parameters and the clients that hit it.

Scenarios and client specs are frozen dataclasses validated on construction, so a bad value fails
at once with one message naming the field (``limit: must be >= 1, got 0``). Sweeps are made with
``dataclasses.replace``. Nothing here does I/O or touches SimPy.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = [
    "ConfigError",
    "ClientSpec",
    "ConstantRate",
    "Poisson",
    "BurstAt",
    "OnOff",
    "Polite",
    "Scenario",
    "check_int",
    "check_number",
    "check_client_id",
    "check_cost",
    "MAX_T_MS",
    "MAX_WINDOW_MS",
    "MAX_LIMIT",
]

#: The largest integer a Lua number (a double) holds exactly: scripts compute with times, windows
#: and counts as Lua numbers, so every value they see stays below it.
LUA_EXACT = 2**53
#: Latest request time (ms): a script computes ``t_ms + 2 x window_ms`` and that must stay exact.
MAX_T_MS = 2**52 - 1
#: Longest window (ms, about 35,700 years).
MAX_WINDOW_MS = 2**50
#: Largest limit per window.
MAX_LIMIT = 2**50


class ConfigError(ValueError):
    """A scenario or client field has a value the model cannot run with."""


def check_int(owner: str, name: str, value: object, lo: int, hi: int | None = None) -> int:
    """``value`` as a Python int in ``[lo, hi]``, or a :class:`ConfigError` naming the field.

    Integers of any kind are accepted (numpy's too); booleans, floats and strings are not.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ConfigError(f"{owner}.{name}: must be an integer, got {value!r}")
    number = int(value)
    if number < lo or (hi is not None and number > hi):
        bound = f">= {lo}" if hi is None else f"from {lo} to {hi:,}"
        raise ConfigError(f"{owner}.{name}: must be an integer {bound}, got {number}")
    return number


def check_number(
    owner: str, name: str, value: object, *, positive: bool = False, hi: float | None = None
) -> float:
    """``value`` as a finite number ``>= 0`` (``> 0`` if ``positive``, ``<= hi``), or ConfigError."""
    wanted = f"a finite number {'>' if positive else '>='} 0" + (
        f" and <= {hi:,.0f}" if hi is not None else ""
    )
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ConfigError(f"{owner}.{name}: must be {wanted}, got {value!r}")
    # Python numbers are kept as given (a run's id is made from the scenario's repr); others,
    # such as numpy's, become floats.
    try:
        number: float = (
            value
            if isinstance(value, int | float) and type(value) in (int, float)
            else float(value)
        )
        finite = math.isfinite(number)
    except OverflowError:  # an integer too large for a float
        raise ConfigError(f"{owner}.{name}: must be {wanted}, got {value!r}") from None
    if not finite or number < 0 or (positive and number == 0) or (hi is not None and number > hi):
        raise ConfigError(f"{owner}.{name}: must be {wanted}, got {value!r}")
    return number


def check_client_id(owner: str, name: str, value: object) -> str:
    """A client id: any string whose bytes can be written back out.

    Ids read from files keep undecodable bytes as lone surrogates U+DC80..U+DCFF (Python's
    ``surrogateescape``); any other lone surrogate stands for no byte at all and is refused.
    """
    if not isinstance(value, str):
        raise ConfigError(f"{owner}.{name}: must be a string, got {value!r}")
    try:
        value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as exc:
        raise ConfigError(
            f"{owner}.{name}: {value!r} holds a lone surrogate ({exc.object[exc.start]!r}) "
            "that stands for no byte"
        ) from None
    return value


def _set(obj: object, name: str, value: object) -> None:
    object.__setattr__(obj, name, value)  # a frozen dataclass normalising its own field


def _finite_nonneg(obj: object, name: str, hi: float | None = None) -> None:
    value = check_number(type(obj).__name__, name, getattr(obj, name), hi=hi)
    _set(obj, name, value)


def _positive(obj: object, name: str, hi: float | None = None) -> None:
    value = check_number(type(obj).__name__, name, getattr(obj, name), positive=True, hi=hi)
    _set(obj, name, value)


def check_cost(owner: str, name: str, value: object) -> int | tuple[tuple[int, float], ...]:
    """A request's cost: an integer >= 1, or a mix ``((cost, weight), ...)`` to draw from (each
    request independently, weights > 0 in any scale); ConfigError naming the field otherwise."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return check_int(owner, name, value, 1, MAX_LIMIT)
    if isinstance(value, Mapping):
        value = tuple(value.items())
    if not isinstance(value, (tuple, list)) or not value:
        raise ConfigError(
            f"{owner}.{name}: an integer >= 1 or ((cost, weight), ...) pairs, got {value!r}"
        )
    mix = []
    for i, pair in enumerate(value):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ConfigError(f"{owner}.{name}[{i}]: must be a (cost, weight) pair, got {pair!r}")
        cost = check_int(owner, f"{name}[{i}] cost", pair[0], 1, MAX_LIMIT)
        weight = check_number(owner, f"{name}[{i}] weight", pair[1], positive=True)
        mix.append((cost, weight))
    return tuple(mix)


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

    algorithm: str
    limit: int
    window_ms: int
    duration_ms: float
    clients: tuple[ClientSpec, ...] = field(default_factory=tuple)
    seed: int = 0
    #: The algorithm's own parameters by name (a burst, a cost); the rest take their defaults.
    #: Left out of the repr so that a run without any keeps its id (see ``model.run_id_for``).
    params: Mapping[str, float] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        from simulator.algorithms import ALGORITHMS  # the registry sits above the scenario

        if self.algorithm not in ALGORITHMS:
            raise ConfigError(
                f"Scenario.algorithm: unknown {self.algorithm!r}; known: {', '.join(ALGORITHMS)}"
            )
        from simulator.algorithms.base import own_params

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
        cls = ALGORITHMS[self.algorithm]
        values = own_params(
            "Scenario", cls.params_declared, self.params, self.limit, self.window_ms
        )
        _set(self, "params", MappingProxyType(values))
