"""``cmsgpack`` as lua-cmsgpack packs: the smallest type for each value, a float32 where it
is exact, a table an array when its keys are 1..n."""

from __future__ import annotations

import math
import struct as _struct
from collections.abc import Callable
from typing import Any

from simulator.backends.fakeserver.libs import LibraryError
from simulator.backends.fakeserver.stock import LUA

__all__ = ["cmsgpack"]

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
    return _mp_table(value, depth)


def _mp_table(value: Any, depth: int) -> bytes:
    """An array when the keys are 1..n (an empty table too), else a map, in ``next``'s order."""
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
            return self.container(data, tag, at)
        raise LibraryError("Bad data format in input.")

    def container(self, data: bytes, tag: int, at: int) -> tuple[Any, int]:
        """An array or a map whose tag is ``tag``, as a Lua table."""
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
