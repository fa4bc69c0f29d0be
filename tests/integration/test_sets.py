"""Set commands through redis-py over a real socket, RESP2 and RESP3.

Exact reply bytes, error texts and encodings are compared with redis-server in
``tests/differential/test_sets_diff.py``; here the commands run the way applications call
them: the examples of the Redis docs pages, replies as redis-py decodes them in both
protocols, encodings and their settings, transactions, the keyspace commands on sets, and
what a set operation or SPOP leaves behind.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import redis

from sluice.commands import errors
from tests.support import ThreadedServer

pytestmark = pytest.mark.timeout(30)


def err(text: str) -> str:
    return "^" + re.escape(text.removeprefix("ERR ")) + "$"


def test_docs_examples(rr: redis.Redis) -> None:
    assert rr.sadd("myset", "Hello", "World") == 2
    assert rr.sadd("myset", "World") == 0
    assert rr.smembers("myset") == {b"Hello", b"World"}
    assert rr.scard("myset") == 2
    assert rr.sismember("myset", "Hello") == 1
    assert rr.smismember("myset", ["Hello", "nope"]) == [1, 0]
    assert rr.srem("myset", "Hello", "nope") == 1
    rr.sadd("key1", "a", "b", "c")
    rr.sadd("key2", "c", "d", "e")
    assert rr.sinter("key1", "key2") == {b"c"}
    assert rr.sunion("key1", "key2") == {b"a", b"b", b"c", b"d", b"e"}
    assert rr.sdiff("key1", "key2") == {b"a", b"b"}
    assert rr.sintercard(2, ["key1", "key2"]) == 1
    assert rr.sinterstore("dst", ["key1", "key2"]) == 1
    assert rr.sunionstore("dst", ["key1", "key2"]) == 5
    assert rr.sdiffstore("dst", ["key1", "key2"]) == 2
    assert rr.smembers("dst") == {b"a", b"b"}


def test_replies_are_sets_in_resp3(r3: redis.Redis) -> None:
    r3.sadd("s", "a", "b")
    assert r3.execute_command("SMEMBERS", "s") in ({b"a", b"b"}, [b"a", b"b"])
    assert r3.smembers("s") == {b"a", b"b"}
    assert r3.spop("s", 0) in (set(), [])
    assert r3.srandmember("s", 5) in ([b"a", b"b"], [b"b", b"a"])  # an array, not a set


def test_encodings_follow_the_settings(rr: redis.Redis) -> None:
    rr.sadd("ints", *range(10))
    assert rr.object("encoding", "ints") == b"intset"
    rr.sadd("ints", "x")
    assert rr.object("encoding", "ints") == b"listpack"
    rr.sadd("big", *range(600))
    assert rr.object("encoding", "big") == b"hashtable"
    rr.sadd("long", "x" * 65)
    assert rr.object("encoding", "long") == b"hashtable"


def test_settings_are_read_at_each_command(sluice: ThreadedServer) -> None:
    r = sluice.client()
    try:
        r.config_set("set-max-intset-entries", 3)
        r.sadd("s", 1, 2, 3)
        assert r.object("encoding", "s") == b"intset"
        r.sadd("s", 4)
        assert r.object("encoding", "s") == b"hashtable"
        r.config_set("set-max-listpack-entries", 1)
        r.sadd("l", "a")
        r.sadd("l", "b")
        assert r.object("encoding", "l") == b"hashtable"
        assert r.config_get("set-max-*") == {"set-max-intset-entries": "3",
                                             "set-max-listpack-entries": "1",
                                             "set-max-listpack-value": "64"}
    finally:
        r.config_set("set-max-intset-entries", 512)
        r.config_set("set-max-listpack-entries", 128)
        r.flushall()


def test_spop_and_srandmember(rr: redis.Redis) -> None:
    members = {b"m%d" % i for i in range(300)}
    rr.sadd("s", *members)
    popped = rr.spop("s", 10)
    assert len(set(popped)) == 10 and set(popped) <= members
    assert rr.scard("s") == 290
    assert rr.spop("s") in members
    many = rr.spop("s", 250)  # most of it: the set is rebuilt from what stays
    assert len(set(many)) == 250 and rr.scard("s") == 39
    assert rr.spop("s", 1000) is not None and rr.exists("s") == 0
    rr.sadd("t", "a", "b", "c")
    assert len(rr.srandmember("t", -10)) == 10
    assert sorted(rr.srandmember("t", 10)) == [b"a", b"b", b"c"]
    assert rr.srandmember("t") in (b"a", b"b", b"c")
    assert rr.srandmember("nope") is None and rr.srandmember("nope", 3) == []
    assert rr.spop("nope") is None


def test_smove(rr: redis.Redis) -> None:
    rr.sadd("src", "one", "two")
    rr.sadd("dst", "three")
    assert rr.smove("src", "dst", "two") == 1
    assert rr.smembers("src") == {b"one"} and rr.smembers("dst") == {b"three", b"two"}
    assert rr.smove("src", "dst", "nope") == 0
    assert rr.smove("src", "new", "one") == 1
    assert rr.exists("src") == 0 and rr.smembers("new") == {b"one"}
    rr.set("str", "x")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        rr.smove("new", "str", "one")


def test_sscan_returns_everything_exactly_once_when_nothing_changes(rr: redis.Redis) -> None:
    members = {b"member:%d" % i for i in range(1000)}
    rr.sadd("big", *members)
    seen = list(rr.sscan_iter("big", count=50))
    assert len(seen) == 1000 and set(seen) == members
    assert set(rr.sscan_iter("big", match="member:99*")) == {
        m for m in members if m.startswith(b"member:99")}
    rr.sadd("small", 1, 2, 3)
    assert rr.sscan("small", 0, count=1) == (0, [b"1", b"2", b"3"])


def test_sscan_keeps_its_guarantee_while_the_set_changes(rr: redis.Redis) -> None:
    """Members present for the whole scan come back, while others are added and removed
    (enough removals to compact the table mid-scan)."""
    rr.sadd("s", *[f"keep{i}" for i in range(300)], *[f"go{i}" for i in range(600)])
    cursor, seen, step = 0, set(), 0
    while True:
        cursor, batch = rr.sscan("s", cursor, count=20)
        seen.update(batch)
        rr.srem("s", *[f"go{j}" for j in range(step * 30, step * 30 + 30)])
        rr.sadd("s", f"new{step}")
        step += 1
        if cursor == 0:
            break
    assert {b"keep%d" % i for i in range(300)} <= seen


def test_errors(rr: redis.Redis) -> None:
    rr.set("str", "x")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        rr.sadd("str", "a")
    with pytest.raises(redis.ResponseError, match=err(errors.NUMKEYS_POSITIVE)):
        rr.execute_command("SINTERCARD", 0, "a")
    with pytest.raises(redis.ResponseError, match=err(errors.NUMKEYS_TOO_MANY)):
        rr.execute_command("SINTERCARD", 3, "a")
    with pytest.raises(redis.ResponseError, match=err(errors.LIMIT_NEGATIVE)):
        rr.execute_command("SINTERCARD", 1, "a", "LIMIT", -1)
    with pytest.raises(redis.ResponseError, match=err(errors.LIST_COUNT_NOT_POSITIVE)):
        rr.spop("s", -1)
    with pytest.raises(redis.ResponseError, match=err(errors.SYNTAX)):
        rr.execute_command("SPOP", "s", 1, 2)
    with pytest.raises(redis.ResponseError, match="^NOVALUES option can only be used in HSCAN$"):
        rr.sadd("s", "a")
        rr.execute_command("SSCAN", "s", 0, "NOVALUES")


def test_keyspace_commands_see_sets(rr: redis.Redis) -> None:
    rr.sadd("s", "a", "b")
    assert rr.type("s") == b"set"
    assert rr.scan(0, _type="set")[1] == [b"s"]
    assert rr.copy("s", "c") and rr.smembers("c") == {b"a", b"b"}
    rr.sadd("c", "z")
    assert rr.smembers("s") == {b"a", b"b"}  # a copy is independent
    rr.rename("c", "d")
    assert rr.smembers("d") == {b"a", b"b", b"z"}
    assert rr.expire("s", 100) and 0 < rr.ttl("s") <= 100
    rr.spop("s")
    assert 0 < rr.ttl("s") <= 100  # a write keeps the TTL
    assert rr.move("d", 1)
    payload = rr.dump("s")
    rr.restore("s2", 0, payload)
    assert rr.smembers("s2") == rr.smembers("s")
    assert rr.delete("s", "s2") == 2


def test_transactions(rr: redis.Redis) -> None:
    """The kombu pattern: SADD inside a MULTI, with WATCH on the set."""
    rr.sadd("bindings", "x")
    pipe = rr.pipeline()
    pipe.sadd("bindings", "queue1")
    pipe.scard("bindings")
    assert pipe.execute() == [1, 2]
    with rr.pipeline() as pipe:
        pipe.watch("bindings")
        pipe.multi()
        pipe.sadd("bindings", "y")
        rr.srem("bindings", "x")
        with pytest.raises(redis.WatchError):
            pipe.execute()


def test_debug_reload_and_restart_keep_sets_with_the_servers_settings(
        make_server: Any, tmp_path: Path) -> None:
    """Loads decide encodings with the server's settings, as Redis's rdbLoad does: a saved
    intset too big for this server's set-max-intset-entries comes back a hash table."""
    s = make_server(f"dir {tmp_path}", "enable-debug-command yes")
    r = s.client()
    r.sadd("ints", *range(10))
    r.sadd("lp", "a", "b")
    r.zadd("z", {"a": 1.5, "b": -0.0})
    assert r.execute_command("DEBUG", "RELOAD") == b"OK"
    assert r.object("encoding", "ints") == b"intset" and r.scard("ints") == 10
    assert r.smembers("lp") == {b"a", b"b"} and r.zscore("z", "a") == 1.5
    r.config_set("set-max-intset-entries", 5)
    r.config_set("zset-max-listpack-entries", 1)
    assert r.execute_command("DEBUG", "RELOAD") == b"OK"
    assert r.object("encoding", "ints") == b"hashtable"
    assert r.object("encoding", "z") == b"skiplist"
    assert sorted(r.smembers("ints")) == sorted(str(i).encode() for i in range(10))


def test_info_counts_set_commands_and_keys(rr: redis.Redis) -> None:
    rr.sadd("s", "a")
    rr.zadd("z", {"a": 1})
    rr.sismember("s", "a")
    stats = rr.info("commandstats")
    assert stats["cmdstat_sadd"]["calls"] >= 1 and stats["cmdstat_zadd"]["calls"] >= 1
    assert rr.info("keyspace")["db0"]["keys"] == 2
    assert rr.execute_command("ACL", "CAT", "sortedset")
    assert b"zadd" in rr.execute_command("ACL", "CAT", "sortedset")
    assert b"sadd" in rr.execute_command("ACL", "CAT", "set")
