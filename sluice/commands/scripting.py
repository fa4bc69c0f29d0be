"""EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, SCRIPT, FUNCTION, FCALL and FCALL_RO.

Handlers parse and check the arguments, find the script (the cache by SHA1) or the function,
prepare the run (Redis's ``scriptPrepareForRun``: shebang flags, read-only commands, disk
errors) and hand it to ``ctx.server.scripting`` (``server/scripting.py``), which runs it in
the Lua engine (``sluice/scripting``) and propagates its effects. EVAL and FCALL feed
MONITOR themselves before running, so the script's commands appear after them (the rows
are ``skip_monitor``), as Redis's ``evalCommand`` does.

Mirrors ``eval.c`` and ``functions.c``; errors are worded as there.
"""

from __future__ import annotations

from typing import Any

from sluice.protocol import NULL_ARRAY, OK, Map, Raw, Set, SimpleString
from sluice.scripting.engine import (
    ALLOW_OOM,
    EVAL_COMPAT_MODE,
    NO_WRITES,
    CountedError,
    ScriptRun,
)
from sluice.scripting.functions import LibraryError
from sluice.scripting.scripts import ScriptCompileError
from sluice.storage.glob import stringmatch

from .args import Args, string2ll
from .errors import (
    FUNCTION_FLUSH_MODE,
    SCRIPT_FLUSH_MODE,
    CommandError,
    subcommand_syntax,
)
from .spec import (
    ALLOW_BUSY,
    DENYOOM,
    LOADING,
    MAY_REPLICATE,
    NO_MANDATORY_KEYS,
    NONE,
    NOSCRIPT,
    READONLY,
    RO,
    RW,
    SKIP_MONITOR,
    STALE,
    WRITE,
    A,
    K,
    cmd,
    keys_counted,
)

NOSCRIPT_ERROR = "NOSCRIPT No matching script. Please use EVAL."
NUMKEYS_TOO_BIG = "ERR Number of keys can't be greater than number of args"
NUMKEYS_NEGATIVE = "ERR Number of keys can't be negative"
RO_WITH_WRITE = "ERR Can not execute a script with write flag using *_ro command."
FUNCTION_NOT_FOUND = "ERR Function not found"
BAD_NUMKEYS = "ERR Bad number of keys provided"


def _numkeys(ctx: Any, args: Args, error: str) -> tuple[list[bytes], list[bytes]]:
    raw = args.argv[2]
    n = string2ll(raw)
    if n is None:
        raise CommandError(error)
    rest = args.argv[3:]
    if n > len(rest):
        raise CommandError(NUMKEYS_TOO_BIG)
    if n < 0:
        raise CommandError(NUMKEYS_NEGATIVE)
    return rest[:n], rest[n:]


def _prepare(ctx: Any, script_flags: int, ro: bool) -> tuple[bool, bool]:
    """scriptPrepareForRun's checks: (read_only, allow_oom) for the run, or an error."""
    compat = bool(script_flags & EVAL_COMPAT_MODE)
    if not compat and not script_flags & NO_WRITES:
        disk_error = ctx.server.disk_error
        if disk_error is not None:
            raise CommandError(
                "MISCONF Redis is configured to save RDB snapshots, but it's currently "
                "unable to persist to disk. Writable scripts are blocked. Use 'no-writes' "
                "flag for read only scripts.")
        if ro:
            raise CommandError(RO_WITH_WRITE)
    read_only = ro or (not compat and bool(script_flags & NO_WRITES))
    allow_oom = not compat and bool(script_flags & ALLOW_OOM)
    return read_only, allow_oom


