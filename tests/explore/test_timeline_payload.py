"""The timeline's payload and its page, without a browser: the card's boundary burst (100
requests at 59.000 s and 100 at 61.000 s, 100 per minute) as rows of 200 marks each, the widget's
traits checked as they come in, and the exported page holding everything it needs."""

from __future__ import annotations

import json
import re

import pytest
import traitlets

from simulator.checks import ConfigError
from simulator.explore.export import export_html, page_html
from simulator.explore.front import ROW_FIELDS, Timeline, state_text, timeline_payload
from simulator.explore.presets import PRESETS
from simulator.explore.runs import Runner


@pytest.fixture(scope="module")
def burst() -> dict:
    preset = PRESETS["boundary burst"]
    return timeline_payload(Runner().run(preset.settings), preset.client, index=0)


def test_the_boundary_burst_has_200_marks_in_every_row(burst):
    assert len(burst["rows"]) == len(PRESETS["boundary burst"].settings.algorithms)
    for row in burst["rows"]:
        for name in ROW_FIELDS:
            assert len(row[name]) == 200, (row["algorithm"], name)
        assert row["t_ms"] == [59_000] * 100 + [61_000] * 100
        assert re.fullmatch(r"#[0-9a-f]{6}", row["colour"]), row["colour"]
    assert burst["seams_ms"] == [0.0, 60_000.0, 120_000.0]
    assert burst["limit"] == 100.0 and burst["view_ms"] == []


def test_the_sliding_log_refuses_the_second_hundred(burst):
    log = next(r for r in burst["rows"] if r["algorithm"] == "sliding_log")
    assert log["admitted"] == [True] * 100 + [False] * 100
    assert log["in_window"][:100] == list(range(1, 101)) and set(log["in_window"][100:]) == {100}
    assert log["state"][100] == "refused · count 100 · 0 left · retry 58 s"
    fixed = next(r for r in burst["rows"] if r["algorithm"] == "fixed_window")
    assert all(fixed["admitted"]) and fixed["counted"] == "grid"


def test_the_payload_is_plain_json(burst):
    assert json.loads(json.dumps(burst, allow_nan=False)) == burst


def test_the_first_refusal_is_chosen_when_no_index_is_given():
    preset = PRESETS["boundary burst"]
    outcome = Runner().run(preset.settings)
    payload = timeline_payload(outcome, preset.client, algorithms=["sliding_log", "gcra"])
    assert [r["algorithm"] for r in payload["rows"]] == ["sliding_log", "gcra"]
    assert payload["index"] == 100


def test_state_text():
    assert state_text(True, 3.0, 96, None) == "admitted · count 3 · 96 left"
    assert state_text(False, None, None, 1500) == "refused · retry 1.5 s"


def test_the_widget_keeps_its_values_in_range(burst):
    w = Timeline(**burst)
    assert (w.index, w.limit, w.unit, w.large) == (0, 100.0, "s", False)
    w.index = 10_000
    assert w.index == 199
    with pytest.raises(traitlets.TraitError, match="view_ms"):
        w.view_ms = [1.0, 2.0, 3.0]
    with pytest.raises(traitlets.TraitError, match="burst_n"):
        w.burst_n = 0
    with pytest.raises(traitlets.TraitError, match="play_rate"):
        w.play_rate = 0
    w.added = [{"t_ms": 30_000, "n": 1}]
    w.view_ms = [58_000.0, 62_000.0]
    w.show({**burst, "index": 150})
    assert w.index == 150 and w.added == [{"t_ms": 30_000, "n": 1}]
    assert w.view_ms == [58_000.0, 62_000.0]
    w.show(burst, keep_view=False)
    assert w.view_ms == [] and w.index == 0


def test_the_exported_page_needs_nothing_from_outside(burst, tmp_path):
    path = export_html(burst, tmp_path / "burst.html")
    text = path.read_text(encoding="utf-8")
    assert "export default" not in text and "timelineWidget" in text
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text), "an outside resource"
    assert "import " not in text.split("<script>", 1)[1].split("const NORMAL", 1)[0]
    data = text.split('id="timeline-data">', 1)[1].split("</script>", 1)[0]
    assert json.loads(data.replace("<\\/", "</"))["rows"] == burst["rows"]


def test_a_payload_without_rows_is_refused():
    with pytest.raises(ConfigError, match="no rows"):
        page_html({"limit": 3})
