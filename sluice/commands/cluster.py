"""Cluster commands of a standalone server: CLUSTER, READONLY, READWRITE, ASKING, TRIMSLOTS,
RESTORE-ASKING, and MIGRATE.

Sluice has no cluster mode: it is what redis-server is with ``cluster-enabled no``. So every
CLUSTER subcommand (HELP and KEYSLOT included), READONLY, READWRITE, ASKING and TRIMSLOTS
answer ``ERR This instance has cluster support disabled``, as Redis's ``clusterCommand``,
``clusterSlotStatsCommand``, ``readonlyCommand`` ... do before looking at their arguments.
The rows are still Redis's whole table (arity, flags, ACL categories, docs): dispatch checks
arity and flags first (``CLUSTER KEYSLOT`` alone is an arity error, ``CLUSTER RESET`` is
``noscript``, ``CLUSTER FOO`` an unknown subcommand), and clients and tools read COMMAND.
RESTORE-ASKING is RESTORE (its ASKING flag only matters in a cluster).

MIGRATE is real: it sends the keys to another server (Redis or Sluice) as DUMP payloads in
RESTORE commands, reads the replies, and deletes the keys the target took unless COPY is
given, as Redis's ``migrateCommand`` (cluster.c):

* AUTH / AUTH2 then SELECT (only when the cached connection has another database selected)
  then one ``RESTORE key ttl payload [REPLACE]`` per key still alive, all written at once,
  then one reply line read for each; the TTL sent is what remains (at least 1 ms);
* replies: ``+NOKEY`` when none of the keys exists, ``OK``, the target's first error as
  ``ERR Target instance replied with error: <its text>`` (the keys it took before still go),
  ``IOERR ...`` when the connection fails; a failure on a cached connection before any reply
  is retried once on a new one, unless it was a timeout;
* the network I/O is synchronous with the given timeout per operation, on blocking sockets
  (``migrate_sockets.py``): Redis blocks its event loop the same way, so the server serves
  nothing else meanwhile. Connections are cached per ``host:port`` for 10 s;
* the AOF gets ``DEL key ...`` of the keys moved (nothing with COPY), each key fires a "del"
  keyspace event and counts one change; the passwords in the arguments are shown as
  ``(redacted)`` to SLOWLOG and MONITOR.
"""

from __future__ import annotations

from sluice.protocol import OK, SimpleString
from sluice.storage import rdb
from sluice.storage.aof import encode_command

from .args import Args, parse_int
from .context import Command, Context, Reply
from .errors import (
    CLUSTER_DISABLED,
    MIGRATE_IOERR,
    MIGRATE_IOERR_CONNECT,
    MIGRATE_KEYS_NEED_EMPTY_KEY,
    MIGRATE_TARGET_ERROR,
    SYNTAX,
    CommandError,
)
from .migrate_sockets import ConnectError
from .persistence import restore
from .spec import (
    ACCESS,
    ADMIN,
    DELETE,
    DENYOOM,
    FAST,
    LOADING,
    NO_ASYNC_LOADING,
    NONE,
    NOSCRIPT,
    OW,
    RW,
    STALE,
    UPDATE,
    WRITE,
    A,
    F,
    K,
    KeySpec,
    cmd,
    key_at,
)

NOKEY = SimpleString(b"NOKEY")
_REDACTED = b"(redacted)"
_TIMEOUT_CAP_MS = 2**31 - 1  # what a poll() timeout can hold


def cluster_disabled(ctx: Context, args: Args) -> Reply:
    """Every CLUSTER subcommand, READONLY, READWRITE, ASKING and TRIMSLOTS on a standalone
    server: the error Redis answers before it reads any argument."""
    raise CommandError(CLUSTER_DISABLED)


# -- MIGRATE -------------------------------------------------------------------------------

