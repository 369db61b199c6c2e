"""What one row of the replay's CSV holds: its columns, from a decision or from a batch's columns.

``line`` is the request's row in the input (from 1); then its time, its client (and its cost,
for a trace with a cost column), and the decision: admitted (1/0), the count, the limit, what
remains, when it resets and, on a refusal, the Retry-After (all in ms). ``--headers`` adds the
response header fields a client would have read (:class:`HeaderColumns`). A row made from a
:class:`~simulator.records.Decision` and one made from a batch's columns are the same values, so
the csv writer writes the same bytes either way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from simulator.headers import several_policies
from simulator.records import Decisions, Row, http_headers

if TYPE_CHECKING:
    from simulator.policy import Policy

__all__ = ["HEADER", "HEADER_FIELDS", "HeaderColumns"]

#: Columns of the replay output; ``line`` is the request's row in the input (from 1).
HEADER = (
    "line",
    "t_ms",
    "client",
    "allowed",
    "count",
    "limit",
    "remaining",
    "reset_ms",
    "retry_after_ms",
)


def _line(row: Row) -> tuple[Any, ...]:
    position, client, t_ms, d, _ = row
    retry = "" if d.allowed else d.retry_after_ms
    return (position + 1, t_ms, client, int(d.allowed), float(d.count), d.limit) + (
        d.remaining,
        d.reset_ms,
        retry,
    )


def _line_with_cost(row: Row) -> tuple[Any, ...]:
    line = _line(row)
    return (*line[:3], row[4], *line[3:])


def _columns(rows: Decisions, costs: bool) -> list[list[Any]]:
    """The CSV's columns of a batch, each a list of the very values :func:`_line` gives."""
    d = rows.columns
    retry: Any = d.retry_after_ms.astype(object)
    retry[d.allowed] = ""  # no Retry-After on an admitted request
    columns = [
        (np.asarray(rows.positions, dtype=np.int64) + 1).tolist(),
        list(rows.t_ms),
        rows.clients,
        d.allowed.astype(np.int8).tolist(),
        d.count.tolist(),
        d.limit.tolist(),
        d.remaining.tolist(),
        d.reset_ms.tolist(),
        retry.tolist(),
    ]
    if costs:
        columns.insert(3, rows.cost_list())
    return columns


#: The header fields ``--headers`` adds as columns, per style.
HEADER_FIELDS = {
    "draft": ("RateLimit-Policy", "RateLimit", "Retry-After"),
    "legacy": ("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "Retry-After"),
    "both": (
        "RateLimit-Policy",
        "RateLimit",
        "RateLimit-Limit",
        "RateLimit-Remaining",
        "RateLimit-Reset",
        "Retry-After",
    ),
}


@dataclass(frozen=True)
class HeaderColumns:
    """The header fields to write beside each decision (``--headers``) and what they need."""

    style: str
    policy: str
    window_ms: int
    rate_limit: int
    #: ``(name, limit, window_ms)`` of each policy when one decision answers for several.
    policies: tuple[tuple[str, int, int], ...] = ()

    @classmethod
    def of(cls, style: str, policy: Policy) -> HeaderColumns:
        """The columns for ``policy`` (its own parameters are checked, defaults filled in),
        every policy of an algorithm that answers for several (``multi_policy``)."""
        limit, window_ms = policy.limit, policy.window_ms
        policies = policy.algorithm.header_policies(limit, window_ms, dict(policy.params))
        return cls(style, policy.name, window_ms, limit, policies)

    def names(self) -> tuple[str, ...]:
        return HEADER_FIELDS[self.style]

    def values(self, row: Row) -> tuple[str, ...]:
        fields = http_headers(row[3], self.style, self.window_ms, self.rate_limit, self.policy)
        if self.policies and self.style != "legacy":
            fields.update(several_policies(row[3], self.policies))
        return tuple(fields.get(name, "") for name in self.names())
