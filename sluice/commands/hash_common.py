"""Helpers shared by the hash command modules (``hashes.py``, ``hash_expire.py``).

Role: what every hash handler needs and must do the same way, mirroring ``t_hash.c``:

- ``get_hash`` / ``get_or_create``: ``lookupKeyRead``/``lookupKeyWrite`` + ``checkType`` and
  ``hashTypeLookupWriteOrCreate``.
- ``get_value``: ``hashTypeGetValue`` with its lazy expiry: a field whose TTL is before now is
  deleted on access, its deletion logged as ``HDEL key field`` (``propagateHashFieldDeletion``)
  and counted in ``expired_subkeys``; the key goes when its last field does, unless the
  caller asks to keep it until it is done (``AVOID_HASH_DEL``); the key counts as modified
  (WATCH) unless the caller reports that itself (``NO_SIGNAL``).
- ``written``: the one call after every write of a hash key: WATCH, blocked clients, the
  dirty counter and client-side caches (``ctx.modified``), then the keyspace events Redis
  fires for the write, in its order (``hexpired``, ``hset``, ``hdel`` / ``hexpire`` ...),
  and ``del`` when the write left the key gone.
- ``Effects``: what one command logs (AOF), in Redis's order: the HDEL of each field that
  expired or was deleted by a past deadline while it ran, then its own operation (rewritten
  where Redis rewrites it). ``log`` hands them to dispatch in place of the command, which
  makes several of them one transaction as Redis's ``propagatePendingCommands`` does (inside
  EXEC or a script they join that transaction instead).
- ``count_field_expiry``: INFO's ``expired_subkeys`` (and ``expired_subkeys_active``).
- ``limits``: ``hash-max-listpack-entries`` / ``-value`` now (Redis reads them at each
  conversion).
- ``parse_fields_block``: the rigid ``FIELDS numfields field ...`` tail of HTTL, HPERSIST and
  HGETDEL, with their error texts.

A key never holds an empty hash: the command that removes the last field deletes the key
(``delete_if_empty``).
"""

from __future__ import annotations

from collections import Counter

from sluice.storage.hashes import Hash
from sluice.storage.keyspace import Database, WrongTypeError

from . import errors as E
from .args import parse_int
from .context import Context
from .errors import CommandError

# hashTypeGetValue results
OK, NOT_FOUND, EXPIRED, EXPIRED_HASH = 0, 1, 2, 3
# hashTypeGetValue flags (HFE_LAZY_*)
NO_SIGNAL, AVOID_HASH_DEL, NO_NOTIFICATION = 1, 2, 4

LONG_MAX = (1 << 63) - 1
INT_MAX = (1 << 31) - 1


def get_hash(ctx: Context, key: bytes) -> Hash | None:
    """The hash at ``key`` or None; WRONGTYPE for another type."""
    value = ctx.db.get(key)
    if value is None or type(value) is Hash:
        return value
    raise WrongTypeError()


def get_or_create(ctx: Context, key: bytes) -> Hash:
    """``hashTypeLookupWriteOrCreate``: the hash at ``key``, an empty one stored if none."""
    db = ctx.db
    value = db.get(key)
    if value is None:
        value = Hash()
        db.add(key, value)
    elif type(value) is not Hash:
        raise WrongTypeError()
    return value


def limits(ctx: Context) -> tuple[int, int]:
    cfg = ctx.server.config
    return cfg.hash_max_listpack_entries, cfg.hash_max_listpack_value


def written(ctx: Context, key: bytes, events: bytes | tuple[bytes, ...], changes: int = 1,
            db: Database | None = None) -> None:
    """A write to the hash at ``key`` (Redis's ``keyModified`` + ``server.dirty +=`` +
    ``notifyKeyspaceEvent``): WATCH, blocked clients, the dirty counter, client-side caches;
    then ``events`` (one, or several in order), and ``del`` if the key is gone."""
    ctx.modified(key, db, changes=changes)
    if not ctx.server.notify_flags:
        return
    for event in (events,) if type(events) is bytes else events:
        ctx.notify(event, key, db)  # type: ignore[arg-type]  # a tuple holds bytes
    if key not in (ctx.db if db is None else db).data:
        ctx.notify(b"del", key, db)


