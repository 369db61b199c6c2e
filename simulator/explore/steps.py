"""Step through one client's decisions and see what the server holds for it at each one.

A client's decisions depend on its own keys only (every key under its own hash tag), so the
requests one client sent in a run can be decided again, in the same order at the same instants,
on a fresh fake server whose clock is set to each request's ``t_ms``: the replies are the run's
replies. Around each call the server's keys are read as they are - ``TYPE``, then ``GET``,
``HGETALL``, ``ZRANGE … WITHSCORES`` or ``LRANGE``, and ``PTTL`` - so what a :class:`Step` shows
is the real script's real state on the virtual clock, never a state rebuilt in Python. This works
for any registered limiter, a user's script included: the keys are whatever it wrote.

Each step also carries the script's raw reply, the header fields of the decision
(:func:`simulator.headers.http_headers`) and what the exact sliding log holds at that instant
(admitted in the trailing window (t - W, t] of this client, before the request).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from simulator.backends.direct import DirectFakeBackend
from simulator.explain.replay import Replay
from simulator.explore.job import Cancelled
from simulator.fastref import decide_bulk
from simulator.headers import http_headers
from simulator.policy import Policy, resolve
from simulator.records import Decision

__all__ = [
    "KeyState",
    "Step",
    "Stepper",
    "step_through",
    "read_keys",
    "keys_text",
    "steps_frame",
    "MEMBERS_SHOWN",
]

#: Members of a sorted set or list shown per key (the rest counted, not listed).
MEMBERS_SHOWN = 4
#: Requests just before the one stepped to whose keys are read too (a step back among them
#: is free).
KEPT_BEHIND = 8


@dataclass(frozen=True)
class KeyState:
    """One key as the server holds it: its type, its value (a string, the fields of a hash, the
    members of a sorted set with their scores, a list's items), its TTL in ms (-1: none) and,
    for a set or list, how many members it has in all."""

    key: str
    type: str
    value: Any
    pttl_ms: int
    size: int = 1


@dataclass(frozen=True)
class Step:
    """One decision of the client: its instant and cost, the keys before and after the call,
    the script's reply, what the run decided, the header fields, and the exact log's count."""

    index: int
    t_ms: int
    cost: int
    before: tuple[KeyState, ...]
    reply: tuple[Any, ...]
    after: tuple[KeyState, ...]
    allowed: bool
    headers: dict[str, str]
    exact_in_window: int
    exact_allowed: bool


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _number(score: float) -> int | float:
    return int(score) if float(score).is_integer() else float(score)


def read_keys(backend: DirectFakeBackend) -> tuple[KeyState, ...]:
    """Every key the server holds now, sorted by name (on a fresh server: one client's keys)."""
    backend.clock.activate()  # PTTL is read on the virtual clock
    client = backend.client
    states = []
    for raw in sorted(client.scan_iter(count=1000)):
        key = _text(raw)
        kind = _text(client.type(raw))
        size = 1
        value: Any
        if kind == "string":
            value = _text(client.get(raw))
        elif kind == "hash":
            value = {_text(k): _text(v) for k, v in sorted(client.hgetall(raw).items())}
            size = len(value)
        elif kind == "zset":
            size = int(client.zcard(raw))
            pairs = client.zrange(raw, 0, MEMBERS_SHOWN - 1, withscores=True)
            value = [(_text(m), _number(s)) for m, s in pairs]
        elif kind == "list":
            size = int(client.llen(raw))
            value = [_text(x) for x in client.lrange(raw, 0, MEMBERS_SHOWN - 1)]
        elif kind == "set":
            members = sorted(_text(x) for x in client.smembers(raw))
            size, value = len(members), members[:MEMBERS_SHOWN]
        else:
            value = None
        states.append(KeyState(key, kind, value, int(client.pttl(raw)), size))
    return tuple(states)


class Stepper:
    """``client``'s requests at ``t_ms`` (with ``costs``) decided again by ``policy``'s
    script on a fresh fake server, the keys read before and after each call: ``stepper[i]`` is
    the :class:`Step` of request ``i``, decided when first asked for.

    The requests before it are decided on the way, their keys read only for the
    :data:`KEPT_BEHIND` just before it (a step back among them costs nothing, a step forward
    one call): a jump to request 5,000 costs 5,000 calls and no reads. A step back past those
    decides again on a fresh server up to there.

    ``allowed`` (what the run decided) is checked against the replies: a difference means the
    run's backend held other state, and is raised rather than shown.
    """

    def __init__(
        self,
        policy: Policy,
        client: str,
        t_ms: Sequence[int],
        costs: Sequence[int] | None = None,
        allowed: Sequence[bool] | None = None,
    ) -> None:
        self.policy, self.client = policy, client
        self.algorithm, self.limit, self.window_ms = policy.name, policy.limit, policy.window_ms
        self.times = [int(t) for t in t_ms]
        self.costs = [1] * len(self.times) if costs is None else [int(c) for c in costs]
        self.allowed = None if allowed is None else [bool(a) for a in allowed]
        exact = decide_bulk(
            "sliding_log",
            np.zeros(len(self.times), dtype="int64"),
            np.array(self.times, dtype="int64"),
            self.limit,
            self.window_ms,
            cost=np.array(self.costs, dtype="int64"),
        )
        self.exact = [bool(a) for a in exact.allowed]
        #: The steps made so far, by request.
        self.steps: dict[int, Step] = {}
        self._fresh()

    def _fresh(self) -> None:
        """A fresh server, no request decided on it yet."""
        self.replay = Replay(self.policy, self.client)
        self.backend, self.limiter = self.replay.backend, self.replay.limiter
        self._decided = 0  # the requests decided on this server, in order

    def __len__(self) -> int:
        return len(self.times)

    def __getitem__(self, i: int) -> Step:
        return self.at(i)

    def at(self, i: int, stale: Callable[[], bool] = lambda: False) -> Step:
        """Step ``i``; ``stale()`` is asked between the requests decided on the way, and stops
        the stepping with :class:`Cancelled` (what was decided stays: a later call goes on
        from there)."""
        if not 0 <= i < len(self.times):
            raise IndexError(i)
        if i in self.steps:
            return self.steps[i]
        if i < self._decided:  # behind this server: decide again, from the start
            self.replay.close()
            self._fresh()
        read_from = max(self._decided, i - KEPT_BEHIND)
        while self._decided <= i:
            if stale():
                raise Cancelled()
            j = self._decided
            if j < read_from:
                self._check(j, self.replay.decide(self.times[j], self.costs[j]).decision)
            else:
                self.steps[j] = self._step(j)
            self._decided += 1
        return self.steps[i]

    def _check(self, i: int, decision: Decision) -> None:
        if self.allowed is not None and self.allowed[i] != decision.allowed:
            raise RuntimeError(
                f"{self.algorithm}: {self.client}'s request at {self.times[i]} ms decided again "
                f"was {'admitted' if decision.allowed else 'refused'}, in the run the other way"
            )

    def _step(self, i: int) -> Step:
        t, cost = self.times[i], self.costs[i]
        self.replay.now_ms = t  # the keys before are read on the request's clock
        before = read_keys(self.backend)
        decided = self.replay.decide(t, cost)
        reply, decision = decided.reply, decided.decision
        after = read_keys(self.backend)
        self._check(i, decision)
        row = pd.Series(
            {
                "allowed": decision.allowed,
                "limit": decision.limit,
                "remaining": decision.remaining,
                "reset_ms": decision.reset_ms,
                "retry_after_ms": decision.retry_after_ms,
                "algorithm": self.algorithm,
            }
        )
        in_window = sum(
            self.costs[j] for j in range(i) if self.exact[j] and self.times[j] > t - self.window_ms
        )
        return Step(
            index=i,
            t_ms=t,
            cost=cost,
            before=before,
            reply=tuple(_text(x) if isinstance(x, bytes) else x for x in reply),
            after=after,
            allowed=decision.allowed,
            headers=http_headers(row, window_ms=self.window_ms, rate_limit=self.limit),
            exact_in_window=in_window,
            exact_allowed=self.exact[i],
        )

    def close(self) -> None:
        self.replay.close()


def step_through(
    algorithm: str,
    limit: int,
    window_ms: int,
    params: dict[str, float],
    client: str,
    t_ms: Sequence[int],
    costs: Sequence[int] | None = None,
    allowed: Sequence[bool] | None = None,
) -> list[Step]:
    """Every :class:`Step` of :class:`Stepper` at once, for the algorithm named (resolved
    here, with its numbers)."""
    policy = resolve(algorithm, limit, window_ms, params)
    stepper = Stepper(policy, client, t_ms, costs, allowed)
    try:
        return [stepper[i] for i in range(len(stepper))]
    finally:
        stepper.close()


def keys_text(states: Sequence[KeyState]) -> str:
    """The keys as one line each: ``key = value (PTTL n ms)``; a sorted set as its size and
    first members with their scores, a hash as its fields."""
    lines = []
    for k in states:
        if k.type == "zset":
            members = ", ".join(f"{m}@{score}" for m, score in k.value)
            more = " …" if k.size > len(k.value) else ""
            value = f"{k.size} members [{members}{more}]"
        elif k.type == "hash":
            value = "{" + ", ".join(f"{f}: {v}" for f, v in k.value.items()) + "}"
        elif isinstance(k.value, list):
            value = f"{k.size} items {k.value}"
        else:
            value = str(k.value)
        ttl = "no TTL" if k.pttl_ms < 0 else f"PTTL {k.pttl_ms:,} ms"
        lines.append(f"{k.key} = {value} ({ttl})")
    return "; ".join(lines) or "(none)"


def steps_frame(steps: Sequence[Step]) -> pd.DataFrame:
    """Steps as a table, one row per request (numbered from 1): its time, what was decided and
    what the exact log decides, the keys before and after, the script's reply and the header
    fields ``RateLimit`` and ``Retry-After``."""
    return pd.DataFrame(
        {
            "t_ms": [s.t_ms for s in steps],
            "decided": ["admitted" if s.allowed else "refused" for s in steps],
            "exact log": ["admits" if s.exact_allowed else "refuses" for s in steps],
            "keys before": [keys_text(s.before) for s in steps],
            "reply": [list(s.reply) for s in steps],
            "keys after": [keys_text(s.after) for s in steps],
            "RateLimit": [s.headers.get("RateLimit", "") for s in steps],
            "Retry-After": [s.headers.get("Retry-After", "") for s in steps],
        },
        index=pd.Index([s.index + 1 for s in steps], name="request"),
    )
