"""The gateways' limiters against the examples in each gateway's own documentation.

Each expectation is written from what the gateway documents (docs/gateways.md quotes it), not
from the script: nginx's second request 5 ms after the first at 10r/s is refused, and its
``burst=20`` queue forwards one every 100 ms; Traefik's ``average=6, period=1m`` is one request
per 10 s; Spring's ``replenishRate=10, burstCapacity=20`` is 20 at once and then 10 a second;
Envoy adds ``tokens_per_fill`` at each tick and nothing between; Kong refuses when any of its
windows is used up, and a refused request counts in none. Then the script against its
reference on random timelines, on the fake server and on Valkey (the SPEC grammar and the
commands are test_gateway_specs.py's).
"""

from __future__ import annotations

import random
import re

import pytest

from simulator.algorithms import ALGORITHMS
from simulator.algorithms.gateways import GATEWAYS
from simulator.algorithms.gateways.nginx import MAX_REQUESTS, NginxLimitReqRef
from simulator.checks import ConfigError
from simulator.comparison.spec import parse_spec


@pytest.fixture(autouse=True)
def registry_as_it_was():
    """Naming a gateway registers it; the rest of the suite must not see it."""
    before = dict(ALGORITHMS)
    yield
    for name in [n for n in dict.keys(ALGORITHMS) if n not in before]:
        del ALGORITHMS[name]


def limiter(spec: str, clock, fake):
    candidate = parse_spec(spec)
    made = candidate.policy.limiter(fake)

    def decide(t_ms: int, client: str = "a", cost: int = 1):
        clock.t_ms = t_ms
        return made.decide(client, t_ms, cost)

    return decide


def test_the_default_list_stays_the_ten_until_a_gateway_is_named():
    assert not set(dict.keys(ALGORITHMS)) & set(GATEWAYS)
    assert "nginx" in ALGORITHMS and ALGORITHMS["kong"].name == "kong"
    assert list(ALGORITHMS)[-2:] == ["nginx", "kong"]  # after the built-ins, as named


# --- nginx: "rate=10r/s", "burst=20", "nodelay" ---------------------------------------------------
def test_nginx_without_a_burst_refuses_a_second_request_5_ms_later(clock, fake):
    decide = limiter("nginx:rate=10r/s", clock, fake)
    first, second = decide(0), decide(5)
    assert first.allowed and not second.allowed
    assert second.retry_after_ms == 95  # one request per 100 ms
    assert not decide(99).allowed and decide(100).allowed


def test_nginx_burst_queues_the_excess_and_forwards_one_every_100_ms(clock, fake):
    """nginx's blog: of 21 requests at once with burst=20, the first is forwarded at once and
    the other 20 are queued, one forwarded every 100 ms; a 22nd is refused."""
    decide = limiter("nginx:rate=10r/s,burst=20", clock, fake)
    got = [decide(0) for _ in range(22)]
    assert [d.allowed for d in got] == [True] * 21 + [False]
    assert [d.retry_after_ms for d in got[:21]] == [100 * k for k in range(21)]


def test_nginx_burst_nodelay_forwards_the_burst_at_once_and_frees_a_slot_per_interval(clock, fake):
    """nodelay: the 21 are forwarded at once, and the 20 slots are freed one every 100 ms."""
    decide = limiter("nginx:rate=10r/s,burst=20,nodelay", clock, fake)
    got = [decide(0) for _ in range(22)]
    assert [d.allowed for d in got] == [True] * 21 + [False]
    assert {d.retry_after_ms for d in got[:21]} == {0}
    assert [decide(100).allowed, decide(100).allowed] == [True, False]


def test_nginx_rate_1r_s_burst_5_nodelay(clock, fake):
    """nginx's docs: "not more than 1 request per second at an average, with bursts not
    exceeding 5 requests", forwarded without delay."""
    decide = limiter("nginx:rate=1r/s,burst=5,nodelay", clock, fake)
    assert [decide(0).allowed for _ in range(7)] == [True] * 6 + [False]
    assert [decide(1000).allowed, decide(1000).allowed] == [True, False]
    assert sum(decide(t).allowed for t in range(2000, 12_000, 100)) == 10  # one a second


