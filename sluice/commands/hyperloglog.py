"""HyperLogLog commands: PFADD, PFCOUNT, PFMERGE, PFDEBUG and PFSELFTEST.

Mirrors Redis's hyperloglog.c (``pfaddCommand``, ``pfcountCommand``, ``pfmergeCommand``,
``pfdebugCommand``, ``pfselftestCommand``); the representation and the arithmetic are in
``storage/hyperloglog.py``. A HyperLogLog is a plain string value: what a command edits is
turned into a ``RawString`` first (Redis's ``dbUnshareStringValue``), which also carries the
register histogram between commands.

Writes and propagation as in Redis: PFADD counts one change per register raised (plus one
for creating the key); PFCOUNT of one key writes the cached cardinality into the value when
it was stale, and so counts as a write (it is propagated, and invalidates WATCH) although
flagged read-only; PFMERGE always writes its destination; PFDEBUG GETREG and TODENSE write
when they convert a sparse value. An error in the middle of PFADD (a corrupted sparse
value) leaves the registers already raised and propagates nothing, as Redis does.

Deviations, on purpose: PFSELFTEST runs the same checks on 10^5 elements instead of 10^7
(``storage/hll_debug.py``); PFDEBUG SIMD answers ``disabled`` (there is no SIMD code here),
and with a bad argument only its error (Redis sends the error and then the status too,
two replies to one command).
"""

from __future__ import annotations

import random
import re

from sluice.protocol import OK, SimpleString
from sluice.storage.hll_debug import decode_sparse, selftest
from sluice.storage.hyperloglog import (
    DENSE,
    HDR,
    HllCorrupt,
    Planes,
    add,
    cached_card,
    create,
    dense_registers,
    estimate,
    histogram,
    invalidate,
    is_hll,
    max_planes,
    pack_planes,
    planes,
    registers_of,
    set_cached_card,
    set_register,
    sparse_to_dense,
    state_of,
)
from sluice.storage.keyspace import WrongTypeError
from sluice.storage.rawstring import RawString

from .args import Args
from .context import Command, Context, Reply
from .errors import (
    HLL_CORRUPT,
    HLL_INVALID,
    PFDEBUG_NO_KEY,
    PFDEBUG_NOT_SPARSE,
    PFDEBUG_ON_OFF,
    PFDEBUG_UNKNOWN,
    PFSELFTEST_FAILED,
    CommandError,
)
from .spec import (
    ACCESS,
    ADMIN,
    DENYOOM,
    FAST,
    INSERT,
    MAY_REPLICATE,
    READONLY,
    RO,
    RW,
    WRITE,
    A,
    cmd,
    key_at,
)

_NONZERO = re.compile(rb"[^\x00]")


def _hll_bytes(value: object) -> bytes | bytearray:
    """The bytes of a string holding a HyperLogLog; WRONGTYPE errors otherwise."""
    if type(value) is bytes:
        data: bytes | bytearray = value
    elif type(value) is RawString:
        data = value.buf
    else:
        raise WrongTypeError()
    if not is_hll(data):
        raise CommandError(HLL_INVALID)
    return data


def _unshared(ctx: Context, key: bytes, value: object) -> RawString:
    """The HyperLogLog at ``key`` as a RawString (converted in place, TTL kept)."""
    _hll_bytes(value)
    if type(value) is RawString:
        return value
    assert type(value) is bytes
    rs = RawString(value)
    ctx.db.replace(key, rs)  # dbUnshareStringValue: the TTL stays, no event
    return rs


