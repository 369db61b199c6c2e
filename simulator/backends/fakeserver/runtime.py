"""The fake server's Lua runtime: each script compiled once, held to its budget and heap cap.

fakeredis compiles the script text again on every ``EVAL``/``EVALSHA``; :class:`ScriptRuntime`
compiles each script once (a syntax error still comes out as fakeredis says it: "error loading
code" and the line). After every call fakeredis runs a full ``collectgarbage()``; here Lua's own
incremental collector keeps the heap bounded instead. Before every ``redis.call`` and after every
script fakeredis lists all Lua globals into a Python set to see that the script made none; here
one Lua loop answers that (:meth:`ScriptRuntime.made_no_globals`), and only when one was made
does fakeredis's own check run, for its message and its clean-up. ``KEYS`` and ``ARGV`` are made
in one call into Lua, and a plain array reply is read in one call back.

Every call is held to the limits of :mod:`~simulator.backends.fakeserver.budget`.
"""

from __future__ import annotations

import time as _time
from typing import Any

import fakeredis

from simulator.backends.fakeserver.budget import (
    CALLS,
    HOOK_EVERY,
    HOOK_MAKER,
    INTERRUPTED,
    NEVER,
    PENDING,
    SCRIPT_MEMORY_MIB,
    SCRIPT_TIME_S,
)
from simulator.backends.fakeserver.environment import CHUNK_NAME, furnish
from simulator.backends.fakeserver.stock import COMPILED_MAX, LUA, REPAIRED

__all__ = ["ScriptRuntime", "LuaModule", "limit_scripts", "script_limit_hit", "FULL_COLLECTION"]

#: What fakeredis runs after every script call (a full collection of the Lua heap).
FULL_COLLECTION = ("collectgarbage()", b"collectgarbage()")


class ScriptRuntime(LUA.LuaRuntime):  # type: ignore[misc, name-defined]
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
        self.deadline = NEVER  # monotonic seconds; never outside a script call
        self.limit_hit: str | None = None
        self.set_max_memory(self.memory_mib * 2**20)
        self.hook_state = self.table()
        self.hook_state[b"interrupted"] = INTERRUPTED
        self.hook = self.eval(HOOK_MAKER)(self._check, self.hook_state)
        self.sethook = self.globals().debug.sethook
        # kept before the environment drops ``debug``: a traced call (:mod:`~.tracing`) asks it
        # which chunk a line belongs to; nothing on the ordinary path calls it
        self.getinfo = self.globals().debug.getinfo
        self.seal: Any = None
        self.store_keys_argv: Any = None
        self._arm()

    def furnish(self, server: Any) -> None:
        """The environment made Valkey's, once fakeredis has set it up (:func:`furnish`)."""
        self.seal, self.store_keys_argv = furnish(self, server, self.hook)
        self.keys_argv = None

    def _check(self) -> bytes | None:
        if PENDING:
            raise PENDING[0]
        if _time.monotonic() > self.deadline:
            return f"ran longer than {self.time_s:g} s".encode()
        return None

    def _arm(self) -> None:
        self.hook_state[b"stop"] = None
        self.sethook(self.hook, b"", HOOK_EVERY)  # a C function: no Lua runs, no hook fires

    def limit(self, time_s: float, memory_mib: float) -> None:
        """Hold every script call to ``time_s`` of wall time and the heap to ``memory_mib``."""
        self.time_s, self.memory_mib = time_s, memory_mib
        self.set_max_memory(int(memory_mib * 2**20))

    def execute(self, lua_code: Any, *args: Any) -> Any:
        if lua_code not in FULL_COLLECTION:  # fakeredis's clean-up after a script keeps its word
            self.limit_hit = None
        self.deadline = _time.monotonic() + self.time_s
        CALLS[0] += 1
        try:
            return self._execute(lua_code, *args)
        except LUA.LuaMemoryError:
            self.limit_hit = f"used more than {self.memory_mib:g} MiB of Lua memory"
            self._collect()
            raise LUA.LuaError(self.limit_hit.encode()) from None
        except LUA.LuaError:
            stop = self.hook_state[b"stop"]
            if stop is None:
                raise
            raised, self.hook_state[b"raised"] = self.hook_state[b"raised"], None
            self._arm()
            if stop == INTERRUPTED:  # a signal handler raised: it goes on as it was meant to
                if isinstance(raised, BaseException):
                    raise raised from None
                raise KeyboardInterrupt from None
            self.limit_hit = stop.decode()
            raise LUA.LuaError(stop) from None
        finally:
            CALLS[0] += 1
            self.deadline = NEVER

    def _collect(self) -> None:
        """A full collection after a script filled the heap (the collection needs room too)."""
        self.set_max_memory(0)
        try:
            super().execute(b"collectgarbage()")
        finally:
            self.set_max_memory(int(self.memory_mib * 2**20))

    def _execute(self, lua_code: Any, *args: Any) -> Any:
        if args or not REPAIRED[0]:
            return super().execute(lua_code, *args, name=CHUNK_NAME)
        run = self.compiled.get(lua_code)
        if run is None:
            if lua_code in FULL_COLLECTION:
                return None
            try:
                run = self.compile(lua_code, name=CHUNK_NAME)
            except LUA.LuaSyntaxError:  # its message as fakeredis gives it: run it as it does
                return super().execute(lua_code, name=CHUNK_NAME)
            if self.seal is not None:
                run = self.seal(run)
            if len(self.compiled) >= COMPILED_MAX:
                self.compiled.clear()
            self.compiled[lua_code] = run
        return run()

    def set_keys_argv(self, numkeys: int, keys_and_args: tuple[bytes, ...]) -> None:
        """``KEYS`` the first ``numkeys`` of ``keys_and_args`` and ``ARGV`` the rest, two new
        tables as fakeredis makes them, set in one call into Lua."""
        if self.keys_argv is None:
            self.keys_argv = self.eval(
                "function(store) return function(n, ...) local keys, argv = {...}, {} "
                "for i = n + 1, select('#', ...) do argv[i - n] = keys[i]; keys[i] = nil end "
                "if store then store(keys, argv) else KEYS = keys ARGV = argv end end end"
            )(self.store_keys_argv)
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
        it (numbers truncated to integers), read :data:`_FLAT_BATCH` elements a call; None for
        any other reply. Reading a long array element by element from Python would fill the
        Lua heap outside Lua's protection (a 7,000,000-element reply ended the process)."""
        if self.flat is None:
            self.flat = self.eval(_FLAT_READER)
        out: list[Any] = []
        start = 1
        while True:
            got = self.flat(result, start, _FLAT_BATCH)
            if got is True:
                return out
            if type(got) is not tuple:
                return None
            out += [int(v) if type(v) is float else v for v in got[1:]]
            if got[0] is True:
                return out
            start += _FLAT_BATCH

    def uncapped_call(self, function: Any, *args: Any) -> Any:
        """``function(*args)`` with the heap cap lifted: Python reading Lua values runs outside
        Lua's protection, where a full heap would end the process."""
        self.set_max_memory(0)
        try:
            return function(*args)
        finally:
            self.set_max_memory(int(self.memory_mib * 2**20))


