"""The same scripts on a real Valkey: same decisions as on the fake server, pipelined or not.

Every test here talks to an embedded valkey-server the module starts itself (127.0.0.1, a
temp dir) and stops at the end; a check at teardown makes sure no server was left running.

No test here needs the machine to be fast. The algorithms that take the time from ``now_ms`` are
compared on traces stretched so far (:data:`STRETCH`) that a window lasts minutes of the server's
clock: no stall of a busy machine can outlast one, so no key expires while a test needs it. The
one that runs on real time (``echomq``) is checked against the times the server really saw.
"""

from __future__ import annotations

import os
import re
import time

import numpy as np
import pandas as pd
import pytest

from simulator.algorithms import ALGORITHMS, echomq_keys
from simulator.algorithms.scripts import load
from simulator.backends import (
    BackendError,
    BackendSpecError,
    RedisBackend,
    ScriptError,
    make_backend,
)
from simulator.backends.embedded import EmbeddedValkey
from simulator.backends.specs import redact
from simulator.cli import main
from simulator.engine.realtime import ExpiryWatch, server_time_bound, server_time_free, time_note
from simulator.engine.run import simulate
from simulator.engine.scenario import ConstantRate, Poisson, Polite, Scenario
from simulator.playback.run import replay

DECISION = [
    "client",
    "t_ms",
    "allowed",
    "count",
    "limit",
    "remaining",
    "reset_ms",
    "retry_after_ms",
]


pytestmark = [pytest.mark.server, pytest.mark.usefixtures("no_server_left_behind")]


@pytest.fixture(scope="module")
def server():
    with EmbeddedValkey() as s:
        yield s


@pytest.fixture
def valkey(server):
    backend = RedisBackend(server.client(), "valkey")
    backend.client.flushdb()
    yield backend
    backend.close()


#: Trace times and windows of the conformance tests are multiplied by this: a 250 ms window
#: becomes 250 s of the server's clock, far longer than the machine can stall a run.
STRETCH = 1000


def random_trace(
    seed: int, n: int = 1500, clients: int = 12, span_ms: int = 4000, stretch: int = 1
) -> pd.DataFrame:
    """Clustered arrivals: bursts in one millisecond, gaps across window edges (times in ms,
    multiplied by ``stretch``)."""
    rng = np.random.default_rng(seed)
    t_ms = np.sort(rng.integers(0, span_ms, n))
    t_ms[rng.random(n) < 0.3] = t_ms[0]  # many ties at the start
    who = rng.integers(0, clients, n)
    t_ms = rng.permutation(t_ms) * stretch
    return pd.DataFrame({"t_ms": t_ms, "client": [f"user {c}" for c in who]})


class Stopwatch(RedisBackend):
    """Test-only backend: the wall clock (ms) just before each call goes out and just after its
    reply is in. The server ran the script at some moment of that span, by its own clock."""

    def __init__(self, client) -> None:
        super().__init__(client, "valkey")
        self.spans: list[tuple[float, float]] = []

    def call(self, script, keys, args):
        before = time.monotonic() * 1000.0
        reply = super().call(script, keys, args)
        self.spans.append((before, time.monotonic() * 1000.0))
        return reply


def echomq_given_spans(clients, spans, limit: int, window_ms: int, slack_ms: float = 3.0) -> list:
    """What echomq must have answered, knowing only that the server saw each request within its
    span: ``(allowed, reset_lo, reset_hi)`` per request, or None where the spans leave it open
    (and for that client's later requests, whose window then has an unknown start).

    The counter lives while the server's time minus the first admitted hit's is at most
    ``window_ms``; ``slack_ms`` covers the server's whole-millisecond clock and clock drift.
    """
    state: dict[str, tuple[int, float, float] | None] = {}
    out: list = []
    for client, (lo, hi) in zip(clients, spans, strict=True):
        if client in state and state[client] is None:
            out.append(None)
            continue
        count, a_lo, a_hi = state.get(client) or (0, lo, hi)
        if count and hi - a_lo + slack_ms <= window_ms:  # surely still alive
            pass
        elif not count or lo - a_hi - slack_ms > window_ms:  # surely expired (or never set)
            count, a_lo, a_hi = 0, lo, hi
        else:
            state[client] = None
            out.append(None)
            continue
        allowed = count < limit
        if allowed:
            count += 1
        state[client] = (count, a_lo, a_hi)
        # reset_ms is the counter's PTTL + 1 (it lives through its last ms): window_ms + 1 less
        # the time since the window's first hit
        since_lo, since_hi = max(0.0, lo - a_hi - slack_ms), hi - a_lo + slack_ms
        out.append((allowed, window_ms + 1 - since_hi, window_ms + 1 - since_lo))
    return out


