"""Sorted sets against redis-server 8.6.3: the same commands, the same reply bytes, RESP2 and
RESP3.

* fixed sequences over every sorted-set command, option and error path: score parsing
  (``inf``, ``(`` bounds, hex, overflow, NaN), Redis's double printing (RESP2 bulk strings,
  RESP3 doubles), ranks, ranges, LIMIT, lex ranges, the set operations with WEIGHTS and
  AGGREGATE (plain sets as inputs too), pops, and the encodings after each kind of write;
* hypothesis-generated sequences, with Redis's default settings and with tiny
  ``zset-max-listpack-*`` limits (listpack -> skiplist conversions everywhere);
* ZRANDMEMBER (random) and the ZSCAN of a skiplist (cursor-shaped) by what must hold.

Everything else is deterministic in a sorted set (ties are ordered by member bytes), so it
is compared byte for byte. Lex ranges are only asked of a key whose members all have the
same score, as Redis documents; with mixed scores a skiplist's answer depends on its random
levels.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.differential.test_sets_diff import parse
from tests.support import ProcessServer, RawClient, ThreadedServer, require_redis_server

pytestmark = [pytest.mark.differential, pytest.mark.timeout(120)]

SMALL_LIMITS = {"zset-max-listpack-entries": "3", "zset-max-listpack-value": "8"}

SCORES = ["0", "1", "-1", "1.5", "-0", "inf", "-inf", "+inf", "1e-7", "0.1", "-2.5", "1e300",
          "4.5e18", "1e18", "0x1p3", "+2", "1e-320"]

SEQUENCES: dict[str, list[tuple[Any, ...]]] = {
    "scores_parse_and_print": [
        *[("ZADD", "z", s, f"m{i}") for i, s in enumerate(SCORES)],
        ("ZRANGE", "z", 0, -1, "WITHSCORES"), ("ZSCAN", "z", 0),
        *[("ZSCORE", "z", f"m{i}") for i in range(len(SCORES))],
        ("ZADD", "z", "nan", "x"), ("ZADD", "z", "abc", "x"), ("ZADD", "z", "1e400", "x"),
        ("ZADD", "z", "1e-400", "x"), ("ZADD", "z", " 1", "x"), ("ZADD", "z", "1 ", "x"),
        ("ZADD", "z", "", "x"), ("ZADD", "z", "(1", "x"), ("ZADD", "z", "1_0", "x"),
        ("ZINCRBY", "z", "abc", "m1"), ("ZINCRBY", "z", "-inf", "m5"), ("ZSCORE", "z", "m5"),
        ("CONFIG", "SET", "zset-max-listpack-entries", "0"),
        *[("ZADD", "sk", s, f"m{i}") for i, s in enumerate(SCORES)],
        ("OBJECT", "ENCODING", "sk"), ("ZRANGE", "sk", 0, -1, "WITHSCORES"),
        ("ZSCORE", "sk", "m4"), ("ZRANK", "sk", "m4", "WITHSCORE"),
        ("CONFIG", "SET", "zset-max-listpack-entries", "128"),
    ],
    "zadd_options": [
        ("ZADD", "z", "1", "a", "2", "b"), ("ZADD", "z", "NX", "5", "a", "3", "c"),
        ("ZADD", "z", "XX", "CH", "5", "a", "4", "d"), ("ZADD", "z", "GT", "CH", "1", "a"),
        ("ZADD", "z", "LT", "CH", "1", "a"), ("ZADD", "z", "XX", "GT", "CH", "9", "a", "9", "zz"),
        ("ZADD", "z", "INCR", "2", "b"), ("ZADD", "z", "INCR", "NX", "2", "b"),
        ("ZADD", "z", "INCR", "XX", "2", "zz"), ("ZADD", "z", "INCR", "GT", "-1", "b"),
        ("ZADD", "z", "INCR", "LT", "-1", "b"), ("ZADD", "z", "NX", "XX", "1", "a"),
        ("ZADD", "z", "GT", "LT", "1", "a"), ("ZADD", "z", "NX", "GT", "1", "a"),
        ("ZADD", "z", "INCR", "1", "a", "1", "b"), ("ZADD", "z", "1"), ("ZADD", "z", "CH"),
        ("ZADD", "z", "1", "a", "2"), ("ZADD", "z", "nx", "xx"), ("ZADD", "z", "ch", "1", "a"),
        ("ZADD", "nokey", "XX", "1", "a"), ("EXISTS", "nokey"), ("ZADD", "nokey", "XX", "INCR",
                                                                  "1", "a"),
        ("ZINCRBY", "z", "nx", "a"), ("ZINCRBY", "new", "3", "m"), ("ZRANGE", "z", 0, -1,
                                                                   "WITHSCORES"),
        ("ZADD", "z", "inf", "i"), ("ZADD", "z", "INCR", "-inf", "i"), ("ZSCORE", "z", "i"),
        ("SET", "str", "v"), ("ZADD", "str", "1", "a"), ("ZADD", "str", "x", "a"),
        ("ZINCRBY", "str", "1", "a"), ("ZADD", "z", "1", "a", "x", "b"), ("ZCARD", "z"),
    ],
    "reads": [
        ("ZADD", "z", "1", "a", "1", "b", "2", "c", "3", "d", "3", "e"),
        ("ZCARD", "z"), ("ZCARD", "nokey"), ("ZSCORE", "nokey", "a"), ("ZMSCORE", "z", "a", "x"),
        ("ZMSCORE", "nokey", "a", "b"), ("ZRANK", "z", "c"), ("ZRANK", "z", "x"),
        ("ZRANK", "z", "c", "WITHSCORE"), ("ZRANK", "z", "x", "WITHSCORE"),
        ("ZRANK", "nokey", "x", "WITHSCORE"), ("ZRANK", "z", "c", "WITHSCORES"),
        ("ZRANK", "z", "c", "WITHSCORE", "x"), ("ZREVRANK", "z", "a", "withscore"),
        ("ZCOUNT", "z", "-inf", "+inf"), ("ZCOUNT", "z", "(1", "3"), ("ZCOUNT", "z", "1", "(3"),
        ("ZCOUNT", "z", "(3", "3"), ("ZCOUNT", "z", "3", "1"), ("ZCOUNT", "z", "", "("),
        ("ZCOUNT", "z", "x", "1"), ("ZCOUNT", "z", "0x1", "5"), ("ZCOUNT", "z", "1e400", "+inf"),
        ("ZCOUNT", "z", "nan", "1"), ("ZCOUNT", "z", "(inf", "+inf"), ("ZCOUNT", "nokey", "0",
                                                                       "1"),
        ("SET", "str", "v"), ("ZCOUNT", "str", "0", "1"), ("ZCOUNT", "str", "x", "1"),
        ("ZSCORE", "str", "a"), ("ZMSCORE", "str", "a"), ("ZRANK", "str", "a"),
        ("ZCARD", "str"),
    ],
    "ranges": [
        ("ZADD", "z", *[x for i in range(10) for x in (str(i % 4), f"m{i}")]),
        ("ZRANGE", "z", 0, -1), ("ZRANGE", "z", 2, 4, "WITHSCORES"), ("ZRANGE", "z", -3, -1),
        ("ZRANGE", "z", 5, 2), ("ZRANGE", "z", 0, 100), ("ZRANGE", "z", -100, 1),
        ("ZRANGE", "z", 0, 1, "REV", "WITHSCORES"), ("ZRANGE", "z", "(1", "3", "BYSCORE"),
        ("ZRANGE", "z", "3", "(1", "BYSCORE", "REV", "WITHSCORES"),
        ("ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "2", "3"),
        ("ZRANGE", "z", "+inf", "-inf", "BYSCORE", "REV", "LIMIT", "1", "-1"),
        ("ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "-1", "3"),
        ("ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "10", "3"),
        ("ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "0", "0"),
        ("ZRANGE", "z", 0, 1, "LIMIT", "0", "1"), ("ZRANGE", "z", 0, 1, "LIMIT", "0", "-1"),
        ("ZRANGE", "z", "[a", "[z", "BYLEX", "WITHSCORES"), ("ZRANGE", "z", 0, 1, "BYSCORE",
                                                             "BYLEX"),
        ("ZRANGE", "z", 0, 1, "REV", "REV"), ("ZRANGE", "z", "x", 1), ("ZRANGE", "z", 0, 1,
                                                                       "FOO"),
        ("ZRANGE", "z", 0, 1, "LIMIT", "x", "1"), ("ZRANGE", "z", 0, 1, "LIMIT", "1"),
        ("ZRANGE", "nokey", 0, -1), ("ZRANGE", "nokey", "x", "y"),
        ("ZRANGEBYSCORE", "z", "1", "2", "WITHSCORES", "LIMIT", "1", "2"),
        ("ZRANGEBYSCORE", "z", "1", "2", "REV"), ("ZRANGEBYSCORE", "z", "1", "2", "BYSCORE"),
        ("ZREVRANGEBYSCORE", "z", "2", "1"), ("ZREVRANGEBYSCORE", "z", "1", "2"),
        ("ZREVRANGEBYSCORE", "z", "+inf", "-inf", "WITHSCORES", "LIMIT", "0", "3"),
        ("ZREVRANGE", "z", 0, 2, "WITHSCORES"), ("ZREVRANGE", "z", 0, 2, "BYSCORE"),
        ("ZRANGESTORE", "d", "z", 1, 3), ("ZRANGE", "d", 0, -1, "WITHSCORES"),
        ("OBJECT", "ENCODING", "d"), ("ZRANGESTORE", "d", "z", "(1", "+inf", "BYSCORE", "REV",
                                      "LIMIT", "0", "2"),
        ("ZRANGE", "d", 0, -1, "WITHSCORES"), ("ZRANGESTORE", "d", "z", 5, 1), ("EXISTS", "d"),
        ("ZRANGESTORE", "d", "nokey", 0, -1), ("ZRANGESTORE", "d", "z", 0, -1, "WITHSCORES"),
        ("SET", "str", "v"), ("ZRANGESTORE", "str", "z", 0, 0), ("TYPE", "str"),
        ("ZRANGESTORE", "d", "str", 0, 0), ("ZRANGE", "str", 0, 1), ("ZRANGE", "str", "x", 1),
    ],
    "lex": [
        ("ZADD", "l", *[x for m in "abcdefg" for x in ("0", m)]),
        ("ZRANGEBYLEX", "l", "-", "+"), ("ZRANGEBYLEX", "l", "[b", "(e"),
        ("ZRANGEBYLEX", "l", "(b", "[e", "LIMIT", "1", "2"), ("ZRANGEBYLEX", "l", "+", "-"),
        ("ZRANGEBYLEX", "l", "[z", "+"), ("ZRANGEBYLEX", "l", "-", "[a"),
        ("ZRANGEBYLEX", "l", "[a", "[a"), ("ZRANGEBYLEX", "l", "(a", "[a"),
        ("ZREVRANGEBYLEX", "l", "+", "-", "LIMIT", "0", "3"),
        ("ZREVRANGEBYLEX", "l", "[e", "(b"), ("ZREVRANGEBYLEX", "l", "(b", "[e"),
        ("ZRANGE", "l", "[c", "+", "BYLEX", "LIMIT", "1", "10"),
        ("ZRANGE", "l", "+", "[c", "BYLEX", "REV"), ("ZLEXCOUNT", "l", "-", "+"),
        ("ZLEXCOUNT", "l", "[b", "(d"), ("ZLEXCOUNT", "l", "b", "d"),
        ("ZLEXCOUNT", "l", "-x", "+"), ("ZLEXCOUNT", "l", "[", "("),
        ("ZRANGEBYLEX", "l", "a", "b"), ("ZRANGEBYLEX", "l", "[a", "+", "WITHSCORES"),
        ("ZREMRANGEBYLEX", "l", "[b", "[d"), ("ZRANGE", "l", 0, -1),
        ("ZREMRANGEBYLEX", "l", "-", "+"), ("EXISTS", "l"), ("ZLEXCOUNT", "nokey", "-", "+"),
        # mixed scores in a listpack: Redis walks from the ends
        ("ZADD", "mix", "1", "z", "2", "a", "3", "m"), ("ZRANGEBYLEX", "mix", "[b", "+"),
        ("ZREVRANGEBYLEX", "mix", "+", "[b"), ("ZLEXCOUNT", "mix", "-", "[n"),
    ],
    "remove_ranges_and_pops": [
        ("ZADD", "z", *[x for i in range(10) for x in (str(i), f"m{i}")]),
        ("ZREMRANGEBYRANK", "z", 0, 1), ("ZREMRANGEBYRANK", "z", -2, -1),
        ("ZREMRANGEBYRANK", "z", 5, 1), ("ZREMRANGEBYRANK", "z", "x", 1),
        ("ZREMRANGEBYSCORE", "z", "(2", "4"), ("ZREMRANGEBYSCORE", "z", "x", "1"),
        ("ZRANGE", "z", 0, -1, "WITHSCORES"), ("ZPOPMIN", "z"), ("ZPOPMAX", "z", "2"),
        ("ZPOPMIN", "z", "0"), ("ZPOPMIN", "z", "-1"), ("ZPOPMIN", "z", "x"),
        ("ZPOPMIN", "z", "1", "2"), ("ZPOPMAX", "nokey"), ("ZPOPMAX", "nokey", "0"),
        ("ZMPOP", "1", "z", "MIN"), ("ZMPOP", "2", "nokey", "z", "MAX", "COUNT", "5"),
        ("EXISTS", "z"), ("ZMPOP", "1", "z", "MIN"), ("ZMPOP", "0", "z", "MIN"),
        ("ZMPOP", "x", "z", "MIN"), ("ZMPOP", "1", "z", "FOO"), ("ZMPOP", "1", "z"),
        ("ZMPOP", "1", "z", "MIN", "COUNT", "0"), ("ZMPOP", "1", "z", "MIN", "COUNT", "x"),
        ("ZMPOP", "1", "z", "MIN", "COUNT", "1", "COUNT", "1"), ("ZMPOP", "2", "z"),
        ("SET", "str", "v"), ("ZMPOP", "2", "nokey", "str", "MIN"), ("ZPOPMIN", "str"),
        ("ZREMRANGEBYRANK", "str", 0, 1), ("ZREMRANGEBYRANK", "nokey", 0, 1),
        ("BZPOPMIN", "str", "0.01"), ("BZMPOP", "0.01", "1", "str", "MIN"),
        ("ZADD", "q", "1", "a", "2", "b", "3", "c"), ("BZPOPMAX", "nokey", "q", "0"),
        ("BZMPOP", "0", "2", "nokey", "q", "MIN", "COUNT", "9"), ("BZPOPMIN", "q", "0.01"),
        ("BZPOPMIN", "q", "abc"), ("BZPOPMIN", "q", "-1"), ("BZMPOP", "-1", "0", "q", "MIN"),
        ("BZMPOP", "0", "1", "q", "MID"),
    ],
    "set_operations": [
        ("ZADD", "a", "1", "x", "2", "y", "3", "z"), ("ZADD", "b", "10", "y", "20", "z",
                                                     "30", "w"),
        ("SADD", "s", "y", "v", "1"), ("ZUNION", "2", "a", "b", "WITHSCORES"),
        ("ZUNION", "3", "a", "b", "s", "WITHSCORES"), ("ZINTER", "2", "a", "b", "WITHSCORES"),
        ("ZINTER", "3", "a", "b", "s", "AGGREGATE", "MAX", "WITHSCORES"),
        ("ZINTER", "2", "a", "b", "WEIGHTS", "2", "0.5", "AGGREGATE", "min", "WITHSCORES"),
        ("ZUNION", "2", "a", "b", "WEIGHTS", "inf", "-inf", "WITHSCORES"),
        ("ZUNION", "2", "a", "a", "WITHSCORES"), ("ZINTER", "2", "a", "a", "WEIGHTS", "1", "2",
                                                   "WITHSCORES"),
        ("ZDIFF", "2", "a", "b", "WITHSCORES"), ("ZDIFF", "2", "a", "a"),
        ("ZDIFF", "3", "b", "nokey", "s"), ("ZDIFF", "1", "nokey"),
        ("ZINTERCARD", "2", "a", "b"), ("ZINTERCARD", "2", "a", "b", "LIMIT", "1"),
        ("ZINTERCARD", "2", "a", "b", "LIMIT", "-1"), ("ZINTERCARD", "2", "a", "b", "WITHSCORES"),
        ("ZUNIONSTORE", "d", "2", "a", "b"), ("ZRANGE", "d", 0, -1, "WITHSCORES"),
        ("OBJECT", "ENCODING", "d"), ("ZINTERSTORE", "d", "2", "a", "nokey"), ("EXISTS", "d"),
        ("ZDIFFSTORE", "d", "2", "b", "a"), ("ZRANGE", "d", 0, -1, "WITHSCORES"),
        ("ZDIFFSTORE", "d", "2", "b", "a", "WITHSCORES"), ("ZUNIONSTORE", "d", "1", "a",
                                                          "WITHSCORES"),
        ("ZUNION", "0", "a"), ("ZUNION", "-1", "a"), ("ZUNION", "x", "a"),
        ("ZUNION", "3", "a", "b"), ("ZUNIONSTORE", "d", "0", "a"), ("ZINTERCARD", "0", "a"),
        ("ZUNION", "1", "a", "WEIGHTS"), ("ZUNION", "1", "a", "WEIGHTS", "x"),
        ("ZUNION", "1", "a", "WEIGHTS", "nan"), ("ZUNION", "1", "a", "AGGREGATE", "avg"),
        ("ZUNION", "1", "a", "AGGREGATE"), ("ZDIFF", "1", "a", "WEIGHTS", "1"),
        ("SET", "str", "v"), ("ZUNION", "2", "a", "str"), ("ZUNION", "2", "str", "WEIGHTS", "x"),
        ("ZUNIONSTORE", "str", "1", "a"), ("TYPE", "str"),
        ("ZADD", "big", *[x for i in range(200) for x in (str(i), f"m{i}")]),
        ("ZUNIONSTORE", "d", "2", "big", "a"), ("OBJECT", "ENCODING", "d"),
        ("ZINTERSTORE", "d", "2", "big", "big"), ("OBJECT", "ENCODING", "d"), ("ZCARD", "d"),
        ("ZDIFFSTORE", "d", "2", "big", "a"), ("ZCARD", "d"),
    ],
    "encodings": [
        ("ZADD", "z", "1", "a"), ("OBJECT", "ENCODING", "z"),
        ("ZADD", "z", "1", "x" * 65), ("OBJECT", "ENCODING", "z"),
        ("ZADD", "w", *[x for i in range(129) for x in (str(i), f"m{i}")]),
        ("OBJECT", "ENCODING", "w"), ("ZADD", "v", *[x for i in range(128) for x in (str(i),
                                                                                     f"m{i}")]),
        ("OBJECT", "ENCODING", "v"), ("ZADD", "v", "1", "one-more"), ("OBJECT", "ENCODING", "v"),
        ("ZREMRANGEBYRANK", "v", 0, 100), ("OBJECT", "ENCODING", "v"),
        ("ZUNIONSTORE", "u", "1", "v"), ("OBJECT", "ENCODING", "u"),
        ("CONFIG", "SET", "zset-max-ziplist-entries", "2"), ("ZADD", "t", "1", "a", "2", "b"),
        ("OBJECT", "ENCODING", "t"), ("ZADD", "t", "3", "c"), ("OBJECT", "ENCODING", "t"),
        ("CONFIG", "GET", "zset-max-listpack-entries"),
        ("CONFIG", "SET", "zset-max-listpack-entries", "128"),
    ],
    # Ranges of a set large enough to span several sublists of its RankedList, read before
    # and after writes that move, add and remove members inside the ranges read (the reply
    # pieces kept beside the keys must follow), scores with zeros of both signs.
    "ranges_kept_pieces": [
        *[("ZADD", "r", *[x for i in range(j, j + 500) for x in (str(i % 700 / 4), f"m{i:05}")])
          for j in range(0, 3000, 500)],
        ("ZADD", "r", "-0", "negzero", "0", "zero"), ("OBJECT", "ENCODING", "r"),
        ("ZRANGE", "r", 0, 9), ("ZRANGE", "r", 0, 9, "WITHSCORES"), ("ZREVRANGE", "r", 0, 9),
        ("ZRANGE", "r", 995, 1010), ("ZRANGE", "r", 1990, 2010, "WITHSCORES"),
        ("ZRANGE", "r", -12, -1), ("ZRANGE", "r", 0, 9, "REV", "WITHSCORES"),
        ("ZADD", "r", "-1", "m00005", "0.1", "new"), ("ZRANGE", "r", 0, 9, "WITHSCORES"),
        ("ZREM", "r", "m00000", "m00700"), ("ZRANGE", "r", 0, 9), ("ZINCRBY", "r", "1000",
                                                                     "m00001"),
        ("ZRANGE", "r", -3, -1, "WITHSCORES"), ("ZREMRANGEBYRANK", "r", 500, 1700),
        ("ZRANGE", "r", 495, 510), ("ZCARD", "r"), ("ZRANK", "r", "m02999"),
        ("ZPOPMIN", "r", 300), ("ZRANGE", "r", 0, 9), ("ZRANGEBYSCORE", "r", "100", "(101"),
        ("ZRANGE", "r", "[m01", "(m0101", "BYLEX"), ("ZREVRANGEBYSCORE", "r", "+inf", "170",
                                                     "LIMIT", "2", "5"),
        ("ZREMRANGEBYSCORE", "r", "-inf", "150"), ("ZRANGE", "r", 0, 5, "WITHSCORES"),
        ("ZRANGE", "r", 0, -1), ("ZREMRANGEBYRANK", "r", 0, -1), ("EXISTS", "r"),
        ("ZADD", "s", "1", "a"), ("ZRANGE", "s", 0, 0), ("ZRANGE", "s", 1, 5),
        ("ZRANGE", "s", -5, -3), ("ZRANGE", "s", 0, -1, "WITHSCORES"), ("ZADD", "s", "-0", "a"),
        ("ZRANGE", "s", 0, -1, "WITHSCORES"), ("ZRANGE", "nokey", 0, 9), ("SET", "str", "v"),
        ("ZRANGE", "str", 0, 9), ("ZRANGE", "s", "x", 1), ("ZRANGE", "s", 0, "-01"),
    ],
    "wrong_arity": [
        ("ZADD", "z"), ("ZADD", "z", "1"), ("ZINCRBY", "z", "1"), ("ZREM", "z"), ("ZCARD",),
        ("ZSCORE", "z"), ("ZMSCORE", "z"), ("ZRANK", "z"), ("ZCOUNT", "z", "1"),
        ("ZRANGE", "z", "0"), ("ZRANGESTORE", "d", "z", "0"), ("ZPOPMIN",), ("ZMPOP", "1", "z"),
        ("BZPOPMIN", "z"), ("BZMPOP", "0", "1", "z"), ("ZUNION", "1"), ("ZINTERCARD", "1"),
        ("ZUNIONSTORE", "d", "1"), ("ZRANDMEMBER",), ("ZSCAN", "z"), ("ZLEXCOUNT", "z", "-"),
        ("ZREMRANGEBYSCORE", "z", "0"),
    ],
    "zrandmember_arguments": [
        ("ZADD", "z", "1", "a", "2", "b"), ("ZRANDMEMBER", "z", "0"),
        ("ZRANDMEMBER", "z", "x"), ("ZRANDMEMBER", "z", "1", "2"),
        ("ZRANDMEMBER", "z", "1", "WITHSCORES", "x"),
        ("ZRANDMEMBER", "z", "9223372036854775807", "WITHSCORES"),
        ("ZRANDMEMBER", "z", "-9223372036854775807", "WITHSCORES"),
        ("ZRANDMEMBER", "z", "-9223372036854775808"), ("ZRANDMEMBER", "z", "5", "WITHSCORES"),
        ("ZRANDMEMBER", "nokey", "5"), ("ZRANDMEMBER", "nokey"), ("ZRANDMEMBER", "nokey", "0"),
        ("ZSCAN", "z", "0", "COUNT", "0"), ("ZSCAN", "z", "0", "MATCH", "a"),
        ("ZSCAN", "z", "0", "NOVALUES"), ("ZSCAN", "z", "x"), ("ZSCAN", "nokey", "0"),
        ("SET", "str", "v"), ("ZRANDMEMBER", "str"), ("ZSCAN", "str", "0"),
    ],
}


@pytest.mark.parametrize("name", SEQUENCES)
def test_sequence(raw_pair: tuple[RawClient, RawClient], name: str) -> None:
    ours, theirs = raw_pair
    for c in raw_pair:
        c.call("FLUSHALL")
    for argv in SEQUENCES[name]:
        a, b = ours.call(*argv), theirs.call(*argv)
        assert a == b, (argv, a, b)


def zscan_all(client: RawClient, key: str) -> list[tuple[bytes, bytes]]:
    cursor, out = b"0", []
    while True:
        cursor, batch = parse(client.call("ZSCAN", key, cursor, "COUNT", "3"))
        out += list(zip(batch[0::2], batch[1::2], strict=True))
        if cursor == b"0":
            return out


def test_zscan_of_a_skiplist_returns_every_member_with_its_score(
        raw_pair: tuple[RawClient, RawClient]) -> None:
    pairs = [x for i in range(300) for x in (str(i / 7), f"m{i}")] + ["-0", "neg", "inf", "i"]
    for c in raw_pair:
        c.call("ZADD", "z", *pairs)
    ours, theirs = (zscan_all(c, "z") for c in raw_pair)
    assert len(ours) == 302 and sorted(ours) == sorted(theirs)


@pytest.mark.parametrize("size", [5, 300])
@pytest.mark.parametrize("count", ["1", "3", "-7", "4", "100", "250", "-1000"])
@pytest.mark.parametrize("withscores", [False, True])
def test_zrandmember_invariants(raw_pair: tuple[RawClient, RawClient], size: int, count: str,
                                withscores: bool) -> None:
    n = int(count)
    scores = {f"m{i}".encode(): float(i) / 3 for i in range(size)}
    shapes = []
    for c in raw_pair:
        c.call("FLUSHALL")
        c.call("ZADD", "z", *[x for m, s in scores.items() for x in (repr(s), m)])
        raw = c.call("ZRANDMEMBER", "z", count, *(["WITHSCORES"] if withscores else []))
        got = parse(raw)
        if withscores:
            if got and isinstance(got[0], list):
                got_pairs = got
            else:
                got_pairs = [got[i:i + 2] for i in range(0, len(got), 2)]
            for m, s in got_pairs:
                assert float(s) == scores[m]
            members = [m for m, _ in got_pairs]
        else:
            members = got
        assert set(members) <= set(scores)
        if n > 0:
            assert len(members) == min(n, size) == len(set(members))
        else:
            assert len(members) == -n
        shapes.append((raw[:1], raw.split(b"\r\n")[0] if not withscores or n < 0 else b""))
    assert shapes[0][0] == shapes[1][0]


# -- generated sequences ---------------------------------------------------------------------

KEYS = st.sampled_from(["a", "b", "c"])
SRC = st.sampled_from(["a", "b", "c", "L", "s", "n", "none"])
MEMBERS = st.sampled_from(["a", "b", "c", "d", "1", "10", "-1", "long-member-x"])
SCORE = st.sampled_from(["0", "1", "-1", "1.5", "-0", "inf", "-inf", "1e-7", "2", "3", "-2.5",
                         "0.1", "nan", "abc", "0x10"])
BOUND = st.sampled_from(["-inf", "+inf", "(1", "1", "(0", "0", "2", "(inf", "abc", "", "(",
                         "1e400", "-0"])
LEX = st.sampled_from(["-", "+", "[a", "(a", "[c", "(d", "[z", "a", "(", "["])
INDEX = st.sampled_from(["0", "1", "2", "-1", "-2", "5", "-10", "x"])
ZADD_FLAGS = st.sampled_from([(), ("NX",), ("XX",), ("GT",), ("LT",), ("CH",), ("INCR",),
                              ("XX", "GT", "CH"), ("NX", "XX"), ("GT", "LT"), ("NX", "INCR"),
                              ("LT", "CH")])
ZADD = st.tuples(KEYS, ZADD_FLAGS, st.lists(st.tuples(SCORE, MEMBERS), min_size=1,
                                            max_size=4)).map(
    lambda t: ("ZADD", t[0], *t[1], *[x for p in t[2] for x in p]))
LIMIT = st.sampled_from([(), ("LIMIT", "0", "2"), ("LIMIT", "1", "-1"), ("LIMIT", "-1", "1")])
WITHSCORES = st.sampled_from([(), ("WITHSCORES",)])


def _join(*parts: Any) -> tuple[str, ...]:
    out: list[str] = []
    for p in parts:
        out += list(p) if isinstance(p, tuple) else [p]
    return tuple(out)


COMMAND = st.one_of(
    ZADD, ZADD, ZADD, ZADD,
    st.tuples(st.just("ZADD"), st.just("L"), st.just("0"), MEMBERS),
    st.tuples(st.just("ZINCRBY"), KEYS, SCORE, MEMBERS),
    st.tuples(st.sampled_from(["ZREM", "ZMSCORE"]), st.sampled_from(["a", "b", "L"]),
              st.lists(MEMBERS, min_size=1, max_size=3)).map(lambda t: (t[0], t[1], *t[2])),
    st.tuples(st.sampled_from(["ZSCORE", "ZRANK", "ZREVRANK"]), SRC, MEMBERS, WITHSCORES).map(
        lambda t: _join(*t[:3], tuple(x[:-1] for x in t[3]) if t[0] != "ZSCORE" else ())),
    st.tuples(st.sampled_from(["ZCARD", "TYPE", "EXISTS", "DEL"]), SRC),
    st.tuples(st.just("OBJECT"), st.just("ENCODING"), SRC),
    st.tuples(st.sampled_from(["ZCOUNT", "ZREMRANGEBYSCORE"]), KEYS, BOUND, BOUND),
    st.tuples(st.just("ZRANGE"), SRC, INDEX, INDEX, st.sampled_from([(), ("REV",)]),
              WITHSCORES).map(lambda t: _join(*t)),
    st.tuples(st.just("ZRANGE"), SRC, BOUND, BOUND, st.just(("BYSCORE",)),
              st.sampled_from([(), ("REV",)]), LIMIT, WITHSCORES).map(lambda t: _join(*t)),
    st.tuples(st.sampled_from(["ZRANGEBYSCORE", "ZREVRANGEBYSCORE"]), SRC, BOUND, BOUND,
              WITHSCORES, LIMIT).map(lambda t: _join(*t)),
    st.tuples(st.sampled_from(["ZRANGEBYLEX", "ZREVRANGEBYLEX"]), st.just("L"), LEX, LEX,
              LIMIT).map(lambda t: _join(*t)),
    st.tuples(st.sampled_from(["ZLEXCOUNT", "ZREMRANGEBYLEX"]), st.just("L"), LEX, LEX),
    st.tuples(st.just("ZREMRANGEBYRANK"), SRC, INDEX, INDEX),
    st.tuples(st.just("ZRANGESTORE"), KEYS, SRC, INDEX, INDEX),
    st.tuples(st.just("ZRANGESTORE"), KEYS, SRC, BOUND, BOUND, st.just(("BYSCORE",)),
              st.sampled_from([(), ("REV",)]), LIMIT).map(lambda t: _join(*t)),
    st.tuples(st.sampled_from(["ZPOPMIN", "ZPOPMAX"]), SRC,
              st.sampled_from([(), ("0",), ("1",), ("2",), ("10",)])).map(lambda t: _join(*t)),
    st.tuples(st.just("ZMPOP"), st.just("2"), SRC, SRC, st.sampled_from(["MIN", "MAX"]),
              st.sampled_from([(), ("COUNT", "2")])).map(lambda t: _join(*t)),
    st.tuples(st.just("BZPOPMIN"), SRC, SRC, st.just("0.001")),
    st.tuples(st.sampled_from(["ZUNION", "ZINTER", "ZDIFF"]), st.just("2"), SRC, SRC,
              st.sampled_from([(), ("WEIGHTS", "2", "-1"), ("AGGREGATE", "MAX"),
                               ("WEIGHTS", "inf", "0", "AGGREGATE", "MIN")]),
              WITHSCORES).map(lambda t: _join(*t)),
    st.tuples(st.sampled_from(["ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"]), KEYS,
              st.just("2"), SRC, SRC,
              st.sampled_from([(), ("AGGREGATE", "SUM"), ("WEIGHTS", "0.5", "3")])).map(
        lambda t: _join(*t)),
    st.tuples(st.just("ZINTERCARD"), st.just("2"), SRC, SRC,
              st.sampled_from([(), ("LIMIT", "1")])).map(lambda t: _join(*t)),
    st.tuples(st.just("SADD"), st.just("s"), MEMBERS),
    st.tuples(st.just("SET"), st.just("n"), st.just("v")),
    st.tuples(st.just("ZRANDMEMBER"), SRC, st.sampled_from([None, "2", "-3", "9"])),
    st.tuples(st.just("ZSCAN"), SRC),
)


def run_sequence(pair: tuple[RawClient, RawClient], commands: list[tuple[Any, ...]]) -> None:
    ours, theirs = pair
    for c in pair:
        c.call("FLUSHALL")
    for argv in commands:
        if argv[0] == "ZRANDMEMBER":
            args = argv if argv[2] is not None else argv[:2]
            a, b = ours.call(*args), theirs.call(*args)
            assert a[:1] == b[:1], (args, a, b)
            continue
        if argv[0] == "ZSCAN":
            a, b = ours.call("ZSCAN", argv[1], "0"), theirs.call("ZSCAN", argv[1], "0")
            enc = theirs.call("OBJECT", "ENCODING", argv[1])
            if a[:1] == b"-" or b[:1] == b"-" or enc != b"$8\r\nskiplist\r\n":
                assert a == b, (argv, a, b)
            else:
                assert sorted(zscan_all(ours, argv[1])) == sorted(zscan_all(theirs, argv[1]))
            continue
        a, b = ours.call(*argv), theirs.call(*argv)
        assert a == b, (argv, a, b)
    for key in ("a", "b", "c", "L"):
        for probe in (("ZRANGE", key, 0, -1, "WITHSCORES"), ("OBJECT", "ENCODING", key)):
            assert ours.call(*probe) == theirs.call(*probe), probe


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
