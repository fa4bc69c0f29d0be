"""``struct`` for scripts: Roberto Ierusalimschy's struct library as Redis ships it
(``deps/lua/src/lua_struct.c``), on Python's ``struct`` and ``int.to_bytes``.

Formats: ``>`` ``<`` ``!n`` (alignment) ``x`` ``b/B`` ``h/H`` ``l/L`` ``T`` ``i/In`` ``f`` ``d``
``cn`` ``s``, with the sizes of Redis's x86-64 build (short 2, int 4, long and size_t 8;
native order little endian, default maximum alignment 8). Numbers are Lua doubles: integers
are converted as C converts them (truncation, two's complement for negatives). Helpers return
``(failed, ...)`` for the sandbox's closures; errors are lua_struct's, with luaL_argerror's
``bad argument #n to 'pack' (...)`` wording.
"""

from __future__ import annotations

import math
import struct as pystruct

from .convert import LuaValue

_SIZES = {"b": 1, "B": 1, "h": 2, "H": 2, "l": 8, "L": 8, "T": 8, "f": 4, "d": 8, "x": 1}
_MAXINTSIZE = 32
_MAXALIGN = 8


class StructError(Exception):
    pass


class _Fmt:
    __slots__ = ("fmt", "pos", "little", "align", "fname")

    def __init__(self, fmt: bytes, fname: str) -> None:
        self.fmt = fmt
        self.pos = 0
        self.little = True
        self.align = 1
        self.fname = fname

    def num(self, default: int) -> int:
        fmt = self.fmt
        if self.pos >= len(fmt) or not chr(fmt[self.pos]).isdigit():
            return default
        a = 0
        while self.pos < len(fmt) and chr(fmt[self.pos]).isdigit():
            if a > (2**31 - 1) // 10 or a * 10 > (2**31 - 1) - (fmt[self.pos] - 48):
                raise StructError("integral size overflow")
            a = a * 10 + fmt[self.pos] - 48
            self.pos += 1
        return a

    def optsize(self, opt: str) -> int:
        if opt in _SIZES:
            return _SIZES[opt]
        if opt == "c":
            return self.num(1)
        if opt in "iI":
            sz = self.num(4)
            if sz > _MAXINTSIZE:
                raise StructError(f"integral size {sz} is larger than limit of {_MAXINTSIZE}")
            return sz
        return 0

    def toalign(self, length: int, opt: str, size: int) -> int:
        if size == 0 or opt == "c":
            return 0
        size = min(size, self.align)
        return (size - (length & (size - 1))) & (size - 1)

    def control(self, opt: str) -> None:
        if opt == " ":
            return
        if opt == ">":
            self.little = False
        elif opt == "<":
            self.little = True
        elif opt == "!":
            a = self.num(_MAXALIGN)
            if a & (a - 1):
                raise StructError(f"alignment {a} is not a power of 2")
            self.align = a
        else:
            raise StructError(f"bad argument #1 to '{self.fname}' (invalid format option '{opt}')")


def _number(args: tuple[LuaValue, ...], i: int, fname: str) -> float:
    v = args[i] if i < len(args) else None
    if type(v) is bytes:
        try:
            return float(v)
        except ValueError:
            pass
    if type(v) is int or type(v) is float:
        return v
    got = "no value" if i >= len(args) else ("nil" if v is None else _tname(v))
    raise StructError(f"bad argument #{i + 1} to '{fname}' (number expected, got {got})")


def _string(args: tuple[LuaValue, ...], i: int, fname: str) -> bytes:
    v = args[i] if i < len(args) else None
    if type(v) is bytes:
        return v
    if type(v) is int:
        return b"%d" % v
    if type(v) is float:
        return b"%.14g" % v
    got = "no value" if i >= len(args) else ("nil" if v is None else _tname(v))
    raise StructError(f"bad argument #{i + 1} to '{fname}' (string expected, got {got})")


def _tname(v: LuaValue) -> str:
    if type(v) is bool:
        return "boolean"
    import lupa.lua51 as lupa

    return lupa.lua_type(v) or "userdata"


def _c_int(n: float) -> int:
    """(Uinttype)(Inttype)n or (Uinttype)n, as the C casts do (truncation)."""
    if math.isnan(n) or math.isinf(n):
        return -(2**63)
    return int(n)


