"""One client's requests decided again, in order, on a fresh fake server at their own instants.

A client's decisions depend on its own keys only (every key under its own hash tag), so the
requests one client sent can be decided again on a fresh fake server whose clock is set to each
request's ``t_ms``, and the replies are the run's replies. The explorer's stepping
(:class:`simulator.explore.steps.Stepper`) and the view of why one decision went as it did
(:func:`simulator.explain.explain_decision`) both stand on this :class:`Replay`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simulator.backends.direct import DirectFakeBackend
from simulator.calls import Script
from simulator.policy import Policy
from simulator.records import Decision

__all__ = ["Decided", "Replay"]


@dataclass(frozen=True)
class Decided:
    """One request decided: what the limiter sent (its script or command, keys and arguments),
    the server's reply as it came, and the decision read from it."""

    script: Script
    keys: tuple[str, ...]
    args: tuple[Any, ...]
    reply: Any
    decision: Decision


class Replay:
    """``policy``'s limiter for ``client`` on a fresh fake server whose clock reads
    :attr:`now_ms`; :meth:`decide` sets the clock to a request's instant and decides it."""

    def __init__(self, policy: Policy, client: str) -> None:
        self.client = client
        self.now_ms = 0
        self.backend = DirectFakeBackend(lambda: self.now_ms)
        self.limiter = policy.limiter(self.backend)

    def decide(self, t_ms: int, cost: int = 1) -> Decided:
        """The request at ``t_ms`` of ``cost``, decided on the server with its clock at ``t_ms``."""
        self.now_ms = t_ms
        script, keys, args = self.limiter.call(self.client, t_ms, cost)
        reply = self.backend.call(script, keys, args)
        return Decided(script, tuple(keys), tuple(args), reply, self.limiter.parse(reply))

    def close(self) -> None:
        self.backend.close()
