"""The extension contract: an algorithm added exactly as CONTRIBUTING.md says passes the
registry-driven tests with no other edit.

``tests/toy/`` is such an algorithm - ``toy.lua``, the module ``algorithm.py``, and the one
registry line - kept outside the package and registered through ``SIMULATOR_ALGORITHMS``, so
that it is in the registry before the tests are collected, in the test run and in every command
a test starts. The suite is then run over it in a subprocess: every test whose id names it (the
parametrised ones) and every test marked ``every_algorithm`` (a line each in ``burst``, the
palette, the charts of them all, the registry's own test). The toy offers no optional ability,
so the tests of a batch template and of a bulk kernel must skip it, naming what it lacks.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli, shipped_algorithms

from simulator.algorithms import ALGORITHMS, BatchTemplate, BulkDecider, Limiter, ServerTime

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
#: The registry-driven test files.
FILES = (
    "algorithms/test_registry.py",
    "cli/test_cli.py",
    "charts/test_charts.py",
    "algorithms/test_headers.py",
    "algorithms/test_header_fields.py",
    "algorithms/test_property.py",
    "algorithms/test_batches.py",
    "algorithms/test_costs.py",
    "studies/test_accuracy.py",
)
#: Files in which at least one test must run over the toy itself (by its id).
RUN_OVER_IT = (
    "cli/test_cli.py",
    "charts/test_charts.py",
    "algorithms/test_headers.py",
    "algorithms/test_property.py",
)


def _environment() -> dict[str, str]:
    env = dict(os.environ, SIMULATOR_ALGORITHMS="toy.registered", MPLBACKEND="Agg")
    paths = [str(ROOT), str(TESTS), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    return env


def test_the_toy_is_made_as_contributing_says():
    from toy.algorithm import Toy, ToyRef

    text = (ROOT / "CONTRIBUTING.md").read_text("utf-8")
    assert "SIMULATOR_ALGORITHMS" in text and "tests/toy/" in text
    assert issubclass(Toy, Limiter) and Toy.reference is ToyRef and Toy.scripts == ("toy",)
    assert (TESTS / "toy" / "toy.lua").read_text("utf-8").startswith("--[[")
    assert not any(issubclass(Toy, a) for a in (BatchTemplate, BulkDecider, ServerTime))
    assert "toy" not in ALGORITHMS  # registered only where asked for


@pytest.mark.slow
def test_the_registry_driven_suite_passes_over_a_toy_algorithm():
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA"]
        + ["-k", "toy or every_algorithm", *(f"tests/{f}" for f in FILES)],
        cwd=ROOT,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=1200,
    )
    tail = out.stdout[-4000:] + out.stderr[-2000:]
    assert out.returncode == 0, tail
    passed = re.findall(r"^PASSED (tests/\S+)", out.stdout, flags=re.MULTILINE)
    for name in RUN_OVER_IT:
        assert any(p.startswith(f"tests/{name}") and "toy" in p for p in passed), (name, tail)
    assert {p.split("::")[0] for p in passed} >= {
        "tests/algorithms/test_registry.py",
        "tests/cli/test_cli.py",
    }
    skipped = re.findall(r"^SKIPPED \[\d+\] (\S+): (.*)$", out.stdout, flags=re.MULTILINE)
    reasons = {(where.split(":")[0], why) for where, why in skipped}
    assert ("tests/algorithms/test_batches.py", _batch_reason()) in reasons, skipped
    assert ("tests/algorithms/test_costs.py", "toy has no bulk kernel (BulkDecider)") in reasons, (
        skipped
    )
    assert ("tests/studies/test_accuracy.py", "toy has no bulk kernel (BulkDecider)") in reasons, (
        skipped
    )
    assert all("toy" in why for _, why in skipped), skipped  # nothing else was skipped


def _batch_reason() -> str:
    return "toy packs no batch of its own (no BatchTemplate, no batch): call by call"


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_every_algorithm_says_its_abilities_one_way(name):
    """``uses_server_time`` is what inheriting ServerTime says; a kernel or template is
    offered by defining it (not by setting it to None)."""
    cls = ALGORITHMS[name]
    assert cls.uses_server_time == issubclass(cls, ServerTime)
    assert issubclass(cls, BulkDecider) == (getattr(cls, "bulk", None) is not None)
    assert issubclass(cls, BatchTemplate) == (getattr(cls, "fields", None) is not None)


@pytest.mark.parametrize("named", ["nosuch", "toy.registered, nosuch.module"])
def test_a_module_that_cannot_be_imported_is_one_message(named):
    env = dict(_environment(), SIMULATOR_ALGORITHMS=named)
    out = run_cli("burst", env=env)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
    bad = named.split(",")[-1].strip()
    assert f"SIMULATOR_ALGORITHMS: cannot import {bad!r}" in out.stderr


FIRST_HIT = """--[[ ratelimit
label = "First-hit window"
keys = ["rl:fh:{client}"]
argv = ["limit", "window_ms"]
reply = { allowed = 1, count = 2 }
server_time = true
]]
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
if count > tonumber(ARGV[1]) then return {0, count} end
return {1, count}
"""


@pytest.mark.parametrize("server_time", [True, False])
def test_a_users_script_on_the_servers_clock_is_a_server_time_limiter(tmp_path, server_time):
    from simulator.engine.realtime import server_time_bound
    from simulator.userscripts import register_script

    path = tmp_path / "first_hit.lua"
    text = FIRST_HIT if server_time else FIRST_HIT.replace("server_time = true\n", "")
    path.write_text(text)
    try:
        cls = register_script(path)
        assert issubclass(cls, ServerTime) is server_time and cls.uses_server_time is server_time
        assert ("first_hit" in server_time_bound()) is server_time
        assert not issubclass(cls, BulkDecider)
    finally:
        ALGORITHMS.pop("first_hit", None)


# --- the docs name the real places --------------------------------------------------------------
def test_every_path_contributing_names_exists():
    text = (ROOT / "CONTRIBUTING.md").read_text("utf-8")
    named = set(re.findall(r"`((?:simulator|tests)/[\w/.<>-]+)`", text))
    assert len(named) > 20
    missing = [p for p in sorted(named) if "<" not in p and not (ROOT / p).exists()]
    assert not missing, missing


def test_the_readme_layout_is_the_package_as_it_is():
    text = (ROOT / "README.md").read_text("utf-8")
    layout = text[text.index("## Layout") :]
    layout = layout[: layout.index("\n## ")] if "\n## " in layout else layout
    listed = set(re.findall(r"^(simulator/[\w./]*)", layout, flags=re.MULTILINE))
    package = ROOT / "simulator"
    real = {f"simulator/{p.name}/" for p in package.iterdir() if (p / "__init__.py").exists()}
    real |= {f"simulator/{p.name}" for p in package.glob("*.py") if p.name != "__main__.py"}
    assert listed == real, (sorted(listed - real), sorted(real - listed))


def test_the_readme_table_of_limiters_has_every_shipped_algorithm():
    text = (ROOT / "README.md").read_text("utf-8")
    table = text[text.index("## The limiters") :]
    table = table[: table.index("\n\n", table.index("| name"))]
    rows = set(re.findall(r"^\| `(\w+)` \|", table, flags=re.MULTILINE))
    assert rows == set(shipped_algorithms())
