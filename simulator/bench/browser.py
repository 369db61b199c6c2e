"""``bench explorer-browser``: how long a reader of the explorer's page waits, in a real browser.

``bench explorer`` times the explorer's runs in-process. What a reader waits for is the page:
the explorer notebook served by Voilà (as ``make explore`` does, the page's kernel running this
same code), opened in headless Chromium at 1280×800. Each wait is timed in the page: a
capturing listener stamps the input event (``performance.now()``), and the wait ends after the
frame that shows its answer has been painted (a ``requestAnimationFrame`` and a task after it):

- **page load**: from the address opened to the first run's timeline drawn (goal ≤ 3 s), in a
  page of its own each: as ``make explore`` serves it, a kernel is kept preheated (its
  notebook run up to the page's address), and a page takes it - :data:`LOADS` loads, each
  once a fresh kernel is ready (its CPU time still for a second) - and one load as the server
  starts, whose kernel is still starting (what a reader gets when no kernel is ready);
- **a preset**: a click on one (two presets in turn, the boundary burst last) to its run drawn;
- **jump to a seam**: *seam ▶* on the boundary burst (after an untimed *◀ seam*), to the paint;
- **a step** (*step ▶*, or *◀ step* near the last request) and **a scrub frame** (an ``input``
  of the scrub slider): the event to the next paint (goal ≤ 16 ms, one frame at 60 per second);
- **the seam view**: *seam view ±2 s* (after an untimed *whole run*), every mark redrawn;
- **a painted request**: a click on a row's time axis, until every row has been decided again
  (the status reads the next run, the timeline no longer dimmed) and redrawn (goal ≤ 0.25 s);
- **a dragged limit**: from letting go of the dashed limit to the same (goal ≤ 0.25 s);
- **the export**: a click on *export* until its download link is on the page;
- **the first trace load**: the *sample access log* preset, the first time in the page's kernel
  (the file read, every algorithm run over its 10,000 requests), to its run drawn (goal ≤ 3 s),
  and whether the progress bar was shown on the way.

The stepping ones stay in the page; the others go to the kernel and back. Each is printed as
its median and 90th percentile with the load average (as ``uptime`` prints it). The browser and
the server are always stopped, by their own handles, Ctrl-C included: Voilà by a SIGTERM to its
pid and then its kernels by theirs (it runs in its own session: a Ctrl-C at the terminal does
not reach it, this process stops it). Nothing is asserted. Without Chromium or playwright one
line says what to install.
"""

from __future__ import annotations

import importlib.util
import json
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
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simulator.bench.timing import load_average
from simulator.explore.serve import descendants, stop_served

if TYPE_CHECKING:
    from playwright.sync_api import Page

__all__ = ["bench_explorer_browser", "CHROMIUM", "GOALS_S"]

#: Debian's Chromium (playwright drives it; its own browser download is never used).
CHROMIUM = Path("/usr/bin/chromium")
#: How many of each wait that goes to the kernel (presets, painted requests, dragged limits,
#: exports), and of each that stays in the page (seam jumps, steps, scrub frames, seam views).
CHANGES = 12
STEPS = 15
#: Long enough for a kernel to start and run on a busy 2-core machine.
WAIT_S = 180.0
#: Page loads timed with a kernel preheated (each in a page of its own).
LOADS = 3
#: A preheated kernel is ready once its CPU time has not grown for this long (seconds).
IDLE_S = 1.0
#: The goals, in seconds: a frame at 60 per second, a quarter of a second, three seconds.
GOALS_S = {
    "load": 3.0, "step": 0.016, "scrub": 0.016, "painted": 0.25, "dragged": 0.25, "trace": 3.0,
}  # fmt: skip
#: The preset whose first click reads a trace file (the page's first trace load).
TRACE_PRESET = "sample access log"
#: Watches, from now on, whether the run's progress bar is shown (``window.__progressShown``).
_WATCH_PROGRESS = """() => {
  window.__progressShown = false;
  window.__progressStop = false;
  const look = () => {
    const bar = document.querySelector('.explorer-progress');
    if (bar && getComputedStyle(bar).visibility === 'visible') window.__progressShown = true;
    else if (!window.__progressStop) requestAnimationFrame(look);
  };
  requestAnimationFrame(look);
}"""
#: The two presets clicked in turn (the boundary burst last: the seams are measured on it).
PRESETS = ("steady over the limit", "boundary burst")
TL = ".explorer-timeline"

