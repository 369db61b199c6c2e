"""What a decision's arithmetic is made of: the script's ARGV and the replies its calls got.

Each algorithm's arithmetic (:mod:`.counters`, :mod:`.schedules`) is a function of
:class:`Facts` to :class:`Arithmetic`: it reads the numbers the script itself read (``ARGV``,
the reply of its ``GET`` or ``HMGET``) and works the script's comparison out with them, in the
script's own order of operations, so its verdict is the script's. Nothing here models the
algorithm again; a number the server did not give is one the script computes from ``ARGV``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from simulator.explain.why import Call

__all__ = ["Facts", "Arithmetic", "num", "both", "ratio", "decided", "compared"]


@dataclass(frozen=True)
class Arithmetic:
    """Lines of arithmetic, the last ending in the verdict, and the verdict (True: admitted)."""

    lines: tuple[str, ...]
    admits: bool


@dataclass(frozen=True)
class Facts:
    """One traced decision: the keys and ARGV the script was given (text, as sent) and the
    calls it made, in order."""

    keys: tuple[str, ...]
    argv: tuple[str, ...]
    calls: tuple[Call, ...]

    def arg(self, i: int, default: float | None = None) -> float:
        """``ARGV[i]`` (1-based) as Lua's ``tonumber`` reads it; ``default`` when absent."""
        if i > len(self.argv):
            if default is None:
                raise IndexError(f"ARGV[{i}] was not sent")
            return default
        return float(self.argv[i - 1])

    def reply(self, command: str, key: str | None = None, nth: int = 0) -> Any:
        """The reply of the ``nth`` call of ``command`` (on ``key`` when given); None when the
        script made no such call."""
        found = [
            c
            for c in self.calls
            if c.command == command and (key is None or (c.args and c.args[0] == key))
        ]
        return found[nth].reply if nth < len(found) else None

    def number(self, command: str, key: str | None = None, default: float = 0.0) -> float:
        """A call's reply read as ``tonumber(reply or default)`` reads it."""
        got = self.reply(command, key)
        return default if got is None or got is False else float(got)

    def made(self, command: str) -> bool:
        return any(c.command == command for c in self.calls)


def _at(x: float, places: int) -> str:
    if abs(x) >= 1:
        return f"{x:.{places}f}".rstrip("0").rstrip(".")
    return f"{x:.{places + 2}g}"


def num(x: float, places: int = 2) -> str:
    """A number as a reader writes it: whole numbers bare, as ARGV carries them; others to two
    decimals (or four significant figures below 1), widened until they no longer read as a
    whole number (1.998 is ``1.998``, not ``2``)."""
    if float(x).is_integer():
        return str(int(x))
    for wider in range(places, 18):
        shown = _at(x, wider)
        if not float(shown).is_integer():
            return shown
    return repr(float(x))


def both(left: float, right: float) -> tuple[str, str]:
    """``left`` and ``right`` with digits enough to tell them apart (the same number of
    places for both), so a comparison never reads ``2 > 2``: 99.99667 against 100."""
    for places in range(2, 18):
        pair = num(left, places), num(right, places)
        if left == right or float(pair[0]) != float(pair[1]):
            return pair
    return repr(float(left)), repr(float(right))


def ratio(top: float, bottom: float) -> str:
    """``top/bottom`` reduced (59000/60000 as 59/60), or ``1`` when they are equal."""
    f = Fraction(int(top), int(bottom))
    return str(f.numerator) if f.denominator == 1 else f"{f.numerator}/{f.denominator}"


def decided(admits: bool) -> str:
    return "admitted" if admits else "refused"


def compared(left: float, ok: bool, right: float, strict: bool, how: str = "") -> str:
    """``left`` set against ``right`` with the sign that held: ``<``/``≥`` when admitting needs
    ``left < right`` (``strict``), ``≤``/``>`` when it needs ``left ≤ right``; both with digits
    enough to tell them apart. ``how`` says how ``right`` was reached (``"now − TAT = 1 − 0 = "``)."""
    shown_left, shown_right = both(left, right)
    if strict:
        return f"{shown_left} {'<' if ok else '≥'} {how}{shown_right}"
    return f"{shown_left} {'≤' if ok else '>'} {how}{shown_right}"
