"""The set value type (Redis's ``t_set.c``): intset, listpack or hash table.

Encodings, as Redis 8.6 keeps and reports them (``OBJECT ENCODING``):

* ``intset``: only integers (``string2ll``-canonical, 64-bit), sorted ascending. An
  ``array('q')`` here; membership by binary search, insertion O(N) as Redis's memmove.
* ``listpack``: a small set kept in insertion order (removals close the gap). A list of
  ``bytes``; membership O(N) as Redis's ``lpFind``.
* ``hashtable``: a ``HashSlots`` (a dict with tombstones and insertion slots, see
  ``hashslots.py``): O(1) membership, fair random members, SCAN cursors.

Conversions follow ``setTypeAddAux``: an intset takes integers until it has more than
``set-max-intset-entries`` (capped at 2^30); a string turns it into a listpack when it has
fewer than ``set-max-listpack-entries`` members, every member (its widest integer included)
is at most ``set-max-listpack-value`` bytes, else into a hash table; a listpack becomes a hash
table on the member that would pass either limit. Sets never convert back by themselves
(SINTERSTORE's result may become an intset, SPOP's "case 3" rebuilds the set). A new set is
created by ``create`` (``setTypeCreate``: the first member and the number of members decide);
a command adding many members to an existing set calls ``maybe_convert`` first.

What a command replies is iterated in the encoding's order: ascending for an intset,
insertion order for a listpack (so replies match redis-server byte for byte); a hash table's
order is its slots' (Redis's is its hash order: clients must not rely on either).

The random commands follow Redis's case analysis (``spopWithCountCommand``,
``srandmemberWithCountCommand``) for what they leave behind (the remaining members and their
encoding); the randomness is Python's ``random``.

Limits are passed by the caller (the server's config, see ``SetLimits``); the loaders of
``rdb_set.py`` use ``load_limits()``. Invariant kept by the callers: a set key never holds an
empty set.
"""

from __future__ import annotations

import random
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol

from .hashslots import HashSlots
from .keyspace import register_type
from .strings import string2ll

INTSET, LISTPACK, HASHTABLE = 0, 1, 2
_ENCODING_NAMES = (b"intset", b"listpack", b"hashtable")
LISTPACK_MAX_SAFETY_SIZE = 1 << 30  # lpSafeToAdd's bound
INTSET_MAX = 1 << 30  # intsetMaxEntries caps set-max-intset-entries here
SPOP_MOVE_STRATEGY_MUL = 5
SRANDMEMBER_SUB_STRATEGY_MUL = 3


class SetLimits(Protocol):
    """The settings that decide a set's encoding (the server's config has them)."""

    @property
    def set_max_intset_entries(self) -> int: ...
    @property
    def set_max_listpack_entries(self) -> int: ...
    @property
    def set_max_listpack_value(self) -> int: ...


class _Defaults:
    __slots__ = ()
    set_max_intset_entries = 512
    set_max_listpack_entries = 128
    set_max_listpack_value = 64


DEFAULT_LIMITS: SetLimits = _Defaults()


def _intset_max(limits: SetLimits) -> int:
    return min(limits.set_max_intset_entries, INTSET_MAX)


def _lp_int_size(v: int) -> int:
    """Bytes of an integer listpack entry, back-length included."""
    if 0 <= v <= 127:
        return 2
    if -4096 <= v <= 4095:
        return 3
    if -(1 << 15) <= v < 1 << 15:
        return 4
    if -(1 << 23) <= v < 1 << 23:
        return 5
    if -(1 << 31) <= v < 1 << 31:
        return 6
    return 10


def _lp_estimate_repeated(v: int, n: int) -> int:
    """``lpEstimateBytesRepeatedInteger``: a listpack of ``n`` copies of ``v``."""
    return 6 + n * _lp_int_size(v) + 1


