"""The scripting commands while Sluice has no scripting engine.

EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, FCALL, FCALL_RO and every SCRIPT / FUNCTION subcommand
answer ``errors.SCRIPTING_UNAVAILABLE``; SCRIPT FLUSH and FUNCTION FLUSH empty the (always
empty) script cache and library set and reply OK, as Redis does, so tools that flush
everything between tests keep working. The rows carry Redis 7's arity, flags and key specs, so
COMMAND INFO, COMMAND GETKEYS and ACL rules already treat these commands as Redis does.

Mirrors the command records of Redis's ``eval.c`` and ``functions.c``.
"""

from __future__ import annotations

from sluice.protocol import OK

from .args import Args
from .context import Command, Context, Reply
from .errors import (
    FUNCTION_FLUSH_MODE,
    SCRIPT_FLUSH_MODE,
    SCRIPTING_UNAVAILABLE,
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


def scripting_unavailable(ctx: Context, args: Args) -> Reply:
    raise CommandError(SCRIPTING_UNAVAILABLE)


def _flush_mode(args: Args, error: str) -> None:
    if args:
        mode = args.next_upper()
        if mode not in (b"ASYNC", b"SYNC") or args:
            raise CommandError(error)


def script_flush(ctx: Context, args: Args) -> Reply:
    _flush_mode(args, SCRIPT_FLUSH_MODE)
    return OK  # the script cache is always empty


def function_flush(ctx: Context, args: Args) -> Reply:
    if len(args) > 1:
        raise subcommand_syntax(ctx.argv[1], "function")
    _flush_mode(args, FUNCTION_FLUSH_MODE)
    return OK  # there are no libraries to delete


_SCRIPT_KEYS = keys_counted(2, RW | K.ACCESS | K.UPDATE)
_SCRIPT_RO_KEYS = keys_counted(2, RO | K.ACCESS)
_EVAL = NOSCRIPT | SKIP_MONITOR | NO_MANDATORY_KEYS | STALE
_EVAL_RW = _EVAL | MAY_REPLICATE
_ALL_NODES_OK = ("request_policy:all_nodes", "response_policy:all_succeeded")
_ALL_SHARDS_OK = ("request_policy:all_shards", "response_policy:all_succeeded")
_U = "is not available in Sluice yet: the reply is an error"

COMMANDS: tuple[Command, ...] = (
    #   name                 arity  flags                    acl           keys  handler
    cmd("eval",                -3,  _EVAL_RW,                A.SCRIPTING,  _SCRIPT_KEYS, scripting_unavailable,
        f"Runs a Lua script (scripting {_U}).", group="scripting", since="2.6.0",
        complexity="Depends on the script that is executed.",
        syntax="script numkeys [key [key ...]] [arg [arg ...]]"),
    cmd("evalsha",             -3,  _EVAL_RW,                A.SCRIPTING,  _SCRIPT_KEYS, scripting_unavailable,
        f"Runs a cached Lua script (scripting {_U}).", group="scripting", since="2.6.0",
        complexity="Depends on the script that is executed.",
        syntax="sha1 numkeys [key [key ...]] [arg [arg ...]]"),
    cmd("eval_ro",             -3,  _EVAL | READONLY,        A.SCRIPTING,  _SCRIPT_RO_KEYS, scripting_unavailable,
        f"Runs a read-only Lua script (scripting {_U}).", group="scripting", since="7.0.0",
        complexity="Depends on the script that is executed.",
        syntax="script numkeys [key [key ...]] [arg [arg ...]]"),
    cmd("evalsha_ro",          -3,  _EVAL | READONLY,        A.SCRIPTING,  _SCRIPT_RO_KEYS, scripting_unavailable,
        f"Runs a cached read-only Lua script (scripting {_U}).", group="scripting",
        since="7.0.0", complexity="Depends on the script that is executed.",
        syntax="sha1 numkeys [key [key ...]] [arg [arg ...]]"),
    cmd("fcall",               -3,  _EVAL_RW,                A.SCRIPTING,  _SCRIPT_KEYS, scripting_unavailable,
        f"Calls a function (functions {_U}).", group="scripting", since="7.0.0",
        complexity="Depends on the function that is executed.",
        syntax="function numkeys [key [key ...]] [arg [arg ...]]"),
    cmd("fcall_ro",            -3,  _EVAL | READONLY,        A.SCRIPTING,  _SCRIPT_RO_KEYS, scripting_unavailable,
        f"Calls a read-only function (functions {_U}).", group="scripting", since="7.0.0",
        complexity="Depends on the function that is executed.",
        syntax="function numkeys [key [key ...]] [arg [arg ...]]"),
    cmd("script",              -2,  NONE,                    A.NONE,       None, None,
        "Groups the commands that manage the Lua script cache.", group="scripting",
        since="2.6.0", complexity="Depends on subcommand."),
    cmd("script|debug",         3,  NOSCRIPT,                A.SCRIPTING,  None, scripting_unavailable,
        f"Sets the debug mode of scripts (scripting {_U}).", group="scripting",
        since="3.2.0", syntax="<YES | SYNC | NO>"),
    cmd("script|exists",       -3,  NOSCRIPT,                A.SCRIPTING,  None, scripting_unavailable,
        f"Tells which scripts are cached (scripting {_U}).", group="scripting",
        since="2.6.0", complexity="O(N) with N being the number of scripts to check",
        syntax="sha1 [sha1 ...]", tips=("request_policy:all_shards",
                                        "response_policy:agg_logical_and")),
    cmd("script|flush",        -2,  NOSCRIPT,                A.SCRIPTING,  None, script_flush,
        "Empties the script cache (always empty in Sluice).", group="scripting",
        since="2.6.0", complexity="O(N) with N being the number of scripts in cache",
        syntax="[ASYNC | SYNC]", tips=_ALL_NODES_OK),
    cmd("script|help",          2,  LOADING | STALE,         A.SCRIPTING,  None, scripting_unavailable,
        f"Explains the SCRIPT subcommands (scripting {_U}).", group="scripting",
        since="5.0.0"),
    cmd("script|kill",          2,  NOSCRIPT | ALLOW_BUSY,   A.SCRIPTING,  None, scripting_unavailable,
        f"Stops the running script (scripting {_U}).", group="scripting", since="2.6.0",
        tips=("request_policy:all_shards", "response_policy:one_succeeded")),
    cmd("script|load",          3,  NOSCRIPT | STALE,        A.SCRIPTING,  None, scripting_unavailable,
        f"Caches a Lua script (scripting {_U}).", group="scripting", since="2.6.0",
        complexity="O(N) with N being the length in bytes of the script body.",
        syntax="script", tips=_ALL_NODES_OK),
    cmd("function",            -2,  NONE,                    A.NONE,       None, None,
        "Groups the commands that manage function libraries.", group="scripting",
        since="7.0.0", complexity="Depends on subcommand."),
    cmd("function|delete",      3,  WRITE | NOSCRIPT,        A.SCRIPTING,  None, scripting_unavailable,
        f"Deletes a library (functions {_U}).", group="scripting", since="7.0.0",
        syntax="library-name", tips=_ALL_SHARDS_OK),
    cmd("function|dump",        2,  NOSCRIPT,                A.SCRIPTING,  None, scripting_unavailable,
        f"Serializes the libraries (functions {_U}).", group="scripting", since="7.0.0",
        complexity="O(N) where N is the number of functions"),
    cmd("function|flush",      -2,  WRITE | NOSCRIPT,        A.SCRIPTING,  None, function_flush,
        "Deletes every library (there are none in Sluice).", group="scripting",
        since="7.0.0", complexity="O(N) where N is the number of functions deleted",
        syntax="[ASYNC | SYNC]", tips=_ALL_SHARDS_OK),
    cmd("function|help",        2,  LOADING | STALE,         A.SCRIPTING,  None, scripting_unavailable,
        f"Explains the FUNCTION subcommands (functions {_U}).", group="scripting",
        since="7.0.0"),
    cmd("function|kill",        2,  NOSCRIPT | ALLOW_BUSY,   A.SCRIPTING,  None, scripting_unavailable,
        f"Stops the running function (functions {_U}).", group="scripting", since="7.0.0",
        tips=("request_policy:all_shards", "response_policy:one_succeeded")),
    cmd("function|list",       -2,  NOSCRIPT,                A.SCRIPTING,  None, scripting_unavailable,
        f"Lists the libraries (functions {_U}).", group="scripting", since="7.0.0",
        complexity="O(N) where N is the number of functions",
        syntax="[LIBRARYNAME library-name-pattern] [WITHCODE]",
        tips=("nondeterministic_output_order",)),
    cmd("function|load",       -3,  WRITE | DENYOOM | NOSCRIPT, A.SCRIPTING, None, scripting_unavailable,
        f"Loads a library (functions {_U}).", group="scripting", since="7.0.0",
        complexity="O(1) (considering compilation time is redundant)",
        syntax="[REPLACE] function-code", tips=_ALL_SHARDS_OK),
    cmd("function|restore",    -3,  WRITE | DENYOOM | NOSCRIPT, A.SCRIPTING, None, scripting_unavailable,
        f"Restores serialized libraries (functions {_U}).", group="scripting",
        since="7.0.0", complexity="O(N) where N is the number of functions on the payload",
        syntax="serialized-value [FLUSH | APPEND | REPLACE]", tips=_ALL_SHARDS_OK),
    cmd("function|stats",       2,  NOSCRIPT | ALLOW_BUSY,   A.SCRIPTING,  None, scripting_unavailable,
        f"Describes the running function (functions {_U}).", group="scripting",
        since="7.0.0", tips=("nondeterministic_output", "request_policy:all_shards",
                             "response_policy:special")),
)
