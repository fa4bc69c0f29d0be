"""Lua <-> RESP: command replies into Lua values, script results into replies.

``reply_to_lua`` is Redis's ``redisProtocolToLuaType`` applied to our typed replies (the
script client's protocol decides: RESP2 null -> ``false``, status -> ``{ok=}``, error ->
``{err=}``, map -> flat array, double -> bulk; RESP3 keeps map / set / double / big number /
verbatim shapes, booleans, and null -> ``nil``). A pre-encoded ``Raw`` reply is parsed as RESP.

``lua_to_resp`` is ``luaReplyToRedisReply``: the script's result encoded for the caller's
protocol (numbers truncated to integers, ``false`` -> null, ``true`` -> 1 or ``#t`` as the
script's ``redis.setresp`` says, tables read raw to the first ``nil``, ``{err=}``, ``{ok=}``
and the RESP3 shapes). It returns wire bytes; the engine wraps them.

Imports ``sluice.protocol`` only (and lupa).
"""

from __future__ import annotations

import math
from typing import Any, TypeAlias

import lupa.lua51 as lupa

from sluice.protocol import (
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
)
from sluice.protocol.encoder import encode_into, format_double

LuaValue: TypeAlias = Any
"""A value lupa hands over from Lua (bytes, int, float, bool, None, or a Lua table or function
object), or a Lua runtime: lupa carries no type information."""

_LLONG_MIN = -(2**63)
MAX_DEPTH = 200  # nesting of a script's reply (Redis's limit is its Lua stack, ~4000 levels)


def lua_number_to_int(v: float) -> int:
    """``(long long)lua_tonumber``: truncation; out of range (inf, nan) is LLONG_MIN, as x86's
    conversion gives."""
    if type(v) is int:
        return v if _LLONG_MIN <= v < 2**63 else _LLONG_MIN
    if math.isnan(v) or math.isinf(v) or not -(2.0**63) <= v < 2.0**63:
        return _LLONG_MIN
    return int(v)


