"""The SimPy model, the decision log and its metrics."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from simulator.checks import ConfigError
from simulator.engine.run import boundary_burst, simulate
from simulator.engine.scenario import BurstAt, ConstantRate, OnOff, Poisson, Polite, Scenario
from simulator.metrics import burst_summary, rolling_admitted
from simulator.records import DTYPES, http_headers

EXPECTED_BURST = {"fixed_window": 200, "echomq": 100, "sliding_log": 100, "sliding_counter": 102}


def test_boundary_burst_practice_case():
    frames = pd.concat([boundary_burst(a) for a in EXPECTED_BURST], ignore_index=True)
    summary = burst_summary(frames, 60_000)
    assert summary["admitted"].to_dict() == EXPECTED_BURST
    assert summary["max_in_window"].to_dict() == EXPECTED_BURST
    assert (summary["requests"] == 200).all()


def mixed(seed: int = 1, algorithm: str = "sliding_counter") -> Scenario:
    return Scenario(
        algorithm,
        limit=5,
        window_ms=2_000,
        duration_ms=20_000,
        clients=(
            Poisson("p", rate_per_s=4),
            ConstantRate("c", rate_per_s=3, start_ms=10),
            OnOff("o", rate_per_s=20, on_ms=500, off_ms=1500),
            BurstAt("b", n=8, at_s=(1.999, 2.0)),
            Polite("polite", rate_per_s=5),
        ),
        seed=seed,
    )


def test_one_seed_gives_the_identical_log_byte_for_byte():
    a, b = simulate(mixed(3)), simulate(mixed(3))
    assert a.to_csv(index=False) == b.to_csv(index=False)
    assert a.to_csv(index=False) != simulate(mixed(4)).to_csv(index=False)


def test_log_has_explicit_dtypes_and_header_values():
    frame = simulate(mixed())
    assert {c: str(t) for c, t in frame.dtypes.items()} == DTYPES
    assert set(frame["client"]) == {"p", "c", "o", "b", "polite"}
    refused = frame[~frame["allowed"]]
    assert refused["retry_after_ms"].notna().all() and (refused["retry_after_ms"] > 0).all()
    assert frame.loc[frame["allowed"], "retry_after_ms"].isna().all()
    headers = http_headers(refused.iloc[0])
    assert set(headers) == {
        "RateLimit-Policy",
        "RateLimit",
        "RateLimit-Limit",
        "RateLimit-Remaining",
        "RateLimit-Reset",
        "Retry-After",
    }


def test_polite_client_waits_its_retry_after():
    scenario = Scenario("sliding_log", 3, 1000, 10_000, (Polite("x", rate_per_s=10),))
    frame = simulate(scenario)
    t = frame["t_ms"].to_numpy()
    for i in np.flatnonzero(~frame["allowed"].to_numpy())[:-1]:
        assert t[i + 1] == t[i] + frame["retry_after_ms"].iloc[i]
        assert frame["allowed"].iloc[i + 1]  # the wait it was told was enough
    assert rolling_admitted(frame, 1000).max() == 3


def test_rolling_admitted_matches_brute_force():
    frame = pd.concat([simulate(mixed(5, a)) for a in EXPECTED_BURST], ignore_index=True)
    fast = rolling_admitted(frame, 2_000).to_numpy()
    t = frame["t_ms"].to_numpy()
    ok = frame["allowed"].to_numpy()
    key = (frame["algorithm"] + "/" + frame["client"]).to_numpy()
    for i in range(len(frame)):
        same = (key[: i + 1] == key[i]) & (t[: i + 1] > t[i] - 2_000) & ok[: i + 1]
        assert fast[i] == same.sum()


@pytest.mark.parametrize(
    "make, field",
    [
        (lambda: Scenario("fixed_window", 0, 1000, 10), "Scenario.limit"),
        (lambda: Scenario("fixed_window", 1, -5, 10), "Scenario.window_ms"),
        (lambda: Scenario("nope", 1, 1000, 10), "Scenario.algorithm"),
        (lambda: Scenario("echomq", 1, 1000, float("inf")), "Scenario.duration_ms"),
        (lambda: Poisson("p", rate_per_s=float("nan")), "Poisson.rate_per_s"),
        (lambda: ConstantRate("c", rate_per_s=-1), "ConstantRate.rate_per_s"),
        (lambda: BurstAt("b", n=-1), "BurstAt.n"),
        (lambda: OnOff("o", on_ms=0), "OnOff.on_ms"),
        # booleans are not numbers here, and values past what a Lua number holds are refused
        (lambda: Scenario("fixed_window", 1, True, 10), "Scenario.window_ms"),
        (lambda: Scenario("fixed_window", True, 1000, 10), "Scenario.limit"),
        (lambda: Scenario("fixed_window", 1, 1000, 10, seed=True), "Scenario.seed"),
        (lambda: Scenario("fixed_window", 10**30, 1000, 10), "Scenario.limit"),
        (lambda: Scenario("fixed_window", 1, 10**30, 10), "Scenario.window_ms"),
        (lambda: Scenario("fixed_window", 1, 1000, 1e30), "Scenario.duration_ms"),
        (lambda: Poisson("p", rate_per_s=True), "Poisson.rate_per_s"),
        (lambda: BurstAt("b", n=True), "BurstAt.n"),
        (lambda: BurstAt("b", at_s=(False,)), "BurstAt.at_s"),
        (lambda: Poisson("a\ud800"), "Poisson.name"),  # a lone surrogate that is no byte
        (lambda: ConstantRate("c", rate_per_s=10**400), "ConstantRate.rate_per_s"),  # no float
    ],
)
def test_bad_values_name_the_field(make, field):
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        make()


def test_numpy_numbers_are_accepted_and_stored_as_python_numbers():
    scenario = Scenario(
        "fixed_window",
        limit=np.int64(3),
        window_ms=np.int64(1000),
        duration_ms=np.float64(2500),
        clients=(ConstantRate("c", rate_per_s=np.float64(4)), BurstAt("b", n=np.int32(2))),
        seed=np.uint8(7),
    )
    assert (type(scenario.limit), type(scenario.window_ms), type(scenario.seed)) == (int, int, int)
    assert type(scenario.clients[1].n) is int
    assert simulate(scenario)["allowed"].sum() == (3 + 3 + 2) + 2  # c: 3, 3, 2 per window; b: 2


def test_a_client_id_with_escaped_bytes_runs_and_keeps_its_bytes():
    raw = b"a\xff"  # an undecodable byte, as read from a log with surrogateescape
    name = raw.decode("utf-8", "surrogateescape")
    frame = simulate(Scenario("sliding_log", 1, 1000, 10, (BurstAt(name, n=2),)))
    assert frame["client"].tolist() == [name, name]
    assert frame["client"][0].encode("utf-8", "surrogateescape") == raw


def test_sweeps_with_replace():
    base = mixed()
    frames = [simulate(dataclasses.replace(base, limit=k)) for k in (1, 10)]
    assert frames[0]["allowed"].sum() < frames[1]["allowed"].sum()


def test_clients_played_ahead_give_the_log_their_processes_gave(monkeypatch):
    """Steady, Poisson, burst and on/off clients are asked for by one feeder; run as a process
    each (as every client once was), the same scenario gives the same log, row for row (here
    no two clients that wait differently meet at one instant: see the next test)."""
    from simulator.engine import clients as kinds

    scenario = dataclasses.replace(
        mixed(5),
        clients=mixed(5).clients
        + (ConstantRate("c2", rate_per_s=3, start_ms=10), Poisson("late", 2.0, start_ms=7_500)),
    )
    fed = simulate(scenario)
    for kind in (ConstantRate, Poisson, BurstAt, OnOff):
        monkeypatch.setattr(kinds, "_REACTIVE", kinds._REACTIVE | {kind})
    assert simulate(scenario).to_csv(index=False) == fed.to_csv(index=False)


def test_clients_played_ahead_meet_at_an_instant_in_client_order(monkeypatch):
    """A every 2 ms and B every 4 ms both ask at t=4. Played ahead, A (listed first) goes first;
    as a process each, B goes first (its wait began at t=0, A's at t=2). The instants are the
    same either way, and so are the decisions of clients that share no counter."""
    from simulator.engine import clients as kinds

    scenario = Scenario(
        "fixed_window",
        100,
        1000,
        9,
        (ConstantRate("A", rate_per_s=500), ConstantRate("B", rate_per_s=250)),
    )
    fed = simulate(scenario)
    assert fed.loc[fed["t_ms"] == 4, "client"].tolist() == ["A", "B"]
    monkeypatch.setattr(kinds, "_REACTIVE", kinds._REACTIVE | {ConstantRate})
    processes = simulate(scenario)
    assert processes.loc[processes["t_ms"] == 4, "client"].tolist() == ["B", "A"]
    for frame in (fed, processes):
        assert frame.loc[frame["client"] == "A", "t_ms"].tolist() == [0, 2, 4, 6, 8]
        assert frame.loc[frame["client"] == "B", "t_ms"].tolist() == [0, 4, 8]
    key = ["client", "t_ms"]
    assert (
        fed.sort_values(key)
        .drop(columns="run_id")
        .reset_index(drop=True)
        .equals(processes.sort_values(key).drop(columns="run_id").reset_index(drop=True))
    )


def test_idle_clients_cost_no_process(monkeypatch):
    """A client that makes no request in the run holds no SimPy process or generator."""
    import simpy

    started = []
    original = simpy.Environment.process
    monkeypatch.setattr(
        simpy.Environment, "process", lambda env, gen: started.append(gen) or original(env, gen)
    )
    idle = tuple(Poisson(f"idle{i}", rate_per_s=0.0) for i in range(1000))
    later = tuple(ConstantRate(f"late{i}", start_ms=50_000) for i in range(1000))
    frame = simulate(Scenario("fixed_window", 1, 1000, 10_000, idle + later + (Polite("p", 1),)))
    assert len(started) == 1  # the polite client; nobody else asks before the end
    assert set(frame["client"]) == {"p"}


def test_the_feeder_moving_the_clock_on_gives_the_log_its_timeouts_gave(monkeypatch):
    """On a virtual-time environment the feeder moves the clock to a request itself while
    nothing else is due before it; with a timeout for each request (a plain SimPy environment),
    the same scenario - polite clients reacting in between - gives the same log."""
    import simpy

    from simulator.engine import model

    scenario = dataclasses.replace(mixed(9), duration_ms=30_000.0)
    moved = simulate(scenario)
    monkeypatch.setattr(model, "environment_for", lambda backend, algorithm: simpy.Environment())
    assert simulate(scenario).to_csv(index=False) == moved.to_csv(index=False)


def test_the_cyclic_collector_is_off_for_the_run_and_back_after_it_also_on_error():
    import gc

    from simulator.backends import FakeRedisBackend, ScriptError

    seen = []

    class Failing(FakeRedisBackend):
        def call(self, script, keys, args):
            seen.append(gc.isenabled())
            if len(seen) == 3:
                raise ScriptError("boom")
            return super().call(script, keys, args)

    scenario = Scenario("fixed_window", 5, 1000, 1000.0, (ConstantRate("a", rate_per_s=10),))
    assert gc.isenabled()
    with pytest.raises(ScriptError):
        simulate(scenario, Failing())
    assert seen == [False, False, False] and gc.isenabled()
    gc.disable()
    try:
        simulate(scenario)
        assert not gc.isenabled()  # a caller who had it off finds it off
    finally:
        gc.enable()


def test_a_crowd_of_users_bursts_alike_each_decided_as_one_user_is():
    from simulator.engine.run import Crowd

    one = boundary_burst("sliding_counter", 10, 1.0, 0.5, 1.5)
    crowd = boundary_burst("sliding_counter", 10, 1.0, 0.5, 1.5, crowd=Crowd(users=3))
    assert sorted(crowd["client"].unique()) == ["user0", "user1", "user2"]
    for _, rows in crowd.groupby("client"):
        assert rows["allowed"].tolist() == one["allowed"].tolist()
    with pytest.raises(ConfigError, match="users"):
        boundary_burst("sliding_counter", crowd=Crowd(users=0))
