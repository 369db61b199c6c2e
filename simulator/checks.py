"""The package's errors and checks: what a value must be before anything runs with it.

Every field a user gives (a scenario's, a client's, an algorithm's own parameter, a CLI option,
a trace's line) is checked once, where it enters, and a bad one fails with one
:class:`ConfigError` naming the field (``limit: must be >= 1, got 0``). The bounds come from what a
Lua script can hold exactly: times, windows and counts travel as Lua numbers (doubles).

Nothing here imports the rest of the package, so every room may import it.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping

__all__ = [
    "ConfigError",
    "check_int",
    "check_number",
    "check_client_id",
    "check_cost",
    "LUA_EXACT",
    "MAX_T_MS",
    "MAX_WINDOW_MS",
    "MAX_LIMIT",
]

#: The largest integer a Lua number (a double) holds exactly: scripts compute with times, windows
#: and counts as Lua numbers, so every value they see stays below it.
LUA_EXACT = 2**53
#: Latest request time (ms): a script computes ``t_ms + 2 x window_ms`` and that must stay exact.
MAX_T_MS = 2**52 - 1
#: Longest window (ms, about 35,700 years).
MAX_WINDOW_MS = 2**50
#: Largest limit per window.
MAX_LIMIT = 2**50


class ConfigError(ValueError):
    """A scenario or client field has a value the model cannot run with."""


def check_int(owner: str, name: str, value: object, lo: int, hi: int | None = None) -> int:
    """``value`` as a Python int in ``[lo, hi]``, or a :class:`ConfigError` naming the field.

    Integers of any kind are accepted (numpy's too); booleans, floats and strings are not.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ConfigError(f"{owner}.{name}: must be an integer, got {value!r}")
    number = int(value)
    if number < lo or (hi is not None and number > hi):
        bound = f">= {lo}" if hi is None else f"from {lo} to {hi:,}"
        raise ConfigError(f"{owner}.{name}: must be an integer {bound}, got {number}")
    return number


def check_number(
    owner: str, name: str, value: object, *, positive: bool = False, hi: float | None = None
) -> float:
    """``value`` as a finite number ``>= 0`` (``> 0`` if ``positive``, ``<= hi``), or ConfigError."""
    wanted = f"a finite number {'>' if positive else '>='} 0" + (
        f" and <= {hi:,.0f}" if hi is not None else ""
    )
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ConfigError(f"{owner}.{name}: must be {wanted}, got {value!r}")
    # Python numbers are kept as given (a run's id is made from the scenario's repr); others,
    # such as numpy's, become floats.
    try:
        number: float = (
            value
            if isinstance(value, int | float) and type(value) in (int, float)
            else float(value)
        )
        finite = math.isfinite(number)
    except OverflowError:  # an integer too large for a float
        raise ConfigError(f"{owner}.{name}: must be {wanted}, got {value!r}") from None
    if not finite or number < 0 or (positive and number == 0) or (hi is not None and number > hi):
        raise ConfigError(f"{owner}.{name}: must be {wanted}, got {value!r}")
    return number


def check_client_id(owner: str, name: str, value: object) -> str:
    """A client id: any string whose bytes can be written back out.

    Ids read from files keep undecodable bytes as lone surrogates U+DC80..U+DCFF (Python's
    ``surrogateescape``); any other lone surrogate stands for no byte at all and is refused.
    """
    if not isinstance(value, str):
        raise ConfigError(f"{owner}.{name}: must be a string, got {value!r}")
    try:
        value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as exc:
        raise ConfigError(
            f"{owner}.{name}: {value!r} holds a lone surrogate ({exc.object[exc.start]!r}) "
            "that stands for no byte"
        ) from None
    return value


def check_cost(owner: str, name: str, value: object) -> int | tuple[tuple[int, float], ...]:
    """A request's cost: an integer >= 1, or a mix ``((cost, weight), ...)`` to draw from (each
    request independently, weights > 0 in any scale); ConfigError naming the field otherwise."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return check_int(owner, name, value, 1, MAX_LIMIT)
    if isinstance(value, Mapping):
        value = tuple(value.items())
    if not isinstance(value, (tuple, list)) or not value:
        raise ConfigError(
            f"{owner}.{name}: an integer >= 1 or ((cost, weight), ...) pairs, got {value!r}"
        )
    mix = []
    for i, pair in enumerate(value):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ConfigError(f"{owner}.{name}[{i}]: must be a (cost, weight) pair, got {pair!r}")
        cost = check_int(owner, f"{name}[{i}] cost", pair[0], 1, MAX_LIMIT)
        weight = check_number(owner, f"{name}[{i}] weight", pair[1], positive=True)
        mix.append((cost, weight))
    return tuple(mix)
