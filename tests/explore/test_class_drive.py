"""A teacher's drive through the explorer page at a projector's 1280×800, in headless Chromium.

The served page (tests/explore/served.py starts and stops Voilà by its own handle) is driven as a
class would see it: the boundary-burst preset, the next window seam and the seam view (the 100
requests at 59 s and the 100 at 61 s as marks of their own on a ms axis), request 101 chosen, its
why (the sliding counter's arithmetic, the lines of sliding_counter.lua that ran, its redis.calls
with their replies), another server shown with request 101 still chosen, two servers side by
side, a request added on the timeline (every row decides again), the page's address opened in a
new page (request 101 again), and the exported file opened from disk with no server (it steps to
request 101). On the way every element of the page is measured against the viewport: nothing
cut at the right edge, nothing wider than the page. Screenshots go to data/ only when
SAVE_SCREENSHOTS=1. Waits are for states, with generous timeouts; no time is asserted.
"""

from __future__ import annotations

import base64
import os
import re
import tempfile
import time
from pathlib import Path

import pytest
from served import CHROMIUM, need_chromium  # noqa: E402

need_chromium()

from playwright.sync_api import Page, sync_playwright  # noqa: E402
from served import served  # noqa: E402

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
WAIT_MS = 180_000
WIDTH, HEIGHT = 1280, 800
TL = "document.querySelector('.explorer-timeline .tl-root').timeline"
PAINTED = "() => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)))"

#: Every element of the explorer whose right edge passes the viewport's (a box cut off), and
#: how wide the page is (wider than the viewport: a sideways scroll).
_CLIPPED = """() => {
  const cut = [];
  for (const e of document.querySelectorAll('.explorer *')) {
    const r = e.getBoundingClientRect();
    if (!r.width || !r.height) continue;
    if (getComputedStyle(e).visibility === 'hidden') continue;
    if (r.right > window.innerWidth + 0.5 || r.left < -0.5) {
      cut.push(`${e.tagName.toLowerCase()}.${[...e.classList].join('.')}: ${Math.round(r.left)}..${Math.round(r.right)}`);
    }
  }
  return {cut: cut.slice(0, 12), width: document.documentElement.scrollWidth};
}"""


def _shot(page: Page, name: str) -> None:
    if os.environ.get("SAVE_SCREENSHOTS") == "1":
        page.screenshot(path=str(ROOT / "data" / name))


def _text(page: Page, selector: str) -> str:
    return page.locator(selector).first.inner_text().replace("\xa0", " ")


def _wait(page: Page, selector: str, pattern: str) -> str:
    """The text of ``selector`` once it matches ``pattern``."""
    deadline = time.monotonic() + WAIT_MS / 1000
    while time.monotonic() < deadline:
        found = page.locator(selector)
        text = found.first.inner_text().replace("\xa0", " ") if found.count() else ""
        if re.search(pattern, text):
            return text
        page.wait_for_timeout(200)
    raise AssertionError(f"{selector} never matched {pattern!r}: {text!r}")


def _nothing_clipped(page: Page, where: str) -> None:
    found = page.evaluate(_CLIPPED)
    assert not found["cut"], f"{where}: cut at the viewport's edge: {found['cut']}"
    assert found["width"] <= WIDTH, f"{where}: the page is {found['width']} px wide"


def _run(page: Page, n: int) -> str:
    return _wait(page, ".explorer-status", rf"run (?:{n}|[{n + 1}-9]\d*):")


def _opened(page: Page, url: str) -> None:
    page.goto(url)
    _wait(page, ".explorer-summary", r"\w+: admitted [\d,]+ of")


def _seam_view(page: Page) -> None:
    """Next seam, then the seam view: both bursts in ms, each request a mark of its own."""
    _wait(page, ".explorer-instant", r"request 101 of 200 at 61\.000 s")  # its first refusal
    page.get_by_role("button", name="◀ step", exact=True).click()
    _wait(page, ".explorer-instant", r"request 100 of 200 at 59\.000 s")
    page.get_by_role("button", name="seam ▶", exact=True).click()
    _wait(page, ".explorer-instant", r"request 101 of 200 at 61\.000 s")
    page.get_by_role("button", name="seam view ±2 s", exact=True).click()
    page.evaluate(PAINTED)
    state = page.evaluate(f"{TL}.state()")
    assert state["unit"] == "ms", state
    assert "time (ms" in _text(page, ".explorer-timeline .tl-axis-label")
    names = page.evaluate(
        "[...document.querySelectorAll('.explorer-timeline .tl-row')].map(r => r.dataset.algorithm)"
    )
    drawn = page.evaluate(f"{TL}.drawn({names.index('sliding_log')})")
    first = [m for m in drawn if m["t_ms"] == 59_000]
    second = [m for m in drawn if m["t_ms"] == 61_000]
    assert len(first) == len(second) == 100
    assert max(m["x"] for m in first) < min(m["x"] for m in second)
    xs = sorted(m["x"] for m in drawn)
    assert min(b - a for a, b in zip(xs, xs[1:], strict=False)) >= 2.0, "marks on top of each other"


