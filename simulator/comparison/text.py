"""The comparison as terminal text: the scorecard with its legend, the clients most affected,
the table of other limits.

Headings are short so that a row fits a terminal; the legend under the table says what each
stands for (:mod:`~simulator.comparison.legend`), and the CSV files carry the full names.
"""

from __future__ import annotations

from typing import Any

from simulator.comparison.legend import SHOWN, legend_lines

__all__ = ["format_scorecard", "format_clients", "format_limits"]


def _cell(value: Any, digits: int = 2) -> str:
    if isinstance(value, float):
        if value != value:  # NaN
            return "-"
        return f"{value:,.{digits}f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _aligned(rows: list[list[str]]) -> list[str]:
    """Rows of cells as lines: the first column to the left, the others to the right."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(
            v.ljust(w) if i == 0 else v.rjust(w)
            for i, (v, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in rows
    ]


def _notes(r: dict[str, Any]) -> list[str]:
    """What a configuration's row says beyond the table's columns (a NaN is not said)."""
    notes = []
    if r["depends_on"]:
        notes.append(f"depends on the {r['depends_on']}")
    if r["server_cpu_us_per_decision"] == r["server_cpu_us_per_decision"]:
        notes.append(f"server CPU {r['server_cpu_us_per_decision']:.2f} µs per decision")
    if r["bytes_per_client_on_server"] == r["bytes_per_client_on_server"]:
        notes.append(
            f"{r['bytes_per_client_on_server']:,.0f} bytes per client weighed on the server "
            "(MEMORY USAGE of the keys alive at the end)"
        )
    if r["refused_never"]:
        notes.append(f"{r['refused_never']:,} refusals can never pass (cost over the limit)")
    return notes


def format_scorecard(scorecard: Any, legend: bool = True) -> str:
    """The scorecard as a text table, one line per configuration, the notes beneath, then
    (``legend``) what each heading means."""
    header = [label for _, label, _ in SHOWN]
    rows = [
        [_cell(r[c], 3 if c.endswith("_s") else 2) for c, _, _ in SHOWN]
        for r in scorecard.to_dict("records")
    ]
    lines = _aligned([header, *rows])
    for r in scorecard.to_dict("records"):
        notes = _notes(r)
        if notes:
            lines.append(f"  {r['candidate']}: " + "; ".join(notes))
    if legend:
        lines += ["the columns (--out writes them under the names after each heading):"]
        lines += legend_lines()
    return "\n".join(lines)


def _shown(client: str) -> str:
    """A client id for the terminal: bytes that are not UTF-8 as ``\\xff`` escapes (the CSV
    files keep the bytes themselves)."""
    return client.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def format_clients(clients: Any, top: int) -> str:
    """The ``top`` clients each candidate affects most: who, how many flips each way, when."""
    from datetime import UTC, datetime

    def when(t_ms: int) -> str:
        if t_ms >= 10**11:  # an access log's times: ms since the epoch
            return datetime.fromtimestamp(t_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")
        return f"{t_ms / 1000:,.3f} s"

    lines = []
    for name, rows in clients.groupby("candidate", sort=False):
        lines.append(f"most affected by {name} ({len(rows):,} clients):")
        for r in rows.head(top).to_dict("records"):
            lines.append(
                f"  {_shown(r['client'])}: {r['flips']:,} of {r['requests']:,} requests flipped "
                f"({r['flips_to_refused']:,} now refused, {r['flips_to_admitted']:,} now admitted), "
                f"{when(r['first_flip_t_ms'])} to {when(r['last_flip_t_ms'])}"
            )
    return "\n".join(lines)


#: The limits table's columns printed, and their headings.
_LIMIT_HEADINGS = (
    ("limit", "limit"),
    ("refused", "refused"),
    ("clients_refused", "clients refused"),
    ("flips_to_refused", "→refused"),
    ("flips_to_admitted", "→admitted"),
    ("wrongly_refused", "wrong ref"),
    ("clients_over_limit", "clients over"),
)


def format_limits(table: Any) -> str:
    """The table of other limits: one block per configuration, one line per limit."""
    lines = []
    for name, rows in table.groupby("configuration", sort=False):
        lines.append(f"{name} at each limit:")
        body = [[_cell(r[c]) for c, _ in _LIMIT_HEADINGS] for r in rows.to_dict("records")]
        lines += ["  " + line for line in _aligned([[h for _, h in _LIMIT_HEADINGS], *body])]
    lines += [
        "  →refused, →admitted: flips against the baseline as it is; wrong ref: refused where "
        "the exact log at that limit admits; clients over: clients whose peak (the most "
        "requests in one window of its length) is above the limit",
    ]
    return "\n".join(lines)
