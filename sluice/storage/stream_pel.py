"""Pending entries, consumers and dead-letter policies: the per-entry pieces of a group.

Role: the small records a consumer group (``stream_group.py``) is made of, one comment per
field as in Redis's ``stream.h`` (``streamNACK``, ``streamConsumer``), plus what Sluice adds:
a group's dead-letter policy (``DeadLetter``) and the buckets of the delivery-count histogram
each group keeps for the metrics endpoint. ``tick`` orders entries timed in the same
millisecond as Redis's time-ordered PEL list does.

Imports nothing outside ``sluice.storage`` (and sortedcontainers).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from itertools import count

from sortedcontainers import SortedDict

__all__ = ["ClaimedEntry", "Consumer", "DELIVERY_BUCKETS", "DeadLetter", "Fits", "LLONG_MAX",
           "PendingEntry", "PendingInfo", "delivery_bucket", "next_tick"]

LLONG_MAX = (1 << 63) - 1  # XNACK FATAL's delivery count (the largest RESP integer)

# Upper bounds of the delivery-count histogram (``ConsumerGroup.hist``); the last bucket,
# past the last bound, is +Inf. A count of 0 (XNACK SILENT / FORCE) falls in the first.
DELIVERY_BUCKETS = (1, 2, 3, 5, 10, 20, 50)
_BUCKET_OF = tuple(bisect.bisect_left(DELIVERY_BUCKETS, n) for n in range(51))
_LAST_BUCKET = len(DELIVERY_BUCKETS)


def delivery_bucket(count: int) -> int:
    """The histogram bucket of a delivery count."""
    return _BUCKET_OF[count] if count <= 50 else _LAST_BUCKET


# Orders pending entries delivered in the same millisecond as Redis's time-ordered PEL list
# does: a newly (re)timed entry goes after those already there with the same time.
_TICKS = count()


def next_tick() -> int:
    """A fresh tick: later than every pending entry timed so far."""
    return next(_TICKS)


PendingInfo = tuple[int, bytes, int, int]
"""An XPENDING row: ``(id, consumer name, idle ms, delivery count)``."""

ClaimedEntry = tuple[int, list[bytes], int, int]
"""An entry claimed by XREADGROUP CLAIM: ``(id, fields, idle ms, earlier deliveries)``."""


class PendingEntry:
    """A delivered, not yet acknowledged entry (Redis's ``streamNACK``)."""

    __slots__ = ("delivery_time", "delivery_count", "consumer", "tick")

    delivery_time: int  # Last time (ms) this entry was delivered.
    delivery_count: int  # Number of times it was delivered.
    consumer: Consumer | None  # Its consumer; None when NACKed (XNACK), or mid-FORCE.
    tick: int  # When delivery_time was last set, among all entries: breaks ties in time.

    def __init__(self, consumer: Consumer | None, now: int) -> None:
        self.delivery_time = now
        self.delivery_count = 1
        self.consumer = consumer
        self.tick = next(_TICKS)


class DeadLetter:
    """A group's dead-letter policy (Sluice, ``SLUICE.XPOLICY DEADLETTER``)."""

    __slots__ = ("key", "max_deliveries")

    key: bytes  # The stream (same database) dead letters are added to.
    max_deliveries: int  # Deliveries after which an entry is dead-lettered (>= 1).

    def __init__(self, key: bytes, max_deliveries: int) -> None:
        self.key = key
        self.max_deliveries = max_deliveries


Fits = Callable[[int, "list[bytes] | None"], bool]
"""A reply budget (XREADGROUP MAXCOUNT / MAXSIZE): may this entry still be delivered?"""


class Consumer:
    """A consumer of a group (Redis's ``streamConsumer``)."""

    __slots__ = ("name", "seen_time", "active_time", "pel")

    name: bytes  # Consumer name, case sensitive.
    seen_time: int  # Last time it tried to read or claim (ms).
    active_time: int  # Last time a read or claim succeeded (ms); -1 if never.
    pel: SortedDict  # ID -> PendingEntry for the entries it owns, shared with the group PEL.

    def __init__(self, name: bytes, now: int) -> None:
        self.name = name
        self.seen_time = now
        self.active_time = -1
        self.pel = SortedDict()
