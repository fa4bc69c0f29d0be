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

from sluice.protocol import OK, Map, Set, SimpleString, string2ll
from sluice.storage.glob import stringmatch

from . import errors
from .args import Args
from .context import Command, Context, Reply
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
    F,
    K,
    cmd,
    keys_counted,
)

# Script flags (script.h's SCRIPT_FLAG_*) that decide a script command's flags.
_NO_WRITES, _ALLOW_OOM, _ALLOW_STALE = 1, 2, 4


def _numkeys(args: Args, error: str) -> tuple[list[bytes], list[bytes]]:
    argv = args.argv
    n = string2ll(argv[2])
    if n is None:
        raise CommandError(error)
    if n > len(argv) - 3:
        raise CommandError(errors.NUMKEYS_TOO_BIG)
    if n < 0:
        raise CommandError(errors.NUMKEYS_NEGATIVE)
    return argv[3:3 + n], argv[3 + n:]


def _eval(ctx: Context, args: Args, evalsha: bool, ro: bool) -> Reply:
    server = ctx.server
    if server.monitors:  # before the script's own commands, as evalCommand
        server.feed_monitors(ctx, ctx.argv)
    body = args.argv[1]
    if evalsha and len(body) != 40:
        raise CommandError(errors.NOSCRIPT)
    if ctx.lua_debug:
        if evalsha:
            raise CommandError(errors.SCRIPT_DEBUG_EVALSHA)
        keys, argv = _numkeys(args, errors.NOT_INTEGER)
        return server.scripting.eval_debug(ctx, body, ro, keys, argv)
    keys, argv = _numkeys(args, errors.NOT_INTEGER)
    return server.scripting.eval(ctx, body, evalsha, ro, keys, argv)


def eval_(ctx: Context, args: Args) -> Reply:
    return _eval(ctx, args, False, False)


def evalsha(ctx: Context, args: Args) -> Reply:
    return _eval(ctx, args, True, False)


def eval_ro(ctx: Context, args: Args) -> Reply:
    return _eval(ctx, args, False, True)


def evalsha_ro(ctx: Context, args: Args) -> Reply:
    return _eval(ctx, args, True, True)


def _fcall(ctx: Context, args: Args, ro: bool) -> Reply:
    server = ctx.server
    if server.monitors:
        server.feed_monitors(ctx, ctx.argv)
    name = args.argv[1]
    if server.scripting.find_function(name) is None:  # before the key count, as Redis
        raise CommandError(errors.FUNCTION_NOT_FOUND)
    keys, argv = _numkeys(args, errors.FCALL_NUMKEYS)
    return server.scripting.fcall(ctx, name, ro, keys, argv)


def fcall(ctx: Context, args: Args) -> Reply:
    return _fcall(ctx, args, False)


def fcall_ro(ctx: Context, args: Args) -> Reply:
    return _fcall(ctx, args, True)


def _command_flags(flags: int, declared: int | None) -> int:
    """scriptFlagsToCmdFlags: a script that declares flags replaces the row's write,
    deny-oom, stale and may-replicate flags with what it declared (so CLIENT PAUSE WRITE
    does not hold a no-writes script, and a writing one counts as a write); one without
    (EVAL's compatibility mode), or one not known yet, keeps the row's."""
    if declared is None:
        return flags
    flags &= ~(F.STALE | F.DENYOOM | F.WRITE | F.MAY_REPLICATE)
    if not declared & (_ALLOW_OOM | _NO_WRITES):
        flags |= F.DENYOOM
    if not declared & _NO_WRITES:
        flags |= F.WRITE
    if declared & _ALLOW_STALE:
        flags |= F.STALE
    return flags


def eval_flags(ctx: Context, argv: list[bytes], flags: int) -> int:
    """evalGetCommandFlags for EVAL / EVAL_RO: the body's shebang."""
    return _command_flags(flags, ctx.server.scripting.declared_flags("eval", argv[1]))


def evalsha_flags(ctx: Context, argv: list[bytes], flags: int) -> int:
    """evalGetCommandFlags for EVALSHA / EVALSHA_RO: the cached script's shebang."""
    return _command_flags(flags, ctx.server.scripting.declared_flags("evalsha", argv[1]))


