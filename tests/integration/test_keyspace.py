"""Keyspace and expiry commands through redis-py over a real socket (RESP2 and RESP3), with
virtual time for TTLs and idle times, and the cross-database commands' effects on other
clients (blocked clients, other databases)."""

from __future__ import annotations

import re
import threading

import pytest
import redis

from sluice.commands import errors
from sluice.storage.keyspace import FakeClock
from tests.support import ThreadedServer, wait_blocked, wait_until

NOW = 1_700_000_000_000


def _m(message: str) -> str:
    """redis-py drops the ``ERR `` code from messages; match the rest literally."""
    return re.escape(message.removeprefix("ERR "))


@pytest.fixture
def timed(make_server):  # type: ignore[no-untyped-def]
    clock = FakeClock(NOW)
    server = make_server(clock=clock)
    client = server.client()
    yield client, clock, server
    client.close()


def test_del_exists_type(rr: redis.Redis) -> None:
    rr.mset({"a": 1, "b": 2})
    rr.rpush("l", "x")
    assert rr.exists("a", "a", "b", "nope") == 3
    assert [rr.type(k) for k in ("a", "l", "nope")] == [b"string", b"list", b"none"]
    assert rr.delete("a", "a", "nope") == 1
    assert rr.unlink("b", "l") == 2
    assert rr.dbsize() == 0


def test_keys_and_scan(rr: redis.Redis) -> None:
    names = [f"user:{i}" for i in range(50)] + ["other", "h[a]llo", "h*llo"]
    rr.mset({n: "1" for n in names})
    assert sorted(rr.keys("*")) == sorted(n.encode() for n in names)
    assert sorted(rr.keys("user:1?")) == [f"user:1{i}".encode() for i in range(10)]
    assert rr.keys("h\\[a\\]llo") == [b"h[a]llo"]
    assert rr.keys("h\\*llo") == [b"h*llo"]
    assert sorted(rr.scan_iter(match="user:*", count=7)) == sorted(
        n.encode() for n in names if n.startswith("user:"))
    rr.rpush("alist", "x")
    assert list(rr.scan_iter(_type="list")) == [b"alist"]
    cursor, batch = rr.scan(0, count=5)
    assert len(batch) == 5 and cursor != 0


def test_scan_never_skips_keys_present_for_the_whole_scan(rr: redis.Redis) -> None:
    """Keys written or deleted between SCAN calls never make a stable key go missing or
    repeat; keys that come and go may or may not show up (Redis's guarantee)."""
    stable = {f"stable:{i}".encode() for i in range(200)}
    rr.mset({k: "1" for k in stable})
    seen: list[bytes] = []
    cursor = 0
    step = 0
    while True:
        cursor, batch = rr.scan(cursor, count=9)
        seen.extend(batch)
        step += 1
        rr.set(f"churn:{step}", "1")  # new keys and deletions during the iteration
        rr.delete(f"churn:{step - 3}")
        if cursor == 0:
            break
    stable_seen = [k for k in seen if k in stable]
    assert len(stable_seen) == len(set(stable_seen)) == len(stable)


def test_rename_keeps_ttl_and_overwrites(timed) -> None:  # type: ignore[no-untyped-def]
    r, clock, _ = timed
    r.set("src", "v", px=5000)
    r.set("dst", "old")
    assert r.rename("src", "dst") is True
    assert r.pttl("dst") == 5000 and r.get("dst") == b"v" and r.exists("src") == 0
    r.set("x", "1")
    assert r.renamenx("x", "dst") is False
    with pytest.raises(redis.ResponseError, match=_m(errors.NO_SUCH_KEY)):
        r.rename("nope", "y")
    clock.advance(5000)
    assert r.get("dst") is None


def test_copy_makes_an_independent_value(rr: redis.Redis) -> None:
    rr.rpush("l", "a", "b")
    assert rr.copy("l", "l2") is True
    rr.rpush("l2", "c")
    assert rr.lrange("l", 0, -1) == [b"a", b"b"]
    assert rr.lrange("l2", 0, -1) == [b"a", b"b", b"c"]
    rr.set("s", "v")
    assert rr.copy("s", "l2") is False
    assert rr.copy("s", "l2", replace=True) is True and rr.get("l2") == b"v"
    assert rr.copy("s", "s", destination_db=3) is True
    rr.execute_command("SELECT", "3")
    try:
        assert rr.get("s") == b"v"
    finally:
        rr.execute_command("SELECT", "0")
    with pytest.raises(redis.ResponseError, match=_m(errors.SAME_OBJECT)):
        rr.copy("s", "s")


def test_copy_stream_is_independent(rr: redis.Redis) -> None:
    try:
        rr.xadd("s", {"f": "v"}, id="1-1")
    except redis.ResponseError as e:  # pragma: no cover - streams not loaded in this build
        pytest.skip(f"streams unavailable: {e}")
    assert rr.copy("s", "s2") is True
    rr.xadd("s2", {"f": "w"}, id="2-1")
    assert rr.xlen("s") == 1 and rr.xlen("s2") == 2
    assert rr.object("encoding", "s") == b"stream"


