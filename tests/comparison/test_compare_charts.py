"""compare's charts: a candidate that flips nothing gets a panel that says so, not empty axes;
the clients' peaks are drawn with each limit across them."""

from __future__ import annotations

import pandas as pd

from simulator.charts.compare import (
    client_flips_figure,
    client_peaks_figure,
    flips_over_time_figure,
    scorecard_figure,
)
from simulator.comparison import compare
from simulator.comparison.limits import compare_limits


def test_panels_without_flips_say_so_and_the_peaks_carry_each_limit():
    trace = pd.DataFrame({"t_ms": [i * 400 for i in range(60)], "client": ["a", "b", "c"] * 20})
    card, clients, _, peaks = compare_limits(
        trace, "fixed_window:limit=30,window=60", ["sliding_log:limit=30,window=60"], [2, 30]
    )
    assert card["flips_to_refused"].sum() == 0 and not len(clients)
    for fig in (flips_over_time_figure(card), client_flips_figure(card, clients)):
        (ax,) = fig.axes
        assert any("no flips" in t.get_text() for t in ax.texts)
        assert not ax.axison  # no axes that would suggest a scale
    panels = {ax.get_title(): ax for ax in scorecard_figure(card).axes if ax.get_visible()}
    said = [t.get_text() for t in panels["flips to refused"].texts]
    assert said == ["0 for every configuration"] and not panels["flips to refused"].patches
    # one candidate with flips beside one without: the time axis stays under the one drawn
    busy, _ = compare(trace, "fixed_window:limit=30,window=60",
                      ["sliding_log:limit=30,window=60", "sliding_log:limit=2,window=60"])  # fmt: skip
    quiet, drawn = flips_over_time_figure(busy).axes
    assert not quiet.axison and drawn.axison and drawn.get_xticks().size
    assert drawn.get_xlabel() == "seconds since the trace's first request"
    fig = client_peaks_figure(peaks, [2, 30])
    labels = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert "limit 2: 3 clients above" in labels and "limit 30: 0 clients above" in labels
    assert fig.axes[0].get_title(loc="left").startswith("fixed_window:limit=30,window=60")
