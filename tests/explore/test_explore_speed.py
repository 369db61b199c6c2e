"""What makes the explorer quick keeps its decisions honest: the steps of a jump equal those
made one by one, a newer run stops the stepping between two requests and it goes on after."""

from __future__ import annotations

import pytest

from simulator.explore.job import Cancelled
from simulator.explore.presets import PRESETS
from simulator.explore.runs import Runner
from simulator.explore.steps import KEPT_BEHIND, Stepper, step_through


@pytest.fixture(scope="module")
def burst():
    settings = PRESETS["boundary burst"].settings
    outcome = Runner(workers=0).run(settings)
    frame = outcome.frames["sliding_counter"]
    columns = (frame["t_ms"].tolist(), frame["cost"].tolist(), frame["allowed"].tolist())
    return settings.policies["sliding_counter"], columns


def test_a_jump_and_steps_back_past_the_kept_ones_equal_the_steps_one_by_one(burst):
    policy, (times, costs, allowed) = burst
    one_by_one = step_through(
        policy.name, policy.limit, policy.window_ms, dict(policy.params), "bursts-1",
        times, costs, allowed,
    )  # fmt: skip
    stepper = Stepper(policy, "bursts-1", times, costs, allowed)
    try:
        at = 120
        assert stepper[at] == one_by_one[at]
        for i in range(at - 1, at - KEPT_BEHIND - 5, -1):  # back, past the steps kept
            assert stepper[i] == one_by_one[i]
        assert stepper[at + 1] == one_by_one[at + 1]
    finally:
        stepper.close()


def test_a_newer_run_stops_the_stepping_and_a_later_call_goes_on(burst):
    policy, (times, costs, allowed) = burst
    stepper = Stepper(policy, "bursts-1", times, costs, allowed)
    asked = [0]

    def stale() -> bool:
        asked[0] += 1
        return asked[0] > 10

    try:
        with pytest.raises(Cancelled):
            stepper.at(150, stale)
        expected = step_through(
            policy.name, policy.limit, policy.window_ms, dict(policy.params), "bursts-1",
            times, costs, allowed,
        )[150]  # fmt: skip
        assert stepper.at(150) == expected
    finally:
        stepper.close()


def test_the_address_carries_painted_requests_and_parameters_and_reopens_them():
    from simulator.explore import Explorer

    painted = "preset=boundary+burst&param.token_bucket.burst=150&added=30,2,bursts-1&request=3"
    first = Explorer(workers=0, look_ahead=False, address=painted)
    try:
        first.refresh()
        settings = first.outcome.settings
        assert settings.traffic.added == (("bursts-1", 30.0, 2),)
        assert settings.policies["token_bucket"].params["burst"] == 150
        assert first.outcome.summaries["fixed_window"].requests == 202
        assert first.timeline.added == [{"t_ms": 30_000.0, "n": 2}]
        again = first.address()
    finally:
        first.close()
    assert "added=30%2C2%2Cbursts-1" in again and "param.token_bucket.burst=150" in again
    second = Explorer(workers=0, look_ahead=False, address=again)
    try:
        second.refresh()
        assert second.outcome.settings.policies == settings.policies
        assert second.outcome.settings.traffic == settings.traffic
        assert second.step is not None and second.step.index == 2
    finally:
        second.close()


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ("param.nope.burst=1", "address: param.nope.burst: no algorithm 'nope'"),
        ("param.token_bucket.size=1", "token_bucket has no parameter 'size' (burst)"),
        ("param.token_bucket.burst=many", "param.token_bucket.burst='many' is not a number"),
        ("added=30,2", "added='30,2': expected <at_s>,<n>,<client>"),
        ("added=soon,2,bursts-1", "added (at_s)='soon' is not a number"),
    ],
)
def test_a_wrong_address_names_what_is_wrong(query, said):
    from simulator.checks import ConfigError
    from simulator.explore.share import read_address

    with pytest.raises(ConfigError) as refused:
        read_address(query)
    assert said in str(refused.value)


def _by_client(frame):
    return frame.sort_values("client", kind="stable").reset_index(drop=True)


def _painted(settings, *added):
    from dataclasses import replace

    return replace(settings, traffic=replace(settings.traffic, added=added))


@pytest.mark.parametrize("workers", [0, pytest.param(1, marks=pytest.mark.slow)])
def test_a_request_painted_on_one_client_decides_only_it_again_with_the_rows_of_a_whole_run(
    workers, monkeypatch
):
    import pandas as pd

    from simulator.explore import job as jobs
    from simulator.explore.settings import Settings

    before = Settings(duration_s=30.0)
    one = _painted(before, ("poisson-1", 12.5, 3))
    two = _painted(before, ("poisson-1", 12.5, 3), ("bursts-1", 9.0, 4))
    runner = Runner(workers=workers)
    try:
        runner.run(before)
        merges = []
        real = jobs.merged
        monkeypatch.setattr(
            "simulator.explore.runs.merged", lambda *a: merges.append(a[2]) or real(*a)
        )
        got = [runner.run(one), runner.run(two)]
    finally:
        runner.close()
    assert merges[: len(before.algorithms)] == [["poisson-1"]] * len(before.algorithms)
    assert merges[len(before.algorithms) :] == [["bursts-1"]] * len(before.algorithms)
    for settings, outcome in zip((one, two), got, strict=True):
        whole = Runner(workers=0).run(settings)
        for a in settings.algorithms:
            pd.testing.assert_frame_equal(
                _by_client(outcome.frames[a]), _by_client(whole.frames[a])
            )
            assert outcome.summaries[a] == whole.summaries[a]


def test_a_request_painted_on_a_polite_client_runs_them_all():
    from simulator.explore.partial import partial_of
    from simulator.explore.settings import Settings

    before = Settings(duration_s=30.0)
    after = _painted(before, ("polite-1", 12.5, 3))
    assert partial_of(after, "fixed_window", lambda s: s, lambda key: key == before) is None
    other = _painted(before, ("steady-1", 12.5, 3))
    part = partial_of(other, "fixed_window", lambda s: s, lambda key: key == before)
    assert part is not None and part.names == ("steady-1",)


@pytest.mark.slow
def test_a_preheated_kernel_counts_toward_the_bound_and_gets_past_it_are_refused(tmp_path):
    import urllib.error
    import urllib.request

    pytest.importorskip("voila")
    from served import WAIT_S, children_running, served

    with served(tmp_path, most_kernels=2, preheat=True) as (server, port, log):
        statuses = []
        for _ in range(4):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=WAIT_S) as page:
                    statuses.append(page.status)
                    assert "explorer" in page.read().decode("utf-8", "replace")
            except urllib.error.HTTPError as refused:
                statuses.append(refused.code)
                assert refused.reason == "2 explorer kernels already running; try again later"
        said = log.read_text()
        assert statuses == [200, 200, 503, 503], (statuses, said[-3000:])
        assert "Using pre-heated kernel" in said, said[-3000:]
        assert 1 <= len(children_running(server.pid, b"ipykernel")) <= 2
        assert server.poll() is None


def test_make_explore_keeps_a_kernel_preheated_and_tests_serve_without_one():
    from simulator.explore.serve import voila_argv

    assert "--VoilaConfiguration.preheat_kernel=True" in voila_argv(preheat=True)
    assert not any("preheat" in a for a in voila_argv())
