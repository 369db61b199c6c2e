"""A sweep spec: which study, over which grid. A small TOML file, checked before anything runs.

::

    name = "error_by_load"          # the dataset's folder: data/sweeps/error_by_load/
    study = "accuracy"              # accuracy | adversary | burst
    [grid]                          # every key is an axis and a column of the dataset
    algorithm = ["sliding_counter", "fixed_window"]   # or "all": every registered one
    limit = [10, 100]
    window_s = 60                   # a single value is an axis of one
    kind = ["poisson", "on_off"]    # traffic families
    load = [0.5, 1, 2]
    seed = [0, 1, 2]
    [grid.params]                   # the algorithms' own parameters, for those that declare them
    burst = [10, 20]

Each study has its own axes, each with a default (:data:`simulator.sweeps.studies.STUDIES`);
the algorithms and their parameters come from the registry, so a newly registered algorithm is a
valid value at once. Every mistake is one :class:`~simulator.engine.scenario.ConfigError` naming the
file and the field (``sweep.toml: grid.limit[1]: must be an integer from 1 to ...``); a TOML
syntax error names its line.
"""

from __future__ import annotations

import itertools
import math
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simulator.checks import ConfigError
from simulator.playback.files import read_regular

if TYPE_CHECKING:
    from simulator.algorithms.base import Limiter, Param

#: The grid's algorithms, each name with its Limiter class.
Resolved = Sequence[tuple[str, "type[Limiter]"]]

__all__ = [
    "SweepSpec",
    "parse_spec",
    "load_spec",
    "grid_points",
    "iter_points",
    "grid_size",
    "MAX_POINTS",
]

#: The most grid points one spec may have (a typo such as 1e6 seeds should not start a sweep).
MAX_POINTS = 1_000_000
#: The largest sweep spec read.
MOST_SPEC_BYTES = 1 << 20
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


@dataclass(frozen=True)
class SweepSpec:
    """A checked spec: the study, its axes (name -> values, in the study's order), the
    algorithms' own parameters (name -> values) and where it came from (for messages)."""

    name: str
    study: str
    grid: Mapping[str, tuple[Any, ...]]
    params: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    source: str = "spec"


def load_spec(path: str | Path) -> SweepSpec:
    """The spec in the TOML file at ``path`` (its name defaults to the file's stem)."""
    path = Path(path)
    raw = read_regular(path, "sweep spec", MOST_SPEC_BYTES)  # not /dev/zero, no FIFO
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: a sweep spec must be UTF-8 text") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    data.setdefault("name", path.stem)
    return parse_spec(data, source=path.name)


def parse_spec(data: Mapping[str, Any], source: str = "spec") -> SweepSpec:
    """A spec from its parsed form (a TOML file's tables, or a dict built in Python)."""
    unknown = set(data) - {"name", "study", "grid", "description"}
    if unknown:
        raise ConfigError(
            f"{source}: unknown key {sorted(unknown)[0]!r} (a spec has name, study, "
            "description and [grid])"
        )
    name = data.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ConfigError(
            f"{source}: name: must be a folder name (letters, digits, _ . -), got {name!r}"
        )
    study = _study(source, data.get("study"))
    grid = data.get("grid", {})
    if not isinstance(grid, Mapping):
        raise ConfigError(f"{source}: grid: must be a table ([grid])")
    owner = f"{source}: grid"
    checked = _axes(owner, study, grid)
    if study.check_grid is not None:  # every point's size, before any runs
        study.check_grid(owner, checked)
    algorithms = _resolved(source, checked["algorithm"])
    params = _params(owner, grid.get("params", {}), algorithms)
    spec = SweepSpec(name, study.name, checked, params, source)
    if _grid_size(spec, algorithms) > MAX_POINTS:
        raise ConfigError(f"{source}: grid: more than {MAX_POINTS:,} points; split the sweep")
    if spec.params:  # each value of an algorithm's own parameter is checked at every point
        for _ in _iter_points(spec, algorithms):
            pass
    return spec


def _resolved(source: str, names: Sequence[str]) -> Resolved:
    """The grid's algorithms with their classes, each name looked up once. Each public function
    here does it at its first line, not the spec once for all: a user's script registered again
    since the spec was made is the version its points run (and name: ``script_sha``)."""
    from simulator.policy import lookup

    return [(name, lookup(name, owner=f"{source}: grid.algorithm")) for name in names]


def _study(source: str, study_name: object) -> Any:
    """The sweep study a spec names; ConfigError for memory (not a sweep) or an unknown one."""
    from simulator.sweeps.studies import STUDIES

    if study_name == "memory":
        raise ConfigError(
            f"{source}: study: memory is not a sweep study (it measures one real server at a "
            "time: python -m simulator memory)"
        )
    if study_name not in STUDIES:
        raise ConfigError(
            f"{source}: study: must be one of {', '.join(STUDIES)}, got {study_name!r}"
        )
    return STUDIES[study_name]  # type: ignore[index]  # a str: it is one of STUDIES' keys


