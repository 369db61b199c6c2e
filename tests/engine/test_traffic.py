"""Arrival shapes: the vectorised Poisson trace is the SimPy process's, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.engine.clients import Timeline
from simulator.engine.scenario import Poisson
from simulator.engine.traffic import (
    diurnal_times,
    on_off_times,
    poisson,
    poisson_by_count,
    poisson_gaps,
)


def _played_process(process_fn, spec, seed: int, until_ms: float) -> list[float]:
    """The instants ``process_fn``'s SimPy process asks at, stepped on a bare timeline."""
    timeline, times = Timeline(), []
    process = process_fn(
        timeline, spec, lambda name: times.append(timeline.now), np.random.default_rng(seed)
    )  # type: ignore[arg-type]
    for delay in process:
        timeline.now = timeline.now + delay
        if timeline.now >= until_ms:
            break
    return times


def _played(spec: Poisson, seed: int, until_ms: float) -> list[float]:
    """The instants the SimPy Poisson process asks at, stepping it on a bare timeline."""
    return _played_process(poisson, spec, seed, until_ms)


@settings(max_examples=60, deadline=None)
@given(
    rate=st.floats(0.01, 500),
    start=st.floats(0, 5_000),
    until=st.floats(1, 20_000),
    seed=st.integers(0, 2**32),
    chunk=st.one_of(st.none(), st.integers(1, 7)),
)
def test_poisson_gaps_are_the_process_instants(rate, start, until, seed, chunk):
    spec = Poisson("c", rate_per_s=rate, start_ms=start)
    got = poisson_gaps(np.random.default_rng(seed), 1000.0 / rate, until, start, chunk=chunk)
    assert got.tolist() == _played(spec, seed, until)


def test_a_small_chunk_continues_the_same_sums():
    whole = poisson_gaps(np.random.default_rng(3), 10.0, 5_000.0)
    assert len(whole) > 300
    assert np.array_equal(poisson_gaps(np.random.default_rng(3), 10.0, 5_000.0, chunk=2), whole)


@pytest.mark.parametrize(
    "draw",
    [
        lambda rng: poisson_by_count(rng, 0.01, 600_000),
        lambda rng: on_off_times(rng, 0.01, 600_000),
        lambda rng: diurnal_times(rng, 0.01, 600_000),
    ],
    ids=["poisson_by_count", "on_off", "diurnal"],
)
def test_vectorised_shapes_keep_their_mean_rate_inside_the_span(draw):
    counts = [draw(np.random.default_rng(s)) for s in range(40)]
    for t in counts:
        assert np.all((t >= 0) & (t < 600_000))
    mean = np.mean([len(t) for t in counts])
    assert 0.9 * 6_000 < mean < 1.1 * 6_000  # 0.01 per ms for 600 s


@settings(max_examples=60, deadline=None)
@given(
    rate=st.one_of(st.just(0.0), st.floats(0.01, 500)),
    on=st.floats(0.5, 3_000),
    off=st.floats(0, 3_000),
    start=st.floats(0, 5_000),
    until=st.floats(1, 20_000),
    seed=st.integers(0, 2**32),
    chunk=st.integers(1, 9),
)
def test_on_off_gaps_are_the_process_instants(rate, on, off, start, until, seed, chunk):
    from simulator.engine.scenario import OnOff
    from simulator.engine.traffic import on_off, on_off_gaps

    spec = OnOff("o", rate_per_s=rate, on_ms=on, off_ms=off, start_ms=start)
    got = on_off_gaps(np.random.default_rng(seed), spec, until, chunk=chunk)
    assert got.tolist() == _played_process(on_off, spec, seed, until)


@settings(max_examples=100, deadline=None)
@given(
    rate=st.one_of(st.just(0.0), st.floats(0.001, 2_000)),
    start=st.floats(0, 5_000),
    until=st.floats(0, 20_000),
)
def test_constant_times_are_the_process_instants(rate, start, until):
    from simulator.engine.scenario import ConstantRate
    from simulator.engine.traffic import constant, constant_times

    spec = ConstantRate("c", rate_per_s=rate, start_ms=start)
    assert constant_times(spec, until).tolist() == _played_process(constant, spec, 0, until)
