"""DEBUG: the subcommands tools and client test suites rely on.

HELP, LOG, SLEEP, PROTOCOL (one reply of every RESP3 type, exactly as Redis sends them, for
client tests), SET-ACTIVE-EXPIRE, PAUSE-CRON, SET-DISABLE-DENY-SCRIPTS, OBJECT, ERROR,
POPULATE, RELOAD and LOADAOF (when persistence offers them), CHANGE-REPL-ID, DIGEST and DIGEST-VALUE
(Redis's own fingerprints of the data, digest.py). Anything else is refused with Redis's "unknown subcommand or wrong number of
arguments" error. DEBUG is one command with its own argument checks, not a container: Redis
declares no subcommands for it either.

The command is gated by ``enable-debug-command`` (``no`` by default, as in Redis 7): dispatch
refuses it before it runs (the row is flagged PROTECTED); ``debug`` checks again in case it
is reached another way.

Mirrors Redis's ``debugCommand`` (debug.c).
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable

from sluice.protocol import (
    OK,
    BigNumber,
    Bool,
    Double,
    ErrorReply,
    Map,
    Raw,
    Set,
    SimpleString,
    Verbatim,
)
from sluice.storage.quicklist import set_packed_threshold
from sluice.storage.rdb import SaveOptions, encode_value

from .acl import config_user_lines
from .args import Args, parse_int, parse_memory
from .context import Context, Reply
from .digest import dataset_digest, value_digest
from .errors import (
    DEBUG_NOT_ALLOWED,
    DEBUG_PROTOCOL_TYPE,
    NO_SUCH_KEY,
    RESP2_UNSUPPORTED,
    CommandError,
    ConfigError,
    subcommand_syntax,
)
from .introspection import help_reply

log = logging.getLogger("sluice")


def _atof(raw: bytes) -> float:
    """C's ``atof``: the longest numeric prefix, 0 when there is none."""
    text = raw.strip().decode("latin-1")
    for end in range(len(text), 0, -1):
        try:
            return float(text[:end])
        except ValueError:
            continue
    return 0.0


def _atoi(raw: bytes) -> int:
    """C's ``atoi``: optional sign and leading digits, 0 when there are none."""
    text = raw.strip()
    sign = 1
    if text[:1] in (b"-", b"+"):
        sign = -1 if text[:1] == b"-" else 1
        text = text[1:]
    digits = b""
    for ch in text:
        if not 48 <= ch <= 57:
            break
        digits += bytes((ch,))
    return sign * int(digits) if digits else 0


def _allowed(ctx: Context) -> bool:
    setting = ctx.server.config.enable_debug_command
    return setting == "yes" or (setting == "local" and ctx.is_local())


# -- subcommands --------------------------------------------------------------------------------


