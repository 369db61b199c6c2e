"""The explorer in a real browser: JupyterLab and the Voila page, in headless Chromium.

Each test starts its own server (JupyterLab or Voila) on a free loopback port, over a copy of the
notebooks (so that nothing the browser does can touch the committed ones), drives Debian's
Chromium through Playwright, and stops the server - and the kernels it started - by their own
pids. In JupyterLab the test reads the summary line, moves the limit slider, and checks that a
higher limit admits at least as many requests and that no cell shows an error. On the Voila page
at 1280×800 it checks that the controls and the first row are in view together, clicks a preset,
steps through the requests with the time bar and reads the server's keys and the header fields
shown at a refusal; another test opens and closes the page five times and checks that kernels
and the servers they started do not pile up. Screenshots go under data/ (which the README shows)
when SAVE_SCREENSHOTS=1. Waits are for states, with generous timeouts; no time is asserted.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from lab_server import open_notebook, run_all
from served import CHROMIUM, need_chromium  # noqa: E402

need_chromium()

from playwright.sync_api import Page, sync_playwright  # noqa: E402

from simulator.backends.process import free_port  # noqa: E402
from simulator.explore.serve import descendants, stop_served  # noqa: E402

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"


def shots() -> Path:
    """Where the screenshots go: data/ (the README shows them) when SAVE_SCREENSHOTS=1 is set,
    else a temporary folder, so that a test run leaves the work tree as it was."""
    if os.environ.get("SAVE_SCREENSHOTS") == "1":
        return DATA
    folder = Path(tempfile.gettempdir()) / f"explorer-shots-{os.getpid()}"
    folder.mkdir(exist_ok=True)
    return folder


#: Long enough for a kernel to start and run on a busy 2-core machine.
WAIT_MS = 300_000  # a kernel started and a run drawn on a busy 2-core machine
LINE = re.compile(r"^(\w+): admitted ([\d,]+) of ([\d,]+)", re.M)


def _serve(argv: list[str], cwd: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    """Start a server and wait until it listens on ``port`` (or exits)."""
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(cwd / ".jupyter"),
        "JUPYTERLAB_SETTINGS_DIR": str(cwd / ".jupyter" / "lab-settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(cwd / ".jupyter" / "workspaces"),
        "JUPYTER_RUNTIME_DIR": str(cwd / ".jupyter" / "runtime"),
    }
    news = cwd / ".jupyter" / "lab-settings" / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True, exist_ok=True)  # no "official Jupyter news?" toast over the page
    (news / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + WAIT_MS / 1000
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited: {log.read_text()[-3000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5):
                return proc
        except OSError:
            time.sleep(0.5)
    stop_served(proc)
    raise AssertionError(f"server did not listen on {port}: {log.read_text()[-3000:]}")


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A copy of the notebooks: a browser saving or autosaving one changes only the copy."""
    shutil.copytree(
        ROOT / "notebooks", tmp_path / "notebooks", ignore=shutil.ignore_patterns("0[1-9]*")
    )
    return tmp_path


@pytest.fixture
def browser_page() -> Iterator[Page]:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1400})
            page.set_default_timeout(WAIT_MS)
            yield page
        finally:
            browser.close()


def _admitted(text: str) -> dict[str, int]:
    return {name: int(a.replace(",", "")) for name, a, _ in LINE.findall(text)}


def _summary(page: Page, scroll: str | None = None) -> str:
    """The summary text once it is there (scrolling the notebook so that the cell renders)."""
    deadline = time.monotonic() + WAIT_MS / 1000
    while time.monotonic() < deadline:
        if scroll:
            page.evaluate(
                f"for (const e of document.querySelectorAll('{scroll}')) e.scrollTop = 1e9"
            )
        found = page.locator(".explorer-summary")
        # read once: a run that starts in between (a cell run again) empties the summary
        text = found.first.inner_text() if found.count() else ""
        if LINE.search(text):
            return text
        page.wait_for_timeout(500)
    raise AssertionError("the explorer's summary never appeared")


def _move_limit(page: Page, steps: int) -> None:
    """Moves the limit slider ``steps`` to the right with the keyboard, as a reader would."""
    slider = page.locator(".widget-slider", has_text="limit (requests)").first
    slider.scroll_into_view_if_needed()
    handle = slider.locator(".noUi-handle").first
    handle.focus()
    for _ in range(steps):
        handle.press("ArrowRight")


