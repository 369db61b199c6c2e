"""``limits`` and PyrateLimiter run unchanged on the fake server: each strategy's admitted requests against an
expectation written from its documented semantics, not from its code.

- fixed window: "When the first request arrives, a window is started for a fixed duration"
  (limits' README): a counter from a client's first request, for ``window``; a key is gone
  only once now is past its expiry (Redis's rule), so a request at exactly start + window
  still counts in the old window.
- moving window: "adds each request's timestamp to a log if the nth oldest entry (where n is
  the limit) is either not present or is older than the duration of the window": admitted
  when fewer than ``limit`` admitted requests lie in [t - window, t] (an entry exactly one
  window old still counts).
- sliding window counter: the documented weighted estimate, previous count x (previous
  window's time left / window) rounded down + current count, over two windows that start at a
  client's first request and follow each other (each key lives two windows; the current one
  becomes the previous when less than a window of it is left).
"""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict, deque
from pathlib import Path

import numpy as np
import pytest

EXTRA = "the libraries extra is not installed (pip install -e '.[libraries]')"
pytest.importorskip("time_machine", reason=EXTRA)
pytest.importorskip("pyrate_limiter", reason=EXTRA)

import limits  # noqa: E402
import pyrate_limiter  # noqa: E402

from simulator.algorithms import ALGORITHMS  # noqa: E402
from simulator.backends import FakeRedisBackend  # noqa: E402
from tests.conftest import ROOT, run_cli, run_main  # noqa: E402


@pytest.fixture(autouse=True)
def registry_as_it_was():
    """Each test leaves the registry as it found it: naming a library strategy registers that
    library's adapters, which the rest of the suite must not see."""
    before = dict(ALGORITHMS)
    yield
    for name in [n for n in ALGORITHMS if n not in before]:
        del ALGORITHMS[name]


SAMPLE = ROOT / "data" / "traces" / "apache_combined_sample.log"


# --- the expectations, from the documented semantics ---------------------------------------------
def fixed_first_hit(times_ms, clients, limit, window_ms):
    start: dict[str, int] = {}
    count: dict[str, int] = defaultdict(int)
    out = []
    for t, c in zip(times_ms, clients, strict=True):
        if c not in start or t > start[c] + window_ms:
            start[c], count[c] = t, 0
        count[c] += 1  # limits counts every hit, refused ones too
        out.append(count[c] <= limit)
    return out


def moving_log(times_ms, clients, limit, window_ms):
    logs: dict[str, deque[int]] = defaultdict(deque)
    out = []
    for t, c in zip(times_ms, clients, strict=True):
        log = logs[c]
        while log and log[0] < t - window_ms:
            log.popleft()
        ok = len(log) < limit
        if ok:
            log.append(t)
        out.append(ok)
    return out


def sliding_weighted(times_ms, clients, limit, window_ms):
    # per client: [previous count, previous expiry, current count, current expiry] (ms)
    state: dict[str, list[float]] = defaultdict(lambda: [0, -math.inf, 0, -math.inf])
    out = []
    for t, c in zip(times_ms, clients, strict=True):
        s = state[c]
        for count, expiry in ((0, 1), (2, 3)):
            if t > s[expiry]:  # gone: Redis keeps a key until now is past its expiry
                s[count], s[expiry] = 0, -math.inf
        left = s[3] - t
        if 0 < left < window_ms:  # less than a window left: the current becomes the previous
            s[0], s[1], s[2], s[3] = s[2], s[3], 0, s[3] + window_ms
        previous_left = max(0.0, s[1] - t) if s[1] > -math.inf else 0.0
        weighted = math.floor(s[0] * previous_left / window_ms) + s[2]
        ok = weighted + 1 <= limit
        if ok:
            if s[3] == -math.inf:
                s[2], s[3] = 1, t + 2 * window_ms
            else:
                s[2] += 1
        out.append(ok)
    return out


