"""A traced script call: its lines and its redis.calls recorded, the budget still in charge, and
nothing of it left on the ordinary path."""

from __future__ import annotations

import pytest
import redis
from fakeredis.commands_mixins import scripting_mixin as _scripting

from simulator.backends import FakeRedisBackend
from simulator.backends.fakeserver import limit_scripts, script_limit_hit, tracing
from simulator.backends.fakeserver import scripts as fake_scripts
from simulator.backends.fakeserver.tracing import traced_scripts
from simulator.policy import resolve

SCRIPT = """local n = tonumber(redis.call('GET', KEYS[1]) or '0')
for i = 1, 3 do
  n = n + 1
end
redis.call('SET', KEYS[1], n)
local bad = redis.pcall('INCR', KEYS[2])
return {n, bad.err and 'caught' or 'none', cjson.encode({n})}"""


@pytest.fixture
def fake():
    backend = FakeRedisBackend()
    yield backend
    backend.close()


def test_the_lines_and_the_calls_of_a_traced_call(fake):
    fake.client.set("h", "not a number")
    with traced_scripts(fake.server) as recorder:
        reply = fake.client.eval(SCRIPT, 2, "k", "h")
    assert reply == [3, b"caught", b"[3]"]
    (run,) = recorder.runs
    assert run.source == SCRIPT and run.error is None
    hits = dict(run.hits)
    assert hits[3] == 3  # the loop's body, once per turn
    assert set(hits) <= set(range(1, 8))  # cjson's wrapper (another chunk) is not counted
    get, set_, incr = run.calls
    assert (get.command, get.args, get.reply, get.line) == ("GET", ("k",), False, 1)
    assert (set_.command, set_.args, set_.reply, set_.line) == ("SET", ("k", 3), {"ok": "OK"}, 5)
    assert incr.protected and incr.line == 6 and incr.reply is None
    assert "not an integer" in incr.error


def test_a_script_that_loops_for_ever_while_traced_is_stopped_by_the_budget(fake):
    limit_scripts(fake.server, 0.2, 64)
    with traced_scripts(fake.server) as recorder:
        with pytest.raises(redis.exceptions.ResponseError, match="ran longer than 0.2 s"):
            fake.client.eval("local i = 0\nwhile true do i = i + 1 end", 0)
    assert script_limit_hit(fake.server) == "ran longer than 0.2 s"
    assert "ran longer" in recorder.runs[0].error and dict(recorder.runs[0].hits)[2] > 1
    with pytest.raises(redis.exceptions.ResponseError, match="ran longer than 0.2 s"):
        fake.client.eval("while true do end", 0)  # and untraced after it, the same
    assert fake.client.eval("return 7", 0) == 7


def test_outside_the_block_nothing_of_the_tracing_runs(fake, monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("the recorder was called on the ordinary path")

    with traced_scripts(fake.server):
        fake.client.eval("return 1", 0)
    monkeypatch.setattr(tracing.Recorder, "execute", never)
    monkeypatch.setattr(tracing.Recorder, "record", never)
    runtime = fake.server._lua_runtime
    assert "execute" not in runtime.__dict__  # the runtime's own execute again
    mixin = _scripting.ScriptingCommandsMixin
    assert mixin._lua_redis_call is fake_scripts._lua_redis_call
    fake.client.set("h", "not a number")
    assert fake.client.eval(SCRIPT, 2, "k", "h")[:2] == [3, b"caught"]
    script = fake.client.register_script("return redis.call('INCR', KEYS[1])")
    assert [script(keys=["c"]) for _ in range(3)] == [1, 2, 3]
    limiter = resolve("sliding_counter", 2, 1000, {}).limiter(fake)  # a limiter's own path
    assert [limiter.decide("u", 5).allowed for _ in range(3)] == [True, True, False]


def test_another_servers_calls_go_straight_through(fake):
    other = FakeRedisBackend()
    try:
        with traced_scripts(fake.server) as recorder:
            assert other.client.eval("return redis.call('INCR', KEYS[1])", 1, "x") == 1
        assert recorder.runs == []
    finally:
        other.close()


def test_two_servers_traced_at_once_each_keep_their_own(fake):
    other = FakeRedisBackend()
    mixin = _scripting.ScriptingCommandsMixin
    plain_pcall = mixin._lua_redis_pcall
    try:
        with traced_scripts(fake.server) as mine:
            with traced_scripts(other.server) as theirs:
                fake.client.eval("return redis.call('INCR', KEYS[1])", 1, "a")
                other.client.eval("return redis.call('DECR', KEYS[1])", 1, "b")
            fake.client.eval("return redis.call('GET', KEYS[1])", 1, "a")  # the first goes on
            with pytest.raises(RuntimeError, match="traced already"):
                with traced_scripts(fake.server):
                    pass
        assert [r.calls[0].command for r in mine.runs] == ["INCR", "GET"]
        assert [r.calls[0].command for r in theirs.runs] == ["DECR"]
        assert mixin._lua_redis_call is fake_scripts._lua_redis_call
        assert mixin._lua_redis_pcall is plain_pcall
    finally:
        other.close()


def test_a_wrapper_found_before_the_last_block_ended_still_calls_through(fake, monkeypatch):
    """Another thread may look ``redis.call`` up (finding the wrapper) just before the last
    traced block ends and call it just after: the untraced call must still go through. The
    interleaving is laid out by hand, so nothing races."""
    other = FakeRedisBackend()
    mixin = _scripting.ScriptingCommandsMixin
    try:
        with traced_scripts(fake.server):
            found_call, found_pcall = mixin._lua_redis_call, mixin._lua_redis_pcall
        monkeypatch.setattr(mixin, "_lua_redis_call", found_call)
        monkeypatch.setattr(mixin, "_lua_redis_pcall", found_pcall)
        assert other.client.eval("return redis.call('INCR', KEYS[1])", 1, "x") == 1
        assert other.client.eval("return redis.pcall('INCR', KEYS[1])", 1, "x") == 2
    finally:
        other.close()