#: Arms one measurement: ``window.__bench`` resolves to the seconds from the next ``on`` event
#: to the frame after ``until`` holds being painted - ``frame``: the page's own handler has run
#: (stepping stays in the page); ``run``: the status reads a run after ``run`` and the timeline
#: is no longer dimmed; ``link``: a new download link - and the timeline's state then.
_ARM = """({on, until, run, timeoutMs}) => {
  const root = () => document.querySelector('.explorer-timeline .tl-root');
  const status = () => (document.querySelector('.explorer-status') || {}).innerText || '';
  const link = () => document.querySelector('.explorer-download-link');
  const old = link();
  const holds = {
    frame: () => true,
    run: () => {
      const m = /^run (\\d+):/.exec(status().trim());
      return !!m && Number(m[1]) > run
        && !document.querySelector('.explorer-timeline.explorer-stale');
    },
    link: () => !!link() && link() !== old,
  }[until];
  let start = null, observer = null, timer = null;
  const stamp = () => { if (start === null) start = performance.now(); };
  window.addEventListener(on, stamp, true);
  window.__bench = new Promise((resolve, reject) => {
    const finish = (settle) => {
      if (observer) observer.disconnect();
      clearTimeout(timer);
      window.removeEventListener(on, stamp, true);
      settle();
    };
    const painted = () => requestAnimationFrame(() => setTimeout(() => finish(() => resolve({
      seconds: (performance.now() - start) / 1000, status: status(),
      state: JSON.stringify(root().timeline.state()),
    })), 0));
    timer = setTimeout(() => finish(() => reject(new Error(
      `no ${until} in time after ${on}; status: ${status()}`))), timeoutMs);
    if (until === 'frame') {  // bubbling: after the page's own handler
      window.addEventListener(on, painted, {once: true});
      return;
    }
    observer = new MutationObserver(() => {
      if (start === null || !holds()) return;
      observer.disconnect();
      observer = null;
      painted();
    });
    observer.observe(document.body, {
      subtree: true, childList: true, characterData: true, attributes: true,
      attributeFilter: ['class'],
    });
  });
}"""

#: The first run drawn: its status, the timeline undimmed and a frame of it drawn.
_FIRST_RUN = """() => {
  const status = document.querySelector('.explorer-status');
  const root = document.querySelector('.explorer-timeline .tl-root');
  return !!status && /^run 1:/.test(status.innerText.trim()) && !!root && !!root.timeline
    && root.timeline.frames().length > 0
    && !document.querySelector('.explorer-timeline.explorer-stale');
}"""
_PAINTED = "() => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)))"


def _missing() -> str | None:
    """What to install for this section, or None when everything is there."""
    if not CHROMIUM.exists():
        return f"Debian's Chromium at {CHROMIUM} (apt-get install -y chromium fonts-dejavu)"
    for module in ("playwright", "voila"):
        if importlib.util.find_spec(module) is None:
            return f"the Python package {module} (pip install {module})"
    return None


@contextmanager
def _voila(folder: Path) -> Iterator[tuple[str, subprocess.Popen[bytes], Path]]:
    """The explorer notebook, copied into ``folder``, served by Voilà as ``make explore``
    serves it (a kernel kept preheated); yields the page's URL, the server and its log."""
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
            voila_argv(f"notebooks/{NOTEBOOK.name}", port, preheat=True),
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
        yield f"http://127.0.0.1:{port}/", server, log
    finally:
        stop_served(server)


