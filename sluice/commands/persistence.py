"""Persistence commands: SAVE, BGSAVE, BGREWRITEAOF, LASTSAVE, DUMP, RESTORE.

Handlers parse and reply; the work is done by ``server.persistence`` (``server/snapshot.py``),
``server.aof`` (``server/persistence.py``) and ``storage/rdb.py`` (payloads).

Mirrors Redis 7.0's ``saveCommand`` / ``bgsaveCommand`` (rdb.c), ``bgrewriteaofCommand``
(aof.c), ``lastsaveCommand`` (server.c), ``dumpCommand`` / ``restoreCommand`` (cluster.c).
RESTORE with a relative TTL is logged to the AOF with the deadline and ``ABSTTL`` appended, as
Redis propagates it; otherwise as given.
"""

from __future__ import annotations

from sluice.protocol import OK, SimpleString
from sluice.storage import rdb
from sluice.storage.hashes import Hash
from sluice.storage.keyspace import type_name
from sluice.storage.lists import ListValue
from sluice.storage.load_limits import loading_with

from .args import Args
from .context import Command, Context, Persistence, Reply
from .errors import (
    BAD_DATA_FORMAT,
    BUSYKEY,
    DUMP_PAYLOAD_INVALID,
    INVALID_FREQ,
    INVALID_IDLETIME,
    INVALID_TTL,
    SYNTAX,
    CommandError,
)
from .spec import (
    ACCESS,
    ADMIN,
    DENYOOM,
    FAST,
    LOADING,
    NO_ASYNC_LOADING,
    NO_MULTI,
    NOSCRIPT,
    OW,
    READONLY,
    RO,
    STALE,
    UPDATE,
    WRITE,
    A,
    cmd,
    key_at,
)

BG_SAVING = SimpleString(b"Background saving started")
BG_SAVE_SCHEDULED = SimpleString(b"Background saving scheduled")
BG_REWRITING = SimpleString(b"Background append only file rewriting started")
BG_REWRITE_SCHEDULED = SimpleString(b"Background append only file rewriting scheduled")


def _persistence(ctx: Context) -> Persistence:
    p = ctx.server.persistence
    if p is None:
        raise CommandError("ERR persistence is not available on this server")
    return p


def save(ctx: Context, args: Args) -> Reply:
    p = _persistence(ctx)
    if p.child_pid:
        raise CommandError("ERR Background save already in progress")
    p.rdb_saves += 1  # INFO rdb_saves counts SAVE when asked, as Redis's saveCommand
    if not p.save():
        raise CommandError("ERR")
    return OK


def bgsave(ctx: Context, args: Args) -> Reply:
    schedule = False
    if args:
        if args.next_upper() != b"SCHEDULE" or args:
            raise CommandError(SYNTAX)
        schedule = True
    p = _persistence(ctx)
    aof = ctx.server.aof
    if p.child_pid:
        raise CommandError("ERR Background save already in progress")
    if aof is not None and aof.child_pid and schedule:
        p.bgsave_scheduled = True
        return BG_SAVE_SCHEDULED
    err = p.bgsave()
    if err:
        raise CommandError(err)
    return BG_SAVING


def bgrewriteaof(ctx: Context, args: Args) -> Reply:
    """Redis's bgrewriteaofCommand: refused while an AOF rewrite child runs; scheduled while
    another child (a BGSAVE) runs or inside a transaction, for the cron to start when it
    can; else started. With ``appendonly no`` the rewrite writes a base and a manifest for
    a later ``appendonly yes`` (Redis 7)."""
    aof = ctx.server.aof
    p = _persistence(ctx)
    if aof.child_pid if aof is not None else p.offline_rewrite is not None:
        raise CommandError("ERR Background append only file rewriting already in progress")
    if ctx.in_exec or p.child_pid:
        if aof is not None:
            aof.rewrite_scheduled = True
        else:
            p.offline_rewrite_scheduled = True
        return BG_REWRITE_SCHEDULED
    err = aof.start_rewrite() if aof is not None else p.rewrite_offline()
    if err:
        raise CommandError(err)
    return BG_REWRITE_SCHEDULED if aof is not None and aof.rewrite_scheduled else BG_REWRITING


def lastsave(ctx: Context, args: Args) -> Reply:
    return ctx.server.lastsave


def dump(ctx: Context, args: Args) -> Reply:
    value = ctx.db.get(args.next())
    if value is None:
        return None
    try:
        return rdb.dump_payload(value, ctx.server.config.rdbcompression)
    except TypeError as e:  # a value type without an RDB serialisation in this build
        raise CommandError(f"ERR {e}") from None


