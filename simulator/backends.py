"""Where the scripts run: an embedded fake server on the virtual clock, or a real one.

A backend runs a :class:`~simulator.scripts.Script` with its keys and arguments and returns the
raw reply. The default, :class:`FakeRedisBackend`, is fakeredis with Lua whose clock follows the
simulation (see :mod:`simulator.clock`), so key expiry happens in simulated milliseconds and a
simulated hour takes no wall time. Real servers run the very same scripts unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import fakeredis
import redis

from simulator.clock import VirtualClock
from simulator.scripts import SCRIPT_NAMES, Script, load

__all__ = ["Backend", "FakeRedisBackend", "RedisBackend", "BackendError", "ScriptError", "make_backend"]

Call = tuple[Script, Sequence[str], Sequence[Any]]


class BackendError(RuntimeError):
    """The server could not be reached or went away."""


class ScriptError(RuntimeError):
    """A script failed on the server; the message names the script and its keys."""


class Backend:
    """Runs scripts on one server. Subclasses set ``client`` and ``name``."""

    name = "backend"
    #: True when key expiry follows simulated time (only the fake server can do that).
    virtual_time = False
    client: Any

    def follow(self, now_ms: Callable[[], float]) -> None:
        """Make server time follow ``now_ms`` where the server allows it (a no-op on real ones)."""

    def load_scripts(self) -> None:
        for name in SCRIPT_NAMES:
            self.client.script_load(load(name).source)

    def call(self, script: Script, keys: Sequence[str], args: Sequence[Any]) -> Any:
        try:
            return self.client.evalsha(script.sha, len(keys), *keys, *args)
        except redis.exceptions.NoScriptError:
            self.client.script_load(script.source)
            return self.call(script, keys, args)
        except redis.exceptions.ResponseError as exc:
            raise ScriptError(f"script {script.name} failed on keys {list(keys)}: {exc}") from exc
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
            raise BackendError(f"backend {self.name} failed: {exc}") from exc

    def call_many(self, calls: Sequence[Call]) -> list[Any]:
        """Run several script calls in one round trip, in order; one reply per call."""
        return [self.call(*c) for c in calls]

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class FakeRedisBackend(Backend):
    """fakeredis with Lua, its clock driven by the simulation (milliseconds)."""

    name = "fakeredis"
    virtual_time = True

    def __init__(self, now_ms: Callable[[], float] | None = None) -> None:
        self.clock = VirtualClock(now_ms)
        self.clock.activate()
        self.server = fakeredis.FakeServer()
        self.client = fakeredis.FakeRedis(server=self.server)
        self.load_scripts()

    def follow(self, now_ms: Callable[[], float]) -> None:
        self.clock.follow(now_ms)

    def call(self, script: Script, keys: Sequence[str], args: Sequence[Any]) -> Any:
        self.clock.activate()
        return super().call(script, keys, args)


class RedisBackend(Backend):
    """Any real Redis/Valkey server reached through a redis-py client.

    Key expiry runs on the server's own wall clock here: decisions of algorithms that take
    ``now_ms`` from ARGV and use the TTL only to clean up are unaffected; ``echomq`` is not.
    """

    name = "redis"
    virtual_time = False

    def __init__(self, client: Any, name: str = "redis") -> None:
        self.client, self.name = client, name
        self.load_scripts()

    def call_many(self, calls: Sequence[Call]) -> list[Any]:
        pipe = self.client.pipeline(transaction=False)
        for script, keys, args in calls:
            pipe.evalsha(script.sha, len(keys), *keys, *args)
        try:
            return list(pipe.execute())
        except redis.exceptions.NoScriptError:
            self.load_scripts()
            return self.call_many(calls)
        except redis.exceptions.ResponseError as exc:
            raise ScriptError(f"a script in a pipeline failed: {exc}") from exc
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
            raise BackendError(f"backend {self.name} failed: {exc}") from exc


def make_backend(spec: str = "fakeredis") -> Backend:
    """Build a backend from its name on the command line."""
    if spec == "fakeredis":
        return FakeRedisBackend()
    raise ValueError(f"backend: unknown backend {spec!r} (known: fakeredis)")
