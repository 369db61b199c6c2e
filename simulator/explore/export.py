"""One run's timeline as a single HTML file: open it from disk, with no kernel and no network.

The file holds the widget's own script and style sheet (``simulator/explore/front/``) and the
run's rows as JSON, and a small model in place of the kernel's (the same ``get``, ``set``,
``on``, ``off``, ``save_changes``), so stepping, scrubbing, zooming, jumping and playing work
as they do in the explorer; what a reader changes stays in the page.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from simulator.checks import ConfigError

__all__ = ["export_html", "page_html", "DEFAULTS"]

_FRONT = Path(__file__).resolve().parent / "front"
#: The module's last line, which a classic script cannot hold: the page takes the object instead.
_EXPORT = "export default { render };"
#: The widget's values a payload need not carry.
DEFAULTS: dict[str, Any] = {
    "view_ms": [],
    "large": False,
    "added": [],
    "burst_n": 10,
    "play_rate": 10.0,
    "unit": "s",
    "caption": "",
}

_MODEL = """
(function () {
  const state = JSON.parse(document.getElementById("timeline-data").textContent);
  const listeners = {};
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  const model = {
    get: (name) => state[name],
    set: (name, value) => {
      if (same(state[name], value)) return;
      state[name] = value;
      for (const fn of (listeners["change:" + name] || []).slice()) fn();
    },
    on: (name, fn) => { (listeners[name] = listeners[name] || []).push(fn); },
    off: (name, fn) => {
      listeners[name] = (listeners[name] || []).filter((f) => f !== fn);
    },
    save_changes: () => {},
    send: () => {},
  };
  window.timelineModel = model;
  timelineWidget.render({ model, el: document.getElementById("timeline") });
})();
"""


def _script(text: str) -> str:
    """Text safe inside a ``<script>`` element (no ``</script>`` can end it early)."""
    return text.replace("</", "<\\/")


def page_html(payload: dict[str, Any], title: str = "") -> str:
    """The page's text: the timeline of ``payload`` (``timeline_payload``'s values)."""
    if "rows" not in payload:
        raise ConfigError("export: the payload has no rows (make it with timeline_payload)")
    js = (_FRONT / "timeline.js").read_text(encoding="utf-8")
    if _EXPORT not in js:
        raise RuntimeError(f"timeline.js no longer ends with {_EXPORT!r}")
    js = js.replace(_EXPORT, "const timelineWidget = { render };")
    css = (_FRONT / "timeline.css").read_text(encoding="utf-8")
    state = {**DEFAULTS, **payload}
    data = json.dumps(state, separators=(",", ":"), allow_nan=False)
    heading = title or state.get("caption") or "timeline"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(heading)}</title>"
        f"<style>body{{margin:8px 12px;font-family:sans-serif}}"
        f"h1{{font-size:16px;margin:0 0 4px 0}}\n{css}</style></head><body>"
        f'<h1>{html.escape(heading)}</h1><div id="timeline"></div>'
        f'<script type="application/json" id="timeline-data">{_script(data)}</script>'
        f"<script>{_script(js)}\n{_MODEL}</script></body></html>\n"
    )


def export_html(payload: dict[str, Any], path: str | Path, title: str = "") -> Path:
    """Write ``payload``'s timeline to ``path`` as one self-contained HTML file."""
    out = Path(path)
    out.write_text(page_html(payload, title), encoding="utf-8")
    return out
