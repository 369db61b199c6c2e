"""``bench accuracy``: how fast the exact counts, the bulk reference and the oracle decide."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from simulator.algorithms import SlidingCounter
from simulator.bench.timing import best_of
from simulator.fastref import decide_bulk
from simulator.studies.accuracy import exact_before
from simulator.studies.families import Family, offered

__all__ = ["bench_accuracy"]


def bench_accuracy(decisions: int = 10_000, out: Callable[[str], None] = print) -> dict[str, float]:
    """Decisions per second: exact rolling counts (vectorised), bulk reference, oracle, Lua."""

    n_target = max(decisions, 1_000_000)  # a vectorised pass needs a large batch to be measured
    f = Family("bench", "poisson", max(1, n_target // 800), load=0.8, duration_ms=600_000)
    trace = offered(f)
    codes = pd.factorize(trace["client"])[0].astype("int64")
    t_ms = trace["t_ms"].to_numpy(dtype="int64")
    n = len(t_ms)

    def rate(fn: Callable[[], object], count: int, repeat: int = 3) -> float:
        return count / best_of({"run": fn}, repeat)["run"][0]

    bulk = decide_bulk(SlidingCounter, codes, t_ms, f.limit, f.window_ms)
    rates = {
        "exact counts, trace in time order": rate(
            lambda: exact_before(codes, t_ms, bulk.allowed, f.window_ms), n
        ),
        "exact counts, decision order given": rate(
            lambda: exact_before(codes, t_ms, bulk.allowed, f.window_ms, order=bulk.order), n
        ),
        "bulk reference, sliding_counter": rate(
            lambda: decide_bulk(SlidingCounter, codes, t_ms, f.limit, f.window_ms), n
        ),
    }
    k = min(n, 100_000)
    names = trace["client"].astype(str).tolist()[:k]
    ref = SlidingCounter.reference(f.limit, f.window_ms)
    rates["oracle (reference.py), sliding_counter"] = rate(
        lambda: [ref.decide(c, t) for c, t in zip(names, t_ms[:k].tolist(), strict=True)], k, 1
    )
    out(f"accuracy: {n:,} decisions, {f.clients:,} clients (Poisson 0.8x the limit), best of 3")
    goal = 5_000_000
    for name, r in rates.items():
        out(f"{name:<40} {r:>14,.0f}/s")
    exact = rates["exact counts, trace in time order"]
    out(
        f"exact counts vs the 5M/s goal: {exact / goal:.2f}x; "
        f"bulk reference vs oracle: {rates['bulk reference, sliding_counter'] / rates['oracle (reference.py), sliding_counter']:.1f}x"
    )
    return rates
