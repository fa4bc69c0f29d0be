"""HyperLogLog against redis-server 8.6.3: replies and the HLL strings themselves compared
byte for byte (RESP2 and RESP3), so counts are Redis's counts (identical, not close) and a
value moves between the two servers (GET/SET, DUMP/RESTORE) as a valid HLL both ways.

Generated sequences add random members to a few keys in random batches, count one key or
several, merge, and change ``hll-sparse-max-bytes`` (so sparse values split, merge and get
promoted to dense inside the sequence); after each step every key's bytes must match.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sluice.storage import hyperloglog as H
from tests.support import RawClient, replay_same

pytestmark = pytest.mark.differential

SEQUENCES: dict[str, list[list[str]]] = {
    "basics": [
        ["PFADD", "h"], ["EXISTS", "h"], ["PFCOUNT", "h"], ["GET", "h"], ["OBJECT", "ENCODING", "h"],
        ["PFADD", "h", "a", "b", "c"], ["PFADD", "h", "a", "b", "c"], ["PFADD", "h", ""],
        ["PFCOUNT", "h"], ["GET", "h"], ["PFCOUNT", "h"], ["PFCOUNT", "nope"],
        ["PFCOUNT", "h", "nope"], ["PFCOUNT", "nope", "nope2"], ["PFDEBUG", "ENCODING", "h"],
        ["PFDEBUG", "DECODE", "h"], ["PFDEBUG", "encoding", "nope"], ["PFDEBUG", "FOO", "h"],
        ["PFDEBUG", "FOO", "nope"], ["PFDEBUG", "TODENSE", "h"], ["PFDEBUG", "TODENSE", "h"],
        ["PFDEBUG", "DECODE", "h"], ["PFDEBUG", "ENCODING", "h"], ["PFCOUNT", "h"], ["GET", "h"],
        ["PFADD", "h", "d"], ["PFCOUNT", "h"], ["STRLEN", "h"], ["PFDEBUG", "GETREG", "h", "x"],
        ["PFSELFTEST", "x"], ["PFADD"], ["PFCOUNT"],
    ],
    "types-and-corruption": [
        ["SET", "s", "foo"], ["PFADD", "s", "a"], ["PFCOUNT", "s"], ["PFCOUNT", "h", "s"],
        ["PFMERGE", "s", "h"], ["PFMERGE", "h", "s"], ["RPUSH", "l", "x"], ["PFADD", "l", "a"],
        ["PFCOUNT", "l"], ["PFMERGE", "d", "l"], ["PFDEBUG", "ENCODING", "s"],
        ["PFDEBUG", "ENCODING", "l"], ["SET", "n", "12345678901234567890"], ["PFADD", "n", "a"],
        ["PFADD", "h", "a", "b", "c"], ["APPEND", "h", "hello"], ["PFCOUNT", "h"],
        ["PFCOUNT", "h", "h"], ["PFADD", "h", "x", "y"], ["GET", "h"], ["PFDEBUG", "GETREG", "h"],
        ["PFDEBUG", "TODENSE", "h"], ["PFMERGE", "m", "h"], ["DEL", "h"],
        ["PFADD", "h", "a"], ["SETRANGE", "h", "0", "0123"], ["PFCOUNT", "h"], ["DEL", "h"],
        ["PFADD", "h", "a"], ["SETRANGE", "h", "4", "x"], ["PFCOUNT", "h"], ["DEL", "h"],
        ["PFADD", "h", "a"], ["PFDEBUG", "TODENSE", "h"], ["SETRANGE", "h", "4", "\x00"],
        ["APPEND", "h", "x"], ["PFCOUNT", "h"], ["SET", "h", "HYLL"], ["PFCOUNT", "h"],
        ["SET", "h", "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"], ["PFCOUNT", "h"],
        ["PFADD", "h", "a"], ["SET", "h", "HYLL\x01\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00"],
        ["PFCOUNT", "h"], ["PFDEBUG", "DECODE", "h"],
    ],
    "merge": [
        ["PFADD", "a", "1", "2", "3"], ["PFADD", "b", "3", "4", "5"], ["PFMERGE", "m", "a", "b"],
        ["GET", "m"], ["PFCOUNT", "m"], ["PFMERGE", "x"], ["GET", "x"], ["PFMERGE", "y", "q"],
        ["EXISTS", "y"], ["PFMERGE", "a"], ["GET", "a"], ["PFDEBUG", "TODENSE", "b"],
        ["PFMERGE", "m2", "a", "b"], ["PFDEBUG", "ENCODING", "m2"], ["GET", "m2"],
        ["PFCOUNT", "a", "b", "m", "m2"], ["SET", "z", "v", "PXAT", "4102444800000"],
        ["PFMERGE", "a", "b"], ["PFMERGE", "z", "a"], ["PEXPIRETIME", "z"],
        ["MULTI"], ["PFADD", "t", "a"], ["PFCOUNT", "t"], ["PFMERGE", "t", "a"], ["GET", "t"],
        ["EXEC"],
    ],
}


@pytest.mark.parametrize("name", list(SEQUENCES))
def test_same_replies(raw_pair: tuple[RawClient, RawClient], name: str) -> None:
    replay_same(raw_pair, SEQUENCES[name])


def _dirty(client: RawClient) -> int:
    info = client.call("INFO", "persistence").decode()
    return int(info.split("rdb_changes_since_last_save:")[1].split("\r\n")[0])


def test_changes_counted_as_redis_counts_them(raw_pair: tuple[RawClient, RawClient]) -> None:
    """PFADD counts each register raised (and the creation); PFCOUNT counts one when it
    refreshes the cached value; PFMERGE always one; TODENSE one when it converts."""
    steps = [["PFADD", "h"], ["PFADD", "h", "a", "b", "c", "d"], ["PFADD", "h", "a"],
             ["PFCOUNT", "h"], ["PFCOUNT", "h"], ["PFCOUNT", "h", "nope"], ["PFMERGE", "h"],
             ["PFDEBUG", "TODENSE", "h"], ["PFDEBUG", "TODENSE", "h"], ["PFADD", "h", "zz"],
             ["PFDEBUG", "GETREG", "h"]]
    ours, theirs = raw_pair
    for step in steps:
        before = (_dirty(ours), _dirty(theirs))
        assert ours.call(*step) == theirs.call(*step), step
        assert _dirty(ours) - before[0] == _dirty(theirs) - before[1], step


def _payload(reply: bytes) -> bytes:
    return reply.split(b"\r\n", 1)[1][:-2]


def test_values_move_between_the_servers(raw_pair: tuple[RawClient, RawClient]) -> None:
    """An HLL made by one server, copied with GET/SET or DUMP/RESTORE, goes on in the other
    exactly as it would have at home."""
    ours, theirs = raw_pair
    for n, encoding in ((40, b"sparse"), (3000, b"dense")):
        members = [f"m{i}" for i in range(n)]
        more = [f"x{i}" for i in range(50)]
        for maker, other in ((ours, theirs), (theirs, ours)):
            maker.call("DEL", "h", "c", "d")
            maker.call("PFADD", "h", *members)
            assert maker.call("PFDEBUG", "ENCODING", "h") == b"+" + encoding + b"\r\n"
            value = _payload(maker.call("GET", "h"))
            other.call("SET", "c", value)
            assert other.call("RESTORE", "d", "0", _payload(maker.call("DUMP", "h")),
                              "REPLACE") == b"+OK\r\n"
            for c in (maker, other):
                for key in ("h", "c", "d"):
                    if c is maker and key != "h":
                        continue
                    c.call("PFADD", key, *more)
            want = maker.call("GET", "h")
            assert other.call("GET", "c") == want
            assert other.call("GET", "d") == want
            assert other.call("PFCOUNT", "c") == maker.call("PFCOUNT", "h")


def _element_for(index: int, count: int) -> bytes:
    """A member that lands in register ``index`` with value ``count`` (found by search)."""
    i = 0
    while True:
        element = b"e%d" % i
        if H.pattern_len(element) == (index, count):
            return element
        i += 1


def test_crafted_sparse_values(raw_pair: tuple[RawClient, RawClient]) -> None:
    """Sparse values no Redis would write (adjacent runs left unmerged, a corrupted tail),
    updated at chosen registers: the bytes come out the same, or both fail."""
    def val(v: int, n: int) -> int:
        return 0x80 | ((v - 1) << 2) | (n - 1)
    rest = 16384 - 106
    body = bytes((0x40 | (99 >> 8), 99 & 0xFF, val(2, 1), val(2, 3), val(2, 1), val(2, 1),
                  0x40 | ((rest - 1) >> 8), (rest - 1) & 0xFF))
    header = b"HYLL\x01" + bytes(11)
    cases = [header + body, header + body + b"\x00", header + body[:-1], header + body[:4]]
    ours, theirs = raw_pair
    hit = _element_for(102, 2)
    for value in cases:
        for c in raw_pair:
            c.call("SET", "h", value)
        for element in (_element_for(102, 3), hit, _element_for(16383, 1)):
            assert ours.call("PFADD", "h", element) == theirs.call("PFADD", "h", element)
            assert ours.call("GET", "h") == theirs.call("GET", "h")
        assert ours.call("PFCOUNT", "h") == theirs.call("PFCOUNT", "h")


MEMBERS = st.one_of(st.integers(0, 3000).map(str), st.binary(max_size=12).map(lambda b: b.hex()))
KEYS = st.sampled_from(["a", "b", "c"])
STEPS = st.one_of(
    st.tuples(st.just("PFADD"), KEYS, st.lists(MEMBERS, max_size=60)),
    st.tuples(st.just("PFCOUNT"), st.lists(KEYS, min_size=1, max_size=3)),
    st.tuples(st.just("PFMERGE"), KEYS, st.lists(KEYS, max_size=3)),
    st.tuples(st.just("CONFIG"), st.sampled_from(["60", "300", "3000"])),
    st.tuples(st.just("TODENSE"), KEYS),
)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(STEPS, min_size=1, max_size=25))
def test_generated_sequences(raw_pair: tuple[RawClient, RawClient], steps: list[Any]) -> None:
    ours, theirs = raw_pair
    for c in raw_pair:
        c.call("FLUSHALL")
        c.call("CONFIG", "SET", "hll-sparse-max-bytes", "3000")
    try:
        for step in steps:
            kind = step[0]
            if kind == "PFADD":
                command = ["PFADD", step[1], *step[2]]
            elif kind == "PFCOUNT":
                command = ["PFCOUNT", *step[1]]
            elif kind == "PFMERGE":
                command = ["PFMERGE", step[1], *step[2]]
            elif kind == "CONFIG":
                command = ["CONFIG", "SET", "hll-sparse-max-bytes", step[1]]
            else:
                command = ["PFDEBUG", "TODENSE", step[1]]
            assert ours.call(*command) == theirs.call(*command), command
            for key in ("a", "b", "c"):
                assert ours.call("GET", key) == theirs.call("GET", key), (command, key)
    finally:
        for c in raw_pair:
            c.call("CONFIG", "SET", "hll-sparse-max-bytes", "3000")


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.text(max_size=20), min_size=500, max_size=4000))
def test_counts_of_large_random_sets_are_identical(raw_pair: tuple[RawClient, RawClient],
                                                   members: list[str]) -> None:
    ours, theirs = raw_pair
    for c in raw_pair:
        c.call("DEL", "h", "g")
    half = len(members) // 2
    for chunk in (members[:half], members[half:]):
        assert ours.call("PFADD", "h", *chunk) == theirs.call("PFADD", "h", *chunk)
        assert ours.call("PFCOUNT", "h") == theirs.call("PFCOUNT", "h")
    for c in raw_pair:
        c.call("PFADD", "g", *members[::3])
    assert ours.call("PFCOUNT", "h", "g") == theirs.call("PFCOUNT", "h", "g")
    assert ours.call("GET", "h") == theirs.call("GET", "h")
