"""Presets: the cases a newcomer should see first, each one click away in the explorer.

Each preset is a :class:`~simulator.explore.settings.Settings` with a name, the question it
answers, and which client to show - and a card the reader sees before stepping: what to *watch
for*, what *you'll learn*, and one concrete change to *try*. The first, *the boundary burst*, is
the practice case of the card: 100 requests at second 59 and 100 more at second 61 against a
limit of 100 per minute. A trace's preset asks a trace's question (who is refused, do the
algorithms agree) and shows a client the run refused (:data:`REFUSED`: picked from the run).
"""

from __future__ import annotations

import html
from dataclasses import dataclass, replace
from pathlib import Path

from simulator.explore.settings import Settings, Traffic

__all__ = ["Preset", "PRESETS", "REFUSED", "SAMPLE_TRACE", "TRY_FIRST", "card_html"]

#: A preset's client that the explorer picks from the run: the one refused most.
REFUSED = "(the client refused most)"

#: The access log shipped with the project, offered as the trace to replay.
SAMPLE_TRACE = (
    Path(__file__).resolve().parents[2] / "data" / "traces" / "apache_combined_sample.log"
)

_NOBODY = Traffic(steady=0, poisson=0, bursts=0, on_off=0, polite=0)


@dataclass(frozen=True)
class Preset:
    """A named case: its settings, the question it asks, the client shown first (or
    :data:`REFUSED`), and its card: what to watch for, what it teaches, one change to try."""

    name: str
    question: str
    settings: Settings
    client: str | None = None
    watch_for: str = ""
    learn: str = ""
    try_this: str = ""

    def __post_init__(self) -> None:
        for field in ("question", "watch_for", "learn", "try_this"):
            if not getattr(self, field):
                raise ValueError(f"Preset {self.name!r}: {field} is empty")


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            "boundary burst",
            "100 at second 59 and 100 at second 61, limit 100 per 60 s: which algorithms let "
            "200 through in two seconds?",
            Settings(
                limit=100,
                window_s=60.0,
                traffic=replace(_NOBODY, bursts=1, burst_n=100, burst_at_s=(59.0, 61.0)),
                duration_s=120.0,
            ),
            "bursts-1",
            watch_for="the fixed window's counter starting again at second 60 while the "
            "sliding log still holds the first 100 (step to request 101)",
            learn="why a window aligned to the clock can let twice its limit through in two "
            "seconds, and how the sliding counter's weighted guess narrows that",
            try_this="set the window to 120 s: both bursts fall in one window, and every "
            "algorithm refuses the second 100",
        ),
        Preset(
            "steady over the limit",
            "One client asks 2 per second against 1 per second (10 per 10 s): how is the "
            "excess refused, evenly or in blocks?",
            Settings(
                limit=10,
                window_s=10.0,
                traffic=replace(_NOBODY, steady=1, steady_rate_per_s=2.0),
                duration_s=40.0,
            ),
            "steady-1",
            watch_for="the pattern of crosses: one in two evenly (a bucket) or ten in a row "
            "once the window is full (the windows)",
            learn="that the same average limit can refuse in blocks or spread out, and what "
            "a client sees in Retry-After either way",
            try_this="lower the steady rate to 0.9 req/s: nobody is refused any more",
        ),
        Preset(
            "polite clients",
            "Three clients that wait the Retry-After they are sent: how long do they wait, and "
            "how many requests does each algorithm see?",
            Settings(
                limit=10,
                window_s=10.0,
                traffic=replace(_NOBODY, polite=3, polite_rate_per_s=2.0),
                duration_s=60.0,
            ),
            "polite-1",
            watch_for="the gaps after each cross: the client waits the Retry-After it was "
            "sent, so each algorithm sees its own requests",
            learn="why N differs between rows, and that a precise Retry-After wastes fewer "
            "requests than a guessed one",
            try_this="add 3 polite clients more (traffic tab): each one keeps its own budget",
        ),
        Preset(
            "one room floods",
            "One chat room sends 25 messages a second, nine others 0.5: with a budget per room "
            "(2 per second), are the quiet rooms ever refused?",
            Settings(
                limit=2,
                window_s=1.0,
                traffic=replace(
                    _NOBODY, steady=1, steady_rate_per_s=25.0, poisson=9, poisson_rate_per_s=0.5
                ),
                duration_s=20.0,
            ),
            "steady-1",
            watch_for="the quiet rooms' rows (choose poisson-1 under client shown): never a "
            "cross, whatever the loud room does",
            learn="that a key per room keeps one flooding room from using the others' budget",
            try_this="raise the limit to 30: the loud room is no longer refused either",
        ),
        Preset(
            "sample access log",
            "Ten minutes of a real access log, limit 5 per 10 s per client: which client is "
            "refused, when, and do the algorithms agree on it?",
            Settings(
                limit=5,
                window_s=10.0,
                trace=str(SAMPLE_TRACE),
                trace_format="clf",
                trace_span_s=600.0,
            ),
            REFUSED,
            watch_for="the client shown (the one the run refused most): where its requests "
            "bunch up, and that the rows do not agree (the fixed window refuses 2, the sliding "
            "log 3)",
            learn="how a recorded client's real bursts meet each algorithm, in seconds from "
            "the trace's start",
            try_this="set the limit to 10: nobody is refused any more; then the span to 0 "
            "(the whole trace): see who else is",
        ),
    )
}


def card_html(preset: Preset, visited: set[str] | frozenset[str] = frozenset()) -> str:
    """The card of ``preset``: its question, then watch for / you'll learn / try this, and how
    far through the presets the reader is ("2 of 5", the ones seen ticked)."""
    names = list(PRESETS)
    at = names.index(preset.name) + 1 if preset.name in names else 0
    seen = len(visited | {preset.name})
    rows = "".join(
        f"<div><b>{label}</b> {html.escape(text)}</div>"
        for label, text in (
            ("watch for:", preset.watch_for),
            ("you'll learn:", preset.learn),
            ("try this:", preset.try_this),
        )
    )
    return (
        f'<div class="explorer-card"><div class="explorer-card-at">preset {at} of '
        f"{len(names)} ({seen} seen)</div><b>{html.escape(preset.name)}</b>: "
        f"{html.escape(preset.question)}{rows}</div>"
    )


#: The short "try this first" shown beside the presets.
TRY_FIRST = (
    "Try this first: click <b>boundary burst</b>, then press play (or step) on the time bar and "
    "watch the fixed window's counter start again at second 60 while the sliding log still "
    "holds the first 100."
)
