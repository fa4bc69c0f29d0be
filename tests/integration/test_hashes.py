"""Hashes over a real socket with redis-py, RESP2 and RESP3: the commands as client libraries
use them (kombu/Celery, RQ and arq write hashes inside MULTI/EXEC pipelines), HSCAN's
guarantees on a hashtable under writes, HRANDFIELD's shapes, encodings and their settings
(CONFIG SET, the config file, the ziplist aliases), and the behaviour where redis-server 8.6.3
crashes (HSETEX with a repeated field)."""

from __future__ import annotations

import pytest
import redis

from tests.support import ThreadedServer


def test_set_get_and_whole_hash(rr: redis.Redis) -> None:
    assert rr.hset("h", mapping={"a": 1, "b": "two"}) == 2
    assert rr.hset("h", "a", "uno") == 0
    assert rr.hget("h", "a") == b"uno"
    assert rr.hgetall("h") == {b"a": b"uno", b"b": b"two"}
    assert rr.hmget("h", ["b", "nope", "a"]) == [b"two", None, b"uno"]
    assert rr.hkeys("h") == [b"a", b"b"] and rr.hvals("h") == [b"uno", b"two"]
    assert rr.hlen("h") == 2 and rr.hexists("h", "b") and not rr.hexists("h", "c")
    assert rr.hstrlen("h", "b") == 3
    assert rr.hincrby("h", "n", 5) == 5
    assert rr.hincrbyfloat("h", "f", "2.5") == 2.5
    assert rr.hdel("h", "a", "b", "n", "f", "x") == 4
    assert rr.exists("h") == 0  # the last field took the key along
    assert rr.hgetall("h") == {}
    assert rr.type("h") == b"none"


def test_transaction_pipelines_as_queue_libraries_send_them(rr: redis.Redis) -> None:
    """RQ enqueues a job as HSET job:<id> mapping in a MULTI with other writes; kombu keeps
    unacked messages in a hash and removes them with HDEL in a pipeline."""
    with rr.pipeline(transaction=True) as p:
        p.hset("rq:job:1", mapping={"status": "queued", "data": b"\x00\x01payload",
                                    "created_at": "2026-11-24T10:00:00Z"})
        p.rpush("rq:queue:default", "1")
        p.hincrby("stats", "enqueued", 1)
        p.expire("rq:job:1", 500)
        p.hgetall("rq:job:1")
        results = p.execute()
    assert results[:4] == [3, 1, 1, True]
    assert results[4][b"status"] == b"queued"
    with rr.pipeline(transaction=True) as p:
        p.hset("unacked", "tag-1", "msg-1")
        p.hset("unacked", "tag-2", "msg-2")
        p.hdel("unacked", "tag-1")
        p.hlen("unacked")
        assert p.execute() == [1, 1, 1, 1]
    with rr.pipeline(transaction=True) as p:  # an error inside EXEC does not abort the rest
        p.set("s", "x")
        p.hset("s", "a", "1")
        p.hset("ok", "a", "1")
        results = p.execute(raise_on_error=False)
    assert isinstance(results[1], redis.ResponseError) and results[2] == 1


def test_watch_sees_hash_writes(r: redis.Redis, sluice: ThreadedServer) -> None:
    r.hset("w", "a", "1")
    other = sluice.client()
    with r.pipeline() as p:
        p.watch("w")
        other.hincrby("w", "a", 1)
        p.multi()
        p.hset("w", "b", "2")
        with pytest.raises(redis.WatchError):
            p.execute()
    with r.pipeline() as p:  # an HDEL that deletes nothing is no write
        p.watch("w")
        other.hdel("w", "nope")
        p.multi()
        p.hset("w", "b", "2")
        assert p.execute() == [1]
    other.close()


def test_hscan_hashtable_returns_every_field_despite_writes(r: redis.Redis) -> None:
    fields = {f"f{i}": i for i in range(2000)}
    r.hset("big", mapping=fields)
    assert r.object("encoding", "big") == b"hashtable"
    seen: set[bytes] = set()
    cursor = 0
    step = 0
    while True:
        cursor, batch = r.hscan("big", cursor, count=50)
        seen.update(batch)
        step += 1
        # churn: delete and re-add fields that were already returned, add new ones
        r.hdel("big", f"f{step}")
        r.hset("big", f"f{step}", step)
        r.hset("big", f"new{step}", step)
        if cursor == 0:
            break
    assert {f.encode() for f in fields} <= seen
    assert len(seen) >= len(fields)


def test_hscan_options(rr: redis.Redis) -> None:
    rr.hset("h", mapping={"apple": 1, "banana": 2, "avocado": 3})
    assert rr.hscan("h", 0, match="a*") == (0, {b"apple": b"1", b"avocado": b"3"})
    assert rr.hscan("h", 0, no_values=True) == (0, [b"apple", b"banana", b"avocado"])
    assert sorted(rr.hscan_iter("h", match="b*")) == [(b"banana", b"2")]
    with pytest.raises(redis.ResponseError, match="syntax error"):
        rr.hscan("h", 0, count=0)


