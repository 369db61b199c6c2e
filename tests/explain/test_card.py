"""The card's case, explained: 100 requests at 59.000 s, 100 at 61.000 s, 100 per 60 s.

At 61 s the previous window held 100 and 1 s of the current one has gone, so the estimate is
cur + 100 × 59/60: requests 101 and 102 pass (98.33, 99.33) and request 103 is the first
refused, at 2 + 100 × 59/60 = 100.33.
"""

from __future__ import annotations

import pytest

from simulator.backends.specs import resolve_spec
from simulator.checks import ConfigError
from simulator.explain import Call, Why, explain_decision, why_unavailable
from simulator.policy import resolve

CARD_T_MS = [59_000] * 100 + [61_000] * 100


@pytest.fixture(scope="module")
def card() -> Why:
    policy = resolve("sliding_counter", 100, 60_000, {})
    return explain_decision(policy, CARD_T_MS, None, 102)


def test_the_card_request_reads_the_servers_counters(card: Why) -> None:
    assert card.algorithm == "sliding_counter" and not card.allowed
    gets = [c for c in card.calls if c.command == "GET"]
    cur, prev = int(gets[0].reply), int(gets[1].reply)  # what the server held, not a model
    assert (cur, prev) == (2, 100)
    verdict = card.arithmetic[-1]
    assert f"{cur} + {prev} × 59/60 = 100.33 ≥ 100 → refused" in verdict
    assert card.verdict is False


def test_the_lines_that_ran_are_marked(card: Why) -> None:
    source = card.source_lines
    line_of = {text.strip(): n for n, text in enumerate(source, 1)}
    assert line_of["local cur = tonumber(redis.call('GET', KEYS[1]) or '0')"] in card.ran
    incr = line_of["local count = redis.call('INCRBY', KEYS[1], cost)"]
    assert incr not in card.ran  # refused: nothing counted
    refusal = [n for n, text in enumerate(source, 1) if text.startswith("return {0,")]
    assert refusal and refusal[0] in card.ran
    assert all(card.hits_on(n) >= 1 for n in card.ran) and card.hits_on(1) == 0


def test_the_calls_are_listed_with_their_replies(card: Why) -> None:
    first = card.calls[0]
    assert first == Call("GET", ("rl:sc:{c}:1",), "2", first.line)
    assert first.line is not None and "GET" in card.source_lines[first.line - 1]
    assert [c.command for c in card.calls] == ["GET", "GET"]


def test_an_admitted_request_shows_its_increment() -> None:
    policy = resolve("sliding_counter", 100, 60_000, {})
    why = explain_decision(policy, CARD_T_MS, None, 101)
    assert why.allowed and why.verdict is True
    assert "1 + 100 × 59/60 = 99.33 < 100 → admitted" in why.arithmetic[-1]
    incr = [c for c in why.calls if c.command == "INCRBY"]
    assert incr and incr[0].reply == 2 and incr[0].args == ("rl:sc:{c}:1", 1)


def test_text_and_html_are_escaped_and_marked(card: Why) -> None:
    text = card.as_text()
    assert "▶" in text and "100.33 ≥ 100 → refused" in text
    page = card.as_html()
    assert page.startswith('<div class="why">') and 'class="why-calls"' in page
    assert 'class="why-line why-ran"' in page and "why-arithmetic" in page
    assert "{c}" in page and "<c>" not in page
    assert "&quot;2&quot;" in page  # the GET's reply, escaped
    assert "estimate &gt;= limit" in page and "estimate >= limit" not in page


def test_bad_input_is_one_clear_message() -> None:
    policy = resolve("sliding_counter", 100, 60_000, {})
    with pytest.raises(ConfigError, match="index"):
        explain_decision(policy, [0, 1], None, 2)
    with pytest.raises(ConfigError, match="costs"):
        explain_decision(policy, [0, 1], [1], 0)
    with pytest.raises(ConfigError, match="back in time"):
        explain_decision(policy, [5, 1], None, 1)


def test_a_real_server_says_why_there_is_no_view() -> None:
    line = why_unavailable(resolve_spec("redis://localhost:6379"))
    assert line.startswith("the script view needs the fake server: ") and "\n" not in line
    assert "localhost:6379" in line
    assert why_unavailable(resolve_spec("fakeredis")) == ""  # there the view is
