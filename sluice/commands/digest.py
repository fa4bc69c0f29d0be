"""DEBUG DIGEST and DEBUG DIGEST-VALUE: a SHA-1 fingerprint of the data set, computed as
Redis computes it (debug.c ``computeDatasetDigest`` / ``xorObjectDigest``), so two servers
holding the same data, Sluice or Redis, print the same 40 hex digits.

Two ways to add a piece of data to a 20-byte digest:

* *xor*: ``digest ^= SHA1(data)``. Order does not matter, so it is used for what has no order
  (the keys of a database, a set's members, a hash's fields, a sorted set's entries: for
  all but the members, ``data`` is the element's own mixed digest);
* *mix*: ``digest = SHA1(digest ^ SHA1(data))``. Order matters (a list's elements, a
  stream's entries, the parts of one element).

A key's digest mixes the key, the type's number (4 bytes, big-endian: string 0, list 1,
set 2, zset 3, hash 4, stream 6), then the value's parts; a TTL xors in ``!!expire!!`` and
a hash field's TTL ``!!hexpire!!``. A database with keys mixes its number into the final
digest before its keys' digests are xored in; an empty data set is twenty zero bytes. Scores
are hashed as fpconv prints them (``1e+15``), stream IDs as ``<ms>.<seq>``. Keys that have
expired but are still stored count, as in Redis (the digest reads the tables, not lookups).

Cost: O(N) in the size of the data set (DIGEST) or of the values named (DIGEST-VALUE), one
SHA-1 per element, as in Redis.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable
from typing import Any

from sluice.protocol.dtoa import fpconv_dtoa
from sluice.storage.keyspace import Database, type_name

_TYPE_NUMBER = {b"string": 0, b"list": 1, b"set": 2, b"zset": 3, b"hash": 4, b"stream": 6}
_ZERO = bytes(20)


def _sha1(data: bytes) -> bytes:
    return hashlib.sha1(data, usedforsecurity=False).digest()


def _xor(a: bytes, b: bytes) -> bytes:
    return (int.from_bytes(a, "big") ^ int.from_bytes(b, "big")).to_bytes(20, "big")


def _mix(digest: bytes, data: bytes) -> bytes:
    """``mixDigest``: SHA1(digest xor SHA1(data))."""
    return _sha1(_xor(digest, _sha1(data)))


def _mix_all(digest: bytes, parts: Iterable[bytes]) -> bytes:
    for part in parts:
        digest = _mix(digest, part)
    return digest


def _xor_all(parts: Iterable[bytes]) -> bytes:
    """What ``xorDigest`` of each part adds to a digest: the xor of their SHA-1s."""
    acc = 0
    for part in parts:
        acc ^= int.from_bytes(_sha1(part), "big")
    return acc.to_bytes(20, "big")


def value_digest(db: Database, key: bytes, value: Any, digest: bytes = _ZERO) -> bytes:
    """``xorObjectDigest``: ``value`` (stored at ``key``) added to ``digest``."""
    kind = type_name(value)
    digest = _mix(digest, struct.pack(">I", _TYPE_NUMBER[kind]))
    if kind == b"string":
        digest = _mix(digest, bytes(value))
    elif kind == b"list":
        digest = _mix_all(digest, value)
    elif kind == b"set":
        digest = _xor(digest, _xor_all(value))
    elif kind == b"zset":
        digest = _xor(digest, _xor_all(_mix(_mix(_ZERO, member), fpconv_dtoa(score))
                                       for score, member in value))
    elif kind == b"hash":
        elements = []
        for field, val in value.as_dict().items():
            element = _mix(_mix(_ZERO, field), val)
            if value.expire_time(field) is not None:
                element = _xor(element, _sha1(b"!!hexpire!!"))
            elements.append(element)
        digest = _xor(digest, _xor_all(elements))
    else:  # stream: each entry's ID, then its fields and values (not its groups)
        for sid, fields in value.range(0, (1 << 128) - 1):
            digest = _mix(digest, b"%d.%d" % (sid >> 64, sid & 0xFFFFFFFFFFFFFFFF))
            digest = _mix_all(digest, fields)
    if key in db.expires:
        digest = _xor(digest, _sha1(b"!!expire!!"))
    return digest


def dataset_digest(dbs: Iterable[Database]) -> bytes:
    """``computeDatasetDigest``: every key of every database."""
    final = _ZERO
    for db in dbs:
        if not db.data:
            continue
        final = _mix(final, struct.pack(">I", db.id))
        final = _xor(final, _xor_all(value_digest(db, key, value, _mix(_ZERO, key))
                                     for key, value in db.data.items()))
    return final
