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

import hashlib
import math
import re
import struct as _struct
import sys
from collections.abc import Callable
from typing import Any

from fakeredis.commands_mixins import scripting_mixin as _scripting

from simulator.backends.fakeserver.stock import LUA

__all__ = ["lifted", "BIT", "STRUCT", "cmsgpack", "cjson_encode", "sha1hex", "LibraryError"]

#: cjson's ``null`` as fakeredis hands it to Lua (its decoder gives the same object).
NULL = _scripting._lua_cjson_null


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


# --- bit -----------------------------------------------------------------------------------


def _tobit(x: Any) -> int:
    n = round(x) & 0xFFFFFFFF  # BitOp rounds a fraction to the nearest, ties to even
    return n - 0x100000000 if n & 0x80000000 else n


def _tohex(x: Any, n: Any = 8) -> bytes:
    width = int(n)
    size = abs(width)
    digits = f"{_tobit(x) & ((1 << (4 * min(size, 8))) - 1):0{size}x}"
    return (digits.upper() if width < 0 else digits)[-size:].encode()


def _fold(op: Callable[[int, int], int]) -> Callable[..., int]:
    def apply(x: Any, *more: Any) -> int:
        value = _tobit(x)
        for y in more:
            value = op(value, _tobit(y))
        return _tobit(value)

    return apply


def _rol(x: Any, n: Any) -> int:
    u, s = _tobit(x) & 0xFFFFFFFF, int(n) & 31
    return _tobit((u << s) | (u >> (32 - s)))


BIT: dict[str, Callable[..., Any]] = {
    "tobit": _tobit,
    "tohex": _tohex,
    "bnot": lambda x: _tobit(~_tobit(x)),
    "band": _fold(lambda a, b: a & b),
    "bor": _fold(lambda a, b: a | b),
    "bxor": _fold(lambda a, b: a ^ b),
    "lshift": lambda x, n: _tobit(_tobit(x) << (int(n) & 31)),
    "rshift": lambda x, n: _tobit((_tobit(x) & 0xFFFFFFFF) >> (int(n) & 31)),
    "arshift": lambda x, n: _tobit(_tobit(x) >> (int(n) & 31)),
    "rol": _rol,
    "ror": lambda x, n: _rol(x, 32 - (int(n) & 31)),
    "bswap": lambda x: _tobit(int.from_bytes((_tobit(x) & 0xFFFFFFFF).to_bytes(4, "little"))),
}


# --- cjson ---------------------------------------------------------------------------------

_ESCAPES = {ord('"'): b'\\"', ord("\\"): b"\\\\", ord("/"): b"\\/", 8: b"\\b", 12: b"\\f"}
_ESCAPES |= {10: b"\\n", 13: b"\\r", 9: b"\\t", 127: b"\\u007f"}
_ESCAPES |= {c: b"\\u%04x" % c for c in range(32) if c not in _ESCAPES}
_NESTING_MAX = 1000


def _json_number(x: Any) -> bytes:
    if not math.isfinite(x):
        raise LibraryError("Cannot serialise number: must not be NaN or Inf")
    return b"%.14g" % x


def _json_string(text: bytes) -> bytes:
    return b'"' + b"".join(_ESCAPES.get(c, bytes((c,))) for c in text) + b'"'


def _array_length(table: Any) -> int:
    """cjson's test: the largest key of a table whose keys are all positive integers, else -1
    (an empty table is an object); a sparse array is refused as cjson refuses it."""
    largest = count = 0
    for key in table.keys():
        if type(key) not in (int, float) or key < 1 or key != int(key):
            return -1
        largest, count = max(largest, int(key)), count + 1
    if largest > 10 and largest > 2 * count:
        raise LibraryError("Cannot serialise table: excessively sparse array")
    return largest if largest else -1


