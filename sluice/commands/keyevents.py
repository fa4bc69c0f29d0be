"""Keyspace notification classes and the events that belong to them (Redis's ``notify.c``
and the ``NOTIFY_*`` flags of ``server.h``).

Role: the vocabulary of keyspace notifications, shared by the handlers (which name the event
each write fires, ``ctx.notify(b"lpush", key)``) and the server (which publishes it on
``__keyspace@<db>__:<key>`` and ``__keyevent@<db>__:<event>``, ``server/notify.py``).

Invariants:

- Every event has exactly one class (``EVENT_CLASS``); the class decides whether the event is
  published under the current ``notify-keyspace-events`` (an event Redis fires with two
  classes does not exist). An event missing from the table is a bug: ``class_of`` raises.
- ``parse_classes`` and ``format_classes`` are Redis's ``keyspaceEventsStringToFlags`` and
  ``keyspaceEventsFlagsToString``: ``A`` is every class but ``m``, ``n``, ``o`` and ``c``
  (Redis keeps key misses, new keys, overwrites and type changes out of "all": they are
  frequent and new), and CONFIG GET prints the canonical order (``A`` or the letters, then
  ``K``, ``E``, ``m``).

The module-only classes (``NOTIFY_LOADED``, ``NOTIFY_KEY_TRIMMED``) have no letter and are
not kept; ``d`` (module events) is accepted and never fires, as on a Redis without modules.
"""

from __future__ import annotations

NOTIFY_KEYSPACE = 1 << 0  # K: __keyspace@<db>__:<key> channels
NOTIFY_KEYEVENT = 1 << 1  # E: __keyevent@<db>__:<event> channels
NOTIFY_GENERIC = 1 << 2  # g: DEL, EXPIRE, RENAME ... (commands of no type)
NOTIFY_STRING = 1 << 3  # $
NOTIFY_LIST = 1 << 4  # l
NOTIFY_SET = 1 << 5  # s
NOTIFY_HASH = 1 << 6  # h
NOTIFY_ZSET = 1 << 7  # z
NOTIFY_EXPIRED = 1 << 8  # x: a key deleted because its TTL passed
NOTIFY_EVICTED = 1 << 9  # e: a key evicted under maxmemory
NOTIFY_STREAM = 1 << 10  # t
NOTIFY_KEY_MISS = 1 << 11  # m: a read found no key (not in A)
NOTIFY_MODULE = 1 << 13  # d: module events (none here)
NOTIFY_NEW = 1 << 14  # n: a key was created (not in A)
NOTIFY_OVERWRITTEN = 1 << 15  # o: a key's value was replaced (not in A)
NOTIFY_TYPE_CHANGED = 1 << 16  # c: ... by a value of another type (not in A)
NOTIFY_ALL = (NOTIFY_GENERIC | NOTIFY_STRING | NOTIFY_LIST | NOTIFY_SET | NOTIFY_HASH
              | NOTIFY_ZSET | NOTIFY_EXPIRED | NOTIFY_EVICTED | NOTIFY_STREAM | NOTIFY_MODULE)

_LETTERS: dict[int, int] = {
    ord("A"): NOTIFY_ALL, ord("g"): NOTIFY_GENERIC, ord("$"): NOTIFY_STRING,
    ord("l"): NOTIFY_LIST, ord("s"): NOTIFY_SET, ord("h"): NOTIFY_HASH,
    ord("z"): NOTIFY_ZSET, ord("x"): NOTIFY_EXPIRED, ord("e"): NOTIFY_EVICTED,
    ord("K"): NOTIFY_KEYSPACE, ord("E"): NOTIFY_KEYEVENT, ord("t"): NOTIFY_STREAM,
    ord("m"): NOTIFY_KEY_MISS, ord("d"): NOTIFY_MODULE, ord("n"): NOTIFY_NEW,
    ord("o"): NOTIFY_OVERWRITTEN, ord("c"): NOTIFY_TYPE_CHANGED,
}
# keyspaceEventsFlagsToString's order for the classes when not all of A are on.
_CLASS_ORDER = ((NOTIFY_GENERIC, b"g"), (NOTIFY_STRING, b"$"), (NOTIFY_LIST, b"l"),
                (NOTIFY_SET, b"s"), (NOTIFY_HASH, b"h"), (NOTIFY_ZSET, b"z"),
                (NOTIFY_EXPIRED, b"x"), (NOTIFY_EVICTED, b"e"), (NOTIFY_STREAM, b"t"),
                (NOTIFY_MODULE, b"d"), (NOTIFY_NEW, b"n"), (NOTIFY_OVERWRITTEN, b"o"),
                (NOTIFY_TYPE_CHANGED, b"c"))

# CONFIG SET's error for a letter that is no class (Redis 8.6.3 still lists the letters of
# 7.x in it, without o and c, though it accepts them).
INVALID_CLASS = "Invalid event class character. Use 'Ag$lshzxeKEtmdn'."


