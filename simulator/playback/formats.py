"""Where a trace is and how to read it: one :class:`TraceSource` for every reader.

A trace is a CSV of ``t_ms,client`` or a server's log. A log is read by its format (a preset,
``--log-format`` with the server's own format string, or JSON lines with field paths), its
time (``--time``) and its key (``--key``: who a request counts against). A :class:`TraceSource`
holds all four, checked when it is made: an unknown format, a malformed format string, a key
the format cannot feed, a field it does not hold, a time spelled no known way are each one
ConfigError naming the option, before any line is read. :func:`iter_source` then reads the
file a chunk at a time, each line checked: a line that cannot be read stops the read with one
message naming the file, the line and the field.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from simulator.checks import ConfigError
from simulator.playback.awslogs import CloudFrontLayout, alb_layout
from simulator.playback.jsonl import JSON_PRESETS, json_preset
from simulator.playback.keying import KeySpec, parse_key
from simulator.playback.logformats import PRESETS, log_format_layout, preset_layout
from simulator.playback.patterns import Layout, Transform
from simulator.playback.streams import CHUNK_REQUESTS, Requests, TraceError, open_text, text_lines
from simulator.playback.times import LineError, TimeSpec, parse_time_option

__all__ = ["TraceSource", "FORMATS", "iter_source"]

#: Every --format, and what it reads.
FORMATS = {
    "csv": "a CSV with header t_ms,client[,cost]",
    "clf": "Apache/nginx common or combined log, keyed by the remote host by default",
    "jsonl": "JSON lines: --time and --field say where things are",
    "combined": "nginx's (and Apache's) combined log format",
    "common": "the Common Log Format",
    "nginx": "the main format of nginx's shipped nginx.conf: combined + X-Forwarded-For",
    "alb": "an AWS Application Load Balancer's access log",
    "cloudfront": "a CloudFront standard log (tab-separated, #Fields header)",
    "envoy": "Envoy's default access log fields, as JSON",
    "cloudflare": "Cloudflare Logpush http_requests, as JSON",
}
#: Names --field accepts for what a key form needs, beside field names of one's own.
_ALIASES = {"ua": "header:user-agent", "xff": "header:x-forwarded-for"}


def _layout(fmt: str, log_format: str | None) -> Layout | None:
    if log_format is not None:
        if fmt not in ("csv", "clf"):
            raise ConfigError(
                f"--log-format gives the format itself; leave out --format {fmt} (or the "
                "--log-format)"
            )
        return log_format_layout(log_format)
    if fmt == "csv":
        return None
    if fmt == "clf":
        return preset_layout("combined")
    if fmt in PRESETS:
        return preset_layout(fmt)
    if fmt == "alb":
        return alb_layout()
    if fmt == "cloudfront":
        return CloudFrontLayout()
    if fmt == "jsonl" or fmt in JSON_PRESETS:
        return json_preset(fmt)
    raise ConfigError(f"--format {fmt}: unknown; one of {', '.join(FORMATS)}")


def _fields(texts: tuple[str, ...]) -> dict[str, str]:
    named: dict[str, str] = {}
    for text in texts:
        name, sep, path = text.partition("=")
        name, path = name.strip(), path.strip()
        if not sep or not name or not path:
            raise ConfigError(f"--field {text}: give NAME=PATH, e.g. --field user=auth.user.id")
        name = _ALIASES.get(name, name)
        if name in named:
            raise ConfigError(f"--field {text}: {name} is named twice")
        named[name] = path
    return named


@dataclass
class _Plan:
    """What one line is read for: the fields (``wanted``, the time's last), where each of the
    key's needs comes from, the time's spelling."""

    layout: Layout
    wanted: list[str]
    needs: list[tuple[str, int, Transform | None]]
    time: TimeSpec
    key: KeySpec

    def lines(self) -> Any:
        read = self.layout.reader(self.wanted)
        key, time, needs, cache = self.key, self.time, self.needs, dict[Any, int]()

        def line(text: str) -> tuple[int, str] | None:
            values = read(text)
            if values is None:
                return None
            when = values[-1]
            t = cache.get(when)
            if t is None:
                t = time.t_ms(when)
                if len(cache) > 65_536:  # a log's lines share their second with neighbours
                    cache.clear()
                cache[when] = t
            got = {n: (values[i] if f is None else f(values[i])) for n, i, f in needs}
            return t, key.client(got)

        return line


def _plan_for(source: TraceSource) -> _Plan | None:
    layout = _layout(source.format, source.log_format)
    key = parse_key(source.key)
    named = _fields(source.fields)
    if layout is None or (source.format == "clf" and source.plain):
        extra = [
            o
            for o, v in (("--key", not key.plain_ip), ("--time", source.time), ("--field", named))
            if v
        ]
        if layout is None and extra:
            raise ConfigError(
                f"{extra[0]}: a CSV trace has its time in t_ms and its client in client; "
                f"{extra[0]} is for logs (--format {'|'.join(list(FORMATS)[1:])})"
            )
        return None
    wanted: list[str] = []
    needs = []
    for need in sorted(key.needs):
        where = _where(layout, need, named)
        if where[0] not in wanted:
            wanted.append(where[0])
        needs.append((need, wanted.index(where[0]), where[1]))
    time = _time(layout, source.time, named)
    return _Plan(layout, [*wanted, time.field], needs, time, key)


def _where(layout: Layout, need: str, named: dict[str, str]) -> tuple[str, Transform | None]:
    """The field a key's need is read from, or ConfigError naming what the format holds."""
    offered = layout.offer(need)
    found: tuple[str, Transform | None]
    if need.startswith("field:"):
        found = (named.get(need[6:], need[6:]), None)
    elif need in named:
        found = (named[need], None)
    elif offered is not None:
        found = offered
    else:
        has = ", ".join(sorted(layout.offers)) or "nothing"
        raise ConfigError(
            f"--key: {layout.what} captures no {need} (it captures {has}); name the field "
            f"that holds it with --field {need}=FIELD"
        )
    if not layout.knows(found[0]):
        raise ConfigError(
            f"--key: {layout.what} has no field {found[0]!r} (its fields: "
            f"{', '.join(layout.names())})"
        )
    return found


def _time(layout: Layout, given: str | None, named: dict[str, str]) -> TimeSpec:
    if given is None:
        if layout.default_time is None:
            raise ConfigError(
                f"--time: {layout.what} has no time field of its own; give --time "
                "FIELD[:unit|strftime], e.g. --time ts:s or --time start_time:iso"
            )
        return layout.default_time
    spec = parse_time_option(given)
    spec = replace(spec, field=named.get(spec.field, spec.field))
    if not layout.knows(spec.field):
        raise ConfigError(
            f"--time {given}: {layout.what} has no field {spec.field!r} (its fields: "
            f"{', '.join(layout.names())})"
        )
    return spec


@dataclass(frozen=True)
class TraceSource:
    """A trace file and how to read it: ``format`` (see :data:`FORMATS`), ``log_format`` (an
    Apache LogFormat or nginx log_format string, for ``--log-format``), ``key`` (see
    :mod:`simulator.playback.keying`), ``time`` (``FIELD[:unit|strftime]``, None: the format's
    own) and ``fields`` (``NAME=PATH`` texts). Checked when made: ConfigError naming the option."""

    path: Path
    format: str = "csv"
    log_format: str | None = None
    key: str = "ip"
    time: str | None = None
    fields: tuple[str, ...] = ()
    _plan: _Plan | None = field(init=False, repr=False, compare=False, default=None)

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", Path(self.path))
        object.__setattr__(self, "fields", tuple(self.fields))
        object.__setattr__(self, "_plan", _plan_for(self))

    @property
    def plain(self) -> bool:
        """A CSV, or a common/combined log keyed by its remote host: the quick readers'."""
        return (
            self.format in ("csv", "clf")
            and self.log_format is None
            and self.key.strip() == "ip"
            and self.time is None
            and not self.fields
        )

    def __reduce__(self) -> Any:  # the plan holds compiled readers: made again where unpickled
        return (
            TraceSource,
            (self.path, self.format, self.log_format, self.key, self.time, self.fields),
        )


def iter_source(
    source: TraceSource, path: Path | None = None, chunk: int | None = None
) -> Iterator[Requests]:
    """The requests of a log (``source``, read at ``path`` if given) in file order, ``chunk``
    at a time; TraceError naming the file, line and field for a line that cannot be read."""
    path, chunk = path or source.path, chunk or CHUNK_REQUESTS
    if source._plan is None:
        raise TraceError(f"{path}: {source.format} is read by iter_trace")
    line = source._plan.lines()
    with open_text(path) as fh:
        start, t_ms, clients = 0, list[int](), list[str]()
        for number, text in enumerate(text_lines(path, fh), start=1):
            try:
                got = line(text)
            except LineError as exc:
                raise TraceError(f"{path}:{number}: {exc}") from None
            if got is None:
                continue
            t_ms.append(got[0])
            clients.append(got[1])
            if len(t_ms) == chunk:
                yield Requests(range(start, start + chunk), t_ms, clients)
                start, t_ms, clients = start + chunk, [], []
        if t_ms:
            yield Requests(range(start, start + len(t_ms)), t_ms, clients)
