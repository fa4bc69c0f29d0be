"""RDB snapshots and DUMP/RESTORE payloads, in the format of Redis 8.6 (RDB version 13).

Role: turn a keyspace into RDB bytes and back. Used by SAVE/BGSAVE, the AOF base file
(``aof-use-rdb-preamble yes``), DEBUG RELOAD, DUMP/RESTORE and ``sluice-check-rdb``.

File layout (``rdbSaveRio``):
``REDIS0013``, AUX fields (``redis-ver``, ``redis-bits``, ``ctime``, ``used-mem``,
``aof-base``), then per non-empty database ``SELECTDB n`` + ``RESIZEDB size expires``, then
per key ``[EXPIRETIME_MS ms] <type> <key> <value>``, then (Sluice only, when some stream has
a retention or dead-letter policy) one more AUX field, ``sluice-xpolicies``
(``stream_policy.py``; Redis skips AUX fields it does not know), then ``EOF`` and the CRC-64
of every byte before it (little-endian; zero when ``rdbchecksum no``, which readers then
skip).

What we write is what Redis 8.6.3 writes for the types we hold, with its version number, so
8.6 loads our files and RESTOREs our payloads (it refuses versions newer than its own; 7.x
refuses ours for the same reason, as it refuses 8.6's): strings (``RDB_TYPE_STRING``, integer
or LZF encoded when that is shorter), lists (``RDB_TYPE_LIST_QUICKLIST_2``: the list's own
nodes, listpacks and plain nodes for large elements), streams (``RDB_TYPE_STREAM_LISTPACKS_4``,
see ``rdb_stream.py``), hashes (listpack, listpack-ex, hashtable with or without field TTLs,
see ``rdb_hash.py``), sets and sorted sets in the encoding they have (``rdb_set.py``,
``rdb_zset.py``).

Read: versions 1 to 13. Old list encodings (plain, ziplist, quicklist of ziplists), every
stream type (15, 19, 21, 26), every hash type (4, 9, 13, 16, 22-25). Opcodes written by newer servers: ``SLOT_INFO`` (a cluster
node's per-slot sizes, a hint we skip as Redis does outside cluster mode) and ``KEY_META``
(module-owned key metadata before a key's type: skipped when its class allows that, refused
otherwise, as Redis does for a class no module registered). Sets and sorted sets of every
RDB type (2, 3, 5, 11, 12, 17, 20) are read. Module values (vector sets among them) are
refused with an error naming the type; so are module AUX data and functions.

A DUMP payload is ``[KEY_META ...] <type><value><RDB version u16le><CRC-64 u64le>``
(``createDumpPayload``); a zero CRC means "not checksummed" (``verifyDumpPayload``).

Imports nothing of Sluice's outside ``storage``.
"""

from __future__ import annotations

import random
import struct
import time
from collections.abc import Callable, Iterator
from typing import Any

from .keyspace import Keyspace, type_name
from .rdb_codec import (
    RdbError,
    RdbUnsupported,
    Reader,
    as_bytes,
    crc64,
    enc_len,
    enc_string,
    key_meta_class,
    lp_decode,
    lp_encode,
    module_type_name,
    skip_module_value,
    zl_decode,
)

__all__ = ["RdbError", "RdbUnsupported", "dump_keyspace", "load_into", "dump_payload", "load_payload", "check"]

RDB_VERSION = 13  # what we write, and the newest we read (Redis 8.6's)
RDB_REDIS_VER = b"8.6.3"  # the redis-ver AUX field: the release whose format we write

T_STRING, T_LIST, T_SET, T_ZSET, T_HASH, T_ZSET_2 = 0, 1, 2, 3, 4, 5
T_MODULE_PRE_GA, T_MODULE_2 = 6, 7
T_LIST_ZIPLIST, T_LIST_QUICKLIST, T_STREAM_LISTPACKS = 10, 14, 15
T_LIST_QUICKLIST_2, T_STREAM_LISTPACKS_2, T_STREAM_LISTPACKS_3 = 18, 19, 21
T_STREAM_LISTPACKS_4 = 26
OP_KEY_META, OP_SLOT_INFO = 243, 244
OP_FUNCTION2, OP_FUNCTION, OP_MODULE_AUX, OP_IDLE, OP_FREQ, OP_AUX = 245, 246, 247, 248, 249, 250
OP_RESIZEDB, OP_EXPIRETIME_MS, OP_EXPIRETIME, OP_SELECTDB, OP_EOF = 251, 252, 253, 254, 255
QUICKLIST_PLAIN, QUICKLIST_PACKED = 1, 2
KEY_META_MAX_CLASSES = 7  # classes 1..7 belong to modules (0, the expire, is not written)
KEY_META_ALLOW_IGNORE = 1  # class flag: a loader without the class may skip its value

