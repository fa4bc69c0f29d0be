"""``cjson`` for scripts: Redis's lua-cjson 2.1.0 (``deps/lua/src/lua_cjson.c``) on Python's json.

Decoding is Python's ``json`` (strict, as cjson: no comments, no trailing commas); its errors
are reworded as cjson words them (``Expected value but found invalid token at character
1``). Encoding walks the Lua value as cjson does: numbers as ``%.14g`` (the configurable
precision), ``/`` escaped as ``\\/``, control characters and DEL as ``\\u00XX``, bytes >= 0x80
passed through, a table is an array when its keys are exactly integers >= 1 (holes become
``null``; an excessively sparse one is an error), else an object whose keys are strings or
numbers; an empty table is ``{}`` unless it carries the array metatable
(``decode_array_with_array_mt``); ``cjson.null`` is ``null``.

The configuration functions keep cjson's per-runtime settings and return them as cjson does.
Helpers return ``(failed, value)``: the sandbox's Lua closure raises, so errors carry the
caller's position like ``luaL_error``.
"""

from __future__ import annotations

import json
import math

import lupa.lua51 as lupa

from .convert import LuaValue


class CJson:
    """One runtime's cjson: its settings and the Lua callables it needs."""

    def __init__(self, lua: LuaValue) -> None:
        self.lua = lua
        self.items: LuaValue = None
        self.null: LuaValue = None
        self.is_null: LuaValue = None
        self.setmetatable: LuaValue = None
        self.getmetatable: LuaValue = None
        self.array_mt: LuaValue = None
        self.objlen = lua.eval("function(t) return #t end")
        self.sparse_convert = False
        self.sparse_ratio = 2
        self.sparse_safe = 10
        self.encode_max_depth = 1000
        self.decode_max_depth = 1000
        self.encode_invalid = 0  # 0 off, 1 on, 2 null
        self.decode_invalid = True
        self.keep_buffer = True
        self.precision = 14
        self.array_with_mt = False

    def attach(self, env: LuaValue) -> None:
        """The sandbox's privileged helpers, once it has run."""
        self.items = env[b"items"]          # raw (keys, values, n) of a table
        self.null = env[b"null"]
        self.is_null = env[b"is_null"]
        self.setmetatable = env[b"setmetatable"]
        self.getmetatable = env[b"getmetatable"]
        array_mt = self.lua.table_from({b"__is_cjson_array": True})
        self.array_mt = env[b"array_mt_view"](array_mt)

    # -- encode ------------------------------------------------------------------------------

    def encode(self, *args: LuaValue) -> tuple[bool, LuaValue]:
        if len(args) != 1:
            return True, b"bad argument #1 to 'encode' (expected 1 argument)"
        out: list[bytes] = []
        try:
            self._append(args[0], 0, out)
        except _EncodeError as e:
            return True, str(e).encode()
        return False, b"".join(out)

    def _number(self, v: float) -> bytes:
        if math.isinf(v) or math.isnan(v):
            if self.encode_invalid == 0:
                raise _EncodeError("Cannot serialise number: must not be NaN or Inf")
            if self.encode_invalid == 2:
                return b"null"
            if math.isnan(v):
                return b"nan"
            return b"inf" if v > 0 else b"-inf"
        return (b"%.*g" % (self.precision, v))

    def _append(self, v: LuaValue, depth: int, out: list[bytes]) -> None:
        t = type(v)
        if t is bytes:
            out.append(_escape(v))
        elif t is bool:
            out.append(b"true" if v else b"false")
        elif t is int or t is float:
            out.append(self._number(v))
        elif v is None:
            out.append(b"null")
        else:
            kind = lupa.lua_type(v)
            if kind == "table":
                self._table(v, depth + 1, out)
            elif kind == "userdata" and self.is_null(v):
                out.append(b"null")
            else:
                raise _EncodeError(f"Cannot serialise {kind}: type not supported")

    def _table(self, t: LuaValue, depth: int, out: list[bytes]) -> None:
        if depth > self.encode_max_depth:
            raise _EncodeError(f"Cannot serialise, excessive nesting ({depth})")
        mt = self.getmetatable(t)
        if mt is not None and lupa.lua_type(mt) == "table" and mt[b"__is_cjson_array"]:
            n = self.objlen(t)
            keys, values, count = self.items(t)
            byindex = {keys[i]: values[i] for i in range(1, count + 1)}
            self._array(byindex, n, depth, out)
            return
        keys, values, count = self.items(t)
        ks = [keys[i] for i in range(1, count + 1)]
        vs = [values[i] for i in range(1, count + 1)]
        length = self._array_length(ks)
        if length > 0:
            self._array(dict(zip(ks, vs, strict=False)), length, depth, out)
            return
        out.append(b"{")
        first = True
        for k, v in zip(ks, vs, strict=False):
            if not first:
                out.append(b",")
            first = False
            tk = type(k)
            if tk is bytes:
                out.append(_escape(k))
                out.append(b":")
            elif tk is int or tk is float:
                out.append(b'"' + self._number(k) + b'":')
            else:
                kind = lupa.lua_type(k) or ("boolean" if tk is bool else "nil")
                raise _EncodeError(
                    f"Cannot serialise {kind}: table key must be a number or string")
            self._append(v, depth, out)
        out.append(b"}")

    def _array_length(self, keys: list[LuaValue]) -> int:
        """cjson's lua_array_length: -1 (an object) or the largest index."""
        top = 0
        for k in keys:
            if (type(k) is int or type(k) is float) and k and k >= 1 and k == math.floor(k):
                if k > top:
                    top = int(k)
                continue
            return -1
        if self.sparse_ratio > 0 and top > len(keys) * self.sparse_ratio \
                and top > self.sparse_safe:
            if not self.sparse_convert:
                raise _EncodeError("Cannot serialise table: excessively sparse array")
            return -1
        return top

    def _array(self, items: dict[LuaValue, LuaValue], n: int, depth: int, out: list[bytes]) -> None:
        out.append(b"[")
        for i in range(1, n + 1):
            if i > 1:
                out.append(b",")
            self._append(items.get(i), depth, out)
        out.append(b"]")

    # -- decode ------------------------------------------------------------------------------

    def decode(self, *args: LuaValue) -> tuple[bool, LuaValue]:
        if len(args) != 1:
            return True, b"bad argument #1 to 'decode' (expected 1 argument)"
        data = args[0]
        if type(data) is int or type(data) is float:
            data = b"%.14g" % data
        if type(data) is not bytes:
            got = "no value" if data is None else (lupa.lua_type(data) or type(data).__name__)
            return True, f"bad argument #1 to 'decode' (string expected, got {got})".encode()
        if len(data) >= 2 and (not data[0] or not data[1]):
            return True, b"JSON parser does not support UTF-16 or UTF-32"
        depth, at = _max_depth(data, self.decode_max_depth)
        if depth > self.decode_max_depth:
            return True, (b"Found too many nested data structures (%d) at character %d"
                          % (depth, at))
        text = data.decode("utf-8", "surrogateescape")
        try:
            value = json.loads(text, parse_constant=self._constant,
                               object_pairs_hook=_Pairs)
        except json.JSONDecodeError as e:
            return True, _decode_error(e, text).encode()
        except ValueError as e:
            return True, str(e).encode()
        return False, self._to_lua(value)

    def _constant(self, name: str) -> float:
        if not self.decode_invalid:
            raise ValueError("Expected value but found invalid number")
        return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}[name]

    def _to_lua(self, v: LuaValue) -> LuaValue:
        t = type(v)
        if t is str:
            return _bytes(v)
        if v is None:
            return self.null
        if t is bool or t is float:
            return v
        if t is int:
            return v if -(2**63) <= v < 2**63 else float(v)
        if t is _Pairs:
            return self.lua.table_from({_bytes(k): self._to_lua(x) for k, x in v})
        table = self.lua.table_from([self._to_lua(x) for x in v])
        if self.array_with_mt:
            self.setmetatable(table, self.array_mt)
        return table

    # -- configuration -------------------------------------------------------------------------

    def cfg_encode_keep_buffer(self, *args: LuaValue) -> tuple[bool, LuaValue]:
        if args:
            self.keep_buffer = bool(args[0]) and args[0] not in (b"off", 0)
        return False, self.keep_buffer

    def cfg_encode_max_depth(self, *args: LuaValue) -> tuple[bool, LuaValue]:
        return self._int_setting("encode_max_depth", args, 1, 2**31 - 1)

    def cfg_decode_max_depth(self, *args: LuaValue) -> tuple[bool, LuaValue]:
        return self._int_setting("decode_max_depth", args, 1, 2**31 - 1)

    def cfg_encode_number_precision(self, *args: LuaValue) -> tuple[bool, LuaValue]:
        return self._int_setting("precision", args, 1, 14)

    def cfg_encode_sparse_array(self, *args: LuaValue) -> tuple[bool, LuaValue]:
        if len(args) >= 1 and args[0] is not None:
            self.sparse_convert = _truthy(args[0])
        if len(args) >= 2 and args[1] is not None:
            self.sparse_ratio = int(args[1])
        if len(args) >= 3 and args[2] is not None:
            self.sparse_safe = int(args[2])
        return False, self.sparse_convert

    def cfg_encode_invalid_numbers(self, *args: LuaValue) -> tuple[bool, LuaValue]:
        if args and args[0] is not None:
            self.encode_invalid = 2 if args[0] == b"null" else (1 if _truthy(args[0]) else 0)
        return False, [False, True, b"null"][self.encode_invalid]

    def cfg_decode_invalid_numbers(self, *args: LuaValue) -> tuple[bool, LuaValue]:
        if args and args[0] is not None:
            self.decode_invalid = _truthy(args[0])
        return False, self.decode_invalid

    def cfg_decode_array_with_array_mt(self, *args: LuaValue) -> tuple[bool, LuaValue]:
        if args and args[0] is not None:
            self.array_with_mt = _truthy(args[0])
        return False, self.array_with_mt

    def _int_setting(self, name: str, args: tuple[LuaValue, ...], lo: int, hi: int
                     ) -> tuple[bool, LuaValue]:
        if args and args[0] is not None:
            v = args[0]
            if type(v) is not int or not lo <= v <= hi:
                return True, f"bad argument #1 to '?' (expected integer between {lo} and {hi})".encode()
            setattr(self, name, v)
        return False, getattr(self, name)


