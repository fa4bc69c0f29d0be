"""Sets against redis-server 8.6.3: the same commands, the same reply bytes, RESP2 and RESP3.

* fixed sequences over every set command, option and error path (errors win in Redis's
  order), with the encodings (OBJECT ENCODING) after each kind of write;
* hypothesis-generated sequences, on servers with Redis's default settings and on a pair
  with tiny encoding limits (so intset -> listpack -> hashtable conversions happen all the
  time, mid-command too);
* SPOP, SRANDMEMBER and SSCAN are compared by what must hold (sizes, membership, what is left,
  the reply's type), not by bytes: they are random or cursor-shaped.

Replies of intset and listpack sets come in a defined order (ascending, insertion), so they
must match byte for byte; a hash table's order is each server's own (Redis's is its siphash
order), so replies that iterate one (SMEMBERS, SINTER, SUNION, SDIFF) are compared as sorted
lists when, and only when, the bytes differ and the order came from a hash table.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import hiredis
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import ProcessServer, RawClient, ThreadedServer, require_redis_server

pytestmark = [pytest.mark.differential, pytest.mark.timeout(120)]

SMALL_LIMITS = {"set-max-intset-entries": "2", "set-max-listpack-entries": "3",
                "set-max-listpack-value": "8"}


def parse(raw: bytes) -> Any:
    reader = hiredis.Reader()
    reader.feed(raw)
    reply = reader.gets()
    return str(reply) if isinstance(reply, hiredis.ReplyError) else reply


def same_unordered(ours: bytes, theirs: bytes, argv: tuple[Any, ...]) -> None:
    """Equal bytes, or the same type, length and elements in another order."""
    if ours == theirs:
        return
    assert ours[:1] == theirs[:1], (argv, ours, theirs)
    a, b = parse(ours), parse(theirs)
    assert isinstance(a, list) and isinstance(b, list), (argv, ours, theirs)
    assert sorted(a) == sorted(b), (argv, ours, theirs)


def scan_all(client: RawClient, key: str) -> list[bytes]:
    cursor, out = b"0", []
    while True:
        reply = parse(client.call("SSCAN", key, cursor, "COUNT", "3"))
        cursor, batch = reply
        out += batch
        if cursor == b"0":
            return out


SEQUENCES: dict[str, list[tuple[Any, ...]]] = {
    "add_remove_and_encodings": [
        ("SADD", "s", "3", "1", "2", "2"), ("SMEMBERS", "s"), ("OBJECT", "ENCODING", "s"),
        ("SADD", "s", "-5", "9223372036854775807", "-9223372036854775808"), ("SMEMBERS", "s"),
        ("SADD", "s", "007"), ("OBJECT", "ENCODING", "s"), ("SMEMBERS", "s"),
        ("SREM", "s", "007", "zz", "1"), ("SMEMBERS", "s"), ("OBJECT", "ENCODING", "s"),
        ("SADD", "w", "9223372036854775808"), ("OBJECT", "ENCODING", "w"),
        ("SADD", "w", "x" * 64), ("OBJECT", "ENCODING", "w"), ("SADD", "w", "y" * 65),
        ("OBJECT", "ENCODING", "w"), ("SCARD", "w"), ("SREM", "w", "9223372036854775808",
                                                      "x" * 64, "y" * 65),
        ("EXISTS", "w"), ("SREM", "nokey", "a"), ("SCARD", "nokey"), ("TYPE", "s"),
        ("SISMEMBER", "s", "3"), ("SISMEMBER", "s", "03"), ("SISMEMBER", "nokey", "3"),
        ("SMISMEMBER", "s", "3", "4", "-5"), ("SMISMEMBER", "nokey", "a", "b"),
        ("SMEMBERS", "nokey"),
    ],
    "create_sizes": [
        ("SADD", "big", *range(513)), ("OBJECT", "ENCODING", "big"),
        ("SADD", "lp", *[f"m{i}" for i in range(128)]), ("OBJECT", "ENCODING", "lp"),
        ("SADD", "lp2", *[f"m{i}" for i in range(129)]), ("OBJECT", "ENCODING", "lp2"),
        ("SADD", "i", *range(512)), ("OBJECT", "ENCODING", "i"), ("SADD", "i", "512"),
        ("OBJECT", "ENCODING", "i"), ("SADD", "j", *range(127)), ("SADD", "j", "x"),
        ("OBJECT", "ENCODING", "j"), ("SADD", "k", *range(128)), ("SADD", "k", "x"),
        ("OBJECT", "ENCODING", "k"), ("SADD", "wide", "1234567890123"),
        ("CONFIG", "SET", "set-max-listpack-value", "10"), ("SADD", "wide", "a"),
        ("OBJECT", "ENCODING", "wide"), ("CONFIG", "SET", "set-max-listpack-value", "64"),
    ],
    "wrong_types_and_arity": [
        ("SET", "str", "v"), ("SADD", "str", "a"), ("SREM", "str", "a"), ("SCARD", "str"),
        ("SMEMBERS", "str"), ("SISMEMBER", "str", "a"), ("SMISMEMBER", "str", "a"),
        ("SPOP", "str"), ("SPOP", "str", "1"), ("SRANDMEMBER", "str"),
        ("SRANDMEMBER", "str", "2"), ("SSCAN", "str", "0"), ("SADD", "s"), ("SREM", "s"),
        ("SCARD",), ("SMEMBERS", "a", "b"), ("SISMEMBER", "s"), ("SMOVE", "a", "b"),
        ("SINTERCARD", "1"), ("SPOP",), ("SRANDMEMBER",), ("SSCAN", "s"),
    ],
    "smove": [
        ("SADD", "a", "1", "2", "x"), ("SADD", "b", "3"), ("SMOVE", "a", "b", "x"),
        ("SMEMBERS", "a"), ("SMEMBERS", "b"), ("OBJECT", "ENCODING", "b"),
        ("SMOVE", "a", "b", "nope"), ("SMOVE", "a", "a", "1"), ("SMOVE", "a", "a", "zz"),
        ("SMOVE", "nokey", "b", "1"), ("SET", "str", "v"), ("SMOVE", "nokey", "str", "1"),
        ("SMOVE", "a", "str", "1"), ("SMOVE", "str", "a", "1"), ("SMOVE", "a", "c", "1"),
        ("SMOVE", "a", "c", "2"), ("EXISTS", "a"), ("SMEMBERS", "c"),
        ("OBJECT", "ENCODING", "c"), ("SMOVE", "c", "d", "9999999999999999999999"),
        ("OBJECT", "ENCODING", "d"),
    ],
    "inter": [
        ("SADD", "i1", "1", "2", "3", "4"), ("SADD", "i2", "2", "3", "5"),
        ("SADD", "l1", "3", "x", "2", "y"), ("SINTER", "i1", "i2"), ("SINTER", "i1", "l1"),
        ("SINTER", "l1", "i1"), ("SINTER", "i1", "i1"), ("SINTER", "i1", "nokey"),
        ("SINTER", "nokey", "i1"), ("SET", "str", "v"), ("SINTER", "nokey", "str"),
        ("SINTER", "i1", "str"), ("SINTERSTORE", "d", "i1", "i2"), ("SMEMBERS", "d"),
        ("OBJECT", "ENCODING", "d"), ("SINTERSTORE", "d", "l1", "i1"), ("SMEMBERS", "d"),
        ("OBJECT", "ENCODING", "d"), ("SINTERSTORE", "d", "l1", "l1"),
        ("OBJECT", "ENCODING", "d"), ("SMEMBERS", "d"), ("SINTERSTORE", "d", "i1", "nokey"),
        ("EXISTS", "d"), ("SINTERSTORE", "d", "i1", "nokey"), ("SINTERSTORE", "str", "i1"),
        ("TYPE", "str"), ("SINTERCARD", "2", "i1", "i2"), ("SINTERCARD", "2", "i1", "i2",
                                                           "LIMIT", "1"),
        ("SINTERCARD", "2", "i1", "i2", "LIMIT", "0"), ("SINTERCARD", "1", "i1", "limit", "2"),
        ("SINTERCARD", "0", "i1"), ("SINTERCARD", "-1", "i1"), ("SINTERCARD", "x", "i1"),
        ("SINTERCARD", "3", "i1", "i2"), ("SINTERCARD", "1", "i1", "LIMIT", "-1"),
        ("SINTERCARD", "1", "i1", "LIMIT", "x"), ("SINTERCARD", "1", "i1", "LIMIT"),
        ("SINTERCARD", "1", "i1", "FOO", "1"), ("SINTERCARD", "2", "i1", "nokey"),
        ("SINTERCARD", "2", "i1", "str"),
    ],
    "union_diff": [
        ("SADD", "i1", "1", "2", "3"), ("SADD", "i2", "3", "4"), ("SADD", "l1", "x", "3"),
        ("SUNION", "i1", "i2"), ("SUNION", "i1", "nokey", "i2"), ("SDIFF", "i1", "i2"),
        ("SDIFF", "i1", "i1"), ("SDIFF", "i2", "i1", "i2"), ("SDIFF", "nokey", "i1"),
        ("SUNIONSTORE", "u", "i1", "i2"), ("OBJECT", "ENCODING", "u"), ("SMEMBERS", "u"),
        ("SUNIONSTORE", "u", "i1", "l1"), ("OBJECT", "ENCODING", "u"), ("SMEMBERS", "u"),
        ("SDIFFSTORE", "u", "l1", "i1"), ("OBJECT", "ENCODING", "u"), ("SMEMBERS", "u"),
        ("SDIFFSTORE", "u", "i1", "i1"), ("EXISTS", "u"), ("SUNIONSTORE", "u", "nokey"),
        ("SET", "str", "v"), ("SUNION", "i1", "str"), ("SDIFF", "str"),
        ("SDIFFSTORE", "x", "nokey", "str"), ("SUNIONSTORE", "str", "i1"), ("TYPE", "str"),
        ("SADD", "big", *range(600)), ("SDIFFSTORE", "d", "big", "i1"), ("SCARD", "d"),
        ("OBJECT", "ENCODING", "d"), ("SDIFFSTORE", "d", "i1", "big"), ("EXISTS", "d"),
        ("SADD", "many", *range(100)), ("SDIFFSTORE", "d", "many", *[f"k{i}" for i in range(5)],
                                        "i1"),
        ("OBJECT", "ENCODING", "d"), ("SCARD", "d"),
    ],
    "count_arguments": [
        ("SADD", "s", "a", "b", "c"), ("SPOP", "s", "0"), ("SPOP", "s", "-1"),
        ("SPOP", "s", "x"), ("SPOP", "s", "1", "2"), ("SPOP", "nokey", "0"),
        ("SPOP", "nokey", "5"), ("SPOP", "nokey"), ("SRANDMEMBER", "s", "0"),
        ("SRANDMEMBER", "s", "x"), ("SRANDMEMBER", "s", "1", "2"),
        ("SRANDMEMBER", "s", "-9223372036854775808"), ("SRANDMEMBER", "s", "9223372036854775807"),
        ("SRANDMEMBER", "nokey", "-5"), ("SRANDMEMBER", "nokey"), ("SSCAN", "s", "x"),
        ("SSCAN", "s", "-1"), ("SSCAN", "nokey", "0", "COUNT", "0"), ("SSCAN", "s", "0",
                                                                       "COUNT", "0"),
        ("SSCAN", "s", "0", "COUNT", "x"), ("SSCAN", "s", "0", "MATCH"),
        ("SSCAN", "s", "0", "MATCH", "[ab]"), ("SSCAN", "s", "0", "NOVALUES"),
        ("SSCAN", "s", "0", "TYPE", "set"), ("SSCAN", "s", "18446744073709551615"),
        ("SPOP", "s", "3"), ("EXISTS", "s"),
    ],
    "pop_everything_is_a_del": [
        ("SADD", "s", "1", "2", "3"), ("SPOP", "s", "3"), ("EXISTS", "s"),
        ("SADD", "s", "a", "b"), ("SPOP", "s", "10"), ("EXISTS", "s"),
    ],
}


@pytest.mark.parametrize("name", SEQUENCES)
def test_sequence(raw_pair: tuple[RawClient, RawClient], name: str) -> None:
    ours, theirs = raw_pair
    for c in raw_pair:
        c.call("FLUSHALL")
    for argv in SEQUENCES[name]:
        a, b = ours.call(*argv), theirs.call(*argv)
        if argv[0] in ("SMEMBERS", "SINTER", "SUNION", "SDIFF", "SPOP"):
            same_unordered(a, b, argv)
        else:
            assert a == b, (argv, a, b)


@pytest.mark.parametrize("kind, members, count", [
    ("intset", [str(i) for i in range(20)], 18),  # case 3: rebuilt as an intset
    ("listpack", [f"m{i}" for i in range(20)], 18),  # case 3 of a listpack
    ("hashtable", [f"m{i}" for i in range(200)], 190),  # case 3: the rest as a listpack
    ("hashtable", [f"m{i}" for i in range(1000)], 800),  # case 3: the rest is a hash table
    ("listpack", [f"m{i}" for i in range(20)], 2),  # case 2
    ("hashtable", [f"m{i}" for i in range(200)], 20),  # case 2
])
def test_spop_leaves_what_redis_leaves(raw_pair: tuple[RawClient, RawClient], kind: str,
                                       members: list[str], count: int) -> None:
    """SPOP with a count: the popped members are distinct members of the set, what stays is
    the rest, and its encoding is the one Redis's case analysis gives."""
    results = []
    for c in raw_pair:
        c.call("FLUSHALL")
        c.call("SADD", "s", *members)
        assert parse(c.call("OBJECT", "ENCODING", "s")) == kind.encode()
        raw = c.call("SPOP", "s", count)
        popped = parse(raw)
        rest = set(parse(c.call("SMEMBERS", "s")))
        assert len(set(popped)) == count == len(popped)
        assert set(popped) | rest == {m.encode() for m in members} and not set(popped) & rest
        results.append((raw[:1], len(rest), parse(c.call("OBJECT", "ENCODING", "s"))))
    assert results[0] == results[1]


