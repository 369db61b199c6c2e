"""Tables for the notebook column."""

from __future__ import annotations

import pandas as pd

from simulator.display import compact


def test_compact_puts_headers_in_words_and_keeps_the_values():
    frame = pd.DataFrame(
        {"decided_differently_pct": [0.12345, 31.4], "clients": [1500, 3]},
        index=pd.Index(["poisson_under", "zipf"], name="family_name"),
    )
    html = compact(frame, 2).to_html()
    assert "decided differently pct" in html and "decided_differently_pct" not in html
    assert "family name" in html
    assert "0.12" in html and "31.40" in html and "1,500" in html
    assert "white-space: normal" in html  # headers wrap instead of widening the table
    assert frame.columns.tolist() == ["decided_differently_pct", "clients"]  # the frame as it was


def test_compact_can_trim_trailing_zeros_so_a_count_reads_as_one():
    frame = pd.DataFrame({"count": [1.0, 98.333333, float("nan")], "t_ms": [61_000, 61_000, 0]})
    html = compact(frame, 3, trim=True).to_html()
    assert ">1<" in html and ">98.333<" in html and "1.000" not in html
    assert "61,000" in html
    assert ">–<" in html and "nan" not in html  # a figure nobody published, not a nan