def _run_after(page: Page, run: int, limit: int) -> str:
    """The summary once the status says run ``run`` or later was drawn, at ``limit``."""
    status = page.locator(".explorer-status").first
    deadline = time.monotonic() + WAIT_MS / 1000
    while time.monotonic() < deadline:
        text = status.inner_text()
        m = re.search(r"run (\d+):.* limit ([\d,]+) per", text)
        if m and int(m.group(1)) >= run and int(m.group(2).replace(",", "")) == limit:
            summary = page.locator(".explorer-summary").first.inner_text()
            if LINE.search(summary):  # not emptied by a run that started since
                return summary
        page.wait_for_timeout(300)
    raise AssertionError(f"no run at limit {limit} was drawn; status: {status.inner_text()}")


def _no_errors(page: Page) -> None:
    errors = page.locator(
        '[data-mime-type="application/vnd.jupyter.stderr"], .jp-OutputArea-output.jp-mod-error'
    )
    assert errors.count() == 0, errors.first.inner_text()
    assert "color:#b00" not in page.locator(".explorer-status").first.inner_html()


def _explore(page: Page, scroll: str | None) -> None:
    """Read, move the limit 10 -> 15, read again: a higher limit admits at least as many."""
    text = _summary(page, scroll)
    before = _admitted(text)
    assert before, f"no summary line per algorithm: {text!r}"
    _move_limit(page, 5)
    after = _admitted(_run_after(page, 2, 15))
    assert after.keys() == before.keys()
    for name in before:
        assert after[name] >= before[name], (name, before[name], after[name])
    _no_errors(page)


def test_explorer_in_jupyterlab(workdir, browser_page, tmp_path):
    port = free_port(False)
    url = f"http://127.0.0.1:{port}"
    argv = [
        sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root",
        "--ServerApp.token=", "--ServerApp.password=", "--ip", "127.0.0.1",
        "--port", str(port), "--LabApp.expose_app_in_browser=True",
        f"--ServerApp.root_dir={workdir}",
    ]  # fmt: skip
    server = _serve(argv, workdir, port, tmp_path / "lab.log")
    try:
        page = browser_page
        open_notebook(page, url, "notebooks/00_explorer.ipynb")
        page.wait_for_timeout(2000)  # anything that would mark it modified has happened by now
        committed = json.loads((ROOT / "notebooks" / "00_explorer.ipynb").read_text())
        if committed["metadata"]["language_info"]["version"] == platform.python_version():
            # JupyterLab writes the kernel's language_info (with Python's version) on open.
            dirty = page.locator(".lm-TabBar-tab.jp-mod-current.jp-mod-dirty")
            assert dirty.count() == 0, "the notebook is marked modified on open"
        page.evaluate("() => { window.jupyterapp.commands.execute('docmanager:save'); }")
        source = workdir / "notebooks" / "src" / "00_explorer.py"
        stamp = source.stat().st_mtime_ns
        deadline = time.monotonic() + WAIT_MS / 1000
        while source.stat().st_mtime_ns == stamp and time.monotonic() < deadline:
            page.wait_for_timeout(300)
        assert source.read_text() == (ROOT / "notebooks" / "src" / "00_explorer.py").read_text(), (
            "saving the notebook rewrote its paired source"
        )
        run_all(page, "00_explorer.ipynb")
        _explore(page, ".jp-WindowedPanel-outer")
        page.locator(".explorer-summary").first.scroll_into_view_if_needed()
        page.screenshot(path=str(shots() / "explorer_lab.png"))
    finally:
        stop_served(server)


def _voila(workdir: Path, tmp_path: Path, **cull: float) -> tuple[subprocess.Popen[bytes], str]:
    from simulator.explore.serve import voila_argv

    port = free_port(False)
    argv = voila_argv("notebooks/00_explorer.ipynb", port, **cull)
    return _serve(argv, workdir, port, tmp_path / "voila.log"), f"http://127.0.0.1:{port}"


def _wait_text(page: Page, selector: str, pattern: str) -> str:
    """The text of ``selector`` once it matches ``pattern`` (non-breaking spaces read as
    spaces)."""
    found = page.locator(selector).first
    deadline = time.monotonic() + WAIT_MS / 1000
    while time.monotonic() < deadline:
        text = found.inner_text().replace("\xa0", " ")
        if re.search(pattern, text):
            return text
        page.wait_for_timeout(200)
    raise AssertionError(f"{selector} never matched {pattern!r}: {found.inner_text()!r}")


