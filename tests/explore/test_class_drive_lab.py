"""The class's drive of the explorer, inside JupyterLab at 1280×800, in headless Chromium.

``test_class_drive.py`` drives the Voilà page; a teacher may as well open
``notebooks/00_explorer.ipynb`` in JupyterLab (``make lab``), where the explorer is drawn in a
notebook's output area some 850 px wide instead of the whole window. This test starts JupyterLab
itself on a free port over a copy of the notebooks (stopped by its own handle), opens the
explorer's notebook, runs it, and takes the same steps with the same step functions: the
boundary-burst preset, the next seam and the seam view (the 100 requests at 59 s and the 100 at
61 s as marks of their own on a ms axis), request 101's why on the sliding counter
(``… + 100 × 59/60``, the lines of sliding_counter.lua that ran, its redis.calls), other servers
with request 101 still chosen, two servers side by side, a request added on the timeline (every
row decides again), the large text a projector needs (*large*) and the exported file opened from
disk, stepped to request 101.

The one step left out is the page's address: JupyterLab's address names the notebook, not the
view (the explorer writes it only on the Voilà page), so reopening it is driven there only.

On the way, at each stop: no element of the explorer passes its output area's edges (nor the
viewport's), nothing scrolls sideways or is cut short by a box too narrow for it (the why
panel's source and calls are scroll boxes on purpose), the rows' titles are at least 12 px, no
word or number of the titles, the summary or the servers' panel is broken over two lines, and
the rows and the server panel are on screen together (the first rows beside the panel, both in
the notebook's visible area). Its screenshots go to the temporary folder only (the two servers
side by side, and the page as it was at the end, pass or fail). Waits are for states, with
generous timeouts; no time is asserted.
"""

from __future__ import annotations

import base64
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from served import CHROMIUM, need_chromium  # noqa: E402

need_chromium()

from lab_server import lab_at, model_errors, open_notebook, run_all  # noqa: E402
from playwright.sync_api import Page, sync_playwright  # noqa: E402
from test_class_drive import _add_request, _seam_view, _text, _wait, _why  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
#: A JupyterLab, a kernel and a run started on a busy 2-core machine.
WAIT_MS = 600_000
WIDTH, HEIGHT = 1280, 800
OUTER = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-WindowedPanel-outer"

#: What one stop shows wrong, measured against the output area holding the explorer: boxes past
#: its edges or the viewport's, boxes whose content is wider than they are (clipped or
#: scrolling sideways; the why panel's source and calls scroll on purpose), row titles under
#: 12 px, and words broken over two lines in the text a class reads.
_LOOK = """() => {
  const out = {cut: [], narrow: [], small: [], broken: [], area: 0};
  const root = document.querySelector('.jp-OutputArea-output .explorer');
  const area = root.closest('.jp-OutputArea-output').getBoundingClientRect();
  out.area = Math.round(area.width);
  const name = e => `${e.tagName.toLowerCase()}.${[...e.classList].join('.')}`;
  for (const e of [root, ...root.querySelectorAll('*')]) {
    const r = e.getBoundingClientRect();
    if (!r.width || !r.height) continue;
    const style = getComputedStyle(e);
    if (style.visibility === 'hidden') continue;
    if (r.left < area.left - 0.5 || r.right > area.right + 0.5 || r.right > window.innerWidth) {
      out.cut.push(`${name(e)}: ${Math.round(r.left)}..${Math.round(r.right)}`);
    }
    if (e.closest('.why-source, .why-calls, .explorer-address')) continue;
    if (style.overflowX !== 'visible' && e.scrollWidth > e.clientWidth + 1 && e.clientWidth) {
      const edge = e.getBoundingClientRect().right;
      const past = [...e.querySelectorAll('*')].filter(k => k.getBoundingClientRect().right > edge + 1);
      const what = past.length ? past[past.length - 1] : e;  // the innermost box past the edge
      out.narrow.push(`${name(e)}: ${e.scrollWidth} > ${e.clientWidth} px, ` +
        `${name(what)} ${JSON.stringify((what.innerText || '').slice(0, 50))}`);
    }
  }
  for (const t of root.querySelectorAll('.tl-title, .tl-title *')) {
    const px = parseFloat(getComputedStyle(t).fontSize);
    if (px < 12) out.small.push(`${name(t)}: ${px} px`);
  }
  const read = root.querySelectorAll(
    '.tl-title, .explorer-summary, .explorer-state, .explorer-instant, .explorer-status');
  for (const box of read) {
    const walk = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
    for (let node = walk.nextNode(); node; node = walk.nextNode()) {
      if (!node.parentElement.getClientRects().length) continue;
      for (const m of node.data.matchAll(/[^\\s\\u00a0]+/g)) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const tops = new Set([...range.getClientRects()].filter(q => q.width > 0)
          .map(q => Math.round(q.top)));
        if (tops.size > 1) out.broken.push(m[0]);
      }
    }
  }
  for (const k of ['cut', 'narrow', 'small', 'broken']) out[k] = out[k].slice(0, 12);
  return out;
}"""

