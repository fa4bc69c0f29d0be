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

Per-key metadata lives in one slot per key (``slots: key -> slot``), in arrays indexed by
slot, so a key costs one dict entry besides its data entry however much Redis keeps in its
object header: ``keys_at`` (the key, None for a free slot), ``meta`` (the 24-bit LRU/LFU
word, ``lru.py``), ``sizes`` (its estimated bytes, ``memsize.py``: ``used`` is their sum,
kept at every write, with ``EXPIRE_OVERHEAD`` per TTL), ``kinds`` (its type and INFO keysizes
bin; ``keysizes`` counts keys per type and bin). Free slots are reused.

SCAN walks the slots in order: a key keeps its slot while it lives, so a key present for the
whole scan is returned exactly once; keys added meanwhile may or may not be. When most slots
are free the arrays are compacted, keeping the keys' order; the cursor carries an epoch in
its high bits, and a cursor of the epoch before is mapped onto the new slots (an older one
restarts the scan: duplicates are allowed, misses are not). Random keys (RANDOMKEY, eviction
samples) are random slots, which compaction keeps at least a quarter full.

While expiry is paused (``Keyspace.pause_expiry``: CLIENT PAUSE, as Redis's
``PAUSE_ACTION_EXPIRE``) an expired key reads as absent but is not deleted, neither by a
lookup nor by ``active_expire``: a pause must not change the data set.

