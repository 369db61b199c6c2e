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
