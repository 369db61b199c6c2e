"""What every library adapter shares: a Limiter whose decision is the library's own call.

A built-in algorithm is one script call a backend runs; a library's decision is whatever its
public API does (one script, or a GET then a script, with a timestamp taken in Python). So a
:class:`LibraryLimiter` overrides :meth:`decide` and nothing is pipelined: it has no single
call to hand a backend, and the registry-driven tests that hold a script call skip it for that
reason (:data:`NO_SINGLE_SCRIPT`). Each call runs with the wall clock moved to the simulated
instant (``time-machine``), so a library that reads ``time.time()`` sees the simulation's time,
and with the fake server's virtual clock active, so a TTL it reads is the simulation's too.

A strategy whose window is a key's TTL (``limits``' fixed window and sliding window counter)
is also a :class:`~simulator.algorithms.base.ServerTime` limiter: on a real server its run goes
in real time, since a virtual clock cannot move the server's. One whose time is taken in Python
(``limits``' moving window) runs on a real server in virtual time like the built-ins.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import redis
import time_machine

from simulator.algorithms.base import Limiter, _checked, own_params
from simulator.calls import Call, Script, native
from simulator.checks import ConfigError
from simulator.records import Decision

if TYPE_CHECKING:
    from simulator.backends.base import Backend

__all__ = ["LibraryLimiter", "NO_SINGLE_SCRIPT", "redis_client"]

_ECHO = native("ECHO")

#: Why the registry's script-level tests do not hold a library strategy.
NO_SINGLE_SCRIPT = "a library strategy decides through the library's own calls, not one script"


def redis_client(backend: Backend) -> redis.Redis:
    """A redis-py client of the library's own on the backend's server: a new client on the
    connection pool of the backend's (the fake server's pool reaches the same fake server)."""
    client = getattr(backend, "client", None)
    if not isinstance(client, redis.Redis):
        raise ConfigError(f"backend {backend.name}: a library strategy needs a redis-py client")
    return redis.Redis(connection_pool=client.connection_pool)


class LibraryLimiter(Limiter):
    """A library strategy as an algorithm: :meth:`decide_now` is the library's call at the
    simulated instant; :meth:`decide` wraps it in the two clocks."""

    #: The installed package this adapter drives (for messages and the docs).
    library: ClassVar[str]
    #: The window's unit the library counts in: a window must be a whole number of these.
    window_unit_ms: ClassVar[int] = 1

    def __init__(self, backend: Backend, limit: int, window_ms: int, **params: object) -> None:
        owner = type(self).__name__
        self.limit, self.window_ms = _checked(owner, limit, window_ms)
        self.params = own_params(owner, self.params_declared, params, self.limit, self.window_ms)
        if self.window_ms % self.window_unit_ms:
            raise ConfigError(
                f"{self.name}: window must be a whole number of {self.window_unit_ms / 1000:g} s "
                f"({self.library} counts in those), got {self.window_ms / 1000:g} s"
            )
        self.backend = backend
        self.script = Script(f"{self.name} (library calls)", "", "")
        if backend is not None:
            self.setup(backend)

    def setup(self, backend: Backend) -> None:
        """Make the library's own limiter on ``backend`` (its client, storage, scripts)."""
        raise NotImplementedError

    def decide_now(self, client: str, now_ms: int, cost: int) -> Decision:
        """The library's decision for one request, the clocks already at ``now_ms``."""
        raise NotImplementedError

    def decide(self, client: str, now_ms: int, cost: int = 1) -> Decision:
        clock = getattr(self.backend, "clock", None)
        if clock is not None:
            clock.activate()
        with time_machine.travel(self.travel_s(now_ms), tick=False):
            return self.decide_now(client, now_ms, cost)

    def travel_s(self, now_ms: int) -> float:
        """The instant, in epoch seconds, Python's clock is moved to for a decision at ``now_ms``."""
        return now_ms / 1000

    def keys(self, client: str, now_ms: int) -> Sequence[str]:
        """The library's own key names for ``client`` (what a run touches)."""
        raise NotImplementedError

    def call(self, client: str, now_ms: int, cost: int = 1) -> tuple[Script, Sequence[str], Any]:
        raise ConfigError(f"{self.name}: {NO_SINGLE_SCRIPT}; it is decided one request at a time")

    def batch(
        self, clients: Sequence[str], t_ms: Sequence[int], costs: Sequence[int] | None = None
    ) -> Sequence[Call]:
        """A replay's pipeline of requests: each decided here by the library, at its instant,
        as the pipeline is made (a replay makes it at its first request's time, all of one
        millisecond on the fake server); the pipeline then only carries each answer back
        (``ECHO``), so that the replay reads the decisions where it reads every limiter's."""
        weights = [1] * len(t_ms) if costs is None else costs
        made = map(self.decide, clients, t_ms, weights)
        return [(_ECHO, (), (f"{d.allowed:d}:{d.remaining}:{d.retry_after_ms}",)) for d in made]

    def parse(self, reply: Any) -> Decision:  # type: ignore[override]  # reads its own ECHO
        text = reply.decode() if isinstance(reply, bytes) else str(reply)
        allowed, remaining, retry_ms = map(int, text.split(":"))
        reset_ms = retry_ms if retry_ms > 0 else -1
        return Decision(allowed == 1, math.nan, self.limit, remaining, reset_ms, retry_ms)
