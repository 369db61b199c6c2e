"""nginx's ``limit_req``: a leaky bucket counted in milli-requests, with ms resolution.

``limit_req_zone ... rate=10r/s`` and ``limit_req zone=... burst=20 nodelay`` as one candidate,
``nginx:rate=10r/s,burst=20,nodelay``. The module (ngx_http_limit_req_module.c) keeps, per key,
an excess in thousandths of a request and the ms it was last admitted at; each request leaks
``rate x ms / 1000`` off it (integer division) and adds 1000. Above ``burst`` it is refused (503)
and nothing is written; so without a burst a second request 5 ms after the first at 10r/s (an
excess of 950) is refused. Up to ``delay`` of excess it is passed on at once; beyond, nginx holds
it ``(excess - delay) / rate`` before passing it on. ``nodelay`` is a delay of the burst itself
(nginx sets it past any excess; an admitted excess is never above the burst). The simulator
counts a held request as admitted, with the hold in its ``retry_after_ms`` (docs/gateways.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from simulator.algorithms.base import NEVER, Param, Reference
from simulator.algorithms.gateways import units
from simulator.algorithms.gateways.base import (
    GatewayLimiter,
    Spec,
    load_script,
    plural,
)
from simulator.checks import ConfigError
from simulator.keys import hash_tag
from simulator.records import Decision

__all__ = ["NginxLimitReq", "NginxLimitReqRef", "GATEWAY"]

BURST = Param("burst", lambda limit, window_ms: 0, unit="requests", integer=True)
DELAY = Param("delay", lambda limit, window_ms: 0, unit="requests", integer=True)
PARAMS = (BURST, DELAY)


#: The most a rate (per s), a burst, a delay or a cost may be. The script counts in
#: milli-requests and multiplies those by 1000 again for ms (a reset, a retry), in Lua's
#: doubles: past 2^53 they round and the script parts from nginx's integers (and from the
#: reference). Half of 2^53 / 10^6 leaves room for a sum of two.
MAX_REQUESTS = 2**53 // 2_000_000
BOUND = f"at most {MAX_REQUESTS:,} (the script counts in thousandths of a request within 2^53)"


def bounded(where: str, key: str, value: int) -> int:
    """``value`` when it is within :data:`MAX_REQUESTS`; one ConfigError naming it otherwise."""
    if value > MAX_REQUESTS:
        raise ConfigError(f"{where}: {key} must be {BOUND}; got {value:,}")
    return value


def _explicit(where: str, key: str, spec: Spec) -> int:
    """``burst`` or ``delay`` as nginx reads it: absent is 0, but written it must be >= 1
    (nginx: "invalid burst value")."""
    if key not in spec:
        return 0
    value = units.count(where, key, spec[key])
    if value < 1:
        raise ConfigError(f"{where}: invalid {key} value {value} (nginx takes {key}=1 or more)")
    return bounded(where, key, value)


def milli_rate(owner: str, limit: int, window_ms: int) -> int:
    """The zone's rate in milli-requests per second, as nginx rounds it (1r/m: 16)."""
    rate = limit * 1_000_000 // window_ms
    if rate < 1:
        raise ConfigError(
            f"{owner}: {limit} per {window_ms} ms is below a thousandth of a request per second, "
            "the finest rate nginx counts"
        )
    return rate


