"""throttled-py 3.5 on the bench: its five Redis strategies through its own ``Throttled``.

One ``Throttled(using=<type>, quota=per_duration(window, limit, burst), store=RedisStore(...),
timeout=-1)`` per strategy, asked ``limit(client, cost=cost)``: its own key names
(``throttled:v1:<type>:<client>...``), its own scripts registered by its own client. Its
``RedisStore`` makes its client through a connection factory named in its options
(``CONNECTION_FACTORY_CLASS``, the library's documented hook); :class:`RunPool` is that factory
here, handing the library a redis-py client on the run's connection pool instead of one made
from a URL (the library caches pools per URL for the process, which a fresh fake server per run
cannot share).

Where each reads time (``throttled/rate_limiter/``):

- ``throttled.fixed_window``: Python's ``time.time()`` (``utils.now_sec``) names the key of the
  clock grid's cell; ``INCRBY`` then ``EXPIRE`` from Python. Moved by time-machine; on Valkey it
  runs in virtual time (the TTL only cleans up a cell's key).
- ``throttled.sliding_window``: the cells' keys from ``time.time()``, ``now_ms`` in ARGV of its
  script. Virtual time on Valkey too.
- ``throttled.token_bucket``, ``throttled.leaking_bucket``: the server's ``TIME``, whole seconds.
- ``throttled.gcra``: the server's ``TIME`` with its microseconds.

The last three are :class:`~simulator.algorithms.base.ServerTime`: on the fake server (which
runs in this process, so its ``TIME`` is the travelled ``time.time()``) they decide in simulated
time; on a real server ``TIME`` is the wall clock.
"""

from __future__ import annotations

import itertools
import math
import weakref
from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ClassVar

import redis
from throttled import BaseRateLimiter, RateLimiterType, RedisStore, Throttled, per_duration
from throttled.store import ConnectionFactory

from simulator.algorithms.base import Param, ServerTime
from simulator.libraries.base import LibraryLimiter, redis_client
from simulator.records import Decision

if TYPE_CHECKING:
    from simulator.backends.base import Backend

__all__ = [
    "RunPool",
    "ThrottledFixedWindow",
    "ThrottledSlidingWindow",
    "ThrottledTokenBucket",
    "ThrottledLeakingBucket",
    "ThrottledGCRA",
    "register",
]

#: The option of RedisStore's that names the run's pool to :class:`RunPool` (its options are
#: deep-copied, so a token goes through them, not the pool).
POOL_OPTION = "SIMULATOR_RUN_POOL"
_POOLS: weakref.WeakValueDictionary[str, redis.ConnectionPool] = weakref.WeakValueDictionary()
_TOKENS = itertools.count()


class RunPool(ConnectionFactory):
    """throttled-py's connection factory, handing out clients on the run's pool."""

    def connect(self, url: str | None = None) -> Any:
        return redis.Redis(connection_pool=_POOLS[self.options[POOL_OPTION]])


#: ``burst``, throttled-py's own name: the bucket's capacity (``per_duration``'s default: limit).
BURST = Param("burst", lambda limit, window_ms: limit, unit="requests", minimum=1, integer=True)


class _Throttled(LibraryLimiter):
    library = "throttled-py"
    window_unit_ms = 1000  # Quota.period_sec is int(period.total_seconds())
    using: ClassVar[RateLimiterType]

    def setup(self, backend: Backend) -> None:
        token = f"pool-{next(_TOKENS)}"
        self.pool = redis_client(backend).connection_pool
        _POOLS[token] = self.pool
        options = {"CONNECTION_FACTORY_CLASS": f"{__name__}.RunPool", POOL_OPTION: token}
        burst = int(self.params.get("burst", self.limit))
        quota = per_duration(timedelta(milliseconds=self.window_ms), self.limit, burst)
        self.throttle = Throttled(
            using=self.using.value, quota=quota, store=RedisStore(options=options), timeout=-1
        )

    def travel_s(self, now_ms: int) -> float:
        # A tenth of a microsecond past: throttled-py reads int(time.time() * 1000), and
        # now_ms / 1000 is not exact in binary (59.001 * 1000 is 59000.99999...), which would
        # read the millisecond before about once in a hundred requests.
        return now_ms / 1000 + 1e-7

    def keys(self, client: str, now_ms: int) -> Sequence[str]:
        return (f"{BaseRateLimiter.KEY_PREFIX}{self.using.value}:{client}",)

    def decide_now(self, client: str, now_ms: int, cost: int) -> Decision:
        result = self.throttle.limit(client, cost=cost)
        state = result.state
        if not result.limited:
            return Decision(True, math.nan, self.limit, int(state.remaining), -1, 0)
        retry_ms = max(1, math.ceil(float(state.retry_after) * 1000))
        return Decision(False, math.nan, self.limit, int(state.remaining), retry_ms, retry_ms)


class _Cells(_Throttled):
    """The two window strategies: keys named by the clock grid's cell, from Python's clock."""

    def _cell(self, now_ms: int) -> int:
        return now_ms // self.window_ms

    def keys(self, client: str, now_ms: int) -> Sequence[str]:
        base = super().keys(client, now_ms)[0]
        return (f"{base}:period:{self._cell(now_ms)}",)


class ThrottledFixedWindow(_Cells):
    """throttled-py's fixed window on Redis: a counter per clock-grid cell."""

    name = "throttled.fixed_window"
    label = "throttled-py fixed window"
    colour = "#aec7e8"
    counted_window = "grid"
    using = RateLimiterType.FIXED_WINDOW


class ThrottledSlidingWindow(_Cells):
    """throttled-py's sliding window on Redis: the cell's counter and the previous, weighed."""

    name = "throttled.sliding_window"
    label = "throttled-py sliding window"
    colour = "#ffbb78"
    counted_window = "two_grids"
    using = RateLimiterType.SLIDING_WINDOW

    def keys(self, client: str, now_ms: int) -> Sequence[str]:
        base = _Throttled.keys(self, client, now_ms)[0]
        cell = self._cell(now_ms)
        return (f"{base}:period:{cell - 1}", f"{base}:period:{cell}")


class ThrottledTokenBucket(ServerTime, _Throttled):
    """throttled-py's token bucket on Redis (the server's TIME, in whole seconds)."""

    name = "throttled.token_bucket"
    label = "throttled-py token bucket"
    colour = "#98df8a"
    params_declared = (BURST,)
    using = RateLimiterType.TOKEN_BUCKET


class ThrottledLeakingBucket(ServerTime, _Throttled):
    """throttled-py's leaking bucket on Redis (the server's TIME, in whole seconds)."""

    name = "throttled.leaking_bucket"
    label = "throttled-py leaking bucket"
    colour = "#ff9896"
    params_declared = (BURST,)
    using = RateLimiterType.LEAKING_BUCKET


class ThrottledGCRA(ServerTime, _Throttled):
    """throttled-py's GCRA on Redis (the server's TIME, to the microsecond)."""

    name = "throttled.gcra"
    label = "throttled-py GCRA"
    colour = "#c5b0d5"
    params_declared = (BURST,)
    using = RateLimiterType.GCRA


CLASSES: tuple[type[_Throttled], ...] = (
    ThrottledFixedWindow,
    ThrottledSlidingWindow,
    ThrottledTokenBucket,
    ThrottledLeakingBucket,
    ThrottledGCRA,
)


def register() -> list[str]:
    from simulator.algorithms import ALGORITHMS

    for cls in CLASSES:
        ALGORITHMS.setdefault(cls.name, cls)
    return [cls.name for cls in CLASSES]
