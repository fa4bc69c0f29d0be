"""List commands through redis-py over a real socket, RESP2 and RESP3.

Exact reply bytes and error texts are compared with redis-server in
``tests/differential/test_lists_diff.py``; here the commands are exercised the way applications
call them, including the examples of the Redis docs pages.
"""

from __future__ import annotations

import pytest
import redis

from sluice.commands import errors

pytestmark = pytest.mark.timeout(20)


def err(text: str) -> str:
    """redis-py drops the ``ERR `` prefix from generic errors; match the rest exactly."""
    import re

    return "^" + re.escape(text.removeprefix("ERR ")) + "$"


def test_push_and_range_docs_examples(rr: redis.Redis) -> None:
    assert rr.rpush("mylist", "one", "two", "three") == 3
    assert rr.lrange("mylist", 0, 0) == [b"one"]
    assert rr.lrange("mylist", -3, 2) == [b"one", b"two", b"three"]
    assert rr.lrange("mylist", -100, 100) == [b"one", b"two", b"three"]
    assert rr.lrange("mylist", 5, 10) == []
    assert rr.lpush("other", "world", "hello") == 2
    assert rr.lrange("other", 0, -1) == [b"hello", b"world"]


def test_pushx_only_on_existing(rr: redis.Redis) -> None:
    assert rr.lpushx("nolist", "x") == 0
    assert rr.rpushx("nolist", "x") == 0
    assert rr.exists("nolist") == 0
    rr.rpush("l", "b")
    assert rr.lpushx("l", "a") == 2
    assert rr.rpushx("l", "c", "d") == 4
    assert rr.lrange("l", 0, -1) == [b"a", b"b", b"c", b"d"]


def test_pop_with_and_without_count(rr: redis.Redis) -> None:
    rr.rpush("l", "one", "two", "three", "four", "five")
    assert rr.lpop("l") == b"one"
    assert rr.lpop("l", 2) == [b"two", b"three"]
    assert rr.rpop("l", 5) == [b"five", b"four"]
    assert rr.exists("l") == 0  # an emptied list is deleted
    assert rr.lpop("l") is None
    assert rr.lpop("l", 2) is None
    rr.rpush("l", "x")
    assert rr.lpop("l", 0) == []
    with pytest.raises(redis.ResponseError, match=err(errors.LIST_COUNT_NOT_POSITIVE)):
        rr.lpop("l", -1)


def test_llen_lindex_lset(rr: redis.Redis) -> None:
    assert rr.llen("l") == 0
    rr.rpush("l", "a", "b", "c")
    assert rr.llen("l") == 3
    assert (rr.lindex("l", 0), rr.lindex("l", -1), rr.lindex("l", 3)) == (b"a", b"c", None)
    assert rr.lset("l", -2, "B") is True
    assert rr.lrange("l", 0, -1) == [b"a", b"B", b"c"]
    with pytest.raises(redis.ResponseError, match=err(errors.INDEX_OUT_OF_RANGE)):
        rr.lset("l", 3, "x")
    with pytest.raises(redis.ResponseError, match=err(errors.NO_SUCH_KEY)):
        rr.lset("missing", 0, "x")


def test_lrem_directions(rr: redis.Redis) -> None:
    rr.rpush("l", "hello", "hello", "foo", "hello")
    assert rr.lrem("l", -2, "hello") == 2
    assert rr.lrange("l", 0, -1) == [b"hello", b"foo"]
    rr.rpush("l", "hello")
    assert rr.lrem("l", 1, "hello") == 1
    assert rr.lrange("l", 0, -1) == [b"foo", b"hello"]
    assert rr.lrem("l", 0, "foo") == 1
    assert rr.lrem("l", 0, "hello") == 1
    assert rr.exists("l") == 0


def test_ltrim(rr: redis.Redis) -> None:
    rr.rpush("l", "one", "two", "three")
    assert rr.ltrim("l", 1, -1) is True
    assert rr.lrange("l", 0, -1) == [b"two", b"three"]
    assert rr.ltrim("l", 5, 10) is True
    assert rr.exists("l") == 0
    assert rr.ltrim("missing", 0, 1) is True


def test_linsert(rr: redis.Redis) -> None:
    rr.rpush("l", "Hello", "World")
    assert rr.linsert("l", "BEFORE", "World", "There") == 3
    assert rr.linsert("l", "after", "World", "!") == 4
    assert rr.lrange("l", 0, -1) == [b"Hello", b"There", b"World", b"!"]
    assert rr.linsert("l", "BEFORE", "nope", "x") == -1
    assert rr.linsert("missing", "BEFORE", "a", "x") == 0
    with pytest.raises(redis.ResponseError, match=err(errors.SYNTAX)):
        rr.execute_command("LINSERT", "l", "MIDDLE", "World", "x")


def test_lpos_docs_examples(rr: redis.Redis) -> None:
    rr.rpush("mylist", "a", "b", "c", "d", "1", "2", "3", "4", "3", "3", "3")
    assert rr.lpos("mylist", "3") == 6
    assert rr.lpos("mylist", "3", count=0, rank=2) == [8, 9, 10]
    assert rr.lpos("mylist", "c") == 2
    assert rr.lpos("mylist", "c", rank=-1) == 2
    assert rr.lpos("mylist", "3", rank=-1) == 10
    assert rr.lpos("mylist", "3", count=2) == [6, 8]
    assert rr.lpos("mylist", "3", maxlen=6) is None
    assert rr.lpos("mylist", "nope", count=3) == []
    assert rr.lpos("missing", "x") is None
    assert rr.lpos("missing", "x", count=1) == []
    with pytest.raises(redis.ResponseError, match=err(errors.LPOS_RANK_ZERO)):
        rr.lpos("mylist", "3", rank=0)


