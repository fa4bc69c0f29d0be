"""ACL commands: SETUSER, GETUSER, DELUSER, LIST, USERS, WHOAMI, CAT, DRYRUN, GENPASS, LOG,
LOAD, SAVE, HELP.

Mirrors Redis's ``aclCommand`` (acl.c), with the 7.2+ replies (the newest documented): ACL
LOG entries carry ``entry-id``, ``timestamp-created`` and ``timestamp-last-updated``, and
DRYRUN names the user in its denial. The state lives in ``ctx.server.acl_manager`` (an
``Acl`` of ``context.py``, ``sluice/server/acl.py``); handlers only parse and shape replies.
"""

from __future__ import annotations

import secrets
from typing import Any

from sluice.protocol import OK, Double, Map, Set, SimpleString

from .args import Args, has_spaces, parse_int
from .context import Acl, AclSelector, Command, Context, Reply, user_key
from .errors import (
    ACL_DEFAULT_UNDELETABLE,
    ACL_GENPASS_BITS,
    ACL_NO_FILE,
    ACL_OK,
    ACL_SAVE_FAILED,
    ACL_USERNAME_SPACES,
    DENIED_CMD,
    CommandError,
    denial_message,
    wrong_arity,
)
from .spec import ADMIN, CATEGORIES, LOADING, NONE, NOSCRIPT, STALE, A, cmd

_GENPASS_MAX_BITS = 4096


def _mgr(ctx: Context) -> Acl[Context]:
    return ctx.server.acl_manager


def _redact(ctx: Context, first: int) -> None:
    """``redactClientCommandArgument``: rules and user names never reach SLOWLOG (the list
    is the one ``call`` logs, so it is changed in place once the handler has parsed it)."""
    argv = ctx.argv
    for i in range(first, len(argv)):
        argv[i] = b"(redacted)"


def acl_setuser(ctx: Context, args: Args) -> Reply:
    name = args.next()
    rules = args.rest()
    _redact(ctx, 2)
    if has_spaces(name):
        raise CommandError(ACL_USERNAME_SPACES)
    error = _mgr(ctx).setuser(name, rules)
    if error is not None:  # addReplyErrorSdsSafe: one line, whatever the rule contained
        raise CommandError(b"ERR " + error.replace(b"\r", b" ").replace(b"\n", b" "))
    return OK


def _selector_fields(sel: AclSelector) -> list[Any]:
    return [b"commands", sel.describe_commands(), b"keys", sel.describe_keys(),
            b"channels", sel.describe_channels()]


def acl_getuser(ctx: Context, args: Args) -> Reply:
    user = _mgr(ctx).users.get(user_key(args.next()))
    _redact(ctx, 2)
    if user is None:
        return None
    fields: list[Any] = [b"flags", Set(user.flag_names()),
                         b"passwords", [h.encode() for h in user.passwords]]
    fields += _selector_fields(user.root)
    fields += [b"selectors", [_pairs(_selector_fields(s)) for s in user.selectors[1:]]]
    return _pairs(fields)


def _pairs(flat: list[Any]) -> Map:
    return Map(zip(flat[::2], flat[1::2], strict=True))


def acl_deluser(ctx: Context, args: Args) -> Reply:
    names = args.rest()
    _redact(ctx, 2)
    if b"default" in names:
        raise CommandError(ACL_DEFAULT_UNDELETABLE)
    return _mgr(ctx).deluser(names, ctx)


def acl_list(ctx: Context, args: Args) -> Reply:
    return [b"user " + u.name + b" " + u.describe() for u in _mgr(ctx).sorted_users()]


def config_user_lines(ctx: Context) -> list[str] | None:
    """The ``user`` lines CONFIG REWRITE writes: ACL LIST's, or None when an aclfile keeps
    the users (its lines are then dropped from the config file, as Redis does)."""
    if ctx.server.config.aclfile:
        return None
    return [(b"user " + u.name + b" " + u.describe()).decode(errors="surrogateescape")
            for u in _mgr(ctx).sorted_users()]


def acl_users(ctx: Context, args: Args) -> Reply:
    return [u.name for u in _mgr(ctx).sorted_users()]


def acl_whoami(ctx: Context, args: Args) -> Reply:
    return ctx.user.encode("utf-8", "surrogateescape")