class Converter:
    """Conversions for one runtime (they build Lua tables)."""

    def __init__(self, lua: LuaValue, env: LuaValue) -> None:
        self.table_from = lua.table_from
        self.shape = env[b"shape"]

    # -- command reply -> Lua ----------------------------------------------------------------

    def err_table(self, text: bytes, counted: bool = False) -> LuaValue:
        """luaPushErrorBuff: "-CODE msg" or "msg" (ERR added), newlines trimmed."""
        if text[:1] == b"-":
            sp = text.find(b" ")
            if sp < 0:
                code, msg = b"ERR", text[1:]
            else:
                code, msg = text[1:sp], text[sp + 1:]
        else:
            code, msg = b"ERR", text
        msg = msg.strip(b"\r\n")
        fields: dict[bytes, LuaValue] = {b"err": code + b" " + msg}
        if counted:
            fields[b"ignore_error_stats_update"] = True
        return self.table_from(fields)

    def reply_to_lua(self, r: LuaValue, resp3: bool) -> LuaValue:
        t = type(r)
        if t is bytes:
            return r
        if t is int:
            return r if _LLONG_MIN <= r < 2**63 else float(r)
        if r is None or r is NULL_ARRAY:
            return None if resp3 else False
        if t is list or t is tuple or t is Push or t is Replies:
            return self.table_from([self.reply_to_lua(x, resp3) for x in r])
        if t is SimpleString:
            return self.table_from({b"ok": bytes(r)})
        if t is ErrorReply:
            return self.err_table(b"-" + bytes(r), counted=True)
        if t is Map or t is dict:
            if resp3:
                inner = self.table_from({self._key(k, resp3): self.reply_to_lua(v, resp3)
                                         for k, v in r.items()})
                return self.table_from({b"map": inner})
            flat: list[LuaValue] = []
            for k, v in r.items():
                flat.append(self.reply_to_lua(k, resp3))
                flat.append(self.reply_to_lua(v, resp3))
            return self.table_from(flat)
        if t is Set:
            if resp3:
                return self.table_from({b"set": self.table_from(
                    {self._key(x, resp3): True for x in r})})
            return self.table_from([self.reply_to_lua(x, resp3) for x in r])
        if t is Double or t is float:
            if resp3:
                return self.table_from({b"double": float(r)})
            return format_double(r)
        if t is Bool or t is bool:
            return bool(r) if resp3 else int(r)
        if t is Verbatim:
            if resp3:
                return self.table_from({b"verbatim_string": self.table_from(
                    {b"format": b"txt", b"string": bytes(r)})})
            return bytes(r)
        if t is BigNumber:
            if resp3:
                return self.table_from({b"big_number": bytes(r)})
            return bytes(r)
        if t is Raw:
            value, _ = self._parse(bytes(r), 0, resp3)
            return value
        if isinstance(r, bytes):
            return bytes(r)
        return None if resp3 else False

    def _key(self, k: LuaValue, resp3: bool) -> LuaValue:
        v = self.reply_to_lua(k, resp3)
        return v if v is not None else False

    def _parse(self, data: bytes, pos: int, resp3: bool) -> tuple[LuaValue, int]:
        """One RESP value from pre-encoded reply bytes, as Lua values."""
        kind = data[pos:pos + 1]
        end = data.index(b"\r\n", pos)
        line = data[pos + 1:end]
        pos = end + 2
        if kind == b"$":
            n = int(line)
            if n < 0:
                return (None if resp3 else False), pos
            return data[pos:pos + n], pos + n + 2
        if kind == b":":
            return int(line), pos
        if kind == b"+":
            return self.table_from({b"ok": line}), pos
        if kind == b"-":
            return self.err_table(b"-" + line, counted=True), pos
        if kind in (b"*", b">", b"~"):
            n = int(line)
            if n < 0:
                return (None if resp3 else False), pos
            items = []
            for _ in range(n):
                v, pos = self._parse(data, pos, resp3)
                items.append(v)
            if kind == b"~":
                return self.table_from({b"set": self.table_from(
                    {(v if v is not None else False): True for v in items})}), pos
            return self.table_from(items), pos
        if kind == b"%":
            n = int(line)
            pairs: dict[LuaValue, LuaValue] = {}
            for _ in range(n):
                k, pos = self._parse(data, pos, resp3)
                v, pos = self._parse(data, pos, resp3)
                pairs[k if k is not None else False] = v
            return self.table_from({b"map": self.table_from(pairs)}), pos
        if kind == b"_":
            return None, pos
        if kind == b",":
            return self.table_from({b"double": float(line)}), pos
        if kind == b"#":
            return line == b"t", pos
        if kind == b"(":
            return self.table_from({b"big_number": line}), pos
        if kind == b"=":
            n = int(line)
            body = data[pos:pos + n]
            return self.table_from({b"verbatim_string": self.table_from(
                {b"format": body[:3], b"string": body[4:]})}), pos + n + 2
        if kind == b"|":  # attributes: skipped, as Redis does
            n = int(line)
            for _ in range(2 * n):
                _, pos = self._parse(data, pos, resp3)
            return self._parse(data, pos, resp3)
        raise ValueError(f"unexpected reply type {kind!r}")

    # -- script result -> reply --------------------------------------------------------------

    def lua_to_resp(self, v: LuaValue, out: bytearray, resp3: bool, script_resp3: bool,
                    errors: list[tuple[bytes, bool]] | None = None, depth: int = 0) -> None:
        """Append the reply for Lua value ``v`` to ``out`` (caller's protocol ``resp3``).

        Nesting deeper than ``MAX_DEPTH`` ends in "-ERR reached lua stack limit", as Redis's
        conversion stops when its Lua stack runs out (a table that contains itself)."""
        if depth > MAX_DEPTH:
            out += b"-ERR reached lua stack limit\r\n"
            return
        t = type(v)
        if t is bytes:
            encode_into(out, v, resp3)
        elif t is int or t is float:
            encode_into(out, lua_number_to_int(v), resp3)
        elif t is bool:
            if script_resp3:
                encode_into(out, Bool(v), resp3)
            else:
                encode_into(out, 1 if v else None, resp3)
        elif v is None or lupa.lua_type(v) != "table":
            encode_into(out, None, resp3)
        else:
            self._table_to_resp(v, out, resp3, script_resp3, errors, depth + 1)

    def _table_to_resp(self, v: LuaValue, out: bytearray, resp3: bool, script_resp3: bool,
                       errors: list[tuple[bytes, bool]] | None, depth: int) -> None:
        shape = self.shape(v)
        kind = shape[0]
        if kind == b"array":
            arr, n = shape[1], shape[2]
            out += b"*%d\r\n" % n
            for i in range(1, n + 1):
                self.lua_to_resp(arr[i], out, resp3, script_resp3, errors, depth)
        elif kind == b"err":
            msg = _one_line(shape[1])
            out += b"-" + msg + b"\r\n"
            if errors is not None:
                errors.append((msg, bool(shape[4])))
        elif kind == b"ok":
            out += b"+" + _one_line(shape[1]) + b"\r\n"
        elif kind == b"double":
            encode_into(out, Double(shape[1]), resp3)
        elif kind == b"big_number":
            encode_into(out, BigNumber(shape[1].replace(b"\r", b" ").replace(b"\n", b" ")),
                        resp3)
        elif kind == b"verbatim":
            fmt, s = shape[1], shape[2]
            if resp3:
                body = fmt[:3].ljust(3) + b":" + s
                out += b"=%d\r\n" % len(body) + body + b"\r\n"
            else:
                encode_into(out, s, resp3)
        elif kind == b"map":
            ks, xs, n = shape[1], shape[2], shape[3]
            out += (b"%%%d\r\n" % n) if resp3 else (b"*%d\r\n" % (2 * n))
            for i in range(1, n + 1):
                self.lua_to_resp(ks[i], out, resp3, script_resp3, errors, depth)
                self.lua_to_resp(xs[i], out, resp3, script_resp3, errors, depth)
        elif kind == b"set":
            ks, n = shape[1], shape[2]
            out += (b"~%d\r\n" % n) if resp3 else (b"*%d\r\n" % n)
            for i in range(1, n + 1):
                self.lua_to_resp(ks[i], out, resp3, script_resp3, errors, depth)


def _one_line(s: bytes) -> bytes:
    """Replies cannot hold CR or LF (addReplyErrorLength / addReplyStatusLength)."""
    if b"\r" in s or b"\n" in s:
        return s.replace(b"\r", b" ").replace(b"\n", b" ")
    return s