#: Elements of a reply read in one call into Lua.
_FLAT_BATCH = 200
# true and the elements when the array ends in this batch, 'more' and them when it goes on,
# false when the reply is not a plain array of numbers and strings (then read fakeredis's way).
_FLAT_READER = (
    "function(t, from, batch) if from == 1 and (type(t) ~= 'table' or t.ok ~= nil "
    "or t.err ~= nil or t.double ~= nil or t.map ~= nil) then return false end "
    "local n = from - 1 while true do local v = t[n + 1] if v == nil then break end "
    "local kind = type(v) if kind ~= 'number' and kind ~= 'string' then return false end "
    "n = n + 1 if n - from + 1 == batch then return 'more', unpack(t, from, n) end end "
    "return true, unpack(t, from, n) end"
)


class LuaModule:
    """Stands in for fakeredis's Lua module: the same, but runtimes are :class:`ScriptRuntime`."""

    LuaRuntime = ScriptRuntime

    def __getattr__(self, name: str) -> Any:
        return getattr(LUA, name)


def _runtime(server: Any) -> ScriptRuntime:
    """The fake server's Lua runtime, made now if no script has run yet."""
    if not hasattr(server, "_lua_runtime"):
        fakeredis.FakeRedis(server=server).eval("return 1", 0)
    runtime = server._lua_runtime
    assert isinstance(runtime, ScriptRuntime), "runtimes are made by LuaModule"
    return runtime


def limit_scripts(server: Any, time_s: float, memory_mib: float) -> None:
    """Hold every script on fakeredis ``server`` to ``time_s`` seconds of wall time per call
    and its Lua heap to ``memory_mib``."""
    _runtime(server).limit(time_s, memory_mib)


def script_limit_hit(server: Any) -> str | None:
    """What stopped the last script call on ``server`` ("ran longer than 5 s", "used more than
    256 MiB of Lua memory"), or None when no limit did."""
    runtime = getattr(server, "_lua_runtime", None)
    return runtime.limit_hit if isinstance(runtime, ScriptRuntime) else None