def test_which_algorithms_depend_on_server_time():
    assert set(server_time_free()) | set(server_time_bound()) == set(ALGORITHMS)
    assert server_time_bound() == ("echomq", "increx", "increx_grid")  # INCREX: not on Valkey 9.1
    assert all(not ALGORITHMS[a].uses_server_time for a in server_time_free())


def test_time_notes_say_which_clock(valkey):
    assert "REAL TIME" in time_note(ALGORITHMS["echomq"], valkey)
    for algorithm in server_time_free():
        assert "do not depend on the server's clock" in time_note(ALGORITHMS[algorithm], valkey)


@pytest.mark.parametrize("algorithm", server_time_free())
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_replay_on_valkey_equals_fakeredis(valkey, algorithm, seed):
    trace = random_trace(seed, stretch=STRETCH)
    window_ms = [250, 1000, 1500][seed - 1] * STRETCH
    expected = replay(trace, algorithm, 5, window_ms)
    for pipeline in (None, 1, 7):  # default pipelines, one round trip each, an odd batch size
        valkey.client.flushdb()
        got = replay(trace, algorithm, 5, window_ms, valkey, pipeline=pipeline)
        assert got.attrs.get("server_clock_safe", True)
        pd.testing.assert_frame_equal(got[DECISION], expected[DECISION])
    assert 0 < expected["allowed"].sum() < len(trace)


@pytest.mark.parametrize("algorithm", server_time_free())
def test_simulation_on_valkey_equals_fakeredis(valkey, algorithm):
    # 200 ms windows over 3 s, stretched: rates per second divided, times multiplied
    rates = [40.0 / STRETCH, 30.0 / STRETCH, 25.0 / STRETCH]
    clients = (Poisson("p", rates[0]), Polite("q", rates[1]), ConstantRate("", rates[2], 3.5))
    scenario = Scenario(algorithm, 4, 200 * STRETCH, 3000.0 * STRETCH, clients, seed=5)
    pd.testing.assert_frame_equal(simulate(scenario, valkey), simulate(scenario))


def test_pipelined_replay_keeps_every_decision_of_one_by_one(valkey):
    # 5000 requests over 20 s of trace, window 5 s, stretched: a window lasts 83 minutes of the
    # server's clock, so no key can expire on the server before the trace is done with it.
    trace = random_trace(9, n=5000, clients=300, span_ms=20_000, stretch=STRETCH)
    window_ms = 5_000 * STRETCH
    one = replay(trace, "sliding_log", 3, window_ms, valkey, pipeline=1)
    valkey.client.flushdb()
    seen: list[int] = []
    piped = replay(
        trace, "sliding_log", 3, window_ms, valkey, on_rows=lambda r: seen.extend(p for p, *_ in r)
    )
    assert one.attrs.get("server_clock_safe", True) and piped.attrs.get("server_clock_safe", True)
    pd.testing.assert_frame_equal(piped, one)
    assert sorted(seen) == list(range(len(trace)))
    assert 0 < one["allowed"].sum() < len(trace)


def test_echomq_on_real_time_decides_by_the_server_clock(valkey):
    """echomq's window is the counter's TTL: on Valkey it runs on real time.

    Requests come every 50 ms per client and the window is 425 ms, so in the simulated run every
    request is 25 ms away from the end of a window. A busy machine sends some of them late, and
    then the server may rightly decide otherwise than the simulated clock. So the decisions are
    checked against echomq at the times the server saw the requests (each within the span from
    just before its call to just after its reply): every decision those spans settle, and its
    reset_ms (the counter's PTTL + 1), must be what echomq gives. Nothing here needs the run to keep
    time; on an idle machine the spans settle nearly every decision.
    """
    limit, window_ms = 3, 425
    clients = (ConstantRate("q1", 20.0), ConstantRate("q2", 20.0, start_ms=10.0))
    scenario = Scenario("echomq", limit, window_ms, 1800.0, clients)
    expected = simulate(scenario)
    watch = Stopwatch(valkey.client)
    got = simulate(scenario, watch)
    assert len(got) == len(expected) == len(watch.spans) == len(got.attrs["late_ms"])
    assert got["client"].tolist() == expected["client"].tolist()  # same requests, same order
    settled = echomq_given_spans(got["client"], watch.spans, limit, window_ms)
    checked = [i for i, known in enumerate(settled) if known is not None]
    assert len(checked) >= len(clients)  # each client's first request, whatever the machine did
    for i in checked:
        allowed, reset_lo, reset_hi = settled[i]
        row = got.iloc[i]
        assert row["allowed"] == allowed, (i, row.to_dict(), watch.spans[i])
        assert reset_lo <= row["reset_ms"] <= reset_hi, (i, row.to_dict(), settled[i])
    assert 0 < expected["allowed"].sum() < len(expected)


