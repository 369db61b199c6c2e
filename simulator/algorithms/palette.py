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

from matplotlib.colors import hsv_to_rgb, to_hex, to_rgb

from simulator.checks import ConfigError

#: Colours of roles that are not algorithms, so that no algorithm's colour is borrowed.
ROLE_COLOURS = {
    "exact": "#555555",
    "local": "#9467bd",  # a counter inside each worker
    "split": "#8c564b",  # INCR and PEXPIRE as two commands
    "shared_queue": "#7f7f7f",  # one queue for everybody
    "per_room": "#17becf",  # one queue per room
    "variant": "#bcbd22",  # a tuned variant of a design
}

__all__ = [
    "ROLE_COLOURS",
    "MIN_CHROMA",
    "MIN_DELTA_E",
    "CANDIDATES",
    "delta_e",
    "chroma",
    "check_colours",
    "suggest",
    "free_colour",
]

#: Least chroma of an algorithm's colour: below it, a grey that reads as the charts' ink.
MIN_CHROMA = 20.0
#: Least Delta E between an algorithm's colour and any other algorithm's or role's.
MIN_DELTA_E = 25.0

#: Colours offered, in order, to a user's script and to an algorithm whose colour breaks the
#: rule: strong ones of tab20b and Dark2, apart from each other and from the shipped palette
#: (those a shipped algorithm took, or came within the rule's distance of, are gone from here:
#: offered beside nothing but the roles, they would have been offered twice).
CANDIDATES = (
    "#d6616b",
    "#9c9ede",
    "#b5cf6b",
    "#e7cb94",
    "#fdae6b",
)


def _sweep() -> list[str]:
    """More colours to try once the candidates are taken: hues round the wheel, two depths."""
    out = []
    for saturation, value in ((0.8, 0.55), (0.6, 0.85)):
        for hue in range(36):
            r, g, b = (float(c) for c in hsv_to_rgb((hue / 36, saturation, value)))
            out.append(to_hex((r, g, b)))
    return out


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
    """The first colour that keeps the rule beside the colours ``taken``: a candidate, else one
    from a sweep round the colour wheel; None when none is left. The roles' colours are taken
    whether or not ``taken`` names them."""
    used = {**ROLE_COLOURS, **{f"taken {i}": c for i, c in enumerate(taken)}}
    tried = (*CANDIDATES, *_sweep())
    return next((c for c in tried if _problem("candidate", c, used) is None), None)


def free_colour(taken: Iterable[str], who: str) -> str:
    """A colour for ``who`` (a user's script) that keeps the rule beside ``taken`` (every
    registered algorithm's and role's colour); ConfigError naming ``who`` when none is left."""
    taken = list(taken)
    colour = suggest(taken)
    if colour is None:
        raise ConfigError(
            f"{who}: no colour is left that readers could tell from the {len(taken)} taken"
            " (CONTRIBUTING.md: the colour rule); register fewer scripts at once"
        )
    return colour


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
