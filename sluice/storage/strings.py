"""String values: what Redis's t_string.c and object.c compute, as pure functions over ``bytes``.

String values are stored as immutable ``bytes``; every write stores a new object. What Redis
keeps in the object header is derived here instead:

* ``string_encoding``: ``int`` for values that ``string2l`` accepts and are at most 20 bytes,
  otherwise ``embstr`` or ``raw`` by ``embstr_or_raw``: Redis 8 embeds the key in the value's
  object, and a string (built ``embstr`` up to 44 bytes) stays embedded only when object
  header, key and value fit in one 64-byte cache line (``kvobjSet``); so the key's length
  counts. Values built in place by Redis (APPEND, SETRANGE) stay ``raw`` and INCRBYFLOAT
  results are never ``int``; a value moved to another key (RENAME, COPY, MOVE) keeps ``raw``
  and ``int`` and keeps ``embstr`` only if it still fits (``rekeyed_encoding``). The keyspace
  records the encodings its key and bytes do not tell (``Database.set_encoding``).
* ``incr_by``: 64-bit signed arithmetic with Redis's overflow check.
* INCRBYFLOAT computes in x86 ``long double`` (80-bit extended: 64-bit significand, exponent
  range +-16382) and prints with ``%.17Lf`` minus trailing zeros, as Redis's
  ``incrbyfloatCommand`` / ``ld2string(LD_STR_HUMAN)`` do. Python has no such type, so values
  are exact ``Fraction``s rounded to the nearest extended-precision number after every step
  (round half to even, as the FPU does); parsing follows glibc's ``strtold`` as Redis's
  ``string2ld`` uses it (decimal and hex forms, ``inf``/``infinity``; no NaN, no spaces,
  no overflow, no underflow to zero).

Imports nothing of Sluice's but the protocol's ``string2ll`` rule, duplicated here to keep
storage free of protocol imports.
"""

from __future__ import annotations

import re
from fractions import Fraction

LLONG_MIN, LLONG_MAX = -(1 << 63), (1 << 63) - 1
EMBSTR_SIZE_LIMIT = 44  # longest string Redis creates embedded (OBJ_ENCODING_EMBSTR_SIZE_LIMIT)
CACHE_LINE_SIZE = 64
# Bytes of an embedded key/value object besides the key and value: the object header (16),
# the key's header-size byte, sds5 header and terminator (3), the value's sds8 header and
# terminator (4).
_EMBEDDED_OVERHEAD = 16 + 3 + 4

_LL_RE = re.compile(rb"(?:0|-?[1-9][0-9]*)\Z")


def string2ll(value: bytes) -> int | None:
    """Redis's strict ``string2ll``: no spaces, no ``+``, no leading zeros, 64-bit range."""
    # The common case first: up to 18 ASCII digits (bytes.isdigit knows no others), no
    # leading zero, cannot leave the range.
    if value.isdigit() and len(value) < 19 and (value[0] != 48 or len(value) == 1):
        return int(value)
    if not value or len(value) > 20 or _LL_RE.match(value) is None:
        return None
    n = int(value)
    return n if LLONG_MIN <= n <= LLONG_MAX else None


def embstr_or_raw(key_len: int, value_len: int) -> bytes:
    """The encoding of a string Redis built ``embstr`` once stored under a ``key_len``-byte key:
    still ``embstr`` if header, key and value fit in a cache line, ``raw`` otherwise (and
    ``raw`` beyond 44 bytes, where Redis builds it raw in the first place)."""
    if value_len <= EMBSTR_SIZE_LIMIT and _EMBEDDED_OVERHEAD + key_len + value_len <= CACHE_LINE_SIZE:
        return b"embstr"
    return b"raw"


def string_encoding(value: bytes, key_len: int) -> bytes:
    """The encoding Redis gives a string it stores from a command argument (or loads) under a
    key of ``key_len`` bytes (``tryObjectEncoding``, then ``kvobjSet``)."""
    if len(value) <= 20 and string2ll(value) is not None:
        return b"int"
    return embstr_or_raw(key_len, len(value))


def rekeyed_encoding(encoding: bytes, key_len: int, value_len: int) -> bytes:
    """The encoding of a stored string after it moves to a ``key_len``-byte key (RENAME, MOVE,
    COPY): ``embstr`` is re-checked against the new key; ``raw`` and ``int`` stay."""
    if encoding == b"embstr":
        return embstr_or_raw(key_len, value_len)
    return encoding


def incr_by(value: bytes | None, delta: int) -> int:
    """The integer ``value + delta``; ValueError if ``value`` is not an integer,
    OverflowError if the result leaves the signed 64-bit range."""
    if value is None:
        current = 0
    else:
        parsed = string2ll(value)
        if parsed is None:
            raise ValueError("not an integer")
        current = parsed
    result = current + delta
    if not LLONG_MIN <= result <= LLONG_MAX:
        raise OverflowError("increment or decrement would overflow")
    return result


