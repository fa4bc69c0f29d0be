"""Stream macro nodes: the Python stand-in for Redis's listpack nodes.

Role: hold a run of consecutive stream entries the way one listpack in
Redis's radix tree does, and account for its size in *listpack bytes*, so
that node boundaries (and therefore ``MAXLEN ~`` / ``MINID ~`` trimming,
which only ever drops whole nodes) fall exactly where Redis puts them.

Mirrors ``streamAppendItem`` (node layout, the "same fields" compression),
``lpEncodeGetType`` / ``lpEncodeIntegerGetType`` / ``lpEncodeBacklen`` of
``listpack.c`` (element sizes) and the master entry of ``t_stream.c``.

Invariants:
- The IDs (``ms``/``seq`` pairs) strictly increase; the first is ``master_id``.
- ``data[i] is None`` marks a tombstone (Redis's ``STREAM_ITEM_FLAG_DELETED``);
  ``live + deleted == len(data)``.
- ``lp_bytes`` is exactly ``lpBytes()`` of the listpack Redis would hold for
  the same entries (verified differentially against redis-server 7.0.15:
  node counts after every XADD / XDEL / XTRIM, with small node limits).

Imports nothing of ours.
"""

from __future__ import annotations

import struct
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Sequence

__all__ = ["Entry", "Node", "lp_int_size", "lp_str_size", "positions", "span_entries"]

Entry = tuple[int, list[bytes]]
"""A stream entry as returned to the command layer: ``(id, [f1, v1, f2, v2, ...])``."""

_MASK64 = (1 << 64) - 1
_INT64_MAX = (1 << 63) - 1
_LP_HEADER = 6  # total-bytes u32 + element-count u16
_LP_END = 1  # the 0xFF terminator

# Per-entry flag values, as in t_stream.c.
_FLAG_SAMEFIELDS = 2

_HEADERS: dict[int, struct.Struct] = {}


def _backlen(enclen: int) -> int:
    """Bytes of the back-length trailer for an element of ``enclen`` bytes."""
    if enclen <= 127:
        return 1
    if enclen < 16383:
        return 2
    if enclen < 2097151:
        return 3
    if enclen < 268435455:
        return 4
    return 5


def lp_int_size(v: int) -> int:
    """Listpack bytes of an integer element (encoding + data + backlen)."""
    if 0 <= v <= 127:
        return 2
    if -4096 <= v <= 4095:
        return 3
    if -32768 <= v <= 32767:
        return 4
    if -8388608 <= v <= 8388607:
        return 5
    if -2147483648 <= v <= 2147483647:
        return 6
    return 10


def lp_str_size(s: bytes) -> int:
    """Listpack bytes of a string element; strings that are canonical int64s become ints."""
    n = len(s)
    if 0 < n < 21:
        # lpStringToInt64: "0" or -?[1-9][0-9]* within int64.
        body = s[1:] if s[0] == 0x2D else s
        if body.isdigit() and (body[0] != 0x30 or s == b"0"):
            v = int(s)
            if -_INT64_MAX - 1 <= v <= _INT64_MAX:
                return lp_int_size(v)
    enclen = n + 1 if n < 64 else (n + 2 if n < 4096 else n + 5)
    return enclen + _backlen(enclen)


def _signed64(v: int) -> int:
    """A uint64 difference as the int64 that Redis passes to lpAppendInteger."""
    v &= _MASK64
    return v - (1 << 64) if v > _INT64_MAX else v


def _header(n: int) -> struct.Struct:
    h = _HEADERS.get(n)
    if h is None:
        h = _HEADERS[n] = struct.Struct(f"<{n}I")
    return h


# Listpack bytes of the small non-negative ints that counters take most of the time.
_SMALL_INT_SIZE = [lp_int_size(v) for v in range(4096)]


def _digits_table() -> tuple[list[bytes], list[int], list[int]]:
    """Listpack bytes of a canonical non-negative integer string, by its digit count ``n``:
    ``lo[n]`` if the string is ``<= cut[n]``, ``hi[n]`` if above (same-length digit strings
    compare as their numbers do). One cut per length is enough: no digit count spans more
    than two of the integer encodings, and 19 digits above int64 stay a string."""
    tops = (127, 4095, 32767, 8388607, 2147483647, _INT64_MAX)  # largest of each encoding
    cut, lo, hi = [b""], [0], [0]
    for n in range(1, 20):
        smallest, largest = (10 ** (n - 1) if n > 1 else 0), 10**n - 1
        top = min(largest, next(t for t in tops if t >= smallest))
        cut.append(b"%d" % top)
        lo.append(lp_int_size(smallest))
        hi.append(lp_int_size(top + 1) if top + 1 <= _INT64_MAX else n + 2)
    return cut, lo, hi


_DIGITS_CUT, _DIGITS_LO, _DIGITS_HI = _digits_table()
# lp_str_size of recently seen field names (entries whose names differ from the master
# entry's); bounded.
_STR_SIZE_CACHE: dict[bytes, int] = {}
_STR_SIZE_CACHE_MAX = 4096


