"""Bitmap commands against redis-server 8.6.3, reply bytes compared (RESP2 and RESP3): fixed
sequences for the argument rules and errors, and generated BITFIELD sequences (every type
width, offsets with and without ``#``, the three OVERFLOW modes) whose replies, the string
built and the dirty counter must all agree."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import RawClient, replay_same

pytestmark = pytest.mark.differential

SEQUENCES: dict[str, list[list[str]]] = {
    "setbit-getbit": [
        ["SETBIT", "k", "7", "1"], ["GET", "k"], ["SETBIT", "k", "7", "1"], ["SETBIT", "k", "7", "0"],
        ["SETBIT", "k", "100", "1"], ["STRLEN", "k"], ["GETBIT", "k", "100"], ["GETBIT", "k", "99"],
        ["GETBIT", "k", "1000000"], ["GETBIT", "nope", "3"], ["SETBIT", "k", "-1", "1"],
        ["SETBIT", "k", "x", "1"], ["SETBIT", "k", "1", "2"], ["SETBIT", "k", "1", "-1"],
        ["SETBIT", "k", "1", "x"], ["SETBIT", "k", "#1", "1"], ["GETBIT", "k", "-1"],
        ["SETBIT", "k", "4294967296", "1"], ["SETBIT", "k", "9223372036854775807", "1"],
        ["GETBIT", "k", "18446744073709551616"], ["OBJECT", "ENCODING", "k"],
        ["SET", "n", "12"], ["OBJECT", "ENCODING", "n"], ["GETBIT", "n", "2"], ["SETBIT", "n", "6", "1"],
        ["GET", "n"], ["OBJECT", "ENCODING", "n"], ["RPUSH", "l", "a"], ["SETBIT", "l", "1", "1"],
        ["GETBIT", "l", "1"], ["SETBIT", "k"], ["GETBIT", "k"],
    ],
    "setbit-keeps-ttl": [
        ["SET", "k", "abc", "PXAT", "4102444800000"], ["SETBIT", "k", "3", "1"],
        ["PEXPIRETIME", "k"], ["GET", "k"], ["APPEND", "k", "zz"], ["GET", "k"],
        ["SETBIT", "k", "0", "1"], ["GETRANGE", "k", "0", "1"], ["SETRANGE", "k", "1", "Q"],
        ["GET", "k"], ["INCR", "k"], ["SET", "c", "5"], ["SETBIT", "c", "7", "0"], ["INCR", "c"],
        ["GET", "c"], ["OBJECT", "ENCODING", "c"],
    ],
    "bitcount": [
        ["BITCOUNT", "nope"], ["SET", "k", "foobar"], ["BITCOUNT", "k"], ["BITCOUNT", "k", "0", "0"],
        ["BITCOUNT", "k", "1", "1"], ["BITCOUNT", "k", "1", "-2"], ["BITCOUNT", "k", "-3", "-1"],
        ["BITCOUNT", "k", "5", "30", "BIT"], ["BITCOUNT", "k", "-5", "-1", "bit"],
        ["BITCOUNT", "k", "0", "-1", "BYTE"], ["BITCOUNT", "k", "-1", "-5"],
        ["BITCOUNT", "k", "100", "200"], ["BITCOUNT", "k", "0"], ["BITCOUNT", "k", "0", "1", "BITS"],
        ["BITCOUNT", "k", "a", "1"], ["BITCOUNT", "k", "0", "1", "BIT", "x"],
        ["BITCOUNT", "k", "9223372036854775807", "-9223372036854775808", "BIT"],
        ["RPUSH", "l", "a"], ["BITCOUNT", "l"], ["BITCOUNT", "l", "0", "x"], ["SET", "e", ""],
        ["BITCOUNT", "e"], ["BITCOUNT", "e", "0", "-1", "BIT"], ["SET", "i", "-123456"],
        ["BITCOUNT", "i", "1", "3"],
    ],
    "bitpos": [
        ["BITPOS", "nope", "0"], ["BITPOS", "nope", "1"], ["BITPOS", "nope", "2"],
        ["SET", "k", "\xff\xf0\x00"], ["BITPOS", "k", "0"], ["BITPOS", "k", "1", "2"],
        ["BITPOS", "k", "1", "2", "-1"], ["BITPOS", "k", "0", "0", "0"], ["BITPOS", "k", "0", "0", "-1"],
        ["BITPOS", "k", "1", "7", "15", "BIT"], ["BITPOS", "k", "0", "7", "15", "bit"],
        ["BITPOS", "k", "0", "1", "1", "BYTE"], ["BITPOS", "k", "1", "-1"],
        ["SET", "f", "\xff\xff"], ["BITPOS", "f", "0"], ["BITPOS", "f", "0", "0", "-1"],
        ["BITPOS", "f", "0", "3", "9", "BIT"], ["BITPOS", "f", "0", "5"], ["BITPOS", "f", "1", "5"],
        ["BITPOS", "k", "x"], ["BITPOS", "k", "1", "x"], ["BITPOS", "k", "1", "0", "x"],
        ["BITPOS", "k", "1", "0", "1", "FOO"], ["BITPOS", "k", "1", "0", "1", "BIT", "x"],
        ["BITPOS", "k", "0", "-100", "-50"], ["SET", "e", ""], ["BITPOS", "e", "0"],
        ["BITPOS", "e", "1"], ["RPUSH", "l", "a"], ["BITPOS", "l", "1"], ["BITPOS", "l", "3"],
    ],
    "bitop": [
        ["SET", "a", "\x0f\xf0"], ["SET", "b", "\xff"], ["SET", "c", "123"],
        ["BITOP", "AND", "d", "a", "b"], ["GET", "d"], ["OBJECT", "ENCODING", "d"],
        ["BITOP", "or", "d", "a", "b", "c"], ["GET", "d"], ["BITOP", "XOR", "d", "a", "b", "c"],
        ["GET", "d"], ["BITOP", "NOT", "d", "a"], ["GET", "d"], ["BITOP", "NOT", "d", "a", "b"],
        ["BITOP", "ONE", "d", "a", "b", "c"], ["GET", "d"], ["BITOP", "DIFF", "d", "a", "b"],
        ["GET", "d"], ["BITOP", "DIFF1", "d", "a", "b", "c"], ["GET", "d"],
        ["BITOP", "ANDOR", "d", "c", "a"], ["GET", "d"], ["BITOP", "DIFF", "d", "a"],
        ["BITOP", "diff1", "d", "a"], ["BITOP", "AndOr", "d", "a"], ["BITOP", "NAND", "d", "a"],
        ["BITOP", "AND", "d", "nope1", "nope2"], ["EXISTS", "d"], ["SET", "d", "x", "EX", "1000"],
        ["BITOP", "OR", "d", "a"], ["TTL", "d"], ["RPUSH", "l", "x"], ["BITOP", "OR", "d", "a", "l"],
        ["BITOP", "OR", "l", "a"], ["TYPE", "l"], ["BITOP", "OR", "a", "a", "b"], ["GET", "a"],
        ["BITOP", "ONE", "d", "a"], ["GET", "d"], ["SET", "e", ""], ["BITOP", "NOT", "d", "e"],
        ["EXISTS", "d"],
    ],
    "bitfield": [
        ["BITFIELD", "k"], ["BITFIELD", "k", "GET", "u8", "0"], ["EXISTS", "k"],
        ["BITFIELD", "k", "SET", "i8", "0", "-100", "GET", "u8", "0", "INCRBY", "i8", "0", "-100"],
        ["BITFIELD", "k", "OVERFLOW", "SAT", "INCRBY", "i8", "0", "-100", "OVERFLOW", "FAIL",
         "INCRBY", "i8", "0", "-1", "OVERFLOW", "WRAP", "INCRBY", "i8", "0", "-1"],
        ["BITFIELD", "k", "SET", "u4", "#3", "15", "GET", "u16", "0", "GET", "i5", "#1"], ["GET", "k"],
        ["BITFIELD", "k", "SET", "u63", "100", "9223372036854775807", "GET", "u63", "100",
         "GET", "i64", "99"],
        ["BITFIELD", "k", "SET", "i64", "0", "-9223372036854775808",
         "INCRBY", "i64", "0", "-1", "OVERFLOW", "SAT", "INCRBY", "i64", "0", "-1"],
        ["BITFIELD", "k", "SET", "u8", "0", "-1", "OVERFLOW", "SAT", "SET", "u8", "0", "-1",
         "OVERFLOW", "FAIL", "SET", "u8", "8", "256", "GET", "u8", "8"],
        ["BITFIELD", "k", "GET", "u64", "0"], ["BITFIELD", "k", "GET", "i65", "0"],
        ["BITFIELD", "k", "GET", "i0", "0"], ["BITFIELD", "k", "GET", "x8", "0"],
        ["BITFIELD", "k", "GET", "I8", "0"], ["BITFIELD", "k", "GET", "u8", "-1"],
        ["BITFIELD", "k", "GET", "u8", "#-1"], ["BITFIELD", "k", "GET", "u8", "##1"],
        ["BITFIELD", "k", "GET", "u8", "4294967296"], ["BITFIELD", "k", "GET", "i64", "#536870911"],
        ["BITFIELD", "k", "GET", "i64", "#2305843009213693953"],
        ["BITFIELD", "k", "GET", "u8"], ["BITFIELD", "k", "SET", "u8", "0"],
        ["BITFIELD", "k", "OVERFLOW"], ["BITFIELD", "k", "OVERFLOW", "FOO", "GET", "u8", "0"],
        ["BITFIELD", "k", "FOO", "u8", "0"], ["BITFIELD", "k", "SET", "u8", "0", "x"],
        ["BITFIELD", "k", "INCRBY", "u8", "0", "1.5"], ["BITFIELD", "k", "overflow", "sat", "get", "u2", "3"],
        ["RPUSH", "l", "a"], ["BITFIELD", "l", "GET", "u8", "0"], ["BITFIELD", "l", "SET", "u8", "0", "1"],
        ["BITFIELD", "l", "SET", "x8", "0", "1"],
        ["BITFIELD_RO", "k", "GET", "u8", "0", "GET", "i3", "#2"], ["BITFIELD_RO", "k"],
        ["BITFIELD_RO", "k", "SET", "u8", "0", "1"], ["BITFIELD_RO", "l", "GET", "u8", "0"],
        ["BITFIELD_RO", "l", "INCRBY", "u8", "0", "1"], ["BITFIELD_RO", "nope", "GET", "i8", "0"],
        ["BITFIELD", "new", "OVERFLOW", "FAIL", "SET", "i8", "0", "1000"], ["EXISTS", "new"],
        ["GET", "new"],
    ],
    "in-multi": [
        ["MULTI"], ["SETBIT", "k", "3", "1"], ["GET", "k"], ["SETBIT", "k", "4", "1"], ["GET", "k"],
        ["BITFIELD", "k", "INCRBY", "u8", "0", "1"], ["BITCOUNT", "k"], ["BITOP", "NOT", "k", "k"],
        ["BITPOS", "k", "0"], ["EXEC"],
    ],
}


@pytest.mark.parametrize("name", list(SEQUENCES))
def test_same_replies(raw_pair: tuple[RawClient, RawClient], name: str) -> None:
    replay_same(raw_pair, SEQUENCES[name])


def _dirty(client: RawClient) -> int:
    info = client.call("INFO", "persistence").decode()
    return int(info.split("rdb_changes_since_last_save:")[1].split("\r\n")[0])


def test_dirty_counts_only_changes(raw_pair: tuple[RawClient, RawClient]) -> None:
    """SETBIT and BITFIELD count a write when a bit changed or the string grew; BITFIELD
    counts each such operation."""
    steps = [["SETBIT", "k", "0", "0"], ["SETBIT", "k", "0", "0"], ["SETBIT", "k", "0", "1"],
             ["SETBIT", "k", "30", "0"], ["BITFIELD", "b", "SET", "i5", "0", "0", "SET", "u3", "9", "0"],
             ["BITFIELD", "b", "SET", "i5", "0", "0"], ["BITFIELD", "b", "INCRBY", "u2", "0", "4"],
             ["BITFIELD", "b", "INCRBY", "u2", "0", "1", "INCRBY", "u2", "0", "1"],
             ["BITFIELD", "c", "OVERFLOW", "FAIL", "SET", "i4", "0", "100"],
             ["BITOP", "AND", "d", "k"], ["BITOP", "AND", "d", "nope"]]
    ours, theirs = raw_pair
    for step in steps:
        before = (_dirty(ours), _dirty(theirs))
        assert ours.call(*step) == theirs.call(*step), step
        assert _dirty(ours) - before[0] == _dirty(theirs) - before[1], step


def test_dump_of_an_edited_string_restores_in_redis(raw_pair: tuple[RawClient, RawClient]) -> None:
    """A string edited in place (a RawString here) dumps as an RDB string redis-server
    restores to the same bytes (the LZF streams of the two servers may differ), and back."""
    ours, theirs = raw_pair
    for c in raw_pair:
        c.call("SETBIT", "k", "1000", "1")
        c.call("BITFIELD", "k", "SET", "u8", "#3", "200")
    for src, dst in ((ours, theirs), (theirs, ours)):
        payload = src.call("DUMP", "k").split(b"\r\n", 1)[1][:-2]
        assert dst.call("RESTORE", "copy", "0", payload) == b"+OK\r\n"
        assert dst.call("GET", "copy") == src.call("GET", "k")
        assert dst.call("GETBIT", "copy", "1000") == b":1\r\n"


TYPES = st.sampled_from([f"i{n}" for n in (1, 2, 5, 8, 13, 32, 63, 64)]
                        + [f"u{n}" for n in (1, 3, 8, 16, 31, 62, 63)])
OFFSETS = st.one_of(st.integers(0, 80).map(str), st.integers(0, 6).map(lambda n: f"#{n}"))
VALUES = st.one_of(
    st.integers(-300, 300),
    st.sampled_from([2**63 - 1, -(2**63), 2**62, -(2**62) - 1, 2**31, -(2**31) - 1, 2**32 - 1]),
).map(str)
OPS = st.one_of(
    st.tuples(st.just("GET"), TYPES, OFFSETS),
    st.tuples(st.just("SET"), TYPES, OFFSETS, VALUES),
    st.tuples(st.just("INCRBY"), TYPES, OFFSETS, VALUES),
    st.tuples(st.just("OVERFLOW"), st.sampled_from(["WRAP", "SAT", "FAIL"])),
)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.lists(OPS, min_size=1, max_size=5), min_size=1, max_size=8))
def test_generated_bitfield_sequences(raw_pair: tuple[RawClient, RawClient],
                                      calls: list[list[Any]]) -> None:
    ours, theirs = raw_pair
    for c in raw_pair:
        c.call("DEL", "k")
    start = (_dirty(ours), _dirty(theirs))
    for ops in calls:
        command = ["BITFIELD", "k"] + [word for op in ops for word in op]
        assert ours.call(*command) == theirs.call(*command), command
    assert ours.call("GET", "k") == theirs.call("GET", "k")
    assert _dirty(ours) - start[0] == _dirty(theirs) - start[1]
