"""String commands through redis-py over a real socket, in RESP2 and RESP3 (``rr``), plus
expiry on virtual time (``make_server(clock=FakeClock())``) and what is logged to the AOF."""

from __future__ import annotations

import re
from typing import Any

import pytest
import redis

from sluice.commands import errors
from sluice.storage.keyspace import FakeClock
from tests.support import RecordingAof, ThreadedServer

NOW = 1_700_000_000_000


def _m(message: str) -> str:
    """redis-py drops the ``ERR `` code from messages; match the rest literally."""
    return re.escape(message.removeprefix("ERR "))


@pytest.fixture
def timed(make_server):  # type: ignore[no-untyped-def]
    """(client, clock) of a server running on virtual time."""
    clock = FakeClock(NOW)
    server = make_server(clock=clock)
    client = server.client()
    yield client, clock
    client.close()


def test_set_get_roundtrip(rr: redis.Redis) -> None:
    assert rr.get("k") is None
    assert rr.set("k", "v") is True
    assert rr.get("k") == b"v"
    binary = bytes(range(256)) * 5
    assert rr.set("bin", binary)
    assert rr.get("bin") == binary
    assert rr.set("empty", "") and rr.get("empty") == b""


def test_large_value(rr: redis.Redis) -> None:
    value = b"x" * (3 * 1024 * 1024)
    rr.set("big", value)
    assert rr.get("big") == value
    assert rr.strlen("big") == len(value)
    assert rr.object("encoding", "big") == b"raw"


def test_set_options(rr: redis.Redis) -> None:
    assert rr.set("k", "1", nx=True) is True
    assert rr.set("k", "2", nx=True) is None
    assert rr.set("k", "3", xx=True) is True
    assert rr.set("missing", "3", xx=True) is None
    assert rr.set("k", "4", get=True) == b"3"
    assert rr.set("k", "5", nx=True, get=True) == b"4"  # NX failed, old value returned
    assert rr.get("k") == b"4"
    assert rr.set("new", "v", nx=True, get=True) is None
    assert rr.get("new") == b"v"
    with pytest.raises(redis.ResponseError, match=_m(errors.SYNTAX)):
        rr.execute_command("SET", "k", "v", "NX", "XX")
    with pytest.raises(redis.ResponseError, match="invalid expire time in 'set' command"):
        rr.set("k", "v", ex=0)


def test_set_get_on_wrong_type_fails_and_keeps_the_value(rr: redis.Redis) -> None:
    rr.rpush("l", "a")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        rr.set("l", "v", get=True)
    assert rr.type("l") == b"list"
    assert rr.set("l", "v") is True  # plain SET overwrites any type
    assert rr.get("l") == b"v"


