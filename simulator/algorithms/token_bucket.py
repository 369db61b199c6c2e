"""Token bucket: a bucket of ``burst`` tokens, refilled continuously at ``limit`` per window.

The bucket a production limiter most often is (Stripe's, as Spring Cloud Gateway ships it). A new
client starts full; each request refills the bucket by the time elapsed (capped at ``burst``) and
takes ``cost`` tokens if they are there. It has no window: in any span of ``W`` it admits at most
``burst + limit`` (the ``burst`` saved up, then the refill), so with ``burst = limit`` a seam-less
2x, and with a small ``burst`` close to the rate itself. One hash per client, two numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from simulator.algorithms.base import (
    NEVER,
    BurstLimiter,
    MemoryModel,
    Param,
    Reference,
)
from simulator.records import Decision

__all__ = ["TokenBucket", "TokenBucketRef", "BURST"]

#: The capacity, in tokens (default: the limit).
BURST = Param("burst", lambda limit, window_ms: limit, unit="tokens", minimum=1, integer=True)


def _step(
    tokens: float, ts: int, expire_at: int, now: int, cost: int, burst: int, rate: float
) -> tuple[bool, float, float, int, int, int]:
    """One request, as the script does it: (allowed, filled, left, reset, retry, expire_at)."""
    if expire_at < now:  # the hash is gone only once now is past its expiry: a full bucket
        tokens, ts = burst, now
    elapsed = max(0, now - ts)
    filled = tokens + elapsed * rate
    if filled > burst:
        filled = burst
    allowed = cost <= filled
    left = filled - cost if allowed else filled
    # a later refill is left + elapsed * rate: the ms by division may fall a rounding short
    reset = _when(left, burst, rate)
    retry = 0 if allowed else (_when(filled, cost, rate) if cost <= burst else NEVER)
    return allowed, filled, left, reset, retry, now + reset + 1


def _when(level: float, want: float, rate: float) -> int:
    """Whole ms until ``level + ms x rate`` reaches ``want``, computed as a refill computes it."""
    ms = math.ceil((want - level) / rate)
    return ms + 1 if level + ms * rate < want else ms


class TokenBucketRef(Reference):
    name = "token_bucket"
    params_declared = (BURST,)

    def __init__(self, limit: int, window_ms: int, **params: object) -> None:
        super().__init__(limit, window_ms, **params)
        self.burst = int(self.params["burst"])
        self.rate = limit / window_ms
        self.buckets: dict[str, tuple[float, int, int]] = {}  # client -> (tokens, ts, expire_at)

    def decide(self, client: str, now_ms: int, cost: int = 1) -> Decision:
        tokens, ts, expire_at = self.buckets.get(client, (0.0, 0, -1))
        allowed, filled, left, reset, retry, expire_at = _step(
            tokens, ts, expire_at, now_ms, cost, self.burst, self.rate
        )
        self.buckets[client] = (left, now_ms, expire_at)
        return Decision(allowed, filled, self.burst, math.floor(left), reset, retry)


def bulk(
    c: np.ndarray,
    t: np.ndarray,
    limit: int,
    w: int,
    cost: np.ndarray | None = None,
    params: Mapping[str, float] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    burst = int((params or {}).get("burst", limit))
    rate = limit / w
    cl, tl = c.tolist(), t.tolist()
    kl = [1] * len(tl) if cost is None else cost.tolist()
    allowed, levels = [False] * len(tl), [0.0] * len(tl)
    last, tokens, ts, expire_at = None, 0.0, 0, -1
    for i, now in enumerate(tl):
        if cl[i] != last:
            last, expire_at = cl[i], -1
        allowed[i], levels[i], tokens, _, _, expire_at = _step(
            tokens, ts, expire_at, now, kl[i], burst, rate
        )
        ts = now
    return np.array(allowed, dtype=bool), np.array(levels, dtype="float64")


class TokenBucket(BurstLimiter):
    """Token bucket: ``burst`` tokens, ``limit`` per window refilled continuously."""

    name = "token_bucket"
    label = "Token bucket"
    colour = "#e377c2"
    scripts = ("token_bucket",)
    reference = TokenBucketRef
    bulk = staticmethod(bulk)
    params_declared = (BURST,)
    # one hash: a key name, the level and the time (two 8-byte numbers)
    key_prefix = "rl:tb:"
    memory = MemoryModel(lambda limit, key: key + 8 + 8, drained=True)
