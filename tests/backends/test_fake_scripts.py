"""The fake server's repaired script path: the same replies and the same errors as fakeredis's own.

Each script is compiled once per Lua runtime, no full collection runs after each call, globals
are checked in Lua and a plain array reply is read in one call (``simulator.backends.fakeserver``).
Every kind of failure a script can meet must still come out exactly as fakeredis says it: each
one runs here both ways, on a fresh server each, and the type and message are compared.
"""

from __future__ import annotations

import contextlib

import pytest
import redis

from simulator.algorithms import ALGORITHMS
from simulator.backends import FakeRedisBackend
from simulator.backends.fakeserver import plain_scripts

SYNTAX = "local x = 1\nlocal y = = 2\nreturn x"


def _outcome(plain: bool, script: str, keys=(), args=(), setup=None):
    """What one EVAL gives (the reply, or the error's type and message) and the next EVAL."""
    backend = FakeRedisBackend()
    client = backend.client
    if setup is not None:
        setup(client)
    with plain_scripts() if plain else contextlib.nullcontext():
        try:
            got = ("reply", client.eval(script, len(keys), *keys, *args))
        except redis.exceptions.RedisError as exc:
            got = (type(exc).__name__, str(exc))
        after = client.eval("return {1, 'two', 3.7, -2.5}", 0)  # the server still works
    return got, after


ERRORS = {
    "syntax": dict(script=SYNTAX),
    "runtime error()": dict(script="local a = 1\nerror('boom')"),
    "index a nil": dict(script="local t = nil\nreturn t.x"),
    "wrong type in redis.call": dict(
        script="return redis.call('INCR', KEYS[1])",
        keys=("k",),
        setup=lambda c: c.rpush("k", "a"),
    ),
    "unknown command": dict(script="return redis.call('NOSUCHCOMMAND')"),
    "wrong arity": dict(script="return redis.call('GET')"),
    "error_reply": dict(script="return redis.error_reply('MY failure')"),
    "err table": dict(script="return {err='ERR made up'}"),
    "global before a call": dict(script="x = 1\nreturn redis.call('GET', 'k')"),
    "global at the end": dict(script="y = 2\nreturn 1"),
    "pcall's error": dict(
        script="local r = redis.pcall('INCR', KEYS[1]) return r",
        keys=("k",),
        setup=lambda c: c.set("k", "x"),
    ),
}


@pytest.mark.parametrize("kind", list(ERRORS))
def test_every_failure_reads_as_fakeredis_says_it(kind):
    case = ERRORS[kind]
    plain = _outcome(True, **case)
    repaired = _outcome(False, **case)
    assert repaired == plain
    assert repaired[1] == [1, b"two", 3, -2]  # and the next script runs as before


def test_a_syntax_error_keeps_error_loading_code_and_its_line():
    (kind, message), _ = _outcome(False, SYNTAX)
    assert kind == "ResponseError"
    assert "error loading code" in message and ":2: unexpected symbol" in message


def test_too_many_keys_is_refused_both_ways():
    backend = FakeRedisBackend()
    for plain in (True, False):
        with plain_scripts() if plain else contextlib.nullcontext():
            with pytest.raises(redis.exceptions.ResponseError, match="greater than"):
                backend.client.execute_command("EVAL", "return 1", 2, "only-one")


def test_noscript_is_still_noscript():
    backend = FakeRedisBackend()
    with pytest.raises(redis.exceptions.NoScriptError):
        backend.client.evalsha("0" * 40, 0)


def test_replies_of_every_shape_are_the_same():
    scripts = [
        "return 1",
        "return 2.9",
        "return 'text'",
        "return {}",
        "return {1, 2.5, 'x', {3, 'y'}}",
        "return {true, false, 1}",
        "return redis.status_reply('FINE')",
        "return {ok='STILL FINE'}",
        "return nil",
        "return {1, nil, 3}",
        "local t = {} for i = 1, 100 do t[i] = i end return t",
    ]
    for script in scripts:
        assert _outcome(False, script) == _outcome(True, script), script


CALLS = {
    "a container and its subcommand": dict(
        script="return redis.call('OBJECT', 'ENCODING', KEYS[1])",
        keys=("k",),
        setup=lambda c: c.set("k", "12"),
    ),
    "names in any case, looked up again": dict(
        script="redis.call('incr', KEYS[1]) redis.call('InCr', KEYS[1]) "
        "return redis.call('INCR', KEYS[1])",
        keys=("k",),
    ),
    "numbers as arguments": dict(
        script="redis.call('SET', KEYS[1], 2.5) redis.call('INCRBYFLOAT', KEYS[1], 0.1) "
        "return redis.call('GET', KEYS[1])",
        keys=("k",),
    ),
    "a table as an argument": dict(script="return redis.call('SET', 'k', {1})"),
    "pcall of an unknown command, then a known one": dict(
        script="local e = redis.pcall('NOPE') return {e['err'], redis.call('PING')}"
    ),
}


@pytest.mark.parametrize("kind", list(CALLS))
def test_redis_call_looked_up_once_says_what_fakeredis_says(kind):
    """``redis.call``'s command is kept per connection once found: the same replies and
    errors as fakeredis's own lookup on every call."""
    assert _outcome(False, **CALLS[kind]) == _outcome(True, **CALLS[kind])


@pytest.mark.parametrize("command", ["1", "nil"])
def test_a_command_that_is_no_string_fails_as_fakeredis_fails(command):
    """fakeredis's own lookup meets it (a user's script never gets here: its guard stops it)."""
    failures = []
    for plain in (True, False):
        client = FakeRedisBackend().client
        with plain_scripts() if plain else contextlib.nullcontext():
            with pytest.raises(Exception) as info:  # noqa: PT011 - whatever fakeredis raises
                client.eval(f"return redis.call({command})", 0)
        failures.append(type(info.value))
    assert failures[0] == failures[1]


def test_each_algorithm_replies_the_same_both_ways(clock):
    for name, cls in ALGORITHMS.items():
        replies = []
        for plain in (True, False):
            backend = FakeRedisBackend(clock)
            limiter = cls(backend, 3, 1000)
            with plain_scripts() if plain else contextlib.nullcontext():
                got = []
                for k in range(60):
                    clock.t_ms = k * 37
                    script, keys, args = limiter.call(f"c{k % 4}", k * 37, 1 + k % 2)
                    got.append(backend.call(script, keys, args))
            replies.append(got)
        assert replies[0] == replies[1], name


def test_without_a_full_collection_per_call_the_lua_heap_stays_bounded(clock):
    backend = FakeRedisBackend(clock)
    limiter = ALGORITHMS["sliding_log"](backend, 5, 100)
    heap_kb = []
    for k in range(6000):
        clock.t_ms = k
        limiter.decide(f"c{k % 50}", k)
        if k % 1000 == 999:
            heap_kb.append(backend.client.eval("return collectgarbage('count')", 0))
    assert max(heap_kb) < 4096  # Lua's incremental collector keeps up (tens of KB in practice)
