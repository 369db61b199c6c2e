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

import math
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
    ScriptLimitError,
    _is_backend_failure,
    script_error,
)
from simulator.calls import Call, Script

__all__ = ["RedisBackend", "no_retry", "waiting_on", "PROVEN_CALLS", "is_busy"]

#: What a read that timed out raises: redis-py's own error, or the socket's (hiredis path).
_TIMEOUTS = (redis.exceptions.TimeoutError, TimeoutError)
#: How long a SCRIPT KILL may wait for the server to take it.
_KILL_WAIT_S = 60.0
#: Calls of an unproven script sent one at a time, each answered within its deadline, before
#: the script's calls are pipelined on a server the program did not start.
PROVEN_CALLS = 100
#: What each call of an unproven script may take (s) before the run stops waiting, unless
#: told otherwise (:meth:`RedisBackend.hold_back`): a server's default busy limit.
UNPROVEN_DEADLINE_S = 5.0

#: The call a backend on a server the program did not start is waiting on (for Ctrl-C).
_WAITING: list[str] = []


def waiting_on() -> str | None:
    """What the program is waiting for on a server it did not start (one line), or None."""
    return _WAITING[-1] if _WAITING else None


def is_busy(reply: BaseException) -> bool:
    """True for the server's BUSY reply: some client's script holds the server."""
    return str(reply).startswith("BUSY")


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

    def _timeout_for(self, script: Script) -> float:
        return self._deadline_s if script.name in self.unproven else self._timeout_s()

    def _waiting_line(self, script: Script, keys: Sequence[str]) -> str:
        return (
            f"backend {self.name}: interrupted while the server ran this run's call of "
            f"{script.name} on keys {list(keys)[:3]}; the program sends no SCRIPT KILL to a "
            "server it did not start: if that call loops, the server answers BUSY until it "
            "ends or its owner sends SCRIPT KILL"
            if self.foreign
            else f"backend {self.name}: interrupted during a call of {script.name}"
        )

    def _busy_error(self, reply: BaseException) -> BackendError:
        error = BackendError(
            f"backend {self.name}: the server is busy running a script that is not this run's "
            "(another client's); the run stopped and sent nothing more (no SCRIPT KILL): "
            f"{str(reply).splitlines()[0]}"
        )
        error.__cause__ = reply
        return error

    def _timeout_s(self) -> float:
        pool = self.client.connection_pool
        timeout = pool.connection_class(**pool.connection_kwargs).socket_timeout
        return math.inf if timeout is None else float(timeout)

    def _kill(self) -> str | None:
        """``SCRIPT KILL`` through a fresh connection: "killed", "unkillable" (the script has
        written: only the server's owner can stop it), or None (no script was running, or the
        server could not be asked). Never on a server the program did not start: "foreign"."""
        if self.foreign:
            return "foreign"
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

    def _limit_error(self, script: Script, keys: Sequence[str], said: str) -> ScriptError:
        if said == "foreign":
            return ScriptLimitError(
                f"script {script.name} gave no reply within {self._timeout_for(script):g} s on keys "
                f"{list(keys)}; the run stopped and sent nothing more. The program sends no "
                "SCRIPT KILL to a server it did not start (the server does not say whose script "
                "runs: it may be another client's): if it is this run's, the server answers BUSY "
                "until it ends or its owner sends SCRIPT KILL"
            )
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
        if said == "foreign" and script.name not in self.unproven:
            # a script known to end quickly: the server is slow, or another client's script
            # holds it; none of it this run's doing
            error = BackendError(
                f"backend {self.name}: no reply within {self._timeout_s():g} s to {script.name} "
                "(a script that ends in microseconds): the server is slow or busy with another "
                "client's script; the run stopped and sent nothing more (no SCRIPT KILL)"
            )
            error.__cause__ = exc
            return error
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
        if self.foreign:  # nothing is killed on a server the program did not start
            stuck = calls[len(got)] if len(got) < len(calls) else calls[-1]
            raise self._stop_script(stuck[0], stuck[1], exc, behind=0)
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
        in_flight: deque[Sequence[Call]] = deque()
        done: Sequence[Call] | None = None  # the batch whose replies are being read
        try:
            conn = pool.get_connection()
        except _SERVER_ERRORS as exc:
            raise BackendError(f"backend {self.name} failed: {exc}") from exc
        waiting = 0  # entries this stream put on _WAITING
        try:
            conn.connect()
            replies = wire.Replies(conn)
            for batch in batches:
                if not batch:
                    yield []
                    continue
                if self.unproven and any(c[0].name in self.unproven for c in batch):
                    while in_flight:  # what was pipelined before is answered first
                        done = in_flight.popleft()
                        yield self._settle(done, replies.read(len(done)), replies.failed)
                        done = None
                    answered: list[Any] = []
                    for call in batch:  # each alone, within its deadline
                        done = [call]
                        answered += self._alone(conn, replies, call)
                        done = None
                    yield answered
                    continue
                if self.foreign and not waiting:
                    _WAITING.append(
                        f"backend {self.name}: interrupted; the calls already sent finish on "
                        "the server (each ends within its budget), nothing more is sent"
                    )
                    waiting = 1
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
            if waiting:
                _WAITING.pop()
            if in_flight:  # replies left unread (an error, or the caller stopped early)
                conn.disconnect()
            pool.release(conn)