def pack(*args: LuaValue) -> tuple[bool, LuaValue]:
    try:
        fmt = _Fmt(_string(args, 0, "pack"), "pack")
        out = bytearray()
        arg = 1
        while fmt.pos < len(fmt.fmt):
            opt = chr(fmt.fmt[fmt.pos])
            fmt.pos += 1
            size = fmt.optsize(opt)
            pad = fmt.toalign(len(out), opt, size)
            out += b"\0" * pad
            if opt in "bBhHlLTiI":
                value = _c_int(_number(args, arg, "pack")) % (1 << 64)
                arg += 1
                raw = value.to_bytes(8, "little") + (b"\xff" if value >> 63 else b"\0") * 24
                chunk = raw[:size]
                out += chunk if fmt.little else chunk[::-1]
            elif opt == "x":
                out += b"\0"
            elif opt == "f":
                v = _number(args, arg, "pack")
                arg += 1
                try:
                    out += pystruct.pack("<f" if fmt.little else ">f", v)
                except OverflowError:
                    out += pystruct.pack("<f" if fmt.little else ">f",
                                         math.copysign(math.inf, v))
            elif opt == "d":
                out += pystruct.pack("<d" if fmt.little else ">d", _number(args, arg, "pack"))
                arg += 1
            elif opt in "cs":
                s = _string(args, arg, "pack")
                arg += 1
                n = size if size else len(s)
                if len(s) < n:
                    raise StructError(f"bad argument #{arg} to 'pack' (string too short)")
                out += s[:n]
                if opt == "s":
                    out += b"\0"
            else:
                fmt.control(opt)
        return False, bytes(out)
    except StructError as e:
        return True, str(e).encode()


def unpack(*args: LuaValue) -> tuple[LuaValue, ...]:
    """(failed, n, values...) for the sandbox's ``multi`` closure."""
    try:
        fmt = _Fmt(_string(args, 0, "unpack"), "unpack")
        data = _string(args, 1, "unpack")
        pos = 1
        if len(args) > 2 and args[2] is not None:
            pos = _c_int(_number(args, 2, "unpack"))
        if pos <= 0:
            raise StructError("bad argument #3 to 'unpack' (offset must be 1 or greater)")
        pos -= 1
        out: list[LuaValue] = []
        ld = len(data)
        while fmt.pos < len(fmt.fmt):
            opt = chr(fmt.fmt[fmt.pos])
            fmt.pos += 1
            size = fmt.optsize(opt)
            pos += fmt.toalign(pos, opt, size)
            if not (size <= ld and pos <= ld - size):
                raise StructError("bad argument #2 to 'unpack' (data string too short)")
            if opt in "bBhHlLTiI":
                chunk = data[pos:pos + size]
                value = int.from_bytes(chunk, "little" if fmt.little else "big",
                                       signed=opt.islower())
                if size > 8:  # Uinttype is 64 bits wide: the high bytes are lost
                    value &= (1 << 64) - 1
                    if opt.islower() and value >> 63:
                        value -= 1 << 64
                out.append(float(value) if not -(2**63) <= value < 2**63 else value)
            elif opt == "x":
                pass
            elif opt == "f":
                out.append(pystruct.unpack("<f" if fmt.little else ">f", data[pos:pos + 4])[0])
            elif opt == "d":
                out.append(pystruct.unpack("<d" if fmt.little else ">d", data[pos:pos + 8])[0])
            elif opt == "c":
                if size == 0:
                    if not out or type(out[-1]) not in (int, float):
                        raise StructError("format 'c0' needs a previous size")
                    size = int(out.pop())
                    if not (size <= ld and pos <= ld - size):
                        raise StructError("bad argument #2 to 'unpack' (data string too short)")
                out.append(data[pos:pos + size])
            elif opt == "s":
                end = data.find(b"\0", pos)
                if end < 0:
                    raise StructError("unfinished string in data")
                size = end - pos + 1
                out.append(data[pos:end])
            else:
                fmt.control(opt)
            pos += size
        out.append(pos + 1)
        return (False, len(out), *out)
    except StructError as e:
        return (True, 1, str(e).encode())


def size(*args: LuaValue) -> tuple[bool, LuaValue]:
    try:
        fmt = _Fmt(_string(args, 0, "size"), "size")
        pos = 0
        while fmt.pos < len(fmt.fmt):
            opt = chr(fmt.fmt[fmt.pos])
            fmt.pos += 1
            sz = fmt.optsize(opt)
            pos += fmt.toalign(pos, opt, sz)
            if opt == "s":
                raise StructError("bad argument #1 to 'size' (option 's' has no fixed size)")
            if opt == "c" and sz == 0:
                raise StructError("bad argument #1 to 'size' (option 'c0' has no fixed size)")
            if not opt.isalnum():
                fmt.control(opt)
            pos += sz
        return False, pos
    except StructError as e:
        return True, str(e).encode()
