"""Hashes against redis-server 8.6.3: the same commands, the exact same reply bytes.

Fixed sequences cover every hash command, option and error path, in RESP2 and RESP3: the
listpack, listpack-ex and hashtable encodings and the conversions between them (with small
``hash-max-listpack-*`` settings, put back afterwards), the order in which a listpack-ex keeps
fields with TTLs (replies list fields in it), field expiry with deadlines in the past (the
field goes at once) or far in the future (nothing depends on when each server runs a
command), and the dirty counter (INFO ``rdb_changes_since_last_save``).

Replies whose order is a hashtable's (HGETALL, HKEYS, HVALS, HSCAN of a hashtable) are not
comparable byte for byte: those steps compare the sorted elements instead (``SORTED``).
"""

from __future__ import annotations

import re
from typing import Any

import hiredis
import pytest

from tests.support import RawClient

pytestmark = [pytest.mark.differential, pytest.mark.timeout(120)]

SORTED = "sorted"  # marks a step whose reply is compared as a sorted flat list

FAR = "4102444800000"  # 2100-01-01 in ms
FAR2 = "4102444900000"
FAR_S = "4102444800"

Seq = list[tuple[Any, ...]]

SEQUENCES: dict[str, Seq] = {
    "basics": [
        ("HSET", "h", "a", "1"), ("HSET", "h", "b", "2", "c", "3"), ("HSET", "h", "a", "10"),
        ("HGET", "h", "a"), ("HGET", "h", "zz"), ("HGET", "nokey", "a"), ("HMGET", "h", "a", "x", "c"),
        ("HMGET", "nokey", "a", "b"), ("HGETALL", "h"), ("HKEYS", "h"), ("HVALS", "h"),
        ("HLEN", "h"), ("HLEN", "nokey"), ("HEXISTS", "h", "a"), ("HEXISTS", "h", "q"),
        ("HEXISTS", "nokey", "a"), ("HSTRLEN", "h", "a"), ("HSTRLEN", "h", "q"),
        ("HSTRLEN", "nokey", "a"), ("HGETALL", "nokey"), ("HKEYS", "nokey"), ("HVALS", "nokey"),
        ("HDEL", "h", "a", "q", "b"), ("HGETALL", "h"), ("HDEL", "h", "c"), ("EXISTS", "h"),
        ("HDEL", "nokey", "a"), ("TYPE", "h"),
        ("HMSET", "m", "x", "1", "y", "2"), ("HMSET", "m", "x", "3"), ("HGETALL", "m"),
        ("HSETNX", "m", "x", "9"), ("HSETNX", "m", "z", "9"), ("HSETNX", "new", "f", "v"),
        ("HGETALL", "m"), ("HGETALL", "new"), ("TYPE", "m"), ("OBJECT", "ENCODING", "m"),
    ],
    "arity_and_wrongtype": [
        ("HSET", "h", "a"), ("HSET", "h", "a", "1", "b"), ("HMSET", "h", "a"), ("HSET", "h"),
        ("HGET", "h"), ("HSETNX", "h", "a"), ("HDEL", "h"), ("HMGET", "h"),
        ("SET", "s", "x"), ("HSET", "s", "a", "1"), ("HGET", "s", "a"), ("HMGET", "s", "a"),
        ("HGETALL", "s"), ("HLEN", "s"), ("HDEL", "s", "a"), ("HEXISTS", "s", "a"),
        ("HINCRBY", "s", "a", "1"), ("HINCRBYFLOAT", "s", "a", "1"), ("HSTRLEN", "s", "a"),
        ("HRANDFIELD", "s"), ("HRANDFIELD", "s", "2"), ("HSCAN", "s", "0"), ("HSETNX", "s", "a", "b"),
        ("HKEYS", "s"), ("HVALS", "s"), ("HMSET", "s", "a", "1"),
        ("HSET", "h", "a", "1"), ("GET", "h"), ("LPUSH", "h", "x"), ("INCR", "h"),
    ],
    "incr": [
        ("HINCRBY", "h", "n", "5"), ("HINCRBY", "h", "n", "-7"), ("HINCRBY", "h", "n", "x"),
        ("HINCRBY", "h", "n", "1.5"), ("HINCRBY", "h", "n", "9223372036854775807"),
        ("HSET", "h", "big", "9223372036854775807"), ("HINCRBY", "h", "big", "1"),
        ("HSET", "h", "small", "-9223372036854775808"), ("HINCRBY", "h", "small", "-1"),
        ("HSET", "h", "s", "abc"), ("HINCRBY", "h", "s", "1"), ("HSET", "h", "sp", " 1"),
        ("HINCRBY", "h", "sp", "1"), ("HSET", "h", "z", "007"), ("HINCRBY", "h", "z", "1"),
        ("HINCRBYFLOAT", "h", "f", "1.5"), ("HINCRBYFLOAT", "h", "f", "0.1"),
        ("HINCRBYFLOAT", "h", "f", "-1.6"), ("HINCRBYFLOAT", "h", "f", "1e3"),
        ("HINCRBYFLOAT", "h", "f", "nan"), ("HINCRBYFLOAT", "h", "f", "inf"),
        ("HINCRBYFLOAT", "h", "f", "x"), ("HINCRBYFLOAT", "h", "s", "1"),
        ("HINCRBYFLOAT", "h", "n", "0.5"), ("HINCRBYFLOAT", "h", "g", "5.0e3"),
        ("HINCRBYFLOAT", "h", "g", "-5000"), ("HSET", "h", "i", "inf"),
        ("HINCRBYFLOAT", "h", "i", "1"), ("HINCRBYFLOAT", "h", "e", "1.7976931348623157e308"),
        ("HINCRBYFLOAT", "h", "e", "1.7976931348623157e308"), ("OBJECT", "ENCODING", "h"),
        (SORTED, "HGETALL", "h"),
        ("HINCRBY", "fresh", "a", "x"), ("EXISTS", "fresh"), ("HINCRBYFLOAT", "fresh", "a", "x"),
        ("EXISTS", "fresh"), ("HINCRBYFLOAT", "fresh", "a", "inf"), ("EXISTS", "fresh"),
        ("HINCRBYFLOAT", "fresh", "a", "3"), ("OBJECT", "ENCODING", "fresh"),
    ],
    "encodings": [
        ("CONFIG", "SET", "hash-max-listpack-entries", "4"),
        ("CONFIG", "SET", "hash-max-listpack-value", "8"),
        ("HSET", "h", "a", "1", "b", "2", "c", "3", "d", "4"), ("OBJECT", "ENCODING", "h"),
        ("HSET", "h", "e", "5"), ("OBJECT", "ENCODING", "h"), ("HDEL", "h", "a", "b", "c"),
        ("OBJECT", "ENCODING", "h"),
        ("HSET", "v", "a", "12345678"), ("OBJECT", "ENCODING", "v"),
        ("HSET", "v", "a", "123456789"), ("OBJECT", "ENCODING", "v"),
        ("HSET", "w", "123456789", "x"), ("OBJECT", "ENCODING", "w"),
        # five pairs given, three distinct: Redis converts on the count given
        ("HSET", "d", "a", "1", "a", "2", "a", "3", "b", "4", "c", "5"), ("OBJECT", "ENCODING", "d"),
        ("HSET", "i", "a", "1"), ("HINCRBYFLOAT", "i", "a", "0.123456789"),
        ("OBJECT", "ENCODING", "i"), ("HSETNX", "n", "k", "123456789"), ("OBJECT", "ENCODING", "n"),
        ("CONFIG", "SET", "hash-max-ziplist-entries", "0"), ("HSET", "z", "a", "1"),
        ("OBJECT", "ENCODING", "z"), (SORTED, "CONFIG", "GET", "hash-max-*"),
    ],
    "listpack_order": [
        ("HSET", "h", "c", "3", "a", "1", "b", "2"), ("HSET", "h", "a", "one"), ("HGETALL", "h"),
        ("HDEL", "h", "c"), ("HSET", "h", "c", "3"), ("HKEYS", "h"), ("HVALS", "h"),
        ("HSCAN", "h", "0"), ("HSCAN", "h", "0", "NOVALUES"), ("HSCAN", "h", "0", "MATCH", "[ab]"),
        ("HSCAN", "h", "0", "MATCH", "*", "COUNT", "1"), ("HRANDFIELD", "h", "3"),
        ("HRANDFIELD", "h", "10", "WITHVALUES"), ("HRANDFIELD", "h", "0"),
        ("HRANDFIELD", "h", "0", "WITHVALUES"), ("HRANDFIELD", "nokey"),
        ("HRANDFIELD", "nokey", "5"), ("HRANDFIELD", "nokey", "-5", "WITHVALUES"),
    ],
    "hrandfield_errors": [
        ("HSET", "h", "a", "1"), ("HRANDFIELD", "h", "x"), ("HRANDFIELD", "h", "1.5"),
        ("HRANDFIELD", "h", "-9223372036854775808"), ("HRANDFIELD", "h", "1", "WITHVALUE"),
        ("HRANDFIELD", "h", "1", "withvalues", "x"), ("HRANDFIELD", "h", "1", "WITHVALUES"),
        ("HRANDFIELD", "h", "4611686018427387904", "WITHVALUES"),
        ("HRANDFIELD", "h", "-4611686018427387904", "WITHVALUES"),
        ("HRANDFIELD", "h", "-3"), ("HRANDFIELD", "h", "-2", "WITHVALUES"),
        ("HRANDFIELD", "nokey", "x"), ("HRANDFIELD", "nokey", "1", "foo"),
        ("HRANDFIELD", "h", "9223372036854775808"),
    ],
    "hscan_errors": [
        ("HSET", "h", "a", "1"), ("HSCAN", "h", "x"), ("HSCAN", "h", "-1"),
        ("HSCAN", "h", "0", "COUNT", "0"), ("HSCAN", "h", "0", "COUNT", "x"),
        ("HSCAN", "h", "0", "MATCH"), ("HSCAN", "h", "0", "TYPE", "hash"),
        ("HSCAN", "h", "0", "foo"), ("HSCAN", "nokey", "0", "foo"),
        ("HSCAN", "nokey", "x"), ("HSCAN", "h", "18446744073709551615"),
        ("SCAN", "0", "NOVALUES"), ("HSCAN", "h", "0", "NOVALUES", "NOVALUES"),
    ],
    "hashtable_replies": [
        ("CONFIG", "SET", "hash-max-listpack-entries", "2"),
        ("HSET", "h", "a", "1", "b", "2", "c", "3", "d", "4"), ("OBJECT", "ENCODING", "h"),
        (SORTED, "HGETALL", "h"), (SORTED, "HKEYS", "h"), (SORTED, "HVALS", "h"),
        ("HLEN", "h"), ("HMGET", "h", "d", "a", "q"), ("HDEL", "h", "a", "b", "c", "d"),
        ("EXISTS", "h"), ("HRANDFIELD", "h", "5"),
    ],
    "field_ttl_listpack_ex": [
        ("HSET", "h", "a", "1", "b", "2", "c", "3", "d", "4"),
        ("HPEXPIREAT", "h", FAR2, "FIELDS", "1", "c"), ("OBJECT", "ENCODING", "h"),
        ("HGETALL", "h"), ("HPEXPIREAT", "h", FAR, "FIELDS", "2", "d", "zz"), ("HGETALL", "h"),
        # equal deadlines: the field set later goes before the others
        ("HPEXPIREAT", "h", FAR, "FIELDS", "1", "a"), ("HGETALL", "h"),
        ("HPEXPIREAT", "h", FAR, "FIELDS", "1", "d"), ("HGETALL", "h"),
        ("HPEXPIRETIME", "h", "FIELDS", "5", "a", "b", "c", "d", "zz"),
        ("HEXPIRETIME", "h", "FIELDS", "2", "a", "b"), ("HTTL", "nokey", "FIELDS", "1", "a"),
        ("HPERSIST", "h", "FIELDS", "3", "a", "b", "zz"), ("HGETALL", "h"),
        ("HSET", "h", "d", "four"), ("HGETALL", "h"), ("HPEXPIRETIME", "h", "FIELDS", "1", "d"),
        ("HSETEX", "h", "PXAT", FAR, "FIELDS", "1", "e", "5"), ("HGETALL", "h"),
        ("HSETEX", "h", "KEEPTTL", "FIELDS", "1", "e", "55"), ("HGETALL", "h"),
        ("HPEXPIRETIME", "h", "FIELDS", "1", "e"), ("HSCAN", "h", "0"),
        ("HINCRBY", "h", "c", "1"), ("HPEXPIRETIME", "h", "FIELDS", "1", "c"),
        ("HRANDFIELD", "h", "100", "WITHVALUES"), ("HPERSIST", "h", "FIELDS", "1", "c"),
        ("HPERSIST", "h", "FIELDS", "1", "e"), ("OBJECT", "ENCODING", "h"), ("HGETALL", "h"),
        ("HSET", "plain", "a", "1"), ("HTTL", "plain", "FIELDS", "2", "a", "b"),
        ("HPERSIST", "plain", "FIELDS", "2", "a", "b"), ("OBJECT", "ENCODING", "plain"),
        ("HGETEX", "plain", "FIELDS", "1", "a"), ("OBJECT", "ENCODING", "plain"),
        ("HGETEX", "plain", "PERSIST", "FIELDS", "1", "a"), ("OBJECT", "ENCODING", "plain"),
    ],
    "field_ttl_conditions": [
        ("HSET", "h", "a", "1", "b", "2"), ("HPEXPIREAT", "h", FAR, "XX", "FIELDS", "1", "a"),
        ("HPEXPIREAT", "h", FAR, "GT", "FIELDS", "1", "a"),
        ("HPEXPIREAT", "h", FAR, "LT", "FIELDS", "1", "a"),
        ("HPEXPIREAT", "h", FAR, "NX", "FIELDS", "2", "a", "b"),
        ("HPEXPIREAT", "h", FAR2, "NX", "FIELDS", "1", "a"),
        ("HPEXPIREAT", "h", FAR2, "XX", "FIELDS", "1", "a"),
        ("HPEXPIREAT", "h", FAR, "GT", "FIELDS", "1", "a"),
        ("HPEXPIREAT", "h", FAR, "LT", "FIELDS", "1", "a"),
        ("HPEXPIREAT", "h", FAR2, "LT", "FIELDS", "1", "a"),
        ("HPEXPIREAT", "h", FAR2, "FIELDS", "1", "a", "GT"),
        ("HEXPIREAT", "h", FAR_S, "FIELDS", "1", "b"), ("HPEXPIRETIME", "h", "FIELDS", "2", "a", "b"),
        ("HEXPIRE", "h", "1000000", "FIELDS", "1", "b"), ("HTTL", "h", "FIELDS", "1", "b"),
        ("HPEXPIRE", "h", "100000000", "GT", "FIELDS", "1", "b"), ("HTTL", "h", "FIELDS", "1", "b"),
        ("HEXPIRE", "nokey", "10", "FIELDS", "2", "a", "b"),
    ],
    "field_ttl_past_deletes": [
        ("HSET", "h", "a", "1", "b", "2", "c", "3"), ("HPEXPIREAT", "h", "1", "FIELDS", "2", "a", "q"),
        ("HGETALL", "h"), ("HEXPIRE", "h", "0", "FIELDS", "1", "b"), ("HLEN", "h"),
        ("HEXPIREAT", "h", "1", "FIELDS", "1", "c"), ("EXISTS", "h"),
        ("HSET", "g", "a", "1", "b", "2"), ("HPEXPIREAT", "g", FAR, "FIELDS", "1", "a"),
        ("HPEXPIREAT", "g", "1", "NX", "FIELDS", "2", "a", "b"), ("HGETALL", "g"),
        ("HGETEX", "g", "PXAT", "1", "FIELDS", "2", "a", "b"), ("EXISTS", "g"),
        ("HSETEX", "k", "PXAT", "1", "FIELDS", "2", "a", "1", "b", "2"), ("EXISTS", "k"),
        ("HSET", "k", "x", "1"), ("HSETEX", "k", "EXAT", "1", "FIELDS", "1", "y", "2"),
        ("HGETALL", "k"), ("INFO", "keyspace"),
    ],
    "hgetdel": [
        ("HSET", "h", "a", "1", "b", "2", "c", "3"), ("HGETDEL", "h", "FIELDS", "2", "a", "zz"),
        ("HGETALL", "h"), ("HGETDEL", "h", "FIELDS", "2", "b", "c"), ("EXISTS", "h"),
        ("HGETDEL", "h", "FIELDS", "1", "a"), ("HGETDEL", "h", "fields", "1", "a"),
        ("HGETDEL", "h", "FIELD", "1", "a"), ("HGETDEL", "h", "FIELDS", "0", "a"),
        ("HGETDEL", "h", "FIELDS", "x", "a"), ("HGETDEL", "h", "FIELDS", "2", "a"),
        ("HGETDEL", "h", "FIELDS", "1", "a", "b"), ("HGETDEL", "h", "FIELDS"),
        ("SET", "s", "x"), ("HGETDEL", "s", "FIELDS", "1", "a"), ("HGETDEL", "s", "X", "1", "a"),
    ],
    "hgetex_hsetex": [
        ("HSET", "h", "a", "1", "b", "2"), ("HGETEX", "h", "FIELDS", "2", "a", "zz"),
        ("HGETEX", "h", "PXAT", FAR, "FIELDS", "2", "a", "zz"), ("HPEXPIRETIME", "h", "FIELDS", "1", "a"),
        ("HGETEX", "h", "EXAT", FAR_S, "FIELDS", "1", "b"), ("HGETALL", "h"),
        ("HGETEX", "h", "PERSIST", "FIELDS", "1", "a"), ("HGETEX", "h", "PERSIST", "FIELDS", "1", "a"),
        ("HGETEX", "h", "EX", "100", "FIELDS", "1", "a"), ("HTTL", "h", "FIELDS", "1", "a"),
        ("HGETEX", "nokey", "EX", "100", "FIELDS", "2", "a", "b"),
        ("HSETEX", "n", "FNX", "FIELDS", "2", "a", "1", "b", "2"),
        ("HSETEX", "n", "FNX", "FIELDS", "1", "a", "1"), ("HSETEX", "n", "FXX", "FIELDS", "2", "a", "9", "q", "1"),
        ("HSETEX", "n", "FXX", "PXAT", FAR, "FIELDS", "2", "a", "9", "b", "8"), ("HGETALL", "n"),
        ("HPEXPIRETIME", "n", "FIELDS", "2", "a", "b"), ("HSETEX", "n", "FIELDS", "1", "a", "0"),
        ("HPEXPIRETIME", "n", "FIELDS", "2", "a", "b"), ("HGETALL", "n"),
        ("HSETEX", "n", "EX", "1000", "FIELDS", "1", "c", "3"), ("HTTL", "n", "FIELDS", "1", "c"),
        ("HSETEX", "fxx", "FXX", "FIELDS", "1", "a", "1"), ("EXISTS", "fxx"),
        ("HSETEX", "n", "FIELDS", "1", "x", "1", "PX", "100000000"), ("HTTL", "n", "FIELDS", "1", "x"),
    ],
    "hfe_parse_errors": [
        ("HSET", "h", "a", "1"),
        ("HEXPIRE", "h", "x", "FIELDS", "1", "a"), ("HEXPIRE", "h", "-1", "FIELDS", "1", "a"),
        ("HEXPIRE", "h", "9223372036854775807", "FIELDS", "1", "a"),
        ("HEXPIRE", "h", "70368744177", "FIELDS", "1", "a"),
        ("HPEXPIREAT", "h", "70368744177664", "FIELDS", "1", "a"),
        ("HPEXPIREAT", "h", "70368744177663", "FIELDS", "1", "a"),
        ("HEXPIRE", "h", "10", "FIELDS", "0", "a"), ("HEXPIRE", "h", "10", "FIELDS", "x", "a"),
        ("HEXPIRE", "h", "10", "FIELDS", "2", "a"), ("HEXPIRE", "h", "10", "NX", "XX", "FIELDS", "1", "a"),
        ("HEXPIRE", "h", "10", "foo", "FIELDS", "1", "a"),
        ("HEXPIRE", "h", "10", "FIELDS", "1", "a", "FIELDS", "1", "a"), ("HEXPIRE", "h", "10", "NX"),
        ("HEXPIRE", "h", "10", "NX", "GT", "LT"), ("HEXPIRE", "h", "10", "NX", "NX", "FIELDS", "1", "a"),
        ("HEXPIRE", "h", "10", "FIELDS", "1"), ("HEXPIRE", "h", "10", "NX", "FIELDS", "1"),
        ("HEXPIRE", "h", "10", "FIELDS", "2147483648", "a"),
        ("HTTL", "h", "foo", "1", "a"), ("HTTL", "h", "FIELDS", "0", "a"), ("HTTL", "h", "FIELDS", "2", "a"),
        ("HTTL", "h", "FIELDS", "x", "a"), ("HPERSIST", "h", "FIELDS", "2", "a"),
        ("HGETEX", "h", "EX", "10", "PX", "10", "FIELDS", "1", "a"),
        ("HGETEX", "h", "KEEPTTL", "FIELDS", "1", "a"), ("HGETEX", "h", "PERSIST", "EX", "1", "FIELDS", "1", "a"),
        ("HGETEX", "h", "FIELDS", "0", "a"), ("HGETEX", "h", "foo"), ("HGETEX", "h", "EX", "-1", "FIELDS", "1", "a"),
        ("HGETEX", "h", "EX"), ("HGETEX", "h", "FIELDS", "1"), ("HGETEX", "h", "FIELDS", "2", "a"),
        ("HGETEX", "h", "FIELDS", "1", "a", "FIELDS", "1", "a"), ("HGETEX", "h", "FNX", "FIELDS", "1", "a"),
        ("HGETEX", "h", "EX", "10", "FIELDS", "1", "a", "EX"),
        ("HSETEX", "h", "PERSIST", "FIELDS", "1", "a", "b"),
        ("HSETEX", "h", "FNX", "FXX", "FIELDS", "1", "a", "b"), ("HSETEX", "h", "FIELDS", "2", "a", "b"),
        ("HSETEX", "h", "KEEPTTL", "EX", "1", "FIELDS", "1", "a", "b"),
        ("HSETEX", "h", "EX", "1", "KEEPTTL", "FIELDS", "1", "a", "b"),
        ("HSETEX", "h", "FIELDS", "1", "a", "b", "EX"), ("HSETEX", "h", "foo", "FIELDS", "1", "a", "b"),
        ("HSETEX", "h", "EX", "x", "FIELDS", "1", "a", "b"), ("HSETEX", "h", "EX", "1"),
        ("SET", "s", "x"), ("HEXPIRE", "s", "x", "FIELDS", "1", "a"), ("HTTL", "s", "x"),
        ("HGETEX", "s", "foo"), ("HSETEX", "s", "foo", "FIELDS", "1", "a", "b"),
        ("HSETEX", "s", "FIELDS", "1", "a", "b"), ("HPERSIST", "s", "x", "1", "a"),
    ],
    "keyspace_commands": [
        ("HSET", "h", "a", "1", "b", "2"), ("HPEXPIREAT", "h", FAR, "FIELDS", "1", "b"),
        ("RENAME", "h", "h2"), ("HGETALL", "h2"), ("HPEXPIRETIME", "h2", "FIELDS", "1", "b"),
        ("COPY", "h2", "h3"), ("HGETALL", "h3"), ("OBJECT", "ENCODING", "h3"),
        ("HPEXPIRETIME", "h3", "FIELDS", "2", "a", "b"), ("HSET", "h3", "c", "3"), ("HLEN", "h2"),
        ("MOVE", "h3", "1"), ("SELECT", "1"), ("HGETALL", "h3"), ("SELECT", "0"),
        ("SCAN", "0", "TYPE", "hash"), ("TYPE", "h2"), ("DEL", "h2"), ("EXISTS", "h2"),
        ("HSET", "e", "a", "1"), ("PEXPIREAT", "e", "1"), ("HGET", "e", "a"), ("EXISTS", "e"),
        ("HSET", "t", "a", "1"), ("EXPIRE", "t", "100"), ("HSET", "t", "b", "2"), ("TTL", "t"),
        ("UNLINK", "t"), ("INFO", "keyspace"), ("FLUSHALL",),
    ],
    "transactions": [
        ("MULTI",), ("HSET", "h", "a", "1"), ("HINCRBY", "h", "a", "2"), ("HGETALL", "h"),
        ("HINCRBYFLOAT", "h", "f", "0.5"), ("HDEL", "h", "a"), ("HSET", "h"), ("EXEC",),
        ("MULTI",), ("HSET", "h", "b", "1"), ("HGETALL", "h"), ("HEXPIRE", "h", "100", "FIELDS", "1", "b"),
        ("HGETEX", "h", "PERSIST", "FIELDS", "1", "b"), ("EXEC",), ("HGETALL", "h"),
    ],
}


