"""A script call that does not answer: whose script holds the server, and what to do about it.

On a server the program started (nobody else's) a call that gets no reply in time is a script of
this run stuck in a loop: ``SCRIPT KILL`` through a fresh connection ends it, and each call
already pipelined behind it that loops too is killed in turn. On a server the program did not
start, the server cannot say whose script is running (it answers nothing but BUSY meanwhile), so
nothing is killed: the run stops, sending nothing more, and says what the server is left doing.
A BUSY reply (some other client's script holds the server) is named as such. :func:`waiting_on`
says which call the program waits for on such a server, for Ctrl-C.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

import redis

from simulator.backends import wire
from simulator.backends.base import _SERVER_ERRORS, BackendError, ScriptError, ScriptLimitError
from simulator.calls import Call, Script

__all__ = ["StuckScripts", "waiting_on", "is_busy", "PROVEN_CALLS", "UNPROVEN_DEADLINE_S"]

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
_WAITING: list[str | None] = []  # None: a call on a server the program started


def waiting_on() -> str | None:
    """What the program is waiting for on a server it did not start (one line), or None."""
    return _WAITING[-1] if _WAITING else None


def is_busy(reply: BaseException) -> bool:
    """True for the server's BUSY reply: some client's script holds the server."""
    return str(reply).startswith("BUSY")


class StuckScripts:
    """What :class:`~simulator.backends.server.RedisBackend` does when a call gets no reply in
    time, or a BUSY one."""

    name: str
    client: Any
    owned: Any
    foreign: bool
    unproven: dict[str, int]
    _deadline_s: float

    def _settle(self, batch: Sequence[Call], replies: list[Any], failed: bool = True) -> list[Any]:
        raise NotImplementedError

    def _timeout_for(self, script: Script) -> float:
        return self._deadline_s if script.name in self.unproven else self._timeout_s()

    def _waiting_line(self, script: Script, keys: Sequence[str]) -> str | None:
        """What Ctrl-C says while this call waits on a server the program did not start (on
        one it started, None: Ctrl-C waits for the call there, as it always did)."""
        return (
            f"backend {self.name}: interrupted while the server ran this run's call of "
            f"{script.name} on keys {list(keys)[:3]}; the program sends no SCRIPT KILL to a "
            "server it did not start: if that call loops, the server answers BUSY until it "
            "ends or its owner sends SCRIPT KILL"
            if self.foreign
            else None
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
        said = self._read_killing(replies, len(calls), got)
        stops = self._stopped_at(got, len(calls), said, exc)
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

    def _read_killing(self, replies: wire.Replies, expected: int, got: list[Any]) -> str | None:
        """Kill the script holding the server and read on into ``got`` until ``expected``
        replies are in, killing each next one that loops; what the last kill said (None: no
        script was running, ``"unkillable"``: one that has written)."""
        said: str | None = "killed"
        while len(got) < expected:
            said = self._kill()
            if said != "killed":
                break
            try:
                got += replies.read(expected - len(got))
            except _TIMEOUTS:
                got += replies.partial  # the next one loops too
            except _SERVER_ERRORS:
                break
        return said

    def _stopped_at(
        self, got: list[Any], expected: int, said: str | None, exc: BaseException
    ) -> list[int]:
        """The positions of the calls a kill stopped (the first unanswered one too, which held
        the server), ``got`` filled up to ``expected`` with None; a BackendError when no script
        was to blame (the server itself slow or gone)."""
        stops = [
            i
            for i, r in enumerate(got)
            if isinstance(r, redis.exceptions.ResponseError) and "killed" in str(r).lower()
        ]
        if not stops and len(got) == expected:
            raise BackendError(f"backend {self.name} failed: {exc}") from exc
        if len(got) < expected:  # the rest unanswered: the first of them held the server
            if said is None and not stops:
                raise BackendError(f"backend {self.name} failed: {exc}") from exc
            stops.append(len(got))
            got += [None] * (expected - len(got))
        return stops
