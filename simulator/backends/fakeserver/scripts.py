"""A script call on the fake server: fakeredis's ``EVAL`` and ``redis.call``, with less work per call.

The fake server runs every script call at Python speed, so its scripting gets these repairs (see
:func:`~simulator.backends.fakeserver.stock.plain_scripts` for fakeredis's own way, which the
benchmark sets beside them), beside those of the runtime
(:mod:`~simulator.backends.fakeserver.runtime`):

* every ``redis.call`` decodes the command's name and looks it up again; here the command each
  name stands for is kept on the connection once found, and run as
  :func:`~simulator.backends.fakeserver.commands.run` runs one;
* every ``EVAL``/``EVALSHA`` hashes the script text again and hands ``KEYS`` and ``ARGV`` to Lua
  in three calls; here the text's SHA1 is kept and the two tables are made in one call;
* the whole reply is read in one call into Lua where it is a plain array.

:func:`install_scripts` puts these in fakeredis's place.
"""

from __future__ import annotations

from typing import Any

from fakeredis import _msgs
from fakeredis.commands_mixins import scripting_mixin as _scripting

from simulator.backends.fakeserver.commands import LUA_LEAVES, PLAIN_REPLIES, run
from simulator.backends.fakeserver.runtime import LuaModule, ScriptRuntime
from simulator.backends.fakeserver.stock import (
    COMPILED_MAX,
    LUA,
    PLAIN_CHECK,
    PLAIN_CONVERT,
    PLAIN_EVAL,
    PLAIN_GET_RUNTIME,
    PLAIN_REDIS_CALL,
    REPAIRED,
)

__all__ = ["install_scripts"]


def _check_for_lua_globals(lua_runtime: Any, expected_globals: set[Any]) -> None:
    if not (
        REPAIRED[0]
        and isinstance(lua_runtime, ScriptRuntime)
        and lua_runtime.made_no_globals(expected_globals)
    ):
        PLAIN_CHECK(lua_runtime, expected_globals)  # the message, and the globals removed


_convert_redis_arg = _scripting._convert_redis_arg


def _lua_redis_call(
    self: Any, lua_runtime: Any, expected_globals: set[Any], op: Any, *args: Any
) -> Any:
    """``redis.call``: the command function each command name stands for is looked up once per
    connection, not again on every call. A name that is not a plain command (unknown, a
    container with a subcommand, not a string) goes fakeredis's own way, for its message."""
    commands = self.__dict__.get("_sim_commands")
    entry = None if commands is None or not REPAIRED[0] else commands.get(op)
    if entry is None:
        entry = _command_for(self, op) if REPAIRED[0] else None
        if entry is None:
            return PLAIN_REDIS_CALL(self, lua_runtime, expected_globals, op, *args)
    if not (
        isinstance(lua_runtime, ScriptRuntime) and lua_runtime.made_no_globals(expected_globals)
    ):
        PLAIN_CHECK(lua_runtime, expected_globals)  # the message, and the globals removed
    func, sig = entry
    new_args = [a if type(a) is bytes else _convert_redis_arg(a) for a in args]
    result = run(self, func, sig, new_args, True)
    if type(result) in LUA_LEAVES:  # a number or a string reaches Lua as it is
        return result
    return self._convert_redis_result(lua_runtime, result)


def _command_for(socket: Any, op: Any) -> tuple[Any, Any] | None:
    """The command function and signature of ``redis.call``'s name ``op``, kept on the
    connection; None where fakeredis's own path must speak (it raises, or needs a subcommand)."""
    if type(op) is not bytes:
        return None
    cmd = _scripting.decode_command_bytes(op)
    if cmd in _scripting.COMMANDS_WITH_SUB:
        return None
    try:
        func, sig = socket._name_to_func(cmd)
    except _scripting.SimpleError:
        return None
    if func is None:
        return None
    socket.__dict__.setdefault("_sim_commands", {})[op] = (func, sig)
    return func, sig


def _convert_lua_result(self: Any, result: Any, nested: bool = True) -> Any:
    """A script's whole reply (``nested`` False) read in one call where it is a plain array;
    a number (truncated, as Redis does), a string or nil as it is, without asking Lua."""
    if REPAIRED[0] and not nested and self.server_type != "dragonfly":
        kind = type(result)
        if kind is float:
            return int(result)
        if kind in PLAIN_REPLIES:
            return result
        runtime = getattr(self._server, "_lua_runtime", None)
        if isinstance(runtime, ScriptRuntime):
            flat = runtime.flat_reply(result)
            if flat is not None:
                return flat
            return runtime.uncapped_call(PLAIN_CONVERT, self, result, nested)
    return PLAIN_CONVERT(self, result, nested)