def _flat(raw: bytes) -> list[Any]:
    reader = hiredis.Reader()
    reader.feed(raw)
    value = reader.gets()
    out: list[Any] = []

    def walk(v: Any) -> None:
        if isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, dict):
            for k, x in v.items():
                walk(k)
                walk(x)
        else:
            out.append(v)

    walk(value)
    return sorted(out, key=repr)


def replay(pair: tuple[RawClient, RawClient], seq: Seq) -> None:
    ours, theirs = pair
    for step in seq:
        if step[0] == SORTED:
            got, want = ours.call(*step[1:]), theirs.call(*step[1:])
            assert _flat(got) == _flat(want), step
            continue
        got, want = ours.call(*step), theirs.call(*step)
        if step[0] == "INFO":  # only the keyspace lines are comparable
            got, want = (re.sub(rb"avg_ttl=\d+", b"", x) for x in (got, want))
            got = got.split(b"\r\n", 1)[1]
            want = want.split(b"\r\n", 1)[1]
        assert got == want, (step, got, want)


@pytest.fixture
def hash_pair(raw_pair: tuple[RawClient, RawClient]) -> Any:
    yield raw_pair
    for c in raw_pair:
        c.call("CONFIG", "SET", "hash-max-listpack-entries", "512")
        c.call("CONFIG", "SET", "hash-max-listpack-value", "64")
        c.call("SELECT", "0")


