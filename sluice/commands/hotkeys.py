"""HOTKEYS START / STOP / GET / RESET / HELP (Redis 8.6's ``hotkeysCommand``, hotkeys.c).

A session tracks which keys cost the most CPU time (``CPU``) and network bytes (``NET``):
START opens it (one at a time), STOP ends it (so does ``DURATION`` seconds, checked by the
cron), GET reports it while it runs and after it stopped, RESET forgets a stopped one. The
session is ``storage/hotkeys.py``; the server feeds it each command's cost
(``server/hotkeys.py``).

START's arguments are parsed in Redis's order, with its error for each step: METRICS must
come first, with a count of 1 or 2 and that many metric names after it (an unknown name is
allowed if another is valid, for forward compatibility; a repeated one is an error); then
COUNT (1-64), DURATION (1-1000000 s), SAMPLE (1-2^31-1) in any order, a later one
overriding, anything else a syntax error. ``SLOTS`` exists in cluster mode only: Sluice runs
standalone, so it is always refused, as redis-server standalone refuses it (before its
arguments are looked at).

GET's reply is an array of one map (Redis's shape, so a cluster client can aggregate the
nodes' maps): see ``HotkeysSession.report`` for the fields and when each appears.
"""

from __future__ import annotations

import resource

from sluice.protocol import OK, Map
from sluice.storage.hotkeys import CPU, NET, HotkeysSession

from .args import Args, parse_range_long
from .context import Command, Context, Reply
from .errors import (
    HOTKEYS_COUNT_RANGE,
    HOTKEYS_DURATION_RANGE,
    HOTKEYS_IN_PROGRESS,
    HOTKEYS_METRIC_TWICE,
    HOTKEYS_METRICS_COUNT,
    HOTKEYS_METRICS_MISMATCH,
    HOTKEYS_METRICS_REQUIRED,
    HOTKEYS_NO_VALID_METRICS,
    HOTKEYS_SAMPLE_RANGE,
    HOTKEYS_SLOTS_STANDALONE,
    HOTKEYS_STOP_FIRST,
    SYNTAX,
    CommandError,
)
from .introspection import help_reply
from .spec import ADMIN, LOADING, NOSCRIPT, STALE, A, cmd

INT_MAX = 2**31 - 1
_METRICS = {b"CPU": CPU, b"NET": NET}


def cpu_times() -> tuple[float, float]:
    """The process's (user, system) CPU seconds: GET's totals are their growth since START."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime, ru.ru_stime


def parse_start(argv: list[bytes]) -> tuple[int, int, int, int]:
    """START's (metrics, count, duration in ms, sample ratio), or the error Redis gives."""
    argc = len(argv)
    if argc < 4 or argv[2].upper() != b"METRICS":
        raise CommandError(HOTKEYS_METRICS_REQUIRED)
    wanted = parse_range_long(argv[3], 1, len(_METRICS), HOTKEYS_METRICS_COUNT)
    metrics = valid = parsed = 0
    j = 4
    while j < argc and parsed < wanted:
        name = argv[j].upper()
        bit = _METRICS.get(name, 0)
        if bit:  # anything else is skipped: a newer server's metric name
            if metrics & bit:
                raise CommandError(HOTKEYS_METRIC_TWICE % name.decode())
            metrics |= bit
            valid += 1
        parsed += 1
        j += 1
    if parsed != wanted:
        raise CommandError(HOTKEYS_METRICS_MISMATCH)
    if not valid:
        raise CommandError(HOTKEYS_NO_VALID_METRICS)
    count, duration_ms, ratio = 10, 0, 1
    while j < argc:
        word = argv[j].upper()
        more = j + 1 < argc
        if more and word == b"COUNT":
            count = parse_range_long(argv[j + 1], 1, 64, HOTKEYS_COUNT_RANGE)
        elif more and word == b"DURATION":
            duration_ms = 1000 * parse_range_long(argv[j + 1], 1, 1_000_000,
                                                  HOTKEYS_DURATION_RANGE)
        elif more and word == b"SAMPLE":
            ratio = parse_range_long(argv[j + 1], 1, INT_MAX, HOTKEYS_SAMPLE_RANGE)
        elif more and word == b"SLOTS":
            raise CommandError(HOTKEYS_SLOTS_STANDALONE)
        else:
            raise CommandError(SYNTAX)
        j += 2
    return metrics, count, duration_ms, ratio


