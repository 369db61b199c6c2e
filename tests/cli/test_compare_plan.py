"""``compare`` as a plan gate: the coverage first, the pick by its rule, the legend, the other
limits, and the exit status of ``--budget`` (1 over it, 0 within, 2 for a bad one); the report."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pandas as pd
import pytest
from conftest import ROOT, run_cli, run_main
from conftest import one_message as refused

SPECS = (
    "--baseline",
    "fixed_window:limit=3,window=2",
    "--candidate",
    "sliding_log:limit=3,window=2",
    "--backend",  # the report without the default's line (tests/backends/ hold the choice's)
    "fakeredis",
)


def trace(tmp_path: Path) -> Path:
    """Client a sends four at once every 1.5 s (refused either way), b once a second."""
    rows = [(i * 1500, "a") for i in range(20) for _ in range(4)] + [
        (i * 1000, "b") for i in range(30)
    ]
    path = tmp_path / "t.csv"
    pd.DataFrame(sorted(rows), columns=["t_ms", "client"]).to_csv(path, index=False)
    return path


def one_message(done: subprocess.CompletedProcess, *needles: str) -> None:
    """The shared refusal check, and nothing on stdout: a bad plan is refused before a run."""
    refused(done, *needles)
    assert done.stdout == "", done.stdout


def test_over_the_budget_exits_1_and_writes_the_report(tmp_path):
    report, limits = tmp_path / "plan.md", tmp_path / "limits.csv"
    done = run_main(
        "compare", trace(tmp_path), *SPECS, "--budget", "flips_to_refused=0", "--report",
        report, "--limits", "2..4:1", "--limits-out", limits,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("coverage: requests in 100.00 % of the")
    assert "the columns (--out writes them under the names after each heading):" in done.stdout
    assert "  →refused      flips_to_refused: requests the baseline admitted" in done.stdout
    assert "Rule: Of keeping the baseline and each candidate" in done.stdout
    assert "Pick: switch to sliding_log:limit=3,window=2" in done.stdout
    assert "budget flips_to_refused=0: over: flips_to_refused" in done.stdout
    assert "sliding_log:limit=3,window=2 at each limit:" in done.stdout
    text = report.read_text()
    for heading in ("## The question", "## The backend", "## Coverage", "## The scorecard",
                    "## The clients most affected", "## At other limits", "## The pick",
                    "## The budget"):  # fmt: skip
        assert heading in text
    assert "**over**: flips_to_refused" in text
    assert "\nbackend fakeredis (named: --backend fakeredis)\n" in text
    table = pd.read_csv(limits)
    assert list(table["limit"]) == [2, 3, 4, 2, 3, 4]
    assert table.columns[:5].tolist() == ["configuration", "role", "algorithm", "window_s", "limit"]


def test_within_the_budget_exits_0(tmp_path):
    done = run_main("compare", trace(tmp_path), *SPECS, "--budget", "flips_to_refused=100%")
    assert done.returncode == 0, done.stderr
    assert "budget flips_to_refused=100%: the pick is within it" in done.stdout


def test_keeping_the_baseline_is_within_any_budget(tmp_path):
    done = run_main(
        "compare", trace(tmp_path), "--baseline", "fixed_window:limit=50,window=2",
        "--candidate", "sliding_log:limit=50,window=2", "--budget", "clients_affected=0",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Pick: keep the baseline fixed_window:limit=50,window=2" in done.stdout


@pytest.mark.parametrize(
    ("budget", "needle"),
    [
        ("flipz=1", "unknown field 'flipz'"),
        ("clients_affected=lots", "'lots' is not a number"),
        ("most_in_window_ratio=1%", "takes no %"),
    ],
)
def test_a_bad_budget_is_one_message_and_exit_2(tmp_path, budget, needle):
    report = tmp_path / "plan.md"
    done = run_main("compare", trace(tmp_path), *SPECS, "--budget", budget, "--report", report)
    one_message(done, "--budget", needle)
    assert not report.exists()


def test_bad_limits_are_one_message_and_exit_2(tmp_path):
    one_message(run_main("compare", trace(tmp_path), *SPECS, "--limits", "5,x"), "--limits", "'x'")


def test_limits_out_without_limits_is_one_message(tmp_path):
    done = run_main("compare", trace(tmp_path), *SPECS, "--limits-out", tmp_path / "l.csv")
    one_message(done, "--limits-out", "give --limits too")


@pytest.mark.slow
def test_the_sample_log_at_20_per_minute_says_its_coverage_first_and_keeps_the_baseline():
    done = run_cli(
        "compare", ROOT / "data" / "traces" / "apache_combined_sample.log", "--format", "clf",
        "--baseline", "fixed_window:limit=20,window=60",
        "--candidate", "sliding_counter:limit=20,window=60",
        "--candidate", "sliding_log:limit=20,window=60",
        "--budget", "flips_to_refused=0.1%,clients_affected=5",
        "--backend", "fakeredis",  # named: no backend line above the coverage
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()[:2]
    assert first == (
        "coverage: requests in 1.69 % of the 83 h span (84 of 4,981 minutes hold any): "
        "requests only in minute :05 of each hour"
    )
    assert second.startswith("warning: the windows (up to 60 s) are as long as the covered")
    assert "Pick: keep the baseline fixed_window:limit=20,window=60" in done.stdout