def migrate(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    copy = replace = False
    username = password = None
    first, count = 3, 1  # where the keys are: the key argument, or what follows KEYS
    j = 6
    argc = len(argv)
    while j < argc:
        more = argc - 1 - j
        opt = argv[j].lower()
        if opt == b"copy":
            copy = True
        elif opt == b"replace":
            replace = True
        elif opt == b"auth":
            if not more:
                raise CommandError(SYNTAX)
            j += 1
            password = argv[j]
            argv[j] = _REDACTED  # redactClientCommandArgument: SLOWLOG and MONITOR
        elif opt == b"auth2":
            if more < 2:
                raise CommandError(SYNTAX)
            username, password = argv[j + 1], argv[j + 2]
            argv[j + 1] = argv[j + 2] = _REDACTED
            j += 2
        elif opt == b"keys":
            if argv[3]:
                raise CommandError(MIGRATE_KEYS_NEED_EMPTY_KEY)
            first, count = j + 1, argc - j - 1
            break
        else:
            raise CommandError(SYNTAX)
        j += 1
    timeout = parse_int(argv[5])  # (Redis parses the timeout first, then the db)
    dbid = parse_int(argv[4])
    if timeout <= 0:
        timeout = 1000
    timeout = min(timeout, _TIMEOUT_CAP_MS)
    db = ctx.db
    found = [(key, value) for key in argv[first:first + count]
             if (value := db.get(key)) is not None]
    if not found:  # not an error: the keys may just have expired meanwhile
        return NOKEY
    # The RESTORE commands, with the TTL each key has left (a key that expired since the
    # lookup above is skipped, as Redis's second look does).
    now = ctx.now_ms()
    restores: list[bytes] = []
    moving: list[bytes] = []
    compress = ctx.server.config.rdbcompression
    for key, value in found:
        ttl = 0
        expire_at = db.get_expire(key)
        if expire_at is not None:
            ttl = expire_at - now
            if ttl < 0:
                continue
            ttl = max(ttl, 1)
        try:
            payload = rdb.dump_payload(value, compress)
        except TypeError as e:  # a value type without an RDB serialisation (as DUMP says)
            raise CommandError(f"ERR {e}") from None
        line = [b"RESTORE", key, b"%d" % ttl, payload]
        if replace:
            line.append(b"REPLACE")
        restores.append(encode_command(line))
        moving.append(key)
    return _transfer(ctx, argv[1], argv[2], dbid, timeout, username, password, moving,
                     b"".join(restores), copy)


def _transfer(ctx: Context, host: bytes, port: bytes, dbid: int, timeout: int,
              username: bytes | None, password: bytes | None, keys: list[bytes],
              restores: bytes, copy: bool) -> Reply:
    """Send the RESTOREs and read the replies, with Redis's one retry on a fresh connection
    (a cached connection the target has closed since is the usual reason)."""
    sockets = ctx.server.migrate_sockets
    may_retry = True
    while True:
        try:
            cs = sockets.get(host, port, timeout, ctx.now_ms())
        except ConnectError:
            raise CommandError(MIGRATE_IOERR_CONNECT) from None
        head: list[bytes] = []
        if password is not None:
            head.append(encode_command([b"AUTH", password] if username is None
                                       else [b"AUTH", username, password]))
        select = cs.last_dbid != dbid
        if select:
            head.append(encode_command([b"SELECT", b"%d" % dbid]))
        stage = "writing"
        try:
            cs.write(b"".join(head) + restores, timeout)
            stage = "reading"
            auth_reply = cs.read_line(timeout) if password is not None else b""
            select_reply = cs.read_line(timeout) if select else b""
        except OSError as e:
            sockets.close(host, port)
            if may_retry and not isinstance(e, TimeoutError):
                may_retry = False
                continue
            raise CommandError(MIGRATE_IOERR % stage) from None
        error: bytes | None = None
        moved: list[bytes] = []
        failure: OSError | None = None
        done = 0
        for key in keys:
            try:
                reply = cs.read_line(timeout)
            except OSError as e:
                failure = e
                break
            done += 1
            if auth_reply[:1] == b"-" or select_reply[:1] == b"-" or reply[:1] == b"-":
                if error is None:  # the first error wins; SELECT again next time
                    cs.last_dbid = -1
                    error = (auth_reply if auth_reply[:1] == b"-" else
                             select_reply if select_reply[:1] == b"-" else reply)[1:]
            elif not copy:
                moved.append(key)
        if (failure is not None and error is None and done == 0 and may_retry
                and not isinstance(failure, TimeoutError)):
            sockets.close(host, port)  # nothing was taken: start over on a new connection
            may_retry = False
            continue
        if failure is not None:
            sockets.close(host, port)
        _delete_moved(ctx, moved)
        if error is not None:  # (one line, as addReplyErrorFormat makes it)
            raise CommandError(MIGRATE_TARGET_ERROR % error.replace(b"\r", b" "))
        if failure is not None:
            raise CommandError(MIGRATE_IOERR % "reading")
        cs.last_dbid = dbid
        return OK


def _delete_moved(ctx: Context, keys: list[bytes]) -> None:
    """The keys the target took go here, logged as one DEL (Redis rewrites MIGRATE so)."""
    if not keys:
        return
    db = ctx.db
    for key in keys:
        db.delete(key)  # a key given twice: deleted once, counted twice, as Redis
        ctx.modified(key)
        ctx.notify(b"del", key)
    ctx.rewrite_argv([b"DEL", *keys])


_MIGRATE_SKIP = {b"copy": 0, b"replace": 0, b"auth": 1, b"auth2": 2}


def migrate_get_keys(argv: list[bytes]) -> list[tuple[int, int]]:
    """Redis's ``migrateGetKeys`` (MIGRATE's key specs are incomplete, so COMMAND GETKEYS
    and the ACL check ask this): the key argument, or, after a KEYS option, every argument
    after it. The options before KEYS are skipped with their values, so a password "KEYS"
    is no KEYS; KEYS with a non-empty key argument gives none (MIGRATE refuses it)."""
    first, num = 3, 1
    i = 6
    while i < len(argv):
        word = argv[i].lower()
        if word == b"keys":
            if argv[3]:
                num = 0
            else:
                first, num = i + 1, len(argv) - i - 1
            break
        i += _MIGRATE_SKIP.get(word, 0) + 1
    flags = RW | ACCESS | DELETE
    return [(pos, flags) for pos in range(first, first + num)]


# MIGRATE's keys: the key argument, and (incomplete: a password may read "KEYS") what
# follows the last KEYS; COMMAND GETKEYS then asks introspection's migrate key finder.
_MIGRATE_KEYS = (
    key_at(3, RW | ACCESS | DELETE),
    KeySpec(RW | ACCESS | DELETE | K.INCOMPLETE, keyword=b"keys", startfrom=-2, lastkey=-1),
)
_ADM = NO_ASYNC_LOADING | ADMIN | STALE
_ND = ("nondeterministic_output",)
_C = "cluster"


def _sub(name: str, arity: int, flags: int, summary: str, since: str, *, syntax: str = "",
         complexity: str = "O(1)", tips: tuple[str, ...] = (),
         doc_flags: tuple[str, ...] = ()) -> Command:
    """One CLUSTER subcommand row (all of them answer with ``cluster_disabled``)."""
    return cmd(f"cluster|{name}", arity, flags, A.NONE, None, cluster_disabled, summary,
               group=_C, since=since, syntax=syntax, complexity=complexity, tips=tips,
               doc_flags=doc_flags)


_SLOTS_N = "O(N) where N is the total number of hash slot arguments"
_RANGE_N = ("O(N) where N is the total number of the slots between the start slot and end "
            "slot arguments.")
_NODES_N = "O(N) where N is the total number of Cluster nodes"

COMMANDS: tuple[Command, ...] = (
    #    name                          arity  flags                 summary
    cmd("cluster",                       -2,  NONE, A.NONE, None, None,
        "Groups the Redis Cluster commands.", group=_C, since="3.0.0",
        complexity="Depends on subcommand."),
    _sub("addslots",                     -3,  _ADM,              "Gives hash slots to this node.",
         "3.0.0", syntax="slot [slot ...]", complexity=_SLOTS_N),
    _sub("addslotsrange",                -4,  _ADM,              "Gives ranges of hash slots to this node.",
         "7.0.0", syntax="start-slot end-slot [start-slot end-slot ...]", complexity=_RANGE_N),
    _sub("bumpepoch",                     2,  _ADM,              "Moves the cluster's config epoch forward.",
         "3.0.0", tips=_ND),
    _sub("count-failure-reports",         3,  ADMIN | STALE,     "Counts the live failure reports about a node.",
         "3.0.0", syntax="node-id", tips=_ND,
         complexity="O(N) where N is the number of failure reports"),
    _sub("countkeysinslot",               3,  STALE,             "Counts the keys of a hash slot.",
         "3.0.0", syntax="slot"),
    _sub("delslots",                     -3,  _ADM,              "Takes hash slots away from this node.",
         "3.0.0", syntax="slot [slot ...]", complexity=_SLOTS_N),
    _sub("delslotsrange",                -4,  _ADM,              "Takes ranges of hash slots away from this node.",
         "7.0.0", syntax="start-slot end-slot [start-slot end-slot ...]", complexity=_RANGE_N),
    _sub("failover",                     -2,  _ADM,              "Makes a replica take over from its master.",
         "3.0.0", syntax="[FORCE | TAKEOVER]"),
    _sub("flushslots",                    2,  _ADM,              "Forgets every slot this node serves.",
         "3.0.0"),
    _sub("forget",                        3,  _ADM,              "Drops a node from this node's table.",
         "3.0.0", syntax="node-id"),
    _sub("getkeysinslot",                 4,  STALE,             "Lists key names of a hash slot.",
         "3.0.0", syntax="slot count", tips=_ND,
         complexity="O(N) where N is the number of requested keys"),
    _sub("help",                          2,  LOADING | STALE,   "Explains the CLUSTER subcommands.",
         "5.0.0"),
    _sub("info",                          2,  STALE,             "Describes the cluster state as this node sees it.",
         "3.0.0", tips=_ND),
    _sub("keyslot",                       3,  STALE,             "Computes the hash slot of a key name.",
         "3.0.0", syntax="key",
         complexity="O(N) where N is the number of bytes in the key"),
    _sub("links",                         2,  STALE,             "Lists the TCP links to and from the other nodes.",
         "7.0.0", tips=_ND, complexity=_NODES_N),
    _sub("meet",                         -4,  _ADM,              "Makes this node handshake with another one.",
         "3.0.0", syntax="ip port [cluster-bus-port]"),
    _sub("migration",                    -4,  _ADM,              "Starts, follows or cancels an atomic slot migration.",
         "8.4.0", complexity=_RANGE_N,
         syntax="<IMPORT start-slot end-slot [start-slot end-slot ...] | CANCEL <ID task-id | ALL> "
                "| STATUS [ID task-id | ALL]>"),
    _sub("myid",                          2,  STALE,             "Returns this node's ID.",
         "3.0.0"),
    _sub("myshardid",                     2,  STALE,             "Returns the ID of this node's shard.",
         "7.2.0", tips=_ND),
    _sub("nodes",                         2,  STALE,             "Describes the cluster's nodes as this node sees them.",
         "3.0.0", tips=_ND, complexity=_NODES_N),
    _sub("replicas",                      3,  ADMIN | STALE,     "Lists the replicas of a master node.",
         "5.0.0", syntax="node-id", tips=_ND,
         complexity="O(N) where N is the number of replicas."),
    _sub("replicate",                     3,  _ADM,              "Makes this node a replica of a master node.",
         "3.0.0", syntax="node-id"),
    _sub("reset",                        -2,  ADMIN | STALE | NOSCRIPT, "Resets this node's cluster state.",
         "3.0.0", syntax="[HARD | SOFT]",
         complexity="O(N) where N is the number of known nodes. The command may execute a "
                    "FLUSHALL as a side effect."),
    _sub("saveconfig",                    2,  _ADM,              "Writes the cluster configuration to disk now.",
         "3.0.0"),
    _sub("set-config-epoch",              3,  _ADM,              "Gives a new node its config epoch.",
         "3.0.0", syntax="config-epoch"),
    _sub("setslot",                      -4,  _ADM,              "Binds a hash slot to a node, or marks its migration.",
         "3.0.0",
         syntax="slot <IMPORTING node-id | MIGRATING node-id | NODE node-id | STABLE>"),
    _sub("shards",                        2,  LOADING | STALE,   "Describes the cluster's shards and their slots.",
         "7.0.0", tips=_ND, complexity=_NODES_N),
    _sub("slaves",                        3,  ADMIN | STALE,     "Lists the replicas of a master node (old name).",
         "3.0.0", syntax="node-id", tips=_ND, doc_flags=("deprecated",),
         complexity="O(N) where N is the number of replicas."),
    _sub("slot-stats",                   -4,  STALE | LOADING,   "Returns usage statistics of this node's hash slots.",
         "8.2.0", tips=("nondeterministic_output", "request_policy:all_shards"),
         syntax="<SLOTSRANGE start-slot end-slot | ORDERBY metric [LIMIT limit] [ASC | DESC]>",
         complexity="O(N) where N is the total number of slots based on arguments. "
                    "O(N*log(N)) with ORDERBY subcommand."),
    _sub("slots",                         2,  LOADING | STALE,   "Maps hash slot ranges to nodes (old form).",
         "3.0.0", tips=_ND, doc_flags=("deprecated",), complexity=_NODES_N),
    _sub("syncslots",                    -3,  _ADM,              "Carries an atomic slot migration between nodes (internal).",
         "8.4.0", tips=_ND,
         syntax="<SYNC task-id start-slot end-slot [start-slot end-slot ...] | RDBCHANNEL task-id "
                "| SNAPSHOT-EOF | STREAM-EOF | ACK state offset | FAIL error "
                "| CONF option value [option value ...]>"),
    #   name               arity  flags                     acl                     keys                 handler
    cmd("readonly",           1,  FAST | LOADING | STALE,   A.CONNECTION,           None,                cluster_disabled,
        "Lets a cluster replica serve reads on this connection.", group=_C, since="3.0.0"),
    cmd("readwrite",          1,  FAST | LOADING | STALE,   A.CONNECTION,           None,                cluster_disabled,
        "Ends READONLY mode on this connection.", group=_C, since="3.0.0"),
    cmd("asking",             1,  FAST,                     A.CONNECTION,           None,                cluster_disabled,
        "Follows an -ASK redirection in a cluster.", group=_C, since="3.0.0"),
    cmd("trimslots",         -5,  WRITE,                    A.KEYSPACE | A.DANGEROUS, None,              cluster_disabled,
        "Deletes the keys of the given hash slots.", group="server", since="8.4.0",
        syntax="RANGES numranges startslot endslot [startslot endslot ...]",
        complexity="O(N) where N is the total number of keys in all databases"),
    cmd("restore-asking",    -4,  WRITE | DENYOOM | F.ASKING, A.KEYSPACE | A.DANGEROUS, key_at(1, OW | UPDATE), restore,
        "RESTORE, for a cluster's key migrations.", group="server", since="3.0.0",
        syntax="key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]",
        doc_flags=("syscmd",),
        complexity="O(1) to create the new key and additional O(N*M) to reconstruct the "
                   "serialized value, where N is the number of Redis objects composing the "
                   "value and M their average size."),
    cmd("migrate",           -6,  WRITE,                    A.KEYSPACE | A.DANGEROUS, _MIGRATE_KEYS,    migrate,
        "Moves keys to another server, or copies them there.", since="2.6.0", reads=True,
        syntax='host port <key | ""> destination-db timeout [COPY] [REPLACE] '
               "[AUTH password | AUTH2 username password] [KEYS key [key ...]]",
        tips=_ND,
        complexity="A DUMP and a DEL per key here, a RESTORE per key on the target, and an "
                   "O(N) transfer of the N bytes of their payloads."),
)