def parse_classes(text: bytes) -> int:
    """``notify-keyspace-events`` -> flags; -1 for a character that names no class."""
    flags = 0
    for ch in text:
        bit = _LETTERS.get(ch)
        if bit is None:
            return -1
        flags |= bit
    return flags


def format_classes(flags: int) -> bytes:
    """Flags -> the canonical string CONFIG GET shows (``AKE``, ``gxE`` ...)."""
    if flags & NOTIFY_ALL == NOTIFY_ALL:
        out = b"A"  # as Redis: n, o and c are not shown beside A (though they stay on)
    else:
        out = b"".join(letter for bit, letter in _CLASS_ORDER if flags & bit)
    if flags & NOTIFY_KEYSPACE:
        out += b"K"
    if flags & NOTIFY_KEYEVENT:
        out += b"E"
    if flags & NOTIFY_KEY_MISS:
        out += b"m"
    return out


# Every event Redis 8.6 fires, with its class (grouped by the source file that fires it).
EVENT_CLASS: dict[bytes, int] = {
    # db.c, expire.c, evict.c: the keyspace itself
    b"del": NOTIFY_GENERIC, b"expire": NOTIFY_GENERIC, b"persist": NOTIFY_GENERIC,
    b"rename_from": NOTIFY_GENERIC, b"rename_to": NOTIFY_GENERIC,
    b"move_from": NOTIFY_GENERIC, b"move_to": NOTIFY_GENERIC, b"copy_to": NOTIFY_GENERIC,
    b"restore": NOTIFY_GENERIC, b"expired": NOTIFY_EXPIRED, b"evicted": NOTIFY_EVICTED,
    b"keymiss": NOTIFY_KEY_MISS, b"new": NOTIFY_NEW, b"overwritten": NOTIFY_OVERWRITTEN,
    b"type_changed": NOTIFY_TYPE_CHANGED,
    # t_string.c, bitops.c, hyperloglog.c
    b"set": NOTIFY_STRING, b"setrange": NOTIFY_STRING, b"incrby": NOTIFY_STRING,
    b"incrbyfloat": NOTIFY_STRING, b"append": NOTIFY_STRING, b"setbit": NOTIFY_STRING,
    b"pfadd": NOTIFY_STRING,
    # t_list.c, sort.c
    b"lpush": NOTIFY_LIST, b"rpush": NOTIFY_LIST, b"lpop": NOTIFY_LIST, b"rpop": NOTIFY_LIST,
    b"linsert": NOTIFY_LIST, b"lset": NOTIFY_LIST, b"lrem": NOTIFY_LIST,
    b"ltrim": NOTIFY_LIST, b"sortstore": NOTIFY_LIST,
    # t_set.c
    b"sadd": NOTIFY_SET, b"srem": NOTIFY_SET, b"spop": NOTIFY_SET,
    b"sinterstore": NOTIFY_SET, b"sunionstore": NOTIFY_SET, b"sdiffstore": NOTIFY_SET,
    # t_hash.c
    b"hset": NOTIFY_HASH, b"hdel": NOTIFY_HASH, b"hincrby": NOTIFY_HASH,
    b"hincrbyfloat": NOTIFY_HASH, b"hexpire": NOTIFY_HASH, b"hexpired": NOTIFY_HASH,
    b"hpersist": NOTIFY_HASH,
    # t_zset.c, geo.c
    b"zadd": NOTIFY_ZSET, b"zincr": NOTIFY_ZSET, b"zrem": NOTIFY_ZSET,
    b"zremrangebyscore": NOTIFY_ZSET, b"zremrangebyrank": NOTIFY_ZSET,
    b"zremrangebylex": NOTIFY_ZSET, b"zpopmin": NOTIFY_ZSET, b"zpopmax": NOTIFY_ZSET,
    b"zunionstore": NOTIFY_ZSET, b"zinterstore": NOTIFY_ZSET, b"zdiffstore": NOTIFY_ZSET,
    b"zrangestore": NOTIFY_ZSET, b"georadiusstore": NOTIFY_ZSET,
    b"geosearchstore": NOTIFY_ZSET,
    # t_stream.c
    b"xadd": NOTIFY_STREAM, b"xtrim": NOTIFY_STREAM, b"xdel": NOTIFY_STREAM,
    b"xsetid": NOTIFY_STREAM, b"xgroup-create": NOTIFY_STREAM,
    b"xgroup-createconsumer": NOTIFY_STREAM, b"xgroup-delconsumer": NOTIFY_STREAM,
    b"xgroup-destroy": NOTIFY_STREAM, b"xgroup-setid": NOTIFY_STREAM,
}


def class_of(event: bytes) -> int:
    """The class an event belongs to (KeyError for an event Redis does not have)."""
    return EVENT_CLASS[event]