def restore(ctx: Context, args: Args) -> Reply:
    key = args.next()
    ttl = args.next_int()
    payload = args.next()
    replace = absttl = False
    idle = freq = -1
    while args:
        opt = args.next_upper()
        if opt == b"REPLACE":
            replace = True
        elif opt == b"ABSTTL":
            absttl = True
        elif opt == b"IDLETIME" and args and freq == -1:  # one or the other: as Redis
            idle = args.next_int()
            if idle < 0:
                raise CommandError(INVALID_IDLETIME)
        elif opt == b"FREQ" and args and idle == -1:
            freq = args.next_int()
            if not 0 <= freq <= 255:
                raise CommandError(INVALID_FREQ)
        else:
            raise CommandError(SYNTAX)
    if ttl < 0:
        raise CommandError(INVALID_TTL)
    db = ctx.db
    if not replace and db.get(key) is not None:
        raise CommandError(BUSYKEY)
    try:
        with loading_with(ctx.server.config):  # sets and sorted sets load as configured
            value = rdb.load_payload(payload)
    except rdb.RdbUnsupported as e:
        # Redis would load it (a hash, a set, a module value...): Redis's reply, saying why.
        raise CommandError(f"{BAD_DATA_FORMAT}: {e}") from None
    except rdb.RdbError as e:
        msg = str(e)
        raise CommandError(DUMP_PAYLOAD_INVALID if msg in ("bad checksum", "payload too short",
                                                          "unsupported RDB version")
                           else BAD_DATA_FORMAT) from None
    except (ImportError, TypeError):
        raise CommandError(BAD_DATA_FORMAT) from None
    if type(value) is ListValue:  # loaded for the default list-max-listpack-size
        value.refill(ctx.server.config.list_max_listpack_size)
    elif type(value) is Hash:  # the encoding the server's settings give it
        cfg = ctx.server.config
        value.refit(cfg.hash_max_listpack_entries, cfg.hash_max_listpack_value)
    now = ctx.now_ms()
    when = (ttl if absttl else now + ttl) if ttl else 0
    if when and when <= now:  # already expired: the key just goes away, counted as expired
        ctx.server.stats["expired_keys"] += 1  # (INFO expired_keys, as Redis's restore)
        if replace and db.delete(key):
            ctx.modified(key)
            ctx.rewrite_argv([b"DEL", key])
            ctx.notify(b"del", key)
        return OK
    # Redis 8.6 takes the old value out quietly and adds the new one ("new"), then fires
    # "restore", and only after it "overwritten" and "type_changed" (checked on 8.6.3).
    old = db.peek(key, notify=False) if replace else None
    if old is not None:
        db.delete(key)
    db.add(key, value)
    if when:
        db.set_expire(key, when)
        if not absttl:  # logged with the deadline, the rest as given (Redis's restoreCommand)
            argv = list(ctx.argv)
            argv[2] = b"%d" % when
            ctx.rewrite_argv([*argv, b"ABSTTL"])
    ctx.modified(key)
    word = db.access.restored_word(idle, freq)
    if word is not None:  # after the write's own LRM update: the given idle time stands
        db.set_word(key, word)
    ctx.notify(b"restore", key)
    if old is not None:
        ctx.notify(b"overwritten", key)
        if type_name(old) != type_name(value):
            ctx.notify(b"type_changed", key)
    return OK


COMMANDS: tuple[Command, ...] = (
    #   name            arity  flags                                      acl          keys                           handler
    cmd("save",            1,  ADMIN | NOSCRIPT | NO_ASYNC_LOADING | NO_MULTI, A.NONE, None,                          save,
        "Synchronously saves the database(s) to disk.", group="server"),
    cmd("bgsave",         -1,  ADMIN | NOSCRIPT | NO_ASYNC_LOADING,       A.NONE,      None,                          bgsave,
        "Asynchronously saves the database(s) to disk.", group="server", syntax="[SCHEDULE]"),
    cmd("bgrewriteaof",    1,  ADMIN | NOSCRIPT | NO_ASYNC_LOADING,       A.NONE,      None,                          bgrewriteaof,
        "Asynchronously rewrites the append-only file to disk.", group="server"),
    cmd("lastsave",        1,  LOADING | STALE | FAST,                    A.ADMIN | A.DANGEROUS, None,                lastsave,
        "Returns the Unix timestamp of the last successful save to disk.", group="server",
        tips=("nondeterministic_output",)),
    cmd("dump",            2,  READONLY,                                  A.KEYSPACE,  key_at(1, RO | ACCESS),        dump,
        "Returns a serialized representation of the value stored at a key.", since="2.6.0",
        tips=("nondeterministic_output",), syntax="key"),
    cmd("restore",        -4,  WRITE | DENYOOM,                           A.KEYSPACE | A.DANGEROUS, key_at(1, OW | UPDATE), restore,
        "Creates a key from the serialized representation of a value.", since="2.6.0",
        syntax="key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]"),
)
