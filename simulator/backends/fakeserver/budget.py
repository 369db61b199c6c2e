"""Nothing a script does can hang a run: the time budget, the heap cap and signals in Lua.

Every runtime carries a Lua count hook (one call into Python every :data:`HOOK_EVERY`
instructions, which costs next to nothing): it stops a script that has run longer than its time
budget (5 s of wall time per call by default, like a server's busy-script limit), and it is the
moment Python's pending signal handlers run, so Ctrl-C and SIGTERM end a script stuck in a loop
within a fraction of a second. Once it stops a script it fires on every instruction, so a
``pcall`` in the script cannot swallow the stop. The Lua heap is capped as well (256 MiB by
default); a script that needs more is stopped. A stopped script is an error reply for its call,
and :func:`~simulator.backends.fakeserver.runtime.script_limit_hit` says which limit stopped it.
"""

from __future__ import annotations

import math

__all__ = [
    "SCRIPT_TIME_S",
    "SCRIPT_MEMORY_MIB",
    "HOOK_EVERY",
    "HOOK_MAKER",
    "INTERRUPTED",
    "NEVER",
    "PENDING",
    "CALLS",
    "interrupt_scripts",
    "resume_scripts",
]

#: Wall time one script call may take on the fake server, by default (a server's busy limit).
SCRIPT_TIME_S = 5.0
#: The fake server's Lua heap, by default, in MiB.
SCRIPT_MEMORY_MIB = 256
#: Lua instructions between two looks at the clock and at pending signals: about a millisecond
#: of Lua, and too rare to show in the hot path's speed.
HOOK_EVERY = 200_000
#: What the hook says when a signal handler raised (Ctrl-C, SIGTERM) while it looked.
INTERRUPTED = b"interrupted"
NEVER = math.inf
#: Lua calls begun and ended on every runtime of the process: odd while one is in flight (the
#: watchdog, :mod:`~.watchdog`, reads it from its own thread).
CALLS = [0]
#: What a signal handler asked to raise in scripts that run long (see :func:`interrupt_scripts`).
PENDING: list[BaseException] = []

# The hook: ``check`` (Python) answers None or why the script must stop; once stopped, the hook
# fires on every instruction and raises again, so the script cannot catch its way past it.
# ``state.stop`` is set and cleared from Python, which runs no Lua instruction; ``state.raised``
# keeps what a signal handler raised, to be raised again once the script is out of the way.
HOOK_MAKER = """function(check, state)
  local sethook, pcall, error = debug.sethook, pcall, error
  local hook
  hook = function()
    local said = state.stop
    if not said then
      local ok, answer = pcall(check)
      if ok then said = answer else state.raised = answer; said = state.interrupted end
    end
    if said then state.stop = said; sethook(hook, '', 1); error(said, 0) end
  end
  return hook
end"""


def interrupt_scripts(exc: BaseException) -> None:
    """From a signal handler that lets the calls in flight finish before it stops a run: have
    ``exc`` raised in any script on a fake server that is running now or starts later and runs
    long (a millisecond of Lua), even one that catches errors; calls that end sooner are left
    to end. Until :func:`resume_scripts`."""
    PENDING[:] = [exc]


def resume_scripts() -> None:
    """Scripts run on undisturbed again (the handler that asked is gone)."""
    PENDING.clear()
