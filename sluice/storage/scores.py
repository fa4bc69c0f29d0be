"""Scores and ranges of sorted sets: parsing exactly as Redis 8.6 parses them.

Role: the pure helpers every score-taking command shares (the sorted-set family, and later
GEO and SORT): turning argument bytes into doubles and into score or lexicographic ranges,
with Redis's acceptance rules. No RESP and no errors of the command layer here: a parse that
Redis refuses returns None, and the caller picks Redis's message.

Two double parsers, because Redis has two:

* ``string2d`` (util.c), for scores, increments and weights: the whole argument must be a
  number. Decimal forms go through fast_float, hexadecimal ones (``0x1p3``) through
  ``strtod``; a leading space, trailing bytes, an overflow (``1e400``), an underflow to zero
  (``1e-400``; a subnormal result is fine) and NaN are refused; ``inf``, ``-inf``,
  ``infinity`` (any case) and a leading ``+`` are accepted.
* ``range_strtod``, for the bounds of ZRANGEBYSCORE and friends (``zslParseRange``): fast_float
  alone, stopping at the first NUL byte; what it cannot read at all counts as 0 (so an empty
  bound, or a bare ``(``, is 0), overflow gives ``inf`` and underflow 0 instead of an error,
  hexadecimal is refused, NaN is refused.

Ranges mirror ``zrangespec`` (``minex``/``maxex``: exclusive ends) and ``zlexrangespec``,
where ``-`` and ``+`` are the smallest and the greatest string, and ``[x`` / ``(x`` are
inclusive / exclusive bounds.

``zscan_score`` is the text ZSCAN gives a score of a skiplist-encoded set (``%.17Lg``);
replies that are doubles are printed by ``protocol.dtoa``.

Imports nothing of Sluice's.
"""

from __future__ import annotations

import math
import re

__all__ = ["LexRange", "ScoreRange", "parse_lex_range", "parse_score_range", "range_strtod",
           "string2d", "zscan_score"]

