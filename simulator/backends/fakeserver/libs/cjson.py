"""``cjson.encode`` as lua-cjson encodes: arrays, ``null``, ``%.14g`` numbers, its escapes;
and ``redis.sha1hex``."""

from __future__ import annotations

import hashlib
import math
from typing import Any

from fakeredis.commands_mixins import scripting_mixin as _scripting

from simulator.backends.fakeserver.libs import LibraryError
from simulator.backends.fakeserver.stock import LUA

__all__ = ["cjson_encode", "sha1hex", "NULL"]

#: cjson's ``null`` as fakeredis hands it to Lua (its decoder gives the same object).
NULL = _scripting._lua_cjson_null

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