class _EncodeError(Exception):
    pass


class _Pairs(list[tuple[str, LuaValue]]):
    """A decoded JSON object, as its (key, value) pairs."""

    __slots__ = ()


def _truthy(v: LuaValue) -> bool:
    if type(v) is bytes:
        return v in (b"on", b"true")
    return bool(v)


def _bytes(s: str) -> bytes:
    try:
        return s.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return s.encode("utf-8", "surrogatepass")


_ESC = {i: (f"\\u{i:04x}").encode() for i in range(32)}
_ESC.update({8: b"\\b", 9: b"\\t", 10: b"\\n", 12: b"\\f", 13: b"\\r", 34: b'\\"',
             47: b"\\/", 92: b"\\\\", 127: b"\\u007f"})
_PLAIN = bytes(i for i in range(256) if i not in _ESC)


def _escape(s: bytes) -> bytes:
    """A JSON string as cjson writes it (char2escape)."""
    if not s.translate(None, _PLAIN):
        return b'"' + s + b'"'
    return b'"' + b"".join(_ESC.get(c) or bytes((c,)) for c in s) + b'"'


def _max_depth(data: bytes, limit: int) -> tuple[int, int]:
    """The deepest nesting of arrays/objects (outside strings), stopping past ``limit``."""
    depth = top = 0
    in_str = esc = False
    for i, c in enumerate(data):
        if in_str:
            if esc:
                esc = False
            elif c == 92:
                esc = True
            elif c == 34:
                in_str = False
        elif c == 34:
            in_str = True
        elif c == 91 or c == 123:
            depth += 1
            if depth > top:
                top = depth
                if top > limit:
                    return top, i + 1
        elif c == 93 or c == 125:
            depth -= 1
    return top, 0


