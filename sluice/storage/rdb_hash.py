"""Hashes in RDB files and DUMP payloads, as Redis 8.6's ``rdb.c`` writes and reads them.

Written, by encoding (``rdbSaveObjectType`` / ``rdbSaveObject``):

* listpack: ``RDB_TYPE_HASH_LISTPACK`` (16), the listpack as a string: field, value, ...
* listpack-ex: ``RDB_TYPE_HASH_LISTPACK_EX`` (25), the soonest field deadline as 8-byte
  little-endian ms (0 if none), then the listpack of triplets field, value, deadline (the
  integer 0 for a field without one), in the hash's order (by deadline).
* hashtable: ``RDB_TYPE_HASH`` (4) when no field has a TTL: the field count, then field and
  value strings; otherwise ``RDB_TYPE_HASH_METADATA`` (24): the soonest deadline (8 bytes),
  the field count, then per field its deadline as a length (0: none; else deadline - soonest
  + 1), field, value.

Read besides: ``RDB_TYPE_HASH_ZIPMAP`` (9, Redis 2.x), ``RDB_TYPE_HASH_ZIPLIST`` (13, before 7.0)
and the 7.4 release candidates' ``RDB_TYPE_HASH_METADATA_PRE_GA`` (22: absolute deadlines, no
soonest one) and ``RDB_TYPE_HASH_LISTPACK_EX_PRE_GA`` (23: no soonest deadline). Fields whose
deadline has passed are loaded, as Redis loads them, and expire afterwards.

The loaders do not know the server's ``hash-max-listpack-*`` settings, which decide the
encoding Redis gives a loaded hash: they mark what they read (``LOADED_FROM_LISTPACK``) and
whoever stores the value calls ``Hash.refit`` with the settings (see ``server/loading.py`` and
RESTORE). Duplicate fields and malformed listpacks are refused, as Redis's integrity checks do.
"""

from __future__ import annotations

import struct
from typing import Any

from .hashes import LISTPACK_EX, LOADED_FROM_LISTPACK, Hash
from .rdb_codec import (
    RdbError,
    Reader,
    as_bytes,
    enc_len,
    enc_string,
    lp_decode,
    lp_encode,
    zl_decode,
)

T_HASH, T_HASH_ZIPMAP, T_HASH_ZIPLIST, T_HASH_LISTPACK = 4, 9, 13, 16
T_HASH_METADATA_PRE_GA, T_HASH_LISTPACK_EX_PRE_GA = 22, 23
T_HASH_METADATA, T_HASH_LISTPACK_EX = 24, 25
EB_EXPIRE_TIME_MAX = (1 << 48) - 1


def save_hash(h: Hash, opts: Any) -> tuple[int, bytes]:
    compress = opts.compress
    if h.encoding() == b"listpack":
        items: list[bytes | int] = []
        for f, v in h.d.items():
            items.append(f)
            items.append(v)
        return T_HASH_LISTPACK, enc_string(lp_encode(items), compress)
    ttl = h.ttl or {}
    soonest = h.min_expire()
    if h.encoding() == b"listpackex":
        items = []
        for f, v in h.d.items():
            items.append(f)
            items.append(v)
            items.append(ttl.get(f, 0))
        return T_HASH_LISTPACK_EX, (struct.pack("<q", soonest or 0)
                                    + enc_string(lp_encode(items), compress))
    out = []
    if soonest is None:
        out.append(enc_len(len(h.d)))
        for f, v in h.d.items():
            out.append(enc_string(f, compress))
            out.append(enc_string(v, compress))
        return T_HASH, b"".join(out)
    out.append(struct.pack("<q", soonest))
    out.append(enc_len(len(h.d)))
    for f, v in h.d.items():
        when = ttl.get(f)
        out.append(enc_len(0 if when is None else when - soonest + 1))
        out.append(enc_string(f, compress))
        out.append(enc_string(v, compress))
    return T_HASH_METADATA, b"".join(out)


