"""``bench explorer-browser``: how long a reader of the explorer's page waits, in a real browser.

``bench explorer`` times the explorer's redraws in-process, up to the widgets' values. What a
reader waits for is the page: the explorer notebook served by Voilà (as ``make explore`` does,
the page's kernel running this same code), opened in headless Chromium at 1280×800, its default
scenario. Once the first run is drawn, three waits, each timed in the page from the input event
(the key press or the click) to what the reader waits for being drawn:

- **redraw after a new value**: the limit slider moved one notch up with the keyboard to a limit
  not drawn before, first each change right after the last redraw, then at a reader's pace (a
  change :data:`READ_S` seconds after the last redraw, time enough for the explorer to run the
  limit's neighbours into its cache, as it does while a figure is read); done when the status reads the new run ("run N: ...") and the rows are no
  longer dimmed (they lose ``explorer-stale``); goal: a median of at most 0.25 s;
- **redraw of a value seen before**: the slider moved back down over those limits (the cache);
- **a step of the time bar**: a click on "step ▶" (or "◀ step" when the client shown has too few
  requests left); done when the request counter reads the next request and the server's state
  panel has changed; goal: a median of at most 0.1 s.

Beside each redraw figure stands the median of what the run itself took in the kernel, as the
status line says: the rest is the page's share (the debounce, the messages, the drawing).

The timing is done in the page (``performance.now()``): a capturing listener stamps the key
press or click, a ``MutationObserver`` sees the awaited state appear, and the time is read after
the next frame has been painted (a ``requestAnimationFrame`` and a task after it). The browser
and the server are always stopped, by their own handles, Ctrl-C included: Voilà by a SIGTERM to
its pid and then its kernels by theirs (it runs in its own session: a Ctrl-C at the terminal
does not reach it, this process stops it). Figures are printed with the machine's load average before and
after; nothing is asserted. Without Chromium or playwright one line says what to install.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simulator.bench.explorer import REDRAW_GOAL_S, STEP_GOAL_S
from simulator.bench.timing import load_average, spread, verdict
from simulator.explore.serve import stop_served

if TYPE_CHECKING:
    from playwright.sync_api import Page

__all__ = ["bench_explorer_browser", "CHROMIUM"]

#: Debian's Chromium (playwright drives it; its own browser download is never used).
CHROMIUM = Path("/usr/bin/chromium")
CHANGES = 12
STEPS = 15
#: Seconds a reader looks at a figure before the next change, in the paced measurement.
READ_S = 1.5
#: Long enough for a kernel to start and run on a busy 2-core machine.
WAIT_S = 180.0

#: Arms one measurement: resolves ``window.__bench`` to the seconds from the next key press or
#: click to the awaited state being painted, the status then shown, and for a redraw the seconds
#: to the status reading "running…" (the kernel has the change) and "run N" (drawn, not undimmed).
_ARM = """({kind, run, state, request, timeoutMs}) => {
  const text = (selector) => {
    const found = document.querySelector(selector);
    return found ? found.innerText : '';
  };
  const since = () => (performance.now() - start) / 1000;
  const marks = {busy_s: null, status_s: null};  // "running…" shown, then "run N: ..." shown
  const done = () => {
    if (kind === 'run') {
      const status = text('.explorer-status').trim();
      if (marks.busy_s === null && status.startsWith('running')) marks.busy_s = since();
      const m = /^run (\\d+):/.exec(status);
      if (!m || Number(m[1]) <= run) return false;
      if (marks.status_s === null) marks.status_s = since();
      const rows = document.querySelector('.explorer-rows');
      return !!rows && !rows.classList.contains('explorer-stale');
    }
    return text('.explorer-state') !== state && text('.explorer-instant').includes(request);
  };
  let start = null;
  const stamp = () => { if (start === null) start = performance.now(); };
  window.addEventListener('keydown', stamp, true);
  window.addEventListener('click', stamp, true);
  window.__bench = new Promise((resolve, reject) => {
    let observer = null;
    const finish = (settle) => {
      observer.disconnect();
      clearTimeout(timer);
      window.removeEventListener('keydown', stamp, true);
      window.removeEventListener('click', stamp, true);
      settle();
    };
    const timer = setTimeout(() => finish(() => reject(new Error(
      'no redraw in time; status: ' + text('.explorer-status')))), timeoutMs);
    observer = new MutationObserver(() => {
      if (start === null || !done()) return;
      observer.disconnect();
      // after the frame that shows it has been painted
      requestAnimationFrame(() => setTimeout(() => finish(() => resolve({
        seconds: since(), status: text('.explorer-status'), ...marks,
      })), 0));
    });
    observer.observe(document.body, {
      subtree: true, childList: true, characterData: true, attributes: true,
      attributeFilter: ['class'],
    });
  });
}"""

_FIRST_RUN = """() => {
  const status = document.querySelector('.explorer-status');
  const rows = document.querySelector('.explorer-rows');
  return !!status && /^run 1:/.test(status.innerText.trim()) && !!rows
    && !rows.classList.contains('explorer-stale');
}"""

_REQUEST = re.compile(r"request ([\d,]+) of ([\d,]+)")


def _missing() -> str | None:
    """What to install for this section, or None when everything is there."""
    if not CHROMIUM.exists():
        return f"Debian's Chromium at {CHROMIUM} (apt-get install -y chromium fonts-dejavu)"
    for module in ("playwright", "voila"):
        if importlib.util.find_spec(module) is None:
            return f"the Python package {module} (pip install {module})"
    return None


@contextmanager
def _voila(folder: Path) -> Iterator[str]:
    """The explorer notebook, copied into ``folder``, served by Voilà; yields the page's URL."""
    import simulator
    from simulator.backends.process import free_port
    from simulator.explore.serve import NOTEBOOK, voila_argv

    (folder / "notebooks").mkdir()
    shutil.copy(NOTEBOOK, folder / "notebooks" / NOTEBOOK.name)  # the committed one stays as is
    code = str(Path(simulator.__file__).resolve().parents[1])  # the page runs this same code
    jupyter = folder / ".jupyter"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [code, os.environ.get("PYTHONPATH")])),
        "JUPYTER_CONFIG_DIR": str(jupyter),
        "JUPYTERLAB_SETTINGS_DIR": str(jupyter / "lab-settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(jupyter / "workspaces"),
        "JUPYTER_RUNTIME_DIR": str(jupyter / "runtime"),
    }
    port = free_port(False)
    log = folder / "voila.log"
    with log.open("wb") as sink:
        server = subprocess.Popen(
            voila_argv(f"notebooks/{NOTEBOOK.name}", port),
            cwd=folder,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a Ctrl-C at the terminal reaches us, and we stop it
        )
    try:
        deadline = time.monotonic() + WAIT_S
        while True:
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"Voilà did not listen on {port}: {log.read_text()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=5):
                    break
            except OSError:
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/"
    finally:
        stop_served(server)


