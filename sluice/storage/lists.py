"""The list value type: a ``collections.deque`` of ``bytes`` elements (Redis's ``t_list.c``).

Redis keeps a list as a quicklist (a linked list of listpack nodes) or, while it is small, as
a single listpack; a deque is the same shape in Python: blocks of elements linked both ways,
O(1) at both ends, O(N) in the middle. The methods below are the data work of the list
commands, in Redis's terms: every index is the one ``LINDEX`` uses (0 is the head, -1 the
tail), and ranges are normalised exactly as ``addListRangeReply`` / ``ltrimCommand`` do. They
return plain values; no reply building here.

Encoding (``OBJECT ENCODING``), as Redis 8.6: a list is born a ``listpack``; before elements
are added (push, LINSERT, LSET, LMOVE's destination) it becomes a ``quicklist`` if the
listpack's bytes plus the new elements' lengths, or its length plus their count, would pass
``list-max-listpack-size`` (``listTypeTryConvertListpack``); after elements are removed, a
quicklist left with a single packed node of at most half the limit becomes a listpack again
(``listTypeTryConvertQuicklist``; the commands call ``after_removal``). A listpack's byte
count is kept as elements come and go (O(1) per element); a quicklist's nodes are modelled in
``quicklist.py``. Methods that may convert take ``fill``: the server's current
``list-max-listpack-size``, which Redis reads at each conversion (a quicklist keeps the fill it
was created with for its own nodes).

Invariant kept by the callers (``commands/lists.py``), as in Redis: a list key never holds an
empty list; the command that removes the last element deletes the key.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterable, Iterator, Sequence

from .keyspace import register_type
from .quicklist import (
    LP_EMPTY_BYTES,
    Node,
    Quicklist,
    fill_limits,
    node_limit,
    packed_node,
)
from .stream_node import lp_str_size
from .strings import string2ll

DEFAULT_FILL = -2  # list-max-listpack-size's default: 8 KB


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


def popped_bytes(value: bytes, from_quicklist: bool) -> int:
    """What LMOVE counts for ``value`` when it checks its destination's size.

    Redis counts the string length of the element it popped, but a quicklist hands elements
    stored as integers back as integer objects, which the check does not count
    (``sdsEncodedObject``); a listpack hands back strings.
    """
    if from_quicklist and string2ll(value) is not None:
        return 0
    return len(value)


class ListValue:
    """A Redis list. Elements are ``bytes``; the head is the left end of ``items``."""

    __slots__ = ("items", "lp_bytes", "ql")

    def __init__(self, items: Iterable[bytes] = (), fill: int = DEFAULT_FILL,
                 convert: bool = True) -> None:
        """An empty listpack, or the list of ``items`` built as Redis builds a list it loads
        element by element (``RDB_TYPE_LIST``): pushed at the tail of a quicklist, then
        converted to a listpack if it fits (unless not ``convert``: ``RDB_TYPE_LIST_ZIPLIST``
        loads stay quicklists)."""
        self.items: deque[bytes] = deque()  # the elements, head first
        self.lp_bytes = LP_EMPTY_BYTES  # lpBytes() while listpack-encoded
        self.ql: Quicklist | None = None  # the quicklist's nodes; None while a listpack
        items = list(items)
        if items:
            ql = self.ql = Quicklist(fill)
            for item in items:
                ql.push(item, False)
            self.items.extend(items)
            if convert:
                self._try_listpack(fill, shrinking=False)

    @classmethod
    def from_nodes(cls, nodes: Iterable[tuple[bool, Sequence[bytes]]],
                   fill: int = DEFAULT_FILL) -> ListValue:
        """A list loaded node by node (``RDB_TYPE_LIST_QUICKLIST(_2)``): ``(plain, elements)``
        per node, empty packed nodes skipped; a single small packed node becomes a listpack."""
        lst = cls()
        ql = lst.ql = Quicklist(fill)
        for plain, elements in nodes:
            if plain:
                ql.nodes.append(Node(1, len(elements[0]), True))
            elif elements:
                ql.nodes.append(packed_node(elements))
            lst.items.extend(elements)
        lst._try_listpack(fill, shrinking=False)
        return lst

    def refill(self, fill: int) -> None:
        """Redo, for the server's ``fill``, the decisions of a load made with the default one
        (``from_nodes``, ``ListValue(items)``): the quicklist's own fill, and whether a single
        small packed node is a listpack. Only for a list just loaded. (Not exact for the
        pre-3.2 formats, whose nodes the fill also shaped; Redis no longer writes them.)"""
        if fill == DEFAULT_FILL:
            return
        if self.ql is None:  # it was loaded as one packed node
            self.ql = Quicklist(fill, [Node(len(self.items), self.lp_bytes)])
        else:
            self.ql.set_fill(fill)
        self._try_listpack(fill, shrinking=False)

    def copy(self) -> ListValue:
        """An independent copy with the same encoding and nodes (COPY's ``listTypeDup``)."""
        dup = ListValue()
        dup.items = self.items.copy()
        dup.lp_bytes = self.lp_bytes
        dup.ql = None if self.ql is None else self.ql.copy()
        return dup

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.items)

    def __reversed__(self) -> Iterator[bytes]:
        return reversed(self.items)

    def __repr__(self) -> str:
        return f"ListValue({list(self.items)!r}, encoding={self.encoding().decode()})"

    # -- encoding ------------------------------------------------------------------------

    def encoding(self) -> bytes:
        """What ``OBJECT ENCODING`` reports."""
        return b"listpack" if self.ql is None else b"quicklist"

    def nodes(self) -> Iterator[tuple[bool, list[bytes]]]:
        """``(plain, elements)`` per node as Redis saves the list (a listpack as one node)."""
        if self.ql is None:
            yield False, list(self.items)
            return
        it = iter(self.items)
        for node in self.ql.nodes:
            yield node.plain, list(itertools.islice(it, node.count))

    def _grow(self, add_bytes: int, add_count: int, fill: int) -> Quicklist | None:
        """Before adding elements: a listpack that would pass the limit becomes a quicklist
        whose only node is the listpack (``listTypeTryConvertListpack``). Returns the
        quicklist, None if the list stays a listpack."""
        if self.ql is None:
            max_sz, max_count = fill_limits(fill)
            if self.lp_bytes + add_bytes > max_sz or len(self.items) + add_count > max_count:
                self.ql = Quicklist(fill, [Node(len(self.items), self.lp_bytes)] if self.items else ())
        return self.ql

    def _try_listpack(self, fill: int, shrinking: bool) -> None:
        """A quicklist of one small packed node becomes a listpack (``listTypeTryConvertQuicklist``);
        after a removal it must be within half the limits, to avoid flapping."""
        ql = self.ql
        if ql is None or len(ql.nodes) != 1:
            return
        node = ql.nodes[0]
        if node.plain:
            return
        size_limit, count_limit = node_limit(fill)
        if shrinking:
            size_limit //= 2
            count_limit //= 2
        if node.sz <= size_limit and node.count <= count_limit:
            self.lp_bytes = node.sz
            self.ql = None

    def after_removal(self, fill: int) -> None:
        """The conversion check Redis runs after elements left a list that is not empty."""
        if self.ql is not None:
            self._try_listpack(fill, shrinking=True)

    def _dropped_ends(self, removed: list[bytes], head: bool) -> None:
        if self.ql is None:
            self.lp_bytes -= sum(map(lp_str_size, removed))
        else:
            self.ql.drop_ends(removed, head)

    # -- both ends -----------------------------------------------------------------------

    def push(self, values: Sequence[bytes], head: bool, fill: int,
             add_bytes: int | None = None) -> int:
        """LPUSH (each value in turn becomes the head) or RPUSH; returns the new length.

        ``add_bytes``: what the conversion check counts for the values (default: their
        lengths; see ``popped_bytes``).
        """
        ql = self.ql
        if ql is None:
            ql = self._grow(sum(map(len, values)) if add_bytes is None else add_bytes,
                            len(values), fill)
        if ql is None:
            self.lp_bytes += sum(map(lp_str_size, values))
        else:
            push = ql.push
            for value in values:
                push(value, head)
        if head:
            self.items.extendleft(values)
        else:
            self.items.extend(values)
        return len(self.items)

    def pop_one(self, head: bool) -> bytes:
        """Remove and return the head or tail element (the list must not be empty)."""
        value = self.items.popleft() if head else self.items.pop()
        if self.ql is None:
            self.lp_bytes -= lp_str_size(value)
        else:
            self.ql.drop_end(value, head)
        return value

    def pop_head(self, count: int) -> list[bytes]:
        """Remove and return up to ``count`` elements from the head, head first."""
        pop = self.items.popleft
        out = [pop() for _ in range(min(count, len(self.items)))]
        self._dropped_ends(out, True)
        return out

    def pop_tail(self, count: int) -> list[bytes]:
        """Remove and return up to ``count`` elements from the tail, tail first."""
        pop = self.items.pop
        out = [pop() for _ in range(min(count, len(self.items)))]
        self._dropped_ends(out, False)
        return out

    # -- by index ------------------------------------------------------------------------

    def index_of(self, index: int) -> bytes | None:
        """LINDEX: the element at ``index`` (negative from the tail), None when out of range."""
        items = self.items
        if -len(items) <= index < len(items):
            return items[index]
        return None

    def set_at(self, index: int, value: bytes, fill: int = DEFAULT_FILL) -> bool:
        """LSET: replace the element at ``index``; False when out of range.

        The growth check runs first, even when the index turns out to be out of range.
        """
        items = self.items
        self._grow(len(value), 1, fill)
        if not -len(items) <= index < len(items):
            return False
        if index < 0:
            index += len(items)
        if self.ql is None:
            self.lp_bytes += lp_str_size(value) - lp_str_size(items[index])
        else:
            self.ql.replace(items, index, value)
        items[index] = value
        self.after_removal(fill)  # a big element may have been replaced by a small one
        return True

    def range(self, start: int, end: int) -> list[bytes]:
        """LRANGE: the elements from ``start`` to ``end`` inclusive, Redis's index rules.

        O(S + N): S is the distance of the range from the nearer end of the list.
        """
        items = self.items
        length = len(items)
        bounds = normalize_range(start, end, length)
        if bounds is None:
            return []
        first, last = bounds
        if first <= length - 1 - last:
            return list(itertools.islice(items, first, last + 1))
        out = list(itertools.islice(reversed(items), length - 1 - last, length - first))
        out.reverse()
        return out

    def trim(self, start: int, end: int) -> int:
        """LTRIM: keep ``start..end`` only; returns how many elements were removed."""
        length = len(self.items)
        bounds = normalize_range(start, end, length)
        if bounds is None:
            self.pop_head(length)
            return length
        first, last = bounds
        self.pop_head(first)
        self.pop_tail(length - 1 - last)
        return length - len(self.items)

    # -- by value ------------------------------------------------------------------------

    def remove_value(self, value: bytes, count: int) -> int:
        """LREM: remove up to ``count`` occurrences (all for 0; from the tail if negative)."""
        items = self.items
        length = len(items)
        if count >= 0:
            hits = [i for i, e in enumerate(items) if e == value]
            if count:
                hits = hits[:count]
        else:
            hits = []
            for j, e in enumerate(reversed(items)):
                if e == value:
                    hits.append(length - 1 - j)
                    if len(hits) == -count:
                        break
            hits.reverse()
        if not hits:
            return 0
        if self.ql is None:
            self.lp_bytes -= lp_str_size(value) * len(hits)
        else:
            self.ql.drop_positions((i, value) for i in hits)
        drop = set(hits)
        kept = [e for i, e in enumerate(items) if i not in drop]
        items.clear()
        items.extend(kept)
        return len(hits)

    def insert_at_pivot(self, pivot: bytes, value: bytes, before: bool,
                        fill: int = DEFAULT_FILL) -> bool:
        """LINSERT: put ``value`` before/after the first ``pivot`` from the head.

        The growth check runs first, even when the pivot turns out to be missing.
        """
        self._grow(len(value), 1, fill)
        items = self.items
        try:
            i = items.index(pivot)
        except ValueError:
            return False
        if self.ql is None:
            self.lp_bytes += lp_str_size(value)
        else:
            self.ql.insert(items, i, value, after=not before)
        items.insert(i if before else i + 1, value)
        return True

    def positions(self, value: bytes, rank: int, count: int | None, maxlen: int) -> list[int]:
        """LPOS: indexes of matches of ``value``.

        ``rank`` n > 0 skips the first n-1 matches from the head; negative ranks search from
        the tail. ``count`` None wants one match, 0 all of them. ``maxlen`` > 0 compares at
        most that many elements. Indexes are LINDEX's (from the head) either way.
        """
        items = self.items
        length = len(items)
        if rank > 0:
            source: Iterable[bytes] = items
            skip = rank - 1
        else:
            source = reversed(items)
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
