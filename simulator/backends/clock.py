"""The one place where SimPy time becomes the server's time, and the fake server's hot path.

fakeredis reads the wall clock once per command (``time.time()`` in ``fakeredis._socket._base``)
and stores it on every database as ``db.time``; expiry, TTL and PTTL are all computed from it. To
make key expiry follow the simulation, that module's ``time`` is replaced by a shim whose
``time()`` asks the active :class:`VirtualClock`. Simulated time is in milliseconds; like a real
server (``mstime()``) the server sees whole milliseconds.

Redis's rule at the exact instant is kept exactly: a key is gone only once now is *past* its expiry
time; at exactly expire-at it still exists with PTTL 0. fakeredis compares float seconds, where
``t/1000 + px/1000`` and ``(t + px)/1000`` may differ in the last bit, so the two comparisons that
decide expiry are replaced by the same comparison in whole milliseconds.

The fake server runs every script call at Python speed, so its scripting gets these repairs here
(see :func:`plain_scripts` for fakeredis's own way, which the benchmark sets beside them):

* fakeredis compiles the script text again on every ``EVAL``/``EVALSHA``; here each script is
  compiled once per Lua runtime (a syntax error still comes out as fakeredis says it: "error
  loading code" and the line);
* after every call it runs a full ``collectgarbage()``; here Lua's own incremental collector keeps
  the heap bounded instead;
* before every ``redis.call`` and after every script it lists all Lua globals into a Python set to
  see that the script made none; here one Lua loop answers that, and only when one was made does
  fakeredis's own check run, for its message and its clean-up;
* every ``redis.call`` decodes the command's name and looks it up again; here the command each
  name stands for is kept on the connection once found;
* every ``EVAL``/``EVALSHA`` hashes the script text again and hands ``KEYS`` and ``ARGV`` to Lua
  in three calls; here the text's SHA1 is kept and the two tables are made in one call.

Every command the fake server runs for a limiter, a script's ``redis.call`` and the ``EVALSHA``
itself, goes through the same steps as fakeredis's ``_run_command`` (the arguments checked and
decoded, the keys read and their types checked, the command run, its reply shaped for the
protocol, its keys written back, keyspace and hash-field messages sent); what those steps work out
from the command's signature alone (which argument is a key, which a number, the command's
flags) is kept per command and number of arguments instead of being worked out on every call
(:class:`_Plan`), and the notifications are skipped where their own first test would end them
(nobody subscribed, no hash-field event). A wrong arity, a Dragonfly server or a wrapped
``_run_command`` (:func:`counted_commands`) go fakeredis's own way.

Nothing a script does can hang a run. Every runtime carries a Lua count hook (one call into Python
every :data:`_HOOK_EVERY` instructions, which costs next to nothing): it stops a script that has run
longer than its time budget (5 s of wall time per call by default, like a server's busy-script
limit), and it is the moment Python's pending signal handlers run, so Ctrl-C and SIGTERM end a
script stuck in a loop within a fraction of a second. Once it stops a script it fires on every
instruction, so a ``pcall`` in the script cannot swallow the stop. The Lua heap is capped as well
(256 MiB by default); a script that needs more is stopped. A stopped script is an error reply
for its call, and :func:`script_limit_hit` says which limit stopped it.

A script call need not travel through redis-py and the fake socket at all: :class:`DirectCalls`
hands ``EVALSHA``'s fields, as bytes, straight to fakeredis's own command execution (the same
function, the same checks, the same replies and errors), skipping redis-py's RESP packing, the
fake socket's parsing and the reply queue. That is about a third of a call's cost each way. The
server's own command a limiter may send in place of a script (``INCREX``) goes the same way
(:meth:`DirectCalls.command`), its reply read as redis-py's reply callback for it reads it.

This module is the only one that touches fakeredis internals, so the version is pinned
(``pyproject.toml``) and checked here.
"""

from __future__ import annotations

import contextlib
import heapq
import math
import time as _time
from collections.abc import Callable, Iterator
from typing import Any

import fakeredis
import redis
from fakeredis import _msgs
from fakeredis._commands import Key as _Key
from fakeredis._core import _database
from fakeredis._socket import _base, _resp
from fakeredis._socket._fakesocket import FakeSocket
from fakeredis.commands_mixins import scripting_mixin as _scripting
from fakeredis.model import Hash as _Hash

