"""ListValue against a model written from the Redis docs' wording, not from our code.

The model keeps a plain Python list and answers each operation by enumerating indexes
("an index is in the range if it lies between start and stop, negative ones counting from the
tail"), so the clamping arithmetic in ``storage/lists.py`` is checked by an independent route.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.storage.keyspace import type_name
from sluice.storage.lists import ListValue, normalize_range

elements = st.lists(st.sampled_from([b"a", b"b", b"c", b"1", b""]), max_size=12)
indexes = st.integers(min_value=-15, max_value=15)


def model_range(items: list[bytes], start: int, stop: int) -> list[bytes]:
    n = len(items)
    lo = start if start >= 0 else n + start
    hi = stop if stop >= 0 else n + stop
    return [items[i] for i in range(n) if lo <= i <= hi]


def model_positions(items: list[bytes], value: bytes, rank: int, count: int | None,
                    maxlen: int) -> list[int]:
    order = list(range(len(items))) if rank > 0 else list(reversed(range(len(items))))
    if maxlen:
        order = order[:maxlen]
    matches = [i for i in order if items[i] == value][abs(rank) - 1:]
    if count is None:
        return matches[:1]
    return matches if count == 0 else matches[:count]


def model_remove(items: list[bytes], value: bytes, count: int) -> tuple[list[bytes], int]:
    hits = [i for i, e in enumerate(items) if e == value]
    if count > 0:
        hits = hits[:count]
    elif count < 0:
        hits = hits[count:] if -count < len(hits) else hits
    drop = set(hits)
    return [e for i, e in enumerate(items) if i not in drop], len(drop)


def test_registered_as_list_type() -> None:
    assert type_name(ListValue()) == b"list"


def test_slots_no_instance_dict() -> None:
    assert not hasattr(ListValue(), "__dict__")


def test_copy_is_independent_list_value() -> None:
    a = ListValue([b"x", b"y"])
    b = a.copy()
    b.push([b"z"], False, -2)
    assert type(b) is ListValue
    assert list(a) == [b"x", b"y"] and list(b) == [b"x", b"y", b"z"]


def test_copy_keeps_the_encoding_and_nodes() -> None:
    a = ListValue([b"x" * 5000, b"y" * 5000, b"z"])
    assert a.ql is not None
    b = a.copy()
    assert b.encoding() == b"quicklist" and b.ql is not None
    assert b.ql.shape() == a.ql.shape() and b.ql.nodes[0] is not a.ql.nodes[0]


def test_small_lists_are_listpacks_big_ones_quicklists() -> None:
    assert ListValue([b"a"]).encoding() == b"listpack"
    assert ListValue([b"x" * 10_000] * 3).encoding() == b"quicklist"


def test_push_head_reverses_like_lpush() -> None:
    lst = ListValue()
    assert lst.push([b"a", b"b", b"c"], True, -2) == 3
    assert lst.push([b"d"], False, -2) == 4
    assert list(lst) == [b"c", b"b", b"a", b"d"]


def test_pops_stop_at_length() -> None:
    lst = ListValue([b"1", b"2", b"3"])
    assert lst.pop_tail(2) == [b"3", b"2"]
    assert lst.pop_head(5) == [b"1"]
    assert lst.pop_head(1) == []


def test_normalize_range_examples() -> None:
    assert normalize_range(0, -1, 3) == (0, 2)
    assert normalize_range(-100, 100, 3) == (0, 2)
    assert normalize_range(2, 1, 3) is None
    assert normalize_range(3, 5, 3) is None
    assert normalize_range(0, -4, 3) is None
    assert normalize_range(0, 0, 0) is None


@settings(max_examples=150, deadline=None)
@given(elements, indexes, indexes)
def test_range_matches_model(items: list[bytes], start: int, stop: int) -> None:
    assert ListValue(items).range(start, stop) == model_range(items, start, stop)


@settings(max_examples=150, deadline=None)
@given(elements, indexes, indexes)
def test_trim_keeps_the_range(items: list[bytes], start: int, stop: int) -> None:
    lst = ListValue(items)
    removed = lst.trim(start, stop)
    kept = model_range(items, start, stop)
    assert list(lst) == kept
    assert removed == len(items) - len(kept)


@settings(max_examples=150, deadline=None)
@given(elements, indexes)
def test_index_and_set(items: list[bytes], index: int) -> None:
    lst = ListValue(items)
    inside = -len(items) <= index < len(items)
    assert lst.index_of(index) == (items[index] if inside else None)
    assert lst.set_at(index, b"new") is inside
    if inside:
        items[index] = b"new"
    assert list(lst) == items


@settings(max_examples=150, deadline=None)
@given(elements, st.sampled_from([b"a", b"b", b"zz"]), st.integers(-4, 4))
def test_remove_value_matches_model(items: list[bytes], value: bytes, count: int) -> None:
    lst = ListValue(items)
    expected, n = model_remove(items, value, count)
    assert lst.remove_value(value, count) == n
    assert list(lst) == expected


@settings(max_examples=200, deadline=None)
@given(elements, st.sampled_from([b"a", b"b", b"zz"]),
       st.integers(-4, 4).filter(bool), st.one_of(st.none(), st.integers(0, 3)),
       st.integers(0, 6))
def test_positions_match_model(items: list[bytes], value: bytes, rank: int,
                               count: int | None, maxlen: int) -> None:
    got = ListValue(items).positions(value, rank, count, maxlen)
    assert got == model_positions(items, value, rank, count, maxlen)


def test_insert_at_first_pivot() -> None:
    lst = ListValue([b"a", b"p", b"b", b"p"])
    assert lst.insert_at_pivot(b"p", b"X", before=True)
    assert lst.insert_at_pivot(b"p", b"Y", before=False)
    assert list(lst) == [b"a", b"X", b"p", b"Y", b"b", b"p"]
    assert not lst.insert_at_pivot(b"missing", b"Z", before=True)
    assert len(lst) == 6
