"""The exercises of notebook 06: write each window algorithm in Lua, graded against its reference.

Each exercise is a skeleton under ``notebooks/exercises/<name>.lua``: the declaration (how the
workbench calls it) and the contract are filled in, the algorithm is missing. :func:`attempt`
registers the student's script once it is written; a skeleton left as it is was **not
attempted**, and :func:`grade` says so rather than grade anything in its place.

The solution is the project's own script, ``simulator/algorithms/lua/<name>.lua``, called
through the declaration in ``notebooks/exercises/solutions/<name>.toml`` (the same contract).
:func:`solution` registers it, to be shown as a worked example: what a script that agrees on
every field looks like, never a student's verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from simulator.userscripts.check import Verdict, check
from simulator.userscripts.limiter import register_script

__all__ = [
    "EXERCISES",
    "UNWRITTEN",
    "NOT_ATTEMPTED",
    "Attempt",
    "Grade",
    "attempt",
    "solution",
    "grade",
]

#: The card's "done when": all three window algorithms, atomically, in Lua.
EXERCISES = ("fixed_window", "sliding_log", "sliding_counter")
#: What an unwritten skeleton still says.
UNWRITTEN = "not written yet"
#: The verdict on a skeleton left as it is.
NOT_ATTEMPTED = "not attempted"


@dataclass(frozen=True)
class Attempt:
    exercise: str
    name: str | None  # the algorithm it is registered as; None: not attempted
    path: Path
    solution: bool = False  # True: the project's own script, a worked example

    @property
    def attempted(self) -> bool:
        return self.name is not None


@dataclass(frozen=True)
class Grade:
    """An attempt's grade: its verdict, or none when the skeleton was left as it is."""

    attempt: Attempt
    verdict: Verdict | None

    @property
    def agrees(self) -> bool:
        """True only for a written script that agrees on every field."""
        return self.verdict is not None and self.verdict.agrees

    @property
    def status(self) -> str:
        if self.verdict is None:
            return NOT_ATTEMPTED
        return "agrees" if self.verdict.agrees else "differs"

    def __str__(self) -> str:
        if self.verdict is None:
            return (
                f"{NOT_ATTEMPTED}: {self.attempt.path} still says {UNWRITTEN!r}; write the "
                "algorithm there and run the notebook again"
            )
        return str(self.verdict)


def _check_name(exercise: str) -> None:
    if exercise not in EXERCISES:
        raise KeyError(f"exercise: one of {', '.join(EXERCISES)}, got {exercise!r}")


def attempt(exercise: str, folder: str | Path = "exercises") -> Attempt:
    """Register the student's script for ``exercise`` as ``my_<exercise>``; an unwritten
    skeleton is registered as nothing (not attempted)."""
    _check_name(exercise)
    mine = Path(folder) / f"{exercise}.lua"
    if UNWRITTEN in mine.read_text("utf-8"):
        return Attempt(exercise, None, mine)
    cls = register_script(mine, f"my_{exercise}")
    return Attempt(exercise, cls.name, mine)


def solution(exercise: str, folder: str | Path = "exercises") -> Attempt:
    """Register the solution of ``exercise`` as ``solution_<exercise>`` (a worked example)."""
    _check_name(exercise)
    lua = resources.files("simulator.algorithms").joinpath("lua").joinpath(f"{exercise}.lua")
    path = Path(str(lua))
    toml = Path(folder) / "solutions" / f"{exercise}.toml"
    cls = register_script(path, f"solution_{exercise}", toml)
    return Attempt(exercise, cls.name, path, solution=True)


def grade(a: Attempt, seed: int = 0) -> Grade:
    """The attempt against the reference of the algorithm it implements, on every field its
    declaration returns; "not attempted" for a skeleton left as it is."""
    if a.name is None:
        return Grade(a, None)
    return Grade(a, check(a.name, a.exercise, seed=seed))