def _numbers(
    owner: str, limit: int, window_ms: int, params: Mapping[str, float]
) -> tuple[int, int, int]:
    """(rate, burst, delay) in nginx's units: milli-requests (per second)."""
    burst = 1000 * bounded(owner, "burst", int(params["burst"]))
    delay = 1000 * bounded(owner, "delay", int(params["delay"]))
    rate = milli_rate(owner, limit, window_ms)
    bounded(owner, "rate (per s)", rate // 1000)
    return rate, burst, delay


def step(
    state: tuple[int, int] | None, now: int, cost: int, rate: int, burst: int, delay: int
) -> tuple[Decision, tuple[int, int] | None, int]:
    """One request, as the script decides it: (decision, new state or None, expiry ms)."""
    excess = 1000 * (cost - 1)  # a new key: the first request is at the rate, the rest excess
    if state is not None and rate * max(0, now - state[1]) // 1000 >= state[0] + 1000:
        state = None  # leaked past its excess and one request: as a new key
    if state is not None:
        stored, last = state
        excess = stored - rate * max(0, now - last) // 1000 + 1000 * cost
    if excess > burst:
        if state is None:  # more than an empty bucket takes
            left = burst // 1000 + 1
            return Decision(False, excess / 1000, burst // 1000 + 1, left, 0, NEVER), None, 0
        stored, last = state
        retry = last + math.ceil(1000 * (stored + 1000 * cost - burst) / rate) - now
        if 1000 * (cost - 1) > burst:
            retry = NEVER
        reset = max(0, last + math.ceil(1000 * stored / rate) - now)
        left = max(0, math.floor((burst - (excess - 1000 * cost)) / 1000))
        return Decision(False, excess / 1000, burst // 1000 + 1, left, reset, retry), None, 0
    held = (excess - delay) * 1000 // rate if excess > delay else 0
    left = math.floor((burst - excess) / 1000)
    reset = math.ceil(1000 * excess / rate)
    decision = Decision(True, excess / 1000, burst // 1000 + 1, left, reset, held)
    return decision, (excess, now), math.ceil(1000 * (excess + 1000) / rate)


class NginxLimitReqRef(Reference):
    name = "nginx"
    params_declared = PARAMS

    def __init__(self, limit: int, window_ms: int, **params: object) -> None:
        super().__init__(limit, window_ms, **params)
        self.numbers = _numbers(type(self).__name__, self.limit, self.window_ms, self.params)
        self.buckets: dict[str, tuple[tuple[int, int], int]] = {}  # client -> (state, expiry)

    def decide(self, client: str, now_ms: int, cost: int = 1) -> Decision:
        kept = self.buckets.get(client)
        state = kept[0] if kept is not None and now_ms <= kept[1] else None
        cost = bounded(type(self).__name__, "cost", cost)
        decision, new, ttl = step(state, now_ms, cost, *self.numbers)
        if new is not None:
            self.buckets[client] = (new, now_ms + ttl)
        return decision


class NginxLimitReq(GatewayLimiter):
    """nginx limit_req: rate in r/s or r/m, a burst of excess, a delay threshold."""

    name = "nginx"
    label = "nginx limit_req"
    colour = "#d6616b"
    scripts = ("nginx",)
    reference = NginxLimitReqRef
    params_declared = PARAMS
    fields_accepted = ("rate", "burst", "delay", "nodelay")
    flags = ("nodelay",)
    syntax = "nginx:rate=10r/s[,burst=20][,nodelay|delay=N]"
    documented_at = "https://nginx.org/en/docs/http/ngx_http_limit_req_module.html"

    def __init__(self, backend: Any, limit: int, window_ms: int, **params: object) -> None:
        super().__init__(backend, limit, window_ms, **params)
        self.numbers = _numbers(type(self).__name__, self.limit, self.window_ms, self.params)

    def keys(self, client: str, now_ms: int) -> Sequence[str]:
        return (f"rl:nginx:{hash_tag(client)}",)

    def args(self, client: str, now_ms: int, cost: int = 1) -> Sequence[Any]:
        return (now_ms, *self.numbers, bounded(type(self).__name__, "cost", cost))

    @classmethod
    def from_spec(cls, where: str, spec: Spec) -> tuple[int, int, dict[str, float]]:
        if "rate" not in spec:
            raise ConfigError(f"{where}: needs rate=Nr/s or rate=Nr/m ({cls.syntax})")
        if "nodelay" in spec and "delay" in spec:
            raise ConfigError(f"{where}: give nodelay or delay=N, not both ({cls.syntax})")
        limit, window_ms = units.rate(where, "rate", spec["rate"])
        bounded(where, "rate", limit)
        burst = _explicit(where, "burst", spec)
        delay = _explicit(where, "delay", spec)
        if "nodelay" in spec and units.flag(where, "nodelay", spec["nodelay"]):
            delay = burst  # never held: an admitted excess is at most the burst
        milli_rate(where, limit, window_ms)
        return limit, window_ms, {"burst": burst, "delay": delay}

    @classmethod
    def describe(cls, limit: int, window_ms: int, params: Mapping[str, float]) -> str:
        unit = {1000: "s", 60_000: "min"}.get(window_ms, f"{window_ms / 1000:g} s")
        burst = int(params["burst"])
        # nginx keeps the rate in whole milli-requests per s: 1r/m is 16, one per 62.5 s
        every_s = 1000 / (limit * 1_000_000 // window_ms)
        line = f"{plural(limit, 'request')} per {unit} (one per {every_s:g} s), a burst of {burst}"
        if not burst:
            return line + ": a request sooner than one per rate is refused"
        delay = int(params["delay"])
        if delay >= burst:
            return line + " admitted at once (nodelay)"
        if delay:
            return line + f", the first {delay} passed on at once and the rest delayed"
        return line + ", each excess request delayed to the rate"


GATEWAY = NginxLimitReq
load_script("nginx")
