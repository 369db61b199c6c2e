"""Project hygiene: environment.yml and pyproject.toml list the same dependencies; notebooks are
committed without outputs and in step with their paired ``# %%`` sources."""

from __future__ import annotations

import tomllib
from pathlib import Path

import jupytext
import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _pip_section() -> list[str]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    for dep in env["dependencies"]:
        if isinstance(dep, dict) and "pip" in dep:
            return [d for d in dep["pip"] if not d.startswith("-e")]
    raise AssertionError("environment.yml has no pip section")


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    wanted = {*project["dependencies"], *extras["dev"], *extras["libraries"]}
    assert sorted(_pip_section()) == sorted(wanted)  # a set: limits is in both lists


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 1


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_committed_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None, f"{path.name} has outputs"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_in_step_with_its_source(path):
    source = path.parent / "src" / path.with_suffix(".py").name
    assert source.exists(), f"{path.name} has no paired # %% source"
    from_py = jupytext.read(source)
    from_nb = nbformat.read(path, as_version=4)
    cells = lambda nb: [(c.cell_type, c.source.strip()) for c in nb.cells]  # noqa: E731
    assert cells(from_py) == cells(from_nb), (
        f"{path.name} and {source.name} differ: run make notebooks"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_has_a_parameter_cell(path):
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert "parameters" in code[0].metadata.get("tags", []), (
        f"{path.name}: first code cell untagged"
    )


def test_notebook_sources_are_kept_in_their_own_folder():
    # the file browser lists each lesson once: its # %% source is in notebooks/src/
    assert not list((ROOT / "notebooks").glob("*.py"))
    sources = {p.stem for p in (ROOT / "notebooks" / "src").glob("*.py")}
    assert sources == {p.stem for p in NOTEBOOKS}
