"""One real Redis/Valkey server: script calls pipelined on one connection.

Batches of ``EVALSHA`` go out in one write and their replies are read afterwards (see
:mod:`simulator.backends.wire`), a second batch in flight while the first is decoded; the server
runs one connection's commands strictly in order, so the decisions are those of one call at a time.

A script that gives no reply within the client's read timeout is taken for a script stuck in a
loop. On a server the program started (nobody else's), the program sends ``SCRIPT KILL``
through a fresh connection, sends nothing more, and stops the run with
:class:`ScriptLimitError`; each call already pipelined behind the stuck one that loops too is
killed in turn. On a server the program did not start it never sends ``SCRIPT KILL``: the server
does not say whose script is running (it answers nothing but BUSY meanwhile), and the script
may be another client's. The run stops, sending nothing more, and says so in one line. A BUSY
reply (another client's script holds the server) stops the run the same way, named as such.

Calls of a script that is not known to end quickly (:attr:`RedisBackend.unproven`: a user's
script on a server the program did not start) are sent one at a time, each within a deadline,
until :data:`PROVEN_CALLS` of them have answered in time; only then are they pipelined. While
the program waits for a reply from a server it did not start, :func:`waiting_on` says for which
call, so that Ctrl-C can end the run at once and say what the server is left doing.
"""

from __future__ import annotations

import time
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
from simulator.backends.stuck import (
    _TIMEOUTS,
    _WAITING,
    PROVEN_CALLS,
    UNPROVEN_DEADLINE_S,
    StuckScripts,
    is_busy,
    waiting_on,
)
from simulator.calls import Call, Script

__all__ = ["RedisBackend", "no_retry", "waiting_on", "PROVEN_CALLS", "is_busy"]


def no_retry() -> Retry:
    return Retry(NoBackoff(), 0)


