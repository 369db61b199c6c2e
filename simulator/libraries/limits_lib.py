"""``limits`` 5.8 (the storage and strategies of Flask-Limiter and SlowAPI) on the bench.

Its three strategies on its own Redis storage, ``RedisStorage`` built on a connection pool that
reaches the run's server, so its own ``register_script`` loads its own Lua files
(``limits/resources/redis/lua_scripts/``) and its own keys (``LIMITS:LIMITER/<client>/...``)
are written (under a key_prefix per strategy). A rate is a :class:`limits.RateLimitItemPerSecond` of ``limit`` per ``window``
seconds: ``limits`` counts in whole seconds (its Redis windows are ``EXPIRE`` in seconds).

- ``limits.fixed_window``: ``incr_expire.lua``, a counter whose ``EXPIRE`` is set by the first
  hit (the window starts at the first request, as its docs say; not the clock grid).
- ``limits.moving_window``: ``acquire_moving_window.lua``, a list of timestamps taken in
  Python with ``time.time()``; admitted unless the ``limit``-th newest is within the window.
- ``limits.sliding_window_counter``: ``acquire_sliding_window.lua``, two counters whose PTTLs
  (the server's clock) weigh the previous one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

import limits
from limits.storage import RedisStorage
from limits.strategies import (
    FixedWindowRateLimiter,
    MovingWindowRateLimiter,
    RateLimiter,
    SlidingWindowCounterRateLimiter,
)

from simulator.algorithms.base import ServerTime
from simulator.libraries.base import LibraryLimiter, redis_client
from simulator.records import Decision

if TYPE_CHECKING:
    from simulator.backends.base import Backend

__all__ = ["LimitsFixedWindow", "LimitsMovingWindow", "LimitsSlidingWindowCounter", "register"]


class _Limits(LibraryLimiter):
    library = "limits"
    window_unit_ms = 1000
    strategy: ClassVar[type[RateLimiter]]

    def setup(self, backend: Backend) -> None:
        pool = redis_client(backend).connection_pool
        # Every strategy of one rate uses the same key in limits (``LIMITS:LIMITER/<client>/
        # <amount>/<multiples>/second``); side by side on one server they would read each
        # other's keys, so each gets a key_prefix of its own (RedisStorage's own parameter).
        prefix = f"{RedisStorage.PREFIX}-{self.name.split('.')[1]}"
        self.storage = RedisStorage("redis://", connection_pool=pool, key_prefix=prefix)
        self.limiter = self.strategy(self.storage)
        self.item = limits.RateLimitItemPerSecond(self.limit, self.window_ms // 1000)

    def keys(self, client: str, now_ms: int) -> Sequence[str]:
        return (self.storage.prefixed_key(self.item.key_for(client)),)

    def decide_now(self, client: str, now_ms: int, cost: int) -> Decision:
        if self.limiter.hit(self.item, client, cost=cost):
            # The library's answer is the flag; the count is not asked for (another round trip
            # per request, and not what decides).
            return Decision(True, math.nan, self.limit, -1, -1, 0)
        # Refused: when the library itself says the window resets (its get_window_stats).
        reset_s, remaining = self.limiter.get_window_stats(self.item, client)
        retry_ms = max(1, math.ceil(reset_s * 1000) - now_ms)
        return Decision(False, math.nan, self.limit, remaining, retry_ms, retry_ms)


class LimitsFixedWindow(ServerTime, _Limits):
    """``limits.FixedWindowRateLimiter`` on Redis: a counter from the first hit, for ``window``."""

    name = "limits.fixed_window"
    label = "limits fixed window"
    colour = "#8c564b"
    counted_window = "first_hit"
    strategy = FixedWindowRateLimiter


class LimitsMovingWindow(_Limits):
    """``limits.MovingWindowRateLimiter`` on Redis: the log of admitted requests' timestamps."""

    name = "limits.moving_window"
    label = "limits moving window"
    colour = "#e377c2"
    counted_window = "trailing"
    strategy = MovingWindowRateLimiter


class LimitsSlidingWindowCounter(ServerTime, _Limits):
    """``limits.SlidingWindowCounterRateLimiter`` on Redis: two counters, the older weighed."""

    name = "limits.sliding_window_counter"
    label = "limits sliding window counter"
    colour = "#7f7f7f"
    counted_window = "two_grids"
    strategy = SlidingWindowCounterRateLimiter

    def keys(self, client: str, now_ms: int) -> Sequence[str]:
        key = self.item.key_for(client)
        return (
            self.storage.prefixed_key(self.storage._previous_window_key(key)),
            self.storage.prefixed_key(self.storage._current_window_key(key)),
        )


CLASSES: tuple[type[_Limits], ...] = (
    LimitsFixedWindow,
    LimitsMovingWindow,
    LimitsSlidingWindowCounter,
)


def register() -> list[str]:
    from simulator.algorithms import ALGORITHMS

    for cls in CLASSES:
        ALGORITHMS.setdefault(cls.name, cls)
    return [cls.name for cls in CLASSES]
