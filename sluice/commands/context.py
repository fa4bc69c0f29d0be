"""The one door between command handlers and the server: ``Context``, and what it opens on.

Every handler is ``def name(ctx: Context, args: Args) -> Reply``. ``Context`` is a
``typing.Protocol``: it names, one documented line each, everything a handler may use, and
nothing else. The server's per-connection class (``server.client.Client``) implements it
structurally, and ``server.app.Server`` implements ``ServerFacade``; mypy checks both (small
typed functions in ``client.py``, ``app.py`` and ``acl.py`` return them as the protocols, and
dispatch passes clients to handlers typed with ``Context``). Commands never import
``sluice.server``: what both layers need lives here or below (``reply.py``, ``errors.py``,
``spec.py``, ``storage``, ``protocol``). Being protocols, these classes cost nothing at run
time: ``ctx.db`` and ``ctx.server.config.stream_node_max_entries`` are the same attribute
reads as before, no wrapper in between. (Redis's handlers take a ``client *c`` and reach
the ``server`` global for the rest; this is the same reach, typed and narrowed.)

The map (details on each member below):

* the data: ``db`` (the selected ``storage.keyspace.Database``), ``now_ms()``,
  ``modified(key)`` after every write (dirty count, WATCH, blocked clients);
* the reply: ``resp3``, ``reply_mode`` (return values are ``Reply``, see ``reply.py``);
* propagation to the AOF: ``rewrite_argv(...)`` and ``modified``'s ``changes``;
* blocking: ``block(...)``, ``bstate``, ``in_exec``, ``parse_memo``;
* the connection itself: ``id``, ``argv``, ``cmd``, ``name``, ``user``, ``multi`` ...;
* the server, through ``ctx.server`` (a ``ServerFacade``): settings (``config``, a
  ``Settings``), the keyspace and the command table, stats, other clients, WATCH and EXEC,
  pub/sub, persistence, the slow log and LATENCY, ACL users, pausing and shutting down,
  scripting (``scripting``, a ``Scripting``; and ``call``, dispatch's choke point, through
  which a script's ``redis.call`` runs its commands).

``ServerFacade`` is generic in the client type ``C``: inside a handler ``ctx.server`` is a
``ServerFacade[Context]`` (other clients are ``Context`` too, for CLIENT LIST/KILL/UNBLOCK);
the real ``Server`` is a ``ServerFacade[Client]``, so its methods keep taking ``Client``.

Settings: ``server/config.py`` keeps its values as attributes set from a table, which mypy
cannot see; ``Settings`` declares, typed, the ones handlers read, and
``tests/unit/commands/test_context.py`` checks each against the real table (its type and
that it exists), so a typo or a wrong type fails a test instead of a command.

Adding a member (say, a new family needs ``hash-max-listpack-entries``, a keyspace
notification hook, or scripting's ``call``):

1. implement it on the server side (``Param(...)`` in ``server/config.py``, a method on
   ``Server`` or ``Client``), typed with ``Client`` where it takes a client;
2. declare it here, in the protocol it belongs to, with one comment saying what it is
   (``C`` where the server side takes a client; a ``@property`` for what handlers only
   read, a plain annotation for what they may assign);
3. run ``mypy --strict sluice``: it checks that ``Client`` and ``Server`` still match.

Nothing here may import ``sluice.server`` (``make lint`` runs import-linter to keep it so).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, MutableSequence, Sequence
from typing import Protocol, Self, TypeAlias, TypeVar

from sluice.storage.hotkeys import HotkeysSession
from sluice.storage.keyspace import Database, Keyspace

from .migrate_sockets import MigrateSockets
from .reply import BLOCKED, REPLY_OFF, REPLY_ON, REPLY_SKIP, REPLY_SKIP_NEXT, Blocked, Reply
from .spec import Cmd

__all__ = [
    "BLOCKED", "REPLY_OFF", "REPLY_ON", "REPLY_SKIP", "REPLY_SKIP_NEXT", "Acl", "AclCommands",
    "AclLogEntry", "AclSelector", "AclUser", "Aof", "BlockedOn", "Blocked", "Blocking",
    "Command", "Context", "FunctionInfo", "Latency", "LibraryInfo", "Memory", "Persistence",
    "PubSub", "Reply", "RunningScript", "Scripting", "ServerFacade", "Settings", "SlowlogEntry",
    "Tracking", "command_name", "user_key",
]

C = TypeVar("C")  # the client type: Context for handlers, server.client.Client for the server
C_contra = TypeVar("C_contra", contravariant=True)

Command: TypeAlias = Cmd["Context"]
"""A command table row whose handler takes a ``Context``."""

SlowlogEntry: TypeAlias = list[int | bytes | list[bytes]]
"""One SLOWLOG GET entry: id, unix time, microseconds, arguments, client address, name."""


def user_key(name: bytes) -> str:
    """``Context.user``'s form of a user name (reversible for any bytes)."""
    return name.decode("utf-8", "surrogateescape")


