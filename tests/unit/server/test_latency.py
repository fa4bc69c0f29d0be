"""The latency monitor: what counts as a spike, one sample per second, and timing that costs
nothing while monitoring is off (server/latency.py)."""

from __future__ import annotations

import time

from sluice.server.latency import LATENCY_SAMPLES, LatencyMonitor
from sluice.storage.keyspace import FakeClock, Keyspace


def test_off_records_nothing_and_start_is_zero() -> None:
    m = LatencyMonitor()
    assert m.start() == 0
    assert m.end("aof-write", 0) == 0
    m.sample("command", 10_000)
    assert m.events == {}


def test_spikes_are_samples_at_or_over_the_threshold() -> None:
    m = LatencyMonitor()
    m.threshold = 5
    m.sample("command", 4)
    m.sample("fork", 5)
    assert list(m.events) == ["fork"]
    start = m.start()
    assert start > 0
    assert m.end("aof-fsync-always", start - 7_000_000) >= 7  # started 7 ms earlier
    assert [row[0] for row in m.latest()] == [b"fork", b"aof-fsync-always"]


def test_one_sample_per_second_keeps_the_worst_and_the_all_time_peak() -> None:
    m = LatencyMonitor()
    m.add("expire-del", 3, now=100)
    m.add("expire-del", 9, now=100)
    m.add("expire-del", 2, now=101)
    assert m.history(b"expire-del") == [[100, 9], [101, 2]]
    assert m.latest() == [[b"expire-del", 101, 2, 9]]
    for t in range(LATENCY_SAMPLES + 10):
        m.add("expire-del", 1, now=200 + t)
    assert len(m.history(b"expire-del")) == LATENCY_SAMPLES
    assert m.latest()[0][3] == 9


def test_expired_keys_are_timed_only_when_asked() -> None:
    clock = FakeClock(1_000)
    freed: list[tuple[bytes, int]] = []
    ks = Keyspace(1, clock, lambda _db, key, ns: freed.append((key, ns)))
    db = ks[0]
    for name in (b"a", b"b"):
        db.set(name, b"v" * 100)
        db.set_expire(name, 1_500)
    clock.advance(1_000)
    assert db.get(b"a") is None  # lazy expiry, untimed
    ks.access.time_deletes = True
    start = time.perf_counter_ns()
    assert db.active_expire() == 1  # active expiry, timed
    elapsed = time.perf_counter_ns() - start
    assert freed[0] == (b"a", 0)
    assert freed[1][0] == b"b" and 0 < freed[1][1] <= elapsed