# Value types Sluice does not hold (types 22-25 are hashes with field expiry, 7.4+).
_TYPE_NAMES = {2: "set", 3: "zset", 4: "hash", 5: "zset", 9: "hash", 11: "set", 12: "zset",
               13: "hash", 16: "hash", 17: "zset", 20: "set", 22: "hash", 23: "hash",
               24: "hash", 25: "hash"}


def is_object_type(t: int) -> bool:
    """A byte that may start a value (``rdbIsObjectType``), as opposed to an opcode."""
    return 0 <= t <= 7 or 9 <= t <= T_STREAM_LISTPACKS_4


# -- value codecs (families plug in here) ------------------------------------------------------

Saver = Callable[[Any, "SaveOptions"], tuple[int, bytes]]
Loader = Callable[[Reader, int], Any]
SAVERS: dict[bytes, Saver] = {}  # TYPE name -> fn(value, opts) -> (rdb type, encoded value)
LOADERS: dict[int, Loader] = {}  # rdb type -> fn(reader, rdb type) -> value


class SaveOptions:
    __slots__ = ("compress",)

    def __init__(self, compress: bool = True) -> None:
        self.compress = compress


def _save_string(value: bytes, opts: SaveOptions) -> tuple[int, bytes]:
    # bytes() is the value itself for bytes, a copy of a RawString's buffer (rawstring.py).
    return T_STRING, enc_string(bytes(value), opts.compress)


def _save_list(value: Any, opts: SaveOptions) -> tuple[int, bytes]:
    # The list's own nodes, as Redis saves them (a listpack-encoded list as one node), so that
    # a reload or RESTORE brings back the same encoding.
    nodes = list(value.nodes())
    out = [enc_len(len(nodes))]
    for plain, elements in nodes:
        if plain:
            out.append(enc_len(QUICKLIST_PLAIN))
            out.append(enc_string(elements[0], opts.compress))
        else:
            out.append(enc_len(QUICKLIST_PACKED))
            out.append(enc_string(lp_encode(elements), opts.compress))
    return T_LIST_QUICKLIST_2, b"".join(out)


def _load_list(r: Reader, rdb_type: int) -> Any:
    """A list as Redis loads it: node by node for the quicklist types (then a listpack if it is
    one small node), element by element for the old ones. Built for the default
    ``list-max-listpack-size``; the server applies its own with ``ListValue.refill``."""
    from . import lists

    if rdb_type in (T_LIST, T_LIST_ZIPLIST):
        items = [r.string() for _ in range(r.len())] if rdb_type == T_LIST else zl_decode(r.string())
        if not items:
            raise RdbError("empty list in RDB")
        return lists.ListValue(items, convert=rdb_type == T_LIST)
    nodes: list[tuple[bool, list[bytes]]] = []
    for _ in range(r.len()):
        if rdb_type == T_LIST_QUICKLIST:
            nodes.append((False, zl_decode(r.string())))
            continue
        container = r.len()
        blob = r.string()
        if container == QUICKLIST_PLAIN:
            nodes.append((True, [blob]))
        elif container == QUICKLIST_PACKED:
            nodes.append((False, [as_bytes(v) for v in lp_decode(blob)]))
        else:
            raise RdbError(f"unknown quicklist container {container}")
    if not any(elements for _, elements in nodes):
        raise RdbError("empty list in RDB")
    return lists.ListValue.from_nodes(nodes)


SAVERS[b"string"] = _save_string
SAVERS[b"list"] = _save_list
LOADERS[T_STRING] = lambda r, t: r.string()
for _t in (T_LIST, T_LIST_ZIPLIST, T_LIST_QUICKLIST, T_LIST_QUICKLIST_2):
    LOADERS[_t] = _load_list


# Sluice's stream policies travel in one AUX field after the databases (stream_policy.py):
# (stream class, has_policy, encode_record, join_records, apply_aux, AUX name), when present.
_POLICIES: tuple[Any, ...] | None = None


