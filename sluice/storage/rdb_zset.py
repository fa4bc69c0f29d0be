"""Sorted sets in RDB files and DUMP payloads, as Redis 8.6 writes and reads them.

Saved in the encoding the set has (``rdbSaveObject``):

* listpack -> ``RDB_TYPE_ZSET_LISTPACK`` (17): the listpack of member, score, member, score
  ... lowest score first. A score is stored as an integer when it is one (within LLONG_MAX/2,
  ``double2ll``), else as text. Redis writes that text with ``d2string`` (Grisu2 digits);
  we write Python's shortest round-trip digits (``repr``), which are the same digits for
  almost every double and always read back as the same double, so contents are identical
  (the bytes may differ in the layout of an exponent: ``1e-07`` for Redis's ``1e-7``).
* skiplist -> ``RDB_TYPE_ZSET_2`` (5): the member count, then from the highest score to the
  lowest, each member as a string and its score as 8 bytes of IEEE 754 little endian.

Read: those two, ``RDB_TYPE_ZSET`` (3, scores as length-prefixed text, 253/254/255 for
nan/+inf/-inf) and ``RDB_TYPE_ZSET_ZIPLIST`` (12, written before 7.0). Encodings after
loading follow Redis with the settings of the load (``load_limits``): a saved skiplist is
loaded as one and becomes a listpack if it is small enough; a saved listpack stays one unless
it has more members than ``zset-max-listpack-entries``. Empty sets, NaN scores, duplicate
members and malformed listpacks are errors.
"""

from __future__ import annotations

import math
import struct
from typing import Any

from . import load_limits
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
from .zsets import DEFAULT_LIMITS, LISTPACK, ZSetValue, load_listpack_zset, load_zset

T_ZSET, T_ZSET_2, T_ZSET_ZIPLIST, T_ZSET_LISTPACK = 3, 5, 12, 17
_LLONG_HALF = float((2**63 - 1) // 2)


def _listpack_score(score: float) -> bytes | int:
    """A score as a listpack stores it: an integer when exact, else its text."""
    if -_LLONG_HALF <= score <= _LLONG_HALF and score == int(score):
        return int(score)
    if math.isinf(score):
        return b"inf" if score > 0 else b"-inf"
    return repr(score).encode()


def save_zset(z: ZSetValue, opts: Any) -> tuple[int, bytes]:
    if z.enc == LISTPACK:
        items: list[bytes | int] = []
        for score, member in z:
            items.append(member)
            items.append(_listpack_score(score))
        return T_ZSET_LISTPACK, enc_string(lp_encode(items), opts.compress)
    out = [enc_len(len(z))]
    for score, member in reversed(list(z)):
        out.append(enc_string(member, opts.compress))
        out.append(struct.pack("<d", score))
    return T_ZSET_2, b"".join(out)


def _text_score(raw: bytes) -> float:
    try:
        score = float(raw)
    except ValueError:
        raise RdbError("Zset listpack integrity check failed.") from None
    if score != score:
        raise RdbError("Zset with NAN score detected")
    return score


def _pairs(items: list[Any]) -> list[tuple[float, bytes]]:
    if len(items) % 2:
        raise RdbError("Zset listpack integrity check failed.")
    out = []
    for i in range(0, len(items), 2):
        score = items[i + 1]
        out.append((float(score) if isinstance(score, int) else _text_score(score),
                    as_bytes(items[i])))
    return out


def _old_double(r: Reader) -> float:
    """``rdbLoadDoubleValue``: a length byte, then that much text (253 nan, 254 +inf,
    255 -inf)."""
    n = r.byte()
    if n == 255:
        return -math.inf
    if n == 254:
        return math.inf
    if n == 253:
        return math.nan
    return _text_score(r.take(n))


def load_zset_value(r: Reader, rdb_type: int) -> ZSetValue:
    limits = load_limits.current(DEFAULT_LIMITS)
    try:
        if rdb_type in (T_ZSET, T_ZSET_2):
            count = r.len()
            if not count:
                raise RdbError("empty sorted set in RDB")
            entries = []
            for _ in range(count):
                member = r.string()
                if rdb_type == T_ZSET_2:
                    score = struct.unpack("<d", r.take(8))[0]
                else:
                    score = _old_double(r)
                entries.append((score, member))
            return load_zset(entries, limits)
        blob = r.string()
        items = zl_decode(blob) if rdb_type == T_ZSET_ZIPLIST else lp_decode(blob)
        pairs = _pairs(list(items))
        if not pairs:
            raise RdbError("empty sorted set in RDB")
        return load_listpack_zset(pairs, limits)
    except ValueError as e:
        raise RdbError(str(e)) from None


def register(savers: dict[bytes, Any], loaders: dict[int, Any]) -> None:
    savers[b"zset"] = save_zset
    for t in (T_ZSET, T_ZSET_2, T_ZSET_ZIPLIST, T_ZSET_LISTPACK):
        loaders[t] = load_zset_value
