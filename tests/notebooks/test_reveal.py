"""Lesson 01 keeps its answer until a guess is given, then compares the guess with the run."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from simulator.lessons import NO_GUESS

pytestmark = pytest.mark.notebook

ROOT = Path(__file__).resolve().parents[2]
LESSON = ROOT / "notebooks" / "01_boundary_burst.ipynb"


def _guess_cell(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The one cell that sets ``my_guess`` (to ``None`` as committed)."""
    (cell,) = [
        c for c in nb.cells if c.cell_type == "code" and c.source.startswith("my_guess = None")
    ]
    return cell


def _run(nb: nbformat.NotebookNode) -> str:
    """Execute ``nb``; the Markdown every reveal showed, joined."""
    client = NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(ROOT / "notebooks")}},
    )
    client.execute()
    shown = [
        out["data"]["text/markdown"]
        for cell in nb.cells
        if cell.cell_type == "code" and "reveal(" in cell.source
        for out in cell.outputs
        if "text/markdown" in out.get("data", {})
    ]
    assert shown, "no reveal cell showed Markdown"
    return "\n".join(shown)


def test_untouched_lesson_asks_for_a_guess_and_gives_no_answer():
    nb = nbformat.read(LESSON, as_version=4)
    _guess_cell(nb)  # the cell is there, and holds no guess
    text = _run(nb)
    assert NO_GUESS in text
    assert "| your guess |" not in text  # no comparison table before a guess


def test_a_guess_is_compared_with_the_run():
    nb = nbformat.read(LESSON, as_version=4)
    _guess_cell(nb).source = 'my_guess = {"fixed_window": 100, "sliding_log": 100}'
    text = _run(nb)
    assert NO_GUESS not in text
    rows = {line.split("|")[1].strip(): line for line in text.splitlines() if "`" in line}
    # the clock-aligned window admits both bursts, the exact log one limit's worth
    assert "under by 100" in rows["`fixed_window`"]
    assert "right" in rows["`sliding_log`"]
    assert "not guessed" in rows["`echomq`"]


# Every other lesson that asks a question: a guess of the shape its guess cell asks for. (Run
# untouched, each is in test_notebooks.py; its reveal's words are the same helper's as 01's.)
GUESSES = {
    "02_estimate_error": "my_guess = 0.5",
    "03_memory_5m_users": 'my_guess = {"fixed_window": 0.3, "sliding_log": 15}',
    "05_echomq_queue_budget": "my_guess = 50",
    "07_pick_a_limiter": 'my_guess = {"sliding_counter": 50}',
}


@pytest.mark.parametrize("name", sorted(GUESSES))
def test_each_lesson_compares_a_guess(name):
    path = ROOT / "notebooks" / f"{name}.ipynb"
    guessed = nbformat.read(path, as_version=4)
    _guess_cell(guessed).source = GUESSES[name]
    text = _run(guessed)
    assert NO_GUESS not in text
    assert "You guessed" in text or "| your guess |" in text
