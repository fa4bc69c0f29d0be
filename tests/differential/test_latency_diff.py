"""LATENCY's internal events against redis-server 8.6.3: the same scenario makes both servers
record the same events under the same names.

A 300,000-member set takes Redis about 40 ms to free and Sluice about 7 ms, so with
``latency-monitor-threshold 1`` expiring it records ``expire-cycle`` and ``expire-del`` on
both, and evicting it ``eviction-cycle`` and ``evict-del``. The milliseconds differ, so only
the names are compared (``command`` / ``fast-command`` samples come and go with the load and
are left out).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from tests.support import ProcessServer, ThreadedServer, require_redis_server, wait_until

pytestmark = pytest.mark.differential

_COMMANDS = {b"command", b"fast-command"}


@pytest.fixture
def pair() -> Iterator[tuple[redis.Redis, redis.Redis]]:
    require_redis_server()
    ours = ThreadedServer(["latency-monitor-threshold 1"]).start()
    theirs = ProcessServer("redis", ["--latency-monitor-threshold", "1"]).start()
    clients = ours.client(), theirs.client()
    yield clients
    for c in clients:
        c.close()
    ours.stop()
    theirs.stop()


def _big_set(c: redis.Redis, key: str) -> None:
    for i in range(0, 300_000, 10_000):
        c.sadd(key, *range(i, i + 10_000))


# redis-server 8.6.3's built-in vectorset module records "module-acquire-GIL" when its
# thread waits over the 1 ms threshold on a loaded machine; Sluice has no module threads.
_MODULE_EVENTS = {b"module-acquire-GIL"}


def _events(c: redis.Redis) -> set[bytes]:
    return ({row[0] for row in c.execute_command("LATENCY", "LATEST")} - _COMMANDS
            - _MODULE_EVENTS)


def test_expiring_a_big_set_records_the_same_events(
        pair: tuple[redis.Redis, redis.Redis]) -> None:
    for c in pair:
        _big_set(c, "big")
        assert c.pexpire("big", 1)
    for c in pair:
        wait_until(lambda c=c: c.dbsize() == 0, what="the set expired")
    ours, theirs = (_events(c) for c in pair)
    assert theirs == {b"expire-cycle", b"expire-del"}
    assert ours == theirs


def test_evicting_a_big_set_records_the_same_events(
        pair: tuple[redis.Redis, redis.Redis]) -> None:
    for c in pair:
        empty = c.info("memory")["used_memory"]
        _big_set(c, "big")
        c.config_set("maxmemory-policy", "allkeys-random")
        c.config_set("maxmemory", empty + 1024 * 1024)
        assert c.set("x", "y")
        assert c.exists("big") == 0
    ours, theirs = (_events(c) for c in pair)
    assert theirs == {b"eviction-cycle", b"evict-del"}
    assert ours == theirs
