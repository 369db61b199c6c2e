"""Which clock a run needs: simulated time, or real time on a real server.

Every script takes ``now_ms`` from its arguments. ``fixed_window``, ``sliding_log`` and
``sliding_counter`` decide from that alone and give their keys a time to live only so that old
keys go away; on a real server their decisions are the same as on the virtual clock as long as the
server keeps each key while the run still needs it (a run slower than real time over a key's TTL
can lose one). ``echomq`` is different: its window IS the counter's time to live, counted down by
the server's own clock. On the embedded fake server that clock is the simulation's; on a real
server it is the wall clock, so a run of ``echomq`` there goes at real speed (SimPy's
``RealtimeEnvironment``: one simulated millisecond per real millisecond) and should use short
windows.

A fast run is safe only while the server has not yet expired a key the run still needs. On a
server the program started that is counted, not guessed: the server counts every key it expired
(``INFO stats``: ``expired_keys``; :func:`simulator.backends.embedded.expired_keys`), and
``replay`` and ``compare`` warn by that count (or, on a backend they chose, decide the run again
on the fake server). On a server somebody else runs the count is not the run's alone:
:class:`ExpiryWatch` is the guess kept for it, and for the library's own runs.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Mapping
from typing import Protocol

import simpy
import simpy.rt

from simulator.algorithms import ALGORITHMS, Limiter
from simulator.backends import Backend
from simulator.policy import Policy

__all__ = [
    "server_time_free",
    "server_time_bound",
    "RT_FACTOR",
    "ServerClockWarning",
    "ExpiryWatch",
    "VirtualEnvironment",
    "runs_on_real_time",
    "environment_for",
    "late_ms",
    "time_note",
]


def server_time_free(registry: Mapping[str, type[Limiter]] | None = None) -> tuple[str, ...]:
    """The algorithms whose decisions do not depend on the server's clock (``now_ms`` comes in
    ARGV), as the registry holds them now."""
    known = ALGORITHMS if registry is None else registry
    return tuple(a for a, cls in known.items() if not cls.uses_server_time)


def server_time_bound(registry: Mapping[str, type[Limiter]] | None = None) -> tuple[str, ...]:
    """The algorithms whose window is a key's TTL, counted by the server's clock."""
    known = ALGORITHMS if registry is None else registry
    return tuple(a for a, cls in known.items() if cls.uses_server_time)


#: Real seconds per simulated time unit (the unit is one millisecond).
RT_FACTOR = 0.001


class ServerClockWarning(UserWarning):
    """A run on a real server was slow enough that key expiry may have changed a decision."""


class Clocked(Protocol):
    """A backend, or the spec of one: whose clock its keys expire by."""

    @property
    def virtual_time(self) -> bool: ...


def runs_on_real_time(backend: Clocked, algorithm: Policy | type[Limiter]) -> bool:
    """True when ``algorithm`` (a Policy or its Limiter class) on ``backend`` (a backend or its
    spec) must run on real time to be right: its window is a key's TTL, counted by the server's
    clock, and that clock is the wall clock (any server but the fake one). The one place this
    is worked out: the model, the replay, the CLI's limits on real time, the comparison and the
    explorer all ask here."""
    cls = algorithm.algorithm if isinstance(algorithm, Policy) else algorithm
    return not backend.virtual_time and cls.uses_server_time


class VirtualEnvironment(simpy.Environment):
    """Simulated time only, where a process may move the clock on by itself.

    A process whose next instant comes before anything else is scheduled (the feeder of the
    clients played ahead, between the requests of the clients that react) would wait with a
    timeout that is the very next event anyway: :meth:`advance` moves the clock there at once,
    without the event, so the same instants come in the same order at a fraction of the cost.
    (SimPy keeps its clock in ``_now``; simpy is pinned for that reason.)
    """

    def advance(self, t: float) -> bool:
        """Move the clock to ``t`` if nothing is scheduled until then; False if something is
        (then wait with a timeout, as usual)."""
        if self._now <= t < self.peek():
            self._now = t
            return True
        return False


def environment_for(
    backend: Backend, algorithm: type[Limiter], initial_time: int = 0
) -> simpy.Environment:
    """A virtual-time environment, or a real-time one (1 ms per ms) where the server's clock rules."""
    if runs_on_real_time(backend, algorithm):
        return simpy.rt.RealtimeEnvironment(initial_time, factor=RT_FACTOR, strict=False)
    return VirtualEnvironment(initial_time)


def late_ms(env: simpy.Environment) -> float:
    """How far the wall clock is past ``env.now`` (0 on a virtual-time environment)."""
    if not isinstance(env, simpy.rt.RealtimeEnvironment):
        return 0.0
    wall_ms = (time.monotonic() - env.real_start) / env.factor
    return wall_ms - (env.now - env.env_start)


def time_note(algorithm: type[Limiter], backend: Backend) -> str:
    """One line saying which clock the decisions of ``algorithm`` on ``backend`` follow."""
    name = algorithm.name
    if backend.virtual_time:
        return f"{name} on {backend.name}: simulated time (the server's clock follows it)"
    if runs_on_real_time(backend, algorithm):
        return (
            f"{name} on {backend.name}: REAL TIME - its window is the key's TTL on the "
            "server's clock, so the run goes at wall-clock speed"
        )
    return (
        f"{name} on {backend.name}: simulated time - decisions take now_ms from the "
        "arguments and do not depend on the server's clock (TTL only cleans up)"
    )


class ExpiryWatch:
    """A guess, as the run goes, at whether a key expired on the server while the run needed it.

    It assumes a key gets a TTL of about ``window_ms`` when it is used and is needed for less
    than ``window_ms`` of simulated time after that, and says the run was unsafe once a span of
    less than ``window_ms`` simulated ms took ``window_ms`` or more of wall time. That holds for
    the window counters and the log; it does not for a bucket (``token_bucket``, ``gcra``, the
    gateways), whose TTL is the time to refill and may be far shorter than the window, so there
    it can miss. Where the server is the run's own, its expiry count is exact and is what the
    commands go by; this guess is for a server somebody else runs.
    """

    def __init__(self, window_ms: int) -> None:
        self.window_ms = window_ms
        self._marks: deque[tuple[int, float]] = deque()  # (t_ms, wall ms) at batch starts
        self.safe = True

    def start(self, t_ms: int) -> None:
        self._marks.append((t_ms, time.monotonic() * 1000.0))

    def end(self, t_ms: int) -> None:
        marks, now_wall = self._marks, time.monotonic() * 1000.0
        while marks and marks[0][0] <= t_ms - self.window_ms:
            marks.popleft()
        if self.safe and marks and now_wall - marks[0][1] >= self.window_ms:
            self.safe = False

    def message(self, what: str) -> str:
        return (
            f"{what} ran slower than real time over a span shorter than the window "
            f"({self.window_ms} ms): the server may have expired a key the run still needed, "
            "so some decisions may differ from the simulated clock's; use a longer window"
        )
