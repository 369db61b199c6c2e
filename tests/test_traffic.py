"""Arrival shapes: the vectorised Poisson trace is the SimPy process's, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.clients import Timeline
from simulator.scenario import Poisson
from simulator.traffic import diurnal_times, on_off_times, poisson, poisson_by_count, poisson_gaps


def _played(spec: Poisson, seed: int, until_ms: float) -> list[float]:
    """The instants the SimPy process asks at, stepping it on a bare timeline."""
    timeline, times = Timeline(), []
    process = poisson(
        timeline, spec, lambda name: times.append(timeline.now), np.random.default_rng(seed)
    )  # type: ignore[arg-type]
    for delay in process:
        timeline.now = timeline.now + delay
        if timeline.now >= until_ms:
            break
    return times


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
