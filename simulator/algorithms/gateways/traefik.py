"""Traefik's RateLimit middleware: golang.org/x/time/rate's token bucket, one per source.

``rateLimit: {average: 6, period: 1m, burst: 1}`` as ``traefik:average=6,period=1m,burst=1``.
"The rate is defined by dividing average by period" (Traefik's docs): here r = 6 per minute, a
token every 10 s, in a bucket of ``burst`` (default 1) that starts full. Each request reserves a
token; Traefik sleeps out a wait of up to ``maxDelay`` (half a token's time, at most 500 ms below
1 request/s) and passes the request on, and refuses a longer wait with 429, cancelling the
reservation. A source idle for its ttl (1 s plus a token's time, in whole seconds) is forgotten
and comes back to a full bucket. A request admitted after a wait carries the wait in its
``retry_after_ms``, as nginx's held ones do.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from simulator.algorithms.base import NEVER, Param, Reference
from simulator.algorithms.gateways import units
from simulator.algorithms.gateways.base import GatewayLimiter, Spec, load_script, plural
from simulator.checks import ConfigError
from simulator.keys import hash_tag
from simulator.records import Decision

__all__ = ["TraefikRateLimit", "TraefikRateLimitRef", "GATEWAY", "max_delay_ns", "ttl_s"]

BURST = Param("burst", lambda limit, window_ms: 1, unit="requests", minimum=1, integer=True)


def _per_s(limit: int, window_ms: int) -> float:
    return limit * 1000 / window_ms


def max_delay_ns(limit: int, window_ms: int) -> int:
    """Traefik's maxDelay in ns: 500 ms below 1 request/s, else 1 s / (2 x whole requests per s)."""
    per_s = _per_s(limit, window_ms)
    if per_s < 1:
        return 500_000_000
    return 1_000_000_000 // (2 * math.floor(per_s))


def ttl_s(limit: int, window_ms: int) -> int:
    """Seconds a source's bucket is kept after its last request (Traefik's ttl)."""
    per_s = _per_s(limit, window_ms)
    return 2 if per_s >= 1 else 1 + int(1 / per_s)


def step(
    state: tuple[float, int, int] | None,
    now: int,
    cost: int,
    numbers: tuple[int, int, int, int, int],
) -> tuple[Decision, tuple[float, int, int]]:
    """One request as the script decides it: (decision, new state (tokens, last, seen))."""
    window, limit, burst, max_delay, ttl = numbers
    rate = limit / window
    tokens, last = float(burst), now
    if state is not None and now // 1000 - state[2] // 1000 < ttl:
        tokens, last = state[0], state[1]
    filled = min(float(burst), tokens + max(0, now - last) * rate)
    left = filled - cost
    # x/time/rate's wait: tokens / limit seconds, as whole ns (truncated)
    wait = math.floor(1e9 * (-left / (limit * 1000 / window))) if left < 0 else 0
    allowed = cost <= burst and wait <= max_delay
    kept = left if allowed else filled
    reset = math.ceil((burst - kept) / rate)
    # requests of cost 1 that would pass now, the ones held within max_delay included
    remaining = max(0, math.floor(kept + max_delay * (limit * 1000 / window) / 1e9))
    retry = math.ceil(wait / 1e6) if allowed or cost <= burst else NEVER
    return Decision(allowed, filled, burst, remaining, reset, retry), (kept, now, now)


class TraefikRateLimitRef(Reference):
    name = "traefik"
    params_declared = (BURST,)

    def __init__(self, limit: int, window_ms: int, **params: object) -> None:
        super().__init__(limit, window_ms, **params)
        self.numbers = _numbers(self.limit, self.window_ms, self.params)
        self.buckets: dict[str, tuple[float, int, int]] = {}

    def decide(self, client: str, now_ms: int, cost: int = 1) -> Decision:
        decision, self.buckets[client] = step(self.buckets.get(client), now_ms, cost, self.numbers)
        return decision


def _numbers(
    limit: int, window_ms: int, params: Mapping[str, float]
) -> tuple[int, int, int, int, int]:
    burst = int(params["burst"])
    return window_ms, limit, burst, max_delay_ns(limit, window_ms), ttl_s(limit, window_ms)


class TraefikRateLimit(GatewayLimiter):
    """Traefik RateLimit: average per period, a bucket of burst, waits up to maxDelay."""

    name = "traefik"
    label = "Traefik RateLimit"
    colour = "#9c9ede"
    scripts = ("traefik",)
    reference = TraefikRateLimitRef
    params_declared = (BURST,)
    fields_accepted = ("average", "period", "burst")
    syntax = "traefik:average=6[,period=1m][,burst=1]"
    documented_at = "https://doc.traefik.io/traefik/middlewares/http/ratelimit/"

    def __init__(self, backend: Any, limit: int, window_ms: int, **params: object) -> None:
        super().__init__(backend, limit, window_ms, **params)
        self.numbers = _numbers(self.limit, self.window_ms, self.params)

    def keys(self, client: str, now_ms: int) -> Sequence[str]:
        return (f"rl:traefik:{hash_tag(client)}",)

    def args(self, client: str, now_ms: int, cost: int = 1) -> Sequence[Any]:
        window, limit, burst, max_delay, ttl = self.numbers
        return (now_ms, window, limit, burst, max_delay, ttl, cost)

    @classmethod
    def from_spec(cls, where: str, spec: Spec) -> tuple[int, int, dict[str, float]]:
        if "average" not in spec:
            raise ConfigError(
                f"{where}: needs average=N (requests per period; Traefik's 0, no limit, is not "
                f"a limiter to compare) ({cls.syntax})"
            )
        limit = units.count(where, "average", spec["average"], minimum=1)
        window_ms = units.duration_ms(where, "period", spec.get("period", "1s"))
        # "Make the burst at least 1 so that the rate limiter is able to let through the first
        # request" (Traefik's ratelimiter.go): 0 is taken, and is 1
        burst = max(1, units.count(where, "burst", spec.get("burst", 1)))
        return limit, window_ms, {"burst": burst}

    @classmethod
    def describe(cls, limit: int, window_ms: int, params: Mapping[str, float]) -> str:
        every_s = window_ms / limit / 1000
        burst = int(params["burst"])
        return (
            f"one request per {every_s:g} s, a burst of {burst} "
            f"({plural(limit, 'request')} per {window_ms / 1000:g} s; a wait of up to "
            f"{max_delay_ns(limit, window_ms) / 1e6:g} ms is slept out, not refused)"
        )


GATEWAY = TraefikRateLimit
load_script("traefik")
