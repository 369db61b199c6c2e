"""What one run of the queue model is: the rooms, the workers, the budget and its design.

Frozen dataclasses validated on construction (a bad field raises ``ConfigError`` naming it), as
the simulator's own scenarios are; :mod:`simulator.studies.queue_budget` runs them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simulator.checks import ConfigError, check_int

__all__ = ["Room", "QueueScenario", "DESIGNS", "LIMITERS", "SHARED_QUEUE"]

DESIGNS = ("shared", "per_room")
LIMITERS = ("server", "local", "split")
SHARED_QUEUE = "chat"


@dataclass(frozen=True)
class Room:
    """A chat room whose messages arrive as a Poisson process at ``rate_per_s``."""

    name: str
    rate_per_s: float

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ConfigError(f"Room.name: must be a non-empty string, got {self.name!r}")
        if not isinstance(self.rate_per_s, int | float) or not 0 <= self.rate_per_s < 1e6:
            raise ConfigError(
                f"Room.rate_per_s: must be a number in [0, 1e6), got {self.rate_per_s!r}"
            )


def _int(owner: str, name: str, value: Any, low: int, optional: bool = False) -> None:
    if not (optional and value is None):
        check_int(owner, name, value, low)


@dataclass(frozen=True)
class QueueScenario:
    """One run of the queue model. Times are integer milliseconds."""

    rooms: tuple[Room, ...]
    workers: int = 4
    max_per_window: int = 10
    window_ms: int = 1000
    service_ms: int = 20
    duration_ms: int = 10_000  # producers enqueue in [0, duration_ms)
    drain_ms: int = 0  # workers keep going this much longer
    design: str = "shared"
    limiter: str = "server"
    defer_pad_ms: int = 0  # added to a positive deferral; 0 = exactly the PTTL
    min_defer_ms: int = 1  # deferral when the limiter refuses with no positive wait
    read_to_admit_ms: int = 0  # time between the TTL read and the admit (round trip)
    stale_after_ms: int | None = None  # a job older than this when dequeued is dropped
    crash_at_ms: int | None = None  # the first worker to arm a window at/after this dies
    seed: int = 0
    label: str = ""

    def __post_init__(self) -> None:
        owner = "QueueScenario"
        if not isinstance(self.rooms, tuple) or not self.rooms:
            raise ConfigError(f"{owner}.rooms: must be a non-empty tuple of Room")
        if not all(isinstance(r, Room) for r in self.rooms):
            raise ConfigError(f"{owner}.rooms: must be a non-empty tuple of Room")
        if len({r.name for r in self.rooms}) != len(self.rooms):
            raise ConfigError(f"{owner}.rooms: room names must be distinct")
        for name, low in (("workers", 1), ("max_per_window", 1), ("window_ms", 1)):
            _int(owner, name, getattr(self, name), low)
        for name in ("service_ms", "duration_ms", "drain_ms", "defer_pad_ms", "read_to_admit_ms"):
            _int(owner, name, getattr(self, name), 0)
        _int(owner, "min_defer_ms", self.min_defer_ms, 1)
        _int(owner, "stale_after_ms", self.stale_after_ms, 0, optional=True)
        _int(owner, "crash_at_ms", self.crash_at_ms, 0, optional=True)
        _int(owner, "seed", self.seed, 0)
        if self.design not in DESIGNS:
            raise ConfigError(
                f"{owner}.design: unknown {self.design!r}; known: {', '.join(DESIGNS)}"
            )
        if self.limiter not in LIMITERS:
            raise ConfigError(
                f"{owner}.limiter: unknown {self.limiter!r}; known: {', '.join(LIMITERS)}"
            )
        if self.crash_at_ms is not None and self.limiter == "local":
            raise ConfigError(f"{owner}.crash_at_ms: a local counter has no server step to die in")
        if not self.label:
            object.__setattr__(self, "label", f"{self.design}/{self.limiter}/K={self.workers}")

    def queue_of(self, room: str) -> str:
        return SHARED_QUEUE if self.design == "shared" else room
