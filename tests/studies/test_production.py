"""What production adds around the script: INCREX as algorithms whose call is the server's own
command, the sliding counter that counts refusals, two limits all or nothing, and the studies of
the store going away, caches, skewed clocks (each on small setups, on the virtual clock)."""

from __future__ import annotations

import fakeredis
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator import cli
from simulator.algorithms import ALGORITHMS, REFERENCES
from simulator.backends import FakeRedisBackend
from simulator.backends.fakeserver import counted_commands
from simulator.checks import ConfigError
from simulator.cli.args import without_commands
from simulator.headers import several_policies
from simulator.studies import production as prod
from simulator.studies.production.outage import judged

GAPS = st.one_of(st.just(0), st.integers(0, 400), st.integers(0, 3000))
TRACES = st.lists(
    st.tuples(GAPS, st.sampled_from("ab"), st.integers(1, 5)), min_size=1, max_size=40
)


def _both(first: str, second: str, limit: int, window_ms: int, trace):
    now = [0]
    a = ALGORITHMS[first](FakeRedisBackend(lambda: now[0]), limit, window_ms)
    b = ALGORITHMS[second](FakeRedisBackend(lambda: now[0]), limit, window_ms)
    for gap, client, cost in trace:
        now[0] += gap
        yield a.decide(client, now[0], cost), b.decide(client, now[0], cost)


# --- INCREX ------------------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(limit=st.integers(1, 6), window_ms=st.integers(1, 3000), trace=TRACES)
def test_first_hit_increx_decides_as_echomqs_script(limit, window_ms, trace):
    for x, y in _both("increx", "echomq", limit, window_ms, trace):
        assert (x.allowed, x.count) == (y.allowed, y.count)


@settings(max_examples=25, deadline=None)
@given(limit=st.integers(1, 6), window_ms=st.integers(1, 3000), trace=TRACES)
def test_grid_increx_decides_as_the_lua_fixed_window_when_every_request_costs_one(
    limit, window_ms, trace
):
    ones = [(gap, client, 1) for gap, client, _ in trace]
    for x, y in _both("increx_grid", "fixed_window", limit, window_ms, ones):
        assert x.allowed == y.allowed


def test_grid_increx_differs_after_a_refused_hit_the_lua_window_counts():
    # limit 5: 3 admitted, a cost of 3 refused (the Lua window counts it: 6), then a cost of 2
    trace = [(0, "u", 3), (10, "u", 3), (10, "u", 2)]
    got = [(x.allowed, y.allowed) for x, y in _both("increx_grid", "fixed_window", 5, 1000, trace)]
    assert got == [(True, True), (False, False), (True, False)]


def test_an_increx_call_is_the_command_itself_one_per_decision():
    now = [0]
    limiter = ALGORITHMS["increx"](FakeRedisBackend(lambda: now[0]), 3, 1000)
    script, keys, args = limiter.call("u", 0, 2)
    assert (script.command, list(args)) == ("INCREX", ["BYINT", 2, "UBOUND", 3, "PX", 1000, "ENX"])
    assert ALGORITHMS["increx"].scripts == () and limiter.call("u", 0, 4)[0].command == "GET"
    limiter.backend.client.ping()  # the connection's handshake, before counting
    with counted_commands() as count:
        for t in range(0, 2000, 100):
            now[0] = t
            limiter.decide("u", t)
    assert count.commands == 20


def test_an_increx_reply_tells_no_reset_and_a_refusal_waits_a_window_and_1_ms_at_most():
    now = [0]
    limiter = ALGORITHMS["increx"](FakeRedisBackend(lambda: now[0]), 2, 1000)
    first, second, third = (limiter.decide("u", 0) for _ in range(3))
    assert (first.allowed, first.remaining, first.reset_ms) == (True, 1, -1)
    # the counter is still there at its expiry instant (1000) and gone 1 ms later
    assert (third.allowed, third.retry_after_ms) == (False, 1001)
    now[0] = 1000
    assert not limiter.decide("u", 1000).allowed
    now[0] = 1001
    assert limiter.decide("u", 1001).allowed
    assert limiter.decide("u", 1001, 3).retry_after_ms == -1  # more than the limit: never


