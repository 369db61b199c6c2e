"""Commands on the fake server's quick path: the same replies, errors, keys and messages as
fakeredis's own.

A command run by ``redis.call``, the ``EVALSHA`` of a script call and the server's own command a
limiter sends (``INCREX``) go through :mod:`simulator.backends.fakeserver`'s copy of fakeredis's
command execution, which keeps per command what fakeredis works out on every call. Each case
here runs on fresh servers three ways (fakeredis as shipped, through redis-py; the repaired
scripts, through redis-py; the backend's own direct call) and everything a caller or a listener
could see is compared: each reply or error, then every key's type, value and time to live, and
every keyspace message published.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import pytest
import redis

from simulator.backends import FakeRedisBackend
from simulator.backends.base import Backend, BackendError, ScriptError
from simulator.backends.fakeserver import counted_commands, plain_scripts
from simulator.calls import native
from simulator.calls import script as make_script

#: Scripts, each a list of calls made one after another at 1 ms apart (``now`` in ARGV[1]).
CASES: dict[str, list[str]] = {
    "counters and expiry": [
        "local n = redis.call('INCR', KEYS[1]) redis.call('PEXPIRE', KEYS[1], 5) "
        "return {n, redis.call('PTTL', KEYS[1]), redis.call('TTL', KEYS[1])}",
        "return {redis.call('INCRBY', KEYS[1], 7), redis.call('DECR', KEYS[1])}",
        "return redis.call('GET', KEYS[1])",
    ],
    "a key gone at its expiry": [
        "return redis.call('SET', KEYS[1], 'v', 'PX', 2)",
        "return {redis.call('GET', KEYS[1]), redis.call('EXISTS', KEYS[1])}",
        "return {redis.call('GET', KEYS[1]), redis.call('EXISTS', KEYS[1])}",
        "return {redis.call('GET', KEYS[1]), redis.call('EXISTS', KEYS[1])}",
    ],
    "strings, a number and a float": [
        "return {redis.call('SET', KEYS[1], 2.5), redis.call('INCRBYFLOAT', KEYS[1], 0.25)}",
        "return {redis.call('APPEND', KEYS[1], 'x'), redis.call('STRLEN', KEYS[1])}",
        "return redis.call('MGET', KEYS[1], 'nokey')",
    ],
    "sorted set log": [
        "redis.call('ZADD', KEYS[1], ARGV[1], 'a' .. ARGV[1]) "
        "redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1] - 2) "
        "return {redis.call('ZCARD', KEYS[1]), redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')}",
    ]
    * 4,
    "hash fields": [
        "return {redis.call('HSET', KEYS[1], 'tokens', 5, 'ts', ARGV[1]), "
        "redis.call('HINCRBY', KEYS[1], 'tokens', -1), redis.call('HGETALL', KEYS[1])}",
        "return {redis.call('HDEL', KEYS[1], 'tokens', 'ts'), redis.call('EXISTS', KEYS[1])}",
    ],
    "a hash field expired on the spot": [
        "redis.call('HSET', KEYS[1], 'f', 1, 'g', 2) "
        "return redis.call('HPEXPIREAT', KEYS[1], 1, 'FIELDS', 1, 'f')",
        "return redis.call('HGET', KEYS[1], 'g')",
        "return redis.call('HGETALL', KEYS[1])",
    ],
    "a list emptied is a key removed": [
        "return {redis.call('RPUSH', KEYS[1], 'a', 'b'), redis.call('LPOP', KEYS[1])}",
        "return {redis.call('LPOP', KEYS[1]), redis.call('EXISTS', KEYS[1])}",
        "return redis.call('LPOP', KEYS[1])",
    ],
    "a missing key's short answer": [
        "return redis.call('DUMP', KEYS[1])",
    ],
    "wrong type": [
        "redis.call('SET', KEYS[1], 'x') return redis.call('LPUSH', KEYS[1], 'a')",
        "return redis.pcall('HGET', KEYS[1], 'f')",
    ],
    "not an integer": [
        "return redis.call('INCRBY', KEYS[1], 'many')",
        "return redis.pcall('PEXPIRE', KEYS[1], 1.5)",
    ],
    "wrong arity, then right": [
        "return redis.pcall('GET', KEYS[1], 'extra')",
        "return redis.call('SET', KEYS[1])",
        "return redis.call('GET', KEYS[1])",
    ],
    "not allowed in a script": [
        "return redis.pcall('EVAL', 'return 1', 0)",
        "return redis.call('MULTI')",
    ],
    "a write, then a failure, then a write": [
        "redis.call('SET', KEYS[1], 1) redis.call('LPUSH', KEYS[1], 'a') redis.call('SET', 'b', 2)",
        "return {redis.call('GET', KEYS[1]), redis.call('GET', 'b')}",
    ],
    "a global made before a write": [
        "redis.call('INCR', KEYS[1]) leaked = 1 redis.call('INCR', KEYS[1])",
        "return redis.call('GET', KEYS[1])",
    ],
    "unknown command": [
        "return redis.pcall('NOSUCH', KEYS[1])",
        "return redis.call('NOSUCH')",
    ],
}


_READ = {
    b"string": lambda c, k: c.get(k),
    b"list": lambda c, k: c.lrange(k, 0, -1),
    b"hash": lambda c, k: sorted(c.hgetall(k).items()),
    b"zset": lambda c, k: c.zrange(k, 0, -1, withscores=True),
    b"set": lambda c, k: sorted(c.smembers(k)),
}


def _state(client: redis.Redis) -> list[tuple[bytes, bytes, object, int]]:
    """Every key: its name, type, value and PTTL."""
    out = []
    for key in sorted(client.keys("*")):
        kind = client.type(key)
        out.append((key, kind, _READ[kind](client, key), client.pttl(key)))
    return out


def _run(
    way: str, calls: list[str], before_each: Callable[[int], None] | None = None
) -> tuple[list[object], object, list[object]]:
    """Each call's reply or error, then the keys, then the keyspace messages, ``way`` being
    ``stock`` (fakeredis's own), ``repaired`` (through redis-py) or ``direct``;
    ``before_each(i)`` runs before the i-th call."""
    now = [1_000]
    backend = FakeRedisBackend(lambda: now[0])
    client = backend.client
    client.config_set("notify-keyspace-events", "KEAhST")
    listener = client.pubsub()
    listener.psubscribe("__key*__:*", "__subkey*")
    outcomes: list[object] = []
    with plain_scripts() if way == "stock" else contextlib.nullcontext():
        for i, text in enumerate(calls):
            if before_each is not None:
                before_each(i)
            now[0] += 1
            script = make_script("case", text)
            keys, args = ["k:{c}"], [now[0]]
            try:
                if way == "direct":
                    reply = backend.call(script, keys, args)
                else:
                    backend.clock.activate()
                    reply = client.eval(text, 1, *keys, *args)
                outcomes.append(("reply", reply))
            except (redis.exceptions.RedisError, ScriptError) as exc:
                error = exc.__cause__ if isinstance(exc, ScriptError) else exc
                outcomes.append((type(error).__name__, str(error)))
    messages = []  # read before the keys are: reading them could send more
    while (message := listener.get_message(timeout=0)) is not None:
        messages.append((message["type"], message["channel"], message["data"]))
    listener.close()
    state = _state(client)
    backend.close()
    return outcomes, state, messages


@pytest.mark.parametrize("case", list(CASES))
def test_commands_in_scripts_do_what_fakeredis_does(case):
    stock = _run("stock", CASES[case])
    assert _run("repaired", CASES[case]) == stock
    assert _run("direct", CASES[case]) == stock


def test_the_cases_reach_what_they_name():
    """The cases hold errors, keys left behind and messages, so each comparison can fail."""
    outcomes, state, messages = _run("stock", CASES["a write, then a failure, then a write"])
    assert outcomes[0][0] == "ResponseError" and "WRONGTYPE" in str(outcomes[0][1])
    assert outcomes[1] == ("reply", [b"1", None])  # the SET before the failure stayed
    assert state and any(kind == "pmessage" for kind, _, _ in messages)
    _, _, messages = _run("stock", CASES["a hash field expired on the spot"])
    assert any(channel.startswith(b"__subkey") for _, channel, _ in messages)


NATIVE = {
    "INCREX counts and sets its window": [
        ("INCREX", ["n:{c}"], ["PX", 50, "ENX"]),
        ("INCREX", ["n:{c}"], ["PX", 50, "ENX"]),
        ("PTTL", ["n:{c}"], []),
    ],
    "INCREX's own options refused": [("INCREX", ["n:{c}"], ["PX", -1])],
    "INCREX on a key of the wrong type": [
        ("SET", ["n:{c}"], ["text"]),
        ("INCREX", ["n:{c}"], []),
    ],
    "a reply redis-py reads for the caller": [
        ("SET", ["s:{c}"], ["v", "PX", 10]),
        ("GET", ["s:{c}"], []),
        ("GET", ["missing"], []),
    ],
    "wrong arity": [("GET", [], [])],
    "an unknown command": [("NOSUCH", ["k"], [])],
    "an argument redis-py cannot send": [("SET", ["k"], [True])],
}


def _native(direct: bool, calls: list[tuple[str, list[str], list[object]]]) -> tuple:
    now = [5_000]
    backend = FakeRedisBackend(lambda: now[0])
    outcomes: list[object] = []
    for command, keys, args in calls:
        now[0] += 1
        call = backend.call if direct else super(FakeRedisBackend, backend).call
        try:
            outcomes.append(("reply", call(native(command), keys, args)))
        except (ScriptError, BackendError) as exc:
            outcomes.append((type(exc).__name__, str(exc), type(exc.__cause__).__name__))
    state = _state(backend.client)
    backend.close()
    return outcomes, state


@pytest.mark.parametrize("case", list(NATIVE))
def test_the_servers_own_command_replies_as_through_redis_py(case):
    assert _native(True, NATIVE[case]) == _native(False, NATIVE[case])


def test_the_servers_own_command_skips_redis_py():
    through_redis_py = FakeRedisBackend(lambda: 0)
    expected = Backend.call(through_redis_py, native("INCREX"), ["n"], ["PX", 50])
    backend = FakeRedisBackend(lambda: 0)
    backend.client.execute_command = None  # fails if the call goes through redis-py
    assert backend.call(native("INCREX"), ["n"], ["PX", 50]) == expected


def test_every_command_is_still_counted():
    """The quick path steps aside for a wrapped command execution (how commands are counted)."""
    backend = FakeRedisBackend(lambda: 0)
    three = make_script("three", "redis.call('INCR', KEYS[1]) return redis.call('GET', KEYS[1])")
    backend.preload([three])
    with counted_commands() as count:
        backend.call(three, ["k"], [])
        backend.call(native("INCR"), ["k"], [])
    assert count.commands == 4  # EVALSHA, INCR, GET; INCR


def test_a_hash_field_that_expired_is_announced_as_fakeredis_announces_it(monkeypatch):
    """A hash field's expiry follows the wall clock in fakeredis; here that clock is the test's,
    moved past the field's time between two calls, and the ``hexpired`` message compared."""
    from fakeredis.commands_mixins import hash_mixin
    from fakeredis.model import _hash

    calls = [
        "redis.call('HSET', KEYS[1], 'f', 1, 'g', 2) "
        "return redis.call('HPEXPIRE', KEYS[1], 10, 'FIELDS', 1, 'f')",
        "return redis.call('HGETALL', KEYS[1])",
    ]
    wall_ms = [0]
    for module in (_hash, hash_mixin):
        monkeypatch.setattr(module, "current_time", lambda: wall_ms[0])

    def at(i: int) -> None:
        wall_ms[0] = 1_000_000 + 50 * i

    stock = _run("stock", calls, before_each=at)
    assert _run("repaired", calls, before_each=at) == stock
    assert _run("direct", calls, before_each=at) == stock
    assert any(b"hexpired" in bytes(data) for _, _, data in stock[2])


@pytest.mark.parametrize("n_args", [0, 1, 7, 199, 250])
def test_keys_and_argv_are_the_tables_fakeredis_makes(n_args):
    """Handed to Lua in one call (or, past 200, as fakeredis hands them): the same tables."""
    text = (
        "local n = 0 for _ in pairs(ARGV) do n = n + 1 end "
        "return {#KEYS, #ARGV, n, KEYS[1], KEYS[3], ARGV[1] or false, ARGV[#ARGV] or false}"
    )
    keys, args = ["a", "b", "c"], [f"v{i}" for i in range(n_args)]
    replies = []
    for way in ("stock", "repaired"):
        client = FakeRedisBackend(lambda: 0).client
        with plain_scripts() if way == "stock" else contextlib.nullcontext():
            replies.append(client.eval(text, len(keys), *keys, *args))
            replies.append(client.eval("return {#KEYS, #ARGV}", 0))  # nothing left over
    assert replies[2:] == replies[:2]
    assert replies[0][:3] == [3, n_args, n_args]
