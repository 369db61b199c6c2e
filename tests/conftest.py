"""What the tests share: the command line as a user runs it, which algorithms are the package's
own, the figures worked by hand for each of them, a fake server whose clock the test sets, and
the throwaway pieces several rooms of the tree use.

The tree follows the package (``tests/algorithms/`` for ``simulator/algorithms/``, and so on);
the markers (``slow``, ``server``, ``browser``, ``notebook``, ``every_algorithm``) are declared
in ``pyproject.toml``. Tests that hold every registered algorithm at once (a line each in
``burst``, the palette, a chart of them all) are marked ``every_algorithm``; with those whose id
names an algorithm they are what ``tests/algorithms/test_toy.py`` runs over the toy algorithm
of ``tests/toy/``.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from simulator.algorithms import ALGORITHMS, Limiter, Param, Reference, scripts
from simulator.backends import FakeRedisBackend
from simulator.keys import hash_tag
from simulator.records import Decision

# Hypothesis times each example (a 200 ms deadline) and the drawing of its data (too_slow): on a
# machine this busy both fail tests that are right. Examples are counted, never timed; a test's
# own @settings change what it names and inherit the rest from here.
settings.register_profile("project", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("project")

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
#: One file per shipped algorithm: the figures worked out by hand for it (see its comments).
CASES_DIR = TESTS / "algorithms" / "cases"


# --- the order the tests are handed out in -----------------------------------------------------
#: The markers of the tests that take longest (a browser, a kernel, a server, a Dask cluster), in
#: the order they start: with ``--dist worksteal`` (``make test``) the long ones start first and
#: the short ones fill the gaps at the end, so no worker is left alone with a long test.
_FIRST = ("browser", "notebook", "slow", "server")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files in the order of their heaviest test's marker; each file's tests kept together and
    in their own order (a module's fixtures are set up once)."""

    def weight(item: pytest.Item) -> int:
        return next((i for i, m in enumerate(_FIRST) if item.get_closest_marker(m)), len(_FIRST))

    heaviest: dict[Path, int] = {}
    for item in items:
        heaviest[item.path] = min(heaviest.get(item.path, len(_FIRST)), weight(item))
    items.sort(key=lambda item: heaviest[item.path])  # stable


# --- the command line ---------------------------------------------------------------------------
def run_cli(
    *args: str | Path,
    cwd: Path = ROOT,
    env: dict[str, str] | None = None,
    timeout: float = 600,
    text: bool = True,
) -> subprocess.CompletedProcess:
    """``python -m simulator ARGS`` as a user runs it, waited for, its output captured.

    The timeout is only a guard against a hang: a start-up on a busy machine takes seconds.
    """
    return subprocess.run(
        [sys.executable, "-m", "simulator", *map(str, args)],
        capture_output=True,
        text=text,
        cwd=cwd,
        env=env,
        timeout=timeout,
    )


def one_message(done: Any, *needles: str) -> str:
    """A refusal as the user reads it: exit status 2, no traceback, one line on stderr that
    holds each of ``needles``; the line."""
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def run_main(
    *args: str | Path,
    cwd: Path = ROOT,
    env: dict[str, str] | None = None,
    timeout: float = 600,
    text: bool = True,
) -> subprocess.CompletedProcess:
    """``simulator.cli.main(ARGS)`` in this process, answered as :func:`run_cli` answers.

    The same argv, exit status and output a user sees, a second or so cheaper than starting
    Python and importing pandas again. The output is taken at the file descriptors (a replay
    writes its rows to descriptor 1 itself), so bytes stay bytes. What only a real process
    shows (start-up, ``__main__``'s way out after a signal, a stuck-script watchdog) is what
    the tests that keep :func:`run_cli` are for. ``env`` replaces the environment for the call;
    ``timeout`` ends a call that hangs (SIGALRM raises in it) instead of the whole run.
    """
    from simulator.cli import main

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        with _environment(env), _working_folder(cwd), _descriptors(out, err), _alarm(timeout):
            try:
                code = main([str(arg) for arg in args])
            except SystemExit as stop:  # argparse's usage errors, a closed pipe
                code = _exit_status(stop.code)
        captured = []
        for f in (out, err):
            f.seek(0)
            data = f.read()
            captured.append(data.decode(errors="replace") if text else data)
    return subprocess.CompletedProcess([str(arg) for arg in args], code, *captured)


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # what Python does with sys.exit("message")
    return 1