def test_expiry_options_on_virtual_time(timed: tuple[redis.Redis, FakeClock]) -> None:
    r, clock = timed
    r.set("ex", "v", ex=10)
    r.set("px", "v", px=1500)
    r.set("exat", "v", exat=NOW // 1000 + 20)
    r.set("pxat", "v", pxat=NOW + 2500)
    assert r.ttl("ex") == 10 and r.pttl("px") == 1500
    assert r.pexpiretime("pxat") == NOW + 2500 and r.expiretime("exat") == NOW // 1000 + 20
    clock.advance(1500)
    assert r.get("px") is None and r.exists("px") == 0
    assert r.pttl("ex") == 8500
    r.set("ex", "w", keepttl=True)
    assert r.pttl("ex") == 8500
    r.set("ex", "w")
    assert r.ttl("ex") == -1
    clock.advance(1000)
    assert r.get("pxat") is None
    r.execute_command("SETEX", "se", 5, "v")
    r.execute_command("PSETEX", "pse", 5000, "v")
    assert r.pttl("se") == 5000 == r.pttl("pse")
    clock.advance(5000)
    assert r.mget("se", "pse", "exat") == [None, None, b"v"]


def test_getex(timed: tuple[redis.Redis, FakeClock]) -> None:
    r, clock = timed
    assert r.getex("nope", ex=10) is None
    r.set("k", "v")
    assert r.getex("k", px=2000) == b"v" and r.pttl("k") == 2000
    assert r.getex("k", persist=True) == b"v" and r.ttl("k") == -1
    assert r.getex("k", exat=NOW // 1000 + 3) == b"v" and r.pttl("k") == 3000
    assert r.getex("k") == b"v" and r.pttl("k") == 3000
    assert r.getex("k", pxat=NOW - 1) == b"v"  # a deadline in the past deletes the key
    assert r.exists("k") == 0
    r.set("k", "v")
    with pytest.raises(redis.ResponseError, match="invalid expire time in 'getex' command"):
        r.getex("k", ex=-1)
    with pytest.raises(redis.ResponseError, match=_m(errors.SYNTAX)):
        r.execute_command("GETEX", "k", "PERSIST", "EX", "1")


def test_getset_getdel(rr: redis.Redis) -> None:
    assert rr.getset("k", "1") is None
    assert rr.getset("k", "2") == b"1"
    assert rr.getdel("k") == b"2"
    assert rr.getdel("k") is None and rr.exists("k") == 0


def test_mset_mget_msetnx(rr: redis.Redis) -> None:
    assert rr.mset({"a": 1, "b": 2}) is True
    rr.rpush("l", "x")
    assert rr.mget("a", "b", "c", "l") == [b"1", b"2", None, None]
    assert rr.msetnx({"c": 3, "a": 9}) is False
    assert rr.get("c") is None
    assert rr.msetnx({"c": 3, "d": 4}) is True
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'mset'"):
        rr.execute_command("MSET", "a", "1", "b")


def test_counters(rr: redis.Redis) -> None:
    assert rr.incr("c") == 1
    assert rr.incrby("c", 41) == 42
    assert rr.decr("c") == 41
    assert rr.decrby("c", 50) == -9
    rr.set("c", 2**63 - 1)
    with pytest.raises(redis.ResponseError, match=_m(errors.INCR_OVERFLOW)):
        rr.incr("c")
    with pytest.raises(redis.ResponseError, match=_m(errors.DECR_OVERFLOW)):
        rr.decrby("c", -(2**63))
    rr.set("s", "abc")
    with pytest.raises(redis.ResponseError, match=_m(errors.NOT_INTEGER)):
        rr.incr("s")
    rr.rpush("l", "x")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        rr.incr("l")


def test_counters_keep_the_ttl(timed: tuple[redis.Redis, FakeClock]) -> None:
    r, clock = timed
    r.set("c", 1, px=1000)
    r.incr("c")
    r.incrbyfloat("c", 0.5)
    r.append("c", "0")
    r.setrange("c", 0, "3")
    assert r.pttl("c") == 1000 and r.get("c") == b"3.50"
    clock.advance(1000)
    assert r.get("c") is None
    assert r.incr("c") == 1 and r.ttl("c") == -1


@pytest.mark.parametrize("start,incr,expected", [
    ("10.50", "0.1", b"10.6"), ("5.0e3", "2.0e2", b"5200"), ("0", "3", b"3"),
    ("1", "-1", b"0"), ("0.1", "0.2", b"0.3"), ("3.0", "1.5e-3", b"3.0015"),
    ("1", "0x1p-2", b"1.25"), ("-1.5", "0.5", b"-1"), ("1e-17", "0", b"0.00000000000000001"),
])
def test_incrbyfloat_formats_like_redis(rr: redis.Redis, start: str, incr: str, expected: bytes) -> None:
    rr.set("f", start)
    rr.execute_command("INCRBYFLOAT", "f", incr)  # redis-py turns the reply into a float
    assert rr.get("f") == expected


def test_incrbyfloat_errors(rr: redis.Redis) -> None:
    rr.set("f", "1")
    with pytest.raises(redis.ResponseError, match=_m(errors.INCR_NAN)):
        rr.execute_command("INCRBYFLOAT", "f", "inf")
    with pytest.raises(redis.ResponseError, match=_m(errors.NOT_FLOAT)):
        rr.execute_command("INCRBYFLOAT", "f", "nan")
    rr.set("f", "one")
    with pytest.raises(redis.ResponseError, match=_m(errors.NOT_FLOAT)):
        rr.incrbyfloat("f", 1)


def test_append_strlen_ranges(rr: redis.Redis) -> None:
    assert rr.append("k", "Hello") == 5
    assert rr.append("k", " World") == 11
    assert rr.strlen("k") == 11 and rr.strlen("nope") == 0
    assert rr.getrange("k", 0, 4) == b"Hello"
    assert rr.getrange("k", -5, -1) == b"World"
    assert rr.getrange("k", 0, -100) == b"H"  # 8.6.3 clamps the end to the first byte
    assert rr.setrange("k", 6, "Redis") == 11
    assert rr.get("k") == b"Hello Redis"
    assert rr.setrange("pad", 3, "x") == 4 and rr.get("pad") == b"\x00\x00\x00x"
    with pytest.raises(redis.ResponseError, match=_m(errors.OFFSET_OUT_OF_RANGE)):
        rr.setrange("k", -1, "x")


def test_string_size_limit(make_server) -> None:  # type: ignore[no-untyped-def]
    r = make_server("proto-max-bulk-len 1mb").client()
    assert r.setrange("k", 1024 * 1024 - 1, "x") == 1024 * 1024
    with pytest.raises(redis.ResponseError, match=r"string exceeds maximum allowed size \(proto-max-bulk-len\)"):
        r.append("k", "y")
    with pytest.raises(redis.ResponseError, match="proto-max-bulk-len"):
        r.setrange("k2", 1024 * 1024, "x")
    assert r.exists("k2") == 0


def test_lcs(rr: redis.Redis) -> None:
    rr.mset({"a": "ohmytext", "b": "mynewtext"})
    assert rr.lcs("a", "b") == b"mytext"
    assert rr.lcs("a", "b", len=True) == 6
    res = rr.lcs("a", "b", idx=True, minmatchlen=4, withmatchlen=True)
    matches = res[b"matches"] if isinstance(res, dict) else res[1]
    assert matches == [[[4, 7], [5, 8], 4]]


def test_object_encodings(rr: redis.Redis) -> None:
    rr.set("i", "12345")
    rr.set("e", "hello")
    rr.set("r", "x" * 100)
    rr.set("a", "hi")
    rr.append("a", "!")
    rr.incrbyfloat("f", 2)
    assert [rr.object("encoding", k) for k in ("i", "e", "r", "a", "f")] == [
        b"int", b"embstr", b"raw", b"raw", b"embstr"]
    rr.set("a", "hi")  # a fresh SET forgets the raw encoding
    assert rr.object("encoding", "a") == b"embstr"
    rr.copy("i", "i2")
    rr.set("n", "5")
    rr.copy("n", "n2")
    assert rr.object("encoding", "i2") == b"int"
    # Redis 8 copies even shared small integers into the key's own object.
    assert rr.object("refcount", "n") == 1 and rr.object("refcount", "n2") == 1
    # Redis 8 embeds the key too: a value stays embstr only if key + value fit a cache line.
    rr.set("k", "x" * 40)
    rr.set("kk", "x" * 40)
    assert [rr.object("encoding", k) for k in ("k", "kk")] == [b"embstr", b"raw"]
    rr.rename("k", "kkk")  # too long a key now
    rr.rename("kk", "m")  # raw stays raw
    assert [rr.object("encoding", k) for k in ("kkk", "m")] == [b"raw", b"raw"]


def test_propagation_is_deterministic(make_server) -> None:  # type: ignore[no-untyped-def]
    """Relative times are logged as absolute ones, INCRBYFLOAT as SET ... KEEPTTL, SET GET
    without GET: replaying the log gives the same state whenever it runs (as Redis does)."""
    clock = FakeClock(NOW)
    server: ThreadedServer = make_server(clock=clock)
    log = RecordingAof()
    server.call(lambda: setattr(server.server, "aof", log))
    r = server.client()
    r.set("a", "1", ex=10)
    r.incrbyfloat("b", "1.5")
    r.set("a", "2", get=True)
    r.getset("a", "3")
    r.expire("a", 5)
    r.getex("a", px=100)
    r.getex("a", persist=True)
    r.getdel("a")
    r.execute_command("SETEX", "c", 3, "v")
    r.expire("c", -1)
    r.get("b")  # reads are not logged
    pipe = r.pipeline()
    pipe.incr("n")
    pipe.incr("n")
    pipe.execute()
    server.call(lambda: setattr(server.server, "aof", None))
    expected: list[Any] = [
        [b"SET", b"a", b"1", b"PXAT", b"%d" % (NOW + 10_000)],
        [b"SET", b"b", b"1.5", b"KEEPTTL"],
        [b"SET", b"a", b"2"],
        [b"SET", b"a", b"3"],
        [b"PEXPIREAT", b"a", b"%d" % (NOW + 5000)],
        [b"PEXPIREAT", b"a", b"%d" % (NOW + 100)],
        [b"PERSIST", b"a"],
        [b"DEL", b"a"],
        [b"SET", b"c", b"v", b"PXAT", b"%d" % (NOW + 3000)],
        [b"DEL", b"c"],
        [b"MULTI"], [b"INCRBY", b"n", b"1"], [b"INCRBY", b"n", b"1"], [b"EXEC"],
    ]
    assert log.logged == expected


def test_redis_8_4_string_commands_propagate_their_effect(make_server) -> None:  # type: ignore[no-untyped-def]
    """SET ... IFEQ is logged as the plain SET it became, DELEX ... IFEQ as DEL, MSETEX ... EX
    with its PXAT deadline; conditions that do not hold log nothing."""
    clock = FakeClock(NOW)
    server: ThreadedServer = make_server(clock=clock)
    log = RecordingAof()
    server.call(lambda: setattr(server.server, "aof", log))
    r = server.client()
    r.set("k", "v")
    assert r.execute_command("SET", "k", "w", "IFEQ", "v") is True
    assert r.execute_command("SET", "k", "x", "IFEQ", "v") is None  # no longer v
    digest = r.execute_command("DIGEST", "k")
    assert r.execute_command("DELEX", "k", "IFDNE", digest) == 0
    assert r.execute_command("DELEX", "k", "IFDEQ", digest.upper()) == 1  # case-insensitive
    assert r.execute_command("MSETEX", 2, "a", 1, "b", 2, "EX", 10) == 1
    assert r.execute_command("MSETEX", 1, "a", 3, "NX") == 0
    assert r.execute_command("MSETEX", 1, "a", 3, "XX", "KEEPTTL") == 1
    assert r.pttl("a") == 10_000
    server.call(lambda: setattr(server.server, "aof", None))
    assert log.logged == [
        [b"SET", b"k", b"v"],
        [b"SET", b"k", b"w"],
        [b"DEL", b"k"],
        [b"MSETEX", b"2", b"a", b"1", b"b", b"2", b"PXAT", b"%d" % (NOW + 10_000)],
        [b"MSETEX", b"1", b"a", b"3", b"XX", b"KEEPTTL"],
    ]
