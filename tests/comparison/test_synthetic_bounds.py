"""The synthetic log's every numeric input is bounded up front: one message naming the option,
exit 2, no file written, instead of a traceback (or a MemoryError) in the middle of it."""

from __future__ import annotations

import pytest

from simulator.comparison.synthetic import main


@pytest.mark.parametrize(
    "args, option",
    [
        (["--rate", "1e-300"], "--rate"),
        (["--rate", "inf"], "--rate"),
        (["--bursts-per-hour", "1e12"], "--bursts-per-hour"),
        (["--bursts-per-hour", "3600", "--burst", "100000"], "--bursts-per-hour"),
        (["--seed", "-1"], "--seed"),
        (["--seed", str(2**64)], "--seed"),
        (["--zipf", "nan"], "--zipf"),
        (["--amplitude", "1"], "--amplitude"),
        (["--clients", "0"], "--clients"),
        (["--burst", "0"], "--burst"),
        (["--lines", "0"], "--lines"),
        (["--lines", str(10**11)], "--lines"),
    ],
)
def test_a_number_out_of_bounds_is_one_message_naming_its_option(tmp_path, capsys, args, option):
    out = tmp_path / "x.log"
    argv = [str(out), "--lines", "100", *args]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"error: {option}: " in err[0], err
    assert not out.exists()


def test_the_edges_inside_the_bounds_write_their_lines(tmp_path):
    out = tmp_path / "x.csv"
    argv = [str(out), "--lines", "300", "--format", "csv", "--seed", str(2**64 - 1)]
    assert main([*argv, "--amplitude", "0.99", "--bursts-per-hour", "0"]) == 0
    assert len(out.read_text().splitlines()) == 301
