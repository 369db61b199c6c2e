"""The fields of a reply the grader compares, and the header fields a server would make of them.

A script that admits the right requests can still tell a client lies: a count of 0, nothing
remaining, a reset that never comes. So a decision is compared field by field, in the order a
reader would look: ``allowed``, then ``count``, ``remaining``, ``reset`` and ``retry_after``
(milliseconds), then the header fields they make (:func:`~simulator.headers.http_headers`, as
``replay --headers`` writes them): ``RateLimit`` ``r`` and ``t`` and ``Retry-After``.

Every field must be equal, except ``count``, which may differ by :data:`COUNT_TOLERANCE` of its
size: the sliding counter's count is an estimate, a float that Lua and Python may round in a
different last bit. A field a script's declaration does not return is not compared (and neither
is a header made of it); :func:`compared` says which are.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from simulator.headers import http_headers
from simulator.records import Decision

__all__ = [
    "FIELDS",
    "HEADER_FIELDS",
    "COUNT_TOLERANCE",
    "TOLERANCES",
    "Difference",
    "compared",
    "first_difference",
    "header_values",
]

#: The reply's fields, as a declaration names them, in the order they are compared.
FIELDS = ("allowed", "count", "remaining", "reset", "retry_after")
#: The header fields, each with the reply fields it is made of.
HEADER_FIELDS = {
    "RateLimit r": ("remaining",),
    "RateLimit t": ("reset", "retry_after"),
    "Retry-After": ("retry_after",),
}
#: How far ``count`` may be off, relative to the expected count (at least 1): a float's last bits.
COUNT_TOLERANCE = 1e-9
#: The tolerance of each field that has one, as said in a verdict.
TOLERANCES = {
    "count": f"to within {COUNT_TOLERANCE:g} x max(1, expected): an estimate, as the sliding "
    "counter's, is a float"
}
#: Where each field is in a :class:`Decision`, and its unit.
_ATTR = {
    "allowed": ("allowed", ""),
    "count": ("count", ""),
    "remaining": ("remaining", ""),
    "reset": ("reset_ms", " ms"),
    "retry_after": ("retry_after_ms", " ms"),
}


@dataclass(frozen=True)
class Difference:
    """One field on which a decision differs: its name, what was expected and what came."""

    field: str
    expected: str
    got: str

    def __str__(self) -> str:
        return f"{self.field}: expected {self.expected}, got {self.got}"


def compared(declared: Iterable[str] | None) -> tuple[str, ...]:
    """The fields compared for a script returning ``declared`` (None: a Python algorithm,
    which returns them all), headers included: ``allowed`` always."""
    have = set(FIELDS if declared is None else declared) | {"allowed"}
    own = tuple(f for f in FIELDS if f in have)
    return own + tuple(h for h, made_of in HEADER_FIELDS.items() if set(made_of) <= have)


def _value(d: Decision, name: str) -> str:
    attr, unit = _ATTR[name]
    v = getattr(d, attr)
    if name == "allowed":
        return "1 (admitted)" if v else "0 (refused)"
    return f"{v:g}{unit}" if isinstance(v, float) else f"{v}{unit}"


def _same(name: str, a: Decision, b: Decision) -> bool:
    x, y = getattr(a, _ATTR[name][0]), getattr(b, _ATTR[name][0])
    if name == "count":
        return math.isclose(x, y, rel_tol=0, abs_tol=COUNT_TOLERANCE * max(1.0, abs(y)))
    return bool(x == y)


def header_values(d: Decision, window_ms: int) -> dict[str, str]:
    """``RateLimit``'s ``r`` and ``t`` and ``Retry-After`` for decision ``d`` ('' where none is
    sent), as ``replay --headers draft`` writes them."""
    fields = http_headers(d, "draft", window_ms, policy="p")
    params = dict(
        item.split("=", 1) for item in fields.get("RateLimit", "").split(";")[1:] if "=" in item
    )
    return {
        "RateLimit r": params.get("r", ""),
        "RateLimit t": params.get("t", ""),
        "Retry-After": fields.get("Retry-After", ""),
    }


def first_difference(
    fields: tuple[str, ...], got: Decision, expected: Decision, window_ms: int
) -> Difference | None:
    """The first of ``fields`` on which ``got`` differs from ``expected``, or None."""
    for name in fields:
        if name in _ATTR and not _same(name, got, expected):
            return Difference(name, _value(expected, name), _value(got, name))
    headers = [h for h in fields if h in HEADER_FIELDS]
    if headers:
        # a reply declares no limit: both are sent under the reference's quota (a bucket's burst)
        mine = header_values(got._replace(limit=expected.limit), window_ms)
        theirs = header_values(expected, window_ms)
        for h in headers:
            if mine[h] != theirs[h]:
                return Difference(h, repr(theirs[h] or "(none)"), repr(mine[h] or "(none)"))
    return None