def test_a_server_without_increx_is_said_in_one_line():
    backend = FakeRedisBackend()
    assert not backend.lacks("INCREX", ("k", "PX", "0")) and not backend.client.exists("k")
    backend.client = fakeredis.FakeRedis(server=fakeredis.FakeServer(version=(7, 0)))
    assert backend.lacks("INCREX", ("k", "PX", "0")) and not backend.lacks("GET")
    skipped, line = without_commands(list(ALGORITHMS), backend)
    assert skipped == ["increx", "increx_grid"]
    assert line is not None and "\n" not in line and "has no INCREX" in line


def test_burst_on_a_server_without_increx_says_so_and_runs_the_rest(monkeypatch, capsys):
    monkeypatch.setattr(
        FakeRedisBackend, "lacks", lambda self, command, probe=(): command == "INCREX"
    )
    assert cli.main(["burst", "--limit", "10", "--window", "1", "--first", "0.5"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [x for x in out if "INCREX" in x] == [
        "increx, increx_grid: not run, fakeredis has no INCREX (Redis 8.8's bounded increment; "
        "fakeredis, the default backend, has it)"
    ]
    assert any(x.startswith("echomq ") for x in out)
    assert not any(x.split()[0] in ("increx", "increx_grid") for x in out if x.strip())


# --- refusals that count -----------------------------------------------------------------------


def test_counting_refusals_blocks_a_user_above_the_rate_and_not_one_below():
    setup = prod.RefusalSetup(limit=10, window_ms=1000, duration_ms=5000)
    summary = prod.refusals_summary(prod.refusals_run(setup, (0.9, 2.0)), setup).set_index(
        ["algorithm", "multiple"]
    )
    after = summary["admitted_after_first_window"]
    assert after[("sliding_counter_all", 2.0)] == 0 and after[("sliding_counter", 2.0)] >= 30
    assert after[("sliding_counter_all", 0.9)] == after[("sliding_counter", 0.9)]


# --- two limits, all or nothing ----------------------------------------------------------------


def test_a_refused_request_counts_in_neither_policy():
    now = [0]
    backend = FakeRedisBackend(lambda: now[0])
    limiter = ALGORITHMS["multi_policy"](backend, 2, 1000, long_limit=3, long_window_ms=10_000)

    def counters(t: int) -> list[int]:
        return [int(backend.client.get(k) or 0) for k in limiter.keys("u", t)]

    got = []
    for t in (0, 1, 2, 1000, 1001, 2000):
        now[0] = t
        before = counters(t)
        d = limiter.decide("u", t)
        got.append(d.allowed)
        assert counters(t) == [c + d.allowed for c in before]  # both policies, or neither
    assert got == [True, True, False, True, False, False]  # the long policy binds from 1001


def test_the_header_fields_carry_both_policies_and_the_binding_one():
    ref = REFERENCES["multi_policy"](2, 1000, long_limit=3, long_window_ms=10_000)
    decisions = [ref.decide("u", t) for t in (0, 1, 1000, 1001)]
    policies = (("short", 2, 1000), ("long", 3, 10_000))
    fields = [several_policies(d, policies) for d in decisions]
    assert all(f["RateLimit-Policy"] == '"short";q=2;w=1, "long";q=3;w=10' for f in fields)
    assert [f["RateLimit"] for f in fields] == [
        '"short";r=1;t=1',
        '"short";r=0;t=1',
        '"long";r=0;t=9',
        '"long";r=0;t=9',
    ]
    assert fields[3]["Retry-After"] == "9"


@pytest.mark.parametrize("shards", [[], ["--shards", "2"]], ids=["serial", "sharded"])
def test_replay_writes_both_policies_in_its_header_columns(tmp_path, capsys, shards):
    trace = tmp_path / "t.csv"
    trace.write_text("client,t_ms\na,0\na,1\na,2\na,1500\n")
    out = tmp_path / "out.csv"
    args = ["replay", "--algorithm", "multi_policy", "--limit", "2", "--window", "1"]
    args += [
        "--param",
        "long_limit=3",
        "--headers",
        "draft",
        *shards,
        "--backend",
        "fakeredis",
        "--out",
        str(out),
        str(trace),
    ]
    assert cli.main(args) == 0
    frame = pd.read_csv(out)
    assert set(frame["RateLimit-Policy"]) == {'"short";q=2;w=1, "long";q=3;w=10'}
    assert frame["RateLimit"].tolist()[-1] == '"long";r=0;t=9'


@pytest.mark.parametrize(
    "param, message",
    [("long_limit=0", "params['long_limit']"), ("long_window_ms=-5", "params['long_window_ms']")],
)
def test_a_bad_policy_parameter_is_one_message_naming_it(param, message, capsys):
    assert cli.main(["burst", "--param", param]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_the_naive_way_wastes_budget_and_refuses_twice():
    setup = prod.PolicySetup(limit=5, long_limit=30, long_window_ms=20_000, duration_ms=20_000)
    summary = prod.policies_summary(prod.policies_run(setup)).set_index("way")
    atomic, naive = summary.loc["all_or_nothing"], summary.loc["naive"]
    assert atomic["admitted"] == 30 and atomic[["refused_twice", "long_wasted"]].sum() == 0
    assert naive["admitted"] < atomic["admitted"] and naive["long_wasted"] > 0
    assert naive["refused_twice"] > 0


# --- the store goes away, caches, skewed clocks ------------------------------------------------

SMALL = {"limit": 20, "window_ms": 2_000, "rate_per_s": 20.0, "duration_ms": 12_000}


def test_when_the_store_goes_away_each_mode_errs_its_own_way():
    setup = prod.OutageSetup(
        **SMALL, down_from_ms=3_000, down_until_ms=5_000, slow_from_ms=8_000, slow_until_ms=9_000
    )
    frames = pd.concat([prod.outage_run(setup, m) for m in prod.MODES], ignore_index=True)
    s = prod.outage_summary(frames, setup).set_index("mode")
    assert s.loc["server always up", ["beyond_limit", "false_refusals"]].sum() == 0
    assert s.loc["fail_open", "beyond_limit"] > 0 and s.loc["fail_open", "false_refusals"] == 0
    assert s.loc["fail_closed", "beyond_limit"] == 0 and s.loc["fail_closed", "false_refusals"] > 0
    assert s.loc["local", "most_in_window"] <= s.loc["fail_open", "most_in_window"]


def test_incr_and_pexpire_as_two_commands_leave_a_counter_that_never_expires():
    frame = prod.split_commands_run(limit=5, window_ms=1000, duration_ms=6000, drop_at_ms=2000)
    admitted = frame.groupby("way")["allowed"].sum()
    assert frame.attrs["pttl_ms"] == -1
    assert admitted["two commands"] < admitted["one script"]
    late = frame[(frame["way"] == "two commands") & (frame["t_ms"] >= 3000)]
    assert not late["allowed"].any()


def test_a_lease_stays_within_limit_plus_n_times_b_minus_one():
    setup = prod.CacheSetup(**SMALL, servers=3)
    frames = pd.concat([prod.lease_run(setup, b) for b in (1, 4)], ignore_index=True)
    s = prod.lease_summary(frames, setup)
    assert (s["most_in_window"] <= s["bound"]).all()
    assert s["calls"].iloc[1] < s["calls"].iloc[0]


def test_a_deny_cache_changes_no_decision_of_the_exact_log_and_saves_calls():
    setup = prod.CacheSetup(**SMALL)
    frames = pd.concat([prod.deny_cache_run(setup, a) for a in ("sliding_log",)])
    s = prod.deny_cache_summary(frames).iloc[0]
    assert s["decisions_changed"] == 0 and s["calls_saved"] > 0


def test_skewed_clocks_let_the_exact_log_over_and_leave_increx_alone():
    setup = prod.SkewSetup(**SMALL)
    frame = prod.skew_study(setup, ["sliding_log", "increx"], (0, 1000))
    s = prod.skew_summary(frame, setup).set_index(["algorithm", "skew_ms"])["most_in_window"]
    assert s[("sliding_log", 0)] <= setup.limit < s[("sliding_log", 1000)]
    assert s[("increx", 0)] == s[("increx", 1000)]  # INCREX takes no time from the app server


def test_judged_counts_admits_beyond_the_limit_and_refusals_with_room():
    t = pd.Series([0, 1, 2, 3]).to_numpy()
    j = judged(t, pd.Series([True, True, True, False]).to_numpy(), 2, 10)
    assert j["beyond"].tolist() == [False, False, True, False]
    j = judged(t, pd.Series([True, False, False, True]).to_numpy(), 2, 10)
    assert j["false_refusal"].tolist() == [False, True, True, False]  # one admitted: room


def test_increx_against_the_lua_windows_study():
    frame = prod.native_run(prod.NativeSetup(requests=400, duration_ms=8000))
    s = prod.native_summary(frame).set_index("pair")
    assert s.loc["increx / echomq", "agree"] == 400
    assert s.loc["increx_grid / fixed_window", "lua_only"] == 0


@pytest.mark.parametrize(
    "make, field",
    [
        (lambda: prod.OutageSetup(servers=0), "OutageSetup.servers"),
        (lambda: prod.OutageSetup(down_from_ms=5, down_until_ms=1), "OutageSetup.down_until_ms"),
        (lambda: prod.OutageSetup(algorithm="nope"), "OutageSetup.algorithm"),
        (lambda: prod.CacheSetup(rate_per_s=0), "CacheSetup.rate_per_s"),
        (lambda: prod.SkewSetup(window_ms=0), "SkewSetup.window_ms"),
        (lambda: prod.PolicySetup(long_limit=0), "PolicySetup.long_limit"),
        (lambda: prod.RefusalSetup(limit=-1), "RefusalSetup.limit"),
        (lambda: prod.NativeSetup(requests=10**9), "NativeSetup.requests"),
        (lambda: prod.CacheSetup(rate_per_s=1e5, duration_ms=10**7), "CacheSetup.rate_per_s"),
        (lambda: prod.lease_run(prod.CacheSetup(limit=5), 6), "lease"),
        (lambda: prod.outage_run(prod.OutageSetup(), "retry"), "mode"),
        (lambda: prod.refusals_run(prod.RefusalSetup(limit=10**6, window_ms=1)), "duration_ms"),
        (lambda: prod.refusals_run(prod.RefusalSetup(), (0,)), r"multiples\[0\]"),
    ],
)
def test_every_setting_is_validated_with_one_message_naming_it(make, field):
    with pytest.raises(ConfigError, match=field.replace(".", r"\.") if "[" not in field else field):
        make()


@pytest.mark.server
def test_a_real_valkey_has_no_increx_and_a_replay_there_says_so_in_one_line(tmp_path, capsys):
    from simulator.backends import RedisBackend
    from simulator.backends.embedded import EmbeddedValkey

    with EmbeddedValkey() as server:  # started here, stopped by its own handle
        backend = RedisBackend(server.client(), "valkey")
        try:
            skipped, line = without_commands(list(ALGORITHMS), backend)
            assert skipped == ["increx", "increx_grid"] and "valkey has no INCREX" in str(line)
            assert backend.client.dbsize() == 0  # the probe touched no key
        finally:
            backend.close()
    trace = tmp_path / "t.csv"
    trace.write_text("client,t_ms\na,0\n")
    args = ["replay", "--algorithm", "increx", "--limit", "2", "--window", "1"]
    assert (
        cli.main([*args, "--backend", "valkey", "--out", str(tmp_path / "o.csv"), str(trace)]) == 2
    )
    err = capsys.readouterr().err.strip().splitlines()  # the backend's line, then the error
    assert [x for x in err if "INCREX" in x] == err[-1:] and "Traceback" not in str(err), err


def test_the_production_page_quotes_the_tables_the_job_wrote():
    from simulator.paths import DATA_DIR

    doc = (DATA_DIR.parent / "docs" / "production.md").read_text("utf-8")
    policies = pd.read_csv(DATA_DIR / "production_policies.csv").set_index("way")
    for way, label in (("all_or_nothing", "all or nothing (one script)"), ("naive", "naive")):
        r = policies.loc[way]
        assert f"| {label}" in doc and f"| {r['requests']:,} | **{r['admitted']}** |" in doc
    for r in pd.read_csv(DATA_DIR / "production_lease.csv").itertuples():
        row = f"| {r.lease} | {r.calls_per_decision:.2f} | {r.admitted} | {r.most_in_window} | {r.bound} |"
        assert row in doc, row
    for r in pd.read_csv(DATA_DIR / "production_outage.csv").itertuples():
        assert (
            f"| {r.admitted} | {r.beyond_limit} | {r.false_refusals} | {r.most_in_window} |" in doc
        )
    for r in pd.read_csv(DATA_DIR / "production_native.csv").itertuples():
        assert (
            f"| {r.pair} | {r.requests:,} | {r.agree:,} | {r.native_only} | {r.lua_only} |" in doc
        )