def _run(ctx: Any, engine: Any, fn: Any, funcname: bytes, eval_mode: bool, flags: int,
         ro: bool, keys: list[bytes], argv: list[bytes], client: Any) -> Any:
    scripting = ctx.server.scripting
    read_only, allow_oom = _prepare(ctx, flags, ro)
    run = ScriptRun(ctx, client, funcname, eval_mode, read_only, allow_oom)
    run.argv = ctx.argv
    reply = scripting.execute(engine, run, fn, keys, argv)
    if type(reply) is CountedError:
        ctx.cmd.failed_calls += 1  # the error was counted where it happened
        return Raw(reply)
    return reply


def _feed_monitors(ctx: Any) -> None:
    server = ctx.server
    if server.monitors:
        server.feed_monitors(ctx, ctx.argv)


def _eval(ctx: Any, args: Args, evalsha: bool, ro: bool) -> Any:
    _feed_monitors(ctx)
    scripting = ctx.server.scripting
    scripts = scripting.scripts
    body = args.argv[1]
    if evalsha and len(body) != 40:
        raise CommandError(NOSCRIPT_ERROR)
    keys, argv = _numkeys(ctx, args, "ERR value is not an integer or out of range")
    if evalsha:
        script = scripts.get(body)
        if script is None:
            raise CommandError(NOSCRIPT_ERROR)
        sha = body.lower()
    else:
        try:
            sha = scripts.create(body, from_eval=True)
        except ScriptCompileError as e:
            raise CommandError(e.message.decode(errors="surrogateescape")) from None
        script = scripts.cache[sha]
    scripts.touch(sha)
    engine = scripting.eval_engine
    if scripting.eval_client is None:
        scripting.eval_client = scripting.new_script_client()
    return _run(ctx, engine, script.fn, sha, True, script.flags, ro, keys, argv,
                scripting.eval_client)


def eval_(ctx: Any, args: Args) -> Any:
    return _eval(ctx, args, False, False)


def evalsha(ctx: Any, args: Args) -> Any:
    return _eval(ctx, args, True, False)


def eval_ro(ctx: Any, args: Args) -> Any:
    return _eval(ctx, args, False, True)


def evalsha_ro(ctx: Any, args: Args) -> Any:
    return _eval(ctx, args, True, True)


def _fcall(ctx: Any, args: Args, ro: bool) -> Any:
    _feed_monitors(ctx)
    scripting = ctx.server.scripting
    f = scripting.libraries.find(args.argv[1])
    if f is None:
        raise CommandError(FUNCTION_NOT_FOUND)
    keys, argv = _numkeys(ctx, args, BAD_NUMKEYS)
    if scripting.function_client is None:
        scripting.function_client = scripting.new_script_client()
    return _run(ctx, scripting.function_engine, f.fn, f.name, False, f.flags, ro, keys, argv,
                scripting.function_client)


def fcall(ctx: Any, args: Args) -> Any:
    return _fcall(ctx, args, False)


def fcall_ro(ctx: Any, args: Args) -> Any:
    return _fcall(ctx, args, True)


# -- SCRIPT -----------------------------------------------------------------------------------

_SCRIPT_HELP = (
    "DEBUG (YES|SYNC|NO)",
    "    Set the debug mode for subsequent scripts executed.",
    "EXISTS <sha1> [<sha1> ...]",
    "    Return information about the existence of the scripts in the script cache.",
    "FLUSH [ASYNC|SYNC]",
    "    Flush the Lua scripts cache. Very dangerous on replicas.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the scripts cache.",
    "    * SYNC: Synchronously flush the scripts cache.",
    "KILL",
    "    Kill the currently executing Lua script.",
    "LOAD <script>",
    "    Load a script into the scripts cache without executing it.",
)


def _help(parent: str, lines: tuple[str, ...]) -> Any:
    out = [f"{parent} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", *lines,
           "HELP", "    Print this help."]
    return [SimpleString(line.encode()) for line in out]


def script_help(ctx: Any, args: Args) -> Any:
    return _help("SCRIPT", _SCRIPT_HELP)


_LAZYFREE_THRESHOLD = 64


