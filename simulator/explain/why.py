"""What one decision was made of: the script's lines that ran, its calls, and its arithmetic.

A :class:`Why` is read off one traced call on the fake server (:func:`~simulator.explain.
explain_decision`): the script's text, the lines that started and how often, every
``redis.call`` with its arguments and the reply the server gave (:class:`Call`), the script's
reply, and for the shipped algorithms a few lines of arithmetic made of those replies and the
script's ``ARGV``. Where there is no arithmetic (a user's script, an algorithm registered from
elsewhere) ``note`` says why in one line; the trace is there all the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simulator.checks import ConfigError
from simulator.explain import render

__all__ = ["Call", "Why"]


@dataclass(frozen=True)
class Call:
    """One command the decision sent: its name, its arguments (text where they were strings),
    the reply as the script received it (False for a missing value) and the script's line it
    was sent from (None for the server's own command sent in place of a script, ``INCREX``).
    ``protected`` marks a ``redis.pcall``; ``error`` is the server's error instead of a reply."""

    command: str
    args: tuple[Any, ...]
    reply: Any
    line: int | None
    protected: bool = False
    error: str | None = None

    def __post_init__(self) -> None:
        if not self.command:
            raise ConfigError("Call.command: must name a command")
        if self.line is not None and self.line < 1:
            raise ConfigError(f"Call.line: lines count from 1, got {self.line}")


@dataclass(frozen=True)
class Why:
    """Why request ``index`` (0-based) of ``client`` at ``t_ms`` was decided as it was.

    ``source_lines`` is the script's text line by line (empty for the server's own command);
    ``ran`` the 1-based numbers of the lines that started during this call and ``hits`` how
    many times each did, as ``(line, times)`` in line order (:meth:`hits_on`); ``calls`` the
    commands in the order sent; ``reply`` the script's reply (bytes read as text); ``allowed``
    the decision read from it. ``arithmetic`` holds the decision worked out with the server's
    numbers, its last line ending in the verdict, and ``verdict`` that verdict (True: admitted);
    both empty/None where there is none, and ``note`` then says why.
    """

    algorithm: str
    client: str
    index: int
    t_ms: int
    cost: int
    script: str
    keys: tuple[str, ...]
    argv: tuple[str, ...]
    source_lines: tuple[str, ...]
    ran: frozenset[int]
    hits: tuple[tuple[int, int], ...]
    calls: tuple[Call, ...]
    reply: tuple[Any, ...]
    allowed: bool
    arithmetic: tuple[str, ...] = ()
    verdict: bool | None = None
    note: str = ""

    def __post_init__(self) -> None:
        if self.index < 0:
            raise ConfigError(f"Why.index: requests count from 0, got {self.index}")
        outside = sorted(n for n in self.ran if not 1 <= n <= len(self.source_lines))
        if outside:
            raise ConfigError(
                f"Why.ran: line {outside[0]} is outside the script's {len(self.source_lines)} lines"
            )
        if self.ran != frozenset(line for line, _ in self.hits):
            raise ConfigError("Why.hits: must count exactly the lines in ran")

    def hits_on(self, line: int) -> int:
        """How many times 1-based ``line`` started during this call (0: it did not run)."""
        return dict(self.hits).get(line, 0)

    def as_text(self) -> str:
        """The view as plain text (see :func:`~simulator.explain.render.as_text`)."""
        return render.as_text(self)

    def as_html(self) -> str:
        """The view as escaped HTML (see :func:`~simulator.explain.render.as_html`)."""
        return render.as_html(self)