def hotkeys_start(ctx: Context, args: Args) -> Reply:
    hotkeys = ctx.server.hotkeys
    if hotkeys.session is not None and hotkeys.session.active:
        raise CommandError(HOTKEYS_IN_PROGRESS)
    metrics, count, duration_ms, ratio = parse_start(args.argv)
    hotkeys.start(HotkeysSession(metrics, count, duration_ms, ratio, start_ms=ctx.now_ms(),
                                 ru_start=cpu_times()))
    return OK


def hotkeys_stop(ctx: Context, args: Args) -> Reply:
    hotkeys = ctx.server.hotkeys
    if hotkeys.session is None or not hotkeys.session.active:
        return None
    hotkeys.stop()
    return OK


def hotkeys_get(ctx: Context, args: Args) -> Reply:
    session = ctx.server.hotkeys.session
    if session is None:
        return None
    return [Map(session.report(ctx.now_ms(), cpu_times()))]


def hotkeys_reset(ctx: Context, args: Args) -> Reply:
    hotkeys = ctx.server.hotkeys
    if hotkeys.session is not None and hotkeys.session.active:
        raise CommandError(HOTKEYS_STOP_FIRST)
    hotkeys.reset()
    return OK


_HELP = (
    "START <METRICS count [CPU] [NET]> [COUNT k] [DURATION duration] [SAMPLE ratio] "
    "[SLOTS count slot...]",
    "    Starts hotkeys tracking with specified metrics.",
    "    * METRICS count [CPU] [NET]",
    "        Specify count of metrics and choose amongst:",
    "        - CPU: Track hotkeys by CPU time percentage",
    "        - NET: Track hotkeys by network bytes percentage",
    "    * COUNT k",
    "        Specifies the value of K for the top-K hotkeys tracking. Default: 10",
    "    * DURATION duration",
    "        Specifies tracking duration in seconds. 0 means tracking will continue until "
    "manually stopped. Default: 0",
    "    * SAMPLE ratio",
    "        Keys are tracked with probability 1/ratio. Default: 1 (tracks every key)",
    "    * SLOTS count slot...",
    "        Specify which slots to track keys from. Only available in cluster mode. "
    "Default: empty (track all slots)",
    "STOP",
    "    Stop hotkeys tracking. Results are still available via GET",
    "GET",
    "    Get results from hotkeys tracking.",
    "RESET",
    "    Reset memory used for hotkeys tracking. Tracking must have been stopped.",
    "    Results will no longer be available after this command.",
)


def hotkeys_help(ctx: Context, args: Args) -> Reply:
    return help_reply("HOTKEYS", _HELP)


_SPECIAL = ("request_policy:special",)
_ADMIN = ADMIN | NOSCRIPT

COMMANDS: tuple[Command, ...] = (
    #   name              arity  flags             acl     keys  handler
    cmd("hotkeys",          -2,  0,                A.NONE, None, None,
        "A container for hotkeys tracking commands.", since="8.6.0", group="server",
        complexity="Depends on subcommand.", syntax="<subcommand> [<arg> ...]"),
    cmd("hotkeys|start",    -2,  _ADMIN,           A.NONE, None, hotkeys_start,
        "Starts hotkeys tracking.", since="8.6.0", group="server", tips=_SPECIAL,
        syntax="METRICS count [CPU] [NET] [COUNT k] [DURATION seconds] [SAMPLE ratio] "
               "[SLOTS count slot [slot ...]]"),
    cmd("hotkeys|stop",      2,  _ADMIN,           A.NONE, None, hotkeys_stop,
        "Stops hotkeys tracking.", since="8.6.0", group="server", tips=_SPECIAL),
    cmd("hotkeys|get",       2,  _ADMIN,           A.NONE, None, hotkeys_get,
        "Returns lists of top K hotkeys depending on metrics chosen in HOTKEYS START "
        "command.", since="8.6.0", group="server",
        complexity="O(K) where K is the number of hotkeys returned.",
        tips=("nondeterministic_output", "request_policy:special", "response_policy:special")),
    cmd("hotkeys|reset",     2,  _ADMIN,           A.NONE, None, hotkeys_reset,
        "Release the resources used for hotkey tracking.", since="8.6.0", group="server",
        tips=_SPECIAL),
    cmd("hotkeys|help",      2,  LOADING | STALE,  A.NONE, None, hotkeys_help,
        "Return helpful text about HOTKEYS command parameters.", since="8.6.1",
        group="server"),
)
