"""A limiter's call on the fake server without redis-py and the fake socket in between.

A script call need not travel through redis-py and the fake socket at all: :class:`DirectCalls`
hands ``EVALSHA``'s fields, as bytes, straight to fakeredis's own command execution (the same
function, the same checks, the same replies and errors), skipping redis-py's RESP packing, the
fake socket's parsing and the reply queue. That is about a third of a call's cost each way. The
server's own command a limiter may send in place of a script (``INCREX``) goes the same way
(:meth:`DirectCalls.command`), its reply read as redis-py's reply callback for it reads it.
"""

from __future__ import annotations

from typing import Any

import fakeredis
import redis
from fakeredis._socket._fakesocket import FakeSocket
from fakeredis.commands_mixins import scripting_mixin as _scripting

from simulator.backends.fakeserver.clock import SHIM
from simulator.backends.fakeserver.commands import PLAIN_REPLIES, plain_list, run

__all__ = ["DirectCalls"]


class DirectCalls:
    """``EVALSHA`` on a fakeredis server without redis-py or a socket in between.

    The fields go to the same command function (``evalsha``, its argument checks and arity),
    under the server's lock and with the server's time set on every database first, as the fake
    socket does for a command it parsed; the reply comes back as redis-py would hand it (bytes,
    integers, lists; a server error raised as redis-py's exception for it, ``NoScriptError``
    included). Arguments are encoded as redis-py encodes them: ``str`` as UTF-8, numbers by their
    ``repr``, bytes as they are. The ACL check a parsed command passes is left out: the program's
    fake server has one user, allowed everything.
    """

    def __init__(self, server: Any, callbacks: Any = None) -> None:
        self.server = server
        #: How the redis-py client beside it reads each command's reply (``execute_command``'s)
        self.callbacks = (
            fakeredis.FakeRedis(server=server).response_callbacks
            if callbacks is None
            else callbacks
        )
        self.socket = FakeSocket(server, db=0, client_class=redis.Redis)
        self._evalsha = self.socket._name_to_func("evalsha")
        self._encode = redis.connection.Encoder("utf-8", "strict", False).encode
        self._commands: dict[str, tuple[Any, Any, Any]] = {}

    def fields(self, sha: str, keys: Any, args: Any) -> list[bytes]:
        """The fields of ``EVALSHA sha len(keys) *keys *args`` as redis-py would send them."""
        return self.encoded([sha.encode(), b"%d" % len(keys)], (*keys, *args))

    def encoded(self, out: list[bytes], values: Any) -> list[bytes]:
        """``out`` and then ``values`` as redis-py would send them."""
        encode = self._encode
        for value in values:
            kind = type(value)
            if kind is str:
                out.append(value.encode())
            elif kind is int:
                out.append(b"%d" % value)
            else:
                out.append(encode(value))
        return out

    def evalsha(self, fields: list[bytes]) -> Any:
        """Run ``EVALSHA`` with ``fields`` (sha, numkeys, keys, args) and return its reply."""
        func, sig = self._evalsha
        return self._execute(func, sig, fields)

    def _execute(self, func: Any, sig: Any, fields: list[bytes]) -> Any:
        """One command on the server, as the fake socket runs one it parsed: the server's time
        set on every database, under the server's lock; its reply as redis-py reads it (an
        error raised as redis-py's exception for it)."""
        server, socket = self.server, self.socket
        now = SHIM.time()
        for db in server.dbs.values():
            db.time = now
        with server.lock:
            result = run(socket, func, sig, fields, False)
        if type(result) in PLAIN_REPLIES or plain_list(result):
            return result
        result = socket._decode_result(result)
        if isinstance(result, Exception):
            raise result
        return result

    def runs(self, name: str) -> bool:
        """True when ``name`` is a plain command of this server, which :meth:`command` runs (not
        one with a subcommand, not one the server does not know: redis-py says what those do)."""
        if name in self._commands:
            return True
        cmd = _scripting.decode_command_bytes(name.encode())
        if " " in name or cmd in _scripting.COMMANDS_WITH_SUB:
            return False
        try:
            func, sig = self.socket._name_to_func(cmd)
        except _scripting.SimpleError:
            return False
        if func is None:
            return False
        self._commands[name] = (func, sig, self.callbacks.get(name))
        return True

    def command(self, name: str, fields: list[bytes]) -> Any:
        """Run the server's own command ``name`` (one :meth:`runs`) with ``fields``, its keys and
        arguments as :meth:`encoded` makes them, and return its reply as redis-py's
        ``execute_command`` would (its reply callback applied; an error raised as redis-py's)."""
        func, sig, callback = self._commands[name]
        result = self._execute(func, sig, fields)
        return result if callback is None else callback(result)

    def close(self) -> None:
        if self.socket.responses is not None:
            self.socket.close()
