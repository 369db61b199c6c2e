"""The keys a run will use, and whether a server the program did not start holds them already.

On a server the program did not start, a run touches only its own keys, and it does not start
when one of them exists already: its contents would change the decisions. A server the program
started itself is fresh, so there nothing is looked up.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from simulator.backends import Backend
from simulator.backends.specs import redact
from simulator.policy import Policy

__all__ = ["run_keys", "KeyGroup", "leftover_keys", "leftover_keys_in_groups"]


def run_keys(policy: Policy, requests: Iterable[tuple[str, int]], backend: Backend) -> list[str]:
    """Every key that requests ``(client, t_ms)`` touch under ``policy``, each once, in order
    of first use."""
    limiter = policy.limiter(backend)
    keys = limiter.keys
    return list(dict.fromkeys(k for c, t in dict.fromkeys(requests) for k in keys(c, t)))


#: Keys looked up in one go: which requests they are for (None: all of the run's), the keys.
KeyGroup = tuple[str | None, list[str]]


def leftover_keys(backend: Backend, spec: str, keys: Callable[[], list[str]]) -> str | None:
    """Why the run must not start on ``backend`` (keys it will use exist already), or None.

    Only a server the program did not start can hold them (a started one is fresh), so only
    there are the ``keys`` listed and looked up.
    """
    return leftover_keys_in_groups(backend, spec, lambda: [(None, keys())])


def leftover_keys_in_groups(
    backend: Backend, spec: str, groups: Callable[[], Iterable[KeyGroup]]
) -> str | None:
    """:func:`leftover_keys` for a run too long to list all its keys at once.

    The groups (e.g. the keys of each 131,072 requests of a trace) are made and looked up one
    after another; the first that holds a key that exists already stops the check, and the
    message counts the keys of that group.
    """
    if backend.virtual_time or backend.owned is not None:
        return None
    for which, wanted in groups():
        found, examples = backend.existing(wanted) if wanted else (0, [])
        if found:
            whose = "this run uses" if which is None else f"used by {which}"
            return (
                f"backend {redact(spec)}: {found} of the {len(wanted)} keys {whose} already exist "
                f"(e.g. {', '.join(examples)}) - left by an earlier run or another program, "
                "their contents would change the decisions. Use an empty database (e.g. "
                "redis://HOST:PORT/15), delete them (e.g. redis-cli --scan --pattern 'rl:*' | "
                "xargs redis-cli unlink), or pass --reuse-keys to run on them as they are"
            )
    return None
