"""The two lessons that answer a learner, driven in JupyterLab as the learner drives them.

Lesson 01 keeps its answer until a guess is given: Run All of the untouched notebook shows
*make your guess first* where the comparison would be; a guess typed into the guess cell and
Run All again reveal it, row by row. Lesson 06 grades the learner's scripts, one of each kind:
the fixed window that decides right but answers zeros (``{allowed, 0, 0, 0, 0}``) is wrong at
the very first request, on ``count``; the sliding log's skeleton, left as it is, reads *not
attempted*; a sliding counter written right (the project's own script under the exercise's
declaration) agrees. nbclient proves the same in a kernel (``test_notebooks.py``,
``tests/userscripts/test_grader.py``); this is what the learner reads on the page.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from lab_drive import (
    CHROMIUM,
    ROOT,
    cell_index,
    chromium,
    copy_lessons,
    read_through,
    scroll_to_cell,
    tab,
    type_into_cell,
)
from lab_server import lab_at, model_errors, open_notebook, run_all

from simulator.lessons import NO_GUESS
from simulator.userscripts.exercises import NOT_ATTEMPTED

pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
if not CHROMIUM.exists():
    pytest.skip(
        "Chromium is not installed (apt-get install -y chromium fonts-dejavu)",
        allow_module_level=True,
    )

pytestmark = [pytest.mark.browser, pytest.mark.notebook, pytest.mark.slow]

PRACTICE = "practice case: 100 at second 59, 100 at 61"


def _write_the_three_scripts(exercises: Path) -> None:
    """The learner's three scripts: the zero reply as the fixed window, the sliding log's
    skeleton untouched, and a right sliding counter (the exercise's declaration over the
    project's own script, which keeps the same contract)."""
    shutil.copy(exercises / "mistakes" / "fixed_window_zeros.lua", exercises / "fixed_window.lua")
    skeleton = (exercises / "sliding_counter.lua").read_text()
    declaration = skeleton[: skeleton.index("]]") + 2]
    own = (ROOT / "simulator" / "algorithms" / "lua" / "sliding_counter.lua").read_text()
    (exercises / "sliding_counter.lua").write_text(f"{declaration}\n{own}")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    workdir = copy_lessons(tmp_path_factory.mktemp("lab"))
    _write_the_three_scripts(workdir / "notebooks" / "exercises")
    yield from lab_at(workdir)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    yield from chromium()


@pytest.fixture
def page(browser: object, lab: str, tmp_path: Path) -> Iterator[object]:
    yield from tab(browser, tmp_path)


def _clean(page: object, name: str) -> None:
    assert not model_errors(page), f"{name}: errors after Run All: {model_errors(page)}"
    seen = read_through(page)
    assert not any(seen.values()), f"{name}: {seen}"


def _row(text: str, name: str) -> str:
    """The one line of a table shown on the page that names ``name``."""
    (line,) = [line for line in text.splitlines() if line.strip().startswith(name)]
    return line


def test_lesson_01_asks_for_a_guess_then_reveals_the_comparison(lab, page):
    name = "01_boundary_burst.ipynb"
    open_notebook(page, lab, f"notebooks/{name}")
    run_all(page, name)
    reveal = cell_index(page, "reveal(my_guess")
    shown = scroll_to_cell(page, reveal)
    assert NO_GUESS in shown and "under by" not in shown, shown  # no comparison yet
    assert NO_GUESS in scroll_to_cell(page, cell_index(page, "hold(my_guess, boundary_burst"))
    _clean(page, name)

    type_into_cell(
        page, cell_index(page, "my_guess = None"), 'my_guess = {"fixed_window": 100, "gcra": 100}'
    )
    run_all(page, name)
    shown = scroll_to_cell(page, reveal)
    assert NO_GUESS not in shown and "your guess" in shown, shown
    assert "under by 100" in _row(shown, "fixed_window"), shown  # both bursts: 200 admitted
    assert "not guessed" in _row(shown, "sliding_log"), shown
    chart = cell_index(page, "hold(my_guess, boundary_burst")
    assert NO_GUESS not in scroll_to_cell(page, chart)
    assert page.evaluate(
        "(i) => window.jupyterapp.shell.currentWidget.content.widgets[i].node"
        ".querySelectorAll('.jp-OutputArea-output img').length",
        chart,
    ), "the chart is not shown once guessed"
    _clean(page, name)


def test_lesson_06_grades_a_zero_reply_an_untouched_skeleton_and_a_right_script(lab, page):
    name = "06_write_your_own.ipynb"
    open_notebook(page, lab, f"notebooks/{name}")
    run_all(page, name)
    table = scroll_to_cell(page, cell_index(page, "attempts = {name: attempt"))
    assert _row(table, "fixed_window").rstrip().endswith("differs"), table
    assert _row(table, "sliding_log").rstrip().endswith(NOT_ATTEMPTED), table
    assert _row(table, "sliding_counter").rstrip().endswith("agrees"), table

    verdicts = scroll_to_cell(page, cell_index(page, "for name, g in grades.items():\n    print"))
    assert (
        f"fixed_window: differs in trace {PRACTICE!r} (limit 100 per 60000 ms), request 1 at "
        "t_ms=59000, client 'c': the first field that differs is count: expected 1, got 0"
    ) in verdicts, verdicts
    assert f"sliding_log: {NOT_ATTEMPTED}: " in verdicts, verdicts
    assert "sliding_counter: agrees on " in verdicts and "on every field" in verdicts, verdicts
    _clean(page, name)
