"""Every field of a production setup is bounded before anything is made: a number that would run
for minutes or fill the memory (a billion app servers) is one ConfigError naming the field and
its range, and a study given nothing to run says so in one message."""

from __future__ import annotations

import dataclasses

import pytest

from simulator.algorithms import EchoMQ, SlidingLog
from simulator.checks import ConfigError
from simulator.studies import production as prod
from simulator.studies.production.common import MAX_SERVERS, MAX_STUDY_MS
from simulator.studies.production.skew import skew_run

SETUPS = [
    prod.OutageSetup,
    prod.CacheSetup,
    prod.SkewSetup,
    prod.PolicySetup,
    prod.RefusalSetup,
    prod.NativeSetup,
]
INT_FIELDS = [
    (setup, f.name) for setup in SETUPS for f in dataclasses.fields(setup) if f.type in ("int", int)
]


@pytest.mark.parametrize("setup, field", INT_FIELDS, ids=lambda x: getattr(x, "__name__", x))
def test_every_integer_field_past_its_range_is_one_message_naming_the_field(setup, field):
    with pytest.raises(ConfigError, match=rf"{setup.__name__}\.{field}: must be an integer from"):
        setup(**{field: 10**30})


@pytest.mark.parametrize("setup", [prod.OutageSetup, prod.CacheSetup, prod.SkewSetup])
def test_a_billion_app_servers_is_refused_at_once(setup):
    with pytest.raises(
        ConfigError, match=rf"servers: must be an integer from 1 to {MAX_SERVERS:,}"
    ):
        setup(servers=10**9)
    setup(servers=MAX_SERVERS)  # the most is still a setup


def test_a_window_of_more_than_a_year_is_refused_with_its_range():
    with pytest.raises(ConfigError, match=rf"SkewSetup\.window_ms: .* to {MAX_STUDY_MS:,}"):
        prod.SkewSetup(window_ms=MAX_STUDY_MS + 1)


@pytest.mark.parametrize("setup", [prod.NativeSetup], ids=["users"])
def test_a_billion_users_is_refused_at_once(setup):
    with pytest.raises(ConfigError, match=r"NativeSetup\.users"):
        setup(users=10**9)


@pytest.mark.parametrize(
    "run, field",
    [
        (lambda: prod.skew_study(prod.SkewSetup(), ()), r"skew_study\.algorithms"),
        (lambda: prod.skew_study(prod.SkewSetup(), ["sliding_log"], ()), r"skew_study\.skews_ms"),
        (lambda: prod.refusals_run(prod.RefusalSetup(), ()), r"refusals_run\.multiples"),
    ],
)
def test_a_study_given_nothing_to_run_says_so_in_one_message(run, field):
    with pytest.raises(ConfigError, match=rf"{field}: give at least one, got none"):
        run()


@pytest.mark.parametrize(
    "run",
    [
        lambda: prod.deny_cache_run(prod.CacheSetup(), "nope"),
        lambda: prod.lease_run(prod.CacheSetup(), 2, "nope"),
        lambda: skew_run(prod.SkewSetup(), "nope", 0),
        lambda: prod.operations(prod.NativeSetup(requests=10), ("nope",)),
    ],
)
def test_an_unknown_algorithm_is_one_message_naming_the_known(run):
    with pytest.raises(ConfigError, match=r"unknown 'nope'; known: .*sliding_log"):
        run()


def test_a_study_takes_the_limiter_class_as_well_as_its_name():
    setup = prod.CacheSetup(duration_ms=5_000)
    by_class = prod.deny_cache_run(setup, SlidingLog)
    by_name = prod.deny_cache_run(setup, "sliding_log")
    assert by_class.equals(by_name)
    ops = prod.operations(prod.NativeSetup(requests=20), (EchoMQ,))
    assert ops["algorithm"].tolist() == ["echomq"]


def test_a_run_with_no_request_summarises_to_zeros():
    setup = prod.OutageSetup(rate_per_s=1e-6)
    frame = prod.outage_run(setup)
    summary = prod.outage_summary(frame, setup)
    assert summary["requests"].sum() == 0
