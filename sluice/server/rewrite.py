"""Writing the keyspace out: the AOF base (as commands or as RDB) and snapshots.

Role: code that runs in a forked child (or, for SAVE and the first base, in the server) and
turns the keyspace into a file. Commands are generated per value type from ``EMITTERS``
(``type name -> fn(key, value, config) -> argvs``), mirroring Redis's ``rewriteAppendOnlyFileRio``:
strings as ``SET``, lists as ``RPUSH``, sets as ``SADD``, sorted sets as ``ZADD``, in batches of
64 items (``AOF_REWRITE_ITEMS_PER_CMD``), hashes as ``HMSET`` (and ``HPEXPIREAT`` per field
with a TTL),
streams as Redis's ``rewriteStreamObject`` writes them (XADD per entry, XSETID with
ENTRIESADDED/MAXDELETEDID, XGROUP CREATE ... ENTRIESREAD, XGROUP CREATECONSUMER for consumers
without pending entries, XCLAIM ... TIME RETRYCOUNT JUSTID FORCE per pending entry, XNACK ...
RETRYCOUNT FORCE per NACKed entry in release order (Redis 8.8), XCFGSET and XIDMPRECORD for
the idempotent-production state, then Sluice's SLUICE.XPOLICY policies), then
``PEXPIREAT`` for keys with a TTL. A value type whose family registers no emitter makes
the rewrite fail loudly rather than drop data.

Files are written to a temp name, fsynced, and renamed by the caller (the parent installs a
rewritten base only after the child exited 0).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from sluice.storage import rdb
from sluice.storage.aof import encode_command, encode_select
from sluice.storage.keyspace import type_name
from sluice.storage.rdb import debug_delay

if TYPE_CHECKING:
    from .app import Server

ITEMS_PER_CMD = 64

# (key, value, server config) -> the commands that rebuild the value
Emitter = Callable[[bytes, Any, Any], Iterable[list[bytes]]]
EMITTERS: dict[bytes, Emitter] = {}


def register_emitter(type_name_: bytes, fn: Emitter) -> None:
    """Families register how a value of theirs is rewritten as commands."""
    EMITTERS[type_name_] = fn


def _emit_string(key: bytes, value: bytes, cfg: Any) -> Iterator[list[bytes]]:
    yield [b"SET", key, bytes(value)]  # bytes, or a copy of a RawString's buffer


def _emit_list(key: bytes, value: Any, cfg: Any) -> Iterator[list[bytes]]:
    batch: list[bytes] = []
    for item in value:
        batch.append(item)
        if len(batch) == ITEMS_PER_CMD:
            yield [b"RPUSH", key, *batch]
            batch = []
    if batch:
        yield [b"RPUSH", key, *batch]


def _sid(sid: int) -> bytes:
    return b"%d-%d" % (sid >> 64, sid & ((1 << 64) - 1))


def _emit_stream(key: bytes, s: Any, cfg: Any) -> Iterator[list[bytes]]:
    """Redis's ``rewriteStreamObject``: entries, XSETID, groups, PELs as XCLAIM ... FORCE,
    then the IDMP state (8.6): XCFGSET if the settings are not the server's defaults, and
    XIDMPRECORD per remembered idempotent ID whose entry still exists."""
    if s.length:
        for node in s.iter_nodes():
            for i in range(len(node.data)):
                fields = node.fields_at(i)
                if fields is not None:
                    yield [b"XADD", key, _sid(node.id_at(i)), *fields]
    else:  # an empty stream still exists: create it, then trim it to nothing
        yield [b"XADD", key, b"MAXLEN", b"0", _sid(s.last_id or 1), b"x", b"y"]
    yield [b"XSETID", key, _sid(s.last_id), b"ENTRIESADDED", b"%d" % s.entries_added,
           b"MAXDELETEDID", _sid(s.max_deleted_entry_id)]
    for g in s.groups_in_order():
        yield [b"XGROUP", b"CREATE", key, g.name, _sid(g.last_id), b"ENTRIESREAD",
               b"%d" % g.entries_read]
        for c in g.consumers_in_order():
            if not c.pel:
                yield [b"XGROUP", b"CREATECONSUMER", key, g.name, c.name]
        for sid, pe in g.pel.items():
            if pe.consumer is None:
                continue  # NACKed: below, in release order
            yield [b"XCLAIM", key, g.name, pe.consumer.name, b"0", _sid(sid),
                   b"TIME", b"%d" % pe.delivery_time, b"RETRYCOUNT", b"%d" % pe.delivery_count,
                   b"JUSTID", b"FORCE"]
        for sid in g.nacked:
            yield [b"XNACK", key, g.name, b"FAIL", b"IDS", b"1", _sid(sid), b"RETRYCOUNT",
                   b"%d" % g.pel[sid].delivery_count, b"FORCE"]
    idmp = s.idmp
    if (idmp.duration, idmp.maxsize) != (cfg.stream_idmp_duration, cfg.stream_idmp_maxsize):
        yield [b"XCFGSET", key, b"IDMP-DURATION", b"%d" % idmp.duration, b"IDMP-MAXSIZE",
               b"%d" % idmp.maxsize]
    for pid in sorted(idmp.producers):  # Redis walks its rax of producers: bytewise order
        for iid, (sid, _ms) in idmp.producers[pid].items():
            if s.exists(sid):
                yield [b"XIDMPRECORD", key, pid, iid, _sid(sid)]
    ret = s.retention
    if ret is not None:
        yield [b"SLUICE.XPOLICY", b"RETENTION", key, b"MAXAGE", b"%d" % ret.max_age_ms,
               ret.policy.encode()]
    for g in s.groups_in_order():
        dl = g.dead_letter
        if dl is not None:
            yield [b"SLUICE.XPOLICY", b"DEADLETTER", key, g.name, dl.key, b"MAXDELIVERIES",
                   b"%d" % dl.max_deliveries]


def _emit_hash(key: bytes, h: Any, cfg: Any) -> Iterator[list[bytes]]:
    """Redis's ``rewriteHashObject``: HMSET in batches of 64 pairs; a hash with field TTLs
    gets one HMSET per field, then HPEXPIREAT ... FIELDS 1 for each field with a TTL."""
    if h.min_expire() is None:
        batch: list[bytes] = []
        for field, value in h.d.items():
            batch += (field, value)
            if len(batch) == 2 * ITEMS_PER_CMD:
                yield [b"HMSET", key, *batch]
                batch = []
        if batch:
            yield [b"HMSET", key, *batch]
        return
    for field, value in h.d.items():
        yield [b"HMSET", key, field, value]
        when = h.expire_time(field)
        if when is not None:
            yield [b"HPEXPIREAT", key, b"%d" % when, b"FIELDS", b"1", field]


def _emit_set(key: bytes, value: Any, cfg: Any) -> Iterator[list[bytes]]:
    """Redis's ``rewriteSetObject``: SADD in batches of 64 members."""
    batch: list[bytes] = []
    for member in value:
        batch.append(member)
        if len(batch) == ITEMS_PER_CMD:
            yield [b"SADD", key, *batch]
            batch = []
    if batch:
        yield [b"SADD", key, *batch]