def _flush_mode(args: Args, error: str) -> bool:
    """Whether the flush is ASYNC (an argument, or lazyfree-lazy-user-flush)."""
    if args:
        mode = args.next_upper()
        if mode not in (b"ASYNC", b"SYNC") or args:
            raise CommandError(error)
        return mode == b"ASYNC"
    return False


def _lazyfreed(ctx: Any, n: int) -> None:
    """Redis frees a big script cache or library set in its lazyfree thread and counts the
    objects in INFO lazyfreed_objects; we free at once, and count the same."""
    if n > _LAZYFREE_THRESHOLD:
        ctx.server.stats["lazyfreed_objects"] += n


def script_flush(ctx: Any, args: Args) -> Any:
    scripts = ctx.server.scripting.scripts
    if _flush_mode(args, SCRIPT_FLUSH_MODE):
        _lazyfreed(ctx, len(scripts.cache))
    scripts.flush()
    return OK


def script_exists(ctx: Any, args: Args) -> Any:
    scripts = ctx.server.scripting.scripts
    return [1 if sha in scripts.cache else 0 for sha in args.argv[2:]]


def script_load(ctx: Any, args: Args) -> Any:
    try:
        return ctx.server.scripting.scripts.create(args.argv[2], from_eval=False)
    except ScriptCompileError as e:
        raise CommandError(e.message.decode(errors="surrogateescape")) from None


def script_kill(ctx: Any, args: Args) -> Any:
    ctx.server.scripting.kill(eval_mode=True)
    return OK


def script_debug(ctx: Any, args: Args) -> Any:
    mode = args.argv[2].upper()
    if mode == b"NO":
        return OK
    if mode in (b"YES", b"SYNC"):
        raise CommandError("ERR SCRIPT DEBUG is not supported by Sluice")
    raise CommandError("ERR Use SCRIPT DEBUG YES/SYNC/NO")


# -- FUNCTION ---------------------------------------------------------------------------------

_FUNCTION_HELP = (
    "LOAD [REPLACE] <FUNCTION CODE>",
    "    Create a new library with the given library name and code.",
    "DELETE <LIBRARY NAME>",
    "    Delete the given library.",
    "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
    "    Return general information on all the libraries:",
    "    * Library name",
    "    * The engine used to run the Library",
    "    * Functions list",
    "    * Library code (if WITHCODE is given)",
    "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
    "STATS",
    "    Return information about the current function running:",
    "    * Function name",
    "    * Command used to run the function",
    "    * Duration in MS that the function is running",
    "    If no function is running, return nil",
    "    In addition, returns a list of available engines.",
    "KILL",
    "    Kill the current running function.",
    "FLUSH [ASYNC|SYNC]",
    "    Delete all the libraries.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the libraries.",
    "    * SYNC: Synchronously flush the libraries.",
    "DUMP",
    "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
    "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
    "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
    "    control how to handle existing libraries (default APPEND):",
    "    * FLUSH: delete all existing libraries.",
    "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
    "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
    "      libraries with the new libraries (notice that even on this option there is a chance of failure",
    "      in case of functions name collision with another library).",
)


def function_help(ctx: Any, args: Args) -> Any:
    return _help("FUNCTION", _FUNCTION_HELP)


def _library_error(e: LibraryError) -> CommandError:
    return CommandError(e.message.decode(errors="surrogateescape"))


def function_load(ctx: Any, args: Args) -> Any:
    argv = args.argv
    replace = False
    pos = 2
    while pos < len(argv) - 1:
        opt = argv[pos]
        pos += 1
        if opt.lower() == b"replace":
            replace = True
            continue
        raise CommandError("ERR Unknown option given: " + opt.decode(errors="replace"))
    if pos >= len(argv):
        raise CommandError("ERR Function code is missing")
    try:
        name = ctx.server.scripting.libraries.load(argv[pos], replace)
    except LibraryError as e:
        raise _library_error(e) from None
    ctx.server.dirty += 1  # logged to the AOF, counted as a change
    return name