def test_script_error_names_script_and_key(valkey):
    trace = random_trace(4, n=3000, clients=20)
    order = np.argsort(trace["t_ms"].to_numpy(), kind="stable")
    first = next(i for i, p in enumerate(order) if trace["client"].iloc[p] == "user 7")
    for pipeline in (None, 1):
        valkey.client.flushdb()
        valkey.client.set("rl:sl:{user%207}", "not a sorted set")
        rows: list = []
        with pytest.raises(ScriptError) as err:
            replay(trace, "sliding_log", 5, 1000, valkey, pipeline=pipeline, on_rows=rows.extend)
        message = str(err.value)
        assert "script sliding_log" in message and "rl:sl:{user%207}" in message
        assert "WRONGTYPE" in message and "t_ms=" in message
        assert len(rows) == first  # every decision before the failing request was handed over


def test_expiry_watch_flags_a_slow_run(monkeypatch):
    wall = [0.0]
    monkeypatch.setattr("simulator.engine.realtime.time.monotonic", lambda: wall[0])
    watch = ExpiryWatch(100)
    for t_ms, wall_s in [(0, 0.0), (50, 0.04), (120, 0.09), (200, 0.15)]:
        wall[0] = wall_s
        watch.start(t_ms)
        watch.end(t_ms)
    assert watch.safe  # 100 ms of trace never took 100 ms of wall time
    wall[0] = 0.26
    watch.start(210)
    watch.end(210)  # (120, 210] took 170 ms
    assert not watch.safe


def test_make_backend_specs(server):
    with make_backend(server.url) as backend:
        assert not backend.virtual_time and backend.owned is None
        assert "server at 127.0.0.1" in backend.describe()
    assert server.client().ping()  # a server it did not start is left running
    with make_backend("valkey") as backend:
        pid = backend.owned.pid
        assert f"pid {pid}" in backend.describe()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    with pytest.raises(BackendError, match="redis://127.0.0.1:1/0"):
        make_backend("redis://127.0.0.1:1/0")
    with pytest.raises(ValueError, match="unknown backend 'memcached'"):
        make_backend("memcached")


def test_a_bad_backend_spec_is_one_message_and_exit_2(server, capsys):
    not_a_cluster = f"redis+cluster://:{server.password}@{server.host}:{server.port}"
    bad = [
        ("redis+cluster://", "no host"),
        ("redis://h:notaport/0", "port"),
        ("redis://127.0.0.1:6379/zero", "database"),
        ("redis+cluster://127.0.0.1:70000", "port"),
        (not_a_cluster, "not a cluster"),
    ]
    for spec, why in bad:
        assert main(["burst", "--limit", "1", "--backend", spec]) == 2, spec
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and redact(spec) in err and why in err, err
        assert server.password not in err
        with pytest.raises(BackendSpecError, match=re.escape(redact(spec))):
            make_backend(spec)
    assert server.client().ping()  # asked whether it is a cluster, and left alone
    for unreachable in ("redis://127.0.0.1:1/0", "redis+cluster://127.0.0.1:1"):
        assert main(["burst", "--limit", "1", "--backend", unreachable]) == 1
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and unreachable in err, err


def test_stream_keeps_zero_replies_and_replies_read_ahead(server):
    # echomq_ttl answers 0 (go ahead) on a fresh queue: a reply equal to False must not be taken
    # for "no reply yet"; with several batches in flight one socket read holds replies of the
    # next batch, which must wait for it.
    ttl = load("echomq_ttl")
    batches = [
        [(ttl, echomq_keys(f"q{b}-{i}"), (1000, 5)) for i in range(n)]
        for b, n in enumerate([3, 1, 400, 2, 50])
    ]
    backend = RedisBackend(server.client(socket_timeout=10), "valkey")  # a lost reply: no hang
    try:
        got = list(backend.stream(batches, depth=3))
    finally:
        backend.close()
    assert [len(r) for r in got] == [3, 1, 400, 2, 50]
    assert all(reply == 0 for replies in got for reply in replies)
