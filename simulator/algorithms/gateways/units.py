"""The values a gateway's configuration is written in: ``10r/s``, ``1m``, ``500ms``, ``nodelay``.

A gateway's operator writes ``rate=10r/s`` (nginx), ``period=1m`` (Traefik) or
``fill_interval=0.5s`` (Envoy), not a limit and a window in seconds. Each reader here takes one
value as the SPEC or a TOML table gives it (a string, or a number from TOML) and hands back the
simulator's own unit (requests and ms), or one :class:`ConfigError` naming the field and the
forms it accepts. Nothing here knows a gateway: each gateway's module says which field is read
by which reader.
"""

from __future__ import annotations

import math
import re

from simulator.checks import MAX_LIMIT, MAX_WINDOW_MS, ConfigError

__all__ = ["RATE_FORMS", "DURATION_FORMS", "rate", "duration_ms", "count", "flag", "shown"]

#: Units of a duration, in ms (Go's and Envoy's ``ms``, ``s``, ``m``, ``h``; ``d`` for a day).
_DURATION_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
#: nginx's rate units: requests per second or per minute.
_RATE_UNITS_MS = {"r/s": 1000, "r/m": 60_000}
DURATION_FORMS = "a duration such as 500ms, 1s, 1.5s, 1m or 1h (a bare number is seconds)"
RATE_FORMS = "a rate such as 10r/s or 600r/m (whole requests per second or per minute)"
#: Whole numbers are ASCII digits, at most 15 of them (RFC 9651's integer bound, as the headers
#: use): ``str.isdigit`` and ``\d`` would take '²' or Arabic-Indic digits, and Python refuses to
#: read an int of over 4300 digits with a ValueError of its own.
MAX_DIGITS = 15
_WHOLE = re.compile(rf"[0-9]{{1,{MAX_DIGITS}}}")
_DURATION = re.compile(rf"([0-9]{{1,{MAX_DIGITS}}}(?:\.[0-9]{{1,{MAX_DIGITS}}})?)\s*(ms|s|m|h|d)?")
_RATE = re.compile(rf"([0-9]{{1,{MAX_DIGITS}}})\s*(r/s|r/m)")
#: The largest whole number a field takes: the project's limit bound, within 15 digits.
MAX_COUNT = min(MAX_LIMIT, 10**MAX_DIGITS - 1)
#: A value echoed in a message is cut to this many characters (a 5000-digit one is not quoted whole).
_SHOWN_CHARS = 40


def _text(value: object) -> str:
    return str(value).strip() if not isinstance(value, bool) else repr(value)


def shown(text: str) -> str:
    """``text`` quoted as a message echoes it: cut, with its length said, when it is long."""
    if len(text) <= _SHOWN_CHARS:
        return repr(text)
    return f"{text[:_SHOWN_CHARS]!r}… ({len(text):,} characters)"


def duration_ms(where: str, key: str, value: object) -> int:
    """A duration as whole ms (at least 1): ``500ms``, ``1s``, ``1m``; a bare number (TOML's or
    the SPEC's) is seconds, as everywhere on the command line."""
    text = _text(value)
    found = _DURATION.fullmatch(text)
    ms = math.nan
    if found is not None:
        number, unit = found.groups()
        ms = float(number) * _DURATION_UNITS_MS[unit or "s"]
    if not math.isfinite(ms) or not 1 <= round(ms) <= MAX_WINDOW_MS or round(ms) != ms:
        raise ConfigError(f"{where}: {key} must be {DURATION_FORMS}, whole ms; got {shown(text)}")
    return round(ms)


def rate(where: str, key: str, value: object) -> tuple[int, int]:
    """nginx's ``Nr/s`` or ``Nr/m`` as (requests, per ms): ``10r/s`` is (10, 1000)."""
    text = _text(value)
    found = _RATE.fullmatch(text)
    if found is None or not 1 <= int(found.group(1)) <= MAX_COUNT:
        raise ConfigError(f"{where}: {key} must be {RATE_FORMS}; got {shown(text)}")
    return int(found.group(1)), _RATE_UNITS_MS[found.group(2)]


def count(where: str, key: str, value: object, minimum: int = 0) -> int:
    """A whole number of requests or tokens, at least ``minimum``."""
    text = _text(value)
    if _WHOLE.fullmatch(text) is None or not minimum <= int(text) <= MAX_COUNT:
        raise ConfigError(
            f"{where}: {key} must be a whole number from {minimum} to {MAX_COUNT:,}; "
            f"got {shown(text)}"
        )
    return int(text)


def flag(where: str, key: str, value: object) -> bool:
    """A flag written bare (``nodelay``) or, in a TOML table, ``nodelay = true``."""
    if value is True or value is None:
        return True
    if value is False:
        return False
    raise ConfigError(
        f"{where}: {key} is a flag: write it bare ({key}) or, in a file, {key} = true; "
        f"got {key}={shown(_text(value))}"
    )
