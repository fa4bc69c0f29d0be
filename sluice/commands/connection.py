"""Connection commands: PING, ECHO, HELLO, AUTH, SELECT, QUIT, RESET, and CLIENT.

Mirrors Redis's ``pingCommand``, ``helloCommand``, ``authCommand``, ``selectCommand``,
``resetCommand`` and ``clientCommand`` (networking.c).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sluice import REDIS_VERSION
from sluice.protocol import OK, PONG, Map, SimpleString, Verbatim

from .args import Args, parse_int
from .context import REPLY_OFF, REPLY_ON, REPLY_SKIP_NEXT, Command, Context, Reply, user_key
from .errors import (
    AUTH_NOT_CONFIGURED,
    CLIENT_ID_POSITIVE,
    CLIENT_NAME_CHARS,
    DB_INDEX_OUT_OF_RANGE,
    INVALID_CLIENT_ID,
    MAXAGE_NOT_INTEGER,
    MAXAGE_POSITIVE,
    NO_SUCH_CLIENT,
    NO_SUCH_USER,
    NOPROTO,
    NOT_POSITIVE_TIMEOUT,
    PAUSE_MODE,
    SYNTAX,
    TIMEOUT_NOT_INTEGER,
    UNBLOCK_REASON,
    UNBLOCKED_ERROR,
    UNKNOWN_CLIENT_TYPE,
    WRONGPASS,
    CommandError,
    subcommand_syntax,
)
from .introspection import help_reply
from .spec import (
    ADMIN,
    ALLOW_BUSY,
    FAST,
    LOADING,
    NO_AUTH,
    NONE,
    NOSCRIPT,
    STALE,
    A,
    cmd,
)

_CL = NOSCRIPT | LOADING | STALE
_RESET = SimpleString(b"RESET")


def ping(ctx: Context, args: Args) -> Reply:
    argv = args.argv  # not len(args): PING is the benchmark of dispatch, every call counts
    if len(argv) > 2:
        raise CommandError("ERR wrong number of arguments for 'ping' command")
    if ctx.kind == "pubsub" and not ctx.resp3:
        # A RESP2 subscriber reads pushes only, so PING answers in their shape.
        return [b"pong", argv[1] if len(argv) == 2 else b""]
    return argv[1] if len(argv) == 2 else PONG


def echo(ctx: Context, args: Args) -> Reply:
    return args.next()


def quit_(ctx: Context, args: Args) -> Reply:
    ctx.closing = True
    return OK


def select(ctx: Context, args: Args) -> Reply:
    index = parse_int(args.next(), "ERR value is not an integer or out of range")
    keyspace = ctx.server.keyspace
    if not 0 <= index < len(keyspace):
        raise CommandError(DB_INDEX_OUT_OF_RANGE)
    ctx.db = keyspace[index]
    return OK


def _authenticate(ctx: Context, username: bytes, password: bytes) -> None:
    """ACL users (server/acl.py): on success the client switches user and leaves the
    pre-auth request limits; a failure is counted and goes to ACL LOG."""
    if not ctx.server.acl_manager.auth_client(ctx, username, password):
        raise CommandError(WRONGPASS)


def auth(ctx: Context, args: Args) -> Reply:
    if len(args) > 2:
        raise CommandError(SYNTAX)
    if len(args) == 1:
        if ctx.server.acl_manager.default.nopass:
            raise CommandError(AUTH_NOT_CONFIGURED)
        _authenticate(ctx, b"default", args.next())
    else:
        user = args.next()
        _authenticate(ctx, user, args.next())
    return OK


def hello(ctx: Context, args: Args) -> Reply:
    proto = None
    if args:
        raw = args.next()
        n = parse_int(raw, "ERR Protocol version is not an integer or out of range")
        if n < 2 or n > 3:
            raise CommandError(NOPROTO)
        proto = n
    setname = None
    credentials = None
    while args:
        raw_opt = args.next()
        opt = raw_opt.upper()
        if opt == b"AUTH" and len(args) >= 2:
            credentials = args.next(), args.next()
        elif opt == b"SETNAME" and args:
            setname = args.next()
            _check_client_name(setname)
        else:
            raise CommandError(b"ERR Syntax error in HELLO option '" + raw_opt + b"'")
    if credentials is not None:  # Redis 7.2+: options are validated before authenticating
        _authenticate(ctx, *credentials)
    if not ctx.authenticated:
        raise CommandError("NOAUTH HELLO must be called with the client already authenticated, "
                           "otherwise the HELLO <proto> AUTH <user> <pass> option can be used to "
                           "authenticate the client and select the RESP protocol version at the "
                           "same time")
    if setname is not None:
        ctx.name = setname
    if proto is not None:
        ctx.resp3 = proto == 3
    return Map({
        b"server": b"redis",
        b"version": REDIS_VERSION.encode(),
        b"proto": 3 if ctx.resp3 else 2,
        b"id": ctx.id,
        b"mode": b"standalone",
        b"role": b"master",
        b"modules": [],
    })


def reset(ctx: Context, args: Args) -> Reply:
    server = ctx.server
    ctx.multi = None
    ctx.multi_error = False
    server.unwatch_all(ctx)
    if ctx.monitor:
        ctx.monitor = False
        server.monitors.remove(ctx)
    if ctx.kind == "pubsub":
        server.pubsub.unsubscribe_all(ctx)  # silently, as Redis's RESET does
    ctx.db = server.keyspace[0]
    ctx.resp3 = False
    ctx.reply_mode = REPLY_ON
    ctx.name = b""
    ctx.no_evict = ctx.no_touch = False
    if ctx.tracking:
        server.tracking.disable(ctx)
    ctx.set_default_auth()
    return _RESET


# -- CLIENT ------------------------------------------------------------------------------------
# Mirrors Redis's clientCommand (networking.c); TRACKING, CACHING, GETREDIR and TRACKINGINFO
# are in client_tracking.py.

_CLIENT_TYPES = {b"normal": "normal", b"replica": "replica", b"slave": "replica",
                 b"pubsub": "pubsub", b"master": "master"}


def _check_client_name(name: bytes) -> None:
    if any(c < 33 or c > 126 for c in name):
        raise CommandError(CLIENT_NAME_CHARS)


def _client_type(raw: bytes) -> str:
    kind = _CLIENT_TYPES.get(raw.lower())
    if kind is None:
        raise CommandError(UNKNOWN_CLIENT_TYPE % raw.decode(errors="replace"))
    return kind


def _on_off(args: Args) -> bool:
    word = args.next_upper()
    if word not in (b"ON", b"OFF"):
        raise CommandError(SYNTAX)
    return word == b"ON"


def client_id(ctx: Context, args: Args) -> Reply:
    return ctx.id


def client_setname(ctx: Context, args: Args) -> Reply:
    name = args.next()
    _check_client_name(name)
    ctx.name = name
    return OK


def client_getname(ctx: Context, args: Args) -> Reply:
    return ctx.name or None


def client_setinfo(ctx: Context, args: Args) -> Reply:
    attr = args.next_upper()
    value = args.next()
    if attr not in (b"LIB-NAME", b"LIB-VER"):
        raise CommandError(f"ERR Unrecognized option '{attr.decode(errors='replace')}'")
    if any(c < 33 or c > 126 for c in value):
        raise CommandError(f"ERR {attr.decode()} cannot contain spaces, newlines or special characters.")
    if attr == b"LIB-NAME":
        ctx.lib_name = value
    else:
        ctx.lib_ver = value
    return OK


def client_info(ctx: Context, args: Args) -> Reply:
    return Verbatim((ctx.info_line() + "\n").encode())


def client_list(ctx: Context, args: Args) -> Reply:
    clients = list(ctx.server.clients.values())
    while args:
        opt = args.next_upper()
        if opt == b"TYPE":
            kind = _client_type(args.next())
            clients = [c for c in clients if c.kind == kind]
        elif opt == b"ID":
            ids = set()
            for raw in args.rest():
                ids.add(parse_int(raw, INVALID_CLIENT_ID))  # 0 or less simply matches none
            if not ids:
                raise CommandError(SYNTAX)
            clients = [c for c in clients if c.id in ids]
        else:
            raise CommandError(SYNTAX)
    return Verbatim("".join(c.info_line() + "\n" for c in clients).encode())


def _kill_filters(args: Args, ctx: Context) -> Callable[[Context], bool]:
    """The new CLIENT KILL form: ``<filter> <value>`` pairs, as a predicate on clients."""
    ids: list[int] = []
    kind = addr = laddr = user = None
    maxage = 0
    skipme = True
    while args:
        opt = args.next_upper()
        if not args:
            raise CommandError(SYNTAX)
        value = args.next()
        if opt == b"ID":
            n = _plain_int(value)
            if n is None or n <= 0:
                raise CommandError(CLIENT_ID_POSITIVE)
            ids.append(n)
        elif opt == b"TYPE":
            kind = _client_type(value)
        elif opt == b"ADDR":
            addr = value.decode(errors="replace")
        elif opt == b"LADDR":
            laddr = value.decode(errors="replace")
        elif opt == b"USER":
            user = user_key(value)
            acl = ctx.server.acl
            if (user not in acl.users) if acl is not None else user != "default":
                raise CommandError(NO_SUCH_USER % value.decode(errors="replace"))
        elif opt == b"SKIPME":
            word = value.lower()
            if word not in (b"yes", b"no"):
                raise CommandError(SYNTAX)
            skipme = word == b"yes"
        elif opt == b"MAXAGE":  # Redis 7.4+: clients connected more than this many seconds
            maxage = parse_int(value, MAXAGE_NOT_INTEGER)
            if maxage <= 0:
                raise CommandError(MAXAGE_POSITIVE)
        else:
            raise CommandError(SYNTAX)
    now_ms = time.time_ns() // 1_000_000

    def matches(c: Context) -> bool:
        return ((not ids or c.id in ids) and (kind is None or c.kind == kind)
                and (addr is None or c.addr == addr) and (laddr is None or c.laddr == laddr)
                and (user is None or c.user == user) and not (skipme and c is ctx)
                and (maxage <= 0 or now_ms // 1000 - c.created_ms // 1000 > maxage))

    return matches


def _plain_int(raw: bytes) -> int | None:
    try:
        return parse_int(raw)
    except CommandError:
        return None


def client_kill(ctx: Context, args: Args) -> Reply:
    server = ctx.server
    if len(args) == 1:  # the old form: CLIENT KILL addr:port
        addr = args.next().decode(errors="replace")
        target = next((c for c in server.clients.values() if c.addr == addr), None)
        if target is None:
            raise CommandError(NO_SUCH_CLIENT)
        _kill(ctx, target)
        return OK
    matches = _kill_filters(args, ctx)
    killed = 0
    for c in list(server.clients.values()):
        if matches(c):
            _kill(ctx, c)
            killed += 1
    return killed


def _kill(ctx: Context, target: Context) -> None:
    if target is ctx:
        ctx.closing = True  # after this reply, as Redis's CLIENT_CLOSE_AFTER_REPLY
    else:
        ctx.server.close_client(target)


def client_no_evict(ctx: Context, args: Args) -> Reply:
    ctx.no_evict = _on_off(args)
    return OK


def client_no_touch(ctx: Context, args: Args) -> Reply:
    ctx.no_touch = _on_off(args)
    return OK


def client_reply(ctx: Context, args: Args) -> Reply:
    mode = args.next_upper()
    if mode == b"ON":
        ctx.reply_mode = REPLY_ON
        return OK
    if mode == b"OFF":
        ctx.reply_mode = REPLY_OFF
    elif mode == b"SKIP":
        if ctx.reply_mode != REPLY_OFF:
            ctx.reply_mode = REPLY_SKIP_NEXT  # this reply and the next command's are dropped
    else:
        raise CommandError(SYNTAX)
    return OK  # not sent: the mode now drops it


def client_pause(ctx: Context, args: Args) -> Reply:
    timeout = parse_int(args.next(), TIMEOUT_NOT_INTEGER)
    if timeout < 0:
        raise CommandError(NOT_POSITIVE_TIMEOUT)
    write_only = False
    if args:
        mode = args.next_upper()
        if args:
            raise subcommand_syntax(ctx.argv[1], "client")
        if mode not in (b"WRITE", b"ALL"):
            raise CommandError(PAUSE_MODE)
        write_only = mode == b"WRITE"
    ctx.server.pause_clients(timeout, write_only)
    return OK


def client_unpause(ctx: Context, args: Args) -> Reply:
    ctx.server.unpause_clients()
    return OK


def client_unblock(ctx: Context, args: Args) -> Reply:
    target_id = parse_int(args.next())
    mode = args.next_upper() if args else b"TIMEOUT"
    if mode not in (b"TIMEOUT", b"ERROR") or args:
        raise CommandError(UNBLOCK_REASON)
    server = ctx.server
    target = server.clients.get(target_id)
    if target is None or target.bstate is None:
        return 0
    server.blocking.unblock_client(
        target, UNBLOCKED_ERROR if mode == b"ERROR" else target.bstate.on_timeout
    )
    if mode == b"ERROR" and ctx.cmd is not None:
        # Redis counts a command as failed when an error reply went out while it ran, to
        # any client (the total-error-replies delta in call()): this one sent the target's.
        ctx.cmd.failed_calls += 1
    return 1


_CLIENT_HELP = (
    "CACHING <YES|NO>",
    "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
    "GETREDIR",
    "    Return the client ID we are redirecting to when tracking is enabled.",
    "GETNAME",
    "    This connection's name.",
    "ID",
    "    This connection's ID.",
    "INFO",
    "    A CLIENT LIST line about this connection.",
    "KILL <ip:port>",
    "    Close the connection from <ip:port>.",
    "KILL <filter> <value> [<filter> <value> ...]",
    "    Close every connection matching all the filters; replies with how many. Filters:",
    "    * ID <client-id>",
    "    * ADDR <ip:port> (the client's address) or LADDR <ip:port> (the server's)",
    "    * TYPE <NORMAL|MASTER|REPLICA|PUBSUB>",
    "    * USER <username>",
    "    * MAXAGE <seconds> (connections at least that old)",
    "    * SKIPME <YES|NO> (spare this connection; YES by default)",
    "LIST [TYPE <NORMAL|MASTER|REPLICA|PUBSUB>] [ID <client-id> ...]",
    "    One line per connection, with its state.",
    "NO-EVICT <ON|OFF>",
    "    Exempt this connection from client eviction.",
    "NO-TOUCH <ON|OFF>",
    "    Let this connection's commands leave the keys' access time alone.",
    "PAUSE <timeout> [WRITE|ALL]",
    "    Hold the commands of every client (or only writes) for <timeout> milliseconds.",
    "REPLY <ON|OFF|SKIP>",
    "    Turn the replies to this connection on or off, or skip the next one.",
    "SETINFO <LIB-NAME|LIB-VER> <value>",
    "    Record the client library's name or version.",
    "SETNAME <name>",
    "    Name this connection.",
    "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
    "         [OPTIN] [OPTOUT] [NOLOOP]",
    "    Control server assisted client side caching.",
    "TRACKINGINFO",
    "    Report tracking status for the current connection.",
    "UNBLOCK <client-id> [TIMEOUT|ERROR]",
    "    Wake a client blocked in a blocking command, as on timeout or with an error.",
    "UNPAUSE",
    "    End a CLIENT PAUSE now.",
)


def client_help(ctx: Context, args: Args) -> Reply:
    return help_reply("CLIENT", _CLIENT_HELP)


COMMANDS: tuple[Command, ...] = (
    #   name              arity  flags                                        acl           keys  handler
    cmd("ping",            -1,   FAST,                                        A.CONNECTION, None, ping,
        "Returns the server's liveliness response.", complexity="O(1)", group="connection",
        syntax="[message]"),
    cmd("echo",             2,   FAST | STALE | LOADING,                      A.CONNECTION, None, echo,
        "Returns the given string.", group="connection", syntax="message"),
    cmd("quit",            -1,   ALLOW_BUSY | NOSCRIPT | STALE | LOADING | FAST | NO_AUTH, A.CONNECTION, None, quit_,
        "Closes the connection.", group="connection", doc_flags=("deprecated",)),
    cmd("select",           2,   LOADING | STALE | FAST,                      A.CONNECTION, None, select,
        "Changes the selected database.", group="connection", syntax="index", since="1.0.0"),
    cmd("auth",            -2,   NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY, A.CONNECTION, None, auth,
        "Authenticates the connection.", group="connection", syntax="[username] password"),
    cmd("hello",           -1,   NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY, A.CONNECTION, None, hello,
        "Handshakes with the Redis server.", group="connection", since="6.0.0",
        syntax="[protover [AUTH username password] [SETNAME clientname]]"),
    cmd("reset",            1,   NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY, A.CONNECTION, None, reset,
        "Resets the connection.", group="connection", since="6.2.0"),
    cmd("client",          -2,   NONE,                                        A.NONE,       None, None,
        "Groups the commands about client connections.", group="connection",
        since="2.4.0", complexity="Depends on subcommand."),
    cmd("client|getname",   2,   _CL,                                         A.CONNECTION, None, client_getname,
        "Returns this connection's name.", group="connection", since="2.6.9"),
    cmd("client|help",      2,   LOADING | STALE,                             A.CONNECTION, None, client_help,
        "Explains the CLIENT subcommands.", group="connection", since="5.0.0"),
    cmd("client|id",        2,   _CL,                                         A.CONNECTION, None, client_id,
        "Returns this connection's ID.", group="connection", since="5.0.0"),
    cmd("client|info",      2,   _CL,                                         A.CONNECTION, None, client_info,
        "Describes this connection in one CLIENT LIST line.", group="connection",
        since="6.2.0", tips=("nondeterministic_output",)),
    cmd("client|kill",     -3,   ADMIN | _CL,                                 A.CONNECTION, None, client_kill,
        "Closes the connections that match an address or filters.", group="connection",
        since="2.4.0", complexity="O(N) where N is the number of client connections",
        syntax="<ip:port | <[ID client-id] | [TYPE <NORMAL | MASTER | SLAVE | REPLICA | "
               "PUBSUB>] | [USER username] | [ADDR ip:port] | [LADDR ip:port] | [SKIPME <YES | "
               "NO>] | [MAXAGE maxage] [[ID client-id] | [TYPE <NORMAL | MASTER | SLAVE | "
               "REPLICA | PUBSUB>] | [USER username] | [ADDR ip:port] | [LADDR ip:port] | "
               "[SKIPME <YES | NO>] | [MAXAGE maxage] ...]>>"),
    cmd("client|list",     -2,   ADMIN | _CL,                                 A.CONNECTION, None, client_list,
        "Describes every connection, one line each.", group="connection", since="2.4.0",
        complexity="O(N) where N is the number of client connections",
        syntax="[TYPE <NORMAL | MASTER | REPLICA | PUBSUB>] [ID client-id [client-id ...]]",
        tips=("nondeterministic_output",)),
    cmd("client|no-evict",  3,   ADMIN | _CL,                                 A.CONNECTION, None, client_no_evict,
        "Exempts this connection from client eviction.", group="connection", since="7.0.0",
        syntax="<ON | OFF>"),
    cmd("client|no-touch",  3,   _CL,                                         A.CONNECTION, None, client_no_touch,
        "Keeps this connection's commands from changing the keys' access time.",
        group="connection", since="7.2.0", syntax="<ON | OFF>"),
    cmd("client|pause",    -3,   ADMIN | _CL,                                 A.CONNECTION, None, client_pause,
        "Holds the commands of every client, or only the writes, for a while.",
        group="connection", since="3.0.0", syntax="timeout [WRITE | ALL]"),
    cmd("client|reply",     3,   _CL,                                         A.CONNECTION, None, client_reply,
        "Turns the replies to this connection on or off, or skips the next one.",
        group="connection", since="3.2.0", syntax="<ON | OFF | SKIP>"),
    cmd("client|setinfo",   4,   _CL,                                         A.CONNECTION, None, client_setinfo,
        "Records the client library's name or version.", group="connection",
        since="7.2.0", syntax="<LIB-NAME libname | LIB-VER libver>",
        tips=("request_policy:all_nodes", "response_policy:all_succeeded")),
    cmd("client|setname",   3,   _CL,                                         A.CONNECTION, None, client_setname,
        "Names this connection.", group="connection", since="2.6.9",
        syntax="connection-name"),
    cmd("client|unblock",  -3,   ADMIN | _CL,                                 A.CONNECTION, None, client_unblock,
        "Wakes a client blocked in a blocking command.", group="connection",
        since="5.0.0", complexity="O(log N) where N is the number of client connections",
        syntax="client-id [TIMEOUT | ERROR]"),
    cmd("client|unpause",   2,   ADMIN | _CL,                                 A.CONNECTION, None, client_unpause,
        "Ends a CLIENT PAUSE now.", group="connection", since="6.2.0",
        complexity="O(N) Where N is the number of paused clients"),
)
