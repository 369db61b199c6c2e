"""A log line format as a pattern that reads each line in time proportional to its length.

An Apache ``LogFormat`` or an nginx ``log_format`` is literal text with fields between: ``%h``,
``$remote_addr``, ``"%r"``. Each is turned into :class:`Token` s, and the tokens into one regular
expression. A field of free text (a request line, a header) is read up to the first character
of the literal text after it, backslash escapes included (Apache writes ``\\"``, nginx
``\\x22``), with a possessive quantifier: it never backtracks, so a 1 MiB line that does not
match is refused in a millisecond (the lazy patterns a general parser builds take hours on one
such line). A field whose values are spelled one way (a status, an address, a timestamp in
brackets) keeps the pattern its format gives it.

A line is read whole when it matches the whole format; when it does not (its last field cut
short, as a log written by a crashing server ends, or fields added by a later version of the
server), it is read as far as the last field the key and the time need, and the rest is not
looked at, as the common log reader has always done. A line that does not match that far is
refused naming the format.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from simulator.checks import ConfigError
from simulator.playback.times import LineError, TimeSpec

__all__ = ["Token", "Layout", "PatternLayout", "Transform", "free_text"]

#: What a raw value goes through before a key sees it (a port stripped, a path cut out).
Transform = Callable[[Any], Any]


@dataclass(frozen=True)
class Token:
    """Literal text (``literal``), or a field: its ``names`` (one per group of ``pattern``),
    the pattern (None: free text, read up to the next literal) and one converter per group."""

    literal: str | None = None
    names: tuple[str, ...] = ()
    pattern: str | None = None
    convert: tuple[Callable[[str], Any] | None, ...] = ()
    shown: str = ""
    #: The format's own pattern for a free-text field, used when another field touches it.
    own: str | None = None


def free_text(stop: str | None) -> str:
    """A field read up to ``stop`` (the next literal's first character; None: to the line's
    end), escapes included, never backtracking."""
    if stop is None:
        return r"(.*+)"
    c = re.escape(stop)
    return rf"([^{c}\\]*+(?:\\.[^{c}\\]*+)*+)"  # runs of plain characters, escapes between


class Layout:
    """A line format: what it captures (``offers``: a name a key asks for -> the field that
    holds it, and what the value goes through), its time field, and a reader of fields."""

    what: str = "the format"
    offers: Mapping[str, tuple[str, Transform | None]] = {}
    default_time: TimeSpec | None = None

    def names(self) -> Sequence[str]:
        """The fields a line of this format holds, for ``field:NAME`` and the messages."""
        raise NotImplementedError

    def offer(self, need: str) -> tuple[str, Transform | None] | None:
        """The field that holds what a key form needs (``ip``, ``path``, ``header:NAME``)."""
        return self.offers.get(need)

    def knows(self, name: str) -> bool:
        return name in self.names()

    def reader(self, wanted: Sequence[str]) -> Callable[[str], list[Any] | None]:
        """A function from a line to the values of the ``wanted`` fields (None: a line that
        holds no request, such as a comment), raising LineError for a line it cannot read."""
        raise NotImplementedError


@dataclass
class PatternLayout(Layout):
    """A format given as tokens, read with one pattern (and its prefix for a short line)."""

    tokens: list[Token]
    what: str = "the format"
    offers: Mapping[str, tuple[str, Transform | None]] = field(default_factory=dict)
    default_time: TimeSpec | None = None
    #: Fields made from several groups (an Apache time of several directives): name -> the
    #: groups' common lead (``request_time_fields.``) and what makes the value of them.
    joined: Mapping[str, tuple[str, Callable[[dict[str, Any]], Any]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._patterns = [self._pattern(i, t) for i, t in enumerate(self.tokens)]
        self._full = re.compile("".join(self._patterns))
        #: The tokens read with a pattern that backtracks (the format's own, where fields touch).
        self._lazy = [
            t.pattern is None and p == t.own
            for t, p in zip(self.tokens, self._patterns, strict=True)
        ]

    def names(self) -> Sequence[str]:
        return [*dict.fromkeys(n for t in self.tokens for n in t.names), *self.joined]

    def _pattern(self, i: int, token: Token) -> str:
        if token.literal is not None:
            return re.escape(token.literal)
        if token.pattern is not None:
            return token.pattern
        # Read up to the first character of the literal text after it. One followed at once
        # by another field (Apache's %U%q) has no such character: it takes the format's own
        # pattern, which backtracks (as a general parser does), or is refused if there is none.
        after = self.tokens[i + 1] if i + 1 < len(self.tokens) else None
        if after is not None and after.literal is None:
            if token.own is None:
                raise ConfigError(
                    f"{self.what}: {token.shown} is followed at once by {after.shown}, with "
                    "nothing between them: where one ends and the other starts cannot be read back"
                )
            return token.own
        if i and self.tokens[i - 1].literal is None and token.own is not None:
            return token.own  # after a field, the format's own pattern says where it starts
        return free_text(after.literal[0] if after is not None and after.literal else None)

    def _groups(self) -> list[tuple[str, Callable[[str], Any] | None]]:
        """Each group of the pattern, in order: its field's name and converter."""
        return [(n, c) for t in self.tokens for n, c in zip(t.names, t.convert, strict=True)]

    def _parts(self, name: str) -> list[tuple[str, int, Callable[[str], Any] | None]]:
        """The groups ``name`` is read from: itself, or those of a joined field."""
        groups = self._groups()
        if name in self.joined:
            lead = self.joined[name][0]
            return [(n, i, c) for i, (n, c) in enumerate(groups) if n.startswith(lead)]
        i = next(i for i, (n, _) in enumerate(groups) if n == name)
        return [(name, i, groups[i][1])]

    def _end_of(self, wanted: Sequence[str]) -> int:
        """How many tokens a line must match to give ``wanted``: up to the last field wanted,
        and the literal after it (which ends its value)."""
        used = {n for name in wanted for n, _, _ in self._parts(name)}
        last = max((i for i, t in enumerate(self.tokens) if used.intersection(t.names)), default=-1)
        end = last + 1
        while end < len(self.tokens) and self.tokens[end].literal is None:  # fields touching it
            end += 1
        return min(end + 1, len(self.tokens))

    def reader(self, wanted: Sequence[str]) -> Callable[[str], list[Any] | None]:
        # The groups of the prefix are the first groups of the whole: one index serves both.
        end = self._end_of(wanted)
        prefix = re.compile("".join(self._patterns[:end]))
        if not any(self._lazy[:end]):
            # Read left to right without backtracking, the prefix gives the groups the whole
            # would: the rest of the line need not be matched at all.
            full = prefix
        else:
            full = self._full
        plans = [(name, self._parts(name), self.joined.get(name, ("", None))[1]) for name in wanted]
        what = self.what
        made: dict[tuple[str | None, ...], Any] = {}
        label = {n: t.shown or n for t in self.tokens for n in t.names}

        def read(line: str) -> list[Any] | None:
            text = line.rstrip("\r\n")
            if not text.strip():
                return None
            m = (full.fullmatch(text) if full is not prefix else None) or prefix.match(text)
            if m is None:
                raise LineError(f"not a line of {what}: {text[:80]!r}")
            values = m.groups()
            got: list[Any] = []
            for name, parts, join in plans:
                if join is None:
                    _, i, convert = parts[0]
                    got.append(_converted(label[name], values[i], convert))
                else:  # one time of several directives: made once per distinct spelling
                    texts = tuple(values[i] for _, i, _ in parts)
                    value = made.get(texts, made)
                    if value is made:
                        if len(made) > 4096:
                            made.clear()
                        value = made[texts] = join(
                            {n: _converted(label[n], values[i], c) for n, i, c in parts}
                        )
                    got.append(value)
            return got

        return read


def _converted(label: str, text: str | None, convert: Callable[[str], Any] | None) -> Any:
    if convert is None or text is None:
        return text
    try:
        return convert(text)
    except (ValueError, TypeError):
        said = "a time in the format" if label.endswith("t") and "%" in label else "what is read by"
        raise LineError(f'field {label}: "{text[:80]}" is not {said} {label}') from None
