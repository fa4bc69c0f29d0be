"""The set value type (``sluice.storage.sets``) and its hash table (``hashslots``)."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.storage import rdb
from sluice.storage.hashslots import HashSlots
from sluice.storage.load_limits import loading_with
from sluice.storage.sets import DEFAULT_LIMITS, SetValue, load_hashtable_set


class Limits:
    def __init__(self, intset: int = 512, entries: int = 128, value: int = 64) -> None:
        self.set_max_intset_entries = intset
        self.set_max_listpack_entries = entries
        self.set_max_listpack_value = value


def make(*members: bytes, limits: Any = DEFAULT_LIMITS) -> SetValue:
    s = SetValue.create(members[0], len(members), limits)
    for m in members:
        s.add(m, limits)
    return s


def test_integers_make_an_intset_kept_in_ascending_order() -> None:
    s = make(b"5", b"-3", b"100", b"5")
    assert s.encoding() == b"intset"
    assert list(s) == [b"-3", b"5", b"100"]
    assert b"5" in s and b"05" not in s and b"x" not in s and b"-0" not in s


def test_a_string_turns_an_intset_into_a_listpack_in_order() -> None:
    s = make(b"3", b"1", b"2")
    assert s.add(b"a", DEFAULT_LIMITS)
    assert s.encoding() == b"listpack"
    assert list(s) == [b"1", b"2", b"3", b"a"]
    assert s.remove(b"2") and list(s) == [b"1", b"3", b"a"]


def test_intset_limit_converts_to_hashtable() -> None:
    lim = Limits(intset=3)
    s = make(b"1", b"2", b"3", limits=lim)
    assert s.encoding() == b"intset"
    s.add(b"4", lim)
    assert s.encoding() == b"hashtable"
    assert sorted(s) == [b"1", b"2", b"3", b"4"]


def test_intset_with_wide_numbers_goes_to_hashtable_not_listpack() -> None:
    # the widest integer (sdigits10) would pass set-max-listpack-value
    lim = Limits(value=5)
    s = make(b"123456", limits=lim)
    s.add(b"a", lim)
    assert s.encoding() == b"hashtable"


def test_listpack_limits() -> None:
    lim = Limits(entries=2, value=3)
    s = make(b"a", b"b", limits=lim)
    assert s.encoding() == b"listpack"
    s.add(b"c", lim)
    assert s.encoding() == b"hashtable"
    s2 = make(b"a", limits=lim)
    s2.add(b"long", lim)
    assert s2.encoding() == b"hashtable"


def test_create_and_maybe_convert_use_the_size_hint() -> None:
    assert SetValue.create(b"1", 600, DEFAULT_LIMITS).encoding() == b"hashtable"
    assert SetValue.create(b"x", 128, DEFAULT_LIMITS).encoding() == b"listpack"
    assert SetValue.create(b"x", 129, DEFAULT_LIMITS).encoding() == b"hashtable"
    s = make(b"1")
    s.maybe_convert(513, DEFAULT_LIMITS)
    assert s.encoding() == b"hashtable" and list(s) == [b"1"]


def test_copy_is_independent_and_keeps_the_encoding() -> None:
    for members in ([b"1", b"2"], [b"a", b"b"], [b"m%d" % i for i in range(300)]):
        s = make(*members)
        dup = s.copy()
        assert dup.encoding() == s.encoding() and list(dup) == list(s)
        dup.add(b"new", DEFAULT_LIMITS)
        assert b"new" not in s


def test_pop_many_case_three_rebuilds_the_set() -> None:
    s = make(*[b"%d" % i for i in range(100)])
    popped, rebuilt = s.pop_many(95, DEFAULT_LIMITS)
    assert rebuilt is not None and rebuilt.encoding() == b"intset"
    assert len(popped) == 95 and len(rebuilt) == 5
    assert set(popped) | set(rebuilt) == {b"%d" % i for i in range(100)}
    big = make(*[b"m%d" % i for i in range(1000)])
    popped, rebuilt = big.pop_many(990, DEFAULT_LIMITS)
    assert rebuilt is not None and rebuilt.encoding() == b"listpack" and len(rebuilt) == 10
    assert not set(popped) & set(rebuilt)


def test_pop_many_case_two_pops_in_place() -> None:
    s = make(*[b"m%d" % i for i in range(50)])
    popped, rebuilt = s.pop_many(5, DEFAULT_LIMITS)
    assert rebuilt is None and len(popped) == 5 and len(s) == 45
    assert not set(popped) & set(s)


def test_random_members_cases() -> None:
    s = make(*[b"m%d" % i for i in range(300)])
    assert len(set(s.random_members(100, unique=True))) == 100  # case 3
    assert len(set(s.random_members(10, unique=True))) == 10  # case 4
    assert sorted(s.random_members(1000, unique=True)) == sorted(s)  # case 2
    assert len(s.random_members(1000, unique=False)) == 1000  # with replacement
    lp = make(*[b"m%d" % i for i in range(20)])
    picked = lp.random_members(5, unique=True)
    assert picked == [m for m in lp if m in picked]  # a listpack's selection keeps its order


@pytest.mark.parametrize("members", [[b"%d" % i for i in range(10)],
                                     [b"m%d" % i for i in range(10)],
                                     [b"m%d" % i for i in range(200)]])
def test_random_member_is_fair(members: list[bytes]) -> None:
    s = make(*members)
    for m in members[::2]:  # tombstones in a hash table must not skew the draw
        s.remove(m)
    random.seed(7)
    counts = Counter(s.random_member() for _ in range(200 * len(s)))
    assert set(counts) == set(s)
    assert max(counts.values()) < 2.2 * min(counts.values())


def test_load_hashtable_set_decides_like_redis() -> None:
    assert load_hashtable_set([b"1", b"2"], 2, DEFAULT_LIMITS).encoding() == b"intset"
    assert load_hashtable_set([b"1", b"a"], 2, DEFAULT_LIMITS).encoding() == b"listpack"
    assert load_hashtable_set([b"1", b"x" * 65], 2, DEFAULT_LIMITS).encoding() == b"hashtable"
    many = [b"%d" % i for i in range(600)]
    assert load_hashtable_set(many, 600, DEFAULT_LIMITS).encoding() == b"hashtable"
    with pytest.raises(ValueError, match="Duplicate"):
        load_hashtable_set([b"a", b"a"], 2, DEFAULT_LIMITS)


@pytest.mark.parametrize("members", [[b"1", b"-40000", b"5000000000"], [b"a", b"7", b"b"],
                                     [b"h%d" % i for i in range(500)]])
def test_rdb_round_trip_keeps_members_and_encoding(members: list[bytes]) -> None:
    s = make(*members)
    back = rdb.load_payload(rdb.dump_payload(s))
    assert type(back) is SetValue
    assert back.encoding() == s.encoding() and list(back) == list(s)


def test_loads_follow_the_settings_of_the_load() -> None:
    payload = rdb.dump_payload(make(b"1", b"2", b"3"))
    with loading_with(Limits(intset=2)):
        assert rdb.load_payload(payload).encoding() == b"hashtable"
    assert rdb.load_payload(payload).encoding() == b"intset"


# -- HashSlots -------------------------------------------------------------------------------


def test_tombstones_keep_slots_and_compaction_drops_them() -> None:
    h = HashSlots((b"%d" % i, True) for i in range(20))
    for i in range(5):
        h.remove(b"%d" % i)
    assert len(h) == 15 and h.stale == 5
    h.put(b"2", True)  # back in its old slot
    assert h.slots[2] == b"2" and h.stale == 4
    for i in range(5, 12):  # the 11th tombstone is more than half: compaction
        h.remove(b"%d" % i)
    assert h.stale == 0 and h.epoch == 1
    assert h.slots == [b"2", *[b"%d" % i for i in range(12, 20)]]
    assert list(h.remap or ()) == [2, *range(12, 20)]  # where the kept members were


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["add", "rem", "scan"]), st.integers(0, 60)),
                max_size=300),
       st.integers(1, 7))
def test_scan_returns_every_member_present_for_the_whole_scan(ops: list[tuple[str, int]],
                                                              count: int) -> None:
    """SCAN's guarantee across removals, re-additions and compactions: a member present
    from the start to the end of a scan is returned (members may come twice)."""
    h = HashSlots((b"%d" % i, True) for i in range(40))
    cursor = 0
    started = set(h)
    removed_meanwhile: set[bytes] = set()
    seen: set[bytes] = set()
    for op, n in ops:
        m = b"%d" % n
        if op == "add":
            h.put(m, True)
        elif op == "rem":
            if h.remove(m) is not None:
                removed_meanwhile.add(m)
        else:
            cursor, batch = h.scan(cursor, count)
            seen.update(batch)
            assert all(h.d.get(b) is not None for b in batch)
            if cursor == 0:
                assert started - removed_meanwhile <= seen
                started, removed_meanwhile, seen = set(h), set(), set()
    while True:
        cursor, batch = h.scan(cursor, count)
        seen.update(batch)
        if cursor == 0:
            break
    assert started - removed_meanwhile <= seen
