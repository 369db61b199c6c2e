"""The timeline widget in a page served by Voilà, and in JupyterLab 4: the rows reach the
browser, a step there reaches the kernel, and an index the kernel sets reaches the page.

A small notebook (written under a temporary folder) shows the boundary burst's timeline and a
label the kernel rewrites whenever the widget's ``index``, ``limit`` or ``view_ms`` change; a
button makes the kernel choose request 151. Voilà (or JupyterLab) is started on a free port with Jupyter's
folders of its own and stopped, with its kernel, by its own handle.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from lab_server import open_notebook, run_all
from served import CHROMIUM, need_chromium  # noqa: E402

need_chromium()

from playwright.sync_api import Page, sync_playwright  # noqa: E402

from simulator.backends.process import free_port  # noqa: E402
from simulator.explore.serve import stop_served, voila_argv  # noqa: E402

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
#: Long enough for a kernel to start and run on a busy 2-core machine.
WAIT_S = 180.0

CELL = """\
import ipywidgets as w
from simulator.explore.front import Timeline, timeline_payload
from simulator.explore.presets import PRESETS
from simulator.explore.runs import Runner

preset = PRESETS["boundary burst"]
timeline = Timeline(**timeline_payload(Runner().run(preset.settings), preset.client, index=0))
heard = w.Label("kernel: nothing yet")
heard.add_class("heard")

def said(change):
    heard.value = f"kernel index {timeline.index}, limit {timeline.limit:g}"

timeline.observe(said, names=["index", "limit", "view_ms"])
choose = w.Button(description="kernel chooses 151")
choose.on_click(lambda _: setattr(timeline, "index", 150))
w.VBox([heard, choose, timeline])
"""


def _serve(folder: Path, lab: bool = False) -> tuple[subprocess.Popen[bytes], int, Path]:
    """Voilà (or JupyterLab) over ``folder`` holding the notebook, once its port answers."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(CELL)]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, folder / "timeline.ipynb")
    jupyter = folder / ".jupyter"
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(jupyter),
        "JUPYTER_RUNTIME_DIR": str(jupyter / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(jupyter / "lab-settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(jupyter / "workspaces"),
        "PYTHONPATH": str(ROOT),
    }
    news = jupyter / "lab-settings" / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True, exist_ok=True)  # no "official Jupyter news?" toast over the page
    (news / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    port = free_port(False)
    argv = voila_argv("timeline.ipynb", port)
    if lab:
        argv = [
            sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root",
            "--ServerApp.token=", "--ServerApp.password=", "--ip", "127.0.0.1",
            "--port", str(port), "--LabApp.expose_app_in_browser=True",
            f"--ServerApp.root_dir={folder}",
        ]  # fmt: skip
    log = folder / "server.log"
    with log.open("wb") as out:
        server = subprocess.Popen(argv, cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + WAIT_S
    while True:
        if server.poll() is not None or time.monotonic() > deadline:
            stop_served(server)
            raise AssertionError(log.read_text()[-3000:])
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5):
                return server, port, log
        except OSError:
            time.sleep(0.5)  # polling interval, not a correctness wait


def _step_and_hear(page: Page) -> None:
    """The rows are drawn; a jump and a step in the page reach the kernel, and the index the
    kernel sets reaches the page."""
    page.locator(".tl-row").first.wait_for()
    assert page.locator(".tl-row").count() == 10
    # The readout is written in the next animation frame, which a busy machine can delay: wait
    # for its text rather than read it at once.
    page.locator(".tl-readout", has_text="request 1 of 200 at 59.000 s").wait_for()
    page.get_by_role("button", name="seam ▶", exact=True).click()
    page.locator(".tl-readout", has_text="request 101 of 200").wait_for()
    heard = page.locator(".heard")
    heard.filter(has_text="kernel index 100, limit 100").wait_for()
    page.get_by_role("button", name="step ▶", exact=True).click()
    heard.filter(has_text="kernel index 101,").wait_for()
    page.get_by_role("button", name="kernel chooses 151").click()
    page.locator(".tl-readout", has_text="request 151 of 200").wait_for()
    drawn = page.evaluate("document.querySelector('.tl-root').timeline.drawn(2)")
    assert len(drawn) == 200


def test_the_widget_steps_in_the_page_and_the_kernel_hears(tmp_path):
    server, port, log = _serve(tmp_path)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 800})
                page.set_default_timeout(WAIT_S * 1000)
                page.goto(f"http://127.0.0.1:{port}/")
                _step_and_hear(page)
            finally:
                browser.close()
    finally:
        stop_served(server)
    assert "Traceback" not in log.read_text(), log.read_text()[-3000:]


def test_the_widget_in_jupyterlab(tmp_path):
    server, port, log = _serve(tmp_path, lab=True)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 800})
                page.set_default_timeout(WAIT_S * 1000)
                open_notebook(page, f"http://127.0.0.1:{port}", "timeline.ipynb")
                run_all(page, "timeline.ipynb")
                _step_and_hear(page)
            finally:
                browser.close()
    finally:
        stop_served(server)
