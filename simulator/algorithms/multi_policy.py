"""Two limits on one request, all or nothing: a short policy and a long one in one script.

``limit`` per ``window_ms`` (say 10 per second) and ``long_limit`` per ``long_window_ms`` (say
1,000 per day), each a clock-grid counter. The script admits a request only when both admit it
and then counts it in both; refused, it counts in neither. Checked one after another instead,
each policy consuming as it goes (the naive way, :func:`naive_decide`), a request the second
policy refuses has already spent the first one's budget, and one both refuse is refused twice:
the production study counts both.

The decision speaks for the binding policy (admitted: the one with the fewest requests left;
refused: the refusing one with the longest wait), and :func:`policy_headers` sends both
policies in ``RateLimit-Policy`` and the binding one in ``RateLimit``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from simulator.algorithms.base import NEVER, Limiter, Param, Reference, cost_field
from simulator.checks import MAX_WINDOW_MS
from simulator.headers import several_policies
from simulator.keys import hash_tag
from simulator.records import Decision

__all__ = ["MultiPolicy", "MultiPolicyRef", "LONG_LIMIT", "LONG_WINDOW", "policy_headers"]

#: The long policy's requests per long window (default: 5 x the limit).
LONG_LIMIT = Param(
    "long_limit", lambda limit, w: 5 * limit, unit="requests", minimum=1, integer=True
)
#: The long policy's window in ms (default: 10 x the window).
LONG_WINDOW = Param(
    "long_window_ms",
    lambda limit, w: min(10 * w, MAX_WINDOW_MS),
    unit="ms",
    minimum=1,
    integer=True,
)


def _policies(limit: int, window_ms: int, params: dict[str, float]) -> list[tuple[int, int]]:
    return [(limit, window_ms), (int(params["long_limit"]), int(params["long_window_ms"]))]


class MultiPolicyRef(Reference):
    name = "multi_policy"
    params_declared = (LONG_LIMIT, LONG_WINDOW)

    def __init__(self, limit: int, window_ms: int, **params: object) -> None:
        super().__init__(limit, window_ms, **params)
        self.policies = _policies(self.limit, self.window_ms, self.params)
        self.counts: dict[tuple[str, int, int], int] = {}  # (client, policy, cell) -> count

    def decide(self, client: str, now_ms: int, cost: int = 1) -> Decision:
        keys = [(client, i, now_ms // w) for i, (_, w) in enumerate(self.policies)]
        counts = [self.counts.get(k, 0) for k in keys]
        resets = [w - now_ms % w for _, w in self.policies]
        binding, wait = -1, 0
        for i, (q, _) in enumerate(self.policies):
            if cost > q:
                return Decision(False, float(counts[i]), q, max(0, q - counts[i]), resets[i], NEVER)
            if counts[i] + cost > q and resets[i] > wait:
                binding, wait = i, resets[i]
        if binding >= 0:
            q = self.policies[binding][0]
            c = counts[binding]
            return Decision(False, float(c), q, max(0, q - c), resets[binding], wait)
        for i, k in enumerate(keys):
            counts[i] += cost
            self.counts[k] = counts[i]
        (q1, _), (q2, _) = self.policies
        b = 1 if q2 - counts[1] < q1 - counts[0] else 0
        q = self.policies[b][0]
        return Decision(True, float(counts[b]), q, q - counts[b], resets[b], 0)


def bulk(
    c: np.ndarray,
    t: np.ndarray,
    limit: int,
    w: int,
    cost: np.ndarray | None = None,
    params: Mapping[str, float] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The reference request by request (two counters per client; no faster way is needed
    for the studies' sizes)."""
    ref = MultiPolicyRef(limit, w, **dict(params or {}))
    kl = [1] * len(t) if cost is None else cost.tolist()
    decided = [
        ref.decide(str(k), now, n) for k, now, n in zip(c.tolist(), t.tolist(), kl, strict=True)
    ]
    allowed = np.fromiter((d.allowed for d in decided), dtype=bool, count=len(decided))
    return allowed, np.fromiter((d.count for d in decided), dtype="float64", count=len(decided))


class MultiPolicy(Limiter):
    """Two grid-window policies checked atomically: admitted by both, or counted in neither."""

    name = "multi_policy"
    label = "Two limits, all or nothing"
    colour = "#7b4173"
    scripts = ("multi_policy",)
    reference = MultiPolicyRef
    bulk = staticmethod(bulk)
    params_declared = (LONG_LIMIT, LONG_WINDOW)

    def keys(self, client: str, now_ms: int) -> Sequence[str]:
        tag, long_w = hash_tag(client), int(self.params["long_window_ms"])
        return (f"rl:mp:{tag}:s:{now_ms // self.window_ms}", f"rl:mp:{tag}:l:{now_ms // long_w}")

    def args(self, client: str, now_ms: int, cost: int = 1) -> Sequence[Any]:
        long_limit, long_w = int(self.params["long_limit"]), int(self.params["long_window_ms"])
        return (now_ms, self.window_ms, self.limit, long_w, long_limit, cost)

    def fields(
        self, clients: Sequence[str], t_ms: Sequence[int], costs: Sequence[int] | None
    ) -> tuple[int, list[str | list[str]]]:
        w, long_w = self.window_ms, int(self.params["long_window_ms"])
        tags = list(map(hash_tag, clients))
        short = [f"rl:mp:{tag}:s:{t // w}" for tag, t in zip(tags, t_ms, strict=True)]
        long = [f"rl:mp:{tag}:l:{t // long_w}" for tag, t in zip(tags, t_ms, strict=True)]
        limits = [str(w), str(self.limit), str(long_w), str(int(self.params["long_limit"]))]
        return 2, [short, long, list(map(str, t_ms)), *limits, cost_field(costs)]

    @classmethod
    def header_policies(
        cls, limit: int, window_ms: int, params: Mapping[str, float]
    ) -> tuple[tuple[str, int, int], ...]:
        long_limit, long_w = int(params["long_limit"]), int(params["long_window_ms"])
        return (("short", limit, window_ms), ("long", long_limit, long_w))

    def parse(self, reply: Sequence[Any]) -> Decision:  # type: ignore[override]
        allowed, count, limit, remaining, reset_ms, retry_after_ms, _policy = reply
        return Decision(allowed == 1, float(count), limit, remaining, reset_ms, retry_after_ms)


def policy_headers(
    row: Any, limit: int, window_ms: int, long_limit: int, long_window_ms: int
) -> dict[str, str]:
    """The draft's fields for a decision of :class:`MultiPolicy`: both policies in
    ``RateLimit-Policy`` (``"short"`` and ``"long"``), the binding one in ``RateLimit`` (told by
    the decision's limit; the short one when both limits are equal)."""
    return several_policies(
        row, (("short", limit, window_ms), ("long", long_limit, long_window_ms))
    )


def naive_decide(
    short: Any, long: Any, client: str, now_ms: int, cost: int = 1
) -> tuple[bool, bool, bool]:
    """The naive way: each policy's own limiter asked in turn, each one consuming whatever the
    other says. (admitted, refused by the short one, refused by the long one)."""
    a, b = short.decide(client, now_ms, cost), long.decide(client, now_ms, cost)
    return a.allowed and b.allowed, not a.allowed, not b.allowed
