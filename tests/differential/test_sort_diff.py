"""SORT and SORT_RO against redis-server 8.6.3, reply bytes compared (RESP2 and RESP3): lists,
sets and sorted sets, BY and GET patterns (strings and hash fields), LIMIT, ALPHA, DESC,
STORE, the ``nosort`` forms, the error rules and the ACL rule for BY / GET.

Redis iterates sets and sorted sets in hash-table order, seeded at random at each start: the
order of equal weights from a set or sorted set changes from run to run there, so these
sequences give such sources distinct weights (ties are tested on lists, whose order is
fixed)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import RawClient, replay_same

pytestmark = pytest.mark.differential

DATA = [
    ["RPUSH", "l", "3", "1", "2", "10", "1.5", "-7", "1e2", "0"],
    ["SADD", "s", "3", "1", "2", "10", "-7"],
    ["ZADD", "z", "3", "c", "1", "a", "2", "b", "5", "e", "4", "d"],
    ["MSET", "w_3", "30", "w_1", "100", "w_2", "-1", "w_10", "5", "w_-7", "0", "w_0", "x",
     "o_3", "three", "o_1", "one", "o_2", "two", "w_a", "3", "w_b", "2", "w_c", "1",
     "w_d", "1.5", "w_e", "10"],
    ["RPUSH", "names", "bob", "alice", "carol", "dave", "alice", "Bob", "b\x00z", "b"],
]

SEQUENCES: dict[str, list[list[str]]] = {
    "plain": [
        *DATA, ["SORT", "l"], ["SORT", "l", "DESC"], ["SORT", "s"], ["SORT", "s", "desc"],
        ["SORT", "z"], ["SORT", "z", "ALPHA"], ["SORT", "names", "ALPHA"],
        ["SORT", "names", "ALPHA", "DESC"], ["SORT", "names"], ["SORT", "nokey"],
        ["SORT", "l", "LIMIT", "2", "3"], ["SORT", "l", "LIMIT", "-5", "2"],
        ["SORT", "l", "LIMIT", "0", "-1"], ["SORT", "l", "LIMIT", "100", "1"],
        ["SORT", "l", "LIMIT", "3", "0"], ["SORT", "l", "LIMIT", "6", "10", "DESC"],
        ["SORT_RO", "l", "DESC", "LIMIT", "1", "2"], ["OBJECT", "ENCODING", "z"],
    ],
    "by-get": [
        *DATA, ["SORT", "l", "BY", "w_*"], ["SORT", "s", "BY", "w_*", "GET", "o_*", "GET", "#"],
        ["SORT", "z", "BY", "w_*", "ALPHA"], ["SORT", "z", "BY", "w_*"],
        ["SORT", "s", "BY", "nosort"], ["SORT", "l", "BY", "nosort", "DESC", "LIMIT", "1", "3"],
        ["SORT", "z", "BY", "nosort", "LIMIT", "1", "2"], ["SORT", "z", "BY", "nosort", "DESC"],
        ["SORT", "z", "BY", "nosort", "DESC", "LIMIT", "1", "3", "GET", "#", "GET", "w_*"],
        ["SORT", "l", "GET", "nostar"], ["SORT", "l", "GET", "#", "GET", "missing_*"],
        ["SORT", "s", "BY", "w_*", "LIMIT", "0", "2"], ["SORT", "s", "BY", "w_*", "ALPHA",
                                                        "LIMIT", "1", "2"],
        ["SORT", "l", "BY", "o_*", "ALPHA"], ["SORT", "l", "BY", "o_*", "ALPHA", "LIMIT", "2", "4"],
        ["HSET", "h_3", "f", "3", "g", "c"], ["HSET", "h_1", "f", "1", "g", "a"],
        ["HSET", "h_2", "f", "-2", "g", "b"],
        ["SORT", "s", "BY", "h_*->f", "GET", "h_*->g", "GET", "#"],
        ["SORT", "s", "BY", "h_*->", "GET", "h_*->nope", "GET", "h_*->"],
        ["SORT", "s", "BY", "h_*->g", "ALPHA", "DESC"],
    ],
    "errors": [
        *DATA, ["SORT", "l", "BY", "w_*", "GET", "o_*", "FOO"], ["SORT", "l", "LIMIT", "1"],
        ["SORT", "l", "LIMIT", "x", "1"], ["SORT", "l", "STORE"], ["SORT", "l", "BY"],
        ["SORT", "names"], ["SORT", "l", "BY", "o_*"], ["SORT", "l", "BY", "w_*"],
        ["SORT_RO", "l", "STORE", "d"], ["SET", "str", "1"], ["SORT", "str"],
        ["SORT", "str", "LIMIT", "x", "y"], ["HSET", "hh", "a", "1"], ["SORT", "hh"],
    ],
    "store": [
        *DATA, ["SORT", "l", "STORE", "d"], ["LRANGE", "d", "0", "-1"], ["OBJECT", "ENCODING", "d"],
        ["SORT", "s", "BY", "nosort", "STORE", "d2"], ["LRANGE", "d2", "0", "-1"],
        ["SORT", "s", "BY", "w_*", "GET", "o_*", "GET", "nope_*", "STORE", "d3"],
        ["LRANGE", "d3", "0", "-1"], ["SET", "d4", "x", "EX", "1000"],
        ["SORT", "names", "ALPHA", "STORE", "d4"], ["TTL", "d4"], ["LRANGE", "d4", "0", "-1"],
        ["SORT", "nokey", "STORE", "d4"], ["EXISTS", "d4"], ["SORT", "l", "LIMIT", "0", "0",
                                                            "STORE", "d"], ["EXISTS", "d"],
        ["SORT", "l", "STORE", "l"], ["LRANGE", "l", "0", "-1"],
        ["MULTI"], ["SORT", "s", "STORE", "m"], ["LRANGE", "m", "0", "-1"], ["EXEC"],
    ],
    "getkeys": [
        ["COMMAND", "GETKEYS", "SORT", "l", "BY", "w_*", "STORE", "d", "GET", "x"],
        ["COMMAND", "GETKEYSANDFLAGS", "SORT", "l", "STORE", "d", "STORE", "e"],
        ["COMMAND", "GETKEYS", "SORT", "l", "LIMIT", "store", "x", "GET", "store", "STORE"],
        ["COMMAND", "GETKEYSANDFLAGS", "SORT_RO", "l", "BY", "w_*"],
    ],
}


@pytest.mark.parametrize("name", list(SEQUENCES))
def test_same_replies(raw_pair: tuple[RawClient, RawClient], name: str) -> None:
    replay_same(raw_pair, SEQUENCES[name])


def test_by_and_get_need_full_key_read_access(raw_pair: tuple[RawClient, RawClient]) -> None:
    ours, theirs = raw_pair
    setup = [["ACL", "SETUSER", "limited", "on", "nopass", "+@all", "~l", "~w_*", "~o_*"],
             ["ACL", "SETUSER", "reader", "on", "nopass", "+@all", "%R~*", "%W~d"],
             ["RPUSH", "l", "2", "1"], ["SET", "w_1", "5"]]
    for c in raw_pair:
        for command in setup:
            c.call(*command)
    steps = [["AUTH", "limited", "x"], ["SORT", "l"], ["SORT", "l", "BY", "w_*"],
             ["SORT", "l", "BY", "nosort"], ["SORT", "l", "GET", "#"],
             ["SORT", "l", "GET", "o_*"], ["SORT_RO", "l", "BY", "w_*"],
             ["AUTH", "reader", "x"], ["SORT", "l", "BY", "w_*", "GET", "#"],
             ["SORT", "l", "BY", "w_*", "STORE", "d"], ["SORT", "l", "STORE", "e"]]
    try:
        for command in steps:
            assert ours.call(*command) == theirs.call(*command), command
    finally:
        for c in raw_pair:
            c.call("AUTH", "default", "x")
            c.call("ACL", "DELUSER", "limited", "reader")


ELEMENTS = st.one_of(
    st.integers(-50, 50).map(str), st.floats(-1e6, 1e6, allow_nan=False).map(repr),
    st.sampled_from(["", "+5", "1e3", "-0", "0.0", "007", ".5", "5.", "inf", "-inf", "1e400",
                     "abc", "a\x00b", "a", "B", "12345678901234567890", "9007199254740993"]),
)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(ELEMENTS, min_size=1, max_size=40),
       st.sampled_from([[], ["DESC"], ["ALPHA"], ["ALPHA", "DESC"], ["LIMIT", "2", "5"],
                        ["BY", "w_*"], ["BY", "w_*", "LIMIT", "1", "3"], ["BY", "w_*", "ALPHA"],
                        ["BY", "w_*", "ALPHA", "DESC", "LIMIT", "0", "4"], ["BY", "nosort", "DESC"],
                        ["ALPHA", "STORE", "dst"]]),
       st.lists(ELEMENTS, max_size=6))
def test_generated_list_sorts(raw_pair: tuple[RawClient, RawClient], elements: list[str],
                              options: list[str], weights: list[str]) -> None:
    """Random lists (numbers in every spelling, ties, NULs, non-numbers), sorted with random
    options; weights for some elements, so BY meets missing keys and ties too."""
    ours, theirs = raw_pair
    for c in raw_pair:
        c.call("FLUSHALL")
        c.call("RPUSH", "l", *elements)
        for element, weight in zip(elements, weights, strict=False):
            c.call("SET", f"w_{element}", weight)
    command = ["SORT", "l", *options]
    assert ours.call(*command) == theirs.call(*command), command
    if "STORE" in options:
        assert ours.call("LRANGE", "dst", "0", "-1") == theirs.call("LRANGE", "dst", "0", "-1")