class SetValue:
    """A Redis set. ``enc`` says which of ``ints`` / ``items`` / ``ht`` holds the members."""

    __slots__ = ("enc", "ints", "items", "ht")

    def __init__(self, enc: int = INTSET) -> None:
        self.enc = enc
        self.ints: array[int] | None = array("q") if enc == INTSET else None  # sorted
        self.items: list[bytes] | None = [] if enc == LISTPACK else None  # insertion order
        self.ht: HashSlots | None = HashSlots() if enc == HASHTABLE else None

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def create(cls, first: bytes, size_hint: int, limits: SetLimits) -> SetValue:
        """``setTypeCreate``: the encoding a new set starts with, from its first member and
        the number of members about to be added."""
        if string2ll(first) is not None and size_hint <= limits.set_max_intset_entries:
            return cls(INTSET)
        if size_hint <= limits.set_max_listpack_entries:
            return cls(LISTPACK)
        return cls(HASHTABLE)

    @classmethod
    def from_ints(cls, ints: Iterable[int]) -> SetValue:
        """An intset from sorted, distinct integers (an RDB intset blob)."""
        s = cls(INTSET)
        s.ints = array("q", ints)
        return s

    @classmethod
    def from_listpack(cls, items: list[bytes]) -> SetValue:
        """A listpack-encoded set from distinct members (an RDB listpack)."""
        s = cls(LISTPACK)
        s.items = items
        return s

    @classmethod
    def from_members(cls, members: Iterable[bytes]) -> SetValue:
        """A hash-table set from distinct members."""
        s = cls(HASHTABLE)
        s.ht = HashSlots((m, True) for m in members)
        return s

    def copy(self) -> SetValue:
        """An independent copy with the same encoding (``setTypeDup``)."""
        dup = SetValue.__new__(SetValue)
        dup.enc = self.enc
        dup.ints = None if self.ints is None else array("q", self.ints)
        dup.items = None if self.items is None else list(self.items)
        dup.ht = None if self.ht is None else self.ht.copy()
        return dup

    # -- reading --------------------------------------------------------------------------

    def encoding(self) -> bytes:
        """What ``OBJECT ENCODING`` reports."""
        return _ENCODING_NAMES[self.enc]

    def __len__(self) -> int:
        if self.enc == INTSET:
            return len(self.ints)  # type: ignore[arg-type]
        if self.enc == LISTPACK:
            return len(self.items)  # type: ignore[arg-type]
        return len(self.ht)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[bytes]:
        """The members in the encoding's order (``setTypeNext``)."""
        if self.enc == INTSET:
            return (b"%d" % v for v in self.ints)  # type: ignore[union-attr]
        if self.enc == LISTPACK:
            return iter(self.items)  # type: ignore[arg-type]
        return iter(self.ht)  # type: ignore[arg-type]

    def members(self) -> list[bytes]:
        return list(self)

    def __contains__(self, member: object) -> bool:
        """``setTypeIsMember``."""
        if not isinstance(member, bytes):
            return False
        if self.enc == HASHTABLE:
            return self.ht.d.get(member) is not None  # type: ignore[union-attr]
        if self.enc == LISTPACK:
            return member in self.items  # type: ignore[operator]
        v = string2ll(member)
        if v is None:
            return False
        ints = self.ints
        assert ints is not None
        i = bisect_left(ints, v)
        return i < len(ints) and ints[i] == v

    def __repr__(self) -> str:
        return f"SetValue({self.members()!r}, encoding={self.encoding().decode()})"

    # -- conversions ----------------------------------------------------------------------

    def _to_hashtable(self) -> None:
        members = list(self)
        self.ht = HashSlots((m, True) for m in members)
        self.ints = self.items = None
        self.enc = HASHTABLE

    def _to_listpack(self) -> None:
        self.items = list(self)
        self.ints = self.ht = None
        self.enc = LISTPACK

    def maybe_convert(self, size_hint: int, limits: SetLimits) -> None:
        """``setTypeMaybeConvert``: before adding about ``size_hint`` members, go straight to
        a hash table if they could not fit the current encoding."""
        if ((self.enc == LISTPACK and size_hint > limits.set_max_listpack_entries)
                or (self.enc == INTSET and size_hint > limits.set_max_intset_entries)):
            self._to_hashtable()

    def to_intset_if_possible(self, limits: SetLimits) -> None:
        """``maybeConvertToIntset``: a set known to hold only integers becomes an intset,
        unless it is too big for one."""
        if self.enc == INTSET or len(self) > _intset_max(limits):
            return
        ints = sorted(string2ll(m) for m in self)  # type: ignore[type-var]
        self.ints = array("q", ints)  # type: ignore[arg-type]
        self.items = self.ht = None
        self.enc = INTSET

    # -- writing --------------------------------------------------------------------------

    def add(self, member: bytes, limits: SetLimits) -> bool:
        """``setTypeAdd``: True if ``member`` was not in the set. May convert."""
        enc = self.enc
        if enc == HASHTABLE:
            return self.ht.put(member, True)  # type: ignore[union-attr]
        if enc == LISTPACK:
            items = self.items
            assert items is not None
            if member in items:
                return False
            if (len(items) < limits.set_max_listpack_entries
                    and len(member) <= limits.set_max_listpack_value
                    and self._lp_safe(len(member), limits)):
                items.append(member)
            else:
                self._to_hashtable()
                self.ht.put(member, True)  # type: ignore[union-attr]
            return True
        ints = self.ints
        assert ints is not None
        v = string2ll(member)
        if v is not None:
            i = bisect_left(ints, v)
            if i < len(ints) and ints[i] == v:
                return False
            ints.insert(i, v)
            if len(ints) > _intset_max(limits):
                self._to_hashtable()
            return True
        # A string: a listpack if it would still be small, else a hash table.
        n = len(ints)
        maxelelen = totsize = 0
        if n:
            hi, lo = ints[-1], ints[0]
            maxelelen = max(len(b"%d" % hi), len(b"%d" % lo))
            totsize = max(_lp_estimate_repeated(hi, n), _lp_estimate_repeated(lo, n))
        if (n < limits.set_max_listpack_entries
                and len(member) <= limits.set_max_listpack_value
                and maxelelen <= limits.set_max_listpack_value
                and totsize + len(member) <= LISTPACK_MAX_SAFETY_SIZE):
            self._to_listpack()
            self.items.append(member)  # type: ignore[union-attr]
        else:
            self._to_hashtable()
            self.ht.put(member, True)  # type: ignore[union-attr]
        return True

    def _lp_safe(self, add: int, limits: SetLimits) -> bool:
        """``lpSafeToAdd``: the listpack stays under 1 GB (only big limits can reach it)."""
        if limits.set_max_listpack_entries * (limits.set_max_listpack_value + 11) < (
                LISTPACK_MAX_SAFETY_SIZE):
            return True
        return sum(map(len, self.items)) + 11 * len(self.items) + add <= (  # type: ignore[arg-type]
            LISTPACK_MAX_SAFETY_SIZE)

    def remove(self, member: bytes) -> bool:
        """``setTypeRemove``: True if ``member`` was there."""
        enc = self.enc
        if enc == HASHTABLE:
            return self.ht.remove(member) is not None  # type: ignore[union-attr]
        if enc == LISTPACK:
            items = self.items
            assert items is not None
            try:
                items.remove(member)
            except ValueError:
                return False
            return True
        v = string2ll(member)
        if v is None:
            return False
        ints = self.ints
        assert ints is not None
        i = bisect_left(ints, v)
        if i < len(ints) and ints[i] == v:
            del ints[i]
            return True
        return False

    # -- random members -------------------------------------------------------------------

    def random_member(self) -> bytes:
        """``setTypeRandomElement`` (the set must not be empty)."""
        if self.enc == HASHTABLE:
            return self.ht.random_member()  # type: ignore[union-attr]
        if self.enc == LISTPACK:
            return random.choice(self.items)  # type: ignore[arg-type]
        return b"%d" % random.choice(self.ints)  # type: ignore[arg-type]

    def pop_random(self) -> bytes:
        """``setTypePopRandom``: remove and return a random member."""
        if self.enc == LISTPACK:
            items = self.items
            assert items is not None
            return items.pop(random.randrange(len(items)))
        if self.enc == INTSET:
            ints = self.ints
            assert ints is not None
            return b"%d" % ints.pop(random.randrange(len(ints)))
        member = self.random_member()
        self.ht.remove(member)  # type: ignore[union-attr]
        return member

    def pop_many(self, count: int, limits: SetLimits) -> tuple[list[bytes], SetValue | None]:
        """SPOP with a count below the set's size: the popped members, and the set that
        replaces this one when Redis builds a new one (its "case 3"), else None.

        Case 2 (what stays is more than a fifth of what goes): a listpack gives an ordered
        random selection, the others random pops. Case 3: the members to keep are picked at
        random into a new set (a listpack for a listpack; for the others a listpack if the
        first one picked is a string, an intset if it is an integer; then the usual
        conversions), and what is left of this set is the reply, in its order."""
        size = len(self)
        remaining = size - count
        if remaining * SPOP_MOVE_STRATEGY_MUL > count:
            if self.enc == LISTPACK:
                items = self.items
                assert items is not None
                chosen = sorted(random.sample(range(size), count))
                popped = [items[i] for i in chosen]
                drop = set(chosen)
                self.items = [m for i, m in enumerate(items) if i not in drop]
                return popped, None
            return [self.pop_random() for _ in range(count)], None
        if self.enc == LISTPACK:
            items = self.items
            assert items is not None
            keep = sorted(random.sample(range(size), remaining))
            rebuilt = SetValue(LISTPACK)
            for i in keep:
                rebuilt.add(items[i], limits)
            kept = set(keep)
            return [m for i, m in enumerate(items) if i not in kept], rebuilt
        # the first member picked decides: an intset's are integers, a hash table's strings
        rebuilt = SetValue(INTSET if self.enc == INTSET else LISTPACK)
        for _ in range(remaining):
            member = self.random_member()
            rebuilt.add(member, limits)
            self.remove(member)
        return list(self), rebuilt

    def random_members(self, count: int, unique: bool) -> list[bytes]:
        """SRANDMEMBER with a count (> 0): ``count`` members drawn with replacement, or
        (``unique``) ``min(count, size)`` distinct ones; in the order Redis's case gives
        (the whole set in its order, a listpack's selection in its order, else random)."""
        size = len(self)
        if not unique or count == 1:
            if self.enc == LISTPACK:
                items = self.items
                assert items is not None
                return random.choices(items, k=count)
            pick = self.random_member
            return [pick() for _ in range(count)]
        if count >= size:
            return list(self)
        if self.enc == LISTPACK:
            items = self.items
            assert items is not None
            return [items[i] for i in sorted(random.sample(range(size), count))]
        if count * SRANDMEMBER_SUB_STRATEGY_MUL > size:
            return random.sample(list(self), count)
        out: dict[bytes, None] = {}
        pick = self.random_member
        while len(out) < count:
            out[pick()] = None
        return list(out)

    # -- SSCAN ----------------------------------------------------------------------------

    def scan(self, cursor: int, count: int,
             want: Callable[[bytes], bool] | None) -> tuple[int, list[bytes]]:
        """SSCAN: a hash table is walked from ``cursor``; the small encodings are returned
        whole with cursor 0 (Redis does the same)."""
        if self.enc == HASHTABLE:
            return self.ht.scan(cursor, count, want)  # type: ignore[union-attr]
        members = list(self)
        return 0, members if want is None else [m for m in members if want(m)]