def fcall_flags(ctx: Context, argv: list[bytes], flags: int) -> int:
    """fcallGetCommandFlags: the function's registered flags."""
    return _command_flags(flags, ctx.server.scripting.declared_flags("fcall", argv[1]))


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


def _help(parent: str, lines: tuple[str, ...]) -> Reply:
    out = [f"{parent} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", *lines,
           "HELP", "    Print this help."]
    return [SimpleString(line.encode()) for line in out]


def script_help(ctx: Context, args: Args) -> Reply:
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


def _lazyfreed(ctx: Context, n: int) -> None:
    """Redis frees a big script cache or library set in its lazyfree thread and counts the
    objects in INFO lazyfreed_objects; we free at once, and count the same."""
    if n > _LAZYFREE_THRESHOLD:
        ctx.server.stats["lazyfreed_objects"] += n


def script_flush(ctx: Context, args: Args) -> Reply:
    lazy = _flush_mode(args, SCRIPT_FLUSH_MODE)
    flushed = ctx.server.scripting.script_flush()
    if lazy:
        _lazyfreed(ctx, flushed)
    return OK


def script_exists(ctx: Context, args: Args) -> Reply:
    exists = ctx.server.scripting.script_exists
    return [1 if exists(sha) else 0 for sha in args.argv[2:]]


def script_load(ctx: Context, args: Args) -> Reply:
    return ctx.server.scripting.script_load(args.argv[2])


def script_kill(ctx: Context, args: Args) -> Reply:
    ctx.server.scripting.kill(eval_mode=True)
    return OK


def script_debug(ctx: Context, args: Args) -> Reply:
    """The next EVAL of this connection runs in the Lua debugger (scripting/ldb.py): YES in a
    forked child (its writes are not kept), SYNC in the server itself (which waits)."""
    mode = args.argv[2].lower()
    if mode not in (b"no", b"yes", b"sync"):
        raise CommandError(errors.SCRIPT_DEBUG_MODE)
    ctx.lua_debug = b"" if mode == b"no" else mode
    return OK


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


def function_help(ctx: Context, args: Args) -> Reply:
    return _help("FUNCTION", _FUNCTION_HELP)


