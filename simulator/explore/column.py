"""The explorer's right column: what the chosen request did on the servers shown, and why.

The time bar (:mod:`simulator.explore.timebar`) steps the chosen request on a fresh fake server
for each server shown; :class:`Column` writes those steps into the page: one server's keys
before and after, or two servers side by side, part beside part. With *predict* on, the first
server's outcome stays hidden until the reader answers *admit* or *refuse*
(:class:`~simulator.explore.predict.Guesses` keeps the score while the page is open). With the
why panel open, each server's script lines that ran and the arithmetic
(:mod:`simulator.explore.whypanel`), worked out once per request and kept.

The column also offers the run's algorithms in its two dropdowns (*server of*, *beside it*),
keeping the ones chosen - or those the page's address asked for - when a new run comes.
"""

from __future__ import annotations

from collections.abc import Callable

from simulator.explore.page import Page
from simulator.explore.predict import Guesses
from simulator.explore.steps import Step
from simulator.explore.timebar import TimeBar
from simulator.explore.url import View
from simulator.explore.whypanel import why_html
from simulator.explore.words import error_html, hidden_html, pair_html, state_html

__all__ = ["Column"]

#: A why worked out: the run (by identity), the algorithm, the client and the request's index.
WhyKey = tuple[int, str, str, int]


class Column:
    """The right column of ``page`` for the steps of ``timebar``; ``written()`` is called after
    each render (the page's address then says what is shown)."""

    def __init__(self, page: Page, timebar: TimeBar, written: Callable[[], None]) -> None:
        self.page, self.timebar, self._written = page, timebar, written
        self.guesses = Guesses()
        self._whys: dict[WhyKey, str] = {}

    def offer(self, algorithms: list[str], wanted: View | None) -> None:
        """The two servers' dropdowns offer ``algorithms``, keeping the ones chosen (or those
        ``wanted``, the page's address, asks for)."""
        page = self.page
        keep = wanted.server if wanted is not None and wanted.server else page.state_of.value
        beside = wanted.beside if wanted is not None else page.beside.value
        if list(page.state_of.options) != algorithms:
            page.state_of.options = algorithms
        first = algorithms[0] if algorithms else None
        page.state_of.value = keep if keep in algorithms else first
        options = [("none", ""), *((a, a) for a in algorithms)]
        if list(page.beside.options) != options:
            page.beside.options = options
        page.beside.value = beside if beside in algorithms else ""
        page.pair(bool(page.beside.value))

    def render(self) -> None:
        """The steps shown into the column: one server or two side by side; with *predict*,
        the first one's outcome hidden until answered; *why*, if open."""
        tb, page = self.timebar, self.page
        if tb.outcome is None or not tb.steps:
            page.state.value, page.why.value = "", ""
            page.answer.layout.display = "none"
            return
        first, step = next(iter(tb.steps.items()))
        hide = page.predict.value and self.guesses.hidden((first, tb.client or "", step.index))
        page.state.value = self._servers_html(first, step, hide)
        page.answer.layout.display = "" if page.predict.value else "none"
        if hide:
            page.score.value = self.guesses.score()
        page.why.value = self.why() if page.why_open.value and not hide else ""
        self._written()

    def _servers_html(self, first: str, step: Step, hide: bool) -> str:
        """The servers' part: the first one's keys before only (a guess is asked for), the
        two side by side, or the one."""
        tb = self.timebar
        assert tb.outcome is not None
        limit, origin = tb.outcome.settings.limit, tb.outcome.origin_ms
        if hide:
            return hidden_html(first, step, origin)
        if len(tb.steps) > 1:
            return pair_html(tb.steps, limit, origin)
        return state_html(first, step, limit, origin)

    def why(self) -> str:
        """The why of the chosen request on each server shown (worked out once each)."""
        tb = self.timebar
        o, client = tb.outcome, tb.client
        assert o is not None and client is not None
        parts = []
        for algorithm, step in tb.steps.items():
            key = (id(o), algorithm, client, step.index)
            if key not in self._whys:
                self._whys[key] = self._work_out(algorithm, step, client)
            parts.append(f"<div><b>why: {algorithm}</b>{self._whys[key]}</div>")
        return "".join(parts)

    def _work_out(self, algorithm: str, step: Step, client: str) -> str:
        """The why of ``step`` on ``algorithm``'s server (an error said in the panel itself)."""
        tb = self.timebar
        stepper = tb.stepper(algorithm)
        assert tb.outcome is not None and stepper is not None
        settings = tb.outcome.settings
        try:
            return why_html(
                settings.policies[algorithm], stepper.times, stepper.costs,
                step.index, client, settings.backend,
            )  # fmt: skip
        except Exception as exc:  # the panel says it; the page goes on
            return error_html(exc)

    def answer(self, admit: bool) -> None:
        """The reader's guess of the chosen request: revealed, scored."""
        tb, page = self.timebar, self.page
        step, shown = tb.step, tb.algorithms()
        if step is None or not shown or tb.outcome is None:
            return
        mine = tb.outcome.frames[shown[0]]
        mine = mine[mine["client"] == tb.client]
        remaining = int(mine["remaining"].iloc[step.index])
        key = (shown[0], tb.client or "", step.index)
        try:
            said = self.guesses.answer(key, admit, page.remaining.value, step.allowed, remaining)
        except Exception as exc:  # a remaining that is not a number: said, nothing revealed
            page.score.value = error_html(exc)
            return
        page.remaining.value = ""
        page.score.value = f"{said.line}; {self.guesses.score()}"
        self.render()
