"""Per-command latency histograms: LATENCY HISTOGRAM and INFO latencystats (Redis's
``latency-tracking``).

Redis records each call's duration (whole microseconds, as nanoseconds, at least 1) in an
HdrHistogram per command: 1 ns to 1 s, 2 significant figures, so 256 sub-buckets and
buckets of doubling width (``hdr_histogram.c``: a value's bucket is its bit length past 8,
its sub-bucket the value shifted right by the bucket, and the pair gives one counts index).
Both reports read that histogram:

* LATENCY HISTOGRAM walks it by levels that start at 1,024 ns and double, and names each
  level by its highest equivalent value in microseconds, with the cumulative count
  (``fillCommandCDF``): 1, 2, 4, 8, 16, 33, 66, 132 ... microseconds.
* INFO latencystats gives ``hdr_value_at_percentile`` for each configured percentile
  (``latency-tracking-info-percentiles``): the highest equivalent value of the counts
  index where the running count reaches ``percentile/100 * total``, rounded (the lowest
  equivalent value for the 0th).

A Sluice command keeps its calls in two fields. ``hist`` is a list indexed by the duration in
microseconds for calls under ``FAST`` (256) microseconds: below that every microsecond is an
HdrHistogram counts index of its own, so nothing is lost, and recording is one list
increment on the hot path (no table, no hashing). ``hist_slow`` maps the counts index of each
longer call to a count: bounded (about 3,000 indexes up to 1 s), and rarely written. Both
reports are exact. While ``latency-tracking`` is off a command records into ``DISCARD`` and
``DISCARD_SLOW`` instead, which nobody reads (no branch on the hot path).
"""

from __future__ import annotations

from typing import Any

from sluice.protocol import Map

FAST = 256  # calls under this many microseconds are counted by their duration
_MAX_NS = 1_000_000_000  # the histogram's highest trackable value (1 s)
_HALF_MAGNITUDE = 7  # log2 of the sub-bucket half count (128), for 2 significant figures
_HALF = 1 << _HALF_MAGNITUDE
_SUB_MASK = 255  # sub-bucket count - 1

Histogram = list[int]  # calls per microsecond of duration, under FAST
SlowHistogram = dict[int, int]  # calls per HdrHistogram counts index, from FAST on


def new_histogram() -> Histogram:
    return [0] * FAST


class _Discard(dict[int, int]):
    """Where long calls go while latency-tracking is off: nowhere."""

    __slots__ = ()

    def __setitem__(self, key: int, value: int) -> None:
        pass


DISCARD: Histogram = new_histogram()  # short calls while latency-tracking is off (unread)
DISCARD_SLOW: SlowHistogram = _Discard()


def hdr_index(ns: int) -> int:
    """HdrHistogram's counts index of a value in nanoseconds (clamped to 1 ns .. 1 s)."""
    ns = min(max(ns, 1), _MAX_NS)
    bucket = (ns | _SUB_MASK).bit_length() - (_HALF_MAGNITUDE + 1)
    sub = ns >> bucket
    return ((bucket + 1) << _HALF_MAGNITUDE) + sub - _HALF


def _lowest_of_index(index: int) -> int:
    """``hdr_value_at_index``: the lowest value of a counts index."""
    bucket = (index >> _HALF_MAGNITUDE) - 1
    sub = (index & (_HALF - 1)) + _HALF
    if bucket < 0:
        sub -= _HALF
        bucket = 0
    return sub << bucket


def _highest_of_index(index: int) -> int:
    """The highest value the counts index holds (``highest_equivalent_value``)."""
    low = _lowest_of_index(index)
    bucket = (low | _SUB_MASK).bit_length() - (_HALF_MAGNITUDE + 1)
    return low + (1 << bucket) - 1


def record_slow(slow: SlowHistogram, usec: int) -> None:
    """Count a call of ``usec`` microseconds, ``FAST`` or more (the hot path counts the
    others itself: ``hist[usec] += 1``)."""
    index = hdr_index(usec * 1000)
    slow[index] = slow.get(index, 0) + 1


def record(cmd: Any, usec: int) -> None:
    """Count a call of ``cmd`` that took ``usec`` microseconds."""
    if usec < FAST:
        cmd.hist[usec] += 1
    else:
        record_slow(cmd.hist_slow, usec)


def _index_counts(hist: Histogram, slow: SlowHistogram) -> dict[int, int]:
    """Calls per HdrHistogram counts index."""
    counts = dict(slow)
    for usec, n in enumerate(hist):
        if n:
            index = hdr_index(usec * 1000)
            counts[index] = counts.get(index, 0) + n
    return counts


# -- LATENCY HISTOGRAM's levels -----------------------------------------------------------

LEVELS = 21  # 1,024 ns << 20 is past the histogram's 1 s maximum
_LEVEL_HIGHEST = [_highest_of_index(hdr_index(1024 << k)) for k in range(LEVELS)]  # ns
_REPORTED = [h // 1000 for h in _LEVEL_HIGHEST]  # what the reply names each level by (us)


def _level_of_index(index: int) -> int:
    value = _lowest_of_index(index)
    k = 0
    while k < LEVELS - 1 and value > _LEVEL_HIGHEST[k]:
        k += 1
    return k


def level_of(usec: int) -> int:
    """The LATENCY HISTOGRAM level a call of ``usec`` microseconds is reported at."""
    return _level_of_index(hdr_index(usec * 1000))


def histogram_reply(calls: int, hist: Histogram, slow: SlowHistogram) -> Map:
    """``calls N histogram_usec {level-us cumulative-count ...}`` for one command."""
    per_level = [0] * LEVELS
    for index, n in _index_counts(hist, slow).items():
        per_level[_level_of_index(index)] += n
    cdf = Map()
    total = 0
    for k, n in enumerate(per_level):
        if n:
            total += n
            cdf[_REPORTED[k]] = total
    return Map(((b"calls", calls), (b"histogram_usec", cdf)))


def has_samples(cmd: Any) -> bool:
    """Calls recorded (none while latency-tracking is off: its histograms are set aside,
    where Redis would still show LATENCY HISTOGRAM the stale ones)."""
    return cmd.hist is not DISCARD and (bool(cmd.hist_slow) or any(cmd.hist))


# -- INFO latencystats -----------------------------------------------------------------------

def value_at_percentile(counts: dict[int, int], percentile: float) -> int:
    """``hdr_value_at_percentile`` over calls per counts index, in nanoseconds."""
    total = sum(counts.values())
    wanted = max(int(min(percentile, 100.0) / 100 * total + 0.5), 1)
    running = 0
    found = 0
    for index in sorted(counts):
        running += counts[index]
        if running >= wanted:
            found = index
            break
    if percentile == 0.0:
        return _lowest_of_index(found)
    return _highest_of_index(found)


def format_percentile(p: float) -> str:
    """A percentile as Redis names it: ``%f`` with trailing zeros (and a bare point) cut."""
    text = f"{p:f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def percentiles_line(name: str, hist: Histogram, slow: SlowHistogram,
                     percentiles: list[float]) -> str:
    """``latency_percentiles_usec_<name>:p50=1.003,p99=...`` (values in microseconds)."""
    counts = _index_counts(hist, slow)
    parts = ",".join(f"p{format_percentile(p)}={value_at_percentile(counts, p) / 1000:.3f}"
                     for p in percentiles)
    return f"latency_percentiles_usec_{name}:{parts}"
