"""What a limiter hands a server: a script, a call of it, a batch of calls described field by field.

These are values, not bytes. A :class:`Script` carries its source and its SHA1, so a backend can
send ``EVALSHA`` and load the script once when the server has not seen it yet. A :data:`Call` is
one script call: the script, its keys, its arguments. A :class:`Batch` is many calls of one
script described field by field (a field the same in every call, or one value per call), so that
the backend that sends them can pack the whole batch from one template
(:func:`simulator.backends.wire.pack_batch`); its calls one by one are made only if someone asks
for them (a backend that runs calls singly, an error message, a script to load again).

Nothing here imports the rest of the package: algorithms describe calls with these values and
backends run them, and neither needs the other.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, overload

__all__ = ["Script", "script", "native", "Call", "Fields", "Batch"]


@dataclass(frozen=True)
class Script:
    """A Lua script by name, with its source and the SHA1 a server knows it by; or, with a
    ``command``, the server's own command standing where a script would (see :func:`native`)."""

    name: str
    source: str
    sha: str
    #: The server command sent in place of ``EVALSHA`` ("" for a Lua script).
    command: str = ""


@cache
def native(command: str) -> Script:
    """The server's own ``command`` (Redis 8.8's ``INCREX``) standing where a script would: a
    call is ``command *keys *args`` instead of ``EVALSHA``; no source, nothing to load. An
    algorithm whose call is such a command names it in ``Limiter.commands``."""
    return Script(command.lower(), "", "", command.upper())


def script(name: str, source: str) -> Script:
    """The :class:`Script` of ``source``, named ``name``."""
    return Script(name, source, hashlib.sha1(source.encode("utf-8")).hexdigest())


Call = tuple[Script, Sequence[str], Sequence[Any]]

#: A batch field by field: ``(number of keys, fields)``, each field the keys and then the
#: arguments in order, a ``str`` (the same in every call) or a list of ``str`` (one per call).
Fields = tuple[int, list[str | list[str]]]


class Batch(Sequence[Call]):
    """Calls of one script described field by field; as calls, made when first asked for.

    ``fields()`` and ``calls()`` must describe the same calls (a test holds every built-in
    limiter to it); each is made once at most.
    """

    __slots__ = ("script", "n", "_to_fields", "_to_calls", "_fields", "_calls")

    def __init__(
        self,
        script: Script,
        n: int,
        to_fields: Callable[[], Fields],
        to_calls: Callable[[], list[Call]],
    ) -> None:
        self.script, self.n = script, n
        self._to_fields, self._to_calls = to_fields, to_calls
        self._fields: Fields | None = None
        self._calls: list[Call] | None = None

    def fields(self) -> Fields:
        if self._fields is None:
            self._fields = self._to_fields()
        return self._fields

    def calls(self) -> list[Call]:
        if self._calls is None:
            self._calls = self._to_calls()
        return self._calls

    def __len__(self) -> int:
        return self.n

    @overload
    def __getitem__(self, i: int) -> Call: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Call]: ...
    def __getitem__(self, i: int | slice) -> Call | Sequence[Call]:
        return self.calls()[i]

    def __iter__(self) -> Iterator[Call]:
        return iter(self.calls())
