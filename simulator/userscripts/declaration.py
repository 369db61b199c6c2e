"""How to call a user's limiter script: the declaration, read from the script or a file beside it.

A declaration is a few lines of TOML, either in a header block at the top of the script::

    --[[ ratelimit
    keys = ["rl:fw10:{client}:{window}"]
    argv = ["now_ms", "window_ms", "limit"]
    reply = { allowed = 1, count = 2, retry_after = 3, retry_after_unit = "ms" }
    ]]

or, for a script that must stay byte for byte as it is, in ``<script>.toml`` beside it (the same
fields at the top level). ``docs/your_script.md`` describes every field; :data:`ARGV_NAMES` and
:data:`KEY_FIELDS` are the vocabulary. Anything wrong is one :class:`DeclarationError` naming the
file and the field.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulator.checks import ConfigError

__all__ = [
    "ARGV_NAMES",
    "KEY_FIELDS",
    "REPLY_FIELDS",
    "Declaration",
    "DeclarationError",
    "read_declaration",
]

#: What an ARGV entry may be, and what it means (the unit is in the name).
ARGV_NAMES: dict[str, str] = {
    "now_ms": "the current time, integer milliseconds",
    "now_s": "the current time, whole seconds (floored)",
    "window_ms": "the window, integer milliseconds",
    "window_s": "the window in seconds (a fraction if it is not whole)",
    "limit": "requests allowed per window",
    "elapsed_ms": "how far now is into the current grid window, integer milliseconds",
    "elapsed_s": "how far now is into the current grid window, whole seconds (floored)",
    "elapsed_s_exact": "how far now is into the current grid window, seconds with the milliseconds",
    "window_index": "the current grid window's number, floor(now_ms / window_ms)",
    "request_id": "an id unique to this request (<now_ms>-<sequence>)",
    "cost": "what this request counts (1 unless it weighs more)",
    "burst": "the burst a bucket saves up (a parameter: --param burst=N; default the limit)",
}
#: What a key template may hold beside fixed text; ``{client}`` is required in every key.
KEY_FIELDS: dict[str, str] = {
    "client": "the client's hash tag, braces included ({alice}): keeps all its keys in one slot",
    "window": "the current grid window's number, floor(now_ms / window_ms)",
    "window-1": "the previous grid window's number",
    "window+1": "the next grid window's number",
}
#: Which element of the reply holds what (1-based); only ``allowed`` is required.
REPLY_FIELDS = ("allowed", "count", "remaining", "reset", "retry_after")
_UNITS = ("ms", "s")
#: The most a script or a declaration may hold (a limiter script is a few kilobytes).
MAX_BYTES = 1 << 20
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
_TEMPLATE_FIELD = re.compile(r"\{([^{}]*)\}")


class DeclarationError(ConfigError):
    """A script or its declaration is not usable; the message names the file and what is wrong."""


@dataclass(frozen=True)
class Declaration:
    """How to call one script (see the module docstring)."""

    path: Path  # where the declaration was read
    keys: tuple[str, ...]
    argv: tuple[str, ...]
    reply: dict[str, int]  # field -> 1-based element
    reset_unit: str = "ms"
    retry_after_unit: str = "ms"
    label: str = ""
    server_time: bool = False  # its decisions follow key expiry on the server's own clock
    extra: dict[str, Any] = field(default_factory=dict)


def _header(source: str) -> str | None:
    """The TOML of a ``--[[ ratelimit ... ]]`` block at the top of ``source``, or None."""
    match = re.search(r"--\[(=*)\[\s*ratelimit\b(.*?)\]\1\]", source, re.S)
    return match.group(2) if match else None


def read_declaration(script: Path, source: str, declaration: Path | None = None) -> Declaration:
    """The declaration of ``script``: from ``declaration`` if given, else its header block, else
    ``<script>.toml`` beside it."""
    where: Path
    if declaration is not None:
        where, text = declaration, read_text(declaration)
    elif (header := _header(source)) is not None:
        where, text = script, header
    else:
        beside = script.with_suffix(".toml")
        if not beside.is_file():
            raise DeclarationError(
                f"{script}: no declaration: start the script with a --[[ ratelimit ... ]] block, "
                f"or put one in {beside.name} beside it (see docs/your_script.md)"
            )
        where, text = beside, read_text(beside)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise DeclarationError(f"{where}: the declaration is not valid TOML ({exc})") from None
    return _checked(where, raw)


def read_text(path: Path) -> str:
    """The text of a script or declaration file: a regular file of at most :data:`MAX_BYTES`
    (a device or a pipe could be endless, or never answer)."""
    try:
        if path.exists() and not path.is_file():
            raise DeclarationError(
                f"{path}: is not a regular file (a script or declaration is a file)"
            )
        with path.open("rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as exc:
        raise DeclarationError(f"{path}: cannot be read ({exc.strerror})") from None
    if len(data) > MAX_BYTES:
        raise DeclarationError(
            f"{path}: larger than {MAX_BYTES // (1 << 20)} MiB; a script or declaration is "
            "refused above that"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise DeclarationError(f"{path}: is not UTF-8 text") from None


def _strings(where: Path, raw: dict[str, Any], name: str) -> tuple[str, ...]:
    value = raw.get(name)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DeclarationError(f"{where}: {name} must be a list of strings, got {value!r}")
    return tuple(value)


def _checked(where: Path, raw: dict[str, Any]) -> Declaration:
    """The declaration read at ``where``, each section checked in the order a reader meets them:
    no unknown field, then the keys, the ARGV, the reply, and the label and server time."""
    _known_fields_only(where, raw)
    keys = _checked_keys(where, raw)
    argv = _checked_argv(where, raw)
    elements, units = _checked_reply(where, raw)
    label, server_time = _checked_label_and_time(where, raw)
    return Declaration(
        where,
        keys,
        argv,
        elements,
        units["reset_unit"],
        units["retry_after_unit"],
        label,
        server_time,
    )


def _known_fields_only(where: Path, raw: dict[str, Any]) -> None:
    """A field the declaration does not know is a typo until proven otherwise: refuse it."""
    known = {"keys", "argv", "reply", "label", "server_time"}
    for name in raw:
        if name not in known:
            raise DeclarationError(
                f"{where}: unknown field {name!r} (known: {', '.join(sorted(known))})"
            )


def _checked_keys(where: Path, raw: dict[str, Any]) -> tuple[str, ...]:
    """The key templates: at least one, each built only from :data:`KEY_FIELDS` and each holding
    ``{client}``, so every key of one call lies in the client's hash tag."""
    keys = _strings(where, raw, "keys")
    if not keys:
        raise DeclarationError(f"{where}: keys must name at least one key")
    for i, template in enumerate(keys, 1):
        _checked_key(where, i, template)
    return keys


