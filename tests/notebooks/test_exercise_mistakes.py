"""The mistakes lesson 06 shows are the ones ``check`` names: the shipped zero-reply fixed window
(``notebooks/exercises/mistakes/fixed_window_zeros.lua``, right decisions, ``{allowed, 0, 0, 0,
0}`` for the rest) exits 1 from the command line, naming ``count`` at the very first request."""

from __future__ import annotations

from pathlib import Path

from conftest import run_main

ROOT = Path(__file__).resolve().parents[2]
ZEROS = ROOT / "notebooks" / "exercises" / "mistakes" / "fixed_window_zeros.lua"


def test_check_on_the_shipped_zero_reply_exits_1_naming_count_at_the_first_request():
    assert "return {allowed, 0, 0, 0, 0}" in ZEROS.read_text()
    done = run_main("check", ZEROS, "--as", "fixed_window")
    assert done.returncode == 1, done.stderr
    first = done.stdout.splitlines()[0]
    assert "request 1 at t_ms=59000, client 'c': the first field that differs is count: " in first
    assert "expected 1, got 0; both admitted it" in first
    assert "Traceback" not in done.stderr