@contextlib.contextmanager
def _environment(env: dict[str, str] | None):
    if env is None:
        yield
        return
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def _working_folder(cwd: Path):
    saved = os.getcwd()
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(saved)


@contextlib.contextmanager
def _descriptors(out, err):
    """Descriptors 1 and 2 (and ``sys.stdout``/``sys.stderr`` over them) go to ``out``, ``err``."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved_fds, saved_streams = (os.dup(1), os.dup(2)), (sys.stdout, sys.stderr)
    os.dup2(out.fileno(), 1)
    os.dup2(err.fileno(), 2)
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8")
    sys.stderr = io.TextIOWrapper(
        io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace"
    )
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except OSError:
                pass  # a closed pipe or a full disk: what reached the file is what it says
        sys.stdout, sys.stderr = saved_streams
        for fd, saved in zip((1, 2), saved_fds, strict=True):
            os.dup2(saved, fd)
            os.close(saved)


class CallTimedOut(Exception):
    """An in-process call of the command line outlived its ``timeout``."""


@contextlib.contextmanager
def _alarm(timeout_s: float):
    def ring(signum, frame):
        raise CallTimedOut(f"the command did not end within {timeout_s} s")

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# --- the package's own algorithms and their worked cases ----------------------------------------
def shipped(name: str) -> bool:
    """An algorithm of the package's own (not one registered from elsewhere, such as the toy)."""
    return ALGORITHMS[name].__module__.startswith("simulator.algorithms.")


def shipped_algorithms() -> list[str]:
    return sorted(n for n in ALGORITHMS if shipped(n))


def algorithm_case(name: str) -> dict[str, Any]:
    """The hand-worked figures of a shipped algorithm, from ``tests/algorithms/cases/<name>.toml``.

    A shipped algorithm without its file fails the test that asks, saying which file to add.
    """
    path = CASES_DIR / f"{name}.toml"
    if not path.exists():
        pytest.fail(
            f"{name} has no worked case: add tests/algorithms/cases/{name}.toml "
            "(CONTRIBUTING.md, 'Adding an algorithm'; fixed_window.toml shows its form)",
            pytrace=False,
        )
    with path.open("rb") as f:
        return tomllib.load(f)


def case_files() -> set[str]:
    return {p.stem for p in CASES_DIR.glob("*.toml")}


# --- a fake server on a clock set by hand -------------------------------------------------------
class ManualClock:
    """A clock a test moves by hand: ``clock.t_ms = 1234``."""

    def __init__(self, t_ms: float = 0.0) -> None:
        self.t_ms = t_ms

    def __call__(self) -> float:
        return self.t_ms


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def fake(clock: ManualClock) -> FakeRedisBackend:
    return FakeRedisBackend(clock)


@pytest.fixture(autouse=True)
def sigint_raises_in_children():
    """Subprocesses that a test stops with SIGINT must not inherit it ignored.

    A process started with SIGINT ignored keeps ignoring it (Python then installs no
    KeyboardInterrupt handler), and something in a test worker can leave it ignored (a kernel
    manager, a library). The tests send Ctrl-C to children and expect them to stop.
    """
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    yield


# --- random requests, for the differential tests ------------------------------------------------
#: Mostly 1, sometimes more, sometimes more than any limit drawn here can admit.
COSTS = st.one_of(st.just(1), st.just(1), st.integers(1, 4), st.integers(5, 9))


def draw_params(data, name: str, limit: int) -> dict[str, float]:
    """A value for each of the algorithm's own parameters, around the limit."""
    out: dict[str, float] = {}
    for p in ALGORITHMS[name].params_declared:
        lo = max(1, int(p.minimum))
        if p.integer:
            out[p.name] = data.draw(st.integers(lo, lo + 2 * limit + 2), label=p.name)
        else:
            out[p.name] = data.draw(st.floats(p.minimum, p.minimum + 2 * limit + 2), label=p.name)
    return out


