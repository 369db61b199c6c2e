"""How long each lesson's Run All takes: ``python tools/notebook_times.py [NOTEBOOK ...]``.

Runs each notebook (default: every ``notebooks/*.ipynb``, in order) top to bottom in a fresh
``python3`` kernel with nbclient, as the test suite's executor does, one after another, its folder
the working directory; prints one line per notebook, its seconds and the load average as it
ended, then the total. Nothing is written: the notebooks stay without outputs. A cell that fails
ends the run with its error (exit 1).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "notebooks"))  # the suite's executor, waits and all
from kernel_polls import poll_each_second  # noqa: E402


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    print(f"{len(paths)} notebooks, load average {os.getloadavg()[0]:.2f} at the start", flush=True)
    total = 0.0
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        client = NotebookClient(
            nb,
            timeout=600,
            kernel_name="python3",
            resources={"metadata": {"path": str(path.parent)}},
        )
        started = time.perf_counter()
        try:
            with client.setup_kernel():
                poll_each_second(client.kc)
                for index, cell in enumerate(nb.cells):
                    client.execute_cell(cell, index)
        except CellExecutionError as exc:
            print(f"{path.name}: {str(exc).strip().splitlines()[-1]}", file=sys.stderr)
            return 1
        took = time.perf_counter() - started
        total += took
        print(f"{path.stem:<26} {took:6.1f} s   load {os.getloadavg()[0]:.2f}", flush=True)
    print(f"{'all':<26} {total:6.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
