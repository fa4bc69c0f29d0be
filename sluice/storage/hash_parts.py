"""How a hash's fields are laid out: ``PackedFields`` (a small listpack in one ``bytes``),
``FieldOrder`` (stable positions over a hashtable for HSCAN and HRANDFIELD) and the table of
field names small hashes share (``shared_field``). Used by ``hashes.py``'s ``Hash``, which
decides when each applies; plain data, no Redis semantics of their own beyond the order
Redis's listpack keeps (insertion order) and SCAN's guarantees.

Imports nothing of Sluice's.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator

# Field names of small hashes, one bytes object each: hashes used as records of the same shape
# (a job's status, origin, created_at ...; a user's name, email ...) then share their field
# names instead of holding a copy each (about 40 bytes a field). Bounded: once full, new
# names are not added (a hash of unique names gains nothing and costs nothing more).
_SHARED_FIELDS: dict[bytes, bytes] = {}
SHARED_FIELDS_MAX = 4096
SHARED_FIELD_MAX_LEN = 32


def shared_field(field: bytes) -> bytes:
    """The shared copy of a small hash's field name (``field`` itself the first time)."""
    shared = _SHARED_FIELDS.get(field)
    if shared is not None:
        return shared
    if len(_SHARED_FIELDS) < SHARED_FIELDS_MAX and len(field) <= SHARED_FIELD_MAX_LEN:
        _SHARED_FIELDS[field] = field
    return field


PACK_MAX_FIELDS = 16  # a listpack hash of at most this many fields is kept packed...
PACK_MAX_LEN = 255  # ...when no field or value is longer than this
_LEN_BYTE = tuple(bytes((n,)) for n in range(PACK_MAX_LEN + 1))


class PackedFields:
    """The fields of a small listpack hash in one ``bytes``: ``<len><field><len><value>...``
    (one length byte each), in the listpack's order. A read-only mapping with the dict
    methods readers use; lookups walk the entries, O(N) for N <= ``PACK_MAX_FIELDS``, as
    Redis walks its listpack. Where a dict costs a table and two objects per field (about
    100 bytes a field, more than Redis's listpack and the key together), this is the
    strings' bytes plus two. ``Hash`` unpacks it into a dict to change it
    (``Hash.unpack``) and packs it again after a write (``Hash.maybe_pack``)."""

    __slots__ = ("blob", "n")

    def __init__(self, blob: bytes, n: int) -> None:
        self.blob = blob  # the entries
        self.n = n  # how many fields

    @staticmethod
    def pack(d: dict[bytes, bytes]) -> PackedFields | None:
        """``d`` packed, or None if a string is too long for one length byte."""
        lb = _LEN_BYTE
        try:
            blob = b"".join([x for f, v in d.items() for x in (lb[len(f)], f, lb[len(v)], v)])
        except IndexError:  # a string longer than PACK_MAX_LEN
            return None
        return PackedFields(blob, len(d))

    def _find(self, field: bytes) -> int:
        """The offset of ``field``'s entry, or -1."""
        b = self.blob
        end = len(b)
        want = len(field)
        i = 0
        while i < end:
            fl = b[i]
            j = i + 1 + fl
            if fl == want and b[i + 1 : j] == field:
                return i
            i = j + 1 + b[j]
        return -1

    def with_field(self, field: bytes, value: bytes) -> tuple[PackedFields, bool] | None:
        """A copy with ``field`` set (spliced in place, or appended when new) and whether it
        is new; None when it would not fit (a string too long, too many fields)."""
        if len(field) > PACK_MAX_LEN or len(value) > PACK_MAX_LEN:
            return None
        b = self.blob
        at = self._find(field)
        entry = _LEN_BYTE[len(field)] + field + _LEN_BYTE[len(value)] + value
        if at < 0:
            if self.n >= PACK_MAX_FIELDS:
                return None
            return PackedFields(b + entry, self.n + 1), True
        j = at + 1 + b[at]
        end = j + 1 + b[j]
        return PackedFields(b[:at] + entry + b[end:], self.n), False

    def without_field(self, field: bytes) -> PackedFields | None:
        """A copy without ``field``, or None when it is not there."""
        b = self.blob
        at = self._find(field)
        if at < 0:
            return None
        j = at + 1 + b[at]
        end = j + 1 + b[j]
        return PackedFields(b[:at] + b[end:], self.n - 1)

    def to_dict(self, out: dict[bytes, bytes] | None = None) -> dict[bytes, bytes]:
        """The fields in a dict (into ``out`` when given: a reply's Map)."""
        b = self.blob
        end = len(b)
        if out is None:
            out = {}
        i = 0
        while i < end:
            j = i + 1 + b[i]
            k = j + 1 + b[j]
            out[b[i + 1 : j]] = b[j + 1 : k]
            i = k
        return out

    def __len__(self) -> int:
        return self.n

    def get(self, field: bytes, default: bytes | None = None) -> bytes | None:
        b = self.blob
        end = len(b)
        want = len(field)
        i = 0
        while i < end:
            fl = b[i]
            j = i + 1 + fl
            vl = b[j]
            if fl == want and b[i + 1 : j] == field:
                return b[j + 1 : j + 1 + vl]
            i = j + 1 + vl
        return default

    def __contains__(self, field: object) -> bool:
        return isinstance(field, bytes) and self.get(field) is not None

    def __getitem__(self, field: bytes) -> bytes:
        value = self.get(field)
        if value is None:
            raise KeyError(field)
        return value

    def items(self) -> Iterator[tuple[bytes, bytes]]:
        b = self.blob
        end = len(b)
        i = 0
        while i < end:
            j = i + 1 + b[i]
            vl = b[j]
            yield b[i + 1 : j], b[j + 1 : j + 1 + vl]
            i = j + 1 + vl

    def __iter__(self) -> Iterator[bytes]:
        return (f for f, _ in self.items())

    def keys(self) -> Iterator[bytes]:
        return iter(self)

    def values(self) -> Iterator[bytes]:
        return (v for _, v in self.items())

    def copy(self) -> PackedFields:
        return PackedFields(self.blob, self.n)  # bytes are immutable: shared

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PackedFields):
            return self.blob == other.blob
        if isinstance(other, dict):
            return dict(self.items()) == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PackedFields({dict(self.items())!r})"


