"""What the explorer writes on its page: the summary, the server's state, the status line.

Pure functions from a run's :class:`~simulator.explore.runs.Outcome` or a time bar's
:class:`~simulator.explore.steps.Step` to the text and HTML its widgets show (class names a test
can find), every value from the run escaped. A figure and its unit never break across lines on a
projector: the spaces inside them are non-breaking and each summary line is kept whole
(:func:`nobreak`). Times are said in seconds from the run's first instant (a trace's start),
never as epoch milliseconds.
"""

from __future__ import annotations

import base64
import html
from typing import Any

from simulator.explore.runs import EXACT, Outcome, Summary, summary_line
from simulator.explore.settings import BACKENDS
from simulator.explore.steps import KeyState, Step

__all__ = [
    "nobreak",
    "seconds",
    "pair_html",
    "hidden_html",
    "default_client",
    "client_note",
    "download_html",
    "row_note",
    "summary_html",
    "state_html",
    "status_html",
    "error_html",
    "busy_html",
]


def nobreak(text: str) -> str:
    """``text`` (HTML) as pieces that never break inside: each ``, ``-separated phrase of a
    summary line kept on one line (``most one client got in any window 200 (2.00× the
    limit)``), the line free to break between them."""
    pieces = text.split(", ")
    return ", ".join(f'<span style="white-space:nowrap">{p}</span>' for p in pieces)


def breakable(text: str) -> str:
    """Escaped ``text`` that may wrap only after a ``;`` or ``,`` (a header field's parts, a
    reply's items), never inside a number or a name."""
    return text.replace(";", ";<wbr>").replace(",", ",<wbr>")


def seconds(t_ms: int, origin_ms: int = 0) -> str:
    """An instant as the page says it: seconds from the origin, three decimals."""
    return f"{(t_ms - origin_ms) / 1000:,.3f}&nbsp;s"


def status_html(outcome: Outcome, run: int, said: list[str]) -> str:
    """The status line of a drawn run: what decided how much, where, and how long it took."""
    s = outcome.settings
    n = len({c.name for c in s.traffic.clients()})
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


def client_note(client: str | None, row: dict[str, Any]) -> str:
    """Whose marks a timeline row shows, and their numbers: ``client 10.0.0.1: 37 requests,
    30 admitted, most in a window 12``."""
    if client is None:
        return "no client"
    n, admitted = len(row["t_ms"]), sum(bool(a) for a in row["admitted"])
    peak = max(row["in_window"], default=0)
    return (
        f"client {client}: {n:,} request{'s' * (n != 1)}, {admitted:,} admitted, "
        f"most in a window {peak:,}"
    )


def download_html(page: str, name: str = "explorer.html") -> str:
    """A link that saves ``page`` (one HTML file) from the browser, with no server."""
    data = base64.b64encode(page.encode("utf-8")).decode("ascii")
    size = len(page.encode("utf-8")) / 1024
    return (
        f'<a class="explorer-download-link" download="{html.escape(name)}" '
        f'href="data:text/html;base64,{data}">save {html.escape(name)}</a> '
        f"<small>({size:,.0f}&nbsp;KB; opens from disk, steps with no server)</small>"
    )


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
    text = "<br>".join(
        f'<span class="explorer-line">{nobreak(html.escape(line))}</span>' for line in lines
    )
    return (
        f'<div class="explorer-lines">{text or "no algorithm chosen"}</div>'
        f"<small>{' '.join(notes)}</small>"
    )


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


def _parts(algorithm: str, step: Step, limit: int, origin_ms: int) -> dict[str, str]:
    """One step's parts, each a line or block of the right column (class names a test can
    find), in the order they are shown."""
    decided = "admitted" if step.allowed else "refused"
    exact = "admits" if step.exact_allowed else "refuses"
    reply = ", ".join(html.escape(str(x)) for x in step.reply)
    headers = "".join(
        f"<div>{html.escape(k)}: <code>{breakable(html.escape(v))}</code></div>"
        for k, v in step.headers.items()
    )
    after = (
        "<div><i>unchanged: the script wrote nothing</i></div>"
        if step.after == step.before
        else _key_html(step.after)
    )
    return {
        "decision": f"<b>{html.escape(algorithm)}</b> at {seconds(step.t_ms, origin_ms)} "
        f"(cost&nbsp;{step.cost}): <b>{decided}</b>",
        "headers": f"<b>header fields</b>{headers}",
        "exact": f"exact log: {step.exact_in_window:,}&nbsp;of&nbsp;{limit:,} admitted in the "
        f"trailing window before this request; it {exact} it",
        "reply": f"<b>reply</b> <code>[{breakable(reply)}]</code>",
        "before": f"<b>keys before</b>{_key_html(step.before)}",
        "after": f"<b>keys after</b>{after}",
    }


def state_html(algorithm: str, step: Step, limit: int, origin_ms: int = 0) -> str:
    """One step as the right column shows it (class names a test can find)."""
    parts = _parts(algorithm, step, limit, origin_ms)
    return "".join(f'<div class="explorer-{k}">{v}</div>' for k, v in parts.items())


def hidden_html(algorithm: str, step: Step, origin_ms: int = 0) -> str:
    """A step whose outcome the reader is to predict: only what the server held before."""
    return (
        f'<div class="explorer-decision"><b>{html.escape(algorithm)}</b> at '
        f"{seconds(step.t_ms, origin_ms)} (cost&nbsp;{step.cost}): <b>?</b> "
        "<i>admitted or refused? answer below</i></div>"
        f'<div class="explorer-before"><b>keys before</b>{_key_html(step.before)}</div>'
    )


def pair_html(steps: dict[str, Step], limit: int, origin_ms: int = 0) -> str:
    """Two servers' steps side by side: each part of one beside the same part of the other."""
    parts = {a: _parts(a, s, limit, origin_ms) for a, s in steps.items()}
    names = list(parts)
    head = "".join(f"<th>{html.escape(a)}</th>" for a in names)
    body = "".join(
        f'<tr class="explorer-{k}">' + "".join(f"<td>{parts[a][k]}</td>" for a in names) + "</tr>"
        for k in ("decision", "reply", "headers", "exact", "before", "after")
    )
    return f'<table class="explorer-pair"><tr>{head}</tr>{body}</table>'
