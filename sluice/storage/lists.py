"""The list value type: a ``collections.deque`` of ``bytes`` elements (Redis's ``t_list.c``).

Redis keeps a list as a quicklist (a linked list of listpack nodes); a deque is the same shape
in Python: blocks of elements linked both ways, O(1) at both ends, O(N) in the middle. The
methods below are the data work of the list commands, in Redis's terms: every index is the
one ``LINDEX`` uses (0 is the head, -1 the tail), and ranges are normalised exactly as
``addListRangeReply`` / ``ltrimCommand`` do. They return plain values; no reply building here.

Invariant kept by the callers (``commands/lists.py``), as in Redis: a list key never holds an
empty list; the command that removes the last element deletes the key.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterable

from .keyspace import register_type


def normalize_range(start: int, end: int, length: int) -> tuple[int, int] | None:
    """``(first, last)`` inclusive indexes of ``start..end`` in a list of ``length``, or None.

    Negative indexes count from the tail; a start before the head is clamped to 0, an end past
    the tail to the last element; an empty range (start > end or start >= length) is None.
    """
    if start < 0:
        start += length
    if end < 0:
        end += length
    if start < 0:
        start = 0
    if start > end or start >= length:
        return None
    if end >= length:
        end = length - 1
    return start, end


class ListValue(deque):  # type: ignore[type-arg]
    """A Redis list. Elements are ``bytes``; the head is the left end of the deque."""

    __slots__ = ()

    def copy(self) -> ListValue:
        """An independent copy (COPY, RESTORE-like duplication)."""
        return ListValue(self)

    def encoding(self) -> bytes:
        """What ``OBJECT ENCODING`` reports.

        Redis 7.0 (the release Sluice matches) stores every list as a quicklist, whatever
        ``list-max-listpack-size`` says: that setting only sizes the quicklist's nodes. Small
        lists reported as ``listpack`` arrived with Redis 7.2.
        """
        return b"quicklist"

    # -- both ends -----------------------------------------------------------------------

    def push_head(self, values: Iterable[bytes]) -> int:
        """LPUSH: each value in turn becomes the head (so the last one ends up first)."""
        self.extendleft(values)
        return len(self)

    def push_tail(self, values: Iterable[bytes]) -> int:
        """RPUSH: append the values in order; returns the new length."""
        self.extend(values)
        return len(self)

    def pop_head(self, count: int) -> list[bytes]:
        """Remove and return up to ``count`` elements from the head, head first."""
        n = min(count, len(self))
        pop = self.popleft
        return [pop() for _ in range(n)]

    def pop_tail(self, count: int) -> list[bytes]:
        """Remove and return up to ``count`` elements from the tail, tail first."""
        n = min(count, len(self))
        pop = self.pop
        return [pop() for _ in range(n)]

    # -- by index ------------------------------------------------------------------------

    def index_of(self, index: int) -> bytes | None:
        """LINDEX: the element at ``index`` (negative from the tail), None when out of range."""
        if -len(self) <= index < len(self):
            value: bytes = self[index]
            return value
        return None

    def set_at(self, index: int, value: bytes) -> bool:
        """LSET: replace the element at ``index``; False when out of range."""
        if -len(self) <= index < len(self):
            self[index] = value
            return True
        return False

    def range(self, start: int, end: int) -> list[bytes]:
        """LRANGE: the elements from ``start`` to ``end`` inclusive, Redis's index rules.

        O(S + N): S is the distance of the range from the nearer end of the list.
        """
        length = len(self)
        bounds = normalize_range(start, end, length)
        if bounds is None:
            return []
        first, last = bounds
        if first <= length - 1 - last:
            return list(itertools.islice(self, first, last + 1))
        out = list(itertools.islice(reversed(self), length - 1 - last, length - first))
        out.reverse()
        return out

    def trim(self, start: int, end: int) -> int:
        """LTRIM: keep ``start..end`` only; returns how many elements were removed."""
        length = len(self)
        bounds = normalize_range(start, end, length)
        if bounds is None:
            self.clear()
            return length
        first, last = bounds
        for _ in range(length - 1 - last):
            self.pop()
        for _ in range(first):
            self.popleft()
        return length - len(self)

    # -- by value ------------------------------------------------------------------------

    def remove_value(self, value: bytes, count: int) -> int:
        """LREM: remove up to ``count`` occurrences (all for 0; from the tail if negative)."""
        if count == 0:
            kept = [e for e in self if e != value]
            removed = len(self) - len(kept)
            if removed:
                self.clear()
                self.extend(kept)
            return removed
        limit = abs(count)
        source = self if count > 0 else reversed(self)
        kept = []
        removed = 0
        for e in source:
            if removed < limit and e == value:
                removed += 1
            else:
                kept.append(e)
        if removed:
            if count < 0:
                kept.reverse()
            self.clear()
            self.extend(kept)
        return removed

    def insert_at_pivot(self, pivot: bytes, value: bytes, before: bool) -> bool:
        """LINSERT: put ``value`` before/after the first ``pivot`` from the head."""
        try:
            i = self.index(pivot)
        except ValueError:
            return False
        self.insert(i if before else i + 1, value)
        return True

    def positions(self, value: bytes, rank: int, count: int | None, maxlen: int) -> list[int]:
        """LPOS: indexes of matches of ``value``.

        ``rank`` n > 0 skips the first n-1 matches from the head; negative ranks search from
        the tail. ``count`` None wants one match, 0 all of them. ``maxlen`` > 0 compares at
        most that many elements. Indexes are LINDEX's (from the head) either way.
        """
        length = len(self)
        if rank > 0:
            source: Iterable[bytes] = self
            skip = rank - 1
        else:
            source = reversed(self)
            skip = -rank - 1
        if maxlen:
            source = itertools.islice(source, maxlen)
        want = 1 if count is None else count
        out: list[int] = []
        for i, e in enumerate(source):
            if e == value:
                if skip:
                    skip -= 1
                    continue
                out.append(i if rank > 0 else length - 1 - i)
                if want and len(out) >= want:
                    break
        return out


register_type(ListValue, b"list")
