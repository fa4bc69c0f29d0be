"""Doubles as Redis prints them: ``d2string`` (util.c) over Grisu2 (``deps/fpconv``).

Role: the text of every double reply (``Double``: ZSCORE, ZINCRBY, ZRANGE ... WITHSCORES, a
RESP3 ``,`` double) and of a score stored as text. Redis 7.2+ prints:

* ``nan``, ``inf``, ``-inf``; ``0`` and ``-0`` for the zeros;
* a whole number whose magnitude is at most ``LLONG_MAX / 2`` (about 4.6e18) as an integer
  (``double2ll``), so ``1e18`` prints ``1000000000000000000``;
* anything else as ``fpconv_dtoa`` does: the digits of the Grisu2 algorithm (Loitsch, 2010:
  64-bit "do-it-yourself" floating point, cached powers of ten every 8 decades), laid out as
  an integer with trailing zeros when the decimal exponent is below the digit count plus 7,
  as a plain decimal when the exponent is small (``0.00001``, not ``1e-05``), and otherwise
  in scientific notation with an unpadded exponent (``1e-7``, ``5e+18``, ``1.5e+300``).

Grisu2 gives the shortest round-trip digits for almost every double, but not for all: for a
few it gives one digit more than Python's ``repr``. The digits are computed here exactly as
fpconv computes them (its 64-bit arithmetic, wrap-around included), so every double prints
byte for byte as redis-server prints it. Results are memoised in a small table: scores
repeat, and the pure-Python digit loop costs a few microseconds.

Invariant: ``float(d2string(x)) == x`` for every finite ``x`` (the digits round-trip).
This module imports nothing of Sluice's.
"""

from __future__ import annotations

import math
import struct

__all__ = ["d2string", "double2ll", "fpconv_dtoa", "grisu2"]

