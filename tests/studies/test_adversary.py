"""Worst cases: invariants over random traces, the hand-made adversaries, and the search's
winners replayed on the real scripts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.checks import ConfigError
from simulator.studies.adversaries import BurstSchedule, EndBunching, SeamTimer
from simulator.studies.adversary import (
    SearchConfig,
    confirm_on_lua,
    peak_admitted,
    search,
)

bursts = st.lists(st.tuples(st.integers(0, 5000), st.integers(1, 12)), min_size=1, max_size=12)


@settings(max_examples=150, deadline=None)
@given(bursts=bursts, limit=st.integers(1, 8), window_ms=st.integers(1, 2000))
def test_window_invariants_over_random_traces(bursts, limit, window_ms):
    schedule = sorted(bursts)
    peaks = {
        a: peak_admitted(a, schedule, limit, window_ms)[0]
        for a in ("sliding_log", "fixed_window", "sliding_counter", "echomq")
    }
    assert peaks["sliding_log"] <= limit  # the exact log never exceeds the limit in any window
    assert peaks["fixed_window"] <= 2 * limit  # a window spans at most two grid cells
    assert peaks["sliding_counter"] <= 2 * limit  # each grid cell admits at most the limit
    assert peaks["echomq"] <= max(2 * limit - 1, 1)  # a first hit and its window's end are W apart


@settings(max_examples=12, deadline=None)
@given(bursts=bursts, limit=st.integers(1, 5), window_ms=st.sampled_from([7, 100, 1000]))
def test_log_invariant_holds_on_the_lua_path(bursts, limit, window_ms):
    spec = BurstSchedule("c", tuple(t for t, _ in bursts), tuple(n for _, n in bursts))
    lua_peak, _ = confirm_on_lua("sliding_log", spec, limit, window_ms)
    assert lua_peak <= limit
    assert lua_peak == peak_admitted("sliding_log", spec.bursts(), limit, window_ms)[0]


def test_seam_timer_doubles_the_aligned_window_on_lua():
    peak, frame = confirm_on_lua("fixed_window", SeamTimer("s", 60_000, 100), 100, 60_000)
    assert peak == 200 and len(frame) == 200


def test_end_bunching_doubles_the_counter_on_lua():
    # the estimate at 1 ms before the next seam still counts 2/W of last window: < 1 request
    peak, _ = confirm_on_lua("sliding_counter", EndBunching("b", 60_000, 100), 100, 60_000)
    assert peak == 200
    assert confirm_on_lua("sliding_log", EndBunching("b", 60_000, 100), 100, 60_000)[0] == 100


SMALL = SearchConfig(limit=10, window_ms=1_000, generations=60, budget_s=60.0, seed=3)


@pytest.fixture(scope="module")
def found():
    return {
        a: search(a, SMALL) for a in ("fixed_window", "echomq", "sliding_log", "sliding_counter")
    }


def test_the_exact_log_comes_out_at_exactly_the_limit(found):
    assert found["sliding_log"].max_in_window == SMALL.limit
    assert found["sliding_log"].ratio == 1.0


@pytest.mark.parametrize("algorithm", ["fixed_window", "echomq", "sliding_counter"])
def test_window_algorithms_are_beaten_and_the_lua_agrees(found, algorithm):
    result = found[algorithm]
    lua_peak, frame = confirm_on_lua(algorithm, result.schedule, SMALL.limit, SMALL.window_ms)
    assert lua_peak == result.max_in_window  # measured on the scripts, not assumed
    assert SMALL.limit < result.max_in_window <= 2 * SMALL.limit
    assert len(frame) == sum(result.schedule.n)
    assert list(result.history) == sorted(result.history)  # elitism: the best never gets worse


def test_search_is_reproducible_under_its_generation_bound():
    config = SearchConfig(limit=5, window_ms=500, generations=15, budget_s=60.0, seed=11)
    a, b = search("sliding_counter", config), search("sliding_counter", config)
    assert a.schedule == b.schedule and a.history == b.history


def test_peak_admitted_counts_the_trailing_window():
    # 3 at 0 and 3 at 999 fit one 1000 ms window; at 1000 the first three have left
    assert peak_admitted("fixed_window", [(0, 3), (999, 3)], 10, 1000) == (6, 999)
    assert peak_admitted("fixed_window", [(0, 3), (1000, 3)], 10, 1000)[0] == 3


def test_bad_schedules_name_the_field():
    with pytest.raises(ConfigError, match="BurstSchedule.n"):
        BurstSchedule("c", (1, 2), (1,))
    with pytest.raises(ConfigError, match="BurstSchedule.at_ms"):
        BurstSchedule("c", (-1,), (1,))
    with pytest.raises(ConfigError, match="SearchConfig.population"):
        SearchConfig(population=2)
    assert np.array_equal(BurstSchedule("c", (5, 1), (2, 3)).bursts(), [(1, 3), (5, 2)])


@pytest.mark.parametrize("name", ["token_bucket", "gcra"])
def test_a_bucket_lets_burst_plus_rate_into_one_window_on_the_lua_path(name):
    """Any span of W holds the saved-up burst plus the refill: 2L - 1 with burst = L (the
    window is half open), L + burst - 1 with a small burst."""
    from simulator.studies.adversaries import BurstThenRate

    full = BurstThenRate("r", 60_000, 100, 100, at_ms=60_000)
    assert confirm_on_lua(name, full, 100, 60_000)[0] == 199
    small = BurstThenRate("r", 60_000, 10, 100, at_ms=60_000)
    assert confirm_on_lua(name, small, 100, 60_000, {"burst": 10})[0] == 109
    assert peak_admitted(name, small.bursts(), 100, 60_000, {"burst": 10})[0] == 109


@given(seed=st.integers(0, 2**16), steps=st.integers(1, 40))
@settings(max_examples=30, deadline=None)
def test_every_mutation_and_crossover_keeps_a_schedule_in_the_horizon_and_the_caps(seed, steps):
    from simulator.studies.adversary import SearchConfig, _Breeder

    c = SearchConfig(limit=10, window_ms=1000, max_bursts=4, horizon_windows=3, seed=seed)
    breeder = _Breeder("fixed_window", c, None)
    one, other = breeder.random_one(), breeder.random_one()
    for _ in range(steps):
        one, other = breeder.mutate(one), breeder.crossover(one, other)
        for schedule in (one, other):
            times = [t for t, _ in schedule]
            assert 1 <= len(schedule) <= c.max_bursts
            assert times == sorted(set(times)) and 0 <= times[0] and times[-1] < 3000
            assert all(1 <= n <= 2 * c.limit for _, n in schedule)
