"""The grader checks the whole reply: every field a script returns, not only the decision.

A fixed window that admits the right requests but answers zeros for the rest is wrong at the
very first request, on ``count``; a script wrong only in its ``retry_after`` is named by that
field; a skeleton left as it is was not attempted; the shipped solutions agree on every field.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import run_main

from simulator.algorithms import ALGORITHMS
from simulator.userscripts.exercises import EXERCISES, NOT_ATTEMPTED, attempt, grade, solution
from simulator.userscripts.fields import FIELDS, HEADER_FIELDS

ROOT = Path(__file__).resolve().parents[2]
PRACTICE = "practice case: 100 at second 59, 100 at 61"

# Right decisions (a counter per grid window, admitted iff count <= limit), zeros for the rest.
ZEROS = """local window, limit = tonumber(ARGV[2]), tonumber(ARGV[3])
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], window) end
local allowed = 0
if count <= limit then allowed = 1 end
return {allowed, 0, 0, 0, 0}
"""
ZEROS_DECLARED = """--[[ ratelimit
keys = ["rl:zeros:{client}:{window}"]
argv = ["now_ms", "window_ms", "limit"]
reply = { allowed = 1, count = 2, remaining = 3, reset = 4, retry_after = 5 }
]]
"""
# The fixed window of the skeleton's contract, but one ms late to retry.
LATE_RETRY = """local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], window) end
local reset = window - (now % window)
if count <= limit then return {1, count, limit, limit - count, reset, 0} end
return {0, count, limit, 0, reset, reset + 1}
"""


@pytest.fixture
def exercises(tmp_path):
    """A copy of the exercises; the scripts registered from it are forgotten afterwards."""
    before = set(ALGORITHMS)
    folder = tmp_path / "exercises"
    shutil.copytree(ROOT / "notebooks" / "exercises", folder)
    yield folder
    for name in set(ALGORITHMS) - before:
        ALGORITHMS.pop(name)


def write_fixed_window(folder: Path, body: str) -> None:
    skeleton = (folder / "fixed_window.lua").read_text()
    head = skeleton[: skeleton.index("return redis.error_reply")]
    (folder / "fixed_window.lua").write_text(head + body)


def test_a_zero_reply_with_the_right_decisions_is_wrong_on_count_at_the_first_request(exercises):
    # the exercise's reply has the limit third: {allowed, count, limit, remaining, reset, retry}
    write_fixed_window(exercises, ZEROS.replace("{allowed, 0,", "{allowed, 0, limit,"))
    g = grade(attempt("fixed_window", exercises))
    assert g.status == "differs" and not g.agrees
    m = g.verdict.mismatch
    assert (m.trace, m.index, m.t_ms, m.client) == (PRACTICE, 1, 59_000, "c")
    assert (m.field, m.difference.expected, m.difference.got) == ("count", "1", "0")
    assert m.said.allowed and m.expected.allowed  # the decision itself was right
    text = str(g)
    assert (
        f"differs in trace {PRACTICE!r} (limit 100 per 60000 ms), request 1 at t_ms=59000, "
        "client 'c': the first field that differs is count: expected 1, got 0; both admitted it"
    ) in text, text
    assert "fields compared: allowed, count, remaining, reset, retry_after, RateLimit r, " in text


def test_check_exits_1_naming_count_at_the_first_request_and_lists_the_fields(tmp_path):
    script = tmp_path / "zeros.lua"
    script.write_text(ZEROS_DECLARED + ZEROS)
    done = run_main("check", script, "--as", "fixed_window")
    assert done.returncode == 1, done.stderr
    out = done.stdout
    assert "request 1 at t_ms=59000, client 'c': the first field that differs is count: " in out
    assert "expected 1, got 0" in out
    assert "by first differing field: count 3,057" in out  # every decision's count is wrong
    compared = ", ".join((*FIELDS, *HEADER_FIELDS))
    assert f"fields compared: {compared} (count to within 1e-09" in out, out
    assert "Traceback" not in done.stderr


def test_an_untouched_skeleton_is_not_attempted(exercises):
    for name in EXERCISES:
        a = attempt(name, exercises)
        assert not a.attempted and a.name is None
        g = grade(a)
        assert g.status == NOT_ATTEMPTED and g.verdict is None and not g.agrees
        assert str(g).startswith(f"{NOT_ATTEMPTED}: ") and "agrees" not in str(g)


@pytest.mark.parametrize("name", EXERCISES)
def test_the_shipped_solution_agrees_on_every_field_it_returns(exercises, name):
    s = solution(name, exercises)
    assert s.solution
    g = grade(s)
    assert g.agrees, str(g)
    v = g.verdict
    assert v.decisions == 3_057 and not v.by_field
    # every field its declaration returns is compared, with the headers made of them
    assert {"allowed", "count", "remaining", "reset", "RateLimit r"} <= set(v.fields)
    assert ("retry_after" in v.fields) == (name != "sliding_counter")
    assert str(v).startswith("agrees on 3,057 decisions over 18 traces, on every field\n")


def test_a_script_wrong_only_in_retry_after_is_named_by_that_field(exercises):
    write_fixed_window(exercises, LATE_RETRY)
    v = grade(attempt("fixed_window", exercises)).verdict
    m = v.mismatch
    # the first refusal: the fifth request of the window [1000, 2000), 1 ms before its seam
    assert (m.trace, m.index, m.t_ms) == ("around the seams: 1 ms before, on, 1 ms after", 7, 1999)
    assert (m.field, m.difference.expected, m.difference.got) == ("retry_after", "1 ms", "2 ms")
    assert set(v.by_field) == {"retry_after"}  # nothing else is wrong
    assert "the first field that differs is retry_after: expected 1 ms, got 2 ms" in str(v)


def test_check_only_compares_the_fields_asked_for_and_refuses_an_unknown_one():
    card = ROOT / "data" / "card" / "sliding-counter.lua"
    done = run_main("check", card, "--as", "sliding_counter", "--only", "allowed")
    assert done.returncode == 1, done.stderr
    # 1 ms into a window, whole seconds say elapsed 0: the card's counter refuses there
    assert "request 5 at t_ms=1001, client 'c': the script refused it" in done.stdout
    assert "fields compared: allowed (the rest exact)" in done.stdout
    assert "left out as asked: count" in done.stdout
    bad = run_main("check", card, "--as", "sliding_counter", "--only", "allowed,cnt")
    assert (
        bad.returncode == 2 and "--only: 'cnt' is not a field: one of allowed, count" in bad.stderr
    )
    assert "Traceback" not in bad.stderr
