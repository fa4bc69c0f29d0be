"""Server administration: CONFIG, SLOWLOG, MODULE, MONITOR, SHUTDOWN and DEBUG (scripting is in
scripting.py, LATENCY in latency.py; SHUTDOWN NOSAVE also stops a server busy in a script).

* CONFIG works over ``ctx.server.config`` (``server/config.py``): GET matches globs, SET
  validates every pair before applying any (``set_many``) and runtime effects run from the
  server's ``config.on_change`` listeners (hz is clamped to 1..500 as Redis does, a new
  proto-max-bulk-len applies to every connection's reader, loglevel to the logger).
  RESETSTAT zeroes INFO stats, commandstats and errorstats (``server/info.py``).
* SLOWLOG reads ``server.slowlog`` (filled by ``Server.slow_command``).
* MONITOR lines are formatted by ``monitor_line`` as Redis's ``replicationFeedMonitors``:
  ``+<unix time.us> [<db> <addr>] "arg" ...``, arguments quoted like ``sdscatrepr`` and
  passwords of AUTH / HELLO AUTH shown as ``(redacted)``.
* MODULE: Sluice cannot load Redis modules (C shared libraries). LIST is empty; LOAD and
  LOADEX answer Redis's reply to a module that failed to load; UNLOAD finds no such module.
  LOAD, LOADEX and UNLOAD are refused unless ``enable-module-command`` allows them.
* DEBUG is gated by ``enable-debug-command`` (dispatch refuses rows flagged PROTECTED before
  they run; the handler checks again in case it is reached another way).

Mirrors Redis's ``configCommand`` (config.c), ``slowlogCommand`` (slowlog.c),
``moduleCommand`` (module.c), ``monitorCommand``,
``shutdownCommand`` (server.c) and ``debugCommand`` (debug.c).
"""

from __future__ import annotations

import logging
import time

from sluice.protocol import OK, Map, Raw

from .acl import config_user_lines
from .args import Args, parse_int
from .context import Command, Context, Reply
from .debug import debug  # DEBUG has a module of its own; its row is in the table below
from .errors import (
    CONFIG_NO_FILE,
    MODULE_LOAD_FAILED,
    MODULE_NO_SUCH_MODULE,
    MODULE_UNLOAD_FAILED,
    MONITOR_IN_MULTI,
    NO_SHUTDOWN,
    SHUTDOWN_FAILED,
    SLOWLOG_COUNT,
    SYNTAX,
    CommandError,
    ConfigError,
    subcommand_syntax,
)
from .introspection import help_reply
from .spec import (
    ADMIN,
    ALLOW_BUSY,
    LOADING,
    NO_ASYNC_LOADING,
    NO_MULTI,
    NONE,
    NOSCRIPT,
    PROTECTED,
    STALE,
    A,
    cmd,
)

log = logging.getLogger("sluice")

_LOG_LEVELS = {"debug": logging.DEBUG, "verbose": logging.INFO, "notice": logging.INFO,
               "warning": logging.WARNING, "nothing": logging.CRITICAL + 1}


# -- CONFIG ---------------------------------------------------------------------------------------


def config_get(ctx: Context, args: Args) -> Reply:
    return Map(ctx.server.config.get_matching(args.rest()))


def _protected_configs_ok(ctx: Context) -> bool:
    setting = ctx.server.config.enable_protected_configs
    return setting == "yes" or (setting == "local" and ctx.is_local())


def config_set(ctx: Context, args: Args) -> Reply:
    argv = args.rest()
    if len(argv) % 2:
        raise CommandError(SYNTAX)
    pairs = [(argv[i], [argv[i + 1]]) for i in range(0, len(argv), 2)]
    try:
        ctx.server.config.set_many(pairs, protected_ok=_protected_configs_ok(ctx))
    except ConfigError as e:
        raise CommandError("ERR " + str(e)) from None
    return OK


def config_resetstat(ctx: Context, args: Args) -> Reply:
    ctx.server.reset_stats()
    return OK


