"""Many requests at a time: calls packed from templates, replies read as columns, rows written
from columns - each the same as the one-at-a-time path it stands in for.

Every limiter that packs a batch of its own (a ``BatchTemplate``, or its own ``batch``: every
built-in one) describes the calls field by field; the bytes must be exactly
what hiredis packs from its calls one by one, and the calls made on demand must be those calls.
Replies of the usual shape are read a column at a time; the decisions must be ``parse``'s. A
limiter that brings none of this (an algorithm registered by a user) still replays, through the
generic path. The CSV written from a batch's columns is the CSV written from its rows.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import hiredis
import numpy as np
import pandas as pd
import pytest

from simulator.algorithms import ALGORITHMS, FixedWindow, SlidingLog
from simulator.algorithms.base import templated
from simulator.backends import FakeRedisBackend
from simulator.backends.wire import pack_batch, pack_fields
from simulator.calls import Batch
from simulator.keys import hash_tag
from simulator.playback.output import DecisionCsv, HeaderColumns
from simulator.playback.run import replay
from simulator.records import Decision, DecisionColumns, Decisions

IDS = ["alice", "b c", "{x}", "é", "a\udcff", "", "%", "100%", "x:y"]


def _requests(seed: int, n: int = 60, costs: bool = False):
    rng = random.Random(seed)
    clients = [rng.choice(IDS) for _ in range(n)]
    t_ms = sorted(rng.randint(0, 2**52 - 1) if seed % 2 else rng.randint(0, 5000) for _ in range(n))
    return clients, t_ms, [rng.randint(1, 4) for _ in range(n)] if costs else None


def _hiredis(calls) -> bytes:
    def words(s, k, a):  # a script's EVALSHA, or the server's own command (INCREX)
        return (s.command, *k, *a) if s.command else ("EVALSHA", s.sha, len(k), *k, *a)

    return b"".join(hiredis.pack_command(words(s, k, a)) for s, k, a in calls)


@pytest.mark.parametrize("name", list(ALGORITHMS))
@pytest.mark.parametrize("costs", [False, True])
def test_a_packed_batch_is_the_calls_one_by_one(name, costs):
    cls = ALGORITHMS[name]
    if not (templated(cls, "fields") or templated(cls, "batch")):
        pytest.skip(f"{name} packs no batch of its own (no BatchTemplate, no batch): call by call")
    backend = FakeRedisBackend()
    for seed in range(4):
        clients, t_ms, weights = _requests(seed, costs=costs)
        packed = ALGORITHMS[name](backend, 7, 1000).batch(clients, t_ms, weights)
        calls = ALGORITHMS[name](backend, 7, 1000).calls(clients, t_ms, weights)
        assert isinstance(packed, Batch) and len(packed) == len(calls)
        assert pack_batch(packed) == _hiredis(calls)
        assert list(packed) == calls and packed[3] == calls[3]


def test_sequence_numbers_carry_on_from_batch_to_call():
    backend = FakeRedisBackend()
    one, other = (ALGORITHMS["sliding_log"](backend, 3, 1000) for _ in range(2))
    clients, t_ms, _ = _requests(1, n=10)
    mixed = [
        *one.batch(clients[:5], t_ms[:5]),
        *(one.call(c, t) for c, t in zip(clients[5:], t_ms[5:], strict=True)),
    ]
    assert mixed == other.calls(clients, t_ms)


def test_pack_fields_refuses_what_is_not_ascii_or_does_not_vary():
    with pytest.raises(UnicodeEncodeError):
        pack_fields("a" * 40, 1, [["k\u00e9"], "1"])
    with pytest.raises(ValueError, match="vary"):
        pack_fields("a" * 40, 1, ["k", "1"])


@pytest.mark.parametrize("name", [n for n, cls in ALGORITHMS.items() if not cls.uses_server_time])
def test_replies_read_as_columns_are_the_decisions_parse_gives(clock, name):
    backend = FakeRedisBackend(clock)
    limiter = ALGORITHMS[name](backend, 3, 1000)
    clients, t_ms, costs = _requests(2, n=200, costs=True)
    replies = []
    for c, t, k in zip(clients, t_ms, costs, strict=True):
        clock.t_ms = t
        replies.append(backend.call(*limiter.call(c, t, k)))
    columns = limiter.parse_many(replies)
    assert columns.decisions() == [limiter.parse(r) for r in replies]
    assert [f.dtype.kind for f in columns] == ["b", "f", "i", "i", "i", "i"]


def test_replies_of_another_shape_go_reply_by_reply():
    limiter = FixedWindow(FakeRedisBackend(), 3, 1000)
    assert limiter.parse_many([]).decisions() == []
    with pytest.raises(ValueError):  # parse()'s own complaint about a short reply
        limiter.parse_many([[1, 2, 3]])
    odd = [[1, b"2.5", 3, 2, b"7", 0]]  # a string where a number was expected
    expected = DecisionColumns.of([limiter.parse(odd[0])])  # converted as to_frame always did
    assert limiter.parse_many(odd).decisions() == expected.decisions()


class OwnReply(FixedWindow):
    """A limiter of a user's: its own keys and reply parser, and no batch methods of its own."""

    name = "own_reply"

    def keys(self, client: str, now_ms: int) -> Sequence[str]:
        return (f"rl:own:{hash_tag(client)}:{now_ms // self.window_ms}",)

    @staticmethod
    def parse(reply: Sequence[object]) -> Decision:
        allowed, count, limit, remaining, reset_ms, retry_after_ms = reply
        return Decision(
            allowed == 1, float(count) + 0.5, limit, remaining, reset_ms, retry_after_ms
        )


