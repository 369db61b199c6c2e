"""A user's script touches only its own keys, with a limiter's commands, on every backend.

The real-server tests start an embedded valkey-server of their own (and stop it by its handle),
fill two databases with keys that belong to someone else, run a script that reaches for them
through the command line on ``redis://…/14`` (and ``/0``), and find every one of those keys and
values as it was.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from simulator.algorithms import ALGORITHMS
from simulator.backends import FakeRedisBackend
from simulator.backends.embedded import EmbeddedValkey
from simulator.cli import main
from simulator.userscripts import register_script

HEAD = """--[[ ratelimit
keys = ["rl:bad:{client}"]
argv = ["now_ms", "window_ms", "limit"]
reply = { allowed = 1, count = 2 }
]]
"""

#: Scripts that reach past their key, and what the message must say.
BAD = {
    "flushall": ("redis.call('FLUSHALL')\nreturn {1, 1}\n", "line 6: the guard stopped FLUSHALL"),
    "select": (
        "redis.call('SELECT', 3)\nredis.call('FLUSHDB')\nreturn {1, 1}\n",
        "line 6: the guard stopped SELECT",
    ),
    "del": (
        "redis.call('INCR', KEYS[1])\nredis.call('DEL', KEYS[1], 'other:1')\nreturn {1, 1}\n",
        'line 7: the guard stopped DEL on key "other:1"',
    ),
    "set": ("redis.call('SET', 'other:5', 'mine')\nreturn {1, 1}\n", 'SET on key "other:5"'),
    "expire": ("redis.call('PEXPIRE', 'other:3', 1)\nreturn {1, 1}\n", 'on key "other:3"'),
    "mset": (
        "redis.call('MSET', KEYS[1], 1, 'other:2', 2)\nreturn {1, 1}\n",
        'MSET on key "other:2"',
    ),
    "rename": (
        "redis.call('SET', KEYS[1], 1)\nredis.call('RENAME', KEYS[1], 'other:hash')\n"
        "return {1, 1}\n",
        'RENAME on key "other:hash"',
    ),
    "zunionstore": (
        "redis.call('ZUNIONSTORE', KEYS[1], 2, KEYS[1], 'other:z')\nreturn {1, 1}\n",
        'ZUNIONSTORE on key "other:z"',
    ),
    "keys": ("local all = redis.call('KEYS', '*')\nreturn {1, #all}\n", "KEYS, which is not"),
    "config": (
        "redis.pcall('CONFIG', 'SET', 'maxmemory', '1')\nreturn {1, 1}\n",
        "CONFIG, which is not",
    ),
    "lowercase": ("redis.call('flushdb')\nreturn {1, 1}\n", "FLUSHDB, which is not"),
}

#: Every allowed family at work on the script's own keys (a decision must come out of it).
GOOD = """--[[ ratelimit
keys = ["rl:good:{client}:a", "rl:good:{client}:b"]
argv = ["now_ms", "window_ms", "limit"]
reply = { allowed = 1, count = 2 }
]]
local a, b = KEYS[1], KEYS[2]
local n = redis.call('INCR', a)
redis.call('PEXPIRE', a, ARGV[2])
redis.call('HSET', b, 'f', n)
redis.call('DEL', b)
redis.call('ZADD', b, n, ARGV[1])
redis.call('EXISTS', a, b)
redis.call('ZUNIONSTORE', b, 1, b)
redis.call('RENAME', b, b)
redis.call('TIME')
redis.pcall('GET', a)
redis.call('UNLINK', b)
if n <= tonumber(ARGV[3]) then return {1, n} end
return {0, n}
"""


@pytest.fixture
def scripts(tmp_path):
    before = set(ALGORITHMS)

    def write(name: str, source: str) -> Path:
        path = tmp_path / name
        path.write_text(source)
        return path

    yield write
    for name in set(ALGORITHMS) - before:
        ALGORITHMS.pop(name)


@pytest.fixture(scope="module")
def server():
    with EmbeddedValkey() as s:
        yield s


def fill(server: EmbeddedValkey) -> dict[int, dict[bytes, object]]:
    """Someone else's keys in databases 0 and 3 (and an empty 14): what each holds."""
    held = {}
    for db, n in ((0, 100), (3, 50)):
        c = server.client(db=db)
        c.flushdb()
        for i in range(n):
            c.set(f"other:{i}", f"value {i}")
        c.hset("other:hash", mapping={"a": "1", "b": "2"})
        c.zadd("other:z", {"m": 1.0})
        held[db] = snapshot(server, db)
    server.client(db=14).flushdb()
    return held