def _help(ctx: Context, argv: list[bytes]) -> Reply:
    return help_reply("DEBUG", (
        "CHANGE-REPL-ID",
        "    Give the server a new replication ID.",
        "CONFIG-REWRITE-FORCE-ALL",
        "    Like CONFIG REWRITE, writing every parameter, at its default or not.",
        "DIGEST",
        "    A SHA-1 fingerprint of the whole data set, as Redis computes it (40 zeros when",
        "    empty): equal data, equal digest.",
        "DIGEST-VALUE <key> [<key> ...]",
        "    The fingerprint of each key's value.",
        "ERROR <string>",
        "    Reply with <string> as an error (to test how clients handle errors).",
        "LOG <message>",
        "    Write <message> to the server log.",
        "OBJECT <key>",
        "    Internal facts about the value stored at <key>.",
        "PAUSE-CRON <0|1>",
        "    1 stops the server's periodic work (expiry, eviction, timeouts, persistence",
        "    schedules); 0 starts it again.",
        "POPULATE <count> [<prefix>] [<size>]",
        "    Create string keys <prefix>:0 ... (prefix 'key' by default) that do not exist yet;",
        "    values are value:<n>, cut or padded with zero bytes to <size> when given.",
        "PROTOCOL <type>",
        "    Reply with a sample value of a RESP type: string, integer, double, bignum, null,",
        "    array, set, map, attrib, push, verbatim, true or false.",
        "LOADAOF",
        "    Write the AOF buffer to disk, empty the dataset and load the AOF files back.",
        "QUICKLIST-PACKED-THRESHOLD <size>",
        "    Elements of lists longer than <size> (1K, 100mb ...) get quicklist nodes of their",
        "    own; 0 restores the default, where the list's fill decides.",
        "RELOAD [MERGE] [NOFLUSH] [NOSAVE]",
        "    Save a snapshot, empty the dataset and load the snapshot back. NOSAVE loads the",
        "    snapshot on disk without saving first; NOFLUSH keeps the dataset and the function",
        "    libraries, the keys loaded replacing those of the same names; a library loaded",
        "    over one still there fails the load unless MERGE.",
        "REPLYBUFFER PEAK-RESET-TIME <never|reset|<ms>>",
        "REPLYBUFFER RESIZING <0|1>",
        "    Accepted: Redis's settings for its per-client reply buffer, which Sluice does not",
        "    have (nothing is resized either way).",
        "SET-ACTIVE-EXPIRE <0|1>",
        "    0 stops the background expiry of keys (they still expire when accessed); 1",
        "    starts it again.",
        "SET-DISABLE-DENY-SCRIPTS <0|1>",
        "    1 lets scripts call commands flagged noscript (for tests only); 0 refuses them",
        "    again.",
        "SLEEP <seconds>",
        "    Block the server for <seconds> (fractions allowed).",
    ))


def _log(ctx: Context, argv: list[bytes]) -> Reply:
    log.warning("DEBUG LOG: %s", argv[2].decode(errors="replace"))
    return OK


def _sleep(ctx: Context, argv: list[bytes]) -> Reply:
    seconds = _atof(argv[2])
    if seconds > 0:
        time.sleep(seconds)  # blocking the whole server is the point of DEBUG SLEEP
    return OK


def _reply_copy_avoidance(ctx: Context, argv: list[bytes]) -> Reply:
    """DEBUG REPLY-COPY-AVOIDANCE 0|1: Redis's switch for referencing big strings in replies
    instead of copying them. Sluice's replies are always copies: accepted, nothing to do."""
    _atoi(argv[2])
    return OK


def _replybuffer(ctx: Context, argv: list[bytes]) -> Reply:
    """DEBUG REPLYBUFFER PEAK-RESET-TIME <never|reset|ms> / RESIZING <0|1>: Redis's knobs for
    the fixed reply buffer its cron resizes. Sluice has no such buffer (its replies go to a
    fresh buffer per write), so nothing is resized either way: checked as Redis checks
    them, accepted, nothing to do."""
    option = argv[2].lower()
    if option == b"peak-reset-time":
        if argv[3].lower() not in (b"never", b"reset"):
            parse_int(argv[3])
    elif option == b"resizing":
        _atoi(argv[3])
    else:
        raise subcommand_syntax(argv[1], "DEBUG")
    return OK


def _config_rewrite_force_all(ctx: Context, argv: list[bytes]) -> Reply:
    if not ctx.server.config.config_file:
        return ErrorReply(b"ERR CONFIG-REWRITE-FORCE-ALL failed: "
                          b"The server is running without a config file")
    try:
        ctx.server.config.rewrite(config_user_lines(ctx), force_all=True)
    except OSError as e:
        return ErrorReply(b"ERR CONFIG-REWRITE-FORCE-ALL failed: %s" % str(e.strerror).encode())
    return OK


def _set_active_expire(ctx: Context, argv: list[bytes]) -> Reply:
    ctx.server.active_expire_enabled = bool(_atoi(argv[2]))
    return OK


def _pause_cron(ctx: Context, argv: list[bytes]) -> Reply:
    ctx.server.cron_paused = bool(_atoi(argv[2]))
    return OK


def _set_disable_deny_scripts(ctx: Context, argv: list[bytes]) -> Reply:
    ctx.server.scripting.disable_deny_scripts = bool(_atoi(argv[2]))
    return OK


def _error(ctx: Context, argv: list[bytes]) -> Reply:
    return ErrorReply(argv[2])


def _change_repl_id(ctx: Context, argv: list[bytes]) -> Reply:
    ctx.server.run_id = secrets.token_hex(20)
    return OK