def test_move_and_swapdb(rr: redis.Redis) -> None:
    rr.set("k", "v")
    assert rr.move("k", 1) is True
    assert rr.exists("k") == 0
    with pytest.raises(redis.ResponseError, match=_m(errors.SAME_OBJECT)):
        rr.move("k", 0)
    with pytest.raises(redis.ResponseError, match=_m(errors.DB_INDEX_OUT_OF_RANGE)):
        rr.move("k", 16)
    assert rr.swapdb(0, 1) is True
    assert rr.get("k") == b"v"
    with pytest.raises(redis.ResponseError, match=_m(errors.INVALID_FIRST_DB)):
        rr.execute_command("SWAPDB", "a", "1")
    assert rr.swapdb(1, 0) is True
    assert rr.exists("k") == 0


def test_swapdb_is_seen_by_other_connections(sluice: ThreadedServer) -> None:
    a = sluice.client()
    b = sluice.client(db=1)
    try:
        a.set("k", "in0")
        b.set("k", "in1")
        a.swapdb(0, 1)
        assert a.get("k") == b"in1" and b.get("k") == b"in0"
    finally:
        a.flushall()
        a.close()
        b.close()


def _blpop_available(server: ThreadedServer) -> bool:
    return server.server is not None and b"blpop" in server.server.table


@pytest.mark.timeout(30)
@pytest.mark.parametrize("how", ["swapdb", "move", "copy", "rename"])
def test_cross_key_writes_wake_blocked_clients(sluice: ThreadedServer, how: str) -> None:
    r = sluice.client()
    if not _blpop_available(sluice):
        pytest.skip("BLPOP not in this build")
    waiter = sluice.client(db=1 if how in ("swapdb", "move", "copy") else 0)
    result: list[object] = []
    t = threading.Thread(target=lambda: result.append(waiter.blpop(["target"], timeout=20)))
    try:
        r.rpush("target" if how in ("swapdb", "move") else "src", "x")
        t.start()
        wait_blocked(r, 1)
        if how == "swapdb":
            r.swapdb(0, 1)
        elif how == "move":
            r.move("target", 1)
        elif how == "copy":
            r.copy("src", "target", destination_db=1)
        else:
            r.rename("src", "target")
        t.join(20)
        assert result == [(b"target", b"x")]
    finally:
        t.join(1)
        r.flushall()
        r.close()
        waiter.close()


def test_expire_family_on_virtual_time(timed) -> None:  # type: ignore[no-untyped-def]
    r, clock, _ = timed
    r.set("k", "v")
    assert r.expire("k", 10) is True and r.ttl("k") == 10
    assert r.expire("k", 20, nx=True) is False
    assert r.expire("k", 20, gt=True) is True and r.ttl("k") == 20
    assert r.expire("k", 5, gt=True) is False
    assert r.expire("k", 5, lt=True) is True and r.pttl("k") == 5000
    assert r.pexpire("k", 1500) is True and r.pttl("k") == 1500
    assert r.expiretime("k") == (NOW + 1500 + 500) // 1000
    assert r.pexpiretime("k") == NOW + 1500
    clock.advance(1499)
    assert r.pttl("k") == 1 and r.ttl("k") == 0
    clock.advance(1)
    assert r.ttl("k") == -2 and r.exists("k") == 0
    r.set("p", "v", ex=100)
    assert r.persist("p") is True and r.ttl("p") == -1 and r.persist("p") is False
    assert r.expireat("p", NOW // 1000 - 1) is True and r.exists("p") == 0
    with pytest.raises(redis.ResponseError, match="invalid expire time in 'expire' command"):
        r.expire("p", 2**62)
    with pytest.raises(redis.ResponseError, match=_m(errors.EXPIRE_GT_LT_CONFLICT)):
        r.expire("p", 1, gt=True, lt=True)


def test_active_expiry_removes_keys_nobody_reads(timed) -> None:  # type: ignore[no-untyped-def]
    r, clock, _ = timed
    r.mset({f"k{i}": "v" for i in range(50)})
    for i in range(50):
        r.pexpire(f"k{i}", 100)
    r.set("stays", "v")
    clock.advance(100)
    wait_until(lambda: r.dbsize() == 1, what="the cron to expire keys")
    assert r.keys() == [b"stays"]


def test_idle_time_and_touch(timed) -> None:  # type: ignore[no-untyped-def]
    r, clock, server = timed

    def tick() -> None:  # the cron's LRU clock update, run now instead of waiting for it
        server.call(server.server.keyspace.update_lru_clock)

    r.set("k", "v")
    r.set("j", "v")
    clock.advance(7000)
    tick()
    assert r.object("idletime", "k") == 7
    r.type("k")
    r.exists("k")
    r.ttl("k")
    assert r.object("idletime", "k") == 7  # TYPE, EXISTS, TTL, OBJECT do not touch
    r.get("k")
    assert r.object("idletime", "k") == 0
    assert r.touch("j", "nope") == 1
    assert r.object("idletime", "j") == 0
    assert r.object("idletime", "nope") is None
    with pytest.raises(redis.ResponseError, match="LFU maxmemory policy is not selected"):
        r.object("freq", "k")


def test_object_help_and_errors(rr: redis.Redis) -> None:
    lines = rr.execute_command("OBJECT", "HELP")
    assert lines[0].startswith(b"OBJECT <subcommand>") and lines[-1] == b"    Print this help."
    with pytest.raises(redis.ResponseError, match="unknown subcommand 'nope'. Try OBJECT HELP."):
        rr.execute_command("OBJECT", "nope", "k")
    assert rr.object("encoding", "missing") is None
    assert rr.randomkey() is None
    rr.set("only", "1")
    assert rr.randomkey() == b"only"
