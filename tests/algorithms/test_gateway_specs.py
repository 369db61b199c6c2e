"""A gateway's configuration as a compare SPEC: its own units and flags, one message per mistake.

``nginx:rate=10r/s,burst=20,nodelay`` reads as nginx's config does; a bad value is one
ConfigError naming the SPEC, the field and the forms it takes, and on the command line exit
status 2 with that line and no traceback. A candidates file takes the same fields as a table.
The two commands of docs/gateways.md run (marked ``slow``).
"""

from __future__ import annotations

import os

import pytest

from simulator.algorithms import ALGORITHMS
from simulator.algorithms.gateways import GATEWAYS
from simulator.checks import ConfigError
from simulator.comparison.spec import load_candidates, parse_spec
from tests.conftest import ROOT, run_cli, run_main

SAMPLE = ROOT / "data" / "traces" / "apache_combined_sample.log"


@pytest.fixture(autouse=True)
def registry_as_it_was():
    """Naming a gateway registers it; the rest of the suite must not see it."""
    before = dict(ALGORITHMS)
    yield
    for name in [n for n in dict.keys(ALGORITHMS) if n not in before]:
        del ALGORITHMS[name]


@pytest.mark.parametrize(
    ("spec", "field", "forms"),
    [
        ("nginx:rate=10", "rate", "10r/s or 600r/m"),
        ("nginx:rate=10r/s,burst=lots", "burst", "whole number"),
        ("nginx:rate=10r/s,nodelay=1", "nodelay", "write it bare"),
        ("nginx:rate=10r/s,nodelay,delay=2", "nodelay or delay=N", "not both"),
        ("traefik:average=6,period=1x", "period", "500ms, 1s"),
        ("envoy:max_tokens=10,fill_interval=20ms", "fill_interval", "at least 50 ms"),
        ("kong:month=10", "month", "second, minute, hour or day"),
        ("spring:replenish=10", "'replenish'", "replenishRate"),
    ],
)
def test_each_bad_value_is_one_message_naming_the_field_and_the_forms(spec, field, forms):
    with pytest.raises(ConfigError) as caught:
        parse_spec(spec, what="candidate")
    message = str(caught.value)
    assert message.startswith(f"candidate {spec!r}: ") and field in message and forms in message


def test_the_spec_says_the_configuration_back_in_plain_words():
    assert (
        parse_spec("traefik:average=6,period=1m,burst=1")
        .describe()
        .startswith("one request per 10 s, a burst of 1")
    )
    assert (
        parse_spec("spring:replenishRate=10,burstCapacity=20")
        .describe()
        .startswith("20 requests at once, then 10 per s")
    )
    assert "per clock minute and 1000 requests per clock hour" in (
        parse_spec("kong:minute=100,hour=1000").describe()
    )


def test_a_candidates_file_takes_a_gateway_table(tmp_path):
    path = tmp_path / "candidates.toml"
    path.write_text(
        '[[candidate]]\nalgorithm = "nginx"\nrate = "10r/s"\nburst = 20\nnodelay = true\n'
    )
    (got,) = load_candidates(path)
    assert (got.name, got.limit, got.window_ms) == ("nginx:rate=10r/s,burst=20,nodelay", 10, 1000)
    assert dict(got.params) == {"burst": 20, "delay": 20}  # nodelay: never held


def test_on_the_command_line_a_bad_value_is_exit_2_with_one_line():
    done = run_main(
        "compare", SAMPLE, "--format", "clf", "--baseline", "fixed_window:limit=20,window=60",
        "--candidate", "nginx:rate=1r/s,burst=5", "--candidate", "traefik:average=6,period=1 minute",
    )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "period must be a duration such as 500ms, 1s" in done.stderr


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ("nginx:rate=10r/s,burst=²", "burst"),  # str.isdigit takes a superscript two
        ("nginx:rate=10r/s,burst=١٢", "burst"),  # and Arabic-Indic digits, as 12
        ("nginx:rate=١٠r/s", "rate"),
        ("traefik:average=6,period=١s", "period"),
        ("kong:minute=1234567890123456", "minute"),  # 16 digits: past RFC 9651's 15
        ("nginx:rate=10r/s,burst=" + "1" * 5000, "burst"),  # int() refuses past 4300 digits
        ("kong:minute=" + "9" * 5000, "minute"),
        ("nginx:rate=" + "1" * 5000 + "r/s", "rate"),
        ("envoy:max_tokens=3,fill_interval=" + "1" * 5000 + "ms", "fill_interval"),
    ],
)
def test_a_number_is_ascii_digits_at_most_15_and_a_long_one_is_not_echoed_whole(spec, field):
    with pytest.raises(ConfigError) as caught:
        parse_spec(spec)
    message = str(caught.value)
    assert f": {field} must be " in message and len(message) < 400


def test_a_5000_digit_value_on_the_command_line_is_exit_2_with_one_short_line():
    done = run_main(
        "compare", SAMPLE, "--format", "clf", "--baseline", "fixed_window:limit=20,window=60",
        "--candidate", "nginx:rate=1r/s,burst=" + "7" * 5000,
    )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "burst must be a whole number" in done.stderr and len(done.stderr) < 1000


@pytest.mark.slow
def test_compare_runs_gateway_candidates_on_the_sample_log():
    done = run_cli(
        "compare", SAMPLE, "--format", "clf", "--baseline", "fixed_window:limit=20,window=60",
        "--candidate", "nginx:rate=1r/s,burst=5", "--candidate", "traefik:average=6,period=1m,burst=1",
        "--backend", "fakeredis",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = [
        line.split()[0]
        for line in done.stdout.splitlines()
        if line.startswith(("nginx", "traefik"))
    ]
    assert rows == ["nginx:rate=1r/s,burst=5", "traefik:average=6,period=1m,burst=1"]


@pytest.mark.slow
def test_burst_prints_a_row_per_gateway_when_they_are_registered():
    env = {
        **os.environ,
        "SIMULATOR_ALGORITHMS": "simulator.algorithms.gateways.registered",
    }
    done = run_cli(
        "burst", "--limit", "10", "--window", "1", "--first", "0.9", "--second", "1.1", env=env
    )
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line.split()[1] for line in done.stdout.splitlines()[2:]}
    # at 10 per s: nginx without a burst and Traefik's bucket of 1 pass one of each burst;
    # Spring's, Envoy's and Kong's defaults (a bucket or window of the limit) pass both bursts
    assert {name: rows[name] for name in GATEWAYS} == {
        "nginx": "2", "traefik": "2", "spring": "20", "envoy": "20", "kong": "20"
    }  # fmt: skip
