import atexit
import os
import sys

from simulator.cli import main

# Guarded: a worker process that Python starts by importing this module (as the explorer's
# worker pool does) must not run the command line again.
if __name__ == "__main__":
    from simulator.backends.fakeserver.watchdog import exit_on_stuck_scripts

    exit_on_stuck_scripts()  # a script stuck inside one C call still ends on Ctrl-C/SIGTERM
    code = main(restore_signals=False)
    if code in (130, 143):
        # Interrupted and handled: exit with that status. CPython can remember a KeyboardInterrupt
        # that was raised inside code a C extension ran, even after it was caught, and then end
        # the process by SIGINT at shutdown instead; so the way out is taken here, exit handlers
        # (servers still running) first.
        sys.stdout.flush()
        sys.stderr.flush()
        atexit._run_exitfuncs()
        os._exit(code)
    sys.exit(code)