def setrange(value: bytes, offset: int, patch: bytes) -> bytes:
    """``value`` with ``patch`` written at ``offset``, zero-padded as needed."""
    end = offset + len(patch)
    if offset > len(value):
        return value + bytes(offset - len(value)) + patch
    return value[:offset] + patch + value[end:]


def getrange(value: bytes, start: int, end: int) -> bytes:
    """GETRANGE's slice, by Redis 8's ``getrangeCommand``: two negative indexes in the wrong
    order give nothing; otherwise negative indexes count from the end, both are clamped into
    the string (so ``0 -100`` is the first byte), and a start past the end gives nothing."""
    n = len(value)
    if start < 0 and end < 0 and start > end:
        return b""
    if start < 0:
        start = max(start + n, 0)
    if end < 0:
        end = max(end + n, 0)
    if end >= n:
        end = n - 1
    if n == 0 or start > end:
        return b""
    return value[start : end + 1]


# -- long double (x87 80-bit extended precision) -------------------------------------------

_MANT_BITS = 64  # significand bits, integer bit included
_EMIN = -16382  # exponent of the smallest normal number
_EMAX = 16383  # exponent of the largest finite number
_MAX = Fraction(((1 << _MANT_BITS) - 1) << (_EMAX - _MANT_BITS + 1))
_MAX_CHARS = 5 * 1024  # Redis's MAX_LONG_DOUBLE_CHARS: longer inputs are refused


class LongDouble:
    """An extended-precision value: exact ``value`` (already rounded), or infinity.

    ``neg`` carries the sign of zeros and infinities (``-0`` exists in IEEE arithmetic).
    """

    __slots__ = ("value", "inf", "neg")

    def __init__(self, value: Fraction, inf: bool = False, neg: bool = False) -> None:
        self.value = value
        self.inf = inf
        self.neg = neg if (inf or value == 0) else value < 0

    def __add__(self, other: LongDouble) -> LongDouble:
        if self.inf or other.inf:
            if self.inf and other.inf and self.neg != other.neg:
                raise ArithmeticError("NaN")
            return LongDouble(Fraction(0), True, self.neg if self.inf else other.neg)
        total = self.value + other.value
        if total == 0:
            # IEEE: x + (-x) is +0 under round-to-nearest; -0 + -0 stays -0.
            return LongDouble(Fraction(0), False, self.neg and other.neg and self.value == 0)
        return round_long_double(total)

    def format_human(self) -> bytes:
        """``%.17Lf`` without trailing zeros (and ``-0`` printed as ``0``), as Redis replies."""
        if self.inf:
            return b"-inf" if self.neg else b"inf"
        a = abs(self.value)
        scaled = a * 10**17
        n = round(scaled)  # Fraction rounds half to even, like glibc's printf
        whole, frac = divmod(n, 10**17)
        text = _digits(whole) + b".%017d" % frac
        text = text.rstrip(b"0").rstrip(b".")
        if self.neg:
            text = b"-" + text
        return b"0" if text == b"-0" else text


def round_long_double(x: Fraction) -> LongDouble:
    """The extended-precision number nearest to ``x`` (ties to even), or an infinity."""
    if x == 0:
        return LongDouble(Fraction(0))
    neg = x < 0
    a = -x if neg else x
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    quantum = max(e, _EMIN) - (_MANT_BITS - 1)
    m = round(a / Fraction(2) ** quantum)
    result = m * Fraction(2) ** quantum
    if result > _MAX:
        return LongDouble(Fraction(0), True, neg)
    return LongDouble(-result if neg else result)


_DEC_RE = re.compile(rb"([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?\Z")
_HEX_RE = re.compile(rb"([+-]?)0[xX]([0-9a-fA-F]*)(?:\.([0-9a-fA-F]*))?(?:[pP]([+-]?\d+))?\Z")
_INF_RE = re.compile(rb"([+-]?)(?:inf|infinity)\Z", re.IGNORECASE)


def parse_long_double(text: bytes) -> LongDouble | None:
    """Redis's ``string2ld``: None where Redis answers "value is not a valid float"."""
    if not text or len(text) >= _MAX_CHARS:
        return None
    m = _INF_RE.match(text)
    if m:
        return LongDouble(Fraction(0), True, m.group(1) == b"-")
    m = _HEX_RE.match(text)
    if m:
        sign, whole, frac, exp = m.groups()
        frac = frac or b""
        if not whole and not frac:
            return None
        mant = int((whole + frac) or b"0", 16)  # base 16: no digit-count limit
        shift = int(exp or b"0") - 4 * len(frac)
        return _scaled(sign == b"-", mant, 2, shift)
    m = _DEC_RE.match(text)
    if m is None:
        return None
    sign, whole, frac, exp = m.groups()
    frac = frac or b""
    if not whole and not frac:
        return None
    mant = _int_from_digits(whole + frac)
    shift = _exponent(exp) - len(frac)
    return _scaled(sign == b"-", mant, 10, shift)


