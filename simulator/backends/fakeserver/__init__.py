"""The fake server: fakeredis on the simulation's clock, with a script path made for speed.

These modules are the only ones that touch fakeredis internals (its version is pinned and checked
in :mod:`~.stock`), one concern each:

* :mod:`~.clock`: SimPy time becomes the server's time (:class:`VirtualClock`), expiry decided
  in whole milliseconds as Redis decides it;
* :mod:`~.runtime`: the Lua runtime, each script compiled once, no full collection per call;
* :mod:`~.budget`: nothing a script does can hang a run (a time budget, a heap cap, signals);
* :mod:`~.watchdog`: Ctrl-C and SIGTERM end the program even inside one endless C call;
* :mod:`~.environment`: the Lua a script sees made Valkey's (its globals, read-only tables,
  the budget in every coroutine), with ``bit``, ``cjson``, ``cmsgpack``, ``struct`` from
  :mod:`~.libs`;
* :mod:`~.scripts`: ``EVAL`` and ``redis.call`` with less work per call;
* :mod:`~.commands`: one command run as fakeredis runs it, its plan kept per command;
* :mod:`~.calls`: a limiter's call without redis-py and the socket (:class:`DirectCalls`);
* :mod:`~.tracing`: one call watched when asked (the lines that ran, each ``redis.call`` and
  its reply), nothing installed otherwise;
* :mod:`~.stock`: fakeredis's own functions, and :func:`plain_scripts` to run them.
"""

from simulator.backends.fakeserver.budget import (
    SCRIPT_MEMORY_MIB,
    SCRIPT_TIME_S,
    interrupt_scripts,
    resume_scripts,
)
from simulator.backends.fakeserver.calls import DirectCalls
from simulator.backends.fakeserver.clock import VirtualClock
from simulator.backends.fakeserver.runtime import limit_scripts, script_limit_hit
from simulator.backends.fakeserver.stock import FAKEREDIS_VERSION, counted_commands, plain_scripts

__all__ = [
    "VirtualClock",
    "FAKEREDIS_VERSION",
    "plain_scripts",
    "SCRIPT_TIME_S",
    "SCRIPT_MEMORY_MIB",
    "limit_scripts",
    "script_limit_hit",
    "interrupt_scripts",
    "resume_scripts",
    "DirectCalls",
    "counted_commands",
]