Lookups (``get``, ``peek``) count as Redis's ``lookupKeyRead``: while ``access.counting``
(set per command by dispatch), INFO's keyspace hits and misses, and a miss fires the
"keymiss" event; ``get`` touches the key (LRU clock or LFU counter); ``find`` is the quiet
lookup the server's own bookkeeping uses. ``add`` fires "new" and ``set`` "overwritten" and
"type_changed" (Redis's ``dbAdd`` / ``setKey``) when someone listens (``access.on_event``);
``replace`` is ``dbReplaceValue``, silent. Deletions caused by expiry call
``on_expire(db, key, ns)`` so the server can invalidate WATCH, wake blocked clients, notify,
log a DEL and, when ``access.time_deletes`` asks, record how long freeing the value took
(LATENCY's ``expire-del``). Storage imports nothing of Sluice's outside ``storage``.

``overrides`` holds the few string encodings that cannot be derived from the key and the
bytes (APPEND leaves ``raw``, INCRBYFLOAT ``embstr``, RENAME keeps ``raw``), checked against
the value's identity so a stale entry is never believed.
"""

from __future__ import annotations

import bisect
import copy
import heapq
import random
import time
from array import array
from collections.abc import Callable, Iterator
from typing import Any

from .lru import TOUCH_LFU, TOUCH_LRU, Access
from .memsize import (
    EXPIRE_OVERHEAD,
    KEY_OVERHEAD,
    KIND_OTHER,
    KINDS,
    SIZERS,
    length_of,
    register_kind,
    value_size,
)
from .strings import rekeyed_encoding, string_encoding

_HOT_EVERY = 8  # Database.written measures a collection written repeatedly once in this many


class WrongTypeError(Exception):
    """The key holds a value of another type."""

    def __str__(self) -> str:
        return "WRONGTYPE Operation against a key holding the wrong kind of value"


class Clock:
    """Wall-clock milliseconds; tests substitute a ``FakeClock``.

    ``freeze`` stops it at the current time until ``thaw``: while a script or a transaction
    runs, every command in it sees the time it started (Redis's command time snapshot of an
    execution unit), so a key set to expire in 1 ms is still there at the next line, and TIME
    repeats itself. Freezes do not nest: the outermost unit freezes and thaws."""

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
    register_kind(cls, name)


def type_name(value: object) -> bytes:
    return _TYPE_NAMES.get(type(value), b"none")


# Value classes with parts that expire on their own (``min_expire() -> ms | None``).
_SUBEXPIRING: set[type] = set()


def register_subexpiring(cls: type) -> None:
    """Declare a value class whose parts expire (hashes: field TTLs)."""
    _SUBEXPIRING.add(cls)


# Called after a key is deleted because it expired: (database, key, nanoseconds the deletion
# took, 0 unless ``access.time_deletes``).
ExpireHook = Callable[["Database", bytes, int], None]

# OBJECT ENCODING for value types that do not report their own (``value.encoding()``).
_DEFAULT_ENCODINGS = {b"list": b"quicklist", b"set": b"hashtable", b"zset": b"skiplist",
                      b"hash": b"hashtable", b"stream": b"stream"}

NO_KIND = 0xFFFF  # ``kinds`` of a free slot
_EPOCH_SHIFT = 40  # SCAN cursors: slot index below, compaction epoch above
_SLOT_MASK = (1 << _EPOCH_SHIFT) - 1
_KINDS = 7  # memsize.KIND_STRING .. KIND_OTHER
_BINS = 64


def _bytes_size(n: int) -> int:
    """memsize.bytes_size, inlined where strings are stored (the hottest write path)."""
    n += 33
    return (n + 15) & ~15 if n <= 512 else (n + 23) & ~15


class Database:
    """One numbered database (SELECT n)."""

    __slots__ = ("id", "data", "expires", "clock", "on_expire", "_heap", "slots", "keys_at",
                 "meta", "sizes", "kinds", "free", "used", "keysizes", "epoch", "_remap",
                 "access", "overrides", "subexpires", "_hot", "_hot_skips", "keep_expired")

    def __init__(self, db_id: int, clock: Clock, on_expire: ExpireHook | None = None,
                 access: Access | None = None) -> None:
        self.id = db_id  # the number SELECT uses
        self.data: dict[bytes, Any] = {}  # key -> value
        self.expires: dict[bytes, int] = {}  # key -> deadline in unix ms
        self.clock = clock
        self.on_expire = on_expire  # called after a key is deleted because it expired
        self._heap: list[tuple[int, bytes]] = []  # (deadline, key), possibly stale
        # shared with the other databases: policy, clocks, lookup stats, event hooks
        self.access = access if access is not None else Access(clock.now_ms())
        self.overrides: dict[bytes, tuple[Any, bytes]] = {}  # key -> (value, encoding)
        # (soonest field deadline, key) of hashes with field TTLs, maybe stale (hashes.py)
        self.subexpires: list[tuple[int, bytes]] = []
        self.epoch = 0  # SCAN cursor epoch: bumped by each compaction of the slots
        # The collection written last, and how many of its writes since were not measured
        # (``written``): a stream fed by XADD is measured every _HOT_EVERY writes, not at
        # each; ``settle`` measures it before anyone reads the sizes.
        self._hot: bytes | None = None
        self._hot_skips = 0
        self.keep_expired = False  # expiry paused: expired keys read as absent, stay stored
        self._reset_slots()

    def _reset_slots(self) -> None:
        self.slots: dict[bytes, int] = {}  # key -> its slot in the arrays below
        self.keys_at: list[bytes | None] = []  # slot -> key (None: free)
        self.meta = array("I")  # slot -> 24-bit LRU clock or LFU time+counter
        self.sizes = array("Q")  # slot -> estimated bytes of the key and its value
        self.kinds = array("H")  # slot -> kind << 8 | keysizes bin (NO_KIND: free)
        self.free: list[int] = []  # free slots, reused last freed first
        self.used = 0  # sum of sizes, plus EXPIRE_OVERHEAD per key with a TTL
        self.keysizes = [[0] * _BINS for _ in range(_KINDS)]  # kind -> bin -> keys
        # SCAN cursors of the epoch before the last compaction: (that epoch, its live slots)
        self._remap: tuple[int, array[int]] | None = None

    def __len__(self) -> int:
        return len(self.data)

    # -- lookup -------------------------------------------------------------------------

    def _expired(self, key: bytes) -> bool:
        when = self.expires.get(key)
        if when is not None and when <= self.clock.now_ms():
            if self.keep_expired:
                return True
            self._remove_expired(key)
            return True
        return False

    def _remove_expired(self, key: bytes) -> None:
        """Delete an expired key and tell the server (Redis's deleteExpiredKeyAndPropagate),
        timing the deletion (the value is freed here) when the server wants it."""
        if self.access.time_deletes:
            start = time.perf_counter_ns()
            self._remove(key)
            ns = time.perf_counter_ns() - start
        else:
            self._remove(key)
            ns = 0
        if self.on_expire is not None:
            self.on_expire(self, key, ns)

    def get(self, key: bytes) -> Any:
        """The live value of ``key`` or None (an expired key is deleted on the way): a read
        lookup, which touches the key (OBJECT IDLETIME, FREQ) and counts (INFO)."""
        value = self.data.get(key)
        acc = self.access
        if value is not None and not (
                self.expires and key in self.expires and self._expired(key)):
            mode = acc.mode
            if mode == TOUCH_LRU:
                self.meta[self.slots[key]] = acc.lru_clock
            elif mode == TOUCH_LFU:
                slot = self.slots[key]
                self.meta[slot] = acc.lfu_touch(self.meta[slot])
            if acc.counting:
                acc.hits += 1
            return value
        if acc.counting:
            acc.misses += 1
            if acc.on_miss is not None:
                acc.on_miss(self.id, key)
        return None

    def peek(self, key: bytes, notify: bool = True) -> Any:
        """Like ``get`` without touching the key (TYPE, EXISTS, TTL, OBJECT: Redis's
        ``LOOKUP_NOTOUCH``); ``notify=False`` fires no "keymiss" (``LOOKUP_NONOTIFY``)."""
        value = self.data.get(key)
        if value is not None and self.expires and key in self.expires and self._expired(key):
            value = None
        acc = self.access
        if acc.counting:
            if value is not None:
                acc.hits += 1
            else:
                acc.misses += 1
                if notify and acc.on_miss is not None:
                    acc.on_miss(self.id, key)
        return value

    def find(self, key: bytes) -> Any:
        """The live value, quietly: no touch, no statistics, no event (an expired key is
        still deleted). For the server's own bookkeeping and write lookups."""
        value = self.data.get(key)
        if value is not None and self.expires and key in self.expires and self._expired(key):
            return None
        return value

    def note_read(self, key: bytes, found: bool) -> None:
        """Count a read lookup a write command makes (SET ... GET, COPY's source)."""
        acc = self.access
        if found:
            acc.hits += 1
        else:
            acc.misses += 1
            if acc.on_miss is not None:
                acc.on_miss(self.id, key)

    def get_typed(self, key: bytes, cls: type) -> Any:
        """The value if it is a ``cls``, None if absent; ``WrongTypeError`` otherwise."""
        value = self.get(key)
        if value is not None and type(value) is not cls:
            raise WrongTypeError()
        return value

    def __contains__(self, key: bytes) -> bool:
        return self.find(key) is not None

    def type_of(self, key: bytes) -> bytes:
        value = self.peek(key)
        return b"none" if value is None else type_name(value)

    # -- writes -------------------------------------------------------------------------

    def add(self, key: bytes, value: Any) -> None:
        """Store a value under a key that does not exist (no TTL): ``dbAdd``, "new"."""
        self.data[key] = value
        free = self.free
        acc = self.access
        if free:
            slot = free.pop()
            self.keys_at[slot] = key
            self.meta[slot] = acc.initial()
        else:
            slot = len(self.keys_at)
            self.keys_at.append(key)
            self.meta.append(acc.initial())
            self.sizes.append(0)
            self.kinds.append(NO_KIND)
        self.slots[key] = slot
        self._measure(slot, key, value)
        if type(value) is not bytes:
            self._track_subexpires(key, value)
        if acc.on_event is not None:
            acc.on_event(self.id, b"new", key)

    def set(self, key: bytes, value: Any, keep_ttl: bool = False) -> None:
        """Store a value, replacing any (``setKey``: "overwritten", and "type_changed" for
        another type); the TTL is cleared unless ``keep_ttl``. A key whose TTL has passed
        expires first ("expired"), and the value is new ("new"), as Redis's lookupKeyWrite
        inside setKey makes it."""
        slot = self.slots.get(key)
        if slot is not None and self.expires and key in self.expires and self._expired(key):
            slot = None
        if slot is None:
            if self.expires:
                self.expires.pop(key, None)
            self.add(key, value)
            return
        old_kind = self.kinds[slot] >> 8
        # setKey's lookupKeyWrite touches the key; dbSetValue then keeps its word for the
        # new value (an overwritten key keeps its LFU counter, as on 8.6.3).
        acc = self.access
        if acc.mode == TOUCH_LRU:
            self.meta[slot] = acc.lru_clock
        elif acc.mode == TOUCH_LFU:
            self.meta[slot] = acc.lfu_touch(self.meta[slot])
        self._store(slot, key, value, keep_ttl)
        on_event = acc.on_event
        if on_event is not None:
            on_event(self.id, b"overwritten", key)
            if self.kinds[slot] >> 8 != old_kind:
                on_event(self.id, b"type_changed", key)

    def replace(self, key: bytes, value: Any) -> None:
        """A new value for a key, its TTL kept, no event (``dbReplaceValue``); INCR,
        APPEND, SETRANGE. A missing key is added ("new")."""
        slot = self.slots.get(key)
        if slot is None:
            self.add(key, value)
        else:
            self._store(slot, key, value, True)

    def _store(self, slot: int, key: bytes, value: Any, keep_ttl: bool) -> None:
        self.data[key] = value  # the access word stays: dbSetValue copies old->lru
        if not keep_ttl and self.expires and self.expires.pop(key, None) is not None:
            self.used -= EXPIRE_OVERHEAD
            self.access.used -= EXPIRE_OVERHEAD
        if self.overrides:
            self.overrides.pop(key, None)
        self._measure(slot, key, value)
        if type(value) is not bytes:
            self._track_subexpires(key, value)

    def _measure(self, slot: int, key: bytes, value: Any) -> None:
        """Account ``slot``'s value again: its size in ``used``, its kind and length bin."""
        if type(value) is bytes:
            size = KEY_OVERHEAD + _bytes_size(len(key)) + _bytes_size(len(value))
            kb = len(value).bit_length()  # kind 0: a string, binned by its length
        else:  # (every write of a collection comes here: no call that can be spared)
            cls = type(value)
            sizer = SIZERS.get(cls)
            size = KEY_OVERHEAD + _bytes_size(len(key)) + (
                sizer(value) if sizer is not None else value_size(value))
            kind = KINDS.get(cls, KIND_OTHER)
            kb = kind << 8 | (len(value) if kind != KIND_OTHER else length_of(value)).bit_length()
        sizes = self.sizes
        delta = size - sizes[slot]
        self.used += delta
        self.access.used += delta
        sizes[slot] = size
        kinds = self.kinds
        old = kinds[slot]
        if old != kb:
            hist = self.keysizes
            if old != NO_KIND:
                hist[old >> 8][old & 255] -= 1
            hist[kb >> 8][kb & 255] += 1
            kinds[slot] = kb

    def written(self, key: bytes, lrm: bool) -> None:
        """After a command changed ``key``'s value in place: measure it again, and with an
        LRM policy set its clock (``keyModified``'s ``updateLRM``). A collection written
        again and again is measured every ``_HOT_EVERY`` writes (measuring costs more than
        an XADD's own work); ``settle`` catches up before the sizes are read."""
        if not lrm:
            if key == self._hot and self._hot_skips < _HOT_EVERY:
                self._hot_skips += 1
                return
            value = self.data.get(key)
            if value is None or type(value) is bytes:
                return  # (a string's size was kept by set / replace)
            slot = self.slots[key]
        else:
            found = self.slots.get(key)
            if found is None:
                return
            slot = found
            self.meta[slot] = self.access.lru_clock
            value = self.data[key]
        if type(value) is not bytes:
            if self._hot_skips and key != self._hot:
                self.settle()
            self._hot = key
            self._hot_skips = 0
            self._measure(slot, key, value)

    def settle(self) -> None:
        """Measure the writes ``written`` left unmeasured: before ``used``, the sizes or the
        keysizes histograms are read (INFO, MEMORY, the eviction check's refresh)."""
        if self._hot_skips:
            self._hot_skips = 0
            key = self._hot
            slot = None if key is None else self.slots.get(key)
            if slot is not None:
                assert key is not None
                self._measure(slot, key, self.data[key])

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
        if self.find(key) is None:
            return False
        self._remove(key)
        return True

    def pop(self, key: bytes) -> Any:
        """Remove a live key and return its value (None if absent)."""
        value = self.find(key)
        if value is not None:
            self._remove(key)
        return value

    def remove(self, key: bytes) -> None:
        """Delete a key that is there, expired or not (eviction)."""
        self._remove(key)

    def _remove(self, key: bytes) -> None:
        del self.data[key]
        if key == self._hot:
            self._hot = None
            self._hot_skips = 0
        if self.expires and self.expires.pop(key, None) is not None:
            self.used -= EXPIRE_OVERHEAD
            self.access.used -= EXPIRE_OVERHEAD
        if self.overrides:
            self.overrides.pop(key, None)
        slot = self.slots.pop(key)
        self.keys_at[slot] = None
        size = self.sizes[slot]
        self.used -= size
        self.access.used -= size
        self.sizes[slot] = 0
        kb = self.kinds[slot]
        self.keysizes[kb >> 8][kb & 255] -= 1
        self.kinds[slot] = NO_KIND
        self.free.append(slot)
        if len(self.free) > 3 * len(self.slots) and len(self.free) > 64:
            self._compact()

    def _compact(self) -> None:
        """Drop the free slots, keeping the live ones in order (SCAN's epoch moves on)."""
        live = array("Q", (i for i, k in enumerate(self.keys_at) if k is not None))
        self._remap = (self.epoch, live)
        self.epoch = (self.epoch + 1) & 0xFFFFFF
        self.keys_at = [self.keys_at[i] for i in live]
        self.meta = array("I", (self.meta[i] for i in live))
        self.sizes = array("Q", (self.sizes[i] for i in live))
        self.kinds = array("H", (self.kinds[i] for i in live))
        self.free = []
        slots = self.slots
        for i, key in enumerate(self.keys_at):
            slots[key] = i  # type: ignore[index]  # live slots hold keys

    def flush(self) -> int:
        n = len(self.data)
        self._hot = None
        self._hot_skips = 0
        self.access.used -= self.used
        self.data = {}
        self.expires = {}
        self._heap = []
        self.overrides = {}
        self.subexpires = []
        self.epoch = (self.epoch + 1) & 0xFFFFFF
        self._reset_slots()
        return n

    def swap_contents(self, other: Database) -> None:
        """SWAPDB: exchange keys, TTLs and metadata with ``other``; ids stay where they are."""
        self.settle()
        other.settle()
        self._hot = other._hot = None
        for name in ("data", "expires", "_heap", "slots", "keys_at", "meta", "sizes", "kinds",
                     "free", "used", "keysizes", "epoch", "_remap", "overrides",
                     "subexpires"):
            mine = getattr(self, name)
            setattr(self, name, getattr(other, name))
            setattr(other, name, mine)

    def recount(self) -> None:
        """Measure every key again (after loading, whose values are reshaped in place)."""
        for key, slot in self.slots.items():
            self._measure(slot, key, self.data[key])

    # -- renames and copies ------------------------------------------------------------

    def rename(self, src: bytes, dst: bytes) -> None:
        """Move the (live) value of ``src`` to ``dst``, replacing it; the TTL moves along."""
        self.move_to(src, self, dst)

    def move_to(self, key: bytes, target: Database, new_key: bytes | None = None) -> None:
        """Move the live ``key`` into ``target`` (as ``new_key``), with its TTL; the access
        word starts afresh (Redis 8's dbAddInternal initialises it for RENAME and MOVE)."""
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

    def word(self, key: bytes) -> int:
        """The key's LRU/LFU word (the key must exist)."""
        return self.meta[self.slots[key]]

    def set_word(self, key: bytes, word: int) -> None:
        """RESTORE's IDLETIME / FREQ (``objectSetLRUOrLFU``)."""
        self.meta[self.slots[key]] = word

    def idle_seconds(self, key: bytes) -> int:
        """Seconds since the key was last accessed (OBJECT IDLETIME), from the LRU clock."""
        slot = self.slots.get(key)
        if slot is None:
            return 0
        return self.access.idle_ms(self.meta[slot]) // 1000

    def key_size(self, key: bytes) -> int:
        """The estimated bytes of a live key, its TTL included."""
        self.settle()
        size = self.sizes[self.slots[key]]
        return size + EXPIRE_OVERHEAD if key in self.expires else size

    # -- expiry -------------------------------------------------------------------------

    def set_expire(self, key: bytes, when_ms: int) -> None:
        """Give an existing key a deadline (unix ms)."""
        if key not in self.expires:
            self.used += EXPIRE_OVERHEAD
            self.access.used += EXPIRE_OVERHEAD
        self.expires[key] = when_ms
        heapq.heappush(self._heap, (when_ms, key))
        if len(self._heap) > 2 * len(self.expires) + 1024:
            self._heap = [(w, k) for k, w in self.expires.items()]
            heapq.heapify(self._heap)

    def get_expire(self, key: bytes) -> int | None:
        """The key's deadline in unix ms, None for no TTL (the key must exist)."""
        return self.expires.get(key)

    def persist(self, key: bytes) -> bool:
        if self.expires.pop(key, None) is None:
            return False
        self.used -= EXPIRE_OVERHEAD
        self.access.used -= EXPIRE_OVERHEAD
        return True

    def active_expire(self, max_keys: int = 200) -> int:
        """Delete up to ``max_keys`` keys whose deadline has passed; return how many."""
        if self.keep_expired:
            return 0
        heap, expires = self._heap, self.expires
        now = self.clock.now_ms()
        done = 0
        while heap and heap[0][0] <= now and done < max_keys:
            when, key = heapq.heappop(heap)
            if expires.get(key) == when:
                self._remove_expired(key)
                done += 1
        return done

    # -- iteration and sampling -----------------------------------------------------------

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
        """Up to ``count`` keys from ``cursor`` on; the next cursor (0 when done)."""
        epoch = cursor >> _EPOCH_SHIFT
        i = cursor & _SLOT_MASK
        if epoch != self.epoch:
            remap = self._remap
            i = bisect.bisect_left(remap[1], i) if remap is not None and remap[0] == epoch else 0
        keys_at = self.keys_at
        end = len(keys_at)
        budget = max(count * 10, 100)  # free slots looked at count too: a sparse stretch
        out: list[bytes] = []
        while i < end and len(out) < count and budget:
            key = keys_at[i]
            i += 1
            budget -= 1
            if key is not None:
                out.append(key)
        if i >= end:
            return 0, out
        return (self.epoch << _EPOCH_SHIFT) | i, out

    def random_key(self) -> bytes | None:
        """A random live key (RANDOMKEY is no access to the key)."""
        key: bytes | None = None
        for _ in range(100):
            key = self.sample_key()
            if key is None:
                return None
            if self.find(key) is not None:
                return key
        # Expiry paused and every key tried expired: as Redis's dbRandomKey, answer one of
        # them rather than nothing (the keys are still there, only logically expired).
        return key if self.keep_expired else None

    def sample_key(self) -> bytes | None:
        """A random key, expired or not (None when the database is empty)."""
        if not self.slots:
            return None
        keys_at = self.keys_at
        n = len(keys_at)
        while True:
            key = keys_at[random.randrange(n)]
            if key is not None:
                return key

    def sample_volatile(self) -> bytes | None:
        """A random key with a TTL (None when there are none)."""
        heap, expires = self._heap, self.expires
        if not expires:
            return None
        while True:
            when, key = heap[random.randrange(len(heap))]
            if expires.get(key) == when:
                return key


class Keyspace:
    """The numbered databases of one server."""

    __slots__ = ("dbs", "clock", "access")

    def __init__(self, count: int = 16, clock: Clock | None = None,
                 on_expire: ExpireHook | None = None) -> None:
        self.clock = clock or Clock()
        self.access = Access(self.clock.now_ms())  # policy, clocks and stats the dbs share
        self.dbs = [Database(i, self.clock, on_expire, self.access) for i in range(count)]

    def pause_expiry(self, paused: bool) -> None:
        """CLIENT PAUSE: while paused, no database deletes a key because it expired."""
        for db in self.dbs:
            db.keep_expired = paused

    def update_lru_clock(self) -> None:
        """Refresh the coarse access clocks (the server's cron calls this)."""
        self.access.refresh(self.clock.now_ms())

    def used(self) -> int:
        """The estimated bytes of every database's keys and values."""
        self.settle()
        return sum(db.used for db in self.dbs)

    def settle(self) -> None:
        """Every database's unmeasured writes measured (``Database.settle``)."""
        for db in self.dbs:
            if db._hot_skips:
                db.settle()

    def recount(self) -> None:
        for db in self.dbs:
            db.recount()

    def __getitem__(self, index: int) -> Database:
        return self.dbs[index]

    def __len__(self) -> int:
        return len(self.dbs)
