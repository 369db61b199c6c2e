"""The timeline in Chromium, from an exported page opened from disk (no kernel, no network).

The card's boundary burst: "seam ▶" goes to the first request after the seam at 60 s (request
101, at 61.000 s), and the seam view then shows both bursts on a ms axis as 200 separate marks,
each one hovered over in turn and named by its tooltip; a step lands on request 101 and the
page's model hears of it; the jumps, play to the next refusal, zoom, the limit dragged and a
burst painted onto a time axis each change what they should; every box fits the 1280x800
viewport at both sizes. The frames of a step and a scrub are timed in the page and printed
(run with ``-s`` to see them); nothing is asserted about time.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Iterator
from pathlib import Path

import pytest
from served import CHROMIUM, need_chromium  # noqa: E402

need_chromium()

from playwright.sync_api import Page, sync_playwright  # noqa: E402

from simulator.explore.export import export_html  # noqa: E402
from simulator.explore.front import timeline_payload  # noqa: E402
from simulator.explore.presets import PRESETS  # noqa: E402
from simulator.explore.runs import Runner  # noqa: E402

pytestmark = pytest.mark.browser

WAIT_MS = 60_000
#: The timeline's own handle on the page (what it drew, its frames, its state).
TL = "document.querySelector('.tl-root').timeline"
#: Resolves after the next frame has been painted.
PAINTED = "() => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)))"


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    preset = PRESETS["boundary burst"]
    payload = timeline_payload(Runner().run(preset.settings), preset.client, index=0)
    return export_html(payload, tmp_path_factory.mktemp("timeline") / "burst.html")


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser, exported) -> Iterator[Page]:
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.set_default_timeout(WAIT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(exported.as_uri())
    page.locator(".tl-root canvas").first.wait_for()
    page.evaluate(PAINTED)
    yield page
    page.close()
    assert not errors, errors


def _click(page: Page, name: str) -> None:
    page.get_by_role("button", name=name, exact=True).click()
    page.evaluate(PAINTED)


def _index(page: Page) -> int:
    return page.evaluate("window.timelineModel.get('index')")


def _row(page: Page, algorithm: str) -> int:
    names = page.evaluate("[...document.querySelectorAll('.tl-row')].map(r => r.dataset.algorithm)")
    return names.index(algorithm)


def test_next_seam_then_the_seam_view_shows_both_bursts_mark_by_mark(page):
    _click(page, "seam ▶")
    assert _index(page) == 100
    assert "request 101 of 200 at 61.000 s" in page.locator(".tl-readout").inner_text()
    _click(page, "seam view ±2 s")
    state = page.evaluate(f"{TL}.state()")
    assert state["unit"] == "ms" and state["view"] == [58_000, 62_000], state
    assert page.evaluate("window.timelineModel.get('unit')") == "ms"
    assert "61,000 ms" in page.locator(".tl-readout").inner_text()
    assert "time (ms" in page.locator(".tl-axis-label").inner_text()
    k = _row(page, "sliding_log")
    drawn = page.evaluate(f"{TL}.drawn({k})")
    assert len(drawn) == 200
    first = [m for m in drawn if m["t_ms"] == 59_000]
    second = [m for m in drawn if m["t_ms"] == 61_000]
    assert len(first) == len(second) == 100
    assert max(m["x"] for m in first) < min(m["x"] for m in second)
    xs = sorted(m["x"] for m in drawn)
    assert min(b - a for a, b in zip(xs, xs[1:], strict=False)) >= 2.0, "marks on top of each other"
    canvas = page.locator(".tl-row").nth(k).locator("canvas.tl-over").bounding_box()
    assert canvas
    tip = page.locator(".tl-tip")
    for m in drawn:  # every one of the 200 is a mark of its own to hover over
        page.mouse.move(canvas["x"] + m["x"], canvas["y"] + m["y"])
        text = tip.inner_text()
        at = "59,000 ms" if m["t_ms"] == 59_000 else "61,000 ms"
        decided = "admitted" if m["admitted"] else "refused"
        assert f"request {m['i'] + 1} of 200 · {at}" in text and decided in text, (m, text)


def test_a_step_to_request_101_reaches_the_model(page):
    page.locator(".tl-scrub").fill("99")
    page.evaluate(PAINTED)
    assert "request 100 of 200" in page.locator(".tl-readout").inner_text()
    _click(page, "step ▶")
    assert "request 101 of 200 at 61.000 s" in page.locator(".tl-readout").inner_text()
    assert _index(page) == 100
    state = page.locator(".tl-row").nth(_row(page, "sliding_log")).locator(".tl-state")
    assert state.inner_text() == "refused · count 100 · 0 left · retry 58 s"
    _click(page, "◀ step")
    assert _index(page) == 99


def test_the_jumps_go_forward_and_back(page):
    for name, to in (("refusal ▶", 100), ("◀ seam", 0), ("disagree ▶", 100), ("◀ disagree", 100)):
        if name == "◀ disagree":
            _click(page, "step ▶")
        _click(page, name)
        assert _index(page) == to, name
    _click(page, "◀ refusal")
    assert _index(page) == 100  # the refusals begin at 100: nothing before
    page.locator(".tl-root").focus()  # the keys work once the timeline has the focus
    page.keyboard.press("End")
    page.evaluate(PAINTED)
    assert _index(page) == 199
    page.keyboard.press("ArrowLeft")
    page.evaluate(PAINTED)
    assert _index(page) == 198


def test_play_to_the_next_refusal_stops_there(page):
    page.locator(".tl-speed").select_option("200")
    assert page.evaluate("window.timelineModel.get('play_rate')") == 200
    _click(page, "▶ to next refusal")
    page.wait_for_function(f"() => !{TL}.state().playing")
    assert _index(page) == 100


def test_zoom_the_limit_and_painted_requests(page):
    _click(page, "+")
    lo, hi = page.evaluate(f"{TL}.state().view")
    assert 55_000 < hi - lo < 65_000 and lo < 59_000 < hi
    k = _row(page, "sliding_log")
    canvas = page.locator(".tl-row").nth(k).locator("canvas.tl-over").bounding_box()
    assert canvas
    y = page.evaluate(f"{TL}.drawn({k})[99].y")  # the 100th admitted: at the limit
    page.mouse.move(canvas["x"] + 80, canvas["y"] + y)
    page.mouse.down()
    page.mouse.move(canvas["x"] + 80, canvas["y"] + y + 15, steps=4)
    page.mouse.up()
    limit = page.evaluate("window.timelineModel.get('limit')")
    assert 1 <= limit < 100 and limit == round(limit)
    axis_y = canvas["y"] + canvas["height"] - 6
    page.mouse.click(canvas["x"] + canvas["width"] / 2, axis_y)
    page.keyboard.down("Shift")
    page.mouse.click(canvas["x"] + canvas["width"] / 2 + 30, axis_y)
    page.keyboard.up("Shift")
    # the clicks are handled on the page's next frames: wait for them, not for a fixed time
    page.wait_for_function("window.timelineModel.get('added').length === 2")
    added = page.evaluate("window.timelineModel.get('added')")
    assert [a["n"] for a in added] == [1, 10], added
    page.wait_for_function(
        "document.querySelector('.tl-added').innerText.includes('added: 11 requests')"
    )
    _click(page, "undo")
    page.wait_for_function("window.timelineModel.get('added').length === 1")


def test_a_click_on_a_mark_chooses_it_and_ctrl_wheel_zooms(page):
    _click(page, "seam view ±2 s")  # around the first request, at 59 s
    k = _row(page, "gcra")
    canvas = page.locator(".tl-row").nth(k).locator("canvas.tl-over").bounding_box()
    assert canvas
    mark = page.evaluate(f"{TL}.drawn({k})[42]")
    page.mouse.click(canvas["x"] + mark["x"], canvas["y"] + mark["y"])
    page.evaluate(PAINTED)
    assert _index(page) == mark["i"] == 42  # every row holds the same 200 requests
    lo, hi = page.evaluate(f"{TL}.state().view")
    page.mouse.move(canvas["x"] + canvas["width"] / 2, canvas["y"] + 20)
    page.keyboard.down("Control")
    page.mouse.wheel(0, -100)
    page.keyboard.up("Control")
    page.evaluate(PAINTED)
    lo2, hi2 = page.evaluate(f"{TL}.state().view")
    assert hi2 - lo2 < hi - lo


_BOXES = """() => {
  const out = [];
  for (const e of document.querySelectorAll('.tl-root, .tl-root *')) {
    const b = e.getBoundingClientRect();
    if (!b.width && !b.height) continue;
    const spills = ['BUTTON', 'SPAN', 'LABEL', 'DIV'].includes(e.tagName) && e.children.length === 0
      && e.scrollWidth > e.clientWidth + 1;
    out.push({cls: e.className || e.tagName, left: b.left, right: b.right, top: b.top,
              bottom: b.bottom, spills, font: parseFloat(getComputedStyle(e).fontSize)});
  }
  return {boxes: out, width: document.documentElement.scrollWidth};
}"""


@pytest.mark.parametrize("large", [False, True])
def test_nothing_overflows_1280x800(page, large):
    if large:
        _click(page, "large")
        assert page.evaluate("window.timelineModel.get('large')") is True
    _click(page, "seam ▶")
    _click(page, "seam view ±2 s")
    found = page.evaluate(_BOXES)
    assert found["width"] <= 1280, "the page scrolls sideways"
    out = [b for b in found["boxes"] if b["left"] < -0.5 or b["right"] > 1280.5]
    assert not out, out[:5]
    spilt = [b for b in found["boxes"] if b["spills"]]
    assert not spilt, spilt[:5]
    small = [b for b in found["boxes"] if b["font"] < 12]
    assert not small, small[:5]
    head = page.locator(".tl-head").bounding_box()
    first = page.locator(".tl-row").first.bounding_box()
    assert head and first and first["y"] + first["height"] <= 800, "no row in view"
    for row in page.locator(".tl-row").all():  # titles above their plots, never over marks
        title = row.locator(".tl-title").bounding_box()
        plot = row.locator(".tl-plot").bounding_box()
        assert title and plot and title["y"] + title["height"] <= plot["y"] + 0.5
    page.mouse.wheel(0, 5000)  # the bar stays in view while the rows scroll under it
    page.evaluate(PAINTED)
    head = page.locator(".tl-head").bounding_box()
    assert head and 0 <= head["y"] < 800


_TIME = """async ({what, n}) => {
  const painted = () => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
  const fwd = [...document.querySelectorAll('.tl-btn')].find(b => b.textContent === 'step ▶');
  const scrub = document.querySelector('.tl-scrub');
  const out = [];
  for (let k = 0; k < n; k++) {
    const t0 = performance.now();
    if (what === 'step') fwd.click();
    else { scrub.value = String(k * 3 % 200); scrub.dispatchEvent(new Event('input')); }
    await painted();
    out.push(performance.now() - t0);
  }
  return out;
}"""


def _spread(ms: list[float]) -> str:
    q = statistics.quantiles(ms, n=10)
    return f"median {statistics.median(ms):.1f} ms, p90 {q[-1]:.1f} ms"


def test_step_and_scrub_frames_are_timed(page):
    said = []
    for view in ("whole run", "seam view ±2 s"):
        _click(page, "◀ seam")
        _click(page, view)
        for what in ("step", "scrub"):
            before = len(page.evaluate(f"{TL}.frames()"))
            total = page.evaluate(_TIME, {"what": what, "n": 80})
            drawn = page.evaluate(f"{TL}.frames()")[before:]
            said.append(
                f"{view}, {what}: to the next paint {_spread(total)}; drawing {_spread(drawn)}"
            )
    load = os.getloadavg()
    print("\ntimeline frames (10 rows x 200 requests, 1280x800):", *said, sep="\n  ")
    print(f"  load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    assert len(said) == 4


_ZOOM = """async (n) => {
  const painted = () => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
  const buttons = [...document.querySelectorAll('.tl-btn')];
  const zoomIn = buttons.find(b => b.textContent === '+');
  const zoomOut = buttons.find(b => b.textContent === '−');
  const out = [];
  for (let k = 0; k < n; k++) {
    const t0 = performance.now();
    (k % 2 ? zoomOut : zoomIn).click();
    await painted();
    out.push(performance.now() - t0);
  }
  return out;
}"""


def _many(n: int, rows: int) -> dict:
    """A made-up run of ``rows`` rows of ``n`` requests each over ten minutes."""
    import numpy as np

    from simulator.explore.front import state_text

    rng = np.random.default_rng(1)
    t_ms = np.sort(rng.integers(0, 600_000, n)).tolist()
    made = []
    for k in range(rows):
        admitted = (rng.random(n) > 0.3).tolist()
        made.append({
            "algorithm": f"a{k}", "label": f"row {k}", "colour": "#1f77b4", "note": "",
            "counted": "trailing", "window_ms": 60_000, "t_ms": t_ms, "admitted": admitted,
            "cost": [1] * n, "in_window": rng.integers(0, 120, n).tolist(),
            "count": [None] * n, "remaining": [None] * n, "retry_after_ms": [None] * n,
            "reset_ms": [None] * n, "state": [state_text(a, None, None, None) for a in admitted],
        })  # fmt: skip
    seams = [float(s) for s in range(0, 600_001, 60_000)]
    return {"rows": made, "seams_ms": seams, "limit": 100.0, "index": 0, "view_ms": []}


@pytest.mark.slow
def test_a_large_run_is_timed(browser, tmp_path):
    """Ten rows of 20,000 requests: a step, a scrub and a zoom (which redraws every mark)."""
    path = export_html(_many(20_000, 10), tmp_path / "many.html")
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    try:
        page.set_default_timeout(WAIT_MS)
        page.goto(path.as_uri())
        page.locator(".tl-root canvas").first.wait_for()
        page.evaluate(PAINTED)
        said = [f"{what}: to the next paint {_spread(page.evaluate(_TIME, {'what': what, 'n': 60}))}"
                for what in ("step", "scrub")]  # fmt: skip
        before = len(page.evaluate(f"{TL}.frames()"))
        zooms = page.evaluate(_ZOOM, 20)
        drawn = page.evaluate(f"{TL}.frames()")[before:]
        said.append(f"zoom in or out: to the next paint {_spread(zooms)}; drawing {_spread(drawn)}")
        assert len(page.evaluate(f"{TL}.drawn(0)")) > 1000
    finally:
        page.close()
    load = os.getloadavg()
    print("\ntimeline frames (10 rows x 20,000 requests, 1280x800):", *said, sep="\n  ")
    print(f"  load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
