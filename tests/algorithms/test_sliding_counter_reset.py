"""The sliding counter's reset is when a request comes back, not the ms before.

At a grid end this window's count still weighs fully (``(W - 0) / W``); only 1 ms later does it
start to fade. A first hit exactly at a seam, with nothing in the previous window, once said
``reset_ms`` 10000 (``t=10``) while at 10,000 ms the client still had 4 of 5 and only at 10,001
had 5. Both scripts and their references are held to it."""

from __future__ import annotations

import copy
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.algorithms import ALGORITHMS, REFERENCES
from simulator.algorithms.sliding_counter import Cells
from simulator.backends import FakeRedisBackend

NAMES = ["sliding_counter", "sliding_counter_all"]


def has(ref, client: str, t_ms: int) -> int:
    """Requests of cost 1 the client is let through at ``t_ms`` if nothing else arrives."""
    at = Cells(copy.deepcopy(ref.counts), client, t_ms, ref.window_ms, ref.limit)
    return max(0, math.ceil(ref.limit - at.estimate))


@pytest.mark.parametrize("name", NAMES)
def test_a_first_hit_on_a_seam_with_an_empty_previous_window(name):
    now = [0]
    lua = ALGORITHMS[name](FakeRedisBackend(lambda: now[0]), 5, 10_000)
    ref = REFERENCES[name](5, 10_000)
    d, r = lua.decide("a", 0), ref.decide("a", 0)
    assert d == r and (d.allowed, d.remaining, d.reset_ms) == (True, 4, 10_001)
    assert has(ref, "a", 10_000) == 4 and has(ref, "a", 10_001) == 5  # the figures


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=60, deadline=None)
@given(
    limit=st.integers(1, 6),
    window_ms=st.sampled_from([1, 7, 1000, 10_000]),
    gaps=st.lists(st.integers(0, 12_000), min_size=1, max_size=25),
)
def test_at_the_reset_of_an_admitted_request_one_has_come_back(name, limit, window_ms, gaps):
    ref, t = REFERENCES[name](limit, window_ms), 0
    for gap in gaps:
        t += gap
        d = ref.decide("c", t)
        if d.allowed and d.remaining < limit:
            assert has(ref, "c", t + d.reset_ms) > d.remaining, (t, d)
