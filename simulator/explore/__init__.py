"""Explore interactively: pick algorithms, a limit and a traffic mix, and see what the real
scripts decide, redrawn on every change (in JupyterLab, or as a page served by Voila).

:class:`Settings` is what one run is; :class:`Runner` runs it (each algorithm's Lua script on the
chosen backend, the logs kept so that only what changed runs again) and gives an
:class:`Outcome` with one :class:`Summary` per algorithm; :class:`Explorer` is the widget that
reads its controls into settings and draws each outcome (``notebooks/00_explorer.ipynb``).
"""

from simulator.explore.runs import Cancelled, Outcome, Runner, Summary, summarise, summary_line
from simulator.explore.settings import Settings, Traffic, expected_requests, scenario_for

__all__ = [
    "Cancelled",
    "Explorer",
    "Outcome",
    "Runner",
    "Settings",
    "Summary",
    "Traffic",
    "expected_requests",
    "scenario_for",
    "summarise",
    "summary_line",
]


def __getattr__(name: str) -> object:
    if name == "Explorer":  # the widget needs ipywidgets; the runs do not
        from simulator.explore.app import Explorer

        return Explorer
    raise AttributeError(name)
