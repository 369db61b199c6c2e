"""The timeline and the time bar keep one request chosen between them.

The reader may choose a request in two places: the time bar under the rows (its slider, its
step and jump buttons) or the timeline itself (a click on a mark). Whichever moves, the other
follows, through the request's *moment* (:mod:`simulator.explore.timebar`). The two count
differently: the time bar counts the requests of the client shown on the first server shown,
the timeline those of its first row, so a request is carried across as its instant and its
place among the requests at that instant.

The timeline's index set by the kernel comes back as a change like any other, maybe on another
thread while the bar moves; it is told from a reader's choice by its value (:attr:`Follow.told`),
not by a flag.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simulator.explore.page import Page
from simulator.explore.timebar import TimeBar, index_of, moment_of

__all__ = ["Follow"]


class Follow:
    """The timeline of ``page`` and ``timebar`` follow each other's chosen request."""

    def __init__(self, page: Page, timebar: TimeBar) -> None:
        self.timeline, self.scrub, self.timebar = page.timeline, page.scrub, timebar
        #: The timeline's index as the kernel last set it (-1: never).
        self.told = -1

    def _first_row(self) -> str | None:
        o = self.timebar.outcome
        return next(iter(o.frames), None) if o is not None else None

    def moved(self, i: int) -> None:
        """The time bar chose request ``i`` of the first server shown: the timeline follows
        (its index counts its first row's requests)."""
        tb, first = self.timebar, self._first_row()
        if tb.moment is None or first is None:
            return
        self.told = self.index_for(self.timeline.index)
        self.timeline.index = self.told

    def index_for(self, index: int) -> int:
        """The timeline's index at the time bar's moment (``index`` when none is chosen)."""
        tb, first = self.timebar, self._first_row()
        if tb.moment is None or first is None:
            return index
        return index_of(tb.times(first), tb.moment)

    def picked(self, change: Any) -> None:
        """The reader chose a request in the timeline: the time bar shows it (a value the
        kernel set itself is not a choice)."""
        tb, first = self.timebar, self._first_row()
        if change["new"] == self.told or first is None or tb.outcome is None:
            return
        times = tb.times(first)
        if len(times):
            at = moment_of(times, int(np.clip(change["new"], 0, len(times) - 1)))
            self.scrub.value = index_of(tb.times(), at)
