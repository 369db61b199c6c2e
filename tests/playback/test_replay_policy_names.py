"""A replay given a Limiter class instead of a name writes the algorithm's name, not the
class's repr, into every row (and into the run's id)."""

from __future__ import annotations

import pandas as pd

from simulator import replay
from simulator.algorithms import ALGORITHMS


def test_a_limiter_class_names_the_frame_as_its_name_would():
    trace = pd.DataFrame({"t_ms": [0, 10, 20, 30], "client": ["a", "a", "b", "a"]})
    by_name = replay(trace, "fixed_window", 2, 1000)
    by_class = replay(trace, ALGORITHMS["fixed_window"], 2, 1000)
    assert set(by_class["algorithm"]) == {"fixed_window"}
    pd.testing.assert_frame_equal(by_class, by_name)


def test_a_scenario_given_a_limiter_class_keeps_its_name():
    from simulator import Poisson, Scenario, simulate

    clients = (Poisson("a", rate_per_s=5.0),)
    by_class = Scenario(ALGORITHMS["gcra"], 3, 1000, 2000.0, clients, seed=1)
    by_name = Scenario("gcra", 3, 1000, 2000.0, clients, seed=1)
    assert by_class == by_name and by_class.algorithm == "gcra"
    assert set(simulate(by_class)["algorithm"]) == {"gcra"}


def test_anything_but_a_name_or_a_limiter_class_is_refused_naming_the_field():
    import pytest

    from simulator import ConfigError, Scenario

    with pytest.raises(ConfigError, match=r"Scenario\.algorithm: must be an algorithm's name"):
        Scenario(42, 3, 1000, 2000.0)  # type: ignore[arg-type]