def _str_size(s: bytes) -> int:
    n = _STR_SIZE_CACHE.get(s)
    if n is None:
        n = lp_str_size(s)
        if len(s) <= 32:
            if len(_STR_SIZE_CACHE) >= _STR_SIZE_CACHE_MAX:
                _STR_SIZE_CACHE.clear()
            _STR_SIZE_CACHE[s] = n
    return n


def _packed_lengths(blob: bytes, n: int) -> tuple[Sequence[int], int]:
    """The value lengths of a packed entry of ``n`` values (the layout ``Node.append`` writes)
    and where its first value starts."""
    if blob[0] == 0:
        return blob[1 : n + 1], n + 1
    return _header(n).unpack_from(blob, 1), 4 * n + 1


def positions(lo: int, hi: int, rev: bool) -> range:
    """The positions ``[lo, hi)`` in reading order: ascending, or descending if ``rev``."""
    return range(hi - 1, lo - 1, -1) if rev else range(lo, hi)


def _counter_size(v: int) -> int:
    return _SMALL_INT_SIZE[v] if v < 4096 else lp_int_size(v)


class Node:
    """One macro node (a listpack in Redis): entries sharing a master entry."""

    __slots__ = (
        "master_id",
        "master_ms",
        "master_seq",
        "master_fields",
        "master_names",
        "ms",
        "seq",
        "data",
        "live",
        "deleted",
        "body_bytes",
        "lp_bytes",
    )

    master_id: int  # ID of the first entry ever put in the node (the rax key in Redis).
    master_ms: int  # Its two halves, which every XADD's deltas are taken from.
    master_seq: int
    master_fields: tuple[bytes, ...]  # Field names of that first entry (the master entry).
    master_names: list[bytes]  # The same as a list: XADD compares its fields[0::2] with it.
    # Entry IDs, ascending, tombstones included, split in two uint64 arrays (16
    # bytes per entry instead of a 128-bit int object); within one ms the seqs
    # ascend, so bisect on ms then on seq finds an ID.
    ms: array[int]  # The ms half of each entry ID.
    seq: array[int]  # The seq half of each entry ID.
    # Per entry: None = deleted; bytes = values only, fields are master_fields
    # (a single value is stored as is; several are packed as 0x00 + one length
    # byte each + the values, or 0x01 + u32 lengths + the values when one is
    # 256 bytes or longer); tuple = the full flat field/value list of an entry
    # whose fields differ from the master entry's.
    data: list[bytes | tuple[bytes, ...] | None]
    live: int  # Entries not deleted (the master entry's "count").
    deleted: int  # Entries flagged deleted (the master entry's "deleted").
    body_bytes: int  # lpBytes() minus the two counter elements (they change size).
    lp_bytes: int  # What lpBytes() of the equivalent Redis listpack returns.

    def __init__(self, master_id: int, fields: Sequence[bytes]) -> None:
        self.master_id = master_id
        self.master_ms = master_id >> 64
        self.master_seq = master_id & _MASK64
        self.master_names = list(fields[0::2])
        self.master_fields = tuple(self.master_names)
        self.ms = array("Q")
        self.seq = array("Q")
        self.data = []
        self.live = 0
        self.deleted = 0
        # Header, the master entry (num-fields, field names, zero terminator), end byte.
        self.body_bytes = (
            _LP_HEADER
            + lp_int_size(len(self.master_fields))
            + sum(lp_str_size(f) for f in self.master_fields)
            + lp_int_size(0)
            + _LP_END
        )
        self.lp_bytes = self.body_bytes + 4

    def __len__(self) -> int:
        """Entries in the node, tombstones included."""
        return len(self.data)

    def id_at(self, i: int) -> int:
        return (self.ms[i] << 64) | self.seq[i]

    @property
    def last_id(self) -> int:
        """ID of the last entry, tombstone or not (lpGetEdgeStreamID, last)."""
        return (self.ms[-1] << 64) | self.seq[-1]

    def index_ge(self, sid: int) -> int:
        """Index of the first entry with ID >= sid (len(self) if none)."""
        ms = self.ms
        t = sid >> 64
        a = bisect_left(ms, t)
        if a == len(ms) or ms[a] != t:
            return a
        return bisect_left(self.seq, sid & _MASK64, a, bisect_right(ms, t, a))

    def index_gt(self, sid: int) -> int:
        """Index of the first entry with ID > sid (len(self) if none)."""
        ms = self.ms
        t = sid >> 64
        a = bisect_left(ms, t)
        if a == len(ms) or ms[a] != t:
            return a
        return bisect_right(self.seq, sid & _MASK64, a, bisect_right(ms, t, a))

    def append(self, sid: int, fields: list[bytes]) -> None:
        """Add an entry at the end; the caller has checked that the node has room.

        ``fields`` is a list (it is compared with ``master_names``, a list, as is).
        """
        values = fields[1::2]
        nfields = len(values)
        ems = sid >> 64
        eseq = sid & _MASK64
        dms = ems - self.master_ms
        dseq = eseq - self.master_seq
        if 0 <= dms <= 127 and 0 <= dseq <= 127:
            size = 6  # flags + ms delta + seq delta, one byte each plus backlen
        else:
            size = 2 + lp_int_size(_signed64(dms)) + lp_int_size(_signed64(dseq))
        lens = []
        for v in values:
            n = len(v)
            lens.append(n)
            if n < 20 and v.isdigit() and (v[0] != 0x30 or n == 1):
                # lpStringToInt64 succeeds (unless 19 digits over int64, _DIGITS_HI says 21)
                size += _DIGITS_LO[n] if v <= _DIGITS_CUT[n] else _DIGITS_HI[n]
            elif 0 < n < 64 and v[0] != 0x2D:
                size += n + 2  # a short string: 1 byte encoding + bytes + 1 byte backlen
            else:
                size += lp_str_size(v)  # empty, negative, 20 digits or long: the full rules
        item: bytes | tuple[bytes, ...]
        if fields[0::2] == self.master_names:
            size += _SMALL_INT_SIZE[nfields + 3] if nfields < 4000 else lp_int_size(nfields + 3)
            if nfields == 1:
                item = values[0]
            elif max(lens) < 256:  # one length byte per value
                item = b"\x00" + bytes(lens) + b"".join(values)
            else:
                item = b"\x01" + _header(nfields).pack(*lens) + b"".join(values)
        else:
            for f in fields[0::2]:
                size += _str_size(f)
            size += lp_int_size(nfields) + lp_int_size(2 * nfields + 4)
            item = tuple(fields)
        self.ms.append(ems)
        self.seq.append(eseq)
        self.data.append(item)
        live = self.live = self.live + 1
        body = self.body_bytes = self.body_bytes + size
        deleted = self.deleted
        self.lp_bytes = (
            body
            + (_SMALL_INT_SIZE[live] if live < 4096 else lp_int_size(live))
            + (_SMALL_INT_SIZE[deleted] if deleted < 4096 else lp_int_size(deleted))
        )

    def fields_at(self, i: int) -> list[bytes] | None:
        """The flat field/value list of entry ``i``, or None for a tombstone."""
        item = self.data[i]
        if item is None:
            return None
        if type(item) is tuple:
            return list(item)
        mf = self.master_fields
        n = len(mf)
        if n == 1:
            return [mf[0], item]  # type: ignore[list-item]
        blob: bytes = item  # type: ignore[assignment]
        lens, pos = _packed_lengths(blob, n)
        out: list[bytes] = []
        for f, ln in zip(mf, lens, strict=True):
            out.append(f)
            out.append(blob[pos : pos + ln])
            pos += ln
        return out

    def render(
        self,
        lo: int,
        hi: int,
        rev: bool,
        template_of: Callable[[tuple[bytes, ...]], bytes],
        out: list[bytes],
    ) -> None:
        """Append one ``bytes`` per live entry of positions ``[lo, hi)`` (backwards if rev):
        ``template_of(field_names) % (len(id), id, len(v1), v1, len(v2), v2, ...)``.

        The caller's template decides the output format (the command layer renders RESP);
        this loop only unpacks the entries, so a whole range costs one ``%`` per entry
        instead of a list per entry and a walk over it.
        """
        names = self.master_fields
        n = len(names)
        template = template_of(names)
        ms, seq, data = self.ms, self.seq, self.data
        for i in positions(lo, hi, rev):
            item = data[i]
            if item is None:
                continue
            sid = b"%d-%d" % (ms[i], seq[i])
            if type(item) is tuple:  # its own field names
                args = [len(sid), sid]
                for v in item[1::2]:
                    args += (len(v), v)
                out.append(template_of(item[0::2]) % tuple(args))
            elif n == 1:
                out.append(template % (len(sid), sid, len(item), item))
            else:
                blob: bytes = item  # type: ignore[assignment]
                lens, pos = _packed_lengths(blob, n)
                args = [len(sid), sid]
                for ln in lens:
                    end = pos + ln
                    args += (ln, blob[pos:end])
                    pos = end
                out.append(template % tuple(args))

    def mark_deleted(self, i: int) -> None:
        """Flag entry ``i`` deleted (the flag element keeps its size in a listpack)."""
        self.data[i] = None
        self.live -= 1
        self.deleted += 1
        self.lp_bytes = self.body_bytes + _counter_size(self.live) + _counter_size(self.deleted)

    def live_ids(self) -> Iterator[int]:
        """IDs of the entries that are not tombstones, ascending."""
        ms = self.ms
        seq = self.seq
        return ((ms[i] << 64) | seq[i] for i, d in enumerate(self.data) if d is not None)


def span_entries(spans: list[tuple[Node, int, int]]) -> list[Entry]:
    """The live entries of ascending ``Stream.spans`` as ``(id, fields)``."""
    return [(node.id_at(i), node.fields_at(i))  # type: ignore[misc]
            for node, lo, hi in spans for i in range(lo, hi) if node.data[i] is not None]
