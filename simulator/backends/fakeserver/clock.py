"""The one place where SimPy time becomes the server's time.

fakeredis reads the wall clock once per command (``time.time()`` in ``fakeredis._socket._base``)
and stores it on every database as ``db.time``; expiry, TTL and PTTL are all computed from it. To
make key expiry follow the simulation, that module's ``time`` is replaced by a shim whose
``time()`` asks the active :class:`VirtualClock`. Simulated time is in milliseconds; like a real
server (``mstime()``) the server sees whole milliseconds.

Redis's rule at the exact instant is kept exactly: a key is gone only once now is *past* its expiry
time; at exactly expire-at it still exists with PTTL 0. fakeredis compares float seconds, where
``t/1000 + px/1000`` and ``(t + px)/1000`` may differ in the last bit, so the two comparisons that
decide expiry are replaced by the same comparison in whole milliseconds.
"""

from __future__ import annotations

import heapq
import math
import time as _time
from collections.abc import Callable
from typing import Any

from fakeredis._core import _database
from fakeredis._socket import _base

from simulator.backends.fakeserver.scripts import install_scripts

__all__ = ["VirtualClock", "SHIM", "install_clock"]


class _TimeShim:
    """Stands in for the ``time`` module inside fakeredis: ``time()`` is the active clock's."""

    def __init__(self) -> None:
        self.source: Callable[[], float] | None = None

    def time(self) -> float:
        return self.source() if self.source is not None else _time.time()

    def __getattr__(self, name: str) -> Any:
        return getattr(_time, name)


#: The server's clock: what the fake socket (and a direct call) reads as now.
SHIM = _TimeShim()


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


def _expired(self: Any, item: Any) -> bool:
    expireat = item.expireat
    return expireat is not None and round(expireat * 1000) < round(self.time * 1000)  # as _ms


def _remove_expired(self: Any) -> None:
    heap = self._expiry_heap
    now_ms = _ms(self.time)
    while heap and _ms(heap[0][0]) < now_ms:
        _, key = heapq.heappop(heap)
        item = self._dict.get(key)
        if item is not None and self.expired(item):
            del self._dict[key]


def install_clock() -> bool:
    """fakeredis's clock and expiry replaced by the shim's (and its scripting by the fake
    server's, :func:`~simulator.backends.fakeserver.scripts.install_scripts`); False when they
    already were."""
    if _base.time is SHIM:
        return False
    _base.time = SHIM  # type: ignore[assignment]
    _database.Database.expired = _expired  # type: ignore[method-assign]
    _database.Database._remove_expired = _remove_expired  # type: ignore[method-assign]
    install_scripts()
    return True


class VirtualClock:
    """Server time for fakeredis, read from a function giving simulated milliseconds.

    ``VirtualClock(lambda: env.now)`` makes the fake server's clock follow a SimPy environment
    whose time unit is the millisecond. Call :meth:`activate` before commands are sent (the
    fakeredis backend does it on every call), so several clocks can coexist in one process.
    """

    def __init__(self, now_ms: Callable[[], float] | None = None) -> None:
        install_clock()
        self._now_ms: Callable[[], float] = now_ms or (lambda: 0.0)
        self._seconds = self.seconds  # one bound method, so activate() allocates nothing

    def follow(self, now_ms: Callable[[], float]) -> None:
        """Read simulated time from ``now_ms`` from now on (e.g. a new SimPy environment)."""
        self._now_ms = now_ms

    def now_ms(self) -> int:
        """Current time in whole milliseconds, as the server sees it."""
        return math.floor(self._now_ms())

    def seconds(self) -> float:
        return self.now_ms() / 1000.0

    def activate(self) -> None:
        SHIM.source = self._seconds
