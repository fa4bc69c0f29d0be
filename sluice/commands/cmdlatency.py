"""Per-command latency histograms: LATENCY HISTOGRAM (Redis's ``latency-tracking``).

Redis records each call's duration (microseconds, as nanoseconds) in an HdrHistogram per
command (1 ns to 1 s, 2 significant figures) and reports it through a log iterator that
starts at 1,024 ns and doubles: for each level where the cumulative count grew, the level's
highest equivalent value in microseconds and that count (``fillCommandCDF``). Only those
levels are observable, so a command keeps one counter per level (``Cmd.hist``): a call
lands on the first level whose highest equivalent value holds it. HdrHistogram's
equivalence ranges at 2 significant figures (256 sub-buckets) make level ``k``
(``1024 << k`` ns) hold values up to ``(1024 << k) + (8 << k) - 1`` ns, so the levels report
1, 2, 4, 8, 16, 33, 66, 131 ... microseconds, as Redis's replies show.

Recording is on the hot path: a table lookup for calls under a millisecond and a short loop
otherwise.
"""

from __future__ import annotations

from typing import Any

from sluice.protocol import Map

LEVELS = 21  # 1,024 ns << 20 is past the histogram's 1 s maximum
_HIGHEST = [(1024 << k) + (8 << k) - 1 for k in range(LEVELS)]  # ns, per level
_REPORTED = [h // 1000 for h in _HIGHEST]  # what the reply names each level by (us)
_MAX_NS = 1_000_000_000


def _level_of_ns(ns: int) -> int:
    ns = min(max(ns, 1), _MAX_NS)
    k = 0
    while ns > _HIGHEST[k]:
        k += 1
    return k


SMALL = 1024  # calls under this many microseconds: one table lookup
LEVEL_OF_USEC = [_level_of_ns(u * 1000) for u in range(SMALL)]


def level_of(usec: int) -> int:
    """The level a call of ``usec`` microseconds is counted at."""
    return LEVEL_OF_USEC[usec] if usec < SMALL else _level_of_ns(usec * 1000)


def new_histogram() -> list[int]:
    return [0] * LEVELS


def histogram_reply(calls: int, hist: list[int]) -> Map:
    """``calls N histogram_usec {level-us cumulative-count ...}`` for one command."""
    cdf = Map()
    total = 0
    for k, n in enumerate(hist):
        if n:
            total += n
            cdf[_REPORTED[k]] = total
    return Map(((b"calls", calls), (b"histogram_usec", cdf)))


def has_samples(cmd: Any) -> bool:
    return any(cmd.hist)