@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_sequence(hash_pair: tuple[RawClient, RawClient], name: str) -> None:
    for c in hash_pair:
        c.call("FLUSHALL")
    replay(hash_pair, SEQUENCES[name])


def _dirty(c: RawClient) -> int:
    info = c.call("INFO", "persistence").decode()
    return int(re.search(r"rdb_changes_since_last_save:(\d+)", info).group(1))  # type: ignore[union-attr]


@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_dirty_counter(hash_pair: tuple[RawClient, RawClient], name: str) -> None:
    """After each step the number of changes counted since the sequence began is Redis's."""
    ours, theirs = hash_pair
    for c in hash_pair:
        c.call("FLUSHALL")
    base_ours, base_theirs = _dirty(ours), _dirty(theirs)
    in_multi = False
    for step in SEQUENCES[name]:
        if step[0] == SORTED:
            step = step[1:]
        ours.call(*step)
        theirs.call(*step)
        if step[0] == "MULTI":
            in_multi = True
        elif step[0] in ("EXEC", "DISCARD"):
            in_multi = False
        if not in_multi:
            assert _dirty(ours) - base_ours == _dirty(theirs) - base_theirs, step


HASH_COMMANDS = ["hset", "hsetnx", "hmset", "hget", "hmget", "hgetall", "hkeys", "hvals", "hlen",
                 "hexists", "hdel", "hincrby", "hincrbyfloat", "hstrlen", "hrandfield", "hscan",
                 "hexpire", "hpexpire", "hexpireat", "hpexpireat", "httl", "hpttl",
                 "hexpiretime", "hpexpiretime", "hpersist", "hgetdel", "hgetex", "hsetex"]


