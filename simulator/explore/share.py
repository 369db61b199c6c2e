"""Sharing what the explorer shows: the page's address, and the run as one HTML file.

A teacher who found the moment to show sends its link. After each render the page's address is
rewritten to carry the preset, the settings that differ from it, the client, the servers shown
and the request chosen (:mod:`simulator.explore.url` spells it); a page opened at such an address
reads it back (:func:`read_address`) and shows the same view. *export* offers the run shown, at
the request chosen, as one HTML file (:mod:`simulator.explore.export`) that steps with no
server - its rows noted as the page's own are (:func:`noted_payload`).
"""

from __future__ import annotations

from typing import Any

from simulator.explore.export import page_html
from simulator.explore.front import timeline_payload
from simulator.explore.page import Page
from simulator.explore.presets import PRESETS
from simulator.explore.runs import Outcome
from simulator.explore.settings import Settings
from simulator.explore.timebar import TimeBar
from simulator.explore.url import View, address_html, query_of, read_query
from simulator.explore.words import client_note, download_html

__all__ = ["Share", "noted_payload", "read_address"]


def noted_payload(outcome: Outcome, client: str | None, **options: Any) -> dict[str, Any]:
    """The timeline's payload of ``outcome`` for ``client``, each row titled with whose marks
    it shows (``options`` go to :func:`~simulator.explore.front.timeline_payload`)."""
    payload = timeline_payload(outcome, client, notes=False, **options)
    for row in payload["rows"]:
        row["note"] = client_note(client, row)
    return payload


def read_address(query: str) -> View | None:
    """What the address' ``query`` asks for (None: nothing); a value that does not fit its
    setting raises, naming it."""
    return read_query(query, {n: p.settings for n, p in PRESETS.items()}, Settings())


class Share:
    """The address and the export of ``page``, whose request chosen is ``timebar``'s."""

    def __init__(self, page: Page, timebar: TimeBar) -> None:
        self.page, self.timebar = page, timebar
        self._addresses = 0  # each address written is new, so the page's handler runs each time

    def address(self, outcome: Outcome | None, preset: str) -> str:
        """The query of the address that shows ``outcome`` as shown now (``preset``: the
        preset it started from, or "")."""
        if outcome is None:
            return ""
        page, step = self.page, self.timebar.step
        base = PRESETS[preset].settings if preset else Settings()
        view = View(
            preset, outcome.settings, self.timebar.client or "", page.state_of.value or "",
            page.beside.value or "", step.index + 1 if step is not None else 0,
        )  # fmt: skip
        return query_of(view, base)

    def write(self, outcome: Outcome | None, preset: str) -> None:
        """Put the address of what is shown into the page's address bar."""
        self._addresses += 1
        self.page.address.value = address_html(self.address(outcome, preset), self._addresses)

    def export(self, outcome: Outcome | None, index: int) -> None:
        """``outcome`` at the timeline's ``index`` as one HTML file offered as a download."""
        if outcome is None:
            return
        payload = noted_payload(outcome, self.timebar.client, index=index)
        self.page.download.value = download_html(page_html(payload))