def test_lmove_and_rpoplpush(rr: redis.Redis) -> None:
    rr.rpush("mylist", "one", "two", "three")
    assert rr.lmove("mylist", "myother", "RIGHT", "LEFT") == b"three"
    assert rr.lmove("mylist", "myother", "LEFT", "RIGHT") == b"one"
    assert rr.lrange("mylist", 0, -1) == [b"two"]
    assert rr.lrange("myother", 0, -1) == [b"three", b"one"]
    assert rr.rpoplpush("myother", "myother") == b"one"  # rotation
    assert rr.lrange("myother", 0, -1) == [b"one", b"three"]
    assert rr.rpoplpush("mylist", "myother") == b"two"
    assert rr.exists("mylist") == 0
    assert rr.lmove("mylist", "myother", "LEFT", "LEFT") is None


def test_lmpop(rr: redis.Redis) -> None:
    assert rr.lmpop(2, "non1", "non2", direction="LEFT", count=10) is None
    rr.lpush("mylist", "one", "two", "three", "four", "five")
    assert rr.lmpop(1, "mylist", direction="LEFT") == [b"mylist", [b"five"]]
    assert rr.lmpop(1, "mylist", direction="RIGHT", count=10) == [
        b"mylist", [b"one", b"two", b"three", b"four"]]
    rr.lpush("mylist", "one", "two", "three", "four", "five")
    rr.lpush("mylist2", "a", "b", "c", "d", "e")
    assert rr.lmpop(2, "mylist", "mylist2", direction="right", count=3) == [
        b"mylist", [b"one", b"two", b"three"]]
    assert rr.lmpop(2, "mylist", "mylist2", direction="right", count=5) == [
        b"mylist", [b"four", b"five"]]
    assert rr.lmpop(2, "mylist", "mylist2", direction="right", count=10) == [
        b"mylist2", [b"a", b"b", b"c", b"d", b"e"]]
    assert rr.exists("mylist", "mylist2") == 0


def test_blocking_commands_with_data_answer_at_once(rr: redis.Redis) -> None:
    rr.rpush("l", "a", "b", "c")
    assert list(rr.blpop(["none", "l"], timeout=0)) == [b"l", b"a"]
    assert list(rr.brpop(["l"], timeout=0)) == [b"l", b"c"]
    assert rr.blmove("l", "d", 0, "LEFT", "RIGHT") == b"b"
    assert rr.brpoplpush("d", "e", 0) == b"b"
    rr.rpush("m", "1", "2")
    assert rr.blmpop(0, 2, "x", "m", direction="LEFT", count=5) == [b"m", [b"1", b"2"]]
    assert rr.exists("l", "d", "m") == 0


def test_wrong_type(rr: redis.Redis) -> None:
    rr.set("s", "string")
    for call in (lambda: rr.lpush("s", "x"), lambda: rr.llen("s"), lambda: rr.lrange("s", 0, 1),
                 lambda: rr.blpop(["s"], timeout=0), lambda: rr.lmove("s", "d", "LEFT", "LEFT"),
                 lambda: rr.lpos("s", "x")):
        with pytest.raises(redis.ResponseError, match="^WRONGTYPE"):
            call()
    rr.rpush("l", "x")
    with pytest.raises(redis.ResponseError, match="^WRONGTYPE"):
        rr.lmove("l", "s", "LEFT", "LEFT")
    assert rr.lrange("l", 0, -1) == [b"x"]  # nothing moved


def test_type_and_encoding(rr: redis.Redis) -> None:
    rr.rpush("l", "x")
    assert rr.type("l") == b"list"
    assert rr.object("encoding", "l") == b"listpack"
    rr.rpush("l", "y" * 9000)  # past the default 8 KB: a quicklist
    assert rr.object("encoding", "l") == b"quicklist"
    rr.rpop("l")  # a single small node again: back to a listpack
    assert rr.object("encoding", "l") == b"listpack"


def test_encoding_follows_config_set(rr: redis.Redis) -> None:
    try:
        rr.config_set("list-max-listpack-size", 2)
        rr.rpush("l", "a", "b")
        assert rr.object("encoding", "l") == b"listpack"
        rr.rpush("l", "c")
        assert rr.object("encoding", "l") == b"quicklist"
        rr.rpop("l", 2)  # one element: within half the limit
        assert rr.object("encoding", "l") == b"listpack"
    finally:
        rr.config_set("list-max-listpack-size", -2)


def test_big_list(rr: redis.Redis) -> None:
    values = [str(i) for i in range(10_000)]
    for i in range(0, len(values), 1000):
        rr.rpush("big", *values[i:i + 1000])
    assert rr.llen("big") == 10_000
    assert rr.lrange("big", 9_995, -1) == [str(i).encode() for i in range(9_995, 10_000)]
    assert rr.lindex("big", -10_000) == b"0"
    assert rr.ltrim("big", 100, -101) is True
    assert rr.llen("big") == 9_800
    assert rr.lpos("big", "9899") == 9_799
