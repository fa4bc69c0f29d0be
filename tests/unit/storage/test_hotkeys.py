"""HOTKEYS' session and its top-K (``sluice.storage.hotkeys``): pure code, no server."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.storage.hotkeys import CPU, NET, HotkeysSession, TopK


def _session(metrics: int = CPU | NET, **kw: object) -> HotkeysSession:
    return HotkeysSession(metrics, start_ms=1_000, ru_start=(1.0, 2.0), **kw)  # type: ignore[arg-type]


# -- TopK -------------------------------------------------------------------------------------


def test_exact_while_under_capacity() -> None:
    topk = TopK(4)
    for item, weight in [(b"a", 5), (b"b", 3), (b"a", 2), (b"c", 10), (b"b", 1)]:
        topk.add(item, weight)
    assert topk.top(10) == [(b"c", 10), (b"a", 7), (b"b", 4)]
    assert topk.top(2) == [(b"c", 10), (b"a", 7)]
    assert topk.total == 21


def test_zero_weight_is_no_event() -> None:
    topk = TopK(2)
    topk.add(b"a", 0)
    assert len(topk) == 0 and topk.total == 0 and topk.top(5) == []


def test_ties_are_ordered_by_item() -> None:
    topk = TopK(8)
    for item in (b"c", b"a", b"b"):
        topk.add(item, 3)
    assert topk.top(3) == [(b"a", 3), (b"b", 3), (b"c", 3)]


def test_newcomer_inherits_the_minimum() -> None:
    """Full: the lightest entry goes, the newcomer counts from its weight (Space-Saving)."""
    topk = TopK(2)
    topk.add(b"heavy", 10)
    topk.add(b"light", 2)
    topk.add(b"new", 1)
    assert dict(topk.top(2)) == {b"heavy": 10, b"new": 3}
    assert topk.total == 13


def test_stale_heap_entries_are_refreshed() -> None:
    """The heap's top may be stale (its count grew since it was pushed): the true minimum
    goes, not the item that was lightest once."""
    topk = TopK(2)
    topk.add(b"a", 1)
    topk.add(b"b", 5)
    topk.add(b"a", 10)  # a is now 11: b is the lightest
    topk.add(b"c", 1)
    assert dict(topk.top(2)) == {b"a": 11, b"c": 6}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([bytes([c]) for c in range(40)]),
                          st.integers(min_value=0, max_value=50)), max_size=300),
       st.integers(min_value=1, max_value=12))
def test_space_saving_guarantees(stream: list[tuple[bytes, int]], capacity: int) -> None:
    """Bounded size; no item is undercounted; overcount is at most the smallest counter; an
    item heavier than total / capacity is always held (the heavy-hitter guarantee)."""
    topk = TopK(capacity)
    truth: Counter[bytes] = Counter()
    for item, weight in stream:
        topk.add(item, weight)
        truth[item] += weight
    held = topk.weights()
    assert len(held) == len(topk) <= capacity
    assert topk.total == sum(truth.values())
    assert sorted(e & topk.mask for e in topk.heap) == list(range(len(held)))  # one per slot
    assert all(e >> topk.shift <= topk.counts[e & topk.mask] for e in topk.heap)
    low = min(held.values(), default=0)
    for item, count in held.items():
        assert truth[item] <= count <= truth[item] + low
    for item, weight in truth.items():
        if weight * capacity > topk.total:
            assert item in held
    if len(truth) <= capacity:  # nothing evicted: exact
        assert held == {k: v for k, v in truth.items() if v}


def test_biased_stream_finds_the_hot_keys() -> None:
    """The Tcl suite's check, deterministic: 100 keys, 20 hot ones drawing 80% of 50,000
    weighted updates; with K=10 (100 counters) every reported key is a hot one."""
    topk = TopK(100)
    rng = itertools.cycle(range(997))
    hot = [b"key_%03d" % i for i in range(20)]
    cold = [b"key_%03d" % i for i in range(20, 100)]
    for _ in range(50_000):
        n = next(rng)
        key = hot[n % 20] if n % 10 < 8 else cold[n % 80]
        topk.add(key, 40 + n % 7)
    assert {key for key, _ in topk.top(10)} <= set(hot)


# -- the session ------------------------------------------------------------------------------


def test_record_shares_cost_among_keys() -> None:
    s = _session()
    s.record([b"a", b"b", b"c"], cpu_us=10, net_bytes=64)
    s.record([b"a"], cpu_us=4, net_bytes=40)
    assert s.time_all == 14 and s.net_all == 104
    assert s.cpu is not None and s.net is not None
    assert dict(s.cpu.top(10)) == {b"a": 7, b"b": 3, b"c": 3}
    assert dict(s.net.top(10)) == {b"a": 61, b"b": 21, b"c": 21}
    assert s.net.total == 103  # the shares, truncated: 63 + 40 (Redis's total-net-bytes)


def test_a_share_below_one_unit_is_not_counted() -> None:
    s = _session()
    s.record([b"a", b"b"], cpu_us=1, net_bytes=10)
    assert s.cpu is not None and s.cpu.top(5) == []
    assert s.time_all == 1  # the session's total still has it


def test_only_the_metrics_asked_for() -> None:
    s = _session(CPU)
    assert s.net is None
    s.record([b"k"], 5, 50)
    assert s.net_all == 50  # Redis counts the bytes of every command either way


def test_sampling() -> None:
    draws = iter([0.05, 0.5, 0.09])
    s = _session(sample_ratio=10, rng=lambda: next(draws))
    assert [s.sampled(), s.sampled(), s.sampled()] == [True, False, True]
    s.record([b"k"], 3, 30, sampled=False)
    assert s.cpu is not None and s.cpu.top(1) == []
    assert s.time_all == 3 and s.time_sampled_selected == 0
    s.record([b"k"], 2, 20, sampled=True)
    assert s.cpu.top(1) == [(b"k", 2)]
    assert s.time_sampled_selected == 2 and s.net_sampled_selected == 20
    assert _session().sampled()  # ratio 1: every command, no draw


def test_stop_expiry_and_elapsed() -> None:
    s = _session(duration_ms=500)
    assert not s.expired(1_499) and s.expired(1_500)
    assert s.elapsed_ms(1_200) == 200
    s.stop(1_650)
    assert not s.active and s.elapsed_ms(9_999) == 650 and not s.expired(9_999)
    forever = _session()
    assert not forever.expired(10**12)


def _fields(s: HotkeysSession) -> list[bytes]:
    return [name for name, _ in s.report(2_000, (1.5, 2.25))]


def test_report_fields_and_order() -> None:
    both = _session()
    both.record([b"k"], 7, 70)
    report = dict(both.report(2_000, (1.5, 2.25)))
    assert _fields(both) == [
        b"tracking-active", b"sample-ratio", b"selected-slots", b"all-commands-all-slots-us",
        b"net-bytes-all-commands-all-slots", b"collection-start-time-unix-ms",
        b"collection-duration-ms", b"total-cpu-time-user-ms", b"total-cpu-time-sys-ms",
        b"total-net-bytes", b"by-cpu-time-us", b"by-net-bytes"]
    assert report[b"selected-slots"] == [[0, 16383]]
    assert report[b"total-cpu-time-user-ms"] == 500 and report[b"total-cpu-time-sys-ms"] == 250
    assert report[b"by-cpu-time-us"] == [b"k", 7] and report[b"by-net-bytes"] == [b"k", 70]
    assert report[b"collection-duration-ms"] == 1_000 and report[b"tracking-active"] == 1
    assert b"total-net-bytes" not in _fields(_session(CPU))
    assert b"by-cpu-time-us" not in _fields(_session(NET))
    assert b"total-cpu-time-user-ms" not in _fields(_session(NET))


@pytest.mark.parametrize(("ratio", "extra"), [
    (1, [b"all-commands-selected-slots-us", b"net-bytes-all-commands-selected-slots"]),
    (10, [b"sampled-commands-selected-slots-us", b"all-commands-selected-slots-us",
          b"net-bytes-sampled-commands-selected-slots",
          b"net-bytes-all-commands-selected-slots"]),
])
def test_selected_slot_fields_need_slots(ratio: int, extra: list[bytes]) -> None:
    """Only cluster mode has SLOTS; the fields it brings, as Redis decides them."""
    assert not set(extra) & set(_fields(_session(sample_ratio=ratio)))
    with_slots = _session(sample_ratio=ratio, slots=(10, 5, 1, 0, 6, 2))
    assert [f for f in _fields(with_slots) if f in extra] == extra
    assert with_slots.slot_ranges() == [[0, 2], [5, 6], [10]]


def test_top_is_limited_to_count() -> None:
    s = _session(NET, count=3)
    for i in range(8):
        s.record([b"k%d" % i], 1, 10 + i)
    assert s.net is not None and s.net.capacity == 30
    assert dict(s.report(2_000, (0.0, 0.0)))[b"by-net-bytes"] == [b"k7", 17, b"k6", 16, b"k5", 15]
