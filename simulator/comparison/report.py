"""The plan as a Markdown page: the question, the backend the decisions ran on and why, how much
of its span the trace covers, the scorecard, the clients most affected, the pick by its rule,
and the budget it is held to.

What a reviewer reads before a switch of limiter is approved: every figure is the scorecard's,
every sentence the one the command prints.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from simulator.comparison.budget import Budget
from simulator.comparison.choice import pick, rule, verdict
from simulator.comparison.legend import SHOWN

__all__ = ["plan_report", "gate"]


def gate(scorecard: pd.DataFrame, budget: Budget | None, most_ratio: float) -> list[str]:
    """What the configuration the pick would adopt breaks of ``budget`` (empty: nothing)."""
    if budget is None:
        return []
    best, _ = pick(scorecard, most_ratio)
    facts = scorecard.attrs.get("trace", {})
    return budget.breaches(best, int(facts.get("requests", 0)), int(facts.get("clients", 0)))


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return "-" if value != value else f"{value:,.2f}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value).replace("|", "\\|")


def _table(frame: pd.DataFrame, columns: list[tuple[str, str]]) -> list[str]:
    lines = ["| " + " | ".join(h for _, h in columns) + " |", "|" + "---|" * len(columns)]
    for r in frame.to_dict("records"):
        lines.append("| " + " | ".join(_cell(r[c]) for c, _ in columns) + " |")
    return lines


def _clients(clients: pd.DataFrame, top: int) -> list[str]:
    if not len(clients):
        return ["No candidate decides any request differently from the baseline."]
    lines: list[str] = []
    for name, rows in clients.groupby("candidate", sort=False):
        lines += ["", f"`{name}` ({len(rows):,} clients):", ""]
        cols = [("client", "client"), ("requests", "requests"), ("flips_to_refused", "now refused"),
                ("flips_to_admitted", "now admitted")]  # fmt: skip
        shown = rows.head(top).assign(
            client=[
                f"`{str(c).encode('utf-8', 'backslashreplace').decode()}`"
                for c in rows.head(top)["client"]
            ]  # fmt: skip
        )
        lines += _table(shown, cols)
    return lines


def plan_report(
    scorecard: pd.DataFrame,
    clients: pd.DataFrame,
    *,
    trace: str,
    most_ratio: float,
    budget: Budget | None = None,
    limits: pd.DataFrame | None = None,
    top: int = 5,
    backend: str | None = None,
) -> str:
    """The report as Markdown text. ``backend``: the line naming the backend the decisions ran
    on and why (the one compare's report on standard output starts with when it chose)."""
    facts = scorecard.attrs.get("trace", {})
    base = scorecard.iloc[0]["candidate"]
    others = ", ".join(f"`{c}`" for c in scorecard["candidate"].iloc[1:])
    lines = [
        "# Plan: which limiter for this traffic?",
        "",
        "## The question",
        "",
        f"If `{trace}` were decided by {others} instead of `{base}` (running now), who would be "
        "refused that was admitted before, who would get through that was refused, and what "
        f"would it cost? {facts.get('requests', 0):,} requests from "
        f"{facts.get('clients', 0):,} clients, each replayed with the real Lua scripts.",
        *(["", "## The backend", "", backend] if backend else []),
        "",
        "## Coverage",
        "",
        facts.get("coverage", "coverage: not measured"),
    ]
    if facts.get("coverage_warning"):
        lines += ["", f"**{facts['coverage_warning']}**"]
    lines += ["", "## The scorecard", ""]
    lines += _table(scorecard, [(c, f"{h} (`{c}`)" if h != c else c) for c, h, _ in SHOWN])
    lines += ["", *(f"* `{c}`: {m}" for c, _, m in SHOWN[1:])]
    lines += ["", "## The clients most affected", "", *_clients(clients, top)]
    if limits is not None:
        lines += ["", "## At other limits", ""]
        lines += _table(limits, [(c, c) for c in limits.columns if c not in ("role",)])
    lines += [
        "",
        "## The pick",
        "",
        f"The rule: {rule(most_ratio)}",
        "",
        verdict(scorecard, most_ratio),
    ]
    lines += ["", "## The budget", ""]
    if budget is None:
        lines.append("No budget was given (`--budget FIELD=NUMBER,...`).")
    else:
        over = gate(scorecard, budget, most_ratio)
        lines.append(f"Budget `{budget.said()}` for the configuration the pick would adopt: "
                     + ("**over**: " + "; ".join(over) + "." if over else "within it."))  # fmt: skip
    return "\n".join(lines) + "\n"