def load_hashtable_set(members: Iterable[bytes], count: int, limits: SetLimits) -> SetValue:
    """A set saved as a plain list of members (``RDB_TYPE_SET``), encoded as Redis 8.6 loads
    it: a hash table if it has more members than an intset may, else an intset while the
    members are integers, a listpack while it stays small, a hash table otherwise.
    Raises ValueError on a duplicate member."""
    if count > _intset_max(limits):
        s = SetValue(HASHTABLE)
    else:
        s = SetValue(INTSET)
    maxelelen = sumelelen = 0
    for member in members:
        n = len(member)
        sumelelen += n
        maxelelen = max(maxelelen, n)
        if s.enc == INTSET:
            if string2ll(member) is not None:
                if not s.add(member, _NoConversion):
                    raise ValueError("Duplicate set members detected")
                continue
            if (len(s) < limits.set_max_listpack_entries
                    and maxelelen <= limits.set_max_listpack_value
                    and sumelelen <= LISTPACK_MAX_SAFETY_SIZE):
                s._to_listpack()
            else:
                s._to_hashtable()
        if s.enc == LISTPACK:
            items = s.items
            assert items is not None
            if len(items) < limits.set_max_listpack_entries and n <= limits.set_max_listpack_value:
                if member in items:
                    raise ValueError("Duplicate set members detected")
                items.append(member)
                continue
            s._to_hashtable()
        if not s.ht.put(member, True):  # type: ignore[union-attr]
            raise ValueError("Duplicate set members detected")
    return s


class _NoConversionLimits:
    __slots__ = ()
    set_max_intset_entries = INTSET_MAX
    set_max_listpack_entries = INTSET_MAX
    set_max_listpack_value = INTSET_MAX


_NoConversion: SetLimits = _NoConversionLimits()

register_type(SetValue, b"set")
