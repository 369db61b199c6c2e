"""A :class:`~simulator.explain.why.Why` shown: as plain text, or as escaped HTML for a widget.

The HTML is one ``<div class="why">`` holding, in this order (class names kept stable, for a
page's stylesheet and its tests):

* ``why-head``: one line, the request, its instant and cost, and the decision;
* ``why-source``: a ``<pre>`` of the script, one ``<span class="why-line">`` per line with
  ``data-line`` (1-based) and ``data-hits``; a line that ran carries ``why-ran`` as well, its
  number in ``<span class="why-lineno">`` and, when it ran more than once, its count in
  ``<span class="why-hits">``;
* ``why-calls``: a ``<table>`` of the calls (columns line, command, arguments, reply); a call
  that met an error has its row marked ``why-error``;
* ``why-arithmetic``: an ``<ol>`` of the arithmetic's lines, when there is arithmetic;
* ``why-note``: a ``<p>`` with the note, when there is one.

Every piece of text from the script, its keys or the server's replies is escaped.
:data:`STYLE` is a small stylesheet that marks the lines that ran.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from simulator.explain.why import Call, Why

__all__ = ["as_text", "as_html", "STYLE", "shown"]

#: A stylesheet for the HTML: the lines that ran shaded, the others dimmed.
STYLE = (
    ".why-source{font-family:monospace;font-size:12px;line-height:1.35}"
    ".why-line{display:block;color:#777}"
    ".why-line.why-ran{color:#000;background:#fff3c4}"
    ".why-lineno{display:inline-block;width:3em;color:#999}"
    ".why-hits{color:#a05a00;margin-left:1em}"
    ".why-calls td,.why-calls th{font-family:monospace;font-size:12px;padding:1px 6px;text-align:left}"
    ".why-error{color:#b00020}"
)


def shown(value: Any) -> str:
    """A reply or an argument as a reader would write it: text quoted, nil as ``nil``, a list
    in brackets, an error or status reply as ``error: …``/``status: …``."""
    if value is None or value is False:
        return "nil"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, dict):
        return "; ".join(f"{'error' if k == 'err' else 'status'}: {v}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return "[" + ", ".join(shown(v) for v in value) + "]"
    return str(value)


def _head(why: Why) -> str:
    decided = "admitted" if why.allowed else "refused"
    return (
        f"{why.algorithm}: request {why.index + 1} of {why.client} at {why.t_ms:,} ms "
        f"(cost {why.cost}) was {decided}; reply {shown(list(why.reply))}"
    )


def _call_text(call: Call) -> str:
    answer = f"error: {call.error}" if call.error is not None else shown(call.reply)
    kind = "redis.pcall" if call.protected else "redis.call"
    where = "sent" if call.line is None else f"line {call.line}, {kind}"
    args = " ".join(str(a) for a in call.args)
    return f"{where}: {call.command} {args} → {answer}"


def as_text(why: Why) -> str:
    """The view as plain text: the head, the script with ``▶`` before each line that ran (and
    ``×n`` after it when it ran n > 1 times), the calls, the arithmetic and the note."""
    out = [_head(why)]
    if why.source_lines:
        out.append("")
        for n, text in enumerate(why.source_lines, 1):
            times = why.hits_on(n)
            mark = "▶" if times else " "
            more = f"   ×{times}" if times > 1 else ""
            out.append(f"{mark} {n:3d}  {text}{more}")
    out.append("")
    out.append("calls:" if why.calls else "calls: none")
    out += [f"  {_call_text(c)}" for c in why.calls]
    if why.arithmetic:
        out.append("")
        out += why.arithmetic
    if why.note:
        out.append("")
        out.append(why.note)
    return "\n".join(out)


def _source_html(why: Why) -> str:
    rows = []
    for n, text in enumerate(why.source_lines, 1):
        times = why.hits_on(n)
        classes = "why-line why-ran" if times else "why-line"
        more = f'<span class="why-hits">×{times}</span>' if times > 1 else ""
        rows.append(
            f'<span class="{classes}" data-line="{n}" data-hits="{times}">'
            f'<span class="why-lineno">{n}</span>{html.escape(text)}{more}</span>'
        )
    return '<pre class="why-source">' + "".join(rows) + "</pre>"


def _calls_html(why: Why) -> str:
    rows = []
    for call in why.calls:
        error = call.error is not None
        answer = f"error: {call.error}" if error else shown(call.reply)
        cells = (
            "" if call.line is None else str(call.line),
            ("pcall " if call.protected else "") + call.command,
            " ".join(str(a) for a in call.args),
            answer,
        )
        marked = ' class="why-error"' if error else ""
        rows.append(
            f"<tr{marked}>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>"
        )
    head = "<tr><th>line</th><th>command</th><th>arguments</th><th>reply</th></tr>"
    return f'<table class="why-calls"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'


def as_html(why: Why) -> str:
    """The view as one escaped HTML fragment (the classes of this module's docstring)."""
    parts = [f'<div class="why-head">{html.escape(_head(why))}</div>']
    if why.source_lines:
        parts.append(_source_html(why))
    parts.append(_calls_html(why))
    if why.arithmetic:
        items = "".join(f"<li>{html.escape(line)}</li>" for line in why.arithmetic)
        parts.append(f'<ol class="why-arithmetic">{items}</ol>')
    if why.note:
        parts.append(f'<p class="why-note">{html.escape(why.note)}</p>')
    return '<div class="why">' + "".join(parts) + "</div>"