def _register_streams() -> None:
    global _POLICIES
    try:
        from . import rdb_stream, stream_policy
        from .stream import Stream
    except ImportError:  # the stream family is not in this build
        return
    rdb_stream.register(SAVERS, LOADERS)
    p = stream_policy
    _POLICIES = (Stream, p.has_policy, p.encode_record, p.join_records,
                 p.apply_aux, p.AUX_NAME)


_register_streams()


def _register_hashes() -> None:
    from . import rdb_hash

    rdb_hash.register(SAVERS, LOADERS)


_register_hashes()


def _register_sets() -> None:
    from . import rdb_set, rdb_zset

    rdb_set.register(SAVERS, LOADERS)
    rdb_zset.register(SAVERS, LOADERS)


_register_sets()


def encode_value(value: Any, opts: SaveOptions) -> tuple[int, bytes]:
    tname = type_name(value)
    saver = SAVERS.get(tname)
    if saver is None:
        raise TypeError(f"no RDB serialisation for values of type {tname.decode()}")
    return saver(value, opts)


def decode_value(r: Reader, rdb_type: int) -> Any:
    loader = LOADERS.get(rdb_type)
    if loader is None:
        what = _TYPE_NAMES.get(rdb_type)
        if what:
            raise RdbUnsupported(f"RDB value type {rdb_type} ({what}) is not supported: "
                                 f"Sluice has no {what} type")
        if rdb_type == T_MODULE_2:
            name = module_type_name(r.len())
            raise RdbUnsupported(f"RDB value type 7 (module type '{name}') is not supported: "
                                 f"Sluice has no modules")
        if rdb_type == T_MODULE_PRE_GA:
            raise RdbUnsupported("RDB value type 6 (pre-release module value) is not supported")
        raise RdbError(f"unknown RDB value type {rdb_type} at offset {r.pos - 1}")
    return loader(r, rdb_type)


def skip_key_meta(r: Reader) -> None:
    """Step over a ``KEY_META`` block (after its opcode).

    Every class belongs to a module, and Sluice has none: like Redis with a class no module
    registered, skip the value when the class says that is allowed, otherwise refuse.
    """
    n = r.len()
    if n > KEY_META_MAX_CLASSES:
        raise RdbError(f"Too many key metadata classes: {n} (max {KEY_META_MAX_CLASSES})")
    for _ in range(n):
        name, version, flags = key_meta_class(struct.unpack("<I", r.take(4))[0])
        if not flags & KEY_META_ALLOW_IGNORE:
            raise RdbUnsupported(f"key metadata of class '{name}' (version {version}) cannot "
                                 f"be loaded: Sluice has no module that registers it")
        skip_module_value(r)


def read_value_type(r: Reader, op: int) -> int:
    """The value type of a key whose first byte was ``op`` (skipping key metadata)."""
    if op == OP_KEY_META:
        skip_key_meta(r)
        op = r.byte()
    if not is_object_type(op):
        raise RdbError(f"unknown RDB value type or opcode {op} at offset {r.pos - 1}")
    return op


# -- whole files ------------------------------------------------------------------------------


def debug_delay(usec: int) -> None:
    """Redis's ``debugDelay`` (``key-load-delay``, ``rdb-key-save-delay``): sleep ``usec``
    microseconds; a negative value sleeps one microsecond once in ``-usec`` calls, on
    average (shorter waits than a sleep can make)."""
    if usec < 0:
        usec = 1 if random.randrange(-usec) == 0 else 0
    if usec:
        time.sleep(usec / 1e6)


def _aux(key: bytes, value: bytes) -> bytes:
    return bytes((OP_AUX,)) + enc_string(key, False) + enc_string(value, False)