__all__ = [
    "VirtualClock",
    "FAKEREDIS_VERSION",
    "plain_scripts",
    "SCRIPT_TIME_S",
    "SCRIPT_MEMORY_MIB",
    "limit_scripts",
    "script_limit_hit",
    "interrupt_scripts",
    "resume_scripts",
    "DirectCalls",
    "counted_commands",
]

FAKEREDIS_VERSION = "2.41.0"
if fakeredis.__version__ != FAKEREDIS_VERSION:  # pragma: no cover - guards the pin
    raise ImportError(
        f"simulator.backends.clock patches fakeredis internals and needs fakeredis=={FAKEREDIS_VERSION}, "
        f"found {fakeredis.__version__}"
    )


class _TimeShim:
    """Stands in for the ``time`` module inside fakeredis: ``time()`` is the active clock's."""

    def __init__(self) -> None:
        self.source: Callable[[], float] | None = None

    def time(self) -> float:
        return self.source() if self.source is not None else _time.time()

    def __getattr__(self, name: str) -> Any:
        return getattr(_time, name)


_SHIM = _TimeShim()


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


def _expired(self: Any, item: Any) -> bool:
    expireat = item.expireat
    return expireat is not None and round(expireat * 1000) < round(self.time * 1000)  # as _ms


def _remove_expired(self: Any) -> None:
    heap = self._expiry_heap
    now_ms = _ms(self.time)
    while heap and _ms(heap[0][0]) < now_ms:
        _, key = heapq.heappop(heap)
        item = self._dict.get(key)
        if item is not None and self.expired(item):
            del self._dict[key]


# --- scripts ---------------------------------------------------------------------------------

#: What fakeredis runs after every script call (a full collection of the Lua heap).
_FULL_COLLECTION = ("collectgarbage()", b"collectgarbage()")
#: Compiled scripts kept per runtime (a run uses a handful; a program making scripts on the fly
#: starts again from empty past this).
_COMPILED_MAX = 256
_LUA = _scripting.LUA_MODULE
_PLAIN_CHECK = _scripting._check_for_lua_globals
_repaired = [True]  # False inside plain_scripts()

#: Wall time one script call may take on the fake server, by default (a server's busy limit).
SCRIPT_TIME_S = 5.0
#: The fake server's Lua heap, by default, in MiB.
SCRIPT_MEMORY_MIB = 256
#: Lua instructions between two looks at the clock and at pending signals: about a millisecond
#: of Lua, and too rare to show in the hot path's speed.
_HOOK_EVERY = 200_000
#: What the hook says when a signal handler raised (Ctrl-C, SIGTERM) while it looked.
_INTERRUPTED = b"interrupted"
_NEVER = math.inf
#: What a signal handler asked to raise in scripts that run long (see :func:`interrupt_scripts`).
_pending: list[BaseException] = []

# The hook: ``check`` (Python) answers None or why the script must stop; once stopped, the hook
# fires on every instruction and raises again, so the script cannot catch its way past it.
# ``state.stop`` is set and cleared from Python, which runs no Lua instruction; ``state.raised``
# keeps what a signal handler raised, to be raised again once the script is out of the way.
_HOOK_MAKER = """function(check, state)
  local sethook, pcall, error = debug.sethook, pcall, error
  local hook
  hook = function()
    local said = state.stop
    if not said then
      local ok, answer = pcall(check)
      if ok then said = answer else state.raised = answer; said = state.interrupted end
    end
    if said then state.stop = said; sethook(hook, '', 1); error(said, 0) end
  end
  return hook
end"""


