"""HyperLogLog in Redis's own string representation: what hyperloglog.c computes, in Python.

A HyperLogLog is a string: a 16-byte header (``HYLL``, the encoding byte, three unused
bytes, the cached cardinality as 8 little-endian bytes whose top bit set means "stale"),
then 16384 six-bit registers, either *dense* (packed, 12288 bytes, register 0 in the low
bits of the first byte) or *sparse* (run-length opcodes: ZERO ``00xxxxxx`` for 1-64 zero
registers, XZERO ``01xxxxxx xxxxxxxx`` for 1-16384, VAL ``1vvvvvxx`` for 1-4 registers
holding 1-32). An element goes to register ``h & 16383`` with the value "1 + trailing zeros
of ``h >> 14``" where ``h`` is MurmurHash64A (seed 0xadc83b19); the estimate is Ertl's
improved estimator over the registers' histogram (``hllCount``), in the same double
arithmetic and order as Redis, so the counts are Redis's counts, not close to them. Values
Redis wrote are read here and the other way round, byte for byte: sparse updates split and
merge opcodes exactly as ``hllSparseSet`` does (the result depends on the order of updates,
so it has to), and promotion to dense follows the same ``hll-sparse-max-bytes`` rule.

Speed, without per-register Python loops where a bulk path exists:

* ``HllState`` (kept in a ``RawString``'s ``hll`` slot, see rawstring.py) holds the register
  histogram, updated with each register change, so PFCOUNT after PFADD is O(64); for a
  sparse value it also holds ``starts``: for each opcode byte, the first register its opcode
  covers (the second byte of an XZERO repeats it). Register numbers only ever split, never
  move, so a bisection finds the opcode of a register, and inserting or removing opcodes is
  one memmove in the buffer and one in ``starts`` (Redis walks the opcodes from the start).
* Dense registers are unpacked and packed 4096 at a time (the three bytes that hold four
  registers are sliced out with a stride and combined as big integers, lane by lane), the
  registers of several HLLs are merged with a lane-wise max on big integers, and histograms
  are counted by deleting one value at a time with ``bytes.translate``.
* A sparse value that does not add up to 16384 registers (corrupted) gets no state: it takes
  ``sparse_set_exact``, which walks the opcodes as Redis does, so it fails, or succeeds, on
  the same inputs Redis does.

Imports nothing of Sluice's outside ``storage``.
"""

from __future__ import annotations

import math
import struct
from array import array
from bisect import bisect_right
from collections.abc import Iterable

from .rawstring import RawString

P = 14  # register index bits
Q = 64 - P  # bits left for the run of zeros
REGISTERS = 1 << P
HDR = 16  # header bytes
DENSE_SIZE = HDR + (REGISTERS * 6 + 7) // 8  # 12304
DENSE, SPARSE = 0, 1
VAL_MAX_VALUE, VAL_MAX_LEN, ZERO_MAX_LEN, XZERO_MAX_LEN = 32, 4, 64, 16384
ALPHA_INF = 0.721347520444481703680  # 0.5 / ln(2)
SEED = 0xADC83B19
_M = 0xC6A4A7935BD1E995
_MASK64 = (1 << 64) - 1
_BLOCKS = [struct.Struct(f"<{n}Q") for n in range(64)]


class HllInvalid(Exception):
    """The string is not a HyperLogLog (``isHLLObjectOrReply``)."""

    def __str__(self) -> str:
        return "WRONGTYPE Key is not a valid HyperLogLog string value."


class HllCorrupt(Exception):
    """The string claims to be a sparse HyperLogLog but its opcodes do not add up."""

    def __str__(self) -> str:
        return "INVALIDOBJ Corrupted HLL object detected"


# -- hashing -------------------------------------------------------------------------------


