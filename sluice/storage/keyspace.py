"""The keyspace: numbered databases of keys, values and expiry times.

A ``Database`` is a dict ``key -> value`` plus ``expires: key -> unix ms``. Value types are
plain Python objects: ``bytes`` (string), ``ListValue`` (list), ``Stream`` (stream), ``Hash``
(hash); ``TYPE`` names come from ``type_name``. ``subexpires`` is a heap of hashes with field
TTLs by their soonest deadline (Redis's ``db->subexpires``): values of a class declared with
``register_subexpiring`` are registered when they are stored, and ``storage/hashes.py`` runs
their active expiry.

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

Object metadata Redis keeps in each value's header lives beside the data here: ``lru`` holds
each key's last access in seconds of ``lru_clock`` (a coarse clock the server refreshes from
its cron, as Redis's LRU clock; ``peek`` looks without touching), and ``overrides`` the few
string encodings that cannot be derived from the key and the bytes (APPEND leaves ``raw``,
INCRBYFLOAT ``embstr``, RENAME keeps ``raw``), checked against the value's identity so a
stale entry is never believed.
"""

from __future__ import annotations

import copy
import heapq
import time
from collections.abc import Callable, Iterator
from typing import Any

from sortedcontainers import SortedDict

from .strings import rekeyed_encoding, string_encoding


class WrongTypeError(Exception):
    """The key holds a value of another type."""

    def __str__(self) -> str:
        return "WRONGTYPE Operation against a key holding the wrong kind of value"


class Clock:
    """Wall-clock milliseconds; tests substitute a ``FakeClock``.

    ``freeze`` stops it at the current time until ``thaw``: while a script runs, every command
    it calls sees the time the script started (Redis's command time snapshot), so a key set
    to expire in 1 ms is still there at the script's next line, and TIME repeats itself."""

    __slots__ = ("frozen_us",)

    def __init__(self) -> None:
        self.frozen_us: int | None = None  # the time it is stopped at (unix µs), or None

    def now_ms(self) -> int:
        frozen = self.frozen_us
        return time.time_ns() // 1_000_000 if frozen is None else frozen // 1000

    def now_us(self) -> int:
        frozen = self.frozen_us
        return time.time_ns() // 1000 if frozen is None else frozen

    def freeze(self) -> None:
        self.frozen_us = self.now_us()

    def thaw(self) -> None:
        self.frozen_us = None


class FakeClock(Clock):
    """A clock that moves only when told to (virtual time for expiry and idle tests)."""

    __slots__ = ("ms",)

    def __init__(self, ms: int = 1_700_000_000_000) -> None:
        super().__init__()
        self.ms = ms

    def now_ms(self) -> int:
        return self.ms

    def now_us(self) -> int:
        return self.ms * 1000

    def advance(self, ms: int) -> None:
        self.ms += ms


_TYPE_NAMES: dict[type, bytes] = {bytes: b"string"}


def register_type(cls: type, name: bytes) -> None:
    """Declare a value class and the name TYPE reports for it."""
    _TYPE_NAMES[cls] = name


def type_name(value: object) -> bytes:
    return _TYPE_NAMES.get(type(value), b"none")


# Value classes with parts that expire on their own (``min_expire() -> ms | None``).
_SUBEXPIRING: set[type] = set()


def register_subexpiring(cls: type) -> None:
    """Declare a value class whose parts expire (hashes: field TTLs)."""
    _SUBEXPIRING.add(cls)


ExpireHook = Callable[["Database", bytes], None]

# OBJECT ENCODING for value types that do not report their own (``value.encoding()``).
_DEFAULT_ENCODINGS = {b"list": b"quicklist", b"set": b"hashtable", b"zset": b"skiplist",
                      b"hash": b"hashtable", b"stream": b"stream"}


