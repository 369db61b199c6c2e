"""PyrateLimiter 4.5 on the bench: its ``RedisBucket`` with its two log algorithms, and its
``StateBucket`` on ``RedisStateStore`` with its two state algorithms.

One bucket per client (``RedisBucket.init(rates, redis, bucket_key, algorithm=...)``, its own
Lua script loaded by its own ``script_load``), behind a ``Limiter`` asked with
``try_acquire(client, weight=cost, blocking=False)``. The bucket's time is PyrateLimiter's own
``time_ns() // 1000000`` in Python (it does not read the server's TIME), moved to the simulated
instant. The leaker thread that deletes old entries is not started (``schedule_leak=False``):
a thread of its own would read the wall clock between calls; old entries are only counted out,
never in, so decisions are the same, the keys only grow.

- ``pyrate.sliding_window_log``: ``SlidingWindowLog``, a ZSET of admitted items, the window
  ``[now - interval, now]`` by its ``window_start``.
- ``pyrate.fixed_window``: ``FixedWindow``, the same ZSET counted from the clock grid's line
  (``now - now % interval``).
- ``pyrate.gcra``, ``pyrate.token_bucket``: ``GCRA`` and ``TokenBucket`` (a subclass of GCRA
  with nothing of its own) in a ``StateBucket([Rate(limit, window_ms, burst)], algorithm,
  RedisStateStore(redis, key))``: one hash of a theoretical arrival time in integer
  microseconds, its own Lua (``_GCRA_LUA``), ``now`` from its ``WallClock`` in ARGV. ``burst``
  is the Rate's own parameter (default: the limit).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from pyrate_limiter import (
    GCRA,
    Limiter,
    Rate,
    RedisBucket,
    RedisStateStore,
    StateBucket,
    TokenBucket,
)
from pyrate_limiter.abstracts import FixedWindow, SlidingWindowLog
from pyrate_limiter.limiter import SingleBucketFactory

from simulator.algorithms.base import Param
from simulator.libraries.base import LibraryLimiter, redis_client
from simulator.records import Decision

if TYPE_CHECKING:
    from simulator.backends.base import Backend

__all__ = [
    "PyrateSlidingWindowLog",
    "PyrateFixedWindow",
    "PyrateGCRA",
    "PyrateTokenBucket",
    "register",
]


class _Pyrate(LibraryLimiter):
    library = "pyrate-limiter"
    algorithm: ClassVar[type[Any]]  # a LogAlgorithm, or a StateAlgorithm (_PyrateState)

    def setup(self, backend: Backend) -> None:
        self.redis = redis_client(backend)
        self.rates = [Rate(self.limit, self.window_ms)]  # an interval in ms
        self.limiters: dict[str, Any] = {}

    def keys(self, client: str, now_ms: int) -> Sequence[str]:
        return (f"pyrate:{self.name.split('.')[1]}:{client}",)

    def _limiter(self, client: str) -> Any:
        limiter = self.limiters.get(client)
        if limiter is None:
            limiter = Limiter(SingleBucketFactory(self._bucket(client), schedule_leak=False))
            self.limiters[client] = limiter
        return limiter

    def _bucket(self, client: str) -> Any:
        key = self.keys(client, 0)[0]
        return RedisBucket.init(self.rates, self.redis, key, algorithm=self.algorithm())

    def decide_now(self, client: str, now_ms: int, cost: int) -> Decision:
        allowed = self._limiter(client).try_acquire(client, weight=cost, blocking=False)
        return Decision(bool(allowed), float("nan"), self.limit, -1, -1, 0 if allowed else 1)


class PyrateSlidingWindowLog(_Pyrate):
    """PyrateLimiter's ``SlidingWindowLog`` on Redis."""

    name = "pyrate.sliding_window_log"
    label = "PyrateLimiter sliding window log"
    colour = "#bcbd22"
    algorithm = SlidingWindowLog


class PyrateFixedWindow(_Pyrate):
    """PyrateLimiter's ``FixedWindow`` on Redis (the clock grid)."""

    name = "pyrate.fixed_window"
    label = "PyrateLimiter fixed window"
    colour = "#17becf"
    counted_window = "grid"
    algorithm = FixedWindow


#: ``burst``, the Rate's own name: how many units may be spent at once (default: the limit).
BURST = Param("burst", lambda limit, window_ms: limit, unit="requests", minimum=1, integer=True)


class _PyrateState(_Pyrate):
    """A state algorithm: one small hash per client, not a log."""

    params_declared = (BURST,)

    def setup(self, backend: Backend) -> None:
        super().setup(backend)
        self.rates = [Rate(self.limit, self.window_ms, burst=int(self.params["burst"]))]

    def _bucket(self, client: str) -> Any:
        store = RedisStateStore(self.redis, self.keys(client, 0)[0])
        return StateBucket(self.rates, algorithm=self.algorithm(), store=store)


class PyrateGCRA(_PyrateState):
    """PyrateLimiter's ``GCRA`` on ``RedisStateStore``."""

    name = "pyrate.gcra"
    label = "PyrateLimiter GCRA"
    colour = "#dbdb8d"
    algorithm = GCRA


class PyrateTokenBucket(_PyrateState):
    """PyrateLimiter's ``TokenBucket`` on ``RedisStateStore`` (GCRA by another name)."""

    name = "pyrate.token_bucket"
    label = "PyrateLimiter token bucket"
    colour = "#9edae5"
    algorithm = TokenBucket


CLASSES: tuple[type[_Pyrate], ...] = (
    PyrateSlidingWindowLog,
    PyrateFixedWindow,
    PyrateGCRA,
    PyrateTokenBucket,
)


def register() -> list[str]:
    from simulator.algorithms import ALGORITHMS

    for cls in CLASSES:
        ALGORITHMS.setdefault(cls.name, cls)
    return [cls.name for cls in CLASSES]
