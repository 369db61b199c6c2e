"""The explorer without a browser: settings, runs, the summary line, the widgets' behaviour."""

from __future__ import annotations

import re
import time

import pytest
from test_registry import forever  # noqa: F401 - the throwaway algorithm's fixture

from simulator.algorithms import ALGORITHMS
from simulator.checks import ConfigError
from simulator.engine.run import simulate
from simulator.engine.scenario import BurstAt, Scenario
from simulator.explore import Explorer, Runner, Settings, Traffic, scenario_for, summary_line
from simulator.explore.runs import Cancelled, seams_ms, summarise

LINE = re.compile(
    r"^(\w+): admitted ([\d,]+) of ([\d,]+), most in any window ([\d,]+) \(([\d.]+)× the limit\), "
    r"decided differently from the exact log ([\d,]+)$"
)


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
        "fixed_window: admitted 20 of 20, most in any window 20 (2.00× the limit), decided "
        "differently from the exact log 10"
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


def test_a_control_change_redraws_once_and_a_higher_limit_admits_as_many():
    explorer = Explorer(debounce_s=0.05)
    try:
        first = explorer.refresh()
        assert first is not None and explorer.drawn == 1
        lines = explorer.summary.value.removeprefix("<pre").split(">", 1)[1]
        lines = lines.removesuffix("</pre>").splitlines()
        assert len(lines) == len(ALGORITHMS) and all(LINE.match(x) for x in lines), lines
        for limit in range(11, 20):  # a slider dragged: many changes, one run drawn at the end
            explorer.controls.limit.value = limit
        assert explorer.wait(2, timeout=120)
        time.sleep(0.5)
        assert explorer.outcome is not None and explorer.outcome.settings.limit == 19
        for name, s in explorer.outcome.summaries.items():
            assert s.admitted >= first.summaries[name].admitted
        assert bytes(explorer.image.value).startswith(b"\x89PNG")
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
