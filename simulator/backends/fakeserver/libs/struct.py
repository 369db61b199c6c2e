"""``struct`` as Lua's struct library packs, without alignment: ``<``, ``>``, ``=``, and
``b B h H l L T i[n] I[n] f d c[n] s x``."""

from __future__ import annotations

import re
import struct as _struct
import sys
from collections.abc import Callable
from typing import Any

from simulator.backends.fakeserver.libs import LibraryError

__all__ = ["STRUCT"]

_OPTION = re.compile(rb"\s*([<>=!])(\d*)|\s*([bBhHlLTiIdfcsx])(\d*)|\s*(.)")
_SIZES = {"b": 1, "B": 1, "h": 2, "H": 2, "l": 8, "L": 8, "T": 8, "d": 8, "f": 4, "x": 1}
_NATIVE = "<" if sys.byteorder == "little" else ">"


def _options(fmt: bytes) -> list[tuple[str, str, int]]:
    """(byte order, option, size) for each item of a ``struct`` format."""
    order, out = _NATIVE, []
    for m in _OPTION.finditer(fmt):
        if m.group(1):
            sign = m.group(1).decode()
            order = {"<": "<", ">": ">"}.get(sign, order if sign == "!" else _NATIVE)
        elif m.group(3):
            option = m.group(3).decode()
            digits = int(m.group(4)) if m.group(4) else None
            size = (digits or 4) if option in "iI" else _SIZES.get(option, digits or 0)
            out.append((order, option, size))
        elif m.group(5).strip():
            raise LibraryError(f"invalid format option '{m.group(5).decode()}'")
    return out


def _pack(fmt: bytes, *values: Any) -> bytes:
    out, args = [], list(values)
    for order, option, size in _options(fmt):
        if option == "x":
            out.append(b"\0")
        elif option in "df":
            out.append(_struct.pack(order + option, float(args.pop(0))))
        elif option == "s":
            out.append(args.pop(0) + b"\0")
        elif option == "c":
            text = args.pop(0)
            out.append(text if size == 0 else text[:size].ljust(size, b"\0"))
        else:
            signed = option in "bhli"
            n = int(args.pop(0)) & ((1 << (8 * size)) - 1)
            if signed and n >= 1 << (8 * size - 1):
                n -= 1 << (8 * size)
            out.append(n.to_bytes(size, "little" if order == "<" else "big", signed=signed))
    return b"".join(out)


def _unpack(fmt: bytes, data: bytes, at: Any = 1) -> tuple[Any, ...]:
    pos, out = int(at) - 1, list[Any]()
    for order, option, size in _options(fmt):
        if option == "s":
            end = data.index(b"\0", pos)
            out.append(data[pos:end])
            pos = end + 1
            continue
        if option == "c" and size == 0:
            size = int(out.pop())
        if pos + size > len(data):
            raise LibraryError("data string too short")
        chunk, pos = data[pos : pos + size], pos + size
        if option in "df":
            out.append(_struct.unpack(order + option, chunk)[0])
        elif option == "c":
            out.append(chunk)
        elif option != "x":
            signed = option in "bhli"
            out.append(int.from_bytes(chunk, "little" if order == "<" else "big", signed=signed))
    return (*out, pos + 1)


def _size(fmt: bytes) -> int:
    options = _options(fmt)
    if any(option == "s" or (option == "c" and size == 0) for _, option, size in options):
        raise LibraryError("options 'c0' - 's' have undefined sizes")
    return sum(size for _, _, size in options)


STRUCT: dict[str, Callable[..., Any]] = {"pack": _pack, "unpack": _unpack, "size": _size}