def command_name(ctx: Context) -> str:
    """The running command's name as its table row has it (``ctx.cmd`` is set while a
    handler runs; error texts quote it: ``wrong number of arguments for 'lpop'``)."""
    cmd = ctx.cmd
    assert cmd is not None, "ctx.cmd is set while a handler runs"
    return cmd.name


class Settings(Protocol):
    """The configuration values handlers read (``server/config.py``: directive names with
    ``-`` as ``_``), and CONFIG's operations."""

    @property
    def stream_node_max_entries(self) -> int: ...  # entries per stream node (0: no limit)
    @property
    def stream_node_max_bytes(self) -> int: ...  # bytes per stream node (0: no limit)
    @property
    def stream_idmp_duration(self) -> int: ...  # a new stream's IDMP duration (seconds)
    @property
    def stream_idmp_maxsize(self) -> int: ...  # a new stream's IDMP entries per producer
    @property
    def list_max_listpack_size(self) -> int: ...  # list node fill (negative: a size class)
    @property
    def hash_max_listpack_entries(self) -> int: ...  # a listpack hash's most fields
    @property
    def hash_max_listpack_value(self) -> int: ...  # a listpack hash's longest field or value
    @property
    def set_max_intset_entries(self) -> int: ...  # an intset holds at most this many
    @property
    def set_max_listpack_entries(self) -> int: ...  # a listpack set holds at most this many
    @property
    def set_max_listpack_value(self) -> int: ...  # ... members of at most this many bytes
    @property
    def zset_max_listpack_entries(self) -> int: ...  # a listpack sorted set: at most this many
    @property
    def zset_max_listpack_value(self) -> int: ...  # ... members of at most this many bytes
    @property
    def proto_max_bulk_len(self) -> int: ...  # the longest string a command may build
    @property
    def hll_sparse_max_bytes(self) -> int: ...  # a sparse HyperLogLog's size limit (bytes)
    @property
    def rdbcompression(self) -> bool: ...  # LZF-compress DUMP payloads
    @property
    def aclfile(self) -> str: ...  # ACL LOAD/SAVE's file ("" when none)
    @property
    def enable_debug_command(self) -> str: ...  # no | yes | local
    @property
    def enable_protected_configs(self) -> str: ...  # no | yes | local
    @property
    def latency_monitor_threshold(self) -> int: ...  # LATENCY's threshold in ms (0: off)
    @property
    def config_file(self) -> str | None: ...  # the file CONFIG REWRITE writes, if any
    @property
    def busy_reply_threshold(self) -> int: ...  # ms a script runs before others get BUSY
    @property
    def lua_enable_deprecated_api(self) -> bool: ...  # setfenv/getfenv/newproxy in scripts
    @property
    def loglevel(self) -> str: ...  # debug | verbose | notice | warning | nothing
    @property
    def maxmemory(self) -> int: ...  # bytes (0: no limit)
    @property
    def min_replicas_to_write(self) -> int: ...  # writes need this many good replicas (0: no)
    @property
    def lazyfree_lazy_user_del(self) -> bool: ...  # DEL frees as UNLINK does
    @property
    def lazyfree_lazy_user_flush(self) -> bool: ...  # FLUSHALL/FLUSHDB default to ASYNC
    @property
    def maxmemory_policy(self) -> str: ...  # noeviction, allkeys-lru ... (evict.POLICIES)
    @property
    def key_memory_histograms(self) -> bool: ...  # INFO keysizes shows allocation sizes too

    def get_matching(self, patterns: Sequence[bytes]) -> dict[bytes, bytes]: ...  # CONFIG GET
    def set_many(self, pairs: list[tuple[bytes, list[bytes]]], *,
                 protected_ok: bool = False) -> None: ...  # CONFIG SET: all or none
    def rewrite(self, users: list[str] | None, force_all: bool = False) -> None: ...
    # CONFIG REWRITE (config_rewrite.py; raises ConfigError, OSError)


