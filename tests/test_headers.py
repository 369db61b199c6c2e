"""The header fields a client reads, worked by hand for each algorithm, from the real scripts.

Limit 2 per 10 s (burst 2 for the buckets) for client c: two requests at t=0, then one just
before the end of the first grid window (t=9999 ms) or, for the buckets, at t=1500 ms, and one at
the start of the next window (t=10000 ms).
"""

from __future__ import annotations

import pytest

from simulator.algorithms import ALGORITHMS
from simulator.backends import FakeRedisBackend
from simulator.records import http_headers

LIMIT, WINDOW_MS = 2, 10_000


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


# (algorithm, times, [(r, t, Retry-After or None), ...])
CASES = [
    (
        "fixed_window",
        [0, 0, 9999, 10_000],
        [(1, 10, None), (0, 10, None), (0, 1, "1"), (1, 10, None)],
    ),
    (
        "sliding_log",
        [0, 0, 9999, 10_000],
        [(1, 10, None), (0, 10, None), (0, 1, "1"), (1, 10, None)],
    ),
    # at 9999 the estimate is 2: only the next window helps, 2 ms on; at 10000 the previous
    # window's 2 still weigh 2 x (10000 - 0) / 10000 = 2, and fade below 2 one ms later
    (
        "sliding_counter",
        [0, 0, 9999, 10_000],
        [(1, 10, None), (0, 10, None), (0, 1, "1"), (0, 1, "1")],
    ),
    # the counter expires at 10000 exactly, so at 10000 it is still there: PTTL 0
    ("echomq", [0, 0, 9999, 10_000], [(1, 10, None), (0, 10, None), (0, 1, "1"), (0, 0, "0")]),
    # a token every 5 s: at 1500 ms 0.3 are back, 0.7 more take 3.5 s (Retry-After 4), while a
    # full bucket is 8.5 s away; t follows the sooner
    ("token_bucket", [0, 0, 1500], [(1, 5, None), (0, 10, None), (0, 4, "4")]),
    ("gcra", [0, 0, 1500], [(1, 5, None), (0, 10, None), (0, 4, "4")]),
    # refusals count: at 9999 the counter is 3, so the next window starts with 3 x 1 to fade
    # below 2 (6668 ms); Retry-After 4 at 9999 is 1 ms to the seam plus 3334 ms of fading
    (
        "sliding_counter_all",
        [0, 0, 9999, 10_000],
        [(1, 10, None), (0, 10, None), (0, 1, "4"), (0, 7, "7")],
    ),
    # INCREX's reply says nothing of the window's end: no t when admitted, and a refusal's
    # retry is the whole window, the longest wait there can be
    (
        "increx",
        [0, 0, 9999, 10_000],
        [(1, None, None), (0, None, None), (0, 10, "10"), (0, 10, "10")],
    ),
    (
        "increx_grid",
        [0, 0, 9999, 10_000],
        [(1, None, None), (0, None, None), (0, 10, "10"), (1, None, None)],
    ),
    # the long policy (10 per 100 s by default) has room throughout: the short one binds
    (
        "multi_policy",
        [0, 0, 9999, 10_000],
        [(1, 10, None), (0, 10, None), (0, 1, "1"), (1, 10, None)],
    ),
]


@pytest.mark.parametrize("name, times, expected", CASES, ids=[c[0] for c in CASES])
def test_draft_fields_worked_by_hand(name, times, expected):
    got = [_draft(name, d) for d in _decisions(name, times)]
    policy = f'"{name}";q=2;w=10'  # the buckets: 2 tokens take the 10 s of the rate to refill
    until = {t: "" if t is None else f";t={t}" for _, t, _ in expected}
    assert got == [(policy, f'"{name}";r={r}{until[t]}', ra) for r, t, ra in expected]


def test_every_algorithm_has_a_worked_case():
    assert {c[0] for c in CASES} == set(ALGORITHMS)


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
    assert main([*args, "--headers", "both", "--out", str(out)]) == 0
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