def _json(value: Any, depth: int) -> bytes:
    kind = type(value)
    if value is None or value is NULL:
        return b"null"
    if kind is bool:
        return b"true" if value else b"false"
    if kind in (int, float):
        return _json_number(value)
    if kind is bytes:
        return _json_string(value)
    if LUA.lua_type(value) != "table":
        raise LibraryError(
            f"Cannot serialise {LUA.lua_type(value) or 'userdata'}: type not supported"
        )
    if depth > _NESTING_MAX:
        raise LibraryError(f"Cannot serialise, excessive nesting ({depth})")
    n = _array_length(value)
    if n >= 0:
        return b"[" + b",".join(_json(value[i], depth + 1) for i in range(1, n + 1)) + b"]"
    fields = []
    for key, item in value.items():
        if type(key) in (int, float):
            key = _json_number(key)
        elif type(key) is not bytes:
            raise LibraryError("Cannot serialise table: table key must be a number or string")
        fields.append(_json_string(key) + b":" + _json(item, depth + 1))
    return b"{" + b",".join(fields) + b"}"


def cjson_encode(value: Any) -> bytes:
    """``cjson.encode``: cjson's text for ``value``."""
    return _json(value, 1)


def sha1hex(text: Any) -> bytes:
    """``redis.sha1hex``: the SHA1 of a string (a number as its text), in lowercase hex."""
    if type(text) in (int, float):
        text = b"%.14g" % text
    if type(text) is not bytes:
        raise LibraryError("wrong number of arguments")
    return hashlib.sha1(text).hexdigest().encode()


# --- cmsgpack ------------------------------------------------------------------------------

_NESTING_MP = 16  # lua-cmsgpack packs a table nested deeper than this as nil


def _mp_int(n: int) -> bytes:
    if 0 <= n <= 0x7F or -32 <= n < 0:
        return _struct.pack(">b" if n < 0 else ">B", n)
    for tag, fmt, low, high in (
        (0xCC, ">B", 0, 0xFF),
        (0xCD, ">H", 0, 0xFFFF),
        (0xCE, ">I", 0, 0xFFFFFFFF),
        (0xCF, ">Q", 0, 2**64 - 1),
        (0xD0, ">b", -128, -1),
        (0xD1, ">h", -32768, -1),
        (0xD2, ">i", -(2**31), -1),
        (0xD3, ">q", -(2**63), -1),
    ):
        if low <= n <= high:
            return bytes((tag,)) + _struct.pack(fmt, n)
    raise OverflowError(n)


def _mp_number(x: Any) -> bytes:
    if math.isfinite(x) and x == int(x) and -(2**63) <= x < 2**63:
        return _mp_int(int(x))
    try:
        if _struct.unpack(">f", _struct.pack(">f", x))[0] == x or not math.isfinite(x):
            return b"\xca" + _struct.pack(">f", x)
    except OverflowError:
        pass
    return b"\xcb" + _struct.pack(">d", x)


def _mp_sized(n: int, small: tuple[int, int], tags: tuple[int, ...]) -> bytes:
    """A header for ``n`` items: the fixed form below ``small[1]``, else the smallest sized one."""
    if n < small[1]:
        return bytes((small[0] | n,))
    sizes = ((">B", 0xFF), (">H", 0xFFFF), (">I", 0xFFFFFFFF))[-len(tags) :]
    for tag, (fmt, top) in zip(tags, sizes, strict=True):
        if n <= top:
            return bytes((tag,)) + _struct.pack(fmt, n)
    raise OverflowError(n)


def _mp(value: Any, depth: int) -> bytes:
    kind = type(value)
    if value is None:
        return b"\xc0"
    if kind is bool:
        return b"\xc3" if value else b"\xc2"
    if kind in (int, float):
        return _mp_number(value)
    if kind is bytes:
        return _mp_sized(len(value), (0xA0, 32), (0xD9, 0xDA, 0xDB)) + value
    if LUA.lua_type(value) != "table" or depth >= _NESTING_MP:
        return b"\xc0"
    items = list(value.items())
    keys = [k for k, _ in items]
    if all(type(k) in (int, float) and k >= 1 and k == int(k) for k in keys) and (
        not keys or max(keys) == len(keys)
    ):
        out = [_mp_sized(len(keys), (0x90, 16), (0xDC, 0xDD))]
        out += [_mp(value[i], depth + 1) for i in range(1, len(keys) + 1)]
        return b"".join(out)
    out = [_mp_sized(len(items), (0x80, 16), (0xDE, 0xDF))]
    out += [_mp(k, depth + 1) + _mp(v, depth + 1) for k, v in items]
    return b"".join(out)