def test_nginx_delay_forwards_that_much_excess_at_once_and_holds_the_rest(clock, fake):
    decide = limiter("nginx:rate=5r/s,burst=12,delay=8", clock, fake)
    got = [decide(0) for _ in range(14)]
    assert [d.allowed for d in got] == [True] * 13 + [False]
    # an excess up to 8 passes at once; beyond, held to the rate (200 ms a request)
    assert [d.retry_after_ms for d in got[:13]] == [0] * 9 + [200, 400, 600, 800]


def test_nginx_rate_per_minute_as_nginx_rounds_it(clock, fake):
    """30r/m is half a request per second: one every 2 s."""
    decide = limiter("nginx:rate=30r/m", clock, fake)
    assert [decide(t).allowed for t in (0, 1999, 2000)] == [True, False, True]


# --- Traefik: "average=6, period=1m" --------------------------------------------------------------
def test_nginx_rate_per_minute_is_described_as_nginx_rounds_it():
    # 1r/m is 16 milli-requests a second in nginx's integers: one per 62.5 s, not per 60
    assert "(one per 62.5 s)" in parse_spec("nginx:rate=1r/m").describe()
    assert "(one per 0.1 s)" in parse_spec("nginx:rate=10r/s").describe()


@pytest.mark.parametrize("field", ["burst", "delay"])
def test_nginx_burst_or_delay_written_as_0_is_refused_as_nginx_does(field):
    with pytest.raises(ConfigError, match=f"invalid {field} value 0"):
        parse_spec(f"nginx:rate=10r/s,{field}=0")


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        (f"nginx:rate=10r/s,burst={MAX_REQUESTS + 1}", "burst"),
        (f"nginx:rate=10r/s,burst=5,delay={MAX_REQUESTS + 1}", "delay"),
        (f"nginx:rate={MAX_REQUESTS + 1}r/s", "rate"),
        ("nginx:rate=10r/s,burst=100000000000000", "burst"),  # 10^14: its x1000 passes 2^53
    ],
)
def test_nginx_numbers_whose_milli_requests_pass_2_53_are_refused(spec, field):
    with pytest.raises(ConfigError, match=f"{field} must be at most {MAX_REQUESTS:,}"):
        parse_spec(spec)


def test_nginx_a_cost_past_the_bound_is_refused_by_script_and_reference(clock, fake):
    decide = limiter("nginx:rate=10r/s,burst=5", clock, fake)
    with pytest.raises(ConfigError, match="cost must be at most"):
        decide(0, cost=MAX_REQUESTS + 1)
    with pytest.raises(ConfigError, match="cost must be at most"):
        NginxLimitReqRef(10, 1000, burst=5, delay=0).decide("a", 0, MAX_REQUESTS + 1)


