"""The sorted set value type (``sluice.storage.zsets``) and score parsing (``scores``)."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.storage import rdb
from sluice.storage.rankedlist import RankedList
from sluice.storage.scores import (
    LexRange,
    parse_lex_range,
    parse_score_range,
    range_strtod,
    string2d,
    zscan_score,
)
from sluice.storage.zsets import (
    DEFAULT_LIMITS,
    IN_GT,
    IN_INCR,
    IN_LT,
    IN_NX,
    IN_XX,
    LISTPACK,
    OUT_ADDED,
    OUT_NAN,
    OUT_NOP,
    OUT_UPDATED,
    SKIPLIST,
    ZSetValue,
    decode_scores,
    key,
    key_score,
)


class Limits:
    def __init__(self, entries: int = 128, value: int = 64) -> None:
        self.zset_max_listpack_entries = entries
        self.zset_max_listpack_value = value


def make(pairs: dict[bytes, float], enc: int = LISTPACK) -> ZSetValue:
    return ZSetValue.from_entries([(s, m) for m, s in pairs.items()], enc)


# -- parsing -------------------------------------------------------------------------------


@pytest.mark.parametrize("raw, value", [
    (b"1.5", 1.5), (b"+1.5", 1.5), (b"0x10", 16.0), (b"0x1p3", 8.0), (b"inf", math.inf),
    (b"-INF", -math.inf), (b"infinity", math.inf), (b".5", 0.5), (b"5.", 5.0),
    (b"1E5", 1e5), (b"4e-320", 4e-320), (b"-0", -0.0), (b"00012", 12.0),
])
def test_string2d_accepts_what_redis_accepts(raw: bytes, value: float) -> None:
    got = string2d(raw)
    assert got == value and math.copysign(1, got) == math.copysign(1, value)  # type: ignore[arg-type]


@pytest.mark.parametrize("raw", [b"", b" 1", b"1 ", b"1e400", b"-1e400", b"1e-400", b"nan",
                                 b"-nan", b"1_0", b"1e", b"e5", b"abc", b"0x", b"1\x00",
                                 b"infinit", b"nan(1)"])
def test_string2d_refuses_what_redis_refuses(raw: bytes) -> None:
    assert string2d(raw) is None


@pytest.mark.parametrize("raw, value", [
    (b"", 0.0), (b"1", 1.0), (b"+1", 1.0), (b"1e400", math.inf), (b"-1e400", -math.inf),
    (b"1e-400", 0.0), (b"inf", math.inf), (b"-inf", -math.inf), (b"2.", 2.0),
    (b"3\x00junk", 3.0),
])
def test_range_bounds_read_as_fast_float_reads_them(raw: bytes, value: float) -> None:
    assert range_strtod(raw) == value


@pytest.mark.parametrize("raw", [b"0x10", b" 1", b"1 ", b"nan", b"1.5abc", b"-", b"."])
def test_range_bounds_refused(raw: bytes) -> None:
    assert range_strtod(raw) is None


def test_score_range_exclusive_bounds() -> None:
    rng = parse_score_range(b"(1", b"3")
    assert rng is not None and rng.minex and not rng.maxex
    assert not rng.gte_min(1.0) and rng.gte_min(1.5) and rng.lte_max(3.0)
    assert parse_score_range(b"(", b"(").is_empty()  # type: ignore[union-attr]
    assert parse_score_range(b"x", b"1") is None


def test_lex_range_items() -> None:
    assert parse_lex_range(b"a", b"+") is None
    assert parse_lex_range(b"-", b"+x") is None
    rng = parse_lex_range(b"[b", b"(d")
    assert isinstance(rng, LexRange)
    assert rng.gte_min(b"b") and not rng.lte_max(b"d") and rng.lte_max(b"c\xff")
    assert parse_lex_range(b"+", b"-").is_empty()  # type: ignore[union-attr]
    assert parse_lex_range(b"-", b"-").is_empty()  # type: ignore[union-attr]
    assert not parse_lex_range(b"-", b"+").is_empty()  # type: ignore[union-attr]


def test_zscan_scores_are_printed_with_17_digits() -> None:
    assert zscan_score(0.1) == b"0.10000000000000001"
    assert zscan_score(1e-7) == b"9.9999999999999995e-08"
    assert zscan_score(-math.inf) == b"-inf"
    assert zscan_score(3.0) == b"3"


# -- the value -------------------------------------------------------------------------------


def test_add_flags_follow_zsetadd() -> None:
    z = make({b"a": 1.0})
    lim = DEFAULT_LIMITS
    assert z.add(2.0, b"a", IN_NX, lim) == (OUT_NOP, 2.0)
    assert z.add(5.0, b"b", IN_XX, lim)[0] == OUT_NOP
    assert z.add(0.5, b"a", IN_GT, lim)[0] == OUT_NOP
    assert z.add(3.0, b"a", IN_GT, lim) == (OUT_UPDATED, 3.0)
    assert z.add(2.0, b"a", IN_INCR | IN_LT, lim) == (OUT_NOP, 5.0)
    assert z.add(-1.0, b"a", IN_INCR, lim) == (OUT_UPDATED, 2.0)
    assert z.add(2.0, b"a", 0, lim) == (0, 2.0)  # same score: neither added nor updated
    assert z.add(1.0, b"new", IN_GT, lim)[0] == OUT_ADDED  # GT/LT only gate updates
    z.add(math.inf, b"i", 0, lim)
    assert z.add(-math.inf, b"i", IN_INCR, lim)[0] == OUT_NAN
    assert z.score(b"i") == math.inf


def test_ties_are_ordered_by_member_bytes() -> None:
    z = make({b"b": 1.0, b"a": 1.0, b"\xff": 1.0, b"A": 1.0, b"c": 0.0})
    assert [m for _, m in z] == [b"c", b"A", b"a", b"b", b"\xff"]


def test_listpack_stores_minus_zero_as_zero_and_skiplist_keeps_it() -> None:
    lp = make({b"m": -0.0})
    assert math.copysign(1, lp.score(b"m")) == 1  # type: ignore[arg-type]
    sl = make({b"m": -0.0}, SKIPLIST)
    assert math.copysign(1, sl.score(b"m")) == -1  # type: ignore[arg-type]


def test_conversions() -> None:
    lim = Limits(entries=3, value=4)
    z = ZSetValue.create(2, 1, lim)
    for i, m in enumerate([b"a", b"b", b"c"]):
        z.add(float(i), m, 0, lim)
    assert z.encoding() == b"listpack"
    z.add(9.0, b"d", 0, lim)
    assert z.encoding() == b"skiplist"
    y = ZSetValue.create(1, 1, lim)
    y.add(1.0, b"toolong", 0, lim)
    assert y.encoding() == b"skiplist"
    assert ZSetValue.create(4, 1, lim).encoding() == b"skiplist"
    small = make({b"a": 1.0}, SKIPLIST)
    small.convert_to_listpack_if_needed(lim)
    assert small.encoding() == b"listpack"
    assert ZSetValue.from_scores({b"a": 1.0, b"b": 2.0}, lim).encoding() == b"listpack"
    assert ZSetValue.from_scores({b"longer": 1.0}, lim).encoding() == b"skiplist"


@pytest.mark.parametrize("enc", [LISTPACK, SKIPLIST])
def test_ranges_and_ranks(enc: int) -> None:
    z = make({b"m%d" % i: float(i) for i in range(10)}, enc)
    assert z.rank(b"m3") == (3, 3.0) and z.rank(b"m3", reverse=True) == (6, 3.0)
    assert z.rank(b"zz") is None
    assert z.rank_bounds(-3, -1) == (7, 10)
    assert z.rank_bounds(0, 1, reverse=True) == (8, 10)
    assert z.rank_bounds(5, 2) == (0, 0)
    assert z.score_bounds(parse_score_range(b"(2", b"5")) == (3, 6)  # type: ignore[arg-type]
    assert z.score_bounds(parse_score_range(b"-inf", b"+inf")) == (0, 10)  # type: ignore[arg-type]
    assert z.score_bounds(parse_score_range(b"(9", b"+inf")) == (0, 0)  # type: ignore[arg-type]
    rng = parse_score_range(b"1", b"8")
    got = z.entries(*z.limit_bounds(z.score_bounds(rng), 2, 3, reverse=True),  # type: ignore[arg-type]
                    reverse=True)
    assert [m for _, m in got] == [b"m6", b"m5", b"m4"]
    assert z.members(*z.limit_bounds((0, 10), 2, 3, True), reverse=True) == [b"m7", b"m6", b"m5"]
    assert z.limit_bounds((0, 10), 10, 5, False) == (0, 0)
    assert z.pop(2, highest=True) == [(9.0, b"m9"), (8.0, b"m8")]
    assert z.remove_positions(0, 3) == 3 and [m for _, m in z][:1] == [b"m3"]


@pytest.mark.parametrize("enc", [LISTPACK, SKIPLIST])
def test_lex_bounds_with_equal_scores(enc: int) -> None:
    z = make({m: 0.0 for m in (b"a", b"b", b"c", b"d", b"e")}, enc)
    assert z.lex_bounds(parse_lex_range(b"[b", b"(d")) == (1, 3)  # type: ignore[arg-type]
    assert z.lex_bounds(parse_lex_range(b"(b", b"+")) == (2, 5)  # type: ignore[arg-type]
    assert z.lex_bounds(parse_lex_range(b"-", b"[a")) == (0, 1)  # type: ignore[arg-type]
    assert z.lex_bounds(parse_lex_range(b"[z", b"+")) == (0, 0)  # type: ignore[arg-type]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([b"a", b"b", b"c", b"d", b"e", b"f"]),
                          st.sampled_from([-1.0, 0.0, 0.5, 1.0, 2.0, math.inf])), max_size=30),
       st.sampled_from([b"-", b"[a", b"(b", b"[c", b"(zz"]),
       st.sampled_from([b"+", b"[c", b"(d", b"[f", b"(a"]))
def test_skiplist_and_listpack_agree_on_everything(adds: list[tuple[bytes, float]],
                                                   lo: bytes, hi: bytes) -> None:
    lp, sl = ZSetValue(LISTPACK), ZSetValue(SKIPLIST)
    big = Limits(entries=1000)
    for m, s in adds:
        lp.add(s, m, 0, big)
        sl.add(s, m, 0, big)
    assert list(lp) == list(sl)
    scores = parse_score_range(b"(0", b"2")
    assert lp.score_bounds(scores) == sl.score_bounds(scores)  # type: ignore[arg-type]
    if len({s for s, _ in lp}) <= 1:  # lex ranges assume equal scores
        rng = parse_lex_range(lo, hi)
        assert lp.lex_bounds(rng) == sl.lex_bounds(rng)  # type: ignore[arg-type]


def test_random_entries_cases() -> None:
    z = make({b"m%d" % i: float(i) for i in range(300)}, SKIPLIST)
    random.seed(3)
    assert len({m for _, m in z.random_entries(100, True)}) == 100
    assert len({m for _, m in z.random_entries(10, True)}) == 10
    assert z.random_entries(500, True) == list(z)[::-1]
    assert len(z.random_entries(50, False)) == 50
    for s, m in z.random_entries(20, False):
        assert z.score(m) == s


@pytest.mark.parametrize("pairs", [{b"a": 1.5, b"b": -0.0, b"c": math.inf, b"d": 1e-7},
                                   {b"m%d" % i: i / 7 for i in range(300)}])
def test_rdb_round_trip(pairs: dict[bytes, float]) -> None:
    enc = LISTPACK if len(pairs) < 128 else SKIPLIST
    z = make(pairs, enc)
    back = rdb.load_payload(rdb.dump_payload(z))
    assert type(back) is ZSetValue
    assert back.encoding() == z.encoding() and list(back) == list(z)


def test_scan_of_a_skiplist_returns_everything() -> None:
    z = make({b"m%d" % i: float(i) for i in range(200)}, SKIPLIST)
    cursor, seen = 0, []
    while True:
        cursor, batch = z.scan(cursor, 10, None)
        seen += batch
        if not cursor:
            break
    assert sorted(seen) == list(z)


def scores_of(z: Any) -> list[float]:
    return [s for s, _ in z]


@pytest.mark.parametrize("size", [1, 10, 999, 5_000, 30_000])
def test_positional_slices_match_a_lists(size: int) -> None:
    """``RankedList.keys`` (what ``keys_at`` reads) gives what slicing a sorted list gives,
    for ranges inside one sublist, at the ends, and across sublists."""
    rnd = random.Random(size)
    model = sorted(b"%08d" % x for x in rnd.sample(range(10 * size), size))
    zsl = RankedList(model)
    for _ in range(300):
        start = rnd.choice([0, rnd.randrange(size), max(0, size - rnd.randrange(1, 20))])
        stop = min(size, start + rnd.choice([1, 10, rnd.randrange(1, 4000)]))
        if start < stop:
            assert zsl.keys(start, stop) == model[start:stop]


@given(st.lists(st.one_of(st.floats(allow_nan=False), st.sampled_from([0.0, -0.0, 5e-324])),
                min_size=1, max_size=200), st.sampled_from([None, "pos", "neg"]))
def test_scores_decoded_together_as_one_at_a_time(scores: list[float], sign: str | None
                                                  ) -> None:
    if sign == "pos":
        scores = [abs(s) for s in scores]
    elif sign == "neg":
        scores = [-abs(s) or 0.0 for s in scores]
    keys = sorted(key(s, b"m%d" % i) for i, s in enumerate(scores))
    assert list(decode_scores(keys)) == [key_score(k) for k in keys]
