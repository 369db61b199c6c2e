"""One row per decision, with the header values a server would send.

Each decision becomes one row of the decision log: who asked, when, at what cost (1 unless the
request weighs more), whether it was admitted, the count or estimate the algorithm compared, and the values of the ``RateLimit-Limit``,
``RateLimit-Remaining``, ``RateLimit-Reset`` and (on a refusal) ``Retry-After`` headers, kept in
milliseconds. :func:`to_frame` turns the rows into a pandas DataFrame with explicit dtypes.

A replay decides a thousand requests per pipeline, and a million-row log must not cost a
Python object per row and field: there the decisions travel column by column
(:class:`DecisionColumns`, one typed array per field, parsed from a batch of replies;
:class:`Decisions`, a batch with its requests), and :func:`frame_of` builds the frame from the
columns as they are. A batch still reads as a sequence of :data:`Row` tuples for code that wants
one decision at a time.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple, overload

import numpy as np
import pandas as pd

from simulator.headers import HEADER_STYLES, http_headers

__all__ = [
    "Decision",
    "DecisionColumns",
    "Decisions",
    "Row",
    "frame_of",
    "COLUMNS",
    "DTYPES",
    "CLIENT_DTYPE",
    "DecisionLog",
    "to_frame",
    "http_headers",
    "HEADER_STYLES",
]


class Decision(NamedTuple):
    """What a limiter answered for one request."""

    allowed: bool
    count: float  # type: ignore[assignment]  # the count or estimate compared with the limit (shadows tuple.count)
    limit: int
    remaining: int
    reset_ms: int  # -1 when the key has no expiry
    retry_after_ms: int  # 0 when allowed


#: One decided request as it is handed on: (position, client, t_ms, decision, cost).
Row = tuple[int, str, int, Decision, int]
#: The dtype of each field of a :class:`Decision` in a column.
_FIELD_DTYPES = {
    "allowed": np.bool_,
    "count": np.float64,
    "limit": np.int64,
    "remaining": np.int64,
    "reset_ms": np.int64,
    "retry_after_ms": np.int64,
}


class DecisionColumns(NamedTuple):
    """Decisions field by field, one array each (``retry_after_ms`` as the script sent it,
    0 where allowed)."""

    allowed: np.ndarray
    count: np.ndarray  # type: ignore[assignment]  # shadows tuple.count, as in Decision
    limit: np.ndarray
    remaining: np.ndarray
    reset_ms: np.ndarray
    retry_after_ms: np.ndarray

    @classmethod
    def of(cls, decisions: Iterable[Decision]) -> DecisionColumns:
        """The columns of some :class:`Decision` rows."""
        decisions = list(decisions)
        fields = zip(*decisions, strict=True) if decisions else [()] * len(_FIELD_DTYPES)
        return cls(
            *(
                np.array(values, dtype=dtype)
                for dtype, values in zip(_FIELD_DTYPES.values(), fields, strict=True)
            )
        )

    @classmethod
    def empty(cls, n: int) -> DecisionColumns:
        """``n`` decisions to be filled in (all refusals of zeros until then)."""
        return cls(*(np.zeros(n, dtype=dtype) for dtype in _FIELD_DTYPES.values()))

    @classmethod
    def concat(cls, parts: Sequence[DecisionColumns]) -> DecisionColumns:
        if not parts:
            return cls.of(())
        return cls(*(np.concatenate(field) for field in zip(*parts, strict=True)))

    def decision(self, i: int) -> Decision:
        allowed, count, limit, remaining, reset_ms, retry = (field[i].item() for field in self)
        return Decision(allowed, count, limit, remaining, reset_ms, retry)

    def decisions(self) -> list[Decision]:
        fields = (field.tolist() for field in self)
        return list(map(Decision, *fields))


class Decisions(Sequence[Row]):
    """The decided requests of one batch, column by column: what a replay hands on.

    ``positions``, ``clients``, ``t_ms`` and ``costs`` (None: every request cost 1) are the
    requests' own, in the order decided; ``columns`` their decisions. Indexing and iterating
    give :data:`Row` tuples, one at a time; the columns are there for whoever can use them.
    """

    __slots__ = ("positions", "clients", "t_ms", "costs", "columns")

    def __init__(
        self,
        positions: Sequence[int],
        clients: Sequence[str],
        t_ms: Sequence[int],
        costs: Sequence[int] | None,
        columns: DecisionColumns,
    ) -> None:
        self.positions, self.clients, self.t_ms = positions, clients, t_ms
        self.costs, self.columns = costs, columns

    def __len__(self) -> int:
        return len(self.t_ms)

    @overload
    def __getitem__(self, i: int) -> Row: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Row]: ...
    def __getitem__(self, i: int | slice) -> Row | Sequence[Row]:
        if isinstance(i, slice):
            return list(self)[i]
        cost = 1 if self.costs is None else int(self.costs[i])
        return (
            int(self.positions[i]),
            self.clients[i],
            int(self.t_ms[i]),
            self.columns.decision(i),
            cost,
        )

    def __iter__(self) -> Iterator[Row]:
        costs = [1] * len(self) if self.costs is None else list(self.costs)
        return zip(
            list(self.positions),
            self.clients,
            list(self.t_ms),
            self.columns.decisions(),
            costs,
            strict=True,
        )

    def cost_list(self) -> list[int]:
        return [1] * len(self) if self.costs is None else list(self.costs)


DTYPES: dict[str, str] = {
    "run_id": "string",
    "seed": "int64",
    "algorithm": "string",
    "client": "string",
    "t_ms": "int64",
    "cost": "int64",
    "allowed": "bool",
    "count": "float64",
    "limit": "int64",
    "remaining": "int64",
    "reset_ms": "int64",
    "retry_after_ms": "Int64",  # <NA> when allowed: no Retry-After header is sent
}
COLUMNS = tuple(DTYPES)
#: Client ids are kept in Python strings: an id read from a file may hold undecodable bytes as
#: lone surrogates (``surrogateescape``), which Arrow-backed strings cannot hold.
CLIENT_DTYPE = pd.StringDtype("python")
#: What :func:`to_frame` converts to (the names in :data:`DTYPES`, the client column as above).
_CONVERT: dict[str, object] = {**DTYPES, "client": CLIENT_DTYPE}


class DecisionLog:
    """Collects decisions column by column (cheap on the hot path) until :meth:`frame` is called."""

    def __init__(self, run_id: str, seed: int, algorithm: str) -> None:
        self.run_id, self.seed, self.algorithm = run_id, seed, algorithm
        self.clients: list[str] = []
        self.t_ms: list[int] = []
        self.decisions: list[Decision] = []
        self.costs: list[int] = []

    def append(self, client: str, t_ms: int, decision: Decision, cost: int = 1) -> None:
        self.clients.append(client)
        self.t_ms.append(t_ms)
        self.decisions.append(decision)
        self.costs.append(cost)

    def __len__(self) -> int:
        return len(self.decisions)

    def frame(self) -> pd.DataFrame:
        columns = DecisionColumns.of(self.decisions)
        return frame_of(
            self.run_id, self.seed, self.algorithm, self.clients, self.t_ms, self.costs, columns
        )


def to_frame(
    rows: Iterable[tuple[str, int, Decision]],
    run_id: str,
    seed: int,
    algorithm: str,
    costs: Sequence[int] | None = None,
) -> pd.DataFrame:
    """Rows of ``(client, t_ms, Decision)`` as a decision-log frame; ``costs`` one per row
    (None: every request cost 1)."""
    rows = list(rows)
    # Transposed in C and converted with known dtypes: pandas' inference on lists costs more.
    clients, t_ms, decisions = zip(*rows, strict=True) if rows else ((), (), ())
    columns = DecisionColumns.of(decisions)
    return frame_of(run_id, seed, algorithm, list(clients), t_ms, costs, columns)


def _repeated(value: str, n: int) -> Any:
    """One string ``n`` times as a ``string`` column, converted once."""
    return pd.array([value], dtype=DTYPES["run_id"]).take(np.zeros(n, dtype=np.intp))


def frame_of(
    run_id: str,
    seed: int,
    algorithm: str,
    clients: Sequence[str] | np.ndarray,
    t_ms: Sequence[int] | np.ndarray,
    costs: Sequence[int] | np.ndarray | None,
    columns: DecisionColumns,
) -> pd.DataFrame:
    """The decision-log frame of columns (``costs`` None: every request cost 1), each converted
    once to its dtype, with no object per row."""
    n = len(columns.allowed)
    allowed = np.asarray(columns.allowed, dtype=np.bool_)
    data: dict[str, object] = {
        "run_id": _repeated(run_id, n),
        "seed": np.full(n, seed, dtype=np.int64),
        "algorithm": _repeated(algorithm, n),
        "client": pd.array(clients if len(clients) else [], dtype=CLIENT_DTYPE),
        "t_ms": np.asarray(t_ms, dtype=np.int64).reshape(n),
        "cost": np.ones(n, dtype=np.int64) if costs is None else np.asarray(costs, dtype=np.int64),
        "allowed": allowed,
        "count": np.asarray(columns.count, dtype=np.float64),
        "limit": np.asarray(columns.limit, dtype=np.int64),
        "remaining": np.asarray(columns.remaining, dtype=np.int64),
        "reset_ms": np.asarray(columns.reset_ms, dtype=np.int64),
        # no Retry-After header is sent on an admitted request: <NA> there
        "retry_after_ms": pd.arrays.IntegerArray(
            np.array(columns.retry_after_ms, dtype=np.int64), allowed.copy()
        ),
    }
    return pd.DataFrame(data, columns=list(COLUMNS), copy=False)
