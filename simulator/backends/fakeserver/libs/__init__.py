"""The C libraries a Valkey script may use, written in Python for the fake server's Lua.

Valkey links ``bit`` (Lua BitOp), ``cjson``, ``cmsgpack`` and ``struct`` into its Lua; lupa's
Lua has none of them, and fakeredis gives only a ``cjson`` whose encoding is Python's (an empty
table comes out as ``[]``, ``/`` unescaped). These functions answer as those libraries do for
what a limiter script uses them for: 32-bit bit operations, JSON with cjson's arrays, ``null``
and number format, MessagePack with lua-cmsgpack's choice of the smallest type, and ``struct``'s
formats without alignment. Each is called from Lua through :func:`lifted`: it hands back
``(True, values...)`` or ``(False, message)``, and the Lua side raises the message as the C
library would (no position in front of it).
"""

from __future__ import annotations

import struct as _struct
from collections.abc import Callable
from typing import Any

__all__ = ["lifted", "LibraryError"]


class LibraryError(Exception):
    """What the C library would raise, in its words."""


def lifted(function: Callable[..., Any]) -> Callable[..., tuple[Any, ...]]:
    """``function`` as Lua calls it: ``(True, values...)``, or ``(False, message)``."""

    def call(*args: Any) -> tuple[Any, ...]:
        try:
            got = function(*args)
        except LibraryError as exc:
            return False, str(exc).encode()
        except (TypeError, ValueError, OverflowError, IndexError, _struct.error) as exc:
            return False, f"bad argument ({exc})".encode()
        return (True, *got) if type(got) is tuple else (True, got)

    return call
