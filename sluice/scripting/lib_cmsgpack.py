"""``cmsgpack`` for scripts: lua-cmsgpack 0.4.0 as Redis ships it
(``deps/lua/src/lua_cmsgpack.c``), on the ``msgpack`` package.

Packing follows cmsgpack's choices, which msgpack's Packer shares for integers and container
headers: a number equal to an int64 packs as the smallest integer, other numbers as float32
when that is exact, else float64 (the width is chosen per value, which is why floats and
strings are framed here); strings use fixraw / raw8 (0xd9) / raw16 / raw32; a table whose keys
are exactly 1..n is an array, any other a map; tables nested 16 deep pack as nil (so cycles
end); other values (functions, userdata) pack as nil.

Unpacking is msgpack's ``Unpacker`` (``raw=True``: strings stay bytes), returning every
object (``unpack``), or an offset and up to ``limit`` objects (``unpack_one``,
``unpack_limit``; offset -1 once the input is used up). Helpers return ``(failed, ...)``.
"""

from __future__ import annotations

import math
import struct

import lupa.lua51 as lupa
import msgpack

from .convert import LuaValue

_MAX_NESTING = 16


class CMsgpack:
    def __init__(self, lua: LuaValue) -> None:
        self.lua = lua
        self.items: LuaValue = None
        self.packer = msgpack.Packer(use_bin_type=False, autoreset=True)

    def attach(self, env: LuaValue) -> None:
        self.items = env[b"items"]

    # -- pack ----------------------------------------------------------------------------

    def pack(self, *args: LuaValue) -> tuple[bool, LuaValue]:
        if not args:
            return True, b"bad argument #0 to 'pack' (MessagePack pack needs input.)"
        out: list[bytes] = []
        for v in args:
            self._pack(v, 0, out)
        return False, b"".join(out)

    def _pack(self, v: LuaValue, level: int, out: list[bytes]) -> None:
        t = type(v)
        if t is bytes:
            n = len(v)
            if n < 32:
                out.append(bytes((0xA0 | n,)))
            elif n <= 0xFF:
                out.append(bytes((0xD9, n)))
            elif n <= 0xFFFF:
                out.append(b"\xda" + n.to_bytes(2, "big"))
            else:
                out.append(b"\xdb" + n.to_bytes(4, "big"))
            out.append(v)
        elif t is bool:
            out.append(b"\xc3" if v else b"\xc2")
        elif t is int or t is float:
            self._number(v, out)
        elif v is not None and lupa.lua_type(v) == "table" and level < _MAX_NESTING:
            self._table(v, level, out)
        else:
            out.append(b"\xc0")

    def _number(self, v: float, out: list[bytes]) -> None:
        if not math.isinf(v) and not math.isnan(v) and v == math.floor(v) \
                and -(2**63) <= v < 2**63:
            out.append(self.packer.pack(int(v)))
            return
        try:
            f32 = struct.pack(">f", v)
        except OverflowError:
            f32 = None
        if f32 is not None and (struct.unpack(">f", f32)[0] == v or math.isinf(v)):
            out.append(b"\xca" + f32)
        else:
            out.append(b"\xcb" + struct.pack(">d", v))

    def _table(self, t: LuaValue, level: int, out: list[bytes]) -> None:
        keys, values, n = self.items(t)
        ks = [keys[i] for i in range(1, n + 1)]
        vs = [values[i] for i in range(1, n + 1)]
        is_array = True
        top = 0
        for k in ks:
            if (type(k) is not int and type(k) is not float) or k <= 0 or k != int(k) \
                    or k >= 2**31:
                is_array = False
                break
            top = max(top, int(k))
        if is_array and top == len(ks):
            out.append(self.packer.pack_array_header(top))
            by = dict(zip(ks, vs, strict=False))
            for i in range(1, top + 1):
                self._pack(by[i], level + 1, out)
            return
        out.append(self.packer.pack_map_header(len(ks)))
        for k, v in zip(ks, vs, strict=False):
            self._pack(k, level + 1, out)
            self._pack(v, level + 1, out)

    # -- unpack --------------------------------------------------------------------------

    def unpack(self, *args: LuaValue) -> tuple[LuaValue, ...]:
        return self._unpack_full(args, 0, 0, "unpack")

    def unpack_one(self, *args: LuaValue) -> tuple[LuaValue, ...]:
        offset = args[1] if len(args) > 1 and args[1] is not None else 0
        return self._unpack_full(args[:1], 1, offset, "unpack_one")

    def unpack_limit(self, *args: LuaValue) -> tuple[LuaValue, ...]:
        if len(args) < 2 or type(args[1]) not in (int, float):
            got = "no value" if len(args) < 2 else (lupa.lua_type(args[1]) or "nil")
            return (True, 1, f"bad argument #2 to 'unpack_limit' (number expected, got {got})"
                    .encode())
        offset = args[2] if len(args) > 2 and args[2] is not None else 0
        return self._unpack_full(args[:1], int(args[1]), offset, "unpack_limit")

    def _unpack_full(self, args: tuple[LuaValue, ...], limit: int, offset: LuaValue, fname: str
                     ) -> tuple[LuaValue, ...]:
        s = args[0] if args else None
        if type(s) is int or type(s) is float:
            s = b"%.14g" % s
        if type(s) is not bytes:
            got = "no value" if not args else (lupa.lua_type(s) or "nil")
            return (True, 1, f"bad argument #1 to '{fname}' (string expected, got {got})"
                    .encode())
        offset = int(offset)
        decode_all = not limit and not offset
        if offset < 0 or limit < 0:
            return (True, 1, b"Invalid request to unpack with offset of %d and limit of %d."
                    % (offset, len(s)))
        if offset > len(s):
            return (True, 1, b"Start offset %d greater than input length %d."
                    % (offset, len(s)))
        if decode_all:
            limit = 2**31 - 1
        unpacker = msgpack.Unpacker(raw=True, strict_map_key=False, use_list=True,
                                    max_buffer_size=max(len(s), 1))
        unpacker.feed(s[offset:])
        out: list[LuaValue] = []
        consumed = 0
        try:
            while consumed < len(s) - offset and len(out) < limit:
                obj = unpacker.unpack()
                consumed = unpacker.tell()
                out.append(self._to_lua(obj))
        except msgpack.OutOfData:
            return (True, 1, b"Missing bytes in input.")
        except (msgpack.FormatError, msgpack.StackError, ValueError, TypeError):
            return (True, 1, b"Bad data format in input.")
        if not decode_all:
            left = len(s) - offset - consumed
            out.insert(0, -1 if left == 0 else offset + consumed)
        return (False, len(out), *out)

    def _to_lua(self, v: LuaValue) -> LuaValue:
        t = type(v)
        if t is bytes or t is bool or t is float or v is None:
            return v
        if t is int:
            return v if -(2**63) <= v < 2**63 else float(v)
        if t is list:
            return self.lua.table_from([self._to_lua(x) for x in v])
        if t is dict:
            return self.lua.table_from({self._to_lua(k): self._to_lua(x) for k, x in v.items()
                                        if k is not None})
        if isinstance(v, msgpack.ExtType):
            return None
        return None