_M64 = (1 << 64) - 1
_LO32 = (1 << 32) - 1
_HIDDEN = 1 << 52
_EXPBIAS = 1023 + 52
_LLONG_HALF = float((2**63 - 1) // 2)  # Redis's (double)(LLONG_MAX/2)

# Cached powers of ten: 10^k for k = -348, -340, ..., 340, as (64-bit mantissa, binary
# exponent) with the mantissa's top bit set, rounded to nearest (the table every Grisu
# implementation carries; computed here rather than spelled out).
_FIRST_POWER, _STEP_POWERS, _NPOWERS = -348, 8, 87
_EXP_MIN, _EXP_MAX = -60, -32
_ONE_LOG_TEN = 0.30102999566398114


def _cached_power(k: int) -> tuple[int, int]:
    """10^k as (f, e) with 2^63 <= f < 2^64 and f * 2^e the nearest such value."""
    if k >= 0:
        num, den = 10**k, 1
    else:
        num, den = 1, 10**-k
    # e such that 2^63 <= num / den / 2^e < 2^64
    e = num.bit_length() - den.bit_length() - 64
    while True:
        if e >= 0:
            q, r, d = divmod(num, den << e) + (den << e,)
        else:
            q, r, d = divmod(num << -e, den) + (den,)
        if q >= 1 << 64:
            e += 1
            continue
        if q < 1 << 63:
            e -= 1
            continue
        break
    if 2 * r >= d:  # round half up (no power of ten is exactly halfway)
        q += 1
        if q == 1 << 64:
            q >>= 1
            e += 1
    return q, e


_POWERS = [_cached_power(_FIRST_POWER + i * _STEP_POWERS) for i in range(_NPOWERS)]
# tens[i] = 10^(19 - i), as fpconv indexes them
_TENS = [10 ** (19 - i) for i in range(20)]


def _find_cached_pow10(exp: int) -> tuple[int, int, int]:
    """The cached power that brings a number with binary exponent ``exp`` into range:
    (mantissa, binary exponent, decimal exponent k)."""
    approx = int(-(exp + _NPOWERS) * _ONE_LOG_TEN)  # C truncates toward zero
    idx = int((approx - _FIRST_POWER) / _STEP_POWERS)
    while True:
        current = exp + _POWERS[idx][1] + 64
        if current < _EXP_MIN:
            idx += 1
            continue
        if current > _EXP_MAX:
            idx -= 1
            continue
        f, e = _POWERS[idx]
        return f, e, _FIRST_POWER + idx * _STEP_POWERS


def _multiply(af: int, ae: int, bf: int, be: int) -> tuple[int, int]:
    """The rounded high 64 bits of a 64x64-bit product (fpconv's ``multiply``)."""
    ah, al = af >> 32, af & _LO32
    bh, bl = bf >> 32, bf & _LO32
    ah_bl = ah * bl
    al_bh = al * bh
    al_bl = al * bl
    ah_bh = ah * bh
    tmp = (ah_bl & _LO32) + (al_bh & _LO32) + (al_bl >> 32) + (1 << 31)
    return (ah_bh + (ah_bl >> 32) + (al_bh >> 32) + (tmp >> 32)) & _M64, ae + be + 64


def _round_digit(digits: list[int], delta: int, rem: int, kappa: int, frac: int) -> None:
    """Grisu's "weeding": move the last digit toward the exact value while that stays inside
    the safe interval (64-bit unsigned arithmetic, as in C)."""
    while (rem < frac and ((delta - rem) & _M64) >= kappa
           and (((rem + kappa) & _M64) < frac
                or ((frac - rem) & _M64) > ((rem + kappa - frac) & _M64))):
        digits[-1] -= 1
        rem = (rem + kappa) & _M64


def grisu2(d: float) -> tuple[str, int]:
    """The digits of a finite, nonzero, positive ``d`` and their decimal exponent K
    (``d`` ~ digits * 10^K), exactly as fpconv's ``grisu2`` produces them."""
    bits = struct.unpack("<Q", struct.pack("<d", d))[0]
    frac = bits & (_HIDDEN - 1)
    bexp = (bits >> 52) & 0x7FF
    if bexp:
        frac += _HIDDEN
        bexp -= _EXPBIAS
    else:
        bexp = -_EXPBIAS + 1
    # boundaries m+ and m-, normalised to the same exponent
    uf, ue = (frac << 1) + 1, bexp - 1
    while not uf & (_HIDDEN << 1):
        uf <<= 1
        ue -= 1
    uf = (uf << 10) & _M64
    ue -= 10
    l_shift = 2 if frac == _HIDDEN else 1
    lf, le = (frac << l_shift) - 1, bexp - l_shift
    lf = (lf << (le - ue)) & _M64
    # w, normalised
    wf, we = frac, bexp
    while not wf & _HIDDEN:
        wf <<= 1
        we -= 1
    wf = (wf << 11) & _M64
    we -= 11
    cf, ce, k = _find_cached_pow10(ue)
    wf, we = _multiply(wf, we, cf, ce)
    uf, ue = _multiply(uf, ue, cf, ce)
    lf, _ = _multiply(lf, le, cf, ce)
    lf = (lf + 1) & _M64
    uf = (uf - 1) & _M64
    big_k = -k
    # digit generation
    wfrac = (uf - wf) & _M64
    delta = (uf - lf) & _M64
    shift = -ue
    one = 1 << shift
    part1 = uf >> shift
    part2 = uf & (one - 1)
    digits: list[int] = []
    kappa = 10
    for div in _TENS[10:]:
        digit = part1 // div
        if digit or digits:
            digits.append(digit)
        part1 -= digit * div
        kappa -= 1
        tmp = ((part1 << shift) + part2) & _M64
        if tmp <= delta:
            big_k += kappa
            _round_digit(digits, delta, tmp, (div << shift) & _M64, wfrac)
            return "".join(map(str, digits)), big_k
    unit = 18
    while True:
        part2 = (part2 * 10) & _M64
        delta = (delta * 10) & _M64
        kappa -= 1
        digit = part2 >> shift
        if digit or digits:
            digits.append(digit)
        part2 &= one - 1
        if part2 < delta:
            big_k += kappa
            _round_digit(digits, delta, part2, one, (wfrac * _TENS[unit]) & _M64)
            return "".join(map(str, digits)), big_k
        unit -= 1


def _emit(digits: str, big_k: int, neg: bool) -> str:
    """fpconv's layout of the digits (``emit_digits``)."""
    nd = len(digits)
    exp = abs(big_k + nd - 1)
    if big_k >= 0 and exp < nd + 7:  # a plain integer
        return digits + "0" * big_k
    if big_k < 0 and (big_k > -7 or exp < 4):  # a decimal without an exponent
        offset = nd + big_k
        if offset <= 0:
            return "0." + "0" * -offset + digits
        return digits[:offset] + "." + digits[offset:]
    nd = min(nd, 18 - neg)
    mantissa = digits[0] + ("." + digits[1:nd] if nd > 1 else "")
    sign = "-" if big_k + nd - 1 < 0 else "+"
    return f"{mantissa}e{sign}{exp}"


def fpconv_dtoa(d: float) -> bytes:
    """``d`` as fpconv_dtoa alone prints it, with no integer path: ``1e+15``, not
    ``1000000000000000`` (DEBUG DIGEST hashes scores in this form)."""
    neg = math.copysign(1.0, d) < 0 and d == d
    if d == 0.0:
        return b"-0" if neg else b"0"
    if d != d:
        return b"nan"
    if math.isinf(d):
        return b"-inf" if neg else b"inf"
    digits, big_k = grisu2(-d if neg else d)
    return (("-" if neg else "") + _emit(digits, big_k, neg)).encode()


def double2ll(d: float) -> int | None:
    """The integer ``d`` is when that is exact and within LLONG_MAX/2 (Redis's
    ``double2ll``: such doubles print as integers); None otherwise."""
    if -_LLONG_HALF <= d <= _LLONG_HALF:
        n = int(d)
        if n == d:
            return n
    return None


_CACHE: dict[float, bytes] = {}
_CACHE_MAX = 4096


def d2string(d: float) -> bytes:
    """``d`` as Redis's ``d2string`` prints it (see the module docstring)."""
    text = _CACHE.get(d)  # only non-integral finite doubles are kept: equal means same
    if text is not None:
        return text
    if -_LLONG_HALF <= d <= _LLONG_HALF:  # finite (not NaN): maybe an integer (double2ll)
        if d == 0.0:
            return b"-0" if math.copysign(1.0, d) < 0 else b"0"
        n = int(d)
        if n == d:
            return b"%d" % n
    elif d != d:
        return b"nan"
    elif d == math.inf:
        return b"inf"
    elif d == -math.inf:
        return b"-inf"
    neg = d < 0
    digits, big_k = grisu2(-d if neg else d)
    text = (("-" if neg else "") + _emit(digits, big_k, neg)).encode()
    if len(_CACHE) >= _CACHE_MAX:
        _CACHE.clear()
    _CACHE[d] = text
    return text