def config_rewrite(ctx: Context, args: Args) -> Reply:
    if not ctx.server.config.config_file:
        raise CommandError(CONFIG_NO_FILE)
    try:
        ctx.server.config.rewrite(config_user_lines(ctx))
    except OSError as e:
        log.warning("CONFIG REWRITE failed: %s", e.strerror)
        raise CommandError(f"ERR Rewriting config file: {e.strerror}") from None
    log.info("CONFIG REWRITE executed with success.")
    return OK


_CONFIG_HELP = (
    "GET <pattern> [<pattern> ...]",
    "    Each parameter whose name matches a glob-style <pattern>, with its value.",
    "SET <directive> <value> [<directive> <value> ...]",
    "    Change settings; either all of them change or none does.",
    "RESETSTAT",
    "    Start the statistics of INFO (commandstats and errorstats included) from zero.",
    "REWRITE",
    "    Write the settings in effect back to the configuration file.",
)


def config_help(ctx: Context, args: Args) -> Reply:
    return help_reply("CONFIG", _CONFIG_HELP)


# -- SLOWLOG --------------------------------------------------------------------------------------


def slowlog_get(ctx: Context, args: Args) -> Reply:
    count = 10
    if args:
        raw = args.next()
        if args:
            raise subcommand_syntax(ctx.argv[1], "slowlog")
        count = parse_int(raw, SLOWLOG_COUNT)
        if count < -1:
            raise CommandError(SLOWLOG_COUNT)
    entries = list(ctx.server.slowlog)
    if count >= 0:
        entries = entries[:count]
    return entries


def slowlog_len(ctx: Context, args: Args) -> Reply:
    return len(ctx.server.slowlog)


def slowlog_reset(ctx: Context, args: Args) -> Reply:
    ctx.server.slowlog.clear()
    return OK


_SLOWLOG_HELP = (
    "GET [<count>]",
    "    The <count> most recent entries (10 by default, -1 for all). Each entry holds",
    "    an ID, a unix timestamp, the duration in microseconds, the arguments, the",
    "    client's address and the client's name.",
    "LEN",
    "    How many entries the slow log holds.",
    "RESET",
    "    Empty the slow log.",
)


def slowlog_help(ctx: Context, args: Args) -> Reply:
    return help_reply("SLOWLOG", _SLOWLOG_HELP)


# -- MONITOR --------------------------------------------------------------------------------------

_ESCAPES = {ord("\\"): b"\\\\", ord('"'): b'\\"', ord("\n"): b"\\n", ord("\r"): b"\\r",
            ord("\t"): b"\\t", 7: b"\\a", 8: b"\\b"}
_REPR = [_ESCAPES.get(i) or (bytes((i,)) if 32 <= i < 127 else b"\\x%02x" % i)
         for i in range(256)]
_REDACTED = b"(redacted)"


def quote_arg(arg: bytes) -> bytes:
    """An argument quoted as Redis's ``sdscatrepr``: printable ASCII kept, the rest escaped."""
    if arg.isalnum() and arg.isascii():
        return b'"' + arg + b'"'
    return b'"' + b"".join(_REPR[b] for b in arg) + b'"'


def redacted(argv: list[bytes]) -> list[bytes]:
    """Passwords never reach MONITOR (or the slow log): AUTH and HELLO ... AUTH user pass."""
    name = argv[0].lower()
    if name == b"auth":
        return [argv[0]] + [_REDACTED] * (len(argv) - 1)
    if name == b"hello":
        out = list(argv)
        for i in range(2, len(argv)):
            if argv[i].lower() == b"auth":
                for j in (i + 1, i + 2):
                    if j < len(out):
                        out[j] = _REDACTED
                break
        return out
    return argv


def monitor_line(client: Context, argv: list[bytes], now: float | None = None) -> bytes:
    """One MONITOR line for a command ``client`` ran."""
    t = time.time() if now is None else now
    addr = client.addr
    if addr.startswith("/"):
        addr = "unix:" + addr
    args = b" ".join(quote_arg(a) for a in redacted(argv))
    return b"+%.6f [%d %s] %s\r\n" % (t, client.db.id, addr.encode(), args)


def monitor(ctx: Context, args: Args) -> Reply:
    if ctx.in_exec:
        raise CommandError(MONITOR_IN_MULTI)
    if ctx.monitor:
        return Raw(b"")  # already monitoring: Redis ignores it without a reply
    ctx.monitor = True
    ctx.server.monitors.append(ctx)
    return OK