def test_a_limiter_without_the_fast_parts_replays_through_the_generic_ones(monkeypatch):
    monkeypatch.setitem(ALGORITHMS, "own_reply", OwnReply)
    limiter = OwnReply(FakeRedisBackend(), 3, 1000)
    assert not templated(OwnReply, "fields") and templated(FixedWindow, "fields")
    assert limiter.batch(["a"], [0]) == [limiter.call("a", 0)]  # its own keys, one by one
    rng = np.random.default_rng(5)
    trace = pd.DataFrame(
        {"t_ms": np.sort(rng.integers(0, 3000, 300)), "client": rng.choice(list("abc"), 300)}
    )
    ours = replay(trace, "fixed_window", 3, 1000)
    theirs = replay(trace, "own_reply", 3, 1000)
    assert (theirs["count"] == ours["count"] + 0.5).all()
    assert theirs["allowed"].tolist() == ours["allowed"].tolist()


def _batch(seed: int, n: int, costs: bool) -> Decisions:
    rng = random.Random(seed)
    clients, t_ms, weights = _requests(seed, n, costs)
    decisions = [
        Decision(
            rng.random() < 0.5,
            rng.choice([0.0, 1.0, 2.5, 1 / 3, 99.99]),
            5,
            rng.randint(0, 5),
            rng.choice([-1, -2, 0, 999]),
            rng.choice([-1, 0, 17]),
        )
        for _ in range(n)
    ]
    positions = rng.sample(range(10 * n), n)
    return Decisions(positions, clients, t_ms, weights, DecisionColumns.of(decisions))


@pytest.mark.parametrize("costs", [False, True])
@pytest.mark.parametrize("in_order", [True, False])
@pytest.mark.parametrize("headers", [None, "both"])
def test_the_csv_of_a_batch_is_the_csv_of_its_rows(tmp_path, costs, in_order, headers):
    written = []
    for as_rows in (False, True):
        out = tmp_path / f"out-{as_rows}.csv"
        extra = None if headers is None else HeaderColumns(headers, "p", 1000, 5)
        sink = DecisionCsv(out, in_order, workdir=tmp_path, costs=costs, headers=extra)
        for seed in range(3):
            batch = _batch(seed, 2500, costs)  # more than one write of rows
            sink(list(batch) if as_rows else batch)
        sink.close()
        written.append(out.read_bytes())
    assert written[0] == written[1]
    assert written[0].count(b"\n") == 1 + 3 * 2500


def test_a_batch_reads_as_rows():
    batch = _batch(4, 5, costs=True)
    rows = list(batch)
    assert len(batch) == 5 and rows[2] == batch[2] and batch[1:3] == rows[1:3]
    position, client, t_ms, decision, cost = rows[0]
    assert (position, client, t_ms, cost) == (
        batch.positions[0],
        batch.clients[0],
        batch.t_ms[0],
        batch.costs[0],
    )
    assert decision == batch.columns.decision(0) and type(decision.allowed) is bool
    assert list(Decisions([0], ["a"], [3], None, DecisionColumns.of([decision])))[0][4] == 1


def test_a_subclass_of_the_log_with_keys_of_its_own_is_sent_its_own_keys():
    class Elsewhere(SlidingLog):
        def keys(self, client: str, now_ms: int) -> Sequence[str]:
            return (f"rl:elsewhere:{hash_tag(client)}",)

    batch = Elsewhere(FakeRedisBackend(), 3, 1000).batch(["a", "b"], [1, 2])
    assert [keys for _, keys, _ in batch] == [("rl:elsewhere:{a}",), ("rl:elsewhere:{b}",)]


def test_a_subclass_may_turn_the_template_off():
    class Plain(FixedWindow):
        fields = None

    limiter = Plain(FakeRedisBackend(), 3, 1000)
    assert limiter.batch(["a", "b"], [1, 2]) == limiter.calls(["a", "b"], [1, 2])
