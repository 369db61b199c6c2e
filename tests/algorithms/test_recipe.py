"""CONTRIBUTING.md's "Adding an algorithm", followed to the letter in a copy of the repository.

``test_toy.py`` registers its toy from outside the package. This test does what a contributor
does instead: in a temporary copy of the tracked files it adds an algorithm to the package with
only the places the recipe names - ``simulator/algorithms/lua/<name>.lua``, the module
``simulator/algorithms/<name>.py``, its line in ``ALGORITHMS``, and its worked figures in
``tests/algorithms/cases/<name>.toml`` - and runs the registry-driven tests there, with this
checkout's Python and ``PYTHONPATH`` on the copy. They must pass, skipping only for the optional
abilities it lacks, and naming it when they skip.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, TESTS
from test_toy import FILES

pytestmark = pytest.mark.slow

NAME = "recipe"

#: The worked case, by hand: a fixed window on the clock grid that counts what it admits only.
#: Limit 2 per 10 s: as fixed_window until the refusal, which is not counted (nothing shows it
#: here: the next request is in the next window). Limit 3: after 1, a request of 3 does not fit,
#: leaves the count at 1, and 2 requests of cost 1 still do. The practice case's two bursts of
#: 100 fall either side of a grid seam: 100 each.
CASE = """# recipe: the figures worked out by hand.

[draft]
times_ms = [0, 0, 9_999, 10_000]
fields = [
  { r = 1, t = 10 },
  { r = 0, t = 10 },
  { r = 0, t = 1, retry_after = "1" },
  { r = 1, t = 10 },
]

[refused_with_room]
cost = 3
left = 2

[practice]
admitted = 200
"""


def _copy_tracked(to: Path) -> None:
    """The files git tracks here, as they are on disk (not .venv, not what is ignored)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=120
    ).stdout.split(b"\0")
    for raw in filter(None, listed):
        rel = raw.decode()
        source = ROOT / rel
        if source.is_file():
            (to / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, to / rel)
    # new test files not yet committed are part of the tree being tried
    for path in TESTS.rglob("*.py"):
        target = to / path.relative_to(ROOT)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)


def _add_the_algorithm(repo: Path) -> None:
    """Steps 1 to 3 of the recipe, and the worked case of step 4."""
    toy = TESTS / "toy"
    lua = (toy / "toy.lua").read_text("utf-8").replace("rl:toy:", f"rl:{NAME}:")
    (repo / "simulator" / "algorithms" / "lua" / f"{NAME}.lua").write_text(
        lua.replace("toy:", f"{NAME}:", 1)
    )
    module = (toy / "algorithm.py").read_text("utf-8")
    module = module.replace('"toy"', f'"{NAME}"').replace("rl:toy:", f"rl:{NAME}:")
    module = module.replace("class ToyRef", "class RecipeRef").replace("ToyRef", "RecipeRef")
    module = module.replace("class Toy(", "class Recipe(").replace('"Toy"', '"Recipe"')
    module = module.replace("(toy)", "(recipe)")
    (repo / "simulator" / "algorithms" / f"{NAME}.py").write_text(module)

    registry = repo / "simulator" / "algorithms" / "__init__.py"
    text = registry.read_text("utf-8")
    anchor = "from simulator.algorithms.token_bucket import"
    assert anchor in text, "the registry's imports are not as CONTRIBUTING.md's step 3 says"
    text = text.replace(anchor, f"from simulator.algorithms.{NAME} import Recipe\n{anchor}", 1)
    block = re.search(r"\nALGORITHMS: dict\[.*?\n\)\n", text, flags=re.DOTALL)
    assert block, "no ALGORITHMS = _Registry(...) block in simulator/algorithms/__init__.py"
    body = block.group(0)
    closing = body.rindex("\n    )\n)")
    text = text.replace(body, body[:closing] + "\n        Recipe," + body[closing:], 1)
    registry.write_text(text)

    (repo / "tests" / "algorithms" / "cases" / f"{NAME}.toml").write_text(CASE)


def _environment(repo: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "SIMULATOR_ALGORITHMS"}
    env.update(PYTHONPATH=os.pathsep.join([str(repo), str(repo / "tests")]), MPLBACKEND="Agg")
    return env


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    repo = tmp_path_factory.mktemp("repository")
    _copy_tracked(repo)
    _add_the_algorithm(repo)
    return repo


def _pytest(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA", *args],
        cwd=repo,
        env=_environment(repo),
        capture_output=True,
        text=True,
        timeout=1800,
    )


def test_the_copy_imports_the_algorithm_from_itself(repo):
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import simulator.algorithms as a; print(a.__file__, '{NAME}' in a.ALGORITHMS)",
        ],
        cwd=repo,
        env=_environment(repo),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    where, registered = out.stdout.split()
    assert Path(where).is_relative_to(repo) and registered == "True"


def test_the_registry_driven_tests_pass_over_an_algorithm_added_as_the_recipe_says(repo):
    out = _pytest(repo, "-k", f"{NAME} or every_algorithm", *(f"tests/{f}" for f in FILES))
    tail = out.stdout[-5000:] + out.stderr[-2000:]
    assert out.returncode == 0, tail
    passed = re.findall(r"^PASSED (tests/\S+)", out.stdout, flags=re.MULTILINE)
    assert any(f"[{NAME}]" in p for p in passed), tail
    assert any("test_draft_fields_worked_by_hand" in p and NAME in p for p in passed), tail
    skipped = re.findall(r"^SKIPPED \[\d+\] (\S+): (.*)$", out.stdout, flags=re.MULTILINE)
    assert all(NAME in why or "Chromium" in why for _, why in skipped), skipped


def test_the_case_files_and_the_figures_hold_with_it(repo):
    out = _pytest(
        repo,
        "tests/algorithms/test_headers.py::test_every_shipped_algorithm_has_a_worked_case_and_no_other",
        "tests/studies/test_figures.py",
    )
    assert out.returncode == 0, out.stdout[-5000:] + out.stderr[-2000:]


def test_its_case_file_is_what_a_missing_one_asks_for(repo):
    """Without its file, the test that needs it says which file to add."""
    case = repo / "tests" / "algorithms" / "cases" / f"{NAME}.toml"
    kept = case.read_text()
    case.unlink()
    try:
        out = _pytest(repo, "-k", NAME, "tests/algorithms/test_headers.py")
    finally:
        case.write_text(kept)
    assert out.returncode == 1
    assert f"add tests/algorithms/cases/{NAME}.toml" in out.stdout, out.stdout[-3000:]


@pytest.mark.server
def test_the_memory_step_measures_only_the_new_algorithm(repo, tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "simulator", "memory", "--algorithm", NAME, "--users", "1000"]
        + ["--budget", "0.2", "--script-users", "20", "--decisions", "30"]
        + ["--out-dir", str(tmp_path)],
        cwd=repo,
        env=_environment(repo),
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-3000:]
