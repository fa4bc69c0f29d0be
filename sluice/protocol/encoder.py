"""RESP2 / RESP3 reply encoder.

``encode_into(out, reply, resp3)`` appends the wire form of ``reply`` to the bytearray ``out``.
The connection keeps one output buffer per client and writes it once per batch of replies, so
encoding never allocates a separate ``bytes`` for a whole reply.

Dispatch is by exact type through a dict (``type(reply)``), which is cheaper than an
``isinstance`` chain on the hot path; subclasses of the reply types are registered explicitly.
Integers and short bulk headers come from precomputed tables.

This module imports nothing of Sluice's but ``types``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .dtoa import d2string
from .types import (
    NULL_ARRAY,
    BigNumber,
    Bool,
    Double,
    ErrorReply,
    Map,
    Push,
    Raw,
    Replies,
    Set,
    SimpleString,
    Verbatim,
    _NullArray,
)

_CRLF = b"\r\n"
_SMALL = 1024
# ``$<n>\r\n`` and ``:<n>\r\n`` for small n: most bulk headers and integer replies.
_BULK_HDR = [b"$%d\r\n" % i for i in range(_SMALL)]
_INT = [b":%d\r\n" % i for i in range(_SMALL)]
_ARR_HDR = [b"*%d\r\n" % i for i in range(_SMALL)]

_Encoder = Callable[[bytearray, Any, bool], None]


def format_double(value: float) -> bytes:
    """Format a double as Redis 7.2+ does (``d2string``: integers up to LLONG_MAX/2 as
    integers, else fpconv's Grisu2 digits; ``inf``/``-inf``/``nan``; see ``dtoa.py``)."""
    return d2string(value)


def _bulk(out: bytearray, value: bytes, resp3: bool) -> None:
    n = len(value)
    out += _BULK_HDR[n] if n < _SMALL else b"$%d\r\n" % n
    out += value
    out += _CRLF


def bulk_string(value: bytes) -> bytes:
    """The RESP bulk string of ``value`` (the same in RESP2 and RESP3): a reply piece made
    ahead of time (a sorted set keeps its members' ones, see ``storage/rankedlist.py``)."""
    n = len(value)
    return (_BULK_HDR[n] if n < _SMALL else b"$%d\r\n" % n) + value + _CRLF


def array_header(n: int) -> bytes:
    """``*<n>\r\n``: the head of an array of ``n`` pre-encoded items."""
    return _ARR_HDR[n] if n < _SMALL else b"*%d\r\n" % n


_DOUBLE_PIECES: tuple[dict[float, bytes], dict[float, bytes]] = ({}, {})  # RESP2, RESP3
_DOUBLE_PIECES_MAX = 4096


def double_pieces(values: list[float], resp3: bool) -> list[bytes]:
    """The encoding of each double in ``values``, as ``_double`` writes it (a bulk string
    in RESP2, ``,`` in RESP3): the scores of a range reply, made ahead of time. Kept in a
    bounded cache, zeros excepted: ``-0`` and ``0`` are one key there but print apart."""
    cache = _DOUBLE_PIECES[resp3]
    out: list[bytes | None] = list(map(cache.get, values))
    zeros = values.count(0.0)  # found in C (a range's scores often start at 0)
    x = -1
    for _ in range(zeros):
        x = values.index(0.0, x + 1)
        out[x] = _ZERO_PIECES[resp3][math.copysign(1.0, values[x]) < 0]
    if None in out:
        for x, value in enumerate(values):
            if out[x] is None:
                out[x] = piece = _double_piece(value, resp3)
                if value != 0.0 and value == value:
                    if len(cache) >= _DOUBLE_PIECES_MAX:
                        cache.clear()
                    cache[value] = piece
    return out  # type: ignore[return-value]


def _double_piece(value: float, resp3: bool) -> bytes:
    text = format_double(value)
    return b",%b\r\n" % text if resp3 else bulk_string(text)


_ZERO_PIECES = ((_double_piece(0.0, False), _double_piece(-0.0, False)),
                (_double_piece(0.0, True), _double_piece(-0.0, True)))


def _int(out: bytearray, value: int, resp3: bool) -> None:
    out += _INT[value] if 0 <= value < _SMALL else b":%d\r\n" % value


def _none(out: bytearray, value: None, resp3: bool) -> None:
    out += b"_\r\n" if resp3 else b"$-1\r\n"


def _null_array(out: bytearray, value: _NullArray, resp3: bool) -> None:
    out += b"_\r\n" if resp3 else b"*-1\r\n"


def _simple(out: bytearray, value: bytes, resp3: bool) -> None:
    out += b"+"
    out += value
    out += _CRLF


def _error(out: bytearray, value: bytes, resp3: bool) -> None:
    out += b"-"
    # An error must stay on one line whatever its text (Redis replaces newlines with spaces).
    out += value.replace(b"\r", b" ").replace(b"\n", b" ") if b"\n" in value or b"\r" in value else value
    out += _CRLF


def _array(out: bytearray, value: list[Any] | tuple[Any, ...], resp3: bool) -> None:
    n = len(value)
    out += _ARR_HDR[n] if n < _SMALL else b"*%d\r\n" % n
    enc = _ENCODERS
    hdr = _BULK_HDR
    for item in value:
        # Bulk strings and nested arrays are most of what arrays hold (stream entries are
        # [id, [field, value, ...]]): encode them here rather than through a call each.
        t = type(item)
        if t is bytes:
            m = len(item)
            out += hdr[m] if m < _SMALL else b"$%d\r\n" % m
            out += item
            out += _CRLF
        elif t is list:
            _array(out, item, resp3)
        else:
            enc.get(t, _fallback)(out, item, resp3)


def _map(out: bytearray, value: dict[Any, Any], resp3: bool) -> None:
    out += b"%%%d\r\n" % len(value) if resp3 else b"*%d\r\n" % (2 * len(value))
    enc = _ENCODERS
    for k, v in value.items():
        enc.get(type(k), _fallback)(out, k, resp3)
        enc.get(type(v), _fallback)(out, v, resp3)


def _set(out: bytearray, value: list[Any], resp3: bool) -> None:
    if not resp3:
        _array(out, value, resp3)
        return
    out += b"~%d\r\n" % len(value)
    for item in value:
        _ENCODERS.get(type(item), _fallback)(out, item, resp3)


def _push(out: bytearray, value: list[Any], resp3: bool) -> None:
    if not resp3:
        _array(out, value, resp3)
        return
    out += b">%d\r\n" % len(value)
    _replies(out, value, resp3)


def _replies(out: bytearray, value: list[Any], resp3: bool) -> None:
    """Each item's encoding, back to back (a push's body; several replies of one command)."""
    for item in value:
        _ENCODERS.get(type(item), _fallback)(out, item, resp3)


def _double(out: bytearray, value: float, resp3: bool) -> None:
    text = format_double(value)
    if resp3:
        out += b","
        out += text
        out += _CRLF
    else:
        _bulk(out, text, resp3)


def _bool(out: bytearray, value: int, resp3: bool) -> None:
    if resp3:
        out += b"#t\r\n" if value else b"#f\r\n"
    else:
        out += b":1\r\n" if value else b":0\r\n"


def _verbatim(out: bytearray, value: bytes, resp3: bool) -> None:
    if resp3:
        out += b"=%d\r\ntxt:" % (len(value) + 4)
        out += value
        out += _CRLF
    else:
        _bulk(out, value, resp3)


def _bignum(out: bytearray, value: bytes, resp3: bool) -> None:
    if resp3:
        out += b"("
        out += value
        out += _CRLF
    else:
        _bulk(out, value, resp3)


def _raw(out: bytearray, value: bytes, resp3: bool) -> None:
    out += value


def _fallback(out: bytearray, value: Any, resp3: bool) -> None:
    """Subclasses not registered by exact type (``bytearray``, ``bool``, ``memoryview`` ...)."""
    if isinstance(value, bool):
        _bool(out, value, resp3)
    elif isinstance(value, (bytearray, memoryview)):
        _bulk(out, bytes(value), resp3)
    elif isinstance(value, float):
        _double(out, value, resp3)
    elif isinstance(value, int):
        _int(out, value, resp3)
    elif isinstance(value, dict):
        _map(out, value, resp3)
    elif isinstance(value, (list, tuple)):
        _array(out, value, resp3)
    else:
        raise TypeError(f"not a reply type: {type(value).__name__}")


_ENCODERS: dict[type, _Encoder] = {
    bytes: _bulk,
    int: _int,
    type(None): _none,
    _NullArray: _null_array,
    list: _array,
    tuple: _array,
    SimpleString: _simple,
    ErrorReply: _error,
    Map: _map,
    dict: _map,
    Set: _set,
    Push: _push,
    Replies: _replies,
    Double: _double,
    float: _double,
    Bool: _bool,
    bool: _bool,
    Verbatim: _verbatim,
    BigNumber: _bignum,
    Raw: _raw,
}


# For the one caller per reply (``Client.add_reply``), which looks the encoder up itself to
# save a call: ``ENCODERS.get(type(reply), encode_other)(out, reply, resp3)``.
ENCODERS = _ENCODERS
encode_other = _fallback


def encode_into(out: bytearray, reply: Any, resp3: bool = False) -> None:
    """Append the RESP encoding of ``reply`` to ``out``."""
    _ENCODERS.get(type(reply), _fallback)(out, reply, resp3)


def encode(reply: Any, resp3: bool = False) -> bytes:
    """The RESP encoding of ``reply`` as bytes (tests and one-off replies)."""
    out = bytearray()
    encode_into(out, reply, resp3)
    return bytes(out)


__all__ = ["ENCODERS", "array_header", "bulk_string", "double_pieces", "encode", "encode_into",
           "encode_other", "format_double", "multibulk_size", "NULL_ARRAY"]


def multibulk_size(argv: list[bytes]) -> int:
    """The bytes ``argv`` takes as a RESP multibulk request (``*<n>`` then ``$<len>`` and the
    argument per argument, each line ending in CRLF): what Redis counts as a command's
    input bytes (``input_bytes`` in networking.c)."""
    size = len(b"*%d\r\n" % len(argv))
    for arg in argv:
        n = len(arg)
        size += n + (6 if n < 10 else 7 if n < 100 else 5 + len(str(n)))
    return size