@contextmanager
def _chromium() -> Iterator[Page]:
    """A page of headless Chromium at 1280×800; the browser and playwright's driver closed after."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM), args=["--no-sandbox"], handle_sigint=False
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.set_default_timeout(WAIT_S * 1000)
            yield page
        finally:
            browser.close()


def _timed(page: Page, act: Callable[[], object], kind: str, **before: Any) -> dict[str, Any]:
    """What :data:`_ARM` measures of the input ``act`` causes (seconds, status, marks)."""
    from playwright.sync_api import Error

    page.evaluate(_ARM, {"kind": kind, "timeoutMs": WAIT_S * 1000, **before})
    act()
    try:
        result: dict[str, Any] = page.evaluate("() => window.__bench")
    except Error as exc:
        raise RuntimeError(f"explorer-browser: {exc.message}") from None
    return result


@dataclass(frozen=True)
class _Redraw:
    """One redraw: seconds from the key press to the status saying "running…", to it saying
    "run N", and to the rows undimmed and painted; the run's own seconds in the kernel (as the
    status says); whether its limit had been drawn before."""

    busy_s: float
    status_s: float
    seconds: float
    run_s: float
    seen: bool


def _run_number(status: str) -> int:
    found = re.match(r"\s*run (\d+):", status)
    if found is None:
        raise RuntimeError(f"explorer-browser: no run in the status: {status!r}")
    return int(found.group(1))


def _limit(status: str) -> int:
    found = re.search(r"limit ([\d,]+) per", status)
    return int(found.group(1).replace(",", "")) if found else -1


class _Redraws:
    """The limit slider of the page, moved with the keyboard, each redraw timed."""

    def __init__(self, page: Page, status: str) -> None:
        self.page, self.run = page, _run_number(status)
        self.drawn = {_limit(status)}
        slider = page.locator(".widget-slider", has_text="limit (requests)").first
        slider.scroll_into_view_if_needed()
        self.handle = slider.locator(".noUi-handle").first

    def move(self, key: str) -> _Redraw:
        """One notch (``ArrowRight`` or ``ArrowLeft``), timed."""
        found = _timed(self.page, lambda: self.handle.press(key), "run", run=self.run)
        status = str(found["status"])
        self.run, limit = _run_number(status), _limit(status)
        seen = limit in self.drawn
        self.drawn.add(limit)
        ran = re.search(r"\((\d+(?:\.\d+)?) s\)", status)
        nan = float("nan")
        return _Redraw(
            busy_s=nan if found["busy_s"] is None else float(found["busy_s"]),
            status_s=nan if found["status_s"] is None else float(found["status_s"]),
            seconds=float(found["seconds"]),
            run_s=float(ran.group(1)) if ran else nan,
            seen=seen,
        )


def _steps(page: Page, count: int) -> list[float]:
    """``count`` steps of the time bar, on (or back when the client shown has too few left)."""
    instant = page.locator(".explorer-instant").first
    state = page.locator(".explorer-state").first
    found = _REQUEST.search(instant.inner_text())
    if found is None:
        raise RuntimeError(f"explorer-browser: no request shown: {instant.inner_text()!r}")
    at, of = (int(g.replace(",", "")) for g in found.groups())
    by = 1 if of - at >= count or of - at >= at - 1 else -1
    button = page.locator(".explorer-forward" if by > 0 else ".explorer-back").first
    seconds = []
    for _ in range(min(count, of - at if by > 0 else at - 1)):
        at += by
        step = _timed(
            page, button.click, "step", state=state.inner_text(), request=f"request {at:,} of"
        )
        seconds.append(float(step["seconds"]))
    return seconds


def bench_explorer_browser(
    decisions: int = 10_000,
    out: Callable[[str], None] = print,
    *,
    changes: int = CHANGES,
    steps: int = STEPS,
) -> None:
    """Print the page's waits: ``changes`` of the limit of each kind and ``steps`` of the time
    bar (``decisions`` is not used: the scenario is the notebook's)."""
    if changes < 1 or steps < 1:
        raise ValueError(f"explorer-browser: changes and steps at least 1, got {changes}, {steps}")
    missing = _missing()
    if missing is not None:
        out(f"explorer-browser: skipped, it needs {missing}")
        return
    from playwright.sync_api import Error as PlaywrightError

    with tempfile.TemporaryDirectory(prefix="explorer-browser-") as folder:
        before = load_average()
        with _voila(Path(folder)) as url, _chromium() as page:
            opened = time.perf_counter()
            page.goto(url)
            status = page.locator(".explorer-status").first
            try:
                page.wait_for_function(_FIRST_RUN, polling=10)
            except PlaywrightError:
                said = status.inner_text() if status.count() else "no explorer on the page"
                raise RuntimeError(f"explorer-browser: no first run drawn; {said}") from None
            first_s = time.perf_counter() - opened
            _measure(page, status.inner_text(), first_s, before, out, changes, steps)
        out(f"after: {load_average()}")


def _measure(
    page: Page,
    status: str,
    first_s: float,
    load: str,
    out: Callable[[str], None],
    changes: int,
    steps: int,
) -> None:
    decided = re.search(r"([\d,]+) decisions", status)
    clients = re.search(r"(\d+) clients?", status)
    out(
        f"explorer-browser: the explorer page (Voilà) in headless Chromium at 1280x800, default "
        f"scenario ({clients.group(0) if clients else 'clients unknown'}, limit {_limit(status)}"
        f"), {decided.group(1) if decided else '?'} decisions a run; first run drawn "
        f"{first_s:.1f} s after the page was opened; {load}"
    )
    redraws = _Redraws(page, status)
    fresh = [redraws.move("ArrowRight") for _ in range(changes)]
    paced = []
    for _ in range(changes):
        page.wait_for_timeout(READ_S * 1000)  # the reader looks at the figure first
        paced.append(redraws.move("ArrowRight"))
    back = [redraws.move("ArrowLeft") for _ in range(changes)]
    for label, timed in (
        (f"redraw after a new value, each right after the last redraw ({changes} changes)", fresh),
        (
            f"redraw after a new value at a reader's pace (each change {READ_S:g} s after the "
            f"last redraw; {changes} changes)",
            paced,
        ),
        (f"redraw of a value seen before ({changes} changes back)", back),
    ):
        median, _, said = spread([r.seconds for r in timed])
        wrong = sum(r.seen != (timed is back) for r in timed)
        odd = f" ({wrong} not as labelled)" if wrong else ""
        busy, drawn, ran = (
            statistics.median(getattr(r, name) for r in timed)
            for name in ("busy_s", "status_s", "run_s")
        )
        out(
            f"{label}{odd}: {said}; redraw {verdict(median, REDRAW_GOAL_S)}; medians: "
            f'"running…" shown at {busy:.3f} s, "run N" at {drawn:.3f} s, the run itself '
            f"{ran:.2f} s"
        )
    stepped = _steps(page, steps)
    if stepped:
        median, _, said = spread(stepped)
        met = verdict(median, STEP_GOAL_S)
        out(f"a step of the time bar ({len(stepped)} steps): {said}; step {met}")
    else:
        out("a step of the time bar: the client shown has a single request, nothing to step")