#: Where the first rows and the server panel are, and the notebook's visible area.
_TOGETHER = """(outer) => {
  const box = s => document.querySelector(s).getBoundingClientRect();
  const rows = [...document.querySelectorAll('.explorer-timeline .tl-row')].slice(0, 2)
    .map(r => r.getBoundingClientRect());
  const seen = document.querySelector(outer).getBoundingClientRect();
  return {rows: rows.map(r => [r.left, r.top, r.right, r.bottom]),
          panel: [box('.explorer-state').left, box('.explorer-state-of').top,
                  box('.explorer-state').right, box('.explorer-state').bottom],
          seen: [seen.left, seen.top, seen.right, Math.min(seen.bottom, window.innerHeight)]};
}"""


def _shot(page: Page, name: str) -> None:
    """A look at the stop, in a temporary folder (the README shows the Voilà page's)."""
    page.screenshot(path=str(Path(tempfile.gettempdir()) / name))


#: Whether the explorer's cell has run and its explorer drawn its first run.
_DRAWN = """() => {
  const s = document.querySelector('.explorer-summary');
  return !!s && /\\w+: admitted [\\d,]+ of/.test(s.innerText);
}"""
#: What the notebook shows when the explorer has not drawn: each code cell's execution count and
#: the first of its output's text, the kernel's status and the explorer's status line.
_STATE = """() => {
  const nb = window.jupyterapp.shell.currentWidget?.content;
  const cells = nb?.model?.cells;
  const out = {kernel: document.querySelector('.jp-Notebook-ExecutionIndicator')
                 ?.getAttribute('data-status'), cells: []};
  for (let i = 0; cells && i < cells.length; i++) {
    const c = cells.get(i);
    if (c.type !== 'code') continue;
    const view = nb.widgets[i]?.node?.querySelector('.jp-OutputArea');
    out.cells.push([i, c.executionCount, (view?.innerText || '').slice(0, 300)]);
  }
  out.status = document.querySelector('.explorer-status')?.innerText || null;
  return out;
}"""


def _not_drawn(page: Page, log: Path) -> str:
    """The assertion's message: what the notebook and JupyterLab's log show."""
    said = page.evaluate(_STATE)
    tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
    return f"the explorer's cell never drew its first run: {said}\nJupyterLab's log: {tail}"


def _run_notebook(page: Page, url: str, log: Path) -> None:
    """Open the explorer's notebook, Run All (``tests/lab_server.py``: a kernel dialog answered,
    Run All again if JupyterLab replaced the kernel under it), and wait for the explorer's first
    run drawn."""
    open_notebook(page, url, "notebooks/00_explorer.ipynb")
    run_all(page, "00_explorer.ipynb")
    assert not model_errors(page), _not_drawn(page, log)
    deadline = time.monotonic() + WAIT_MS / 1000
    while not page.evaluate(_DRAWN):
        if time.monotonic() > deadline:
            raise AssertionError(_not_drawn(page, log))
        # The explorer's output is drawn only while its cell is on screen (JupyterLab 4 draws
        # only those): scroll to it.
        page.evaluate(f"() => document.querySelector('{OUTER}')?.scrollTo(0, 400)")
        page.wait_for_timeout(500)  # polling interval


def _scroll_to(page: Page, *selectors: str) -> None:
    """Scroll the notebook until the highest of ``selectors`` is near its visible area's top."""
    page.evaluate(
        f"""(selectors) => {{
          const o = document.querySelector('{OUTER}');
          const top = Math.min(...selectors.map(
            s => document.querySelector(s).getBoundingClientRect().top));
          o.scrollBy(0, top - o.getBoundingClientRect().top - 8);
        }}""",
        list(selectors),
    )
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)))")


