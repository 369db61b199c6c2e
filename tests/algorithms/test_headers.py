"""The header fields a client reads, worked by hand for each algorithm, from the real scripts.

Limit 2 per 10 s (burst 2 for the buckets) for client c: two requests at t=0, then one just
before the end of the first grid window (t=9999 ms) or, for the buckets, at t=1500 ms, and one at
the start of the next window (t=10000 ms).

Each algorithm shipped with the package has its case worked by hand, in its own file
``tests/algorithms/cases/<name>.toml``; one registered from elsewhere (a contributor's, being
tried out) is held to its reference instead: the same fields from its script as from its
pure-Python twin, on the same requests.
"""

from __future__ import annotations

import pytest
from conftest import algorithm_case, case_files, shipped_algorithms

from simulator.algorithms import ALGORITHMS, REFERENCES
from simulator.backends import FakeRedisBackend
from simulator.records import http_headers

LIMIT, WINDOW_MS = 2, 10_000

#: The algorithms shipped with the package: each has its cases worked by hand in its file.
SHIPPED = shipped_algorithms()
#: The others, registered from elsewhere: held to their reference.
ADDED = sorted(set(ALGORITHMS) - set(SHIPPED))


def _decisions(name: str, times: list[int], costs: list[int] | None = None):
    now = [0]
    limiter = ALGORITHMS[name](FakeRedisBackend(lambda: now[0]), LIMIT, WINDOW_MS)
    out = []
    for i, t in enumerate(times):
        now[0] = t
        out.append(limiter.decide("c", t, 1 if costs is None else costs[i]))
    return out


def _draft(name: str, decision) -> tuple[str, str, str | None]:
    h = http_headers(decision, "draft", WINDOW_MS, LIMIT, policy=name)
    return h["RateLimit-Policy"], h["RateLimit"], h.get("Retry-After")


@pytest.mark.parametrize("name", SHIPPED)
def test_draft_fields_worked_by_hand(name):
    case = algorithm_case(name)["draft"]
    got = [_draft(name, d) for d in _decisions(name, case["times_ms"])]
    policy = f'"{name}";q=2;w=10'  # the buckets: 2 tokens take the 10 s of the rate to refill
    want = []
    for row in case["fields"]:
        until = f";t={row['t']}" if "t" in row else ""
        want.append((policy, f'"{name}";r={row["r"]}{until}', row.get("retry_after")))
    assert got == want, f"tests/algorithms/cases/{name}.toml, [draft]"


@pytest.mark.parametrize(
    "name",
    ADDED
    or [
        pytest.param(
            "",
            marks=pytest.mark.skip(reason="none registered from elsewhere; test_toy.py adds one"),
        )
    ],
)
def test_draft_fields_of_an_added_algorithm_are_its_references(name):
    times = [0, 0, 9999, 10_000, 10_000, 10_001, 25_000]
    ref = REFERENCES[name](LIMIT, WINDOW_MS)
    want = [_draft(name, ref.decide("c", t)) for t in times]
    assert [_draft(name, d) for d in _decisions(name, times)] == want


def test_every_shipped_algorithm_has_a_worked_case_and_no_other():
    missing = sorted(set(SHIPPED) - case_files())
    assert not missing, [f"add tests/algorithms/cases/{name}.toml" for name in missing]
    stale = sorted(case_files() - set(SHIPPED))
    assert not stale, [f"tests/algorithms/cases/{name}.toml names no algorithm" for name in stale]


def test_legacy_trio_beside_the_draft():
    d = _decisions("fixed_window", [0, 0, 9999])[-1]
    assert http_headers(d, window_ms=WINDOW_MS) == {
        "RateLimit-Policy": '"default";q=2;w=10',
        "RateLimit": '"default";r=0;t=1',
        "RateLimit-Limit": "2",
        "RateLimit-Remaining": "0",
        "RateLimit-Reset": "1",
        "Retry-After": "1",
    }


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_a_request_that_can_never_be_admitted_gets_no_retry_after(name):
    d = _decisions(name, [0], [LIMIT + 1])[0]
    assert not d.allowed and d.retry_after_ms == -1
    assert "Retry-After" not in http_headers(d, window_ms=WINDOW_MS)