class BlockedOn(Protocol):
    """What a handler sees of a client's blocked state (``server.blocking.BlockState``)."""

    @property
    def argv(self) -> list[bytes]: ...  # the command re-run on wake-up (``block``'s argv)
    @property
    def memo(self) -> object: ...  # ``block(..., memo=)``, kept for re-runs and ready_check
    @property
    def on_timeout(self) -> Reply: ...  # the reply on timeout or CLIENT UNBLOCK ... TIMEOUT


class Blocking(Protocol[C_contra]):
    """Blocked clients (``server.blocking.BlockingManager``, Redis's blocked.c)."""

    def signal_key_as_ready(self, db: Database, key: bytes) -> None: ...  # wake its waiters
    def signal_deleted_key_as_ready(self, db: Database,
                                    key: bytes) -> None: ...  # overwritten: XREADGROUP's only
    def wake_when_claimable(self, db: Database, keys: list[bytes],
                            at_ms: int) -> None: ...  # signal ``keys`` at ``at_ms``
    def unblock_client(self, client: C_contra, reply: Reply) -> None: ...  # answer, unblock


class PubSub(Protocol[C_contra]):
    """Subscriptions and delivery (``server.pubsub.PubSub``); each returns as Redis counts."""

    @property
    def patterns(self) -> Mapping[bytes, object]: ...  # pattern -> its subscribers

    def subscribe(self, client: C_contra, channel: bytes,
                  shard: bool = False) -> bool: ...  # False if already subscribed
    def unsubscribe(self, client: C_contra, channel: bytes,
                    shard: bool = False) -> bool: ...  # False if it was not
    def psubscribe(self, client: C_contra, pattern: bytes) -> bool: ...  # a pattern
    def punsubscribe(self, client: C_contra, pattern: bytes) -> bool: ...  # drop a pattern
    def unsubscribe_all(self, client: C_contra) -> None: ...  # RESET, disconnect
    def publish(self, channel: bytes, message: bytes, shard: bool = False,
                publisher: C_contra | None = None) -> int: ...  # deliveries made
    def numsub(self, channel: bytes, shard: bool = False) -> int: ...  # a channel's subscribers
    def active(self, pattern: bytes | None,
               shard: bool = False) -> list[bytes]: ...  # channels with subscribers


class Tracking(Protocol[C_contra]):
    """Client-side caching (``server.tracking.Tracking``, Redis's tracking.c)."""

    @property
    def count(self) -> int: ...  # clients with tracking on

    def enable(self, client: C_contra, redirect: int, options: int,
               prefixes: list[bytes]) -> None: ...  # CLIENT TRACKING ON (options checked)
    def disable(self, client: C_contra) -> None: ...  # CLIENT TRACKING OFF, RESET
    def info_fields(self) -> dict[str, int]: ...  # INFO tracking_total_keys/items/prefixes
    def invalidate_all(self) -> None: ...  # FLUSHALL / FLUSHDB: a null to every tracker


