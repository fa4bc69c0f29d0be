"""Sorted keys with O(log N) rank, and a cache of each key's rendered form beside it.

Role: the ordered half of a sorted set (``ZSetValue.zsl``, in both encodings). It plays the
part of Redis's ``zskiplist`` (insert, delete, rank, the node at a rank, a range from a
rank) with the layout of a B-tree's leaves, as ``sortedcontainers.SortedList`` does:

* ``lists``: the keys in order, cut into sublists (``bytes`` keys, distinct, compared by
  ``memcmp`` order). A sublist that grows past ``2 * LOAD`` keys is split in two halves; one
  that shrinks below ``LOAD // 4`` is merged into a neighbour; an empty one is dropped.
* ``maxes``: the last key of each sublist, to find a key's sublist by bisection.
* ``tree``: a Fenwick tree of the sublists' lengths (built when first needed, updated in
  place while no sublist is added or dropped): a sublist's offset, or the sublist holding
  a position, in O(log S). Positions in the first or the last sublist (the ends of a
  sorted set, where ZRANGE 0 9 and ZREVRANGE 0 9 look) are found without it.
* ``pieces``: parallel to ``lists``: None for a sublist no range has been rendered from,
  else a list parallel to it, item for item: what ``render(key)`` made of the key the first
  time a range holding it was rendered (``rendered``, ``joined``), else None. A reply made
  of members is then one ``bytes.join`` of cached pieces instead of a slice, a header and a
  copy per member in Python. What a piece holds is the caller's business (the commands
  layer renders a member as its RESP bulk string); this module only keeps it. Writes to a
  sublist never read pay nothing for it (no second list to keep in step); a piece costs
  about its key's size again, once made.

Insertion and removal are O(log S + LOAD) (a list insert in one sublist; C's ``memmove``),
rank and the key at a rank O(log S), a range of M keys O(log S + M). With ``LOAD = 1000``,
S stays near N / 1000.

Invariants: ``len(lists) == len(pieces) == len(maxes)``; every sublist is non-empty and as
long as its ``pieces`` sublist unless that is None; ``maxes[i] == lists[i][-1]``; the concatenation of
``lists`` is strictly increasing; ``n`` is the total length; ``tree`` is None or the
Fenwick tree of the current lengths; ``form`` is the ``render`` every non-None piece was
made by, ``made`` the number of those pieces.

Imports nothing of Sluice's.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator
from itertools import chain

__all__ = ["RankedList", "Render"]

Render = Callable[[bytes], bytes]
Pieces = list[bytes | None]

class RankedList:
    """Distinct ``bytes`` keys in order, by rank (see the module docstring)."""

    __slots__ = ("lists", "pieces", "maxes", "tree", "n", "form", "made")

    LOAD = 1000  # a class attribute: tests use a small one to exercise splits and merges

    def __init__(self, keys: Iterable[bytes] = (), presorted: bool = False) -> None:
        ordered = list(keys) if presorted else sorted(keys)
        load = self.LOAD
        self.lists: list[list[bytes]] = [ordered[i:i + load]
                                         for i in range(0, len(ordered), load)]
        self.pieces: list[Pieces | None] = [None] * len(self.lists)
        self.maxes: list[bytes] = [s[-1] for s in self.lists]
        self.tree: list[int] | None = None
        self.n = len(ordered)
        self.form: Render | None = None
        self.made = 0  # pieces that are not None (memory accounting)

    def copy(self) -> RankedList:
        """An independent copy (keys and pieces are immutable: shared)."""
        dup = self.__class__.__new__(self.__class__)
        dup.lists = [s[:] for s in self.lists]
        dup.pieces = [None if p is None else p[:] for p in self.pieces]
        dup.maxes = self.maxes[:]
        dup.tree = None
        dup.n = self.n
        dup.form = self.form
        dup.made = self.made
        return dup

    # -- the index ------------------------------------------------------------------------

    def _build(self) -> list[int]:
        tree = [0]
        tree += map(len, self.lists)
        size = len(tree)
        for i in range(1, size):
            j = i + (i & -i)
            if j < size:
                tree[j] += tree[i]
        self.tree = tree
        return tree

    def _offset(self, pos: int) -> int:
        """How many keys the sublists before ``pos`` hold."""
        tree = self.tree
        if tree is None:
            tree = self._build()
        total = 0
        while pos:
            total += tree[pos]
            pos &= pos - 1
        return total

    def _grown(self, pos: int, delta: int) -> None:
        """Sublist ``pos`` changed length by ``delta`` (no sublist added or dropped)."""
        tree = self.tree
        if tree is None:
            return
        size = len(tree)
        pos += 1
        while pos < size:
            tree[pos] += delta
            pos += pos & -pos

    def _locate(self, i: int) -> tuple[int, int]:
        """(sublist, offset in it) of position ``i``, ``0 <= i < n``."""
        lists = self.lists
        first = len(lists[0])
        if i < first:
            return 0, i
        base = self.n - len(lists[-1])
        if i >= base:
            return len(lists) - 1, i - base
        tree = self.tree
        if tree is None:
            tree = self._build()
        size = len(tree)
        pos = 0
        step = 1 << (size - 1).bit_length() - 1
        while step:
            nxt = pos + step
            if nxt < size and tree[nxt] <= i:
                i -= tree[nxt]
                pos = nxt
            step >>= 1
        return pos, i

    # -- reading --------------------------------------------------------------------------

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[bytes]:
        return chain.from_iterable(self.lists)

    def __getitem__(self, i: int) -> bytes:
        """The key at position ``i`` (negative: from the end)."""
        if i < 0:
            i += self.n
        if not 0 <= i < self.n:
            raise IndexError("RankedList index out of range")
        pos, idx = self._locate(i)
        return self.lists[pos][idx]

    def bisect_left(self, k: bytes) -> int:
        """The position of the first key >= ``k`` (a present key's rank)."""
        maxes = self.maxes
        pos = bisect_left(maxes, k)
        if pos == len(maxes):
            return self.n
        return self._offset(pos) + bisect_left(self.lists[pos], k)

    def bisect_right(self, k: bytes) -> int:
        """The position after the last key <= ``k``."""
        maxes = self.maxes
        pos = bisect_right(maxes, k)
        if pos == len(maxes):
            return self.n
        return self._offset(pos) + bisect_right(self.lists[pos], k)

    def keys(self, i: int, j: int) -> list[bytes]:
        """The keys at positions ``[i, j)``, ``0 <= i < j <= n``: O(log S + M)."""
        first = self.lists[0]
        if j <= len(first):
            return first[i:j]
        return _span(self.lists, *self._locate(i), j - i)

    def _reform(self, render: Render) -> None:
        """Pieces of another ``render`` are dropped."""
        self.pieces = [None] * len(self.lists)
        self.form = render
        self.made = 0

    def rendered(self, i: int, j: int, render: Render) -> list[bytes]:
        """``[render(k) for k in keys(i, j)]``, ``0 <= i < j <= n``, each piece made once and
        kept: O(log S + M) in C once the pieces exist. Every caller must pass the same
        ``render``: another one drops the pieces made so far."""
        if render is not self.form:
            self._reform(render)
        return self._render(*self._locate(i), j - i, render)

    def joined(self, i: int, j: int, reverse: bool, render: Render,
               head: Callable[[int], bytes]) -> bytes:
        """``head(count)`` followed by the ``count`` pieces of ``rendered(i, j, render)``
        (last first if ``reverse``), as one ``bytes``, ``0 <= i <= j <= n``. The common
        case, a range of the first sublist whose pieces all exist, is a slice and a join:
        a missing piece (None) makes the join fail, and only then are pieces made."""
        if render is not self.form:
            self._reform(render)
        if i >= j:
            return head(0)
        first = self.pieces[0]
        if first is not None and j <= len(first):
            out = first[i:j]
            if reverse:
                out.reverse()
            out.insert(0, head(j - i))
            try:
                return b"".join(out)  # type: ignore[arg-type]
            except TypeError:  # a piece not made yet
                pass
        made = self._render(*self._locate(i), j - i, render)
        if reverse:
            made.reverse()
        made.insert(0, head(j - i))
        return b"".join(made)

    def _render(self, pos: int, idx: int, count: int, render: Render) -> list[bytes]:
        """The pieces of ``count`` positions from (``pos``, ``idx``) on, the missing ones
        made: sublist by sublist, a slice when all of its part is there."""
        out: list[bytes] = []
        lists, pieces = self.lists, self.pieces
        while count:
            keys, made = lists[pos], pieces[pos]
            if made is None:
                made = pieces[pos] = [None] * len(keys)
            stop = min(len(keys), idx + count)
            part = made[idx:stop]
            if None in part:
                for x in range(idx, stop):
                    if made[x] is None:
                        made[x] = render(keys[x])
                        self.made += 1
                part = made[idx:stop]
            out += part  # type: ignore[arg-type]
            count -= stop - idx
            pos += 1
            idx = 0
        return out

    # -- writing --------------------------------------------------------------------------

    def add(self, k: bytes) -> None:
        """Insert ``k`` (not present)."""
        maxes = self.maxes
        if not maxes:
            self.lists.append([k])
            self.pieces.append(None)
            maxes.append(k)
            self.n = 1
            self.tree = None
            return
        pos = bisect_left(maxes, k)
        if pos == len(maxes):
            pos -= 1
            keys = self.lists[pos]
            keys.append(k)
            made = self.pieces[pos]
            if made is not None:
                made.append(None)
            maxes[pos] = k
        else:
            keys = self.lists[pos]
            idx = bisect_left(keys, k)
            keys.insert(idx, k)
            made = self.pieces[pos]
            if made is not None:
                made.insert(idx, None)
        self.n += 1
        if len(keys) > 2 * self.LOAD:
            self._split(pos)
        elif self.tree is not None:  # _grown, inlined (the write path of every ZADD)
            tree = self.tree
            size = len(tree)
            pos += 1
            while pos < size:
                tree[pos] += 1
                pos += pos & -pos

    def remove(self, k: bytes) -> None:
        """Remove ``k`` (present: ValueError otherwise)."""
        maxes = self.maxes
        pos = bisect_left(maxes, k)
        keys = self.lists[pos] if pos < len(maxes) else []
        idx = bisect_left(keys, k)
        if idx == len(keys) or keys[idx] != k:
            raise ValueError("key not in RankedList")
        del keys[idx]
        made = self.pieces[pos]
        if made is not None:
            if made[idx] is not None:
                self.made -= 1
            del made[idx]
        self.n -= 1
        if len(keys) >= self.LOAD >> 2 and idx < len(keys):  # _shrunk's common case, inlined
            tree = self.tree
            if tree is not None:
                size = len(tree)
                pos += 1
                while pos < size:
                    tree[pos] -= 1
                    pos += pos & -pos
        else:
            self._shrunk(pos, 1)

    def delete(self, i: int, j: int) -> None:
        """Remove the keys at positions ``[i, j)``, ``0 <= i <= j <= n``: O(log S + M)."""
        count = j - i
        if count <= 0:
            return
        lists, pieces, maxes = self.lists, self.pieces, self.maxes
        if count == self.n:
            lists.clear()
            pieces.clear()
            maxes.clear()
            self.n = 0
            self.tree = None
            self.made = 0
            return
        while count:  # the keys left to delete always start at position i
            pos, idx = self._locate(i)
            keys = lists[pos]
            if idx == 0 and count >= len(keys):  # whole sublists: dropped in one go
                stop = pos
                while stop < len(lists) and count >= len(lists[stop]):
                    count -= len(lists[stop])
                    self.n -= len(lists[stop])
                    made = pieces[stop]
                    if made is not None:
                        self.made -= len(made) - made.count(None)
                    stop += 1
                del lists[pos:stop], pieces[pos:stop], maxes[pos:stop]
                self.tree = None
                continue
            take = min(len(keys) - idx, count)
            del keys[idx:idx + take]
            made = pieces[pos]
            if made is not None:
                self.made -= take - made[idx:idx + take].count(None)
                del made[idx:idx + take]
            count -= take
            self.n -= take
            self._shrunk(pos, take)

    def _split(self, pos: int) -> None:
        load = self.LOAD
        keys, made = self.lists[pos], self.pieces[pos]
        self.lists.insert(pos + 1, keys[load:])
        del keys[load:]
        if made is None:
            self.pieces.insert(pos + 1, None)
        else:
            self.pieces.insert(pos + 1, made[load:])
            del made[load:]
        self.maxes[pos] = keys[-1]
        self.maxes.insert(pos + 1, self.lists[pos + 1][-1])
        self.tree = None

    def _shrunk(self, pos: int, removed: int) -> None:
        """Sublist ``pos`` lost ``removed`` keys: drop it if empty, merge it if small."""
        lists, maxes = self.lists, self.maxes
        keys = lists[pos]
        if not keys:
            del lists[pos], self.pieces[pos], maxes[pos]
            self.tree = None
            return
        maxes[pos] = keys[-1]
        if len(keys) >= self.LOAD // 4 or len(lists) == 1:
            self._grown(pos, -removed)
            return
        a = pos - 1 if pos + 1 == len(lists) else pos  # merge sublists a and a + 1
        pieces = self.pieces
        low, high = pieces[a], pieces[a + 1]
        if low is not None or high is not None:
            none: Pieces = [None]
            pieces[a] = ((none * len(lists[a]) if low is None else low)
                         + (none * len(lists[a + 1]) if high is None else high))
        lists[a] += lists[a + 1]
        del lists[a + 1], self.pieces[a + 1], maxes[a + 1]
        maxes[a] = lists[a][-1]
        self.tree = None
        if len(lists[a]) > 2 * self.LOAD:
            self._split(a)


def _span(lists: list[list[bytes]], pos: int, idx: int, count: int) -> list[bytes]:
    """``count`` items from (``pos``, ``idx``) on, across sublists."""
    first = lists[pos]
    end = idx + count
    if end <= len(first):
        return first[idx:end]
    out = first[idx:]
    count -= len(out)
    while count > 0:
        pos += 1
        part = lists[pos][:count]
        out += part
        count -= len(part)
    return out
