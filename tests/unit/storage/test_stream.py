"""The Stream data structure: ID generation, ranges, deletes, trimming, lag math, XSETID, IDMP."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sluice.storage.stream import (
    BusyGroupError,
    IdmpConfigError,
    IdTooSmallError,
    IdZeroError,
    Stream,
    StreamExhaustedError,
    XSetIdError,
    default_trim_limit,
)
from sluice.storage.stream_node import Node, lp_str_size
from sluice.storage.streamid import MAX_ID, MAX_PART, format_id, make_id, parse_xadd_id

F = [b"f", b"v"]


def add(s: Stream, arg: bytes, now: int = 0, fields: list[bytes] = F, **kw: int) -> bytes:
    return format_id(s.append(parse_xadd_id(arg), fields, now, **kw))  # type: ignore[arg-type]


def filled(n: int, **kw: int) -> Stream:
    s = Stream()
    for i in range(1, n + 1):
        s.append((make_id(i, 0), True), F, 0, **kw)
    return s


# ------------------------------------------------------------------ append


def test_auto_id_uses_clock_and_never_goes_back() -> None:
    s = Stream()
    assert add(s, b"*", now=1000) == b"1000-0"
    assert add(s, b"*", now=1000) == b"1000-1"
    assert add(s, b"*", now=999) == b"1000-2"  # clock went backwards: keep ms, bump seq
    assert add(s, b"*", now=1001) == b"1001-0"
    assert s.entries_added == 4 and len(s) == 4 and s.first_id == make_id(1000, 0)


def test_auto_id_seq_overflow_moves_to_next_ms() -> None:
    s = Stream()
    add(s, b"5-18446744073709551615")
    assert add(s, b"*", now=1) == b"6-0"


def test_partial_id() -> None:
    s = Stream()
    assert add(s, b"1526919030474-55") == b"1526919030474-55"
    assert add(s, b"1526919030474-*") == b"1526919030474-56"
    assert add(s, b"1526919030475-*") == b"1526919030475-0"
    with pytest.raises(IdTooSmallError):
        add(s, b"1526919030474-*")
    t = Stream()
    assert add(t, b"0-*") == b"0-1"  # 0-* on an empty stream is fine, 0-0 is not


def test_partial_id_seq_overflow() -> None:
    s = Stream()
    add(s, b"7-18446744073709551615")
    with pytest.raises(IdTooSmallError) as e:
        add(s, b"7-*")
    assert str(e.value) == (
        "ERR The ID specified in XADD is equal or smaller than the target stream top item"
    )


def test_explicit_id_errors() -> None:
    s = Stream()
    with pytest.raises(IdZeroError) as e:
        add(s, b"0-0")
    assert str(e.value) == "ERR The ID specified in XADD must be greater than 0-0"
    add(s, b"5-5")
    for arg in (b"5-5", b"5-4", b"4"):
        with pytest.raises(IdTooSmallError):
            add(s, arg)
    add(s, b"18446744073709551615-18446744073709551615")
    with pytest.raises(StreamExhaustedError) as e2:
        add(s, b"*")
    assert "exhausted the last possible ID" in str(e2.value)


# ----------------------------------------------------------- range / delete


def test_range_forward_reverse_count_and_tombstones() -> None:
    s = filled(250)  # three nodes of 100, 100, 50
    assert s.node_count == 3
    assert [e[0] for e in s.range(make_id(99, 0), make_id(102, 0))] == [
        make_id(i, 0) for i in range(99, 103)
    ]
    assert s.delete([make_id(100, 0), make_id(101, 0), make_id(999, 0)]) == 2
    assert [e[0] >> 64 for e in s.range(make_id(99, 0), make_id(102, 0))] == [99, 102]
    assert [e[0] >> 64 for e in s.range(0, MAX_ID, 3, rev=True)] == [250, 249, 248]
    assert [e[0] >> 64 for e in s.range(make_id(99, 0), make_id(102, 0), rev=True)] == [102, 99]
    assert s.range(make_id(5, 0), make_id(4, 0)) == []
    assert s.get(make_id(100, 0)) is None and s.get(make_id(7, 0)) == F
    assert s.max_deleted_entry_id == make_id(101, 0)
    assert s.first_entry() == (make_id(1, 0), F) and s.last_entry() == (make_id(250, 0), F)


def test_delete_first_and_whole_node() -> None:
    s = filled(150)
    assert s.delete([make_id(i, 0) for i in range(1, 101)]) == 100
    assert s.node_count == 1  # the first node went away with its last live entry
    assert s.first_id == make_id(101, 0) and len(s) == 50
    s.delete([make_id(i, 0) for i in range(101, 151)])
    assert len(s) == 0 and s.first_id == 0 and s.last_id == make_id(150, 0)


def test_fields_roundtrip_and_compression() -> None:
    s = Stream()
    rows = [
        [b"a", b"1", b"b", b"x" * 300, b"c", b""],
        [b"a", b"2", b"b", b"y", b"c", b"z"],  # same fields as the master entry
        [b"other", b"v"],
        [b"a", b"1"],
        [b"k"] * 2,
    ]
    for i, r in enumerate(rows, 1):
        s.append((make_id(i, 0), True), r, 0)
    assert [e[1] for e in s.range(0, MAX_ID)] == rows


# ------------------------------------------------ node layout and ~ trimming
#
# Expected numbers below were observed on redis-server 7.0.15 (Debian),
# started with --save "" --appendonly no, by running the same commands with
# IDs 1-0, 2-0, ... and fields "f v" unless stated, after
# CONFIG SET stream-node-max-entries / stream-node-max-bytes as given, and
# reading XTRIM's reply, XLEN and XINFO STREAM's radix-tree-keys (the number
# of listpack nodes). A random differential run (500 seeds of mixed
# XADD/XDEL/XTRIM with small node limits, comparing node counts after every
# command) matched as well.


def test_maxlen_approx_default_config() -> None:
    s = filled(1000)
    assert s.trim("MAXLEN", 550, approx=True, limit=default_trim_limit(100)) == 400
    assert len(s) == 600 and s.node_count == 6


def test_maxlen_and_minid_approx_small_nodes() -> None:
    s = filled(95, node_max_entries=10)
    assert s.node_count == 10
    assert s.trim("MAXLEN", 42, approx=True, limit=default_trim_limit(10)) == 50
    assert len(s) == 45
    assert s.trim("MINID", make_id(77, 0), approx=True, limit=default_trim_limit(10)) == 20
    assert len(s) == 25 and s.first_id == make_id(71, 0)
    assert s.first_stored_id() == make_id(71, 0)
    s.trim("MAXLEN", 0)
    assert s.first_stored_id() == MAX_ID and s.node_count == 0


def test_approx_limit() -> None:
    s = filled(100, node_max_entries=10)
    assert s.trim("MAXLEN", 0, approx=True, limit=25) == 20  # whole nodes only, within LIMIT
    assert len(s) == 80
    assert s.trim("MAXLEN", 0, approx=True, limit=0) == 80  # LIMIT 0: no cap
    assert len(s) == 0


def test_default_limit_is_100_nodes() -> None:
    s = filled(500, node_max_entries=1)
    assert s.trim("MAXLEN", 0, approx=True, limit=default_trim_limit(1)) == 100
    assert len(s) == 400
    assert default_trim_limit(0) == 10000 and default_trim_limit(10**9) == 1000000


def test_tombstones_fill_nodes() -> None:
    s = filled(5, node_max_entries=5)
    s.delete([make_id(2, 0), make_id(4, 0)])
    s.append((make_id(6, 0), True), F, 0, node_max_entries=5)
    assert s.node_count == 2


def test_exact_minid_can_leave_an_empty_node() -> None:
    # Redis keeps a node whose live entries were all trimmed if its last
    # (deleted) entry is not below MINID; appends still see it as full.
    s = filled(3, node_max_entries=3)
    s.delete([make_id(3, 0)])
    assert s.trim("MINID", make_id(3, 0)) == 2
    assert len(s) == 0 and s.node_count == 1 and s.first_id == 0
    s.append((make_id(4, 0), True), F, 0, node_max_entries=3)
    assert s.node_count == 2


@pytest.mark.parametrize(
    ("value", "nodes"),
    [(b"x" * 20, 15), (b"12345678901", 8), (b"012345678901", 8)],
)
def test_node_max_bytes(value: bytes, nodes: int) -> None:
    # stream-node-max-entries 0, stream-node-max-bytes 100, 30 entries "field"/"n" + value.
    name = b"field" if value.startswith(b"x") else b"n"
    s = Stream()
    for i in range(1, 31):
        s.append((make_id(i, 0), True), [name, value], 0, node_max_bytes=100, node_max_entries=0)
    assert s.node_count == nodes
    if value.startswith(b"x"):
        assert s.trim("MAXLEN", 10, approx=True, limit=default_trim_limit(0)) == 20
        assert len(s) == 10


def test_listpack_element_sizes() -> None:
    assert lp_str_size(b"0") == 2 and lp_str_size(b"127") == 2 and lp_str_size(b"128") == 3
    assert lp_str_size(b"-4096") == 3 and lp_str_size(b"4096") == 4
    assert lp_str_size(b"9223372036854775807") == 10
    assert lp_str_size(b"9223372036854775808") == 21  # too big: a string
    assert lp_str_size(b"01") == 4 and lp_str_size(b"-0") == 4 and lp_str_size(b"") == 2
    assert lp_str_size(b"x" * 63) == 65 and lp_str_size(b"x" * 64) == 67
    assert lp_str_size(b"x" * 200) == 204  # 2-byte length and 2-byte backlen


def _boundary_values() -> list[bytes]:
    tops = [9, 99, 127, 4095, 32767, 999999, 8388607, 2147483647, 10**18 - 1, 2**63 - 1]
    values = [b"", b"0", b"-0", b"-1", b"00", b"01", b"19.8", b"x" * 63, b"x" * 64]
    for t in tops:
        values += [b"%d" % t, b"%d" % (t + 1), b"-%d" % t, b"-%d" % (t + 1)]
    return values + [b"%d" % 10**n for n in range(22)]


@pytest.mark.parametrize("value", _boundary_values())
def test_append_sizes_values_like_lp_str_size(value: bytes) -> None:
    # Node.append sizes values with its own inlined rules; lp_str_size is the reference.
    with_value, with_x = Node(make_id(1, 0), [b"f", value]), Node(make_id(1, 0), [b"f", b"x"])
    with_value.append(make_id(1, 0), [b"f", value])
    with_x.append(make_id(1, 0), [b"f", b"x"])
    assert with_value.lp_bytes - with_x.lp_bytes == lp_str_size(value) - lp_str_size(b"x")


@given(st.from_regex(rb"\A-?[0-9]{0,21}\Z") | st.binary(max_size=70))
def test_append_sizes_any_value_like_lp_str_size(value: bytes) -> None:
    test_append_sizes_values_like_lp_str_size(value)


def test_exact_trims() -> None:
    s = filled(250)
    assert s.trim("MAXLEN", 120) == 130 and len(s) == 120
    assert s.first_id == make_id(131, 0)
    assert s.trim("MINID", make_id(200, 0)) == 69 and s.first_id == make_id(200, 0)
    assert s.trim("MINID", make_id(1, 0)) == 0
    assert s.trim("MAXLEN", 0) == 51 and len(s) == 0 and s.first_id == 0


# ----------------------------------------------------------- lag / XSETID


def test_estimate_distance_and_tombstones() -> None:
    s = Stream()
    assert s.estimate_distance(make_id(5, 0)) == 0  # nothing ever added
    s = filled(10)
    assert s.estimate_distance(make_id(10, 0)) == 10
    assert s.estimate_distance(make_id(1, 0)) == 1
    assert s.estimate_distance(0) == 0
    assert s.estimate_distance(make_id(5, 0)) == -1  # in the middle: unknown
    assert s.estimate_distance(make_id(11, 0)) == -1  # future
    s.delete([make_id(5, 0)])
    assert s.range_has_tombstones(make_id(3, 0), None)
    assert not s.range_has_tombstones(make_id(6, 0), None)
    assert s.estimate_distance(make_id(1, 0)) == -1  # fragmentation ahead
    s.trim("MAXLEN", 3)
    assert s.estimate_distance(make_id(6, 0)) == 7  # deleted ID is behind first_id now


def test_group_lag_cases() -> None:
    s = filled(10)
    g = s.create_group(b"g", 0)
    assert s.group_lag(g) == 10  # behind the first entry, no tombstones
    c, _ = g.get_or_create_consumer(b"c", 0)
    g.deliver_new(c, 4, 0, False)
    assert g.entries_read == 4 and s.group_lag(g) == 6
    s.delete([make_id(8, 0)])
    assert s.group_lag(g) is None  # a tombstone after last_id: unknown
    g.deliver_new(c, 0, 0, False)
    assert g.last_id == make_id(10, 0) and s.group_lag(g) == 0
    with pytest.raises(BusyGroupError) as e:
        s.create_group(b"g", 0)
    assert str(e.value) == "BUSYGROUP Consumer Group name already exists"


def test_set_id_checks() -> None:
    s = filled(3)
    s.delete([make_id(2, 0)])
    with pytest.raises(XSetIdError, match="smaller than the target stream top item"):
        s.set_id(make_id(2, 5))
    with pytest.raises(XSetIdError, match="smaller than current max_deleted_entry_id"):
        s.set_id(make_id(1, 0))
    with pytest.raises(XSetIdError, match="smaller than the provided max_deleted_entry_id"):
        s.set_id(make_id(5, 0), max_deleted_id=make_id(6, 0))
    with pytest.raises(XSetIdError, match="entries_added specified in XSETID is smaller"):
        s.set_id(make_id(5, 0), entries_added=1)
    s.set_id(make_id(5, 0), entries_added=9, max_deleted_id=make_id(4, 0))
    assert (s.last_id, s.entries_added, s.max_deleted_entry_id) == (
        make_id(5, 0),
        9,
        make_id(4, 0),
    )
    assert format_id(s.append(None, F, 1)) == b"5-1"
    e = Stream()
    e.set_id(make_id(MAX_PART, MAX_PART))
    with pytest.raises(StreamExhaustedError):
        e.append(None, F, 0)


# ------------------------------------------------------------------- IDMP


def test_idmp_dedup_expiry_and_maxsize() -> None:
    s = Stream()
    m = s.idmp
    assert m.find(b"p", b"m1", 0) is None
    a = s.append(None, F, 1000, idmp=(b"p", b"m1"))
    assert m.find(b"p", b"m1", 1500) == a
    assert m.find(b"q", b"m1", 1500) is None  # producers are independent
    assert (m.iids_added, m.iids_duplicates) == (1, 1)
    assert m.find(b"p", b"m1", 1000 + 100_000) is None  # 100 s default duration
    m.configure(maxsize=2)
    for k in range(3):
        s.append(None, F, 2000 + k, idmp=(b"p", b"%d" % k))
    assert m.stats(2005) == (1, 2)
    assert m.find(b"p", b"0", 2005) is None  # evicted by IDMP-MAXSIZE
    m.configure(maxsize=2)  # same values: history kept
    assert m.stats(2005) == (1, 2)
    m.configure(duration=300)  # a change clears the maps
    assert m.stats(2005) == (0, 0)
    with pytest.raises(IdmpConfigError, match="ERR invalid duration"):
        m.configure(duration=0)
    with pytest.raises(IdmpConfigError, match="ERR invalid maxsize"):
        m.configure(maxsize=10001)
    assert m.auto_iid([b"a", b"bc"]) != m.auto_iid([b"ab", b"c"])
    assert m.auto_iid([b"a", b"b"]) == m.auto_iid([b"a", b"b"])
