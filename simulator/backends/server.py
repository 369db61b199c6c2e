"""One real Redis/Valkey server: script calls pipelined on one connection.

Batches of ``EVALSHA`` go out in one write and their replies are read afterwards (see
:mod:`simulator.backends.wire`), a second batch in flight while the first is decoded; the server
runs one connection's commands strictly in order, so the decisions are those of one call at a time.

A script that gives no reply within the client's read timeout (redis-py's default: 5 s, the
server's own busy-script limit) is taken for a script stuck in a loop: the program sends
``SCRIPT KILL`` through a fresh connection, sends nothing more, and stops the run with
:class:`ScriptLimitError`, so the server is left answering every client as it was found. Calls
already pipelined behind the stuck one cannot be taken back: each that loops too is killed in
turn (the server takes a kill only once a script has run past its busy limit).
"""

from __future__ import annotations

import math
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
    ScriptLimitError,
    _is_backend_failure,
    script_error,
)
from simulator.calls import Call, Script

__all__ = ["RedisBackend", "no_retry"]

#: What a read that timed out raises: redis-py's own error, or the socket's (hiredis path).
_TIMEOUTS = (redis.exceptions.TimeoutError, TimeoutError)
#: How long a SCRIPT KILL may wait for the server to take it.
_KILL_WAIT_S = 60.0


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

    def call(self, script: Script, keys: Sequence[str], args: Sequence[Any]) -> Any:
        try:
            return super().call(script, keys, args)
        except BackendError as exc:
            if not isinstance(exc.__cause__, _TIMEOUTS):
                raise
            raise self._stop_script(script, keys, exc.__cause__, behind=0) from None

    def _timeout_s(self) -> float:
        pool = self.client.connection_pool
        timeout = pool.connection_class(**pool.connection_kwargs).socket_timeout
        return math.inf if timeout is None else float(timeout)

    def _kill(self) -> str | None:
        """``SCRIPT KILL`` through a fresh connection: "killed", "unkillable" (the script has
        written: only the server's owner can stop it), or None (no script was running, or the
        server could not be asked)."""
        conn = self.client.connection_pool.make_connection()
        # The server takes the kill only once the script has run past its busy limit (5 s by
        # default, more if its owner set so): wait for that, not for the client's timeout.
        conn.socket_timeout = _KILL_WAIT_S
        try:
            conn.send_command("SCRIPT", "KILL")
            conn.read_response()
            return "killed"
        except redis.exceptions.ResponseError as exc:
            return "unkillable" if str(exc).startswith("UNKILLABLE") else None
        except _SERVER_ERRORS:
            return None
        finally:
            conn.disconnect()

    def _limit_error(self, script: Script, keys: Sequence[str], said: str) -> ScriptLimitError:
        if said == "unkillable" and self.owned is not None:
            how = "the server refused SCRIPT KILL (the script had written); it is stopped on exit"
        elif said == "unkillable":
            how = (
                "the server refused SCRIPT KILL (the script had written): "
                "it stays busy until its owner runs SHUTDOWN NOSAVE"
            )
        else:
            how = "stopped on the server with SCRIPT KILL"
        return ScriptLimitError(
            f"script {script.name} ran longer than {self._timeout_s():g} s on keys {list(keys)} "
            f"(no reply within the client's timeout); {how}"
        )

    def _stop_script(
        self, script: Script, keys: Sequence[str], exc: BaseException, behind: int
    ) -> Exception:
        """A call got no reply in time and its connection is dropped: kill the script on the
        server, and every one of the ``behind`` calls already sent after it that loops too;
        the error that stops the run."""
        said = self._kill()
        if said is None:  # no script was running: the server itself is slow or gone
            error = BackendError(f"backend {self.name} failed: {exc}")
            error.__cause__ = exc
            return error
        first = said
        while said == "killed" and behind > 0:
            behind -= 1
            said = self._kill()
        return self._limit_error(script, keys, first if said is None else said)

    def _drain(
        self, replies: wire.Replies, batches: list[Sequence[Call]], exc: BaseException
    ) -> Iterator[list[Any]]:
        """A read timed out with ``batches`` in flight: kill the script that holds the server,
        read on (every call already sent gets its reply, a killed one an error), killing each
        one that loops too; yield the batches' replies, the killed calls as
        :class:`ScriptLimitError`, then raise the first of those."""
        calls = [call for batch in batches for call in batch]
        got = list(replies.partial)
        said: str | None = "killed"
        while len(got) < len(calls):
            said = self._kill()
            if said != "killed":
                break
            try:
                got += replies.read(len(calls) - len(got))
            except _TIMEOUTS:
                got += replies.partial  # the next one loops too
            except _SERVER_ERRORS:
                break
        stops = [
            i
            for i, r in enumerate(got)
            if isinstance(r, redis.exceptions.ResponseError) and "killed" in str(r).lower()
        ]
        if not stops and len(got) == len(calls):
            raise BackendError(f"backend {self.name} failed: {exc}") from exc
        if len(got) < len(calls):  # the rest unanswered: the first of them held the server
            if said is None and not stops:
                raise BackendError(f"backend {self.name} failed: {exc}") from exc
            stops.append(len(got))
            got += [None] * (len(calls) - len(got))
        stuck = calls[stops[0]]
        stop = self._limit_error(stuck[0], stuck[1], "unkillable" if said == "unkillable" else "")
        for i in stops:
            got[i] = stop
        at = 0
        for batch in batches:
            part, at = got[at : at + len(batch)], at + len(batch)
            yield self._settle(batch, part, True)
            if stop in part:
                break
        raise stop

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
        done: Sequence[Call] | None = None  # the batch whose replies are being read
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
                    done = None
            while in_flight:
                done = in_flight.popleft()
                got = replies.read(len(done))
                yield self._settle(done, got, replies.failed)
                done = None
        except _TIMEOUTS as exc:
            # A call took longer than the client waits: a script stuck in a loop, most likely.
            # Nothing more is sent; the stuck script is killed, the calls in flight answered.
            if done is None:
                in_flight.append(())
                raise BackendError(f"backend {self.name} failed: {exc}") from exc
            batches = [done, *in_flight]
            in_flight.clear()
            in_flight.append(())  # the connection is dropped afterwards, whatever was read
            yield from self._drain(replies, batches, exc)
        except _SERVER_ERRORS as exc:
            in_flight.append(())  # the connection's state is unknown now
            raise BackendError(f"backend {self.name} failed: {exc}") from exc
        finally:
            if in_flight:  # replies left unread (an error, or the caller stopped early)
                conn.disconnect()
            pool.release(conn)
