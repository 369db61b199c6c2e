"""JSON lines: one object per line, fields found by dotted paths into nested objects.

Envoy with a JSON access log, Cloudflare Logpush, an application's own structured log: each
line is an object, and what a key or a time needs is at a path in it (``request.headers.x-api-key``,
``user.id``; a number indexes a list: ``hops.0``). ``--field NAME=PATH`` names a path
(``--field user=auth.user.id``, then ``--key field:user``; ``--field ip=client.addr`` tells
where the address is: without it, ``ip``, ``path`` and ``method`` are the fields of those
names); a path not named that way is read as it is (``--key field:user.id``).
Lines are parsed with orjson. A path that a line lacks is refused naming the line and the path;
a null is ``-`` in a key.

The presets: ``envoy`` reads the fields of Envoy's default access log format as a JSON
dictionary names them (``start_time``, ``method``, ``path``, ``x_forwarded_for``,
``user_agent``, ``request_id``, ``authority``, ``downstream_remote_address``, ...) and
``cloudflare`` the Logpush ``http_requests`` fields (``ClientIP``, ``ClientRequestURI``,
``EdgeStartTimestamp`` in nanoseconds, as Logpush writes by default; any other header in
``RequestHeaders``, where Logpush puts the custom fields asked for).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from simulator.playback.awslogs import strip_port
from simulator.playback.patterns import Layout, Transform
from simulator.playback.times import LineError, TimeSpec

__all__ = ["JsonLayout", "json_preset", "JSON_PRESETS"]

_MISSING = object()


@dataclass
class JsonLayout(Layout):
    """Lines of JSON objects; any path is a field."""

    what: str = "--format jsonl"
    offers: Mapping[str, tuple[str, Transform | None]] = field(default_factory=dict)
    default_time: TimeSpec | None = None
    #: Where a header no preset field holds is looked for (a path, NAME appended).
    headers_at: str | None = None

    def names(self) -> Sequence[str]:
        return sorted({f for f, _ in self.offers.values()})

    def knows(self, name: str) -> bool:
        return bool(name) and all(name.split("."))

    def offer(self, need: str) -> tuple[str, Transform | None] | None:
        found = self.offers.get(need)
        if found is None and self.headers_at is not None and need.startswith("header:"):
            return (f"{self.headers_at}.{need[7:]}", None)
        return found

    def reader(self, wanted: Sequence[str]) -> Callable[[str], list[Any] | None]:
        paths = [(name, name.split(".")) for name in wanted]

        def read(line: str) -> list[Any] | None:
            if not line.strip():
                return None
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise LineError(f"not a line of JSON ({exc}): {line.rstrip()[:80]!r}") from None
            if not isinstance(obj, dict):
                raise LineError(
                    f"not a JSON object but {type(obj).__name__}: {line.rstrip()[:80]!r}"
                )
            got = []
            for name, steps in paths:
                value = _at(obj, steps)
                if value is _MISSING:
                    raise LineError(f"field {name}: the line's object holds no such path")
                got.append(value)
            return got

        return read


def _at(obj: Any, steps: list[str]) -> Any:
    for step in steps:
        if isinstance(obj, dict):
            obj = obj.get(step, _MISSING)
        elif isinstance(obj, list) and step.isdigit() and int(step) < len(obj):
            obj = obj[int(step)]
        else:
            return _MISSING
        if obj is _MISSING:
            return obj
    if isinstance(obj, dict | list):
        return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS).decode()
    return obj


#: Envoy's default format, as its JSON dictionary names the fields.
_ENVOY = {
    "ip": ("downstream_remote_address", strip_port),
    "path": ("path", None),
    "method": ("method", None),
    "header:x-forwarded-for": ("x_forwarded_for", None),
    "header:user-agent": ("user_agent", None),
    "header:x-request-id": ("request_id", None),
    "header:host": ("authority", None),
    "header::authority": ("authority", None),
}
#: Cloudflare Logpush http_requests.
_CLOUDFLARE = {
    "ip": ("ClientIP", None),
    "path": ("ClientRequestURI", None),
    "method": ("ClientRequestMethod", None),
    "header:user-agent": ("ClientRequestUserAgent", None),
    "header:referer": ("ClientRequestReferer", None),
    "header:host": ("ClientRequestHost", None),
}
JSON_PRESETS = ("envoy", "cloudflare")


def json_preset(name: str) -> JsonLayout:
    if name == "envoy":
        return JsonLayout("--format envoy", dict(_ENVOY), TimeSpec("start_time", "iso"))
    if name == "cloudflare":
        return JsonLayout(
            "--format cloudflare",
            dict(_CLOUDFLARE),
            TimeSpec("EdgeStartTimestamp", "ns"),
            headers_at="RequestHeaders",
        )
    return JsonLayout(offers={n: (n, None) for n in ("ip", "path", "method")})
