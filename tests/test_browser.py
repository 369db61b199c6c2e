"""The explorer in a real browser: JupyterLab and the Voila page, in headless Chromium.

Each test starts its own server (JupyterLab or Voila) on a free loopback port, over a copy of the
notebooks (so that nothing the browser does can touch the committed ones), drives Debian's
Chromium through Playwright, and stops the server - and the kernels it started - by their own
pids. The test reads the summary line, moves the limit slider, and checks that a higher limit
admits at least as many requests, that no cell shows an error, and saves a screenshot (under
data/, which the README shows, when SAVE_SCREENSHOTS=1). Waits are for states, with generous timeouts; no time is asserted.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip(
        "browser tests need Debian's Chromium: apt-get install -y chromium fonts-dejavu",
        allow_module_level=True,
    )

from playwright.sync_api import Page, sync_playwright  # noqa: E402

from simulator.backends.process import free_port  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
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
WAIT_MS = 180_000
LINE = re.compile(r"^(\w+): admitted ([\d,]+) of ([\d,]+)", re.M)


def _children(pid: int) -> list[int]:
    """Every process below ``pid`` (kernels the server started), read from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        kids = [p for p, pp in parents.items() if pp == parent]
        found += kids
        todo += kids
    return found


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the server by its pid, then to any kernel of it still running, by theirs."""
    kids = _children(proc.pid)
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for pid in kids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass


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
    _stop(proc)
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
        if found.count() and "admitted" in found.first.inner_text():
            return found.first.inner_text()
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
            return page.locator(".explorer-summary").first.inner_text()
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
    before = _admitted(_summary(page, scroll))
    assert before, "no summary line per algorithm"
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
        page.goto(f"{url}/lab/tree/notebooks/00_explorer.ipynb?reset")
        page.wait_for_function("() => window.jupyterapp !== undefined")
        page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").wait_for()
        page.wait_for_timeout(2000)  # anything that would mark it modified has happened by now
        committed = json.loads((ROOT / "notebooks" / "00_explorer.ipynb").read_text())
        if committed["metadata"]["language_info"]["version"] == platform.python_version():
            # JupyterLab writes the kernel's language_info (with Python's version) on open.
            dirty = page.locator(".lm-TabBar-tab.jp-mod-current.jp-mod-dirty")
            assert dirty.count() == 0, "the notebook is marked modified on open"
        page.evaluate("() => { window.jupyterapp.commands.execute('docmanager:save'); }")
        source = workdir / "notebooks" / "00_explorer.py"
        stamp = source.stat().st_mtime_ns
        deadline = time.monotonic() + WAIT_MS / 1000
        while source.stat().st_mtime_ns == stamp and time.monotonic() < deadline:
            page.wait_for_timeout(300)
        assert source.read_text() == (ROOT / "notebooks" / "00_explorer.py").read_text(), (
            "saving the notebook rewrote its paired source"
        )
        page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
        _explore(page, ".jp-WindowedPanel-outer")
        page.locator(".explorer-summary").first.scroll_into_view_if_needed()
        page.screenshot(path=str(shots() / "explorer_lab.png"))
    finally:
        _stop(server)


def test_explorer_as_a_page(workdir, browser_page, tmp_path):
    port = free_port(False)
    url = f"http://127.0.0.1:{port}"
    argv = [
        sys.executable, "-m", "voila", "notebooks/00_explorer.ipynb", "--no-browser",
        f"--port={port}", "--Voila.ip=127.0.0.1",
    ]  # fmt: skip
    server = _serve(argv, workdir, port, tmp_path / "voila.log")
    try:
        page = browser_page
        page.goto(url + "/")
        _explore(page, None)
        assert page.get_by_text("from simulator.explore").count() == 0, "code is shown"
        page.screenshot(path=str(shots() / "explorer.png"), full_page=True)
    finally:
        _stop(server)


# --- every table fits the notebook column -------------------------------------------------------
#: The width of JupyterLab's notebook column at its default layout, where outputs are drawn (px).
COLUMN_PX = 968
#: The notebooks whose tables are measured (the explorer is a widget page, measured above).
TABLE_NOTEBOOKS = sorted(p.name for p in (ROOT / "notebooks").glob("0[1-5]_*.ipynb"))

#: Each table of each output: its rendered width, the column's, and the cells whose content spills.
_MEASURE = """() => [...document.querySelectorAll('.jp-OutputArea-output')].flatMap(area => {
  const style = getComputedStyle(area);
  const column = area.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  return [...area.querySelectorAll('table')].map(table => ({
    column: column,
    width: Math.ceil(table.getBoundingClientRect().width),
    spills: [...table.querySelectorAll('th, td')]
      .filter(cell => cell.scrollWidth > cell.clientWidth + 1).map(cell => cell.innerText),
    header: [...table.querySelectorAll('thead th')].map(th => th.innerText).join(' | ').slice(0, 80),
  }));
})"""


@pytest.fixture(scope="module")
def chromium() -> Iterator[Page]:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.set_default_timeout(WAIT_MS)
            yield page
        finally:
            browser.close()


@pytest.mark.parametrize("name", TABLE_NOTEBOOKS)
def test_every_table_of_an_executed_notebook_fits_the_column(name, chromium, tmp_path):
    """The notebook run at its CI size, exported as JupyterLab draws it (nbconvert's lab
    template: JupyterLab's own table styles), each output area set to the column's width: no
    table is wider than the column, and no cell's content spills out of its cell."""
    import nbformat
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter

    path = ROOT / "notebooks" / name
    nb = nbformat.read(path, as_version=4)
    NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    html, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
    page_path = tmp_path / f"{path.stem}.html"
    page_path.write_text(html)
    chromium.goto(page_path.as_uri())
    chromium.add_style_tag(
        content=f".jp-OutputArea-output {{ display: block !important; width: {COLUMN_PX}px "
        "!important; overflow-x: auto; }"
    )
    tables = chromium.evaluate(_MEASURE)
    assert tables, f"{name}: no table was drawn"
    assert all(t["column"] == COLUMN_PX for t in tables)
    wide = [f"{t['width']} px: {t['header']}" for t in tables if t["width"] > t["column"]]
    spilt = [f"{t['spills']} in {t['header']}" for t in tables if t["spills"]]
    assert not wide, f"{name}: tables wider than the {COLUMN_PX} px column: {wide}"
    assert not spilt, f"{name}: cells whose content spills: {spilt}"
