"""A table too wide for the output column comes in a scroll box that column's width."""

from __future__ import annotations

import pandas as pd

from simulator.display import COLUMN_PX, compact


def test_a_wide_table_scrolls_inside_the_column():
    wide = pd.DataFrame({f"a_long_column_name_{i}": [1.5, 2.25] for i in range(20)})
    html = compact(wide, 2, scroll=True).data
    assert html.startswith(
        f'<div class="workbench-scroll" style="overflow-x: auto; max-width: {COLUMN_PX}px;">'
    )
    assert "a long column name 19" in html and "2.25" in html