def _kernel_pids(server: subprocess.Popen[bytes]) -> dict[str, int]:
    """The kernels the server started that are still running, by id (their command line
    names their connection file, ``kernel-<id>.json``)."""
    found = {}
    for pid in descendants(server.pid):
        try:
            line = Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", "replace")
        except OSError:
            continue
        named = re.search(r"kernel-([0-9a-f-]{36})\.json", line)
        if named and "ipykernel" in line:
            found[named.group(1)] = pid
    return found


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _preheated(server: subprocess.Popen[bytes], log: Path) -> None:
    """Wait until a kernel that no page has taken (Voilà's log says which it started and
    which it handed to a page) is ready: idle for :data:`IDLE_S` (its notebook run, waiting
    for a page)."""
    deadline = time.monotonic() + WAIT_S
    seen: dict[int, tuple[float, float]] = {}  # pid: (its CPU seconds, since when unchanged)
    while time.monotonic() < deadline:
        said = log.read_text(errors="replace")
        started = set(re.findall(r"Kernel started: ([0-9a-f-]{36})", said))
        taken = set(re.findall(r"Using pre-heated kernel: ([0-9a-f-]{36})", said))
        now = time.monotonic()
        for kernel, pid in _kernel_pids(server).items():
            if kernel not in started - taken:
                continue
            try:
                cpu = _cpu_s(pid)
            except OSError:
                continue
            last = seen.get(pid)
            if last is None or cpu != last[0]:
                seen[pid] = (cpu, now)
            elif now - last[1] >= IDLE_S:
                return
        time.sleep(0.1)
    raise RuntimeError(f"explorer-browser: no preheated kernel ready in {WAIT_S:g} s")


