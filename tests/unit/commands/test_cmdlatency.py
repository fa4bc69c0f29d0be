"""Per-command latency histograms: LATENCY HISTOGRAM's levels and INFO latencystats'
percentiles, computed as Redis's HdrHistogram (1 ns .. 1 s, 2 significant figures)."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from sluice.commands.cmdlatency import (
    DISCARD_SLOW,
    FAST,
    format_percentile,
    hdr_index,
    histogram_reply,
    level_of,
    new_histogram,
    percentiles_line,
    record,
    value_at_percentile,
)


class Row:
    """A command's two histogram fields."""

    def __init__(self) -> None:
        self.hist, self.hist_slow = new_histogram(), {}

    def counts(self) -> dict[int, int]:
        out = dict(self.hist_slow)
        for usec, n in enumerate(self.hist):
            if n:
                out[hdr_index(usec * 1000)] = out.get(hdr_index(usec * 1000), 0) + n
        return out


def _record(row: Row, usec: int) -> None:
    record(row, usec)


def test_levels_are_named_as_redis_names_them() -> None:
    # redis-server 8.6.3's replies show 1, 2, 33, 66 ...: HdrHistogram's highest equivalent
    # value of 1,024 ns << k at 2 significant figures, in microseconds.
    row = Row()
    for usec in (1, 2, 3, 5, 9, 17, 34, 67):
        _record(row, usec)
    reply = histogram_reply(8, row.hist, row.hist_slow)
    assert list(reply[b"histogram_usec"]) == [1, 2, 4, 8, 16, 33, 66, 132]


def test_a_call_lands_on_the_first_level_that_holds_it() -> None:
    assert [level_of(u) for u in (0, 1, 2, 3, 4, 5, 8, 9, 16, 17, 33, 34)] == [
        0, 0, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6]
    assert level_of(10**6) == level_of(10**9) == 20  # a second and more: the last level
    assert all(level_of(u) <= level_of(u + 1) for u in range(5000))


def test_reply_is_cumulative_and_skips_empty_levels() -> None:
    row = Row()
    for usec in (0, 1, 1, 2, 20, 300):
        _record(row, usec)
    assert histogram_reply(6, row.hist, row.hist_slow) == {
        b"calls": 6, b"histogram_usec": {1: 3, 2: 4, 33: 5, 528: 6}}


def test_percentiles_are_highest_equivalent_values_as_redis_prints_them() -> None:
    # The values redis-server prints for 1, 3 and 4 us calls: 1.003, 3.007, 4.015.
    row = Row()
    for usec in [1] * 90 + [3] * 9 + [4]:
        _record(row, usec)
    line = percentiles_line("set", row.hist, row.hist_slow, [50.0, 99.0, 99.9])
    assert line == "latency_percentiles_usec_set:p50=1.003,p99=3.007,p99.9=4.015"
    assert value_at_percentile(row.counts(), 0.0) == 1000  # the lowest equivalent for p0
    assert value_at_percentile(row.counts(), 100.0) == 4015


def test_long_calls_keep_two_significant_figures() -> None:
    row = Row()
    _record(row, 50_123)  # 50.123 ms, past FAST: kept by its counts index
    assert row.hist_slow and not any(row.hist)
    assert 50_123_000 <= value_at_percentile(row.counts(), 50.0) < 50_123_000 * 1.01
    _record(row, 5 * 10**6)  # over the 1 s maximum: clamped to it
    assert value_at_percentile(row.counts(), 100.0) >= 10**9


@given(st.lists(st.integers(0, 3_000_000), min_size=1, max_size=60),
       st.floats(0.0, 100.0, allow_nan=False))
def test_percentile_matches_a_plain_reading_of_hdr(usecs: list[int], p: float) -> None:
    """value_at_percentile against the definition: sort the recorded values' counts
    indexes, take the one where the running count reaches round(p% of the total)."""
    row = Row()
    for u in usecs:
        _record(row, u)
    indexes = sorted(hdr_index(u * 1000) for u in usecs)
    wanted = max(int(p / 100 * len(usecs) + 0.5), 1)
    index = indexes[wanted - 1]
    got = value_at_percentile(row.counts(), p)
    assert hdr_index(got) == index  # the same bucket: the highest (or lowest) of it
    same = [min(max(u * 1000, 1), 10**9) for u in usecs if hdr_index(u * 1000) == index]
    assert got <= min(same) if p == 0.0 else got >= max(same)


def test_percentile_names_as_redis_formats_them() -> None:
    assert [format_percentile(p) for p in (50.0, 99.9, 0.0, 100.0, 12.5)] == [
        "50", "99.9", "0", "100", "12.5"]


def test_discard_slow_records_nothing() -> None:
    for _ in range(3):
        DISCARD_SLOW[random.randrange(FAST, 10**6)] = 1
    assert not DISCARD_SLOW
