"""The explorer for a class: the moment kept, two servers side by side, the why panel asked for
only when open, the presets' cards, predict, the address that carries the moment, and requests
added by hand - in the kernel, without a browser (tests/explore/test_class_drive.py drives the
served page)."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.checks import ConfigError
from simulator.explore import Explorer, Runner, Settings
from simulator.explore.predict import Guesses
from simulator.explore.presets import PRESETS, card_html
from simulator.explore.settings import Traffic
from simulator.explore.timebar import index_of, moment_of
from simulator.explore.url import View, query_of, read_query
from simulator.explore.whypanel import why_html
from simulator.explore.words import nobreak

BURST = PRESETS["boundary burst"]


def _settled(explorer: Explorer) -> None:
    explorer._pool.submit(lambda: None).result()


def test_a_moment_is_its_instant_and_its_place_among_requests_at_that_instant():
    times = np.array([59_000] * 100 + [61_000] * 100)
    assert moment_of(times, 100) == (61_000, 0) and moment_of(times, 150) == (61_000, 50)
    assert index_of(times, (61_000, 50)) == 150
    assert index_of(np.array([59_000, 61_000, 61_000]), (61_000, 5)) == 2  # the last there
    assert index_of(np.array([10, 20, 30]), (25, 0)) == 2  # not there: the next one


@pytest.fixture
def burst():
    explorer = Explorer(BURST.settings, workers=0, look_ahead=False)
    try:
        explorer.refresh()
        yield explorer
    finally:
        explorer.close()


def test_the_request_chosen_stays_chosen_across_servers_and_two_sit_side_by_side(burst):
    assert burst.step is not None and burst.step.index == 100  # its first refusal, by any
    burst.step_to(102)
    for server in ("sliding_counter", "token_bucket", "fixed_window"):
        burst.state_of.value = server
        _settled(burst)
        assert burst.step.index == 102, server
    burst.page.beside.value = "sliding_log"
    _settled(burst)
    assert list(burst.timebar.steps) == ["fixed_window", "sliding_log"]
    assert "explorer-pair" in burst.state.value and "refused" in burst.state.value
    assert burst.timeline.index == 102  # the timeline shows the same request


def test_the_why_panel_is_worked_out_only_while_it_is_open(burst, monkeypatch):
    import simulator.explore.column as column

    asked: list[int] = []
    real = column.why_html
    monkeypatch.setattr(column, "why_html", lambda *a: asked.append(a[3]) or real(*a))
    burst.state_of.value = "sliding_counter"
    for i in (101, 102):
        burst.step_to(i)
    assert asked == [] and burst.page.why.value == ""
    burst.page.why_open.value = True
    _settled(burst)
    assert asked == [102]
    assert "100 × 59/60" in burst.page.why.value and "why-ran" in burst.page.why.value
    burst.step_to(102)
    assert asked == [102]  # worked out once


def test_on_a_real_server_the_why_panel_says_it_needs_the_fake_server():
    policy = BURST.settings.policies["sliding_counter"]
    said = why_html(policy, [0], [1], 0, "c", "valkey")
    assert "fake" in said.lower() and "<i>" in said


def test_each_preset_has_a_card_and_progress_through_them_is_shown():
    questions = set()
    for p in PRESETS.values():
        assert p.watch_for and p.learn and p.try_this
        questions.add(p.question)
    assert len(questions) == len(PRESETS)
    trace = PRESETS["sample access log"]
    assert "boundary" not in trace.question and "refused" in trace.question
    card = card_html(PRESETS["steady over the limit"], {"boundary burst"})
    assert f"preset 2 of {len(PRESETS)} (2 seen)" in card
    assert "watch for:" in card and "you'll learn:" in card and "try this:" in card


@pytest.mark.slow
def test_the_sample_log_shows_a_client_that_is_refused():
    explorer = Explorer(workers=0, look_ahead=False)
    try:
        explorer.refresh()
        explorer.preset("sample access log")
        assert explorer.wait(2, timeout=300), explorer.status.value
        client = explorer.controls.client.value
        refused = sum(
            int((~f.loc[f["client"] == client, "allowed"].astype(bool)).sum())
            for f in explorer.outcome.frames.values()
        )
        assert refused > 0, client
        assert "1,4" not in explorer.instant.value  # seconds from the trace's start, not epoch
        assert all(r["note"].startswith(f"client {client}: ") for r in explorer.timeline.rows)
    finally:
        explorer.close()


def test_predict_hides_the_outcome_until_answered_and_keeps_a_score(burst):
    burst.page.predict.value = True
    _settled(burst)
    assert "<b>?</b>" in burst.state.value and "keys after" not in burst.state.value
    burst.page.remaining.value = "0"
    burst.page.refuse.click()
    _settled(burst)
    assert "keys after" in burst.state.value  # revealed
    assert "score: 0 of 1" in burst.page.score.value  # the fixed window admitted request 101
    burst.step_to(101)
    assert "<b>?</b>" in burst.state.value  # the next one is hidden again
    with pytest.raises(ConfigError, match="remaining"):
        Guesses().answer(("a", "c", 0), True, "many", True, 3)


def test_the_address_carries_the_preset_the_settings_and_the_request():
    s = BURST.settings
    changed = Settings(limit=120, window_s=60.0, traffic=s.traffic, duration_s=120.0)
    view = View("boundary burst", changed, "bursts-1", "sliding_counter", "fixed_window", 101)
    query = query_of(view, s)
    assert "limit=120" in query and "request=101" in query and "burst_n" not in query
    back = read_query(query, {n: p.settings for n, p in PRESETS.items()}, Settings())
    assert back == view
    assert read_query("", {}, Settings()) is None
    with pytest.raises(ConfigError, match="address: limit"):
        read_query("limit=lots", {}, Settings())


def test_an_address_restores_the_moment():
    explorer = Explorer(workers=0, look_ahead=False, address="preset=boundary+burst&request=151")
    try:
        explorer.refresh()
        assert explorer.step is not None and explorer.step.index == 150
        assert "request=151" in explorer.address()
        assert "preset 1 of" in explorer.question.value
    finally:
        explorer.close()


def test_requests_added_by_hand_are_decided_by_every_algorithm():
    t = Traffic(steady=0, poisson=0, bursts=0, on_off=0, polite=0, added=(("u", 1.5, 3),))
    runner = Runner()
    outcome = runner.run(Settings(limit=2, window_s=10.0, traffic=t, duration_s=5.0))
    assert {a: len(f) for a, f in outcome.frames.items()} == dict.fromkeys(outcome.frames, 3)
    assert all(int(f["allowed"].sum()) <= 2 for f in outcome.frames.values())
    with pytest.raises(ConfigError, match="Traffic.added"):
        Traffic(added=(("u", 1.0),))  # type: ignore[arg-type]


def test_a_summary_figure_never_breaks_inside():
    line = "fixed_window: admitted 1 of 2, most one client got in any window 1 (1.00× the limit)"
    assert nobreak(line).count('white-space:nowrap">') == 2
