"""CLIENT TRACKING, CLIENT CACHING, CLIENT GETREDIR and CLIENT TRACKINGINFO: server-assisted
client-side caching (Redis's ``clientCommand`` in ``networking.c``; the machinery is
``server/tracking.py``, reached through ``ctx.server.tracking``).

Options are parsed in full before ON/OFF is looked at, and checked in Redis's order, so the
same mistakes get the same errors: a second REDIRECT, a REDIRECT to a client that does not
exist, PREFIX without BCAST, switching BCAST or OPTIN/OPTOUT without turning tracking off
first, OPTIN with OPTOUT or with BCAST, prefixes that overlap (each other or the client's
own). CLIENT CACHING YES (OPTIN) / NO (OPTOUT) applies to the next command, or to the whole
next transaction; dispatch clears it.
"""

from __future__ import annotations

from sluice.protocol import OK, Map, Set

from .args import Args, parse_int
from .context import Command, Context, Reply
from .errors import (
    CACHING_NEEDS_TRACKING,
    CACHING_NO_NOT_OPTOUT,
    CACHING_YES_NOT_OPTIN,
    SYNTAX,
    TRACKING_NO_SUCH_CLIENT,
    TRACKING_OPT_BCAST,
    TRACKING_OPTIN_AND_OPTOUT,
    TRACKING_PREFIX_NEEDS_BCAST,
    TRACKING_PREFIX_OVERLAP,
    TRACKING_PREFIX_OVERLAP_ARGS,
    TRACKING_REDIRECT_TWICE,
    TRACKING_SWITCH_BCAST,
    TRACKING_SWITCH_OPT,
    CommandError,
)
from .spec import LOADING, NOSCRIPT, STALE, A, cmd

# ctx.tracking flags, as server/tracking.py defines them (Redis's CLIENT_TRACKING_*)
ON, BROKEN_REDIR, BCAST, OPTIN, OPTOUT, CACHING, NOLOOP = 1, 2, 4, 8, 16, 32, 64
_OPTIONS = {b"BCAST": BCAST, b"OPTIN": OPTIN, b"OPTOUT": OPTOUT, b"NOLOOP": NOLOOP}


def _overlap(a: bytes, b: bytes) -> bool:
    """Two prefixes that would both match some key (one starts the other)."""
    return a.startswith(b) or b.startswith(a)


def _check_prefixes(ctx: Context, prefixes: list[bytes]) -> None:
    """``checkPrefixCollisionsOrReply``: O(the client's prefixes) for each new one (the error
    names the first overlapping one in byte order, as Redis's walk of its rax does)."""
    mine = ctx.tracking_prefixes
    for i, prefix in enumerate(prefixes):
        if mine and any(_overlap(have, prefix) for have in mine):
            first = min(have for have in mine if _overlap(have, prefix))
            raise CommandError(TRACKING_PREFIX_OVERLAP % (prefix, first))
        for other in prefixes[i + 1:]:
            if _overlap(prefix, other):
                raise CommandError(TRACKING_PREFIX_OVERLAP_ARGS % (prefix, other))


def client_tracking(ctx: Context, args: Args) -> Reply:
    mode = args.next_upper()
    redirect = 0
    options = 0
    prefixes: list[bytes] = []
    while args:
        opt = args.next_upper()
        more = bool(args)
        if opt == b"REDIRECT" and more:
            if redirect:
                raise CommandError(TRACKING_REDIRECT_TWICE)
            redirect = parse_int(args.next())
            if redirect not in ctx.server.clients:
                raise CommandError(TRACKING_NO_SUCH_CLIENT)
        elif opt in _OPTIONS:
            options |= _OPTIONS[opt]
        elif opt == b"PREFIX" and more:
            prefixes.append(args.next())
        else:
            raise CommandError(SYNTAX)
    tracking = ctx.server.tracking
    if mode == b"OFF":
        tracking.disable(ctx)
        return OK
    if mode != b"ON":
        raise CommandError(SYNTAX)
    current = ctx.tracking
    if prefixes and not options & BCAST:
        raise CommandError(TRACKING_PREFIX_NEEDS_BCAST)
    if current & ON and bool(current & BCAST) != bool(options & BCAST):
        raise CommandError(TRACKING_SWITCH_BCAST)
    if options & BCAST and options & (OPTIN | OPTOUT):
        raise CommandError(TRACKING_OPT_BCAST)
    if options & OPTIN and options & OPTOUT:
        raise CommandError(TRACKING_OPTIN_AND_OPTOUT)
    if (options & OPTIN and current & OPTOUT) or (options & OPTOUT and current & OPTIN):
        raise CommandError(TRACKING_SWITCH_OPT)
    if options & BCAST:
        _check_prefixes(ctx, prefixes)
    tracking.enable(ctx, redirect, options, prefixes)
    return OK


def client_caching(ctx: Context, args: Args) -> Reply:
    flags = ctx.tracking
    if not flags & ON:
        raise CommandError(CACHING_NEEDS_TRACKING)
    opt = args.next_upper()
    if opt == b"YES":
        if not flags & OPTIN:
            raise CommandError(CACHING_YES_NOT_OPTIN)
    elif opt == b"NO":
        if not flags & OPTOUT:
            raise CommandError(CACHING_NO_NOT_OPTOUT)
    else:
        raise CommandError(SYNTAX)
    ctx.tracking = flags | CACHING
    return OK


def client_getredir(ctx: Context, args: Args) -> Reply:
    return ctx.tracking_redirect if ctx.tracking & ON else -1


def client_trackinginfo(ctx: Context, args: Args) -> Reply:
    flags = ctx.tracking
    names = [b"on" if flags & ON else b"off"]
    if flags & BCAST:
        names.append(b"bcast")
    if flags & OPTIN:
        names.append(b"optin")
        if flags & CACHING:
            names.append(b"caching-yes")
    if flags & OPTOUT:
        names.append(b"optout")
        if flags & CACHING:
            names.append(b"caching-no")
    if flags & NOLOOP:
        names.append(b"noloop")
    if flags & BROKEN_REDIR:
        names.append(b"broken_redirect")
    return Map({b"flags": Set(names),
                b"redirect": ctx.tracking_redirect if flags & ON else -1,
                b"prefixes": sorted(ctx.tracking_prefixes)})


_CL = NOSCRIPT | LOADING | STALE

COMMANDS: tuple[Command, ...] = (
    #   name                   arity  flags  acl           keys  handler
    cmd("client|caching",         3,  _CL,   A.CONNECTION, None, client_caching,
        "Instructs the server whether to track the keys in the next request.",
        group="connection", since="6.0.0", syntax="<YES | NO>"),
    cmd("client|getredir",        2,  _CL,   A.CONNECTION, None, client_getredir,
        "Returns the client ID to which the connection's tracking notifications are "
        "redirected.", group="connection", since="6.0.0"),
    cmd("client|tracking",       -3,  _CL,   A.CONNECTION, None, client_tracking,
        "Controls server-assisted client-side caching for the connection.",
        group="connection", since="6.0.0",
        complexity="O(1). Some options may introduce additional complexity.",
        syntax="<ON | OFF> [REDIRECT client-id] [PREFIX prefix [PREFIX prefix ...]] [BCAST] "
               "[OPTIN] [OPTOUT] [NOLOOP]"),
    cmd("client|trackinginfo",    2,  _CL,   A.CONNECTION, None, client_trackinginfo,
        "Returns information about server-assisted client-side caching for the connection.",
        group="connection", since="6.2.0"),
)
