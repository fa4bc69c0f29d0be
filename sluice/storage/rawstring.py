"""A string value edited in place: what Redis holds as a raw ``sds`` while SETBIT, BITFIELD
and the HyperLogLog commands change it byte by byte.

String values are immutable ``bytes`` (``storage/strings.py``), so a write stores a new
object: fine for SET and cheap for small strings, but a SETBIT on a 1 MB bitmap would copy a
megabyte per bit. Redis edits such strings in place (``dbUnshareStringValue`` then a store
into ``o->ptr``). So the first in-place edit of a key turns its value into a ``RawString``
(one copy); later edits change ``buf`` and cost O(1) (amortised O(1) when the string grows).

Invariants:

* ``buf`` holds the value's exact bytes at every moment: nothing is deferred, so any reader
  may take ``bytes(value)`` (GET, DUMP, RDB, the AOF rewrite, SORT ...). Readers copy: a reply
  must not change when the buffer is edited later (EXEC builds its replies first).
* ``hll`` is a cache the HyperLogLog code derives from ``buf`` (decoded registers, their
  histogram, the sparse opcodes' positions). Any other writer takes the buffer through
  ``edit()``, which drops the cache; HyperLogLog code keeps the two in step itself.
* TYPE says ``string`` and OBJECT ENCODING ``raw``: Redis creates or unshares these strings
  as raw ``sds`` (``lookupStringForBitCommand``, ``createHLLObject``). A command that stores
  a whole new value (SET, APPEND, SETRANGE, INCR ...) puts ``bytes`` back.

GET and SET never see this class on their fast path: a ``type(value) is bytes`` test fails
over to the slower path, where ``bytes(value)`` is taken. Imports nothing of Sluice's outside
``storage``.
"""

from __future__ import annotations

from .keyspace import register_type


class RawString:
    """A mutable string value (see the module docstring)."""

    __slots__ = ("buf", "hll")

    def __init__(self, data: bytes | bytearray = b"") -> None:
        self.buf = bytearray(data)  # the value's bytes
        self.hll: object | None = None  # HyperLogLog cache derived from buf, or None

    def __bytes__(self) -> bytes:
        return bytes(self.buf)

    def __len__(self) -> int:
        return len(self.buf)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RawString):
            return self.buf == other.buf
        if isinstance(other, (bytes, bytearray)):
            return self.buf == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"RawString({bytes(self.buf)[:40]!r}{'...' if len(self.buf) > 40 else ''})"

    def edit(self) -> bytearray:
        """The buffer, for a writer that is not the HyperLogLog code (drops its cache)."""
        self.hll = None
        return self.buf

    def grow(self, size: int) -> int:
        """Zero-pad to at least ``size`` bytes (``sdsgrowzero``); return the bytes added."""
        added = size - len(self.buf)
        if added > 0:
            self.hll = None
            self.buf.extend(bytes(added))
            return added
        return 0

    def copy(self) -> RawString:
        """COPY: an independent duplicate (the cache is rebuilt when needed)."""
        return RawString(self.buf)

    def encoding(self) -> bytes:
        """OBJECT ENCODING."""
        return b"raw"


register_type(RawString, b"string")


def string_bytes(value: object) -> bytes | None:
    """``value`` as bytes if it is a string (``bytes`` or ``RawString``), else None."""
    if type(value) is bytes:
        return value
    if type(value) is RawString:
        return bytes(value.buf)
    return None