def count_field_expiry(stats: Counter[str], active: bool = False) -> None:
    """A field deleted because its deadline passed (INFO ``expired_subkeys``)."""
    stats["expired_subkeys"] += 1
    if active:
        stats["expired_subkeys_active"] += 1


class Effects:
    """What one hash command logs: HDELs of fields that went, then its own operations."""

    __slots__ = ("key", "ops")

    def __init__(self, key: bytes) -> None:
        self.key = key
        self.ops: list[list[bytes]] = []

    def field_gone(self, field: bytes) -> None:
        self.ops.append([b"HDEL", self.key, field])

    def log(self, ctx: Context, *own: list[bytes]) -> None:
        """Log these instead of the command (``own``: its own operations, if any); dispatch
        makes several of them one transaction, as for every command."""
        ctx.rewrite_argv(*self.ops, *own)


def get_value(ctx: Context, key: bytes, h: Hash, field: bytes, now: int, effects: Effects,
              flags: int = 0) -> tuple[int, bytes | None]:
    """``hashTypeGetValue``: ``(OK, value)``, ``(NOT_FOUND, None)``, or, for a field whose
    TTL is before ``now``, the field deleted (noted in ``effects``) and ``(EXPIRED, None)``
    (``EXPIRED_HASH`` when that deleted the key too)."""
    value = h.d.get(field)
    if value is None:
        return NOT_FOUND, None
    ttl = h.ttl
    if not ttl:
        return OK, value
    when = ttl.get(field)
    if when is None or when >= now:
        return OK, value
    if ctx.server.expiry_paused():  # CLIENT PAUSE: expired, but nothing is deleted meanwhile
        return EXPIRED, None
    h.delete(field)
    count_field_expiry(ctx.server.stats)
    effects.field_gone(field)
    res = EXPIRED
    if not h.d and not flags & AVOID_HASH_DEL:
        ctx.db.delete(key)
        res = EXPIRED_HASH
    if flags & NO_NOTIFICATION:
        ctx.modified(key, changes=0)  # the caller fires one "hexpired" for all the fields
    elif not flags & NO_SIGNAL:
        written(ctx, key, b"hexpired", 0)
    return res, None


def expire_all_due(ctx: Context, key: bytes, h: Hash, now: int, effects: Effects) -> bool:
    """``hashTypeExpireIfNeeded`` (HRANDFIELD): when some field's TTL is before now, delete
    every field whose TTL is at or before now. True if that deleted the key."""
    soonest = h.min_expire()
    if soonest is None or soonest >= now or ctx.server.expiry_paused():
        return False
    fields = h.expire_fields(now, len(h.d))
    for field in fields:
        count_field_expiry(ctx.server.stats)
        effects.field_gone(field)
    deleted = not h.d
    if deleted:
        ctx.db.delete(key)
    if fields:
        written(ctx, key, b"hexpired", 0)
    return deleted


def delete_if_empty(ctx: Context, key: bytes, h: Hash) -> bool:
    if h.d:
        return False
    ctx.db.delete(key)
    return True


def parse_fields_block(argv: list[bytes]) -> list[bytes]:
    """``key FIELDS numfields field [field ...]`` at ``argv[2:]`` (HTTL, HPERSIST, HGETDEL)."""
    if argv[2].upper() != b"FIELDS":
        raise CommandError(E.HFE_FIELDS_MISSING)
    n = parse_int(argv[3], E.HFE_NUMFIELDS_POSITIVE)
    if n < 1:
        raise CommandError(E.HFE_NUMFIELDS_POSITIVE)
    if n != len(argv) - 4:
        raise CommandError(E.HFE_NUMFIELDS_MISMATCH)
    return argv[4:]