@pytest.mark.parametrize("members", [[str(i) for i in range(10)], [f"m{i}" for i in range(10)],
                                     [f"m{i}" for i in range(300)]])
@pytest.mark.parametrize("count", ["1", "3", "-5", "8", "100", "-1000", "250"])
def test_srandmember_invariants(raw_pair: tuple[RawClient, RawClient], members: list[str],
                                count: str) -> None:
    n = int(count)
    shapes = []
    for c in raw_pair:
        c.call("FLUSHALL")
        c.call("SADD", "s", *members)
        raw = c.call("SRANDMEMBER", "s", count)
        got = parse(raw)
        assert set(got) <= {m.encode() for m in members}
        if n > 0:
            assert len(got) == min(n, len(members)) == len(set(got))
        else:
            assert len(got) == -n
        shapes.append(raw[:1])
        one = parse(c.call("SRANDMEMBER", "s"))
        assert one in {m.encode() for m in members}
    assert shapes[0] == shapes[1]


def test_sscan_of_a_hash_table_returns_every_member(raw_pair: tuple[RawClient, RawClient]
                                                     ) -> None:
    members = [f"member:{i}" for i in range(500)]
    for c in raw_pair:
        c.call("SADD", "s", *members)
    ours, theirs = (scan_all(c, "s") for c in raw_pair)
    assert sorted(set(ours)) == sorted(set(theirs)) == sorted(m.encode() for m in members)
    assert len(ours) == 500  # nothing changed meanwhile: each member once
    for c in raw_pair:  # MATCH
        got = parse(c.call("SSCAN", "s", "0", "MATCH", "member:1*", "COUNT", "1000"))
        assert sorted(got[1]) == sorted(m.encode() for m in members if m.startswith("member:1"))