# --- a user's script: a fixed window on a 10 s grid, with its declaration -------------------
FW10 = """--[[ ratelimit
label = "Fixed window, 10 s grid"
keys = ["rl:fw10:{client}:{window}"]
argv = ["now_ms", "window_ms", "limit", "cost"]
reply = { allowed = 1, count = 2, remaining = 3, reset = 4, retry_after = 4 }
]]
local now, window = tonumber(ARGV[1]), tonumber(ARGV[2])
local limit, cost = tonumber(ARGV[3]), tonumber(ARGV[4])
local count = redis.call('INCRBY', KEYS[1], cost)
if count == cost then redis.call('PEXPIRE', KEYS[1], window) end
local reset = window - now % window  -- ms until the grid window ends
if count <= limit then return {1, count, limit - count, reset} end
return {0, count, 0, reset}
"""


# --- real servers: none left running ------------------------------------------------------------
def valkey_children() -> set[int]:
    """PIDs of valkey-server processes whose parent is this test process."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        name, rest = text[text.index("(") + 1 : text.rindex(")")], text[text.rindex(")") + 2 :]
        if name.startswith("valkey-server") and int(rest.split()[1]) == os.getpid():
            found.add(int(stat.parent.name))
    return found


@pytest.fixture(scope="module")
def no_server_left_behind():
    """Used (autouse) by the modules that start servers: none outlives the module's tests."""
    before = valkey_children()
    yield
    assert valkey_children() <= before, "a valkey-server started here outlived its tests"


# --- a throwaway algorithm, registered inside a test and nowhere else ---------------------------
FOREVER_LUA = """--[[
forever: a counter that never resets (a throwaway algorithm for the registry test).
KEYS[1] the client's counter; ARGV[1] now_ms (unused), ARGV[2] window_ms (unused),
ARGV[3] allowance: requests a client gets in all, ARGV[4] cost of this request
Returns {allowed 0|1, count, limit, remaining, reset_ms (-1: never), retry_after_ms (-1: never)}
]]
local limit = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local count = tonumber(redis.call('GET', KEYS[1]) or '0')
if count + cost <= limit then
  redis.call('SET', KEYS[1], count + cost)
  return {1, count + cost, limit, limit - count - cost, -1, 0}
end
return {0, count, limit, 0, -1, -1}
"""


#: Its own parameter: how many requests a client gets in all (default: the limit).
ALLOWANCE = (Param("allowance", default=lambda limit, window_ms: limit, minimum=1, integer=True),)


class ForeverRef(Reference):
    name = "forever"
    params_declared = ALLOWANCE

    def __init__(self, limit: int, window_ms: int, **params: object) -> None:
        super().__init__(limit, window_ms, **params)
        self.counts: dict[str, int] = {}

    def decide(self, client: str, now_ms: int, cost: int = 1) -> Decision:
        count, cap = self.counts.get(client, 0), int(self.params["allowance"])
        if count + cost <= cap:
            self.counts[client] = count + cost
            return Decision(True, float(count + cost), cap, cap - count - cost, -1, 0)
        return Decision(False, float(count), cap, 0, -1, -1)


class Forever(Limiter):
    name = "forever"
    label = "Never resets (test)"
    colour = "#9c9ede"
    scripts = ("forever",)
    reference = ForeverRef
    params_declared = ALLOWANCE

    def keys(self, client: str, now_ms: int) -> Sequence[str]:
        return (f"rl:forever:{hash_tag(client)}",)

    def args(self, client: str, now_ms: int, cost: int = 1) -> Sequence[object]:
        return (now_ms, self.window_ms, int(self.params["allowance"]), cost)


@pytest.fixture
def forever(monkeypatch):
    monkeypatch.setitem(scripts._ADDED, "forever", FOREVER_LUA)
    scripts.load.cache_clear()
    monkeypatch.setitem(ALGORITHMS, "forever", Forever)
    yield Forever
    scripts.load.cache_clear()