def test_hrandfield_shapes(rr: redis.Redis) -> None:
    rr.hset("h", mapping={str(i): i for i in range(10)})
    assert rr.hrandfield("h") in {str(i).encode() for i in range(10)}
    assert len(rr.hrandfield("h", -30)) == 30
    picked = rr.hrandfield("h", 5)
    assert len(picked) == len(set(picked)) == 5
    assert sorted(rr.hrandfield("h", 50)) == sorted(str(i).encode() for i in range(10))
    pairs = rr.hrandfield("h", 3, withvalues=True)
    if rr.get_connection_kwargs().get("protocol") == 3:
        assert len(pairs) == 3 and all(len(p) == 2 and p[0] == p[1] for p in pairs)
    else:  # RESP2: field, value, field, value ...
        assert len(pairs) == 6 and pairs[0::2] == pairs[1::2]
    assert rr.hrandfield("nope", 3) == []
    assert rr.hrandfield("nope") is None


def test_hrandfield_hashtable_is_uniform_enough(r: redis.Redis) -> None:
    r.hset("h", mapping={str(i): "x" * 70 for i in range(20)})  # long values: a hashtable
    assert r.object("encoding", "h") == b"hashtable"
    counts: dict[bytes, int] = {}
    for f in r.hrandfield("h", -4000):
        counts[f] = counts.get(f, 0) + 1
    assert len(counts) == 20 and min(counts.values()) > 100  # expected 200 each


def test_encodings_follow_the_settings(rr: redis.Redis) -> None:
    try:
        rr.config_set("hash-max-listpack-entries", 3)
        rr.config_set("hash-max-ziplist-value", 5)  # the old name sets the same setting
        assert rr.config_get("hash-max-listpack-value") == {"hash-max-listpack-value": "5"}
        rr.hset("h", mapping={"a": 1, "b": 2, "c": 3})
        assert rr.object("encoding", "h") == b"listpack"
        rr.hset("h", "d", 4)
        assert rr.object("encoding", "h") == b"hashtable"
        rr.hset("v", "a", "123456")
        assert rr.object("encoding", "v") == b"hashtable"
        rr.hset("x", "a", "1")
        rr.hpexpire("x", 100_000, "a")
        assert rr.object("encoding", "x") == b"listpackex"
    finally:
        rr.config_set("hash-max-listpack-entries", 512)
        rr.config_set("hash-max-listpack-value", 64)


def test_settings_from_the_config_file(make_server) -> None:  # type: ignore[no-untyped-def]
    server = make_server("hash-max-ziplist-entries 1", "hash-max-listpack-value 2kb")
    c = server.client()
    assert c.config_get("hash-max-*") == {
        "hash-max-listpack-entries": "1", "hash-max-ziplist-entries": "1",
        "hash-max-listpack-value": "2048", "hash-max-ziplist-value": "2048"}
    c.hset("h", mapping={"a": "x" * 1000})
    assert c.object("encoding", "h") == b"listpack"
    c.hset("h", "b", "1")
    assert c.object("encoding", "h") == b"hashtable"
    c.close()


def test_hsetex_with_a_repeated_field(r: redis.Redis) -> None:
    """redis-server 8.6.3 crashes on this (assertion in hfieldPersist) when the hash is a
    hashtable without field TTLs; Sluice sets the field twice, the last value winning, with
    the deadline, as it does for a listpack."""
    r.hset("h", "k" * 100, "1")
    assert r.object("encoding", "h") == b"hashtable"
    assert r.execute_command("HSETEX", "h", "PXAT", "4102444800000", "FIELDS", "2",
                             "c", "1", "c", "2") == 1
    assert r.hget("h", "c") == b"2"
    assert r.hpexpiretime("h", "c") == [4102444800000]


def test_field_expiry_commands(rr: redis.Redis) -> None:
    rr.hset("h", mapping={"a": 1, "b": 2, "c": 3})
    assert rr.hexpire("h", 100, "a", "nope") == [1, -2]
    assert rr.httl("h", "a", "b") == [100, -1]
    assert 99_000 < rr.hpttl("h", "a")[0] <= 100_000
    assert rr.hpexpire("h", 50_000, "a", gt=True) == [0]
    assert rr.hpersist("h", "a", "b") == [1, -1]
    assert rr.hgetdel("h", "a", "x") == [b"1", None]
    assert rr.hgetex("h", "b", ex=60) == [b"2"]
    assert rr.httl("h", "b") == [60]
    assert rr.hsetex("h", "d", "4", px=120_000) == 1
    assert 0 < rr.hpttl("h", "d")[0] <= 120_000
    assert rr.execute_command("HSETEX", "h", "FNX", "FIELDS", "2", "d", "5", "e", "6") == 0
    assert rr.hexpire("h", 0, "c") == [2]  # a deadline now deletes the field
    assert sorted(rr.hkeys("h")) == [b"b", b"d"]
    assert rr.hexpire("nope", 10, "a") == [-2]
