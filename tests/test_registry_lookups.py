"""Names are looked up in the registry at the edges, and a Policy or a class goes inward.

The count is the one CONTRIBUTING.md ("Registry lookups stay at the edges") states, made the
same way: the lines of ``simulator/`` that index ``ALGORITHMS``, ``REFERENCES`` or ``BULK``
(``[`` or ``.get(``) or call ``command_names(``, outside the edges (the CLI, the explorer and
its settings, the registry and ``policy.py`` themselves), comment lines left out. What is below
an edge takes what the edge resolved; a new lookup there is one more line here.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: ``grep -rnE`` of CONTRIBUTING.md, as a Python pattern.
LOOKUP = re.compile(r"(ALGORITHMS|REFERENCES|BULK)(\[|\.get\()|command_names\(")
#: Where names come in, and the registry itself: not counted.
EDGES = (
    "simulator/cli/",
    "simulator/explore/",
    "simulator/charts/explorer.py",
    "simulator/algorithms/__init__.py",
    "simulator/policy.py",
)
#: The most lookups allowed below the edges: the three there are (the goal was at most twelve).
#: A new one fails here; raise this only with the reason written beside it.
CEILING = 3


def lookups_below_the_edges(root: Path = ROOT) -> list[str]:
    """Each counted line as ``path:line: text``, as grep prints it."""
    found = []
    for path in sorted((root / "simulator").rglob("*.py")):
        name = path.relative_to(root).as_posix()
        if name.startswith(EDGES):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if LOOKUP.search(line) and not line.lstrip().startswith("#"):
                found.append(f"{name}:{number}: {line.strip()}")
    return found


def test_registry_lookups_below_the_edges_stay_few():
    found = lookups_below_the_edges()
    assert len(found) <= CEILING, (
        f"{len(found)} registry lookups by name below the edges (at most {CEILING}): pass the "
        "Policy or the Limiter class resolved where the name came in\n" + "\n".join(found)
    )


def test_the_count_sees_a_lookup_and_skips_a_comment(tmp_path):
    room = tmp_path / "simulator" / "room"
    room.mkdir(parents=True)
    (room / "a.py").write_text(
        "cls = ALGORITHMS[name]\n"
        "    # ALGORITHMS[name] in a comment\n"
        "ref = REFERENCES.get(name)\n"
        "bulk = BULK[name]; calls = command_names(name)\n"
        "names = list(ALGORITHMS)\n"
    )
    cli = tmp_path / "simulator" / "cli"
    cli.mkdir()
    (cli / "b.py").write_text("cls = ALGORITHMS[args.algorithm]\n")
    found = lookups_below_the_edges(tmp_path)
    assert [line.split(":")[1] for line in found] == ["1", "3", "4"]