def test_redis_cli_hints_match_redis(sluice: Any, reference: Any) -> None:
    """redis-cli builds its argument hints from COMMAND DOCS: the same for every hash command."""
    from tests.integration.test_redis_cli import hint_line

    ours = {c: hint_line(sluice.port, c) for c in HASH_COMMANDS}
    theirs = {c: hint_line(reference.port, c) for c in HASH_COMMANDS}
    assert ours == theirs


def test_acl_category_and_command_list(raw_pair: tuple[RawClient, RawClient]) -> None:
    ours, theirs = raw_pair
    for command in (("ACL", "CAT", "hash"), ("COMMAND", "LIST", "FILTERBY", "ACLCAT", "hash")):
        assert _flat(ours.call(*command)) == _flat(theirs.call(*command)), command


def test_memory_usage_replies(raw_pair: tuple[RawClient, RawClient]) -> None:
    """MEMORY USAGE: sizes are each server's own (Sluice's from Python's object sizes), but
    the shapes and errors are Redis's; Redis's hash unit calls it on its first hashes."""
    ours, theirs = raw_pair
    for c in raw_pair:
        c.call("HSET", "h", "a", "1")
    for command in (("MEMORY", "USAGE", "nokey"), ("MEMORY", "USAGE", "h", "SAMPLES", "-1"),
                    ("MEMORY", "USAGE", "h", "foo"), ("MEMORY", "USAGE", "h", "SAMPLES"),
                    ("MEMORY", "USAGE", "h", "SAMPLES", "x"), ("MEMORY", "USAGE"),
                    ("MEMORY", "HELP", "x")):
        assert ours.call(*command) == theirs.call(*command), command
    for samples in ((), ("SAMPLES", "0"), ("SAMPLES", "3")):
        got = ours.call("MEMORY", "USAGE", "h", *samples)
        assert got.startswith(b":") and int(got[1:]) > 0