def _decode_error(e: json.JSONDecodeError, text: str) -> str:
    """Python's json error in cjson's words."""
    pos = e.pos
    found = _token_name(text, pos)
    msg = e.msg
    if msg.startswith("Expecting property name"):
        want = "object key string"
    elif msg == "Expecting ':' delimiter":
        want = "colon"
    elif msg == "Expecting ',' delimiter":
        want = "comma or array end" if _inside_array(text, pos) else "comma or object end"
    elif msg == "Extra data":
        want = "the end"
    else:
        want = "value"
    return f"Expected {want} but found {found} at character {pos + 1}"


def _token_name(text: str, pos: int) -> str:
    if pos >= len(text):
        return "T_END"
    c = text[pos]
    return {"{": "T_OBJ_BEGIN", "}": "T_OBJ_END", "[": "T_ARR_BEGIN", "]": "T_ARR_END",
            ",": "T_COMMA", ":": "T_COLON", '"': "T_STRING"}.get(
        c, "T_NUMBER" if c.isdigit() or c == "-" else "invalid token")


def _inside_array(text: str, pos: int) -> bool:
    depth: list[str] = []
    in_str = esc = False
    for c in text[:pos]:
        if in_str:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c in "[{":
            depth.append(c)
        elif c in "]}" and depth:
            depth.pop()
    return bool(depth) and depth[-1] == "["
