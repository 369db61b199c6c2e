"""The exercises of notebook 06: write each window algorithm in Lua, graded against its reference.

Each exercise is a skeleton under ``notebooks/exercises/<name>.lua``: the declaration (how the
workbench calls it) and the contract are filled in, the algorithm is missing. The solution is the
project's own script, ``simulator/algorithms/lua/<name>.lua``, called through the declaration in
``notebooks/exercises/solutions/<name>.toml`` (the same contract). :func:`attempt` registers the
student's script, or the solution while the skeleton is still unwritten, and says which.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from simulator.userscripts.check import Verdict, check
from simulator.userscripts.limiter import register_script

__all__ = ["EXERCISES", "UNWRITTEN", "Attempt", "attempt", "grade"]

#: The card's "done when": all three window algorithms, atomically, in Lua.
EXERCISES = ("fixed_window", "sliding_log", "sliding_counter")
#: What an unwritten skeleton still says.
UNWRITTEN = "not written yet"


@dataclass(frozen=True)
class Attempt:
    exercise: str
    name: str  # the algorithm it is registered as
    path: Path
    solution: bool  # True while the skeleton is unwritten: the project's own script stands in


def attempt(exercise: str, folder: str | Path = "exercises") -> Attempt:
    """Register the student's script for ``exercise`` (or the solution, if still unwritten)."""
    if exercise not in EXERCISES:
        raise KeyError(f"exercise: one of {', '.join(EXERCISES)}, got {exercise!r}")
    folder = Path(folder)
    mine = folder / f"{exercise}.lua"
    if UNWRITTEN not in mine.read_text("utf-8"):
        cls = register_script(mine, f"my_{exercise}")
        return Attempt(exercise, cls.name, mine, False)
    lua = resources.files("simulator.algorithms").joinpath("lua").joinpath(f"{exercise}.lua")
    solution = Path(str(lua))
    cls = register_script(
        solution, f"solution_{exercise}", folder / "solutions" / f"{exercise}.toml"
    )
    return Attempt(exercise, cls.name, solution, True)


def grade(a: Attempt, seed: int = 0) -> Verdict:
    """The attempt against the reference of the algorithm it implements."""
    return check(a.name, a.exercise, seed=seed)
