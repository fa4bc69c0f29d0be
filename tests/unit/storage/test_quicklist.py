"""List encodings (storage/quicklist.py, storage/lists.py): size limits, listpack byte counts,
quicklist node shapes and the conversions both ways.

Expected thresholds were measured on redis-server 8.6.3 (``OBJECT ENCODING`` and the
``ql_nodes`` / ``ql_uncompressed_size`` of ``DEBUG OBJECT``); listpack sizes are checked
against ``rdb_codec.lp_encode``, an independent encoder of the same format.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.storage.lists import ListValue
from sluice.storage.quicklist import (
    clamp_fill,
    fill_limits,
    node_limit,
)
from sluice.storage.rdb_codec import lp_encode

# -- the limits ---------------------------------------------------------------------------


@pytest.mark.parametrize("fill,size,count,over", [
    (-1, 4096, 10**6, False), (-1, 4097, 1, True),
    (-2, 8192, 10**6, False), (-2, 8193, 1, True),
    (-5, 65536, 1, False), (-5, 65537, 1, True),
    (-100, 65536, 1, False), (-100, 65537, 1, True),  # below -5: still 64 KB
    (5, 8192, 5, False), (5, 100, 6, True), (5, 8193, 1, True),  # counts keep 8 KB safety
    (0, 10, 1, False), (0, 10, 2, True),  # 0 counts as 1
    (100000, 8192, 100000, False), (100000, 8193, 2, True),
])
def test_node_limits(fill: int, size: int, count: int, over: bool) -> None:
    """A node of ``size`` bytes and ``count`` elements is over the limit of ``fill``."""
    max_sz, max_count = fill_limits(fill)
    assert (size > max_sz or count > max_count) is over


@pytest.mark.parametrize("fill,size,large", [
    (-1, 4096, False), (-1, 4097, True), (-2, 8193, True), (-5, 65537, True),
    (3, 8192, False), (3, 8193, True), (0, 8193, True),
])
def test_large_elements(fill: int, size: int, large: bool) -> None:
    """An element over the byte limit gets a plain node of its own, in the list itself."""
    lst = ListValue()
    lst.push([b"a", b"x" * size], False, fill)
    assert lst.ql is not None or not large
    if lst.ql is not None:
        assert lst.ql.nodes[-1].plain is large


def test_node_limit_and_clamp() -> None:
    assert node_limit(-2) == (8192, 2**32 - 1)
    assert node_limit(0) == (2**64 - 1, 1)  # no size limit when converting back
    assert node_limit(7) == (2**64 - 1, 7)
    assert clamp_fill(-6) == -5 and clamp_fill(40000) == 32767 and clamp_fill(3) == 3
    assert fill_limits(-3) == (16384, 2**32 - 1) and fill_limits(4) == (8192, 4)


# -- thresholds measured on redis-server 8.6.3 --------------------------------------------


def pushes_until_quicklist(element: bytes, fill: int = -2) -> int:
    lst = ListValue()
    n = 0
    while lst.encoding() == b"listpack":
        lst.push([element], False, fill)
        n += 1
    return n


@pytest.mark.parametrize("element,fill,n", [
    (b"1", -2, 4094), (b"128", -2, 2729), (b"x" * 100, -2, 80),
    (b"-2147483648", -2, 1364), (b"9223372036854775807", -2, 818),
    (b"x" * 63, -2, 126), (b"x" * 64, -2, 123), (b"x" * 10, -1, 341), (b"a", 7, 8),
])
def test_push_converts_where_redis_does(element: bytes, fill: int, n: int) -> None:
    assert pushes_until_quicklist(element, fill) == n


def test_one_big_element() -> None:
    # The check adds the element's length to the listpack's bytes: 7 + 8185 fits 8 KB.
    a, b = ListValue(), ListValue()
    a.push([b"x" * 8185], False, -2)
    b.push([b"x" * 8186], False, -2)
    assert (a.encoding(), b.encoding()) == (b"listpack", b"quicklist")


def test_check_counts_lengths_not_entry_sizes_and_shrinks_at_half() -> None:
    lst = ListValue()
    lst.push([b"x" * 10] * 800, False, -2)  # 800 * 10 + 7 <= 8192, though 9607 bytes
    assert lst.encoding() == b"listpack" and lst.lp_bytes == 9607
    lst.push([b"y"], False, -2)
    assert lst.ql is not None and lst.ql.shape() == [(800, 9607, False), (1, 10, False)]
    n = 801
    while lst.encoding() == b"quicklist":
        lst.pop_one(False)
        lst.after_removal(-2)
        n -= 1
    assert n == 340  # 7 + 12 * 340 <= 4096: half the limit


@pytest.mark.parametrize("last,nodes", [(b"y" * 5, 2), (b"y" * 6, 3)])
def test_a_node_takes_an_element_within_the_estimate(last: bytes, nodes: int) -> None:
    # node bytes + element length + 8 must stay within 8 KB: 8179 + 5 + 8 = 8192 fits
    lst = ListValue()
    lst.push([b"b" * 9000], False, 2000)
    lst.push([b"x" * 10] * 681, False, 2000)
    lst.push([last], False, 2000)
    assert lst.ql is not None and len(lst.ql.nodes) == nodes
    assert lst.ql.shape()[1] == ((682, 8186, False) if nodes == 2 else (681, 8179, False))


def test_count_fill_converts_back_at_half() -> None:
    lst = ListValue()
    lst.push([b"a", b"b", b"c"], False, 3)
    assert lst.encoding() == b"listpack"
    lst.push([b"d"], False, 3)
    got = [lst.encoding()]
    for _ in range(3):
        lst.pop_one(False)
        lst.after_removal(3)
        got.append(lst.encoding())
    assert got == [b"quicklist", b"quicklist", b"quicklist", b"listpack"]


def test_lset_and_linsert_check_growth_even_when_they_fail() -> None:
    a = ListValue([b"a"])
    assert not a.set_at(5, b"z" * 9000, -2)
    b = ListValue([b"a"])
    assert not b.insert_at_pivot(b"nope", b"z" * 9000, True, -2)
    assert (a.encoding(), b.encoding()) == (b"quicklist", b"quicklist")


def test_lset_big_element_gets_a_plain_node() -> None:
    lst = ListValue([b"a", b"b", b"c"])
    assert lst.set_at(1, b"z" * 9000, -2)
    assert lst.ql is not None and lst.ql.shape() == [(1, 10, False), (1, 9000, True),
                                                     (1, 10, False)]
    assert lst.set_at(1, b"b", -2)  # three nodes still: stays a quicklist
    assert lst.encoding() == b"quicklist" and list(lst) == [b"a", b"b", b"c"]


def test_rdb_style_loads() -> None:
    one = ListValue.from_nodes([(False, [b"a", b"b"])])
    two = ListValue.from_nodes([(False, [b"a"]), (False, [b"b"])])
    assert (one.encoding(), two.encoding()) == (b"listpack", b"quicklist")
    one.refill(1)  # loaded by a server with list-max-listpack-size 1: 2 elements is too many
    assert one.encoding() == b"quicklist" and one.ql is not None and one.ql.fill == 1


# -- byte accounting against an independent encoder -----------------------------------------

_elements = st.one_of(
    st.integers(-(2**63), 2**63 - 1).map(lambda n: b"%d" % n),
    st.binary(max_size=80),
    st.sampled_from([b"0", b"-0", b"01", b"127", b"128", b"4095", b"-4096", b"x" * 5000,
                     b"9223372036854775808", b"y" * 70000]),
)


def check_invariants(lst: ListValue) -> None:
    items = list(lst)
    if lst.ql is None:
        assert lst.lp_bytes == len(lp_encode(items))
        return
    assert sum(n.count for n in lst.ql.nodes) == len(items)
    for node, (plain, elements) in zip(lst.ql.nodes, lst.nodes(), strict=True):
        assert node.count == len(elements) > 0
        assert node.sz == (len(elements[0]) if plain else len(lp_encode(elements)))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 8), st.lists(_elements, min_size=1, max_size=6),
                          st.integers(-8, 8)), max_size=30),
       st.sampled_from([-2, -1, 1, 3, 0]))
def test_sizes_stay_exact_through_every_operation(ops: list[tuple[int, list[bytes], int]],
                                                  fill: int) -> None:
    lst = ListValue()
    for op, values, n in ops:
        if op == 0:
            lst.push(values, n > 0, fill)
        elif op == 1 and len(lst):
            lst.pop_head(abs(n) + 1)
        elif op == 2 and len(lst):
            lst.pop_tail(abs(n) + 1)
        elif op == 3 and len(lst):
            lst.set_at(n, values[0], fill)
        elif op == 4 and len(lst):
            pivot = lst.index_of(n % len(lst))
            assert pivot is not None
            lst.insert_at_pivot(pivot, values[0], n > 0, fill)
        elif op == 5 and len(lst):
            lst.remove_value(values[0] if n % 2 else list(lst)[n % len(lst)], n)
        elif op == 6 and len(lst):
            lst.trim(n, -1 - abs(n) // 2)
        elif op == 7:
            lst = lst.copy()
        elif op == 8 and len(lst):
            lst.pop_one(n > 0)  # LPOP / RPOP of one: its own fast path
        check_invariants(lst)
        if len(lst):
            lst.after_removal(fill)
            check_invariants(lst)