def dump_keyspace(keyspace: Keyspace, compress: bool = True, checksum: bool = True,
                  aof_base: bool = False, redis_ver: bytes = RDB_REDIS_VER,
                  functions: bytes = b"", key_delay_us: int = 0) -> Iterator[bytes]:
    """The RDB bytes of ``keyspace`` in chunks (expired keys are skipped). ``functions``:
    the function library records (opcode 245 each), written after the AUX fields as
    Redis's rdbSaveFunctions. ``key_delay_us`` (``rdb-key-save-delay``): ``debug_delay``
    before each key is written, as Redis's rdbSaveKeyValuePair."""
    opts = SaveOptions(compress)
    crc = 0
    buf = bytearray(b"REDIS%04d" % RDB_VERSION)
    buf += _aux(b"redis-ver", redis_ver)
    buf += _aux(b"redis-bits", b"64")
    buf += _aux(b"ctime", b"%d" % int(time.time()))
    buf += _aux(b"used-mem", b"0")
    buf += _aux(b"aof-base", b"1" if aof_base else b"0")
    buf += functions
    now = keyspace.clock.now_ms()
    records: list[bytes] = []  # Sluice's stream policies (the AUX field after the data)
    stream_cls, has_policy, encode_record = _POLICIES[:3] if _POLICIES else (None, None, None)
    for db in keyspace.dbs:
        if not db.data:
            continue
        buf.append(OP_SELECTDB)
        buf += enc_len(db.id)
        buf.append(OP_RESIZEDB)
        buf += enc_len(len(db.data)) + enc_len(len(db.expires))
        expires = db.expires
        for key, value in db.data.items():
            when = expires.get(key)
            if when is not None:
                if when <= now:
                    continue
                buf.append(OP_EXPIRETIME_MS)
                buf += struct.pack("<q", when)
            if key_delay_us:
                debug_delay(key_delay_us)
            rdb_type, encoded = encode_value(value, opts)
            buf.append(rdb_type)
            buf += enc_string(key, compress)
            buf += encoded
            if type(value) is stream_cls and has_policy(value):
                records.append(encode_record(db.id, key, value))
            if len(buf) >= 1 << 20:
                chunk = bytes(buf)
                if checksum:
                    crc = crc64(chunk, crc)
                yield chunk
                buf = bytearray()
    if records and _POLICIES:
        buf += _aux(_POLICIES[5], _POLICIES[3](records))
    buf.append(OP_EOF)
    chunk = bytes(buf)
    if checksum:
        crc = crc64(chunk, crc)
    yield chunk + struct.pack("<Q", crc)


class LoadStats:
    __slots__ = ("keys", "expired", "aux", "end", "functions")

    def __init__(self) -> None:
        self.keys = 0
        self.expired = 0
        self.aux: dict[bytes, bytes] = {}
        self.end = 0
        self.functions: list[bytes] = []  # function libraries' code (opcode 245), in order


def parse(data: Any, on_key: Callable[[int, bytes, Any, int | None], None] | None,
          stats: LoadStats | None = None, trace: Callable[[int, str], None] | None = None
          ) -> int:
    """Walk an RDB file, calling ``on_key(db, key, value, expire_ms)``; returns the end offset.

    ``trace(offset, what)`` (for the checker) hears about every opcode.
    """
    stats = stats or LoadStats()
    r = Reader(data)
    magic = r.take(9)
    if magic[:5] != b"REDIS" or not magic[5:].isdigit():
        raise RdbError("Wrong signature trying to load DB from file")
    version = int(magic[5:])
    if not 1 <= version <= RDB_VERSION:
        raise RdbError(f"Can't handle RDB format version {version}")
    db_id = 0
    expire: int | None = None
    while True:
        at = r.pos
        op = r.byte()
        if op == OP_EOF:
            if version >= 5:
                end = r.pos
                expected = struct.unpack("<Q", r.take(8))[0]
                if expected and crc64(bytes(data[:end])) != expected:
                    raise RdbError("Wrong RDB checksum")
                if trace:
                    trace(r.pos, "Checksum OK" if expected else "RDB checksum disabled")
            stats.end = r.pos
            return r.pos
        if op == OP_AUX:
            k, v = r.string(), r.string()
            stats.aux[k] = v
            if trace:
                trace(at, f"AUX FIELD {k.decode(errors='replace')} = "
                          f"'{v.decode(errors='replace')}'")
        elif op == OP_SELECTDB:
            db_id = r.len()
            if trace:
                trace(at, f"Selecting DB ID {db_id}")
        elif op == OP_RESIZEDB:
            r.len()
            r.len()
        elif op == OP_SLOT_INFO:  # slot, keys, expires: a sizing hint from a cluster node
            slot = r.len()
            r.len()
            r.len()
            if trace:
                trace(at, f"Slot info for slot {slot}")
        elif op == OP_EXPIRETIME_MS:
            expire = r.ms_time()
        elif op == OP_EXPIRETIME:
            expire = struct.unpack("<i", r.take(4))[0] * 1000
        elif op == OP_IDLE:
            r.len()
        elif op == OP_FREQ:
            r.byte()
        elif op == OP_MODULE_AUX:
            name = module_type_name(r.len())
            raise RdbUnsupported(f"the RDB file contains AUX data of module type '{name}': "
                                 f"Sluice has no modules")
        elif op == OP_FUNCTION2:  # a function library: its code (Redis 7.0 GA and later)
            stats.functions.append(r.string())
            if trace:
                trace(at, "Function library")
        elif op == OP_FUNCTION:
            raise RdbUnsupported("Pre-GA function format not supported")
        else:
            rdb_type = read_value_type(r, op)
            key = r.string()
            value = decode_value(r, rdb_type)
            if on_key is not None:
                on_key(db_id, key, value, expire)
            expire = None


