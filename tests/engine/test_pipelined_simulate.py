"""A simulation whose clients are all played ahead, decided in pipelines: the same rows.

On the fake server the pipelined run is asked for (``pipelined=True``), and its frame must equal
the one-call-at-a-time run's, for every algorithm, with ties, bursts and costs. On a real Valkey
(started here, stopped at the end) it is the default for the algorithms that take the time from
their arguments, and its rows must equal those of one call at a time on the same server and on
the fake server. A client that reacts keeps the run one call at a time, and the frame says which
way the calls went.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from simulator.algorithms import ALGORITHMS
from simulator.backends import NO_REPLY, BackendError, FakeRedisBackend, RedisBackend, ScriptError
from simulator.backends.embedded import EmbeddedValkey
from simulator.engine.pipelined import ONE_BY_ONE, PIPELINED, _bounds
from simulator.engine.realtime import server_time_free
from simulator.engine.run import simulate
from simulator.engine.scenario import BurstAt, ConstantRate, OnOff, Poisson, Polite, Scenario

MIX = ((1, 0.8), (3, 0.2))


def _scenario(algorithm: str, stretch: int = 1, seed: int = 3) -> Scenario:
    """Clients of every played-ahead kind: ties (bursts in one ms), costs, quiet spells."""
    clients = (
        Poisson("p", 40.0 / stretch),
        Poisson("mixed", 25.0 / stretch, cost=MIX),
        OnOff("o", 60.0 / stretch, on_ms=300.0 * stretch, off_ms=500.0 * stretch),
        ConstantRate("c", 20.0 / stretch, start_ms=3.5),
        BurstAt("b", n=7, at_s=(0.9 * stretch, 1.0 * stretch, 2.2 * stretch)),
    )
    return Scenario(algorithm, 4, 200 * stretch, 3000.0 * stretch, clients, seed=seed)


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_pipelined_rows_equal_one_at_a_time_on_the_fake_server(algorithm):
    scenario = _scenario(algorithm)
    rows_one: list = []
    rows_piped: list = []
    one = simulate(scenario, FakeRedisBackend(), rows_one.extend, pipelined=False)
    piped = simulate(scenario, FakeRedisBackend(), rows_piped.extend, pipelined=True)
    assert one.attrs["calls"] == ONE_BY_ONE and piped.attrs["calls"] == PIPELINED
    pd.testing.assert_frame_equal(piped, one)
    assert rows_piped == rows_one
    assert 0 < one["allowed"].sum() < len(one)  # both answers were given
    assert (one["cost"] > 1).any()


def test_the_fake_server_decides_one_at_a_time_unless_asked():
    assert simulate(_scenario("fixed_window")).attrs["calls"] == ONE_BY_ONE


def test_a_client_that_reacts_keeps_one_call_at_a_time():
    scenario = Scenario("fixed_window", 4, 200, 2000.0, (Poisson("p", 40), Polite("q", 30)))
    frame = simulate(scenario, FakeRedisBackend(), pipelined=True)
    assert frame.attrs["calls"] == ONE_BY_ONE
    pd.testing.assert_frame_equal(frame, simulate(scenario, pipelined=False))


def test_batches_on_the_fake_server_hold_one_millisecond_each():
    t_ms = np.array([0, 0, 0, 1, 5, 5, 6, 6, 6, 6], dtype=np.int64)
    assert _bounds(t_ms, 3, same_ms=True) == [(0, 3), (3, 4), (4, 6), (6, 9), (9, 10)]
    assert _bounds(t_ms, 4, same_ms=False) == [(0, 4), (4, 8), (8, 10)]
    assert _bounds(t_ms[:0], 4, same_ms=True) == []


def test_a_failing_script_keeps_the_decisions_before_it():
    """The run stops at the failing call; every decision before it reached on_rows."""
    backend = FakeRedisBackend()
    scenario = Scenario("fixed_window", 4, 200, 2000.0, (Poisson("p", 40),), seed=1)
    whole = simulate(scenario, FakeRedisBackend(), pipelined=True)
    # a key of the wrong type, where the window of the request at row 30 counts
    t_ms = whole["t_ms"].to_numpy()
    first = int(np.flatnonzero(t_ms // 200 == t_ms[30] // 200)[0])
    limiter = ALGORITHMS["fixed_window"](backend, 4, 200)
    (key,) = limiter.keys("p", int(t_ms[30]))
    backend.client.rpush(key, "in the way")
    got: list = []
    stop = rf"WRONGTYPE.*stopped at simulated t_ms={t_ms[first]} .* after {first} decisions"
    with pytest.raises(ScriptError, match=stop):
        simulate(scenario, backend, got.extend, pipelined=True)
    assert [r[2] for r in got] == t_ms[:first].tolist()
    assert first > 0


@pytest.fixture(scope="module")
def valkey():
    with EmbeddedValkey() as server:
        backend = RedisBackend(server.client(), "valkey")
        yield backend
        backend.close()


#: Windows of minutes on the server's clock: no stall of a busy machine outlasts one.
STRETCH = 1000


@pytest.mark.server
@pytest.mark.parametrize("algorithm", server_time_free())
def test_pipelined_rows_on_valkey_equal_one_at_a_time_and_the_fake_server(valkey, algorithm):
    scenario = _scenario(algorithm, STRETCH)
    valkey.client.flushdb()
    piped = simulate(scenario, valkey)
    valkey.client.flushdb()
    one = simulate(scenario, valkey, pipelined=False)
    assert piped.attrs["calls"] == PIPELINED and one.attrs["calls"] == ONE_BY_ONE
    pd.testing.assert_frame_equal(piped, one)
    pd.testing.assert_frame_equal(piped, simulate(scenario))


@pytest.fixture
def users_script(tmp_path):
    """A user's fixed window (the tests' FW10), registered for the test and taken away after."""
    from conftest import FW10

    from simulator.userscripts import register_script

    path = tmp_path / "fw10.lua"
    path.write_text(FW10)
    register_script(path, "fw10_piped")
    yield "fw10_piped"
    ALGORITHMS.pop("fw10_piped", None)


def test_a_users_script_pipelined_on_the_fake_server_gives_the_same_rows(users_script):
    scenario = _scenario(users_script)
    piped = simulate(scenario, FakeRedisBackend(), pipelined=True)
    assert piped.attrs["calls"] == PIPELINED
    pd.testing.assert_frame_equal(piped, simulate(scenario, FakeRedisBackend(), pipelined=False))


@pytest.mark.server
def test_a_users_script_on_a_real_server_goes_one_call_at_a_time(valkey, users_script):
    """A loop in a user's script would hold every call in flight: one at a time, it is stopped
    at its first call."""
    scenario = _scenario(users_script, STRETCH)
    valkey.client.flushdb()
    frame = simulate(scenario, valkey)
    assert frame.attrs["calls"] == ONE_BY_ONE
    pd.testing.assert_frame_equal(frame, simulate(scenario))


class HalfAnswered(FakeRedisBackend):
    """Test-only: the third batch gets replies for its first three calls, then a node fails."""

    def stream(self, batches, depth=2):
        for k, replies in enumerate(super().stream(batches, depth)):
            if k == 2 and len(replies) > 3:
                error = BackendError("backend node-b failed: connection lost")
                error.replies = replies[:3] + [NO_REPLY] * (len(replies) - 3)
                raise error
            yield replies


def test_a_node_lost_mid_batch_keeps_the_decisions_answered_before_it():
    scenario = Scenario("fixed_window", 4, 200, 2000.0, (BurstAt("b", n=9, at_s=(0, 0.5, 1)),))
    whole = simulate(scenario, FakeRedisBackend(), pipelined=True)
    got: list = []
    with pytest.raises(BackendError, match=r"connection lost; stopped at .* after 21 decisions"):
        simulate(scenario, HalfAnswered(), got.extend, pipelined=True)
    assert [r[0] for r in got] == list(range(21))
    assert [r[3].allowed for r in got] == whole["allowed"][:21].tolist()