def _emit_zset(key: bytes, value: Any, cfg: Any) -> Iterator[list[bytes]]:
    """Redis's ``rewriteSortedSetObject``: ZADD in batches of 64 pairs, scores as ``%.17g``
    (which reads back as the same double; ``inf``/``-inf`` as such)."""
    batch: list[bytes] = []
    for score, member in value:
        batch.append(b"%.17g" % score)
        batch.append(member)
        if len(batch) == 2 * ITEMS_PER_CMD:
            yield [b"ZADD", key, *batch]
            batch = []
    if batch:
        yield [b"ZADD", key, *batch]


register_emitter(b"string", _emit_string)
register_emitter(b"set", _emit_set)
register_emitter(b"zset", _emit_zset)
register_emitter(b"list", _emit_list)
register_emitter(b"stream", _emit_stream)
register_emitter(b"hash", _emit_hash)


def iter_commands(server: Server) -> Iterator[bytes]:
    """RESP chunks that rebuild the keyspace (expired keys skipped)."""
    now = server.keyspace.clock.now_ms()
    cfg = server.config
    for lib in server.scripting.functions.libraries.values():  # Redis's rewriteFunctions
        yield encode_command([b"FUNCTION", b"LOAD", lib.code])
    for db in server.keyspace.dbs:
        if not db.data:
            continue
        yield encode_select(db.id)
        expires = db.expires
        for key, value in db.data.items():
            when = expires.get(key)
            if when is not None and when <= now:
                continue
            if cfg.rdb_key_save_delay:  # as Redis's rewriteAppendOnlyFileRio
                debug_delay(cfg.rdb_key_save_delay)
            tname = type_name(value)
            emit = EMITTERS.get(tname)
            if emit is None:
                raise TypeError(f"no AOF rewrite for values of type {tname.decode()}")
            for argv in emit(key, value, cfg):
                yield encode_command(argv)
            if when is not None:
                yield encode_command([b"PEXPIREAT", key, b"%d" % when])


def write_file(path: str, chunks: Iterable[bytes]) -> None:
    """Write chunks to ``path`` in large writes, then fsync."""
    with open(path, "wb", buffering=0) as f:
        pending: list[bytes] = []
        size = 0
        for chunk in chunks:
            pending.append(chunk)
            size += len(chunk)
            if size >= 1 << 20:
                f.write(b"".join(pending))
                pending, size = [], 0
        if pending:
            f.write(b"".join(pending))
        os.fsync(f.fileno())


def rdb_chunks(server: Server, aof_base: bool = False) -> Iterator[bytes]:
    """The keyspace as RDB bytes, with the server's rdbcompression / rdbchecksum settings
    (lists are written with the nodes they have)."""
    cfg = server.config
    return rdb.dump_keyspace(server.keyspace, compress=cfg.rdbcompression,
                             checksum=cfg.rdbchecksum, aof_base=aof_base,
                             functions=server.scripting.functions.records(),
                             key_delay_us=cfg.rdb_key_save_delay)


def write_aof_base(server: Server, path: str, use_rdb: bool) -> None:
    """The new base of an AOF rewrite: an RDB file (preamble) or plain commands."""
    write_file(path, rdb_chunks(server, aof_base=True) if use_rdb else iter_commands(server))
