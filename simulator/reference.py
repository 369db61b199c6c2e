"""Pure-Python oracle of every algorithm, decision for decision the same as the Lua scripts.

These classes keep the state a server would keep (counters, logs, expiry times) in dictionaries and
follow Redis's expiry rule (a key is gone only once now is past its expiry time). They exist to
check the scripts (property tests compare them request by request), and they are ~50x faster, which
makes large what-if studies cheap. Times are integer milliseconds and must not go backwards.
"""

from __future__ import annotations

import math
from collections import deque
from typing import ClassVar

from simulator.records import Decision

__all__ = ["Reference", "REFERENCES"]


class Reference:
    name: ClassVar[str]

    def __init__(self, limit: int, window_ms: int) -> None:
        if int(limit) < 1:
            raise ValueError(f"limit: must be >= 1, got {limit}")
        if int(window_ms) <= 0:
            raise ValueError(f"window_ms: must be > 0, got {window_ms}")
        self.limit, self.window_ms = int(limit), int(window_ms)

    def decide(self, client: str, now_ms: int) -> Decision:
        raise NotImplementedError


class FixedWindowRef(Reference):
    name = "fixed_window"

    def __init__(self, limit: int, window_ms: int) -> None:
        super().__init__(limit, window_ms)
        self.counts: dict[tuple[str, int], int] = {}

    def decide(self, client: str, now_ms: int) -> Decision:
        w, limit = self.window_ms, self.limit
        key = (client, now_ms // w)
        count = self.counts.get(key, 0) + 1
        self.counts[key] = count
        reset = w - now_ms % w
        if count <= limit:
            return Decision(True, float(count), limit, limit - count, reset, 0)
        return Decision(False, float(count), limit, 0, reset, reset)


class EchoMQRef(Reference):
    name = "echomq"

    def __init__(self, limit: int, window_ms: int) -> None:
        super().__init__(limit, window_ms)
        self.counters: dict[str, tuple[int, int]] = {}  # client -> (count, expire_at_ms)

    def decide(self, client: str, now_ms: int) -> Decision:
        limit = self.limit
        count, expire_at = self.counters.get(client, (0, -1))
        if expire_at < now_ms:  # gone only once now is past expire-at
            count = 0
        if count >= limit:
            ttl = expire_at - now_ms
            return Decision(False, float(count), limit, 0, ttl, ttl)
        count += 1
        if count == 1:
            expire_at = now_ms + self.window_ms
        self.counters[client] = (count, expire_at)
        return Decision(True, float(count), limit, limit - count, expire_at - now_ms, 0)


class SlidingLogRef(Reference):
    name = "sliding_log"

    def __init__(self, limit: int, window_ms: int) -> None:
        super().__init__(limit, window_ms)
        self.logs: dict[str, deque[int]] = {}

    def decide(self, client: str, now_ms: int) -> Decision:
        w, limit = self.window_ms, self.limit
        log = self.logs.setdefault(client, deque())
        while log and log[0] <= now_ms - w:
            log.popleft()
        count = len(log)
        if count < limit:
            log.append(now_ms)
            return Decision(True, float(count), limit, limit - count - 1, log[0] + w - now_ms, 0)
        retry = log[0] + w - now_ms
        return Decision(False, float(count), limit, 0, retry, retry)


class SlidingCounterRef(Reference):
    name = "sliding_counter"

    def __init__(self, limit: int, window_ms: int) -> None:
        super().__init__(limit, window_ms)
        self.counts: dict[tuple[str, int], int] = {}

    def decide(self, client: str, now_ms: int) -> Decision:
        w, limit = self.window_ms, self.limit
        idx, elapsed = divmod(now_ms, w)
        cur = self.counts.get((client, idx), 0)
        prev = self.counts.get((client, idx - 1), 0)
        estimate = cur + prev * (w - elapsed) / w  # same operations, same order as the Lua
        reset = w - elapsed
        if estimate < limit:
            self.counts[(client, idx)] = cur + 1
            remaining = max(0, math.ceil(limit - (estimate + 1)))
            return Decision(True, estimate, limit, remaining, reset, 0)
        if cur < limit:
            wait = math.floor((w * prev - (limit - cur) * w) / prev) + 1 - elapsed
        else:
            wait = reset + math.floor((w * cur - limit * w) / cur) + 1
        return Decision(False, estimate, limit, 0, reset, wait)


REFERENCES: dict[str, type[Reference]] = {
    cls.name: cls for cls in (FixedWindowRef, EchoMQRef, SlidingLogRef, SlidingCounterRef)
}
