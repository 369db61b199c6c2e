"""A script call watched line by line: which lines ran, and every ``redis.call`` with its reply.

To say *why* a limiter decided as it did, one call is enough: the lines of the script that ran
and the commands it sent, each with its arguments and the server's reply. Inside
:func:`traced_scripts` every script call on that fake server is recorded as a
:class:`ScriptRun`:

* the lines: a Lua line hook (``debug.sethook`` with mask ``'l'``) counts each line of the
  script's own chunk (``@user_script``) each time it starts; lines of other chunks (the
  environment's helpers, the ``KEYS``/``ARGV`` setter) are left out. Lua keeps one hook per
  coroutine, so the budget's count hook (:mod:`~.budget`) rides in the same one: the traced
  hook hands every ``count`` event to it, and a script that loops for ever while traced is
  stopped exactly as an untraced one is. A coroutine the script makes carries the budget's hook
  alone: its lines are not counted;
* the calls: ``redis.call`` and ``redis.pcall`` in order (:class:`RedisCall`), with the line
  they were sent from, their reply as Lua saw it (``false`` for a missing value) or the error.

Outside the block nothing of this is installed: no line hook, no wrapper around ``execute`` or
``redis.call``. The ordinary path keeps its speed, and a test holds it to that. While some
server is traced, fakeredis's ``redis.call`` is wrapped for the whole process (that is where
fakeredis looks it up), and another server's calls pass through with one dictionary lookup;
the last block to end puts fakeredis's own back.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from fakeredis.commands_mixins import scripting_mixin as _scripting

from simulator.backends.fakeserver.budget import HOOK_EVERY
from simulator.backends.fakeserver.environment import CHUNK_NAME
from simulator.backends.fakeserver.runtime import FULL_COLLECTION, ScriptRuntime, _runtime
from simulator.backends.fakeserver.stock import LUA

__all__ = ["RedisCall", "ScriptRun", "Recorder", "traced_scripts"]

# The traced hook: a line of the script's chunk is counted and remembered (the line a
# ``redis.call`` is sent from); a count event goes to the budget's hook, which may stop the script.
_LINE_HOOK = """function(getinfo, budget, state, chunk)
  return function(event, line)
    if event == 'line' then
      if getinfo(2, 'S').source == chunk then
        local hits = state.hits
        hits[line] = (hits[line] or 0) + 1
        state.line = line
      end
      return
    end
    return budget(event, line)
  end