def test_a_bucket_with_a_burst_below_the_rate_states_its_own_window():
    now = [0]
    bucket = ALGORITHMS["token_bucket"](FakeRedisBackend(lambda: now[0]), 100, 60_000, burst=10)
    h = http_headers(bucket.decide("c", 0), "draft", 60_000, 100, policy="api")
    # 10 tokens at 100 a minute refill in 6 s
    assert h == {"RateLimit-Policy": '"api";q=10;w=6', "RateLimit": '"api";r=9;t=1'}


def test_a_policy_name_is_a_quoted_structured_string():
    d = _decisions("gcra", [0])[0]
    assert http_headers(d, "draft", policy='a"b\\c')["RateLimit"].startswith('"a\\"b\\\\c";r=1')


def test_unknown_style_is_refused():
    with pytest.raises(ValueError, match="style"):
        http_headers(_decisions("gcra", [0])[0], "rfc")


def test_replay_writes_the_header_fields_as_columns(tmp_path):
    from simulator.cli import main

    trace, out = tmp_path / "t.csv", tmp_path / "out.csv"
    trace.write_text("t_ms,client\n0,c\n0,c\n9999,c\n")
    args = ["replay", str(trace), "--algorithm", "fixed_window", "--limit", "2", "--window", "10"]
    assert main([*args, "--backend", "fakeredis", "--headers", "both", "--out", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert lines[0].endswith(
        "retry_after_ms,RateLimit-Policy,RateLimit,RateLimit-Limit,RateLimit-Remaining,"
        "RateLimit-Reset,Retry-After"
    )
    assert lines[3].endswith(',"""fixed_window"";q=2;w=10","""fixed_window"";r=0;t=1",2,0,1,1')
    assert main([*args, "--headers", "draft", "--out", str(out)]) == 0
    assert out.read_text().splitlines()[0].endswith("RateLimit-Policy,RateLimit,Retry-After")
    with pytest.raises(SystemExit) as stopped:  # argparse: one line naming the choices
        main([*args, "--headers", "rfc9999"])
    assert stopped.value.code == 2


# --- each field keeps its word (the header property test tries the same on random traces) ------


def _run(name: str, limit: int, window_ms: int, requests, **params):
    """Decisions of ``(t_ms, cost)`` requests by one client, on a fresh fake server."""
    now = [0]
    limiter = ALGORITHMS[name](FakeRedisBackend(lambda: now[0]), limit, window_ms, **params)
    out = []
    for t_ms, cost in requests:
        now[0] = t_ms
        out.append(limiter.decide("a", t_ms, cost))
    return out


def test_echomq_says_when_the_counter_is_gone_not_when_it_expires():
    # limit 1 per 1 s: the counter armed at 0 still lives at 1000 and is gone at 1001
    first, refused, at_1000, at_1001 = _run(
        "echomq", 1, 1000, [(0, 1), (0, 1), (1000, 1), (1001, 1)]
    )
    assert first.reset_ms == 1001 and refused.retry_after_ms == 1001
    assert http_headers(first, "draft", 1000)["RateLimit"] == '"default";r=0;t=2'
    assert http_headers(refused)["Retry-After"] == "2"
    assert not at_1000.allowed and at_1000.retry_after_ms == 1  # not 0: one ms is still to go
    assert at_1001.allowed


def test_a_polite_client_is_admitted_at_its_first_retry():
    from simulator.engine.run import simulate
    from simulator.engine.scenario import Polite, Scenario

    for name in sorted(ALGORITHMS):
        # 5 a second against 2 a second: refused often, and each refusal waits its Retry-After
        frame = simulate(Scenario(name, 2, 1000, 10_000.0, (Polite("p", 5.0),)))
        refused = frame["allowed"].to_numpy()
        twice = int((~refused[1:] & ~refused[:-1]).sum())
        assert refused.sum() < len(refused) and twice == 0, (name, twice)


def test_the_sliding_counter_says_when_one_request_comes_back_with_nothing_before_it():
    # limit 1 per 1 s: the hit at 0 weighs fully at 1000 and fades below the limit at 1001
    first, at_1000, at_1001 = _run("sliding_counter", 1, 1000, [(0, 1), (1000, 1), (1001, 1)])
    assert first.reset_ms == 1001
    assert http_headers(first, "draft", 1000)["RateLimit"] == '"default";r=0;t=2'
    assert (at_1000.allowed, at_1001.allowed) == (False, True)


@pytest.mark.parametrize("name", ["gcra", "token_bucket"])
def test_a_bucket_refilled_within_a_second_states_one_second_not_zero(name):
    # 2000 a second with a burst of 1: the bucket refills in half a millisecond
    d = _run(name, 2000, 1000, [(0, 1)], burst=1)[0]
    assert http_headers(d, "draft", 1000, 2000, policy=name)["RateLimit-Policy"] == (
        f'"{name}";q=1;w=1'
    )


def test_no_field_holds_an_integer_past_15_digits():
    import http_sf

    from simulator.records import Decision

    big = Decision(True, 1.0, 999_999_999_999_999, 999_999_999_999_998, 10**20, 0)
    h = http_headers(big, "both", 1000)
    for field in ("RateLimit-Policy", "RateLimit"):
        http_sf.parse(h[field].encode(), tltype="list")  # raises on an invalid field
    assert h["RateLimit-Reset"] == "999999999999999"  # as good as never
    with pytest.raises(ValueError, match="q would be 1,000,000,000,000,000"):
        http_headers(big._replace(limit=10**15), "both", 1000)


@pytest.mark.parametrize(
    "extra, named",
    [
        (["--limit", "1000000000000000"], "--limit"),
        (
            ["--algorithm", "gcra", "--limit", "3", "--param", "burst=1000000000000000"],
            "--param burst",
        ),
    ],
)
def test_replay_refuses_a_policy_its_headers_cannot_hold_before_it_starts(
    tmp_path, capsys, extra, named
):
    from simulator.cli import main

    trace, out = tmp_path / "t.csv", tmp_path / "out.csv"
    trace.write_text("t_ms,client\n0,a\n")
    args = ["replay", str(trace), "--algorithm", "fixed_window", "--window", "1", *extra]
    assert main([*args, "--headers", "both", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert named in err and "15 digits" in err and not out.exists()


def test_a_user_script_that_does_not_say_what_remains_sends_no_ratelimit_field():
    from simulator.records import Decision

    d = Decision(False, 3.0, 3, -1, -1, 500)  # a user's script: no remaining, no reset
    h = http_headers(d, "both", 1000)
    assert "RateLimit" not in h and "RateLimit-Remaining" not in h
    assert h["RateLimit-Policy"] == '"default";q=3;w=1' and h["Retry-After"] == "1"


# limit 3: a request of cost 1, then one that does not fit; r is what a request of cost 1 still
# gets (the worked figures are each algorithm's [refused_with_room]). An algorithm registered
# from elsewhere is asked for the whole limit after one request, and held to what its refusal
# says.
@pytest.mark.parametrize("name", SHIPPED + ADDED)
def test_a_refusal_says_what_a_request_of_cost_1_still_gets(name):
    if name in ADDED:
        cost, left = 3, None
    else:
        case = algorithm_case(name)["refused_with_room"]
        cost, left = case["cost"], case["left"]
    got = _run(name, 3, 1000, [(0, 1), (0, cost), (0, 1), (0, 1), (0, 1)])
    left = got[1].remaining if left is None else left
    assert not got[1].allowed and got[1].remaining == left
    assert [d.allowed for d in got[2:]] == [True] * left + [False] * (3 - left)


def test_echomq_with_nothing_spent_says_the_budget_is_whole_now():
    d = _run("echomq", 3, 1000, [(0, 4)])[0]  # costs more than the budget: never, key unset
    assert (d.allowed, d.remaining, d.reset_ms, d.retry_after_ms) == (False, 3, 0, -1)
    assert http_headers(d, "draft", 1000)["RateLimit"] == '"default";r=3;t=0'


def test_a_token_bucket_retry_is_not_a_rounding_early():
    # 1 token per 789 ms: 0 + 789 x (1 / 789) is 0.9999999999999999 in floating point
    refused = _run("token_bucket", 1, 789, [(0, 1), (0, 1)], burst=1)[1]
    wait = refused.retry_after_ms
    assert wait == 790 and refused.reset_ms == 790
    assert _run("token_bucket", 1, 789, [(0, 1), (0, 1), (wait, 1)], burst=1)[2].allowed


def test_gcra_counts_what_remains_as_the_next_decision_counts():
    # 3 per 1 ms, burst 4: after a request of cost 3, (1 + 1/3) - 4/3 is the next one's
    # admission time, 0 exactly, where the whole count 1/3 / 1/3 rounds below 1
    first, after = _run("gcra", 3, 1, [(0, 3), (0, 1)], burst=4)
    assert first.remaining == 1 and after.allowed