def test_fields_expire_in_real_time_as_on_redis(sluice: Any, reference: Any) -> None:
    """Real time on both servers: fields with short TTLs go by the active cycle (HLEN, which
    deletes nothing, drops when it runs), the key goes with its last field, and both count
    the same expired fields. Waits on server state, never on a sleep."""
    from tests.support import wait_until

    clients = [sluice.client(), reference.client()]
    try:
        before = [c.info("stats")["expired_subkeys"] for c in clients]
        for c in clients:
            c.hset("h", mapping={"a": 1, "b": 2, "c": 3, "d": 4})
            assert c.hpexpire("h", 60, "a", "b") == [1, 1]
            c.hset("gone", mapping={"x": 1, "y": 2})
            c.hpexpire("gone", 60, "x", "y")
        for c in clients:
            wait_until(lambda c=c: c.hlen("h") == 2 and c.exists("gone") == 0, timeout=15,
                       what="active expiry of hash fields")
        states = [(c.hgetall("h"), c.hpttl("h", "a", "c"), c.info("keyspace")["db0"],
                   c.info("stats")["expired_subkeys"] - b) for c, b in zip(clients, before,
                                                                            strict=True)]
        assert states[0] == states[1]
        assert states[0][3] == 4 and states[0][2]["subexpiry"] == 0
    finally:
        for c in clients:
            c.flushall()
            c.close()