def snapshot(server: EmbeddedValkey, db: int) -> dict[bytes, object]:
    c = server.client(db=db)
    out: dict[bytes, object] = {}
    for key in c.scan_iter(count=1000):
        if key.startswith(b"rl:bad:"):
            continue  # the script's own key: it may write it
        kind = c.type(key)
        value = {
            b"string": c.get,
            b"hash": c.hgetall,
            b"zset": lambda k: c.zrange(k, 0, -1, withscores=True),
        }[kind](key)
        out[key] = (value, c.pttl(key))
    return out


def trace(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.csv"
    path.write_text("t_ms,client\n0,a\n1,a\n2,b\n")
    return path


@pytest.mark.parametrize("db", [14, 0])
@pytest.mark.parametrize("bad", sorted(BAD))
@pytest.mark.server
def test_a_script_cannot_touch_a_server_the_program_did_not_start(
    server, scripts, tmp_path, capsys, bad, db
):
    held = fill(server)
    body, needle = BAD[bad]
    path = scripts(f"{bad}.lua", HEAD + body)
    url = server.url.rsplit("/", 1)[0] + f"/{db}"
    args = ["replay", str(trace(tmp_path)), "--script", f"bad={path}", "--algorithm", "bad"]
    out = ["--out", str(tmp_path / "o.csv")]
    risk = ["--run-script-on-foreign-server"]  # the rehearsal on the fake server stops it
    code = main([*args, "--limit", "5", "--window", "1", "--backend", url, *risk, *out])
    err = capsys.readouterr().err
    assert code == 2, err
    assert needle in err and str(path) in err and "Traceback" not in err
    assert err.count("error:") == 1
    for d, keys in held.items():
        assert snapshot(server, d) == keys, f"db{d} changed"
    assert server.client().config_get("maxmemory")["maxmemory"] != "1"


@pytest.mark.server
def test_memory_with_a_script_on_a_server_the_program_did_not_start(
    server, scripts, tmp_path, capsys
):
    held = fill(server)
    path = scripts("flushall.lua", HEAD + BAD["flushall"][0])
    url = server.url.rsplit("/", 1)[0] + "/14"
    code = main(
        [
            "memory",
            "--backend-url",
            url,
            "--script",
            f"flushall={path}",
            "--algorithm",
            "flushall",
            "--users",
            "100",
            "--decisions",
            "10",
            "--out-dir",
            str(tmp_path / "out"),
            "--run-script-on-foreign-server",  # the rehearsal on the fake server stops it
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and "the guard stopped FLUSHALL" in err and "Traceback" not in err, err
    for d, keys in held.items():
        assert snapshot(server, d) == keys, f"db{d} changed"


@pytest.mark.parametrize("bad", ["del", "flushall", "zunionstore", "lowercase"])
def test_the_fake_server_stops_the_same_commands(scripts, tmp_path, capsys, bad):
    body, needle = BAD[bad]
    path = scripts(f"{bad}.lua", HEAD + body)
    args = ["replay", str(trace(tmp_path)), "--script", f"bad={path}", "--algorithm", "bad"]
    code = main([*args, "--limit", "5", "--window", "1", "--out", str(tmp_path / "o.csv")])
    err = capsys.readouterr().err
    assert code == 2 and needle in err and "Traceback" not in err, err


@pytest.mark.server
def test_the_allowed_vocabulary_decides_alike_on_the_fake_and_the_real_server(
    server, scripts, tmp_path
):
    fill(server)
    path = scripts("good.lua", GOOD)
    t = tmp_path / "t.csv"
    t.write_text("t_ms,client\n" + "".join(f"{i},{'ab'[i % 2]}\n" for i in range(8)))
    url = server.url.rsplit("/", 1)[0] + "/14"
    frames = []
    for backend in ("fakeredis", url):
        out = tmp_path / f"{len(frames)}.csv"
        args = ["replay", str(t), "--script", f"good={path}", "--algorithm", "good"]
        assert (
            main(
                [*args, "--limit", "2", "--window", "600", "--backend", backend, "--out", str(out)]
                + ["--run-script-on-foreign-server"]  # the test's own server, seen as someone's
            )
            == 0
        )
        frames.append(pd.read_csv(out)["allowed"].tolist())
        server.client(db=14).flushdb()
    assert frames[0] == frames[1] == [1, 1, 1, 1, 0, 0, 0, 0]


def test_a_key_beyond_the_declared_ones_is_named_as_undeclared(scripts):
    path = scripts("two.lua", HEAD + "return {1, redis.call('INCR', KEYS[2])}\n")
    cls = register_script(path, "two")
    limiter = cls(FakeRedisBackend(lambda: 0), 5, 1000)
    with pytest.raises(Exception, match=r"line 6: the guard stopped INCR with a nil key") as info:
        limiter.decide("a", 0)
    assert "gives the script 1 key(s)" in str(info.value)
    assert "is not declared" in str(info.value)


def replay(tmp_path: Path, path: Path, rows: str = "t_ms,client\n0,a\n1,a\n") -> int:
    """Replay ``rows`` through the script at ``path``; the exit status."""
    t = tmp_path / "t.csv"
    t.write_text(rows)
    args = ["replay", str(t), "--script", f"s={path}", "--algorithm", "s", "--limit", "5"]
    return main([*args, "--window", "1", "--out", str(tmp_path / "o.csv")])


def test_a_misspelt_field_is_an_unknown_field_even_without_client(scripts, tmp_path, capsys):
    path = scripts("typo.lua", HEAD.replace("{client}", "{clinet}") + "return {1, 1}\n")
    code = replay(tmp_path, path)
    err = capsys.readouterr().err
    assert code == 2 and "unknown field {clinet}" in err and "hash tag" not in err, err


@pytest.mark.parametrize(
    "reply, needle",
    [
        ("{1}", "reply element 2 (count) is missing: the reply has 1 element(s)"),
        ("{1, nil, 5}", "reply element 2 (count) is missing: the reply has 1 element(s)"),
        ("{nil, 1}", "reply element 1 (allowed) is missing: the reply has 0 element(s)"),
    ],
)
def test_a_missing_declared_reply_element_is_an_error_naming_it(
    scripts, tmp_path, capsys, reply, needle
):
    path = scripts("short.lua", HEAD + f"return {reply}\n")
    code = replay(tmp_path, path)
    err = capsys.readouterr().err
    assert code == 2 and needle in err and "a Lua nil ends the array" in err, err


def test_a_costly_request_to_a_script_without_cost_names_the_time_and_client(
    scripts, tmp_path, capsys
):
    path = scripts("nocost.lua", HEAD + "return {1, 1}\n")
    code = replay(tmp_path, path, "t_ms,client,cost\n0,a,1\n7,bob,2\n")
    err = capsys.readouterr().err
    assert code == 2 and "the request of client 'bob' at t_ms=7 costs 2" in err, err


def test_the_same_script_name_twice_is_refused(scripts, tmp_path, capsys):
    x = scripts("x.lua", HEAD + "return {1, 1}\n")
    y = scripts("y.lua", HEAD + "return {0, 1}\n")
    code = main(["burst", "--script", f"a={x}", "--script", f"a={y}"])
    err = capsys.readouterr().err
    assert code == 2 and "the name 'a' is taken by" in err and str(x) in err, err
    assert "a" not in ALGORITHMS


def test_a_device_or_an_oversized_script_is_refused(scripts, tmp_path, capsys):
    from simulator.userscripts.declaration import MAX_BYTES, DeclarationError

    fine = scripts("fine.lua", HEAD + "return {1, 1}\n")
    assert main(["burst", "--script", f"fine={fine}", "--script", "z=/dev/zero"]) == 2
    assert "/dev/zero: is not a regular file" in capsys.readouterr().err
    assert "fine" not in ALGORITHMS  # all of a run's scripts or none
    big = scripts("big.lua", HEAD + "-- " + "x" * MAX_BYTES + "\nreturn {1, 1}\n")
    assert main(["burst", "--script", f"big={big}"]) == 2
    assert "larger than 1 MiB" in capsys.readouterr().err
    toml = tmp_path / "decl.toml"
    toml.write_text("# " + "x" * MAX_BYTES)
    plain = scripts("plain.lua", "return {1}\n")
    with pytest.raises(DeclarationError, match="larger than 1 MiB"):
        register_script(plain, "plain", toml)


@pytest.mark.server
def test_a_script_with_a_built_in_key_is_refused_alike_on_every_backend(
    server, scripts, tmp_path, capsys
):
    held = fill(server)
    same = HEAD.replace("rl:bad:{client}", "rl:fw:{client}:{window}") + (
        "local n = redis.call('INCR', KEYS[1])\nreturn {n <= tonumber(ARGV[3]) and 1 or 0, n}\n"
    )
    path = scripts("fw_again.lua", same)
    url = server.url.rsplit("/", 1)[0] + "/14"
    for backend in ("fakeredis", url):
        code = main(["burst", "--script", f"fw_again={path}", "--backend", backend])
        err = capsys.readouterr().err
        assert code == 2 and "Traceback" not in err, err
        assert "fixed_window and fw_again would both use key 'rl:fw:{user}:0'" in err, err
    for d, keys in held.items():
        assert snapshot(server, d) == keys
    assert server.client(db=14).dbsize() == 0
