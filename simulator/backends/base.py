"""What a backend is: runs a script with its keys and arguments, returns the raw reply.

Errors come in two kinds: :class:`BackendError` (the server cannot be reached or went away: the run
cannot go on) and :class:`ScriptError` (the server ran the script and it failed, e.g. on a key of
the wrong type left by someone else); both messages name the backend or the script and its keys.
Clients built here never retry a command on their own: after a lost connection nobody knows
whether the server applied it, and a decision log must not count a request twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import redis
from redis.crc import key_slot

from simulator.calls import Call, Script
from simulator.checks import ConfigError

__all__ = [
    "Backend",
    "BackendError",
    "ScriptError",
    "ScriptLimitError",
    "NO_REPLY",
    "script_error",
]


class BackendError(RuntimeError):
    """The server could not be reached or went away."""

    #: Decisions made before the run stopped (set when a run stops on this error).
    decided: int | None = None
    #: Set by a backend that got some replies of the batch in flight before it failed (a
    #: cluster whose other nodes answered): one entry per call, :data:`NO_REPLY` where none came.
    replies: list[Any] | None = None
    #: Positions in that batch of the calls sent to the server that failed: they may or may
    #: not have been applied. ``failed_node`` names that server.
    unknown: Sequence[int] = ()
    failed_node: str = ""


#: Stands in :attr:`BackendError.replies` for a call that got no reply.
NO_REPLY: Any = type("NoReply", (), {"__repr__": lambda self: "NO_REPLY"})()


class ScriptError(RuntimeError):
    """A script failed on the server; the message names the script and its keys."""

    #: Decisions made before the run stopped (set when a run stops on this error).
    decided: int | None = None


class ScriptLimitError(ScriptError, ConfigError):
    """A script ran longer than its time budget or needed more memory than its cap, and was
    stopped: the script's doing, not the server's (exit status 2). The message names the script,
    the call's keys and the limit."""


#: What a redis-py client raises (the cluster client's own errors do not derive from RedisError).
_SERVER_ERRORS = (redis.exceptions.RedisError, redis.exceptions.RedisClusterException, OSError)


def script_error(script: Script, keys: Sequence[str], exc: BaseException) -> ScriptError:
    error = ScriptError(f"script {script.name} failed on keys {list(keys)}: {exc}")
    error.__cause__ = exc
    return error


def _is_backend_failure(exc: BaseException) -> bool:
    """True for errors that say the server is gone or unusable, not that a script failed."""
    if isinstance(exc, redis.exceptions.ClusterError | redis.exceptions.TryAgainError):
        return True
    if isinstance(exc, redis.exceptions.ResponseError):
        return False
    if isinstance(exc, redis.exceptions.RedisClusterException):
        return "same key slot" not in str(exc)  # the client's own CROSSSLOT check is a script error
    return isinstance(exc, redis.exceptions.RedisError | OSError)