def _why(page: Page) -> None:
    """The sliding counter's why at request 101: its arithmetic, its lines, its calls."""
    page.locator(".explorer-state-of select").select_option("sliding_counter")
    _wait(page, ".explorer-state", r"sliding_counter at 61\.000 s")
    page.get_by_role("button", name="why? (script and arithmetic)").click()
    why = _wait(page, ".explorer-why", r"× 59/60")
    assert re.search(r"\d+ \+ 100 × 59/60 = [\d.]+", why), why
    ran = page.locator(".explorer-why .why-line.why-ran")
    assert ran.count() >= 3, "the lines of sliding_counter.lua that ran are not marked"
    calls = _text(page, ".explorer-why .why-calls")
    assert re.search(r"GET|HGET|MGET|INCRBY|PTTL", calls, re.I), calls


def _drive(page: Page) -> str:
    page.get_by_role("button", name="boundary burst").click()
    _wait(page, ".explorer-status", r"run 2: .* limit 100 per 60 s")
    _wait(page, ".explorer-card", r"preset 1 of \d+")
    _nothing_clipped(page, "the boundary burst")
    _seam_view(page)
    _shot(page, "explorer_seam.png")
    _why(page)
    _nothing_clipped(page, "the why panel")
    _shot(page, "explorer_why.png")
    for server in ("token_bucket", "fixed_window", "sliding_log"):
        page.locator(".explorer-state-of select").select_option(server)
        _wait(page, ".explorer-state", rf"{server} at 61\.000 s")
        assert "request 101 of 200" in _text(page, ".explorer-instant")
    page.locator(".explorer-beside select").select_option("fixed_window")
    pair = _wait(page, ".explorer-pair", r"sliding_log[\s\S]*fixed_window")
    assert "refused" in pair and "admitted" in pair, pair  # the log refuses 101, the window not
    _nothing_clipped(page, "two servers side by side")
    _shot(page, "explorer_pair.png")
    return page.url


def _add_request(page: Page) -> None:
    """A click on a row's time axis adds a request: every algorithm decides again."""
    before = _text(page, ".explorer-status")
    drawn = int(re.search(r"run (\d+):", before).group(1))
    canvas = page.locator(".explorer-timeline .tl-row canvas.tl-over").first.bounding_box()
    assert canvas
    page.mouse.click(canvas["x"] + canvas["width"] * 0.75, canvas["y"] + canvas["height"] - 6)
    status = _run(page, drawn + 1)
    assert re.search(r"2,010 decisions", status), status  # 201 requests for each of 10


def test_a_class_drives_the_explorer_page(tmp_path):
    with served(tmp_path) as (_server, port, _log):
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
            try:
                page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
                page.set_default_timeout(WAIT_MS)
                errors: list[str] = []
                page.on("pageerror", lambda e: errors.append(str(e)))
                _opened(page, f"http://127.0.0.1:{port}/")
                url = _drive(page)
                assert "request=101" in url and "preset=boundary" in url, url
                page.get_by_role("button", name="export", exact=True).click()
                link = page.locator(".explorer-download-link")
                link.wait_for()
                href = link.get_attribute("href") or ""
                _add_request(page)
                _shot(page, "explorer_added.png")
                again = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
                again.set_default_timeout(WAIT_MS)
                _opened(again, url)
                _wait(again, ".explorer-instant", r"request 101 of 200 at 61\.000 s")
                _wait(again, ".explorer-state", r"sliding_log")
                _wait(again, ".explorer-pair", r"fixed_window")
                again.close()
                assert not errors, errors
                exported = Path(tempfile.mkdtemp()) / "explorer.html"
                exported.write_bytes(base64.b64decode(href.split(",", 1)[1]))
                offline = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
                offline.goto(exported.as_uri())
                offline.locator(".tl-root canvas").first.wait_for()
                offline.locator(".tl-scrub").fill("99")
                _wait(offline, ".tl-readout", r"request 100 of 200")  # the scrub landed first
                offline.get_by_role("button", name="step ▶", exact=True).click()
                _wait(offline, ".tl-readout", r"request 101 of 200")
                _shot(offline, "explorer_exported.png")
            finally:
                browser.close()
