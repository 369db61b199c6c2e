"""The replay's summary line, counted as the decisions go by, in bounded memory.

``fixed_window: 4958 of 10000 admitted, 5042 refused, 812 of 1000 clients refused at least once``
needs two counts of distinct clients. A set holds them exactly, but an access log of fifty
million lines may come from millions of hosts, and a set of millions of strings is hundreds of
megabytes. So :class:`Distinct` keeps a set up to :data:`EXACT_UP_TO` ids and past that switches
to a HyperLogLog sketch (Flajolet et al. 2007) of 2^14 one-byte registers: 16 KiB whatever the
count, with a standard error of 1.04 / sqrt(2^14) = 0.8 %. The summary says which counts are
estimates ("about 1,234,000").

The sketch hashes with Python's own ``hash`` of the id (SipHash, 64 bits; seeded per process, so
an estimate may differ by a fraction of a percent from one run to the next).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from simulator.records import Decisions, Row

__all__ = ["Distinct", "ReplayTally", "EXACT_UP_TO", "SKETCH_BITS"]

#: Distinct ids counted exactly before the count becomes an estimate.
EXACT_UP_TO = 131_072
#: log2 of the number of sketch registers.
SKETCH_BITS = 14


class Distinct:
    """How many distinct strings were added: exact up to ``exact_up_to``, then estimated."""

    def __init__(self, exact_up_to: int = EXACT_UP_TO, bits: int = SKETCH_BITS) -> None:
        self.exact_up_to, self.bits = exact_up_to, bits
        self._seen: set[str] | None = set()
        self._registers = np.zeros(1 << bits, dtype="uint8")

    @property
    def exact(self) -> bool:
        return self._seen is not None

    def add(self, items: Sequence[str]) -> None:
        if self._seen is not None:
            self._seen.update(items)
            if len(self._seen) <= self.exact_up_to:
                return
            items, self._seen = list(self._seen), None
        if not items:
            return
        hashes = np.fromiter(map(hash, items), dtype="int64", count=len(items)).view("uint64")
        index = (hashes >> np.uint64(64 - self.bits)).astype("intp")
        rest = hashes & np.uint64((1 << (64 - self.bits)) - 1)  # below 2^53: exact as floats
        # The rank is the position of the first 1 bit in the rest, from its top (64 - bits + 1
        # if it is all zeros); frexp gives the bit length.
        rank = (64 - self.bits + 1) - np.frexp(rest.astype("float64"))[1]
        np.maximum.at(self._registers, index, rank.astype("uint8"))

    def count(self) -> int:
        if self._seen is not None:
            return len(self._seen)
        m = len(self._registers)
        alpha = 0.7213 / (1 + 1.079 / m)
        estimate = alpha * m * m / float(np.sum(np.ldexp(1.0, -self._registers.astype("int64"))))
        zeros = int(np.count_nonzero(self._registers == 0))
        if estimate <= 2.5 * m and zeros:  # small counts: linear counting is better
            estimate = m * math.log(m / zeros)
        return round(estimate)

    def __str__(self) -> str:
        return str(self.count()) if self.exact else f"about {self.count():,}"


class ReplayTally:
    """Counts decisions, refusals and distinct clients from each pipeline's rows."""

    def __init__(self, exact_up_to: int = EXACT_UP_TO) -> None:
        self.decided = self.refused = 0
        self.clients = Distinct(exact_up_to)
        self.refused_clients = Distinct(exact_up_to)

    def __call__(self, rows: Sequence[Row]) -> None:
        self.decided += len(rows)
        if isinstance(rows, Decisions):  # from the columns
            clients = list(rows.clients)
            self.clients.add(clients)
            refused = [clients[i] for i in np.flatnonzero(~rows.columns.allowed).tolist()]
        else:
            self.clients.add([row[1] for row in rows])
            refused = [row[1] for row in rows if not row[3].allowed]
        if refused:
            self.refused += len(refused)
            self.refused_clients.add(refused)

    @property
    def admitted(self) -> int:
        return self.decided - self.refused

    def summary(self, algorithm: str) -> str:
        line = (
            f"{algorithm}: {self.admitted} of {self.decided} admitted, {self.refused} refused, "
            f"{self.refused_clients} of {self.clients} clients refused at least once"
        )
        if not (self.clients.exact and self.refused_clients.exact):
            bound = f"{self.clients.exact_up_to:,}"
            line += f" (client counts past {bound} are estimates, within about 2%)"
        return line
