"""Predict, then reveal: a lesson's guess held back against its result until the learner makes one.

A lesson asks a question ("how many of the 200 get through?") and the learner writes a guess in
an editable cell, ``my_guess = None`` until they do. The cell that would show the answer calls
:func:`reveal` instead of printing the result: with no guess it says *make your guess first* and
shows nothing of the answer, so Run All of an untouched notebook stays green without giving the
answer away; with a guess it sets guess and result side by side and says how far off it was.

A guess is one number (``my_guess = 150``) or one number per name (``{"fixed_window": 200}``,
for a question asked of several limiters at once); a dictionary whose values are all ``None``
counts as no guess, and a name left at ``None`` is shown as not guessed.
"""

from __future__ import annotations

from collections.abc import Mapping
from numbers import Real
from typing import Any

from IPython.display import Markdown

__all__ = ["NO_GUESS", "guessed", "hold", "reveal"]

#: What a reveal says before a guess is given (a test looks for these words).
NO_GUESS = "make your guess first"


def guessed(guess: object) -> bool:
    """Whether ``guess`` holds at least one number (``None`` and a dictionary of ``None``s do not)."""
    if isinstance(guess, Mapping):
        return any(v is not None for v in guess.values())
    return guess is not None


def hold(guess: object, shown: object, what: str = "this") -> object:
    """``shown`` (a table, a figure) once a guess is given; until then a line saying why not.

    For the cells right after a reveal that would give its answer away by themselves."""
    if guessed(guess):
        return shown
    return Markdown(f"*{NO_GUESS}: {what} appears once `my_guess` holds your guess.*")


def reveal(guess: object, result: Any, unit: str = "", *, question: str = "") -> Markdown:
    """The comparison of ``guess`` with ``result`` as Markdown, or a request for a guess.

    ``result``: a number, or numbers by name (a dict or a pandas Series) when ``guess`` is a
    dictionary of names. ``unit``: what the numbers count (``"admitted"``, ``"MB"``), written
    after each. ``question``: the question in a few words, repeated over the answer."""
    head = f"**{question}**\n\n" if question else ""
    if not guessed(guess):
        return Markdown(
            f"{head}**{NO_GUESS}:** no guess was given. Set `my_guess` in the guess cell (it is "
            "`None` until you do), run it, then run this cell again to see the answer."
        )
    if isinstance(guess, Mapping):
        return Markdown(head + _table(guess, dict(result), unit))
    mine, value = _guess(guess, "my_guess", "a number or a dictionary of numbers"), _number(result)
    return Markdown(f"{head}You guessed **{_fmt(mine, unit)}**; the run gives "
                    f"**{_fmt(value, unit)}**: {_verdict(mine, value)}.")  # fmt: skip


def _table(guess: Mapping[str, object], result: Mapping[str, Any], unit: str) -> str:
    """One row per name of the result: the guess, the result, and how far apart they are."""
    heading = f"result ({unit})" if unit else "result"
    rows = [f"| | your guess | {heading} | |", "|---|---:|---:|---|"]
    for name, raw in result.items():
        value = _number(raw)
        mine = guess.get(name)
        if mine is None:
            rows.append(f"| `{name}` | – | {_fmt(value)} | not guessed |")
            continue
        number = _guess(mine, f"my_guess[{name!r}]", "a number")
        rows.append(f"| `{name}` | {_fmt(number)} | {_fmt(value)} | {_verdict(number, value)} |")
    unknown = sorted(set(guess) - set(result))
    if unknown:
        rows.append(f"\nNot in this run, so not compared: {', '.join(f'`{n}`' for n in unknown)}.")
    return "\n".join(rows)


def _verdict(guess: float, value: float) -> str:
    """Right, or over/under by how much (and by what share when the result is not zero)."""
    if abs(guess - value) <= 1e-9 * max(1.0, abs(value)):
        return "right"
    side = "over" if guess > value else "under"
    share = f" ({abs(guess - value) / abs(value):.0%})" if value else ""
    return f"{side} by {_fmt(abs(guess - value))}{share}"


def _guess(raw: object, field: str, wanted: str) -> float:
    """A guess as a float, or a TypeError naming the field and what it should hold."""
    if isinstance(raw, bool) or not isinstance(raw, Real):
        raise TypeError(f"{field}: {wanted}, not {raw!r}")
    return float(raw)


def _number(raw: Any) -> float:
    """A result as a float (a numpy scalar or an int from a frame included)."""
    return float(raw)


def _fmt(value: float, unit: str = "") -> str:
    """``value`` with thousands separators, as a whole number when it is one."""
    text = f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"
    return f"{text} {unit}".rstrip()