class Database:
    """One numbered database (SELECT n)."""

    __slots__ = ("id", "data", "expires", "clock", "on_expire", "_heap", "_seqs", "_by_seq", "_next_seq",
                 "lru", "lru_clock", "overrides", "subexpires")

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
        self.lru: dict[bytes, int] = {}  # key -> last access, in lru_clock seconds
        self.lru_clock = clock.now_ms() // 1000  # refreshed by Keyspace.update_lru_clock
        self.overrides: dict[bytes, tuple[Any, bytes]] = {}  # key -> (value, encoding)
        # (soonest field deadline, key) of hashes with field TTLs, maybe stale (hashes.py)
        self.subexpires: list[tuple[int, bytes]] = []

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
        """The live value of ``key`` or None (an expired key is deleted on the way).

        Counts as an access (OBJECT IDLETIME); ``peek`` does not.
        """
        value = self.data.get(key)
        if value is not None:
            if self.expires and key in self.expires and self._expired(key):
                return None
            self.lru[key] = self.lru_clock
        return value

    def peek(self, key: bytes) -> Any:
        """Like ``get`` without touching the key's access time (TYPE, EXISTS, TTL, OBJECT)."""
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
        value = self.peek(key)
        return b"none" if value is None else type_name(value)

    # -- writes -------------------------------------------------------------------------

    def add(self, key: bytes, value: Any) -> None:
        """Store a value under a key that does not exist (no TTL)."""
        self.data[key] = value
        self.lru[key] = self.lru_clock
        seq = self._next_seq
        self._next_seq = seq + 1
        self._seqs[key] = seq
        self._by_seq[seq] = key
        if type(value) is not bytes:
            self._track_subexpires(key, value)

    def set(self, key: bytes, value: Any, keep_ttl: bool = False) -> None:
        """Store a value, replacing any; the TTL is cleared unless ``keep_ttl``."""
        if key in self.data:
            self.data[key] = value
            self.lru[key] = self.lru_clock
            if not keep_ttl and self.expires:
                self.expires.pop(key, None)
            if self.overrides:
                self.overrides.pop(key, None)
            if type(value) is not bytes:
                self._track_subexpires(key, value)
        else:
            if self.expires:
                self.expires.pop(key, None)
            self.add(key, value)

    def _track_subexpires(self, key: bytes, value: Any) -> None:
        """A value stored under ``key`` with expiring parts (a hash with field TTLs: its
        ``min_expire``) is registered for the active cycle (RENAME, MOVE, COPY, loads ...)."""
        if type(value) in _SUBEXPIRING:
            when = value.min_expire()
            if when is not None:
                self.track_subexpire(key, when)

    def track_subexpire(self, key: bytes, when: int) -> None:
        """Register ``key`` for the active expiry of its parts at ``when`` (unix ms)."""
        heapq.heappush(self.subexpires, (when, key))
        if len(self.subexpires) > 2 * len(self.data) + 1024:  # stale entries: one per key
            fresh = []
            for k in {k for _, k in self.subexpires}:
                value: Any = self.data.get(k)
                w = value.min_expire() if type(value) in _SUBEXPIRING else None
                if w is not None:
                    fresh.append((w, k))
            heapq.heapify(fresh)
            self.subexpires = fresh

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
        self.lru.pop(key, None)
        if self.overrides:
            self.overrides.pop(key, None)
        seq = self._seqs.pop(key)
        del self._by_seq[seq]

    def flush(self) -> int:
        n = len(self.data)
        self.data = {}
        self.expires = {}
        self._heap = []
        self._seqs = {}
        self._by_seq = SortedDict()
        self.lru = {}
        self.overrides = {}
        self.subexpires = []
        return n

    def swap_contents(self, other: Database) -> None:
        """SWAPDB: exchange keys, TTLs and metadata with ``other``; ids stay where they are."""
        for name in ("data", "expires", "_heap", "_seqs", "_by_seq", "_next_seq", "lru",
                     "overrides", "subexpires"):
            mine = getattr(self, name)
            setattr(self, name, getattr(other, name))
            setattr(other, name, mine)

    # -- renames and copies ------------------------------------------------------------

    def rename(self, src: bytes, dst: bytes) -> None:
        """Move the (live) value of ``src`` to ``dst``, replacing it; the TTL moves along."""
        self.move_to(src, self, dst)

    def move_to(self, key: bytes, target: Database, new_key: bytes | None = None) -> None:
        """Move the live ``key`` into ``target`` (as ``new_key``), TTL and metadata included."""
        dst = key if new_key is None else new_key
        value = self.data[key]
        when = self.expires.get(key)
        enc = self.encoding(key, value) if type(value) is bytes else None
        self._remove(key)
        if dst in target.data:
            target._remove(dst)
        target.add(dst, value)
        if when is not None:
            target.set_expire(dst, when)
        if enc is not None:
            target._rekeyed(dst, value, enc)

    def copy_to(self, key: bytes, target: Database, new_key: bytes) -> None:
        """COPY: an independent duplicate of the live ``key`` under ``new_key`` in ``target``
        (which must not exist there), with the same TTL."""
        value = self.data[key]
        if type(value) is bytes:
            dup = value  # immutable: sharing is copying
        elif hasattr(value, "copy"):
            dup = value.copy()  # the type knows how to duplicate itself (Stream, ListValue)
        else:
            dup = copy.deepcopy(value)
        target.add(new_key, dup)
        when = self.expires.get(key)
        if when is not None:
            target.set_expire(new_key, when)
        if type(value) is bytes:
            target._rekeyed(new_key, dup, self.encoding(key, value))

    def _rekeyed(self, key: bytes, value: bytes, encoding: bytes) -> None:
        """Record the encoding of a string that had ``encoding`` under another key."""
        enc = rekeyed_encoding(encoding, len(key), len(value))
        if enc != string_encoding(value, len(key)):
            self.overrides[key] = (value, enc)

    # -- object metadata ----------------------------------------------------------------

    def set_encoding(self, key: bytes, value: Any, encoding: bytes) -> None:
        """Record a string encoding the key and bytes alone do not tell (APPEND -> raw ...)."""
        self.overrides[key] = (value, encoding)

    def encoding(self, key: bytes, value: Any) -> bytes:
        """OBJECT ENCODING of the value stored under ``key``."""
        if type(value) is bytes:
            o = self.overrides.get(key)
            if o is not None and o[0] is value:
                return o[1]
            return string_encoding(value, len(key))
        method = getattr(value, "encoding", None)
        if method is not None:
            return method()  # type: ignore[no-any-return]
        return _DEFAULT_ENCODINGS.get(type_name(value), b"raw")

    def refcount(self, key: bytes, value: Any) -> int:
        """OBJECT REFCOUNT: 1. Redis 8 stores every value in an object of its own that holds
        the key too, so even its shared small integers are copied in (7.x said INT_MAX)."""
        return 1

    def idle_seconds(self, key: bytes) -> int:
        """Seconds since the key was last accessed (OBJECT IDLETIME)."""
        last = self.lru.get(key)
        if last is None:
            return 0
        return max(0, self.clock.now_ms() // 1000 - last)

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

    def touch(self, key: bytes) -> bool:
        """TOUCH: mark a live key as accessed now; False if it does not exist."""
        return self.get(key) is not None

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
            if self.peek(key) is not None:  # RANDOMKEY is no access to the key
                return key
        return None


class Keyspace:
    """The numbered databases of one server."""

    __slots__ = ("dbs", "clock")

    def __init__(self, count: int = 16, clock: Clock | None = None,
                 on_expire: ExpireHook | None = None) -> None:
        self.clock = clock or Clock()
        self.dbs = [Database(i, self.clock, on_expire) for i in range(count)]

    def update_lru_clock(self) -> None:
        """Refresh the coarse access clock of every database (the server's cron calls this)."""
        now = self.clock.now_ms() // 1000
        for db in self.dbs:
            db.lru_clock = now

    def __getitem__(self, index: int) -> Database:
        return self.dbs[index]

    def __len__(self) -> int:
        return len(self.dbs)
