"""A plan's budget: how much a switch may change before it needs a second look.

``flips_to_refused=0.1%,clients_affected=5`` says: the configuration the pick would adopt may
refuse at most 0.1 % of the trace's requests that the baseline admitted, and flip at most 5
clients either way. A field is a scorecard column; a count may be given as a share (``%``) of
the trace's requests (request counts) or of its clients (client counts). A configuration over
any one of them is over the budget; keeping the baseline changes nothing and never is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from simulator.checks import ConfigError

__all__ = ["Budget", "BudgetLine", "parse_budget", "FIELDS"]

#: Counts of requests: a share is of the trace's requests.
REQUEST_FIELDS = ("refused", "flips_to_refused", "flips_to_admitted", "wrongly_admitted",
                  "wrongly_refused")  # fmt: skip
#: Counts of clients: a share is of the trace's clients.
CLIENT_FIELDS = ("clients_refused", "clients_affected")
#: Figures that are not counts: no share.
PLAIN_FIELDS = ("most_in_window_ratio", "retry_after_p50_s", "retry_after_p99_s",
                "bytes_per_active_client", "peak_memory_bytes")  # fmt: skip
FIELDS = REQUEST_FIELDS + CLIENT_FIELDS + PLAIN_FIELDS


@dataclass(frozen=True)
class BudgetLine:
    """One field's ceiling: ``value`` itself, or ``value`` % of the trace's requests/clients."""

    field: str
    value: float
    percent: bool = False

    def __post_init__(self) -> None:
        if self.field not in FIELDS:
            raise ConfigError(
                f"--budget: unknown field {self.field!r}; a budget takes {', '.join(FIELDS)}"
            )
        if not (math.isfinite(self.value) and self.value >= 0):
            raise ConfigError(f"--budget {self.field}: must be a number >= 0, got {self.value!r}")
        if self.percent and self.field in PLAIN_FIELDS:
            raise ConfigError(
                f"--budget {self.field}: is not a count, so it takes no % (give the figure)"
            )

    def ceiling(self, requests: int, clients: int) -> float:
        """The most allowed, as a figure of the scorecard's."""
        if not self.percent:
            return self.value
        whole = requests if self.field in REQUEST_FIELDS else clients
        return self.value / 100 * whole

    def said(self) -> str:
        return f"{self.field}={self.value:g}{'%' if self.percent else ''}"


@dataclass(frozen=True)
class Budget:
    lines: tuple[BudgetLine, ...]

    def __post_init__(self) -> None:
        seen = [b.field for b in self.lines]
        for f in seen:
            if seen.count(f) > 1:
                raise ConfigError(f"--budget {f}: given twice")

    def said(self) -> str:
        return ",".join(b.said() for b in self.lines)

    def breaches(self, row: Any, requests: int, clients: int) -> list[str]:
        """Each field over its ceiling, in words (empty: within the budget)."""
        out = []
        for b in self.lines:
            value = float(row[b.field])
            ceiling = b.ceiling(requests, clients)
            if value == value and value > ceiling:  # a NaN (not measured) breaches nothing
                whole = "requests" if b.field in REQUEST_FIELDS else "clients"
                of = f" ({b.value:g} % of {requests if whole == 'requests' else clients:,} {whole})"
                out.append(
                    f"{b.field} {value:,.6g} is over {ceiling:,.6g}{of if b.percent else ''}"
                )
        return out


def _line(text: str) -> BudgetLine:
    key, sep, raw = (s.strip() for s in text.partition("="))
    if not sep or not key or not raw:
        raise ConfigError(
            f"--budget {text.strip()!r}: is not FIELD=NUMBER (e.g. clients_affected=5)"
        )
    if key not in FIELDS:
        raise ConfigError(
            f"--budget {text.strip()!r}: unknown field {key!r}; a budget takes {', '.join(FIELDS)}"
        )
    percent = raw.endswith("%")
    number = raw[:-1].strip() if percent else raw
    try:
        value = float(number)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ConfigError(
            f"--budget {text.strip()!r}: {raw!r} is not a number >= 0 (e.g. 5, or 0.1% of the "
            "trace's requests or clients)"
        )
    return BudgetLine(key, value, percent)


def parse_budget(texts: list[str]) -> Budget | None:
    """``--budget`` as given (repeatable, comma-separated); None when none was."""
    parts = [p for text in texts for p in text.split(",") if p.strip()]
    if not parts:
        return None if not texts else _empty(texts[0])
    return Budget(tuple(_line(p) for p in parts))


def _empty(text: str) -> Budget:
    raise ConfigError(
        f"--budget {text!r}: is empty; give FIELD=NUMBER,... (e.g. clients_affected=5)"
    )
