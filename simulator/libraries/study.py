"""The library strategies beside the built-ins: the card's case, two traces against the exact
log, and the smallest traces where a library differs from the algorithm its name suggests.

``python -m simulator.libraries.study`` prints every table of ``docs/libraries.md``; notebook
09 draws them. Every run decides request by request on a fresh fake server (virtual clock).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from simulator.algorithms.base import Limiter
from simulator.backends import FakeRedisBackend
from simulator.policy import lookup

__all__ = [
    "BUILT_INS",
    "decide_trace",
    "cards_case",
    "poisson_trace",
    "bursty_trace",
    "against_exact",
    "SMALLEST",
    "smallest_traces",
]

#: The built-ins shown beside the libraries.
BUILT_INS = ("fixed_window", "increx", "sliding_log", "sliding_counter", "token_bucket", "gcra")
#: The exact log every trace is scored against.
EXACT = "sliding_log"


def library_strategies() -> list[str]:
    from simulator.libraries import register

    return register()


def decide_trace(
    algorithm: str | type[Limiter],
    t_ms: Sequence[int],
    clients: Sequence[str],
    limit: int,
    window_ms: int,
    costs: Sequence[int] | None = None,
) -> np.ndarray:
    """Whether each request was admitted by ``algorithm`` (a registered name, or the class),
    decided in order on a fresh fake server."""
    now = [0]
    limiter = lookup(algorithm)(FakeRedisBackend(lambda: now[0]), limit, window_ms)
    out = np.zeros(len(t_ms), dtype=bool)
    weights = costs if costs is not None else [1] * len(t_ms)
    for i, (t, c, k) in enumerate(zip(t_ms, clients, weights, strict=True)):
        now[0] = t
        out[i] = limiter.decide(c, t, k).allowed
    return out


def _algorithms() -> list[type[Limiter]]:
    """The built-ins and the library strategies, each name looked up once, where a table
    starts."""
    return [lookup(name) for name in (*BUILT_INS, *library_strategies())]


def cards_case(limit: int = 100, window_s: int = 60) -> pd.DataFrame:
    """100 requests at second 59 and 100 at 61, 100 per minute: admitted by each."""
    t_ms = [59_000] * limit + [61_000] * limit
    rows = []
    for cls in _algorithms():
        admitted = decide_trace(cls, t_ms, ["user"] * len(t_ms), limit, window_s * 1000)
        rows.append({"algorithm": cls.name, "admitted": int(admitted.sum()), "of": len(t_ms)})
    return pd.DataFrame(rows)


def poisson_trace(n: int = 5_000, clients: int = 4, rate_per_s: float = 1.5, seed: int = 33):
    """``n`` requests, Poisson arrivals at ``rate_per_s`` per client, times in whole ms."""
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    t_ms = np.floor(np.cumsum(rng.exponential(1000 / (rate_per_s * clients), n))).astype(int)
    return t_ms.tolist(), [f"c{i}" for i in rng.integers(0, clients, n)]


def bursty_trace(bursts: int = 250, per_burst: int = 20, clients: int = 4, seed: int = 34):
    """Bursts of ``per_burst`` requests within 2 s, starting at Poisson instants (one every
    20 s per client on average): what a retrying or batch client sends."""
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    starts = np.cumsum(rng.exponential(20_000 / clients, bursts))
    who = rng.integers(0, clients, bursts)
    t = (starts[:, None] + rng.uniform(0, 2_000, (bursts, per_burst))).ravel()
    c = np.repeat(who, per_burst)
    order = np.argsort(t, kind="stable")
    return np.floor(t[order]).astype(int).tolist(), [f"c{i}" for i in c[order]]


def against_exact(
    t_ms: Sequence[int], clients: Sequence[str], limit: int = 10, window_s: int = 10
) -> pd.DataFrame:
    """Each algorithm's admitted, and its decisions that differ from the exact log's."""
    exact = decide_trace(EXACT, t_ms, clients, limit, window_s * 1000)
    rows = []
    for cls in _algorithms():
        got = decide_trace(cls, t_ms, clients, limit, window_s * 1000)
        rows.append(
            {
                "algorithm": cls.name,
                "admitted": int(got.sum()),
                "wrongly admitted": int((got & ~exact).sum()),
                "wrongly refused": int((~got & exact).sum()),
            }
        )
    return pd.DataFrame(rows)


#: The smallest trace that shows each difference: (library strategy, the built-in its name
#: suggests, limit, window s, request times in ms, their costs, all from one client).
SMALLEST = (
    ("limits.fixed_window", "fixed_window", 1, 10, (9_000, 11_000), (1, 1)),
    ("limits.fixed_window", "increx", 10, 10, (0, 1_000, 2_000), (8, 8, 1)),
    ("limits.moving_window", "sliding_log", 1, 10, (0, 10_000), (1, 1)),
    ("limits.sliding_window_counter", "sliding_counter", 1, 10, (9_000, 11_000), (1, 1)),
    ("pyrate.sliding_window_log", "sliding_log", 1, 10, (0, 10_000), (1, 1)),
    ("throttled.token_bucket", "token_bucket", 1, 10, (900, 10_000), (1, 1)),
    ("throttled.token_bucket", "token_bucket", 2, 4, (0, 0, 3_000, 5_000, 6_000), (1,) * 5),
    ("throttled.leaking_bucket", "token_bucket", 1, 10, (900, 10_000), (1, 1)),
    ("throttled.sliding_window", "sliding_counter", 5, 10, (0,) * 5 + (18_000,) * 5, (1,) * 10),
)


def smallest_traces() -> pd.DataFrame:
    """Each library strategy and the built-in its name suggests on its smallest trace."""
    rows = []
    for library, built_in, limit, window_s, t_ms, costs in SMALLEST:
        for name in (library, built_in):
            got = decide_trace(name, t_ms, ["u"] * len(t_ms), limit, window_s * 1000, costs)
            rows.append(
                {
                    "algorithm": name,
                    "limit per window": f"{limit} per {window_s} s",
                    "requests at (s)": ", ".join(f"{t / 1000:g}" for t in t_ms),
                    "costs": ", ".join(map(str, costs)),
                    "admitted": " ".join("yes" if a else "no" for a in got),
                }
            )
    return pd.DataFrame(rows)


def main() -> None:
    with pd.option_context("display.width", 120):
        print("The card's case: 100 at second 59, 100 at 61, 100 per 60 s")
        print(cards_case().to_string(index=False), end="\n\n")
        print(
            "Poisson, 5,000 requests, 4 clients at 1.5/s each, 10 per 10 s, against the exact log"
        )
        print(against_exact(*poisson_trace()).to_string(index=False), end="\n\n")
        print("Bursty, 250 bursts of 20 within 2 s, 4 clients, 10 per 10 s, against the exact log")
        print(against_exact(*bursty_trace()).to_string(index=False), end="\n\n")
        print("The smallest traces where a library differs from its name")
        print(smallest_traces().to_string(index=False))


if __name__ == "__main__":
    main()
