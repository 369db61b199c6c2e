"""Kong's rate-limiting plugin: a fixed window on the clock for each period configured.

``config: {minute: 100, hour: 1000}`` as ``kong:minute=100,hour=1000``. "How many HTTP requests
can be made in a given period of seconds, minutes, hours, days, months, or years" (Kong's
docs): each period is its own counter for the clock's current second, minute, hour or day
(UTC), and the handler refuses with 429 as soon as any of them has no request left. A refused
request is not counted (the counters are incremented after the request, only for one that went
through). The limit and window are those of the shortest period; the others are parameters
(0: not configured). Kong's month and year are calendar months and years and are not offered.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from simulator.algorithms.base import NEVER, Param, Reference
from simulator.algorithms.gateways import units
from simulator.algorithms.gateways.base import GatewayLimiter, Spec, load_script, plural
from simulator.checks import ConfigError
from simulator.keys import hash_tag
from simulator.records import Decision

__all__ = ["KongRateLimiting", "KongRateLimitingRef", "GATEWAY", "PERIODS_MS", "windows"]

#: Kong's fixed periods, in ms.
PERIODS_MS = {"second": 1000, "minute": 60_000, "hour": 3_600_000, "day": 86_400_000}
PARAMS = tuple(
    Param(period, lambda limit, window_ms: 0, unit="requests", integer=True)
    for period in PERIODS_MS
)


def windows(limit: int, window_ms: int, params: Mapping[str, float]) -> list[tuple[str, int, int]]:
    """Every window, shortest first, as (name, period ms, limit): the limit per window and each
    period configured (the tighter limit where one period is named twice)."""
    named = {ms: name for name, ms in PERIODS_MS.items()}
    found = {window_ms: limit}
    for name, ms in PERIODS_MS.items():
        if params.get(name):
            found[ms] = min(found.get(ms, int(params[name])), int(params[name]))
    return [(named.get(ms, f"{ms}ms"), ms, n) for ms, n in sorted(found.items())]


def step(
    used: Sequence[int], now: int, cost: int, configured: Sequence[tuple[str, int, int]]
) -> Decision:
    """One request as the script decides it, given each window's count so far."""
    tight = min(range(len(configured)), key=lambda i: configured[i][2] - used[i])
    retry, never = 0, False
    for (_, period, limit), count in zip(configured, used, strict=True):
        if count + cost > limit:
            never = never or cost > limit
            retry = max(retry, (now // period + 1) * period - now)
    _, period, limit = configured[tight]
    ends = (now // period + 1) * period - now
    if retry:
        return Decision(
            False, used[tight], limit, limit - used[tight], ends, NEVER if never else retry
        )
    return Decision(True, used[tight], limit, limit - used[tight] - cost, ends, 0)


class KongRateLimitingRef(Reference):
    name = "kong"
    params_declared = PARAMS

    def __init__(self, limit: int, window_ms: int, **params: object) -> None:
        super().__init__(limit, window_ms, **params)
        self.windows = windows(self.limit, self.window_ms, self.params)
        self.counts: dict[tuple[str, int, int], int] = {}  # (client, period, index) -> count

    def decide(self, client: str, now_ms: int, cost: int = 1) -> Decision:
        cells = [(client, period, now_ms // period) for _, period, _ in self.windows]
        decision = step([self.counts.get(c, 0) for c in cells], now_ms, cost, self.windows)
        if decision.allowed:
            for cell in cells:
                self.counts[cell] = self.counts.get(cell, 0) + cost
        return decision


def _check_periods_order(where: str, given: Mapping[str, int]) -> None:
    """Kong's schema (``validate_periods_order``): a longer period's limit may not be below a
    shorter one's, said in Kong's words."""
    ordered = sorted(given, key=PERIODS_MS.__getitem__)
    for i, longer in enumerate(ordered):
        for shorter in ordered[:i]:
            if given[longer] < given[shorter]:
                raise ConfigError(
                    f"{where}: The limit for {longer}({given[longer]:.1f}) cannot be lower than "
                    f"the limit for {shorter}({given[shorter]:.1f})"
                )


class KongRateLimiting(GatewayLimiter):
    """Kong rate-limiting: fixed windows per second, minute, hour and day, all at once."""

    name = "kong"
    label = "Kong rate-limiting"
    colour = "#fdae6b"
    counted_window = "grid"
    scripts = ("kong",)
    reference = KongRateLimitingRef
    params_declared = PARAMS
    fields_accepted = tuple(PERIODS_MS)
    fields_refused = ("month", "year")
    syntax = "kong:minute=100[,second=N][,hour=N][,day=N]"
    documented_at = "https://developer.konghq.com/plugins/rate-limiting/"

    def __init__(self, backend: Any, limit: int, window_ms: int, **params: object) -> None:
        super().__init__(backend, limit, window_ms, **params)
        self.windows = windows(self.limit, self.window_ms, self.params)

    def keys(self, client: str, now_ms: int) -> Sequence[str]:
        tag = hash_tag(client)
        return [f"ratelimit:{tag}:{ms}:{now_ms // ms}:{name}" for name, ms, _ in self.windows]

    def args(self, client: str, now_ms: int, cost: int = 1) -> Sequence[Any]:
        pairs = [x for _, ms, n in self.windows for x in (ms, n)]
        return (now_ms, *pairs, cost)

    @classmethod
    def from_spec(cls, where: str, spec: Spec) -> tuple[int, int, dict[str, float]]:
        for calendar in ("month", "year"):
            if calendar in spec:
                raise ConfigError(
                    f"{where}: {calendar}: Kong's calendar {calendar}s are not modelled; "
                    f"give second, minute, hour or day ({cls.syntax})"
                )
        given = {p: units.count(where, p, spec[p], minimum=1) for p in PERIODS_MS if p in spec}
        if not given:
            raise ConfigError(
                f"{where}: needs at least one of second, minute, hour, day ({cls.syntax})"
            )
        _check_periods_order(where, given)
        shortest = min(given, key=PERIODS_MS.__getitem__)
        params: dict[str, float] = {p: given.get(p, 0) for p in PERIODS_MS}
        return given[shortest], PERIODS_MS[shortest], params

    @classmethod
    def describe(cls, limit: int, window_ms: int, params: Mapping[str, float]) -> str:
        parts = [
            f"{plural(n, 'request')} per clock {name}"
            for name, _, n in windows(limit, window_ms, params)
        ]
        return (
            " and ".join(parts) + ", refused when any is used up (a refused request is not counted)"
        )


GATEWAY = KongRateLimiting
load_script("kong")
