"""Every script on a real 3-master Valkey Cluster, and why the keys carry hash tags.

A script may only touch keys of one slot. The limiters put every key of one decision under the
client's hash tag, so any client id - braces, colons, spaces, unicode, the empty string - keeps
its keys together; the same two-key script with untagged keys is refused with CROSSSLOT.
"""

from __future__ import annotations

import bisect
import re

import numpy as np
import pandas as pd
import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis.cluster import key_slot
from test_real_servers import DECISION, STRETCH, random_trace

from simulator.algorithms import ALGORITHMS, EchoMQ
from simulator.algorithms.scripts import load
from simulator.backends import BackendError, ClusterBackend, ScriptError
from simulator.backends.embedded_cluster import EmbeddedCluster
from simulator.engine.own_keys import leftover_keys, run_keys
from simulator.engine.realtime import server_time_free
from simulator.playback.run import replay
from simulator.policy import resolve

pytestmark = [pytest.mark.server, pytest.mark.usefixtures("no_server_left_behind")]
TRICKY = ["", "{", "}", "{}", "a}b{c", ":", "user:1", "a b", "ünï©ødé", "🙂", "%", "%25", "{x}"]


@pytest.fixture(scope="module")
def cluster():
    with EmbeddedCluster() as c:
        yield c


@pytest.fixture(scope="module")
def backend(cluster):
    b = ClusterBackend(cluster.client(), "cluster")
    yield b
    b.close()


def slots(keys) -> set[int]:
    return {key_slot(k.encode()) for k in keys}


client_ids = st.one_of(st.sampled_from(TRICKY), st.text(max_size=12))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(client=client_ids, now_ms=st.integers(0, 10**12))
def test_every_script_runs_in_one_slot(backend, client, now_ms):
    for name, cls in ALGORITHMS.items():
        limiter = cls(backend, 3, 1000)
        script, keys, args = limiter.call(client, now_ms)
        assert len(slots(keys)) == 1, (name, keys)
        if cls.commands:  # the server's own command (INCREX): Valkey 9.1 has none
            continue
        decision = limiter.decide(client, now_ms)
        assert decision.limit == 3
    ttl = EchoMQ(backend, 3, 1000).rate_limit_ttl(client, now_ms)  # the echomq_ttl script
    assert ttl >= 0


def test_tags_spread_clients_over_all_nodes(cluster, backend):
    owners = {backend.client.get_node_from_key(f"{{{c}}}").name for c in range(50)}
    assert len(owners) == len(cluster.nodes)


@pytest.mark.parametrize("algorithm", server_time_free())
def test_pipelined_replay_on_cluster_equals_fakeredis(backend, algorithm):
    trace = random_trace(11, n=2000, clients=40, stretch=STRETCH)  # no stall outlasts a window
    trace["client"] = [TRICKY[int(c.split()[1]) % len(TRICKY)] + c for c in trace["client"]]
    backend.client.flushall()
    expected = replay(trace, algorithm, 4, 500 * STRETCH)
    for pipeline in (None, 1):
        backend.client.flushall()
        got = replay(trace, algorithm, 4, 500 * STRETCH, backend, pipeline=pipeline)
        pd.testing.assert_frame_equal(got[DECISION], expected[DECISION])
    sizes = [n.redis_connection.dbsize() for n in backend.client.get_primaries()]
    assert all(size > 0 for size in sizes), sizes  # the keys landed on every node


def test_untagged_keys_fail_with_crossslot(cluster, backend):
    """sliding_counter reads two keys: tagged they share a slot, untagged they do not."""
    script = load("sliding_counter")
    args = (125_000, 1000, 10)
    tagged = ALGORITHMS["sliding_counter"](backend, 10, 1000).keys("alice", 125_000)
    untagged = [k.replace("{alice}", "alice") for k in tagged]
    assert len(slots(tagged)) == 1 and len(slots(untagged)) == 2

    # Through the cluster client: redis-py refuses before sending anything.
    with pytest.raises(redis.exceptions.RedisClusterException, match="same key slot"):
        backend.client.evalsha(script.sha, 2, *untagged, *args)
    with pytest.raises(ScriptError, match="sliding_counter"):
        backend.call(script, untagged, args)

    # Straight to the node that owns the first key: the server itself says CROSSSLOT.
    node = backend.client.get_node_from_key(untagged[0]).redis_connection
    with pytest.raises(redis.exceptions.ClusterCrossSlotError, match="same slot"):
        node.evalsha(script.sha, 2, *untagged, *args)
    owner = backend.client.get_node_from_key(tagged[0]).redis_connection
    assert owner.evalsha(script.sha, 2, *tagged, *args)[0] == 1


