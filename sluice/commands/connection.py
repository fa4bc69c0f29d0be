"""Connection commands: PING, ECHO, HELLO, AUTH, SELECT, QUIT, RESET, and CLIENT.

Mirrors Redis's ``pingCommand``, ``helloCommand``, ``authCommand``, ``selectCommand``,
``resetCommand`` and ``clientCommand`` (networking.c).
"""

from __future__ import annotations

from typing import Any

from sluice.protocol import OK, PONG, Map, SimpleString

from .args import Args, parse_int
from .errors import (
    AUTH_NOT_CONFIGURED,
    DB_INDEX_OUT_OF_RANGE,
    NOPROTO,
    SYNTAX,
    WRONGPASS,
    CommandError,
)
from .spec import (
    ALLOW_BUSY,
    FAST,
    LOADING,
    NO_AUTH,
    NOSCRIPT,
    STALE,
    A,
    cmd,
)

_RESET = SimpleString(b"RESET")


def ping(ctx: Any, args: Args) -> Any:
    if len(args) > 1:
        raise CommandError("ERR wrong number of arguments for 'ping' command")
    return args.next() if args else PONG


def echo(ctx: Any, args: Args) -> Any:
    return args.next()


def quit_(ctx: Any, args: Args) -> Any:
    ctx.closing = True
    return OK


def select(ctx: Any, args: Args) -> Any:
    index = parse_int(args.next(), "ERR value is not an integer or out of range")
    keyspace = ctx.server.keyspace
    if not 0 <= index < len(keyspace):
        raise CommandError(DB_INDEX_OUT_OF_RANGE)
    ctx.db = keyspace[index]
    return OK


def _authenticate(ctx: Any, username: bytes, password: bytes) -> None:
    """ACL users (server/acl.py): on success the client switches user and leaves the
    pre-auth request limits; a failure is counted and goes to ACL LOG."""
    if not ctx.server.acl_manager.auth_client(ctx, username, password):
        raise CommandError(WRONGPASS)


def auth(ctx: Any, args: Args) -> Any:
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


def hello(ctx: Any, args: Args) -> Any:
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
    from sluice.server.app import REDIS_VERSION  # noqa: PLC0415 - version constant only

    return Map({
        b"server": b"redis",
        b"version": REDIS_VERSION.encode(),
        b"proto": 3 if ctx.resp3 else 2,
        b"id": ctx.id,
        b"mode": b"standalone",
        b"role": b"master",
        b"modules": [],
    })


def reset(ctx: Any, args: Args) -> Any:
    server = ctx.server
    ctx.multi = None
    ctx.multi_error = False
    server.unwatch_all(ctx)
    if ctx.monitor:
        ctx.monitor = False
        server.monitors.remove(ctx)
    ctx.db = server.keyspace[0]
    ctx.resp3 = False
    ctx.reply_mode = 0
    ctx.name = b""
    ctx.no_evict = ctx.no_touch = False
    ctx.user = "default"
    ctx.authenticated = not server.auth_required()  # clientSetDefaultAuth
    ctx.reader.set_limits(auth_required=not ctx.authenticated)
    return _RESET


# -- CLIENT ------------------------------------------------------------------------------------


def _check_client_name(name: bytes) -> None:
    if any(c < 33 or c > 126 for c in name):
        raise CommandError("ERR Client names cannot contain spaces, newlines or special characters.")


def client_id(ctx: Any, args: Args) -> Any:
    return ctx.id


def client_setname(ctx: Any, args: Args) -> Any:
    name = args.next()
    _check_client_name(name)
    ctx.name = name
    return OK


def client_getname(ctx: Any, args: Args) -> Any:
    return ctx.name or None


def client_setinfo(ctx: Any, args: Args) -> Any:
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


def client_info(ctx: Any, args: Args) -> Any:
    from sluice.protocol import Verbatim

    return Verbatim((ctx.info_line() + "\n").encode())


def client_list(ctx: Any, args: Args) -> Any:
    from sluice.protocol import Verbatim

    clients = list(ctx.server.clients.values())
    while args:
        opt = args.next_upper()
        if opt == b"TYPE":
            kind = args.next().lower()
            if kind not in (b"normal", b"master", b"replica", b"slave", b"pubsub"):
                raise CommandError(f"ERR Unknown client type '{kind.decode(errors='replace')}'")
            kind_s = "replica" if kind == b"slave" else kind.decode()
            clients = [c for c in clients if c.kind == kind_s]
        elif opt == b"ID":
            ids = set()
            for raw in args.rest():
                n = parse_int(raw, "ERR Invalid client ID")
                if n <= 0:
                    raise CommandError("ERR Invalid client ID")
                ids.add(n)
            if not ids:
                raise CommandError(SYNTAX)
            clients = [c for c in clients if c.id in ids]
        else:
            raise CommandError(SYNTAX)
    return Verbatim("".join(c.info_line() + "\n" for c in clients).encode())


def client_unblock(ctx: Any, args: Args) -> Any:
    target_id = parse_int(args.next())
    mode = args.next_upper() if args else b"TIMEOUT"
    if mode not in (b"TIMEOUT", b"ERROR") or args:
        raise CommandError("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
    server = ctx.server
    target = server.clients.get(target_id)
    if target is None or target.bstate is None:
        return 0
    from sluice.server.blocking import UNBLOCKED_ERROR

    server.blocking.unblock_client(
        target, UNBLOCKED_ERROR if mode == b"ERROR" else target.bstate.on_timeout
    )
    return 1


COMMANDS = (
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
    cmd("client",          -2,   NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY, A.CONNECTION, None, None,
        "A container for client connection commands.", group="connection", since="2.4.0"),
    cmd("client|id",        2,   NOSCRIPT | LOADING | STALE,                  A.CONNECTION, None, client_id,
        "Returns the unique client ID of the connection.", group="connection", since="5.0.0"),
    cmd("client|setname",   3,   NOSCRIPT | LOADING | STALE,                  A.CONNECTION, None, client_setname,
        "Sets the connection name.", group="connection", since="2.6.9", syntax="connection-name"),
    cmd("client|getname",   2,   NOSCRIPT | LOADING | STALE,                  A.CONNECTION, None, client_getname,
        "Returns the name of the connection.", group="connection", since="2.6.9"),
    cmd("client|setinfo",   4,   NOSCRIPT | LOADING | STALE,                  A.CONNECTION, None, client_setinfo,
        "Sets information specific to the client or connection.", group="connection", since="7.2.0",
        syntax="<LIB-NAME libname | LIB-VER libver>"),
    cmd("client|info",      2,   NOSCRIPT | LOADING | STALE,                  A.CONNECTION, None, client_info,
        "Returns information about the connection.", group="connection", since="6.2.0"),
    cmd("client|list",     -2,   NOSCRIPT | LOADING | STALE,                  A.CONNECTION, None, client_list,
        "Lists open connections.", group="connection", since="2.4.0", complexity="O(N)",
        syntax="[TYPE <NORMAL | MASTER | REPLICA | PUBSUB>] [ID client-id [client-id ...]]"),
    cmd("client|unblock",  -3,   NOSCRIPT | LOADING | STALE,                  A.CONNECTION, None, client_unblock,
        "Unblocks a client blocked by a blocking command from a different connection.",
        group="connection", since="5.0.0", complexity="O(log N) where N is the number of client connections",
        syntax="client-id [TIMEOUT | ERROR]"),
)

