"""The registry drives everything: an algorithm added in one place shows up everywhere.

A throwaway algorithm - a counter that never resets, as a tiny Lua script and its reference - is
registered inside the test and nowhere else. It must appear in the CLI's choices and `burst`, in
the palette and labels, in the scripts a backend loads, and pass the differential property test.
"""

from __future__ import annotations

import pytest
import test_property
from conftest import ForeverRef

from simulator import cli
from simulator.algorithms import (
    ALGORITHMS,
    REFERENCES,
    script_names,
    scripts,
)
from simulator.backends import FakeRedisBackend
from simulator.charts import LABELS, PALETTE, order
from simulator.engine.run import boundary_burst

pytestmark = pytest.mark.every_algorithm  # the registry as a whole, whatever else it holds


def test_it_is_in_the_cli_choices_and_help(forever, capsys):
    assert cli.args.algorithm_name("forever") == "forever"
    with pytest.raises(SystemExit):
        cli.main(["replay", "--help"])
    assert "forever" in capsys.readouterr().out


def test_it_is_on_the_palette_and_in_the_scripts(forever):
    assert PALETTE["forever"] == "#9c9ede" and LABELS["forever"] == "Never resets (test)"
    assert order()[-1] == "forever"
    assert "forever" in script_names() and REFERENCES["forever"] is ForeverRef
    backend = FakeRedisBackend(lambda: 0)
    sha = scripts.load("forever").sha
    assert backend.client.script_exists(sha) == [False]  # a backend loads nothing by itself
    ALGORITHMS["forever"](backend, 1, 1000)  # the limiter hands its scripts over
    assert backend.client.script_exists(sha) == [True]


def test_it_runs_in_the_burst_study(forever, capsys):
    assert cli.main(["burst", "--limit", "10", "--window", "1", "--first", "0.5"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("forever"))
    assert line.split()[1:4] == ["10", "of", "20"]  # never resets: 10 of the two bursts of 10
    frame = boundary_burst("forever", 3, 1.0, 0.5, 1.5)
    assert frame["allowed"].tolist() == [True] * 3 + [False] * 3


def test_it_passes_the_property_test(forever):
    test_property.test_lua_equals_reference(name="forever")
    for window_ms in (1000, 60_000):
        test_property.test_lua_equals_reference_at_window_seams("forever", window_ms)


def test_its_own_parameter_is_declared_validated_and_reaches_the_script(forever, capsys):
    from simulator.checks import ConfigError
    from simulator.engine.run import simulate
    from simulator.engine.scenario import BurstAt, Scenario

    def scenario(**params: object) -> Scenario:
        return Scenario("forever", 10, 1000, 5000, (BurstAt("u", n=8, at_s=(0, 2)),), params=params)

    assert dict(scenario().params) == {"allowance": 10}  # the default, from the limit
    assert simulate(scenario(allowance=3))["allowed"].sum() == 3
    assert simulate(scenario())["allowed"].sum() == 10
    with pytest.raises(ConfigError, match=r"Scenario\.params\['allowance'\]"):
        scenario(allowance=0)
    with pytest.raises(ConfigError, match="unknown parameter 'nosuch'.*allowance"):
        scenario(nosuch=2)
    assert cli.main(["burst", "--limit", "10", "--window", "1", "--param", "allowance=3"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("forever"))
    assert line.split()[1:4] == ["3", "of", "20"]
    assert cli.main(["burst", "--param", "nosuch=1"]) == 2
    err = capsys.readouterr().err
    assert "no algorithm has such a parameter (declared: " in err and "allowance" in err
