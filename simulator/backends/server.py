"""One real Redis/Valkey server: script calls pipelined on one connection.

Batches of ``EVALSHA`` go out in one write and their replies are read afterwards (see
:mod:`simulator.backends.wire`), a second batch in flight while the first is decoded; the server
runs one connection's commands strictly in order, so the decisions are those of one call at a time.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from simulator.backends import wire
from simulator.backends.base import (
    _SERVER_ERRORS,
    Backend,
    BackendError,
    ScriptError,
    _is_backend_failure,
    script_error,
)
from simulator.calls import Call

__all__ = ["RedisBackend", "no_retry"]


def no_retry() -> Retry:
    return Retry(NoBackoff(), 0)


class RedisBackend(Backend):
    """Any real Redis/Valkey server reached through a redis-py client.

    Key expiry runs on the server's own wall clock here: decisions of algorithms that take
    ``now_ms`` from ARGV and use the TTL only to clean up are unaffected; ``echomq`` is not.
    """

    name = "redis"
    virtual_time = False

    def __init__(
        self, client: Any, name: str = "redis", owned: Any = None, *, check: bool = True
    ) -> None:
        self.client, self.name, self.owned = client, name, owned
        if not check:
            return
        try:
            self.client.ping()
        except _SERVER_ERRORS as exc:
            self.close()
            raise BackendError(f"backend {self.name}: cannot reach the server: {exc}") from exc

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