# -- generated sequences ---------------------------------------------------------------------

KEYS = st.sampled_from(["a", "b", "c", "n"])
# Mostly integers (intsets fill up to their limits), a few strings of each kind: short, long
# (past the tiny set-max-listpack-value), and integer-looking but not canonical.
MEMBERS = st.one_of(st.sampled_from(["1", "2", "3", "4", "5", "-1", "9223372036854775807"]),
                    st.sampled_from(["x", "y", "007", "-0", "9223372036854775808",
                                     "long-member-1"]))
SADD = st.tuples(st.just("SADD"), KEYS, st.lists(MEMBERS, min_size=1, max_size=6)).map(
    lambda t: (t[0], t[1], *t[2]))
COMMAND = st.one_of(
    SADD, SADD, SADD, SADD,  # state first: sets that grow past the limits
    st.tuples(st.just("OBJECT"), st.just("ENCODING"), KEYS),
    st.tuples(st.sampled_from(["SREM", "SMISMEMBER"]), KEYS,
              st.lists(MEMBERS, min_size=1, max_size=4)).map(lambda t: (t[0], t[1], *t[2])),
    st.tuples(st.just("SISMEMBER"), KEYS, MEMBERS),
    st.tuples(st.sampled_from(["SCARD", "SMEMBERS", "TYPE", "EXISTS", "DEL"]), KEYS),
    st.tuples(st.just("OBJECT"), st.just("ENCODING"), KEYS),
    st.tuples(st.just("SMOVE"), KEYS, KEYS, MEMBERS),
    st.tuples(st.sampled_from(["SINTER", "SUNION", "SDIFF"]),
              st.lists(KEYS, min_size=1, max_size=3)).map(lambda t: (t[0], *t[1])),
    st.tuples(st.sampled_from(["SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"]), KEYS,
              st.lists(KEYS, min_size=1, max_size=3)).map(lambda t: (t[0], t[1], *t[2])),
    st.tuples(st.just("SINTERCARD"), st.just("2"), KEYS, KEYS,
              st.sampled_from([(), ("LIMIT", "0"), ("LIMIT", "1")])).map(
        lambda t: (*t[:4], *t[4])),
    st.tuples(st.just("SET"), st.just("n"), st.just("str")),
    st.tuples(st.just("SPOP"), KEYS, st.sampled_from([None, "1", "2", "5"])),
    st.tuples(st.just("SRANDMEMBER"), KEYS, st.sampled_from([None, "2", "-3", "9"])),
    st.tuples(st.just("SSCAN"), KEYS),
)


