"""The hash value type: fields and values, with optional per-field expiry (Redis's ``t_hash.c``).

A ``Hash`` keeps its fields in ``d``, a ``dict`` (field -> value) or, for a small listpack, a
``PackedFields`` (``hash_parts.py``: the fields in one ``bytes``, as a listpack packs them).
Redis has three encodings and ``OBJECT ENCODING`` names them; ``d`` plays each one's part:

* ``listpack``: a small hash. Redis scans a listpack in insertion order, so ``d``'s insertion
  order is the listpack's: HGETALL, HSCAN and the RDB listpack list the fields in the same
  order as redis-server (an update keeps a field's place, a deleted and re-added field goes to
  the end). Up to ``PACK_MAX_FIELDS`` fields it is packed between writes (memory: a dict of
  bytes objects costs several times Redis's listpack); larger ones are dicts whose field
  names are shared between hashes (``shared_field``).
* ``listpackex``: a listpack hash once a field expiry was set on it (it stays one). Redis
  keeps its triplets ordered by expiry time, soonest first, then the fields without one in
  insertion order; a field whose time is set is taken out and put back before the first field
  that expires at the same time or later, or has no time (``listpackExAddInternal``). The dict
  is kept in that order (O(N) per change, as the listpack's memmove; N is small).
* ``hashtable``: past ``hash-max-listpack-entries`` fields or a field or value longer than
  ``hash-max-listpack-value`` bytes (``hashTypeTryConversion``, ``hashTypeSet``). Never
  converted back while the key lives (a reload decides afresh, as Redis's loader does).

Field expiry (7.4's HFE): ``ttl`` maps a field to its deadline (unix ms) and ``heap`` holds
``(deadline, field)`` pairs, stale ones skipped when popped (as ``Database`` does for keys),
for the soonest deadline and bounded active expiry. A field is logically expired when its
deadline is *before* now (``hashTypeIsExpired``); the active cycle deletes those *at or
before* now (``listpackExExpire``, ``ebExpire``); a time set at or before now deletes the
field at once (``checkAlreadyExpired``). These rules, and the replies that depend on the
encoding (HTTL says -2 for a listpack-ex field expiring exactly now, a hashtable one not),
follow redis-server 8.6.3.

The database keeps a heap of ``(soonest field deadline, key)`` for hashes with field TTLs
(``Database.subexpires``, Redis's ``db->subexpires``); ``active_expire_fields`` runs the
active cycle over it with a field quota per call (``activeSubexpires``).

HSCAN and HRANDFIELD over a hashtable need positions that survive writes, which a dict does
not give: ``FieldOrder`` (``hash_parts.py``; built the first time either runs on the hash) is
a table of slots whose fields never move, holes refilled by new fields, compacted when holes
abound, with a cursor remap across one compaction.

Storage imports nothing of Sluice's outside ``storage``; no replies are built here. Callers
(``commands/hashes.py``) delete a key whose hash became empty: a key never holds an empty
hash.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Iterator

from .hash_parts import (
    PACK_MAX_FIELDS,
    PACK_MAX_LEN,
    SHARED_FIELD_MAX_LEN,
    SHARED_FIELDS_MAX,
    FieldOrder,
    PackedFields,
    shared_field,
)
from .keyspace import Database, register_subexpiring, register_type

__all__ = ["COND_GT", "COND_LT", "COND_NX", "COND_XX", "HASHTABLE", "LISTPACK", "LISTPACK_EX",
           "PACK_MAX_FIELDS", "PACK_MAX_LEN", "SETEX_DELETED", "SETEX_NO_CONDITION_MET",
           "SETEX_NO_FIELD", "SETEX_OK", "SHARED_FIELDS_MAX", "SHARED_FIELD_MAX_LEN",
           "FieldOrder", "Hash", "PackedFields", "active_expire_fields", "count_subexpiry",
           "shared_field", "track_field_expiry"]

LISTPACK, LISTPACK_EX, HASHTABLE = 0, 1, 2
_ENCODING_NAMES = (b"listpack", b"listpackex", b"hashtable")
LOADED_FROM_LISTPACK = 4  # ``enc`` bit: loaded from an RDB listpack (see ``refit``)

DEFAULT_MAX_ENTRIES = 512  # hash-max-listpack-entries
DEFAULT_MAX_VALUE = 64  # hash-max-listpack-value

EB_EXPIRE_TIME_MAX = (1 << 48) - 1  # ebuckets' largest deadline
HFE_MAX_ABS_TIME_MSEC = EB_EXPIRE_TIME_MAX >> 2  # the largest a command may set

# hashTypeSetEx results (HEXPIRE's per-field replies)
SETEX_NO_FIELD, SETEX_NO_CONDITION_MET, SETEX_OK, SETEX_DELETED = -2, 0, 1, 2
# HEXPIRE conditions
COND_NX, COND_XX, COND_GT, COND_LT = 1, 2, 4, 8


class Hash:
    """A Redis hash. ``d`` maps field -> value (both ``bytes``), in listpack order while the
    encoding is a listpack; ``enc`` is LISTPACK, LISTPACK_EX or HASHTABLE."""

    __slots__ = ("d", "enc", "ttl", "heap", "order")

    def __init__(self) -> None:
        # field -> value; a small listpack's fields are packed (PackedFields) between writes
        self.d: dict[bytes, bytes] | PackedFields = {}
        self.enc = LISTPACK  # OBJECT ENCODING (plus LOADED_FROM_LISTPACK until refit)
        self.ttl: dict[bytes, int] | None = None  # field -> deadline (ms); None: never had one
        self.heap: list[tuple[int, bytes]] | None = None  # (deadline, field), maybe stale
        self.order: FieldOrder | None = None  # hashtable positions, once HSCAN/HRANDFIELD ran

    def __len__(self) -> int:
        """Fields, expired ones not yet deleted included (``hashTypeLength(o, 0)``)."""
        return len(self.d)

    def __repr__(self) -> str:
        return f"Hash({self.d!r}, encoding={self.encoding().decode()}, ttl={self.ttl!r})"

    def encoding(self) -> bytes:
        return _ENCODING_NAMES[self.enc & 3]

    def copy(self) -> Hash:
        """An independent copy with the same encoding, order and field TTLs (``hashTypeDup``)."""
        dup = Hash()
        dup.d = self.d.copy()
        dup.enc = self.enc & 3
        if self.ttl is not None:
            dup.ttl = self.ttl.copy()
            dup.heap = [(w, f) for f, w in dup.ttl.items()]
            heapq.heapify(dup.heap)
        return dup

    # -- encodings --------------------------------------------------------------------------

    def try_conversion(self, argv: list[bytes], start: int, max_entries: int,
                       max_value: int) -> None:
        """Before adding the field/value pairs ``argv[start:]``: become a hashtable if there
        are more pairs than ``max_entries`` (duplicates counted, as Redis guesses) or any of
        the strings is longer than ``max_value`` (``hashTypeTryConversion``)."""
        if self.enc == HASHTABLE or len(argv) <= start:
            return
        if (len(argv) - start) // 2 > max_entries or max(map(len, argv[start:])) > max_value:
            self.convert_to_hashtable()

    def convert_to_hashtable(self) -> None:
        self.unpack()
        self.enc = HASHTABLE

    def unpack(self) -> dict[bytes, bytes]:
        """The fields as a dict, ready to change (a packed listpack unpacked)."""
        d = self.d
        if isinstance(d, PackedFields):
            d = self.d = d.to_dict()
        return d

    def as_dict(self) -> dict[bytes, bytes]:
        """The fields as a dict to read (a packed listpack decoded, and left packed)."""
        d = self.d
        return d.to_dict() if isinstance(d, PackedFields) else d

    def maybe_pack(self) -> None:
        """After a write: a listpack of at most ``PACK_MAX_FIELDS`` fields is kept packed."""
        d = self.d
        if (type(d) is dict and self.enc == LISTPACK and self.ttl is None
                and len(d) <= PACK_MAX_FIELDS):
            packed = PackedFields.pack(d)
            if packed is not None:
                self.d = packed

    def to_listpack_ex(self) -> None:
        """A listpack gets room for field TTLs (``hashTypeConvert(.., LISTPACK_EX)``); a
        hashtable its expiry metadata."""
        if self.enc == LISTPACK:
            self.unpack()
            self.enc = LISTPACK_EX
        if self.ttl is None:
            self.ttl = {}
            self.heap = []

    def refit(self, max_entries: int, max_value: int) -> None:
        """After a load (the RDB readers leave that to the caller, who knows the settings):
        the encoding Redis's loader picks. A hash read from an RDB listpack stays one unless
        it has too many fields (``LOADED_FROM_LISTPACK`` says it was, and the fields are in
        its order); one read field by field (``RDB_TYPE_HASH``, ``_METADATA``) is a listpack
        only if no string is longer than ``max_value`` either, and a listpack-ex built that
        way has its fields inserted one by one in deadline order."""
        from_listpack = bool(self.enc & LOADED_FROM_LISTPACK)
        self.enc = LISTPACK if self.ttl is None else LISTPACK_EX
        d = self.unpack()
        fits = len(d) <= max_entries and (
            from_listpack or all(len(f) <= max_value and len(v) <= max_value
                                 for f, v in d.items()))
        if not fits:
            self.enc = HASHTABLE
        elif self.ttl is None:
            self.d = {shared_field(f): v for f, v in d.items()}
            self.maybe_pack()
        elif not from_listpack:
            self._sort_listpack_ex()

    def _sort_listpack_ex(self) -> None:
        """Put the fields in the order ``listpackExAddNew`` leaves them when they are added
        one by one in the present order: by deadline, a later one of equal deadline first
        (it goes before the first field expiring at the same time or later), then the fields
        without a deadline in their order."""
        ttl = self.ttl
        assert ttl is not None
        timed = sorted(((ttl[f], -i, f) for i, f in enumerate(self.d) if f in ttl))
        items = [(f, self.d[f]) for _, _, f in timed]
        items += [(f, v) for f, v in self.d.items() if f not in ttl]
        self.d = dict(items)

    # -- fields -----------------------------------------------------------------------------

    def set(self, field: bytes, value: bytes, max_entries: int, max_value: int,
            keep_ttl: bool = False) -> bool:
        """Set a field (``hashTypeSet``); True if it is new. Converts to a hashtable when the
        strings are too long for a listpack or the hash grows past ``max_entries``. Without
        ``keep_ttl`` an existing field loses its TTL (in a listpack-ex it moves to the end,
        as Redis re-inserts it)."""
        d = self.d
        if isinstance(d, PackedFields):  # a packed listpack: spliced, or unpacked to grow
            if len(field) <= max_value and len(value) <= max_value:
                done = d.with_field(field, value)
                if done is not None and done[0].n <= max_entries:
                    self.d = done[0]
                    return done[1]
            d = self.unpack()
            new = self.set(field, value, max_entries, max_value, keep_ttl)
            self.maybe_pack()
            return new
        enc = self.enc
        if enc != HASHTABLE and (len(field) > max_value or len(value) > max_value):
            self.enc = enc = HASHTABLE
        ttl = self.ttl
        if field in d:
            if ttl is not None and not keep_ttl and field in ttl:
                del ttl[field]
                if enc == LISTPACK_EX:
                    del d[field]
            d[field] = value
            return False
        if enc != HASHTABLE:
            field = shared_field(field)
        d[field] = value
        if enc != HASHTABLE and len(d) > max_entries:
            self.enc = HASHTABLE
        if self.order is not None:  # a new field gets the next HSCAN position
            self.order.added(field)
        return True

    def delete(self, field: bytes) -> bool:
        """Remove a field (``hashTypeDelete``); True if it was there."""
        d = self.d
        if isinstance(d, PackedFields):
            rest = d.without_field(field)
            if rest is None:
                return False
            self.d = rest
            return True
        if d.pop(field, None) is None:
            return False
        ttl = self.ttl
        if ttl:
            ttl.pop(field, None)
        if self.order is not None:
            self.order.removed(field)
        return True

    def is_expired(self, field: bytes, now: int) -> bool:
        """The field's TTL is before ``now`` (``hashTypeIsExpired``); it may still be stored."""
        ttl = self.ttl
        if not ttl:
            return False
        when = ttl.get(field)
        return when is not None and when < now

    def expired_fields(self, now: int) -> list[bytes]:
        """The fields logically expired at ``now`` (not deleted)."""
        ttl = self.ttl
        if not ttl:
            return []
        return [f for f, w in ttl.items() if w < now]

    def live_items(self, now: int) -> Iterator[tuple[bytes, bytes]]:
        """Fields and values, skipping expired fields (``hashTypeNext(hi, 1)``)."""
        ttl = self.ttl
        if not ttl:
            return iter(self.d.items())
        return ((f, v) for f, v in self.d.items() if not (f in ttl and ttl[f] < now))

    def live_length(self, now: int) -> int:
        """``hashTypeLength(o, 1)``: the fields that are not logically expired."""
        ttl = self.ttl
        if not ttl:
            return len(self.d)
        return len(self.d) - sum(1 for w in ttl.values() if w < now)

    # -- field expiry ------------------------------------------------------------------------

    def expire_time(self, field: bytes) -> int | None:
        ttl = self.ttl
        return None if ttl is None else ttl.get(field)

    def has_field_ttls(self) -> bool:
        """Some field has a TTL (``hashTypeIsFieldsWithExpire``)."""
        return bool(self.ttl)

    def min_expire(self) -> int | None:
        """The soonest field deadline, or None (``hashTypeGetMinExpire(o, 1)``)."""
        ttl, heap = self.ttl, self.heap
        if not ttl or not heap:
            return None
        while heap:
            when, field = heap[0]
            if ttl.get(field) == when:
                return when
            heapq.heappop(heap)
        return None

    def _track(self, field: bytes, when: int) -> None:
        ttl, heap = self.ttl, self.heap
        assert ttl is not None and heap is not None
        ttl[field] = when
        heapq.heappush(heap, (when, field))
        if len(heap) > 2 * len(ttl) + 64:
            self.heap = [(w, f) for f, w in ttl.items()]
            heapq.heapify(self.heap)

    def _place_listpack_ex(self, field: bytes, when: int | None) -> None:
        """Move ``field`` to its listpack-ex position for deadline ``when`` (None: none)."""
        d = self.unpack()  # (a listpack-ex is never packed)
        value = d.pop(field)
        ttl = self.ttl
        assert ttl is not None
        if when is None:
            d[field] = value  # fields without a TTL go to the end
            return
        items = list(d.items())
        at = len(items)
        for i, (f, _) in enumerate(items):
            w = ttl.get(f)
            if w is None or w >= when:
                at = i
                break
        if at == len(items):
            d[field] = value
            return
        d.clear()
        d.update(items[:at])
        d[field] = value
        d.update(items[at:])

    def set_expiry(self, field: bytes, when: int | None, cond: int, now: int) -> int:
        """``hashTypeSetEx``: give ``field`` deadline ``when`` (None: persist it) if ``cond``
        (one of COND_*, or 0) allows. A deadline at or before ``now`` deletes the field
        (SETEX_DELETED; the caller logs an HDEL). Call ``to_listpack_ex`` first."""
        if field not in self.d:
            return SETEX_NO_FIELD
        ttl = self.ttl
        assert ttl is not None
        prev = ttl.get(field)
        if when is None:
            if prev is None:
                return SETEX_NO_CONDITION_MET
            self._persist(field)
            return SETEX_OK
        if prev is None:
            if cond & (COND_XX | COND_GT):  # no TTL counts as infinite: LT holds, GT not
                return SETEX_NO_CONDITION_MET
        else:
            if ((cond == COND_GT and prev >= when) or (cond == COND_LT and prev <= when)
                    or cond == COND_NX):
                return SETEX_NO_CONDITION_MET
            if prev == when and self.enc == HASHTABLE:
                return SETEX_OK  # a hashtable leaves it alone; a listpack re-inserts it
        if when <= now:
            self.delete(field)
            return SETEX_DELETED
        self._track(field, when)
        if self.enc == LISTPACK_EX:
            self._place_listpack_ex(field, when)
        return SETEX_OK

    def _persist(self, field: bytes) -> None:
        ttl = self.ttl
        assert ttl is not None
        del ttl[field]
        if self.enc == LISTPACK_EX:
            self._place_listpack_ex(field, None)

    def persist(self, field: bytes, now: int) -> int:
        """HPERSIST of one field: 1 done, -1 no TTL, -2 no such field (or already expired)."""
        if field not in self.d:
            return -2
        when = self.expire_time(field)
        if when is None:
            return -1
        if when < now:
            return -2
        self._persist(field)
        return 1

    def ttl_reply(self, field: bytes, now: int) -> int | None:
        """HTTL's view of a field: its deadline, None for no TTL, -2 for no such field (or
        expired: at or before now in a listpack-ex, before now in a hashtable)."""
        if field not in self.d:
            return -2
        when = self.expire_time(field)
        if when is None:
            return None
        if when < now or (when == now and self.enc == LISTPACK_EX):
            return -2
        return when

    def expire_fields(self, now: int, quota: int) -> list[bytes]:
        """Delete up to ``quota`` fields whose deadline is at or before ``now`` (the active
        cycle's rule), soonest first; returns them."""
        ttl, heap = self.ttl, self.heap
        out: list[bytes] = []
        if not ttl or not heap:
            return out
        d = self.unpack()  # (fields with TTLs: never packed)
        while heap and heap[0][0] <= now and len(out) < quota:
            when, field = heapq.heappop(heap)
            if ttl.get(field) == when:
                del ttl[field]
                del d[field]
                if self.order is not None:
                    self.order.removed(field)
                out.append(field)
        return out

    # -- iteration, sampling ---------------------------------------------------------------

    def field_order(self) -> FieldOrder:
        order = self.order
        if order is None:
            order = self.order = FieldOrder(self.d)
        return order

    def scan(self, cursor: int, count: int) -> tuple[int, list[bytes]]:
        """Up to ``count`` fields from ``cursor`` of a hashtable (HSCAN); the next cursor
        (0 at the end). Visits at most ten times ``count`` positions, as Redis bounds its
        buckets."""
        order = self.field_order()
        fields = order.fields
        pos = order.position(cursor)
        out: list[bytes] = []
        end = len(fields)
        budget = count * 10
        while pos < end and len(out) < count and budget:
            f = fields[pos]
            pos += 1
            budget -= 1
            if f is not None:
                out.append(f)
        return (0 if pos >= end else order.cursor(pos)), out

    def random_fields(self, count: int) -> list[bytes]:
        """``count`` fields picked at random with repetition (HRANDFIELD with a negative
        count). O(count) expected on a hashtable."""
        if self.enc != HASHTABLE:
            return random.choices(list(self.d), k=count)
        slots = self.field_order().fields
        out: list[bytes] = []
        n = len(slots)
        rnd = random.randrange
        while len(out) < count:
            f = slots[rnd(n)]
            if f is not None:
                out.append(f)
        return out

    def random_unique_fields(self, count: int) -> list[bytes]:
        """``count`` (< len) distinct fields. A listpack gives them in listpack order
        (``lpRandomPairsUnique``); a hashtable as Redis's CASE 3 (many: drop random ones from
        a copy) or CASE 4 (few: pick until enough distinct)."""
        size = len(self.d)
        if self.enc != HASHTABLE:
            chosen = sorted(random.sample(range(size), count))
            fields = list(self.d)
            return [fields[i] for i in chosen]
        if count * 3 > size:
            fields = list(self.d)
            while size > count:
                i = random.randrange(size)
                size -= 1
                fields[i] = fields[size]
            del fields[size:]
            return fields
        pool = self.field_order().fields
        seen: dict[bytes, None] = {}
        n = len(pool)
        rnd = random.randrange
        while len(seen) < count:
            f = pool[rnd(n)]
            if f is not None:
                seen[f] = None
        return list(seen)


