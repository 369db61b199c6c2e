"""Envoy's local rate limit: a token bucket that a timer fills at interval boundaries.

``token_bucket: {max_tokens: 10, tokens_per_fill: 5, fill_interval: 1s}`` as
``envoy:max_tokens=10,tokens_per_fill=5,fill_interval=1s``. "The maximum tokens that the bucket
can hold. This is also the number of tokens that the bucket initially contains"; "During each
fill interval tokens_per_fill are added to the bucket" (Envoy's TokenBucket). The timer-driven
bucket (Envoy before 1.32, and after it with its runtime guard turned off) adds the tokens at
the ticks, so a bucket drained just after a tick waits the whole interval; Envoy requires
``fill_interval`` of at least 50 ms, and so does the SPEC (a window set otherwise, ``burst
--window``, may be shorter). The plain filter shares one bucket among every client; the
simulator gives each client its own, as a descriptor keyed on the client does.
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

__all__ = ["EnvoyLocalRateLimit", "EnvoyLocalRateLimitRef", "GATEWAY", "LEAST_INTERVAL_MS"]

MAX_TOKENS = Param(
    "max_tokens", lambda limit, window_ms: limit, unit="tokens", minimum=1, integer=True
)
#: The shortest fill interval Envoy's local rate limit filter accepts.
LEAST_INTERVAL_MS = 50


def step(
    state: tuple[int, int] | None, now: int, cost: int, interval: int, per_fill: int, most: int
) -> tuple[Decision, tuple[int, int] | None, int]:
    """One request as the script decides it: (decision, new state or None, ms it is kept)."""
    tick = now // interval
    tokens = most
    if state is not None:
        tokens = min(most, state[0] + max(0, tick - state[1]) * per_fill)

    def ticks_until(level: int, want: int) -> int:
        ticks = math.ceil((want - level) / per_fill)
        return 0 if ticks <= 0 else (tick + ticks) * interval - now

    if cost > tokens:
        retry = ticks_until(tokens, cost) if cost <= most else NEVER
        return Decision(False, tokens, most, tokens, ticks_until(tokens, most), retry), None, 0
    left = tokens - cost
    reset = ticks_until(left, most)
    return Decision(True, tokens, most, left, reset, 0), (left, tick), reset + 1


class EnvoyLocalRateLimitRef(Reference):
    name = "envoy"
    params_declared = (MAX_TOKENS,)

    def __init__(self, limit: int, window_ms: int, **params: object) -> None:
        super().__init__(limit, window_ms, **params)
        self.most = int(self.params["max_tokens"])
        self.buckets: dict[str, tuple[tuple[int, int], int]] = {}  # client -> (state, expiry)

    def decide(self, client: str, now_ms: int, cost: int = 1) -> Decision:
        kept = self.buckets.get(client)
        state = kept[0] if kept is not None and now_ms <= kept[1] else None
        decision, new, ttl = step(state, now_ms, cost, self.window_ms, self.limit, self.most)
        if new is not None:
            self.buckets[client] = (new, now_ms + ttl)
        return decision


def _check_interval(where: str, interval_ms: int) -> None:
    if interval_ms < LEAST_INTERVAL_MS:
        raise ConfigError(
            f"{where}: fill_interval must be at least {LEAST_INTERVAL_MS} ms (Envoy refuses a "
            f"faster fill timer), got {interval_ms} ms"
        )


class EnvoyLocalRateLimit(GatewayLimiter):
    """Envoy local rate limit: max_tokens, tokens_per_fill at each fill_interval tick."""

    name = "envoy"
    label = "Envoy local rate limit"
    colour = "#e7cb94"
    scripts = ("envoy",)
    reference = EnvoyLocalRateLimitRef
    params_declared = (MAX_TOKENS,)
    fields_accepted = ("max_tokens", "tokens_per_fill", "fill_interval")
    syntax = "envoy:max_tokens=10[,tokens_per_fill=5],fill_interval=1s"
    documented_at = "https://www.envoyproxy.io/docs/envoy/latest/api-v3/type/v3/token_bucket.proto"

    def keys(self, client: str, now_ms: int) -> Sequence[str]:
        return (f"rl:envoy:{hash_tag(client)}",)

    def args(self, client: str, now_ms: int, cost: int = 1) -> Sequence[Any]:
        return (now_ms, self.window_ms, self.limit, int(self.params["max_tokens"]), cost)

    @classmethod
    def from_spec(cls, where: str, spec: Spec) -> tuple[int, int, dict[str, float]]:
        for needed in ("max_tokens", "fill_interval"):
            if needed not in spec:
                raise ConfigError(f"{where}: needs {needed}=... ({cls.syntax})")
        most = units.count(where, "max_tokens", spec["max_tokens"], minimum=1)
        per_fill = units.count(where, "tokens_per_fill", spec.get("tokens_per_fill", 1), minimum=1)
        interval_ms = units.duration_ms(where, "fill_interval", spec["fill_interval"])
        _check_interval(where, interval_ms)
        return per_fill, interval_ms, {"max_tokens": most}

    @classmethod
    def describe(cls, limit: int, window_ms: int, params: Mapping[str, float]) -> str:
        most = int(params["max_tokens"])
        return (
            f"{plural(most, 'request')} at once, then {plural(limit, 'token')} added at each "
            f"{window_ms / 1000:g} s tick (up to {most})"
        )


GATEWAY = EnvoyLocalRateLimit
load_script("envoy")