# The sample replies, byte for byte as Redis sends them.
_ATTRIB = b"|1\r\n$14\r\nkey-popularity\r\n*2\r\n$7\r\nkey:123\r\n:90\r\n"
_ATTRIB_TEXT = b"Some real reply following the attribute"
_PUSH = b">2\r\n$16\r\nserver-cpu-usage\r\n:42\r\n"
_PUSH_TEXT = b"Some real reply following the push reply"


def _protocol(ctx: Context, argv: list[bytes]) -> Reply:
    name = argv[2].lower()
    resp3 = ctx.resp3
    samples: dict[bytes, Callable[[], Reply]] = {
        b"string": lambda: b"Hello World",
        b"integer": lambda: 12345,
        b"double": lambda: Double(3.141),
        b"bignum": lambda: BigNumber(b"1234567999999999999999999999999999999"),
        b"null": lambda: None,
        b"array": lambda: [0, 1, 2],
        b"set": lambda: Set([0, 1, 2]),
        b"map": lambda: Map({0: Bool(False), 1: Bool(True), 2: Bool(False)}),
        b"attrib": lambda: Raw(_ATTRIB + b"$39\r\n" + _ATTRIB_TEXT + b"\r\n") if resp3
        else _ATTRIB_TEXT,
        b"verbatim": lambda: Verbatim(b"This is a verbatim\nstring"),
        b"true": lambda: Bool(True),
        b"false": lambda: Bool(False),
    }
    if name == b"push":
        if not resp3:
            raise CommandError(RESP2_UNSUPPORTED)
        # The push is made while the command runs; Redis 7.2+ sends such pushes after the
        # command's own reply (as for a PUBLISH to oneself).
        return Raw(b"$40\r\n" + _PUSH_TEXT + b"\r\n" + _PUSH)
    make = samples.get(name)
    if make is None:
        raise CommandError(DEBUG_PROTOCOL_TYPE)
    return make()


def _object(ctx: Context, argv: list[bytes]) -> Reply:
    db = ctx.db
    key = argv[2]
    # the key as stored (Redis's dbFind): one logically expired is described, not deleted
    value = db.data.get(key)
    if value is None:
        raise CommandError(NO_SUCH_KEY)
    encoding = db.encoding(key, value)
    refcount = db.refcount(key, value)
    idle = db.idle_seconds(key)
    # serializedlength: the bytes the value takes in an RDB file (rdbSavedObjectLen)
    length = len(encode_value(value, SaveOptions(ctx.server.config.rdbcompression))[1])
    extra = b""
    ql = getattr(value, "ql", None) if encoding == b"quicklist" else None
    if ql is not None and ql.nodes:  # as Redis's: the quicklist's shape and settings
        extra = b" ql_nodes:%d ql_avg_node:%.2f ql_listpack_max:%d ql_compressed:%d " \
                b"ql_uncompressed_size:%d" % (
                    len(ql.nodes), len(value) / len(ql.nodes), ql.fill, ql.compress != 0,
                    sum(n.sz for n in ql.nodes))
    # lru: the key's own 24-bit access word (LRU clock seconds, or LFU data), as o->lru
    return SimpleString(b"Value at:0x%x refcount:%d encoding:%s serializedlength:%d lru:%d "
                        b"lru_seconds_idle:%d%s" % (id(value), refcount, encoding, length,
                                                    db.word(key), idle, extra))


def _digest(ctx: Context, argv: list[bytes]) -> Reply:
    """The data set's fingerprint, as Redis computes it (digest.py)."""
    return SimpleString(dataset_digest(ctx.server.keyspace.dbs).hex().encode())


def _digest_value(ctx: Context, argv: list[bytes]) -> Reply:
    """One fingerprint per key named, of its value (twenty zero bytes for a missing key);
    an expired key that is still stored counts, as in Redis."""
    db = ctx.db
    out: list[Reply] = []
    for key in argv[2:]:
        value = db.data.get(key)
        digest = value_digest(db, key, value) if value is not None else bytes(20)
        out.append(SimpleString(digest.hex().encode()))
    return out


