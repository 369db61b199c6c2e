"""The colour rule every algorithm's colour keeps, so that a reader can tell it from the rest.

Charts draw each algorithm in its own colour, roles that are not algorithms (the exact count, a
split counter, a shared queue) in theirs, and annotations (limits, seams, notes) in black, white
and greys: the ink. An algorithm's colour is therefore

- a colour, not ink: its chroma (C* in CIE L*a*b*) at least :data:`MIN_CHROMA`;
- far enough from every other algorithm's and every role's colour: a CIE76 distance (Delta E
  in L*a*b*) of at least :data:`MIN_DELTA_E`.

A registered algorithm that breaks the rule stops the first chart that looks it up with one
:class:`~simulator.checks.ConfigError` naming the algorithm, the colour it is too close to, and a
colour that would do.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from functools import cache

from matplotlib.colors import to_rgb

from simulator.checks import ConfigError

__all__ = ["MIN_CHROMA", "MIN_DELTA_E", "delta_e", "chroma", "check_colours", "suggest"]

#: Least chroma of an algorithm's colour: below it, a grey that reads as the charts' ink.
MIN_CHROMA = 20.0
#: Least Delta E between an algorithm's colour and any other algorithm's or role's.
MIN_DELTA_E = 25.0

#: Colours offered when one breaks the rule, in order (tab20's and Dark2's strong ones).
CANDIDATES = (
    "#8c6d31",
    "#637939",
    "#843c39",
    "#7b4173",
    "#1b9e77",
    "#d95f02",
    "#393b79",
    "#e7298a",
    "#66a61e",
    "#a6761d",
    "#3182bd",
    "#e6550d",
)


@cache
def _lab(colour: str) -> tuple[float, float, float]:
    """CIE L*a*b* (D65) of a Matplotlib colour."""

    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = map(linear, to_rgb(colour))
    x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > (6 / 29) ** 3 else t / (3 * (6 / 29) ** 2) + 4 / 29

    fx, fy, fz = f(x), f(y), f(z)
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def delta_e(one: str, other: str) -> float:
    """How far apart two colours look (CIE76: the distance in L*a*b*; about 2 is just visible)."""
    return math.dist(_lab(one), _lab(other))


def chroma(colour: str) -> float:
    """How coloured a colour is (C* in L*a*b*; 0 for black, white and greys)."""
    _, a, b = _lab(colour)
    return math.hypot(a, b)


def _problem(name: str, colour: str, others: Mapping[str, str]) -> str | None:
    if chroma(colour) < MIN_CHROMA:
        return (
            f"{name}.colour: {colour!r} is a grey (chroma {chroma(colour):.0f} < {MIN_CHROMA:g}):"
            " black, white and greys are the charts' ink for limits and notes"
        )
    for other, theirs in others.items():
        if delta_e(colour, theirs) < MIN_DELTA_E:
            return (
                f"{name}.colour: {colour!r} is too close to {other}'s {theirs!r} (Delta E"
                f" {delta_e(colour, theirs):.0f} < {MIN_DELTA_E:g}): readers could not tell them apart"
            )
    return None


def suggest(taken: Iterable[str]) -> str | None:
    """The first candidate colour that keeps the rule beside the colours ``taken``."""
    used = {f"taken {i}": c for i, c in enumerate(taken)}
    return next((c for c in CANDIDATES if _problem("candidate", c, used) is None), None)


def check_colours(algorithms: Mapping[str, str], roles: Mapping[str, str]) -> None:
    """ConfigError for the first algorithm whose colour breaks the rule (see the module's
    docstring), with a colour that would do; nothing when all keep it."""
    _check(tuple(algorithms.items()), tuple(roles.items()))


@cache
def _check(algorithms: tuple[tuple[str, str], ...], roles: tuple[tuple[str, str], ...]) -> None:
    # each algorithm beside the roles and the algorithms registered before it, so that the one
    # added last is the one named
    for name, colour in algorithms:
        try:
            to_rgb(colour)
        except ValueError:
            raise ConfigError(
                f"{name}.colour: {colour!r} is not a colour Matplotlib knows"
            ) from None
    before = dict(roles)
    for name, colour in algorithms:
        problem = _problem(name, colour, before)
        if problem is not None:
            taken = [c for n, c in [*roles, *algorithms] if n != name]
            free = suggest(taken)
            hint = f"; {free} would do" if free else ""
            raise ConfigError(f"{problem}{hint} (CONTRIBUTING.md: the colour rule)")
        before[name] = colour
