"""A policy: which algorithm, how many requests per window, and the algorithm's own parameters.

A name a user types (``--algorithm sliding_counter``, a SPEC, a sweep's grid) or a Limiter class
becomes a :class:`Policy` in :func:`resolve`, and only :func:`lookup` looks a name up on the
way: the algorithm's :class:`~simulator.algorithms.base.Limiter` class itself, the limit, the
window in milliseconds and every parameter of its own, checked and with its defaults filled in.
What takes a Policy makes its limiters from it (:meth:`Policy.limiter`) and looks no name up
again: a :class:`~simulator.engine.scenario.Scenario` holds one, the replay resolves one at its
first line (a name, a class or a Policy), one CLI replay resolves one for its key plan
(:func:`~simulator.engine.own_keys.run_keys`), its header columns and the replay; a compare
candidate, the memory study's layouts and the big-key study build theirs from it. The
production studies, the bulk reference (:mod:`simulator.fastref`), the charts' palette, the
grading of a user's script (:func:`~simulator.userscripts.check.check`), the check of a server
the program did not start, the libraries' study and bench, and a sweep spec's grid take a name
or the class and call :func:`lookup` once, at their first line, and hand the class inward.
Names still travel where a value crosses to a Dask worker (a candidate, a sweep point, a
shard's task: a user's script is installed there first). CONTRIBUTING.md says how the lookups
left below the edges are counted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

from simulator.algorithms import ALGORITHMS
from simulator.algorithms.base import Limiter, own_params
from simulator.checks import MAX_LIMIT, MAX_WINDOW_MS, ConfigError, check_int

if TYPE_CHECKING:
    from simulator.backends.base import Backend

__all__ = ["Policy", "lookup", "resolve"]


@dataclass(frozen=True)
class Policy:
    """An algorithm with its limit, its window (ms) and its own parameters, checked."""

    algorithm: type[Limiter]
    limit: int
    window_ms: int
    params: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not (isinstance(self.algorithm, type) and issubclass(self.algorithm, Limiter)):
            raise ConfigError(f"Policy.algorithm: must be a Limiter class, got {self.algorithm!r}")
        owner = self.algorithm.__name__
        object.__setattr__(self, "limit", check_int(owner, "limit", self.limit, 1, MAX_LIMIT))
        object.__setattr__(
            self, "window_ms", check_int(owner, "window_ms", self.window_ms, 1, MAX_WINDOW_MS)
        )
        if not isinstance(self.params, Mapping):
            raise ConfigError(f"{owner}.params: must be a mapping of names to numbers")
        values = own_params(
            owner, self.algorithm.params_declared, self.params, self.limit, self.window_ms
        )
        object.__setattr__(self, "params", MappingProxyType(values))

    @property
    def name(self) -> str:
        """The algorithm's name, as the registry, the CLI and every frame's column say it."""
        return self.algorithm.name

    def limiter(self, backend: Backend) -> Limiter:
        """The algorithm's limiter on ``backend``, with this policy's numbers."""
        return self.algorithm(backend, self.limit, self.window_ms, **self.params)

    def __hash__(self) -> int:
        return hash(
            (self.algorithm, self.limit, self.window_ms, tuple(sorted(self.params.items())))
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Policy) and (
            self.algorithm,
            self.limit,
            self.window_ms,
            dict(self.params),
        ) == (other.algorithm, other.limit, other.window_ms, dict(other.params))


def lookup(
    algorithm: str | type[Limiter],
    registry: Mapping[str, type[Limiter]] | None = None,
    owner: str = "algorithm",
) -> type[Limiter]:
    """The Limiter class a name stands for (looked up in ``registry``, by default
    :data:`~simulator.algorithms.ALGORITHMS`), or the class itself; ConfigError naming
    ``owner`` for a name nobody registered or anything else. The one place a name is looked up
    on its way in."""
    if isinstance(algorithm, str):
        known = ALGORITHMS if registry is None else registry
        if algorithm not in known:
            raise ConfigError(f"{owner}: unknown {algorithm!r}; known: {', '.join(known)}")
        return known[algorithm]
    if isinstance(algorithm, type) and issubclass(algorithm, Limiter):
        return algorithm
    raise ConfigError(f"{owner}: must be an algorithm's name or a Limiter class, got {algorithm!r}")


def resolve(
    algorithm: str | type[Limiter] | Policy,
    limit: int | None,
    window_ms: int | None,
    params: Mapping[str, object] | None = None,
    registry: Mapping[str, type[Limiter]] | None = None,
    owner: str = "algorithm",
) -> Policy:
    """The :class:`Policy` for a name (looked up in ``registry``, by default
    :data:`~simulator.algorithms.ALGORITHMS`) or a Limiter class with its numbers; a Policy
    given is taken as it is (its numbers are its own: none may be given beside it).
    ConfigError naming ``owner`` for a name nobody registered or a number missing."""
    if isinstance(algorithm, Policy):
        if limit is not None or window_ms is not None or params:
            raise ConfigError(
                f"{owner}: a Policy holds its own limit, window and parameters; give none beside it"
            )
        return algorithm
    cls = lookup(algorithm, registry, owner)
    if limit is None or window_ms is None:
        raise ConfigError(f"{owner}: {cls.name} needs a limit and a window_ms")
    return Policy(cls, limit, window_ms, dict(params or {}))  # type: ignore[arg-type]
