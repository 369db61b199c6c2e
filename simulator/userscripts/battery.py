"""The battery a limiter script is graded on: the same traces every time for one seed.

The card's practice case, requests around window seams, many in one millisecond, idle gaps longer
than the window, many clients, odd client ids, and seeded random traffic (:func:`battery`); a
script that takes a ``cost`` is played one more trace of costly requests (:func:`traces_for`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.algorithms.base import Limiter
from simulator.policy import lookup

__all__ = ["Trace", "battery", "COST_TRACE", "takes_cost", "traces_for"]


@dataclass(frozen=True)
class Trace:
    """One trace of the battery: requests ``(t_ms, client)`` in time order, and the limit."""

    name: str
    limit: int
    window_ms: int
    requests: tuple[tuple[int, str], ...]
    costs: tuple[int, ...] = ()  # one per request (empty: each costs 1)


def _at(times: list[int], client: str = "c") -> tuple[tuple[int, str], ...]:
    return tuple((t, client) for t in times)


def battery(seed: int = 0) -> list[Trace]:
    """The traces a script is graded on (the same ones every time for one seed)."""
    traces = [
        Trace(
            "practice case: 100 at second 59, 100 at 61",
            100,
            60_000,
            _at([59_000] * 100 + [61_000] * 100),
        ),
        Trace(
            "around the seams: 1 ms before, on, 1 ms after",
            4,
            1000,
            _at(
                [
                    t
                    for k in (1, 2, 3, 5)
                    for t in (k * 1000 - 1, k * 1000, k * 1000 + 1)
                    for _ in range(2)
                ]
            ),
        ),
        Trace(
            "ties: ten in one millisecond, four times",
            3,
            1000,
            _at([t for t in (0, 1, 999, 1000) for _ in range(10)]),
        ),
        Trace(
            "idle gaps longer than the window",
            2,
            1000,
            _at([0, 0, 0, 3500, 3500, 3500, 9999, 10_000, 10_001]),
        ),
        Trace(
            "odd client ids",
            2,
            500,
            tuple((t, c) for t in (0, 10, 600) for c in ("", "{x}", "a:b", "ü", "%25", "a b", "{")),
        ),
    ]
    rng = np.random.default_rng(seed)
    clients = [f"user{i}" for i in range(50)]
    many = sorted(
        (int(t), clients[int(c)])
        for t, c in zip(rng.uniform(0, 20_000, 1500), rng.integers(0, 50, 1500), strict=True)
    )
    traces.append(Trace("many clients: 50 over 20 s", 5, 2000, tuple(many)))
    for k in range(12):
        n = int(rng.integers(20, 200))
        gaps = rng.choice([0, 1, 2, 7, 150, 999, 1000, 1001, 2500], size=n)
        who = rng.integers(0, 3, size=n)
        t = np.cumsum(gaps) + int(rng.integers(0, 10**12))
        limit, window = int(rng.integers(1, 7)), int(rng.choice([1000, 1500, 60_000]))
        trace = tuple((int(a), f"r{int(b)}") for a, b in zip(t, who, strict=True))
        traces.append(Trace(f"random traffic #{k + 1} (seed {seed})", limit, window, trace))
    return traces


#: Requests that cost more than one (played only to scripts that take a ``cost``).
COST_TRACE = Trace(
    "costs: 1, 3, 9 and more than the limit",
    10,
    1000,
    _at([0, 1, 2, 3, 500, 999, 1000, 1001, 1002, 2500, 2501]),
    (3, 1, 9, 11, 2, 4, 9, 1, 3, 10, 1),
)


def takes_cost(algorithm: str | type[Limiter]) -> bool:
    """True for a reference, or a script whose declaration passes the cost (a registered name,
    or the class)."""
    decl = getattr(lookup(algorithm), "declaration", None)
    return decl is None or "cost" in decl.argv


def traces_for(
    script: str | type[Limiter], against: str | type[Limiter], seed: int = 0
) -> list[Trace]:
    """The traces ``script`` is graded on against ``against`` (names or classes): the battery,
    and the costly requests when both take a cost."""
    traces = battery(seed)
    if takes_cost(script) and takes_cost(against):
        traces.append(COST_TRACE)
    return traces