class Backend:
    """Runs scripts on one server. Subclasses set ``client`` and ``name``."""

    name = "backend"
    #: True when key expiry follows simulated time (only the fake server can do that).
    virtual_time = False
    client: Any
    #: The server this backend started and must stop (None when it only connects).
    owned: Any = None
    #: True when keys are spread over the slots of a cluster.
    clustered = False

    def describe(self) -> str:
        """One line for the user: which backend, where, and whether the program owns the server."""
        return self.name

    def follow(self, now_ms: Callable[[], float]) -> None:
        """Make server time follow ``now_ms`` where the server allows it (a no-op on real ones)."""

    def preload(self, scripts: Iterable[Script]) -> None:
        """Load ``scripts`` on the server before the run calls them (each once per backend), so
        a server that cannot take them says so before the first decision. A script the server
        has not seen is loaded on its first call anyway; this only moves the moment."""
        loaded: set[str] = self.__dict__.setdefault("_preloaded", set())
        for script in scripts:
            if script.sha not in loaded:
                try:
                    self.client.script_load(script.source)
                except redis.exceptions.ResponseError as exc:
                    raise ScriptError(f"script {script.name} cannot be loaded: {exc}") from exc
                except _SERVER_ERRORS as exc:
                    raise BackendError(
                        f"backend {self.name}: cannot load script {script.name}: {exc}"
                    ) from exc
                loaded.add(script.sha)

    def lacks(self, command: str, probe: Sequence[Any] = ()) -> bool:
        """True when the server has no such command. Asked with ``probe`` as arguments (by
        default none), which a server that has it must refuse without touching a key ("wrong
        number of arguments", "invalid expire time"); one that has it not says "unknown
        command"."""
        try:
            self.client.execute_command(command, *probe)
        except redis.exceptions.ResponseError as exc:
            return "unknown command" in str(exc).lower()
        except _SERVER_ERRORS as exc:
            raise BackendError(f"backend {self.name} failed: {exc}") from exc
        return False

    def call(self, script: Script, keys: Sequence[str], args: Sequence[Any]) -> Any:
        try:
            if script.command:  # the server's own command, no script (see calls.native)
                return self.client.execute_command(script.command, *keys, *args)
            return self.client.evalsha(script.sha, len(keys), *keys, *args)
        except redis.exceptions.NoScriptError:
            self.client.script_load(script.source)
            return self.call(script, keys, args)
        except redis.exceptions.ResponseError as exc:
            raise ScriptError(f"script {script.name} failed on keys {list(keys)}: {exc}") from exc
        except _SERVER_ERRORS as exc:
            if _is_backend_failure(exc):
                raise BackendError(f"backend {self.name} failed: {exc}") from exc
            raise script_error(script, keys, exc) from exc

    def call_many(self, calls: Sequence[Call]) -> list[Any]:
        """Run several script calls in order and return one reply per call.

        A failed call raises :class:`ScriptError`; the calls before it have run.
        """
        replies = next(self.stream([calls], depth=1))
        for reply in replies:
            if isinstance(reply, ScriptError):
                raise reply
        return replies

    def stream(self, batches: Iterable[Sequence[Call]], depth: int = 2) -> Iterator[list[Any]]:
        """Run batches of calls in order and yield each batch's replies.

        A script that failed stands in its place as a :class:`ScriptError` (the calls after it in
        the batch may have run), so the caller can keep every decision made before it. Up to
        ``depth`` batches are in flight on servers that can take them.
        """
        for batch in batches:
            replies: list[Any] = []
            for call in batch:
                try:
                    replies.append(self.call(*call))
                except ScriptError as exc:
                    replies.append(exc)
            yield replies

    def existing(self, keys: Sequence[str], show: int = 3) -> tuple[int, list[str]]:
        """How many of ``keys`` already exist on the server, and up to ``show`` of them.

        One ``EXISTS`` per group of keys that share a slot (a client's keys share its hash tag),
        sent in pipelines, so that even a long trace's keys are checked in a few round trips.
        """
        groups: dict[tuple[int, int], list[str]] = {}
        sizes: dict[int, int] = {}
        for key in keys:
            slot = key_slot(key.encode("utf-8", "surrogatepass")) if self.clustered else 0
            n = sizes[slot] = sizes.get(slot, 0) + 1
            groups.setdefault((slot, (n - 1) // 500), []).append(key)
        try:
            counts = self._pipelined_exists(list(groups.values()))
            found, examples = sum(counts), list[str]()
            for group, count in zip(groups.values(), counts, strict=True):
                if count and len(examples) < show:
                    hits = self._pipelined_exists([[k] for k in group])
                    examples += [k for k, hit in zip(group, hits, strict=True) if hit]
        except _SERVER_ERRORS as exc:
            raise BackendError(f"backend {self.name} failed: {exc}") from exc
        return found, examples[:show]

    def _pipelined_exists(self, groups: list[list[str]]) -> list[int]:
        counts: list[int] = []
        for start in range(0, len(groups), 1000):
            pipe = self.client.pipeline(transaction=False)
            for group in groups[start : start + 1000]:
                pipe.exists(*group)
            counts += [int(c) for c in pipe.execute()]
        return counts

    def close(self) -> None:
        try:
            self.client.close()
        finally:
            if self.owned is not None:
                self.owned.stop()

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