def function_delete(ctx: Any, args: Args) -> Any:
    try:
        ctx.server.scripting.libraries.delete(args.argv[2])
    except LibraryError as e:
        raise _library_error(e) from None
    ctx.server.dirty += 1  # logged to the AOF, counted as a change
    return OK


def function_flush(ctx: Any, args: Args) -> Any:
    if len(args) > 1:
        raise subcommand_syntax(ctx.argv[1], "function")
    libraries = ctx.server.scripting.libraries
    if _flush_mode(args, FUNCTION_FLUSH_MODE) and len(libraries.functions) > _LAZYFREE_THRESHOLD:
        _lazyfreed(ctx, len(libraries.functions) + 1)  # the functions and the engine
    libraries.flush()
    ctx.server.dirty += 1  # logged to the AOF, counted as a change
    return OK


def function_list(ctx: Any, args: Args) -> Any:
    argv = args.argv
    with_code = False
    pattern: bytes | None = None
    i = 2
    while i < len(argv):
        a = argv[i]
        if not with_code and a.lower() == b"withcode":
            with_code = True
            i += 1
            continue
        if pattern is None and a.lower() == b"libraryname":
            if i >= len(argv) - 1:
                raise CommandError("ERR library name argument was not given")
            pattern = argv[i + 1]
            i += 2
            continue
        raise CommandError("ERR Unknown argument " + a.decode(errors="replace"))
    libs = ctx.server.scripting.libraries
    out = []
    for lib in libs.libraries.values():
        if pattern is not None and not stringmatch(pattern, lib.name, nocase=True):
            continue
        entry = Map()
        entry[b"library_name"] = lib.name
        entry[b"engine"] = lib.engine
        funcs = []
        for f in lib.functions.values():
            fm = Map()
            fm[b"name"] = f.name
            fm[b"description"] = f.desc
            fm[b"flags"] = Set(SimpleString(n) for n in libs.flag_names(f.flags))
            funcs.append(fm)
        entry[b"functions"] = funcs
        if with_code:
            entry[b"library_code"] = lib.code
        out.append(entry)
    return out


def function_dump(ctx: Any, args: Args) -> Any:
    return ctx.server.scripting.libraries.dump()


def function_restore(ctx: Any, args: Args) -> Any:
    argv = args.argv
    if len(argv) > 4:
        raise subcommand_syntax(argv[1], "function")
    policy = b"APPEND"
    if len(argv) == 4:
        policy = argv[3].upper()
        if policy not in (b"APPEND", b"REPLACE", b"FLUSH"):
            raise CommandError("ERR Wrong restore policy given, value should be either FLUSH, "
                               "APPEND or REPLACE.")
    try:
        ctx.server.scripting.libraries.restore(argv[2], policy)
    except LibraryError as e:
        raise _library_error(e) from None
    ctx.server.dirty += 1  # logged to the AOF, counted as a change
    return OK


def function_kill(ctx: Any, args: Args) -> Any:
    ctx.server.scripting.kill(eval_mode=False)
    return OK


def function_stats(ctx: Any, args: Args) -> Any:
    scripting = ctx.server.scripting
    run = scripting.run
    if run is not None and run.eval_mode:
        raise CommandError("BUSY Redis is busy running a script. You can only call SCRIPT "
                           "KILL or SHUTDOWN NOSAVE.")
    stats = Map()
    if run is None:
        stats[b"running_script"] = None
    else:
        running = Map()
        running[b"name"] = run.funcname
        running[b"command"] = list(run.argv)
        running[b"duration_ms"] = run.duration_ms()
        stats[b"running_script"] = running
    libs = scripting.libraries
    lua = Map()
    lua[b"libraries_count"] = len(libs.libraries)
    lua[b"functions_count"] = len(libs.functions)
    engines = Map()
    engines[b"LUA"] = lua
    stats[b"engines"] = engines
    return stats


