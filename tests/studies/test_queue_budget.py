"""The EchoMQ queue budget at the dequeue point: invariant, K x effect, fairness, crash, telemetry."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simulator.algorithms import EchoMQ, echomq_keys
from simulator.backends import FakeRedisBackend, ScriptError
from simulator.checks import ConfigError
from simulator.studies import queue_studies as qs
from simulator.studies import telemetry
from simulator.studies.queue_budget import (
    DEQUEUE_DTYPES,
    JOB_DTYPES,
    QueueScenario,
    Room,
    ServerBudget,
    SplitBudget,
    WorkerDied,
    run,
)

# Each example is a 2 s study of up to three rooms and eight workers (0.1 to 0.3 s of CPU each).
FEW = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def first_hit_windows(admit_ms: np.ndarray, window_ms: int) -> list[int]:
    """Admits per first-hit window, rebuilt from admit times alone: a window opens at an admit
    and the counter exists through open + W (Redis deletes a key once now is past expire-at)."""
    counts: list[int] = []
    end = -1
    for t in np.sort(admit_ms):
        if t > end:
            counts.append(0)
            end = t + window_ms
        counts[-1] += 1
    return counts


@st.composite
def workloads(draw: st.DrawFn) -> QueueScenario:
    rooms = tuple(
        Room(f"r{i}", draw(st.floats(5.0, 150.0))) for i in range(draw(st.integers(1, 3)))
    )
    return QueueScenario(
        rooms,
        workers=draw(st.integers(1, 8)),
        max_per_window=draw(st.integers(1, 8)),
        window_ms=draw(st.integers(50, 700)),
        service_ms=draw(st.integers(0, 40)),
        duration_ms=2_000,
        design=draw(st.sampled_from(["shared", "per_room"])),
        defer_pad_ms=draw(st.integers(0, 2)),
        read_to_admit_ms=draw(st.integers(0, 3)),
        stale_after_ms=draw(st.sampled_from([None, 500])),
        seed=draw(st.integers(0, 2**16)),
    )


# The two properties of any workload are checked on each run drawn: a run is the cost here.
@FEW
@given(workloads())
def test_any_k_workers_a_shared_counter_keeps_the_budget_and_a_deferral_its_pttl(scenario):
    result = run(scenario)
    shared_counter_never_admits_more_than_max_per_window(scenario, result.dequeues)
    a_deferred_job_is_not_seen_before_its_pttl_is_over(result.dequeues)


def shared_counter_never_admits_more_than_max_per_window(scenario, d) -> None:
    admits = d[d["action"] == "admit"]
    assert len(admits) > 0
    for _, part in admits.groupby("queue"):
        counts = first_hit_windows(part["t_ms"].to_numpy(), scenario.window_ms)
        assert max(counts) <= scenario.max_per_window
    # the windows the counter reported agree with the ones rebuilt from the times
    assert qs.budget_windows(d)["admitted"].max() <= scenario.max_per_window


def a_deferred_job_is_not_seen_before_its_pttl_is_over(d) -> None:
    defer = d[d["action"].isin(["defer_ttl", "defer_admit"])]
    assert (defer["delay_ms"] >= 1).all()
    nxt = d.groupby("job_id")["t_ms"].shift(-1)
    gap = (nxt - d["t_ms"])[defer.index].dropna()
    assert (gap >= defer.loc[gap.index, "delay_ms"]).all()


def test_ttl_deferral_is_exactly_the_pttl_the_server_gave(monkeypatch):
    scenario = replace(qs.basic_scenario(), duration_ms=3_000, drain_ms=0)
    backend = FakeRedisBackend()
    reads: list[tuple[int, int]] = []
    original = EchoMQ.rate_limit_ttl

    def spy(self, queue, now_ms, max_=None):
        answer = original(self, queue, now_ms, max_)
        reads.append((now_ms, answer))
        return answer

    monkeypatch.setattr(EchoMQ, "rate_limit_ttl", spy)
    d = run(scenario, backend).dequeues
    ttl = d[d["action"] == "defer_ttl"]
    positive = [(t, a) for t, a in reads if a > 0]
    assert len(positive) == len(ttl) > 0
    assert ttl["delay_ms"].tolist() == [a + scenario.defer_pad_ms for _, a in positive]
    assert ttl["t_ms"].tolist() == [t for t, _ in positive]


def test_frames_have_the_declared_dtypes():
    result = run(replace(qs.basic_scenario(), duration_ms=2_000), record_events=True)
    assert result.jobs.dtypes.astype(str).to_dict() == JOB_DTYPES
    assert result.dequeues.dtypes.astype(str).to_dict() == DEQUEUE_DTYPES
    assert result.events.dtypes.astype(str).to_dict() == telemetry.EVENT_DTYPES


def test_local_counters_let_k_times_the_budget_through():
    # one worker and four: the chart's 2 and 8 add time, not a case (demand 100/s covers 4 x 10)
    result = qs.global_vs_local(workers=(1, 4))
    table = qs.window_table(result)
    cap = result.scenario.max_per_window
    admits = result.dequeues[result.dequeues["action"] == "admit"]
    totals = admits.groupby(["limiter", "workers"]).size()
    for k in (1, 4):
        assert table.loc[("server", k), "most_per_window"] <= cap
        assert table.loc[("local", k), "most_per_budget_window"] <= cap  # each worker keeps max
        # ... but together they let K budgets through
        assert totals[("local", k)] >= 0.9 * k * totals[("server", k)]
        assert table.loc[("local", k), "most_per_window"] >= k * cap * 0.9
    assert totals[("server", 4)] == totals[("server", 1)]


def test_per_room_queues_keep_quiet_rooms_untouched_by_a_flood():
    result = qs.fairness()
    table = qs.fairness_table(result.jobs)
    window_ms = result.scenario.window_ms
    quiet_shared, quiet_rooms = table.loc[("shared", "quiet")], table.loc[("per_room", "quiet")]
    assert quiet_rooms["dropped"] == 0 and quiet_rooms["unfinished"] == 0
    assert quiet_rooms["p99_ms"] <= 2 * window_ms
    assert quiet_shared["dropped"] > 0
    assert quiet_shared["p50_ms"] > 10 * quiet_rooms["p50_ms"]
    assert quiet_shared["p99_ms"] > 2 * quiet_rooms["p99_ms"]
    # the flood is held to its own room's budget
    flood = result.jobs[(result.jobs["design"] == "per_room") & (result.jobs["room"] == "flood")]
    done = flood[flood["outcome"] == "done"]
    windows = first_hit_windows(done["started_ms"].to_numpy(dtype="int64"), window_ms)
    assert max(windows) <= 20 // len(result.scenario.rooms)


def test_split_admit_crash_leaves_a_counter_that_never_expires():
    t = [0]
    backend = FakeRedisBackend(lambda: t[0])
    budget = SplitBudget(backend, 3, 1000, crash_at_ms=0)
    counter, _ = echomq_keys("q")
    with pytest.raises(WorkerDied):
        budget.admit("q", 0)
    assert backend.client.pttl(counter) == -1  # INCR done, PEXPIRE never sent
    assert [budget.admit("q", 1).allowed for _ in range(3)] == [True, True, False]
    t[0] = 100 * 1000  # a hundred windows later
    refused = budget.admit("q", t[0])
    assert not refused.allowed and refused.retry_after_ms == -1
    assert budget.ttl("q", t[0]) == 0  # the read sees no TTL to wait for; the admit still refuses


def test_crash_study_budget_never_resets_with_split_commands_only():
    result = qs.crash()
    table = qs.crash_table(result)
    assert table.loc["split", "workers_lost"] == table.loc["server", "workers_lost"] == 1
    assert table.loc["split", "windows_never_ending"] == 1
    assert table.loc["split", "admitted_one_window_later"] == 0
    assert table.loc["server", "windows_never_ending"] == 0
    assert table.loc["server", "admitted_one_window_later"] > 0


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 1500), st.sampled_from(["a", "b"]), st.booleans()), max_size=60
    ),
    st.integers(1, 4),
)
def test_atomic_admit_never_leaves_a_counter_without_expiry(steps, cap):
    """A worker can die only between commands; the script is one command, so every counter it
    writes carries an expiry (checked after every step, crash or not)."""
    t = [0]
    backend = FakeRedisBackend(lambda: t[0])
    for dt, queue, dies in steps:
        t[0] += dt
        budget = ServerBudget(backend, cap, 1000, crash_at_ms=t[0] if dies else None)
        try:
            budget.admit(queue, t[0])
        except WorkerDied:
            pass
        for q in ("a", "b"):
            counter, _ = echomq_keys(q)
            assert backend.client.pttl(counter) != -1


def test_read_with_no_max_anywhere_is_zero_and_admit_names_the_meta_key():
    answers = qs.no_max_answers("room/7")
    assert answers["ttl_read"] == 0
    assert str(answers["meta_key"]) in str(answers["admit"])
    assert str(answers["admit"]).startswith("ScriptError")
    assert answers["counter_exists"] is False
    # once an admit has stored max in the meta hash, max 0 on the read means "that max"
    backend = FakeRedisBackend(lambda: 0)
    limiter = EchoMQ(backend, 1, 1000)
    assert limiter.decide("room/7", 0).allowed
    assert limiter.rate_limit_ttl("room/7", 0, 0) == 1000
    with pytest.raises(ScriptError, match="has no max"):
        backend.call(limiter.script, echomq_keys("other"), (0, 0, 1000))


def test_telemetry_handler_gets_queue_delay_and_time_of_every_deferral():
    scenario = replace(qs.basic_scenario(), duration_ms=3_000, drain_ms=0)
    heard: list[tuple[str, int, int]] = []

    def handler(queue, delay_ms, t_ms):
        heard.append((queue, delay_ms, t_ms))

    with telemetry.attached(telemetry.RATE_LIMIT_HIT, handler):
        result = run(scenario, record_events=True)
    d = result.dequeues
    deferrals = d[d["action"].isin(["defer_ttl", "defer_admit"])]
    columns = [deferrals[c].tolist() for c in ("queue", "delay_ms", "t_ms")]
    expected = list(zip(*columns, strict=True))
    assert len(expected) > 0 and heard == expected
    assert list(result.events[["queue", "delay_ms", "t_ms"]].itertuples(index=False)) == expected
    assert telemetry.event(telemetry.RATE_LIMIT_HIT).handlers == ()


def test_detached_handler_is_not_called():
    calls: list[object] = []

    def handler(*args):
        calls.append(args)

    telemetry.attach(telemetry.RATE_LIMIT_HIT, handler)
    with pytest.raises(ValueError, match="already attached"):
        telemetry.attach(telemetry.RATE_LIMIT_HIT, handler)
    assert telemetry.detach(telemetry.RATE_LIMIT_HIT, handler) is True
    assert telemetry.detach(telemetry.RATE_LIMIT_HIT, handler) is False
    result = run(replace(qs.basic_scenario(), duration_ms=2_000, drain_ms=0))
    assert (result.dequeues["action"] == "defer_ttl").sum() > 0
    assert calls == []


def test_a_failing_handler_is_detached_and_the_run_goes_on():
    def broken(queue, delay_ms, t_ms):
        raise RuntimeError("listener bug")

    telemetry.attach(telemetry.RATE_LIMIT_HIT, broken)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = run(replace(qs.basic_scenario(), duration_ms=2_000, drain_ms=0))
    finally:
        telemetry.detach(telemetry.RATE_LIMIT_HIT, broken)
    assert len(caught) == 1 and "detached" in str(caught[0].message)
    assert (result.jobs["outcome"] == "done").sum() > 0


def test_deferring_one_ms_past_the_pttl_saves_the_dequeue_at_the_expiry_instant():
    table = qs.dequeue_summary(qs.pad_study().dequeues)
    exact, padded = table.iloc[0], table.iloc[1]
    assert exact["admitted"] == padded["admitted"]
    assert exact["defer_admit"] > 0.5 * exact["defer_ttl"]  # nearly every deferral pays twice
    assert padded["wasted"] < exact["wasted"]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("workers", 0),
        ("max_per_window", 0),
        ("window_ms", 0),
        ("design", "mesh"),
        ("limiter", "cloud"),
        ("min_defer_ms", 0),
        ("stale_after_ms", -1),
    ],
)
def test_bad_scenarios_name_the_field(field, value):
    with pytest.raises(ConfigError, match=field):
        replace(qs.basic_scenario(), **{field: value})


def test_a_local_counter_has_no_server_step_to_crash_in():
    with pytest.raises(ConfigError, match="crash_at_ms"):
        replace(qs.basic_scenario(), limiter="local", crash_at_ms=1000)


def test_bench_section_prints_figures(capsys):
    from simulator.bench.telemetry import bench_telemetry

    figures = bench_telemetry(100)
    assert {"empty_ns", "guard_ns", "noop_ns"} <= set(figures)
    assert "ratio" in capsys.readouterr().out


def test_every_limiter_but_local_shares_one_budget_and_the_frames_speak_the_enums():
    from simulator.studies.queue_floor import SHARED_BUDGETS, Action, Outcome
    from simulator.studies.queue_scenario import LIMITERS

    assert set(SHARED_BUDGETS) | {"local"} == set(LIMITERS)
    # 1.5 s of a flooded room is enough to admit, defer and drop. After a split admit's crash
    # the counter never expires and every worker defers for as long as the run lasts, so that
    # run ends 300 ms after its crash (each millisecond past it costs dequeues, not evidence).
    busy = QueueScenario(
        rooms=(Room("a", 30.0), Room("b", 5.0)), duration_ms=1500, drain_ms=1000, stale_after_ms=500
    )
    crashed = replace(
        busy, limiter="split", crash_at_ms=1000, duration_ms=1200, drain_ms=100, stale_after_ms=None
    )
    runs = {"busy": run(busy), "crashed": run(crashed)}
    for r in runs.values():
        assert set(r.jobs["outcome"]) <= {o.value for o in Outcome}
        assert set(r.dequeues["action"]) <= {a.value for a in Action}
    assert {"admit", "defer_ttl", "drop"} <= set(runs["busy"].dequeues["action"])
    lost = runs["crashed"]
    assert "lost" in set(lost.jobs["outcome"]) and "lost" in set(lost.dequeues["action"])
