"""A hash table with slots: what a hash-table-encoded set or sorted set needs beyond a dict.

Role: Redis's ``dict`` gives sets and sorted sets three things a Python dict does not: a fair
random member in O(1) (``dictGetFairRandomKey``: SPOP, SRANDMEMBER, ZRANDMEMBER) and a
stateless cursor with SCAN's guarantee (``dictScan``: every member present for the whole
scan is returned). ``HashSlots`` adds them to a dict:

* ``d`` maps each member to its value (``True`` for a set, the ``(score, member)`` entry
  for a sorted set). A removed member stays in ``d`` with the value ``None`` (a tombstone)
  until the next compaction, so ``d.get(m)`` is None for a member that is absent or
  removed, and a member removed and added again keeps its slot.
* ``slots`` lists the members in the order they were first added. A random member is a
  random slot, retried while it holds a tombstone: compaction keeps tombstones below half
  the slots, so that takes fewer than two tries on average.
* Compaction drops the tombstones, keeping the others' order, once they are more than half
  of ``d`` (and at least 8): amortised O(1) per removal, and memory stays proportional to
  the live members.
* A SCAN cursor is ``(epoch << 40) | slot``: the next slot to look at, in the layout of the
  ``epoch``-th compaction. Members only move at a compaction, and only towards the front, in
  order; the previous layout's cursor is mapped through ``remap`` (the old slots of the
  members that were kept), so a scan across a compaction neither skips nor repeats members.
  A cursor two compactions old starts again from the beginning: members may then come back
  twice, which SCAN allows; none is missed.

Invariants: ``slots`` holds each key of ``d`` exactly once; ``stale`` is the number of
tombstones; ``len(self)`` is the number of live members.

Mirrors the parts of Redis's ``dict.c`` the set types use. Imports nothing of Sluice's.
"""

from __future__ import annotations

import random
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from typing import Any

__all__ = ["HashSlots"]

_POS_BITS = 40
_POS_MASK = (1 << _POS_BITS) - 1
_EPOCHS = 1 << 23  # cursors stay below 2^63


class HashSlots:
    """Members with values, tombstones, insertion slots and a scan cursor."""

    __slots__ = ("d", "slots", "stale", "epoch", "remap")

    def __init__(self, items: Iterable[tuple[bytes, Any]] = ()) -> None:
        self.d: dict[bytes, Any] = dict(items)  # member -> value; None: removed (tombstone)
        self.slots: list[bytes] = list(self.d)  # every key of d, in the order first added
        self.stale = 0  # tombstones in d
        self.epoch = 0  # compactions so far (mod 2^23): the layout cursors refer to
        self.remap: array[int] | None = None  # old slots of the members kept last compaction

    def __len__(self) -> int:
        return len(self.d) - self.stale

    def __iter__(self) -> Iterator[bytes]:
        """Live members in slot order."""
        d = self.d
        if not self.stale:
            return iter(self.slots)
        return (m for m in self.slots if d[m] is not None)

    def values(self) -> Iterator[Any]:
        """Live values in slot order."""
        d = self.d
        return (v for v in map(d.__getitem__, self.slots) if v is not None)

    def copy(self) -> HashSlots:
        """A compacted duplicate (values are shared: they are immutable)."""
        d = self.d
        return HashSlots((m, d[m]) for m in self.slots if d[m] is not None)

    def put(self, member: bytes, value: Any) -> bool:
        """Set ``member``'s value; True if it was not a live member before."""
        d = self.d
        old = d.get(member, _ABSENT)
        d[member] = value
        if old is _ABSENT:
            self.slots.append(member)
            return True
        if old is None:
            self.stale -= 1
            return True
        return False

    def remove(self, member: bytes) -> Any:
        """Remove a live member; its old value, or None if it was not there."""
        d = self.d
        value = d.get(member)
        if value is None:
            return None
        d[member] = None
        self.stale += 1
        if self.stale > 8 and 2 * self.stale > len(d):
            self.compact()
        return value

    def compact(self) -> None:
        """Drop the tombstones; remember where the kept members were for old cursors."""
        d = self.d
        kept_at = array("q")
        kept: list[bytes] = []
        for i, m in enumerate(self.slots):
            if d[m] is not None:
                kept.append(m)
                kept_at.append(i)
        live = {m: d[m] for m in kept}
        d.clear()  # in place: a sorted set keeps a reference to this dict
        d.update(live)
        self.slots = kept
        self.stale = 0
        self.remap = kept_at
        self.epoch = (self.epoch + 1) % _EPOCHS

    def random_member(self) -> bytes:
        """A live member, each with the same chance (the table must not be empty)."""
        slots, d = self.slots, self.d
        n = len(slots)
        while True:
            m = slots[random.randrange(n)]
            if d[m] is not None:
                return m

    def scan(self, cursor: int, count: int,
             want: Callable[[bytes], bool] | None = None) -> tuple[int, list[bytes]]:
        """SCAN: the live members from ``cursor`` on, looking at about ``count`` of them (and
        at most ten times that many slots, as Redis bounds its work); returns the next cursor
        (0 when done) and the members that ``want`` accepts."""
        epoch, pos = cursor >> _POS_BITS, cursor & _POS_MASK
        if epoch != self.epoch:
            if self.remap is not None and epoch == (self.epoch - 1) % _EPOCHS:
                pos = bisect_left(self.remap, pos)
            else:
                pos = 0  # unknown layout: start over (members may come twice, none is lost)
        slots, d = self.slots, self.d
        n = len(slots)
        out: list[bytes] = []
        seen = 0
        budget = count * 10
        while pos < n and seen < count and budget:
            m = slots[pos]
            pos += 1
            budget -= 1
            if d[m] is None:
                continue
            seen += 1
            if want is None or want(m):
                out.append(m)
        if pos >= n:
            return 0, out
        return (self.epoch << _POS_BITS) | pos, out


_ABSENT: Any = object()