_SCRIPT_KEYS = keys_counted(2, RW | K.ACCESS | K.UPDATE)
_SCRIPT_RO_KEYS = keys_counted(2, RO | K.ACCESS)
_EVAL = NOSCRIPT | SKIP_MONITOR | NO_MANDATORY_KEYS | STALE
_EVAL_RW = _EVAL | MAY_REPLICATE
_ALL_NODES_OK = ("request_policy:all_nodes", "response_policy:all_succeeded")
_ALL_SHARDS_OK = ("request_policy:all_shards", "response_policy:all_succeeded")
_D = "Depends on the script that is executed."
_F = "Depends on the function that is executed."
__all__ = ["NULL_ARRAY", "Raw"]

COMMANDS = (
    #   name                 arity  flags                    acl           keys  handler
    cmd("eval",                -3,  _EVAL_RW,                A.SCRIPTING,  _SCRIPT_KEYS, eval_,
        "Executes a server-side Lua script.", group="scripting", since="2.6.0",
        complexity=_D, syntax="script numkeys [key [key ...]] [arg [arg ...]]"),
    cmd("evalsha",             -3,  _EVAL_RW,                A.SCRIPTING,  _SCRIPT_KEYS, evalsha,
        "Executes a server-side Lua script by SHA1 digest.", group="scripting",
        since="2.6.0", complexity=_D,
        syntax="sha1 numkeys [key [key ...]] [arg [arg ...]]"),
    cmd("eval_ro",             -3,  _EVAL | READONLY,        A.SCRIPTING,  _SCRIPT_RO_KEYS, eval_ro,
        "Executes a read-only server-side Lua script.", group="scripting", since="7.0.0",
        complexity=_D, syntax="script numkeys [key [key ...]] [arg [arg ...]]"),
    cmd("evalsha_ro",          -3,  _EVAL | READONLY,        A.SCRIPTING,  _SCRIPT_RO_KEYS, evalsha_ro,
        "Executes a read-only server-side Lua script by SHA1 digest.", group="scripting",
        since="7.0.0", complexity=_D,
        syntax="sha1 numkeys [key [key ...]] [arg [arg ...]]"),
    cmd("fcall",               -3,  _EVAL_RW,                A.SCRIPTING,  _SCRIPT_KEYS, fcall,
        "Invokes a function.", group="scripting", since="7.0.0", complexity=_F,
        syntax="function numkeys [key [key ...]] [arg [arg ...]]"),
    cmd("fcall_ro",            -3,  _EVAL | READONLY,        A.SCRIPTING,  _SCRIPT_RO_KEYS, fcall_ro,
        "Invokes a read-only function.", group="scripting", since="7.0.0", complexity=_F,
        syntax="function numkeys [key [key ...]] [arg [arg ...]]"),
    cmd("script",              -2,  NONE,                    A.NONE,       None, None,
        "A container for Lua scripts management commands.", group="scripting",
        since="2.6.0", complexity="Depends on subcommand."),
    cmd("script|debug",         3,  NOSCRIPT,                A.SCRIPTING,  None, script_debug,
        "Sets the debug mode of server-side Lua scripts.", group="scripting",
        since="3.2.0", syntax="<YES | SYNC | NO>"),
    cmd("script|exists",       -3,  NOSCRIPT,                A.SCRIPTING,  None, script_exists,
        "Determines whether server-side Lua scripts exist in the script cache.",
        group="scripting", since="2.6.0",
        complexity="O(N) with N being the number of scripts to check (so checking a single "
                   "script is an O(1) operation).",
        syntax="sha1 [sha1 ...]", tips=("request_policy:all_shards",
                                        "response_policy:agg_logical_and")),
    cmd("script|flush",        -2,  NOSCRIPT,                A.SCRIPTING,  None, script_flush,
        "Removes all server-side Lua scripts from the script cache.", group="scripting",
        since="2.6.0", complexity="O(N) with N being the number of scripts in cache",
        syntax="[ASYNC | SYNC]", tips=_ALL_NODES_OK),
    cmd("script|help",          2,  LOADING | STALE,         A.SCRIPTING,  None, script_help,
        "Returns helpful text about the different subcommands.", group="scripting",
        since="5.0.0"),
    cmd("script|kill",          2,  NOSCRIPT | ALLOW_BUSY,   A.SCRIPTING,  None, script_kill,
        "Terminates a server-side Lua script during execution.", group="scripting",
        since="2.6.0", tips=("request_policy:all_shards", "response_policy:one_succeeded")),
    cmd("script|load",          3,  NOSCRIPT | STALE,        A.SCRIPTING,  None, script_load,
        "Loads a server-side Lua script to the script cache.", group="scripting",
        since="2.6.0", complexity="O(N) with N being the length in bytes of the script body.",
        syntax="script", tips=_ALL_NODES_OK),
    cmd("function",            -2,  NONE,                    A.NONE,       None, None,
        "A container for function commands.", group="scripting",
        since="7.0.0", complexity="Depends on subcommand."),
    cmd("function|delete",      3,  WRITE | NOSCRIPT,        A.SCRIPTING,  None, function_delete,
        "Deletes a library and its functions.", group="scripting", since="7.0.0",
        syntax="library-name", tips=_ALL_SHARDS_OK),
    cmd("function|dump",        2,  NOSCRIPT,                A.SCRIPTING,  None, function_dump,
        "Dumps all libraries into a serialized binary payload.", group="scripting",
        since="7.0.0", complexity="O(N) where N is the number of functions"),
    cmd("function|flush",      -2,  WRITE | NOSCRIPT,        A.SCRIPTING,  None, function_flush,
        "Deletes all libraries and functions.", group="scripting",
        since="7.0.0", complexity="O(N) where N is the number of functions deleted",
        syntax="[ASYNC | SYNC]", tips=_ALL_SHARDS_OK),
    cmd("function|help",        2,  LOADING | STALE,         A.SCRIPTING,  None, function_help,
        "Returns helpful text about the different subcommands.", group="scripting",
        since="7.0.0"),
    cmd("function|kill",        2,  NOSCRIPT | ALLOW_BUSY,   A.SCRIPTING,  None, function_kill,
        "Terminates a function during execution.", group="scripting", since="7.0.0",
        tips=("request_policy:all_shards", "response_policy:one_succeeded")),
    cmd("function|list",       -2,  NOSCRIPT,                A.SCRIPTING,  None, function_list,
        "Returns information about all libraries.", group="scripting", since="7.0.0",
        complexity="O(N) where N is the number of functions",
        syntax="[LIBRARYNAME library-name-pattern] [WITHCODE]",
        tips=("nondeterministic_output_order",)),
    cmd("function|load",       -3,  WRITE | DENYOOM | NOSCRIPT, A.SCRIPTING, None, function_load,
        "Creates a library.", group="scripting", since="7.0.0",
        complexity="O(1) (considering compilation time is redundant)",
        syntax="[REPLACE] function-code", tips=_ALL_SHARDS_OK),
    cmd("function|restore",    -3,  WRITE | DENYOOM | NOSCRIPT, A.SCRIPTING, None, function_restore,
        "Restores all libraries from a payload.", group="scripting",
        since="7.0.0", complexity="O(N) where N is the number of functions on the payload",
        syntax="serialized-value [FLUSH | APPEND | REPLACE]", tips=_ALL_SHARDS_OK),
    cmd("function|stats",       2,  NOSCRIPT | ALLOW_BUSY,   A.SCRIPTING,  None, function_stats,
        "Returns information about a function during execution.", group="scripting",
        since="7.0.0", tips=("nondeterministic_output", "request_policy:all_shards",
                             "response_policy:special")),
)