class Memory(Protocol):
    """Memory accounting and eviction (``server.memory.Memory``)."""

    @property
    def peak(self) -> int: ...  # INFO used_memory_peak
    @property
    def clients_mem(self) -> int: ...  # clients' buffers and structures (last refresh)
    @property
    def aof_mem(self) -> int: ...  # the AOF buffer (not counted for eviction)
    @property
    def other_mem(self) -> int: ...  # tracking table, slow log
    @property
    def startup(self) -> int: ...  # used_memory_startup

    def refresh(self) -> int: ...  # measure the buffers again; used_memory
    def used(self) -> int: ...  # used_memory, buffers as last measured
    def overhead(self) -> int: ...  # used_memory_overhead
    def perform_evictions(self) -> int: ...  # evict down to maxmemory (EVICT_* result)


class Aof(Protocol):
    """The append-only file, when ``appendonly yes`` (``server.persistence.AppendOnlyFile``)."""

    @property
    def child_pid(self) -> int: ...  # the rewriting child, 0 when none
    rewrite_scheduled: bool  # a rewrite waits for a BGSAVE, or for the EXEC it was asked in

    def feed(self, db_id: int, argvs: list[list[bytes]]) -> None: ...  # log these commands
    def begin_multi(self, db_id: int) -> None: ...  # what is fed next is one transaction...
    def end_multi(self) -> None: ...  # ...until here (MULTI/EXEC around it, if anything came)
    def start_rewrite(self) -> str | None: ...  # BGREWRITEAOF; the error text, or None


class Replication(Protocol[C_contra]):
    """A master with no replicas (``server.replication.Replication``): WAIT, WAITAOF and
    min-replicas-to-write."""

    @property
    def fsynced_reploff(self) -> int: ...  # the offset the AOF is fsynced to (-1: AOF off)

    def block_for_replication(self, client: C_contra,
                              timeout_ms: int) -> Reply: ...  # park a WAIT client
    def block_for_aof_fsync(self, client: C_contra, timeout_ms: int, numlocal: int,
                            numreplicas: int) -> Reply: ...  # park a WAITAOF client
    def good_replicas_ok(self) -> bool: ...  # min-replicas-to-write allows writes


class Persistence(Protocol):
    """Snapshots and start-up loading (``server.snapshot.Persistence``)."""

    @property
    def child_pid(self) -> int: ...  # the BGSAVE child, 0 when none
    rdb_saves: int  # INFO rdb_saves
    bgsave_scheduled: bool  # BGSAVE SCHEDULE waits for an AOF rewrite
    offline_rewrite_scheduled: bool  # BGREWRITEAOF that must wait, appendonly no: the cron's

    @property
    def offline_rewrite(self) -> object | None: ...  # appendonly no: a rewrite child runs

    def save(self) -> bool: ...  # SAVE, in the foreground
    def bgsave(self) -> str | None: ...  # BGSAVE; the error text, or None
    def rewrite_offline(self) -> str | None: ...  # BGREWRITEAOF with appendonly no
    def after_flushall(self) -> None: ...  # FLUSHALL: stop a BGSAVE, save if configured
    def shutdown_save(self, save: bool | None,
                      force: bool = False) -> str | None: ...  # SHUTDOWN's save; error
    def debug_reload(self, save: bool = True, flush: bool = True,
                     merge: bool = False) -> str | None: ...  # DEBUG RELOAD; error text
    def debug_loadaof(self) -> str | None: ...  # DEBUG LOADAOF; error text


class Latency(Protocol):
    """LATENCY's samples (``server.latency.LatencyMonitor``)."""

    @property
    def events(self) -> Mapping[str, tuple[Sequence[list[int]], list[int]]]: ...  # samples, max

    def latest(self) -> list[list[object]]: ...  # LATENCY LATEST rows
    def history(self, event: bytes) -> list[list[int]]: ...  # [unix time, ms] per sample
    def reset(self, events: list[bytes]) -> int: ...  # forget events (all if none); count


class Hotkeys(Protocol):
    """HOTKEYS' session (``server.hotkeys.Hotkeys``)."""

    @property
    def session(self) -> HotkeysSession | None: ...  # running or stopped; None after RESET

    def start(self, session: HotkeysSession) -> None: ...  # START: replaces, tracks from now
    def stop(self) -> None: ...  # STOP: tracking ends, results stay for GET
    def reset(self) -> None: ...  # RESET: forget the session


