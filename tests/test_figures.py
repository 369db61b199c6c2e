"""Figures that must say what the data say: ratios to the limit, the worst case any search found,
a script's steady state with all its keys, and sampled bars marked as sampled."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "simulator", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )


def test_a_buckets_ratio_is_to_the_limit_not_to_its_burst():
    out = run("burst", "--limit", "10", "--param", "burst=100")
    assert out.returncode == 0, out.stderr
    rows = {line.split()[0]: line for line in out.stdout.splitlines()[2:]}
    # 20 admitted in one window of a limit of 10: twice the limit, whatever the burst
    for bucket in ("token_bucket", "gcra"):
        assert rows[bucket].split()[4] == "20", rows[bucket]
        assert "(2.00x limit)" in rows[bucket], rows[bucket]


def test_the_sweeps_burst_summary_divides_by_the_runs_limit():
    from simulator.metrics import burst_summary
    from simulator.model import boundary_burst

    frame = boundary_burst("token_bucket", 10, 60.0, 59.0, 61.0, params={"burst": 100})
    summary = burst_summary(frame, 60_000)  # as the burst sweep calls it: no limit passed
    assert summary.loc["token_bucket", "max_in_window"] == 20
    assert summary.loc["token_bucket", "ratio_to_limit"] == 2.0
