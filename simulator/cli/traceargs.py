"""The trace options ``replay`` and ``compare`` share: which file format, which time, which key.

Both commands read a trace the same way, so the options are declared once here
(:func:`add_trace_options`) and turned into one
:class:`~simulator.playback.formats.TraceSource` (:func:`trace_source`), checked before
anything is read: a bad format string, key, field or time is one message naming it, exit 2.
docs/logs.md shows each format with a line of it.
"""

from __future__ import annotations

import argparse

from simulator.playback.formats import FORMATS, TraceSource
from simulator.playback.keying import MOST_HOPS, MOST_KEY_BYTES

__all__ = ["add_trace_options", "trace_source"]

_FORMAT_HELP = "; ".join(f"{name}: {what}" for name, what in FORMATS.items())


def add_trace_options(p: argparse.ArgumentParser) -> None:
    """``--format``, ``--log-format``, ``--key``, ``--time`` and ``--field`` on ``p``."""
    # argparse %-formats the options' help, not a group's description: one % each there.
    group = p.add_argument_group(
        "reading the trace",
        "A log may be plain, gzip (.gz) or zstd (.zst), read as a stream. See docs/logs.md "
        "for each format with an example line. Examples: "
        "--format nginx --key xff:1; "
        '--log-format \'%h %l %u %t "%r" %>s %b "%{User-Agent}i" %{X-Api-Key}i\' '
        "--key header:x-api-key; "
        "--format jsonl --time ts:s --field user=auth.user_id --key field:user; "
        "--format alb --key '{ip}:{route}'.",
    )
    group.add_argument(
        "--format",
        choices=tuple(FORMATS),
        default="csv",
        help=f"the trace's format (default csv). {_FORMAT_HELP}",
    )
    group.add_argument(
        "--log-format",
        default=None,
        metavar="STRING",
        help="the log's format as the server's configuration spells it, verbatim: an Apache "
        "LogFormat string ('%%h %%l %%u %%t \"%%r\" %%>s %%b') or an nginx log_format string "
        "('$remote_addr - $remote_user [$time_local] \"$request\" ...')",
    )
    group.add_argument(
        "--key",
        default="ip",
        metavar="KEY",
        help="who a request counts against; its value is the client id the scripts see "
        f"(at most {MOST_KEY_BYTES:,} bytes). ip (default: the remote address), ip+ua "
        "(address and User-Agent), xff[:N] (X-Forwarded-For with N trusted proxy hops, "
        f"default 1: the address N from the right; 1 to {MOST_HOPS}), ipv6/64 (an IPv6 "
        "address as its /64, IPv4 as it is), route (the path without its query, numeric and "
        "UUID segments as :id), header:NAME (a request header the format captured), "
        "field:NAME (a named field), or a template of them: '{ip}:{route}'",
    )
    group.add_argument(
        "--time",
        default=None,
        metavar="FIELD[:SPEC]",
        help="where a log line's time is and how it is spelled (default: the format's own "
        "time field). SPEC: s, ms, us or ns (a number of those since the Unix epoch, e.g. "
        "ts:s for 1700000000.123), iso (ISO 8601, also when SPEC is left out), clf "
        "(17/May/2015:10:05:03 "
        "+0000) or a strftime pattern (start_time:%%Y-%%m-%%dT%%H:%%M:%%S.%%fZ); a time "
        "without a zone is UTC. Times are read to the millisecond, floored",
    )
    group.add_argument(
        "--field",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="name a field (repeatable): in JSON lines PATH is a dotted path into nested "
        "objects (--field user=auth.user.id; --field ip=client.addr says where the address "
        "is; --field header:x-api-key=request.headers.x-api-key a header); in other formats "
        "PATH is a field of the format (--field ip=http_x_real_ip)",
    )


def trace_source(args: argparse.Namespace) -> TraceSource:
    """The trace the options name, checked (ConfigError naming the option, exit 2)."""
    return TraceSource(
        args.trace,
        args.format,
        args.log_format,
        args.key,
        args.time,
        tuple(args.field),
    )