#: Keys and arguments handed to Lua in one call, at most (each takes a slot of Lua's C stack).
_KEYS_ARGV_MAX = 200
#: Each script text's SHA1 as ``EVAL`` files it (the text of an ``EVALSHA`` is the same object
#: every call, so the lookup hashes nothing).
_SHAS: dict[bytes, bytes] = {}


def _eval(self: Any, script: bytes, numkeys: int, *keys_and_args: bytes) -> Any:
    """``EVAL`` (and ``EVALSHA``, which calls it) as fakeredis runs it, step for step, with its
    per-call work made cheaper: the script's SHA1 kept, ``KEYS`` and ``ARGV`` set in one call
    into Lua, and no full collection after it (the runtime skips it anyway)."""
    if not REPAIRED[0] or self.server_type == "dragonfly":
        return PLAIN_EVAL(self, script, numkeys, *keys_and_args)
    if numkeys > len(keys_and_args):
        raise _scripting.SimpleError(_msgs.TOO_MANY_KEYS_MSG)
    if numkeys < 0:
        raise _scripting.SimpleError(_msgs.NEGATIVE_KEYS_MSG)
    sha1 = _SHAS.get(script)
    if sha1 is None:
        sha1 = _scripting.hashlib.sha1(script).hexdigest().encode()
        if len(_SHAS) >= COMPILED_MAX:
            _SHAS.clear()
        _SHAS[script] = sha1
    server = self._server
    server.script_cache[sha1] = script
    lua_runtime = self._get_server_runtime(server)
    expected_globals = server._lua_expected_globals
    server._lua_current_socket[0] = self
    self._script_resp = 2  # every script starts at RESP2 whatever its caller speaks
    caller_fieldsets, self._fieldsets = self._fieldsets, {}
    if isinstance(lua_runtime, ScriptRuntime) and len(keys_and_args) <= _KEYS_ARGV_MAX:
        lua_runtime.set_keys_argv(numkeys, keys_and_args)
    else:
        server._lua_set_keys_argv(
            lua_runtime.table_from(keys_and_args[:numkeys]),
            lua_runtime.table_from(keys_and_args[numkeys:]),
        )
    try:
        result = lua_runtime.execute(script)
    except _scripting.SimpleError as ex:
        error_msg = ex.value
        if error_msg == _msgs.LUA_COMMAND_ARG_MSG:
            error_msg = _scripting._get_lua_bad_command_arg_msg(server.server_type, self.version)
        elif self.version < (7,):
            error_msg = _msgs.SCRIPT_ERROR_MSG.format(sha1.decode(), error_msg)
        raise _scripting.SimpleError(error_msg)  # noqa: B904 - as fakeredis raises it
    except LUA.LuaError as ex:
        raise _scripting.SimpleError(_msgs.SCRIPT_ERROR_MSG.format(sha1.decode(), ex))  # noqa: B904
    finally:
        self._script_resp = None
        self._fieldsets = caller_fieldsets
    _scripting._check_for_lua_globals(lua_runtime, expected_globals)
    return self._convert_lua_result(result, nested=False)


def _get_server_runtime(self: Any, server: Any) -> Any:
    """The server's Lua runtime, its environment made Valkey's the moment fakeredis made it."""
    runtime = server.__dict__.get("_lua_runtime")
    if runtime is None:
        runtime = PLAIN_GET_RUNTIME(self, server)
        if isinstance(runtime, ScriptRuntime):
            runtime.furnish(server)
    return runtime


def install_scripts() -> None:
    """fakeredis's Lua module, its globals check, ``redis.call``, its reading of a script's
    reply and ``EVAL`` replaced by the fake server's."""
    _scripting.LUA_MODULE = LuaModule()  # type: ignore[assignment]
    _scripting._check_for_lua_globals = _check_for_lua_globals
    mixin = _scripting.ScriptingCommandsMixin
    mixin._convert_lua_result = _convert_lua_result  # type: ignore[method-assign]
    mixin._lua_redis_call = _lua_redis_call  # type: ignore[method-assign]
    mixin.eval = _eval  # type: ignore[method-assign]
    mixin._get_server_runtime = _get_server_runtime  # type: ignore[method-assign]