def _exponent(text: bytes | None) -> int:
    """A decimal exponent, clamped far beyond the range where a long double is finite and
    non-zero (so a 5000-digit exponent costs nothing)."""
    if not text:
        return 0
    neg = text[:1] == b"-"
    digits = text.lstrip(b"+-").lstrip(b"0") or b"0"
    value = 10**9 if len(digits) > 9 else int(digits)
    return -value if neg else value


# Python refuses int <-> decimal str conversions over 4300 digits (a DoS guard); long doubles
# print up to 4950 digits, so both directions go by chunks.
_CHUNK = 1000


def _int_from_digits(digits: bytes) -> int:
    n = 0
    for i in range(0, len(digits), _CHUNK):
        part = digits[i : i + _CHUNK]
        n = n * 10 ** len(part) + int(part)
    return n


def _digits(n: int) -> bytes:
    if n < 10**_CHUNK:
        return b"%d" % n
    parts = []
    while n:
        n, part = divmod(n, 10**_CHUNK)
        parts.append(part)
    head = b"%d" % parts.pop()
    return head + b"".join(b"%0*d" % (_CHUNK, p) for p in reversed(parts))


def _scaled(neg: bool, mant: int, base: int, shift: int) -> LongDouble | None:
    """``mant * base**shift`` rounded; None on overflow or underflow to zero (ERANGE)."""
    if mant == 0:
        return LongDouble(Fraction(0), False, neg)
    # Magnitude guard before building huge exact numbers: log2 of the value, roughly.
    bits = mant.bit_length() + shift * (3.3219280948873626 if base == 10 else 1.0)
    if bits > _EMAX + 2:
        return None  # overflow: strtold returns HUGE_VALL with ERANGE
    if bits < _EMIN - _MANT_BITS - 2:
        return None  # underflow to zero with ERANGE
    value = Fraction(mant) * Fraction(base) ** shift
    result = round_long_double(-value if neg else value)
    if result.inf or result.value == 0:
        return None
    return result


def incr_by_float(value: bytes | None, incr: bytes) -> bytes:
    """INCRBYFLOAT's new value as Redis formats it.

    ValueError if either operand is not a valid float; ArithmeticError if the result is NaN
    or infinite.
    """
    current = LongDouble(Fraction(0)) if value is None else parse_long_double(value)
    delta = parse_long_double(incr)
    if current is None or delta is None:
        raise ValueError("not a valid float")
    total = current + delta
    if total.inf:
        raise ArithmeticError("increment would produce NaN or Infinity")
    return total.format_human()


# -- LCS ------------------------------------------------------------------------------------


def lcs_rows(a: bytes, b: bytes) -> list[int]:
    """Bit-parallel rows of the LCS table (Hyyrö's algorithm): ``LCS(i, j)`` is the number of
    zero bits among the low ``j`` bits of row ``i``. O(len(a) * len(b) / 64) word operations,
    and 1 bit per table cell instead of Redis's 32."""
    m = len(b)
    full = (1 << m) - 1
    masks: dict[int, int] = {}
    for j, c in enumerate(b):
        masks[c] = masks.get(c, 0) | (1 << j)
    v = full
    rows = [v]
    for c in a:
        u = v & masks.get(c, 0)
        v = ((v + u) | (v - u)) & full
        rows.append(v)
    return rows


def lcs_length(rows: list[int], i: int, j: int) -> int:
    """``LCS(a[:i], b[:j])`` from the rows of ``lcs_rows``."""
    return (~rows[i] & ((1 << j) - 1)).bit_count()


def lcs_walk(a: bytes, b: bytes, rows: list[int], min_match_len: int
             ) -> tuple[bytes, list[tuple[int, int, int, int]]]:
    """The LCS string and its matching ranges ``(a_start, a_end, b_start, b_end)``, walking the
    table back from the end and preferring the same moves as Redis's ``lcsCommand``, so ranges
    come out in the same order (last match first). Ranges shorter than ``min_match_len`` are
    left out (0: all)."""
    i, j = len(a), len(b)
    out = bytearray()
    ranges: list[tuple[int, int, int, int]] = []
    open_range = False
    a_start = a_end = b_start = b_end = 0
    while i > 0 and j > 0:
        emit = False
        if a[i - 1] == b[j - 1]:
            out.append(a[i - 1])
            if not open_range:
                open_range = True
                a_start = a_end = i - 1
                b_start = b_end = j - 1
            elif a_start == i and b_start == j:
                a_start -= 1
                b_start -= 1
            else:
                emit = True
            if a_start == 0 or b_start == 0:
                emit = True
            i -= 1
            j -= 1
        else:
            if lcs_length(rows, i - 1, j) > lcs_length(rows, i, j - 1):
                i -= 1
            else:
                j -= 1
            if open_range:
                emit = True
        if emit:
            if min_match_len == 0 or a_end - a_start + 1 >= min_match_len:
                ranges.append((a_start, a_end, b_start, b_end))
            open_range = False
    out.reverse()
    return bytes(out), ranges
