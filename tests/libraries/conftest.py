"""The library strategies' tests: skipped, with the reason, where the ``libraries`` extra is not
installed; each test leaves the registry as it found it (naming a library strategy registers
that library's adapters, which the rest of the suite must not see)."""

from __future__ import annotations

import pytest

from simulator.algorithms import ALGORITHMS


@pytest.fixture(autouse=True)
def registry_as_it_was():
    before = dict(ALGORITHMS)
    yield
    for name in [n for n in ALGORITHMS if n not in before]:
        del ALGORITHMS[name]