def acl_cat(ctx: Context, args: Args) -> Reply:
    if not args:
        return list(CATEGORIES)
    if len(args) > 1:
        raise _subcommand_syntax(ctx.argv[1])
    raw = args.next()
    cat = CATEGORIES.get(raw.lower())
    if cat is None:
        raise CommandError(b"ERR Unknown category '" + raw[:128] + b"'")
    return [c.name.encode() for c in _mgr(ctx).index.in_category(cat)]


def acl_dryrun(ctx: Context, args: Args) -> Reply:
    name = args.next()
    user = _mgr(ctx).users.get(user_key(name))
    if user is None:
        raise CommandError(b"ERR User '" + name + b"' not found")
    argv = args.rest()
    table = ctx.server.table  # the live table: DRYRUN names commands as clients send them
    target = table.get(argv[0].lower())
    if target is not None and target.subcommands and len(argv) >= 2:
        target = target.subcommands.get(argv[1].lower())
    if target is None:
        raise CommandError(b"ERR Command '" + argv[0] + b"' not found")
    n = len(argv)
    if (target.arity > 0 and n != target.arity) or n < -target.arity:
        raise CommandError(wrong_arity(target.name).message)
    res, idx = user.check(target, argv)
    if res == ACL_OK:
        return OK
    # The verbose form, a bulk string (not an error), and without the NOPERM code.
    obj = argv[idx] if res != DENIED_CMD else None
    return denial_message(res, user.name, target.name, obj)[len(b"NOPERM "):]