class RedisBackend(StuckScripts, Backend):
    """Any real Redis/Valkey server reached through a redis-py client.

    Key expiry runs on the server's own wall clock here: decisions of algorithms that take
    ``now_ms`` from ARGV and use the TTL only to clean up are unaffected; ``echomq`` is not.
    """

    name = "redis"
    virtual_time = False

    def __init__(
        self,
        client: Any,
        name: str = "redis",
        owned: Any = None,
        *,
        check: bool = True,
        foreign: bool | None = None,
    ) -> None:
        self.client, self.name, self.owned = client, name, owned
        #: True on a server the program did not start (a cluster's node says for itself).
        self.foreign = owned is None if foreign is None else foreign
        #: Scripts whose calls go one at a time until each has answered :data:`PROVEN_CALLS`
        #: times within :data:`UNPROVEN_DEADLINE_S` (name -> calls answered so far).
        self.unproven: dict[str, int] = {}
        #: What each call of an unproven script may take (s): the fake server's script budget.
        self._deadline_s = UNPROVEN_DEADLINE_S
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

    def call(self, script: Script, keys: Sequence[str], args: Sequence[Any]) -> Any:
        if script.name in self.unproven:  # alone, within its deadline: see stream
            (reply,) = next(self.stream([[(script, keys, args)]], depth=1))
            if isinstance(reply, ScriptError):
                raise reply
            return reply
        _WAITING.append(self._waiting_line(script, keys))
        try:
            return super().call(script, keys, args)
        except ScriptError as exc:
            if exc.__cause__ is not None and is_busy(exc.__cause__):
                raise self._busy_error(exc.__cause__) from None
            raise
        except BackendError as exc:
            if not isinstance(exc.__cause__, _TIMEOUTS):
                raise
            raise self._stop_script(script, keys, exc.__cause__, behind=0) from None
        finally:
            _WAITING.pop()

    def hold_back(self, scripts: Iterable[str], deadline_s: float = UNPROVEN_DEADLINE_S) -> None:
        """Send the calls of ``scripts`` one at a time, each answered within ``deadline_s``,
        until each has answered :data:`PROVEN_CALLS` times (then they are pipelined)."""
        self._deadline_s = deadline_s
        for name in scripts:
            self.unproven.setdefault(name, 0)

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
                if is_busy(reply):
                    raise self._busy_error(reply)
                if _is_backend_failure(reply):
                    raise BackendError(f"backend {self.name} failed: {reply}") from reply
                replies[i] = script_error(batch[i][0], batch[i][1], reply)
        return replies

    def _alone(self, conn: Any, replies: wire.Replies, call: Call) -> list[Any]:
        """One call of an unproven script, sent alone, its reply awaited
        :data:`UNPROVEN_DEADLINE_S` at most (a timeout stops the run, nothing more sent)."""
        script, keys = call[0], call[1]
        sock = getattr(conn, "_sock", None)
        self.preload([script])  # a NOSCRIPT reply would be retried through call(): not here
        began = time.monotonic()
        _WAITING.append(self._waiting_line(script, keys))
        try:
            if sock is not None:
                sock.settimeout(self._deadline_s)
            wire.send(conn, [call])
            got = self._settle([call], replies.read(1), replies.failed)
        finally:
            _WAITING.pop()
            if sock is not None:
                sock.settimeout(conn.socket_timeout)
        if script.name in self.unproven and time.monotonic() - began < self._deadline_s:
            self.unproven[script.name] += 1
            if self.unproven[script.name] >= PROVEN_CALLS:
                del self.unproven[script.name]  # shown to answer in time: pipelined from now
        return got

    def stream(self, batches: Iterable[Sequence[Call]], depth: int = 2) -> Iterator[list[Any]]:
        pool = self.client.connection_pool
        sent = _InFlight()
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
                if self.unproven and any(c[0].name in self.unproven for c in batch):
                    yield from self._one_by_one(conn, replies, sent, batch)
                    continue
                self._send(conn, sent, batch)
                if len(sent.batches) >= depth:
                    yield self._answer_oldest(replies, sent)
            while sent.batches:
                yield self._answer_oldest(replies, sent)
        except _TIMEOUTS as exc:
            # A call took longer than the client waits: a script stuck in a loop, most likely.
            # Nothing more is sent; the stuck script is killed, the calls in flight answered.
            if sent.reading is None:
                sent.batches.append(())
                raise BackendError(f"backend {self.name} failed: {exc}") from exc
            batches = [sent.reading, *sent.batches]
            sent.batches.clear()
            sent.batches.append(())  # the connection is dropped afterwards, whatever was read
            yield from self._drain(replies, batches, exc)
        except _SERVER_ERRORS as exc:
            sent.batches.append(())  # the connection's state is unknown now
            raise BackendError(f"backend {self.name} failed: {exc}") from exc
        finally:
            if sent.announced:
                _WAITING.pop()
            if sent.batches:  # replies left unread (an error, or the caller stopped early)
                conn.disconnect()
            pool.release(conn)

    def _send(self, conn: Any, sent: _InFlight, batch: Sequence[Call]) -> None:
        """Send ``batch`` pipelined; on a server the program did not start, the first batch
        sent puts the line an interruption prints on ``_WAITING`` (once per stream)."""
        if self.foreign and not sent.announced:
            _WAITING.append(
                f"backend {self.name}: interrupted; the calls already sent finish on "
                "the server (each ends within its budget), nothing more is sent"
            )
            sent.announced = True
        wire.send(conn, batch)
        sent.batches.append(batch)

    def _answer_oldest(self, replies: wire.Replies, sent: _InFlight) -> list[Any]:
        """The replies of the oldest batch in flight, read (and settled) now."""
        sent.reading = sent.batches.popleft()
        got = self._settle(sent.reading, replies.read(len(sent.reading)), replies.failed)
        sent.reading = None
        return got

    def _one_by_one(
        self, conn: Any, replies: wire.Replies, sent: _InFlight, batch: Sequence[Call]
    ) -> Iterator[list[Any]]:
        """A batch with a script not yet shown to answer in time: what was pipelined before is
        answered first, then each call goes alone, within its deadline."""
        while sent.batches:
            yield self._answer_oldest(replies, sent)
        answered: list[Any] = []
        for call in batch:
            sent.reading = [call]
            answered += self._alone(conn, replies, call)
            sent.reading = None
        yield answered


class _InFlight:
    """A stream's batches sent and not yet answered, and the one whose replies are being read
    (what a read that times out was waiting for), and whether it put its line on
    ``_WAITING``."""

    def __init__(self) -> None:
        self.batches: deque[Sequence[Call]] = deque()
        self.reading: Sequence[Call] | None = None
        self.announced = False