def grid_counter(times_ms, clients, limit, window_ms):
    """PyrateLimiter's FixedWindow: "Counts within a wall-clock-aligned window that resets every
    interval" (admitted items only: a refused one is not stored)."""
    count: dict[tuple[str, int], int] = defaultdict(int)
    out = []
    for t, c in zip(times_ms, clients, strict=True):
        cell = (c, t // window_ms)
        ok = count[cell] < limit
        count[cell] += ok
        out.append(ok)
    return out


EXPECTED = {
    "limits.fixed_window": fixed_first_hit,
    "limits.moving_window": moving_log,
    "limits.sliding_window_counter": sliding_weighted,
    # "admit while each rate's last interval stays under its limit", the window
    # [now - interval, now] (its window_start): the same closed log as limits' moving window
    "pyrate.sliding_window_log": moving_log,
    "pyrate.fixed_window": grid_counter,
}
CARD = {name: 100 for name in EXPECTED} | {"pyrate.fixed_window": 200}


def run(name, times_ms, clients, limit, window_ms):
    now = [0]
    backend = FakeRedisBackend(lambda: now[0])
    limiter = ALGORITHMS[name](backend, limit, window_ms)
    out = []
    for t, c in zip(times_ms, clients, strict=True):
        now[0] = t
        out.append(limiter.decide(c, t).allowed)
    return out


def poisson(n=1_500, clients=4, rate_per_s=1.5, seed=33):
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    gaps_ms = rng.exponential(1000 / (rate_per_s * clients), n)
    times = np.floor(np.cumsum(gaps_ms)).astype(int).tolist()
    who = [f"c{i}" for i in rng.integers(0, clients, n)]
    return times, who


@pytest.mark.parametrize("name", EXPECTED)
def test_the_cards_case(name):
    times = [59_000] * 100 + [61_000] * 100
    got = run(name, times, ["u"] * 200, 100, 60_000)
    assert got == EXPECTED[name](times, ["u"] * 200, 100, 60_000)
    assert sum(got) == CARD[name]  # every limits strategy starts its window at the first request


@pytest.mark.parametrize("name", EXPECTED)
def test_a_poisson_trace(name):
    times, who = poisson()
    got = run(name, times, who, 10, 10_000)
    expected = EXPECTED[name](times, who, 10, 10_000)
    assert sum(got) == sum(expected)
    assert got == expected
    assert 0 < sum(got) < len(times)  # the trace reaches the limit


def test_the_moving_window_counts_an_entry_exactly_one_window_old():
    """The smallest trace where limits' moving window and the exact log (t - W, t] differ."""
    assert run("limits.moving_window", [0, 10_000], ["u", "u"], 1, 10_000) == [True, False]
    assert run("sliding_log", [0, 10_000], ["u", "u"], 1, 10_000) == [True, True]


def test_a_window_limits_cannot_count_is_refused_by_name():
    with pytest.raises(ValueError, match="whole number of 1 s"):
        ALGORITHMS["limits.moving_window"](FakeRedisBackend(lambda: 0), 10, 1_500)


def _library_files() -> dict[str, str]:
    """Every file of the installed libraries (their code, their Lua), by its SHA-256."""
    hashes = {}
    for package in (limits, pyrate_limiter):
        root = Path(package.__file__).parent
        for path in sorted(root.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                hashes[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return hashes


@pytest.mark.slow  # every algorithm and the libraries, in a program of its own
def test_burst_prints_the_library_rows_and_leaves_the_library_as_it_was():
    before = _library_files()
    env = {**__import__("os").environ, "SIMULATOR_ALGORITHMS": "simulator.libraries.registered"}
    done = run_cli("burst", env=env)
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line.split()[1] for line in done.stdout.splitlines()[2:] if line}
    assert rows["limits.fixed_window"] == rows["limits.moving_window"] == "100"
    assert rows["limits.sliding_window_counter"] == "100"
    assert rows["pyrate.sliding_window_log"] == "100"
    assert rows["fixed_window"] == rows["pyrate.fixed_window"] == "200"  # the clock grid
    assert _library_files() == before


def test_compare_takes_a_library_candidate_on_the_sample_log(tmp_path):
    # The log's first 2,000 lines: the library decides in Python, a request at a time.
    head = tmp_path / "head.log"
    head.write_text("".join(SAMPLE.read_text().splitlines(keepends=True)[:2000]))
    before = _library_files()
    done = run_main(
        "compare",
        "--format",
        "clf",
        "--baseline",
        "sliding_log:limit=10,window=10",
        "--candidate",
        "limits.moving_window:limit=10,window=10",
        "--backend",
        "fakeredis",
        head,
    )
    assert done.returncode == 0, done.stderr
    assert any(
        line.startswith("limits.moving_window:limit=10,window=10 ")
        for line in done.stdout.splitlines()
    )
    assert _library_files() == before


def test_without_the_extra_naming_one_says_what_to_install(tmp_path):
    (tmp_path / "time_machine.py").write_text("raise ImportError('not installed here')\n")
    env = {**__import__("os").environ, "PYTHONPATH": str(tmp_path)}
    done = run_cli(
        "replay",
        "--algorithm",
        "limits.moving_window",
        "--limit",
        "10",
        "--window",
        "10",
        SAMPLE,
        env=env,
    )
    assert done.returncode == 2
    assert "pip install -e '.[libraries]'" in done.stderr
    assert "Traceback" not in done.stderr


def test_bench_libraries_prints_a_row_per_library_strategy(capsys):
    from simulator.bench.libraries import bench_libraries

    bench_libraries(20, valkey=False)  # the rows, not the figures: a few decisions each
    lines = capsys.readouterr().out.splitlines()
    rows = {line.split()[0]: line.split()[2] for line in lines[2:]}
    assert rows["limits.moving_window"] == "sliding_log"  # each beside its built-in twin
    assert set(EXPECTED) <= set(rows)


@pytest.mark.server
def test_bench_libraries_has_a_valkey_table_and_says_which_stay_off_it(capsys):
    from simulator.bench.libraries import bench_libraries

    bench_libraries(20)
    out = capsys.readouterr().out
    valkey = out.split("\n\n", 1)[1]  # the second table, after the fake server's
    head = valkey.index("libraries: decisions/s on the embedded Valkey")
    rows = {line.split()[0]: line.split()[2] for line in valkey[head:].splitlines()[2:]}
    assert rows["limits.moving_window"] == "sliding_log"  # Python's clock: on Valkey too
    assert "throttled.token_bucket: not on Valkey: " in valkey  # it reads the server's TIME


@pytest.mark.server
def test_on_valkey_the_libraries_decide_as_on_the_fake_server():
    """limits' moving window and PyrateLimiter's log take their time from Python, so on a real
    server they run in virtual time, and decide as they do on the fake server."""
    spec = ["--baseline", "sliding_log:limit=10,window=10"]
    for name in ("limits.moving_window", "pyrate.sliding_window_log"):
        spec += ["--candidate", f"{name}:limit=10,window=10"]
    rows = {}
    for backend in ("fakeredis", "valkey"):
        done = run_cli("compare", "--backend", backend, "--format", "clf", *spec, SAMPLE)
        assert done.returncode == 0, done.stderr
        rows[backend] = [
            line.split()[:8]
            for line in done.stdout.splitlines()
            if line.startswith(("limits.", "pyrate."))
        ]
    assert rows["valkey"] == rows["fakeredis"] and len(rows["valkey"]) == 2
