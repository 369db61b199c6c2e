"""The studies a sweep can run: their axes and what one grid point computes.

    accuracy   an algorithm against the exact log on one kind of offered traffic at one load
               (:func:`simulator.studies.accuracy.load_point`): the Cloudflare-style figures
    adversary  the worst schedule a seeded search finds, confirmed on the Lua path
               (:func:`simulator.studies.adversary.worst_case`)
    burst      the boundary-burst practice case on the Lua path (:func:`simulator.engine.run.boundary_burst`)

The memory study is not here: it measures one real server at a time. Each task returns its rows
with the grid point's parameters as columns (an algorithm's own parameter ``burst`` as
``param_burst``) and the task's id; the accuracy and adversary studies decide with the bulk
kernels (with the algorithm's own parameters), and an algorithm without one (a user's script) on
its script on a fake server: the Lua path, slower, and the adversary search then runs
:data:`~simulator.studies.adversary.LUA_GENERATIONS` generations at most (``searched_on`` says
which). A user's script travels with its tasks to the workers, which register it
(:mod:`simulator.userscripts.shipping`); its points carry ``script_sha``, the version of the
script. No task has a wall-time budget: a sweep's results never depend on how busy its workers
were.

In the accuracy study each load of the list draws its own traffic: the family's seed is
``seed + i`` for the i-th load (``traffic_seed`` in the dataset), as the load sweep of
``charts --full`` has always drawn it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from simulator.checks import MAX_LIMIT, MAX_T_MS, MAX_WINDOW_MS, ConfigError, check_int
from simulator.checks import check_number as _number

__all__ = ["Axis", "Study", "STUDIES", "run_point", "params_of", "Refused"]


@dataclass(frozen=True)
class Refused:
    """A task that the user's input stopped (a ConfigError, or a ScriptError from the user's
    script), as the message the user gets. A task hands it back as its result, not as an
    exception, so that no worker logs a traceback for a mistake that is one line."""

    kind: str
    message: str


@dataclass(frozen=True)
class Axis:
    """One axis of a study's grid: its name (the column), its check and its default."""

    name: str
    check: Callable[[str, str, Any], Any]
    default: Any


@dataclass(frozen=True)
class Study:
    name: str
    axes: tuple[Axis, ...]
    run: Callable[[dict[str, Any]], pd.DataFrame]
    #: Extra columns a point gets from the spec (the accuracy study's traffic seed).
    derive: Callable[[dict[str, Any], Any], dict[str, Any]] | None = None
    #: A check of the grid's axes together (values each fine alone can make a point too big),
    #: run when the spec is parsed: ``(owner, checked axes)``, a ConfigError naming the values.
    check_grid: Callable[[str, dict[str, tuple[Any, ...]]], None] | None = None


def _algorithm(owner: str, name: str, value: Any) -> str:
    from simulator.algorithms import ALGORITHMS

    if not isinstance(value, str) or value not in ALGORITHMS:
        raise ConfigError(f"{owner}.{name}: unknown {value!r}; known: {', '.join(ALGORITHMS)}")
    return value


def _int(lo: int, hi: int | None = None) -> Callable[[str, str, Any], int]:
    return lambda owner, name, value: check_int(owner, name, value, lo, hi)


def _seconds(positive: bool, hi: float) -> Callable[[str, str, Any], float]:
    def check(owner: str, name: str, value: Any) -> float:
        seconds = float(_number(owner, name, value, positive=positive, hi=hi))
        if positive and round(seconds * 1000) < 1:
            raise ConfigError(f"{owner}.{name}: must be at least 0.001 s, got {value!r}")
        return seconds

    return check


def _positive(owner: str, name: str, value: Any) -> float:
    return float(_number(owner, name, value, positive=True, hi=1e6))


def _kind(owner: str, name: str, value: Any) -> str:
    from simulator.studies.families import KINDS

    if value not in KINDS:
        raise ConfigError(f"{owner}.{name}: unknown {value!r}; known: {', '.join(KINDS)}")
    return str(value)


_ALGORITHM = Axis("algorithm", _algorithm, "all")
_LIMIT = Axis("limit", _int(1, MAX_LIMIT), 100)
_WINDOW = Axis("window_s", _seconds(True, MAX_WINDOW_MS / 1000), 60.0)
_SEED = Axis("seed", _int(0), 0)


def params_of(point: dict[str, Any]) -> dict[str, Any]:
    """The algorithm's own parameters of a grid point (``param_NAME`` columns)."""
    return {k.removeprefix("param_"): v for k, v in point.items() if k.startswith("param_")}


def _window_ms(point: dict[str, Any]) -> int:
    return max(1, round(point["window_s"] * 1000))


