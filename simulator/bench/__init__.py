"""The benchmark: sections that measure and print figures and ratios, in one run, on this machine.

``python -m simulator bench [SECTION ...]`` runs them (all by default). Each section takes the
number of decisions per measurement and prints; none asserts a time. They share one timer
(:func:`simulator.bench.timing.best_of`).
"""

from __future__ import annotations

from collections.abc import Callable

from simulator.bench.accuracy import bench_accuracy
from simulator.bench.browser import bench_explorer_browser
from simulator.bench.clients import bench_clients
from simulator.bench.compare import bench_compare
from simulator.bench.core import bench_clock, bench_core
from simulator.bench.explorer import bench_explorer
from simulator.bench.fake import bench_fake
from simulator.bench.libraries import bench_libraries
from simulator.bench.model import bench_model
from simulator.bench.pipeline import bench_pipeline
from simulator.bench.replay import bench_replay_stream
from simulator.bench.scale import bench_scale
from simulator.bench.servers import bench_servers
from simulator.bench.simulate import bench_simulate
from simulator.bench.telemetry import bench_telemetry

__all__ = ["SECTIONS"]

#: Every section by the name ``bench`` takes.
SECTIONS: dict[str, Callable[..., object]] = {
    "core": bench_core,
    "clock": bench_clock,
    "fake": bench_fake,
    "model": bench_model,
    "simulate": bench_simulate,
    "accuracy": bench_accuracy,
    "telemetry": bench_telemetry,
    "servers": bench_servers,
    "pipeline": bench_pipeline,
    "clients": bench_clients,
    "replay-stream": bench_replay_stream,
    "scale": bench_scale,
    "compare": bench_compare,
    "explorer": bench_explorer,
    "explorer-browser": bench_explorer_browser,
    "libraries": bench_libraries,
}
