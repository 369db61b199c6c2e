"""Compare two folders of chart tables value for value: ``python tools/compare_tables.py A B``.

Every ``*.csv`` in A must exist in B with the same columns and the same values (numbers equal to
1e-9 relative); prints one line per table and exits 1 if any differs. ``make check-tables``
regenerates the tables into a temporary folder and compares them with the committed ``data/``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd


def compare(a: Path, b: Path) -> int:
    bad = 0
    for left in sorted(a.glob("*.csv")):
        right = b / left.name
        if not right.exists():
            print(f"{left.name}: missing in {b}")
            bad += 1
            continue
        x, y = pd.read_csv(left), pd.read_csv(right)
        try:
            pd.testing.assert_frame_equal(x, y, check_exact=False, rtol=1e-9, atol=0)
        except AssertionError as exc:
            print(f"{left.name}: differs: {str(exc).splitlines()[0]}")
            bad += 1
        else:
            print(f"{left.name}: same ({len(x)} rows, {len(x.columns)} columns)")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        sys.exit(2)
    sys.exit(compare(Path(sys.argv[1]), Path(sys.argv[2])))