# fast_float's decimal grammar (general format, leading + allowed) and its inf/nan words
_DECIMAL = re.compile(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_DECIMAL_PREFIX = re.compile(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INFNAN = re.compile(rb"([+-]?)(infinity|inf|nan(?:\([0-9A-Za-z_]*\))?)", re.IGNORECASE)
_HEX = re.compile(rb"[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?")
_SPACE = b" \t\n\v\f\r"


def _nonzero_mantissa(text: bytes, hex_digits: bool) -> bool:
    """Whether the number's digits (before any exponent) are not all zero."""
    body = text.lstrip(b"+-")
    if hex_digits:
        body = body[2:].split(b"p")[0].split(b"P")[0]
        return any(c not in b"0." for c in body)
    body = body.split(b"e")[0].split(b"E")[0]
    return any(c not in b"0." for c in body)


def _decimal(text: bytes) -> float | None:
    """A complete decimal number, correctly rounded; None on overflow or underflow to 0."""
    value = float(text)
    if math.isinf(value):
        return None
    if value == 0.0 and _nonzero_mantissa(text, False):
        return None
    return value


def string2d(raw: bytes) -> float | None:
    """Redis's ``string2d``: ``raw`` as a double, or None when Redis refuses it."""
    if raw.isdigit():  # the common case, ASCII digits only: no regex
        value = float(raw)
        return None if value == math.inf else value
    if not raw or raw[0] in _SPACE:
        return None
    if _DECIMAL.fullmatch(raw):
        return _decimal(raw)
    m = _INFNAN.fullmatch(raw)
    if m is not None:
        if m.group(2)[:1].lower() == b"n":
            return None  # NaN
        return -math.inf if m.group(1) == b"-" else math.inf
    if _HEX.fullmatch(raw):  # fast_float stops at the x: strtod reads the rest
        try:
            value = float.fromhex(raw.decode("ascii"))
        except OverflowError:
            return None
        if value == 0.0 and _nonzero_mantissa(raw, True):
            return None
        return value
    return None


def range_strtod(raw: bytes) -> float | None:
    """A score range bound (after any ``(``) as ``zslParseRange`` reads it: fast_float over
    the text up to the first NUL, which must then be the end; None when Redis says
    "min or max is not a float"."""
    nul = raw.find(b"\0")
    if nul >= 0:
        raw = raw[:nul]
    if not raw:
        return 0.0  # nothing to read: fast_float leaves the value 0 and the end pointer here
    m = _DECIMAL_PREFIX.match(raw)
    if m is not None:
        if m.end() != len(raw):
            return None
        value = float(raw)  # overflow gives inf and underflow 0, as fast_float's value does
        return value
    m = _INFNAN.match(raw)
    if m is not None and m.end() == len(raw):
        if m.group(2)[:1].lower() == b"n":
            return None
        return -math.inf if m.group(1) == b"-" else math.inf
    return None


class ScoreRange:
    """``zrangespec``: scores from ``min`` to ``max``; ``minex``/``maxex`` exclude the ends."""

    __slots__ = ("min", "max", "minex", "maxex")

    def __init__(self, lo: float, hi: float, minex: bool = False, maxex: bool = False) -> None:
        self.min = lo
        self.max = hi
        self.minex = minex
        self.maxex = maxex

    def gte_min(self, value: float) -> bool:
        """``zslValueGteMin``."""
        return value > self.min if self.minex else value >= self.min

    def lte_max(self, value: float) -> bool:
        """``zslValueLteMax``."""
        return value < self.max if self.maxex else value <= self.max

    def is_empty(self) -> bool:
        """No score can be in it (``zslIsInRange``'s first test)."""
        return self.min > self.max or (self.min == self.max and (self.minex or self.maxex))

    def __repr__(self) -> str:
        return (f"ScoreRange({'(' if self.minex else '['}{self.min}, "
                f"{self.max}{')' if self.maxex else ']'})")


def _range_bound(raw: bytes) -> tuple[float, bool] | None:
    if raw[:1] == b"(":
        value = range_strtod(raw[1:])
        return None if value is None else (value, True)
    value = range_strtod(raw)
    return None if value is None else (value, False)


def parse_score_range(lo: bytes, hi: bytes) -> ScoreRange | None:
    """``zslParseRange``: None when either bound is not a float."""
    a = _range_bound(lo)
    b = _range_bound(hi)
    if a is None or b is None:
        return None
    return ScoreRange(a[0], b[0], a[1], b[1])


class _Extreme:
    """The ``-`` and ``+`` of a lex range: below / above every string."""

    __slots__ = ("sign",)

    def __init__(self, sign: int) -> None:
        self.sign = sign

    def __repr__(self) -> str:
        return "-" if self.sign < 0 else "+"


MIN_STRING = _Extreme(-1)
MAX_STRING = _Extreme(1)
LexBound = bytes | _Extreme


def _lex_cmp(a: bytes, b: LexBound) -> int:
    """``sdscmplex``: compare a member with a bound (bytewise, as memcmp)."""
    if isinstance(b, _Extreme):
        return -b.sign
    return (a > b) - (a < b)


class LexRange:
    """``zlexrangespec``: members from ``min`` to ``max`` (bytes or the extremes)."""

    __slots__ = ("min", "max", "minex", "maxex")

    def __init__(self, lo: LexBound, hi: LexBound, minex: bool, maxex: bool) -> None:
        self.min = lo
        self.max = hi
        self.minex = minex
        self.maxex = maxex

    def gte_min(self, member: bytes) -> bool:
        """``zslLexValueGteMin``."""
        c = _lex_cmp(member, self.min)
        return c > 0 if self.minex else c >= 0

    def lte_max(self, member: bytes) -> bool:
        """``zslLexValueLteMax``."""
        c = _lex_cmp(member, self.max)
        return c < 0 if self.maxex else c <= 0

    def is_empty(self) -> bool:
        """No member can be in it (``zslIsInLexRange``'s first test)."""
        lo, hi = self.min, self.max
        if isinstance(lo, _Extreme) or isinstance(hi, _Extreme):
            if lo is hi:  # both - or both +: the extremes are excluded
                return True
            return (isinstance(lo, _Extreme) and lo.sign > 0) or (
                isinstance(hi, _Extreme) and hi.sign < 0)
        if lo > hi:
            return True
        return lo == hi and (self.minex or self.maxex)

    def __repr__(self) -> str:
        return f"LexRange({self.min!r}, {self.max!r}, {self.minex}, {self.maxex})"


def _lex_item(raw: bytes) -> tuple[LexBound, bool] | None:
    """``zslParseLexRangeItem``: ``+``, ``-``, ``(x`` or ``[x``."""
    head = raw[:1]
    if head == b"+":
        return (MAX_STRING, True) if len(raw) == 1 else None
    if head == b"-":
        return (MIN_STRING, True) if len(raw) == 1 else None
    if head == b"(":
        return raw[1:], True
    if head == b"[":
        return raw[1:], False
    return None


def parse_lex_range(lo: bytes, hi: bytes) -> LexRange | None:
    """``zslParseLexRange``: None when an item is not valid."""
    a = _lex_item(lo)
    b = _lex_item(hi)
    if a is None or b is None:
        return None
    return LexRange(a[0], b[0], a[1], b[1])


def zscan_score(score: float) -> bytes:
    """A skiplist member's score in a ZSCAN reply: ``ld2string(..., LD_STR_AUTO)``, that is
    ``%.17Lg`` of the double (the same digits as ``%.17g``), ``inf``/``-inf``."""
    if math.isinf(score):
        return b"inf" if score > 0 else b"-inf"
    return b"%.17g" % score
