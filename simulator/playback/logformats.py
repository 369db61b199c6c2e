"""Web servers' log formats, given as the server's own configuration spells them.

``--log-format`` takes an Apache ``LogFormat`` string (``%h %l %u %t "%r" %>s %b``) or an nginx
``log_format`` string (``$remote_addr - $remote_user [$time_local] "$request"``) verbatim, as
it stands in httpd.conf or nginx.conf (the ``LogFormat``/``log_format`` word, the name and the
quotes around it may be left in). Apache's directives are read with the ``apachelogs``
library: which directives there are, what each holds, how its value is unescaped and how its
time fields make one time; the line is matched by :mod:`simulator.playback.patterns`, which
never backtracks. nginx's variables are read the same way: a variable holds free text up to
the literal text after it, ``$time_local`` its fixed date.

The presets ``combined``, ``common`` and ``nginx`` are nginx's own ``combined`` format (the
Apache one too), the Common Log Format, and the ``main`` format of nginx's shipped nginx.conf
(``combined`` with ``"$http_x_forwarded_for"`` at the end).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from apachelogs.directives import format2regex
from apachelogs.errors import Error as ApacheLogsError
from apachelogs.timeutil import assemble_datetime

from simulator.checks import ConfigError
from simulator.playback.patterns import PatternLayout, Token, Transform
from simulator.playback.times import TimeSpec

__all__ = ["apache_layout", "nginx_layout", "log_format_layout", "PRESETS", "request_target"]

#: Presets spelled as nginx log_format strings.
PRESETS = {
    "combined": '$remote_addr $remote_logname $remote_user [$time_local] "$request" $status '
    '$body_bytes_sent "$http_referer" "$http_user_agent"',
    "common": "$remote_addr $remote_logname $remote_user [$time_local] "
    '"$request" $status $body_bytes_sent',
    "nginx": '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent '
    '"$http_referer" "$http_user_agent" "$http_x_forwarded_for"',
}
_DIRECTIVE = re.compile(r"%[<>!,0-9]*(?:\{[^}]*\})?(?:\^t[io]|[a-zA-Z%])")
_VARIABLE = re.compile(r"\$(?:\{(\w+)\}|(\w+))")
#: nginx variables whose values are spelled one way: read with their own pattern ($uri holds
#: no "?", so $uri$is_args$args reads back).
_NGINX_FIXED = {
    "time_local": r"(\d{2}/[A-Za-z]{3}/\d{4}:\d{2}:\d{2}:\d{2} [+-]\d{4})",
    "is_args": r"(\??)",
    "uri": r"((?:[^?\s\"\\]|\\.)*+)",
}
#: nginx's time variables and how each is spelled, in the order one is chosen.
_NGINX_TIMES = (("time_local", "clf"), ("time_iso8601", "iso"), ("msec", "s"))


def request_target(line: Any) -> Any:
    """The target of a request line (``GET /a?b HTTP/1.1`` -> ``/a?b``)."""
    if not isinstance(line, str) or line == "-":
        return line
    parts = line.split(" ")
    return parts[1] if len(parts) >= 2 else parts[0]


def request_method(line: Any) -> Any:
    if not isinstance(line, str) or line == "-":
        return line
    return line.split(" ", 1)[0]


def _shown(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")


def _unwrapped(text: str, word: str) -> str:
    """A format as the configuration file holds it, without its directive word and name, and
    its quoted pieces joined (nginx: ``log_format main '$a' '$b';``; Apache:
    ``LogFormat "%h \\"%r\\"" common``)."""
    body = text.strip()
    if body.lower().startswith(word.lower() + " "):
        body = body[len(word) :].strip()
        if word == "log_format":  # log_format NAME [escape=...] 'piece' 'piece';
            body = body.split(None, 1)[1] if " " in body else ""
            if body.startswith("escape="):
                body = body.split(None, 1)[1] if " " in body else ""
    body = body.rstrip(";").strip()
    pieces = re.findall(r"'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\"", body)
    quoted = re.fullmatch(r"(?:\s*(?:'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"))+\s*", body)
    if word == "LogFormat" and body.startswith('"'):  # "..." nickname
        m = re.match(r'"((?:[^"\\]|\\.)*)"(\s+\S+)?\s*$', body)
        if m:
            return m.group(1).replace('\\"', '"').replace("\\t", "\t")
    if word == "log_format" and quoted and pieces:
        return "".join(a or b for a, b in pieces)
    return body


def _decoded(convert: Callable[[str], Any]) -> Callable[[str], Any]:
    """apachelogs' converter, with the bytes of an unescaped value as text (bytes that are not
    UTF-8 kept as lone surrogates, as the rest of the trace keeps them)."""

    def read(text: str) -> Any:
        value = convert(text)
        return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value

    return read


def _group_name(name: str | tuple[str, ...]) -> str:
    if isinstance(name, str):
        return name
    lead, *rest = name
    tail = ".".join(rest)
    return f"{lead}.{tail.lower() if lead in ('headers_in', 'headers_out') else tail}"


def apache_layout(fmt: str) -> PatternLayout:
    """An Apache ``LogFormat`` string as a layout, or ConfigError naming what is wrong in it."""
    text = _unwrapped(fmt, "LogFormat")
    try:
        format2regex(text)  # the whole, for apachelogs' own message on a bad directive
    except ApacheLogsError as exc:
        raise ConfigError(f"--log-format {_shown(fmt)}: {exc}") from None
    tokens = _apache_tokens(text)
    if not any(t.literal is None for t in tokens):
        raise ConfigError(f"--log-format {_shown(fmt)}: holds no directive (%h, %t, ...)")
    names = {n for t in tokens for n in t.names}
    joined = {}
    for lead in ("original_", "", "final_"):
        for mid in ("begin_", "", "end_"):
            target = f"{lead}{mid}request_time"
            if any(n.startswith(f"{target}_fields.") for n in names):
                joined[target] = (f"{target}_fields.", _assembled(f"{target}_fields."))
    when = next((t for t in ("request_time", "begin_request_time") if t in joined), None)
    default_time = TimeSpec(when, "iso") if when else None
    what = f"the LogFormat {_shown(text)}"
    return PatternLayout(tokens, what, _apache_offers(names), default_time, joined)


def _apache_tokens(text: str) -> list[Token]:
    """The literal text and directives of a LogFormat, each directive with apachelogs' names,
    converters and (unless it is free text, read without backtracking) pattern."""
    tokens: list[Token] = []
    at = 0
    for m in _DIRECTIVE.finditer(text):
        if m.start() > at:
            tokens.append(Token(literal=text[at : m.start()]))
        at = m.end()
        if m.group() == "%%":
            tokens.append(Token(literal="%"))
            continue
        defs, pattern = format2regex(m.group())
        names = tuple(_group_name(d[0]) for d in defs)
        free = len(defs) == 1 and "*?" in pattern
        convert = tuple(_decoded(d[2]) for d in defs)
        tokens.append(Token(None, names, None if free else pattern, convert, m.group(), pattern))
    if at < len(text):
        tokens.append(Token(literal=text[at:]))
    return tokens


def _apache_offers(names: set[str]) -> dict[str, tuple[str, Transform | None]]:
    """What a LogFormat's directives hold that a key form asks for."""
    offers: dict[str, tuple[str, Transform | None]] = {}
    for need, field in (("ip", "remote_host"), ("ip", "remote_address"), ("path", "request_uri")):
        if field in names and need not in offers:
            offers[need] = (field, None)
    if "request_line" in names:
        offers.setdefault("path", ("request_line", request_target))
        offers["method"] = ("request_line", request_method)
    if "request_method" in names:
        offers["method"] = ("request_method", None)
    for n in sorted(names):
        if n.startswith("headers_in."):
            offers[f"header:{n.split('.', 1)[1]}"] = (n, None)
    return offers


