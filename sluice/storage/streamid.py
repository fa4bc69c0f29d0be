"""Stream entry IDs: parsing, formatting and arithmetic.

Role: the one place that turns the textual ``<ms>-<seq>`` IDs of the stream
commands into numbers and back. Mirrors ``streamID``, ``streamIncrID``,
``streamDecrID``, ``streamGenericParseIDOrReply`` and
``streamParseIntervalIDOrReply`` of Redis's ``stream.h`` / ``t_stream.c``.

Invariants:
- An ID is one non-negative int ``(ms << 64) | seq`` with both halves in
  ``[0, 2**64 - 1]``, so plain int comparison is stream order and IDs can be
  bisected and used as sorted-dict keys directly.
- Parsing accepts exactly what Redis accepts. Redis parses each half with
  ``string2ull``: a strict decimal parse first, and when that fails (values
  above 2**63 - 1, leading zeros, a sign, leading white space) glibc's
  ``strtoull``, which skips leading white space, takes an optional sign and
  negates modulo 2**64 for ``-``. So ``01-1``, ``+1``, ``" 1"`` and even
  ``1--18446744073709551615`` (= ``1-1``) are valid IDs on a real server,
  while ``-1``, ``1 `` and ``1--1`` are not. Checked against redis-server
  7.0.15 (see tests/unit/storage/test_streamid.py).

Imports only the stream errors.
"""

from __future__ import annotations

from sluice.storage.stream_errors import InvalidStreamID, StreamError

__all__ = [
    "MAX_ID",
    "MAX_PART",
    "MIN_ID",
    "InvalidStreamID",
    "StreamError",
    "decr_id",
    "format_id",
    "incr_id",
    "make_id",
    "parse_id",
    "parse_range_bound",
    "parse_strict_id",
    "parse_xadd_id",
    "split_id",
]

MAX_PART = (1 << 64) - 1
"""Largest value of either half of an ID."""
MIN_ID = 0
"""``0-0``, also what ``-`` means."""
MAX_ID = (1 << 128) - 1
"""``18446744073709551615-18446744073709551615``, also what ``+`` means."""

_INT64_MAX = (1 << 63) - 1
_C_SPACE = b" \t\n\v\f\r"
_DIGITS = b"0123456789"
# Redis copies the argument into a 128-byte buffer first and rejects longer ones.
_MAX_ID_ARG_LEN = 127


def make_id(ms: int, seq: int) -> int:
    """Pack ``ms-seq`` into the single-int representation."""
    return (ms << 64) | seq


def split_id(sid: int) -> tuple[int, int]:
    """Unpack an ID into ``(ms, seq)``."""
    return sid >> 64, sid & MAX_PART


def format_id(sid: int) -> bytes:
    """Render an ID as Redis does: ``b"<ms>-<seq>"``."""
    return b"%d-%d" % (sid >> 64, sid & MAX_PART)


def incr_id(sid: int) -> int | None:
    """Successor of ``sid``, or None when ``sid`` is the largest ID (streamIncrID's C_ERR)."""
    return None if sid == MAX_ID else sid + 1


def decr_id(sid: int) -> int | None:
    """Predecessor of ``sid``, or None when ``sid`` is ``0-0`` (streamDecrID's C_ERR)."""
    return None if sid == 0 else sid - 1


def _string2ll_ok(s: bytes) -> int | None:
    """Redis's strict ``string2ll``: ``0`` or ``-?[1-9][0-9]*`` fitting in int64."""
    n = len(s)
    if n == 0 or n >= 21:
        return None
    if s == b"0":
        return 0
    body = s[1:] if s[0] == 0x2D else s  # '-'
    if not body or not body.isdigit() or body[0] == 0x30:  # no leading '0'
        return None
    v = int(body)
    if s[0] == 0x2D:
        v = -v
        if v < -_INT64_MAX - 1:
            return None
    elif v > _INT64_MAX:
        return None
    return v


def _string2ull(s: bytes) -> int | None:
    """Redis's ``string2ull``: strict parse, else glibc ``strtoull(s, &end, 10)`` semantics."""
    v = _string2ll_ok(s)
    if v is not None:
        return None if v < 0 else v
    # strtoull fallback: leading C white space, optional sign, at least one digit,
    # nothing after the digits, no overflow past 2**64-1; '-' negates modulo 2**64.
    i = 0
    n = len(s)
    while i < n and s[i] in _C_SPACE:
        i += 1
    neg = False
    if i < n and s[i] in b"+-":
        neg = s[i] == 0x2D
        i += 1
    digits = s[i:]
    if not digits or not digits.isdigit():
        return None
    v = int(digits)
    if v > MAX_PART:
        return None  # ERANGE
    return ((1 << 64) - v) & MAX_PART if neg else v


