"""``memory --algorithm NAME`` for every registered algorithm, and a palette that offers only
free colours.

The recipe ``python -m simulator memory --full --algorithm NAME`` must end in tables or one
clear line for every algorithm: one the memory study does not weigh (``sliding_counter_all``)
gets its big-key row; one whose call is a command the server lacks (INCREX on Valkey) is refused
with exit status 2. Run here at a tiny size on one embedded server.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.algorithms import ALGORITHMS
from simulator.algorithms.palette import CANDIDATES, MIN_DELTA_E, ROLE_COLOURS, delta_e, suggest
from simulator.backends import RedisBackend
from simulator.backends.embedded import EmbeddedValkey
from simulator.cli import main
from simulator.userscripts import UserScript

pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def server():
    with EmbeddedValkey() as s:
        yield s


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_memory_runs_for_every_algorithm(server, name, tmp_path: Path, capsys):
    args = ["memory", "--backend-url", server.url, "--users", "300", "--budget", "0.1"]
    args += ["--script-users", "50", "--decisions", "10", "--algorithm", name]
    status = main([*args, "--out-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if ALGORITHMS[name].commands and RedisBackend(server.client(), "embedded").lacks(
        ALGORITHMS[name].commands[0], ("rl:probe:{increx}", "PX", "0")
    ):
        assert status == 2
        assert f"{name}: not run" in err
        return
    assert status == 0
    assert (tmp_path / "memory_bigkey.csv").read_text().count(name) >= 1
    if ALGORITHMS[name].memory is None:
        assert f"{name} has no per-user layout" in err
    else:
        assert (tmp_path / "memory_per_user_300.csv").exists()


def test_no_candidate_is_a_colour_a_shipped_algorithm_took():
    for colour in CANDIDATES:
        for name, cls in ALGORITHMS.items():
            if issubclass(cls, UserScript):  # one registered by another test: not shipped
                continue
            assert delta_e(colour, cls.colour) >= MIN_DELTA_E, (colour, name)


def test_suggest_beside_the_roles_alone_offers_no_algorithm_s_colour():
    offered = suggest(ROLE_COLOURS.values())
    assert offered is not None
    assert all(delta_e(offered, cls.colour) >= MIN_DELTA_E for cls in ALGORITHMS.values())
    assert suggest([]) == offered  # the roles are taken whether named or not