def murmurhash64a(data: bytes, seed: int = SEED) -> int:
    """MurmurHash2, 64-bit version, reading blocks little-endian as Redis's endian-neutral
    variant does."""
    n = len(data)
    h = (seed ^ (n * _M)) & _MASK64
    nblocks = n >> 3
    if nblocks:
        blocks = (_BLOCKS[nblocks].unpack_from(data) if nblocks < 64
                  else struct.unpack_from(f"<{nblocks}Q", data))
        for k in blocks:
            k = (k * _M) & _MASK64
            k ^= k >> 47
            h ^= (k * _M) & _MASK64
            h = (h * _M) & _MASK64
    if n & 7:
        h ^= int.from_bytes(data[n - (n & 7):], "little")
        h = (h * _M) & _MASK64
    h ^= h >> 47
    h = (h * _M) & _MASK64
    return h ^ (h >> 47)


def pattern_len(element: bytes) -> tuple[int, int]:
    """``hllPatLen``: (register index, run of zeros + 1) of an element."""
    h = murmurhash64a(element)
    rest = (h >> P) | (1 << Q)
    return h & (REGISTERS - 1), (rest & -rest).bit_length()


# -- header ------------------------------------------------------------------------------------


def create() -> bytearray:
    """``createHLLObject``: an empty sparse HLL (one XZERO opcode covering everything)."""
    buf = bytearray(b"HYLL\x01" + bytes(11))
    buf += bytes((0x40 | ((XZERO_MAX_LEN - 1) >> 8), (XZERO_MAX_LEN - 1) & 0xFF))
    return buf


def is_hll(data: bytes | bytearray) -> bool:
    """The header checks of ``isHLLObjectOrReply`` (the type is checked by the caller)."""
    if len(data) < HDR or data[:4] != b"HYLL" or data[4] > SPARSE:
        return False
    return data[4] == SPARSE or len(data) == DENSE_SIZE


def cached_card(buf: bytes | bytearray) -> int | None:
    """The cached cardinality, or None when it is stale."""
    if buf[15] & 0x80:
        return None
    return int.from_bytes(buf[8:16], "little")


def set_cached_card(buf: bytearray, card: int) -> None:
    buf[8:16] = card.to_bytes(8, "little")


def invalidate(buf: bytearray) -> None:
    buf[15] |= 0x80


# -- the estimator ------------------------------------------------------------------------------


def _sigma(x: float) -> float:
    if x == 1.0:
        return math.inf
    y = 1.0
    z = x
    while True:
        x *= x
        z_prev = z
        z += x * y
        y += y
        if z_prev == z:
            return z


def _tau(x: float) -> float:
    if x == 0.0 or x == 1.0:
        return 0.0
    y = 1.0
    z = 1 - x
    while True:
        x = math.sqrt(x)
        z_prev = z
        y *= 0.5
        d = 1 - x
        z -= d * d * y  # pow(1 - x, 2), which the compiler turns into a product
        if z_prev == z:
            return z / 3


def estimate(hist: list[int]) -> int:
    """``hllCount``'s estimate from the register histogram (64 counts), rounded as
    ``llroundl`` (half away from zero)."""
    m = float(REGISTERS)
    z = m * _tau((m - hist[Q + 1]) / m)
    for j in range(Q, 0, -1):
        z += hist[j]
        z *= 0.5
    z += m * _sigma(hist[0] / m)
    e = ALPHA_INF * m * m / z
    whole = math.floor(e)
    return int(whole) + (1 if e - whole >= 0.5 else 0)


def histogram(registers: bytes | bytearray) -> list[int]:
    """Counts of each register value (0..63) in a raw array of one byte per register."""
    hist = [0] * 64
    rest = bytes(registers)
    value = 0
    while rest and value < 64:
        left = rest.translate(None, _ONE_BYTE[value])
        hist[value] = len(rest) - len(left)
        rest = left
        value += 1
    return hist


_ONE_BYTE = [bytes((i,)) for i in range(256)]


# -- dense registers, in bulk -----------------------------------------------------------------