@contextmanager
def _chromium() -> Iterator[Callable[[], Page]]:
    """Headless Chromium: yields a maker of pages at 1280×800; the browser and playwright's
    driver closed after."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM), args=["--no-sandbox"], handle_sigint=False
        )

        def new_page() -> Page:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.set_default_timeout(WAIT_S * 1000)
            return page

        try:
            yield new_page
        finally:
            browser.close()


def _load(page: Page, url: str) -> tuple[float, str]:
    """Seconds from ``url`` opened in ``page`` to its first run's timeline painted, and the
    status line then."""
    from playwright.sync_api import Error as PlaywrightError

    opened = time.perf_counter()
    page.goto(url)
    try:
        page.wait_for_function(_FIRST_RUN, polling="raf")
    except PlaywrightError:
        shown = page.locator(".explorer-status").first
        said = shown.inner_text() if shown.count() else "no explorer on the page"
        raise RuntimeError(f"explorer-browser: no first run drawn; {said}") from None
    page.evaluate(_PAINTED)
    return time.perf_counter() - opened, page.locator(".explorer-status").first.inner_text()


def _loads(
    served: tuple[str, subprocess.Popen[bytes], Path], new_page: Callable[[], Page], loads: int
) -> tuple[float, list[float], Page, str]:
    """The page loads: one as the server starts (its kernel still starting: no kernel
    ready), then ``loads`` each with a kernel preheated; the last page is kept (its status
    line with it), the others closed (their kernels are the server's to end)."""
    url, server, log = served
    page = new_page()
    cold_s, status = _load(page, url)
    warm: list[float] = []
    for _ in range(loads):
        page.close()
        _preheated(server, log)
        page = new_page()
        seconds, status = _load(page, url)
        warm.append(seconds)
    return cold_s, warm, page, status


class _Waits:
    """The page, driven as a reader would, each wait timed in the page (seconds)."""

    def __init__(self, page: Page) -> None:
        self.page = page

    def timed(self, act: Callable[[], object], on: str, until: str) -> dict[str, Any]:
        """What :data:`_ARM` measures of the ``on`` event ``act`` causes."""
        from playwright.sync_api import Error

        before = self.run()
        self.page.evaluate(
            _ARM, {"on": on, "until": until, "run": before, "timeoutMs": WAIT_S * 1e3}
        )
        act()
        try:
            found: dict[str, Any] = self.page.evaluate("() => window.__bench")
        except Error as exc:
            raise RuntimeError(f"explorer-browser: {exc.message}") from None
        return found

    def run(self) -> int:
        found = re.match(r"\s*run (\d+):", self.page.locator(".explorer-status").first.inner_text())
        return int(found.group(1)) if found else 0

    def button(self, name: str) -> Callable[[], None]:
        return self.page.locator(TL).get_by_role("button", name=name, exact=True).click

    def state(self) -> dict[str, Any]:
        found: dict[str, Any] = self.page.evaluate(
            "() => document.querySelector('.explorer-timeline .tl-root').timeline.state()"
        )
        return found

    def presets(self, count: int) -> list[float]:
        """The two presets in turn, the boundary burst last."""
        out = []
        for k in range(count):
            name = PRESETS[(k + count) % len(PRESETS)]
            click = self.page.locator(".explorer-presets button", has_text=name).first.click
            out.append(self.timed(click, "click", "run")["seconds"])
        return out

    def first_trace(self) -> tuple[float, bool]:
        """The sample access log's preset, the first time in this kernel (its file read and
        every algorithm run over it), to its run drawn; and whether the progress bar showed."""
        self.page.evaluate(_WATCH_PROGRESS)
        click = self.page.locator(".explorer-presets button", has_text=TRACE_PRESET).first.click
        seconds = float(self.timed(click, "click", "run")["seconds"])
        shown = bool(self.page.evaluate("() => { window.__progressStop = true; "
                                        "return window.__progressShown === true; }"))  # fmt: skip
        return seconds, shown

    def in_page(self, count: int, back: str, timed: str) -> list[float]:
        """``timed`` clicked ``count`` times, each after an untimed ``back``."""
        out = []
        for _ in range(count):
            self.button(back)()
            self.page.evaluate(_PAINTED)
            out.append(self.timed(self.button(timed), "click", "frame")["seconds"])
        return out

    def last(self) -> int:
        """The last request's index of the client shown (the scrub slider's end)."""
        return int(self.page.locator(f"{TL} .tl-scrub").first.get_attribute("max") or 0)

    def steps(self, count: int) -> list[float]:
        """On, or back once the last request is near; each step must move the request."""
        out = []
        for _ in range(count):
            at = self.state()["index"]
            on = "step ▶" if at + count <= self.last() or at < self.last() / 2 else "◀ step"
            found = self.timed(self.button(on), "click", "frame")
            if json.loads(found["state"])["index"] == at:
                raise RuntimeError(f"explorer-browser: {on} left the request at {at + 1}")
            out.append(found["seconds"])
        return out

    def scrubs(self, count: int) -> list[float]:
        scrub = self.page.locator(f"{TL} .tl-scrub").first
        top = self.last()
        out = []
        for k in range(count):
            value = str((self.state()["index"] + 7 * (k + 1)) % (top + 1))
            out.append(self.timed(partial(scrub.fill, value), "input", "frame")["seconds"])
        return out

    def canvas(self) -> dict[str, float]:
        box = self.page.locator(f"{TL} .tl-row canvas.tl-over").first.bounding_box()
        if box is None:
            raise RuntimeError("explorer-browser: no row of the timeline on the page")
        return {"x": box["x"], "y": box["y"], "width": box["width"], "height": box["height"]}

    def painted(self, count: int) -> list[float]:
        out = []
        for k in range(count):
            box = self.canvas()
            x, y = box["x"] + box["width"] * (0.2 + 0.6 * k / count), box["y"] + box["height"] - 6
            found = self.timed(partial(self.page.mouse.click, x, y), "pointerup", "run")
            out.append(found["seconds"])
        return out

    def limit_y(self, box: dict[str, float]) -> float:
        """Where the dashed limit is on the first row (its tooltip says so), in page pixels."""
        tip = self.page.locator(f"{TL} .tl-tip").first
        for dy in range(4, int(box["height"]) - 18, 3):
            self.page.mouse.move(box["x"] + 48, box["y"] + dy)
            if tip.is_visible() and tip.inner_text().startswith("drag: the limit"):
                return box["y"] + dy
        raise RuntimeError("explorer-browser: the dashed limit was not found on the first row")

    def dragged(self, count: int) -> list[float]:
        out = []
        mouse = self.page.mouse
        for k in range(count):
            box = self.canvas()
            y = self.limit_y(box)
            limit = self.state()["limit"]
            by = (6 + k % 3) * (1 if y < box["y"] + 30 else -1)  # down from high up, else up
            mouse.down()
            mouse.move(box["x"] + 48, y + by, steps=3)
            if self.state()["limit"] == limit:
                mouse.up()
                raise RuntimeError(
                    f"explorer-browser: a drag left the limit at {limit} ({y:.0f} {by} {box})"
                )
            out.append(self.timed(mouse.up, "pointerup", "run")["seconds"])
        return out

    def exports(self, count: int) -> list[float]:
        """Each of another request (a step between, untimed): a file like the last is no
        news to the page, and no new link would come."""
        click = self.page.locator(".explorer-export").first.click
        out = []
        for k in range(count):
            self.button("◀ step" if k % 2 else "step ▶")()
            out.append(self.timed(click, "click", "link")["seconds"])
        return out


def _figures(seconds: list[float], goal: str | None = None) -> str:
    """Median and 90th percentile (in ms below a second), the goal's verdict, the load."""
    ordered = sorted(seconds)
    median = statistics.median(ordered)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    ms = ordered[-1] < 1.0
    said = (
        f"median {median * 1e3:.1f} ms, p90 {p90 * 1e3:.1f} ms"
        if ms
        else f"median {median:.2f} s, p90 {p90:.2f} s"
    )
    if goal is not None:
        limit = GOALS_S[goal]
        unit = f"{limit * 1e3:g} ms" if limit < 0.1 else f"{limit:g} s"
        said += f"; goal <= {unit}: {'met' if median <= limit else 'NOT met'}"
    return f"{said}; {load_average()}"


def bench_explorer_browser(
    decisions: int = 10_000,
    out: Callable[[str], None] = print,
    *,
    changes: int = CHANGES,
    steps: int = STEPS,
    loads: int = LOADS,
) -> None:
    """Print the page's waits: ``loads`` page loads with a kernel preheated (and one without),
    ``changes`` of each wait that goes to the kernel and ``steps`` of each that stays in the
    page (``decisions`` is not used: the scenarios are the page's)."""
    if changes < 1 or steps < 1 or loads < 1:
        raise ValueError(
            f"explorer-browser: changes, steps and loads at least 1, got {changes}, {steps}, "
            f"{loads}"
        )
    missing = _missing()
    if missing is not None:
        out(f"explorer-browser: skipped, it needs {missing}")
        return
    with tempfile.TemporaryDirectory(prefix="explorer-browser-") as folder:
        with _voila(Path(folder)) as served, _chromium() as new_page:
            cold_s, warm, page, status = _loads(served, new_page, loads)
            _measure(_Waits(page), status, (cold_s, warm), out, changes, steps)
        out(f"after: {load_average()}")


def _measure(
    waits: _Waits,
    status: str,
    loaded: tuple[float, list[float]],
    out: Callable[[str], None],
    changes: int,
    steps: int,
) -> None:
    decided = re.search(r"([\d,]+) decisions", status)
    clients = re.search(r"(\d+) clients?", status)
    out(
        f"explorer-browser: the explorer page (Voilà) in headless Chromium at 1280x800, default "
        f"scenario ({clients.group(0) if clients else 'clients unknown'}, "
        f"{decided.group(1) if decided else '?'} decisions a run); {changes} of each wait that "
        f"goes to the kernel, {steps} of each that stays in the page; {load_average()}"
    )
    cold_s, warm = loaded
    out(
        f"page load with a kernel preheated, to the first timeline drawn ({len(warm)}): "
        f"{_figures(warm, 'load')}"
    )
    out(f"page load as the server starts (no kernel ready yet; 1): {_figures([cold_s], 'load')}")
    out(f"a preset, click to its run drawn ({changes}): {_figures(waits.presets(changes))}")
    seams = waits.in_page(steps, "◀ seam", "seam ▶")
    out(f"jump to a seam, click to paint ({steps}): {_figures(seams)}")
    out(f"a step, click to paint ({steps}): {_figures(waits.steps(steps), 'step')}")
    out(f"a scrub frame, input to paint ({steps}): {_figures(waits.scrubs(steps), 'scrub')}")
    views = waits.in_page(steps, "whole run", "seam view ±2 s")
    out(f"the seam view, click to paint ({steps}): {_figures(views)}")
    waits.button("whole run")()
    waits.page.evaluate(_PAINTED)  # the rows at their size before a box is read
    painted = waits.painted(changes)
    out(
        f"a painted request, click on a row's axis to every row decided again and drawn "
        f"({changes}): {_figures(painted, 'painted')}"
    )
    dragged = waits.dragged(changes)
    out(
        f"a dragged limit, let go to every row decided again and drawn ({changes}): "
        f"{_figures(dragged, 'dragged')}"
    )
    out(f"the export, click to its download link ({changes}): {_figures(waits.exports(changes))}")
    trace_s, shown = waits.first_trace()
    out(
        f"the first trace load, the {TRACE_PRESET}'s preset to its run drawn, the progress bar "
        f"{'shown' if shown else 'NOT shown'} (1): {_figures([trace_s], 'trace')}"
    )
