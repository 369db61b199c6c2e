"""fakeredis as it comes: the pinned version, its own functions kept before any are replaced.

The fake server's repairs (:mod:`~simulator.backends.fakeserver.scripts` and its neighbours)
replace a handful of fakeredis's functions; the originals are kept here, because every repair
falls back on them for the cases it leaves alone, and because :func:`plain_scripts` runs scripts
the stock way for the benchmark to set beside the repaired one. These modules are the only ones
that touch fakeredis internals, so the version is pinned (``pyproject.toml``) and checked here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import fakeredis
from fakeredis._socket import _base
from fakeredis.commands_mixins import scripting_mixin as _scripting

__all__ = ["FAKEREDIS_VERSION", "plain_scripts", "counted_commands", "REPAIRED"]

FAKEREDIS_VERSION = "2.41.0"
if fakeredis.__version__ != FAKEREDIS_VERSION:  # pragma: no cover - guards the pin
    raise ImportError(
        f"simulator.backends.fakeserver patches fakeredis internals and needs "
        f"fakeredis=={FAKEREDIS_VERSION}, found {fakeredis.__version__}"
    )

#: fakeredis's Lua module (lupa's Lua 5.1), before the fake server's stands in for it.
LUA = _scripting.LUA_MODULE
PLAIN_CHECK = _scripting._check_for_lua_globals
PLAIN_RUN = _base.BaseFakeSocket._run_command
PLAIN_CONVERT = _scripting.ScriptingCommandsMixin._convert_lua_result
PLAIN_REDIS_CALL = _scripting.ScriptingCommandsMixin._lua_redis_call
PLAIN_EVAL = _scripting.ScriptingCommandsMixin.eval
PLAIN_GET_RUNTIME = _scripting.ScriptingCommandsMixin._get_server_runtime
#: Compiled scripts (and script SHA1s) kept per runtime: a run uses a handful; a program making
#: scripts on the fly starts again from empty past this.
COMPILED_MAX = 256

#: ``REPAIRED[0]`` is False inside :func:`plain_scripts`: every repair then steps aside (a list,
#: read as one index on the hot path).
REPAIRED = [True]


@contextlib.contextmanager
def plain_scripts() -> Iterator[None]:
    """Run scripts as fakeredis itself does (compiled on every call, a full collection after
    each, globals listed in Python): what the benchmark sets beside the repaired hot path."""
    was = REPAIRED[0]
    REPAIRED[0] = False
    try:
        yield
    finally:
        REPAIRED[0] = was


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
