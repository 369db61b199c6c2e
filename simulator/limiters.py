"""The limiters: keys, arguments and reply parsing around one Lua script each.

A limiter is small on purpose: the algorithm lives in its Lua script (``simulator/lua/``); the
Python side builds the keys (all sharing the client's hash tag), passes ``now_ms`` and the
parameters, and turns the reply into a :class:`~simulator.records.Decision`. Adding an algorithm is
one ``.lua`` file, one subclass here and one line in :data:`ALGORITHMS`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from simulator.backends import Backend
from simulator.keys import hash_tag
from simulator.records import Decision
from simulator.scripts import Script, load

__all__ = ["Limiter", "FixedWindow", "EchoMQ", "SlidingLog", "SlidingCounter", "ALGORITHMS"]


class Limiter:
    """Decides one request at a time by running its script on a backend."""

    name: ClassVar[str]
    script_name: ClassVar[str]
    #: True when decisions depend on the server's own clock (the key's TTL is the window).
    uses_server_time: ClassVar[bool] = False

    def __init__(self, backend: Backend, limit: int, window_ms: int) -> None:
        if int(limit) < 1:
            raise ValueError(f"limit: must be >= 1, got {limit}")
        if int(window_ms) <= 0:
            raise ValueError(f"window_ms: must be > 0, got {window_ms}")
        self.backend, self.limit, self.window_ms = backend, int(limit), int(window_ms)
        self.script: Script = load(self.script_name)

    def keys(self, client: str, now_ms: int) -> Sequence[str]:
        raise NotImplementedError

    def args(self, client: str, now_ms: int) -> Sequence[Any]:
        return (now_ms, self.window_ms, self.limit)

    @staticmethod
    def parse(reply: Sequence[Any]) -> Decision:
        # Integer replies arrive as ints; only the sliding counter's estimate is a string.
        allowed, count, limit, remaining, reset_ms, retry_after_ms = reply
        return Decision(allowed == 1, float(count), limit, remaining, reset_ms, retry_after_ms)

    def call(self, client: str, now_ms: int) -> tuple[Script, Sequence[str], Sequence[Any]]:
        """The script call for one request (what :meth:`decide` sends; pipelines batch these)."""
        return self.script, self.keys(client, now_ms), self.args(client, now_ms)

    def decide(self, client: str, now_ms: int) -> Decision:
        keys, args = self.keys(client, now_ms), self.args(client, now_ms)
        return self.parse(self.backend.call(self.script, keys, args))


class FixedWindow(Limiter):
    """Clock-aligned fixed window: the key holds ``floor(now / window)``."""

    name = "fixed_window"
    script_name = "fixed_window"

    def keys(self, client: str, now_ms: int) -> Sequence[str]:
        return (f"rl:fw:{hash_tag(client)}:{now_ms // self.window_ms}",)


class EchoMQ(Limiter):
    """First-hit anchored window as EchoMQ budgets a queue; the window is the counter's TTL."""

    name = "echomq"
    script_name = "echomq_admit"
    uses_server_time = True

    def keys(self, client: str, now_ms: int) -> Sequence[str]:
        return echomq_keys(client)

    def args(self, client: str, now_ms: int) -> Sequence[Any]:
        return (now_ms, self.limit, self.window_ms)

    def rate_limit_ttl(self, queue: str, now_ms: int, max_: int | None = None) -> int:
        """``get_rate_limit_ttl(q, max)``: ms to defer a job, 0 to go ahead (max 0 = from meta)."""
        script = load("echomq_ttl")
        cap = self.limit if max_ is None else max_
        return int(self.backend.call(script, echomq_keys(queue), (now_ms, cap)))


def echomq_keys(queue: str) -> tuple[str, str]:
    tag = hash_tag(queue)
    return (f"emq:{tag}:limiter", f"emq:{tag}:meta")


class SlidingLog(Limiter):
    """Exact sliding window over a sorted set of admitted request times."""

    name = "sliding_log"
    script_name = "sliding_log"

    def __init__(self, backend: Backend, limit: int, window_ms: int) -> None:
        super().__init__(backend, limit, window_ms)
        self._seq = 0

    def keys(self, client: str, now_ms: int) -> Sequence[str]:
        return (f"rl:sl:{hash_tag(client)}",)

    def args(self, client: str, now_ms: int) -> Sequence[Any]:
        self._seq += 1  # unique member: two requests in one millisecond must both count
        return (now_ms, self.window_ms, self.limit, f"{now_ms}-{self._seq}")


class SlidingCounter(Limiter):
    """Sliding window counter: current + previous grid window, weighted by overlap."""

    name = "sliding_counter"
    script_name = "sliding_counter"

    def keys(self, client: str, now_ms: int) -> Sequence[str]:
        tag, idx = hash_tag(client), now_ms // self.window_ms
        return (f"rl:sc:{tag}:{idx}", f"rl:sc:{tag}:{idx - 1}")


ALGORITHMS: dict[str, type[Limiter]] = {
    cls.name: cls for cls in (FixedWindow, EchoMQ, SlidingLog, SlidingCounter)
}
