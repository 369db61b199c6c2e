"""The fake server's Lua made like Valkey's: the same globals, libraries and read-only tables.

lupa's Lua is a full Lua: ``debug``, ``io``, ``os.execute``, ``require``, ``getfenv``/``setfenv``
and a ``python`` table that reaches into the program itself. A script that runs on the fake
server must run the same on Valkey, and nothing a script does may outlast its call or get past
its budget (``debug.sethook(nil)`` once switched the budget's hook off). So once fakeredis has
set up a runtime, :func:`furnish` makes its environment Valkey 9's, as a real ``valkey-server``
lists it:

* the globals Valkey has and no others (no ``debug``, ``getfenv``, ``setfenv``, ``io``,
  ``require``, ``print``, ``python``...), ``os`` holding only ``clock``;
* ``bit``, ``cjson``, ``cmsgpack`` and ``struct`` (:mod:`~.libs`), and in ``redis`` (and
  ``server``, the same table) ``sha1hex``, ``set_repl`` with the ``REPL_*`` flags,
  ``replicate_commands``, ``breakpoint``, ``debug``, ``acl_check_cmd`` and the version fields;
* every library table read-only, and the globals too: a script that sets a global, or reads one
  that does not exist, is stopped with Valkey's words. A compiled script runs in a read-only
  view of the globals (``setfenv`` kept for that, out of the scripts' reach), so ``redis = nil``
  cannot spoil the scripts after it;
* every coroutine a script makes carries the budget's hook: Lua keeps hooks per coroutine, and a
  loop inside one would otherwise never be stopped.

What stays different: a library table is a read-only view of the real one (``pairs`` lists the
real one's fields), so ``rawget`` on it finds nothing and ``rawset`` writes to the view; error messages carry the script's lines as
Valkey's do (``user_script:3:``) but not its ``script: <sha>`` tail.
"""

from __future__ import annotations

from typing import Any

from simulator.backends.fakeserver.budget import HOOK_EVERY
from simulator.backends.fakeserver.libs import LibraryError, lifted
from simulator.backends.fakeserver.libs.bit import BIT
from simulator.backends.fakeserver.libs.cjson import cjson_encode, sha1hex
from simulator.backends.fakeserver.libs.msgpack import cmsgpack
from simulator.backends.fakeserver.libs.struct import STRUCT

__all__ = ["furnish", "CHUNK_NAME"]

#: The name Valkey gives a script's chunk, so that its errors say ``user_script:<line>:``.
CHUNK_NAME = b"@user_script"

#: Globals lupa's Lua has and Valkey's has not.
_REMOVED = (
    "debug getfenv setfenv io require dofile loadfile print module newproxy package python"
).split()

