"""``bench telemetry``: what the queue's rate-limit hit event costs on the hot path."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from simulator.bench.timing import best_of
from simulator.studies import telemetry
from simulator.studies.queue_budget import QueueRun, run
from simulator.studies.queue_studies import basic_scenario

__all__ = ["bench_telemetry"]


def _ns_per_iteration(body: Callable[[int], None], n: int) -> float:
    # best of three: the first pass also warms up
    return best_of({"body": lambda: body(n)}, 3)["body"][0] / n * 1e9


def bench_telemetry(
    decisions: int = 10_000, out: Callable[[str], None] = print
) -> dict[str, float]:
    """What the hit event costs: the hot-path guard alone, a no-op handler; then whole runs."""
    hit = telemetry.event(("emq", "rate_limit", "bench"))
    n = decisions * 20

    def no_site(n: int) -> None:
        for _i in range(n):
            pass

    def guarded(n: int) -> None:
        for i in range(n):
            if hit.handlers:
                hit.emit("q", i, i)

    def noop(q: str, d: int, t: int) -> None:
        pass

    bare, guard = _ns_per_iteration(no_site, n), _ns_per_iteration(guarded, n)
    with telemetry.attached(hit.name, noop):
        handled = _ns_per_iteration(guarded, n)
    out(f"telemetry: {n:,} loop iterations, best of 3, ns per iteration")
    out(f"  empty loop            {bare:7.1f}")
    out(f"  guard, no handler     {guard:7.1f}   (+{guard - bare:.1f} ns per hit)")
    out(f"  one no-op handler     {handled:7.1f}   (+{handled - bare:.1f} ns per hit)")
    # The basic study makes about 300 dequeues per simulated second.
    scenario = replace(basic_scenario(), duration_ms=max(2_000, decisions * 3), drain_ms=0)
    figures = {"empty_ns": bare, "guard_ns": guard, "noop_ns": handled}
    run(replace(scenario, duration_ms=1_000))  # warm-up: imports, script cache, allocator
    variants = (("no handler", None), ("no-op handler", noop), ("recorder", "record"))

    def variant(handler: object) -> Callable[[], QueueRun]:
        def go() -> QueueRun:
            if callable(handler):
                with telemetry.attached(telemetry.RATE_LIMIT_HIT, handler):
                    return run(scenario)
            return run(scenario, record_events=handler == "record")

        return go

    timed = best_of({name: variant(handler) for name, handler in variants}, 2)
    best: dict[str, float] = {}
    dequeues = hits = 0
    for name, (elapsed, result) in timed.items():  # alternated, each one's best
        assert isinstance(result, QueueRun)
        dequeues = len(result.dequeues)
        hits = int(result.dequeues["action"].str.startswith("defer").sum())
        best[name] = dequeues / elapsed
    out(f"  whole runs of {dequeues:,} dequeues, best of 2:")
    for name, rate in best.items():
        figures[f"{name} dequeues_per_s"] = rate
        out(f"    {name:<14} {rate:>8,.0f} dequeues/s")
    share = hits * (handled - bare) * 1e-9 * best["no handler"] / dequeues
    out(f"  {hits:,} hit events per run; a no-op handler adds {share:.2%} of the run's time")
    figures["noop_share_of_run"] = share
    base = figures["no handler dequeues_per_s"]
    for name in ("no-op handler", "recorder"):
        out(
            f"  {name} / no handler throughput ratio {figures[name + ' dequeues_per_s'] / base:.2f}"
        )
    return figures