def _assembled(lead: str) -> Callable[[dict[str, Any]], Any]:
    def make(parts: dict[str, Any]) -> Any:
        return assemble_datetime({k[len(lead) :]: v for k, v in parts.items()})

    return make


def nginx_layout(fmt: str, what: str | None = None) -> PatternLayout:
    """An nginx ``log_format`` string as a layout, or ConfigError naming what is wrong in it."""
    text = _unwrapped(fmt, "log_format")
    tokens = _nginx_tokens(text)
    names = [n for t in tokens for n in t.names]
    if not names:
        raise ConfigError(f"--log-format {_shown(fmt)}: holds no variable ($remote_addr, ...)")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(f"--log-format {_shown(fmt)}: ${twice[0]} stands in it twice")
    when = next(((n, how) for n, how in _NGINX_TIMES if n in names), None)
    default_time = TimeSpec(*when) if when else None
    what = what or f"the log_format {_shown(text)}"
    return PatternLayout(tokens, what, _nginx_offers(names), default_time)


def _nginx_tokens(text: str) -> list[Token]:
    tokens: list[Token] = []
    at = 0
    for m in _VARIABLE.finditer(text):
        if m.start() > at:
            tokens.append(Token(literal=text[at : m.start()]))
        at = m.end()
        name = m.group(1) or m.group(2)
        tokens.append(Token(None, (name,), _NGINX_FIXED.get(name), (_dash,), f"${name}"))
    if at < len(text):
        tokens.append(Token(literal=text[at:]))
    return tokens


def _nginx_offers(names: list[str]) -> dict[str, tuple[str, Transform | None]]:
    """What a log_format's variables hold that a key form asks for."""
    offers: dict[str, tuple[str, Transform | None]] = {}
    if "remote_addr" in names:
        offers["ip"] = ("remote_addr", None)
    for field, how in (("request_uri", None), ("uri", None), ("request", request_target)):
        if field in names:
            offers.setdefault("path", (field, how))
    if "request_method" in names:
        offers["method"] = ("request_method", None)
    elif "request" in names:
        offers["method"] = ("request", request_method)
    for n in names:
        if n.startswith("http_"):  # nginx's name of a request header
            offers[f"header:{n[5:].replace('_', '-')}"] = (n, None)
    return offers


def _dash(text: str) -> str | None:
    """nginx writes ``-`` for a variable without a value."""
    return None if text == "-" else text


def log_format_layout(fmt: str) -> PatternLayout:
    """``--log-format``: nginx's when it holds ``$variables`` and no ``%`` directive, Apache's
    when it holds ``%`` directives and no variable."""
    apache = bool(_DIRECTIVE.search(_unwrapped(fmt, "LogFormat")))
    nginx = bool(_VARIABLE.search(fmt))
    if apache and nginx:
        raise ConfigError(
            f"--log-format {_shown(fmt)}: holds both Apache %-directives and nginx "
            "$variables; give one server's format"
        )
    if nginx or fmt.strip().startswith("log_format"):
        return nginx_layout(fmt)
    if not apache:
        raise ConfigError(
            f"--log-format {_shown(fmt)}: holds no Apache directive (%h, %t, ...) and no nginx "
            "variable ($remote_addr, $time_local, ...)"
        )
    return apache_layout(fmt)


def preset_layout(name: str) -> PatternLayout:
    """``--format combined|common|nginx``."""
    return nginx_layout(PRESETS[name], f"--format {name}")
