"""The fake server without the wire: each script call handed straight to its command table.

:class:`FakeRedisBackend` talks to fakeredis as to a real server: redis-py encodes every
``EVALSHA`` in RESP, the fake socket parses it back, runs it, encodes the reply and redis-py
parses that again. None of it changes a decision, and on a short run (the explorer's, a few
thousand decisions redone at every change of a control) it is about half the time. Here
``EVALSHA`` goes to the fake socket's own command runner, under the server's lock and with the
server's clock read as fakeredis reads it (so the virtual clock still drives expiry); the reply
comes back as redis-py would have returned it, and an error as the exception redis-py would have
raised (``NOSCRIPT`` included), so :meth:`Backend.call` handles both as ever. Every other command
goes through redis-py unchanged.
"""

from __future__ import annotations

from typing import Any

from fakeredis._socket import _base as _socket_base

from simulator.backends.fake import FakeRedisBackend

__all__ = ["DirectFakeBackend"]


def _bytes(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape")
    return str(value).encode()  # ints and floats as redis-py encodes them


class _DirectClient:
    """A FakeRedis client whose ``evalsha`` skips the wire (everything else is the client's)."""

    def __init__(self, client: Any, server: Any) -> None:
        self._client, self._server = client, server
        connection = client.connection_pool.get_connection()
        connection.connect()
        self._connection = connection  # kept: the socket lives as long as its connection
        self._socket = connection._sock
        self._run, self._signature = self._socket._name_to_func("evalsha")

    def evalsha(self, sha: str, numkeys: int, *keys_and_args: Any) -> Any:
        fields = [_bytes(sha), _bytes(numkeys), *map(_bytes, keys_and_args)]
        socket, server = self._socket, self._server
        with server.lock:
            now = _socket_base.time.time()  # the virtual clock, where fakeredis reads it
            for db in server.dbs.values():
                db.time = now
            result = socket._run_command(self._run, self._signature, fields, False)
        result = socket._decode_result(result)
        if isinstance(result, Exception):
            raise result
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class DirectFakeBackend(FakeRedisBackend):
    """:class:`FakeRedisBackend` whose script calls skip redis-py and RESP (same replies)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.client = _DirectClient(self.client, self.server)

    def close(self) -> None:
        client = self.client
        if isinstance(client, _DirectClient):
            client._client.connection_pool.release(client._connection)
            self.client = client._client
        super().close()
