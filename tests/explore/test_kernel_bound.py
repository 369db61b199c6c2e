"""A loop of plain GETs of the served explorer cannot start kernels without end: past the
bound (two here) a GET is answered with HTTP 503 and one line saying why, and no kernel starts;
the command that ``make explore`` runs names the bounded manager so Voilà can import it."""

from __future__ import annotations

import importlib
import urllib.error
import urllib.request

import pytest
from served import WAIT_S, children_running, served

from simulator.explore import serve


@pytest.mark.slow
def test_gets_past_the_bound_are_refused_with_503_and_start_no_kernel(tmp_path):
    pytest.importorskip("voila")
    with served(tmp_path, most_kernels=2) as (server, port, log):
        statuses, refusals = [], []
        for _ in range(4):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=WAIT_S) as page:
                    statuses.append(page.status)
                    assert "explorer" in page.read().decode("utf-8", "replace")
            except urllib.error.HTTPError as refused:
                statuses.append(refused.code)
                refusals.append((refused.reason, refused.read().decode("utf-8", "replace")))
        assert statuses == [200, 200, 503, 503], (statuses, log.read_text()[-3000:])
        for reason, body in refusals:
            assert reason == "2 explorer kernels already running; try again later"
            assert reason in body  # Voilà's error page says it too
        kernels = children_running(server.pid, b"ipykernel")
        assert 1 <= len(kernels) <= 2, kernels
        assert server.poll() is None  # a refusal leaves the server serving


def test_the_command_names_the_bounded_manager_by_an_importable_path(monkeypatch):
    ran: list[list[str]] = []
    monkeypatch.setattr(serve.os, "execv", lambda _path, argv: ran.append(argv))
    serve.main(["--port", "8866", "--most-kernels", "3"])
    (argv,) = ran
    (named,) = [a.split("=", 1)[1] for a in argv if "multi_kernel_manager_class=" in a]
    module, _, name = named.rpartition(".")
    assert getattr(importlib.import_module(module), name) is serve.BoundedKernelManager
    assert "--BoundedKernelManager.most_kernels=3" in argv


def test_a_bound_below_one_kernel_is_refused_with_status_2(capsys):
    with pytest.raises(SystemExit) as stopped:
        serve.main(["--most-kernels", "0"])
    assert stopped.value.code == 2
    assert "--most-kernels must be at least 1 kernel, not 0" in capsys.readouterr().err