_QUARTER = REGISTERS // 4  # 4096: registers per lane position, bytes per packed third


def _lanes(byte: int) -> int:
    return int.from_bytes(bytes((byte,)) * _QUARTER, "little")


_L03, _L0F, _L3F = _lanes(0x03), _lanes(0x0F), _lanes(0x3F)
_H80 = _lanes(0x80)


Planes = tuple[int, int, int, int]
"""Registers 4k, 4k+1, 4k+2 and 4k+3 (k = 0..4095) as four integers of 4096 byte lanes."""


def dense_planes(buf: bytes | bytearray) -> Planes:
    """The registers of a dense HLL as planes (``hllMergeDense``'s unpacking): four
    registers live in three bytes, and each of the three is sliced out with a stride."""
    b0 = int.from_bytes(buf[HDR::3], "little")
    b1 = int.from_bytes(buf[HDR + 1::3], "little")
    b2 = int.from_bytes(buf[HDR + 2::3], "little")
    return (b0 & _L3F, ((b0 >> 6) & _L03) | ((b1 & _L0F) << 2),
            ((b1 >> 4) & _L0F) | ((b2 & _L03) << 4), (b2 >> 2) & _L3F)


def planes_of(registers: bytes | bytearray) -> Planes:
    """16384 one-byte registers as planes."""
    return (int.from_bytes(registers[0::4], "little"), int.from_bytes(registers[1::4], "little"),
            int.from_bytes(registers[2::4], "little"), int.from_bytes(registers[3::4], "little"))


def registers_of(planes: Planes) -> bytes:
    """Planes back to 16384 one-byte registers."""
    out = bytearray(REGISTERS)
    for k in range(4):
        out[k::4] = planes[k].to_bytes(_QUARTER, "little")
    return bytes(out)


def dense_registers(buf: bytes | bytearray) -> bytes:
    """The 16384 registers of a dense HLL, one byte each."""
    return registers_of(dense_planes(buf))


def pack_planes(planes: Planes) -> bytearray:
    """Registers (each below 64) packed six bits each (``hllDenseCompress``)."""
    a, b, c, d = planes
    out = bytearray(DENSE_SIZE - HDR)
    out[0::3] = ((a & _L3F) | ((b & _L03) << 6)).to_bytes(_QUARTER, "little")
    out[1::3] = (((b >> 2) & _L0F) | ((c & _L0F) << 4)).to_bytes(_QUARTER, "little")
    out[2::3] = (((c >> 4) & _L03) | ((d & _L3F) << 2)).to_bytes(_QUARTER, "little")
    return out


def pack_dense(registers: bytes | bytearray) -> bytearray:
    """16384 one-byte registers (each below 64) packed six bits each."""
    return pack_planes(planes_of(registers))


def max_planes(x: Planes, y: Planes) -> Planes:
    """Register-wise maximum (values below 128), lane by lane on big integers: subtracting
    from each byte lane with its top bit set borrows nothing from its neighbour."""
    out = []
    for a, b in zip(x, y, strict=True):
        ge = ((a | _H80) - b) & _H80  # top bit of each lane: a >= b
        pick = (ge >> 7) * 0xFF
        out.append((a & pick) | (b & ~pick))
    return out[0], out[1], out[2], out[3]


def max_registers(a: bytes, b: bytes) -> bytes:
    """Register-wise maximum of two raw arrays."""
    return registers_of(max_planes(planes_of(a), planes_of(b)))


def planes(buf: bytes | bytearray) -> Planes:
    """The registers of a (header-checked) HLL as planes; HllCorrupt for a corrupted sparse."""
    return dense_planes(buf) if buf[4] == DENSE else planes_of(sparse_registers(buf))


