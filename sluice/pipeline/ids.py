"""Stream IDs, XRANGE bounds and range splitting: the pure arithmetic of the pipeline.

A stream ID is ``<ms>-<seq>``, both unsigned 64-bit (Redis ``streamID`` in ``stream.h``). We
order IDs as the 128-bit integer ``ms << 64 | seq``, which is exactly Redis's order, so "split
an ID range into N slices" is integer division and every slice boundary is a valid ID.

Invariants:
- Every bound handed to a reader is an *inclusive*, complete ID: exclusive forms (``(id``) and
  incomplete IDs (``1700000000000``) are resolved here, with Redis's rules
  (``streamParseIntervalIdOrReply`` in ``t_stream.c``): a missing seq is 0 for a start and
  2^64-1 for an end; ``(`` then moves the bound one ID inwards.
- :func:`split_range` returns contiguous, disjoint, inclusive slices that cover ``[lo, hi]``
  exactly, in ascending order, and never an empty slice.

Nothing here imports redis or pyspark, so it is unit-tested without a server or Java.
"""

from __future__ import annotations

import re
from typing import NamedTuple

U64_MAX = (1 << 64) - 1
ID_INT_MAX = (1 << 128) - 1

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)\s*$", re.IGNORECASE)
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}


class StreamID(NamedTuple):
    """One stream entry ID; tuple order is stream order."""

    ms: int
    seq: int

    def __str__(self) -> str:
        return f"{self.ms}-{self.seq}"

    def as_int(self) -> int:
        return (self.ms << 64) | self.seq

    @classmethod
    def from_int(cls, value: int) -> StreamID:
        if not 0 <= value <= ID_INT_MAX:
            raise ValueError(f"stream ID integer out of range: {value}")
        return cls(value >> 64, value & U64_MAX)

    @classmethod
    def parse(cls, text: str) -> StreamID:
        """Parse a complete ``ms-seq`` ID (as returned by the server); strict."""
        ms, sep, seq = text.partition("-")
        if not sep:
            raise ValueError(f"invalid stream ID {text!r}: expected <ms>-<seq>")
        return cls(_parse_u64(ms, text), _parse_u64(seq, text))

    def next(self) -> StreamID:
        """The smallest ID greater than this one (``streamIncrID``)."""
        if self.as_int() == ID_INT_MAX:
            raise ValueError("no stream ID is greater than the maximum ID")
        return StreamID.from_int(self.as_int() + 1)

    def prev(self) -> StreamID:
        """The greatest ID smaller than this one (``streamDecrID``)."""
        if self.as_int() == 0:
            raise ValueError("no stream ID is smaller than 0-0")
        return StreamID.from_int(self.as_int() - 1)


MIN_ID = StreamID(0, 0)
MAX_ID = StreamID(U64_MAX, U64_MAX)


def _parse_u64(part: str, whole: str) -> int:
    # int() accepts "+1", " 1", "1_0": Redis does not, so neither do we.
    if not part or not part.isdigit() or not part.isascii():
        raise ValueError(f"invalid stream ID {whole!r}")
    value = int(part)
    if value > U64_MAX:
        raise ValueError(f"invalid stream ID {whole!r}: part exceeds 2^64-1")
    return value


def parse_bound(text: str, *, is_start: bool) -> StreamID:
    """Resolve an XRANGE-style bound to an inclusive complete ID.

    Accepts ``-``, ``+``, ``ms``, ``ms-seq`` and the exclusive forms ``(ms`` / ``(ms-seq``.
    Raises ``ValueError`` for a malformed bound or an exclusive bound with nothing beyond it.
    """
    text = text.strip()
    if text in ("-", "+"):
        return MIN_ID if text == "-" else MAX_ID
    exclusive = text.startswith("(")
    body = text[1:] if exclusive else text
    if "-" in body:
        bound = StreamID.parse(body)
    else:
        bound = StreamID(_parse_u64(body, text), 0 if is_start else U64_MAX)
    if not exclusive:
        return bound
    try:
        return bound.next() if is_start else bound.prev()
    except ValueError:
        side = "start" if is_start else "end"
        raise ValueError(f"invalid {side} ID for the interval: {text!r}") from None


def split_range(lo: StreamID, hi: StreamID, parts: int) -> list[tuple[StreamID, StreamID]]:
    """Split inclusive ``[lo, hi]`` into at most ``parts`` contiguous inclusive slices.

    Slicing is on the 128-bit ID integer, so for auto-generated IDs it is slicing by time.
    An empty range (``lo > hi``) gives no slices.
    """
    if parts < 1:
        raise ValueError(f"parts must be >= 1, got {parts}")
    a, b = lo.as_int(), hi.as_int()
    if a > b:
        return []
    width = b - a + 1
    parts = min(parts, width)
    step, extra = divmod(width, parts)
    slices: list[tuple[StreamID, StreamID]] = []
    start = a
    for i in range(parts):
        end = start + step + (1 if i < extra else 0) - 1
        slices.append((StreamID.from_int(start), StreamID.from_int(end)))
        start = end + 1
    return slices


def split_time_range(lo: StreamID, hi: StreamID, parts: int) -> list[tuple[StreamID, StreamID]]:
    """Like :func:`split_range` but cut only at millisecond boundaries.

    Auto-generated IDs have small seqs, so cutting in the 128-bit space between two ms values
    puts nearly all rows in one slice; cutting on ms balances by time. Falls back to
    :func:`split_range` when the range lies within one millisecond.
    """
    if lo > hi:
        return []
    if lo.ms == hi.ms:
        return split_range(lo, hi, parts)
    cuts = split_range(StreamID(0, lo.ms), StreamID(0, hi.ms), parts)
    slices: list[tuple[StreamID, StreamID]] = []
    for i, (a, b) in enumerate(cuts):
        start = lo if i == 0 else StreamID(a.seq, 0)
        end = hi if i == len(cuts) - 1 else StreamID(b.seq, U64_MAX)
        slices.append((start, end))
    return slices


def parse_duration_ms(text: str) -> int:
    """``"7d"`` -> milliseconds; units ms, s, m, h, d, w."""
    match = _DURATION.match(text)
    if not match:
        raise ValueError(f"invalid duration {text!r}: expected e.g. 90s, 12h, 7d")
    return int(float(match.group(1)) * _UNIT_MS[match.group(2).lower()])


def cutoff_before(now_ms: int, older_than: str) -> StreamID:
    """The first ID *not* older than ``older_than`` at ``now_ms`` (an exclusive upper bound)."""
    return StreamID(max(0, now_ms - parse_duration_ms(older_than)), 0)
