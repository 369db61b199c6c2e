"""The accuracy study: the bulk reference agrees with the Lua scripts, the exact counts are exact,
and every figure of the comparison means what docs/accuracy.md says it means."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import COSTS, draw_params
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.algorithms import ALGORITHMS, BULK, REFERENCES, BulkDecider
from simulator.checks import ConfigError
from simulator.fastref import decide_bulk, decide_trace
from simulator.metrics import rolling_admitted
from simulator.studies.accuracy import compare, exact_before, lua_agreement, per_client, summarise
from simulator.studies.families import Family, families, offered

#: Every registered algorithm; the bulk tests skip one that has no kernel, and say so.
NAMES = sorted(ALGORITHMS)


def needs_bulk(name: str) -> None:
    if not issubclass(ALGORITHMS[name], BulkDecider):
        pytest.skip(f"{name} has no bulk kernel (BulkDecider)")


traces = st.lists(
    st.tuples(st.one_of(st.just(0), st.integers(0, 5), st.integers(0, 2500)), st.integers(0, 3)),
    min_size=1,
    max_size=80,
)


def _arrays(trace, start_ms=0):
    t_ms = start_ms + np.cumsum([gap for gap, _ in trace]).astype("int64")
    codes = np.array([c for _, c in trace], dtype="int64")
    return codes, t_ms


@pytest.mark.parametrize("name", NAMES)
def test_bulk_equals_oracle(name):
    needs_bulk(name)
    _bulk_equals_oracle(name=name)


@settings(max_examples=20, deadline=None)
@given(
    limit=st.integers(1, 6),
    window_ms=st.integers(1, 3000),
    start_ms=st.integers(0, 10**12),
    trace=traces,
)
def _bulk_equals_oracle(name, limit, window_ms, start_ms, trace):
    codes, t_ms = _arrays(trace, start_ms)
    bulk = decide_bulk(name, codes, t_ms, limit, window_ms)
    ref = REFERENCES[name](limit, window_ms)
    for i, (c, t) in enumerate(zip(codes.tolist(), t_ms.tolist(), strict=True)):
        d = ref.decide(str(c), t)
        assert (bulk.allowed[i], bulk.count[i]) == (d.allowed, d.count), f"{name} row {i}"


@pytest.mark.parametrize("name", NAMES)
def test_bulk_equals_oracle_with_costs_and_own_parameters(name):
    needs_bulk(name)
    _bulk_equals_oracle_with_costs(name=name)


@settings(max_examples=20, deadline=None)
@given(
    data=st.data(),
    limit=st.integers(1, 6),
    window_ms=st.integers(1, 3000),
    start_ms=st.integers(0, 10**12),
    trace=traces,
)
def _bulk_equals_oracle_with_costs(data, name, limit, window_ms, start_ms, trace):
    codes, t_ms = _arrays(trace, start_ms)
    cost = np.array(data.draw(st.lists(COSTS, min_size=len(t_ms), max_size=len(t_ms))))
    params = draw_params(data, name, limit)
    bulk = decide_bulk(name, codes, t_ms, limit, window_ms, cost=cost, params=params)
    ref = REFERENCES[name](limit, window_ms, **params)
    for i, (c, t) in enumerate(zip(codes.tolist(), t_ms.tolist(), strict=True)):
        d = ref.decide(str(c), t, int(cost[i]))
        assert (bulk.allowed[i], bulk.count[i]) == (d.allowed, d.count), f"{name} row {i}"


@pytest.mark.slow
def test_bulk_equals_lua_on_a_5000_decision_sample():
    """Whole clients of an over-the-limit family, through the scripts on fakeredis."""
    f = Family("over", "on_off", 40, load=1.5, limit=20, window_ms=10_000, duration_ms=120_000)
    check = lua_agreement(offered(f), f.limit, f.window_ms, 5_000, algorithms=tuple(BULK))
    assert (check["decisions"] >= 5_000).all()
    assert (check["refused"] > 100).all()  # the sample exercises refusals, not only admissions
    assert (check["allowed_mismatches"] == 0).all(), check
    assert (check["count_mismatches"] == 0).all(), check


@settings(max_examples=60, deadline=None)
@given(trace=traces, window_ms=st.integers(1, 3000), seed=st.integers(0, 2**32 - 1))
def test_exact_before_matches_the_metric(trace, window_ms, seed):
    codes, t_ms = _arrays(trace)
    allowed = np.random.default_rng(seed).random(len(t_ms)) < 0.7
    shuffled = np.random.default_rng(seed).permutation(len(t_ms))
    for rows in (np.arange(len(t_ms)), shuffled):  # time order, and any order (ties: row order)
        c, t, a = codes[rows], t_ms[rows], allowed[rows]
        frame = pd.DataFrame({"client": c, "t_ms": t, "allowed": a})
        want = rolling_admitted(frame, window_ms).to_numpy() - a
        assert (exact_before(c, t, a, window_ms) == want).all()


def test_the_log_count_is_the_exact_count_of_its_own_history():
    f = Family("p", "poisson", 30, load=1.5, limit=10, window_ms=5_000, duration_ms=60_000)
    d = compare(offered(f), f.limit, f.window_ms)
    codes, t_ms = d["client"].to_numpy(), d["t_ms"].to_numpy()
    own = exact_before(codes, t_ms, d["log_allowed"].to_numpy(), f.window_ms)
    assert (d["log_count"].to_numpy() == own).all()
    assert (own <= f.limit).all() and (~d["log_allowed"]).any()


def _tiny(times, limit=2, window_ms=1000):
    trace = pd.DataFrame({"t_ms": times, "client": "c"})
    d = compare(trace, limit, window_ms, "tiny")
    return d, per_client(d, limit), summarise(d, per_client(d, limit), limit, "tiny")


def test_a_bunched_previous_window_makes_a_false_refusal():
    # 2 at the start of window 0; at 1200 the estimate still counts 80% of them (2 + 1 * 0.8 ...)
    d, clients, s = _tiny([0, 1, 1100, 1200])
    last = d.iloc[-1]
    assert last["estimate"] == pytest.approx(1 + 2 * 0.8)
    assert last["exact"] == 1 and not last["counter_allowed"] and last["log_allowed"]
    assert s["wrongly_refused_pct"] == 25.0 and s["false_refusals_pct"] == 25.0
    assert s["wrongly_admitted_pct"] == 0.0 and s["clients_limited_while_under"] == 1
    assert s["clients_over_limit"] == 0


def test_a_previous_window_bunched_at_its_end_lets_the_counter_over_admit():
    d, clients, s = _tiny([998, 999, 1001])
    last = d.iloc[-1]
    assert last["estimate"] == pytest.approx(2 * 999 / 1000)
    assert last["counter_allowed"] and not last["log_allowed"] and last["exact"] == 2
    assert clients["max_in_window"].item() == 3 and clients["overshoot"].item() == 1
    assert s["clients_over_limit"] == 1 and s["max_overshoot_pct"] == 50.0
    assert s["decided_differently_pct"] == pytest.approx(100 / 3)
    assert s["mean_rel_diff_pct"] == pytest.approx(100 * (0.002 / 2) / 2)  # rows with exact >= 1


def test_families_are_seeded_and_a_client_keeps_its_arrivals_when_others_join():
    f = Family("z", "zipf", 50, load=5.0, seed=7)
    a, b = offered(f), offered(f)
    pd.testing.assert_frame_equal(a, b)
    bigger = offered(Family("z", "zipf", 80, load=5.0, seed=7))
    for name in ("z-0", "z-49"):
        assert (
            a.loc[a.client == name, "t_ms"].to_numpy()
            == bigger.loc[bigger.client == name, "t_ms"].to_numpy()
        ).all()
    assert not offered(Family("z", "zipf", 50, load=5.0, seed=8)).equals(a)


@pytest.mark.parametrize("kind", ["poisson", "on_off", "diurnal"])
def test_family_offers_its_load(kind):
    f = Family("x", kind, 200, load=1.0, limit=100, window_ms=60_000, duration_ms=600_000)
    per_window = len(offered(f)) / f.clients / (f.duration_ms / f.window_ms)
    assert per_window == pytest.approx(100, rel=0.05)


def test_full_size_is_a_million_decisions_over_ten_thousand_clients():
    traces = [offered(f) for f in families("full")]
    assert sum(len(t) for t in traces) >= 1_000_000
    assert sum(t["client"].nunique() for t in traces) >= 10_000


def test_bad_family_fields_name_the_field():
    with pytest.raises(ConfigError, match="Family.kind"):
        Family("x", "gaussian", 10)
    with pytest.raises(ConfigError, match="Family.clients"):
        Family("x", "poisson", 0)
    with pytest.raises(ConfigError, match="size"):
        families("huge")


def test_decide_trace_keeps_the_row_order_and_floors_times():
    trace = pd.DataFrame({"t_ms": [5.9, 1.2, 5.1], "client": ["a", "a", "a"]}, index=[10, 11, 12])
    out = decide_trace(trace, "sliding_log", 2, 1000)
    assert out.index.tolist() == [10, 11, 12]
    assert out["t_ms"].tolist() == [5, 1, 5] and out["allowed"].tolist() == [True, True, False]