def test_nginx_at_its_bounds_the_script_decides_as_its_reference(clock, fake):
    big = MAX_REQUESTS
    spec = f"nginx:rate={big}r/s,burst={big},delay={big // 3}"
    decide = limiter(spec, clock, fake)
    ref = NginxLimitReqRef(big, 1000, burst=big, delay=big // 3)
    for t, cost in [(0, big), (0, 1), (1, 1), (100, big // 2), (101, big), (5000, 7)]:
        assert tuple(decide(t, cost=cost)) == tuple(ref.decide("a", t, cost)), (t, cost)
    decide = limiter(f"nginx:rate=10r/s,burst={big}", clock, fake)
    ref = NginxLimitReqRef(10, 1000, burst=big, delay=0)
    for t, cost in [(0, big), (0, 1), (1, 1), (100, 1)]:  # as the review's 10^13 run, bounded
        assert tuple(decide(t, "b", cost=cost)) == tuple(ref.decide("b", t, cost)), (t, cost)


def test_traefik_average_6_per_minute_admits_one_request_per_10_s(clock, fake):
    decide = limiter("traefik:average=6,period=1m,burst=1", clock, fake)
    passed = []
    for t in range(0, 600_000, 100):  # ten requests a second for ten minutes
        d = decide(t)
        if d.allowed:
            passed.append(t + d.retry_after_ms)  # a wait up to 500 ms is slept out
    assert len(passed) == 61
    assert {b - a for a, b in zip(passed, passed[1:], strict=False)} == {10_000}


def test_traefik_refuses_a_wait_longer_than_its_max_delay_with_retry_after(clock, fake):
    decide = limiter("traefik:average=100,burst=50", clock, fake)
    got = [decide(0) for _ in range(51)]
    # 50 at once; the 51st would wait 10 ms, past maxDelay (1 s / (2 x 100) = 5 ms): 429
    assert [d.allowed for d in got] == [True] * 50 + [False]
    assert got[50].retry_after_ms == 10
    held = decide(5)  # half a token there: a wait of 5 ms, slept out
    assert held.allowed and held.retry_after_ms == 5
    assert not decide(10).allowed  # that reservation took the token coming at 10 ms


# --- Spring Cloud Gateway: "replenishRate: 10, burstCapacity: 20" -------------------------------
def test_spring_admits_20_at_once_then_10_a_second(clock, fake):
    decide = limiter("spring:replenishRate=10,burstCapacity=20,requestedTokens=1", clock, fake)
    assert sum(decide(0).allowed for _ in range(25)) == 20
    assert sum(decide(1000).allowed for _ in range(15)) == 10
    assert sum(decide(1999).allowed for _ in range(5)) == 0  # the same whole second
    assert sum(decide(2000).allowed for _ in range(15)) == 10


def test_spring_left_out_the_capacity_is_1_nothing_is_stored_and_all_are_admitted(clock, fake):
    candidate = parse_spec("spring:replenishRate=10")
    assert candidate.params["burst_capacity"] == 1  # RedisRateLimiter.Config's default
    assert "nothing is stored and every request is admitted" in candidate.describe()
    decide = limiter("spring:replenishRate=10", clock, fake)
    assert all(decide(0).allowed for _ in range(50))
    assert fake.client.keys("*") == []


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            "spring:replenishRate=3,burstCapacity=1",
            "BurstCapacity(1) must be greater than or equal than replenishRate(3)",
        ),
        (
            "spring:replenishRate=1,burstCapacity=5,requestedTokens=6",
            "requestedTokens(6) is more than burstCapacity(5)",
        ),
        ("spring:replenishRate=10,requestedTokens=2", "requestedTokens(2) is more than burst"),
    ],
)
def test_spring_refuses_what_its_config_refuses_or_never_admits(spec, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        parse_spec(spec)


def test_spring_one_request_a_minute_with_requested_tokens(clock, fake):
    """Spring's docs: replenishRate=1, requestedTokens=60, burstCapacity=60 is 1 request/min."""
    decide = limiter("spring:replenishRate=1,burstCapacity=60,requestedTokens=60", clock, fake)
    admitted = [t for t in range(0, 180_001, 1000) if decide(t).allowed]
    assert admitted == [0, 60_000, 120_000, 180_000]


# --- Envoy: "During each fill interval tokens_per_fill are added" --------------------------------
def test_envoy_fills_at_each_interval_boundary_and_not_between(clock, fake):
    decide = limiter("envoy:max_tokens=10,tokens_per_fill=5,fill_interval=1s", clock, fake)
    got = [decide(500) for _ in range(12)]
    assert sum(d.allowed for d in got) == 10  # the bucket starts with max_tokens
    assert got[-1].retry_after_ms == 500  # the next tick
    assert not decide(999).allowed
    assert sum(decide(1000).allowed for _ in range(8)) == 5
    assert sum(decide(1999).allowed for _ in range(8)) == 0
    assert sum(decide(2000).allowed for _ in range(8)) == 5
    assert sum(decide(60_000).allowed for _ in range(12)) == 10  # never above max_tokens


# --- Kong: minute and hour at once ----------------------------------------------------------------
def test_kong_minute_and_hour_a_refused_request_counts_in_neither(clock, fake):
    decide = limiter("kong:minute=2,hour=3", clock, fake)
    assert [decide(t).allowed for t in (0, 1, 2)] == [True, True, False]  # the minute is used up
    assert decide(60_000).allowed  # a refused request was not counted in the hour
    refused = decide(60_001)
    assert not refused.allowed and refused.retry_after_ms == 3_600_000 - 60_001
    assert [decide(t).allowed for t in (120_000, 3_599_999, 3_600_000)] == [False, False, True]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            "kong:second=100,minute=10",
            "The limit for minute(10.0) cannot be lower than the limit for second(100.0)",
        ),
        (
            "kong:minute=100,day=50",
            "The limit for day(50.0) cannot be lower than the limit for minute(100.0)",
        ),
    ],
)
def test_kong_limits_out_of_period_order_are_refused_as_kongs_schema_does(spec, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        parse_spec(spec)
    assert parse_spec("kong:second=5,minute=5,hour=300").limit == 5  # equal is allowed


def test_kong_windows_are_on_the_clock(clock, fake):
    decide = limiter("kong:minute=100", clock, fake)
    assert sum(decide(59_000).allowed for _ in range(100)) == 100
    assert sum(decide(60_000).allowed for _ in range(100)) == 100  # 200 in two seconds


# --- the script against its reference -----------------------------------------------------------
SPECS = [
    "nginx:rate=10r/s",
    "nginx:rate=10r/s,burst=5,nodelay",
    "nginx:rate=1r/m,burst=3,delay=1",
    "traefik:average=6,period=1m,burst=1",
    "traefik:average=3,period=1s,burst=4",
    "spring:replenishRate=10,burstCapacity=20",
    "spring:replenishRate=3",  # Spring's default capacity, 1: nothing stored
    "envoy:max_tokens=10,tokens_per_fill=5,fill_interval=1s",
    "envoy:max_tokens=3,fill_interval=70ms",
    "kong:second=2,minute=5,day=50",
]


def timeline(seed: int, n: int = 200) -> list[tuple[int, str, int]]:
    rng = random.Random(seed)
    t, out = rng.randrange(5000), []
    for _ in range(n):
        t += rng.choice([0, 0, 1, 5, 30, 100, 250, 999, 1000, 3000, 20_000])
        out.append((t, rng.choice("ab"), rng.choice([1, 1, 1, 2, 5])))
    return out


def differences(spec: str, backend, seeds: range, clock=None) -> list[str]:
    """Where the script on ``backend`` and the reference decide differently (none: [])."""
    candidate = parse_spec(spec)
    out = []
    for seed in seeds:
        backend.client.flushall()
        made = candidate.policy.limiter(backend)
        ref = ALGORITHMS[candidate.algorithm].reference(
            candidate.limit, candidate.window_ms, **candidate.params
        )
        for t, client, cost in timeline(seed):
            if clock is not None:
                clock.t_ms = t
            got, want = made.decide(client, t, cost), ref.decide(client, t, cost)
            if tuple(got) != tuple(want):
                out.append(f"{spec} seed {seed} t={t} {client} cost {cost}: {got} != {want}")
                break
    return out


@pytest.mark.parametrize("spec", SPECS)
def test_the_script_decides_as_its_reference_on_the_fake_server(spec, clock, fake):
    assert differences(spec, fake, range(8), clock) == []


@pytest.mark.server
@pytest.mark.usefixtures("no_server_left_behind")
def test_on_valkey_each_script_decides_as_its_reference():
    from simulator.backends.specs import make_backend

    backend = make_backend("valkey")
    try:
        found = [d for spec in SPECS for d in differences(spec, backend, range(3))]
    finally:
        backend.close()
    assert found == []


def test_each_gateway_keeps_the_colour_rule_beside_every_algorithm():
    from simulator.algorithms.palette import ROLE_COLOURS, check_colours

    for name in GATEWAYS:
        assert ALGORITHMS[name].name == name
    check_colours({n: cls.colour for n, cls in ALGORITHMS.items()}, ROLE_COLOURS)


@pytest.mark.parametrize("name", sorted(GATEWAYS))
def test_each_script_opens_with_its_contract(name):
    from simulator.algorithms import scripts

    source = scripts.load(ALGORITHMS[name].scripts[0]).source
    head = source[: source.index("]]")]
    assert source.startswith("--[[") and "KEYS[" in head and "Returns" in head
    argv = [line.split()[1] for line in head.splitlines() if line.startswith("ARGV[")]
    assert argv[0] == "now_ms" and argv[-1] == "cost"  # time first, the cost last
