"""The explorer's rows: what a redraw computes and what it sends the page.

A row's marks must say what the decision rows say (the hover text, the trailing count); a redraw
of a log seen before must reuse its marks, and send each widget only what changed, in one message.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import ipywidgets as w
import numpy as np
import pandas as pd
import pytest

from simulator import metrics
from simulator.charts import explorer
from simulator.charts.explorer import Rows, marks_of, windows_at
from simulator.engine.run import simulate
from simulator.engine.scenario import BurstAt, Scenario
from simulator.explore import Runner, Settings

WINDOW_MS = 10_000


@pytest.fixture(scope="module")
def outcomes() -> tuple[Any, Any]:
    """The explorer's default run at two limits (a control moved one notch)."""
    runner = Runner()
    settings = Settings(duration_s=30)
    return runner.run(settings), runner.run(Settings(duration_s=30, limit=settings.limit + 1))


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[Any, tuple[str, ...]]]]:
    """Every message a widget sends the page: (widget, the traits in it)."""
    messages: list[tuple[Any, tuple[str, ...]]] = []

    def record(self: Any, msg: dict[str, Any], buffers: Any = None) -> None:
        messages.append((self, tuple(sorted(msg.get("state", {})))))

    monkeypatch.setattr(w.Widget, "_send", record)
    yield messages


def _reference_text(row: pd.Series, t_s: float, in_window: int) -> str:
    """The hover text of one decision row, read field by field from the row."""
    retry = row["retry_after_ms"]
    retry_s = "" if row["allowed"] or pd.isna(retry) else f", Retry-After {int(retry) / 1000:g} s"
    return (
        f"t {t_s:.3f} s: {'admitted' if row['allowed'] else 'refused'} (cost {int(row['cost'])}), "
        f"script's count {row['count']:g}, remaining {int(row['remaining'])}, reset in "
        f"{int(row['reset_ms']) / 1000:g} s{retry_s}; admitted in the trailing window {in_window}"
    )


def test_marks_say_what_each_decision_row_says(outcomes):
    outcome, _ = outcomes
    for algorithm, frame in outcome.frames.items():
        for client in outcome.clients():
            m = marks_of(frame, client, WINDOW_MS, 1_000)
            mine = frame[frame["client"] == client]
            counts = metrics.rolling_admitted(mine, WINDOW_MS).to_numpy()
            assert m.in_window.tolist() == counts.tolist()
            assert m.t_ms.tolist() == mine["t_ms"].tolist()
            assert m.reset_ms.tolist() == mine["reset_ms"].tolist()
            assert m.t_s.tolist() == ((mine["t_ms"] - 1_000) / 1000).tolist()
            texts = [
                _reference_text(row, t, n)
                for (_, row), t, n in zip(mine.iterrows(), m.t_s, counts, strict=True)
            ]
            assert m.text == texts, algorithm
    assert any("Retry-After" in t for f in outcome.frames.values() for t in marks_of(
        f, outcome.clients()[0], WINDOW_MS, 0).text)  # fmt: skip


def test_a_log_of_two_runs_counts_each_run_apart():
    one = simulate(Scenario("sliding_log", 3, WINDOW_MS, 5_000, (BurstAt("u", 5, (1,)),)))
    other = one.assign(run_id="other")
    both = pd.concat([one, other], ignore_index=True)
    m = marks_of(both, "u", WINDOW_MS, 0)
    assert m.in_window.tolist() == [1, 2, 3, 3, 3] * 2
    assert marks_of(both, None, WINDOW_MS, 0).text == []


def test_a_redraw_of_a_log_seen_before_works_nothing_out_again(outcomes, monkeypatch):
    a, b = outcomes
    s = a.settings
    rows = Rows()
    calls: list[str] = []
    original = explorer.marks_of

    def counting(frame, *rest):
        calls.append(frame["algorithm"].iloc[0])
        return original(frame, *rest)

    monkeypatch.setattr(explorer, "marks_of", counting)
    first = rows.show(a.frames, s.limit, s.window_ms, "bursts-1")
    rows.show(b.frames, s.limit + 1, s.window_ms, "bursts-1")
    assert len(calls) == 2 * len(a.frames)
    again = rows.show(a.frames, s.limit, s.window_ms, "bursts-1")
    assert len(calls) == 2 * len(a.frames)
    assert all(again[name] is first[name] for name in first)
    # An equal log that is another object (a run again) is worked out anew, never mistaken.
    copies = {name: f.copy() for name, f in a.frames.items()}
    rows.show(copies, s.limit, s.window_ms, "bursts-1")
    assert len(calls) == 3 * len(a.frames)


