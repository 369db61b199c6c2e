"""Many script calls on one connection, without waiting for each reply.

A round trip to a server on the same machine costs tens of microseconds, the script itself a few.
Sending a batch of ``EVALSHA`` commands in one write and reading the replies afterwards removes the
waiting; keeping a second batch in flight while the first one's replies are read lets the server
work while Python decodes. The server runs commands of one connection strictly in the order sent,
so the decisions are exactly those of one round trip per call.

These helpers speak to a redis-py ``Connection`` directly: :func:`pack` turns calls into bytes (with
hiredis when it is installed), :func:`read` reads one reply per call and hands back a server error
as an exception object in its place, so the caller can name the script and keys that failed.

Packing each call on its own costs the client more than the script costs the server. A limiter
that knows the shape of its calls hands a :class:`~simulator.calls.Batch` instead, described field
by field; :func:`pack_batch` makes its bytes from one template per batch (:func:`pack_fields`:
constant fields written once, the others one column each, one join).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import redis
from redis._parsers.base import BaseParser

from simulator.calls import Batch, Call, Script

hiredis: Any
_pack_command: Any
try:  # the C packer and parser; redis-py's pure-Python ones are the fallback
    import hiredis
    from hiredis import pack_command as _pack_command
except ImportError:  # pragma: no cover - hiredis is a declared dependency
    hiredis = None
    _pack_command = None

__all__ = ["pack_command_fields", "pack_fields", "pack_batch", "pack", "send", "read", "Replies"]


def _bulk(field: object) -> str:
    text = str(field)
    return f"${len(text)}\r\n{text}\r\n"


def pack_fields(sha: str, numkeys: int, fields: Sequence[str | list[str]]) -> bytes:
    """``EVALSHA sha numkeys *fields`` for a batch of calls, as bytes: each field a ``str``
    (the same in every call) or a list of them (one per call, all lists as long).

    Every field must be ASCII (keys are: client ids are percent-encoded into their hash tag),
    so that a length in characters is its length in bytes; anything else raises.
    """
    return _pack_template(("EVALSHA", sha, str(numkeys)), fields, "pack_fields")


def pack_command_fields(command: str, fields: Sequence[str | list[str]]) -> bytes:
    """``command *fields`` for a batch of calls of the server's own command (INCREX), as
    :func:`pack_fields` packs a script's."""
    return _pack_template((command,), fields, "pack_command_fields")


def _pack_template(head: Sequence[str], fields: Sequence[str | list[str]], who: str) -> bytes:
    columns = [f for f in fields if isinstance(f, list)]
    if not columns:
        raise ValueError(f"{who}: at least one field must vary from call to call")
    # One %-format per call: the constant fields are in the template (a literal % doubled).
    template = (f"*{len(head) + len(fields)}\r\n" + "".join(map(_bulk, head))).replace("%", "%%")
    for field in fields:
        template += "$%d\r\n%s\r\n" if isinstance(field, list) else _bulk(field).replace("%", "%%")
    if len(columns) == 1:
        (column,) = columns
        text = "".join([template % (len(v), v) for v in column])
    else:
        # (len, value) pairs of every varying field, call by call
        pairs = [x for c in columns for x in (map(len, c), c)]
        text = "".join([template % t for t in zip(*pairs, strict=True)])
    return text.encode("ascii")


def pack_batch(batch: Batch) -> bytes:
    """The bytes of a :class:`~simulator.calls.Batch`, packed from its fields' template."""
    numkeys, fields = batch.fields()
    if batch.script.command:  # the server's own command: no SHA, no count of keys
        return pack_command_fields(batch.script.command, fields)
    return pack_fields(batch.script.sha, numkeys, fields)


def pack(conn: Any, calls: Sequence[Call]) -> list[bytes]:
    """The bytes of one ``EVALSHA`` per call, ready for ``send_packed_command``."""
    if isinstance(calls, Batch):
        return [pack_batch(calls)]
    if _pack_command is not None:
        packed = [_pack_command(_words(s, k, a)) for s, k, a in calls]
        return [b"".join(packed)]
    return list(conn.pack_commands([_words(s, k, a) for s, k, a in calls]))


def _words(script: Script, keys: Sequence[str], args: Sequence[Any]) -> tuple[Any, ...]:
    """One call as the words of its command: ``EVALSHA``, or the server's own command."""
    if script.command:
        return (script.command, *keys, *args)
    return ("EVALSHA", script.sha, len(keys), *keys, *args)


def send(conn: Any, calls: Sequence[Call]) -> None:
    conn.send_packed_command(pack(conn, calls), check_health=False)


class Replies:
    """Reads the replies of one connection in order, for as long as calls are in flight.

    With hiredis it parses straight from the connection's socket (redis-py's per-reply path costs
    more than the script on the server); the connection must carry nothing else meanwhile. All
    replies already in the buffer are taken at once; those of the next batch wait for it.
    """

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        sock = getattr(conn, "_sock", None)
        self._sock: Any = sock if hiredis is not None else None
        # A sentinel only equal to itself: a reply of 0 compares equal to hiredis' default False.
        self._more = object()
        self._reader = hiredis.Reader(notEnoughData=self._more) if self._sock is not None else None
        self._ahead: list[Any] = []  # replies read that belong to the next batch
        #: Whether the last :meth:`read` held a server error (most batches hold none).
        self.failed = False
        #: The replies a :meth:`read` that failed got before it failed (e.g. a call that timed out).
        self.partial: list[Any] = []

    def read(self, n: int) -> list[Any]:
        """``n`` replies; a server error reply stands in its place as redis-py's exception."""
        if self._reader is None:
            self.partial = []
            replies = read(self.conn, n, self.partial)
            self.failed = any(isinstance(r, redis.exceptions.ResponseError) for r in replies)
            return replies
        gets, feed, recv = self._reader.gets, self._reader.feed, self._sock.recv
        replies, self._ahead = self._ahead, []
        try:
            while len(replies) < n:
                replies.extend(iter(gets, self._more))  # every complete reply in the buffer, in C
                if len(replies) >= n:
                    break
                data = recv(65536)
                if not data:
                    raise redis.exceptions.ConnectionError("Connection closed by server.")
                feed(data)
        except BaseException:
            self.partial = replies  # what came before the reply that did not
            raise
        if len(replies) > n:
            replies, self._ahead = replies[:n], replies[n:]
        self.failed = hiredis.ReplyError in map(type, replies)
        if self.failed:
            for i, reply in enumerate(replies):
                if isinstance(reply, hiredis.ReplyError):
                    replies[i] = BaseParser.parse_error(str(reply))
        return replies


def read(conn: Any, n: int, replies: list[Any] | None = None) -> list[Any]:
    """``n`` replies in order; a server error reply stands in its place as the exception.
    ``replies`` (a new list) holds those that came if reading fails."""
    if replies is None:
        replies = []
    read_response = conn.read_response
    for _ in range(n):
        try:
            replies.append(read_response())
        except redis.exceptions.ResponseError as exc:
            replies.append(exc)
    return replies
