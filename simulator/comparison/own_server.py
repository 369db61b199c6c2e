"""A comparison's task on a server of its own, started from a spec where the task runs.

On Dask every shard of every candidate is a task; sharing one real server between workers would
make the keys of one candidate meet another's. So each task starts its own server from the run's
:class:`~simulator.backends.specs.BackendSpec` (the embedded Valkey: a fresh folder, a random
password, 127.0.0.1 only), replays its shard there as :func:`~simulator.comparison.server.on_server`
does (keys checked, weighed, deleted), and stops it, here or on the worker. A server that does
not start there fails the task, naming its shard: the fake server in its place would make one
scorecard of two backends, the server's own figures (``MEMORY USAGE``, CPU) measured over some
shards only. (``compare`` starts a chosen Valkey once before any task: one that does not start
on this machine gives every task the fake server, as a run here does.) Each part carries how
many keys its server expired on its own wall clock: ``compare`` decides a chosen Valkey's whole
run again on the fake server when any shard's did, so that one scorecard has one backend.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from simulator.comparison.score import Part, Task, _peak_rss_kb
from simulator.comparison.server import on_server

if TYPE_CHECKING:
    from simulator.backends.specs import BackendSpec

__all__ = ["on_own_server"]


def on_own_server(spec: BackendSpec, task: Task) -> Part:
    """``task`` on a server started from ``spec`` for it alone, stopped however it ends."""
    from simulator.backends import BackendError, make_backend
    from simulator.backends.choice import start_cause
    from simulator.backends.embedded import expiry_counted_when_read
    from simulator.userscripts.shipping import install

    install(task.script)
    try:
        backend = make_backend(spec)
    except BackendError as exc:
        raise BackendError(
            f"shard {task.shard + 1} of {task.shards} ({task.candidate.name}): its own {spec} "
            f"did not start on its worker ({start_cause(exc)}); not replaced by the fake "
            "server, which would mix two backends in one scorecard: run again, or with "
            "--backend fakeredis"
        ) from None
    try:
        expiry_counted_when_read(backend)
        part = on_server(task, backend)  # with the keys its server expired (the CLI's to judge)
    finally:
        backend.close()
    part.peak_rss_kb = _peak_rss_kb()
    return part