def dense_get(buf: bytes | bytearray, index: int) -> int:
    """``HLL_DENSE_GET_REGISTER``."""
    pos = index * 6
    byte = HDR + (pos >> 3)
    fb = pos & 7
    if fb <= 2:
        return (buf[byte] >> fb) & 63
    return ((buf[byte] >> fb) | (buf[byte + 1] << (8 - fb))) & 63


def dense_put(buf: bytearray, index: int, value: int) -> None:
    """``HLL_DENSE_SET_REGISTER``."""
    pos = index * 6
    byte = HDR + (pos >> 3)
    fb = pos & 7
    buf[byte] = (buf[byte] & ~(63 << fb) & 0xFF) | ((value << fb) & 0xFF)
    if fb > 2:
        buf[byte + 1] = (buf[byte + 1] & ~(63 >> (8 - fb))) | (value >> (8 - fb))


# -- sparse opcodes ------------------------------------------------------------------------------


def _zero_run(length: int) -> bytes:
    """One ZERO (up to 64) or XZERO opcode for ``length`` zero registers."""
    if length > ZERO_MAX_LEN:
        n = length - 1
        return bytes((0x40 | (n >> 8), n & 0xFF))
    return _ONE_BYTE[length - 1]


def _val(value: int, length: int) -> int:
    return 0x80 | ((value - 1) << 2) | (length - 1)


def sparse_walk(buf: bytes | bytearray) -> tuple[list[tuple[int, int, int, int]], bool]:
    """The opcodes of a sparse HLL as (first register, count, value, opcode bytes) runs, and
    whether they are valid: stop at the first run past register 16383
    (``hllSparseRegHisto``'s check), valid only if they cover exactly 16384. A truncated
    XZERO counts as invalid."""
    runs: list[tuple[int, int, int, int]] = []
    idx = 0
    p = HDR
    end = len(buf)
    while p < end:
        op = buf[p]
        if op & 0x80:
            runlen, value, oplen = (op & 3) + 1, ((op >> 2) & 0x1F) + 1, 1
        elif op & 0x40:
            if p + 1 >= end:
                return runs, False
            runlen, value, oplen = (((op & 0x3F) << 8) | buf[p + 1]) + 1, 0, 2
        else:
            runlen, value, oplen = (op & 0x3F) + 1, 0, 1
        p += oplen
        if idx + runlen > REGISTERS:
            return runs, False
        runs.append((idx, runlen, value, oplen))
        idx += runlen
    return runs, idx == REGISTERS


def sparse_registers(buf: bytes | bytearray) -> bytes:
    """The registers of a sparse HLL, one byte each; HllCorrupt if it is not valid."""
    runs, valid = sparse_walk(buf)
    if not valid:
        raise HllCorrupt()
    out = bytearray(REGISTERS)
    for first, count, value, _ in runs:
        if value:
            out[first:first + count] = _ONE_BYTE[value] * count
    return bytes(out)


def registers(buf: bytes | bytearray) -> bytes:
    """The 16384 registers of a (header-checked) HLL, one byte each."""
    return dense_registers(buf) if buf[4] == DENSE else sparse_registers(buf)


class HllState:
    """What PFADD / PFCOUNT keep beside a HyperLogLog's bytes (``RawString.hll``)."""

    __slots__ = ("hist", "starts")

    def __init__(self, hist: list[int], starts: array[int] | None) -> None:
        self.hist = hist  # how many registers hold each value 0..63
        self.starts = starts  # sparse: first register of each opcode byte's opcode; dense: None


def state_of(rs: RawString) -> HllState | None:
    """The RawString's HllState, built on first use; None for a corrupted sparse value."""
    st = rs.hll
    if type(st) is HllState:
        return st
    buf = rs.buf
    if buf[4] == DENSE:
        st = HllState(histogram(dense_registers(buf)), None)
    else:
        runs, valid = sparse_walk(buf)
        if not valid:
            return None
        hist = [0] * 64
        starts = array("H")
        for first, count, value, oplen in runs:
            hist[value] += count
            starts.append(first)
            if oplen == 2:
                starts.append(first)  # an XZERO's second byte
        st = HllState(hist, starts)
    rs.hll = st
    return st


