"""The explorer without a browser: settings, runs, the summary line, the widgets' behaviour."""

from __future__ import annotations

import re
import time

import pytest

from simulator.algorithms import ALGORITHMS
from simulator.checks import ConfigError
from simulator.engine.run import simulate
from simulator.engine.scenario import BurstAt, Scenario
from simulator.explore import Explorer, Runner, Settings, Traffic, scenario_for, summary_line
from simulator.explore.pool import WORKERS_ENV
from simulator.explore.runs import Cancelled, seams_ms, summarise

LINE = re.compile(
    r"^(\w+): admitted ([\d,]+) of ([\d,]+), most one client got in any window ([\d,]+) "
    r"\(([\d.]+)× the limit\), wrongly admitted ([\d,]+), wrongly refused ([\d,]+)$"
)


@pytest.fixture(autouse=True)
def runs_in_this_process(monkeypatch):
    """The explorer's logic is what is tested here: its runs in this process, not in two
    worker processes started for each explorer (test_explore_pool.py has those)."""
    monkeypatch.setenv(WORKERS_ENV, "0")


def test_the_default_settings_offer_every_registered_algorithm():
    assert Settings().algorithms == tuple(ALGORITHMS)
    names = [c.name for c in Traffic().clients()]
    assert names == ["steady-1", "poisson-1", "poisson-2", "bursts-1", "on_off-1", "polite-1"]


def test_bad_settings_are_refused_naming_the_field():
    with pytest.raises(ConfigError, match="Settings.algorithms: unknown 'nosuch'"):
        Settings(algorithms=("nosuch",))
    with pytest.raises(ConfigError, match="Settings.limit"):
        Settings(limit=0)
    with pytest.raises(ConfigError, match="Traffic.poisson"):
        Traffic(poisson=-1)


def test_a_run_is_the_scenario_each_algorithm_would_run_alone():
    settings = Settings(duration_s=30)
    outcome = Runner().run(settings)
    for name in settings.algorithms:
        alone = simulate(scenario_for(settings, name))
        assert outcome.frames[name]["allowed"].tolist() == alone["allowed"].tolist()


def test_the_summary_line_of_the_boundary_burst():
    frame = simulate(Scenario("fixed_window", 10, 10_000, 12_000, (BurstAt("u", 10, (9, 11)),)))
    s = summarise(frame, "fixed_window", 10, 10_000)
    line = summary_line(s)
    assert LINE.match(line), line
    # 20 admitted in (1 s, 11 s]: twice the limit; the exact log would refuse the second burst.
    assert line == (
        "fixed_window: admitted 20 of 20, most one client got in any window 20 (2.00× the "
        "limit), wrongly admitted 10, wrongly refused 0"
    )


def test_the_exact_log_never_differs_from_itself():
    outcome = Runner().run(Settings(algorithms=("sliding_log",)))
    assert outcome.summaries["sliding_log"].differs_from_exact == 0


def test_only_what_changed_runs_again():
    runner = Runner()
    calls: list[str] = []
    original = runner._decide

    def counting(settings, algorithm, *rest):
        calls.append(algorithm)
        return original(settings, algorithm, *rest)

    runner._decide = counting  # type: ignore[method-assign]
    runner.run(Settings())
    assert calls == list(ALGORITHMS)
    calls.clear()
    runner.run(Settings())
    assert calls == []
    runner.run(Settings(limit=11))
    assert calls == list(ALGORITHMS)


def test_a_stale_run_is_cancelled_between_decisions():
    with pytest.raises(Cancelled):
        Runner().run(Settings(), cancelled=lambda: True)


def test_seams_sit_on_the_clock_grid():
    outcome = Runner().run(Settings(algorithms=("fixed_window",), duration_s=30))
    assert seams_ms(outcome, 30_000).tolist() == [0, 10_000, 20_000, 30_000]


