"""Each Lua script over hand-written timelines of now_ms, on the fake server."""

from __future__ import annotations

from simulator.algorithms import EchoMQ, FixedWindow, SlidingCounter, SlidingLog, echomq_keys


def decide(limiter, clock, client, t_ms):
    clock.t_ms = t_ms
    return limiter.decide(client, t_ms)


def test_fixed_window_counts_refusals_and_resets_on_the_grid(clock, fake):
    fw = FixedWindow(fake, limit=2, window_ms=1000)
    got = [decide(fw, clock, "a", t) for t in (990, 995, 999, 1000)]
    assert [d.allowed for d in got] == [True, True, False, True]
    assert [d.count for d in got] == [1, 2, 3, 1]
    assert got[2].retry_after_ms == 1 and got[2].reset_ms == 1
    assert got[3].remaining == 1 and got[3].reset_ms == 1000
    assert fake.client.pttl(fw.keys("a", 990)[0]) == 1000 - 10  # armed at the first hit only


def test_echomq_window_starts_at_first_hit_and_is_never_rearmed(clock, fake):
    emq = EchoMQ(fake, limit=2, window_ms=1000)
    counter, meta = echomq_keys("q")
    a = decide(emq, clock, "q", 500)
    b = decide(emq, clock, "q", 1200)
    assert (a.allowed, b.allowed) == (True, True)
    # the second increment did not re-arm the expiry (PTTL 300: gone 301 ms on)
    assert b.reset_ms == 301
    c = decide(emq, clock, "q", 1499)
    assert not c.allowed and c.retry_after_ms == 2 and c.count == 2
    clock.t_ms = 1499
    assert emq.rate_limit_ttl("q", 1499) == 1
    assert fake.client.hget(meta, "max") == b"2"
    d = decide(emq, clock, "q", 1500)  # at exactly expire-at the counter still exists, PTTL 0
    assert not d.allowed and d.retry_after_ms == 1
    assert emq.rate_limit_ttl("q", 1500) == 0
    e = decide(emq, clock, "q", 1501)
    assert e.allowed and e.count == 1 and e.reset_ms == 1001
    assert fake.client.pttl(counter) == 1000


def test_echomq_ttl_reads_max_from_meta_when_caller_passes_zero(clock, fake):
    emq = EchoMQ(fake, limit=1, window_ms=1000)
    assert emq.rate_limit_ttl("nobody", 0, max_=0) == 0  # no meta, no max: no budget, no deferral
    decide(emq, clock, "q", 0)
    clock.t_ms = 400
    assert emq.rate_limit_ttl("q", 400, max_=0) == 600


def test_sliding_log_window_is_half_open_and_same_ms_requests_both_count(clock, fake):
    sl = SlidingLog(fake, limit=2, window_ms=1000)
    a, b = decide(sl, clock, "a", 100), decide(sl, clock, "a", 100)
    assert a.allowed and b.allowed and b.count == 1
    c = decide(sl, clock, "a", 1099)
    assert not c.allowed and c.retry_after_ms == 1
    d = decide(sl, clock, "a", 1100)  # 100 is now outside (1100 - 1000, 1100]
    assert d.allowed and d.count == 0


def test_sliding_counter_weights_the_previous_window(clock, fake):
    sc = SlidingCounter(fake, limit=10, window_ms=1000)
    for _ in range(10):
        assert decide(sc, clock, "a", 900).allowed
    # at 1250: estimate = 0 + 10 * 750/1000 = 7.5 -> 3 more fit (7.5, 8.5, 9.5)
    got = [decide(sc, clock, "a", 1250) for _ in range(4)]
    assert [d.allowed for d in got] == [True, True, True, False]
    assert got[0].count == 7.5 and got[3].count == 10.5
    # refused at e=250 with cur=3, prev=10: needs 10 * (1000 - e) < 7 * 1000 -> e >= 301
    assert got[3].retry_after_ms == 301 - 250
    assert decide(sc, clock, "a", 1300).allowed is False
    assert decide(sc, clock, "a", 1301).allowed is True