_FIXED = {0xC0: None, 0xC2: False, 0xC3: True}
_SIZED = {
    **{tag: fmt for tag, fmt in zip(b"\xcc\xcd\xce\xcf", (">B", ">H", ">I", ">Q"), strict=True)},
    **{tag: fmt for tag, fmt in zip(b"\xd0\xd1\xd2\xd3", (">b", ">h", ">i", ">q"), strict=True)},
    0xCA: ">f",
    0xCB: ">d",
}
_LENGTHS = {0xD9: ">B", 0xDA: ">H", 0xDB: ">I", 0xC4: ">B", 0xC5: ">H", 0xC6: ">I"}
_COUNTS = {0xDC: (">H", 1), 0xDD: (">I", 1), 0xDE: (">H", 2), 0xDF: (">I", 2)}


def _read(data: bytes, at: int, fmt: str) -> tuple[Any, int]:
    size = _struct.calcsize(fmt)
    if at + size > len(data):
        raise LibraryError("Missing bytes in input.")
    return _struct.unpack_from(fmt, data, at)[0], at + size


class _Unpacker:
    def __init__(self, runtime: Any) -> None:
        self.runtime = runtime

    def one(self, data: bytes, at: int) -> tuple[Any, int]:
        tag, at = _read(data, at, ">B")
        if tag <= 0x7F or tag >= 0xE0:
            return (tag if tag <= 0x7F else tag - 256), at
        if tag in _FIXED:
            return _FIXED[tag], at
        if tag in _SIZED:
            return _read(data, at, _SIZED[tag])
        if 0xA0 <= tag <= 0xBF or tag in _LENGTHS:
            n, at = (tag & 0x1F, at) if tag <= 0xBF else _read(data, at, _LENGTHS[tag])
            if at + n > len(data):
                raise LibraryError("Missing bytes in input.")
            return data[at : at + n], at + n
        if 0x80 <= tag <= 0x9F or tag in _COUNTS:
            if tag <= 0x9F:
                n, per = tag & 0x0F, (2 if tag <= 0x8F else 1)
            else:
                fmt, per = _COUNTS[tag]
                n, at = _read(data, at, fmt)
            values: list[Any] = []
            for _ in range(n * per):
                value, at = self.one(data, at)
                values.append(value)
            if per == 1:
                return self.runtime.table_from(values), at
            return self.runtime.table_from(dict(zip(values[::2], values[1::2], strict=True))), at
        raise LibraryError("Bad data format in input.")

    def limited(self, data: bytes, limit: int, at: int) -> tuple[Any, ...]:
        values: list[Any] = []
        while at < len(data) and (limit <= 0 or len(values) < limit):
            value, at = self.one(data, at)
            values.append(value)
        return at if at < len(data) else -1, *values


def cmsgpack(runtime: Any) -> dict[str, Callable[..., Any]]:
    """``cmsgpack``'s functions, its tables made in ``runtime``."""
    unpacker = _Unpacker(runtime)
    return {
        "pack": lambda *values: b"".join(_mp(v, 0) for v in values),
        "unpack": lambda data: unpacker.limited(data, 0, 0)[1:],
        "unpack_one": lambda data, at=0: unpacker.limited(data, 1, int(at)),
        "unpack_limit": lambda data, limit, at=0: unpacker.limited(data, int(limit), int(at)),
    }


# --- struct --------------------------------------------------------------------------------

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
