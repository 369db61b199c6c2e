"""Where the scripts run: an embedded fake server on the virtual clock, or a real one.

A backend runs a :class:`~simulator.scripts.Script` with its keys and arguments and returns the
raw reply. The default, :class:`FakeRedisBackend`, is fakeredis with Lua whose clock follows the
simulation (see :mod:`simulator.clock`), so key expiry happens in simulated milliseconds and a
simulated hour takes no wall time. Real servers run the very same scripts unchanged:
:class:`RedisBackend` for one Redis/Valkey server, :class:`ClusterBackend` for a cluster, where all
keys of one call share a hash tag and so a slot. :func:`make_backend` builds one from its name on
the command line, and a backend that started its own server stops it in :meth:`Backend.close`.

Errors come in two kinds: :class:`BackendError` (the server cannot be reached or went away: the run
cannot go on) and :class:`ScriptError` (the server ran the script and it failed, e.g. on a key of
the wrong type left by someone else); both messages name the backend or the script and its keys.
A spec that names no usable server (malformed, or a cluster URL for a plain server) is bad input
and raises :class:`BackendSpecError` (a :class:`~simulator.scenario.ConfigError`) before any run.
Clients built here never retry a command on their own: after a lost connection nobody knows
whether the server applied it, and a decision log must not count a request twice.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import fakeredis
import redis
from redis.backoff import NoBackoff
from redis.crc import key_slot
from redis.retry import Retry

from simulator import wire
from simulator.clock import VirtualClock
from simulator.scripts import SCRIPT_NAMES, Script, load
from simulator.urls import BackendSpecError, open_url, redact
from simulator.wire import Call

__all__ = [
    "Backend",
    "FakeRedisBackend",
    "RedisBackend",
    "ClusterBackend",
    "BackendError",
    "ScriptError",
    "BackendSpecError",
    "make_backend",
    "BACKEND_SPECS",
]

#: What ``--backend`` accepts.
BACKEND_SPECS = (
    "fakeredis",
    "valkey",
    "cluster",
    "redis://HOST:PORT/DB",
    "redis+cluster://HOST:PORT",
)


class BackendError(RuntimeError):
    """The server could not be reached or went away."""

    #: Decisions made before the run stopped (set when a run stops on this error).
    decided: int | None = None


class ScriptError(RuntimeError):
    """A script failed on the server; the message names the script and its keys."""

    #: Decisions made before the run stopped (set when a run stops on this error).
    decided: int | None = None


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


def _no_retry() -> Retry:
    return Retry(NoBackoff(), 0)


class RedisBackend(Backend):
    """Any real Redis/Valkey server reached through a redis-py client.

    Key expiry runs on the server's own wall clock here: decisions of algorithms that take
    ``now_ms`` from ARGV and use the TTL only to clean up are unaffected; ``echomq`` is not.
    """

    name = "redis"
    virtual_time = False

    def __init__(
        self, client: Any, name: str = "redis", owned: Any = None, *, load_scripts: bool = True
    ) -> None:
        self.client, self.name, self.owned = client, name, owned
        if not load_scripts:
            return
        try:
            self.load_scripts()
        except _SERVER_ERRORS as exc:
            self.close()
            raise BackendError(f"backend {self.name}: cannot load the scripts: {exc}") from exc

    def describe(self) -> str:
        kw = self.client.connection_pool.connection_kwargs
        db = kw.get("db", 0)
        if self.owned is not None:
            server = self.owned
            via = f" and {server.socket}" if server.socket is not None else ""
            return (
                f"{self.name}: valkey-server pid {server.pid} on {server.host}:{server.port}/{db}"
                f"{via}, password set by the program (stopped on exit)"
            )
        where = kw["path"] if "path" in kw else f"{kw.get('host', '?')}:{kw.get('port', '?')}"
        return f"{self.name}: server at {where}/{db}"

    def _retry_noscript(self, batch: Sequence[Call], replies: list[Any]) -> list[Any]:
        """The server lost the scripts (restart, SCRIPT FLUSH): load them, rerun what failed."""
        for i, reply in enumerate(replies):
            if isinstance(reply, redis.exceptions.NoScriptError):
                try:
                    replies[i] = self.call(*batch[i])
                except ScriptError as exc:
                    replies[i] = exc
        return replies

    def _settle(self, batch: Sequence[Call], replies: list[Any], failed: bool = True) -> list[Any]:
        """Server errors in ``replies`` as :class:`ScriptError` (``failed``: there may be some)."""
        if not failed:
            return replies
        if any(isinstance(r, redis.exceptions.NoScriptError) for r in replies):
            replies = self._retry_noscript(batch, replies)
        for i, reply in enumerate(replies):
            if isinstance(reply, redis.exceptions.ResponseError):
                if _is_backend_failure(reply):
                    raise BackendError(f"backend {self.name} failed: {reply}") from reply
                replies[i] = script_error(batch[i][0], batch[i][1], reply)
        return replies

    def stream(self, batches: Iterable[Sequence[Call]], depth: int = 2) -> Iterator[list[Any]]:
        pool = self.client.connection_pool
        in_flight: deque[Sequence[Call]] = deque()
        try:
            conn = pool.get_connection()
        except _SERVER_ERRORS as exc:
            raise BackendError(f"backend {self.name} failed: {exc}") from exc
        try:
            conn.connect()
            replies = wire.Replies(conn)
            for batch in batches:
                if not batch:
                    yield []
                    continue
                wire.send(conn, batch)
                in_flight.append(batch)
                if len(in_flight) >= depth:
                    done = in_flight.popleft()
                    got = replies.read(len(done))
                    yield self._settle(done, got, replies.failed)
            while in_flight:
                done = in_flight.popleft()
                got = replies.read(len(done))
                yield self._settle(done, got, replies.failed)
        except _SERVER_ERRORS as exc:
            in_flight.append(())  # the connection's state is unknown now
            raise BackendError(f"backend {self.name} failed: {exc}") from exc
        finally:
            if in_flight:  # replies left unread (an error, or the caller stopped early)
                conn.disconnect()
            pool.release(conn)


class ClusterBackend(Backend):
    """A Redis/Valkey Cluster: every call goes to the node owning its keys' slot.

    All keys of one call share a hash tag, so they share a slot; a call whose keys do not is
    refused (by the client before it is sent, or by the server with CROSSSLOT). A batch is split
    by node, each part pipelined to its node, and the replies put back in call order; calls on
    one key always go to one node, in order, so the decisions are those of one call at a time.
    """

    name = "cluster"
    virtual_time = False
    clustered = True

    def __init__(self, client: Any, name: str = "cluster", owned: Any = None) -> None:
        self.client, self.name, self.owned = client, name, owned
        self._nodes: dict[str, RedisBackend] = {}
        try:
            self.load_scripts()  # redis-py sends SCRIPT LOAD to every primary
        except _SERVER_ERRORS as exc:
            self.close()
            raise BackendError(f"backend {self.name}: cannot load the scripts: {exc}") from exc

    def describe(self) -> str:
        nodes = ", ".join(f"{n.host}:{n.port}" for n in self.client.get_primaries())
        if self.owned is not None:
            pids = ", ".join(str(p) for p in self.owned.pids)
            return (
                f"{self.name}: valkey-server pids {pids} on {nodes}, password set by the program "
                "(stopped on exit)"
            )
        return f"{self.name}: cluster with primaries {nodes}"

    def _node_backend(self, key: str) -> RedisBackend:
        node = self.client.get_node_from_key(key)
        backend = self._nodes.get(node.name)
        if backend is None:
            client = self.client.get_redis_connection(node)
            name = f"{self.name} node {node.name}"
            # The scripts are already on every primary (loaded in __init__).
            backend = self._nodes[node.name] = RedisBackend(client, name, load_scripts=False)
        return backend

    def stream(self, batches: Iterable[Sequence[Call]], depth: int = 2) -> Iterator[list[Any]]:
        for batch in batches:
            parts: dict[str, tuple[RedisBackend, list[int]]] = {}
            try:
                for i, (_script, keys, _args) in enumerate(batch):
                    node = self._node_backend(keys[0])
                    parts.setdefault(node.name, (node, []))[1].append(i)
            except _SERVER_ERRORS as exc:
                raise BackendError(f"backend {self.name} failed: {exc}") from exc
            replies: list[Any] = [None] * len(batch)
            for node, positions in parts.values():
                calls = [batch[i] for i in positions]
                for i, reply in zip(positions, next(node.stream([calls], depth=1)), strict=True):
                    replies[i] = reply
            yield replies


def make_backend(spec: str = "fakeredis") -> Backend:
    """Build a backend from its name on the command line (see :data:`BACKEND_SPECS`).

    ``valkey`` and ``cluster`` start an embedded server (127.0.0.1, a fresh folder) that the
    backend owns and stops in :meth:`Backend.close`; a URL connects to a running server. A spec
    that names no usable server raises :class:`BackendSpecError`, one that cannot be reached
    :class:`BackendError`; both messages name the spec (its password shown as ``***``).
    """
    from simulator.servers import EmbeddedCluster, EmbeddedValkey

    if spec == "fakeredis":
        return FakeRedisBackend()
    try:
        if spec == "valkey":
            server = EmbeddedValkey().start()
            try:
                return RedisBackend(server.client(retry=_no_retry()), "valkey", server)
            except BaseException:
                server.stop()
                raise
        if spec == "cluster":
            cluster = EmbeddedCluster().start()
            try:
                return ClusterBackend(cluster.client(retry=_no_retry()), "cluster", cluster)
            except BaseException:
                cluster.stop()
                raise
        shown = redact(spec)
        if spec.startswith("redis://"):
            return RedisBackend(open_url(spec, retry=_no_retry()), shown)
        if spec.startswith("redis+cluster://"):
            return ClusterBackend(open_url(spec, retry=_no_retry()), shown)
    except BackendSpecError as exc:
        raise BackendSpecError(f"backend {exc}") from None
    except (RuntimeError, *_SERVER_ERRORS) as exc:
        if isinstance(exc, BackendError):
            raise
        raise BackendError(f"backend {redact(spec)}: {exc}") from exc
    raise BackendSpecError(f"backend: unknown backend {spec!r} (known: {', '.join(BACKEND_SPECS)})")
