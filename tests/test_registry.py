"""The registry drives everything: an algorithm added in one place shows up everywhere.

A throwaway algorithm - a counter that never resets, as a tiny Lua script and its reference - is
registered inside the test and nowhere else. It must appear in the CLI's choices and `burst`, in
the palette and labels, in the scripts a backend loads, and pass the differential property test.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
import test_property

from simulator import cli
from simulator.algorithms import (
    ALGORITHMS,
    REFERENCES,
    Limiter,
    Param,
    Reference,
    script_names,
    scripts,
)
from simulator.backends import FakeRedisBackend
from simulator.charts import LABELS, PALETTE, order
from simulator.engine.run import boundary_burst
from simulator.keys import hash_tag
from simulator.records import Decision

pytestmark = pytest.mark.every_algorithm  # the registry as a whole, whatever else it holds

FOREVER_LUA = """--[[
forever: a counter that never resets (a throwaway algorithm for the registry test).
KEYS[1] the client's counter; ARGV[1] now_ms (unused), ARGV[2] window_ms (unused),
ARGV[3] allowance: requests a client gets in all, ARGV[4] cost of this request
Returns {allowed 0|1, count, limit, remaining, reset_ms (-1: never), retry_after_ms (-1: never)}
]]
local limit = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local count = tonumber(redis.call('GET', KEYS[1]) or '0')
if count + cost <= limit then
  redis.call('SET', KEYS[1], count + cost)
  return {1, count + cost, limit, limit - count - cost, -1, 0}
end
return {0, count, limit, 0, -1, -1}
"""


#: Its own parameter: how many requests a client gets in all (default: the limit).
ALLOWANCE = (Param("allowance", default=lambda limit, window_ms: limit, minimum=1, integer=True),)


class ForeverRef(Reference):
    name = "forever"
    params_declared = ALLOWANCE

    def __init__(self, limit: int, window_ms: int, **params: object) -> None:
        super().__init__(limit, window_ms, **params)
        self.counts: dict[str, int] = {}

    def decide(self, client: str, now_ms: int, cost: int = 1) -> Decision:
        count, cap = self.counts.get(client, 0), int(self.params["allowance"])
        if count + cost <= cap:
            self.counts[client] = count + cost
            return Decision(True, float(count + cost), cap, cap - count - cost, -1, 0)
        return Decision(False, float(count), cap, 0, -1, -1)


class Forever(Limiter):
    name = "forever"
    label = "Never resets (test)"
    colour = "#9c9ede"
    scripts = ("forever",)
    reference = ForeverRef
    params_declared = ALLOWANCE

    def keys(self, client: str, now_ms: int) -> Sequence[str]:
        return (f"rl:forever:{hash_tag(client)}",)

    def args(self, client: str, now_ms: int, cost: int = 1) -> Sequence[object]:
        return (now_ms, self.window_ms, int(self.params["allowance"]), cost)


@pytest.fixture
def forever(monkeypatch):
    monkeypatch.setitem(scripts._ADDED, "forever", FOREVER_LUA)
    scripts.load.cache_clear()
    monkeypatch.setitem(ALGORITHMS, "forever", Forever)
    yield Forever
    scripts.load.cache_clear()


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
