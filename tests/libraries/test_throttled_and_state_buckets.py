"""throttled-py's five Redis strategies and PyrateLimiter's two state algorithms, run unchanged on
the fake server, against expectations written from what each documents, not from its code.

- throttled fixed window: a counter per cell of the clock grid (the key is named by
  ``now // period``); every hit counts, refused ones too (its own words: ``limited`` when the
  count *after* this hit is over the limit).
- throttled sliding window: the cell's count plus the previous cell's, weighed by the part of
  it still inside the trailing window (``1 - (now % period) / period``), rounded down; a refused
  request is not counted.
- throttled token bucket and leaking bucket: ``limit`` per ``period``, a bucket of ``burst``,
  as the README's quota says; on the whole seconds of the server's ``TIME``, a refill of whole
  tokens that starts again at each admitted request (what the smallest traces show, and
  docs/libraries.md quotes by line).
- throttled GCRA and PyrateLimiter's GCRA / TokenBucket: the theoretical arrival time of
  Brandur Leach's GCRA, emission interval ``period / limit``, tolerance ``burst`` intervals,
  exact (fractions here; PyrateLimiter's interval rounded up to a whole microsecond, as its
  docstring says).
"""

from __future__ import annotations

import hashlib
import math
import os
from collections import defaultdict
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

EXTRA = "the libraries extra is not installed (pip install -e '.[libraries]')"
pytest.importorskip("time_machine", reason=EXTRA)
pytest.importorskip("pyrate_limiter", reason=EXTRA)
throttled = pytest.importorskip("throttled", reason=EXTRA)

import pyrate_limiter  # noqa: E402

from simulator.algorithms import ALGORITHMS  # noqa: E402
from simulator.backends import FakeRedisBackend  # noqa: E402
from tests.conftest import run_cli  # noqa: E402


@pytest.fixture(autouse=True)
def registry_as_it_was():
    before = dict(ALGORITHMS)
    yield
    for name in [n for n in ALGORITHMS if n not in before]:
        del ALGORITHMS[name]


