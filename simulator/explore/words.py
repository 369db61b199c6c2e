"""What the explorer writes on its page: the summary, the server's state, the status line.

Pure functions from a run's :class:`~simulator.explore.runs.Outcome` or a time bar's
:class:`~simulator.explore.steps.Step` to the text and HTML its widgets show (class names a test
can find), every value from the run escaped.
"""

from __future__ import annotations

import html

from simulator.explore.runs import EXACT, Outcome, Summary, summary_line
from simulator.explore.settings import BACKENDS
from simulator.explore.steps import KeyState, Step

__all__ = [
    "default_client",
    "row_note",
    "summary_html",
    "state_html",
    "status_html",
    "error_html",
    "busy_html",
]


def status_html(outcome: Outcome, run: int, said: list[str]) -> str:
    """The status line of a drawn run: what decided how much, where, and how long it took."""
    s = outcome.settings
    n = len(s.traffic.clients())
    source = f"trace {s.trace}" if s.trace is not None else f"{n} client{'s' * (n != 1)}"
    note = "".join(f"<br>{html.escape(m)}" for m in said)
    return (
        f"run {run}: {outcome.decisions:,} decisions by the Lua scripts on "
        f"{BACKENDS[s.backend]}, {source}, limit {s.limit:,} per {s.window_s:g} s "
        f"({outcome.seconds:.2f} s){note}"
    )


def error_html(exc: BaseException, drawn: int | None = None) -> str:
    """A bad value or an unreadable file, in red; with ``drawn``, under it which run the figure
    still shows (if any)."""
    said = f'<span style="color:#b00">{html.escape(str(exc))}</span>'
    if drawn is None:
        return said
    was = f"the figure below is still run {drawn}'s" if drawn else ""
    return f"{said}<br><small>{was}</small>"


def busy_html(drawn: int) -> str:
    """The status while a run is coming."""
    was = f" (below: run {drawn})" if drawn else ""
    return f"<b>running…</b>{was}"


def default_client(clients: list[str]) -> str | None:
    """The client shown first: a bursting one if there is one (the seam shows), else the busiest."""
    bursting = [c for c in clients if c.startswith("bursts-")]
    return sorted(bursting)[0] if bursting else (clients[0] if clients else None)


def row_note(s: Summary) -> str:
    """A row's numbers, beside its marks (all clients; the summary lines say the same)."""
    return f"admitted {s.admitted:,} of {s.requests:,}, most in a window {s.most_in_window:,} ({s.ratio:.2f}×)"


def summary_html(outcome: Outcome) -> str:
    """The summary lines, and under them what their numbers mean."""
    lines = [summary_line(x) for x in outcome.summaries.values()]
    lines += list(outcome.skipped.values())
    s = outcome.settings
    notes = [
        "<b>most one client got in any window</b>: the most requests one client had admitted in "
        f"any trailing {s.window_s:g} s, against the limit of {s.limit:,};",
        "<b>wrongly admitted / refused</b>: decisions the exact sliding log, given the same "
        "requests, makes the other way (admitted where it refuses, refused where it admits).",
    ]
    counts = {x.requests for x in outcome.summaries.values()}
    if len(counts) > 1:
        notes.append(
            "<b>Why N differs</b>: polite clients wait the Retry-After each algorithm sends them "
            "before they ask again, so every algorithm gets its own retries; the other clients "
            "send the same requests to all."
        )
    if EXACT in outcome.summaries:
        notes.append("The sliding log is the exact log itself: it never differs from it.")
    text = html.escape("\n".join(lines) or "no algorithm chosen")
    return f"<pre>{text}</pre><small>{' '.join(notes)}</small>"


def _key_html(states: tuple[KeyState, ...]) -> str:
    if not states:
        return "<div><i>no keys</i></div>"
    rows = []
    for k in states:
        if k.type == "zset":
            shown = ", ".join(f"{html.escape(m)} @ {s}" for m, s in k.value)
            more = f" … {k.size - len(k.value)} more" if k.size > len(k.value) else ""
            value = f"{k.size} members: {shown}{more}"
        elif k.type == "hash":
            value = ", ".join(f"{html.escape(f)} = {html.escape(v)}" for f, v in k.value.items())
        elif isinstance(k.value, list):
            value = f"{k.size} items: " + ", ".join(html.escape(x) for x in k.value)
        else:
            value = html.escape(str(k.value))
        ttl = "no TTL" if k.pttl_ms < 0 else f"PTTL {k.pttl_ms:,} ms"
        rows.append(
            f"<div><code>{html.escape(k.key)}</code> <small>({k.type}, {ttl})</small><br>"
            f"&nbsp;&nbsp;<code>{value}</code></div>"
        )
    return "".join(rows)


def state_html(algorithm: str, step: Step, limit: int) -> str:
    """One step as the right column shows it (class names a test can find)."""
    decided = "admitted" if step.allowed else "refused"
    exact = "admits" if step.exact_allowed else "refuses"
    reply = ", ".join(html.escape(str(x)) for x in step.reply)
    headers = "".join(
        f"<div>{html.escape(k)}: <code>{html.escape(v)}</code></div>"
        for k, v in step.headers.items()
    )
    after = (
        "<div><i>unchanged: the script wrote nothing</i></div>"
        if step.after == step.before
        else _key_html(step.after)
    )
    return (
        f'<div class="explorer-decision"><b>{html.escape(algorithm)}</b> at '
        f"{step.t_ms:,} ms (cost {step.cost}): <b>{decided}</b></div>"
        f'<div class="explorer-headers"><b>header fields</b>{headers}</div>'
        f'<div class="explorer-exact">exact log: {step.exact_in_window:,} of {limit:,} '
        f"admitted in the trailing window before this request; it {exact} it</div>"
        f'<div class="explorer-reply"><b>reply</b> <code>[{reply}]</code></div>'
        f'<div class="explorer-before"><b>keys before</b>{_key_html(step.before)}</div>'
        f'<div class="explorer-after"><b>keys after</b>{after}</div>'
    )