def _checked_key(where: Path, i: int, template: str) -> None:
    """One key template (``keys[i]``): known fields, ``{client}`` among them, no stray brace."""
    fields = _TEMPLATE_FIELD.findall(template)
    for f in fields:
        if f not in KEY_FIELDS:
            raise DeclarationError(
                f"{where}: keys[{i}] {template!r}: unknown field {{{f}}} "
                f"(known: {', '.join('{' + k + '}' for k in KEY_FIELDS)})"
            )
    if "client" not in fields:
        raise DeclarationError(
            f"{where}: keys[{i}] {template!r} lies outside the client's hash tag: every key "
            "must hold {client} (so a call's keys stay in one slot of a cluster)"
        )
    rest = _TEMPLATE_FIELD.sub("", template)
    if "{" in rest or "}" in rest:
        raise DeclarationError(f"{where}: keys[{i}] {template!r}: a stray brace")


def _checked_argv(where: Path, raw: dict[str, Any]) -> tuple[str, ...]:
    """The ARGV the script expects, every entry a name from :data:`ARGV_NAMES`."""
    argv = _strings(where, raw, "argv")
    for i, name in enumerate(argv, 1):
        if name not in ARGV_NAMES:
            raise DeclarationError(
                f"{where}: argv[{i}] {name!r} is not in the vocabulary ({', '.join(ARGV_NAMES)})"
            )
    return argv


def _checked_reply(where: Path, raw: dict[str, Any]) -> tuple[dict[str, int], dict[str, str]]:
    """Where each field sits in the script's reply (1-based, ``allowed`` required), and the units
    of its reset and retry-after (ms unless the declaration says s)."""
    reply = raw.get("reply")
    if not isinstance(reply, dict):
        raise DeclarationError(f"{where}: reply must be a table, e.g. reply = {{ allowed = 1 }}")
    elements: dict[str, int] = {}
    units = {"reset_unit": "ms", "retry_after_unit": "ms"}
    for name, value in reply.items():
        if name in units:
            units[name] = _checked_unit(where, name, value)
        else:
            elements[name] = _checked_position(where, name, value)
    if "allowed" not in elements:
        raise DeclarationError(
            f"{where}: reply.allowed is required and missing: the position of the element that "
            "says admitted (1) or refused (0 or false), e.g. reply = { allowed = 1 }"
        )
    return elements, units


def _checked_unit(where: Path, name: str, value: Any) -> str:
    """``reply.reset_unit`` or ``reply.retry_after_unit``: ms or s."""
    if value not in _UNITS:
        raise DeclarationError(f"{where}: reply.{name} must be ms or s, got {value!r}")
    return str(value)


def _checked_position(where: Path, name: str, value: Any) -> int:
    """``reply.<field>``: a field from :data:`REPLY_FIELDS` at a position counted from 1."""
    if name not in REPLY_FIELDS:
        raise DeclarationError(
            f"{where}: reply.{name}: unknown (known: {', '.join(REPLY_FIELDS)}, "
            "reset_unit, retry_after_unit)"
        )
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise DeclarationError(
            f"{where}: reply.{name} must be the element's position from 1, got {value!r}"
        )
    return value


def _checked_label_and_time(where: Path, raw: dict[str, Any]) -> tuple[str, bool]:
    """The label shown for the script (a string) and whether its decisions follow the server's
    own clock (true or false)."""
    label = raw.get("label", "")
    if not isinstance(label, str):
        raise DeclarationError(f"{where}: label must be a string, got {label!r}")
    server_time = raw.get("server_time", False)
    if not isinstance(server_time, bool):
        raise DeclarationError(f"{where}: server_time must be true or false, got {server_time!r}")
    return label, server_time


def check_name(name: str, where: str) -> str:
    """A display name for a script: lower case letters, digits and _ (it becomes a CLI choice)."""
    if not _NAME.match(name):
        raise DeclarationError(
            f"{where}: name {name!r}: use lower case letters, digits and _ (at most 40, a letter "
            "first), e.g. --script my_window=FILE"
        )
    return name
