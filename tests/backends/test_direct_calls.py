"""Script calls handed straight to fakeredis's command execution: the same as through redis-py.

:class:`~simulator.backends.fakeserver.DirectCalls` skips redis-py's packing and the fake socket's
parsing, and relies on a few things fakeredis does inside: the ``evalsha`` command function with
its argument checks, the server time each database reads, errors turned into redis-py's
exceptions, a socket registered on the server. Each is held here against the redis-py path, on
fresh servers, reply by reply and error by error.
"""

from __future__ import annotations

import pytest
import redis
from test_fake_scripts import ERRORS

from simulator.algorithms import ALGORITHMS
from simulator.backends import FakeRedisBackend
from simulator.backends.base import ScriptError
from simulator.calls import script as make_script


def _both(script: str, keys=(), args=(), setup=None):
    """One EVALSHA through redis-py and one through the direct path, each on a fresh server."""
    outcomes = []
    for direct in (False, True):
        backend = FakeRedisBackend(lambda: 0)
        if setup is not None:
            setup(backend.client)
        sha = backend.client.script_load(script)
        try:
            if direct:
                fields = backend.direct.fields(sha, keys, args)
                got = ("reply", backend.direct.evalsha(fields))
            else:
                got = ("reply", backend.client.evalsha(sha, len(keys), *keys, *args))
        except redis.exceptions.RedisError as exc:
            got = (type(exc).__name__, str(exc))
        outcomes.append(got)
        backend.close()
    return outcomes


@pytest.mark.parametrize("kind", [k for k in ERRORS if k != "syntax"])
def test_every_failure_comes_back_as_redis_py_raises_it(kind):
    through_redis_py, direct = _both(**ERRORS[kind])
    assert direct == through_redis_py
    assert direct[0] != "reply" or kind == "pcall's error"


@pytest.mark.parametrize(
    "text",
    [
        "return {1, 'two', 3.7, -2.5, false, {5, 'six'}}",
        "return redis.status_reply('FINE')",
        "return 'plain'",
        "return nil",
        "return redis.call('TIME')[1] ~= nil and 1 or 0",
    ],
)
def test_replies_of_every_shape_are_those_of_redis_py(text):
    through_redis_py, direct = _both(text)
    assert direct == through_redis_py


def test_arguments_are_encoded_as_redis_py_encodes_them():
    text = "return {KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4]}"
    args = (7, 2.5, b"\x00raw", "é")
    through_redis_py, direct = _both(text, keys=("k:{é}",), args=args)
    assert (
        direct
        == through_redis_py
        == ("reply", ["k:{é}".encode(), b"7", b"2.5", b"\x00raw", "é".encode()])
    )
    backend = FakeRedisBackend(lambda: 0)
    with pytest.raises(redis.exceptions.DataError):  # as redis-py refuses it
        backend.direct.fields("0" * 40, ["k"], [True])


def test_an_unknown_sha_is_noscript_and_the_backend_loads_it():
    backend = FakeRedisBackend(lambda: 0)
    with pytest.raises(redis.exceptions.NoScriptError):
        backend.direct.evalsha(backend.direct.fields("0" * 40, [], []))
    fresh = make_script("fresh", "return 41 + 1")
    assert backend.call(fresh, [], []) == 42  # NOSCRIPT, loaded, run again


def test_too_many_keys_is_the_servers_error():
    backend = FakeRedisBackend(lambda: 0)
    sha = backend.client.script_load("return 1")
    with pytest.raises(redis.exceptions.ResponseError, match="greater than"):
        backend.direct.evalsha([sha.encode(), b"3", b"k"])


def test_a_script_error_names_the_script_and_keys():
    backend = FakeRedisBackend(lambda: 0)
    backend.client.rpush("k", "a")
    broken = make_script("broken", "return redis.call('INCR', KEYS[1])")
    with pytest.raises(ScriptError, match=r"script broken failed on keys \['k'\]: .*WRONGTYPE"):
        backend.call(broken, ["k"], [])


def test_the_server_time_is_the_virtual_clock_and_expiry_keeps_redis_rule():
    """Alive (PTTL 0) at its expiry instant, gone 1 ms later: the direct path sets the time."""
    now = [10_000]
    backend = FakeRedisBackend(lambda: now[0])
    ttl = make_script(
        "ttl",
        "if ARGV[1] == 'set' then redis.call('SET', KEYS[1], 1, 'PX', 1000) end "
        "return {redis.call('EXISTS', KEYS[1]), redis.call('PTTL', KEYS[1])}",
    )
    assert backend.call(ttl, ["k"], ["set"]) == [1, 1000]
    now[0] = 10_999
    assert backend.call(ttl, ["k"], ["look"]) == [1, 1]
    now[0] = 11_000
    assert backend.call(ttl, ["k"], ["look"]) == [1, 0]
    now[0] = 11_001
    assert backend.call(ttl, ["k"], ["look"]) == [0, -2]


def test_writes_reach_the_databases_watchers():
    """A user script's write-watch hooks the database; direct writes pass through it."""
    backend = FakeRedisBackend(lambda: 0)
    db = backend.server.dbs[0]
    seen: list[bytes] = []
    notify = db.notify_watch

    def watch(key: bytes) -> None:
        seen.append(key)
        notify(key)

    db.notify_watch = watch
    backend.call(make_script("w", "return redis.call('INCR', KEYS[1])"), ["counter"], [])
    assert b"counter" in seen


def test_the_direct_socket_is_the_servers_and_leaves_with_the_backend():
    backend = FakeRedisBackend(lambda: 0)
    sock = backend.direct.socket
    assert sock in backend.server.sockets
    backend.close()
    assert sock not in backend.server.sockets


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_each_algorithm_decides_the_same_both_ways(name):
    """Same keys, arguments and times on two fresh servers: replies equal call by call."""
    replies = []
    for direct in (False, True):
        now = [0]
        backend = FakeRedisBackend(lambda t=now: t[0])
        limiter = ALGORITHMS[name](backend, 5, 1_000)
        out = []
        for k in range(400):
            now[0] = k * 13 + k % 7
            s, keys, args = limiter.call(f"c{k % 3}", now[0])
            if direct:
                out.append(backend.call(s, keys, args))
            elif s.command:  # the server's own command: no script, through redis-py both ways
                backend.clock.activate()
                out.append(backend.client.execute_command(s.command, *keys, *args))
            else:
                backend.preload([s])
                backend.clock.activate()
                out.append(backend.client.evalsha(s.sha, len(keys), *keys, *args))
        replies.append(out)
        backend.close()
    assert replies[0] == replies[1]


def test_the_contracts_study_decides_a_users_script_on_every_default_family_whole():
    """The direct path makes the whole traffic affordable: no default family is sampled."""
    from simulator.studies import contracts
    from simulator.studies.families import families, offered

    sizes = [len(offered(f)) for f in families("default")]
    assert max(sizes) <= contracts.LUA_SAMPLE
    # marked there; any() stops at the first family past the sample (the others cost a second)
    assert any(len(offered(f)) > contracts.LUA_SAMPLE for f in families("full"))


def test_bench_fake_names_every_algorithm_and_finds_the_same_replies_three_ways():
    from simulator.bench.fake import bench_fake

    lines: list[str] = []
    rows = bench_fake(60, out=lines.append)
    assert [r["algorithm"] for r in rows] == list(ALGORITHMS)  # the server's own command too
    assert all(r["same_replies"] for r in rows)
    assert all(float(r["speedup"]) > 0 for r in rows)  # a figure, printed; never a time asserted
    assert any("vs stock" in line for line in lines)
