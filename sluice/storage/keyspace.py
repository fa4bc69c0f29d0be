"""The keyspace: numbered databases of keys, values and expiry times.

A ``Database`` is a dict ``key -> value`` plus ``expires: key -> unix ms``. Value types are
plain Python objects: ``bytes`` (string), ``ListValue`` (list), ``Stream`` (stream); ``TYPE``
names come from ``type_name``.

Expiry is lazy (every lookup checks the deadline, as Redis's ``expireIfNeeded``) and active:
``active_expire`` pops due keys from a min-heap of deadlines, with a bound on the work per
call (Redis samples; a heap gives the same bounded work with no missed keys). Heap entries are
checked against ``expires`` when popped, so changing or removing a TTL needs no heap surgery;
the heap is rebuilt when stale entries outnumber live ones.

SCAN: each key gets a sequence number when it is added; the cursor is the last number
returned. A key present for the whole scan keeps its number and is returned exactly once;
keys added meanwhile may or may not be returned, as Redis allows.

Deletions caused by expiry call ``on_expire(db, key)`` so the server can invalidate WATCH,
wake blocked clients and log a DEL. Storage imports nothing of Sluice's outside ``storage``.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Iterator
from typing import Any

from sortedcontainers import SortedDict


class WrongTypeError(Exception):
    """The key holds a value of another type."""

    def __str__(self) -> str:
        return "WRONGTYPE Operation against a key holding the wrong kind of value"


class Clock:
    """Wall-clock milliseconds; tests substitute a ``FakeClock``."""

    __slots__ = ()

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class FakeClock(Clock):
    """A clock that moves only when told to (virtual time for expiry and idle tests)."""

    __slots__ = ("ms",)

    def __init__(self, ms: int = 1_700_000_000_000) -> None:
        self.ms = ms

    def now_ms(self) -> int:
        return self.ms

    def advance(self, ms: int) -> None:
        self.ms += ms


_TYPE_NAMES: dict[type, bytes] = {bytes: b"string"}


def register_type(cls: type, name: bytes) -> None:
    """Declare a value class and the name TYPE reports for it."""
    _TYPE_NAMES[cls] = name


def type_name(value: object) -> bytes:
    return _TYPE_NAMES.get(type(value), b"none")


ExpireHook = Callable[["Database", bytes], None]


class Database:
    """One numbered database (SELECT n)."""

    __slots__ = ("id", "data", "expires", "clock", "on_expire", "_heap", "_seqs", "_by_seq", "_next_seq")

    def __init__(self, db_id: int, clock: Clock, on_expire: ExpireHook | None = None) -> None:
        self.id = db_id  # the number SELECT uses
        self.data: dict[bytes, Any] = {}  # key -> value
        self.expires: dict[bytes, int] = {}  # key -> deadline in unix ms
        self.clock = clock
        self.on_expire = on_expire  # called after a key is deleted because it expired
        self._heap: list[tuple[int, bytes]] = []  # (deadline, key), possibly stale
        self._seqs: dict[bytes, int] = {}  # key -> scan sequence number
        self._by_seq: SortedDict = SortedDict()  # scan sequence number -> key
        self._next_seq = 1

    def __len__(self) -> int:
        return len(self.data)

    # -- lookup -------------------------------------------------------------------------

    def _expired(self, key: bytes) -> bool:
        when = self.expires.get(key)
        if when is not None and when <= self.clock.now_ms():
            self._remove(key)
            if self.on_expire is not None:
                self.on_expire(self, key)
            return True
        return False

    def get(self, key: bytes) -> Any:
        """The live value of ``key`` or None (an expired key is deleted on the way)."""
        value = self.data.get(key)
        if value is not None and self.expires and key in self.expires and self._expired(key):
            return None
        return value

    def get_typed(self, key: bytes, cls: type) -> Any:
        """The value if it is a ``cls``, None if absent; ``WrongTypeError`` otherwise."""
        value = self.get(key)
        if value is not None and type(value) is not cls:
            raise WrongTypeError()
        return value

    def __contains__(self, key: bytes) -> bool:
        return self.get(key) is not None

    def type_of(self, key: bytes) -> bytes:
        value = self.get(key)
        return b"none" if value is None else type_name(value)

    # -- writes -------------------------------------------------------------------------

    def add(self, key: bytes, value: Any) -> None:
        """Store a value under a key that does not exist (no TTL)."""
        self.data[key] = value
        seq = self._next_seq
        self._next_seq = seq + 1
        self._seqs[key] = seq
        self._by_seq[seq] = key

    def set(self, key: bytes, value: Any, keep_ttl: bool = False) -> None:
        """Store a value, replacing any; the TTL is cleared unless ``keep_ttl``."""
        if key in self.data:
            self.data[key] = value
            if not keep_ttl and self.expires:
                self.expires.pop(key, None)
        else:
            if self.expires:
                self.expires.pop(key, None)
            self.add(key, value)

    def delete(self, key: bytes) -> bool:
        """Remove a live key; True if it existed."""
        if self.get(key) is None:
            return False
        self._remove(key)
        return True

    def pop(self, key: bytes) -> Any:
        """Remove a live key and return its value (None if absent)."""
        value = self.get(key)
        if value is not None:
            self._remove(key)
        return value

    def _remove(self, key: bytes) -> None:
        del self.data[key]
        self.expires.pop(key, None)
        seq = self._seqs.pop(key)
        del self._by_seq[seq]

    def flush(self) -> int:
        n = len(self.data)
        self.data = {}
        self.expires = {}
        self._heap = []
        self._seqs = {}
        self._by_seq = SortedDict()
        return n

    # -- expiry -------------------------------------------------------------------------

    def set_expire(self, key: bytes, when_ms: int) -> None:
        """Give an existing key a deadline (unix ms)."""
        self.expires[key] = when_ms
        heapq.heappush(self._heap, (when_ms, key))
        if len(self._heap) > 2 * len(self.expires) + 1024:
            self._heap = [(w, k) for k, w in self.expires.items()]
            heapq.heapify(self._heap)

    def get_expire(self, key: bytes) -> int | None:
        """The key's deadline in unix ms, None for no TTL (the key must exist)."""
        return self.expires.get(key)

    def persist(self, key: bytes) -> bool:
        return self.expires.pop(key, None) is not None

    def active_expire(self, max_keys: int = 200) -> int:
        """Delete up to ``max_keys`` keys whose deadline has passed; return how many."""
        heap, expires = self._heap, self.expires
        now = self.clock.now_ms()
        done = 0
        while heap and heap[0][0] <= now and done < max_keys:
            when, key = heapq.heappop(heap)
            if expires.get(key) == when:
                self._remove(key)
                done += 1
                if self.on_expire is not None:
                    self.on_expire(self, key)
        return done

    # -- iteration ----------------------------------------------------------------------

    def keys(self) -> Iterator[bytes]:
        """Live keys (expired ones are skipped, not deleted: safe to iterate)."""
        now = self.clock.now_ms()
        expires = self.expires
        for key in list(self.data):
            when = expires.get(key)
            if when is None or when > now:
                yield key

    def scan(self, cursor: int, count: int) -> tuple[int, list[bytes]]:
        """Up to ``count`` keys after ``cursor``; the next cursor (0 when done)."""
        out: list[bytes] = []
        last = cursor
        for seq in self._by_seq.irange(minimum=cursor + 1):
            out.append(self._by_seq[seq])
            last = seq
            if len(out) >= count:
                break
        else:
            last = 0
        return last, out

    def random_key(self) -> bytes | None:
        """A random live key (O(1) expected for databases that are not mostly expired)."""
        import random

        by_seq = self._by_seq
        for _ in range(100):
            if not by_seq:
                return None
            key: bytes = by_seq.peekitem(random.randrange(len(by_seq)))[1]
            if self.get(key) is not None:
                return key
        return None


class Keyspace:
    """The numbered databases of one server."""

    __slots__ = ("dbs", "clock")

    def __init__(self, count: int = 16, clock: Clock | None = None,
                 on_expire: ExpireHook | None = None) -> None:
        self.clock = clock or Clock()
        self.dbs = [Database(i, self.clock, on_expire) for i in range(count)]

    def __getitem__(self, index: int) -> Database:
        return self.dbs[index]

    def __len__(self) -> int:
        return len(self.dbs)
