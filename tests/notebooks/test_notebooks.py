"""Every notebook runs top to bottom on the embedded default, at its CI size; each lesson that asks
a question keeps its answer until a guess is given, then compares the guess with the run.

One kernel per notebook: the untouched notebook runs from the first cell to the last, then, in the
same kernel, the guess cell is given a guess of the shape it asks for and run again with every cell
that reads ``my_guess`` (the reveals and what they hold back). The reveal reads the run's own
figures, which the kernel still holds, so a guess needs no second run of the study. Lessons 01-05,
whose tables are the widest, are then measured in Chromium as JupyterLab draws them, guess and all
(``tables.py``): every table fits the notebook column.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from kernel_polls import poll_each_second
from lab_drive import CHROMIUM
from nbclient import NotebookClient
from tables import tables_that_do_not_fit

from simulator.lessons import NO_GUESS

pytestmark = pytest.mark.notebook

ROOT = Path(__file__).resolve().parents[2]
#: The lessons whose tables are measured in Chromium after the run (the widest tables).
TABLE_NOTEBOOKS = {p.name for p in (ROOT / "notebooks").glob("0[1-5]_*.ipynb")}
NOTEBOOKS = [
    pytest.param(
        p,
        id=p.name,
        marks=[pytest.mark.browser] if p.name in TABLE_NOTEBOOKS else [],
    )
    for p in sorted((ROOT / "notebooks").glob("*.ipynb"))
]

#: Each lesson that asks a question: a guess of the shape its guess cell asks for.
GUESSES = {
    "01_boundary_burst": 'my_guess = {"fixed_window": 100, "sliding_log": 100}',
    "02_estimate_error": "my_guess = 0.5",
    "03_memory_5m_users": 'my_guess = {"fixed_window": 0.3, "sliding_log": 15}',
    "05_echomq_queue_budget": "my_guess = 50",
    "07_pick_a_limiter": 'my_guess = {"sliding_counter": 50}',
}


def _guess_index(nb: nbformat.NotebookNode) -> int | None:
    """The index of the one cell that sets ``my_guess`` (to ``None`` as committed), if any."""
    found = [
        i
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code" and c.source.startswith("my_guess = None")
    ]
    assert len(found) <= 1, f"{len(found)} cells set my_guess"
    return found[0] if found else None


def _errors(nb: nbformat.NotebookNode) -> list[str]:
    return [
        f"cell {i}: {out.get('ename')}: {out.get('evalue')}"
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code"
        for out in cell.outputs
        if out.get("output_type") == "error"
    ]


def _revealed(nb: nbformat.NotebookNode) -> str:
    """The Markdown every reveal cell showed, joined."""
    shown = [
        out["data"]["text/markdown"]
        for cell in nb.cells
        if cell.cell_type == "code" and "reveal(" in cell.source
        for out in cell.outputs
        if "text/markdown" in out.get("data", {})
    ]
    assert shown, "no reveal cell showed Markdown"
    return "\n".join(shown)


@pytest.mark.parametrize("path", NOTEBOOKS)
def test_notebook_executes_and_reveals_only_after_a_guess(path, tmp_path):
    nb = nbformat.read(path, as_version=4)
    guess_at = _guess_index(nb)
    guess = GUESSES.get(path.stem)
    assert (guess_at is None) == (guess is None), (
        f"{path.name}: a guess cell needs an entry in GUESSES, and an entry a guess cell"
    )
    client = NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    with client.setup_kernel():
        poll_each_second(client.kc)
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
        assert not _errors(nb)
        if guess_at is not None:
            _guess_is_compared(client, nb, guess_at, guess, path.stem)
    if path.name in TABLE_NOTEBOOKS:
        if not CHROMIUM.exists():
            pytest.skip("Chromium is not installed (apt-get install -y chromium fonts-dejavu)")
        assert not tables_that_do_not_fit(nb, path.stem, tmp_path)


def _guess_is_compared(
    client: NotebookClient, nb: nbformat.NotebookNode, guess_at: int, guess: str, stem: str
) -> None:
    """In the kernel that ran ``nb``: no answer before a guess, the comparison after it."""
    untouched = _revealed(nb)
    assert NO_GUESS in untouched, "the untouched lesson gives its answer before a guess"
    assert "| your guess |" not in untouched  # no comparison table before a guess
    nb.cells[guess_at].source = guess
    for index, cell in enumerate(nb.cells):
        if index == guess_at or (
            index > guess_at and cell.cell_type == "code" and "my_guess" in cell.source
        ):
            client.execute_cell(cell, index)
    assert not _errors(nb)
    guessed = _revealed(nb)
    assert NO_GUESS not in guessed
    assert "You guessed" in guessed or "| your guess |" in guessed
    if stem == "01_boundary_burst":
        rows = {line.split("|")[1].strip(): line for line in guessed.splitlines() if "`" in line}
        # the clock-aligned window admits both bursts, the exact log one limit's worth
        assert "under by 100" in rows["`fixed_window`"]
        assert "right" in rows["`sliding_log`"]
        assert "not guessed" in rows["`echomq`"]
