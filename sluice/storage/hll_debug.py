"""PFSELFTEST's checks (``pfselftestCommand``) and PFDEBUG DECODE, over hyperloglog.py.

Redis sets and reads back every register a thousand times with random values, then adds ten
million elements to a dense and a sparse HLL side by side, checking at 1, 10, 100 ...
elements that sparse stays sparse while it is small, that both give the same count and that
the error stays within six standard errors. In Python that would take minutes, so the same
checks run on fewer cycles and up to 100,000 elements (about a second); the element of step
``j`` is ``j ^ seed`` as 8 little-endian bytes, as Redis's is in memory.

Imports nothing of Sluice's outside ``storage``.
"""

from __future__ import annotations

import math
import random

from .hyperloglog import (
    DENSE_SIZE,
    HDR,
    REGISTERS,
    SPARSE,
    create,
    dense_get,
    dense_put,
    dense_registers,
    estimate,
    histogram,
    pack_dense,
    pattern_len,
    registers,
    set_register,
)
from .rawstring import RawString

REGISTER_CYCLES = 50  # Redis: 1000
ELEMENTS = 100_000  # Redis: 10,000,000
_LOW6 = bytes(i & 63 for i in range(256))


def selftest(sparse_max: int, rng: random.Random) -> str | None:
    """Run the checks; the failure's text (after ``TESTFAILED``), or None when all pass."""
    buf = bytearray(DENSE_SIZE)
    for cycle in range(REGISTER_CYCLES):
        values = rng.randbytes(REGISTERS).translate(_LOW6)
        if cycle == 0:  # one cycle register by register, as the macros are used
            for i, v in enumerate(values):
                dense_put(buf, i, v)
            got = bytes(dense_get(buf, i) for i in range(REGISTERS))
        else:
            buf[HDR:] = pack_dense(values)
            got = dense_registers(buf)
        if got != values:
            i = next(i for i in range(REGISTERS) if got[i] != values[i])
            return f"Register {i} should be {values[i]} but is {got[i]}"

    dense = RawString(bytes(DENSE_SIZE))  # a zeroed header says "dense"
    sparse = RawString(create())
    relerr = 1.04 / math.sqrt(REGISTERS)
    seed = rng.getrandbits(64)
    checkpoint = 1
    for j in range(1, ELEMENTS + 1):
        index, count = pattern_len((j ^ seed).to_bytes(8, "little"))
        set_register(dense, index, count, sparse_max)
        set_register(sparse, index, count, sparse_max)
        if j != checkpoint:
            continue
        if j < sparse_max / 2 and sparse.buf[4] != SPARSE:
            return "sparse encoding not used"
        card = estimate(histogram(dense_registers(dense.buf)))
        if card != estimate(histogram(registers(sparse.buf))):
            return "dense/sparse disagree"
        maxerr = 1 if j == 10 else math.ceil(relerr * 6 * checkpoint)
        abserr = abs(checkpoint - card)
        if abserr > maxerr:
            return f"Too big error. card:{checkpoint} abserr:{abserr}"
        checkpoint *= 10
    return None


def decode_sparse(buf: bytes | bytearray) -> bytes:
    """PFDEBUG DECODE: the opcodes as ``z:len``, ``Z:len`` and ``v:value,len``."""
    out = []
    p, end = HDR, len(buf)
    while p < end:
        op = buf[p]
        if op & 0x80:
            out.append(b"v:%d,%d" % (((op >> 2) & 0x1F) + 1, (op & 3) + 1))
            p += 1
        elif op & 0x40:
            low = buf[p + 1] if p + 1 < end else 0
            out.append(b"Z:%d" % ((((op & 0x3F) << 8) | low) + 1))
            p += 2
        else:
            out.append(b"z:%d" % ((op & 0x3F) + 1))
            p += 1
    return b" ".join(out)