def pfadd(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    key = argv[1]
    db = ctx.db
    value = db.get(key)
    updated = 0
    if value is None:
        rs = RawString(create())
        db.add(key, rs)
        updated = 1
    else:
        rs = _unshared(ctx, key, value)
    try:
        updated += add(rs, argv[2:], ctx.server.config.hll_sparse_max_bytes)
    except HllCorrupt:
        raise CommandError(HLL_CORRUPT) from None
    if updated:
        invalidate(rs.buf)
        ctx.modified(key, changes=updated)
        ctx.notify(b"pfadd", key)
    return 1 if updated else 0


def pfcount(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    db = ctx.db
    if len(argv) > 2:
        # The count of the union: registers merged with max, nothing cached anywhere.
        merged: Planes | None = None
        for key in argv[1:]:
            value = db.get(key)
            if value is None:
                continue
            data = _hll_bytes(value)
            try:
                regs = planes(data)
            except HllCorrupt:
                raise CommandError(HLL_CORRUPT) from None
            merged = regs if merged is None else max_planes(merged, regs)
        return 0 if merged is None else estimate(histogram(registers_of(merged)))
    key = argv[1]
    value = db.get(key)
    if value is None:
        return 0
    rs = _unshared(ctx, key, value)
    card = cached_card(rs.buf)
    if card is None:
        st = state_of(rs)
        if st is None:
            raise CommandError(HLL_CORRUPT)
        card = estimate(st.hist)
        set_cached_card(rs.buf, card)
        ctx.modified(key)  # the cached value changed: a write, propagated
    return card


def pfmerge(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    db = ctx.db
    merged: Planes = (0, 0, 0, 0)
    use_dense = False
    for key in argv[1:]:  # the destination is a source too
        value = db.get(key)
        if value is None:
            continue
        data = _hll_bytes(value)
        if data[4] == DENSE:
            use_dense = True
        try:
            merged = max_planes(merged, planes(data))
        except HllCorrupt:
            raise CommandError(HLL_CORRUPT) from None
    dest = argv[1]
    value = db.find(dest)  # a write lookup (the sources' loop read it already)
    if value is None:
        rs = RawString(create())
        db.add(dest, rs)
    else:
        rs = _unshared(ctx, dest, value)
    sparse_max = ctx.server.config.hll_sparse_max_bytes
    try:
        if use_dense:
            sparse_to_dense(rs)
            rs.buf[HDR:] = pack_planes(merged)
            rs.hll = None
        else:
            # Register by register in order, as Redis sets them: the sparse opcodes come out
            # the same (they depend on the order of updates), promotion included.
            regs = registers_of(merged)
            for m in _NONZERO.finditer(regs):
                i = m.start()
                set_register(rs, i, regs[i], sparse_max)
    except HllCorrupt:
        raise CommandError(HLL_CORRUPT) from None
    invalidate(rs.buf)
    ctx.modified(dest)
    ctx.notify(b"pfadd", dest)
    return OK


def pfselftest(ctx: Context, args: Args) -> Reply:
    failure = selftest(ctx.server.config.hll_sparse_max_bytes, random.Random())
    if failure is not None:
        raise CommandError(PFSELFTEST_FAILED % failure)
    return OK


def pfdebug(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    sub = argv[1]
    word = sub.lower()
    if word == b"simd":
        if argv[2].lower() not in (b"on", b"off"):
            raise CommandError(PFDEBUG_ON_OFF)
        return SimpleString(b"disabled")
    key = argv[2]
    value = ctx.db.get(key)
    if value is None:
        raise CommandError(PFDEBUG_NO_KEY)
    rs = _unshared(ctx, key, value)
    buf = rs.buf
    if word == b"getreg":
        if buf[4] != DENSE:
            _to_dense(ctx, key, rs)
        return list(dense_registers(rs.buf))
    if word == b"decode":
        if buf[4] == DENSE:
            raise CommandError(PFDEBUG_NOT_SPARSE)
        return decode_sparse(buf)
    if word == b"encoding":
        return SimpleString(b"dense" if buf[4] == DENSE else b"sparse")
    if word == b"todense":
        if buf[4] == DENSE:
            return 0
        _to_dense(ctx, key, rs)
        return 1
    raise CommandError(PFDEBUG_UNKNOWN % sub.decode(errors="replace"))


def _to_dense(ctx: Context, key: bytes, rs: RawString) -> None:
    try:
        sparse_to_dense(rs)
    except HllCorrupt:
        raise CommandError(HLL_CORRUPT) from None
    ctx.server.dirty += 1  # a change of encoding is propagated, the key is not "modified"


COMMANDS: tuple[Command, ...] = (
    #   name        arity  flags                         acl            keys         handler
    cmd("pfadd",      -2,  WRITE | DENYOOM | FAST,        A.HYPERLOGLOG, key_at(1, RW | INSERT), pfadd,
        "Adds elements to a HyperLogLog key. Creates the key if it doesn't exist.",
        group="hyperloglog", since="2.8.9", complexity="O(1) to add every element.",
        syntax="key [element [element ...]]"),
    cmd("pfcount",    -2,  READONLY | MAY_REPLICATE,      A.HYPERLOGLOG,
        key_at(1, RW | ACCESS, last=-1),                                                 pfcount,
        "Returns the approximated cardinality of the set(s) observed by the HyperLogLog "
        "key(s).", group="hyperloglog", since="2.8.9",
        complexity="O(1) with a very small average constant time when called with a single "
        "key. O(N) with N being the number of keys, and much bigger constant times, when "
        "called with multiple keys.", syntax="key [key ...]", reads=True),
    cmd("pfmerge",    -2,  WRITE | DENYOOM,               A.HYPERLOGLOG,
        (key_at(1, RW | ACCESS | INSERT), key_at(2, RO | ACCESS, last=-1)),              pfmerge,
        "Merges one or more HyperLogLog values into a single key.", group="hyperloglog",
        since="2.8.9", complexity="O(N) to merge N HyperLogLogs, but with high constant times.",
        syntax="destkey [sourcekey [sourcekey ...]]", reads=True),
    cmd("pfdebug",     3,  WRITE | DENYOOM | ADMIN,       A.HYPERLOGLOG, key_at(2, RW | ACCESS), pfdebug,
        "Internal commands for debugging HyperLogLog values.", group="hyperloglog",
        since="2.8.9", complexity="N/A", syntax="subcommand key", doc_flags=("syscmd",)),
    cmd("pfselftest",  1,  ADMIN,                         A.HYPERLOGLOG, None,       pfselftest,
        "An internal command for testing HyperLogLog values.", group="hyperloglog",
        since="2.8.9", complexity="N/A", doc_flags=("syscmd",)),
)
