"""Every lesson as a learner sees it: JupyterLab at 1280x800, Run All, read top to bottom.

nbclient (``test_notebooks.py``) proves that each notebook runs; this drive proves what it looks
like once it has run in the browser the README sends a learner to. For every notebook: every
code cell ran, no error output and no traceback, no table wider than its output area, no
horizontal scroll bar except a deliberate scroll box (:func:`simulator.display.scroll_box`),
and no toast over the page. How it waits (on the page, never on the clock) is in
``lab_drive.py``.

The lessons with the most at stake on screen run in every ``make test``: 01 and 06 (the second
drive's lessons, ``test_lab_lessons.py``) and the ones whose tables are wide enough to need a
scroll box (03, 04, 08). The whole set, some twenty minutes on a 2-core machine, runs with
``LAB_DRIVE=1`` (``make test-lab``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from lab_drive import (
    CHROMIUM,
    ROOT,
    chromium,
    copy_lessons,
    read_through,
    tab,
)
from lab_server import lab_at, model_errors, open_notebook, run_all

pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
if not CHROMIUM.exists():
    pytest.skip(
        "Chromium is not installed (apt-get install -y chromium fonts-dejavu)",
        allow_module_level=True,
    )

pytestmark = [pytest.mark.browser, pytest.mark.notebook, pytest.mark.slow]

#: Run in every ``make test``: the second drive's lessons and those with scroll boxes.
EVERY_RUN = {
    "01_boundary_burst.ipynb",
    "03_memory_5m_users.ipynb",
    "04_real_servers.ipynb",
    "06_write_your_own.ipynb",
    "08_production.ipynb",
}
ALL = bool(os.environ.get("LAB_DRIVE"))
NOTEBOOKS = [
    pytest.param(
        name,
        marks=pytest.mark.skipif(
            not ALL and name not in EVERY_RUN,
            reason="the JupyterLab drive of every lesson runs with LAB_DRIVE=1 (make test-lab)",
        ),
    )
    for name in sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_lessons(tmp_path_factory.mktemp("lab"))


@pytest.fixture(scope="module")
def lab(workdir: Path) -> Iterator[str]:
    yield from lab_at(workdir)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    yield from chromium()


@pytest.fixture
def page(browser: object, lab: str, tmp_path: Path) -> Iterator[object]:
    yield from tab(browser, tmp_path)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_each_lesson_reads_cleanly_after_run_all_in_jupyterlab(name, lab, page):
    open_notebook(page, lab, f"notebooks/{name}")
    runs = run_all(page, name)
    assert not model_errors(page), f"{name}: errors after Run All: {model_errors(page)}"
    seen = read_through(page)
    assert not seen["unseen"], f"{name}: cells never on screen while reading: {seen['unseen']}"
    assert not seen["errors"], f"{name}: error output: {seen['errors']}"
    assert not seen["wide"], f"{name}: tables wider than their output area: {seen['wide']}"
    assert not seen["sideways"], f"{name}: horizontal scroll bars: {seen['sideways']}"
    assert not seen["toasts"], f"{name}: a toast over the page: {seen['toasts']}"
    print(f"{name}: Run All asked {runs} time(s)")


def test_the_drive_sees_a_wide_table_and_an_error(workdir, lab, page):
    """A notebook made to fail the reading: a table of forty long columns, then an error."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import pandas as pd\n"
            "pd.DataFrame([range(40)], columns=[f'a long column name {i}' for i in range(40)])"
        ),
        nbformat.v4.new_code_cell("raise ValueError('made to fail')"),
    ]
    nbformat.write(nb, workdir / "probe.ipynb")
    open_notebook(page, lab, "probe.ipynb")
    run_all(page, "probe.ipynb")
    assert model_errors(page) == ["cell 1: \"raise ValueError('made to fail')\""]
    seen = read_through(page)
    assert any("made to fail" in e for e in seen["errors"]), seen
    assert any("a long column name 0" in w for w in seen["wide"]), seen
    assert seen["sideways"] and not seen["unseen"] and not seen["toasts"], seen
