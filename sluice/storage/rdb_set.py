"""Sets in RDB files and DUMP payloads, as Redis 8.6 writes and reads them.

Saved in the encoding the set has (``rdbSaveObject``):

* intset -> ``RDB_TYPE_SET_INTSET`` (11): the intset blob as a string: its element width
  (u32 little-endian: 2, 4 or 8 bytes), its length (u32), then the values, ascending, little
  endian. Redis never narrows an intset's width once widened; we write the narrowest that
  holds the values (Redis reads any width).
* listpack -> ``RDB_TYPE_SET_LISTPACK`` (20): the listpack, members in their order.
* hashtable -> ``RDB_TYPE_SET`` (2): the member count, then each member as a string.

Loaded as Redis 8.6 loads them, with the settings of the load (``load_limits``): an intset
with more members than ``set-max-intset-entries`` (capped at 2^30) or a listpack with more
than ``set-max-listpack-entries`` becomes a hash table; a plain set is rebuilt member by
member as ``rdbLoadObject`` does (see ``sets.load_hashtable_set``). Empty sets, duplicate
members and malformed blobs are errors.
"""

from __future__ import annotations

import struct
from typing import Any

from . import load_limits
from .rdb_codec import RdbError, Reader, as_bytes, enc_len, enc_string, lp_decode, lp_encode
from .sets import DEFAULT_LIMITS, HASHTABLE, INTSET, INTSET_MAX, SetValue, load_hashtable_set

T_SET, T_SET_INTSET, T_SET_LISTPACK = 2, 11, 20
_WIDTHS = {2: "<h", 4: "<i", 8: "<q"}


def _intset_blob(values: Any) -> bytes:
    lo = values[0] if len(values) else 0
    hi = values[-1] if len(values) else 0
    if lo >= -(1 << 15) and hi < 1 << 15:
        width = 2
    elif lo >= -(1 << 31) and hi < 1 << 31:
        width = 4
    else:
        width = 8
    fmt = f"<{len(values)}{_WIDTHS[width][1]}"
    return struct.pack("<II", width, len(values)) + struct.pack(fmt, *values)


def save_set(s: SetValue, opts: Any) -> tuple[int, bytes]:
    if s.enc == INTSET:
        return T_SET_INTSET, enc_string(_intset_blob(s.ints), opts.compress)
    if s.enc == HASHTABLE:
        members = list(s)
        return T_SET, enc_len(len(members)) + b"".join(
            enc_string(m, opts.compress) for m in members)
    return T_SET_LISTPACK, enc_string(lp_encode(s.items or ()), opts.compress)


def _load_intset(blob: bytes) -> list[int]:
    if len(blob) < 8:
        raise RdbError("Intset integrity check failed.")
    width, length = struct.unpack_from("<II", blob)
    fmt = _WIDTHS.get(width)
    if fmt is None or len(blob) != 8 + width * length:
        raise RdbError("Intset integrity check failed.")
    values = list(struct.unpack_from(f"<{length}{fmt[1]}", blob, 8))
    if any(a >= b for a, b in zip(values, values[1:], strict=False)):
        raise RdbError("Intset integrity check failed.")
    return values


def load_set(r: Reader, rdb_type: int) -> SetValue:
    limits = load_limits.current(DEFAULT_LIMITS)
    if rdb_type == T_SET:
        count = r.len()
        if not count:
            raise RdbError("empty set in RDB")
        try:
            return load_hashtable_set((r.string() for _ in range(count)), count, limits)
        except ValueError as e:
            raise RdbError(str(e)) from None
    if rdb_type == T_SET_INTSET:
        values = _load_intset(r.string())
        if not values:
            raise RdbError("empty set in RDB")
        s = SetValue.from_ints(values)
        if len(values) > min(limits.set_max_intset_entries, INTSET_MAX):
            s._to_hashtable()
        return s
    items = [as_bytes(v) for v in lp_decode(r.string())]
    if not items:
        raise RdbError("empty set in RDB")
    if len(set(items)) != len(items):
        raise RdbError("Set listpack integrity check failed.")
    s = SetValue.from_listpack(items)
    if len(items) > limits.set_max_listpack_entries:
        s._to_hashtable()
    return s


def register(savers: dict[bytes, Any], loaders: dict[int, Any]) -> None:
    savers[b"set"] = save_set
    for t in (T_SET, T_SET_INTSET, T_SET_LISTPACK):
        loaders[t] = load_set