def _quicklist_packed_threshold(ctx: Context, argv: list[bytes]) -> Reply:
    """Elements longer than this get plain quicklist nodes of their own (0: the default,
    where the fill decides); process-wide, as Redis's."""
    try:
        size = parse_memory(argv[2])
    except ConfigError:
        size = -1
    if size < 0 or not set_packed_threshold(size):
        raise CommandError("ERR argument must be a memory value bigger than 1 and smaller "
                           "than 4gb")
    return OK


def _populate(ctx: Context, argv: list[bytes]) -> Reply:
    count = parse_int(argv[2])
    size = parse_int(argv[4]) if len(argv) == 5 else 0
    if count < 0 or size < 0:
        raise CommandError("ERR value is out of range, must be positive")
    prefix = argv[3] if len(argv) >= 4 else b"key"
    db = ctx.db
    for i in range(count):
        key = b"%s:%d" % (prefix, i)
        if key in db:
            continue
        value = b"value:%d" % i
        if size:
            value = value[:size].ljust(size, b"\0")
        db.set(key, value)
        ctx.modified(key)
    return OK


def _reload(ctx: Context, argv: list[bytes]) -> Reply:
    persistence = ctx.server.persistence
    if persistence is None:
        raise CommandError("ERR DEBUG RELOAD needs persistence, which this server lacks")
    save = flush = True
    merge = False
    for opt in argv[2:]:
        name = opt.upper()
        if name == b"NOSAVE":
            save = False
        elif name == b"NOFLUSH":
            flush = False
        elif name == b"MERGE":  # a key or library loaded over one still there replaces it
            merge = True
        else:
            raise CommandError("ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE "
                               "options.")
    err = persistence.debug_reload(save, flush, merge)
    if err:
        raise CommandError(err)
    log.info("DB reloaded by DEBUG RELOAD")
    return OK


def _loadaof(ctx: Context, argv: list[bytes]) -> Reply:
    persistence = ctx.server.persistence
    if persistence is None:
        raise CommandError("ERR DEBUG LOADAOF needs persistence, which this server lacks")
    err = persistence.debug_loadaof()
    if err:
        raise CommandError(err)
    return OK


# name -> (handler, smallest argc, largest argc); argc counts DEBUG and the subcommand.
_SUBCOMMANDS: dict[bytes, tuple[Callable[[Context, list[bytes]], Reply], int, int]] = {
    b"HELP": (_help, 2, 2),
    b"LOG": (_log, 3, 3),
    b"SLEEP": (_sleep, 3, 3),
    b"REPLY-COPY-AVOIDANCE": (_reply_copy_avoidance, 3, 3),
    b"REPLYBUFFER": (_replybuffer, 4, 4),
    b"SET-ACTIVE-EXPIRE": (_set_active_expire, 3, 3),
    b"PAUSE-CRON": (_pause_cron, 3, 3),
    b"CONFIG-REWRITE-FORCE-ALL": (_config_rewrite_force_all, 2, 2),
    b"SET-DISABLE-DENY-SCRIPTS": (_set_disable_deny_scripts, 3, 3),
    b"PROTOCOL": (_protocol, 3, 3),
    b"OBJECT": (_object, 3, 3),
    b"ERROR": (_error, 3, 3),
    b"POPULATE": (_populate, 3, 5),
    b"QUICKLIST-PACKED-THRESHOLD": (_quicklist_packed_threshold, 3, 3),
    b"DIGEST": (_digest, 2, 2),
    b"DIGEST-VALUE": (_digest_value, 2, 1 << 31),
    b"RELOAD": (_reload, 2, 1 << 31),
    b"LOADAOF": (_loadaof, 2, 2),
    b"CHANGE-REPL-ID": (_change_repl_id, 2, 2),
}


def debug(ctx: Context, args: Args) -> Reply:
    if not _allowed(ctx):
        raise CommandError(DEBUG_NOT_ALLOWED)
    argv = ctx.argv
    entry = _SUBCOMMANDS.get(argv[1].upper())
    if entry is None or not entry[1] <= len(argv) <= entry[2]:
        raise subcommand_syntax(argv[1], "debug")
    return entry[0](ctx, argv)
