"""Who a request counts against: the key a limiter would build from a log line.

A limiter in production rarely counts per remote address alone. Behind a load balancer every
request comes from the balancer, so the client is in ``X-Forwarded-For``; an API counts per key
(``header:x-api-key``) or per user (``field:user_id``); a route's budget is shared by everyone
who calls it (``route``: ``/users/42/orders?page=2`` and ``/users/7/orders`` are both
``/users/:id/orders``); IPv6 clients hold a /64 each, so counting per address lets one of them
rotate through 2^64 addresses (``ipv6/64``). A :class:`KeySpec` is one of these forms, or a
template of several (``{ip}:{route}``), and the string it builds is the client id the scripts
see.

The forms ask a log format for what they need by name (``ip``, ``path``, ``header:NAME``,
``field:NAME``: see :attr:`KeySpec.needs`), so a form the format cannot feed is refused before a
line is read. A value the line leaves empty (``-`` in a log, null in JSON) is ``-``: requests
without an API key share one budget, as they would on a limiter keyed that way. A key is at most
:data:`MOST_KEY_BYTES` bytes (UTF-8): keys live on the server, and one grown from a header
without bound would be refused there.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from simulator.checks import ConfigError
from simulator.playback.times import LineError

__all__ = [
    "KeySpec",
    "KeyPart",
    "parse_key",
    "route_of",
    "fold_ipv6",
    "xff_client",
    "MOST_KEY_BYTES",
]

#: The longest key (bytes of UTF-8) a line may make.
MOST_KEY_BYTES = 1024
#: The most trusted proxy hops ``xff:N`` takes.
MOST_HOPS = 64
#: The forms, as --help lists them.
FORMS = ("ip", "ip+ua", "xff[:N]", "ipv6/64", "route", "header:NAME", "field:NAME")
_NAME = re.compile(r"[A-Za-z0-9_.@:\-]+")
_ID = re.compile(r"\d+|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_DIGIT = re.compile(r"\d")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


@dataclass(frozen=True)
class KeyPart:
    """One form: ``form`` is ip, ip+ua, xff, ipv6/64, route, header or field; ``arg`` the hops
    of xff, the header's name (lower case) or the field's name."""

    form: str
    arg: str = ""

    @property
    def needs(self) -> tuple[str, ...]:
        """What the form asks the log format for."""
        return {
            "ip": ("ip",),
            "ip+ua": ("ip", "header:user-agent"),
            "xff": ("header:x-forwarded-for", "ip"),
            "ipv6/64": ("ip",),
            "route": ("path",),
            "header": (f"header:{self.arg}",),
            "field": (f"field:{self.arg}",),
        }[self.form]

    def value(self, got: Mapping[str, Any]) -> str:
        if self.form == "ip":
            return _text(got["ip"])
        if self.form == "ip+ua":  # an address holds no space, so the pair stays apart
            return f"{_text(got['ip'])} {_text(got['header:user-agent'])}"
        if self.form == "xff":
            return xff_client(got["header:x-forwarded-for"], int(self.arg), _text(got["ip"]))
        if self.form == "ipv6/64":
            return fold_ipv6(_text(got["ip"]))
        if self.form == "route":
            return route_of(_text(got["path"]))
        return _text(got[self.needs[0]])


def _text(value: Any) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else str(value)


def _part(text: str, option: str) -> KeyPart:
    """One form, or ConfigError naming it and the forms there are."""
    form, _, arg = text.strip().partition(":")
    wanted = f"{option} {text}: "
    if form in ("ip", "ip+ua", "ipv6/64", "route") and not arg:
        return KeyPart(form)
    if form == "xff":
        if not arg:
            return KeyPart("xff", "1")
        if not arg.isdigit() or not 1 <= int(arg) <= MOST_HOPS:
            raise ConfigError(
                f"{wanted}the trusted hops N must be a whole number from 1 to {MOST_HOPS} "
                "(xff:1 = the rightmost address, written by the one proxy in front)"
            )
        return KeyPart("xff", str(int(arg)))
    if form in ("header", "field"):
        if not arg or not _NAME.fullmatch(arg):
            raise ConfigError(f"{wanted}give the {form}'s name, e.g. {form}:x-api-key")
        return KeyPart(form, arg.lower() if form == "header" else arg)
    raise ConfigError(
        f"{wanted}not a key; one of {', '.join(FORMS)}, or a template of them such as "
        "{ip}:{route}"
    )


@dataclass(frozen=True)
class KeySpec:
    """A key: ``pieces`` are literal text and forms, joined in order (one form alone, for a
    key that is not a template)."""

    text: str
    pieces: tuple[str | KeyPart, ...]

    @property
    def needs(self) -> frozenset[str]:
        return frozenset(n for p in self.pieces if isinstance(p, KeyPart) for n in p.needs)

    @property
    def plain_ip(self) -> bool:
        return self.pieces == (KeyPart("ip"),)

    def client(self, got: Mapping[str, Any]) -> str:
        """The key of one line, from what the format read of it (``got``, by need)."""
        if len(self.pieces) == 1 and isinstance(self.pieces[0], KeyPart):
            key = self.pieces[0].value(got)
        else:
            key = "".join(p if isinstance(p, str) else p.value(got) for p in self.pieces)
        if len(key) > MOST_KEY_BYTES // 4:  # a key this short is within the bound whatever it holds
            size = len(key.encode("utf-8", "surrogateescape"))
            if size > MOST_KEY_BYTES:
                raise LineError(
                    f"key {key[:60]!r}... is {size:,} bytes, over the {MOST_KEY_BYTES:,} a "
                    f"client id may hold (--key {self.text}); choose a shorter key"
                )
        return key


def parse_key(text: str, option: str = "--key") -> KeySpec:
    """``--key``: a form, or a template with forms in braces (``{ip}:{route}``)."""
    if "{" not in text and "}" not in text:
        return KeySpec(text, (_part(text, option),))
    pieces: list[str | KeyPart] = []
    at = 0
    for m in _PLACEHOLDER.finditer(text):
        literal = text[at : m.start()]
        if "{" in literal or "}" in literal:
            break
        if literal:
            pieces.append(literal)
        pieces.append(_part(m.group(1), f"{option} {text}: placeholder"))
        at = m.end()
    rest = text[at:]
    if "{" in rest or "}" in rest or not any(isinstance(p, KeyPart) for p in pieces):
        raise ConfigError(
            f"{option} {text}: a template holds forms in braces, such as {{ip}}:{{route}}; "
            "its braces do not pair up"
        )
    if rest:
        pieces.append(rest)
    return KeySpec(text, tuple(pieces))


def route_of(target: str) -> str:
    """A request's route: the path without its query, numeric and UUID segments as ``:id``
    (``/users/42/orders?page=2`` -> ``/users/:id/orders``). An absolute target
    (``http://host:80/x``, as an ALB logs it) gives its path."""
    if target == "-":
        return target
    if "://" in target[:12]:
        target = urlsplit(target).path or "/"
    path = target.split("?", 1)[0].split("#", 1)[0]
    if _DIGIT.search(path) is None:  # nothing to fold: the usual static route
        return path
    return "/".join(":id" if _ID.fullmatch(s) else s for s in path.split("/"))


def fold_ipv6(address: str) -> str:
    """An IPv6 address as its /64 (``2001:db8:1:2::/64``); an IPv4 one (also mapped into IPv6,
    ``::ffff:1.2.3.4``) as it is; anything else (a host name) unchanged."""
    try:
        ip = ipaddress.ip_address(address.strip("[]"))
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv4Address):
        return str(ip)
    if ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ipaddress.IPv6Network((ip, 64), strict=False))


def xff_client(header: Any, hops: int, remote: str) -> str:
    """The client in ``X-Forwarded-For`` with ``hops`` trusted proxies: the address ``hops``
    from the right (each trusted proxy appends the address it was reached from, so the
    rightmost is the one the nearest proxy saw). A chain shorter than that: its leftmost
    address. No header (``-``, empty): the remote address, which then is the client."""
    if header is None or header in ("", "-"):
        return remote
    chain = [a.strip() for a in str(header).split(",")]
    chain = [a for a in chain if a] or [remote]
    return chain[-hops] if hops <= len(chain) else chain[0]


def check_key_needs(key: KeySpec, offered: Mapping[str, str], what: str) -> None:
    """ConfigError naming what ``key`` needs that the format (``what``) does not capture;
    ``offered`` maps each name it captures to how (for the message)."""
    lacking = sorted(n for n in key.needs if n not in offered)
    if lacking:
        has = ", ".join(sorted(offered)) or "nothing"
        raise ConfigError(
            f"--key {key.text}: {what} captures no {' or '.join(lacking)} (it captures: {has})"
        )