def _add(h: Hash, field: bytes, value: bytes, when: int) -> None:
    d = h.unpack()
    if field in d:
        raise RdbError("Duplicate hash fields detected")
    d[field] = value
    if when:
        if when > EB_EXPIRE_TIME_MAX:
            raise RdbError(f"invalid expireAt time: {when}")
        assert h.ttl is not None and h.heap is not None
        h.ttl[field] = when
        h.heap.append((when, field))


def _finish(h: Hash) -> Hash:
    if not h.d:
        raise RdbError("empty hash in RDB")
    if h.heap:
        h.heap.sort()
    return h


def _with_ttls(h: Hash) -> Hash:
    h.to_listpack_ex()
    return h


def load_hash(r: Reader, rdb_type: int) -> Hash:
    h = Hash()
    if rdb_type == T_HASH:
        for _ in range(r.len()):
            field = r.string()
            _add(h, field, r.string(), 0)
        return _finish(h)
    if rdb_type in (T_HASH_METADATA, T_HASH_METADATA_PRE_GA):
        soonest = r.ms_time() if rdb_type == T_HASH_METADATA else 0
        if soonest > EB_EXPIRE_TIME_MAX + 1:
            raise RdbError("Hash read invalid minExpire value")
        _with_ttls(h)
        for _ in range(r.len()):
            ttl = r.len()
            when = (ttl + soonest - 1 if ttl else 0) if rdb_type == T_HASH_METADATA else ttl
            field = r.string()
            _add(h, field, r.string(), when)
        return _finish(h)
    if rdb_type == T_HASH_LISTPACK_EX:
        r.ms_time()  # the soonest deadline: a hint the fields themselves repeat
    blob = r.string()
    items: list[bytes | int]
    width = 2
    if rdb_type == T_HASH_ZIPMAP:
        items = list(zipmap_decode(blob))
    elif rdb_type == T_HASH_ZIPLIST:
        items = list(zl_decode(blob))
    else:
        width = 2 if rdb_type == T_HASH_LISTPACK else 3
        items = [as_bytes(v) if i % width != 2 else v for i, v in enumerate(lp_decode(blob))]
    if len(items) % width:
        raise RdbError("Hash listpack integrity check failed.")
    if width == 3:
        _with_ttls(h)
    for i in range(0, len(items), width):
        field, value = as_bytes(items[i]), as_bytes(items[i + 1])
        when = 0
        if width == 3:
            t = items[i + 2]
            if not isinstance(t, int) or t < 0:
                raise RdbError("Hash listpack integrity check failed.")
            when = t
        _add(h, field, value, when)
    if rdb_type != T_HASH_ZIPMAP:  # a zipmap's strings are checked against the limit too
        h.enc |= LOADED_FROM_LISTPACK
    if width == 3:
        h.enc = (h.enc & ~3) | LISTPACK_EX
    return _finish(h)


def zipmap_decode(blob: bytes) -> list[bytes]:
    """Fields and values of a Redis 2.x zipmap: ``<count> (<len> field <len> <free> value
    <free bytes>)* 0xFF``; a length is one byte below 254, else 254 and 4 bytes."""
    out: list[bytes] = []
    i = 1
    try:
        while blob[i] != 0xFF:
            for is_value in (False, True):
                n = blob[i]
                i += 1
                if n == 254:
                    n = struct.unpack_from("<I", blob, i)[0]
                    i += 4
                elif n == 255:
                    raise RdbError("bad zipmap length")
                free = 0
                if is_value:
                    free = blob[i]
                    i += 1
                out.append(bytes(blob[i : i + n]))
                i += n + free
    except (IndexError, struct.error):
        raise RdbError("truncated zipmap") from None
    return out


def register(savers: dict[bytes, Any], loaders: dict[int, Any]) -> None:
    savers[b"hash"] = save_hash
    for t in (T_HASH, T_HASH_ZIPMAP, T_HASH_ZIPLIST, T_HASH_LISTPACK, T_HASH_METADATA_PRE_GA,
              T_HASH_LISTPACK_EX_PRE_GA, T_HASH_METADATA, T_HASH_LISTPACK_EX):
        loaders[t] = load_hash
