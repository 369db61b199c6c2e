"""``bit``, Lua BitOp's 32-bit operations: every result a signed 32-bit number."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["BIT"]


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