class AclSelector(Protocol):
    """A user's selector, as ACL GETUSER describes it."""

    def describe_commands(self) -> bytes: ...  # its command rules
    def describe_keys(self) -> bytes: ...  # its key patterns
    def describe_channels(self) -> bytes: ...  # its channel patterns


class AclUser(Protocol):
    """An ACL user (``server.acl_user.User``)."""

    @property
    def name(self) -> bytes: ...  # as created
    @property
    def nopass(self) -> bool: ...  # any password is accepted
    @property
    def passwords(self) -> Sequence[str]: ...  # hex SHA-256 hashes
    @property
    def root(self) -> AclSelector: ...  # the rules outside parentheses
    @property
    def selectors(self) -> Sequence[AclSelector]: ...  # root first, then the others

    def flag_names(self) -> list[bytes]: ...  # on/off, nopass, ... for ACL GETUSER
    def describe(self) -> bytes: ...  # its rules, as ACL LIST prints them
    def check(self, cmd: Command, argv: list[bytes]) -> tuple[int, int]: ...  # errors.DENIED_*
    def reads_every_key(self, cmd: Command,
                        argv: list[bytes]) -> bool: ...  # may read any key (SORT's BY / GET)


class AclLogEntry(Protocol):
    """One ACL LOG entry (``server.acl.LogEntry``)."""

    @property
    def count(self) -> int: ...  # similar events grouped into it
    @property
    def reason(self) -> int: ...  # errors.DENIED_*
    @property
    def context(self) -> bytes: ...  # toplevel | multi
    @property
    def object(self) -> bytes: ...  # the command, key or channel denied
    @property
    def username(self) -> bytes: ...  # the user denied
    @property
    def ctime(self) -> int: ...  # unix ms of the latest event
    @property
    def created(self) -> int: ...  # unix ms of the first event
    @property
    def cinfo(self) -> bytes: ...  # CLIENT LIST line of the latest client
    @property
    def entry_id(self) -> int: ...  # its number


class AclCommands(Protocol):
    """The command table as ACL rules see it (real names, before rename-command)."""

    def in_category(self, cat: int) -> Sequence[Command]: ...  # ACL CAT <category>


class Acl(Protocol[C_contra]):
    """ACL users (``server.acl.AclManager``)."""

    @property
    def default(self) -> AclUser: ...  # the default user
    @property
    def users(self) -> Mapping[str, AclUser]: ...  # by ``user_key(name)``
    @property
    def log(self) -> Sequence[AclLogEntry]: ...  # ACL LOG, newest first
    @property
    def index(self) -> AclCommands: ...  # commands by category

    def auth_client(self, client: C_contra, username: bytes,
                    password: bytes) -> bool: ...  # AUTH; a failure goes to ACL LOG
    def setuser(self, name: bytes, ops: list[bytes]) -> bytes | None: ...  # error, or None
    def deluser(self, names: list[bytes], current: C_contra | None) -> int: ...  # deleted
    def sorted_users(self) -> Sequence[AclUser]: ...  # by name, bytewise
    def clear_log(self) -> None: ...  # ACL LOG RESET
    def load_file(self, current: C_contra | None = None) -> str | None: ...  # errors, or None
    def save_file(self) -> bool: ...  # ACL SAVE
    def add_log(self, client: C_contra, reason: int, context: bytes, obj: bytes,
                username: bytes, cmd: Command | None = None,
                ) -> None: ...  # an ACL LOG entry (context lua: ``cmd`` is the script's)


class RunningScript(Protocol):
    """The script or function running now (``scripting.engine.ScriptRun``)."""

    @property
    def funcname(self) -> bytes: ...  # an EVAL script's SHA1, or the function's name
    @property
    def argv(self) -> list[bytes]: ...  # the command that runs it (FUNCTION STATS)
    @property
    def eval_mode(self) -> bool: ...  # EVAL (SCRIPT KILL) rather than FCALL (FUNCTION KILL)

    def duration_ms(self) -> int: ...  # how long it has run


