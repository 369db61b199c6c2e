"""What the explorer runs: its settings as one frozen value, and the scenarios they make.

Every control of the explorer sets one field here, so a run is a pure function of a
:class:`Settings` (the widgets only read and write them). The traffic is a mix of named clients
of each kind the model knows - steady, Poisson, bursts at chosen seconds, on/off, polite (waits
the Retry-After it got) - each kind with a count and its rates; or, instead, a trace file (CSV or
access log) replayed as it was recorded. The algorithms and their own parameters come from the
registry, so an algorithm registered later appears with no edit here.

The settings are where the explorer's names enter: each algorithm chosen is resolved here, once,
to a :class:`~simulator.policy.Policy` (its class, the limit, the window and its own parameters,
checked, defaults filled in), and everything below - the runs, the worker processes, the
step-through - is handed those policies and never looks a name up again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from simulator.algorithms import ALGORITHMS
from simulator.checks import ConfigError, check_int, check_number
from simulator.engine.scenario import (
    BurstAt,
    ClientSpec,
    ConstantRate,
    OnOff,
    Poisson,
    Polite,
    Scenario,
)
from simulator.policy import Policy

__all__ = [
    "Traffic",
    "Settings",
    "BACKENDS",
    "TRACE_FORMATS",
    "scenario_for",
    "expected_requests",
    "with_limit",
]

#: The backends the explorer offers: the fake server on the virtual clock, and the embedded
#: Valkey (only for algorithms that take the time from their arguments).
BACKENDS = {"fakeredis": "fakeredis (virtual clock)", "valkey": "embedded Valkey"}
#: Trace file formats: a CSV of ``t_ms,client`` or an Apache/Nginx access log.
TRACE_FORMATS = {"csv": "CSV (t_ms, client)", "clf": "access log"}


@dataclass(frozen=True)
class Traffic:
    """The mix of clients: how many of each kind, and each kind's rates (per client).

    Client ids are the kind and a number from 1: ``steady-1``, ``poisson-2``, ``bursts-1``,
    ``on_off-1``, ``polite-1``.
    """

    steady: int = 1
    steady_rate_per_s: float = 0.5
    poisson: int = 2
    poisson_rate_per_s: float = 0.5
    bursts: int = 1
    burst_n: int = 10
    burst_at_s: tuple[float, ...] = (9.0, 11.0)
    on_off: int = 1
    on_off_rate_per_s: float = 2.0
    on_s: float = 5.0
    off_s: float = 5.0
    polite: int = 1
    polite_rate_per_s: float = 2.0
    #: Requests a reader added by hand: ``(client, at_s, n)``, n requests at second ``at_s``.
    added: tuple[tuple[str, float, int], ...] = ()

    def __post_init__(self) -> None:
        for kind in ("steady", "poisson", "bursts", "on_off", "polite"):
            check_int("Traffic", kind, getattr(self, kind), 0, 10_000)
        if not isinstance(self.added, tuple) or any(len(a) != 3 for a in self.added):
            raise ConfigError(f"Traffic.added: (client, at_s, n) each, got {self.added!r}")
        check_int("Traffic", "added", sum(n for _, _, n in self.added), 0, 100_000)
        self.clients()  # every client spec validates its own fields

    def clients(self) -> tuple[ClientSpec, ...]:
        """The client specs of the mix, kind by kind."""

        def named(kind: str) -> list[str]:
            return [f"{kind}-{i}" for i in range(1, getattr(self, kind) + 1)]

        specs: list[ClientSpec] = []
        specs += [ConstantRate(n, rate_per_s=self.steady_rate_per_s) for n in named("steady")]
        specs += [Poisson(n, rate_per_s=self.poisson_rate_per_s) for n in named("poisson")]
        specs += [BurstAt(n, n=self.burst_n, at_s=self.burst_at_s) for n in named("bursts")]
        specs += [
            OnOff(
                n,
                rate_per_s=self.on_off_rate_per_s,
                on_ms=self.on_s * 1000,
                off_ms=self.off_s * 1000,
            )
            for n in named("on_off")
        ]
        specs += [Polite(n, rate_per_s=self.polite_rate_per_s) for n in named("polite")]
        # A request added by hand is one more burst of the client it was added to (the same
        # id: the same keys on the server).
        specs += [BurstAt(c, n=n, at_s=(at_s,)) for c, at_s, n in self.added]
        return tuple(specs)


def _every_algorithm() -> tuple[str, ...]:
    return tuple(ALGORITHMS)


@dataclass(frozen=True)
class Settings:
    """One explorer run: which algorithms, their limit per window and own parameters, the traffic
    (a mix of clients for ``duration_s``, or a trace file), the seed and the backend.

    ``params`` maps an algorithm's name to its own parameters (those not given take their
    defaults from the limit and the window). Of a trace, the requests from ``trace_from_s``
    seconds after its first one are run, for ``trace_span_s`` seconds (0: to its end).
    """

    algorithms: tuple[str, ...] = field(default_factory=_every_algorithm)
    limit: int = 10
    window_s: float = 10.0
    params: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    traffic: Traffic = field(default_factory=Traffic)
    duration_s: float = 60.0
    seed: int = 1
    trace: str | None = None
    trace_format: str = "csv"
    trace_from_s: float = 0.0
    trace_span_s: float = 0.0
    backend: str = "fakeredis"
    #: Each algorithm chosen, resolved with the limit, the window and its own parameters.
    policies: Mapping[str, Policy] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.algorithms, tuple):
            raise ConfigError(f"Settings.algorithms: must be a tuple, got {self.algorithms!r}")
        for name in self.algorithms:
            if name not in ALGORITHMS:
                known = ", ".join(ALGORITHMS)
                raise ConfigError(f"Settings.algorithms: unknown {name!r}; known: {known}")
        check_int("Settings", "limit", self.limit, 1)
        check_number("Settings", "window_s", self.window_s, positive=True)
        check_number("Settings", "duration_s", self.duration_s, positive=True)
        check_int("Settings", "seed", self.seed, 0)
        check_number("Settings", "trace_from_s", self.trace_from_s)
        check_number("Settings", "trace_span_s", self.trace_span_s)
        if self.backend not in BACKENDS:
            raise ConfigError(
                f"Settings.backend: unknown {self.backend!r}; known: {', '.join(BACKENDS)}"
            )
        if self.trace_format not in TRACE_FORMATS:
            raise ConfigError(f"Settings.trace_format: unknown {self.trace_format!r}")
        frozen = {a: MappingProxyType(dict(p)) for a, p in self.params.items()}
        object.__setattr__(self, "params", MappingProxyType(frozen))
        policies = {name: self._policy(name) for name in self.algorithms}
        object.__setattr__(self, "policies", MappingProxyType(policies))

    def _policy(self, name: str) -> Policy:
        """``name`` resolved; a ConfigError naming the algorithm as the registry does."""
        cls = ALGORITHMS[name]
        try:
            return Policy(cls, self.limit, self.window_ms, self.params_of(name))
        except ConfigError as exc:
            said, owner = str(exc), f"{cls.__name__}."
            raise ConfigError(
                f"{name}.{said[len(owner) :]}" if said.startswith(owner) else said
            ) from None

    @property
    def window_ms(self) -> int:
        return round(self.window_s * 1000)

    def params_of(self, algorithm: str) -> dict[str, float]:
        """The parameters given for ``algorithm`` that it declares (others are ignored)."""
        declared = {p.name for p in ALGORITHMS[algorithm].params_declared}
        return {k: v for k, v in self.params.get(algorithm, {}).items() if k in declared}


def with_limit(settings: Settings, limit: int) -> Settings:
    """``settings`` at another limit, as the controls would show it: each parameter still at
    its default (from the limit and the window) takes the new limit's default."""
    params: dict[str, dict[str, float]] = {}
    for name, given in settings.params.items():
        declared = (
            {p.name: p for p in ALGORITHMS[name].params_declared} if name in ALGORITHMS else {}
        )
        moved = dict(given)
        for param, value in given.items():
            p = declared.get(param)
            if p is not None and value == p.default(settings.limit, settings.window_ms):
                moved[param] = p.default(limit, settings.window_ms)
        params[name] = moved
    return replace(settings, limit=limit, params=params)


def scenario_for(settings: Settings, algorithm: str) -> Scenario:
    """The scenario one algorithm runs under ``settings`` (traffic mix; not a trace)."""
    return Scenario(
        algorithm,
        limit=settings.limit,
        window_ms=settings.window_ms,
        duration_ms=settings.duration_s * 1000,
        clients=settings.traffic.clients(),
        seed=settings.seed,
        params=settings.params_of(algorithm),
    )


def expected_requests(settings: Settings) -> float:
    """About how many requests one algorithm decides (a polite client's retries not counted)."""
    t, d = settings.traffic, settings.duration_s
    on_share = t.on_s / (t.on_s + t.off_s) if t.on_s + t.off_s > 0 else 1.0
    rates = (
        t.steady * t.steady_rate_per_s
        + t.poisson * t.poisson_rate_per_s
        + t.on_off * t.on_off_rate_per_s * on_share
        + t.polite * t.polite_rate_per_s
    )
    bursts = t.bursts * t.burst_n * sum(1 for s in t.burst_at_s if s < d)
    return rates * d + bursts + sum(n for _, at_s, n in t.added if at_s < d)
