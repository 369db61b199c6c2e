"""Every table of an executed notebook fits JupyterLab's notebook column.

The notebook as it ran is exported as JupyterLab draws it (nbconvert's lab template: JupyterLab's
own table styles) and opened in Chromium with each output area set to the column's width: no
table may be wider than the column, and no cell's content may spill out of its cell.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from lab_drive import CHROMIUM

#: The width of JupyterLab's notebook column at its default layout, where outputs are drawn (px).
COLUMN_PX = 968
WAIT_MS = 300_000  # generous: a page opened on a busy 2-core machine

#: Each table of each output: its rendered width, the column's, and the cells whose content spills.
_MEASURE = """() => [...document.querySelectorAll('.jp-OutputArea-output')].flatMap(area => {
  const style = getComputedStyle(area);
  const column = area.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  return [...area.querySelectorAll('table')].map(table => ({
    column: column,
    width: Math.ceil(table.getBoundingClientRect().width),
    spills: [...table.querySelectorAll('th, td')]
      .filter(cell => cell.scrollWidth > cell.clientWidth + 1).map(cell => cell.innerText),
    header: [...table.querySelectorAll('thead th')].map(th => th.innerText).join(' | ').slice(0, 80),
  }));
})"""


def tables_that_do_not_fit(nb: nbformat.NotebookNode, name: str, folder: Path) -> list[str]:
    """What of ``nb``'s tables does not fit the column, one line each (none: all fit)."""
    from nbconvert import HTMLExporter
    from playwright.sync_api import sync_playwright

    html, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
    page_path = folder / f"{name}.html"
    page_path.write_text(html)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.set_default_timeout(WAIT_MS)
            page.goto(page_path.as_uri())
            page.add_style_tag(
                content=f".jp-OutputArea-output {{ display: block !important; width: {COLUMN_PX}px "
                "!important; overflow-x: auto; }"
            )
            tables = page.evaluate(_MEASURE)
        finally:
            browser.close()
    if not tables:
        return [f"{name}: no table was drawn"]
    return (
        [
            f"{name}: a table measured against a {t['column']} px column, not {COLUMN_PX}"
            for t in tables
            if t["column"] != COLUMN_PX
        ]
        + [
            f"{name}: {t['width']} px wide (column {COLUMN_PX} px): {t['header']}"
            for t in tables
            if t["width"] > t["column"]
        ]
        + [
            f"{name}: cells whose content spills: {t['spills']} in {t['header']}"
            for t in tables
            if t["spills"]
        ]
    )