def _looks_right(page: Page, where: str) -> None:
    """The stop's boxes, measured against the explorer's output area and the viewport."""
    found = page.evaluate(_LOOK)
    assert found["area"] <= WIDTH, found
    for kind, said in (
        ("cut", "past the output area's edge"),
        ("narrow", "content wider than its box (clipped or scrolling sideways)"),
        ("small", "row titles under 12 px"),
        ("broken", "words broken over two lines"),
    ):
        assert not found[kind], f"{where}: {said} (area {found['area']} px): {found[kind]}"


def _together(page: Page, where: str) -> None:
    """The first rows and the server panel on screen at once, side by side."""
    _scroll_to(page, ".explorer-timeline", ".explorer-state-of")
    at = page.evaluate(_TOGETHER, OUTER)
    left, top, right, bottom = at["seen"]
    panel = at["panel"]
    for box in (*at["rows"], panel):
        assert box[0] >= left - 0.5 and box[2] <= right + 0.5, f"{where}: {at}"
        assert box[1] >= top - 0.5 and box[1] + 40 <= bottom, f"{where}: not on screen: {at}"
    assert panel[0] >= max(r[2] for r in at["rows"]) - 1, f"{where}: the panel is not beside: {at}"


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """JupyterLab over a copy of the explorer's notebook (autosave writes the copy only)."""
    shutil.copytree(
        ROOT / "notebooks", tmp_path / "notebooks", ignore=shutil.ignore_patterns("0[1-9]*")
    )
    shutil.copytree(ROOT / "lab-settings", tmp_path / "lab-settings")
    for url in lab_at(tmp_path, drop=("SIMULATOR_EXPLORER_WORKERS",)):  # a reader's default
        yield url, tmp_path / "lab.log"


def _drive(page: Page) -> None:
    page.get_by_role("button", name="boundary burst").click()
    _wait(page, ".explorer-status", r"run 2: .* limit 100 per 60 s")
    _wait(page, ".explorer-card", r"preset 1 of \d+")
    _together(page, "the boundary burst")
    _looks_right(page, "the boundary burst")
    _scroll_to(page, ".explorer-timeline")
    _seam_view(page)
    _looks_right(page, "the seam view")
    _scroll_to(page, ".explorer-state-of")
    _why(page)
    _looks_right(page, "the why panel")
    for server in ("token_bucket", "fixed_window", "sliding_log"):
        page.locator(".explorer-state-of select").select_option(server)
        _wait(page, ".explorer-state", rf"{server} at 61\.000 s")
        assert "request 101 of 200" in _text(page, ".explorer-instant")
    page.locator(".explorer-beside select").select_option("fixed_window")
    pair = _wait(page, ".explorer-pair", r"sliding_log[\s\S]*fixed_window")
    assert "refused" in pair and "admitted" in pair, pair  # the log refuses 101, the window not
    _together(page, "two servers side by side")
    _shot(page, "explorer_lab_pair.png")
    _looks_right(page, "two servers side by side")


def test_a_class_drives_the_explorer_in_jupyterlab(lab):
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
            page.set_default_timeout(WAIT_MS)
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            try:
                _run_notebook(page, *lab)
                _drive(page)
                page.get_by_role("button", name="export", exact=True).click()
                link = page.locator(".explorer-download-link")
                link.wait_for()
                href = link.get_attribute("href") or ""
                _scroll_to(page, ".explorer-timeline")
                page.locator(".explorer-timeline .tl-row").first.scroll_into_view_if_needed()
                _add_request(page)
                _looks_right(page, "a request added")
                page.get_by_role("button", name="large", exact=True).click()
                page.locator(".explorer-large").wait_for()
                page.evaluate("() => new Promise(r => requestAnimationFrame(() => setTimeout(r)))")
                _looks_right(page, "large, for a projector")
                _together(page, "large, for a projector")
                assert not errors, errors
            finally:
                page.screenshot(path=str(Path(tempfile.gettempdir()) / "explorer_lab_last.png"))
            exported = Path(tempfile.mkdtemp()) / "explorer.html"
            exported.write_bytes(base64.b64decode(href.split(",", 1)[1]))
            offline = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
            offline.goto(exported.as_uri())
            offline.locator(".tl-root canvas").first.wait_for()
            offline.locator(".tl-scrub").fill("99")
            _wait(offline, ".tl-readout", r"request 100 of 200")
            offline.get_by_role("button", name="step ▶", exact=True).click()
            _wait(offline, ".tl-readout", r"request 101 of 200")
        finally:
            browser.close()
