"""The explorer's front end in the browser: the timeline widget and what it is sent.

:func:`timeline_payload` turns a finished run into the rows; :class:`Timeline` (an anywidget)
draws and steps them in the page; :mod:`simulator.explore.export` writes them, with the same
script, into one HTML file that works with no kernel.
"""

from simulator.explore.front.payload import ROW_FIELDS, row_of, state_text, timeline_payload

__all__ = ["ROW_FIELDS", "Timeline", "row_of", "state_text", "timeline_payload"]


def __getattr__(name: str) -> object:
    if name == "Timeline":  # the widget needs anywidget; the payload does not
        from simulator.explore.front.timeline import Timeline

        return Timeline
    raise AttributeError(name)
