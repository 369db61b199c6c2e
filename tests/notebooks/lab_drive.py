"""Driving JupyterLab as a learner does: open a lesson, Run All, read it top to bottom (the
server itself is started by ``tests/lab_server.py``).

The drives in ``test_lab_run_all.py`` and ``test_lab_lessons.py`` share this; opening a notebook
and Run All (waiting on what the page says, never on the clock) are ``tests/lab_server.py``'s.

JupyterLab 4 draws only the cells on screen, so the reader scrolls ``.jp-WindowedPanel-outer``,
waits for two animation frames and the images on screen at each stop, and proves that it has
seen every cell. Errors are read from the notebook's model too, where no scrolling can miss them.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
#: A kernel's start and a lesson's run on a busy 2-core machine.
WAIT_MS = 900_000
VIEWPORT = {"width": 1280, "height": 800}

Page = Any  # playwright's Page: the module is imported only where Chromium is


def copy_lessons(into: Path) -> Path:
    """The lessons as a learner's checkout holds them (notebooks, their exercises, the lab's
    settings; ``data/`` and ``docs/`` linked read only), so that autosave and a learner's edits
    write into the copy, never into the committed notebooks."""
    shutil.copytree(ROOT / "notebooks", into / "notebooks")
    shutil.copytree(ROOT / "lab-settings", into / "lab-settings")
    (into / "data").symlink_to(ROOT / "data")
    (into / "docs").symlink_to(ROOT / "docs")
    return into


def chromium() -> Iterator[Any]:
    """A fixture's body: Debian's Chromium through Playwright."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


def tab(browser: Any, tmp_path: Path) -> Iterator[Page]:
    """A fixture's body: a tab of its own at 1280x800; at the end every kernel is shut down, so
    that the next lesson runs on a machine with one kernel at a time (as a learner's would), and
    what the page showed is kept as ``last.png`` (the first thing to look at when it failed)."""
    page = browser.new_page(viewport=VIEWPORT)
    page.set_default_timeout(WAIT_MS)
    try:
        yield page
    finally:
        with contextlib.suppress(Exception):  # the picture must not hide the failure it shows
            page.screenshot(path=str(tmp_path / "last.png"))
        with contextlib.suppress(Exception):
            page.evaluate(
                "() => window.jupyterapp && window.jupyterapp.serviceManager.sessions.shutdownAll()"
            )
        page.close()


#: Two animation frames (the windowed list draws on the frame after a scroll), then every image
#: on screen decoded.
_DRAWN = """async () => {
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  await Promise.all([...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) img')]
    .map(img => img.decode().catch(() => null)));
}"""


def scroll_to_cell(page: Page, index: int) -> str:
    """Bring cell ``index`` on screen and return the text its outputs show there."""
    page.evaluate(
        "async (i) => window.jupyterapp.shell.currentWidget.content.scrollToItem(i, 'start')",
        index,
    )
    page.evaluate(_DRAWN)
    return page.evaluate(
        """(i) => {
          const node = window.jupyterapp.shell.currentWidget.content.widgets[i].node;
          return [...node.querySelectorAll('.jp-OutputArea-output')].map(o => o.innerText)
            .join('\\n');
        }""",
        index,
    )


def cell_index(page: Page, starts_with: str) -> int:
    """The index of the one cell whose source starts with ``starts_with``."""
    found = page.evaluate(
        """(start) => {
          const cells = window.jupyterapp.shell.currentWidget.content.model.cells, out = [];
          for (let i = 0; i < cells.length; i++) {
            if (cells.get(i).sharedModel.source.startsWith(start)) out.push(i);
          }
          return out;
        }""",
        starts_with,
    )
    assert len(found) == 1, f"cells starting {starts_with!r}: {found}"
    return found[0]


def type_into_cell(page: Page, index: int, source: str) -> None:
    """Replace cell ``index``'s source as a learner does: click into its editor, select all,
    type (inserted as text, so that the editor does not close brackets on its own)."""
    scroll_to_cell(page, index)
    editor = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell").filter(
        has=page.locator(f"[data-windowed-list-index='{index}']")
    )
    if not editor.count():  # the windowed list marks the cell itself
        editor = page.locator(f".jp-Cell[data-windowed-list-index='{index}']")
    editor.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(source)
    page.keyboard.press("Escape")  # back to command mode, as before Run All
    got = page.evaluate(
        "(i) => window.jupyterapp.shell.currentWidget.content.model.cells.get(i).sharedModel"
        ".source",
        index,
    )
    assert got == source, f"cell {index} reads {got!r}"


