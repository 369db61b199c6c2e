"""How big a run may be on this machine: a burst's decisions are all held until its summary.

A burst of ``2 x users x per_burst`` requests keeps every decision row (the fake server's keys,
the log, its frame) until the end, so one that does not fit in memory would grow until the
machine swaps, deaf to Ctrl-C while it allocates. ``burst`` on the command line and a sweep of
the burst study refuse such a run before it starts, with the same bound.
"""

from __future__ import annotations

import os

__all__ = ["machine_bytes", "BYTES_PER_DECISION", "most_burst_requests", "burst_too_big"]

#: What one decision row weighs while a burst runs (the fake server's keys, the log, its frame):
#: about 250 bytes measured with ``burst --limit 20000`` and ``--limit 100000``, rounded up.
BYTES_PER_DECISION = 300


def machine_bytes() -> int:
    """This machine's memory in bytes (all of it, not what is free at the moment)."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def most_burst_requests(algorithms: int) -> int:
    """The most requests a burst may send per algorithm (2 x users x per burst) when
    ``algorithms`` algorithms' decisions are held at once, in at most half this machine's
    memory."""
    return machine_bytes() // 2 // BYTES_PER_DECISION // max(1, algorithms)


def burst_too_big(requests: int, algorithms: int) -> str | None:
    """None if a burst of ``requests`` per algorithm fits; else why not, in words ending on the
    figures (the caller names the input that asked for it)."""
    most = most_burst_requests(algorithms)
    if requests <= most:
        return None
    return (
        f"{requests:,} requests per algorithm, over the {most:,} whose decisions fit in this "
        f"machine's memory (about {BYTES_PER_DECISION} bytes each, {algorithms} "
        f"algorithm{'s' if algorithms != 1 else ''}, half of "
        f"{machine_bytes() / (1 << 30):.1f} GiB)"
    )
