"""The limiters of the gateways people deploy, each configured in the gateway's own words.

An operator who runs nginx does not think in "a token bucket of limit per window": they have
``limit_req zone=api burst=20 nodelay`` in a file. Each gateway here is an algorithm of the
registry under its own name, with its own script following what that gateway's documentation and
source say it does:

- ``nginx``: limit_req's leaky bucket (``nginx:rate=10r/s,burst=20,nodelay``);
- ``traefik``: the RateLimit middleware, x/time/rate (``traefik:average=6,period=1m,burst=1``);
- ``spring``: Spring Cloud Gateway's RedisRateLimiter
  (``spring:replenishRate=10,burstCapacity=20,requestedTokens=1``);
- ``envoy``: the local rate limit's timer-filled bucket
  (``envoy:max_tokens=10,tokens_per_fill=5,fill_interval=1s``);
- ``kong``: the rate-limiting plugin's clock windows (``kong:minute=100,hour=1000``).

The registry takes one the first time its name is asked for (the hook in
:mod:`simulator.algorithms`, as for the libraries), so the built-in ten stay the default list;
naming :mod:`simulator.algorithms.gateways.registered` in ``SIMULATOR_ALGORITHMS`` takes all
five at once. :func:`translate` reads a configuration (a compare SPEC's fields, a TOML table)
into the limit, window and parameters every algorithm has; :func:`describe` says it back in plain
words. docs/gateways.md quotes each gateway's documented semantics.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping

from simulator.algorithms.gateways.base import GatewayLimiter, Spec
from simulator.checks import ConfigError

__all__ = ["GATEWAYS", "GatewayLimiter", "gateway", "is_gateway", "translate", "describe"]

#: A gateway's name -> the module of its limiter.
GATEWAYS = {
    "nginx": "simulator.algorithms.gateways.nginx",
    "traefik": "simulator.algorithms.gateways.traefik",
    "spring": "simulator.algorithms.gateways.spring",
    "envoy": "simulator.algorithms.gateways.envoy",
    "kong": "simulator.algorithms.gateways.kong",
}


def is_gateway(name: object) -> bool:
    return isinstance(name, str) and name in GATEWAYS


def gateway(name: str) -> type[GatewayLimiter]:
    """The limiter class of the gateway ``name`` (its module imported, its script known)."""
    cls: type[GatewayLimiter] = importlib.import_module(GATEWAYS[name]).GATEWAY
    return cls


def translate(name: str, where: str, spec: Spec) -> tuple[int, int, dict[str, float]]:
    """The gateway ``name``'s configuration ``spec`` as (limit, window_ms, params); one
    ConfigError naming ``where`` and the field, with the syntax, for anything wrong."""
    cls = gateway(name)
    for key, value in spec.items():
        if key not in (*cls.fields_accepted, *cls.fields_refused):
            raise ConfigError(
                f"{where}: unknown field {key!r} for {name} (it takes "
                f"{', '.join(cls.fields_accepted)}: {cls.syntax})"
            )
        if value is None and key not in cls.flags:
            raise ConfigError(f"{where}: {key!r} needs a value, {key}=... ({cls.syntax})")
    return cls.from_spec(where, spec)


def describe(name: str, limit: int, window_ms: int, params: Mapping[str, float]) -> str:
    """The gateway ``name``'s configuration in plain words, one line."""
    return gateway(name).describe(limit, window_ms, params)