def _accuracy(point: dict[str, Any]) -> pd.DataFrame:
    from simulator.studies.accuracy import load_point

    row = load_point(
        point["kind"],
        point["load"],
        point["client_count"],
        point["traffic_seed"],
        point["limit"],
        _window_ms(point),
        round(point["duration_s"] * 1000),
        point["algorithm"],
        params_of(point),
    )
    # The share the algorithm of the row admitted, whichever it is (its own column says which).
    return pd.DataFrame([row]).rename(columns={"counter_admitted_pct": "admitted_pct"})


def _traffic_seed(point: dict[str, Any], spec: Any) -> dict[str, Any]:
    return point | {"traffic_seed": point["seed"] + spec.grid["load"].index(point["load"])}


def _adversary(point: dict[str, Any]) -> pd.DataFrame:
    from simulator.studies.adversary import SearchConfig, worst_case

    config = SearchConfig(
        limit=point["limit"],
        window_ms=_window_ms(point),
        max_bursts=point["max_bursts"],
        horizon_windows=point["horizon_windows"],
        population=point["population"],
        generations=point["generation_budget"],
        budget_s=math.inf,
        seed=point["seed"],
    )
    row, _ = worst_case(point["algorithm"], config, params_of(point))
    return pd.DataFrame([row])


def _burst(point: dict[str, Any]) -> pd.DataFrame:
    from simulator.engine.run import boundary_burst
    from simulator.metrics import burst_summary

    frame = boundary_burst(
        point["algorithm"],
        point["limit"],
        point["window_s"],
        point["first_s"],
        point["second_s"],
        point["per_burst"] or None,
        params=params_of(point),
    )
    return burst_summary(frame, _window_ms(point)).reset_index()


def _burst_sizes(owner: str, grid: dict[str, tuple[Any, ...]]) -> None:
    """Every (limit, per_burst) of the grid within the bound ``burst`` itself keeps: a point
    holds all its decisions until its summary, so one too big would fill the machine."""
    from simulator.engine.sizes import burst_too_big

    for limit in grid.get("limit", (_LIMIT.default,)):
        for per_burst in grid.get("per_burst", (0,)):
            n = per_burst or limit
            problem = burst_too_big(2 * n, 1)
            if problem is not None:
                named = (
                    f"per_burst = {per_burst:,}"
                    if per_burst
                    else (f"limit = {limit:,} (each burst sends the limit when per_burst is 0)")
                )
                raise ConfigError(
                    f"{owner}: {named}: 2 bursts x {n:,} = {problem}; give a smaller "
                    "limit or per_burst"
                )


_RUN_S = (MAX_T_MS - 1) / 1000

#: Every study a sweep can run, by the name a spec's ``study`` takes.
STUDIES: dict[str, Study] = {
    "accuracy": Study(
        "accuracy",
        (
            _ALGORITHM,
            _LIMIT,
            _WINDOW,
            Axis("kind", _kind, "poisson"),
            Axis("load", _positive, 1.0),
            Axis("client_count", _int(1, 10_000_000), 100),
            Axis("duration_s", _seconds(True, 1e7), 600.0),
            _SEED,
        ),
        _accuracy,
        _traffic_seed,
    ),
    "adversary": Study(
        "adversary",
        (
            _ALGORITHM,
            _LIMIT,
            _WINDOW,
            Axis("generation_budget", _int(1, 1_000_000), 80),
            Axis("population", _int(4, 100_000), 32),
            Axis("max_bursts", _int(1, 1_000), 5),
            Axis("horizon_windows", _int(1, 1_000), 3),
            _SEED,
        ),
        _adversary,
    ),
    "burst": Study(
        "burst",
        (
            Axis("algorithm", _algorithm, "all"),
            _LIMIT,
            _WINDOW,
            Axis("first_s", _seconds(False, _RUN_S), 59.0),
            Axis("second_s", _seconds(False, _RUN_S), 61.0),
            Axis("per_burst", _int(0, MAX_LIMIT), 0),  # 0: the limit
        ),
        _burst,
        check_grid=_burst_sizes,
    ),
}


def run_point(job: tuple[str, str, dict[str, Any], Any]) -> tuple[pd.DataFrame, str] | Refused:
    """One task, on a worker: ``(study, task id, point, the user's script the point's algorithm
    is or None)`` -> its rows with the point's parameters and the task id as columns, and the
    fingerprint of the code that made them; or :class:`Refused` when the user's input stopped
    it."""
    from simulator.backends import ScriptError
    from simulator.sweeps.dataset import code_fingerprint
    from simulator.userscripts.shipping import install

    study, task, point, script = job
    try:
        install(script)
        rows = STUDIES[study].run(point)
    except (ConfigError, ScriptError) as exc:
        return Refused(type(exc).__name__, str(exc))
    for name, value in point.items():
        rows[name] = value
    rows["task"] = task
    return rows, code_fingerprint()
