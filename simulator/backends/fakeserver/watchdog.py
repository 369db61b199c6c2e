"""Ctrl-C and SIGTERM end the program even while a script is stuck inside one C call.

The budget's hook (:mod:`~.budget`) stops any script that runs Lua instructions, and it is the
moment Python's signal handlers run. One C function can run for ever without an instruction in
between: ``string.find`` with a pattern that backtracks (``('a'):rep(40)`` against ``('a*'):rep(40)
.. 'b'``) never comes back to the hook, so the signal handler never runs and only SIGKILL used to
end the process. Two ways out were weighed:

* run user scripts in a child process and kill it: every call would cross a pipe (the fake
  server's point is speed: a call costs microseconds), and the keys would live in another
  process;
* a watchdog thread. lupa releases the GIL while Lua runs (a Python thread measured counting on
  during a 0.9 s ``string.find``), and :func:`signal.set_wakeup_fd` makes the C-level signal
  handler write the signal's number to a pipe at once, whatever the main thread is doing.

The watchdog is the second. :func:`exit_on_stuck_scripts` (armed by the command line, never by
a library caller) starts a thread that reads that pipe. When a signal comes while a Lua call is
in flight and the same call is still in flight :data:`GRACE_S` later, the hook cannot reach it:
the thread flushes every open file it can within a second (the rows already written reach the
disk), runs the exit handlers within the same second, says so on stderr and ends the process
with ``os._exit(128 + signum)``, the status the program gives an interrupted run (130, 143).
A signal that comes between calls, or during a call that ends, is left to the program's own
handlers, which end the run in their own clean way.
"""

from __future__ import annotations

import atexit
import gc
import io
import os
import signal
import sys
import threading
import time

from simulator.backends.fakeserver.budget import CALLS

__all__ = ["exit_on_stuck_scripts", "GRACE_S"]

#: How long a Lua call may go on after a signal before it is taken to be out of the hook's reach.
GRACE_S = 0.5
#: How long the way out may spend flushing files and running exit handlers.
FLUSH_S = 0.4

_armed: list[int] = []


def exit_on_stuck_scripts() -> bool:
    """Arm the watchdog for this process (once; main thread only); False where it cannot be
    (not the main thread, or another user of :func:`signal.set_wakeup_fd` came first)."""
    if _armed or threading.current_thread() is not threading.main_thread():
        return bool(_armed)
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    previous = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    if previous != -1:  # someone else's (an event loop): theirs stays
        signal.set_wakeup_fd(previous)
        os.close(read_fd)
        os.close(write_fd)
        return False
    _armed.append(write_fd)
    threading.Thread(target=_watch, args=(read_fd,), name="script-watchdog", daemon=True).start()
    return True


def _watch(read_fd: int) -> None:
    while True:
        got = os.read(read_fd, 1)
        if not got:
            return
        signum = got[0]
        if signum not in (signal.SIGINT, signal.SIGTERM):
            continue
        call = CALLS[0]
        if call % 2 == 0:  # no Lua call in flight: the handlers run at once
            continue
        time.sleep(GRACE_S)
        if CALLS[0] == call:
            _exit_now(signum)


def _exit_now(signum: int) -> None:
    """The way out when the main thread cannot take its own: files flushed, exit handlers run
    (each within :data:`FLUSH_S`), one line on stderr, ``os._exit(128 + signum)``."""
    worker = threading.Thread(target=_flush_and_clean_up, daemon=True)
    worker.start()
    worker.join(FLUSH_S)
    command = next((a for a in sys.argv[1:] if not a.startswith("-")), "")
    name = signal.Signals(signum).name
    line = f"python -m simulator {command}: interrupted ({name}) inside a script call\n"
    os.write(2, line.encode())
    os._exit(128 + signum)


def _flush_and_clean_up() -> None:
    for obj in gc.get_objects():
        if isinstance(obj, io.IOBase):
            try:
                if not obj.closed and obj.writable():
                    obj.flush()
            except (OSError, ValueError):
                pass
    try:
        atexit._run_exitfuncs()
    except Exception:  # noqa: BLE001 - the process ends next whatever a handler does
        pass