class FieldOrder:
    """Stable positions over a hashtable's fields, for HSCAN cursors and HRANDFIELD picks.

    ``fields`` is a table of slots, ``pos`` maps a field to its slot. A deleted field leaves
    a hole (None) that the next new field fills (``free``), so positions of other fields
    never move and the table is no longer than the most fields the hash has held at once:
    like Redis's buckets, it bounds how many calls a whole HSCAN takes even while fields
    keep coming. A cursor is a position: a field there for the whole HSCAN is returned
    exactly once; one added meanwhile may or may not be, and one deleted and added again may
    come twice (SCAN allows both). When holes outnumber fields the table is rebuilt; the
    generation number counts rebuilds, and ``survivors`` remembers the old positions the
    last rebuild kept, so a cursor of the previous generation maps to the first kept field
    at or after it. A cursor older than that starts again from the beginning (fields may
    come twice, none is lost).

    HRANDFIELD picks random slots and retries holes: O(1) expected, at least half the slots
    hold a field. The structure costs a dict entry and a slot per field, so a hash only gets
    one when HSCAN or HRANDFIELD first runs on it as a hashtable.
    """

    __slots__ = ("fields", "pos", "free", "gen", "survivors")

    GEN_BITS = 16  # a cursor is ``position << GEN_BITS | generation``
    _GEN_MASK = (1 << GEN_BITS) - 1

    def __init__(self, fields: Iterable[bytes]) -> None:
        self.fields: list[bytes | None] = list(fields)
        self.pos: dict[bytes, int] = {f: i for i, f in enumerate(self.fields) if f is not None}
        self.free: list[int] = []  # the holes, refilled last-made first
        self.gen = 0
        self.survivors: array[int] | None = None  # old positions the last rebuild kept

    def added(self, field: bytes) -> None:
        if self.free:
            i = self.free.pop()
            self.fields[i] = field
        else:
            i = len(self.fields)
            self.fields.append(field)
        self.pos[field] = i

    def removed(self, field: bytes) -> None:
        i = self.pos.pop(field, None)
        if i is not None:
            self.fields[i] = None
            self.free.append(i)
            if len(self.free) > len(self.pos) + 16:
                self.compact()

    def compact(self) -> None:
        kept = array("q")
        fields: list[bytes | None] = []
        for i, f in enumerate(self.fields):
            if f is not None:
                kept.append(i)
                fields.append(f)
        self.fields = fields
        self.pos = {f: i for i, f in enumerate(fields) if f is not None}
        self.free = []
        self.survivors = kept
        self.gen = (self.gen + 1) & self._GEN_MASK

    def position(self, cursor: int) -> int:
        """Where a cursor resumes in the current table."""
        pos, gen = cursor >> self.GEN_BITS, cursor & self._GEN_MASK
        if gen == self.gen:
            return pos
        if self.survivors is not None and gen == (self.gen - 1) & self._GEN_MASK:
            return bisect_left(self.survivors, pos)
        return 0

    def cursor(self, pos: int) -> int:
        return (pos << self.GEN_BITS) | self.gen