class _ScriptRuntime(_LUA.LuaRuntime):  # type: ignore[misc, name-defined]
    """fakeredis's Lua runtime, keeping each script it is given compiled, and holding every
    script to a time budget and a heap cap."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("max_memory", 0)  # 0: counted, no cap yet (None could never have one)
        return super().__new__(cls, *args, **kwargs)

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # the arguments went to __cinit__
        self.compiled: dict[Any, Any] = {}
        self.globals_check: tuple[set[Any], Any] | None = None
        self.flat: Any = None
        self.keys_argv: Any = None
        self.time_s: float = SCRIPT_TIME_S
        self.memory_mib: float = SCRIPT_MEMORY_MIB
        self.deadline = _NEVER  # monotonic seconds; never outside a script call
        self.limit_hit: str | None = None
        self.set_max_memory(self.memory_mib * 2**20)
        self.hook_state = self.table()
        self.hook_state[b"interrupted"] = _INTERRUPTED
        self.hook = self.eval(_HOOK_MAKER)(self._check, self.hook_state)
        self.sethook = self.globals().debug.sethook
        self._arm()

    def _check(self) -> bytes | None:
        if _pending:
            raise _pending[0]
        if _time.monotonic() > self.deadline:
            return f"ran longer than {self.time_s:g} s".encode()
        return None

    def _arm(self) -> None:
        self.hook_state[b"stop"] = None
        self.sethook(self.hook, b"", _HOOK_EVERY)  # a C function: no Lua runs, no hook fires

    def limit(self, time_s: float, memory_mib: float) -> None:
        """Hold every script call to ``time_s`` of wall time and the heap to ``memory_mib``."""
        self.time_s, self.memory_mib = time_s, memory_mib
        self.set_max_memory(int(memory_mib * 2**20))

    def execute(self, lua_code: Any, *args: Any) -> Any:
        if lua_code not in _FULL_COLLECTION:  # fakeredis's clean-up after a script keeps its word
            self.limit_hit = None
        self.deadline = _time.monotonic() + self.time_s
        try:
            return self._execute(lua_code, *args)
        except _LUA.LuaMemoryError:
            self.limit_hit = f"used more than {self.memory_mib:g} MiB of Lua memory"
            self._collect()
            raise _LUA.LuaError(self.limit_hit.encode()) from None
        except _LUA.LuaError:
            stop = self.hook_state[b"stop"]
            if stop is None:
                raise
            raised, self.hook_state[b"raised"] = self.hook_state[b"raised"], None
            self._arm()
            if stop == _INTERRUPTED:  # a signal handler raised: it goes on as it was meant to
                if isinstance(raised, BaseException):
                    raise raised from None
                raise KeyboardInterrupt from None
            self.limit_hit = stop.decode()
            raise _LUA.LuaError(stop) from None
        finally:
            self.deadline = _NEVER

    def _collect(self) -> None:
        """A full collection after a script filled the heap (the collection needs room too)."""
        self.set_max_memory(0)
        try:
            super().execute(b"collectgarbage()")
        finally:
            self.set_max_memory(int(self.memory_mib * 2**20))

    def _execute(self, lua_code: Any, *args: Any) -> Any:
        if args or not _repaired[0]:
            return super().execute(lua_code, *args)
        run = self.compiled.get(lua_code)
        if run is None:
            if lua_code in _FULL_COLLECTION:
                return None
            try:
                run = self.compile(lua_code)
            except _LUA.LuaSyntaxError:  # its message as fakeredis gives it: run it as it does
                return super().execute(lua_code)
            if len(self.compiled) >= _COMPILED_MAX:
                self.compiled.clear()
            self.compiled[lua_code] = run
        return run()

    def set_keys_argv(self, numkeys: int, keys_and_args: tuple[bytes, ...]) -> None:
        """``KEYS`` the first ``numkeys`` of ``keys_and_args`` and ``ARGV`` the rest, two new
        tables as fakeredis makes them, set in one call into Lua."""
        if self.keys_argv is None:
            self.keys_argv = self.eval(
                "function(n, ...) local keys, argv = {...}, {} "
                "for i = n + 1, select('#', ...) do argv[i - n] = keys[i]; keys[i] = nil end "
                "KEYS = keys ARGV = argv end"
            )
        self.keys_argv(numkeys, *keys_and_args)

    def made_no_globals(self, expected: set[Any]) -> bool:
        """True when every global is one of ``expected`` (the runtime's own), asked in Lua."""
        check = self.globals_check
        if check is None or check[0] is not expected:
            make = self.eval(
                "function(g, known) return function() "
                "for name in pairs(g) do if known[name] == nil then return false end end "
                "return true end end"
            )
            known = self.table_from({name: True for name in expected})
            check = self.globals_check = (expected, make(self.globals(), known))
        return bool(check[1]())

    def flat_reply(self, result: Any) -> list[Any] | None:
        """A script's reply that is a plain array of numbers and strings, as fakeredis would give
        it (numbers truncated to integers), read in one call; None for any other reply."""
        if self.flat is None:
            self.flat = self.eval(
                "function(t) if type(t) ~= 'table' or t.ok ~= nil or t.err ~= nil "
                "or t.double ~= nil or t.map ~= nil then return false end "
                "local n = 0 while true do local v = t[n + 1] if v == nil then break end "
                "local kind = type(v) if n == 64 or (kind ~= 'number' and kind ~= 'string') "
                "then return false end n = n + 1 end return true, unpack(t, 1, n) end"
            )
        got = self.flat(result)
        if got is True:
            return []
        if type(got) is not tuple:
            return None
        return [int(v) if type(v) is float else v for v in got[1:]]


def interrupt_scripts(exc: BaseException) -> None:
    """From a signal handler that lets the calls in flight finish before it stops a run: have
    ``exc`` raised in any script on a fake server that is running now or starts later and runs
    long (a millisecond of Lua), even one that catches errors; calls that end sooner are left
    to end. Until :func:`resume_scripts`."""
    _pending[:] = [exc]


def resume_scripts() -> None:
    """Scripts run on undisturbed again (the handler that asked is gone)."""
    _pending.clear()


def _runtime(server: Any) -> _ScriptRuntime:
    """The fake server's Lua runtime, made now if no script has run yet."""
    if not hasattr(server, "_lua_runtime"):
        fakeredis.FakeRedis(server=server).eval("return 1", 0)
    runtime = server._lua_runtime
    assert isinstance(runtime, _ScriptRuntime), "runtimes are made by _LuaModule"
    return runtime


def limit_scripts(server: Any, time_s: float, memory_mib: float) -> None:
    """Hold every script on fakeredis ``server`` to ``time_s`` seconds of wall time per call
    and its Lua heap to ``memory_mib``."""
    _runtime(server).limit(time_s, memory_mib)


def script_limit_hit(server: Any) -> str | None:
    """What stopped the last script call on ``server`` ("ran longer than 5 s", "used more than
    256 MiB of Lua memory"), or None when no limit did."""
    runtime = getattr(server, "_lua_runtime", None)
    return runtime.limit_hit if isinstance(runtime, _ScriptRuntime) else None


def _check_for_lua_globals(lua_runtime: Any, expected_globals: set[Any]) -> None:
    if not (
        _repaired[0]
        and isinstance(lua_runtime, _ScriptRuntime)
        and lua_runtime.made_no_globals(expected_globals)
    ):
        _PLAIN_CHECK(lua_runtime, expected_globals)  # the message, and the globals removed


# --- one command ------------------------------------------------------------------------------

_PLAIN_RUN = _base.BaseFakeSocket._run_command
#: Replies that need no shaping for RESP2 or Lua and pass every reply check (exact types: not bool).
_PLAIN_REPLIES = frozenset((bytes, int, type(None)))
_LUA_LEAVES = frozenset((bytes, int))


class _Plan:
    """What fakeredis's ``Signature.apply`` works out again on every call of one command with
    one number of arguments: which arguments are decoded, which are keys (and whether a missing
    one answers at once, and what an absent key starts as), and the command's flags."""

    __slots__ = ("first", "keys", "no_script", "pubsub_ok", "convert", "remove_empty", "event")

    def __init__(self, sig: Any, n_args: int) -> None:
        types = list(sig.fixed)
        types += [sig.repeat[i % len(sig.repeat)] for i in range(n_args - len(types))]
        create = _msgs.FLAG_DO_NOT_CREATE not in sig.flags
        #: (position, type, is a key with an answer when missing), in argument order
        self.first: tuple[tuple[int, Any, bool], ...] = tuple(
            (i, t, isinstance(t, _Key))
            for i, t in enumerate(types)
            if (isinstance(t, _Key) and t.missing_return is not _Key.UNSPECIFIED)
            or (not isinstance(t, _Key) and t is not bytes)
        )
        #: (position, the value type a key must hold or None, whether an absent key starts empty)
        self.keys: tuple[tuple[int, Any, bool], ...] = tuple(
            (i, t.type_, create and t.type_ is not None and t.type_ is not bytes)
            for i, t in enumerate(types)
            if isinstance(t, _Key)
        )
        self.no_script = _msgs.FLAG_NO_SCRIPT in sig.flags
        self.pubsub_ok = sig.name in _base.BaseFakeSocket.ACCEPTED_COMMANDS_WHILE_PUBSUB
        self.convert = _msgs.FLAG_SKIP_CONVERT_TO_RESP2 not in sig.flags
        self.remove_empty = _msgs.FLAG_LEAVE_EMPTY_VAL not in sig.flags
        self.event = sig.name.encode()

    def apply(self, args: list[Any], db: Any) -> tuple[Any, ...]:
        """``Signature.apply`` on ``args`` (changed in place), its arity already known good."""
        for i, type_, is_key in self.first:
            if is_key:
                if args[i] not in db:
                    return (type_.missing_return,)
            else:
                args[i] = type_.decode(args[i])
        items = []
        for i, value_type, starts_empty in self.keys:
            key = args[i]
            item = _stored(db, key)
            if value_type is not None and item is not None and type(item.value) is not value_type:
                raise _scripting.SimpleError(_msgs.WRONGTYPE_MSG)
            default = value_type() if starts_empty and item is None else None
            args[i] = command_item = _database.CommandItem(key, db, item, default=default)
            items.append(command_item)
        return args, items


_PLANS: dict[tuple[Any, int], _Plan | None] = {}


def _stored(db: Any, key: bytes) -> Any:
    """``db.get(key)``: the key's item, None when absent or expired (an expired one removed,
    as ``Database.__getitem__`` removes it), without a KeyError raised and caught for a key
    that is not there."""
    if type(db) is not _database.Database:
        return db.get(key)
    item = db._dict.get(key)
    if item is not None and db.expired(item):
        del db._dict[key]
        return None
    return item


def _plan(sig: Any, n_args: int) -> _Plan | None:
    """The plan of ``sig`` for ``n_args`` arguments; None where the arity is wrong."""
    key = (sig, n_args)
    try:
        return _PLANS[key]
    except KeyError:
        pass
    try:
        sig.check_arity([None] * n_args, (7,))  # whether it fails, not its message
        plan: _Plan | None = _Plan(sig, n_args)
    except _scripting.SimpleError:
        plan = None
    if len(_PLANS) >= _COMPILED_MAX * 4:
        _PLANS.clear()
    _PLANS[key] = plan
    return plan


def _run(socket: Any, func: Any, sig: Any, args: list[Any], from_script: bool) -> Any:
    """fakeredis's ``_run_command`` (one command, its keys written back, notifications sent)
    with what it works out per call kept per command (:class:`_Plan`). A wrong arity, Dragonfly
    or a ``_run_command`` someone has wrapped (:func:`counted_commands`) goes fakeredis's way."""
    plan = _plan(sig, len(args))
    if (
        plan is None
        or type(socket)._run_command is not _PLAIN_RUN
        or socket._server.server_type == "dragonfly"
    ):
        return socket._run_command(func, sig, args, from_script)
    socket._subkey_events = []
    items: list[Any] = []
    try:
        ret = plan.apply(args, socket._db)
        if from_script and plan.no_script:
            raise _scripting.SimpleError(_msgs.COMMAND_IN_SCRIPT_MSG)
        if socket._pubsub and not plan.pubsub_ok:
            raise _scripting.SimpleError(_msgs.BAD_COMMAND_IN_PUBSUB_MSG)
        if len(ret) == 1:
            result = ret[0]
        else:
            args, items = ret
            result = func(*args)
            if type(result) not in _PLAIN_REPLIES and plan.convert and not _plain_list(result):
                result = _shaped(socket, result)
    except _scripting.SimpleError as exc:
        result = exc
    _written(socket, plan, items)
    return result


def _plain_list(result: Any) -> bool:
    """True for a list of numbers, strings and nils: shaping and checking leave it as it is, and
    so does redis-py's reading of a reply."""
    if type(result) is not list:
        return False
    for item in result:
        if type(item) not in _PLAIN_REPLIES:
            return False
    return True


def _shaped(socket: Any, result: Any) -> Any:
    """A reply shaped for the protocol in use and checked, as ``_run_command`` does."""
    resp_version = socket._resp_version
    if resp_version == 2:
        result = _resp.convert_to_resp2(result, socket.server_type, keep_doubles=False)
    if not _resp.valid_response_type(result, resp_version):
        raise AssertionError(f"Invalid response type for {result}")
    return result


def _written(socket: Any, plan: _Plan, items: list[Any]) -> None:
    """The command's keys written back and its notifications sent; where nobody listens and
    no hash field expired, the notifications' own early way out, taken before the call."""
    remove_empty = plan.remove_empty
    for item in items:
        item.writeback(remove_empty_val=remove_empty)
    server = socket._server
    if server.subscribers or server.psubscribers:
        socket._keyspace_notifications(items, plan.event)
    if socket._subkey_events:
        socket._subkey_notifications(items)
        return
    for item in items:
        if isinstance(item.value, _Hash):  # a field may have expired: fakeredis says so
            socket._subkey_notifications(items)
            return
    socket._subkey_events = []


_PLAIN_CONVERT = _scripting.ScriptingCommandsMixin._convert_lua_result
_PLAIN_REDIS_CALL = _scripting.ScriptingCommandsMixin._lua_redis_call
_convert_redis_arg = _scripting._convert_redis_arg


def _lua_redis_call(
    self: Any, lua_runtime: Any, expected_globals: set[Any], op: Any, *args: Any
) -> Any:
    """``redis.call``: the command function each command name stands for is looked up once per
    connection, not again on every call. A name that is not a plain command (unknown, a
    container with a subcommand, not a string) goes fakeredis's own way, for its message."""
    commands = self.__dict__.get("_sim_commands")
    entry = None if commands is None or not _repaired[0] else commands.get(op)
    if entry is None:
        entry = _command_for(self, op) if _repaired[0] else None
        if entry is None:
            return _PLAIN_REDIS_CALL(self, lua_runtime, expected_globals, op, *args)
    if not (
        isinstance(lua_runtime, _ScriptRuntime) and lua_runtime.made_no_globals(expected_globals)
    ):
        _PLAIN_CHECK(lua_runtime, expected_globals)  # the message, and the globals removed
    func, sig = entry
    new_args = [a if type(a) is bytes else _convert_redis_arg(a) for a in args]
    result = _run(self, func, sig, new_args, True)
    if type(result) in _LUA_LEAVES:  # a number or a string reaches Lua as it is
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
    if _repaired[0] and not nested and self.server_type != "dragonfly":
        kind = type(result)
        if kind is float:
            return int(result)
        if kind in _PLAIN_REPLIES:
            return result
        runtime = getattr(self._server, "_lua_runtime", None)
        if isinstance(runtime, _ScriptRuntime):
            flat = runtime.flat_reply(result)
            if flat is not None:
                return flat
    return _PLAIN_CONVERT(self, result, nested)


_PLAIN_EVAL = _scripting.ScriptingCommandsMixin.eval
#: Keys and arguments handed to Lua in one call, at most (each takes a slot of Lua's C stack).
_KEYS_ARGV_MAX = 200
#: Each script text's SHA1 as ``EVAL`` files it (the text of an ``EVALSHA`` is the same object
#: every call, so the lookup hashes nothing).
_SHAS: dict[bytes, bytes] = {}


def _eval(self: Any, script: bytes, numkeys: int, *keys_and_args: bytes) -> Any:
    """``EVAL`` (and ``EVALSHA``, which calls it) as fakeredis runs it, step for step, with its
    per-call work made cheaper: the script's SHA1 kept, ``KEYS`` and ``ARGV`` set in one call
    into Lua, and no full collection after it (the runtime skips it anyway)."""
    if not _repaired[0] or self.server_type == "dragonfly":
        return _PLAIN_EVAL(self, script, numkeys, *keys_and_args)
    if numkeys > len(keys_and_args):
        raise _scripting.SimpleError(_msgs.TOO_MANY_KEYS_MSG)
    if numkeys < 0:
        raise _scripting.SimpleError(_msgs.NEGATIVE_KEYS_MSG)
    sha1 = _SHAS.get(script)
    if sha1 is None:
        sha1 = _scripting.hashlib.sha1(script).hexdigest().encode()
        if len(_SHAS) >= _COMPILED_MAX:
            _SHAS.clear()
        _SHAS[script] = sha1
    server = self._server
    server.script_cache[sha1] = script
    lua_runtime = self._get_server_runtime(server)
    expected_globals = server._lua_expected_globals
    server._lua_current_socket[0] = self
    self._script_resp = 2  # every script starts at RESP2 whatever its caller speaks
    caller_fieldsets, self._fieldsets = self._fieldsets, {}
    if isinstance(lua_runtime, _ScriptRuntime) and len(keys_and_args) <= _KEYS_ARGV_MAX:
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
    except _LUA.LuaError as ex:
        raise _scripting.SimpleError(_msgs.SCRIPT_ERROR_MSG.format(sha1.decode(), ex))  # noqa: B904
    finally:
        self._script_resp = None
        self._fieldsets = caller_fieldsets
    _scripting._check_for_lua_globals(lua_runtime, expected_globals)
    return self._convert_lua_result(result, nested=False)


class _LuaModule:
    """Stands in for fakeredis's Lua module: the same, but runtimes are :class:`_ScriptRuntime`."""

    LuaRuntime = _ScriptRuntime

    def __getattr__(self, name: str) -> Any:
        return getattr(_LUA, name)


@contextlib.contextmanager
def plain_scripts() -> Iterator[None]:
    """Run scripts as fakeredis itself does (compiled on every call, a full collection after
    each, globals listed in Python): what the benchmark sets beside the repaired hot path."""
    was = _repaired[0]
    _repaired[0] = False
    try:
        yield
    finally:
        _repaired[0] = was


class _Count:
    """How many commands the fake server ran (``redis.call`` inside a script included)."""

    commands = 0


@contextlib.contextmanager
def counted_commands() -> Iterator[_Count]:
    """Count every command the fake server runs inside the block, those a script calls with
    ``redis.call`` as well as the script call itself (``count.commands``)."""
    count, plain = _Count(), _base.BaseFakeSocket._run_command

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        count.commands += 1
        return plain(self, *args, **kwargs)

    _base.BaseFakeSocket._run_command = run  # type: ignore[method-assign]
    try:
        yield count
    finally:
        _base.BaseFakeSocket._run_command = plain  # type: ignore[method-assign]


def _install() -> None:
    if _base.time is not _SHIM:
        _base.time = _SHIM  # type: ignore[assignment]
        _database.Database.expired = _expired  # type: ignore[method-assign]
        _database.Database._remove_expired = _remove_expired  # type: ignore[method-assign]
        _scripting.LUA_MODULE = _LuaModule()  # type: ignore[assignment]
        _scripting._check_for_lua_globals = _check_for_lua_globals
        _scripting.ScriptingCommandsMixin._convert_lua_result = _convert_lua_result  # type: ignore[method-assign]
        _scripting.ScriptingCommandsMixin._lua_redis_call = _lua_redis_call  # type: ignore[method-assign]
        _scripting.ScriptingCommandsMixin.eval = _eval  # type: ignore[method-assign]


class DirectCalls:
    """``EVALSHA`` on a fakeredis server without redis-py or a socket in between.

    The fields go to the same command function (``evalsha``, its argument checks and arity),
    under the server's lock and with the server's time set on every database first, as the fake
    socket does for a command it parsed; the reply comes back as redis-py would hand it (bytes,
    integers, lists; a server error raised as redis-py's exception for it, ``NoScriptError``
    included). Arguments are encoded as redis-py encodes them: ``str`` as UTF-8, numbers by their
    ``repr``, bytes as they are. The ACL check a parsed command passes is left out: the program's
    fake server has one user, allowed everything.
    """

    def __init__(self, server: Any, callbacks: Any = None) -> None:
        self.server = server
        #: How the redis-py client beside it reads each command's reply (``execute_command``'s)
        self.callbacks = (
            fakeredis.FakeRedis(server=server).response_callbacks
            if callbacks is None
            else callbacks
        )
        self.socket = FakeSocket(server, db=0, client_class=redis.Redis)
        self._evalsha = self.socket._name_to_func("evalsha")
        self._encode = redis.connection.Encoder("utf-8", "strict", False).encode
        self._commands: dict[str, tuple[Any, Any, Any]] = {}

    def fields(self, sha: str, keys: Any, args: Any) -> list[bytes]:
        """The fields of ``EVALSHA sha len(keys) *keys *args`` as redis-py would send them."""
        return self.encoded([sha.encode(), b"%d" % len(keys)], (*keys, *args))

    def encoded(self, out: list[bytes], values: Any) -> list[bytes]:
        """``out`` and then ``values`` as redis-py would send them."""
        encode = self._encode
        for value in values:
            kind = type(value)
            if kind is str:
                out.append(value.encode())
            elif kind is int:
                out.append(b"%d" % value)
            else:
                out.append(encode(value))
        return out

    def evalsha(self, fields: list[bytes]) -> Any:
        """Run ``EVALSHA`` with ``fields`` (sha, numkeys, keys, args) and return its reply."""
        func, sig = self._evalsha
        return self._execute(func, sig, fields)

    def _execute(self, func: Any, sig: Any, fields: list[bytes]) -> Any:
        """One command on the server, as the fake socket runs one it parsed: the server's time
        set on every database, under the server's lock; its reply as redis-py reads it (an
        error raised as redis-py's exception for it)."""
        server, socket = self.server, self.socket
        now = _SHIM.time()
        for db in server.dbs.values():
            db.time = now
        with server.lock:
            result = _run(socket, func, sig, fields, False)
        if type(result) in _PLAIN_REPLIES or _plain_list(result):
            return result
        result = socket._decode_result(result)
        if isinstance(result, Exception):
            raise result
        return result

    def runs(self, name: str) -> bool:
        """True when ``name`` is a plain command of this server, which :meth:`command` runs (not
        one with a subcommand, not one the server does not know: redis-py says what those do)."""
        if name in self._commands:
            return True
        cmd = _scripting.decode_command_bytes(name.encode())
        if " " in name or cmd in _scripting.COMMANDS_WITH_SUB:
            return False
        try:
            func, sig = self.socket._name_to_func(cmd)
        except _scripting.SimpleError:
            return False
        if func is None:
            return False
        self._commands[name] = (func, sig, self.callbacks.get(name))
        return True

    def command(self, name: str, fields: list[bytes]) -> Any:
        """Run the server's own command ``name`` (one :meth:`runs`) with ``fields``, its keys and
        arguments as :meth:`encoded` makes them, and return its reply as redis-py's
        ``execute_command`` would (its reply callback applied; an error raised as redis-py's)."""
        func, sig, callback = self._commands[name]
        result = self._execute(func, sig, fields)
        return result if callback is None else callback(result)

    def close(self) -> None:
        if self.socket.responses is not None:
            self.socket.close()


class VirtualClock:
    """Server time for fakeredis, read from a function giving simulated milliseconds.

    ``VirtualClock(lambda: env.now)`` makes the fake server's clock follow a SimPy environment
    whose time unit is the millisecond. Call :meth:`activate` before commands are sent (the
    fakeredis backend does it on every call), so several clocks can coexist in one process.
    """

    def __init__(self, now_ms: Callable[[], float] | None = None) -> None:
        _install()
        self._now_ms: Callable[[], float] = now_ms or (lambda: 0.0)
        self._seconds = self.seconds  # one bound method, so activate() allocates nothing

    def follow(self, now_ms: Callable[[], float]) -> None:
        """Read simulated time from ``now_ms`` from now on (e.g. a new SimPy environment)."""
        self._now_ms = now_ms

    def now_ms(self) -> int:
        """Current time in whole milliseconds, as the server sees it."""
        return math.floor(self._now_ms())

    def seconds(self) -> float:
        return self.now_ms() / 1000.0

    def activate(self) -> None:
        _SHIM.source = self._seconds