class FunctionInfo(Protocol):
    """A function of a library (``scripting.functions.Function``), as FUNCTION LIST shows it."""

    @property
    def name(self) -> bytes: ...  # as registered
    @property
    def desc(self) -> bytes | None: ...  # its description, if one was given
    @property
    def flag_names(self) -> list[bytes]: ...  # no-writes, allow-oom ...


class LibraryInfo(Protocol):
    """A function library (``scripting.functions.Library``)."""

    @property
    def name(self) -> bytes: ...  # from ``#!lua name=<lib>``
    @property
    def engine(self) -> bytes: ...  # LUA
    @property
    def code(self) -> bytes: ...  # as loaded
    @property
    def functions(self) -> Mapping[bytes, FunctionInfo]: ...  # by name, in registration order


class Scripting(Protocol[C_contra]):
    """EVAL's script cache, the function libraries and the running script
    (``scripting.runner.Scripting``, docs/scripting.md). Errors raise ``CommandError``."""

    @property
    def running(self) -> RunningScript | None: ...  # the script running now (from its hook)
    disable_deny_scripts: bool  # DEBUG SET-DISABLE-DENY-SCRIPTS: noscript commands allowed
    @property
    def libraries(self) -> Sequence[LibraryInfo]: ...  # in load order
    @property
    def function_count(self) -> int: ...  # functions over all libraries

    def eval(self, caller: C_contra, body: bytes, evalsha: bool, read_only: bool,
             keys: list[bytes], args: list[bytes]) -> Reply: ...  # EVAL[SHA][_RO]: its reply
    def eval_debug(self, caller: C_contra, body: bytes, read_only: bool, keys: list[bytes],
                   args: list[bytes]) -> Reply: ...  # EVAL after SCRIPT DEBUG YES/SYNC
    def fcall(self, caller: C_contra, name: bytes, read_only: bool, keys: list[bytes],
              args: list[bytes]) -> Reply: ...  # FCALL[_RO]: its reply
    def find_function(self, name: bytes) -> FunctionInfo | None: ...  # FCALL's (any case)
    def declared_flags(self, kind: str, ref: bytes) -> int | None: ...  # a script's flags
    def script_load(self, body: bytes) -> bytes: ...  # SCRIPT LOAD: the SHA1
    def script_exists(self, sha: bytes) -> bool: ...  # SCRIPT EXISTS, one SHA1
    def script_flush(self) -> int: ...  # SCRIPT FLUSH: scripts dropped
    def kill(self, eval_mode: bool | None) -> None: ...  # SCRIPT/FUNCTION KILL; None: SHUTDOWN
    def busy_error(self) -> str | None: ...  # BUSY text while a script is past its threshold
    def function_load(self, code: bytes, replace: bool) -> bytes: ...  # the library's name
    def function_delete(self, name: bytes) -> None: ...  # FUNCTION DELETE
    def function_flush(self) -> int: ...  # FUNCTION FLUSH: functions dropped
    def function_dump(self) -> bytes: ...  # FUNCTION DUMP's payload
    def function_restore(self, payload: bytes, policy: bytes) -> None: ...  # FLUSH|APPEND|REPLACE