def test_explorer_as_a_page(workdir, tmp_path):
    server, url = _voila(workdir, tmp_path)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 800})
                page.set_default_timeout(WAIT_MS)
                page.goto(url + "/")
                assert _admitted(_summary(page)), "no summary line per algorithm"
                assert page.get_by_text("from simulator.explore").count() == 0, "code is shown"
                # Cause and effect on one screen: the controls and the first row in view.
                first = page.locator(".explorer-timeline .tl-row").first.bounding_box()
                tabs = page.locator(".explorer .widget-tab").first.bounding_box()
                presets = page.locator(".explorer-presets").first.bounding_box()
                assert first and tabs and presets
                assert first["y"] + first["height"] <= 800, first
                assert tabs["y"] < 800 and presets["y"] + presets["height"] <= 800
                assert first["x"] >= tabs["x"] + tabs["width"] - 1, "the figure sits beside"
                page.get_by_role("button", name="boundary burst").click()
                _wait_text(page, ".explorer-status", r"run 2: .* limit 100 per 60 s")
                assert page.locator(".explorer-timeline.explorer-stale").count() == 0
                page.locator(".explorer-state-of select").select_option(label="sliding_log")
                _wait_text(page, ".explorer-state", r"sliding_log at")
                # A preset starts at its first refusal (the first request of second 61), kept
                # when another server is shown.
                _wait_text(page, ".explorer-instant", r"request 101 of 200 at 61\.000 s")
                for n in range(102, 107):  # five steps on, one request each
                    page.get_by_role("button", name="step ▶").click()
                    _wait_text(page, ".explorer-instant", rf"request {n} of 200 at 61\.000 s")
                state = _wait_text(page, ".explorer-state", r"refused")
                assert "rl:sl:{bursts-1}" in state, state
                assert "100 members" in state, state  # the 100 admitted at second 59, on the server
                assert re.search(r"PTTL [\d,]+ ms", state), state
                assert re.search(r"Retry-After:\s*58", state), state  # 59 + 60 - 61 s
                assert re.search(r"RateLimit-Remaining:\s*0", state), state
                assert "exact log: 100 of 100" in state, state
                _no_errors(page)
                page.screenshot(path=str(shots() / "explorer.png"))
            finally:
                browser.close()
    finally:
        stop_served(server)


def _kernels(server: subprocess.Popen[bytes]) -> list[int]:
    """The server's kernels: its descendants running ipykernel."""
    found = []
    for pid in descendants(server.pid):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"ipykernel" in cmdline:
            found.append(pid)
    return found


def _running(server: subprocess.Popen[bytes], word: bytes) -> list[int]:
    """The server's descendants whose command line holds ``word``."""
    found = []
    for pid in descendants(server.pid):
        try:
            if word in Path(f"/proc/{pid}/cmdline").read_bytes() and _alive(pid):
                found.append(pid)
        except OSError:
            continue
    return found


def _valkeys(server: subprocess.Popen[bytes]) -> list[int]:
    return _running(server, b"valkey-server")


def _workers(server: subprocess.Popen[bytes]) -> list[int]:
    """The explorer's worker processes (and multiprocessing's own helpers) of any kernel."""
    return _running(server, b"multiprocessing")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_closed_pages_leave_no_kernels_or_servers(workdir, tmp_path):
    server, url = _voila(workdir, tmp_path, idle_s=3, every_s=1)
    valkeys: list[int] = []
    workers: set[int] = set()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
            try:
                for visit in range(5):
                    page = browser.new_page(viewport={"width": 1280, "height": 800})
                    page.set_default_timeout(WAIT_MS)
                    page.goto(url + "/")
                    _summary(page)
                    if visit == 0:  # this visitor starts an embedded Valkey (and the workers)
                        backend = page.locator(".widget-dropdown", has_text="backend")
                        backend.locator("select").select_option(label="embedded Valkey")
                        _wait_text(page, ".explorer-status", r"run 2: .* embedded Valkey")
                        valkeys = _valkeys(server)
                        assert valkeys, "the page's Valkey was not found"
                        workers.update(_workers(server))  # by pid: an orphan leaves the tree
                        assert workers, "the page's worker processes were not found"
                    page.close()
            finally:
                browser.close()
        deadline = time.monotonic() + WAIT_MS / 1000
        while (
            _kernels(server) or any(map(_alive, valkeys)) or any(map(_alive, workers))
        ) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _kernels(server) == [], "kernels of closed pages are still running"
        assert not any(map(_alive, workers)), "worker processes of closed pages still run"
        assert not any(map(_alive, valkeys)), "a closed page's Valkey is still running"
    finally:
        stop_served(server)
