"""A log's request time, as whole milliseconds since the Unix epoch.

Every log spells time its own way: ``[17/May/2015:10:05:03 +0000]`` (Apache, nginx),
``2018-07-02T22:23:00.186641Z`` (ALB, Envoy), ``1700000000.123`` seconds (nginx's ``$msec``),
``1700000000123456789`` nanoseconds (Cloudflare). A :class:`TimeSpec` names the field and how
it is spelled: a unit (``s``, ``ms``, ``us``, ``ns``) for a number, ``iso`` (ISO 8601), ``clf``
(the common log's ``%d/%b/%Y:%H:%M:%S %z``) or a strftime pattern (``%Y-%m-%dT%H:%M:%S.%fZ``).
A time without a zone is UTC.

Numbers are read exactly: ``1700000000.1239`` seconds is 1,700,000,000,123 ms, floored, never
through a float's rounding (a float from JSON is read from its shortest spelling). A time
outside ``0 <= t_ms <= MAX_T_MS`` is refused, as the CSV reader refuses one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import ROUND_FLOOR, Decimal, InvalidOperation
from typing import Any

from simulator.checks import MAX_T_MS, ConfigError

__all__ = ["TimeSpec", "UNITS", "LineError", "parse_time_option"]

#: Milliseconds per unit, as a fraction (numerator, denominator).
UNITS = {"s": (1000, 1), "ms": (1, 1), "us": (1, 1000), "ns": (1, 1_000_000)}
#: The spellings that are not a unit or a strftime pattern.
NAMED = {
    "iso": "ISO 8601 (2026-12-02T02:52:27.123Z)",
    "clf": "%d/%b/%Y:%H:%M:%S %z (17/May/2015:10:05:03 +0000)",
}
_CLF = "%d/%b/%Y:%H:%M:%S %z"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_EPOCH_DAY = date(1970, 1, 1).toordinal()
_MONTHS = {m: i for i, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split(), 1)}
_MS = timedelta(milliseconds=1)
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


class LineError(ValueError):
    """What is wrong with one line; the reader puts the file and line in front."""


def _clf_ms(text: str) -> int:
    """``17/May/2015:10:05:03 +0000`` as ms, read by position (strptime is the slow part of
    reading a log); anything not spelled exactly so goes through strptime, which says what."""
    month = _MONTHS.get(text[3:6])
    digits = text[0:2] + text[7:11] + text[12:14] + text[15:17] + text[18:20] + text[22:26]
    shape = text[2] + text[6] + text[11] + text[14] + text[17] + text[20] if len(text) == 26 else ""
    if month is None or shape != "//::: " or text[21] not in "+-" or not digits.isascii():
        return _moment_ms(datetime.strptime(text, _CLF))
    if (
        not digits.isdigit()
        or int(text[12:14]) > 23
        or int(text[15:17]) > 59
        or int(text[18:20]) > 59
    ):
        return _moment_ms(datetime.strptime(text, _CLF))
    try:
        day = date(int(text[7:11]), month, int(text[0:2])).toordinal() - _EPOCH_DAY
    except ValueError:
        return _moment_ms(datetime.strptime(text, _CLF))
    seconds = int(text[12:14]) * 3600 + int(text[15:17]) * 60 + int(text[18:20])
    zone = (int(text[22:24]) * 60 + int(text[24:26])) * 60
    return (day * 86_400 + seconds - (zone if text[21] == "+" else -zone)) * 1000


def _moment_ms(moment: datetime) -> int:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // _MS  # integer arithmetic: exact


@dataclass(frozen=True)
class TimeSpec:
    """Where a line's time is and how it is spelled: ``field`` (a field name, or a dotted path
    into a JSON object) and ``spelling`` (a unit, ``iso``, ``clf`` or a strftime pattern)."""

    field: str
    spelling: str = "iso"

    def __post_init__(self) -> None:
        if not self.field:
            raise ConfigError("--time: names no field; give FIELD[:unit|strftime], e.g. ts:s")
        if self.spelling not in UNITS and self.spelling not in NAMED and "%" not in self.spelling:
            raise ConfigError(
                f"--time {self.field}:{self.spelling}: {self.spelling!r} is not a unit "
                f"({', '.join(UNITS)}), iso, clf or a strftime pattern (with %, such as "
                "%Y-%m-%dT%H:%M:%S.%fZ)"
            )
        if "%" in self.spelling:
            try:
                datetime(2026, 12, 2, 2, 52, 27, tzinfo=UTC).strftime(self.spelling)
            except ValueError as exc:
                raise ConfigError(f"--time {self.field}:{self.spelling}: {exc}") from None

    @property
    def described(self) -> str:
        """The spelling in a message's words."""
        if self.spelling in UNITS:
            return f"a number of {self.spelling} since the Unix epoch"
        return NAMED.get(self.spelling, self.spelling)

    def t_ms(self, value: Any) -> int:
        """``value`` as ms since the epoch, or LineError naming the field and the spelling."""
        if (
            self.spelling in NAMED
            and isinstance(value, int | float)
            and not isinstance(value, bool)
        ):
            raise LineError(
                f"field {self.field}: {value!r} is a number, not {self.described}; say its "
                f"unit: --time {self.field}:s (or ms, us, ns)"
            )
        try:
            t_ms = self._read(value)
        except (ValueError, OverflowError, InvalidOperation):
            shown = value if isinstance(value, str) else repr(value)
            raise LineError(
                f'field {self.field}: "{str(shown)[:80]}" is not a time in the format '
                f"{self.described}"
            ) from None
        if not 0 <= t_ms <= MAX_T_MS:
            raise LineError(
                f"field {self.field}: {str(value)[:80]!r} is {t_ms:,} ms since the Unix epoch; "
                f"a time must be from 0 (1970-01-01 UTC) to {MAX_T_MS:,} ms"
            )
        return t_ms

    def _read(self, value: Any) -> int:
        if isinstance(value, datetime):
            return _moment_ms(value)
        if isinstance(value, bool) or value is None:
            raise ValueError("not a time")
        if self.spelling in UNITS:
            return self._number(value)
        if not isinstance(value, str):
            raise ValueError("a number where a spelled time belongs")
        if self.spelling == "iso":
            return _moment_ms(datetime.fromisoformat(value))
        if self.spelling == "clf":
            return _clf_ms(value)
        return _moment_ms(
            datetime.strptime(value, _CLF if self.spelling == "clf" else self.spelling)
        )

    def _number(self, value: Any) -> int:
        """A count of units, exactly; a string that is no number may still be ISO 8601 (a log
        written with RFC 3339 stamps where the unit was set for numbers)."""
        if isinstance(value, str):
            if not _NUMBER.fullmatch(value.strip()):
                return _moment_ms(datetime.fromisoformat(value))
            exact = Decimal(value.strip())
        elif isinstance(value, int):
            exact = Decimal(value)
        elif isinstance(value, float):
            exact = Decimal(repr(value))  # the number as the log spelled it
        else:
            raise ValueError("not a number")
        if not exact.is_finite() or abs(exact) > 10**30:
            raise ValueError("out of range")
        num, den = UNITS[self.spelling]
        return int((exact * num / den).to_integral_value(rounding=ROUND_FLOOR))


def parse_time_option(text: str) -> TimeSpec:
    """``--time FIELD[:SPELLING]``: the spelling after the first colon (a strftime pattern may
    hold colons of its own); without one, ISO 8601."""
    field, sep, spelling = text.partition(":")
    return TimeSpec(field.strip(), spelling if sep else "iso")