class ServerFacade(Protocol[C]):
    """What handlers may use of the server (``server.app.Server``): ``ctx.server``."""

    @property
    def config(self) -> Settings: ...  # the configuration
    @property
    def keyspace(self) -> Keyspace: ...  # every database (``keyspace[i]``, ``.dbs``)
    @property
    def table(self) -> Mapping[bytes, Command]: ...  # the live command table (renames applied)
    @property
    def stats(self) -> Counter[str]: ...  # INFO stats counters
    dirty: int  # changes since the last save; ``+=`` for writes propagated without a key
    @property
    def lastsave(self) -> int: ...  # unix time of the last successful save
    run_id: str  # INFO run_id (DEBUG CHANGE-REPL-ID sets it)
    active_expire_enabled: bool  # the expiry cycle runs (DEBUG SET-ACTIVE-EXPIRE)
    cron_paused: bool  # the periodic work is skipped (DEBUG PAUSE-CRON)
    @property
    def clients(self) -> Mapping[int, C]: ...  # every connection, by id
    @property
    def monitors(self) -> MutableSequence[C]: ...  # MONITOR clients
    @property
    def pubsub(self) -> PubSub[C]: ...  # subscriptions
    @property
    def blocking(self) -> Blocking[C]: ...  # blocked clients
    @property
    def acl_manager(self) -> Acl[C]: ...  # ACL users
    @property
    def acl(self) -> Acl[C] | None: ...  # the same, only while some user is restricted
    @property
    def aof(self) -> Aof | None: ...  # the AOF, when on
    @property
    def persistence(self) -> Persistence | None: ...  # snapshots (None before start-up)
    @property
    def repl(self) -> Replication[C]: ...  # the replication offset, WAITAOF's waiters
    @property
    def slowlog(self) -> MutableSequence[SlowlogEntry]: ...  # newest first
    @property
    def latency(self) -> Latency: ...  # LATENCY's samples
    @property
    def hotkeys(self) -> Hotkeys: ...  # HOTKEYS' session
    @property
    def notify_flags(self) -> int: ...  # notify-keyspace-events' classes (keyevents.py)
    @property
    def tracking(self) -> Tracking[C]: ...  # CLIENT TRACKING
    @property
    def memory(self) -> Memory: ...  # used_memory, maxmemory eviction
    @property
    def pre_command_oom(self) -> bool: ...  # over maxmemory, nothing evictable, at the command
    @property
    def migrate_sockets(self) -> MigrateSockets: ...  # MIGRATE's cached target connections

    def key_modified(self, db: Database, key: bytes, ready: bool = True,
                     changes: int = 1) -> None: ...  # ``ctx.modified`` for another db
    def flush_db(self, db: Database,
                 invalidate: bool = True) -> int: ...  # FLUSHDB one db; keys removed
    def swap_db(self, db1: Database, db2: Database) -> None: ...  # SWAPDB
    def watch(self, client: C, key: bytes) -> None: ...  # WATCH a key of client's db
    def unwatch_all(self, client: C) -> None: ...  # forget the client's WATCHes
    def exec_transaction(self, client: C) -> Reply: ...  # EXEC the client's queue
    def close_client(self, client: C) -> None: ...  # close another connection now
    def auth_required(self) -> bool: ...  # the default user needs a password
    def pause_clients(self, timeout_ms: int, write_only: bool) -> None: ...  # CLIENT PAUSE
    def expiry_paused(self) -> bool: ...  # CLIENT PAUSE holds deletions of expired data
    def unpause_clients(self) -> None: ...  # CLIENT UNPAUSE
    def request_shutdown(self) -> None: ...  # stop the server after this iteration
    def prepare_shutdown(self, save: bool | None,
                         force: bool) -> str | None: ...  # the last save; error: keep serving
    def abort_shutdown(self) -> bool: ...  # SHUTDOWN ABORT of a signal's pending shutdown
    def reset_stats(self) -> None: ...  # CONFIG RESETSTAT
    def info_section(self, name: str) -> Mapping[str, object]: ...  # INFO's fields of a section
    def note_stream(self, db: Database, key: bytes) -> None: ...  # a stream got a Sluice policy
    @property
    def scripting(self) -> Scripting[C]: ...  # EVAL and functions
    @property
    def disk_error(self) -> str | None: ...  # MISCONF text while writes are refused
    def call(self, client: C, cmd: Command,
             argv: list[bytes]) -> Reply: ...  # run a command as ``client`` (redis.call)
    def count_error(self, message: bytes) -> None: ...  # an error refused outside ``call``
    def feed_monitors(self, client: C, argv: list[bytes]) -> None: ...  # a MONITOR line


