"""Retention by age (Sluice, opt-in: ``SLUICE.XPOLICY RETENTION key MAXAGE ms [policy]``).

Entries whose ID time is older than ``now - MAXAGE`` are trimmed by the cron, with bounded
work per tick, exactly as ``XTRIM key MINID = <threshold> <policy>`` would, and logged as
that XTRIM. Virtual time (``FakeClock``): entries are "old" because the clock moved.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import redis

from sluice.server.streams_bg import retention_cycle
from sluice.storage.keyspace import FakeClock
from tests.support import RecordingAof, ThreadedServer, wait_until

pytestmark = pytest.mark.timeout(60)

Factory = Callable[..., ThreadedServer]
T0 = 1_700_000_000_000


def _raw(r: redis.Redis, *args: Any) -> Any:
    conn = r.connection_pool.get_connection()
    try:
        conn.send_command(*args)
        return conn.read_response()
    finally:
        r.connection_pool.release(conn)


def fill(r: redis.Redis, key: str, times: range) -> None:
    with r.pipeline(transaction=False) as p:
        for t in times:
            p.xadd(key, {"t": str(t)}, id=f"{t}-0")
        p.execute()


@pytest.mark.parametrize("protocol", [2, 3])
def test_old_entries_go_in_the_background(make_server: Factory, protocol: int) -> None:
    clock = FakeClock(T0)
    srv = make_server("hz 50", clock=clock)
    rec = RecordingAof()
    srv.call(lambda: setattr(srv.server, "aof", rec))
    r = srv.client(protocol=protocol)
    fill(r, "s", range(T0 - 5000, T0, 100))  # 50 entries, 5 s old to 0.1 s old
    assert _raw(r, "SLUICE.XPOLICY", "RETENTION", "s", "MAXAGE", "2000") == b"OK"
    # entries older than now - 2000 ms go: 30 of them (T0-5000 .. T0-2100)
    wait_until(lambda: r.xlen("s") == 20, what="retention")
    assert r.xrange("s", count=1)[0][0] == f"{T0 - 2000}-0".encode()
    trims = [a for a in rec.logged if a[0] == b"XTRIM"]
    assert trims and all(a[2:4] == [b"MINID", b"="] and a[5] == b"KEEPREF" for a in trims)
    assert trims[-1][4] == f"{T0 - 2000}-0".encode()  # MINID is exclusive: IDs below go
    srv.call(lambda: clock.advance(1000))
    wait_until(lambda: r.xlen("s") == 10, what="retention after time moved")
    policy = _raw(r, "SLUICE.XPOLICY", "GET", "s")
    policy = policy if isinstance(policy, dict) else dict(zip(policy[::2], policy[1::2], strict=True))
    ret = policy[b"retention"]
    ret = ret if isinstance(ret, dict) else dict(zip(ret[::2], ret[1::2], strict=True))
    assert ret == {b"max-age-ms": 2000, b"policy": b"KEEPREF"}


def test_acked_and_delref_honour_consumer_groups(make_server: Factory) -> None:
    clock = FakeClock(T0)
    srv = make_server("hz 50", clock=clock)
    r = srv.client()
    for key in ("acked", "delref"):
        fill(r, key, range(T0 - 1000, T0 - 900, 10))  # 10 old entries
        r.xgroup_create(key, "g", "0")
        r.xreadgroup("g", "c", {key: ">"}, count=4)  # 4 delivered, pending; 6 never read
    _raw(r, "SLUICE.XPOLICY", "RETENTION", "acked", "MAXAGE", "100", "ACKED")
    _raw(r, "SLUICE.XPOLICY", "RETENTION", "delref", "MAXAGE", "100", "DELREF")
    # DELREF: everything old goes, pending references too
    wait_until(lambda: r.xlen("delref") == 0, what="DELREF retention")
    assert r.xpending("delref", "g")["pending"] == 0
    # ACKED: nothing a group still needs goes (pending, or not yet delivered)
    srv.call(lambda: None)
    assert r.xlen("acked") == 10
    r.xack("acked", "g", *[f"{T0 - 1000 + 10 * i}-0" for i in range(4)])
    r.xreadgroup("g", "c", {"acked": ">"}, count=2)
    wait_until(lambda: r.xlen("acked") == 6, what="ACKED retention after XACK")
    assert r.xpending("acked", "g")["pending"] == 2


def test_work_per_tick_is_bounded_and_replay_is_exact(make_server: Factory) -> None:
    clock = FakeClock(T0)
    srv = make_server("hz 1", clock=clock)  # the cron stays out of the way of the test
    rec = RecordingAof()
    srv.call(lambda: setattr(srv.server, "aof", rec))
    r = srv.client()
    fill(r, "s", range(T0 - 10_000, T0 - 5_000))  # 5000 old entries
    fill(r, "s", range(T0 - 100, T0))  # 100 young ones
    _raw(r, "SLUICE.XPOLICY", "RETENTION", "s", "MAXAGE", "1000")
    server = srv.server
    n = srv.call(lambda: retention_cycle(server, server.stream_directory, work=700))
    assert n == 700  # one tick's share
    assert r.xlen("s") == 4400
    while srv.call(lambda: retention_cycle(server, server.stream_directory, work=700)):
        pass
    assert r.xlen("s") == 100
    trims = [a for a in rec.logged if a[0] == b"XTRIM"]
    assert len(trims) >= 8

    from sluice.server.client import Client
    from sluice.server.dispatch import call, lookup

    replay = make_server("hz 1")

    def run() -> None:
        client = Client(replay.server, 999, None)
        client.kind = "aof"
        for argv in rec.logged:
            call(replay.server, client, lookup(replay.server.table, argv), argv)

    replay.call(run)
    assert replay.client().xrange("s") == r.xrange("s")


def test_a_renamed_stream_keeps_its_policy(make_server: Factory) -> None:
    clock = FakeClock(T0)
    srv = make_server("hz 50", clock=clock)
    r = srv.client()
    fill(r, "a", range(T0 - 100, T0))
    _raw(r, "SLUICE.XPOLICY", "RETENTION", "a", "MAXAGE", "10000")
    r.rename("a", "b")  # the directory learns "b" from its walk
    srv.call(lambda: clock.advance(9_950))  # now - 10000 = T0 - 50: the older half goes
    wait_until(lambda: r.xlen("b") == 50, what="retention under the new name")
    assert _raw(r, "SLUICE.XPOLICY", "CLEAR", "b") == 1
    srv.call(lambda: clock.advance(10_000))
    assert r.xlen("b") == 50  # no policy: nothing more goes


def test_paused_writes_pause_retention(make_server: Factory) -> None:
    clock = FakeClock(T0)
    srv = make_server("hz 50", clock=clock)
    r = srv.client()
    fill(r, "s", range(T0 - 100, T0))
    _raw(r, "SLUICE.XPOLICY", "RETENTION", "s", "MAXAGE", "1000")
    r.execute_command("CLIENT", "PAUSE", "100000", "WRITE")
    srv.call(lambda: clock.advance(5000))  # everything is old now
    loops = srv.call(lambda: srv.server.cronloops)
    wait_until(lambda: srv.call(lambda: srv.server.cronloops) > loops + 3, what="cron ticks")
    assert r.xlen("s") == 100  # no trimming while writes are paused, as active expiry
    r.execute_command("CLIENT", "UNPAUSE")
    wait_until(lambda: r.xlen("s") == 0, what="retention after unpause")
