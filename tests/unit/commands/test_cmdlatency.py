"""LATENCY HISTOGRAM's levels: where a call lands, and how a histogram is reported."""

from __future__ import annotations

from sluice.commands.cmdlatency import histogram_reply, level_of, new_histogram


def test_levels_are_named_as_redis_names_them() -> None:
    # redis-server 8.6.3's replies show 1, 2, 33, 66, 264 ...: HdrHistogram's highest
    # equivalent value of 1,024 ns << k at 2 significant figures, in microseconds.
    hist = new_histogram()
    for k in range(8):
        hist[k] = 1
    assert list(histogram_reply(8, hist)[b"histogram_usec"]) == [1, 2, 4, 8, 16, 33, 66, 132]


def test_a_call_lands_on_the_first_level_that_holds_it() -> None:
    assert [level_of(u) for u in (0, 1, 2, 3, 4, 5, 8, 9, 16, 17, 33, 34)] == [
        0, 0, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6]
    assert level_of(10**6) == level_of(10**9) == 20  # a second and more: the last level
    assert all(level_of(u) <= level_of(u + 1) for u in range(5000))


def test_reply_is_cumulative_and_skips_empty_levels() -> None:
    hist = new_histogram()
    hist[0], hist[1], hist[5] = 3, 1, 1
    reply = histogram_reply(5, hist)
    assert reply == {b"calls": 5, b"histogram_usec": {1: 3, 2: 4, 33: 5}}
