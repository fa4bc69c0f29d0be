"""LATENCY's events besides commands, over a real socket: expiry and eviction of a big value,
the AOF's writes and fsyncs (a slow disk is simulated by wrapping the server's own ``write``
and ``fsync``, which tests may replace), forks, and LATENCY DOCTOR's words on them.

Event names are Redis's; tests/differential/test_latency_diff.py checks them against
redis-server 8.6.3 where a scenario can make both servers record them.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import redis

from tests.support import ThreadedServer, wait_until

SLOW_MS = 3  # a simulated slow disk call: three times the threshold below


def _events(r: redis.Redis) -> dict[bytes, list[Any]]:
    return {row[0]: row[1:] for row in r.execute_command("LATENCY", "LATEST")}


def _big_set(r: redis.Redis, key: str, members: int = 300_000) -> None:
    for i in range(0, members, 10_000):
        r.sadd(key, *range(i, i + 10_000))


def _slowly(call: Any) -> Any:
    def slow(*args: Any) -> Any:
        time.sleep(SLOW_MS / 1000)  # the disk is slow: not a wait for anything
        return call(*args)
    return slow


def test_a_big_value_expiring_samples_expire_cycle_and_expire_del(make_server: Any) -> None:
    s = make_server("latency-monitor-threshold 1")
    r = s.client()
    _big_set(r, "big")
    r.pexpire("big", 1)
    wait_until(lambda: r.dbsize() == 0, what="the set expired by the cycle")
    events = _events(r)
    assert {b"expire-cycle", b"expire-del"} <= events.keys(), events
    # freeing the set is part of the cycle that found it
    assert events[b"expire-del"][1] <= events[b"expire-cycle"][1]


def test_nothing_is_sampled_while_monitoring_is_off(make_server: Any) -> None:
    s = make_server()
    r = s.client()
    _big_set(r, "big")
    r.pexpire("big", 1)
    wait_until(lambda: r.dbsize() == 0, what="the set expired by the cycle")
    assert r.execute_command("LATENCY", "LATEST") == []


def test_a_big_value_evicted_samples_eviction_cycle_and_evict_del(make_server: Any) -> None:
    s = make_server("latency-monitor-threshold 1", "maxmemory-policy allkeys-random")
    r = s.client()
    empty = r.info("memory")["used_memory"]  # Sluice's own start: buffers, clients
    _big_set(r, "big")
    r.config_set("maxmemory", empty + 1024 * 1024)
    r.set("x", "y")  # over the limit: evicts before it runs
    assert r.exists("big") == 0
    assert r.info("stats")["evicted_keys"] >= 1
    events = _events(r)
    assert {b"eviction-cycle", b"evict-del"} <= events.keys(), events
    doctor = r.execute_command("LATENCY", "DOCTOR")
    text = doctor.decode() if isinstance(doctor, bytes) else str(doctor)
    assert "evict-del:" in text and "a big value was evicted" in text, text


def test_a_slow_aof_write_is_sampled_with_what_it_competed_with(make_server: Any,
                                                                tmp_path: Path) -> None:
    s: ThreadedServer = make_server(f"dir {tmp_path}", "appendonly yes", "appendfsync no",
                                    "latency-monitor-threshold 1")
    aof = s.server.aof
    assert aof is not None
    aof.write = _slowly(aof.write)
    r = s.client()
    r.set("k", "v")
    events = _events(r)
    assert {b"aof-write", b"aof-write-alone"} <= events.keys(), events
    assert events[b"aof-write"][1] >= SLOW_MS
    assert b"aof-fsync-always" not in events and b"aof-write-pending-fsync" not in events


def test_a_slow_fsync_of_appendfsync_always_is_sampled(make_server: Any, tmp_path: Path) -> None:
    s: ThreadedServer = make_server(f"dir {tmp_path}", "appendonly yes", "appendfsync always",
                                    "latency-monitor-threshold 1")
    aof = s.server.aof
    assert aof is not None
    aof.fsync = _slowly(aof.fsync)
    r = s.client()
    r.set("k", "v")
    events = _events(r)
    assert b"aof-fsync-always" in events, events
    assert events[b"aof-fsync-always"][1] >= SLOW_MS


def test_an_aof_write_during_a_background_fsync_is_pending_fsync(make_server: Any,
                                                                 tmp_path: Path) -> None:
    s: ThreadedServer = make_server(f"dir {tmp_path}", "appendonly yes",
                                    "appendfsync everysec", "latency-monitor-threshold 1")
    aof = s.server.aof
    assert aof is not None
    real_fsync = aof.fsync
    entered, release = threading.Event(), threading.Event()

    def gated(fd: int) -> None:  # the background fsync, held until the write below is done
        entered.set()
        release.wait(10)
        real_fsync(fd)

    aof.fsync = gated
    r = s.client()
    try:
        r.set("first", "1")  # written, not synced: the cron's everysec fsync starts
        assert entered.wait(10)
        aof.write = _slowly(aof.write)
        r.set("second", "2")
    finally:
        release.set()
    events = _events(r)
    assert {b"aof-write", b"aof-write-pending-fsync"} <= events.keys(), events
    assert b"aof-write-alone" not in events


def test_bgsave_reports_its_fork_time(make_server: Any, tmp_path: Path) -> None:
    s = make_server(f"dir {tmp_path}")
    r = s.client()
    assert r.info("stats")["latest_fork_usec"] == 0
    r.set("k", "v")
    r.bgsave()
    wait_until(lambda: r.info("persistence")["rdb_bgsave_in_progress"] == 0,
               what="BGSAVE done")
    stats = r.info("stats")
    assert stats["total_forks"] == 1
    assert stats["latest_fork_usec"] > 0