def acl_genpass(ctx: Context, args: Args) -> Reply:
    bits = 256
    if len(args) > 1:
        raise _subcommand_syntax(ctx.argv[1])
    if args:
        bits = parse_int(args.next())
    if bits <= 0 or bits > _GENPASS_MAX_BITS:
        raise CommandError(ACL_GENPASS_BITS)
    chars = (bits + 3) // 4
    return secrets.token_hex((chars + 1) // 2)[:chars].encode()


def acl_log(ctx: Context, args: Args) -> Reply:
    mgr = _mgr(ctx)
    count = 10
    if args:
        raw = args.next()
        if len(args):
            raise _subcommand_syntax(ctx.argv[1])
        if raw.lower() == b"reset":
            mgr.clear_log()
            return OK
        count = max(parse_int(raw), 0)
    now = ctx.now_ms()
    out = []
    for e in mgr.log[:count]:
        out.append(Map({
            b"count": e.count,
            b"reason": _REASONS[e.reason],
            b"context": e.context,
            b"object": e.object,
            b"username": e.username,
            b"age-seconds": Double((now - e.ctime) / 1000),
            b"client-info": e.cinfo,
            b"entry-id": e.entry_id,
            b"timestamp-created": e.created,
            b"timestamp-last-updated": e.ctime,
        }))
    return out


_REASONS = {1: b"command", 2: b"key", 4: b"channel", 3: b"auth"}


def _subcommand_syntax(sub: bytes) -> CommandError:
    """``addReplySubcommandSyntaxError`` (the subcommand as typed)."""
    return CommandError(b"ERR unknown subcommand or wrong number of arguments for '"
                        + sub[:128] + b"'. Try ACL HELP.")


def acl_load(ctx: Context, args: Args) -> Reply:
    if not ctx.server.config.aclfile:
        raise CommandError(ACL_NO_FILE)
    errors = _mgr(ctx).load_file(ctx)
    if errors is not None:
        raise CommandError(b"ERR " + errors.encode("utf-8", "surrogateescape"))
    return OK


def acl_save(ctx: Context, args: Args) -> Reply:
    if not ctx.server.config.aclfile:
        raise CommandError(ACL_NO_FILE)
    if not _mgr(ctx).save_file():
        raise CommandError(ACL_SAVE_FAILED)
    return OK


_HELP = (
    "CAT [<category>]",
    "    List all commands that belong to <category>, or all command categories",
    "    when no category is specified.",
    "DELUSER <username> [<username> ...]",
    "    Delete a list of users.",
    "DRYRUN <username> <command> [<arg> ...]",
    "    Returns whether the user can execute the given command without executing the command.",
    "GETUSER <username>",
    "    Get the user's details.",
    "GENPASS [<bits>]",
    "    Generate a secure 256-bit user password. The optional `bits` argument can",
    "    be used to specify a different size.",
    "LIST",
    "    Show users details in config file format.",
    "LOAD",
    "    Reload users from the ACL file.",
    "LOG [<count> | RESET]",
    "    Show the ACL log entries.",
    "SAVE",
    "    Save the current config to the ACL file.",
    "SETUSER <username> <attribute> [<attribute> ...]",
    "    Create or modify a user with the specified attributes.",
    "USERS",
    "    List all the registered usernames.",
    "WHOAMI",
    "    Return the current connection username.",
)


def acl_help(ctx: Context, args: Args) -> Reply:
    lines = ["ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", *_HELP,
             "HELP", "    Print this help."]
    return [SimpleString(line.encode()) for line in lines]


_ADM = ADMIN | NOSCRIPT | LOADING | STALE
_PLAIN = NOSCRIPT | LOADING | STALE
_N = "O(N). Where N is the number of configured users."

COMMANDS: tuple[Command, ...] = (
    #   name           arity  flags            acl     keys  handler
    cmd("acl",           -2,  NONE,            A.NONE, None, None,
        "A container for Access List Control commands.", group="server", since="6.0.0",
        complexity="Depends on subcommand."),
    cmd("acl|cat",       -2,  _PLAIN,          A.NONE, None, acl_cat,
        "Lists the ACL categories, or the commands inside a category.", group="server",
        since="6.0.0", complexity="O(1) since the categories and commands are a fixed set.",
        syntax="[categoryname]"),
    cmd("acl|deluser",   -3,  _ADM,            A.NONE, None, acl_deluser,
        "Deletes ACL users, and terminates their connections.", group="server", since="6.0.0",
        complexity="O(1) amortized time considering the typical user.",
        syntax="username [username ...]"),
    cmd("acl|dryrun",    -4,  _ADM,            A.NONE, None, acl_dryrun,
        "Simulates the execution of a command by a user, without executing the command.",
        group="server", since="7.0.0", complexity="O(1).",
        syntax="username command [arg [arg ...]]"),
    cmd("acl|genpass",   -2,  _PLAIN,          A.NONE, None, acl_genpass,
        "Generates a pseudorandom, secure password that can be used to identify ACL users.",
        group="server", since="6.0.0", syntax="[bits]"),
    cmd("acl|getuser",    3,  _ADM,            A.NONE, None, acl_getuser,
        "Lists the ACL rules of a user.", group="server", since="6.0.0",
        complexity="O(N). Where N is the number of password, command and pattern rules that "
        "the user has.", syntax="username"),
    cmd("acl|help",       2,  LOADING | STALE, A.NONE, None, acl_help,
        "Returns helpful text about the different subcommands.", group="server",
        since="6.0.0"),
    cmd("acl|list",       2,  _ADM,            A.NONE, None, acl_list,
        "Dumps the effective rules in ACL file format.", group="server", since="6.0.0",
        complexity=_N),
    cmd("acl|load",       2,  _ADM,            A.NONE, None, acl_load,
        "Reloads the rules from the configured ACL file.", group="server", since="6.0.0",
        complexity=_N),
    cmd("acl|log",       -2,  _ADM,            A.NONE, None, acl_log,
        "Lists recent security events generated due to ACL rules.", group="server",
        since="6.0.0", complexity="O(N) with N being the number of entries shown.",
        syntax="[count | RESET]"),
    cmd("acl|save",       2,  _ADM,            A.NONE, None, acl_save,
        "Saves the effective ACL rules in the configured ACL file.", group="server",
        since="6.0.0", complexity=_N),
    cmd("acl|setuser",   -3,  _ADM,            A.NONE, None, acl_setuser,
        "Creates and modifies an ACL user and its rules.", group="server", since="6.0.0",
        complexity="O(N). Where N is the number of rules provided.",
        syntax="username [rule [rule ...]]"),
    cmd("acl|users",      2,  _ADM,            A.NONE, None, acl_users,
        "Lists all ACL users.", group="server", since="6.0.0", complexity=_N),
    cmd("acl|whoami",     2,  _PLAIN,          A.NONE, None, acl_whoami,
        "Returns the authenticated username of the current connection.", group="server",
        since="6.0.0"),
)
