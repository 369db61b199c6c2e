"""Every lesson as a learner sees it: JupyterLab at 1280x800, Run All, read top to bottom.

nbclient (``test_notebooks.py``) proves that each notebook runs; this drive proves what it looks
like once it has run in the browser the README sends a learner to. For every notebook: no error
output and no traceback, no table wider than its output area, no horizontal scroll bar except a
deliberate scroll box (:func:`simulator.display.scroll_box`), and no toast over the page.
JupyterLab 4 draws only the cells on screen, so the notebook is scrolled through
(``.jp-WindowedPanel-outer``) and measured at each stop.

The notebooks run from a copy (``data/`` linked beside it, read only), so that autosave writes
outputs into the copy, never into the committed notebooks.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip(
        "Chromium is not installed (apt-get install -y chromium fonts-dejavu)",
        allow_module_level=True,
    )

from simulator.backends.process import free_port  # noqa: E402
from simulator.explore.serve import stop_served  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.notebook, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
if not os.environ.get("LAB_DRIVE"):
    # Some twenty minutes on a 2-core machine, and on a busy one JupyterLab can lose the first
    # cells Run All queued while the kernel was still starting: run it with `make test-lab`.
    pytest.skip(
        "the JupyterLab drive of every lesson runs with LAB_DRIVE=1 (make test-lab)",
        allow_module_level=True,
    )
#: A kernel's start and a lesson's run on a busy 2-core machine.
WAIT_MS = 600_000
VIEWPORT = {"width": 1280, "height": 800}

#: What one stop of the scroll shows: errors, tables wider than their output area, elements
#: scrolling sideways that are not a deliberate scroll box, and toasts.
_LOOK = """() => {
  const out = {errors: [], wide: [], sideways: [], toasts: []};
  for (const e of document.querySelectorAll(
      '[data-mime-type="application/vnd.jupyter.stderr"], .jp-OutputArea-output.jp-mod-error')) {
    const text = e.innerText.trim();  // a warning on stderr is not an error; a traceback is
    const error = e.classList.contains('jp-mod-error') || /Traceback|Error:/.test(text);
    if (text && error) out.errors.push(text.slice(0, 300));
  }
  for (const area of document.querySelectorAll('.jp-OutputArea-output')) {
    const box = area.getBoundingClientRect();
    for (const table of area.querySelectorAll('table')) {
      if (table.closest('.workbench-scroll')) continue;
      const width = table.getBoundingClientRect().width;
      if (width > box.width + 1) out.wide.push(
        `${Math.ceil(width)} > ${Math.floor(box.width)} px: ` +
        [...table.querySelectorAll('th')].map(th => th.innerText).join(' | ').slice(0, 80));
    }
  }
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  for (const e of (panel ? panel.querySelectorAll('*') : [])) {
    if (e.scrollWidth <= e.clientWidth + 1 || e.clientWidth === 0) continue;
    const style = getComputedStyle(e);
    if (!['auto', 'scroll'].includes(style.overflowX)) continue;
    if (e.closest('.workbench-scroll') || e.closest('.jp-Editor, .cm-editor')) continue;
    out.sideways.push(`${e.className || e.tagName}: ${e.scrollWidth} > ${e.clientWidth} px`);
  }
  for (const t of document.querySelectorAll('.Toastify__toast, .jp-toast-message')) {
    out.toasts.push(t.innerText.slice(0, 120));
  }
  return out;
}"""


def _lab(workdir: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """JupyterLab on a free port in ``workdir``, with the project's own settings folder (the
    one ``make lab`` uses: no news, no update check), once it listens."""
    port = free_port(False)
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(workdir / ".jupyter"),
        "JUPYTERLAB_SETTINGS_DIR": str(workdir / "lab-settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(workdir / ".jupyter" / "workspaces"),
        "JUPYTER_RUNTIME_DIR": str(workdir / ".jupyter" / "runtime"),
        "PYTHONPATH": str(ROOT),
    }
    argv = [
        sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root",
        "--ServerApp.token=", "--ServerApp.password=", "--ip", "127.0.0.1",
        "--port", str(port), "--LabApp.expose_app_in_browser=True",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        f"--ServerApp.root_dir={workdir}",
    ]  # fmt: skip
    with log.open("wb") as out:
        server = subprocess.Popen(argv, cwd=workdir, env=env, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + WAIT_MS / 1000
    while True:
        if server.poll() is not None:
            raise AssertionError(f"JupyterLab exited: {log.read_text()[-3000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5):
                return server, f"http://127.0.0.1:{port}"
        except OSError:
            if time.monotonic() > deadline:
                stop_served(server)
                raise AssertionError(
                    f"JupyterLab did not listen: {log.read_text()[-3000:]}"
                ) from None
            time.sleep(0.5)  # polling interval, not a correctness wait


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    workdir = tmp_path_factory.mktemp("lab")
    shutil.copytree(ROOT / "notebooks", workdir / "notebooks")
    shutil.copytree(ROOT / "lab-settings", workdir / "lab-settings")
    (workdir / "data").symlink_to(ROOT / "data")
    (workdir / "docs").symlink_to(ROOT / "docs")
    server, url = _lab(workdir, workdir / "lab.log")
    try:
        yield url
    finally:
        stop_served(server)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with playwright.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser: object, lab: str, tmp_path: Path) -> Iterator[object]:
    """A tab of its own for each notebook; at the end every kernel is shut down, so that the
    next lesson runs on a machine with one kernel at a time (as a learner's would)."""
    tab = browser.new_page(viewport=VIEWPORT)  # type: ignore[attr-defined]
    tab.set_default_timeout(WAIT_MS)
    try:
        yield tab
    finally:
        tab.screenshot(path=str(tmp_path / "last.png"))  # what the page showed, if it failed
        tab.evaluate(
            "() => window.jupyterapp && window.jupyterapp.serviceManager.sessions.shutdownAll()"
        )
        tab.close()


#: Whether every code cell has run and the kernel is idle: [done, cells run, code cells].
_STATE = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  if (!panel || !panel.content || !panel.sessionContext) return [false, 0, 0];
  const kernel = panel.sessionContext.session?.kernel;
  const cells = panel.content.model.cells;
  let code = 0, ran = 0, busy = false;
  for (let i = 0; i < cells.length; i++) {
    const c = cells.get(i);
    if (c.type !== 'code' || !c.sharedModel.source.trim()) continue;
    code++;
    if (c.executionCount !== null) ran++;
    if (c.executionState === 'running') busy = true;
  }
  return [!!kernel && kernel.status === 'idle' && !busy && ran === code, ran, code];
}"""


def _run_all(page: object, url: str, name: str) -> None:
    """Open ``name``, Run All, and wait until every cell has run and the kernel is idle.

    On a busy machine JupyterLab may ask which kernel to start (it had not read the kernel
    specs yet): the notebook's own, python3, is the dialog's default and is accepted."""
    page.goto(f"{url}/lab/tree/notebooks/{name}?reset")  # type: ignore[attr-defined]
    page.wait_for_function("() => window.jupyterapp !== undefined")  # type: ignore[attr-defined]
    idle = page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']")  # type: ignore[attr-defined]
    ask = page.locator(".jp-Dialog .jp-mod-accept")  # type: ignore[attr-defined]
    deadline = time.monotonic() + WAIT_MS / 1000
    asked_at, progress = None, (-1, time.monotonic())
    while True:
        assert time.monotonic() < deadline, f"{name}: Run All did not finish"
        if ask.count():
            ask.first.click()
        elif asked_at is None and idle.count():
            page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")  # type: ignore[attr-defined]
            asked_at = time.monotonic()
        elif asked_at is not None:
            done, ran, _ = page.evaluate(_STATE)  # type: ignore[attr-defined]
            if done or page.locator(".jp-OutputArea-output.jp-mod-error").count():  # type: ignore[attr-defined]
                return  # all ran, or Run All stopped at an error (which the test reports)
            if ran != progress[0]:
                progress = (ran, time.monotonic())
            elif idle.count() and time.monotonic() - progress[1] > 45:
                # The kernel is idle and nothing has run for a while: the cells were queued on
                # a kernel that was replaced as it started. Run All again.
                asked_at, progress = None, (-1, time.monotonic())
        page.wait_for_timeout(500)  # type: ignore[attr-defined]  # polling interval


def _read_through(page: object) -> dict[str, list[str]]:
    """Scroll the notebook from top to bottom; what every stop showed, merged."""
    seen: dict[str, list[str]] = {"errors": [], "wide": [], "sideways": [], "toasts": []}
    outer = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-WindowedPanel-outer"
    page.evaluate(f"() => document.querySelector('{outer}').scrollTo(0, 0)")  # type: ignore[attr-defined]
    for _ in range(400):  # a lesson is far shorter than 400 screens
        page.wait_for_timeout(250)  # type: ignore[attr-defined]  # cells drawn as they come on screen
        for kind, found in page.evaluate(_LOOK).items():  # type: ignore[attr-defined]
            seen[kind] += [f for f in found if f not in seen[kind]]
        at_end = page.evaluate(  # type: ignore[attr-defined]
            f"""() => {{
              const o = document.querySelector('{outer}');
              const end = o.scrollTop + o.clientHeight >= o.scrollHeight - 2;
              o.scrollBy(0, o.clientHeight * 0.8);
              return end;
            }}"""
        )
        if at_end:
            break
    return seen


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_each_lesson_reads_cleanly_after_run_all_in_jupyterlab(name, lab, page):
    _run_all(page, lab, name)
    seen = _read_through(page)
    assert not seen["errors"], f"{name}: error output: {seen['errors']}"
    assert not seen["wide"], f"{name}: tables wider than their output area: {seen['wide']}"
    assert not seen["sideways"], f"{name}: horizontal scroll bars: {seen['sideways']}"
    assert not seen["toasts"], f"{name}: a toast over the page: {seen['toasts']}"
