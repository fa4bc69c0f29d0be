"""The sorted set value type (Redis's ``t_zset.c``): listpack or skiplist.

A sorted set is a map member -> score plus the members ordered by (score, member bytes):
ties are broken by memcmp order. Each member has one *key*, a ``bytes`` object: its score
in 8 order-preserving bytes (the IEEE 754 bits, sign flipped, negatives complemented, both
zeros as +0) followed by the member. Keys compare as the pairs do, with one ``memcmp``, and
a member costs one small object instead of a tuple and a float (``zset_keys.py``: ``key``,
``unkey``, ``decode_scores``). Both views share the key:

* ``d``: member -> key (``None`` for a removed member of a skiplist set, see
  ``hashslots.py``), so ZSCORE and membership are O(1) in both encodings;
* ``zsl``: the keys in order, a ``RankedList`` (``rankedlist.py``: sorted sublists with a
  positional index, as ``sortedcontainers.SortedList``) in both encodings: insertion,
  removal, rank and seeking by score are O(log N), a range of M entries O(log N + M), as
  Redis's skiplist (a listpack, at most ``zset-max-listpack-entries`` keys, is one sublist).
  Beside each key it keeps the member's rendered reply piece once a range holding it has
  been read (``rendered``): ZRANGE's reply is then a join of ready pieces. The skiplist
  encoding keeps its members in a ``HashSlots`` too (``ht``, whose dict is ``d``): fair
  random members and ZSCAN cursors.

The keys order ``-0`` as ``0`` (Redis compares scores with ``<``), so they cannot carry the
sign of a zero: a skiplist remembers its members scored ``-0`` in ``negzero`` (a listpack
stores an integral score as an integer, so ``-0`` becomes ``0`` there, as in Redis).

Encodings and conversions (``OBJECT ENCODING``), as Redis 8.6: a new set is a listpack if
the number of members about to be added is at most ``zset-max-listpack-entries`` and the
first member at most ``zset-max-listpack-value`` bytes (``zsetTypeCreate``); a listpack
becomes a skiplist before an insertion that would pass either limit; a skiplist never
becomes a listpack again, except the results of the STORE commands and loaded sets
(``convert_to_listpack_if_needed``).

Ranges by score and by rank use bisection. Ranges by member (BYLEX) assume, as Redis
documents, that the members have equal scores; for a listpack they are found by walking
from the ends as Redis does (so even mixed scores give Redis's answer), for a skiplist by
bisection (Redis's own answer then depends on its skiplist's random levels).

Nothing here builds replies; commands get entries, ``(score, member)`` tuples made as they
are asked for, and counts. Invariant kept by the callers: a sorted-set key never holds an
empty set.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol

from .hashslots import HashSlots
from .keyspace import register_type
from .rankedlist import RankedList, Render
from .scores import LexRange, ScoreRange
from .zset_keys import (
    Entry,
    decode_scores,
    key,
    key_member,
    key_score,
    member_render,
    score_prefix,
    unkey,
)

__all__ = [
    "DEFAULT_LIMITS", "LISTPACK", "SKIPLIST", "Entry", "ZSetValue", "ZsetLimits",
    "decode_scores", "key", "key_score", "load_listpack_zset", "load_zset", "member_render",
    "score_prefix", "unkey",
]

LISTPACK, SKIPLIST = 0, 1
LISTPACK_MAX_SAFETY_SIZE = 1 << 30

# zsetAdd's input flags and output flags
IN_INCR, IN_NX, IN_XX, IN_GT, IN_LT = 1, 2, 4, 8, 16
OUT_NAN, OUT_ADDED, OUT_UPDATED, OUT_NOP = 1, 2, 4, 8

ZRANDMEMBER_SUB_STRATEGY_MUL = 3

class ZsetLimits(Protocol):
    """The settings that decide a sorted set's encoding (the server's config has them)."""

    @property
    def zset_max_listpack_entries(self) -> int: ...
    @property
    def zset_max_listpack_value(self) -> int: ...


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

    __slots__ = ("enc", "zsl", "d", "ht", "negzero")

    def __init__(self, enc: int = LISTPACK) -> None:
        self.enc = enc
        self.negzero: set[bytes] | None = None  # skiplist members scored -0
        self.zsl = RankedList()  # the keys, sorted
        if enc == LISTPACK:
            self.d: dict[bytes, bytes | None] = {}  # member -> key
            self.ht: HashSlots | None = None
        else:
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
        """A set of the given encoding holding ``entries`` (``(score, member)``, members
        distinct: ValueError otherwise)."""
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
        keys = [key(s, m) for m, s in scores.items()]
        z.zsl = RankedList(keys)
        z.ht = HashSlots((k[8:], k) for k in keys)
        z.d = z.ht.d
        neg = {m for m, s in scores.items() if s == 0.0 and math.copysign(1.0, s) < 0}
        z.negzero = neg or None
        z.convert_to_listpack_if_needed(limits)
        return z

    def copy(self) -> ZSetValue:
        """An independent copy with the same encoding (``zsetDup``)."""
        dup = ZSetValue.__new__(ZSetValue)
        dup.enc = self.enc
        dup.negzero = None if self.negzero is None else set(self.negzero)
        dup.zsl = self.zsl.copy()
        if self.enc == LISTPACK:
            dup.d = dict(self.d)
            dup.ht = None
        else:
            dup.ht = self.ht.copy()  # type: ignore[union-attr]
            dup.d = dup.ht.d
        return dup

    # -- reading --------------------------------------------------------------------------

    def encoding(self) -> bytes:
        """What ``OBJECT ENCODING`` reports."""
        return b"listpack" if self.enc == LISTPACK else b"skiplist"

    def __len__(self) -> int:
        return self.zsl.n

    def _entry(self, k: bytes) -> Entry:
        """``(score, member)`` of a key, ``-0`` restored for a skiplist's members."""
        score = key_score(k)
        if score == 0.0 and self.negzero and k[8:] in self.negzero:
            return -0.0, k[8:]
        return score, k[8:]

    def __iter__(self) -> Iterator[Entry]:
        """The entries, lowest score first."""
        if self.negzero:
            return map(self._entry, self.zsl)
        return map(unkey, self.zsl)

    def __repr__(self) -> str:
        return f"ZSetValue({list(self)!r}, encoding={self.encoding().decode()})"

    def score(self, member: bytes) -> float | None:
        """``zsetScore``: the member's score, None if it is not in the set."""
        k = self.d.get(member)
        if k is None:
            return None
        score = key_score(k)
        if score == 0.0 and self.negzero and member in self.negzero:
            return -0.0
        return score

    def __contains__(self, member: object) -> bool:
        return self.d.get(member) is not None  # type: ignore[call-overload]

    def _bisect(self, probe: bytes) -> int:
        return self.zsl.bisect_left(probe)

    def _bisect_right(self, probe: bytes) -> int:
        return self.zsl.bisect_right(probe)

    def rank(self, member: bytes, reverse: bool = False) -> tuple[int, float] | None:
        """``zsetRank``: 0-based rank (from the highest score if ``reverse``) and score."""
        k = self.d.get(member)
        if k is None:
            return None
        i = self._bisect(k)
        return (len(self.zsl) - 1 - i if reverse else i), self.score(member)  # type: ignore[return-value]

    def keys_at(self, start: int, stop: int, reverse: bool = False) -> list[bytes]:
        """The keys at positions ``start`` to ``stop`` (exclusive); highest first if
        ``reverse``."""
        if start >= stop:
            return []
        keys = self.zsl.keys(start, stop)
        if reverse:
            keys.reverse()
        return keys

    def entries(self, start: int, stop: int, reverse: bool = False) -> list[Entry]:
        """``(score, member)`` at positions ``start`` to ``stop`` (exclusive, ascending
        positions); highest first if ``reverse``. Scores are decoded in one batch."""
        members, scores = self.columns(start, stop, reverse)
        return list(zip(scores, members, strict=True))

    def columns(self, start: int, stop: int, reverse: bool = False
                ) -> tuple[list[bytes], list[float]]:
        """As ``entries``, as two lists, the members and their scores: what a reply with
        scores is built from, without a tuple per entry."""
        keys = self.keys_at(start, stop, reverse)
        if not keys:
            return [], []
        scores = list(decode_scores(keys))
        members = list(map(key_member, keys))
        if self.negzero:
            neg = self.negzero
            scores = [-0.0 if s == 0.0 and m in neg else s
                      for s, m in zip(scores, members, strict=True)]
        return members, scores

    def members(self, start: int, stop: int, reverse: bool = False) -> list[bytes]:
        """The members at positions ``start`` to ``stop`` (no scores decoded)."""
        return list(map(key_member, self.keys_at(start, stop, reverse)))

    def joined(self, start: int, stop: int, reverse: bool, render: Render,
               head: Callable[[int], bytes]) -> bytes:
        """``head(count) + b"".join(rendered(start, stop, reverse, render))``, made in one
        join (``RankedList.joined``): a reply of members from their kept pieces."""
        return self.zsl.joined(start, stop, reverse, render, head)

    def rank_joined(self, start: int, end: int, render: Render,
                    head: Callable[[int], bytes]) -> bytes:
        """``joined(*rank_bounds(start, end), False, render, head)`` in one call (ZRANGE
        key start stop, the common read of a leaderboard)."""
        n = self.zsl.n
        if start < 0:
            start += n
            if start < 0:
                start = 0
        if end < 0:
            end += n
        if start > end or start >= n:
            return head(0)
        return self.zsl.joined(start, end + 1 if end < n else n, False, render, head)

    def scores(self, start: int, stop: int, reverse: bool = False) -> list[float]:
        """The scores at positions ``start`` to ``stop``, as ``columns`` gives them."""
        if self.negzero:
            return self.columns(start, stop, reverse)[1]
        keys = self.keys_at(start, stop, reverse)
        return list(decode_scores(keys)) if keys else []

    def rendered(self, start: int, stop: int, reverse: bool, render: Render) -> list[bytes]:
        """``[render(m) for m in members(start, stop, reverse)]`` for a ``render`` made by
        ``member_render``: each member's piece is made once and kept beside its key
        (``RankedList.rendered``), so a reply of members is one join of ready pieces.
        Every caller passes the same ``render``."""
        if start >= stop:
            return []
        pieces = self.zsl.rendered(start, stop, render)
        if reverse:
            pieces.reverse()
        return pieces

    # -- bounds of ranges -----------------------------------------------------------------

    def rank_bounds(self, start: int, end: int, reverse: bool = False) -> tuple[int, int]:
        """Positions ``[i, j)`` of the ranks ``start..end`` (inclusive, negative from the end,
        Redis's clamping; from the highest score if ``reverse``); (0, 0) when empty."""
        n = self.zsl.n
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
        n = len(self.zsl)
        if rng.is_empty() or not n:
            return 0, 0
        lo, hi = rng.min, rng.max
        if rng.minex:
            i = n if lo == math.inf else self._bisect(score_prefix(math.nextafter(lo, math.inf)))
        else:
            i = self._bisect(score_prefix(lo))
        if rng.maxex:
            j = self._bisect(score_prefix(hi))
        else:
            j = n if hi == math.inf else self._bisect(score_prefix(math.nextafter(hi, math.inf)))
        return (i, j) if i < j else (0, 0)

    def lex_bounds(self, rng: LexRange) -> tuple[int, int]:
        """Positions ``[i, j)`` of the entries whose member is in ``rng`` (equal scores)."""
        zsl = self.zsl
        n = len(zsl)
        if not n or rng.is_empty():
            return 0, 0
        if self.enc == LISTPACK:
            # zzlFirstInLexRange, then forward while <= max (Redis's walk)
            keys = zsl.keys(0, n)
            if not rng.gte_min(keys[-1][8:]) or not rng.lte_max(keys[0][8:]):
                return 0, 0
            i = 0
            while i < n and not rng.gte_min(keys[i][8:]):
                i += 1
            j = i
            while j < n and rng.lte_max(keys[j][8:]):
                j += 1
            return (i, j) if i < j else (0, 0)
        prefix = zsl[0][:8]
        lo, hi = rng.min, rng.max
        if isinstance(lo, bytes):
            i = self._bisect_right(prefix + lo) if rng.minex else self._bisect(prefix + lo)
        else:
            i = 0 if lo.sign < 0 else n
        if isinstance(hi, bytes):
            j = self._bisect(prefix + hi) if rng.maxex else self._bisect_right(prefix + hi)
        else:
            j = n if hi.sign > 0 else 0
        return (i, j) if i < j else (0, 0)

    def last_lex_bounds(self, rng: LexRange) -> tuple[int, int]:
        """As ``lex_bounds`` but found from the tail (``zzlLastInLexRange``, then backwards
        while >= min): the reverse commands' view, which differs only for mixed scores."""
        if self.enc != LISTPACK:
            return self.lex_bounds(rng)
        n = len(self.zsl)
        if not n or rng.is_empty():
            return 0, 0
        zsl = self.zsl.keys(0, n)  # a listpack: a walk of at most its N keys anyway
        if not rng.gte_min(zsl[-1][8:]) or not rng.lte_max(zsl[0][8:]):
            return 0, 0
        j = n
        while j > 0 and not rng.lte_max(zsl[j - 1][8:]):
            j -= 1
        i = j
        while i > 0 and rng.gte_min(zsl[i - 1][8:]):
            i -= 1
        return (i, j) if i < j else (0, 0)

    def limit_bounds(self, bounds: tuple[int, int], offset: int, limit: int,
                     reverse: bool) -> tuple[int, int]:
        """The positions of ``bounds`` left after skipping ``offset`` entries and keeping at
        most ``limit`` (negative: all), from the low end or (``reverse``) the high end (the
        LIMIT option); (0, 0) when none."""
        i, j = bounds
        if offset < 0 or (offset > 0 and offset >= len(self.zsl)):
            return 0, 0
        if reverse:
            j -= offset
        else:
            i += offset
        if limit >= 0 and j - i > limit:
            if reverse:
                i = j - limit
            else:
                j = i + limit
        return (i, j) if i < j else (0, 0)

    # -- writing --------------------------------------------------------------------------

    def _insert(self, score: float, member: bytes) -> None:
        k = score_prefix(score) + member  # key(), inlined: one call less per insertion
        self.zsl.add(k)
        if self.enc == LISTPACK:
            self.d[member] = k
        else:
            self.ht.put(member, k)  # type: ignore[union-attr]
            if score == 0.0 and math.copysign(1.0, score) < 0:
                if self.negzero is None:
                    self.negzero = set()
                self.negzero.add(member)

    def _unlink(self, k: bytes) -> None:
        member = k[8:]
        self.zsl.remove(k)
        if self.enc == LISTPACK:
            del self.d[member]
        else:
            self.ht.remove(member)  # type: ignore[union-attr]
            if self.negzero:
                self.negzero.discard(member)

    def _to_skiplist(self) -> None:
        self.enc = SKIPLIST
        self.ht = HashSlots((k[8:], k) for k in self.zsl)
        self.d = self.ht.d

    def to_skiplist(self) -> None:
        """Convert a listpack set to a skiplist (``zsetConvert``; SORT does this)."""
        if self.enc == LISTPACK:
            self._to_skiplist()

    def _to_listpack(self) -> None:
        # -0 becomes 0 (an integer in the listpack): the keys already say 0
        self.enc = LISTPACK
        self.d = {k[8:]: k for k in self.zsl}
        self.ht = None
        self.negzero = None

    def maybe_convert(self, size_hint: int, limits: ZsetLimits) -> None:
        """``zsetTypeMaybeConvert``: a listpack about to receive more members than it may
        hold becomes a skiplist first."""
        if self.enc == LISTPACK and size_hint > limits.zset_max_listpack_entries:
            self._to_skiplist()

    def convert_to_listpack_if_needed(self, limits: ZsetLimits) -> None:
        """``zsetConvertToListpackIfNeeded``: a skiplist small enough becomes a listpack."""
        if self.enc == LISTPACK or len(self.zsl) > limits.zset_max_listpack_entries:
            return
        lens = [len(k) - 8 for k in self.zsl]
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
        k = self.d.get(member)
        if k is not None:
            if flags & IN_NX:
                return OUT_NOP, score
            cur = self.score(member)
            assert cur is not None
            if flags & IN_INCR:
                score += cur
                if score != score:
                    return OUT_NAN, score
            if (flags & IN_LT and score >= cur) or (flags & IN_GT and score <= cur):
                return OUT_NOP, score
            if score != cur:
                self._unlink(k)
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
        k = self.d.get(member)
        if k is None:
            return False
        self._unlink(k)
        return True

    def remove_positions(self, i: int, j: int) -> int:
        """Remove the entries at positions ``[i, j)``; returns how many."""
        if i >= j:
            return 0
        zsl = self.zsl
        if self.enc == LISTPACK:
            d = self.d
            for k in zsl.keys(i, j):
                del d[k[8:]]
        else:
            ht = self.ht
            assert ht is not None
            neg = self.negzero
            for k in zsl.keys(i, j):
                ht.remove(k[8:])
                if neg:
                    neg.discard(k[8:])
        zsl.delete(i, j)
        return j - i

    def pop(self, count: int, highest: bool) -> list[Entry]:
        """Remove and return up to ``count`` entries from the low (or high) end, in the
        order they are popped."""
        n = len(self.zsl)
        take = min(count, n)
        if highest:
            out = self.entries(n - take, n, reverse=True)
            self.remove_positions(n - take, n)
        else:
            out = self.entries(0, take)
            self.remove_positions(0, take)
        return out

    # -- random members -------------------------------------------------------------------

    def random_entry(self) -> Entry:
        """``zsetTypeRandomElement`` (the set must not be empty)."""
        if self.enc == LISTPACK:
            return unkey(self.zsl[random.randrange(len(self.zsl))])
        ht = self.ht
        assert ht is not None
        k = ht.d[ht.random_member()]
        assert k is not None
        return self._entry(k)

    def random_entries(self, count: int, unique: bool) -> list[Entry]:
        """ZRANDMEMBER with a count (> 0), in the order Redis's case gives: drawn with
        replacement, or ``min(count, size)`` distinct entries (the whole set highest first, a
        listpack's selection in order, else random order)."""
        size = len(self.zsl)
        if not unique or count == 1:
            if self.enc == LISTPACK:
                return list(map(unkey, random.choices(list(self.zsl), k=count)))
            pick = self.random_entry
            return [pick() for _ in range(count)]
        if count >= size:  # the whole set, highest first (Redis's zuiNext goes backwards)
            return self.entries(0, size, reverse=True)
        if self.enc == LISTPACK:
            keys = list(self.zsl)
            return [unkey(keys[i]) for i in sorted(random.sample(range(size), count))]
        if count * ZRANDMEMBER_SUB_STRATEGY_MUL > size:
            return random.sample(list(self), count)
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
            entries = list(map(unkey, self.zsl))
            return 0, entries if want is None else [e for e in entries if want(e[1])]
        ht = self.ht
        assert ht is not None
        nxt, members = ht.scan(cursor, count, want)
        d = ht.d
        return nxt, [self._entry(d[m]) for m in members]


def load_zset(entries: Iterable[Entry], limits: ZsetLimits) -> ZSetValue:
    """A sorted set saved as members with scores (``RDB_TYPE_ZSET(_2)``), as Redis loads it:
    a skiplist, made a listpack afterwards if it is small enough. ValueError on a duplicate
    member or a NaN score."""
    scores: dict[bytes, float] = {}
    for score, member in entries:
        if score != score:
            raise ValueError("Zset with NAN score detected")
        if member in scores:
            raise ValueError("Duplicate zset fields detected")
        scores[member] = score
    return ZSetValue.from_scores(scores, limits)


def load_listpack_zset(entries: list[Entry], limits: ZsetLimits) -> ZSetValue:
    """A sorted set saved as a listpack (``RDB_TYPE_ZSET_LISTPACK`` / ``_ZIPLIST``): kept a
    listpack unless it has more members than ``zset-max-listpack-entries``."""
    z = ZSetValue.from_entries(entries, LISTPACK)
    if len(z) > limits.zset_max_listpack_entries:
        z._to_skiplist()
    return z


register_type(ZSetValue, b"zset")
