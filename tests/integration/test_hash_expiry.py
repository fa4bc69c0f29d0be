"""Hash field expiry on virtual time (``FakeClock``): lazy expiry on access, the active cycle,
the key going with its last field, WATCH, INFO counters, and what the AOF is given (relative
times as absolute ones, expiries as HDEL, HGETEX/HGETDEL/HINCRBYFLOAT as their effects), as
redis-server 8.6.3 propagates them."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from sluice.storage.keyspace import FakeClock
from tests.support import RecordingAof, ThreadedServer, wait_until

NOW = 1_700_000_000_000


@pytest.fixture
def timed(make_server):  # type: ignore[no-untyped-def]
    """(client, clock, server) of a server on virtual time."""
    clock = FakeClock(NOW)
    server = make_server(clock=clock)
    client = server.client()
    yield client, clock, server
    client.close()


def test_lazy_expiry_deletes_on_access(timed) -> None:  # type: ignore[no-untyped-def]
    r, clock, _ = timed
    r.hset("h", mapping={"a": 1, "b": 2, "c": 3})
    assert r.hpexpire("h", 100, "a", "b") == [1, 1]
    clock.advance(100)
    assert r.hget("h", "a") == b"1"  # a deadline equal to now has not passed yet
    # ...while HPTTL of a listpackex field already says -2 at that moment (8.6.3 compares
    # with <= there, and with < for a hashtable field and for every read)
    assert r.hpttl("h", "a") == [-2]
    clock.advance(1)
    assert r.hlen("h") == 3  # expired fields count until something deletes them
    assert r.hgetall("h") == {b"c": b"3"}  # HGETALL skips them without deleting
    assert r.hkeys("h") == [b"c"] and r.hscan("h", 0) == (0, {b"c": b"3"})
    assert r.hpttl("h", "a", "c") == [-2, -1]
    assert r.hget("h", "a") is None  # the access deletes it
    assert r.hlen("h") == 2
    assert r.info("stats")["expired_subkeys"] == 1
    assert r.hexists("h", "b") == 0
    assert r.info("stats")["expired_subkeys"] == 2
    assert r.hpexpire("h", 1, "c") == [1]
    clock.advance(2)
    assert r.hmget("h", ["c", "x"]) == [None, None]
    assert r.exists("h") == 0  # the key went with its last field


def test_active_expiry_deletes_without_access(timed) -> None:  # type: ignore[no-untyped-def]
    r, clock, _ = timed
    r.hset("h", mapping={"a": 1, "b": 2})
    r.hset("g", mapping={f"f{i}": i for i in range(600)})  # a hashtable
    r.hpexpire("h", 1000, "a", "b")
    r.hpexpire("g", 500, *[f"f{i}" for i in range(300)])
    assert r.info("keyspace")["db0"]["subexpiry"] == 2
    clock.advance(1000)
    wait_until(lambda: r.info("stats")["expired_subkeys_active"] == 302, what="active expiry")
    assert r.exists("h") == 0
    assert r.hlen("g") == 300
    assert r.info("keyspace")["db0"]["subexpiry"] == 0


def test_active_expiry_follows_renames_moves_and_swapdb(timed) -> None:  # type: ignore[no-untyped-def]
    r, clock, _ = timed
    for key in ("a", "b", "c"):
        r.hset(key, mapping={"f": 1, "keep": 2})
        r.hpexpire(key, 500, "f")
    r.rename("a", "a2")
    r.move("b", 1)
    r.copy("c", "c2", destination_db=2)
    r.swapdb(2, 3)
    clock.advance(501)
    wait_until(lambda: r.info("stats")["expired_subkeys_active"] == 4, what="active expiry")
    for db, key in ((0, "a2"), (1, "b"), (0, "c"), (3, "c2")):
        r.execute_command("SELECT", db)
        assert r.hgetall(key) == {b"keep": b"2"}, (db, key)


def test_watch_sees_a_field_expire(timed) -> None:  # type: ignore[no-untyped-def]
    r, clock, server = timed
    r.hset("h", mapping={"a": 1, "b": 2})
    r.hpexpire("h", 10, "a")
    with r.pipeline() as p:
        p.watch("h")
        clock.advance(11)
        other = server.client()
        assert other.hget("h", "a") is None  # the lazy deletion is a write for WATCH
        p.multi()
        p.hset("h", "c", "3")
        with pytest.raises(redis.WatchError):
            p.execute()
        other.close()


def test_past_deadlines_delete_at_once(timed) -> None:  # type: ignore[no-untyped-def]
    r, _, _ = timed
    r.hset("h", mapping={"a": 1, "b": 2})
    assert r.hpexpireat("h", NOW - 1, "a") == [2]
    assert r.hgetex("h", "b", pxat=NOW) == [b"2"]
    assert r.exists("h") == 0
    assert r.execute_command("HSETEX", "h", "PXAT", NOW, "FIELDS", "1", "x", "1") == 1
    assert r.exists("h") == 0


def _logged(server: ThreadedServer, actions: Any) -> list[list[bytes]]:
    log = RecordingAof()
    server.call(lambda: setattr(server.server, "aof", log))
    try:
        actions()
    finally:
        server.call(lambda: setattr(server.server, "aof", None))
    return log.logged


def test_what_the_aof_is_given(timed) -> None:  # type: ignore[no-untyped-def]
    r, clock, server = timed
    at = b"%d" % (NOW + 10_000)

    def actions() -> None:
        r.hset("h", mapping={"a": 1, "b": 2, "c": 3})
        r.hexpire("h", 10, "a", "nope", nx=True)  # only the fields it set, time absolute
        r.hpexpire("h", 10_000, "a", "b", nx=True)  # a failed: dropped from the log
        r.hpexpire("h", 10_000, "zz")  # nothing set: nothing logged
        r.hincrbyfloat("h", "f", "1.5")
        r.hgetex("h", "c", ex=10)
        r.hgetex("h", "c", persist=True)
        r.hgetex("h", "c")  # nothing changed: nothing logged
        r.hgetdel("h", "c", "nope")
        r.hsetex("h", "d", "4", ex=10)
        r.execute_command("HSETEX", "h", "PXAT", NOW - 1, "FIELDS", "1", "e", "5")
        r.hpexpire("h", 0, "f")
        clock.advance(10_001)
        r.hget("h", "a")  # a read that expires a field logs its deletion
        r.hget("h", "zz")

    assert _logged(server, actions) == [
        [b"HSET", b"h", b"a", b"1", b"b", b"2", b"c", b"3"],
        [b"HPEXPIREAT", b"h", at, b"NX", b"FIELDS", b"1", b"a"],
        [b"HPEXPIREAT", b"h", at, b"NX", b"FIELDS", b"1", b"b"],
        [b"HSETEX", b"h", b"KEEPTTL", b"FIELDS", b"1", b"f", b"1.5"],
        [b"HPEXPIREAT", b"h", at, b"FIELDS", b"1", b"c"],
        [b"HPERSIST", b"h", b"FIELDS", b"1", b"c"],
        [b"HDEL", b"h", b"c", b"nope"],
        [b"HSETEX", b"h", b"PXAT", at, b"FIELDS", b"1", b"d", b"4"],
        [b"HDEL", b"h", b"e"],
        [b"HDEL", b"h", b"f"],
        [b"HDEL", b"h", b"a"],
    ]


def test_active_expiry_is_logged_as_hdel(timed) -> None:  # type: ignore[no-untyped-def]
    r, clock, server = timed
    r.hset("h", mapping={"a": 1, "b": 2})
    r.hpexpire("h", 5, "a", "b")

    def actions() -> None:
        clock.advance(6)
        wait_until(lambda: r.info("stats")["expired_subkeys_active"] == 2, what="active expiry")

    assert sorted(_logged(server, actions)) == [[b"HDEL", b"h", b"a"], [b"HDEL", b"h", b"b"]]
    assert r.exists("h") == 0


def test_transaction_with_expired_fields(timed) -> None:  # type: ignore[no-untyped-def]
    r, clock, server = timed
    r.hset("h", mapping={"a": 1, "b": 2})
    r.hpexpire("h", 5, "a")
    clock.advance(6)

    def actions() -> None:
        with r.pipeline(transaction=True) as p:
            p.hincrby("h", "a", 10)  # the expired field is gone: starts from 0
            p.hgetall("h")
            assert p.execute() == [10, {b"b": b"2", b"a": b"10"}]

    assert _logged(server, actions) == [
        [b"MULTI"], [b"HDEL", b"h", b"a"], [b"HINCRBY", b"h", b"a", b"10"], [b"EXEC"]]


def test_debug_reload_keeps_fields_deadlines_and_encodings(make_server) -> None:  # type: ignore[no-untyped-def]
    clock = FakeClock(NOW)
    server = make_server("enable-debug-command yes", "hash-max-listpack-entries 4",
                         clock=clock)
    r = server.client()
    r.hset("lp", mapping={"a": 1, "b": 2})
    r.hset("lpex", mapping={"a": 1, "b": 2, "c": 3})
    r.hpexpire("lpex", 5000, "c")
    r.hpexpire("lpex", 3000, "b")
    r.hset("ht", mapping={f"f{i}": i for i in range(6)})
    r.hpexpire("ht", 7000, "f1")
    r.hset("htplain", mapping={f"f{i}": i for i in range(6)})
    before = {k: (r.hgetall(k), r.object("encoding", k)) for k in ("lp", "lpex", "ht", "htplain")}
    assert [e for _, e in before.values()] == [b"listpack", b"listpackex", b"hashtable", b"hashtable"]
    assert r.execute_command("DEBUG", "RELOAD") == b"OK"
    after = {k: (r.hgetall(k), r.object("encoding", k)) for k in ("lp", "lpex", "ht", "htplain")}
    assert after == before
    assert list(r.hgetall("lpex")) == [b"b", b"c", b"a"]  # listpackex: by deadline
    assert r.hpexpiretime("lpex", "a", "b", "c") == [-1, NOW + 3000, NOW + 5000]
    assert r.hpexpiretime("ht", "f1", "f2") == [NOW + 7000, -1]
    r.config_set("hash-max-listpack-entries", 10)  # a reload decides the encoding afresh
    r.execute_command("DEBUG", "RELOAD")
    assert r.object("encoding", "ht") == b"listpackex"
    assert r.object("encoding", "htplain") == b"listpack"
    clock.advance(3001)
    assert r.hget("lpex", "b") is None and r.hlen("lpex") == 2
    r.close()


def test_client_pause_keeps_expired_fields_until_it_ends(timed) -> None:  # type: ignore[no-untyped-def]
    """While writes are paused, a read finds an expired field gone but deletes nothing (as
    Redis's PAUSE_ACTION_EXPIRE); the first read after the pause deletes it."""
    r, clock, _ = timed
    r.hset("h", mapping={"a": 1, "b": 2})
    r.hpexpire("h", 10, "a")
    clock.advance(11)
    r.execute_command("CLIENT", "PAUSE", 100_000, "WRITE")
    try:
        assert r.hget("h", "a") is None
        assert r.hlen("h") == 2
        assert r.info("stats")["expired_subkeys"] == 0
    finally:
        r.execute_command("CLIENT", "UNPAUSE")
    assert r.hget("h", "a") is None
    assert r.hlen("h") == 1


def test_expired_fields_join_the_transaction_around_them(timed) -> None:  # type: ignore[no-untyped-def]
    """A field found expired inside EXEC or a script is logged inside that transaction, in
    the order things happened: never ahead of it, never in a MULTI of its own."""
    r, clock, server = timed

    def actions() -> None:
        r.hset("h", mapping={"a": 1, "b": 2, "c": 3})
        r.hpexpire("h", 10, "a", "b")
        clock.advance(11)
        r.eval("redis.call('SET', 'k', '1'); return redis.call('HGET', KEYS[1], 'a')", 1, "h")
        with r.pipeline(transaction=True) as p:
            p.set("k", "2").hget("h", "b").execute()

    logged = _logged(server, actions)
    assert logged[2:] == [
        [b"MULTI"], [b"SET", b"k", b"1"], [b"HDEL", b"h", b"a"], [b"EXEC"],
        [b"MULTI"], [b"SET", b"k", b"2"], [b"HDEL", b"h", b"b"], [b"EXEC"],
    ]