def test_a_trace_is_replayed_with_times_from_its_first_request(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("t_ms,client\n" + "".join(f"{1_000_000 + i * 100},a\n" for i in range(30)))
    outcome = Runner().run(Settings(limit=5, window_s=1, trace=str(trace)))
    assert outcome.origin_ms == 1_000_000
    assert outcome.summaries["sliding_log"].admitted == 15  # 5 of each second's 10
    assert outcome.summaries["sliding_log"].requests == 30


def test_embedded_valkey_runs_only_what_takes_the_time_from_its_arguments():
    explorer = Explorer(Settings(backend="valkey", duration_s=20))
    try:
        outcome = explorer.refresh()
        assert outcome is not None
        for name, cls in ALGORITHMS.items():
            assert (name in outcome.skipped) == cls.uses_server_time
        fake = Runner().run(Settings(duration_s=20))
        for name, frame in outcome.frames.items():
            assert frame["allowed"].tolist() == fake.frames[name]["allowed"].tolist()
    finally:
        explorer.close()


def _shown(explorer: Explorer, holds, timeout_s: float = 120) -> bool:
    """Wait until the outcome drawn last satisfies ``holds``; False on timeout."""
    with explorer._lock:
        return explorer._lock.wait_for(
            lambda: explorer.outcome is not None and holds(explorer.outcome), timeout_s
        )


def summary_lines(value: str) -> list[str]:
    """The summary's lines as a reader reads them (tags dropped, non-breaking spaces plain)."""
    import html
    import re

    lines = re.findall(r'<span class="explorer-line">(.*?)</span>(?:<br>|</div>)', value)
    return [html.unescape(re.sub(r"<[^>]+>", "", x)) for x in lines]


def test_a_control_change_redraws_once_and_a_higher_limit_admits_as_many():
    explorer = Explorer(debounce_s=0.05)
    try:
        first = explorer.refresh()
        assert first is not None and explorer.drawn == 1
        lines = summary_lines(explorer.summary.value)
        assert len(lines) == len(ALGORITHMS) and all(LINE.match(x) for x in lines), lines
        for limit in range(11, 20):  # a slider dragged: many changes, one run drawn at the end
            explorer.controls.limit.value = limit
        assert explorer.wait(2, timeout=120)
        # On a busy machine the drag can outlast the debounce and draw more than once: what
        # counts is that the last value is the one drawn in the end.
        assert _shown(explorer, lambda o: o.settings.limit == 19), explorer.status.value
        for name, s in explorer.outcome.summaries.items():
            assert s.admitted >= first.summaries[name].admitted
        rows = explorer.timeline.rows
        assert [r["label"] for r in rows] == [ALGORITHMS[a].label for a in ALGORITHMS]
        shown = explorer.controls.client.value
        assert all(r["note"].startswith(f"client {shown}: ") for r in rows)
        assert all("most in a window" in r["note"] for r in rows)
        assert "run " in explorer.status.value
    finally:
        explorer.close()


def test_a_bad_value_is_said_in_the_status_and_the_page_stays():
    explorer = Explorer(debounce_s=0.01)
    try:
        explorer.refresh()
        explorer.controls.burst_at.value = "9, soon"
        deadline = time.monotonic() + 60
        while "soon" not in explorer.status.value and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "is not a list of seconds" in explorer.status.value
        assert explorer.drawn == 1
    finally:
        explorer.close()


def test_parameters_follow_their_default_until_someone_sets_one(forever):  # noqa: F811
    explorer = Explorer(Settings(limit=10))
    try:
        box = explorer.controls.params[("forever", "allowance")]
        assert box.value == 10  # the default: the limit
        explorer.controls.limit.value = 12
        assert box.value == 12
        box.value = 3
        explorer.controls.limit.value = 14
        assert box.value == 3
        assert explorer.controls.settings().params_of("forever") == {"allowance": 3}
        assert ("Never resets (test)", "forever") in explorer.controls.algorithms.options
    finally:
        explorer.close()


# -- the step-through: the server's real keys around each call --------------------------------


def test_a_step_shows_the_keys_the_script_left_on_the_fake_server():
    from simulator.explore.steps import step_through

    t_ms = [59_000 + i for i in range(3)] + [61_000 + i for i in range(3)]
    steps = step_through("sliding_log", 3, 60_000, {}, "u", t_ms)
    assert [s.allowed for s in steps] == [True, True, True, False, False, False]
    refused = steps[3]
    assert refused.before == refused.after  # a refusal writes nothing
    (log,) = refused.after
    assert log.key == "rl:sl:{u}" and log.type == "zset" and log.size == 3
    assert [score for _, score in log.value] == [59_000, 59_001, 59_002]
    assert 0 < log.pttl_ms <= 60_000
    assert refused.headers["Retry-After"] == "58"  # the oldest leaves the window at 119 s
    assert refused.headers["RateLimit-Remaining"] == "0"
    assert refused.reply[0] == 0
    assert refused.exact_in_window == 3 and not refused.exact_allowed


def test_a_step_reads_a_hash_and_ttls_on_the_virtual_clock():
    from simulator.explore.steps import step_through

    steps = step_through("token_bucket", 2, 10_000, {}, "b", [0, 1_000, 7_000])
    bucket = steps[1].after[0]
    assert bucket.type == "hash" and set(bucket.value) >= {"tokens", "ts"}
    assert bucket.value["ts"] == "1000"
    # The fixed window's counter: its TTL counts down on the simulated clock, not on the wall.
    fw = step_through("fixed_window", 5, 10_000, {}, "c", [1_000, 4_000])
    assert fw[0].after[0].pttl_ms - fw[1].before[0].pttl_ms == 3_000


def test_a_step_that_disagrees_with_the_run_is_an_error():
    from simulator.explore.steps import step_through

    with pytest.raises(RuntimeError, match="decided again"):
        step_through("fixed_window", 1, 10_000, {}, "u", [0, 1], allowed=[True, True])


def test_the_explorer_keeps_the_request_chosen_across_servers_and_steps_at_a_refusal():
    from simulator.explore.presets import PRESETS

    explorer = Explorer(PRESETS["boundary burst"].settings)
    try:
        explorer.refresh()
        explorer.step_to(100)  # request 101: the first of second 61
        for server in ("sliding_log", "token_bucket", "fixed_window", "sliding_log"):
            explorer.state_of.value = server
            explorer._pool.submit(lambda: None).result()  # the change of server is handled
            assert explorer.step is not None and explorer.step.index == 100  # the moment kept
        for i in range(101, 106):
            step = explorer.step_to(i)
            assert step is not None and step.index == i and not step.allowed
        assert "rl:sl:{bursts-1}" in explorer.state.value
        assert "100 members" in explorer.state.value
        assert "Retry-After" in explorer.state.value
        assert "request 106 of 200" in explorer.instant.value.replace("&nbsp;", " ")
    finally:
        explorer.close()


# -- presets, messages, stale results -----------------------------------------------------------


@pytest.mark.slow
@pytest.mark.slow  # every preset's scenario run over every algorithm
def test_every_preset_runs_and_the_boundary_burst_shows_its_client():
    from simulator.explore.presets import PRESETS

    explorer = Explorer()
    try:
        explorer.refresh()
        for n, name in enumerate(PRESETS, start=2):
            explorer.preset(name)
            assert explorer.wait(n, timeout=120), explorer.status.value
            assert explorer.outcome is not None
            assert explorer.outcome.settings == explorer.controls.settings()
        explorer.preset("boundary burst")
        assert explorer.wait(len(PRESETS) + 2, timeout=120)
        assert explorer.controls.client.value == "bursts-1"
        fixed = explorer.outcome.summaries["fixed_window"]
        assert fixed.most_in_window == 200  # twice the limit across the seam at 60 s
        assert explorer.outcome.summaries["sliding_log"].most_in_window == 100
    finally:
        explorer.close()


def _error_of(explorer: Explorer, set_value) -> str:
    drawn = explorer.drawn
    set_value()
    deadline = time.monotonic() + 60
    while "color:#b00" not in explorer.status.value and time.monotonic() < deadline:
        time.sleep(0.02)
    assert explorer.drawn == drawn
    assert "explorer-stale" in explorer.timeline._dom_classes  # the old figure is marked
    return explorer.status.value


def _restored(explorer: Explorer, set_value) -> None:
    """A valid value again: it is run and drawn, and that draw is over before the next error
    is asked for (on a busy machine it could otherwise land after the error and count)."""
    drawn = explorer.drawn
    set_value()
    assert explorer.wait(drawn + 1, timeout=120), explorer.status.value


def test_errors_name_the_control_in_its_units_and_leave_the_figure_stale(tmp_path):
    explorer = Explorer(debounce_s=0.01)
    c = explorer.controls
    try:
        explorer.refresh()
        said = _error_of(explorer, lambda: setattr(c.limit, "value", 0))
        assert "limit (requests): at least 1" in said
        _restored(explorer, lambda: setattr(c.limit, "value", 10))
        said = _error_of(explorer, lambda: setattr(c.on_s, "value", 0.0))
        assert "on/off: on for (s)" in said and "on_ms" not in said, said
        _restored(explorer, lambda: setattr(c.on_s, "value", 5.0))
        said = _error_of(explorer, lambda: setattr(c.params[("token_bucket", "burst")], "value", 0))
        assert said.count("token_bucket: burst") == 1 and "Scenario" not in said, said
        _restored(explorer, lambda: setattr(c.params[("token_bucket", "burst")], "value", 10))
        said = _error_of(explorer, lambda: setattr(c.source, "value", "trace file") or
                         setattr(c.trace, "value", " "))  # fmt: skip
        assert "trace file: empty" in said, said
        secret = tmp_path / "secret.txt"
        secret.write_text("api_key=hunter2 and more\n")
        said = _error_of(explorer, lambda: setattr(c.trace, "value", str(secret)))
        assert "hunter2" not in said and "line 1" in said, said
        said = _error_of(explorer, lambda: setattr(c.trace, "value", str(tmp_path / "none.csv")))
        assert "cannot read" in said, said

        def flood() -> None:  # several controls at once, the last one runs
            with explorer._hush():
                c.source.value, c.duration_s.value, c.poisson.value = "traffic mix", 3600, 20
            c.poisson_rate.value = 20.0

        said = _error_of(explorer, flood)
        assert "requests for each algorithm, at most 500,000" in said, said
    finally:
        explorer.close()


def test_a_trace_edited_in_place_is_read_again(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("t_ms,client\n" + "".join(f"{i * 10},a\n" for i in range(10)))
    runner = Runner()
    settings = Settings(algorithms=("sliding_log",), limit=100, trace=str(trace))
    assert runner.run(settings).summaries["sliding_log"].requests == 10
    stat = trace.stat()
    trace.write_text("t_ms,client\n" + "".join(f"{i * 10},a\n" for i in range(50)))
    import os

    os.utime(trace, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same time stamp as before
    assert runner.run(settings).summaries["sliding_log"].requests == 50


def test_a_script_registered_again_under_its_name_runs_again(forever, monkeypatch):  # noqa: F811
    from simulator.algorithms import scripts

    runner = Runner()
    settings = Settings(algorithms=("forever",), limit=3, duration_s=20)
    before = runner.run(settings).summaries["forever"]
    assert before.admitted < before.requests
    lenient = scripts._ADDED["forever"].replace(
        "return {0, count, limit, 0, -1, -1}", "return {1, count, limit, 0, -1, 0}"
    )
    monkeypatch.setitem(scripts._ADDED, "forever", lenient)
    scripts.load.cache_clear()
    again = runner.run(settings).summaries["forever"]
    assert again.admitted == again.requests


def test_a_trace_span_runs_only_its_requests(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("t_ms,client\n" + "".join(f"{1_000 + i * 1_000},a\n" for i in range(100)))
    outcome = Runner().run(
        Settings(algorithms=("sliding_log",), trace=str(trace), trace_from_s=10, trace_span_s=20)
    )
    assert outcome.summaries["sliding_log"].requests == 20
    assert outcome.origin_ms == 11_000


# -- the rows -------------------------------------------------------------------------------------


def test_one_row_per_algorithm_each_request_a_mark_and_the_counted_windows():
    from simulator.charts.explorer import Rows, windows_at

    frame = simulate(Scenario("fixed_window", 10, 10_000, 12_000, (BurstAt("u", 10, (9, 11)),)))
    log = simulate(Scenario("sliding_log", 10, 10_000, 12_000, (BurstAt("u", 10, (9, 11)),)))
    rows = Rows()
    drawn = rows.show({"fixed_window": frame, "sliding_log": log}, 10, 10_000, "u", 0, 12_000)
    assert [f.title for f in rows.figures()] == [  # whose marks: the client's own numbers
        "Fixed window (clock grid) · client u: 20 requests, 20 admitted, most in a window 20",
        "Sliding log (exact) · client u: 20 requests, 10 admitted, most in a window 10",
    ]
    assert all(float(f.title_style["font-size"].rstrip("px")) >= 12 for f in rows.figures())
    fixed, exact = rows._rows["fixed_window"], rows._rows["sliding_log"]
    assert len(fixed.admitted.x) == 20 and len(fixed.refused.x) == 0
    assert len(exact.admitted.x) == 10 and len(exact.refused.x) == 10
    assert max(fixed.admitted.y) == 20 and max(drawn["sliding_log"].in_window) == 10
    assert "refused" in exact.refused.names[0] and "Retry-After" in exact.refused.names[0]
    assert len(fixed.x_axis.tick_values) <= 11
    rows.at(11_000)
    import numpy as np

    assert np.atleast_2d(fixed.band.x).tolist() == [[10.0, 20.0]]  # the clock grid's 2nd window
    assert np.atleast_2d(exact.band.x).tolist() == [[1.0, 11.0]]  # the trailing (t - W, t]
    assert windows_at("sliding_counter", 11_000, 10_000) == [(0, 10_000), (10_000, 20_000)]
    assert windows_at("echomq", 11_000, 10_000, reset_ms=8_000) == [(9_000, 19_000)]


def test_a_long_trace_is_drawn_in_hours_with_few_ticks(tmp_path):
    from simulator.charts.explorer import Rows

    trace = tmp_path / "t.csv"
    trace.write_text("t_ms,client\n" + "".join(f"{i * 3_600_000},a\n" for i in range(80)))
    outcome = Runner().run(Settings(algorithms=("sliding_log",), trace=str(trace)))
    rows = Rows()
    rows.show(outcome.frames, 10, 10_000, "a", outcome.origin_ms)
    row = rows._rows["sliding_log"]
    assert row.x_axis.label == "time (h from the first request)" or row.x_axis.label == "time (h)"
    assert max(row.admitted.x) == 79.0 and len(row.x_axis.tick_values) <= 11


def _counted(explorer: Explorer) -> list[tuple[str, int]]:
    """The (algorithm, limit) of every run the explorer's runner decides from now on."""
    calls: list[tuple[str, int]] = []
    original = explorer.runner._decide

    def counting(settings, algorithm, *rest):
        calls.append((algorithm, settings.limit))
        return original(settings, algorithm, *rest)

    explorer.runner._decide = counting  # type: ignore[method-assign]
    return calls


def test_the_limits_next_to_the_one_shown_are_run_ahead_and_a_change_stops_that():
    # in this process, where each algorithm's run can be counted (test_explore_pool.py has
    # the worker processes)
    explorer = Explorer(Settings(duration_s=20), workers=0)
    try:
        explorer.refresh()
        explorer._pool.submit(lambda: None).result()  # the run ahead has finished
        calls = _counted(explorer)
        explorer.controls.limit.value = 11
        assert explorer.wait(2, timeout=120)
        assert explorer.outcome.settings.limit == 11
        assert [c for c in calls if c[1] == 11] == []  # drawn from the cache
        explorer._pool.submit(lambda: None).result()
        assert {limit for _, limit in calls} == {12}  # then 12 ran ahead (10 was there)
        # A change stops a run ahead at its next decision.
        calls.clear()
        explorer.controls.limit.value = 30
        explorer.controls.limit.value = 40
        assert explorer.wait(3, timeout=120)
        explorer._pool.submit(lambda: None).result()
        assert explorer.outcome.settings.limit == 40
        assert {limit for _, limit in calls} <= {40, 39, 41}
    finally:
        explorer.close()


@pytest.mark.slow  # a run ahead long enough (300 s of traffic) to be asked for while it runs
def test_a_change_to_the_limit_being_run_ahead_lets_that_run_finish():
    explorer = Explorer(Settings(duration_s=300), workers=0)
    try:
        calls = _counted(explorer)
        explorer.refresh()  # limit 10; 11 then starts running ahead
        explorer.controls.limit.value = 11  # asked for while it runs
        assert explorer.wait(2, timeout=300)
        explorer._pool.submit(lambda: None).result()
        assert explorer.outcome.settings.limit == 11
        ahead = [a for a, limit in calls if limit == 11]
        assert sorted(ahead) == sorted(explorer.outcome.frames), "each decided once, not restarted"
        assert 9 not in {limit for _, limit in calls}  # the reader moved on before 9 ran
    finally:
        explorer.close()


def test_a_users_script_is_stepped_through_by_the_keys_it_wrote(forever):  # noqa: F811
    from simulator.explore.steps import step_through

    steps = step_through("forever", 2, 10_000, {}, "me", [0, 50_000, 90_000])
    assert [s.allowed for s in steps] == [True, True, False]
    (key,) = steps[2].after
    assert key.key == "rl:forever:{me}" and key.value == "2" and key.pttl_ms == -1
    assert "Retry-After" not in steps[2].headers  # it never resets: nothing to retry after


def test_steps_as_a_table_name_the_keys_their_values_and_ttls():
    from simulator.explore.steps import step_through, steps_frame

    steps = step_through("fixed_window", 2, 60_000, {}, "user", [59_000, 59_001, 61_000])
    table = steps_frame(steps)
    assert table.index.tolist() == [1, 2, 3]
    assert table["decided"].tolist() == ["admitted", "admitted", "admitted"]
    assert table["exact log"].tolist() == ["admits", "admits", "refuses"]
    assert table.loc[3, "keys before"] == "rl:fw:{user}:0 = 2 (PTTL 58,000 ms)"
    assert table.loc[3, "keys after"].endswith("rl:fw:{user}:1 = 1 (PTTL 60,000 ms)")


# -- the fake server without the wire ----------------------------------------------------------


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_the_direct_fake_server_replies_as_the_fake_server_does(algorithm):
    import numpy as np

    from simulator.backends import FakeRedisBackend
    from simulator.backends.direct import DirectFakeBackend

    rng = np.random.default_rng(7)
    t_ms = np.cumsum(rng.integers(0, 900, 400)).tolist()
    replies = []
    for cls in (FakeRedisBackend, DirectFakeBackend):
        now = [0]
        backend = cls(lambda now=now: now[0])
        limiter = ALGORITHMS[algorithm](backend, 7, 5_000)
        got = []
        for i, t in enumerate(t_ms):
            now[0] = t
            got.append(backend.call(*limiter.call(f"c{i % 3}", t, 1 + i % 2)))
        keys = sorted(backend.client.scan_iter())
        got.append([(k, backend.client.pttl(k)) for k in keys])
        replies.append(got)
        backend.close()
    assert replies[0] == replies[1]


def test_the_direct_fake_server_raises_what_a_script_error_raises():
    import hashlib

    from simulator.backends import FakeRedisBackend, ScriptError
    from simulator.backends.direct import DirectFakeBackend
    from simulator.calls import Script

    source = "return redis.call('INCRBY', KEYS[1], 'many')"
    bad = Script("bad", source, hashlib.sha1(source.encode()).hexdigest())
    messages = []
    for cls in (FakeRedisBackend, DirectFakeBackend):
        with pytest.raises(ScriptError) as caught:
            cls().call(bad, ["k"], [])
        messages.append(str(caught.value))
    assert messages[0] == messages[1] and "script bad failed on keys ['k']" in messages[0]


def test_a_trace_span_too_long_to_explore_is_refused_naming_the_span(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("t_ms,client\n" + "".join(f"{i},a\n" for i in range(50)))
    runner = Runner(most_requests=40)
    with pytest.raises(ConfigError, match=r"50 requests in the span, at most 40"):
        runner.run(Settings(trace=str(trace)))
    assert runner.run(Settings(trace=str(trace), trace_span_s=0.03)).decisions == 30 * len(
        Settings().algorithms
    )  # every algorithm of the registry


def test_a_change_sent_while_the_explorer_sets_its_widgets_in_another_thread_is_not_lost():
    """The explorer hushes the handlers of what it sets itself, often in its worker thread; a
    request painted on the page meanwhile (handled in the kernel's own thread) still runs."""
    import threading

    from simulator.explore.presets import PRESETS

    explorer = Explorer(PRESETS["boundary burst"].settings, debounce_s=0.01)
    try:
        assert explorer.refresh() is not None
        drawn = explorer.drawn
        inside, leave = threading.Event(), threading.Event()

        def draw_elsewhere() -> None:
            with explorer._hush():
                inside.set()
                leave.wait(60)

        other = threading.Thread(target=draw_elsewhere)
        other.start()
        try:
            assert inside.wait(60)
            assert not explorer._quiet  # hushed there, not here
            explorer.timeline.added = [{"t_ms": 30_000, "n": 3}]
        finally:
            leave.set()
            other.join(60)
        assert explorer.wait(drawn + 1, timeout=120), explorer.status.value
        assert _shown(explorer, lambda o: o.settings.traffic.added), explorer.status.value
        assert explorer.outcome.settings.traffic.added[0][1:] == (30.0, 3)
    finally:
        explorer.close()
