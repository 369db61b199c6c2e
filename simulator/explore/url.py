"""The page's address carries the moment: the preset, the settings and the chosen request.

A teacher who found the moment to show sends its link; opening it shows the same view. The
address holds the preset's name, each setting that differs from that preset's (the limit, the
window, the algorithms, the traffic's numbers, the source, each algorithm's own parameter as
``param.<algorithm>.<name>``), the requests painted by hand (``added=<at_s>,<n>,<client>``,
one each), the client shown, the servers shown and the request chosen (numbered from 1, as the
time bar says it). :func:`query_of` writes it,
:func:`read_query` reads it back into settings (a value that does not fit its setting is refused
naming it, as a control would be).

Voilà hands the kernel the query of the page it serves in ``QUERY_STRING``; the page is told the
new address by :func:`address_html`, a hidden piece of HTML whose handler replaces the address
in the browser's history (no reload). Inside JupyterLab the address is the notebook's, so it is
left alone there.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, fields, replace
from typing import Any
from urllib.parse import parse_qsl, urlencode

from simulator.algorithms import ALGORITHMS
from simulator.checks import ConfigError
from simulator.explore.settings import Settings, Traffic

__all__ = ["View", "query_of", "read_query", "address_html"]

#: Settings carried by the address (the algorithms' own parameters follow their defaults).
_SETTINGS = (
    "limit", "window_s", "duration_s", "seed", "trace", "trace_format", "trace_from_s",
    "trace_span_s", "backend",
)  # fmt: skip
_TRAFFIC = tuple(f.name for f in fields(Traffic) if f.name != "added")
#: An algorithm's own parameter: ``param.<algorithm>.<name>=<value>``.
_PARAM = "param."


@dataclass(frozen=True)
class View:
    """What an address restores: the preset (or none), the settings, the client and servers
    shown, and the request chosen (from 1; 0: none)."""

    preset: str
    settings: Settings
    client: str = ""
    server: str = ""
    beside: str = ""
    request: int = 0


def _text(value: Any) -> str:
    if isinstance(value, tuple):
        return ",".join(f"{x:g}" if isinstance(x, float) else str(x) for x in value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def query_of(view: View, base: Settings) -> str:
    """The address' query of ``view``: what differs from ``base`` (the preset's settings)."""
    s, pairs = view.settings, [("preset", view.preset)] if view.preset else []
    if s.algorithms != base.algorithms:
        pairs.append(("algorithms", ",".join(s.algorithms)))
    carried = [k for k in _SETTINGS if s.trace is not None or not k.startswith("trace")]
    pairs += [(k, _text(getattr(s, k))) for k in carried if getattr(s, k) != getattr(base, k)]
    pairs += [
        (k, _text(getattr(s.traffic, k)))
        for k in _TRAFFIC
        if getattr(s.traffic, k) != getattr(base.traffic, k)
    ]
    pairs += _params_of(s, base)
    # Each request painted by hand: ``added=<at_s>,<n>,<client>`` (the client last: it may
    # hold commas of its own).
    pairs += [("added", f"{at_s:g},{n},{client}") for client, at_s, n in s.traffic.added]
    for k in ("client", "server", "beside"):
        if getattr(view, k):
            pairs.append((k, getattr(view, k)))
    if view.request:
        pairs.append(("request", str(view.request)))
    return urlencode(pairs)


def _params_of(s: Settings, base: Settings) -> list[tuple[str, str]]:
    """The algorithms' own parameters that differ from what ``base`` gives them at ``s``'s
    limit and window (its own value, or the default)."""
    pairs = []
    for algorithm in s.algorithms:
        given = s.params.get(algorithm, {})
        for p in ALGORITHMS[algorithm].params_declared:
            value = given.get(p.name)
            if value is None:
                continue
            like = base.params.get(algorithm, {}).get(p.name, p.default(s.limit, s.window_ms))
            if value != like:
                pairs.append((f"{_PARAM}{algorithm}.{p.name}", _text(value)))
    return pairs


def _read_params(given: list[tuple[str, str]], base: Settings) -> dict[str, dict[str, float]]:
    """``param.<algorithm>.<name>`` pairs on top of ``base``'s parameters; an unknown
    algorithm or parameter, or a value that is not a number, refused naming it."""
    params = {a: dict(p) for a, p in base.params.items()}
    for key, text in given:
        algorithm, _, name = key[len(_PARAM) :].partition(".")
        if algorithm not in ALGORITHMS:
            raise ConfigError(f"address: {key}: no algorithm {algorithm!r}")
        known = {p.name: p for p in ALGORITHMS[algorithm].params_declared}
        if name not in known:
            listed = ", ".join(known) or "none"
            raise ConfigError(f"address: {key}: {algorithm} has no parameter {name!r} ({listed})")
        like = 0 if known[name].integer else 0.0
        params.setdefault(algorithm, {})[name] = _as(like, text, key)
    return params


def _read_added(texts: list[str]) -> tuple[tuple[str, float, int], ...]:
    """``added=<at_s>,<n>,<client>`` values as the requests painted by hand."""
    added = []
    for text in texts:
        at_s, n, client = (text.split(",", 2) + ["", ""])[:3]
        if not client:
            raise ConfigError(f"address: added={text!r}: expected <at_s>,<n>,<client>")
        added.append((client, _as(0.0, at_s, "added (at_s)"), _as(0, n, "added (n)")))
    return tuple(added)


def _as(like: Any, text: str, name: str) -> Any:
    """``text`` read as the type of ``like`` (the base's value of setting ``name``)."""
    try:
        if isinstance(like, bool):
            return text.lower() in ("1", "true", "yes")
        if isinstance(like, int):
            return int(text)
        if isinstance(like, float):
            return float(text)
        if isinstance(like, tuple):
            return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ConfigError(f"address: {name}={text!r} is not a number") from None
    return text


def _changes(given: dict[str, str], base: Settings) -> dict[str, Any]:
    """The settings (not the traffic's) that ``given`` changes from ``base``, taken out of it."""
    changes: dict[str, Any] = {}
    if "algorithms" in given:
        changes["algorithms"] = tuple(a for a in given.pop("algorithms").split(",") if a)
    for k in _SETTINGS:
        if k in given:
            like = getattr(base, k)
            changes[k] = given.pop(k) if like is None else _as(like, given.pop(k), k)
    return changes


def _traffic(given: dict[str, str], added: list[str], base: Traffic) -> Traffic:
    """``base`` with the traffic's numbers ``given`` (taken out of it) and the requests
    ``added`` by hand."""
    traffic = {k: _as(getattr(base, k), given.pop(k), k) for k in _TRAFFIC if k in given}
    if added:
        traffic["added"] = _read_added(added)
    return replace(base, **traffic) if traffic else base


def read_query(query: str, presets: dict[str, Settings], default: Settings) -> View | None:
    """The view an address' ``query`` asks for (None when it asks for nothing), its settings
    on top of the preset's (or ``default``)."""
    pairs = parse_qsl(query.lstrip("?"))
    if not pairs:
        return None
    given = {k: v for k, v in pairs if k != "added" and not k.startswith(_PARAM)}
    added = [v for k, v in pairs if k == "added"]
    preset = given.pop("preset", "")
    if preset and preset not in presets:
        raise ConfigError(f"address: no preset {preset!r}; known: {', '.join(presets)}")
    base = presets.get(preset, default)
    changes = _changes(given, base)
    traffic = _traffic(given, added, base.traffic)
    if traffic != base.traffic:
        changes["traffic"] = traffic
    params = [(k, v) for k, v in pairs if k.startswith(_PARAM)]
    if params:
        changes["params"] = _read_params(params, base)
    request = _as(0, given.get("request", "0"), "request")
    return View(
        preset,
        replace(base, **changes),
        given.get("client", ""),
        given.get("server", ""),
        given.get("beside", ""),
        max(request, 0),
    )


def address_html(query: str, n: int) -> str:
    """A hidden image whose error handler puts ``query`` into the page's address (not in a
    notebook's page: JupyterLab's address names the notebook); ``n`` makes each one new, so its
    handler runs each time."""
    script = (
        "if(!/[/](lab|doc|notebooks|tree)[/]/.test(location.pathname)){"
        f"history.replaceState(null,'',location.pathname+'?{query}')}}"
    )
    return (
        f'<img src="data:image/gif;base64,{n}" alt="" style="display:none" '
        f'onerror="{html.escape(script, quote=True)}">'
    )