end"""
# The lines of the script's chunk that the stack is at, innermost first: where a redis.call
# was sent from, and the lines of the functions that led there.
_FRAMES = """function(getinfo, chunk)
  return function()
    local lines, level = {}, 1
    while true do
      local info = getinfo(level, 'Sl')
      if info == nil then return unpack(lines) end
      if info.source == chunk and info.currentline > 0 then lines[#lines + 1] = info.currentline end
      level = level + 1
    end
  end
end"""


@dataclass(frozen=True)
class RedisCall:
    """One ``redis.call`` (or ``redis.pcall``, ``protected``) a script made: the command's name
    and arguments (text where they were strings), the line it was sent from, and the reply as
    the script received it (integers, text, lists; False for a nil bulk) or, instead, the error
    the server raised. ``frames`` are the script's lines the stack was at, innermost first
    (``line`` is the first): a call made inside a function of the script shows the line that
    called the function too."""

    command: str
    args: tuple[Any, ...]
    reply: Any
    line: int | None
    protected: bool = False
    error: str | None = None
    frames: tuple[int, ...] = ()


@dataclass(frozen=True)
class ScriptRun:
    """One script call: its text, how many times each line started (``(line, hits)``, 1-based,
    in line order), the calls it made, and what stopped it (None when it returned)."""

    source: str
    hits: tuple[tuple[int, int], ...]
    calls: tuple[RedisCall, ...]
    error: str | None = None


def _plain(value: Any) -> Any:
    """A value from Lua as Python: bytes as text, whole floats as integers, a table as a list
    (or ``{'ok': …}``/``{'err': …}`` for a status or an error reply)."""
    if type(value) is bytes:
        return value.decode("utf-8", "replace")
    if type(value) is float and value.is_integer():
        return int(value)
    if LUA.lua_type(value) == "table":
        for field in (b"err", b"ok"):
            if value[field] is not None:
                return {field.decode(): _plain(value[field])}
        out, i = [], 1
        while value[i] is not None:
            out.append(_plain(value[i]))
            i += 1
        return out
    return value


class Recorder:
    """What :func:`traced_scripts` saw: ``runs``, one :class:`ScriptRun` per script call."""

    def __init__(self, runtime: ScriptRuntime) -> None:
        self.runtime = runtime
        self.runs: list[ScriptRun] = []
        self.state = runtime.table()
        self.hook = runtime.eval(_LINE_HOOK)(runtime.getinfo, runtime.hook, self.state, CHUNK_NAME)
        self.frames = runtime.eval(_FRAMES)(runtime.getinfo, CHUNK_NAME)
        self._calls: list[RedisCall] = []

    def execute(self, lua_code: Any, *args: Any) -> Any:
        """The runtime's ``execute`` with the line hook on for the script's own call."""
        runtime = self.runtime
        if lua_code in FULL_COLLECTION:
            return ScriptRuntime.execute(runtime, lua_code, *args)
        self.state[b"hits"], self.state[b"line"] = runtime.table(), None
        self._calls = []
        error = None
        runtime.sethook(self.hook, b"l", HOOK_EVERY)
        try:
            return ScriptRuntime.execute(runtime, lua_code, *args)
        except Exception as exc:
            error = str(exc)
            raise
        finally:
            runtime._arm()  # the budget's own hook back, alone
            hits = sorted((int(k), int(v)) for k, v in self.state[b"hits"].items())
            text = lua_code.decode("utf-8", "replace") if isinstance(lua_code, bytes) else lua_code
            self.runs.append(ScriptRun(str(text), tuple(hits), tuple(self._calls), error))

    def record(
        self, protected: bool, op: Any, args: Any, reply: Any, error: str | None = None
    ) -> None:
        got = self.frames()  # none, one line, or a tuple of lines
        frames = () if got is None else tuple(map(int, got if type(got) is tuple else (got,)))
        line = frames[0] if frames else self.state[b"line"]
        self._calls.append(
            RedisCall(
                command=_plain(op).upper() if isinstance(op, bytes) else str(op),
                args=tuple(_plain(a) for a in args),
                reply=None if error is not None else _plain(reply),
                line=None if line is None else int(line),
                protected=protected,
                error=error,
                frames=frames,
            )
        )


#: The recorders in use, by their runtime's id, and fakeredis's ``redis.call`` and
#: ``redis.pcall`` as they were before the first came (restored when the last goes). Several
#: servers may be traced at once, from several threads: the wrappers go in once, under a lock.
_ACTIVE: dict[int, Recorder] = {}
_PLAIN: list[tuple[Any, Any]] = []
_LOCK = threading.Lock()


def _recorder_of(lua_runtime: Any) -> Recorder | None:
    recorder = _ACTIVE.get(id(lua_runtime))
    return recorder if recorder is not None and recorder.runtime is lua_runtime else None


def _wrappers(plain_call: Any, plain_pcall: Any) -> tuple[Any, Any]:
    """``redis.call`` and ``redis.pcall`` recorded for a traced runtime, any other passed
    straight to fakeredis's own. The originals are held here, not looked up: a call that found
    a wrapper just before the last block ended still has them, so an untraced server's
    ``redis.call`` in another thread can never fail for want of them."""

    def _call(self: Any, lua_runtime: Any, expected: Any, op: Any, *args: Any) -> Any:
        recorder = _recorder_of(lua_runtime)
        if recorder is None:
            return plain_call(self, lua_runtime, expected, op, *args)
        try:
            reply = plain_call(self, lua_runtime, expected, op, *args)
        except Exception as exc:
            recorder.record(False, op, args, None, str(exc))
            raise
        recorder.record(False, op, args, reply)
        return reply

    def _pcall(self: Any, lua_runtime: Any, expected: Any, op: Any, *args: Any) -> Any:
        # as fakeredis answers it: an error becomes a reply
        recorder = _recorder_of(lua_runtime)
        if recorder is None:
            return plain_pcall(self, lua_runtime, expected, op, *args)
        try:
            reply = plain_call(self, lua_runtime, expected, op, *args)
        except Exception as exc:
            recorder.record(True, op, args, None, str(exc))
            return lua_runtime.table_from({b"err": str(exc)})
        recorder.record(True, op, args, reply)
        return reply

    return _call, _pcall


def _start(recorder: Recorder) -> None:
    mixin = _scripting.ScriptingCommandsMixin
    with _LOCK:
        if id(recorder.runtime) in _ACTIVE:
            raise RuntimeError("this fake server's scripts are traced already")
        if not _ACTIVE:
            _PLAIN[:] = [(mixin._lua_redis_call, mixin._lua_redis_pcall)]
            wrapped_call, wrapped_pcall = _wrappers(*_PLAIN[0])
            mixin._lua_redis_call = wrapped_call  # type: ignore[method-assign]
            mixin._lua_redis_pcall = wrapped_pcall  # type: ignore[method-assign]
        _ACTIVE[id(recorder.runtime)] = recorder
        recorder.runtime.execute = recorder.execute  # type: ignore[method-assign]


def _stop(recorder: Recorder) -> None:
    mixin = _scripting.ScriptingCommandsMixin
    with _LOCK:
        del recorder.runtime.execute
        del _ACTIVE[id(recorder.runtime)]
        if not _ACTIVE:
            mixin._lua_redis_call, mixin._lua_redis_pcall = _PLAIN.pop()  # type: ignore[method-assign]


@contextlib.contextmanager
def traced_scripts(server: Any) -> Iterator[Recorder]:
    """Record every script call on fakeredis ``server`` inside the block (its lines and its
    ``redis.call``s, :class:`Recorder`); everything is as it was once the block ends. One
    block per server at a time (a second raises RuntimeError); other servers run untraced."""
    recorder = Recorder(_runtime(server))
    _start(recorder)
    try:
        yield recorder
    finally:
        _stop(recorder)
