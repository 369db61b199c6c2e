"""Spring Cloud Gateway's RedisRateLimiter: Stripe's token bucket in whole seconds.

``redis-rate-limiter.replenishRate: 10``, ``burstCapacity: 20``, ``requestedTokens: 1`` as
``spring:replenishRate=10,burstCapacity=20,requestedTokens=1``. "This defines a request rate
limit of 10 per user. A burst of 20 is allowed, but, in the next second, only 10 requests are
available" (Spring's docs). Its ``request_rate_limiter.lua`` counts time in whole seconds, so the
bucket refills in steps of ``replenishRate`` at each second boundary, not continuously. A rate
below one request per second is written, as Spring's docs show, with ``requestedTokens``: each
request takes that many tokens (``replenishRate=1,requestedTokens=60,burstCapacity=60`` is one
request a minute).
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

__all__ = ["SpringRedisRateLimiter", "SpringRedisRateLimiterRef", "GATEWAY"]

CAPACITY = Param(
    "burst_capacity", lambda limit, window_ms: limit, unit="tokens", minimum=1, integer=True
)
REQUESTED = Param(
    "requested_tokens", lambda limit, window_ms: 1, unit="tokens", minimum=1, integer=True
)
PARAMS = (CAPACITY, REQUESTED)


def _numbers(limit: int, window_ms: int, params: Mapping[str, float]) -> tuple[float, int, int]:
    """(replenish rate per second, capacity, tokens per request)."""
    return limit * 1000 / window_ms, int(params["burst_capacity"]), int(params["requested_tokens"])


def step(
    state: tuple[float, int] | None, now_ms: int, cost: int, numbers: tuple[float, int, int]
) -> tuple[Decision, tuple[float, int] | None]:
    """One request as the script decides it: (decision, new state or None when not stored)."""
    rate, capacity, per_request = numbers
    requested = per_request * cost
    now = now_ms // 1000
    ttl = math.floor(capacity / rate * 2)
    last_tokens, last_refreshed = state if state is not None else (float(capacity), 0)
    filled = min(capacity, last_tokens + max(0, now - last_refreshed) * rate)
    allowed = filled >= requested
    new_tokens = filled - requested if allowed else filled

    def boundary_after(level: float, want: float) -> int:
        seconds = math.ceil((want - level) / rate)
        return 0 if seconds <= 0 else (now + seconds) * 1000 - now_ms

    retry = (
        0 if allowed else (boundary_after(filled, requested) if requested <= capacity else NEVER)
    )
    decision = Decision(
        allowed,
        filled,
        capacity,
        math.floor(new_tokens),
        boundary_after(new_tokens, capacity),
        retry,
    )
    return decision, ((new_tokens, now) if ttl > 0 else None)


class SpringRedisRateLimiterRef(Reference):
    name = "spring"
    params_declared = PARAMS

    def __init__(self, limit: int, window_ms: int, **params: object) -> None:
        super().__init__(limit, window_ms, **params)
        self.numbers = _numbers(self.limit, self.window_ms, self.params)
        self.buckets: dict[str, tuple[float, int]] = {}

    def decide(self, client: str, now_ms: int, cost: int = 1) -> Decision:
        # a bucket's expiry (2 x its fill time) comes after it is full again: not modelled
        decision, new = step(self.buckets.get(client), now_ms, cost, self.numbers)
        if new is not None:
            self.buckets[client] = new
        return decision


class SpringRedisRateLimiter(GatewayLimiter):
    """Spring Cloud Gateway RedisRateLimiter: replenishRate per second, burstCapacity tokens."""

    name = "spring"
    label = "Spring Cloud Gateway"
    colour = "#b5cf6b"
    scripts = ("spring",)
    reference = SpringRedisRateLimiterRef
    params_declared = PARAMS
    fields_accepted = ("replenishRate", "burstCapacity", "requestedTokens")
    syntax = "spring:replenishRate=10[,burstCapacity=20][,requestedTokens=1]"
    documented_at = (
        "https://docs.spring.io/spring-cloud-gateway/reference/spring-cloud-gateway/"
        "gatewayfilter-factories/requestratelimiter-factory.html"
    )

    def __init__(self, backend: Any, limit: int, window_ms: int, **params: object) -> None:
        super().__init__(backend, limit, window_ms, **params)
        self.numbers = _numbers(self.limit, self.window_ms, self.params)

    def keys(self, client: str, now_ms: int) -> Sequence[str]:
        tag = hash_tag(client)
        return (f"request_rate_limiter.{tag}.tokens", f"request_rate_limiter.{tag}.timestamp")

    def args(self, client: str, now_ms: int, cost: int = 1) -> Sequence[Any]:
        rate, capacity, per_request = self.numbers
        return (now_ms, f"{rate:.17g}", capacity, per_request, cost)

    @classmethod
    def from_spec(cls, where: str, spec: Spec) -> tuple[int, int, dict[str, float]]:
        if "replenishRate" not in spec:
            raise ConfigError(f"{where}: needs replenishRate=N (tokens per second) ({cls.syntax})")
        rate = units.count(where, "replenishRate", spec["replenishRate"], minimum=1)
        # left out, the capacity is RedisRateLimiter.Config's own default, 1 (its setter, which
        # checks it against the rate, is then never called)
        capacity = 1
        if "burstCapacity" in spec:
            capacity = units.count(where, "burstCapacity", spec["burstCapacity"], minimum=1)
            if capacity < rate:  # Config.setBurstCapacity's assertion, in its words
                raise ConfigError(
                    f"{where}: BurstCapacity({capacity}) must be greater than or equal than "
                    f"replenishRate({rate})"
                )
        requested = units.count(where, "requestedTokens", spec.get("requestedTokens", 1), minimum=1)
        if requested > capacity:
            raise ConfigError(
                f"{where}: requestedTokens({requested}) is more than burstCapacity({capacity}): "
                "the bucket never holds that many tokens, so every request would be refused"
            )
        return rate, 1000, {"burst_capacity": capacity, "requested_tokens": requested}

    @classmethod
    def describe(cls, limit: int, window_ms: int, params: Mapping[str, float]) -> str:
        rate, capacity, per_request = _numbers(limit, window_ms, params)
        at_once = capacity // per_request
        steady = rate / per_request
        if math.floor(capacity / rate * 2) == 0 and per_request <= capacity:
            return (
                f"a capacity of {plural(capacity, 'token')} at {rate:g} per s: the keys' ttl "
                f"floor(2 × {capacity}/{rate:g}) is 0 s, so nothing is stored and every request "
                "is admitted, as in Spring"
            )
        return (
            f"{plural(at_once, 'request')} at once, then {steady:g} per s, added in steps at "
            f"each second boundary ({plural(per_request, 'token')} a request)"
        )


GATEWAY = SpringRedisRateLimiter
load_script("spring")
