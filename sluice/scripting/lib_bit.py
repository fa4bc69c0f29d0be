"""``bit`` for scripts: LuaBitOp 1.0.2 as Redis ships it (``deps/lua/src/lua_bit.c``).

Every argument is normalised as ``barg`` does (add 2^52+2^51 and keep the low 32 bits, so
fractions round to nearest even and any double maps to a 32-bit pattern); results are
signed 32-bit numbers. ``tohex(x, n)``: n hex digits (upper case when n < 0), 8 by default.
Helpers return ``(failed, value)``; errors use luaL's ``bad argument`` wording.
"""

from __future__ import annotations

import math
import struct

from .convert import LuaValue

_HEX_DIGITS = b"0123456789abcdef"


class BitError(Exception):
    pass


def _barg(args: tuple[LuaValue, ...], i: int, fname: str) -> int:
    v = args[i] if i < len(args) else None
    if type(v) is bytes:
        try:
            v = float(v) if not v.strip().lower().startswith(b"0x") else int(v, 16)
        except ValueError:
            v = None
    if type(v) is not int and type(v) is not float:
        got = "no value" if i >= len(args) else ("nil" if v is None else "table")
        raise BitError(f"bad argument #{i + 1} to '{fname}' (number expected, got {got})")
    if type(v) is int and -(2**51) < v < 2**51:
        return v & 0xFFFFFFFF
    f = float(v)
    if math.isnan(f) or math.isinf(f):
        return 0
    # The bias trick: the double's low mantissa word after adding 2^52 + 2^51.
    b = f + 6755399441055744.0
    low: int = struct.unpack("<Q", struct.pack("<d", b))[0]
    return low & 0xFFFFFFFF


def _signed(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x


def _wrap(fname: str, fn: LuaValue) -> LuaValue:
    def helper(*args: LuaValue) -> tuple[bool, LuaValue]:
        try:
            return False, fn(args, fname)
        except BitError as e:
            return True, str(e).encode()
    return helper


def _tobit(a: tuple[LuaValue, ...], f: str) -> int:
    return _signed(_barg(a, 0, f))


def _bnot(a: tuple[LuaValue, ...], f: str) -> int:
    return _signed(~_barg(a, 0, f))


def _fold(op: LuaValue) -> LuaValue:
    def fn(a: tuple[LuaValue, ...], f: str) -> int:
        r = _barg(a, 0, f)
        for i in range(1, len(a)):
            r = op(r, _barg(a, i, f))
        return _signed(r)
    return fn


def _shift(kind: str) -> LuaValue:
    def fn(a: tuple[LuaValue, ...], f: str) -> int:
        b = _barg(a, 0, f)
        n = _barg(a, 1, f) & 31
        if kind == "lshift":
            return _signed(b << n)
        if kind == "rshift":
            return _signed(b >> n)
        if kind == "arshift":
            return _signed(_signed(b) >> n)
        if kind == "rol":
            return _signed((b << n) | (b >> (32 - n)))
        return _signed((b >> n) | (b << (32 - n)))  # ror
    return fn


def _bswap(a: tuple[LuaValue, ...], f: str) -> int:
    b = _barg(a, 0, f)
    return _signed(int.from_bytes(b.to_bytes(4, "little"), "big"))


def _tohex(a: tuple[LuaValue, ...], f: str) -> bytes:
    b = _barg(a, 0, f)
    n = 8 if len(a) < 2 or a[1] is None else _signed(_barg(a, 1, f))
    upper = n < 0
    if upper:
        n = -n
    if n > 8:
        n = 8
    digits = format(b & ((1 << (4 * n)) - 1), f"0{n}x") if n else ""
    out = digits[-n:] if n else ""
    return (out.upper() if upper else out).encode()


FUNCTIONS = {
    "tobit": _wrap("tobit", _tobit),
    "bnot": _wrap("bnot", _bnot),
    "band": _wrap("band", _fold(lambda x, y: x & y)),
    "bor": _wrap("bor", _fold(lambda x, y: x | y)),
    "bxor": _wrap("bxor", _fold(lambda x, y: x ^ y)),
    "lshift": _wrap("lshift", _shift("lshift")),
    "rshift": _wrap("rshift", _shift("rshift")),
    "arshift": _wrap("arshift", _shift("arshift")),
    "rol": _wrap("rol", _shift("rol")),
    "ror": _wrap("ror", _shift("ror")),
    "bswap": _wrap("bswap", _bswap),
    "tohex": _wrap("tohex", _tohex),
}