register_type(Hash, b"hash")
register_subexpiring(Hash)


def new_hash_in(db: Database, key: bytes) -> Hash:
    h = Hash()
    db.add(key, h)
    return h


def track_field_expiry(db: Database, key: bytes, h: Hash) -> None:
    """Register the hash's soonest field deadline in the database (after setting TTLs)."""
    when = h.min_expire()
    if when is not None:
        db.track_subexpire(key, when)


def active_expire_fields(db: Database, now: int, quota: int) -> list[tuple[bytes, list[bytes], bool]]:
    """The active cycle for hash fields (``activeSubexpires``): delete fields whose deadline
    is at or before ``now``, hash by hash in deadline order, at most ``quota`` fields in all.
    Returns ``(key, fields, key_deleted)`` per hash touched; a hash left empty is deleted."""
    heap = db.subexpires
    data = db.data
    out: list[tuple[bytes, list[bytes], bool]] = []
    while heap and heap[0][0] <= now and quota > 0:
        when, key = heapq.heappop(heap)
        h = data.get(key)
        if type(h) is not Hash:
            continue
        soonest = h.min_expire()
        if soonest is None:
            continue
        if soonest > now:  # a stale entry: the hash's fields expire later now
            heapq.heappush(heap, (soonest, key))
            continue
        fields = h.expire_fields(now, quota)
        quota -= len(fields)
        deleted = False
        if not h.d:
            db.delete(key)
            deleted = True
        else:
            soonest = h.min_expire()
            if soonest is not None:
                heapq.heappush(heap, (soonest, key))
        if fields:
            out.append((key, fields, deleted))
    return out


def count_subexpiry(db: Database) -> int:
    """INFO keyspace's ``subexpiry``: the hashes with at least one field TTL."""
    data = db.data
    keys = {k for _, k in db.subexpires}
    return sum(1 for k in keys if type(data.get(k)) is Hash and data[k].has_field_ttls())
