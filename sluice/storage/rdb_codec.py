"""The building blocks of Redis's RDB format: CRC-64, LZF, lengths, strings, listpacks.

Role: byte-level encoders and decoders shared by ``rdb.py`` (snapshots, AOF preamble,
DUMP/RESTORE payloads) and ``rdb_stream.py``. Written from the format as Redis 7.0 defines
it (module data and key-metadata specs as Redis 8.6 does), not from its code:

- CRC-64 "Jones" (reflected, polynomial 0xad93d23594c935a9, init 0, no final xor): the RDB
  footer and the DUMP payload checksum (``crc64.c``). Check value of ``b"123456789"``:
  0xe9c6d914c4b8d9ca.
- LZF (``lzf_c.c`` / ``lzf_d.c``): literal runs of 1..32 bytes (control byte < 32) and back
  references of 3..264 bytes within 8 KB.
- Lengths (``rdbSaveLen``): 6-bit, 14-bit big-endian, 32-bit and 64-bit big-endian after
  0x80/0x81; ``11xxxxxx`` marks a specially encoded string (int8/16/32 little-endian, LZF).
- Strings (``rdbSaveRawString``): integers of up to 11 characters in canonical form are
  stored as integers; strings over 20 bytes are stored LZF-compressed when that saves at
  least 4 bytes (``rdbSaveLzfStringObject``).
- Listpacks (``listpack.c``): ``<total bytes u32le> <count u16le> entries <0xFF>``; each entry
  is an encoding + data followed by its length written backwards in 7-bit groups; strings
  that are canonical integers are stored as integers (7/13/16/24/32/64 bit).
- Module data (``RedisModuleIO`` in ``module.c``), which Sluice can only skip or name: a
  sequence of ``<opcode len> <item>`` (1 signed / 2 unsigned: a length; 3 float: 4 bytes;
  4 double: 8 bytes; 5: a string) ended by opcode 0. A module type ID packs a 9-character
  name (6 bits a character) above a 10-bit encoding version; a key-metadata class spec
  (Redis 8.6, ``keymeta.c``) packs a 4-character name, a 5-bit version and 3 flag bits
  into 32 bits. The two use different 64-character alphabets.

Invariants: every decoder raises ``RdbError`` (never IndexError) on short or bad input.
Imports nothing of Sluice's.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterable


class RdbError(Exception):
    """A malformed or truncated RDB file or payload."""


class RdbUnsupported(RdbError):
    """Well-formed RDB data of a kind Sluice does not hold (hashes, sets, modules...)."""


# -- CRC-64 -----------------------------------------------------------------------------------

_POLY_REFLECTED = 0x95AC9329AC4BC9B5


def _make_table() -> list[int]:
    table = []
    for i in range(256):
        crc = i
        for _ in range(8):
            crc = (crc >> 1) ^ _POLY_REFLECTED if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC_TABLE = _make_table()


def crc64(data: bytes | bytearray | memoryview, crc: int = 0) -> int:
    table = _CRC_TABLE
    for b in bytes(data):
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


# -- LZF --------------------------------------------------------------------------------------

_MAX_OFF = 1 << 13
_MAX_REF = (1 << 8) + (1 << 3)  # 264


def _literals(out: bytearray, data: bytes, start: int, end: int) -> None:
    while start < end:
        run = min(32, end - start)
        out.append(run - 1)
        out += data[start : start + run]
        start += run


def lzf_compress(data: bytes) -> bytes:
    """Compress with a greedy 3-byte hash match; any valid LZF stream is fine for readers."""
    n = len(data)
    out = bytearray()
    table: dict[bytes, int] = {}
    lit_start = 0
    i = 0
    while i < n - 2:
        key = data[i : i + 3]
        ref = table.get(key)
        table[key] = i
        if ref is not None and i - ref <= _MAX_OFF:
            off = i - ref - 1
            length = 3
            maxlen = min(_MAX_REF, n - i)
            while length < maxlen and data[ref + length] == data[i + length]:
                length += 1
            _literals(out, data, lit_start, i)
            ln = length - 2
            if ln < 7:
                out.append((ln << 5) | (off >> 8))
            else:
                out.append((7 << 5) | (off >> 8))
                out.append(ln - 7)
            out.append(off & 0xFF)
            i += length
            lit_start = i
        else:
            i += 1
    _literals(out, data, lit_start, n)
    return bytes(out)


def lzf_decompress(data: bytes, size: int) -> bytes:
    out = bytearray()
    i, n = 0, len(data)
    try:
        while i < n:
            ctrl = data[i]
            i += 1
            if ctrl < 32:
                run = ctrl + 1
                if i + run > n:
                    raise RdbError("LZF literal run past the end of the input")
                out += data[i : i + run]
                i += run
            else:
                ln = ctrl >> 5
                if ln == 7:
                    ln += data[i]
                    i += 1
                ref = len(out) - ((ctrl & 0x1F) << 8) - data[i] - 1
                i += 1
                if ref < 0:
                    raise RdbError("LZF back reference before the start of the output")
                for k in range(ln + 2):  # byte by byte: references may overlap the output
                    out.append(out[ref + k])
    except IndexError:
        raise RdbError("truncated LZF data") from None
    if len(out) != size:
        raise RdbError(f"LZF data decompressed to {len(out)} bytes, expected {size}")
    return bytes(out)


# -- lengths and strings ----------------------------------------------------------------------

ENC_INT8, ENC_INT16, ENC_INT32, ENC_LZF = 0, 1, 2, 3
_INT_RE = re.compile(rb"0|-?[1-9][0-9]{0,19}")
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1


def canonical_int(s: bytes) -> int | None:
    """The integer ``s`` spells in canonical form (Redis's ``string2ll`` round trip), or None."""
    if len(s) > 20 or not _INT_RE.fullmatch(s):
        return None
    v = int(s)
    return v if _I64_MIN <= v <= _I64_MAX else None


def enc_len(n: int) -> bytes:
    if n < 0:
        n &= (1 << 64) - 1  # Redis writes -1 (e.g. entries_read unknown) as a u64
    if n < 1 << 6:
        return bytes((n,))
    if n < 1 << 14:
        return bytes(((n >> 8) | 0x40, n & 0xFF))
    if n <= 0xFFFFFFFF:
        return b"\x80" + struct.pack(">I", n)
    return b"\x81" + struct.pack(">Q", n)


def enc_string(s: bytes, compress: bool = True) -> bytes:
    n = len(s)
    if n <= 11:
        v = canonical_int(s)
        if v is not None:
            if -(1 << 7) <= v < 1 << 7:
                return struct.pack("<Bb", 0xC0 | ENC_INT8, v)
            if -(1 << 15) <= v < 1 << 15:
                return struct.pack("<Bh", 0xC0 | ENC_INT16, v)
            if -(1 << 31) <= v < 1 << 31:
                return struct.pack("<Bi", 0xC0 | ENC_INT32, v)
    if compress and n > 20:
        c = lzf_compress(s)
        if len(c) <= n - 4:
            return b"\xc3" + enc_len(len(c)) + enc_len(n) + c
    return enc_len(n) + s


class Reader:
    """A cursor over RDB bytes (bytes, bytearray or mmap)."""

    __slots__ = ("data", "pos", "end")

    def __init__(self, data: bytes, pos: int = 0, end: int | None = None) -> None:
        self.data = data
        self.pos = pos
        self.end = len(data) if end is None else end

    def take(self, n: int) -> bytes:
        p = self.pos
        if n < 0 or p + n > self.end:
            raise RdbError(f"unexpected end of data at offset {p} (wanted {n} bytes)")
        self.pos = p + n
        return bytes(self.data[p : p + n])

    def byte(self) -> int:
        p = self.pos
        if p >= self.end:
            raise RdbError(f"unexpected end of data at offset {p}")
        self.pos = p + 1
        return int(self.data[p])

    def length(self) -> tuple[int, bool]:
        """(value, is_encoded): ``is_encoded`` means a special string encoding follows."""
        b = self.byte()
        kind = b >> 6
        if kind == 0:
            return b & 0x3F, False
        if kind == 1:
            return ((b & 0x3F) << 8) | self.byte(), False
        if kind == 3:
            return b & 0x3F, True
        if b == 0x80:
            return int(struct.unpack(">I", self.take(4))[0]), False
        if b == 0x81:
            return int(struct.unpack(">Q", self.take(8))[0]), False
        raise RdbError(f"unknown length encoding 0x{b:02x} at offset {self.pos - 1}")

    def len(self) -> int:
        n, encoded = self.length()
        if encoded:
            raise RdbError(f"unexpected string encoding at offset {self.pos - 1}")
        return n

    def signed_len(self) -> int:
        """A length that Redis stores from a signed value (-1 comes back as 2^64-1)."""
        n = self.len()
        return n - (1 << 64) if n >= 1 << 63 else n

    def string(self) -> bytes:
        n, encoded = self.length()
        if not encoded:
            return self.take(n)
        if n == ENC_INT8:
            return b"%d" % struct.unpack("<b", self.take(1))[0]
        if n == ENC_INT16:
            return b"%d" % struct.unpack("<h", self.take(2))[0]
        if n == ENC_INT32:
            return b"%d" % struct.unpack("<i", self.take(4))[0]
        if n == ENC_LZF:
            clen, size = self.len(), self.len()
            return lzf_decompress(self.take(clen), size)
        raise RdbError(f"unknown string encoding {n} at offset {self.pos - 1}")

    def ms_time(self) -> int:
        return int(struct.unpack("<q", self.take(8))[0])


# -- listpacks --------------------------------------------------------------------------------


def _backlen(n: int) -> bytes:
    """The entry length, most significant 7-bit group first, all but that one flagged 0x80."""
    if n <= 127:
        groups = 1
    elif n < 16383:
        groups = 2
    elif n < 2097151:
        groups = 3
    elif n < 268435455:
        groups = 4
    else:
        groups = 5
    out = bytearray()
    for k in range(groups - 1, -1, -1):
        g = (n >> (7 * k)) & 127
        out.append(g if k == groups - 1 else g | 128)
    return bytes(out)


def _lp_entry(item: bytes | int) -> bytes:
    v = item if isinstance(item, int) else canonical_int(item)
    if v is not None:
        if 0 <= v <= 127:
            enc = bytes((v,))
        elif -4096 <= v <= 4095:
            u = v & 0x1FFF
            enc = bytes((0xC0 | (u >> 8), u & 0xFF))
        elif -(1 << 15) <= v < 1 << 15:
            enc = b"\xf1" + struct.pack("<h", v)
        elif -(1 << 23) <= v < 1 << 23:
            enc = b"\xf2" + (v & 0xFFFFFF).to_bytes(3, "little")
        elif -(1 << 31) <= v < 1 << 31:
            enc = b"\xf3" + struct.pack("<i", v)
        else:
            enc = b"\xf4" + struct.pack("<q", v)
    else:
        s = item
        assert isinstance(s, bytes)
        n = len(s)
        if n < 64:
            enc = bytes((0x80 | n,)) + s
        elif n < 4096:
            enc = bytes((0xE0 | (n >> 8), n & 0xFF)) + s
        else:
            enc = b"\xf0" + struct.pack("<I", n) + s
    return enc + _backlen(len(enc))


def lp_encode(items: Iterable[bytes | int]) -> bytes:
    body = bytearray()
    count = 0
    for item in items:
        body += _lp_entry(item)
        count += 1
    total = 6 + len(body) + 1
    return struct.pack("<IH", total, min(count, 65535)) + bytes(body) + b"\xff"


def lp_decode(blob: bytes) -> list[bytes | int]:
    """Elements of a listpack: ``bytes`` for strings, ``int`` for integers."""
    if len(blob) < 7:
        raise RdbError("listpack too short")
    total, _count = struct.unpack_from("<IH", blob, 0)
    if total != len(blob) or blob[-1] != 0xFF:
        raise RdbError("listpack header does not match its size")
    out: list[bytes | int] = []
    i, end = 6, len(blob) - 1
    try:
        while i < end:
            b = blob[i]
            if b < 0x80:
                out.append(b)
                size = 1
            elif b < 0xC0:
                n = b & 0x3F
                out.append(bytes(blob[i + 1 : i + 1 + n]))
                size = 1 + n
            elif b < 0xE0:
                u = ((b & 0x1F) << 8) | blob[i + 1]
                out.append(u - 0x2000 if u & 0x1000 else u)
                size = 2
            elif b < 0xF0:
                n = ((b & 0x0F) << 8) | blob[i + 1]
                out.append(bytes(blob[i + 2 : i + 2 + n]))
                size = 2 + n
            elif b == 0xF0:
                n = struct.unpack_from("<I", blob, i + 1)[0]
                out.append(bytes(blob[i + 5 : i + 5 + n]))
                size = 5 + n
            elif b == 0xF1:
                out.append(struct.unpack_from("<h", blob, i + 1)[0])
                size = 3
            elif b == 0xF2:
                u = int.from_bytes(blob[i + 1 : i + 4], "little")
                out.append(u - (1 << 24) if u & 0x800000 else u)
                size = 4
            elif b == 0xF3:
                out.append(struct.unpack_from("<i", blob, i + 1)[0])
                size = 5
            elif b == 0xF4:
                out.append(struct.unpack_from("<q", blob, i + 1)[0])
                size = 9
            else:
                raise RdbError(f"bad listpack entry encoding 0x{b:02x}")
            back = _backlen(size)
            if blob[i + size : i + size + len(back)] != back:
                raise RdbError("listpack entry back-length does not match")
            i += size + len(back)
    except (IndexError, struct.error):
        raise RdbError("truncated listpack") from None
    if i != end:
        raise RdbError("listpack entries overrun the end marker")
    return out


def as_bytes(v: bytes | int) -> bytes:
    return v if isinstance(v, bytes) else b"%d" % v


# -- module data (read only: Sluice has no modules) ----------------------------------------

_MODULE_CHARSET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
_KEYMETA_CHARSET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
MODULE_OP_EOF, MODULE_OP_SINT, MODULE_OP_UINT = 0, 1, 2
MODULE_OP_FLOAT, MODULE_OP_DOUBLE, MODULE_OP_STRING = 3, 4, 5


def module_type_name(module_id: int) -> str:
    """The 9-character name a module type ID encodes (e.g. ``vectorset``)."""
    v = module_id >> 10
    chars = []
    for _ in range(9):
        chars.append(_MODULE_CHARSET[v & 63])
        v >>= 6
    return bytes(reversed(chars)).decode()


def key_meta_class(spec: int) -> tuple[str, int, int]:
    """``(name, version, flags)`` of a 32-bit key-metadata class spec."""
    flags, version, v = spec & 7, (spec >> 3) & 31, spec >> 8
    chars = []
    for _ in range(4):
        chars.append(_KEYMETA_CHARSET[v & 63])
        v >>= 6
    return bytes(reversed(chars)).decode(), version, flags


def skip_module_value(r: Reader) -> None:
    """Step over module-serialised data up to and including its EOF opcode."""
    while True:
        op = r.len()
        if op == MODULE_OP_EOF:
            return
        if op in (MODULE_OP_SINT, MODULE_OP_UINT):
            r.len()
        elif op == MODULE_OP_FLOAT:
            r.take(4)
        elif op == MODULE_OP_DOUBLE:
            r.take(8)
        elif op == MODULE_OP_STRING:
            r.string()
        else:
            raise RdbError(f"unknown module data opcode {op} at offset {r.pos - 1}")


# -- ziplists (read only: RDBs written by Redis before 7.0) -----------------------------------


def zl_decode(blob: bytes) -> list[bytes]:
    """Elements of a ziplist (``ziplist.c``): ``<zlbytes><zltail><zllen> entries <0xFF>``."""
    out: list[bytes] = []
    i = 10
    try:
        while blob[i] != 0xFF:
            i += 1 if blob[i] < 254 else 5  # prevlen
            b = blob[i]
            kind = b >> 6
            if kind == 0:
                n = b & 0x3F
                out.append(bytes(blob[i + 1 : i + 1 + n]))
                i += 1 + n
            elif kind == 1:
                n = ((b & 0x3F) << 8) | blob[i + 1]
                out.append(bytes(blob[i + 2 : i + 2 + n]))
                i += 2 + n
            elif kind == 2:
                n = struct.unpack_from(">I", blob, i + 1)[0]
                out.append(bytes(blob[i + 5 : i + 5 + n]))
                i += 5 + n
            elif b == 0xC0:
                out.append(b"%d" % struct.unpack_from("<h", blob, i + 1)[0])
                i += 3
            elif b == 0xD0:
                out.append(b"%d" % struct.unpack_from("<i", blob, i + 1)[0])
                i += 5
            elif b == 0xE0:
                out.append(b"%d" % struct.unpack_from("<q", blob, i + 1)[0])
                i += 9
            elif b == 0xF0:
                u = int.from_bytes(blob[i + 1 : i + 4], "little")
                out.append(b"%d" % (u - (1 << 24) if u & 0x800000 else u))
                i += 4
            elif b == 0xFE:
                out.append(b"%d" % struct.unpack_from("<b", blob, i + 1)[0])
                i += 2
            elif 0xF1 <= b <= 0xFD:
                out.append(b"%d" % ((b & 0x0F) - 1))
                i += 1
            else:
                raise RdbError(f"bad ziplist entry encoding 0x{b:02x}")
    except (IndexError, struct.error):
        raise RdbError("truncated ziplist") from None
    return out
