"""Sorted set commands through redis-py over a real socket, RESP2 and RESP3, and the blocking
pops (BZPOPMIN, BZPOPMAX, BZMPOP) over raw connections.

Exact bytes are compared with redis-server in ``tests/differential/test_zsets_diff.py``;
here: the Redis docs examples, redis-py's decoded replies in both protocols (scores come back
as floats), encodings and their settings, rank and range arithmetic on large sets, the
blocking pops' fairness, timeouts, CLIENT UNBLOCK and MULTI, and the keyspace commands.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from sluice.commands import errors
from tests.integration.test_blocking import Conn, encode, null_array, protocol_of
from tests.support import ThreadedServer, wait_blocked

pytestmark = pytest.mark.timeout(30)


def err(text: str) -> str:
    return "^" + re.escape(text.removeprefix("ERR ")) + "$"


def pairs(reply: Any) -> list[tuple[bytes, float]]:
    """Member/score pairs however redis-py decoded them (tuples in RESP2, lists in RESP3, a
    flat list, scores as floats or bytes)."""
    if reply and not isinstance(reply[0], (list, tuple)):
        reply = [reply[i:i + 2] for i in range(0, len(reply), 2)]
    return [(m, float(s)) for m, s in reply]


def test_docs_examples(rr: redis.Redis) -> None:
    assert rr.zadd("myzset", {"one": 1}) == 1
    assert rr.zadd("myzset", {"uno": 1}) == 1
    assert rr.zadd("myzset", {"two": 2, "three": 3}) == 2
    assert pairs(rr.zrange("myzset", 0, -1, withscores=True)) == [
        (b"one", 1.0), (b"uno", 1.0), (b"two", 2.0), (b"three", 3.0)]
    assert rr.zrange("myzset", 2, 3) == [b"two", b"three"]
    assert rr.zrange("myzset", -2, -1) == [b"two", b"three"]
    assert rr.zrangebyscore("myzset", "(1", 2) == [b"two"]
    assert rr.zrangebyscore("myzset", "(1", "(2") == []
    assert rr.zcount("myzset", "-inf", "+inf") == 4
    assert rr.zincrby("myzset", 2, "one") == 3.0
    assert rr.zscore("myzset", "one") == 3.0
    assert rr.zrank("myzset", "three") == 3  # after "one", its equal, by member bytes
    assert rr.zrank("myzset", "three", withscore=True) == [3, 3.0]
    assert rr.zrevrank("myzset", "uno") == 3
    assert rr.zmscore("myzset", ["one", "nope"]) == [3.0, None]
    assert rr.zrem("myzset", "uno", "nope") == 1
    assert rr.zcard("myzset") == 3


def test_zadd_options(rr: redis.Redis) -> None:
    rr.zadd("z", {"a": 1, "b": 2})
    assert rr.zadd("z", {"a": 5, "c": 3}, nx=True) == 1
    assert rr.zscore("z", "a") == 1.0
    assert rr.zadd("z", {"a": 5, "d": 3}, xx=True, ch=True) == 1
    assert rr.zadd("z", {"a": 4}, gt=True, ch=True) == 0
    assert rr.zadd("z", {"a": 4}, lt=True, ch=True) == 1
    assert rr.zadd("z", {"b": 10}, incr=True) == 12.0
    assert rr.zadd("z", {"b": 1}, incr=True, nx=True) is None
    with pytest.raises(redis.ResponseError, match=err(errors.ZADD_NX_XX)):
        rr.execute_command("ZADD", "z", "NX", "XX", 1, "a")
    with pytest.raises(redis.DataError):  # redis-py checks GT+NX itself
        rr.zadd("z", {"a": 1}, nx=True, gt=True)
    with pytest.raises(redis.ResponseError, match=err(errors.ZADD_GT_LT_NX)):
        rr.execute_command("ZADD", "z", "GT", "LT", 1, "a")
    with pytest.raises(redis.ResponseError, match=err(errors.NOT_FLOAT)):
        rr.zadd("z", {"a": "nan"})
    rr.zadd("z", {"inf": math.inf})
    with pytest.raises(redis.ResponseError, match=err(errors.ZSCORE_NAN)):
        rr.zincrby("z", -math.inf, "inf")


def test_ranges(rr: redis.Redis) -> None:
    rr.zadd("z", {f"m{i:03d}": i for i in range(500)})
    assert rr.object("encoding", "z") == b"skiplist"
    assert rr.zrange("z", 10, 12) == [b"m010", b"m011", b"m012"]
    assert pairs(rr.zrange("z", 0, 1, desc=True, withscores=True)) == [(b"m499", 499.0),
                                                                        (b"m498", 498.0)]
    assert rr.zrange("z", 100, 200, byscore=True, offset=5, num=2) == [b"m105", b"m106"]
    assert rr.zrange("z", 200, 100, byscore=True, desc=True, offset=0, num=2) == [
        b"m200", b"m199"]
    assert rr.zrevrangebyscore("z", "(10", 5) == [b"m009", b"m008", b"m007", b"m006", b"m005"]
    assert rr.zremrangebyrank("z", 0, 9) == 10
    assert rr.zremrangebyscore("z", "(480", "+inf") == 19
    assert rr.zcard("z") == 471
    assert rr.zrangestore("dst", "z", 0, 4) == 5
    assert rr.object("encoding", "dst") == b"listpack"
    assert rr.zrange("dst", 0, -1) == [b"m010", b"m011", b"m012", b"m013", b"m014"]
    rr.zadd("lex", {c: 0 for c in "abcdefg"})
    assert rr.zrangebylex("lex", "[b", "(e") == [b"b", b"c", b"d"]
    assert rr.zrevrangebylex("lex", "+", "[e", start=1, num=1) == [b"f"]
    assert rr.zlexcount("lex", "-", "+") == 7
    assert rr.zremrangebylex("lex", "[a", "[c") == 3
    with pytest.raises(redis.ResponseError, match=err(errors.MIN_MAX_NOT_FLOAT)):
        rr.zcount("z", "x", 1)
    with pytest.raises(redis.ResponseError, match=err(errors.MIN_MAX_NOT_LEX)):
        rr.zlexcount("lex", "a", "b")
    with pytest.raises(redis.ResponseError, match=err(errors.ZRANGE_LIMIT_RANK)):
        rr.execute_command("ZRANGE", "z", 0, 1, "LIMIT", 0, 1)


def test_ranks_on_a_large_set(rr: redis.Redis) -> None:
    rr.zadd("z", {f"m{i}": i * 2 for i in range(20_000)})
    assert rr.zrank("z", "m12345") == 12345
    assert rr.zrevrank("z", "m0") == 19_999
    assert rr.zcount("z", 1000, "(2000") == 500
    assert rr.zrange("z", 15_000, 15_001) == [b"m15000", b"m15001"]


def test_scores_come_back_as_redis_prints_them(rr: redis.Redis) -> None:
    rr.zadd("z", {"a": 0.1, "b": 1e-7, "c": 1e18, "d": -0.0, "e": math.inf})
    raw = rr.execute_command("ZRANGE", "z", 0, -1, "WITHSCORES", NEVER_DECODE=True)
    texts = raw[1::2] if protocol_of(rr) == 2 and not isinstance(raw[0], list) else None
    if texts is not None:  # RESP2: bulk strings, Redis's d2string
        assert texts == [b"0", b"1e-7", b"0.1", b"1000000000000000000", b"inf"]
    assert rr.zscore("z", "e") == math.inf


def test_set_operations(rr: redis.Redis) -> None:
    rr.zadd("a", {"x": 1, "y": 2})
    rr.zadd("b", {"y": 10, "z": 20})
    rr.sadd("s", "y", "w")
    assert pairs(rr.zunion(["a", "b"], withscores=True)) == [(b"x", 1.0), (b"y", 12.0),
                                                              (b"z", 20.0)]
    assert pairs(rr.zinter(["a", "b", "s"], aggregate="MAX", withscores=True)) == [(b"y", 10.0)]
    assert pairs(rr.zinter({"a": 2, "b": 3}, withscores=True)) == [(b"y", 34.0)]
    assert rr.zdiff(["a", "b"]) == [b"x"]
    assert rr.zintercard(2, ["a", "b"]) == 1
    assert rr.zunionstore("u", ["a", "b", "s"], aggregate="MIN") == 4
    assert pairs(rr.zrange("u", 0, -1, withscores=True)) == [(b"w", 1.0), (b"x", 1.0),
                                                             (b"y", 1.0), (b"z", 20.0)]
    assert rr.zinterstore("u", ["a", "nope"]) == 0 and rr.exists("u") == 0
    with pytest.raises(redis.ResponseError, match=err(errors.ZSETOP_NO_KEYS % "zunion")):
        rr.execute_command("ZUNION", 0, "a")


def test_pops(rr: redis.Redis) -> None:
    rr.zadd("z", {"a": 1, "b": 2, "c": 3, "d": 4})
    assert pairs(rr.zpopmin("z")) == [(b"a", 1.0)]
    assert pairs(rr.zpopmax("z", 2)) == [(b"d", 4.0), (b"c", 3.0)]
    key, popped = rr.zmpop(2, ["nope", "z"], min=True)
    assert key == b"z" and pairs(popped) == [(b"b", 2.0)]
    assert rr.exists("z") == 0
    assert rr.zmpop(1, ["z"], max=True) is None
    assert rr.zpopmin("z") == []


def test_zrandmember_and_zscan(rr: redis.Redis) -> None:
    rr.zadd("z", {f"m{i}": i for i in range(300)})
    picked = pairs(rr.zrandmember("z", 5, withscores=True))
    assert len(picked) == 5 and all(rr.zscore("z", m) == s for m, s in picked)
    assert len(rr.zrandmember("z", -500)) == 500
    assert rr.zrandmember("nope") is None
    seen = dict(pairs(list(rr.zscan_iter("z", count=25))))
    assert seen == {b"m%d" % i: float(i) for i in range(300)}


def test_keyspace_and_transactions(rr: redis.Redis) -> None:
    rr.zadd("z", {"a": 1})
    assert rr.type("z") == b"zset"
    assert rr.scan(0, _type="zset")[1] == [b"z"]
    assert rr.copy("z", "c")
    rr.zadd("c", {"b": 2})
    assert rr.zcard("z") == 1
    pipe = rr.pipeline()  # the RQ / Celery pattern: ZADD inside MULTI
    pipe.zadd("z", {"b": 2})
    pipe.zrange("z", 0, -1)
    assert pipe.execute() == [1, [b"a", b"b"]]


# -- blocking pops ---------------------------------------------------------------------------


@pytest.fixture
def conns(sluice: ThreadedServer, rr: redis.Redis) -> Iterator[Callable[[], Conn]]:
    made: list[Conn] = []

    def make() -> Conn:
        c = Conn(sluice.port, protocol_of(rr))
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()
    wait_blocked(rr, 0)


def _triple(key: str, member: str, score: str, protocol: int) -> bytes:
    double = f",{score}\r\n".encode() if protocol == 3 else encode(score)[4:]
    return b"*3\r\n" + encode(key)[4:] + encode(member)[4:] + double


def test_bzpop_serves_the_first_blocked_first(rr: redis.Redis,
                                               conns: Callable[[], Conn]) -> None:
    proto = protocol_of(rr)
    waiters = [conns() for _ in range(3)]
    for i, w in enumerate(waiters):
        w.send(("BZPOPMIN", "q", "other", "0"))
        wait_blocked(rr, i + 1)
    assert rr.zadd("q", {"a": 1, "b": 2, "c": 3}) == 3  # one write serves all three, FIFO
    assert [w.read() for w in waiters] == [_triple("q", "a", "1", proto),
                                           _triple("q", "b", "2", proto),
                                           _triple("q", "c", "3", proto)]
    assert rr.exists("q") == 0


def test_bzmpop_and_bzpopmax(rr: redis.Redis, conns: Callable[[], Conn]) -> None:
    a, b = conns(), conns()
    a.send(("BZMPOP", "0", "2", "x", "y", "MAX", "COUNT", "2"))
    wait_blocked(rr, 1)
    b.send(("BZPOPMAX", "y", "0"))
    wait_blocked(rr, 2)
    rr.zadd("y", {"m1": 1, "m2": 2, "m3": 3})
    proto = protocol_of(rr)
    d3, d2 = (b",3\r\n", b",2\r\n") if proto == 3 else (b"$1\r\n3\r\n", b"$1\r\n2\r\n")
    assert a.read() == (b"*2\r\n$1\r\ny\r\n*2\r\n*2\r\n$2\r\nm3\r\n" + d3
                        + b"*2\r\n$2\r\nm2\r\n" + d2)
    assert b.read() == _triple("y", "m1", "1", proto)


def test_a_list_push_does_not_serve_a_zset_waiter(rr: redis.Redis,
                                                  conns: Callable[[], Conn]) -> None:
    a = conns()
    a.send(("BZPOPMIN", "k", "0"))
    wait_blocked(rr, 1)
    rr.rpush("k", "x")  # wrong type: the waiter stays, first in line
    rr.delete("k")
    rr.zadd("k", {"m": 5})
    assert a.read() == _triple("k", "m", "5", protocol_of(rr))


def test_timeout_unblock_and_multi(rr: redis.Redis, conns: Callable[[], Conn]) -> None:
    proto = protocol_of(rr)
    a, control = conns(), conns()
    assert a.call("BZPOPMIN", "k", "0.05") == null_array(proto)
    a_id = a.client_id()
    a.send(("BZMPOP", "0", "1", "k", "MIN"))
    wait_blocked(rr, 1)
    assert control.call("CLIENT", "UNBLOCK", a_id) == b":1\r\n"
    assert a.read() == null_array(proto)
    a.send(("BZPOPMAX", "k", "0"))
    wait_blocked(rr, 1)
    assert control.call("CLIENT", "UNBLOCK", a_id, "ERROR") == b":1\r\n"
    assert a.read() == b"-" + errors.UNBLOCKED.encode() + b"\r\n"
    a.call("MULTI")
    a.call("BZPOPMIN", "k", "0")
    assert a.call("EXEC") == b"*1\r\n" + null_array(proto)  # MULTI never blocks


def test_bad_timeouts_and_arguments(rr: redis.Redis) -> None:
    with pytest.raises(redis.ResponseError, match=err(errors.TIMEOUT_NOT_FLOAT)):
        rr.execute_command("BZPOPMIN", "k", "abc")
    with pytest.raises(redis.ResponseError, match=err(errors.NOT_POSITIVE_TIMEOUT)):
        rr.execute_command("BZMPOP", "-1", "1", "k", "MIN")
    with pytest.raises(redis.ResponseError, match=err(errors.NUMKEYS_POSITIVE)):
        rr.execute_command("BZMPOP", "abc", "0", "k", "MIN")  # numkeys is checked first