def _c_string(arg: bytes) -> bytes | None:
    """The C string Redis sees: too long arguments fail, an embedded NUL ends it."""
    if len(arg) > _MAX_ID_ARG_LEN:
        return None
    nul = arg.find(b"\x00")
    return arg if nul < 0 else arg[:nul]


def _parse(arg: bytes, missing_seq: int, strict: bool, allow_seq_star: bool) -> tuple[int, bool]:
    """Shared body of the parsers: returns ``(id, seq_given)``; raises InvalidStreamID."""
    buf = _c_string(arg)
    if buf is None:
        raise InvalidStreamID()
    if buf == b"-" or buf == b"+":
        if strict:
            raise InvalidStreamID()
        return (MIN_ID if buf == b"-" else MAX_ID), True
    dash = buf.find(b"-")
    ms = _string2ull(buf if dash < 0 else buf[:dash])
    if ms is None:
        raise InvalidStreamID()
    if dash < 0:
        return (ms << 64) | missing_seq, True
    tail = buf[dash + 1 :]
    if allow_seq_star and tail == b"*":
        return ms << 64, False
    seq = _string2ull(tail)
    if seq is None:
        raise InvalidStreamID()
    return (ms << 64) | seq, True


def _plain(arg: bytes) -> int | None:
    """``<digits>-<digits>``, the form clients send back, or None for anything else.

    For ASCII digits alone both of Redis's parses agree (string2ll, and strtoull where that
    fails: leading zeros, above 2**63 - 1), so the value is ``int``'s; signs, white space,
    NULs, overflow and over-long arguments are left to ``_parse``.
    """
    dash = arg.find(b"-")
    if dash > 0 and len(arg) <= _MAX_ID_ARG_LEN:
        ms, seq = arg[:dash], arg[dash + 1 :]
        if ms.isdigit() and seq.isdigit():  # bytes.isdigit: ASCII digits, not empty
            ms_v, seq_v = int(ms), int(seq)
            if ms_v <= MAX_PART and seq_v <= MAX_PART:
                return (ms_v << 64) | seq_v
    return None


def parse_id(arg: bytes, missing_seq: int = 0) -> int:
    """Parse an ID where ``-`` and ``+`` are allowed (streamParseIDOrReply).

    ``missing_seq`` is the sequence used for a bare ``<ms>``: 0 for range
    starts, ``MAX_PART`` for range ends.
    """
    sid = _plain(arg)
    if sid is not None:
        return sid
    return _parse(arg, missing_seq, strict=False, allow_seq_star=False)[0]


def parse_strict_id(arg: bytes, missing_seq: int = 0) -> int:
    """Parse an ID where ``-`` and ``+`` are invalid (streamParseStrictIDOrReply)."""
    sid = _plain(arg)
    if sid is not None:
        return sid
    return _parse(arg, missing_seq, strict=True, allow_seq_star=False)[0]


def parse_xadd_id(arg: bytes) -> tuple[int, bool] | None:
    """Parse the ID argument of XADD.

    Returns None for ``*`` (fully automatic), ``(ms << 64, False)`` for
    ``<ms>-*`` (automatic sequence) and ``(id, True)`` for an explicit ID.
    The result is what :meth:`Stream.append` takes as ``id_spec``.
    """
    if arg == b"*":
        return None
    return _parse(arg, 0, strict=True, allow_seq_star=True)


def parse_range_bound(arg: bytes, missing_seq: int) -> tuple[int, bool]:
    """Parse an interval bound that may be exclusive, ``(<id>``.

    Returns ``(id, exclusive)``. An exclusive bound is parsed strictly (so
    ``(-`` and ``(+`` are invalid) and a lone ``(`` is parsed as an ordinary
    ID (and so rejected), as streamParseIntervalIDOrReply does. Callers turn
    an exclusive start into ``incr_id`` and an exclusive end into ``decr_id``
    and report ``ERR invalid start/end ID for the interval`` on None.
    """
    if len(arg) > 1 and arg[0] == 0x28:  # '('
        return _parse(arg[1:], missing_seq, strict=True, allow_seq_star=False)[0], True
    return _parse(arg, missing_seq, strict=False, allow_seq_star=False)[0], False