# Runs once per runtime with the real globals; hands back ``seal(f)``, which sets a compiled
# script's environment to the read-only view of the globals, and ``keys_argv(keys, argv)``, which
# sets KEYS and ARGV both in the globals (a script run the plain way reads them there) and in
# the view. lupa looks ``debug.traceback`` up in the globals on every call (an error there would
# end the process), so the real globals keep that one function, and no error on a missing name.
_FURNISH = """function(lib, hook, every, version, version_num)
  local G, setfenv, sethook, error, setmetatable = _G, setfenv, debug.sethook, error, setmetatable
  local traceback = debug.traceback
  local create, resume, rawget, tostring = coroutine.create, coroutine.resume, rawget, tostring
  local function readonly_error() error('Attempt to modify a readonly table', 2) end
  local behind, next = {}, next
  local function readonly(t)
    local view = setmetatable({}, {__index = t, __newindex = readonly_error, __metatable = false})
    behind[view] = t
    return view
  end
  local function lift(f)
    local function check(ok, ...) if ok then return ... end error((...), 0) end
    return function(...) return check(f(...)) end
  end
  local function lifted(fs) local t = {} for k, f in pairs(fs) do t[k] = lift(f) end return t end

  local co = {}
  for k, v in pairs(coroutine) do co[k] = v end
  co.create = function(f) local c = create(f) sethook(c, hook, '', every) return c end
  co.wrap = function(f)
    local c = co.create(f)
    local function finish(ok, ...)
      if ok then return ... end
      local e = ...
      if type(e) == 'string' then error(e, 2) end
      error(e, 0)
    end
    return function(...) return finish(resume(c, ...)) end
  end

  local r = redis
  r.sha1hex = lift(lib.sha1hex)
  r.REPL_NONE, r.REPL_AOF, r.REPL_SLAVE, r.REPL_REPLICA, r.REPL_ALL = 0, 1, 2, 2, 3
  r.set_repl = function(flags)
    if type(flags) ~= 'number' or flags < 0 or flags > 3 or flags % 1 ~= 0 then
      error('ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.', 0)
    end
  end
  r.replicate_commands = function() return true end
  r.breakpoint = function() return false end
  r.debug = function() end
  r.acl_check_cmd = lift(lib.acl_check_cmd)
  r.REDIS_VERSION, r.REDIS_VERSION_NUM = version, version_num
  r.SERVER_NAME, r.VALKEY_VERSION, r.VALKEY_VERSION_NUM = 'valkey', version, version_num

  local cj = {encode = lift(lib.cjson_encode), null = cjson.null, _NAME = 'cjson', _VERSION = '2.1.0'}
  local decode = cjson.decode
  cj.decode = function(text)
    local ok, v = pcall(decode, text)
    if ok then return v end
    error('Expected value but found invalid token', 0)
  end
  for _, name in ipairs({'encode_sparse_array', 'encode_max_depth', 'decode_max_depth',
      'encode_number_precision', 'encode_keep_buffer', 'encode_invalid_numbers',
      'decode_invalid_numbers'}) do cj[name] = function(...) return ... end end
  cj.new = function() return G.cjson end
  local mp = lifted(lib.cmsgpack)
  mp._NAME, mp._VERSION = 'cmsgpack', 'lua-cmsgpack 0.4.0'
  mp._COPYRIGHT, mp._DESCRIPTION = 'Copyright (C) 2012, Salvatore Sanfilippo', 'MessagePack C implementation for Lua'

  for _, name in ipairs(lib.removed) do G[name] = nil end
  G.debug = {traceback = traceback}  -- lupa reads it on every call; no script sees it
  G.os = {clock = os.clock}
  G.coroutine, G.bit, G.cjson, G.cmsgpack, G.struct = co, lifted(lib.bit), cj, mp, lifted(lib.struct)
  for _, name in ipairs({'string', 'table', 'math', 'os', 'coroutine', 'bit', 'cjson', 'cmsgpack', 'struct'}) do
    G[name] = readonly(G[name])
  end
  G.redis = readonly(r)
  G.server = G.redis
  G.pairs = function(t) return next, behind[t] or t, nil end  -- a library's view lists its own
  local shown = {}
  for name, value in pairs(G) do shown[name] = value end
  shown.debug = nil
  local view = setmetatable({}, {__index = shown, __newindex = readonly_error, __metatable = {}})
  shown._G = shown  -- rawget(_G, name) finds what Valkey's would
  setmetatable(shown, {
    __index = function(_, name)
      error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
    end,
    __newindex = readonly_error,
    __metatable = {},
  })
  setmetatable(G, {__newindex = readonly_error, __metatable = {}})
  local function keys_argv(keys, argv)
    rawset(G, 'KEYS', keys) rawset(G, 'ARGV', argv) rawset(shown, 'KEYS', keys) rawset(shown, 'ARGV', argv)
  end
  return function(f) setfenv(f, view) return f end, keys_argv
end"""


def _acl_check_cmd(server: Any) -> Any:
    """``redis.acl_check_cmd``: true for a command the server knows (its one user may run
    every command), an error for one it does not."""

    def check(name: Any, *args: Any) -> bool:
        socket = server._lua_current_socket[0]  # the connection running the script
        try:
            func, _ = socket._name_to_func(bytes(name).decode(errors="replace").lower())
        except Exception:
            func = None
        if func is None:
            raise LibraryError("ERR Invalid command passed to server.acl_check_cmd()")
        return True

    return check


def furnish(runtime: Any, server: Any, hook: Any) -> tuple[Any, Any]:
    """Make ``runtime``'s environment Valkey's (fakeredis has set it up); the ``seal`` function
    that puts a compiled script in the read-only view of the globals, and the one that sets
    ``KEYS`` and ``ARGV``."""
    lib = runtime.table_from(
        {
            b"sha1hex": lifted(sha1hex),
            b"cjson_encode": lifted(cjson_encode),
            b"acl_check_cmd": lifted(_acl_check_cmd(server)),
            b"bit": runtime.table_from(_lifted(BIT)),
            b"struct": runtime.table_from(_lifted(STRUCT)),
            b"cmsgpack": runtime.table_from(_lifted(cmsgpack(runtime))),
            b"removed": runtime.table_from([name.encode() for name in _REMOVED]),
        }
    )
    major, minor, patch = (*tuple(server.version), 0, 0)[:3]
    version = b"%d.%d.%d" % (major, minor, patch)
    seal, keys_argv = runtime.eval(_FURNISH, name=b"=furnish")(
        lib, hook, HOOK_EVERY, version, (major << 16) | (minor << 8) | patch
    )
    expected = server._lua_expected_globals  # the set fakeredis's checks hold (kept in place)
    expected.difference_update(name.encode() for name in _REMOVED if name != "debug")
    expected.update({b"bit", b"cmsgpack", b"struct", b"server"})
    runtime.globals_check = None
    server._lua_set_keys_argv = keys_argv
    return seal, keys_argv


def _lifted(functions: dict[str, Any]) -> dict[bytes, Any]:
    return {name.encode(): lifted(f) for name, f in functions.items()}
