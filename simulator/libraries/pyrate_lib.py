"""PyrateLimiter 4.5 on the bench: its ``RedisBucket`` with its two log algorithms.

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
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from pyrate_limiter import Limiter, Rate, RedisBucket
from pyrate_limiter.abstracts import FixedWindow, LogAlgorithm, SlidingWindowLog
from pyrate_limiter.limiter import SingleBucketFactory

from simulator.libraries.base import LibraryLimiter, redis_client
from simulator.records import Decision

if TYPE_CHECKING:
    from simulator.backends.base import Backend

__all__ = ["PyrateSlidingWindowLog", "PyrateFixedWindow", "register"]


class _Pyrate(LibraryLimiter):
    library = "pyrate-limiter"
    algorithm: ClassVar[type[LogAlgorithm]]

    def setup(self, backend: Backend) -> None:
        self.redis = redis_client(backend)
        self.rates = [Rate(self.limit, self.window_ms)]  # an interval in ms
        self.limiters: dict[str, Any] = {}

    def keys(self, client: str, now_ms: int) -> Sequence[str]:
        return (f"pyrate:{self.name.split('.')[1]}:{client}",)

    def _limiter(self, client: str) -> Any:
        limiter = self.limiters.get(client)
        if limiter is None:
            bucket = RedisBucket.init(
                self.rates, self.redis, self.keys(client, 0)[0], algorithm=self.algorithm()
            )
            limiter = Limiter(SingleBucketFactory(bucket, schedule_leak=False))
            self.limiters[client] = limiter
        return limiter

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


CLASSES: tuple[type[_Pyrate], ...] = (PyrateSlidingWindowLog, PyrateFixedWindow)


def register() -> list[str]:
    from simulator.algorithms import ALGORITHMS

    for cls in CLASSES:
        ALGORITHMS.setdefault(cls.name, cls)
    return [cls.name for cls in CLASSES]