class Context(Protocol):
    """What a handler may use: its connection, and through it the data and the server."""

    # -- the data ----------------------------------------------------------------------
    db: Database  # the selected database (SELECT assigns it)

    def now_ms(self) -> int: ...  # the server clock, unix ms (virtual in tests)
    def modified(self, key: bytes, db: Database | None = None, ready: bool = True,
                 changes: int = 1) -> None: ...  # after a write: dirty, WATCH, wake-ups
    def notify(self, event: bytes, key: bytes,
               db: Database | None = None) -> None: ...  # a keyspace event (keyevents.py)

    # -- the reply ---------------------------------------------------------------------
    resp3: bool  # the connection speaks RESP3 (HELLO 3)
    reply_mode: int  # REPLY_ON / OFF / SKIP / SKIP_NEXT (CLIENT REPLY)

    # -- propagation -------------------------------------------------------------------
    def rewrite_argv(self, *argvs: list[bytes]) -> None: ...  # log these instead; none: nothing

    # -- blocking ----------------------------------------------------------------------
    def block(self, keys: list[bytes], timeout_ms: int, on_timeout: Reply,
              argv: list[bytes] | None = None, unblock_on_nokey: bool = False,
              memo: object = None) -> Reply: ...  # BLOCKED (``on_timeout`` inside EXEC)
    @property
    def bstate(self) -> BlockedOn | None: ...  # set while blocked, and during re-runs
    @property
    def in_exec(self) -> bool: ...  # running inside EXEC (never blocks)
    @property
    def woff(self) -> int: ...  # the replication offset after its last logged write
    @property
    def is_script(self) -> bool: ...  # a script's client (Redis's CLIENT_SCRIPT)
    parse_memo: tuple[list[bytes], object] | None  # a handler's last (argv, parse) here

    # -- the connection ----------------------------------------------------------------
    @property
    def id(self) -> int: ...  # CLIENT ID
    @property
    def argv(self) -> list[bytes]: ...  # the command being run, name included
    @property
    def cmd(self) -> Command | None: ...  # its table row (the subcommand's)
    @property
    def kind(self) -> str: ...  # normal | pubsub (subscribed) | aof (replaying the AOF)
    @property
    def addr(self) -> str: ...  # the peer, ip:port
    @property
    def laddr(self) -> str: ...  # our end, ip:port
    @property
    def created_ms(self) -> int: ...  # unix ms the connection was accepted
    @property
    def dirty_cas(self) -> bool: ...  # a WATCHed key changed: EXEC will fail
    @property
    def pubsub_channels(self) -> Mapping[bytes, None]: ...  # subscribed channels, in order
    @property
    def pubsub_patterns(self) -> Mapping[bytes, None]: ...  # subscribed patterns
    @property
    def pubsub_shard_channels(self) -> Mapping[bytes, None]: ...  # subscribed shard channels
    name: bytes  # CLIENT SETNAME
    lib_name: bytes  # CLIENT SETINFO LIB-NAME
    lib_ver: bytes  # CLIENT SETINFO LIB-VER
    user: str  # the ACL user, ``user_key(name)``
    authenticated: bool  # AUTH done (or not needed)
    multi: list[tuple[Command, list[bytes]]] | None  # MULTI's queue; None outside MULTI
    multi_error: bool  # a command failed to queue: EXEC aborts
    closing: bool  # close once this reply is written
    monitor: bool  # a MONITOR client
    no_evict: bool  # CLIENT NO-EVICT
    no_touch: bool  # CLIENT NO-TOUCH
    lua_debug: bytes  # SCRIPT DEBUG's mode for the next EVAL: b"yes", b"sync" or b""
    tracking: int  # CLIENT TRACKING flags (client_tracking.py); 0: off
    @property
    def tracking_redirect(self) -> int: ...  # where invalidations go (0: here)
    @property
    def tracking_prefixes(self) -> Mapping[bytes, None]: ...  # BCAST prefixes

    def info_line(self) -> str: ...  # its CLIENT LIST line
    def reply_room(self) -> int | None: ...  # output left before its hard limit; None: none
    def is_local(self) -> bool: ...  # a Unix socket or loopback peer (Redis's connIsLocal)
    def set_default_auth(self) -> None: ...  # back to the default user (RESET)

    # -- the server --------------------------------------------------------------------
    @property
    def server(self) -> ServerFacade[Self]: ...  # server-wide state and operations