def function_load(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    replace = False
    pos = 2
    while pos < len(argv) - 1:
        opt = argv[pos]
        pos += 1
        if opt.lower() == b"replace":
            replace = True
            continue
        raise CommandError(errors.FUNCTION_UNKNOWN_OPTION % opt.decode(errors="replace"))
    if pos >= len(argv):
        raise CommandError(errors.FUNCTION_CODE_MISSING)
    name = ctx.server.scripting.function_load(argv[pos], replace)
    ctx.server.dirty += 1  # logged to the AOF, counted as a change
    return name


def function_delete(ctx: Context, args: Args) -> Reply:
    ctx.server.scripting.function_delete(args.argv[2])
    ctx.server.dirty += 1  # logged to the AOF, counted as a change
    return OK


def function_flush(ctx: Context, args: Args) -> Reply:
    if len(args.argv) > 3:
        raise subcommand_syntax(ctx.argv[1], "function")
    lazy = _flush_mode(args, FUNCTION_FLUSH_MODE)
    flushed = ctx.server.scripting.function_flush()
    if lazy and flushed > _LAZYFREE_THRESHOLD:
        _lazyfreed(ctx, flushed + 1)  # the functions and the engine
    ctx.server.dirty += 1  # logged to the AOF, counted as a change
    return OK


def function_list(ctx: Context, args: Args) -> Reply:
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
                raise CommandError(errors.FUNCTION_LIST_NO_NAME)
            pattern = argv[i + 1]
            i += 2
            continue
        raise CommandError(errors.FUNCTION_LIST_UNKNOWN % a.decode(errors="replace"))
    out: list[Reply] = []
    for lib in ctx.server.scripting.libraries:
        if pattern is not None and not stringmatch(pattern, lib.name, nocase=True):
            continue
        entry = Map()
        entry[b"library_name"] = lib.name
        entry[b"engine"] = lib.engine
        funcs: list[Reply] = []
        for f in lib.functions.values():
            fm = Map()
            fm[b"name"] = f.name
            fm[b"description"] = f.desc
            fm[b"flags"] = Set(SimpleString(n) for n in f.flag_names)
            funcs.append(fm)
        entry[b"functions"] = funcs
        if with_code:
            entry[b"library_code"] = lib.code
        out.append(entry)
    return out


def function_dump(ctx: Context, args: Args) -> Reply:
    return ctx.server.scripting.function_dump()


def function_restore(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    if len(argv) > 4:
        raise subcommand_syntax(argv[1], "function")
    policy = b"APPEND"
    if len(argv) == 4:
        policy = argv[3].upper()
        if policy not in (b"APPEND", b"REPLACE", b"FLUSH"):
            raise CommandError(errors.RESTORE_POLICY)
    ctx.server.scripting.function_restore(argv[2], policy)
    ctx.server.dirty += 1  # logged to the AOF, counted as a change
    return OK


def function_kill(ctx: Context, args: Args) -> Reply:
    ctx.server.scripting.kill(eval_mode=False)
    return OK


def function_stats(ctx: Context, args: Args) -> Reply:
    scripting = ctx.server.scripting
    run = scripting.running
    if run is not None and run.eval_mode:
        raise CommandError(errors.BUSY_EVAL)
    stats = Map()
    if run is None:
        stats[b"running_script"] = None
    else:
        running = Map()
        running[b"name"] = run.funcname
        running[b"command"] = list(run.argv)
        running[b"duration_ms"] = run.duration_ms()
        stats[b"running_script"] = running
    lua = Map()
    lua[b"libraries_count"] = len(scripting.libraries)
    lua[b"functions_count"] = scripting.function_count
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

COMMANDS: tuple[Command, ...] = (
    #   name                 arity  flags                    acl           keys  handler
    cmd("eval",                -3,  _EVAL_RW,                A.SCRIPTING,  _SCRIPT_KEYS, eval_,
        "Executes a server-side Lua script.", group="scripting", since="2.6.0",
        complexity=_D, syntax="script numkeys [key [key ...]] [arg [arg ...]]",
        get_flags=eval_flags),
    cmd("evalsha",             -3,  _EVAL_RW,                A.SCRIPTING,  _SCRIPT_KEYS, evalsha,
        "Executes a server-side Lua script by SHA1 digest.", group="scripting",
        since="2.6.0", complexity=_D,
        syntax="sha1 numkeys [key [key ...]] [arg [arg ...]]",
        get_flags=evalsha_flags),
    cmd("eval_ro",             -3,  _EVAL | READONLY,        A.SCRIPTING,  _SCRIPT_RO_KEYS, eval_ro,
        "Executes a read-only server-side Lua script.", group="scripting", since="7.0.0",
        complexity=_D, syntax="script numkeys [key [key ...]] [arg [arg ...]]",
        get_flags=eval_flags),
    cmd("evalsha_ro",          -3,  _EVAL | READONLY,        A.SCRIPTING,  _SCRIPT_RO_KEYS, evalsha_ro,
        "Executes a read-only server-side Lua script by SHA1 digest.", group="scripting",
        since="7.0.0", complexity=_D,
        syntax="sha1 numkeys [key [key ...]] [arg [arg ...]]",
        get_flags=evalsha_flags),
    cmd("fcall",               -3,  _EVAL_RW,                A.SCRIPTING,  _SCRIPT_KEYS, fcall,
        "Invokes a function.", group="scripting", since="7.0.0", complexity=_F,
        syntax="function numkeys [key [key ...]] [arg [arg ...]]",
        get_flags=fcall_flags),
    cmd("fcall_ro",            -3,  _EVAL | READONLY,        A.SCRIPTING,  _SCRIPT_RO_KEYS, fcall_ro,
        "Invokes a read-only function.", group="scripting", since="7.0.0", complexity=_F,
        syntax="function numkeys [key [key ...]] [arg [arg ...]]",
        get_flags=fcall_flags),
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
