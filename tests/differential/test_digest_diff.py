"""DEBUG DIGEST and DIGEST-VALUE against redis-server 8.6.3: the same data, the same 40 hex
digits, for every type and encoding, TTLs on keys and on hash fields, several databases,
and an empty data set (Redis's tests compare digests before and after a reload or rewrite,
so they must be a function of the data alone)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import ProcessServer, ThreadedServer, require_redis_server

pytestmark = pytest.mark.differential

_CONFIG = [("enable-debug-command", "yes")]


@pytest.fixture(scope="module")
def pair() -> Iterator[tuple[redis.Redis, redis.Redis]]:
    require_redis_server()
    ours = ThreadedServer([" ".join(kv) for kv in _CONFIG]).start()
    theirs = ProcessServer("redis", [f"--{k}" if i == 0 else v
                                     for k, v in _CONFIG for i in (0, 1)]).start()
    clients = ours.client(), theirs.client()
    yield clients
    for c in clients:
        c.close()
    ours.stop()
    theirs.stop()


def _same(pair: tuple[redis.Redis, redis.Redis], *command: object) -> object:
    ours, theirs = (c.execute_command(*command) for c in pair)
    assert ours == theirs, (command, ours, theirs)
    return ours


def _both(pair: tuple[redis.Redis, redis.Redis], *command: object) -> None:
    for c in pair:
        c.execute_command(*command)


def test_every_type_and_encoding_digests_as_redis(pair: tuple[redis.Redis, redis.Redis]) -> None:
    _both(pair, "FLUSHALL")
    assert _same(pair, "DEBUG", "DIGEST") == b"0" * 40
    script = [
        ["SET", "str", "hello"], ["SET", "int", "12345"], ["SET", "ttl", "x", "EX", "100"],
        ["APPEND", "raw", "abc"], ["SETBIT", "bits", "100", "1"], ["PFADD", "hll", "a", "b"],
        ["RPUSH", "small", "a", "b", "1"], ["RPUSH", "big", *[str(i) * 10 for i in range(200)]],
        ["SADD", "ints", "1", "2", "-3"], ["SADD", "lp", "a", "b", "1"],
        ["SADD", "ht", *[f"m{i}" for i in range(300)]],
        ["ZADD", "zlp", "1.5", "a", "-0", "b", "1e15", "c", "inf", "d", "0.1", "e"],
        ["ZADD", "zsk", *[x for i in range(200) for x in (str(i / 7), f"m{i}")]],
        ["HSET", "hlp", "f", "v", "g", "w"], ["HSET", "hht", *[f"f{i}" for i in range(600)]],
        ["HSET", "hex", "a", "1", "b", "2"], ["HEXPIRE", "hex", "1000", "FIELDS", "1", "a"],
        ["XADD", "st", "1-1", "a", "b"], ["XADD", "st", "5-0", "f", "v", "g", "w"],
        ["XADD", "st", "18446744073709551615-3", "x", "y"], ["XDEL", "st", "5-0"],
        ["XGROUP", "CREATE", "st", "g", "0"],
        ["SELECT", "5"], ["SET", "str", "hello"], ["SELECT", "0"],
    ]
    for command in script:
        _both(pair, *command)
    _same(pair, "DEBUG", "DIGEST")
    keys = ["str", "int", "ttl", "raw", "bits", "hll", "small", "big", "ints", "lp", "ht",
            "zlp", "zsk", "hlp", "hht", "hex", "st", "nosuch"]
    digests = _same(pair, "DEBUG", "DIGEST-VALUE", *keys)
    assert isinstance(digests, list) and digests[-1] == b"0" * 40
    assert len(set(digests)) == len(keys)  # the values differ, so do their digests


def test_order_matters_where_the_type_has_one(pair: tuple[redis.Redis, redis.Redis]) -> None:
    for c in pair:
        c.flushall()
        c.rpush("a", "x", "y")
        c.rpush("b", "y", "x")
        c.sadd("c", "x", "y")
        c.sadd("d", "y", "x")
    ours = _same(pair, "DEBUG", "DIGEST-VALUE", "a", "b", "c", "d")
    assert isinstance(ours, list)
    assert ours[0] != ours[1] and ours[2] == ours[3]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["SET", "RPUSH", "SADD", "ZADD", "HSET", "XADD"]),
                          st.text("abc1", min_size=1, max_size=3),
                          st.lists(st.text("abcxyz012", max_size=4), min_size=1, max_size=4)),
                max_size=12))
def test_generated_data_sets_digest_as_redis(pair: tuple[redis.Redis, redis.Redis],
                                             ops: list[tuple[str, str, list[str]]]) -> None:
    for c in pair:
        c.flushall()
    for n, (name, key, values) in enumerate(ops, 1):
        key = f"{name}:{key}"  # one type per key
        if name == "SET":
            command: list[object] = [name, key, values[0]]
        elif name == "ZADD":
            command = [name, key, *[x for i, v in enumerate(values) for x in (i / 3, v)]]
        elif name == "HSET":
            command = [name, key, *[x for v in values for x in (v, v[::-1])]]
        elif name == "XADD":  # IDs given: each server's clock would make its own
            command = [name, key, f"{n}-0", *[x for v in values for x in (v, v)]]
        else:
            command = [name, key, *values]
        _same(pair, *command)
    _same(pair, "DEBUG", "DIGEST")
