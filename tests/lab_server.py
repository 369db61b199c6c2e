"""JupyterLab for a browser test: started over a folder of the test's own, stopped by its handle.

The lessons' drives (``tests/notebooks/``) and the explorer's class drive in JupyterLab
(``tests/explore/``) start it the same way: on a free port, with the project's settings folder
(the one ``make lab`` uses: no news, no update check), on that port or not at all (JupyterLab
would otherwise move to the next port and the test would wait on the wrong one), and ready once
it listens.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from simulator.backends.process import free_port
from simulator.explore.serve import stop_served

ROOT = Path(__file__).resolve().parents[1]
#: How long JupyterLab may take to listen on a busy 2-core machine.
START_S = 900.0


def start_lab(workdir: Path, drop: Sequence[str] = ()) -> tuple[subprocess.Popen[bytes], str]:
    """JupyterLab in ``workdir`` and its address, once it answers; its log is ``lab.log``.
    ``drop``: variables of this environment the server and its kernels must not see."""
    log = workdir / "lab.log"
    port = free_port(False)
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(workdir / ".jupyter"),
        "JUPYTERLAB_SETTINGS_DIR": str(workdir / "lab-settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(workdir / ".jupyter" / "workspaces"),
        "JUPYTER_RUNTIME_DIR": str(workdir / ".jupyter" / "runtime"),
        "PYTHONPATH": str(ROOT),
    }
    for name in drop:
        env.pop(name, None)
    argv = [
        sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root",
        "--ServerApp.token=", "--ServerApp.password=", "--ip", "127.0.0.1",
        "--port", str(port), "--ServerApp.port_retries=0", "--LabApp.expose_app_in_browser=True",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        f"--ServerApp.root_dir={workdir}",
    ]  # fmt: skip
    with log.open("wb") as out:
        server = subprocess.Popen(argv, cwd=workdir, env=env, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + START_S
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
            time.sleep(0.5)  # polling a socket: the process gives nothing else to wait on


def lab_at(workdir: Path, drop: Sequence[str] = ()) -> Iterator[str]:
    """A fixture's body: JupyterLab in ``workdir`` for the fixture's life, stopped by its handle."""
    server, url = start_lab(workdir, drop)
    try:
        yield url
    finally:
        stop_served(server)


# --- a notebook opened and Run All, as a learner does ----------------------------------------
# Everything waits on what the page says, never on the clock: a notebook is open once its context
# and its kernel are ready and the kernel is idle; Run All is done once the command's promise has
# settled, the kernel is idle again and no cell is running; and it is *complete* only once every
# code cell holds an execution count from the kernel that is the notebook's now. On a busy machine
# JupyterLab may ask which kernel to start (it had not read the kernel specs yet; the notebook's
# own is the dialog's default and is accepted), and may replace the kernel it started while Run
# All goes on: cells queued on the old one are lost, or the first cells run there and the later
# ones in the new kernel, without the names the first defined. Run All then runs again.
Page = Any  # playwright's Page: this module is imported where Chromium may be missing

#: How many times Run All is asked before a notebook that keeps losing cells fails.
RUNS = 4

#: What the page is waiting on, or ``false`` while it is still on its way: a dialog to answer
#: (the kernel's choice), or the notebook ``path`` open with its kernel connected and idle (then
#: that kernel's id).
_OPENED = """(path) => {
  if (document.querySelector('.jp-Dialog .jp-mod-accept')) return 'dialog';
  const panel = window.jupyterapp?.shell.currentWidget;
  if (!panel || !panel.context || panel.context.path !== path || !panel.context.isReady) return false;
  const session = panel.sessionContext;
  const kernel = session?.session?.kernel;
  if (!session?.isReady || !kernel || kernel.connectionStatus !== 'connected') return false;
  return kernel.status === 'idle' ? 'kernel ' + kernel.id : false;
}"""

#: Run All, its outcome kept on the window once the command's promise settles.
_RUN_ALL = """() => {
  window.__runAll = null;
  window.jupyterapp.commands.execute('notebook:run-all-cells').then(
    (ok) => { window.__runAll = ok === false ? 'stopped' : 'done'; },
    (e) => { window.__runAll = 'failed: ' + e; });
}"""

#: Run All settled, the kernel idle and no cell running; or a dialog to answer.
_SETTLED = """() => {
  if (document.querySelector('.jp-Dialog .jp-mod-accept')) return 'dialog';
  const panel = window.jupyterapp.shell.currentWidget;
  const kernel = panel.sessionContext.session?.kernel;
  if (window.__runAll === null || !kernel || kernel.status !== 'idle') return false;
  const cells = panel.content.model.cells;
  for (let i = 0; i < cells.length; i++) {
    if (cells.get(i).type === 'code' && cells.get(i).executionState === 'running') return false;
  }
  return window.__runAll;
}"""

#: The code cells: [code cells, cells with an execution count, indices of the errors' cells].
_COUNTS = """() => {
  const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
  let code = 0, ran = 0; const errors = [];
  for (let i = 0; i < cells.length; i++) {
    const c = cells.get(i);
    if (c.type !== 'code' || !c.sharedModel.source.trim()) continue;
    code++;
    if (c.executionCount !== null) ran++;
    for (let j = 0; j < c.outputs.length; j++) {
      const o = c.outputs.get(j).toJSON();
      const text = [].concat(o.text || []).join('');
      if (o.output_type === 'error' || /Traceback \\(most recent call last\\)/.test(text)) {
        errors.push(i);
      }
    }
  }
  return [code, ran, errors];
}"""

_PATH = "() => window.jupyterapp.shell.currentWidget.context.path"
_KERNEL = "() => window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel?.id ?? null"


def _answer(page: Page, state: str) -> bool:
    """Accept a dialog if ``state`` says one is up; whether there was one."""
    if state != "dialog":
        return False
    page.locator(".jp-Dialog .jp-mod-accept").first.click()
    page.locator(".jp-Dialog").wait_for(state="detached")
    return True


def open_notebook(page: Page, url: str, path: str) -> None:
    """Open the notebook at ``path`` (from the lab's root) in a fresh workspace and wait for its
    kernel to be connected and idle, answering the kernel's dialog if JupyterLab asks."""
    page.goto(f"{url}/lab/tree/{path}?reset")
    wait_idle(page, path)


def wait_idle(page: Page, path: str) -> str:
    """Until ``path`` is open with its kernel connected and idle, answering any dialog; that
    kernel's id."""
    while _answer(page, state := page.wait_for_function(_OPENED, arg=path).json_value()):
        pass
    return state.removeprefix("kernel ")


def run_all(page: Page, name: str) -> int:
    """Run All on the open notebook until every code cell has an execution count from the
    notebook's kernel (or a cell failed in it, which the caller reports); how many times Run All
    was asked."""
    kernel = wait_idle(page, page.evaluate(_PATH))
    for runs in range(1, RUNS + 1):
        page.evaluate(_RUN_ALL)
        while _answer(page, state := page.wait_for_function(_SETTLED).json_value()):
            pass
        code, ran, errors = page.evaluate(_COUNTS)
        now = page.evaluate(_KERNEL)
        if now == kernel and (ran == code or errors):
            return runs
        # Cells were lost, or ran in two kernels (the one Run All was sent to was replaced):
        # wait for the notebook's kernel to be idle and run them all again there.
        assert not state.startswith("failed"), f"{name}: Run All {state}"
        kernel = wait_idle(page, page.evaluate(_PATH))
    raise AssertionError(f"{name}: {ran} of {code} code cells ran after Run All {RUNS} times")


def model_errors(page: Page) -> list[str]:
    """The error outputs and tracebacks in the notebook's model, each as its cell's index and
    the start of its source (read from the model: no cell can be off screen)."""
    errors = page.evaluate(_COUNTS)[2]
    sources = page.evaluate(
        """(ix) => ix.map(i => window.jupyterapp.shell.currentWidget.content.model.cells
                          .get(i).sharedModel.source.slice(0, 80))""",
        errors,
    )
    return [f"cell {i}: {s!r}" for i, s in zip(errors, sources, strict=True)]
