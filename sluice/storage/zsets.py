"""The sorted set value type (Redis's ``t_zset.c``): listpack or skiplist.

A sorted set is a map member -> score plus the members ordered by (score, member bytes):
ties are broken by memcmp order, which is Python's ``bytes`` order. Each member has one entry,
the tuple ``(score, member)``, shared by both views:

* ``d``: member -> entry (``None`` for a removed member of a skiplist set, see
  ``hashslots.py``), so ZSCORE and membership are O(1) in both encodings;
* ``zsl``: the entries in order. For the ``listpack`` encoding a plain sorted ``list``
  (insertion and removal O(N), as Redis's listpack); for ``skiplist`` a
  ``sortedcontainers.SortedList`` (a B-tree-like list of lists): insertion, removal,
  rank and seeking by score are O(log N), a range of M entries O(log N + M), as Redis's
  skiplist. The skiplist encoding keeps its members in a ``HashSlots`` too (``ht``, whose
  dict is ``d``): fair random members and ZSCAN cursors.

Encodings and conversions (``OBJECT ENCODING``), as Redis 8.6: a new set is a listpack if
the number of members about to be added is at most ``zset-max-listpack-entries`` and the
first member at most ``zset-max-listpack-value`` bytes (``zsetTypeCreate``); a listpack
becomes a skiplist before an insertion that would pass either limit; a skiplist never
becomes a listpack again, except the results of the STORE commands and loaded sets
(``convert_to_listpack_if_needed``). A listpack stores an integral score as an integer, so
``-0`` becomes ``0`` there (a skiplist keeps ``-0``).

Ranges by score and by rank use bisection. Ranges by member (BYLEX) assume, as Redis
documents, that the members have equal scores; for a listpack they are found by walking
from the ends as Redis does (so even mixed scores give Redis's answer), for a skiplist by
bisection (Redis's own answer then depends on its skiplist's random levels).

Nothing here builds replies; commands get entries and counts. Invariant kept by the callers:
a sorted-set key never holds an empty set.
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

from sortedcontainers import SortedList

from .hashslots import HashSlots
from .keyspace import register_type
from .scores import LexRange, ScoreRange

LISTPACK, SKIPLIST = 0, 1
LISTPACK_MAX_SAFETY_SIZE = 1 << 30

# zsetAdd's input flags and output flags
IN_INCR, IN_NX, IN_XX, IN_GT, IN_LT = 1, 2, 4, 8, 16
OUT_NAN, OUT_ADDED, OUT_UPDATED, OUT_NOP = 1, 2, 4, 8

ZRANDMEMBER_SUB_STRATEGY_MUL = 3

Entry = tuple[float, bytes]


class ZsetLimits(Protocol):
    """The settings that decide a sorted set's encoding (the server's config has them)."""

    zset_max_listpack_entries: int
    zset_max_listpack_value: int


class _Defaults:
    __slots__ = ()
    zset_max_listpack_entries = 128
    zset_max_listpack_value = 64


DEFAULT_LIMITS: ZsetLimits = _Defaults()


def _lp_score(score: float) -> float:
    """A score as a listpack keeps it: integral scores are stored as integers (-0 -> 0)."""
    return 0.0 if score == 0.0 else score


class ZSetValue:
    """A Redis sorted set (see the module docstring)."""

    __slots__ = ("enc", "zsl", "d", "ht")

    def __init__(self, enc: int = LISTPACK) -> None:
        self.enc = enc
        if enc == LISTPACK:
            self.zsl: Any = []  # list[Entry], sorted
            self.d: dict[bytes, Entry | None] = {}
            self.ht: HashSlots | None = None
        else:
            self.zsl = SortedList()
            self.ht = HashSlots()
            self.d = self.ht.d

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def create(cls, size_hint: int, val_len_hint: int, limits: ZsetLimits) -> ZSetValue:
        """``zsetTypeCreate``."""
        if (size_hint <= limits.zset_max_listpack_entries
                and val_len_hint <= limits.zset_max_listpack_value):
            return cls(LISTPACK)
        return cls(SKIPLIST)

    @classmethod
    def from_entries(cls, entries: Iterable[Entry], enc: int) -> ZSetValue:
        """A set of the given encoding holding ``entries`` (member, score pairs as
        ``(score, member)``; members distinct: ValueError otherwise)."""
        z = cls(enc)
        for score, member in entries:
            if z.d.get(member) is not None:
                raise ValueError("Duplicate zset fields detected")
            z._insert(score, member)
        return z

    @classmethod
    def from_scores(cls, scores: dict[bytes, float], limits: ZsetLimits) -> ZSetValue:
        """The result of a set operation (member -> score): built as a skiplist in one sort,
        then a listpack if it is small enough, as Redis's STORE commands leave it."""
        z = cls(SKIPLIST)
        entries = [(s, m) for m, s in scores.items()]
        z.zsl = SortedList(entries)
        z.ht = HashSlots((e[1], e) for e in entries)
        z.d = z.ht.d
        z.convert_to_listpack_if_needed(limits)
        return z

    def copy(self) -> ZSetValue:
        """An independent copy with the same encoding (``zsetDup``)."""
        dup = ZSetValue.__new__(ZSetValue)
        dup.enc = self.enc
        if self.enc == LISTPACK:
            dup.zsl = list(self.zsl)
            dup.d = dict(self.d)
            dup.ht = None
        else:
            dup.zsl = SortedList(self.zsl)
            dup.ht = self.ht.copy()  # type: ignore[union-attr]
            dup.d = dup.ht.d
        return dup

    # -- reading --------------------------------------------------------------------------

    def encoding(self) -> bytes:
        """What ``OBJECT ENCODING`` reports."""
        return b"listpack" if self.enc == LISTPACK else b"skiplist"

    def __len__(self) -> int:
        return len(self.zsl)

    def __iter__(self) -> Iterator[Entry]:
        """The entries, lowest score first."""
        return iter(self.zsl)

    def __repr__(self) -> str:
        return f"ZSetValue({list(self.zsl)!r}, encoding={self.encoding().decode()})"

    def score(self, member: bytes) -> float | None:
        """``zsetScore``: the member's score, None if it is not in the set."""
        entry = self.d.get(member)
        return None if entry is None else entry[0]

    def __contains__(self, member: object) -> bool:
        return self.d.get(member) is not None  # type: ignore[call-overload]

    def _index(self, entry: Entry) -> int:
        if self.enc == LISTPACK:
            return bisect.bisect_left(self.zsl, entry)
        return self.zsl.bisect_left(entry)  # type: ignore[no-any-return]

    def _bisect(self, key: tuple[Any, ...]) -> int:
        if self.enc == LISTPACK:
            return bisect.bisect_left(self.zsl, key)
        return self.zsl.bisect_left(key)  # type: ignore[no-any-return]

    def rank(self, member: bytes, reverse: bool = False) -> tuple[int, float] | None:
        """``zsetRank``: 0-based rank (from the highest score if ``reverse``) and score."""
        entry = self.d.get(member)
        if entry is None:
            return None
        i = self._index(entry)
        return (len(self.zsl) - 1 - i if reverse else i), entry[0]

    def entries(self, start: int, stop: int, reverse: bool = False) -> list[Entry]:
        """Entries ``start`` to ``stop`` (exclusive, ascending positions); highest first if
        ``reverse``."""
        if start >= stop:
            return []
        zsl = self.zsl
        if self.enc == LISTPACK:
            out: list[Entry] = zsl[start:stop]
            if reverse:
                out.reverse()
            return out
        return list(zsl.islice(start, stop, reverse=reverse))

    # -- bounds of ranges -----------------------------------------------------------------

    def rank_bounds(self, start: int, end: int, reverse: bool = False) -> tuple[int, int]:
        """Positions ``[i, j)`` of the ranks ``start..end`` (inclusive, negative from the end,
        Redis's clamping; from the highest score if ``reverse``); i >= j when empty."""
        n = len(self.zsl)
        if start < 0:
            start += n
        if end < 0:
            end += n
        if start < 0:
            start = 0
        if start > end or start >= n:
            return 0, 0
        if end >= n:
            end = n - 1
        if reverse:
            return n - 1 - end, n - start
        return start, end + 1

    def score_bounds(self, rng: ScoreRange) -> tuple[int, int]:
        """Positions ``[i, j)`` of the entries whose score is in ``rng`` ((0, 0): none)."""
        if rng.is_empty() or not self.zsl:
            return 0, 0
        lo, hi = rng.min, rng.max
        if rng.minex:
            i = len(self.zsl) if lo == math.inf else self._bisect((math.nextafter(lo, math.inf),))
        else:
            i = self._bisect((lo,))
        if rng.maxex:
            j = self._bisect((hi,))
        else:
            j = len(self.zsl) if hi == math.inf else self._bisect((math.nextafter(hi, math.inf),))
        return (i, j) if i < j else (0, 0)

    def lex_bounds(self, rng: LexRange) -> tuple[int, int]:
        """Positions ``[i, j)`` of the entries whose member is in ``rng`` (equal scores)."""
        zsl = self.zsl
        n = len(zsl)
        if not n or rng.is_empty():
            return 0, 0
        if self.enc == LISTPACK:
            # zzlFirstInLexRange, then forward while <= max (Redis's walk)
            if not rng.gte_min(zsl[-1][1]) or not rng.lte_max(zsl[0][1]):
                return 0, 0
            i = 0
            while i < n and not rng.gte_min(zsl[i][1]):
                i += 1
            j = i
            while j < n and rng.lte_max(zsl[j][1]):
                j += 1
            return (i, j) if i < j else (0, 0)
        score = zsl[0][0]
        lo, hi = rng.min, rng.max
        if isinstance(lo, bytes):
            i = zsl.bisect_right((score, lo)) if rng.minex else zsl.bisect_left((score, lo))
        else:
            i = 0 if lo.sign < 0 else n
        if isinstance(hi, bytes):
            j = zsl.bisect_left((score, hi)) if rng.maxex else zsl.bisect_right((score, hi))
        else:
            j = n if hi.sign > 0 else 0
        return (i, j) if i < j else (0, 0)

    def last_lex_bounds(self, rng: LexRange) -> tuple[int, int]:
        """As ``lex_bounds`` but found from the tail (``zzlLastInLexRange``, then backwards
        while >= min): the reverse commands' view, which differs only for mixed scores."""
        if self.enc != LISTPACK:
            return self.lex_bounds(rng)
        zsl = self.zsl
        n = len(zsl)
        if not n or rng.is_empty():
            return 0, 0
        if not rng.gte_min(zsl[-1][1]) or not rng.lte_max(zsl[0][1]):
            return 0, 0
        j = n
        while j > 0 and not rng.lte_max(zsl[j - 1][1]):
            j -= 1
        i = j
        while i > 0 and rng.gte_min(zsl[i - 1][1]):
            i -= 1
        return (i, j) if i < j else (0, 0)

    def limited(self, bounds: tuple[int, int], offset: int, limit: int,
                reverse: bool) -> list[Entry]:
        """The entries of ``bounds`` after skipping ``offset`` of them, at most ``limit``
        (negative: all), lowest first or (``reverse``) highest first (the LIMIT option)."""
        i, j = bounds
        if offset < 0 or (offset > 0 and offset >= len(self.zsl)):
            return []
        if reverse:
            j -= offset
        else:
            i += offset
        if limit >= 0 and j - i > limit:
            if reverse:
                i = j - limit
            else:
                j = i + limit
        return self.entries(i, j, reverse)

    # -- writing --------------------------------------------------------------------------

    def _insert(self, score: float, member: bytes) -> None:
        if self.enc == LISTPACK:
            entry = (_lp_score(score), member)
            bisect.insort(self.zsl, entry)
            self.d[member] = entry
        else:
            entry = (score, member)
            self.zsl.add(entry)
            self.ht.put(member, entry)  # type: ignore[union-attr]

    def _unlink(self, entry: Entry) -> None:
        zsl = self.zsl
        if self.enc == LISTPACK:
            del zsl[bisect.bisect_left(zsl, entry)]
            del self.d[entry[1]]
        else:
            zsl.remove(entry)
            self.ht.remove(entry[1])  # type: ignore[union-attr]

    def _to_skiplist(self) -> None:
        entries = self.zsl
        self.enc = SKIPLIST
        self.zsl = SortedList(entries)
        self.ht = HashSlots((e[1], e) for e in entries)
        self.d = self.ht.d

    def _to_listpack(self) -> None:
        entries = [(_lp_score(s), m) for s, m in self.zsl]
        self.enc = LISTPACK
        self.zsl = entries
        self.d = {e[1]: e for e in entries}
        self.ht = None

    def maybe_convert(self, size_hint: int, limits: ZsetLimits) -> None:
        """``zsetTypeMaybeConvert``: a listpack about to receive more members than it may
        hold becomes a skiplist first."""
        if self.enc == LISTPACK and size_hint > limits.zset_max_listpack_entries:
            self._to_skiplist()

    def convert_to_listpack_if_needed(self, limits: ZsetLimits) -> None:
        """``zsetConvertToListpackIfNeeded``: a skiplist small enough becomes a listpack."""
        if self.enc == LISTPACK or len(self.zsl) > limits.zset_max_listpack_entries:
            return
        lens = [len(m) for _, m in self.zsl]
        if max(lens, default=0) <= limits.zset_max_listpack_value and (
                sum(lens) <= LISTPACK_MAX_SAFETY_SIZE):
            self._to_listpack()

    def add(self, score: float, member: bytes, flags: int,
            limits: ZsetLimits) -> tuple[int, float]:
        """``zsetAdd``: add or update ``member``; returns (out flags, the new score).

        ``IN_INCR`` adds ``score`` to the current one (0 for a new member); ``IN_NX`` only
        adds, ``IN_XX`` only updates; ``IN_GT``/``IN_LT`` update only to a greater / smaller
        score. ``OUT_NAN``: the result would be NaN and nothing changed."""
        if score != score:
            return OUT_NAN, score
        entry = self.d.get(member)
        if entry is not None:
            if flags & IN_NX:
                return OUT_NOP, score
            cur = entry[0]
            if flags & IN_INCR:
                score += cur
                if score != score:
                    return OUT_NAN, score
            if (flags & IN_LT and score >= cur) or (flags & IN_GT and score <= cur):
                return OUT_NOP, score
            if score != cur:
                self._unlink(entry)
                self._insert(score, member)
                return OUT_UPDATED, score
            return 0, score
        if flags & IN_XX:
            return OUT_NOP, score
        if self.enc == LISTPACK and (len(self.zsl) + 1 > limits.zset_max_listpack_entries
                                     or len(member) > limits.zset_max_listpack_value):
            self._to_skiplist()
        self._insert(score, member)
        return OUT_ADDED, score

    def delete(self, member: bytes) -> bool:
        """``zsetDel``: True if ``member`` was there."""
        entry = self.d.get(member)
        if entry is None:
            return False
        self._unlink(entry)
        return True

    def remove_positions(self, i: int, j: int) -> int:
        """Remove the entries at positions ``[i, j)``; returns how many."""
        if i >= j:
            return 0
        zsl = self.zsl
        if self.enc == LISTPACK:
            d = self.d
            for _, m in zsl[i:j]:
                del d[m]
            del zsl[i:j]
        else:
            ht = self.ht
            assert ht is not None
            for _, m in zsl.islice(i, j):
                ht.remove(m)
            del zsl[i:j]
        return j - i

    def pop(self, count: int, highest: bool) -> list[Entry]:
        """Remove and return up to ``count`` entries from the low (or high) end, in the
        order they are popped."""
        n = min(count, len(self.zsl))
        if highest:
            out = self.entries(len(self.zsl) - n, len(self.zsl), reverse=True)
            self.remove_positions(len(self.zsl) - n, len(self.zsl))
        else:
            out = self.entries(0, n)
            self.remove_positions(0, n)
        return out

    # -- random members -------------------------------------------------------------------

    def random_entry(self) -> Entry:
        """``zsetTypeRandomElement`` (the set must not be empty)."""
        if self.enc == LISTPACK:
            return random.choice(self.zsl)  # type: ignore[no-any-return]
        ht = self.ht
        assert ht is not None
        entry: Entry = ht.d[ht.random_member()]
        return entry

    def random_entries(self, count: int, unique: bool) -> list[Entry]:
        """ZRANDMEMBER with a count (> 0), in the order Redis's case gives: drawn with
        replacement, or ``min(count, size)`` distinct entries (the whole set highest first, a
        listpack's selection in order, else random order)."""
        size = len(self.zsl)
        if not unique or count == 1:
            if self.enc == LISTPACK:
                return random.choices(self.zsl, k=count)
            pick = self.random_entry
            return [pick() for _ in range(count)]
        if count >= size:  # the whole set, highest first (Redis's zuiNext goes backwards)
            return list(reversed(self.zsl))
        if self.enc == LISTPACK:
            zsl = self.zsl
            return [zsl[i] for i in sorted(random.sample(range(size), count))]
        if count * ZRANDMEMBER_SUB_STRATEGY_MUL > size:
            return random.sample(list(self.zsl), count)
        out: dict[bytes, Entry] = {}
        pick = self.random_entry
        while len(out) < count:
            e = pick()
            out.setdefault(e[1], e)
        return list(out.values())

    # -- ZSCAN ----------------------------------------------------------------------------

    def scan(self, cursor: int, count: int,
             want: Callable[[bytes], bool] | None) -> tuple[int, list[Entry]]:
        """ZSCAN: a skiplist is walked from ``cursor``; a listpack is returned whole, in
        order, with cursor 0 (as Redis does)."""
        if self.enc == LISTPACK:
            zsl = self.zsl
            return 0, list(zsl) if want is None else [e for e in zsl if want(e[1])]
        ht = self.ht
        assert ht is not None
        nxt, members = ht.scan(cursor, count, want)
        d = ht.d
        return nxt, [d[m] for m in members]


def load_zset(entries: Iterable[Entry], limits: ZsetLimits) -> ZSetValue:
    """A sorted set saved as members with scores (``RDB_TYPE_ZSET(_2)``), as Redis loads it:
    a skiplist, made a listpack afterwards if it is small enough. ValueError on a duplicate
    member or a NaN score."""
    z = ZSetValue(SKIPLIST)
    for score, member in entries:
        if score != score:
            raise ValueError("Zset with NAN score detected")
        if z.d.get(member) is not None:
            raise ValueError("Duplicate zset fields detected")
        z._insert(score, member)
    z.convert_to_listpack_if_needed(limits)
    return z


def load_listpack_zset(entries: list[Entry], limits: ZsetLimits) -> ZSetValue:
    """A sorted set saved as a listpack (``RDB_TYPE_ZSET_LISTPACK`` / ``_ZIPLIST``): kept a
    listpack unless it has more members than ``zset-max-listpack-entries``."""
    z = ZSetValue.from_entries(entries, LISTPACK)
    if len(z) > limits.zset_max_listpack_entries:
        z._to_skiplist()
    return z


register_type(ZSetValue, b"zset")
