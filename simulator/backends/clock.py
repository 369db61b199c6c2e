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

The fake server runs every script call at Python speed, so its scripting gets three repairs here
(see :func:`plain_scripts` for fakeredis's own way, which the benchmark sets beside them):

* fakeredis compiles the script text again on every ``EVAL``/``EVALSHA``; here each script is
  compiled once per Lua runtime (a syntax error still comes out as fakeredis says it: "error
  loading code" and the line);
* after every call it runs a full ``collectgarbage()``; here Lua's own incremental collector keeps
  the heap bounded instead;
* before every ``redis.call`` and after every script it lists all Lua globals into a Python set to
  see that the script made none; here one Lua loop answers that, and only when one was made does
  fakeredis's own check run, for its message and its clean-up.

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
from fakeredis._core import _database
from fakeredis._socket import _base
from fakeredis.commands_mixins import scripting_mixin as _scripting

__all__ = ["VirtualClock", "FAKEREDIS_VERSION", "plain_scripts", "counted_commands"]

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
    return item.expireat is not None and _ms(item.expireat) < _ms(self.time)


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


class _ScriptRuntime(_LUA.LuaRuntime):  # type: ignore[misc, name-defined]
    """fakeredis's Lua runtime, keeping each script it is given compiled."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # the arguments went to __cinit__
        self.compiled: dict[Any, Any] = {}
        self.globals_check: tuple[int, Any] | None = None
        self.flat: Any = None

    def execute(self, lua_code: Any, *args: Any) -> Any:
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

    def made_no_globals(self, expected: set[Any]) -> bool:
        """True when every global is one of ``expected`` (the runtime's own), asked in Lua."""
        check = self.globals_check
        if check is None or check[0] != id(expected):
            make = self.eval(
                "function(g, known) return function() "
                "for name in pairs(g) do if known[name] == nil then return false end end "
                "return true end end"
            )
            known = self.table_from({name: True for name in expected})
            check = self.globals_check = (id(expected), make(self.globals(), known))
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


def _check_for_lua_globals(lua_runtime: Any, expected_globals: set[Any]) -> None:
    if not (
        _repaired[0]
        and isinstance(lua_runtime, _ScriptRuntime)
        and lua_runtime.made_no_globals(expected_globals)
    ):
        _PLAIN_CHECK(lua_runtime, expected_globals)  # the message, and the globals removed


_PLAIN_CONVERT = _scripting.ScriptingCommandsMixin._convert_lua_result


def _convert_lua_result(self: Any, result: Any, nested: bool = True) -> Any:
    """A script's whole reply (``nested`` False) read in one call where it is a plain array."""
    if _repaired[0] and not nested and self.server_type != "dragonfly":
        runtime = getattr(self._server, "_lua_runtime", None)
        if isinstance(runtime, _ScriptRuntime):
            flat = runtime.flat_reply(result)
            if flat is not None:
                return flat
    return _PLAIN_CONVERT(self, result, nested)


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
