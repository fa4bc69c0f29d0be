"""The shape of a Redis list: its listpack byte count, or its quicklist nodes.

Role: decide what ``OBJECT ENCODING`` says for a list, exactly as Redis 8.6 does. Redis keeps a
small list as one listpack (``listpack``) and turns it into a quicklist (``quicklist``) when it
outgrows ``list-max-listpack-size``; a quicklist turns back into a listpack only when it has
a single packed node no larger than half the limit (hysteresis), or, on RDB load, no larger
than the limit. Whether a quicklist has a single node depends on the history of pushes, pops,
inserts and replacements, so the nodes are modelled here: per node its element count, its
listpack bytes and whether it is a "plain" node holding one large element. The elements
themselves stay in the list's deque (``storage/lists.py``), in the same order; functions
that need element sizes (splits) are given that deque.

Mirrors ``quicklist.c`` (``quicklistNodeLimit``, ``quicklistNodeExceedsLimit``,
``isLargeElement``, ``_quicklistNodeAllowInsert``, ``_quicklistNodeAllowMerge``,
``quicklistPushHead/Tail``, ``quicklistDelIndex``/``quicklistDelRange``, ``_quicklistInsert``,
``_quicklistSplitNode``, ``_quicklistMergeNodes``, ``quicklistReplaceEntry``) and the size
rules of ``listpack.c``; the conversions themselves are in ``lists.py`` (``t_list.c``).

Invariants:
- a packed node's ``sz`` is exactly ``lpBytes()`` of its listpack: 7 bytes of header and
  terminator plus ``lp_str_size`` of each element (Redis stores every list element in its
  canonical listpack form, integers as integers); a plain node's ``sz`` is its element's
  length and its ``count`` is 1;
- no node is empty; the counts add up to the list's length.

Imports nothing of Sluice's outside ``storage``.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterable, Iterator

from .stream_node import lp_str_size

LP_EMPTY_BYTES = 7  # an empty listpack: total-bytes u32, count u16, the 0xFF terminator
SIZE_SAFETY_LIMIT = 8192  # bytes a node may reach when the fill is a count
SIZE_ESTIMATE_OVERHEAD = 8  # what an insert adds to the element's length, as an estimate
FILL_MAX = (1 << 15) - 1  # a quicklist stores its fill in a signed 16-bit field
FILL_MIN = -5
SIZE_MAX = (1 << 64) - 1  # "no size limit" (C's SIZE_MAX)
UINT_MAX = (1 << 32) - 1  # "no count limit"
_NEG_FILL_SIZES = (4096, 8192, 16384, 32768, 65536)  # fill -1 .. -5


def clamp_fill(fill: int) -> int:
    """The fill a new quicklist keeps (``quicklistSetFill``): -5 .. 32767."""
    return FILL_MAX if fill > FILL_MAX else FILL_MIN if fill < FILL_MIN else fill


def _neg_fill_size(fill: int) -> int:
    return _NEG_FILL_SIZES[min(-fill - 1, len(_NEG_FILL_SIZES) - 1)]


def node_limit(fill: int) -> tuple[int, int]:
    """``(size, count)`` limits of a node (and of a listpack-encoded list) for ``fill``.

    A negative fill limits bytes (4 KB for -1 up to 64 KB for -5 and below); a positive one
    limits elements (0 counts as 1). The other limit is "none" (SIZE_MAX / UINT_MAX).
    """
    if fill >= 0:
        return SIZE_MAX, 1 if fill == 0 else fill
    return _neg_fill_size(fill), UINT_MAX


_LIMITS: dict[int, tuple[int, int]] = {}

# DEBUG QUICKLIST-PACKED-THRESHOLD: when set (Redis's packed_threshold, a process-wide debug
# knob), an element of at least that many bytes is large whatever the fill; 0 (the default):
# the fill decides.
packed_threshold = 0


def set_packed_threshold(size: int) -> bool:
    """``quicklistSetPackedThreshold``: 0 restores the default; False if out of range."""
    global packed_threshold
    if size > (1 << 32) - (1 << 20):
        return False
    packed_threshold = size
    return True


def fill_limits(fill: int) -> tuple[int, int]:
    """``(max_bytes, max_count)`` for ``fill``: a node (or a listpack-encoded list) with more
    bytes or more elements is over the limit (``quicklistNodeExceedsLimit``: with a count
    limit, nodes are also kept within ``SIZE_SAFETY_LIMIT`` bytes), and an element of more
    than ``max_bytes`` is large (``isLargeElement``): it gets a plain node of its own."""
    limits = _LIMITS.get(fill)
    if limits is None:
        limits = (_neg_fill_size(fill), UINT_MAX) if fill < 0 else (SIZE_SAFETY_LIMIT, fill or 1)
        if len(_LIMITS) < 64:
            _LIMITS[fill] = limits
    return limits


class Node:
    """One quicklist node, without its elements."""

    __slots__ = ("count", "sz", "plain")

    def __init__(self, count: int, sz: int, plain: bool = False) -> None:
        self.count = count  # elements in the node
        self.sz = sz  # listpack bytes (packed) or the element's length (plain)
        self.plain = plain  # a single large element stored as it is (QUICKLIST_NODE_CONTAINER_PLAIN)

    def __repr__(self) -> str:
        return f"Node({self.count}, {self.sz}{', plain' if self.plain else ''})"


def packed_node(items: Iterable[bytes]) -> Node:
    """A packed node holding ``items`` (as a listpack built from them)."""
    count = 0
    sz = LP_EMPTY_BYTES
    for item in items:
        count += 1
        sz += lp_str_size(item)
    return Node(count, sz)


def _islice(items: deque[bytes], start: int, stop: int) -> Iterator[bytes]:
    """``items[start:stop]``, walking from the nearer end of the deque."""
    n = len(items)
    if start <= n - stop:
        return itertools.islice(items, start, stop)
    return itertools.islice(reversed(items), n - stop, n - start)


class Quicklist:
    """The nodes of a quicklist-encoded list, head first, and the fill and compress depth it
    was created with (Sluice stores no node compressed: the depth is only reported)."""

    __slots__ = ("nodes", "fill", "max_sz", "max_count", "compress")

    # list-compress-depth, kept by the server: a new quicklist takes the value in force,
    # as Redis's quicklistCreate takes server.list_compress_depth (DEBUG OBJECT shows it).
    default_compress = 0

    def __init__(self, fill: int, nodes: Iterable[Node] = ()) -> None:
        self.nodes: deque[Node] = deque(nodes)
        self.compress = Quicklist.default_compress
        self.set_fill(fill)

    def set_fill(self, fill: int) -> None:
        """The fill the quicklist keeps (``quicklist->fill``: set at creation, or on load)."""
        self.fill = clamp_fill(fill)
        self.max_sz, self.max_count = fill_limits(self.fill)  # node limits, cached

    def copy(self) -> Quicklist:
        """``quicklistDup``: the same nodes, fill and compress depth."""
        dup = Quicklist(self.fill, (Node(n.count, n.sz, n.plain) for n in self.nodes))
        dup.compress = self.compress
        return dup

    def shape(self) -> list[tuple[int, int, bool]]:
        """``(count, sz, plain)`` per node, head first (for tests and DEBUG)."""
        return [(n.count, n.sz, n.plain) for n in self.nodes]

    def _large(self, n: int) -> bool:
        """``isLargeElement``: an element of ``n`` bytes gets a plain node of its own."""
        if packed_threshold:
            return n >= packed_threshold
        return n > self.max_sz

    def _allow_insert(self, node: Node | None, sz: int) -> bool:
        """Can ``node`` take one more element of ``sz`` bytes (estimated)?"""
        if node is None or node.plain or self._large(sz):
            return False
        return (node.sz + sz + SIZE_ESTIMATE_OVERHEAD <= self.max_sz
                and node.count + 1 <= self.max_count)

    def _allow_merge(self, a: Node, b: Node) -> bool:
        if a.plain or b.plain:
            return False
        return (a.sz + b.sz - LP_EMPTY_BYTES <= self.max_sz
                and a.count + b.count <= self.max_count)

    # -- both ends -----------------------------------------------------------------------

    def push(self, value: bytes, head: bool) -> None:
        """``quicklistPushHead`` / ``quicklistPushTail``: into the end node if it has room,
        else into a new node (a plain one for a large element)."""
        n = len(value)
        nodes = self.nodes
        if self._large(n):
            node = Node(1, n, True)
        else:
            es = lp_str_size(value)
            if nodes:
                end = nodes[0] if head else nodes[-1]
                if (not end.plain and end.sz + n + SIZE_ESTIMATE_OVERHEAD <= self.max_sz
                        and end.count < self.max_count):
                    end.count += 1
                    end.sz += es
                    return
            node = Node(1, LP_EMPTY_BYTES + es)
        if head:
            nodes.appendleft(node)
        else:
            nodes.append(node)

    def drop_end(self, value: bytes, head: bool) -> None:
        """``value`` left the head or the tail (``quicklistPopCustom``)."""
        nodes = self.nodes
        node = nodes[0] if head else nodes[-1]
        if node.count == 1:
            if head:
                nodes.popleft()
            else:
                nodes.pop()
        else:
            node.count -= 1
            node.sz -= lp_str_size(value)

    def drop_ends(self, removed: list[bytes], head: bool) -> None:
        """``removed`` left the head (head first) or the tail (tail first): shrink the end
        nodes, deleting those emptied (``quicklistDelIndex`` / ``quicklistDelRange``)."""
        nodes = self.nodes
        i, total = 0, len(removed)
        while i < total:
            node = nodes[0] if head else nodes[-1]
            left = total - i
            if left >= node.count:
                i += node.count
                if head:
                    nodes.popleft()
                else:
                    nodes.pop()
            else:
                node.count -= left
                node.sz -= sum(map(lp_str_size, itertools.islice(removed, i, None)))
                return

    def drop_positions(self, removed: Iterable[tuple[int, bytes]]) -> None:
        """Elements left at these positions (ascending, counted before any removal): shrink
        their nodes and delete the emptied ones. No merging, as in ``quicklistDelIndex``."""
        kept: deque[Node] = deque()
        it = iter(removed)
        nxt = next(it, None)
        start = 0
        for node in self.nodes:
            end = start + node.count
            while nxt is not None and nxt[0] < end:
                node.count -= 1
                if not node.plain:
                    node.sz -= lp_str_size(nxt[1])
                nxt = next(it, None)
            if node.count:
                kept.append(node)
            start = end
        self.nodes = kept

    # -- by index ------------------------------------------------------------------------

    def locate(self, index: int, length: int) -> tuple[int, int, int]:
        """``(node position, offset in the node, index of the node's first element)`` of the
        element at ``index`` (0 <= index < length), seeking from the nearer end."""
        nodes = self.nodes
        if index <= (length - 1) // 2:
            start = 0
            for i, node in enumerate(nodes):
                if start + node.count > index:
                    return i, index - start, start
                start += node.count
        else:
            end = length
            last = len(nodes) - 1
            for j, node in enumerate(reversed(nodes)):
                start = end - node.count
                if start <= index:
                    return last - j, index - start, start
                end = start
        raise IndexError(index)

    def _split(self, items: deque[bytes], i: int, start: int, offset: int, after: bool) -> Node:
        """``_quicklistSplitNode``: a new (detached) node with the elements after ``offset``
        (``after``) or before it; node ``i`` keeps the rest."""
        node = self.nodes[i]
        if after:
            moved = packed_node(_islice(items, start + offset + 1, start + node.count))
        else:
            moved = packed_node(_islice(items, start, start + offset))
        node.count -= moved.count
        node.sz -= moved.sz - LP_EMPTY_BYTES
        return moved

    def _merge(self, i: int) -> None:
        """Node ``i`` absorbs node ``i + 1`` (``lpMerge`` drops one header and terminator)."""
        nodes = self.nodes
        a, b = nodes[i], nodes[i + 1]
        a.count += b.count
        a.sz += b.sz - LP_EMPTY_BYTES
        del nodes[i + 1]

    def _merge_around(self, c: int) -> int:
        """``_quicklistMergeNodes`` around node ``c``; returns the centre's new position."""
        nodes = self.nodes
        if c >= 2 and self._allow_merge(nodes[c - 2], nodes[c - 1]):
            self._merge(c - 2)
            c -= 1
        if c + 2 < len(nodes) and self._allow_merge(nodes[c + 1], nodes[c + 2]):
            self._merge(c + 1)
        if c >= 1 and self._allow_merge(nodes[c - 1], nodes[c]):
            self._merge(c - 1)
            c -= 1
        if c + 1 < len(nodes) and self._allow_merge(nodes[c], nodes[c + 1]):
            self._merge(c)
        return c

    def insert(self, items: deque[bytes], index: int, value: bytes, after: bool) -> None:
        """``_quicklistInsert``: ``value`` goes after (or before) the element at ``index``.

        ``items`` is the list before the insertion.
        """
        nodes = self.nodes
        i, offset, start = self.locate(index, len(items))
        node = nodes[i]
        n = len(value)
        full = not self._allow_insert(node, n)
        at_tail = after and offset == node.count - 1
        at_head = not after and offset == 0
        avail_next = at_tail and i + 1 < len(nodes) and self._allow_insert(nodes[i + 1], n)
        avail_prev = at_head and i > 0 and self._allow_insert(nodes[i - 1], n)
        if self._large(n):
            plain = Node(1, n, True)
            if node.plain or at_tail or at_head:
                nodes.insert(i + 1 if after else i, plain)
            else:
                rest = self._split(items, i, start, offset, after)
                if after:
                    nodes.insert(i + 1, plain)
                    nodes.insert(i + 2, rest)
                else:
                    nodes.insert(i, plain)
                    nodes.insert(i, rest)
            return
        es = lp_str_size(value)
        if not full:
            node.count += 1
            node.sz += es
        elif avail_next:
            nodes[i + 1].count += 1
            nodes[i + 1].sz += es
        elif avail_prev:
            nodes[i - 1].count += 1
            nodes[i - 1].sz += es
        elif at_tail or at_head:
            nodes.insert(i + 1 if after else i, Node(1, LP_EMPTY_BYTES + es))
        else:  # full, and in the middle of the node: split it there
            rest = self._split(items, i, start, offset, after)
            rest.count += 1
            rest.sz += es
            if after:
                nodes.insert(i + 1, rest)
            else:
                nodes.insert(i, rest)
                i += 1
            self._merge_around(i)

    def replace(self, items: deque[bytes], index: int, value: bytes) -> None:
        """``quicklistReplaceEntry``: the element at ``index`` becomes ``value``.

        ``items`` is the list before the replacement.
        """
        nodes = self.nodes
        i, offset, start = self.locate(index, len(items))
        node = nodes[i]
        n = len(value)
        large = self._large(n)
        if not node.plain and not large:  # in place, whatever the node's size becomes
            node.sz += lp_str_size(value) - lp_str_size(items[index])
        elif node.plain:
            if large:
                node.sz = n
            else:  # a packed element after the plain node, then the plain node goes
                self.insert(items, index, value, after=True)
                del nodes[i]
        else:  # a large value in a packed node: it gets a plain node of its own
            rest = None
            if offset != node.count - 1:
                rest = self._split(items, i, start, offset, after=True)
            nodes.insert(i + 1, Node(1, n, True))
            if rest is not None:
                nodes.insert(i + 2, rest)
            if node.count == 1:
                del nodes[i]
            else:
                node.count -= 1
                node.sz -= lp_str_size(items[index])
                self._merge_around(i + 1)