def _axes(owner: str, study: Any, grid: Mapping[str, Any]) -> dict[str, tuple[Any, ...]]:
    """Each of the study's axes with its values checked (its default where the grid leaves it
    out); ConfigError for a key that is no axis of the study."""
    axes = {a.name: a for a in study.axes}
    for key in grid:
        if key != "params" and key not in axes:
            raise ConfigError(
                f"{owner}.{key}: the {study.name} study has no such axis "
                f"(its axes: {', '.join(axes)}; algorithm parameters go in [grid.params])"
            )
    checked: dict[str, tuple[Any, ...]] = {}
    for axis in study.axes:
        raw = grid.get(axis.name, axis.default)
        values = _values(owner, axis.name, raw)
        checked[axis.name] = tuple(
            axis.check(owner, f"{axis.name}[{i}]" if isinstance(raw, list) else axis.name, v)
            for i, v in enumerate(values)
        )
    return checked


def _values(owner: str, name: str, raw: Any) -> list[Any]:
    if raw == "all" and name == "algorithm":
        from simulator.algorithms import ALGORITHMS

        return list(ALGORITHMS)
    values = raw if isinstance(raw, list) else [raw]
    if not values:
        raise ConfigError(f"{owner}.{name}: an empty list leaves no grid points")
    return values


def _params(owner: str, raw: Any, algorithms: Resolved) -> dict[str, tuple[Any, ...]]:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{owner}.params: must be a table ([grid.params])")
    declared = {p.name for _, cls in algorithms for p in cls.params_declared}
    out: dict[str, tuple[Any, ...]] = {}
    for name, value in raw.items():
        if name not in declared:
            raise ConfigError(
                f"{owner}.params.{name}: none of the algorithms in the grid declares it "
                f"(their own parameters: {', '.join(sorted(declared)) or 'none'})"
            )
        out[name] = tuple(_values(f"{owner}.params", name, value))
    return out


def _iter_points(spec: SweepSpec, algorithms: Resolved) -> Any:
    from simulator.sweeps.studies import STUDIES
    from simulator.userscripts.shipping import digest

    study = STUDIES[spec.study]
    others = [n for n in spec.grid if n != "algorithm"]
    for algorithm, cls in algorithms:
        declared = cls.params_declared
        own = [p.name for p in declared if p.name in spec.params]
        sha = digest(cls)  # a user's script: which version
        for combo in itertools.product(*(spec.grid[n] for n in others)):
            point = {"algorithm": algorithm, **dict(zip(others, combo, strict=True))}
            for values in itertools.product(*(spec.params[n] for n in own)):
                given = dict(zip(own, values, strict=True))
                full = _point(spec, point, given, declared, sha)
                yield study.derive(full, spec) if study.derive else full


def _point(
    spec: SweepSpec,
    point: dict[str, Any],
    given: dict[str, Any],
    declared: Sequence[Param],
    sha: str | None,
) -> dict[str, Any]:
    """One grid point's parameters: the axes', the algorithm's own (checked against its
    declarations, naming the value) and a user's script's version."""
    from simulator.algorithms.base import own_params

    if given:
        window_ms = max(1, round(point.get("window_s", 60.0) * 1000))
        own_params(
            f"{spec.source}: grid ({point['algorithm']})",
            declared,
            given,
            point.get("limit", 100),
            window_ms,
        )
    full = point | {f"param_{n}": v for n, v in given.items()}
    if sha is not None:
        full["script_sha"] = sha
    return full


def iter_points(spec: SweepSpec) -> Any:
    """The grid points one at a time, in :func:`grid_points`' order (a big grid is never held
    whole: a sweep makes each task's parameters when it is about to send it)."""
    return _iter_points(spec, _resolved(spec.source, spec.grid["algorithm"]))


def grid_size(spec: SweepSpec) -> int:
    """How many points the grid has, counted without making them."""
    return _grid_size(spec, _resolved(spec.source, spec.grid["algorithm"]))


def _grid_size(spec: SweepSpec, algorithms: Resolved) -> int:
    others = math.prod(len(v) for n, v in spec.grid.items() if n != "algorithm")
    return sum(
        others
        * math.prod(len(spec.params[p.name]) for p in cls.params_declared if p.name in spec.params)
        for _, cls in algorithms
    )


def grid_points(spec: SweepSpec) -> list[dict[str, Any]]:
    """Every grid point, in order (algorithm outermost, then the study's axes as listed, the
    algorithm's own parameters innermost); each is one task's parameters."""
    return list(iter_points(spec))
