"""``bench explorer-browser``: its lines have their form, and it leaves nothing running.

The section runs on the real page (Voilà and headless Chromium) with two of each wait that goes
to the kernel and two of each that stays in the page; every wait's line is printed with its
median, 90th percentile, goal (where it has one) and load average; the figures themselves are
not checked (a benchmark asserts no time). A Ctrl-C in the middle of a run still stops the
server, its kernel and the browser; without Chromium the section says in one line what to
install.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from simulator.bench import SECTIONS, browser

needs_chromium = pytest.mark.skipif(
    not browser.CHROMIUM.exists(),
    reason="browser tests need Debian's Chromium: apt-get install -y chromium fonts-dejavu",
)

pytestmark = pytest.mark.browser

FIGURES = r"median \d+\.\d+ m?s, p90 \d+\.\d+ m?s"
LOAD = r"load average [\d.]+, [\d.]+, [\d.]+"
VERDICT = r"goal <= [\d.]+ m?s: (met|NOT met)"


def _running_below_us() -> set[int]:
    """This process's descendants still running (not zombies), by pid."""
    parents, states = {}, {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            states[int(entry.name)], parents[int(entry.name)] = fields[0], int(fields[1])
    found, todo = set(), [os.getpid()]
    while todo:
        parent = todo.pop()
        kids = [p for p, pp in parents.items() if pp == parent]
        found.update(p for p in kids if states[p] != "Z")
        todo += kids
    return found


def _left_over(before: set[int]) -> set[int]:
    """What the run started and is still running, once it has had a minute to end."""
    deadline = time.monotonic() + 60
    while (left := _running_below_us() - before) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def _notebook_stamp() -> int:
    from simulator.explore.serve import NOTEBOOK

    return NOTEBOOK.stat().st_mtime_ns


def test_the_section_is_registered():
    assert SECTIONS["explorer-browser"] is browser.bench_explorer_browser


def test_without_chromium_one_line_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setattr(browser, "CHROMIUM", tmp_path / "no-chromium")
    lines: list[str] = []
    browser.bench_explorer_browser(out=lines.append)
    assert len(lines) == 1
    assert "apt-get install -y chromium" in lines[0], lines


@needs_chromium
def test_the_section_prints_its_figures_and_stops_what_it_started():
    notebook = _notebook_stamp()
    before = _running_below_us()
    lines: list[str] = []
    browser.bench_explorer_browser(out=lines.append, changes=2, steps=2, loads=1)
    assert len(lines) == 13, lines
    head, *waits, after = lines
    assert re.fullmatch(
        rf"explorer-browser: .* headless Chromium at 1280x800, default scenario "
        rf"\(\d+ clients?, [\d,]+ decisions a run\); 2 of each wait that goes to the kernel, "
        rf"2 of each that stays in the page; {LOAD}",
        head,
    ), head
    expected = (  # each wait, its count, and its goal where it has one
        (r"page load with a kernel preheated, to the first timeline drawn \(1\)", True),
        (r"page load as the server starts \(no kernel ready yet; 1\)", True),
        (r"a preset, click to its run drawn \(2\)", False),
        (r"jump to a seam, click to paint \(2\)", False),
        (r"a step, click to paint \(2\)", True),
        (r"a scrub frame, input to paint \(2\)", True),
        (r"the seam view, click to paint \(2\)", False),
        (
            r"a painted request, click on a row's axis to every row decided again and drawn \(2\)",
            True,
        ),
        (r"a dragged limit, let go to every row decided again and drawn \(2\)", True),
        (r"the export, click to its download link \(2\)", False),
        (
            r"the first trace load, the sample access log's preset to its run drawn, the "
            r"progress bar shown \(1\)",
            True,
        ),
    )
    assert len(waits) == len(expected)
    for line, (label, goal) in zip(waits, expected, strict=True):
        verdict = f"; {VERDICT}" if goal else ""
        assert re.fullmatch(rf"{label}: {FIGURES}{verdict}; {LOAD}", line), line
    assert re.fullmatch(rf"after: {LOAD}", after), after
    assert not _left_over(before), "the server, a kernel or the browser is still running"
    assert _notebook_stamp() == notebook, "the committed notebook was written"


@needs_chromium
def test_ctrl_c_during_a_run_stops_the_server_its_kernel_and_the_browser():
    before = _running_below_us()
    started: list[set[int]] = []

    def interrupt(line: str) -> None:  # the first line comes once the page has drawn its run
        started.append(_running_below_us() - before)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        browser.bench_explorer_browser(out=interrupt, changes=2, steps=2, loads=1)
    assert len(started) == 1 and started[0], "nothing was running when Ctrl-C came"
    assert not _left_over(before), "the server, a kernel or the browser is still running"
