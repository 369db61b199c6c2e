"""The default backend: fakeredis with Lua, its clock driven by the simulation.

Key expiry happens in simulated milliseconds (see :mod:`simulator.backends.clock`), so a
simulated hour takes no wall time and ``echomq``, whose window is a key's TTL, runs exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import fakeredis

from simulator.backends.base import Backend
from simulator.backends.clock import VirtualClock
from simulator.scripts import Script

__all__ = ["FakeRedisBackend"]


class FakeRedisBackend(Backend):
    """fakeredis with Lua, its clock driven by the simulation (milliseconds)."""

    name = "fakeredis"
    virtual_time = True

    def __init__(self, now_ms: Callable[[], float] | None = None) -> None:
        self.clock = VirtualClock(now_ms)
        self.clock.activate()
        # Redis 8.8: the version that has INCREX (the increx algorithms' command)
        self.server = fakeredis.FakeServer(version=(8, 8))
        self.client = fakeredis.FakeRedis(server=self.server)
        self.load_scripts()

    def follow(self, now_ms: Callable[[], float]) -> None:
        self.clock.follow(now_ms)

    def call(self, script: Script, keys: Sequence[str], args: Sequence[Any]) -> Any:
        self.clock.activate()
        return super().call(script, keys, args)
