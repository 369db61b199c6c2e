"""Differential tests: the Lua scripts on fakeredis and the pure-Python reference agree, decision for
decision, on random traces (with costs, and with each algorithm's own parameters drawn); and the
key encoding keeps clients apart. Each registered algorithm gets examples of its own."""

from __future__ import annotations

import pytest
from conftest import COSTS, draw_params
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simulator.algorithms import ALGORITHMS, REFERENCES
from simulator.backends import FakeRedisBackend
from simulator.keys import encode_client, hash_tag

CLIENT_IDS = st.sampled_from(["alice", "bob", "", "{x}", "a:b", "a b", "ü", "%", "%25"])

GAPS = st.one_of(st.just(0), st.integers(0, 3), st.integers(0, 2500))  # to the previous request, ms
traces = st.lists(st.tuples(GAPS, CLIENT_IDS), min_size=1, max_size=60)
costed_traces = st.lists(st.tuples(GAPS, CLIENT_IDS, COSTS), min_size=1, max_size=60)


def algorithm_names() -> list[str]:
    """Every registered algorithm, as the tests are collected."""
    return sorted(ALGORITHMS)


def _run_both(name, limit, window_ms, start_ms, trace, params=None):
    now = [start_ms]
    lua = ALGORITHMS[name](FakeRedisBackend(lambda: now[0]), limit, window_ms, **(params or {}))
    ref = REFERENCES[name](limit, window_ms, **(params or {}))
    for gap, client, *cost in trace:
        now[0] += gap
        k = cost[0] if cost else 1
        yield client, now[0], lua.decide(client, now[0], k), ref.decide(client, now[0], k)


@pytest.mark.parametrize("name", algorithm_names())
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    limit=st.integers(1, 6),
    window_ms=st.integers(1, 3000),
    start_ms=st.integers(0, 10**12),
    trace=traces,
)
def test_lua_equals_reference(name, limit, window_ms, start_ms, trace):
    for client, t_ms, lua, ref in _run_both(name, limit, window_ms, start_ms, trace):
        assert lua == ref, f"{name} client={client!r} t={t_ms}: lua={lua} ref={ref}"


@pytest.mark.parametrize("name", algorithm_names())
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    limit=st.integers(1, 6),
    window_ms=st.integers(1, 3000),
    start_ms=st.integers(0, 10**12),
    trace=costed_traces,
)
def test_lua_equals_reference_with_costs_and_own_parameters(
    name, data, limit, window_ms, start_ms, trace
):
    params = draw_params(data, name, limit)
    for client, t_ms, lua, ref in _run_both(name, limit, window_ms, start_ms, trace, params):
        assert lua == ref, f"{name} {params} client={client!r} t={t_ms}: lua={lua} ref={ref}"


@pytest.mark.parametrize("name", algorithm_names())
@settings(max_examples=10, deadline=None)
@given(limit=st.integers(1, 6), window_ms=st.integers(1, 3000), trace=traces)
def test_cost_one_everywhere_changes_nothing(name, limit, window_ms, trace):
    plain = [d for *_, d, _ in _run_both(name, limit, window_ms, 0, trace)]
    costed = [d for *_, d, _ in _run_both(name, limit, window_ms, 0, [(g, c, 1) for g, c in trace])]
    assert plain == costed


@pytest.mark.parametrize("name", algorithm_names())
@pytest.mark.parametrize("window_ms", [1000, 60_000])
def test_lua_equals_reference_at_window_seams(name, window_ms):
    """Requests exactly at, just before and just after the seams, where off-by-ones live."""
    trace, t = [], 0
    for k in range(1, 4):
        seam = k * window_ms
        for at in (seam - 1, seam, seam + 1):
            trace += [(at - t, "c")] * 3
            t = at
    for _, _, lua, ref in _run_both(name, 4, window_ms, 0, trace):
        assert lua == ref


@given(st.text(), st.text())
def test_client_encoding_is_injective_and_brace_free(a, b):
    ea, eb = encode_client(a), encode_client(b)
    assert ea and "{" not in ea and "}" not in ea
    assert (ea == eb) == (a == b)
    tag = hash_tag(a)
    assert tag.startswith("{") and tag.endswith("}") and tag.count("}") == 1