def load_into(data: Any, keyspace: Keyspace, now_ms: int, stats: LoadStats | None = None,
              key_delay_us: int = 0) -> int:
    """Load an RDB file (or AOF preamble) into ``keyspace``; returns the offset after it.

    Keys already expired are skipped, as a Redis master does on load. ``key_delay_us``
    (``key-load-delay``): ``debug_delay`` after each key read.
    """
    stats = stats or LoadStats()
    ndb = len(keyspace)

    def on_key(db_id: int, key: bytes, value: Any, expire: int | None) -> None:
        if key_delay_us:
            debug_delay(key_delay_us)
        if db_id >= ndb:
            raise RdbError(f"FATAL: Data file was created with a Redis server configured to "
                           f"handle more than {ndb} databases. Exiting")
        if expire is not None and expire <= now_ms:
            stats.expired += 1
            return
        db = keyspace[db_id]
        db.set(key, value)
        if expire is not None:
            db.set_expire(key, expire)
        stats.keys += 1

    end = parse(data, on_key, stats)
    if _POLICIES and _POLICIES[5] in stats.aux:
        _POLICIES[4](keyspace, stats.aux[_POLICIES[5]])
    return end


# -- DUMP / RESTORE -----------------------------------------------------------------------------


def dump_payload(value: Any, compress: bool = True) -> bytes:
    rdb_type, encoded = encode_value(value, SaveOptions(compress))
    body = bytes((rdb_type,)) + encoded + struct.pack("<H", RDB_VERSION)
    return body + struct.pack("<Q", crc64(body))


def load_payload(payload: bytes) -> Any:
    """The value of a DUMP payload; RdbError when the footer or checksum is wrong.

    Like ``verifyDumpPayload``: any version up to ours is taken (a newer one is refused),
    and a zero checksum means the payload was written without one.
    """
    if len(payload) < 10:
        raise RdbError("payload too short")
    version = struct.unpack_from("<H", payload, len(payload) - 10)[0]
    if version > RDB_VERSION:
        raise RdbError("unsupported RDB version")
    crc = struct.unpack_from("<Q", payload, len(payload) - 8)[0]
    if crc and crc != crc64(payload[:-8]):
        raise RdbError("bad checksum")
    r = Reader(payload, 0, len(payload) - 10)
    value = decode_value(r, read_value_type(r, r.byte()))
    if r.pos != r.end:
        raise RdbError("trailing bytes in payload")
    return value


# -- the checker ---------------------------------------------------------------------------------


def check(data: Any, log: Callable[[str], None]) -> bool:
    """``sluice-check-rdb``: walk the file, report like redis-check-rdb. True when valid."""
    stats = LoadStats()
    counts = {"keys": 0, "expires": 0, "expired": 0}
    now = int(time.time() * 1000)

    def on_key(db_id: int, key: bytes, value: Any, expire: int | None) -> None:
        counts["keys"] += 1
        if expire is not None:
            counts["expires"] += 1
            if expire <= now:
                counts["expired"] += 1

    log("[offset 0] Checking RDB file")
    try:
        end = parse(data, on_key, stats, lambda off, what: log(f"[offset {off}] {what}"))
    except (RdbError, TypeError) as e:
        log(f"--- RDB ERROR DETECTED ---\n[additional info] {e}")
        return False
    log(f"[offset {end}] \\o/ RDB looks OK! \\o/")
    log(f"[info] {counts['keys']} keys read")
    log(f"[info] {counts['expires']} expires")
    log(f"[info] {counts['expired']} already expired")
    return True