# --- the expectations ----------------------------------------------------------------------------
def grid_counting_every_hit(times_ms, clients, costs, limit, window_ms, burst):
    count: dict[tuple[str, int], int] = defaultdict(int)
    out = []
    for t, c, k in zip(times_ms, clients, costs, strict=True):
        cell = (c, t // window_ms)
        count[cell] += k
        out.append(count[cell] <= limit)
    return out


def weighted_grid(times_ms, clients, costs, limit, window_ms, burst):
    count: dict[tuple[str, int], int] = defaultdict(int)
    out = []
    for t, c, k in zip(times_ms, clients, costs, strict=True):
        cell = t // window_ms
        left = 1 - (t % window_ms) / window_ms
        used = math.floor(left * count[(c, cell - 1)]) + count[(c, cell)] + k
        ok = used <= limit
        count[(c, cell)] += k if ok else 0
        out.append(ok)
    return out


def whole_second_bucket(times_ms, clients, costs, limit, window_ms, burst, leaking=False):
    """A bucket of ``burst``: ``limit / period`` per second come back (a token bucket) or drain
    away (a leaking bucket), counted in whole tokens over whole seconds since the last admitted
    request; a refusal changes nothing."""
    rate = limit / (window_ms // 1000)
    state: dict[str, tuple[int, int]] = {}
    out = []
    for t, c, k in zip(times_ms, clients, costs, strict=True):
        now = t // 1000
        level, last = state.get(c, (0 if leaking else burst, now))
        moved = math.floor(max(0, now - last) * rate)
        if leaking:
            level = max(0, level - moved)
            ok = level + k <= burst
            new = level + k
        else:
            level = min(burst, level + moved)
            ok = k <= level
            new = level - k
        if ok:
            state[c] = (new, now)
        out.append(ok)
    return out


def leaking_bucket(*args):
    return whole_second_bucket(*args, leaking=True)


def gcra(times_ms, clients, costs, limit, window_ms, burst, interval=None):
    interval = Fraction(window_ms, limit) if interval is None else interval
    tat: dict[str, Fraction] = {}
    out = []
    for t, c, k in zip(times_ms, clients, costs, strict=True):
        new = max(tat.get(c, Fraction(t)), Fraction(t)) + k * interval
        ok = new - t <= burst * interval
        if ok:
            tat[c] = new
        out.append(ok)
    return out


def gcra_whole_us(times_ms, clients, costs, limit, window_ms, burst):
    interval = Fraction(math.ceil(window_ms * 1000 / limit), 1000)
    return gcra(times_ms, clients, costs, limit, window_ms, burst, interval)


EXPECTED = {
    "throttled.fixed_window": grid_counting_every_hit,
    "throttled.sliding_window": weighted_grid,
    "throttled.token_bucket": whole_second_bucket,
    "throttled.leaking_bucket": leaking_bucket,
    "throttled.gcra": gcra,
    "pyrate.gcra": gcra_whole_us,
    "pyrate.token_bucket": gcra_whole_us,
}
#: The card's case, 100 at 59 s and 100 at 61 s, 100 per minute (burst: the limit).
CARD = {
    "throttled.fixed_window": 200,  # the clock grid: the seam at 60 s
    "throttled.sliding_window": 102,
    "throttled.token_bucket": 103,
    "throttled.leaking_bucket": 103,
    "throttled.gcra": 103,
    "pyrate.gcra": 103,
    "pyrate.token_bucket": 103,
}


def run(name, times_ms, clients, costs, limit, window_ms, **params):
    now = [0]
    limiter = ALGORITHMS[name](FakeRedisBackend(lambda: now[0]), limit, window_ms, **params)
    out = []
    for t, c, k in zip(times_ms, clients, costs, strict=True):
        now[0] = t
        out.append(limiter.decide(c, t, k).allowed)
    return out


def poisson(n=5_000, clients=4, rate_per_s=1.5, seed=33):
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    times = np.floor(np.cumsum(rng.exponential(1000 / (rate_per_s * clients), n))).astype(int)
    return times.tolist(), [f"c{i}" for i in rng.integers(0, clients, n)]


@pytest.mark.parametrize("name", EXPECTED)
def test_the_cards_case(name):
    times = [59_000] * 100 + [61_000] * 100
    ones = [1] * 200
    got = run(name, times, ["u"] * 200, ones, 100, 60_000)
    assert got == EXPECTED[name](times, ["u"] * 200, ones, 100, 60_000, 100)
    assert sum(got) == CARD[name]


@pytest.mark.parametrize("name", EXPECTED)
def test_a_poisson_trace(name):
    times, who = poisson()
    ones = [1] * len(times)
    got = run(name, times, who, ones, 10, 10_000)
    expected = EXPECTED[name](times, who, ones, 10, 10_000, 10)
    assert sum(got) == sum(expected)
    assert got == expected
    assert 0 < sum(got) < len(times)


@pytest.mark.parametrize("name", [n for n in EXPECTED if n != "throttled.fixed_window"])
def test_a_poisson_trace_with_a_small_burst_and_costs(name):
    """burst 3 (where the strategy takes one) and costs of 1 to 3: the weights and the bucket's
    size reach the expectation too."""
    times, who = poisson(2_000, seed=35)
    costs = np.random.default_rng(36).integers(1, 4, len(times)).tolist()
    params = {"burst": 3} if ALGORITHMS[name].params_declared else {}
    got = run(name, times, who, costs, 10, 10_000, **params)
    assert got == EXPECTED[name](times, who, costs, 10, 10_000, params.get("burst", 10))


def test_the_token_buckets_whole_seconds_admit_what_a_token_bucket_refuses():
    """1 per 10 s, burst 1: at 0.9 s and 10 s the server's TIME reads 0 and 10, ten whole
    seconds, a whole token; a token bucket has had 9.1 s, 0.91 of one."""
    args = ([900, 10_000], ["u", "u"], [1, 1], 1, 10_000)
    for name in ("throttled.token_bucket", "throttled.leaking_bucket"):
        assert run(name, *args, burst=1) == [True, True]
    assert gcra(*args, 1) == [True, False]
    assert run("token_bucket", *args, burst=1) == [True, False]


def test_the_token_bucket_loses_the_fraction_of_a_token_at_each_admitted_request():
    """5 per 10 s (half a token a second), burst 2: at 3 s 1.5 tokens came back, one is spent and
    the half is lost (the refill starts again from now); at 5 s one more, at 6 s half of one."""
    args = ([0, 0, 3_000, 5_000, 6_000], ["u"] * 5, [1] * 5, 5, 10_000)
    assert run("throttled.token_bucket", *args, burst=2) == [True, True, True, True, False]
    assert gcra(*args, 2) == [True, True, True, True, True]


def test_the_sliding_window_rounds_the_previous_windows_weight_down_in_floating_point():
    """5 per 10 s: five at 0 s, five at 18 s, where the first five weigh 5 x 0.2 = 1 exactly;
    ``1 - 0.8`` is 0.19999999999999996 in floating point, so the library floors 0.99999 to 0
    and admits all five, where the built-in counter (and exact arithmetic) admits four."""
    times = [0] * 5 + [18_000] * 5
    args = (times, ["u"] * 10, [1] * 10, 5, 10_000)
    assert sum(run("throttled.sliding_window", *args)) == 10
    assert sum(run("sliding_counter", *args)) == 9


def _library_files() -> dict[str, str]:
    hashes = {}
    for package in (throttled, pyrate_limiter):
        root = Path(package.__file__).parent
        for path in sorted(root.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                hashes[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return hashes


@pytest.mark.slow  # every algorithm and the libraries, in a program of its own
def test_burst_prints_their_rows_and_leaves_the_libraries_as_they_were():
    before = _library_files()
    env = {**os.environ, "SIMULATOR_ALGORITHMS": "simulator.libraries.registered"}
    done = run_cli("burst", env=env)
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line.split()[1] for line in done.stdout.splitlines()[2:] if line}
    for name, admitted in CARD.items():
        assert rows[name] == str(admitted), name
    assert _library_files() == before


def test_a_window_throttled_cannot_count_is_refused_by_name():
    with pytest.raises(ValueError, match="whole number of 1 s"):
        ALGORITHMS["throttled.gcra"](FakeRedisBackend(lambda: 0), 10, 1_500)