def test_killed_node_stops_the_replay_with_every_answered_call_written():
    """A master dies with a pipeline in flight: each call another master answered is logged.

    A pipeline is split by node and each part goes to its node in turn. The node killed is
    the one whose part goes last, so the other two parts of that pipeline have been answered
    (applied on their nodes) when the failure comes: their decisions must be in the log, and
    the message says which calls went to the dead node, whose outcome nobody knows.
    """
    limit, window_ms, pipeline = 5, 60_000, 500  # one window: no key expires during the test
    trace = random_trace(12, n=6000, clients=60, span_ms=3000)
    in_time = trace.iloc[np.argsort(trace["t_ms"].to_numpy(), kind="stable")]
    with EmbeddedCluster() as cluster:
        backend = ClusterBackend(cluster.client(), "cluster")
        keys = ALGORITHMS["fixed_window"](backend, limit, window_ms).keys
        bounds = [i * 16384 // len(cluster.servers) for i in range(len(cluster.servers))]

        def node_of(client: str, t_ms: int) -> int:
            return bisect.bisect_right(bounds, key_slot(keys(client, t_ms)[0].encode())) - 1

        done: list = []
        killed: list[tuple[int, int]] = []  # (node, calls of the next pipeline sent to it)

        def on_rows(rows):
            done.extend(rows)
            if len(done) >= 2000 and not killed:
                following = in_time.iloc[len(done) : len(done) + pipeline]
                nodes = [
                    node_of(c, t) for t, c in zip(following.t_ms, following.client, strict=True)
                ]
                last = list(dict.fromkeys(nodes))[-1]  # its part goes after the other two
                killed.append((last, nodes.count(last)))
                cluster.kill_node(last)

        with pytest.raises(BackendError) as err:
            replay(
                trace, "fixed_window", limit, window_ms, backend, pipeline=pipeline, on_rows=on_rows
            )
        backend.close()
        dead, unknown = killed[0]
        # fixed_window counts every call it answers: the counters on the living nodes say how
        # many calls each one answered, and each of those decisions must have been handed over.
        for node, server in enumerate(cluster.servers):
            if node == dead:
                continue
            client = server.client()
            answered = sum(int(client.get(k)) for k in client.scan_iter("rl:fw:*"))
            client.close()
            logged = sum(node_of(c, t) == node for _, c, t, *_ in done)
            assert logged == answered, f"node {node}: {answered} calls answered, {logged} logged"
    message = str(err.value)
    assert "cluster" in message and "t_ms=" in message
    assert f"after {len(done)} of 6000 decisions" in message
    port = cluster.servers[dead].port
    said = re.search(r"the outcome of (\d+) calls sent to node (\S+) is unknown", message)
    assert said, message
    assert int(said.group(1)) == unknown and said.group(2).endswith(f":{port}")
    expected = replay(trace, "fixed_window", limit, window_ms)["allowed"].tolist()
    assert [d.allowed for _, _, _, d, _ in done] == [expected[p] for p, *_ in done]


def test_leftover_keys_are_found_on_every_node(backend):
    requests = [(f"left {i}", t) for i in range(300) for t in (0, 1500, 2500)]
    keys = run_keys(resolve("sliding_counter", 3, 1000), requests, backend)
    assert len(keys) == 300 * 4  # windows -1, 0, 1, 2 for each client, each key once
    assert backend.existing(keys) == (0, [])
    left = keys[5::97]
    for key in left:
        backend.client.set(key, "1")
    assert len({backend.client.get_node_from_key(k).name for k in left}) == 3  # all masters
    found, examples = backend.existing(keys)
    assert found == len(left) and len(examples) == 3 and set(examples) <= set(left)
    assert "already exist" in leftover_keys(backend, "redis+cluster://x", lambda: keys)
