"""The virtual clock: fakeredis key expiry follows simulated milliseconds, not the wall clock."""

from __future__ import annotations

import time

import pytest
import simpy

from simulator.backends import FakeRedisBackend
from simulator.engine.run import simulate
from simulator.engine.scenario import Poisson, Scenario


@pytest.mark.parametrize("t0", [0, 1, 999, 59_999, 1_431_857_103_123])
def test_pexpire_1000_alive_at_999_and_gone_at_1001(clock, fake, t0):
    r = fake.client
    clock.t_ms = t0
    fake.clock.activate()
    r.set("k", "v")
    r.pexpire("k", 1000)
    clock.t_ms = t0 + 999
    assert r.get("k") == b"v"
    assert r.pttl("k") == 1
    clock.t_ms = t0 + 1000  # Redis: at exactly expire-at the key still exists, PTTL 0
    assert r.exists("k") == 1
    assert r.pttl("k") == 0
    clock.t_ms = t0 + 1001
    assert r.get("k") is None
    assert r.pttl("k") == -2


def test_expiry_ignores_the_wall_clock(clock, fake, monkeypatch):
    """Freeze and then jump the wall clock: only the simulated time decides expiry."""
    r = fake.client
    fake.clock.activate()
    monkeypatch.setattr(time, "time", lambda: 4_000_000_000.0)
    clock.t_ms = 10
    r.set("k", 1, px=500)
    assert r.pttl("k") == 500
    monkeypatch.setattr(time, "time", lambda: 0.0)
    clock.t_ms = 510
    assert r.pttl("k") == 0
    clock.t_ms = 511
    assert r.exists("k") == 0


def test_fractional_simulated_time_is_seen_as_whole_milliseconds(clock, fake):
    r = fake.client
    fake.clock.activate()
    clock.t_ms = 100.9
    r.set("k", 1, px=100)  # set at ms 100, expires at 200
    clock.t_ms = 200.99
    assert r.exists("k") == 1
    clock.t_ms = 201.0
    assert r.exists("k") == 0


def test_two_clocks_in_one_process_do_not_mix():
    a_env, b_env = simpy.Environment(), simpy.Environment(initial_time=5_000)
    a, b = FakeRedisBackend(lambda: a_env.now), FakeRedisBackend(lambda: b_env.now)
    from simulator.algorithms import EchoMQ

    la, lb = EchoMQ(a, 1, 1000), EchoMQ(b, 1, 1000)
    # the counter lives through its last millisecond: the budget is back 1001 ms on
    assert la.decide("q", 0).reset_ms == 1001
    assert lb.decide("q", 5_000).reset_ms == 1001
    assert la.decide("q", 0).retry_after_ms == 1001  # a's clock still at 0


def test_simulated_hour_follows_simpy_time():
    """A whole simulated hour of a few Poisson clients: expiry and decisions in virtual time."""
    scenario = Scenario(
        "echomq",
        limit=5,
        window_ms=10_000,
        duration_ms=3_600_000,
        clients=tuple(Poisson(f"c{i}", rate_per_s=0.5) for i in range(3)),
        seed=7,
    )
    frame = simulate(scenario)
    assert frame["t_ms"].max() > 3_500_000
    # The window is the TTL: every refusal's Retry-After points into the current first-hit window.
    refused = frame[~frame["allowed"]]
    assert len(refused) > 0
    assert (refused["retry_after_ms"] > 0).all()
    assert (refused["retry_after_ms"] <= 10_000).all()