def sparse_to_dense(rs: RawString) -> None:
    """``hllSparseToDense``: rewrite the value dense, in place (header copied, cached
    cardinality included); HllCorrupt if the sparse opcodes do not add up."""
    buf = rs.buf
    if buf[4] == DENSE:
        return
    regs = sparse_registers(buf)
    header = bytearray(buf[:HDR])
    header[4] = DENSE
    buf[:] = header + pack_dense(regs)
    st = rs.hll
    if type(st) is HllState:
        st.starts = None


def add(rs: RawString, elements: Iterable[bytes], sparse_max: int) -> int:
    """PFADD's work: add ``elements``; return how many changed a register. HllCorrupt (after
    the changes made before it, as in Redis) if a sparse value turns out corrupted."""
    updated = 0
    buf = rs.buf
    st = state_of(rs) if buf[4] == SPARSE else rs.hll
    for element in elements:
        index, count = pattern_len(element)
        if buf[4] == DENSE:
            old = dense_get(buf, index)
            if count > old:
                dense_put(buf, index, count)
                if type(st) is HllState:
                    st.hist[old] -= 1
                    st.hist[count] += 1
                updated += 1
        elif st is None:
            updated += sparse_set_exact(rs, index, count, sparse_max)
        else:
            assert type(st) is HllState
            updated += sparse_set(rs, st, index, count, sparse_max)
    return updated


def set_register(rs: RawString, index: int, count: int, sparse_max: int) -> int:
    """Raise one register to ``count`` if lower, in either encoding; 1 if it changed."""
    buf = rs.buf
    if buf[4] == DENSE:
        old = dense_get(buf, index)
        if count <= old:
            return 0
        dense_put(buf, index, count)
        st = rs.hll
        if type(st) is HllState:
            st.hist[old] -= 1
            st.hist[count] += 1
        return 1
    st = state_of(rs)
    if st is None:
        return sparse_set_exact(rs, index, count, sparse_max)
    return sparse_set(rs, st, index, count, sparse_max)


def _promote(rs: RawString, st: HllState | None, index: int, count: int) -> int:
    """Convert to dense and set the register there (where it must change)."""
    sparse_to_dense(rs)
    buf = rs.buf
    old = dense_get(buf, index)
    dense_put(buf, index, count)
    if st is not None:
        st.hist[old] -= 1
        st.hist[count] += 1
    return 1


def _split(is_val: bool, value: int, first: int, last: int, index: int, count: int
           ) -> tuple[bytes, list[int]]:
    """``hllSparseSet``'s case D: the opcodes replacing a run from ``first`` to ``last``
    holding ``value`` once register ``index`` holds ``count``, and their first registers
    (one per byte)."""
    seq = bytearray()
    starts: list[int] = []
    if index != first:
        part = _ONE_BYTE[_val(value, index - first)] if is_val else _zero_run(index - first)
        seq += part
        starts += [first] * len(part)
    seq.append(_val(count, 1))
    starts.append(index)
    if index != last:
        part = _ONE_BYTE[_val(value, last - index)] if is_val else _zero_run(last - index)
        seq += part
        starts += [index + 1] * len(part)
    return bytes(seq), starts


def _merge_vals(buf: bytearray, starts: array[int] | None, p: int) -> None:
    """``hllSparseSet``'s step 4: from opcode byte ``p``, merge adjacent VAL opcodes of the
    same value while their lengths fit, looking at up to five opcodes."""
    end = len(buf)
    p += HDR
    scan = 5
    while p < end and scan:
        scan -= 1
        op = buf[p]
        if op & 0xC0 == 0x40:
            p += 2
            continue
        if not op & 0x80:
            p += 1
            continue
        if p + 1 < end and buf[p + 1] & 0x80:
            nxt = buf[p + 1]
            if (op >> 2) & 0x1F == (nxt >> 2) & 0x1F:
                length = (op & 3) + (nxt & 3) + 2
                if length <= VAL_MAX_LEN:
                    buf[p + 1] = _val(((op >> 2) & 0x1F) + 1, length)
                    del buf[p]
                    if starts is not None:
                        del starts[p - HDR + 1]  # the merged opcode keeps the first's start
                    end -= 1
                    continue
        p += 1