def test_the_marks_kept_are_bounded(outcomes, monkeypatch):
    a, _ = outcomes
    monkeypatch.setattr(explorer, "CACHED_MARKS", 1)
    rows = Rows()
    for client in a.clients():
        rows.show(a.frames, 10, WINDOW_MS, client)
    assert len(rows._cache) == 1  # only the last drawn


def test_a_new_limit_sends_each_widget_one_message_and_leaves_the_windows(outcomes, sent):
    a, b = outcomes
    s = a.settings
    rows = Rows()
    rows.show(a.frames, s.limit, s.window_ms, "bursts-1")
    rows.at(12_345)
    sent.clear()
    rows.show(a.frames, s.limit, s.window_ms, "bursts-1")
    rows.at(12_345)
    assert sent == []  # the same run at the same instant: nothing to send
    rows.show(b.frames, s.limit + 1, s.window_ms, "bursts-1")
    rows.at(12_345)
    per_widget = Counter(id(widget) for widget, _ in sent)
    assert sent and max(per_widget.values()) == 1
    unmoved = {id(r.band) for r in rows._rows.values()} | {id(r.rule) for r in rows._rows.values()}
    assert not unmoved & set(per_widget)  # the windows and the rule span the row, limit or not
    marks = {id(r.admitted) for r in rows._rows.values()} | {
        id(r.refused) for r in rows._rows.values()
    }
    assert any(id(widget) in marks for widget, _ in sent)  # some refused what they admitted
    assert all(
        set(keys) <= {"names", "size", "x", "y"} for widget, keys in sent if id(widget) in marks
    )
    # A row's ticks reach the page before their scale (ticks set after a new domain are left
    # half faded there).
    order = [id(widget) for widget, _ in sent]
    for r in rows._rows.values():
        if id(r.y) in order and id(r.y_axis) in order:
            assert order.index(id(r.y_axis)) < order.index(id(r.y))
    assert any(id(r.y) in order and id(r.y_axis) in order for r in rows._rows.values())
    # A step of the time bar moves the rule and (here) the trailing windows: x only.
    sent.clear()
    rows.at(13_345)
    assert {keys for _, keys in sent} == {("x",)}
    assert len(sent) <= 2 * len(rows._rows)


def test_what_the_page_is_sent_is_the_shown_clients_marks_in_small_types(outcomes):
    a, _ = outcomes
    s = a.settings
    rows = Rows()
    drawn = rows.show(a.frames, s.limit, s.window_ms, "bursts-1", span_ms=30_000)
    for name, row in rows._rows.items():
        m = drawn[name]
        assert row.admitted.x.dtype == np.float32 and row.admitted.y.dtype == np.int32
        assert len(row.admitted.x) + len(row.refused.x) == len(m.t_s)
        assert row.refused.y.tolist() == m.in_window[~m.allowed].tolist()
        assert row.admitted.names.tolist() == [
            t for t, ok in zip(m.text, m.allowed, strict=True) if ok
        ]
        # The limit's height in the row is its share of the y scale, as the dashed line shows it.
        assert row.limit.y.tolist() == pytest.approx([s.limit / row.y.max] * 2)
        assert row.rule.scales["y"] is row.band.scales["y"] is rows.full


def test_the_first_hit_window_ends_at_the_reset_of_the_last_decision():
    frame = simulate(Scenario("echomq", 3, WINDOW_MS, 30_000, (BurstAt("u", 2, (2, 5)),)))
    rows = Rows()
    drawn = rows.show({"echomq": frame}, 3, WINDOW_MS, "u", 0, 30_000)
    m = drawn["echomq"]
    last = int(np.flatnonzero(m.t_ms <= 6_000)[-1])
    reset = int(m.reset_ms[last]) - (6_000 - int(m.t_ms[last]))
    rows.at(6_000)
    band = rows._rows["echomq"].band
    ((lo, hi),) = windows_at("echomq", 6_000, WINDOW_MS, reset)
    assert np.atleast_2d(band.x).tolist() == [[lo / 1000, hi / 1000]]
    # the key's own window from its first request at 2 s (its TTL there: W + 1 ms)
    assert (lo, hi) == (2_001, 12_001)
    rows.at(1_000)  # before the client's first request: the trailing window
    assert np.atleast_2d(band.x).tolist() == [[-9.0, 1.0]]
    rows.at(6_000, {"echomq": 1_000})  # a reset given wins
    assert np.atleast_2d(band.x).tolist() == [[-3.0, 7.0]]
