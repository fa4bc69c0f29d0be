"""A sorted set's keys: a score and a member as one ``bytes`` that sorts as the pair does.

A key is the score in 8 order-preserving bytes (the IEEE 754 bits, the sign bit flipped for
positive numbers and zeros, every bit complemented for negative ones, both zeros as +0),
followed by the member: ``memcmp`` order on keys is Redis's order on (score, member bytes).
``zsets.py`` keeps one key per member (see its docstring); this module makes keys and reads
them back, one at a time or a range's scores together (``decode_scores``), and adapts a
member ``render`` to keys (``member_render``, for ``RankedList``'s reply pieces).

Invariant: ``unkey(key(s, m)) == (s, m)`` for every score but NaN (never a score), with
``-0`` read back as ``0`` (the sorted set remembers its ``-0`` members itself).

Imports nothing of Sluice's but ``rankedlist``'s ``Render`` type.
"""

from __future__ import annotations

import struct
from operator import itemgetter

from .rankedlist import Render

Entry = tuple[float, bytes]

key_member = itemgetter(slice(8, None))  # a key's member, sliced in C
_D = struct.Struct(">d")
_Q = struct.Struct(">Q")
_SIGN = 1 << 63
_MASK = (1 << 64) - 1


def score_prefix(score: float) -> bytes:
    """The 8 bytes that order scores as ``<`` does (``-0`` as ``0``); not for NaN."""
    if score == 0.0:
        return b"\x80\x00\x00\x00\x00\x00\x00\x00"
    u = _Q.unpack(_D.pack(score))[0]
    return _Q.pack(u ^ _MASK if u & _SIGN else u | _SIGN)


def key(score: float, member: bytes) -> bytes:
    """A member's key: its score's order-preserving bytes, then the member."""
    return score_prefix(score) + member


def key_score(k: bytes) -> float:
    """The score a key holds (``-0`` comes back as ``0``)."""
    u = _Q.unpack_from(k)[0]
    return _D.unpack(_Q.pack(u ^ _SIGN if u & _SIGN else u ^ _MASK))[0]  # type: ignore[no-any-return]


def unkey(k: bytes) -> Entry:
    """``(score, member)`` of a key."""
    return key_score(k), k[8:]


def decode_scores(keys: list[bytes]) -> tuple[float, ...]:
    """The scores of several keys, decoded together.

    The prefixes are joined into one big integer: when all the scores have one sign (the
    first bytes say which; a range of a sorted set nearly always), one XOR undoes the
    transform of all of them (the sign bits of positive scores; every bit of negative
    ones), then one ``struct`` call reads the doubles. Mixed signs take a word at a time."""
    n = len(keys)
    raw = b"".join([k[:8] for k in keys])
    firsts = raw[::8]
    if min(firsts) >= 0x80:  # all positive (or zero): flip each sign bit back
        mask = _SIGN_BITS[n] if n < _MASKS else int.from_bytes(_SIGN_WORD * n, "big")
    elif max(firsts) < 0x80:  # all negative: complement them back
        mask = (1 << (64 * n)) - 1
    else:
        bits = struct.unpack(f">{n}Q", raw)
        return struct.unpack(f">{n}d", struct.pack(
            f">{n}Q", *[u ^ _SIGN if u & _SIGN else u ^ _MASK for u in bits]))
    return struct.unpack(f">{n}d", (int.from_bytes(raw, "big") ^ mask).to_bytes(8 * n, "big"))


_SIGN_WORD = b"\x80" + bytes(7)
_MASKS = 129  # masks kept for ranges of up to 128 scores
_SIGN_BITS = [int.from_bytes(_SIGN_WORD * n, "big") for n in range(_MASKS)]


def member_render(render: Render) -> Render:
    """``render`` (of a member) as ``ZSetValue.rendered`` takes it: of the key holding the
    member. Make it once (``rendered`` keeps pieces only while it gets the same one)."""
    return lambda k: render(k[8:])