def sparse_set(rs: RawString, st: HllState, index: int, count: int, sparse_max: int) -> int:
    """``hllSparseSet`` on a valid sparse value with its state: 1 if the register changed."""
    if count > VAL_MAX_VALUE:
        return _promote(rs, st, index, count)
    starts = st.starts
    assert starts is not None
    buf = rs.buf
    p = bisect_right(starts, index) - 1
    if p > 0 and starts[p - 1] == starts[p]:
        p -= 1  # the second byte of an XZERO
    op = buf[HDR + p]
    first = starts[p]
    if op & 0x80:
        value = ((op >> 2) & 0x1F) + 1
        if value >= count:
            return 0
        runlen, oplen, is_val = (op & 3) + 1, 1, True
    elif op & 0x40:
        value, runlen, oplen, is_val = 0, (((op & 0x3F) << 8) | buf[HDR + p + 1]) + 1, 2, False
    else:
        value, runlen, oplen, is_val = 0, (op & 0x3F) + 1, 1, False
    prev = p - 1
    if prev > 0 and starts[prev - 1] == starts[prev]:
        prev -= 1
    if runlen == 1 and oplen == 1:
        buf[HDR + p] = _val(count, 1)  # cases B and C: the opcode is this register alone
    else:
        seq, seq_starts = _split(is_val, value, first, first + runlen - 1, index, count)
        if len(seq) > oplen and len(buf) + len(seq) - oplen > sparse_max:
            return _promote(rs, st, index, count)
        buf[HDR + p:HDR + p + oplen] = seq
        starts[p:p + oplen] = array("H", seq_starts)
    _merge_vals(buf, starts, max(prev, 0))
    st.hist[value] -= 1
    st.hist[count] += 1
    invalidate(buf)
    return 1


def sparse_set_exact(rs: RawString, index: int, count: int, sparse_max: int) -> int:
    """``hllSparseSet`` walking the opcodes from the start, for a sparse value that does
    not add up (no state): it changes the register when Redis would, HllCorrupt when Redis
    fails (the register's opcode is not found, or a promotion meets the corruption)."""
    rs.hll = None
    if count > VAL_MAX_VALUE:
        return _promote(rs, None, index, count)
    buf = rs.buf
    end = len(buf)
    p = HDR
    first = 0
    prev = -1
    while p < end:
        op = buf[p]
        if op & 0x80:
            span, oplen = (op & 3) + 1, 1
        elif op & 0x40:
            if p + 1 >= end:
                raise HllCorrupt()
            span, oplen = (((op & 0x3F) << 8) | buf[p + 1]) + 1, 2
        else:
            span, oplen = (op & 0x3F) + 1, 1
        if index <= first + span - 1:
            break
        prev = p
        p += oplen
        first += span
    else:
        raise HllCorrupt()
    op = buf[p]
    is_val = bool(op & 0x80)
    value = ((op >> 2) & 0x1F) + 1 if is_val else 0
    if is_val and value >= count:
        return 0
    if span == 1 and oplen == 1:
        buf[p] = _val(count, 1)
    else:
        seq, _ = _split(is_val, value, first, first + span - 1, index, count)
        if len(seq) > oplen and len(buf) + len(seq) - oplen > sparse_max:
            return _promote(rs, None, index, count)
        buf[p:p + oplen] = seq
    _merge_vals(buf, None, (prev if prev >= 0 else HDR) - HDR)
    invalidate(buf)
    return 1
