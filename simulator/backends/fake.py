"""The default backend: fakeredis with Lua, its clock driven by the simulation.

Key expiry happens in simulated milliseconds (see :mod:`simulator.backends.fakeserver`), so a
simulated hour takes no wall time and ``echomq``, whose window is a key's TTL, runs exactly.

Every script call is held to a time budget (``script_time_s``, default 5 s of wall time, like a
server's busy-script limit) and the Lua heap to a cap (``script_memory_mib``, default 256 MiB);
the environment variables ``SIMULATOR_SCRIPT_TIME_S`` and ``SIMULATOR_SCRIPT_MEMORY_MIB`` change
the defaults for every command, within a sane range (:data:`TIME_RANGE_S`,
:data:`MEMORY_RANGE_MIB`; a value outside is one :class:`ConfigError` naming the variable). A
script that breaks one stops the run with :class:`ScriptLimitError`, naming the script, its keys
and the limit. Scripts run in Valkey's Lua environment
(:mod:`simulator.backends.fakeserver.environment`).

A limiter's calls go straight to fakeredis's command execution
(:class:`~simulator.backends.fakeserver.DirectCalls`): the same ``EVALSHA`` (or the server's own
command, ``INCREX``), the same replies and errors, without redis-py packing each call and the
fake socket parsing it again. ``client`` (a redis-py client on the same server) stays for
everything else: loading scripts, reading keys.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from typing import Any

import fakeredis
import redis

from simulator.backends.base import Backend, BackendError, ScriptError, ScriptLimitError
from simulator.backends.fakeserver import (
    SCRIPT_MEMORY_MIB,
    SCRIPT_TIME_S,
    DirectCalls,
    VirtualClock,
    limit_scripts,
    script_limit_hit,
)
from simulator.calls import Script
from simulator.checks import ConfigError

__all__ = ["FakeRedisBackend", "script_limits"]

TIME_ENV = "SIMULATOR_SCRIPT_TIME_S"
MEMORY_ENV = "SIMULATOR_SCRIPT_MEMORY_MIB"


#: The time budgets a run may set, in seconds: shorter than a hundredth stops scripts that merely
#: started slowly; a day is as long as anyone waits for one call.
TIME_RANGE_S = (0.01, 86_400.0)
#: The heap caps a run may set, in MiB: the runtime and its libraries take about 0.1 MiB, and
#: lupa's own calls need room beside a script's heap; a TiB is more than any machine here has.
MEMORY_RANGE_MIB = (16.0, 1_048_576.0)


def _within(name: str, text: str, bounds: tuple[float, float], unit: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    low, high = bounds
    if not (math.isfinite(value) and low <= value <= high):
        raise ConfigError(
            f"{name}={text!r}: expected a positive number of {unit}, from {low:g} to {high:g}"
        )
    return value


def script_limits() -> tuple[float, float]:
    """The time budget (s) and heap cap (MiB) for scripts: the environment's, or the defaults."""
    time_s, memory_mib = SCRIPT_TIME_S, float(SCRIPT_MEMORY_MIB)
    if text := os.environ.get(TIME_ENV, "").strip():
        time_s = _within(TIME_ENV, text, TIME_RANGE_S, "seconds")
    if text := os.environ.get(MEMORY_ENV, "").strip():
        memory_mib = _within(MEMORY_ENV, text, MEMORY_RANGE_MIB, "MiB")
    return time_s, memory_mib


class FakeRedisBackend(Backend):
    """fakeredis with Lua, its clock driven by the simulation (milliseconds)."""

    name = "fakeredis"
    virtual_time = True

    def __init__(
        self,
        now_ms: Callable[[], float] | None = None,
        *,
        script_time_s: float | None = None,
        script_memory_mib: float | None = None,
    ) -> None:
        time_s, memory_mib = script_limits()
        if script_time_s is not None:
            time_s = _within("script_time_s", repr(script_time_s), TIME_RANGE_S, "seconds")
        if script_memory_mib is not None:
            memory_mib = _within(
                "script_memory_mib", repr(script_memory_mib), MEMORY_RANGE_MIB, "MiB"
            )
        self.script_time_s, self.script_memory_mib = time_s, memory_mib
        self.clock = VirtualClock(now_ms)
        self.clock.activate()
        # Redis 8.8: the version that has INCREX (the increx algorithms' command)
        self.server = fakeredis.FakeServer(version=(8, 8))
        self.client = fakeredis.FakeRedis(server=self.server)
        limit_scripts(self.server, self.script_time_s, self.script_memory_mib)
        self.direct = DirectCalls(self.server, self.client.response_callbacks)

    def follow(self, now_ms: Callable[[], float]) -> None:
        self.clock.follow(now_ms)

    def call(self, script: Script, keys: Sequence[str], args: Sequence[Any]) -> Any:
        self.clock.activate()
        direct = self.direct
        if script.command:  # the server's own command, no script
            return self._command(script, keys, args)
        try:
            return direct.evalsha(direct.fields(script.sha, keys, args))
        except redis.exceptions.NoScriptError:
            self.client.script_load(script.source)
            return self.call(script, keys, args)
        except redis.exceptions.ResponseError as exc:
            hit = script_limit_hit(self.server)
            if hit is not None:
                raise ScriptLimitError(
                    f"script {script.name} {hit} on keys {list(keys)} (args {list(args)})"
                ) from exc
            raise ScriptError(f"script {script.name} failed on keys {list(keys)}: {exc}") from exc

    def _command(self, script: Script, keys: Sequence[str], args: Sequence[Any]) -> Any:
        """The server's own command, straight to fakeredis's command execution as a script call
        goes; what redis-py would refuse before sending (an argument it cannot encode, a name
        the server does not know) goes through redis-py, for its own error."""
        direct = self.direct
        if not direct.runs(script.command):
            return super().call(script, keys, args)
        try:
            fields = direct.encoded([], (*keys, *args))
        except redis.exceptions.DataError:
            return super().call(script, keys, args)
        try:
            return direct.command(script.command, fields)
        except redis.exceptions.ResponseError as exc:
            raise ScriptError(f"script {script.name} failed on keys {list(keys)}: {exc}") from exc
        except redis.exceptions.RedisError as exc:
            raise BackendError(f"backend {self.name} failed: {exc}") from exc

    def close(self) -> None:
        try:
            self.direct.close()
        finally:
            super().close()