# -- SHUTDOWN -------------------------------------------------------------------------------------


def shutdown(ctx: Context, args: Args) -> Reply:
    save: bool | None = None
    force = abort = False
    for opt in args.rest():
        word = opt.upper()
        if word == b"NOSAVE" and save is None:
            save = False
        elif word == b"SAVE" and save is None:
            save = True
        elif word == b"NOW":
            pass  # no replicas to wait for
        elif word == b"FORCE":
            force = True
        elif word == b"ABORT":
            abort = True
        else:
            raise CommandError(SYNTAX)
    server = ctx.server
    if abort:
        if save is not None or force or len(ctx.argv) > 2:
            raise CommandError(SYNTAX)
        if not server.abort_shutdown():  # a signal's shutdown the cron has not begun
            raise CommandError(NO_SHUTDOWN)
        return OK
    busy = server.scripting.busy_error()
    if busy is not None:
        # Only SHUTDOWN NOSAVE may stop a server busy in a script: the script is killed
        # (it never completes) and the server stops after it unwinds.
        if save is not False:
            raise CommandError(busy)
        server.scripting.kill(None)
        log.warning("User requested shutdown...")
        server.request_shutdown()
        ctx.closing = True
        return Raw(b"")
    if server.prepare_shutdown(save, force) is not None:  # it goes on serving
        raise CommandError(SHUTDOWN_FAILED)
    server.request_shutdown()
    ctx.closing = True
    return Raw(b"")  # the connection closes without a reply, as on Redis


_ADM = ADMIN | NOSCRIPT | LOADING | STALE
# -- MODULE ---------------------------------------------------------------------------------------
# Sluice cannot load Redis modules (shared libraries written against redismodule.h): LOAD and
# LOADEX fail as Redis's do when a module does not load, LIST is empty, and UNLOAD finds no
# such module. LOAD, LOADEX and UNLOAD are PROTECTED rows: dispatch refuses them unless
# enable-module-command allows them, before they run, as Redis does.

_MODULE_HELP = (
    "LIST",
    "    The modules loaded (always none: Sluice cannot load modules).",
    "LOAD <path> [<arg> ...]",
    "    Load the module library at <path> with the given arguments.",
    "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
    "    Load the module library at <path> with configuration values and arguments.",
    "UNLOAD <name>",
    "    Unload the module called <name>.",
)


def module_help(ctx: Context, args: Args) -> Reply:
    return help_reply("MODULE", _MODULE_HELP)


def module_list(ctx: Context, args: Args) -> Reply:
    return []


def module_load(ctx: Context, args: Args) -> Reply:
    """LOAD and LOADEX: Redis's reply to a module that fails to load, its reason logged."""
    log.warning("Module %s failed to load: Sluice cannot load Redis modules",
                args.next().decode(errors="replace"))
    raise CommandError(MODULE_LOAD_FAILED)


def module_unload(ctx: Context, args: Args) -> Reply:
    name = args.next()
    log.warning("Error unloading module %s: %s", name.decode(errors="replace"),
                MODULE_NO_SUCH_MODULE)
    raise CommandError(MODULE_UNLOAD_FAILED % MODULE_NO_SUCH_MODULE)


_ALL_NODES_OK = ("request_policy:all_nodes", "response_policy:all_succeeded")
_MOD = NO_ASYNC_LOADING | ADMIN | NOSCRIPT | PROTECTED

