"""Adversaries: clients that time their requests to get the most through in one window.

A limit of L per W promises that no client gets much more than L requests through in any trailing
window (t - W, t]. Each algorithm keeps that promise differently, and each has a schedule that
stretches it furthest. Two hand-made adversaries (:mod:`simulator.studies.adversaries`) know the
window length and the clock grid, and :func:`search` finds schedules without being told: a seeded evolutionary search over burst
schedules (a few bursts, each ``n`` requests at one millisecond) whose fitness is the most requests
admitted in any (t - W, t], judged by the bulk reference (:mod:`simulator.fastref`). Mutations
move bursts by small and large steps, onto the grid (the adversary knows W), onto another burst's
time +- W (how a first-hit window is chased), and change burst sizes. The search stops after
``generations`` or ``budget_s`` seconds, whichever comes first. The winner is then replayed through
the real scripts on the virtual clock (:func:`confirm_on_lua`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from simulator.algorithms import BULK
from simulator.checks import ConfigError
from simulator.engine.run import simulate
from simulator.engine.scenario import ClientSpec, Scenario
from simulator.fastref import decide_bulk
from simulator.metrics import max_in_window, trailing_admitted
from simulator.studies.adversaries import Burst, BurstSchedule, hand_made, schedule_of

#: Generations of the search for an algorithm without a bulk kernel (a user's script).
LUA_GENERATIONS = 8

__all__ = [
    "peak_admitted",
    "SearchConfig",
    "SearchResult",
    "search",
    "confirm_on_lua",
    "worst_cases",
    "worst_case",
    "schedule_of",
]


def peak_admitted(
    algorithm: str,
    bursts: list[Burst],
    limit: int,
    window_ms: int,
    params: Mapping[str, float] | None = None,
) -> tuple[int, int]:
    """Most requests of one client admitted in any (t - W, t], and the first t where it happens
    (``params``: the algorithm's own, e.g. a bucket's burst)."""
    if not bursts:
        return 0, 0
    at = np.array([b[0] for b in bursts], dtype="int64")
    n = np.array([b[1] for b in bursts], dtype="int64")
    t = np.repeat(at, n)
    if algorithm in BULK:
        allowed = decide_bulk(
            algorithm, np.zeros(len(t), dtype="int64"), t, limit, window_ms, params=params
        ).allowed
    else:  # a user's script: no bulk kernel, so the Lua path on the fake server
        spec = BurstSchedule("search", tuple(int(x) for x in at), tuple(int(k) for k in n))
        frame = simulate(
            Scenario(
                algorithm, limit, window_ms, int(at.max()) + 1, (spec,), params=dict(params or {})
            )
        )
        allowed = frame.sort_values("t_ms", kind="stable")["allowed"].to_numpy()
    adm = t[allowed]
    if len(adm) == 0:
        return 0, 0
    one = np.zeros(len(adm), dtype="int64")  # one client; its admitted requests, in order
    inside = trailing_admitted(
        one, adm, np.ones(len(adm), dtype=bool), window_ms, np.arange(len(adm))
    )
    i = int(np.argmax(inside))
    return int(inside[i]), int(adm[i])


@dataclass(frozen=True)
class SearchConfig:
    """Search space and effort: up to ``max_bursts`` bursts in ``horizon_windows`` windows."""

    limit: int = 100
    window_ms: int = 60_000
    max_bursts: int = 5
    horizon_windows: int = 3
    population: int = 32
    generations: int = 80
    budget_s: float = 20.0
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("limit", "window_ms", "max_bursts", "horizon_windows", "generations"):
            if getattr(self, name) < 1:
                raise ConfigError(f"SearchConfig.{name}: must be >= 1, got {getattr(self, name)}")
        if self.population < 4:
            raise ConfigError(f"SearchConfig.population: must be >= 4, got {self.population}")
        if not self.budget_s > 0:
            raise ConfigError(f"SearchConfig.budget_s: must be > 0, got {self.budget_s}")


@dataclass(frozen=True)
class SearchResult:
    algorithm: str
    schedule: BurstSchedule
    max_in_window: int
    ratio: float
    peak_t_ms: int
    evaluations: int
    generations: int
    elapsed_s: float
    history: tuple[int, ...]  # best max_in_window after each generation


def _normalise(bursts: list[Burst], horizon: int, cap: int) -> list[Burst]:
    """The bursts in time order, each moved into [0, horizon), those at one millisecond merged,
    each of 1 up to ``cap`` requests."""
    merged: dict[int, int] = {}
    for t, n in bursts:
        t = int(min(max(t, 0), horizon - 1))
        merged[t] = min(merged.get(t, 0) + max(int(n), 1), cap)
    return sorted(merged.items())


class _Breeder:
    """Where the search breeds burst schedules against one algorithm: one generator seeded by the
    config and the algorithm's name, and a cache of each schedule's fitness (the most admitted in
    any window, then the fewer requests sent)."""

    def __init__(
        self, algorithm: str, config: SearchConfig, params: Mapping[str, float] | None
    ) -> None:
        self.algorithm, self.c, self.params = algorithm, config, params
        self.limit, self.window_ms = config.limit, config.window_ms
        self.horizon_ms, self.cap = config.horizon_windows * config.window_ms, 2 * config.limit
        self.rng = np.random.default_rng(
            np.random.SeedSequence([config.seed, len(algorithm), *algorithm.encode()])
        )
        self.cache: dict[tuple[Burst, ...], tuple[int, int]] = {}

    def fitness(self, ind: list[Burst]) -> tuple[int, int]:
        """Most admitted in any (t - W, t] first; fewer requests sent breaks ties."""
        key = tuple(ind)
        if key not in self.cache:
            peak = peak_admitted(self.algorithm, ind, self.limit, self.window_ms, self.params)[0]
            self.cache[key] = (peak, -sum(n for _, n in ind))
        return self.cache[key]

    def _normalised(self, bursts: list[Burst]) -> list[Burst]:
        return _normalise(bursts, self.horizon_ms, self.cap)

    def _random_burst(self) -> Burst:
        """A burst anywhere in the horizon, of 1 up to twice the limit."""
        return (int(self.rng.integers(0, self.horizon_ms)), int(self.rng.integers(1, self.cap + 1)))

    def random_one(self) -> list[Burst]:
        """A schedule of 1 up to ``max_bursts`` random bursts."""
        k = int(self.rng.integers(1, self.c.max_bursts + 1))
        return self._normalised([self._random_burst() for _ in range(k)])

    def _nudge(self, out: list[Burst], t: int, n: int) -> Burst:
        """Move the burst by a millisecond up to a third of a window."""
        w = self.window_ms
        return t + int(round(self.rng.normal(0, self.rng.choice([1, 20, w / 20, w / 3])))), n

    def _onto_grid(self, out: list[Burst], t: int, n: int) -> Burst:
        """Move the burst onto the clock grid, give or take 2 ms."""
        w = self.window_ms
        return int(round(t / w)) * w + int(self.rng.integers(-2, 3)), n

    def _after_another(self, out: list[Burst], t: int, n: int) -> Burst:
        """Move the burst one window (or none) after another burst, give or take 2 ms."""
        w = self.window_ms
        other = out[int(self.rng.integers(len(out)))][0]
        return other + int(self.rng.choice([-w, 0, w])) + int(self.rng.integers(-2, 3)), n

    def _resize(self, out: list[Burst], t: int, n: int) -> Burst:
        """Give the burst 1, L - 1, L, about its size, or any size up to twice the limit."""
        rng, limit = self.rng, self.limit
        sizes = [
            1,
            limit - 1,
            limit,
            n + int(rng.integers(-10, 11)),
            int(rng.integers(1, self.cap + 1)),
        ]
        return t, int(rng.choice(sizes))

    def mutate(self, ind: list[Burst]) -> list[Burst]:
        """One burst moved or resized, or a burst added or removed (when the schedule has room)."""
        out = list(ind)
        i = int(self.rng.integers(len(out)))
        op = int(self.rng.integers(6))
        moves = (self._nudge, self._onto_grid, self._after_another, self._resize)
        if op < len(moves):
            out[i] = moves[op](out, *out[i])
        elif op == 4 and len(out) < self.c.max_bursts:
            out.append(self._random_burst())
        elif op == 5 and len(out) > 1:
            out.pop(i)
        return self._normalised(out)

    def crossover(self, a: list[Burst], b: list[Burst]) -> list[Burst]:
        """About half the bursts of each parent, shuffled, at most ``max_bursts``."""
        pool = [x for x in a + b if self.rng.random() < 0.5] or [a[0]]
        self.rng.shuffle(pool)
        return self._normalised(pool[: self.c.max_bursts])

    def next_generation(self, ranked: list[list[Burst]]) -> list[list[Burst]]:
        """The elite of ``ranked`` (best first) kept; the rest children of the better half, crossed
        now and then and mutated once or twice."""
        c, rng = self.c, self.rng
        children = ranked[: max(2, c.population // 8)]
        while len(children) < c.population:
            picks = [ranked[int(j)] for j in rng.integers(0, c.population // 2, 2)]
            child = self.crossover(*picks) if rng.random() < 0.3 else list(picks[0])
            for _ in range(int(rng.integers(1, 3))):
                child = self.mutate(child)
            children.append(child)
        return children


def search(
    algorithm: str,
    config: SearchConfig = SearchConfig(),
    on_generation: Callable[[int, int], None] | None = None,
    params: Mapping[str, float] | None = None,
) -> SearchResult:
    """Evolve burst schedules that maximise the most admitted in any (t - W, t]."""
    c, started = config, time.perf_counter()
    L, w = c.limit, c.window_ms
    breeder = _Breeder(algorithm, c, params)
    population = [breeder.random_one() for _ in range(c.population)]
    history: list[int] = []
    generation = 0
    while generation < c.generations and time.perf_counter() - started < c.budget_s:
        population.sort(key=breeder.fitness, reverse=True)
        history.append(breeder.fitness(population[0])[0])
        if on_generation is not None:
            on_generation(generation, history[-1])
        population = breeder.next_generation(population)
        generation += 1
    best = _polish(algorithm, max(population, key=breeder.fitness), L, w, params)
    peak, peak_t = peak_admitted(algorithm, best, L, w, params)
    return SearchResult(
        algorithm,
        BurstSchedule(f"search-{algorithm}", tuple(t for t, _ in best), tuple(n for _, n in best)),
        peak,
        peak / L,
        peak_t,
        len(breeder.cache),
        generation,
        time.perf_counter() - started,
        tuple(history),
    )


def _polish(
    algorithm: str,
    best: list[Burst],
    limit: int,
    window_ms: int,
    params: Mapping[str, float] | None = None,
) -> list[Burst]:
    """Drop bursts and trim sizes that do not change the peak, so the schedule reads clearly."""

    def peak_of(bursts: list[Burst]) -> int:
        return peak_admitted(algorithm, bursts, limit, window_ms, params)[0]

    peak = peak_of(best)
    for i in reversed(range(len(best))):
        if len(best) > 1 and peak_of(best[:i] + best[i + 1 :]) == peak:
            best = best[:i] + best[i + 1 :]
    for i in range(len(best)):
        t, n = best[i]
        lo, hi = 1, n  # smallest size that keeps the peak (the peak only grows with n here)
        while lo < hi:
            mid = (lo + hi) // 2
            trial = best[:i] + [(t, mid)] + best[i + 1 :]
            if peak_of(trial) == peak:
                hi = mid
            else:
                lo = mid + 1
        trial = best[:i] + [(t, lo)] + best[i + 1 :]
        if peak_of(trial) == peak:
            best = trial
    return best


def confirm_on_lua(
    algorithm: str,
    spec: ClientSpec,
    limit: int,
    window_ms: int,
    params: Mapping[str, float] | None = None,
) -> tuple[int, pd.DataFrame]:
    """Play an adversary through the real script on fakeredis: (most admitted in a window, log)."""
    last = max(t for t, _ in spec.bursts())  # type: ignore[attr-defined]
    scenario = Scenario(algorithm, limit, window_ms, last + 1, (spec,), params=dict(params or {}))
    frame = simulate(scenario)
    return int(max_in_window(frame, window_ms).iloc[0]), frame


#: An algorithm with some of its own parameters set: (label, algorithm, params).
Variant = tuple[str, str, Mapping[str, float]]


def worst_cases(
    algorithms: tuple[str, ...],
    config: SearchConfig = SearchConfig(),
    on_algorithm: Callable[[str], None] | None = None,
    variants: Sequence[Variant] = (),
) -> tuple[pd.DataFrame, dict[str, SearchResult]]:
    """Per algorithm (each with its defaults, then each variant, e.g. a bucket with a small
    burst): the hand-made adversaries and the search, each confirmed on the Lua path. Results
    are keyed by the algorithm's name or the variant's label."""
    rows, results = [], {}
    runs: list[Variant] = [(a, a, {}) for a in algorithms] + list(variants)
    for label, algorithm, params in runs:
        row, results[label] = worst_case(algorithm, config, params)
        rows.append(row)
        if on_algorithm is not None:
            on_algorithm(label)
    return pd.DataFrame(rows), results


def worst_case(
    algorithm: str,
    config: SearchConfig = SearchConfig(),
    params: Mapping[str, float] | None = None,
) -> tuple[dict, SearchResult]:
    """One row of :func:`worst_cases` (a sweep's task) and its search result."""
    L, w, params = config.limit, config.window_ms, dict(params or {})
    # A user's script runs on the Lua path (a few ms per schedule): a shorter search.
    lua_only = algorithm not in BULK
    if lua_only:
        config = replace(config, generations=min(config.generations, LUA_GENERATIONS))
    result = search(algorithm, config, params=params)
    own = " ".join(f"{k}={v:g}" for k, v in params.items())
    row: dict = {"algorithm": algorithm, "params": own, "limit": L, "window_s": w / 1000}
    found = {"search": (result.max_in_window, result.schedule.bursts())}
    for name, spec in hand_made(L, w, int(params.get("burst", L))).items():
        row[f"{name}_max"] = peak_admitted(algorithm, spec.bursts(), L, w, params)[0]
        found[name] = (row[f"{name}_max"], spec.bursts())
    # The worst case is the worst any adversary found: a short search (a user's script) can miss
    # what a hand-made one shows. A tie goes to the search (it comes first).
    worst_by = max(found, key=lambda name: found[name][0])
    lua_peak, _ = confirm_on_lua(algorithm, result.schedule, L, w, params)
    row |= {
        "search_max": result.max_in_window,
        "search_ratio": result.ratio,
        "lua_max": lua_peak,
        "schedule": " ".join(f"{n}@{t}ms" for t, n in result.schedule.bursts()),
        "evaluations": result.evaluations,
        "generations": result.generations,
        "searched_on": "lua (no bulk kernel)" if lua_only else "bulk kernel",
        "worst_max": found[worst_by][0],
        "worst_by": worst_by,
        "worst_schedule": " ".join(f"{n}@{t}ms" for t, n in found[worst_by][1]),
    }
    return row, result