def _members(client: RawClient, key: str) -> list[bytes] | None:
    reply = parse(client.call("SMEMBERS", key))
    return reply if isinstance(reply, list) else None


def run_sequence(pair: tuple[RawClient, RawClient], commands: list[tuple[Any, ...]]) -> None:
    ours, theirs = pair
    for c in pair:
        c.call("FLUSHALL")
    for argv in commands:
        head = argv[0]
        if head == "SPOP":
            key = argv[1]
            before = _members(theirs, key)
            args = argv if argv[2] is not None else argv[:2]
            a, b = ours.call(*args), theirs.call(*args)
            assert a[:1] == b[:1], (args, a, b)
            if before and a[:1] != b"-":
                got_a, got_b = parse(a), parse(b)
                if args[2:]:
                    assert len(got_a) == len(got_b) == min(int(args[2]), len(before))
                    assert set(got_a) <= set(before) and set(got_b) <= set(before)
                else:
                    assert got_a in before and got_b in before
                # the same state on both again, built the same way
                rest = _members(ours, key)
                for c in pair:
                    c.call("DEL", key)
                    if rest:
                        c.call("SADD", key, *rest)
            continue
        if head == "SRANDMEMBER":
            args = argv if argv[2] is not None else argv[:2]
            a, b = ours.call(*args), theirs.call(*args)
            assert a[:1] == b[:1], (args, a, b)
            members = _members(theirs, argv[1]) or []
            if a[:1] != b"-":
                got = parse(a)
                for m in (got if isinstance(got, list) else [got] if got else []):
                    assert m in members
            continue
        if head == "SSCAN":
            a, b = ours.call("SSCAN", argv[1], "0"), theirs.call("SSCAN", argv[1], "0")
            if a[:1] == b"-" or b[:1] == b"-":
                assert a == b
            else:
                assert sorted(scan_all(ours, argv[1])) == sorted(scan_all(theirs, argv[1]))
            continue
        a, b = ours.call(*argv), theirs.call(*argv)
        if head in ("SMEMBERS", "SINTER", "SUNION", "SDIFF"):
            same_unordered(a, b, argv)
        else:
            assert a == b, (argv, a, b)
    for key in ("a", "b", "c"):
        same_unordered(ours.call("SMEMBERS", key), theirs.call("SMEMBERS", key), ("end", key))
        assert ours.call("OBJECT", "ENCODING", key) == theirs.call("OBJECT", "ENCODING", key)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(COMMAND, min_size=5, max_size=30))
def test_random_sequences(raw_pair: tuple[RawClient, RawClient],
                          commands: list[tuple[Any, ...]]) -> None:
    run_sequence(raw_pair, commands)


@pytest.fixture(scope="module")
def small_limits() -> Iterator[tuple[ThreadedServer, ProcessServer]]:
    require_redis_server()
    ours = ThreadedServer([f"{k} {v}" for k, v in SMALL_LIMITS.items()]).start()
    args = [x for k, v in SMALL_LIMITS.items() for x in (f"--{k}", v)]
    theirs = ProcessServer("redis", args).start()
    yield ours, theirs
    ours.stop()
    theirs.stop()


@pytest.mark.parametrize("protocol", [2, 3])
def test_random_sequences_with_tiny_encoding_limits(
        small_limits: tuple[ThreadedServer, ProcessServer], protocol: int) -> None:
    pair = (RawClient(small_limits[0].port, protocol), RawClient(small_limits[1].port, protocol))

    @settings(max_examples=100, deadline=None)
    @given(st.lists(COMMAND, min_size=5, max_size=30))
    def check(commands: list[tuple[Any, ...]]) -> None:
        run_sequence(pair, commands)

    try:
        check()
    finally:
        for c in pair:
            c.close()