#: What the screen shows at one stop of the scroll: errors, tables wider than their output area,
#: elements scrolling sideways that are not a deliberate scroll box, toasts, and which cells
#: (by their index in the windowed list) are on screen.
_LOOK = """() => {
  const out = {errors: [], wide: [], sideways: [], toasts: [], cells: []};
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  for (const e of panel.querySelectorAll(
      '[data-mime-type="application/vnd.jupyter.stderr"], .jp-OutputArea-output.jp-mod-error')) {
    const text = e.innerText.trim();  // a warning on stderr is not an error; a traceback is
    const error = e.classList.contains('jp-mod-error') || /Traceback|Error:/.test(text);
    if (text && error) out.errors.push(text.slice(0, 300));
  }
  for (const area of panel.querySelectorAll('.jp-OutputArea-output')) {
    const box = area.getBoundingClientRect();
    for (const table of area.querySelectorAll('table')) {
      if (table.closest('.workbench-scroll')) continue;
      const width = table.getBoundingClientRect().width;
      if (width > box.width + 1) out.wide.push(
        `${Math.ceil(width)} > ${Math.floor(box.width)} px: ` +
        [...table.querySelectorAll('th')].map(th => th.innerText).join(' | ').slice(0, 80));
    }
  }
  for (const e of panel.querySelectorAll('*')) {
    if (e.scrollWidth <= e.clientWidth + 1 || e.clientWidth === 0) continue;
    if (!['auto', 'scroll'].includes(getComputedStyle(e).overflowX)) continue;
    if (e.closest('.workbench-scroll') || e.closest('.jp-Editor, .cm-editor')) continue;
    out.sideways.push(`${e.className || e.tagName}: ${e.scrollWidth} > ${e.clientWidth} px`);
  }
  if (document.documentElement.scrollWidth > document.documentElement.clientWidth + 1) {
    out.sideways.push(`the page: ${document.documentElement.scrollWidth} px wide`);
  }
  for (const t of document.querySelectorAll('.Toastify__toast, .jp-toast-message')) {
    out.toasts.push(t.innerText.slice(0, 120));
  }
  const outer = panel.querySelector('.jp-WindowedPanel-outer').getBoundingClientRect();
  for (const c of panel.querySelectorAll('.jp-Cell[data-windowed-list-index]')) {
    const r = c.getBoundingClientRect();
    if (r.bottom > outer.top && r.top < outer.bottom) {
      out.cells.push(Number(c.dataset.windowedListIndex));
    }
  }
  return out;
}"""

_SCROLL = """() => {
  const o = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-WindowedPanel-outer');
  const end = o.scrollTop + o.clientHeight >= o.scrollHeight - 2;
  o.scrollBy(0, o.clientHeight * 0.8);
  return end;
}"""


def read_through(page: Page) -> dict[str, list[str]]:
    """Scroll the open notebook from top to bottom; what every stop showed, merged, and under
    ``unseen`` the cells no stop showed (none, or the reading proves nothing)."""
    seen: dict[str, list[Any]] = {"errors": [], "wide": [], "sideways": [], "toasts": []}
    cells: set[int] = set()
    page.evaluate(
        "() => document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) "
        ".jp-WindowedPanel-outer').scrollTo(0, 0)"
    )
    for _ in range(1000):  # a lesson is far shorter than 1000 screens
        page.evaluate(_DRAWN)
        look = page.evaluate(_LOOK)
        cells.update(look.pop("cells"))
        for kind, found in look.items():
            seen[kind] += [f for f in found if f not in seen[kind]]
        if page.evaluate(_SCROLL):
            break
    total = page.evaluate("() => window.jupyterapp.shell.currentWidget.content.model.cells.length")
    seen["unseen"] = sorted(set(range(total)) - cells)
    return seen