COMMANDS: tuple[Command, ...] = (
    #   name                 arity  flags                    acl           keys  handler
    cmd("config",              -2,  NONE,                    A.NONE,       None, None,
        "Groups the commands that read and change the configuration.", group="server",
        since="2.0.0", complexity="Depends on subcommand."),
    cmd("config|get",          -3,  _ADM,                    A.NONE,       None, config_get,
        "Reads the value of the settings whose names match the patterns.", group="server",
        since="2.0.0", complexity="O(N) when N is the number of configuration parameters provided",
        syntax="parameter [parameter ...]"),
    cmd("config|set",          -4,  _ADM,                    A.NONE,       None, config_set,
        "Changes settings, all or none of them.", group="server", since="2.0.0",
        complexity="O(N) when N is the number of configuration parameters provided",
        syntax="parameter value [parameter value ...]", tips=_ALL_NODES_OK),
    cmd("config|resetstat",     2,  _ADM,                    A.NONE,       None, config_resetstat,
        "Starts the statistics reported by INFO from zero.", group="server", since="2.0.0"),
    cmd("config|rewrite",       2,  _ADM,                    A.NONE,       None, config_rewrite,
        "Writes the settings in effect back to the configuration file.", group="server",
        since="2.8.0"),
    cmd("config|help",          2,  LOADING | STALE,         A.NONE,       None, config_help,
        "Explains the CONFIG subcommands.", group="server", since="5.0.0"),
    cmd("slowlog",             -2,  NONE,                    A.NONE,       None, None,
        "Groups the commands that read and clear the slow log.", group="server",
        since="2.2.12", complexity="Depends on subcommand."),
    cmd("slowlog|get",         -2,  ADMIN | LOADING | STALE, A.NONE,       None, slowlog_get,
        "Returns the most recent entries of the slow log.", group="server", since="2.2.12",
        complexity="O(N) where N is the number of entries returned", syntax="[count]",
        tips=("request_policy:all_nodes", "nondeterministic_output")),
    cmd("slowlog|len",          2,  ADMIN | LOADING | STALE, A.NONE,       None, slowlog_len,
        "Returns how many entries the slow log holds.", group="server", since="2.2.12",
        tips=("request_policy:all_nodes", "response_policy:agg_sum",
              "nondeterministic_output")),
    cmd("slowlog|reset",        2,  ADMIN | LOADING | STALE, A.NONE,       None, slowlog_reset,
        "Empties the slow log.", group="server", since="2.2.12",
        complexity="O(N) where N is the number of entries in the slowlog", tips=_ALL_NODES_OK),
    cmd("slowlog|help",         2,  LOADING | STALE,         A.NONE,       None, slowlog_help,
        "Explains the SLOWLOG subcommands.", group="server", since="6.2.0"),
    cmd("module",              -2,  NONE,                    A.NONE,       None, None,
        "Groups the module commands (Sluice cannot load modules).", group="server",
        since="4.0.0", complexity="Depends on subcommand."),
    cmd("module|help",          2,  LOADING | STALE,         A.NONE,       None, module_help,
        "Explains the MODULE subcommands.", group="server", since="5.0.0"),
    cmd("module|list",          2,  ADMIN | NOSCRIPT,        A.NONE,       None, module_list,
        "Lists the loaded modules: none in Sluice.", group="server", since="4.0.0",
        complexity="O(N) where N is the number of loaded modules.",
        tips=("nondeterministic_output_order",)),
    cmd("module|load",         -3,  _MOD,                    A.NONE,       None, module_load,
        "Loads a module: always fails in Sluice, which cannot load modules.", group="server",
        since="4.0.0", syntax="path [arg [arg ...]]"),
    cmd("module|loadex",       -3,  _MOD,                    A.NONE,       None, module_load,
        "Loads a module with configuration values: always fails in Sluice.", group="server",
        since="7.0.0",
        syntax="path [CONFIG name value [CONFIG name value ...]] [ARGS args [args ...]]"),
    cmd("module|unload",        3,  _MOD,                    A.NONE,       None, module_unload,
        "Unloads a module: there is none to unload in Sluice.", group="server",
        since="4.0.0", syntax="name"),
    cmd("monitor",              1,  _ADM,                    A.NONE,       None, monitor,
        "Streams every command the server runs to this connection.", group="server",
        since="1.0.0"),
    cmd("shutdown",            -1,  _ADM | NO_MULTI | ALLOW_BUSY, A.NONE,  None, shutdown,
        "Saves if asked or configured, then stops the server.", group="server",
        since="1.0.0", complexity="O(N) when saving, where N is the total number of keys in all databases when saving data, otherwise O(1)",
        syntax="[NOSAVE | SAVE] [NOW] [FORCE] [ABORT]"),
    cmd("debug",               -2,  _ADM | PROTECTED,        A.NONE,       None, debug,
        "Tools for testing and troubleshooting the server.", group="server", since="1.0.0",
        complexity="Depends on subcommand.", doc_flags=("syscmd",)),
)
