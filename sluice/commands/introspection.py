"""COMMAND and its subcommands: the command table described to clients.

COMMAND / COMMAND INFO give Redis 7's ten-element record per command (name, arity, flags,
first/last/step, ACL categories, tips, key specs, subcommands); COMMAND DOCS the documentation
map (summary, since, group, complexity, doc flags, arguments from ``docs.parse_syntax``,
subcommands) that redis-cli turns into typing hints; COMMAND LIST the names, optionally
filtered; COMMAND GETKEYS / GETKEYSANDFLAGS the keys of a full command line, found with its key
specs exactly as Redis's ``getKeysUsingKeySpecs`` walks them.

Everything is derived from the ``Command`` rows; the records are built once per row and cached
(the rows do not change while the server runs).

Mirrors ``commandCommand``, ``addReplyCommandInfo``, ``addReplyCommandDocs``,
``addReplyCommandKeySpecs``, ``commandListCommand`` and ``getKeysSubcommandImpl`` (server.c,
db.c).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sluice.protocol import Map, Set, SimpleString
from sluice.storage.glob import stringmatch

from . import docs
from .args import Args, parse_int
from .cluster import migrate_get_keys
from .context import Command, Context, Reply
from .errors import (
    INVALID_ARGUMENTS,
    INVALID_COMMAND,
    INVALID_NUMBER_OF_ARGUMENTS,
    NO_KEY_ARGUMENTS,
    SYNTAX,
    CommandError,
)
from .spec import (
    CATEGORY_NAMES,
    FLAG_NAMES,
    LOADING,
    STALE,
    A,
    F,
    K,
    KeySpec,
    cmd,
)

# COMMAND INFO hides some flags on purpose, as Redis does.
_SHOWN_FLAGS = tuple((flag, SimpleString(name)) for flag, name in FLAG_NAMES
                     if flag != F.MAY_REPLICATE)
_KEY_FLAGS = tuple((flag, SimpleString(name)) for flag, name in (
    (K.RO, b"RO"), (K.RW, b"RW"), (K.OW, b"OW"), (K.RM, b"RM"), (K.ACCESS, b"access"),
    (K.UPDATE, b"update"), (K.INSERT, b"insert"), (K.DELETE, b"delete"),
    (K.NOT_KEY, b"not_key"), (K.INCOMPLETE, b"incomplete"),
    (K.VARIABLE_FLAGS, b"variable_flags"),
))
_CATEGORIES = tuple((cat, SimpleString(b"@" + name)) for cat, name in CATEGORY_NAMES)
_DOC_FLAGS = {name: SimpleString(name.encode()) for name in ("deprecated", "syscmd")}

_info_cache: dict[str, list[Any]] = {}
_docs_cache: dict[str, Map] = {}


# -- records ----------------------------------------------------------------------------------


def key_flags_reply(flags: int) -> Set:
    return Set(name for flag, name in _KEY_FLAGS if flags & flag)


def key_spec_reply(ks: KeySpec) -> Map:
    """One key spec: flags, begin_search and find_keys, as Redis 7 reports them."""
    if ks.index > 0:
        begin = Map({b"type": b"index", b"spec": Map({b"index": ks.index})})
    elif ks.keyword:
        begin = Map({b"type": b"keyword", b"spec": Map({b"keyword": ks.keyword.upper(),
                                                        b"startfrom": ks.startfrom})})
    else:
        begin = Map({b"type": b"unknown", b"spec": Map()})
    if not ks.index and not ks.keyword:
        find = Map({b"type": b"unknown", b"spec": Map()})
    elif ks.keynum:
        find = Map({b"type": b"keynum", b"spec": Map({
            b"keynumidx": ks.keynumidx, b"firstkey": ks.firstkey, b"keystep": ks.step})})
    else:
        find = Map({b"type": b"range", b"spec": Map({
            b"lastkey": ks.lastkey, b"keystep": ks.step, b"limit": ks.limit})})
    return Map({b"flags": key_flags_reply(ks.flags), b"begin_search": begin, b"find_keys": find})


def info_record(c: Command) -> list[Any]:
    """The ten-element COMMAND INFO record of ``c`` (cached)."""
    record = _info_cache.get(c.name)
    if record is not None:
        return record
    first, last, step = c.legacy_range()
    subs: Any = [info_record(s) for s in c.subcommands.values()] if c.subcommands else Set()
    record = [
        c.name_bytes,
        c.arity,
        Set(name for flag, name in _SHOWN_FLAGS if c.flags & flag),
        first,
        last,
        step,
        Set(name for cat, name in _CATEGORIES if c.categories & cat),
        Set(tip.encode() for tip in c.tips),
        Set(key_spec_reply(ks) for ks in c.keys),
        subs,
    ]
    _info_cache[c.name] = record
    return record


# Blocking commands whose timeout is whole milliseconds (an integer), not seconds.
_MS_TIMEOUTS = frozenset(("wait", "waitaof"))


def doc_args(c: Command) -> tuple[docs.Arg, ...]:
    return docs.parse_syntax(c.syntax, len(c.keys),
                             bool(c.flags & F.BLOCKING) and c.name not in _MS_TIMEOUTS)


def docs_record(c: Command) -> Map:
    """The COMMAND DOCS map of ``c`` (cached); fields in Redis's order."""
    record = _docs_cache.get(c.name)
    if record is not None:
        return record
    record = Map()
    if c.summary:
        record[b"summary"] = c.summary.encode()
    if c.since:
        record[b"since"] = c.since.encode()
    record[b"group"] = c.group.encode()
    if c.complexity:
        record[b"complexity"] = c.complexity.encode()
    if c.doc_flags:
        record[b"doc_flags"] = Set(_DOC_FLAGS[f] for f in c.doc_flags if f in _DOC_FLAGS)
    args = doc_args(c)
    if args:
        record[b"arguments"] = [docs.arg_reply(a) for a in args]
    if c.subcommands:
        record[b"subcommands"] = Map((s.name_bytes, docs_record(s))
                                     for s in c.subcommands.values())
    _docs_cache[c.name] = record
    return record


def find(table: Mapping[bytes, Command], name: bytes) -> Command | None:
    """A command by full name: ``get`` or ``client|kill`` (Redis's lookupCommandBySds)."""
    parts = name.lower().split(b"|")
    if len(parts) > 2:
        return None
    c = table.get(parts[0])
    if c is None or len(parts) == 1:
        return c
    return c.subcommands.get(parts[1])


def every_command(table: Mapping[bytes, Command]) -> list[Command]:
    """Every command and subcommand, parents first."""
    out: list[Command] = []
    for c in table.values():
        out.append(c)
        out.extend(c.subcommands.values())
    return out


# -- key extraction ---------------------------------------------------------------------------


def keys_from_specs(c: Command, argv: list[bytes], *, partial: bool = False
                    ) -> list[tuple[int, int]] | None:
    """Positions (and flags) of the keys in ``argv`` per ``c``'s key specs.

    None when a spec does not fit the arguments (a count that is not a number, a range past
    the end, an unknown or incomplete spec); with ``partial`` such specs are skipped instead.
    """
    argc = len(argv)
    found: list[tuple[int, int]] = []
    for ks in c.keys:
        if ks.flags & K.NOT_KEY:
            continue
        if ks.index > 0:
            first = ks.index
        elif ks.keyword:
            first = 0
            if ks.startfrom > 0:
                positions = range(ks.startfrom, argc)
            else:
                positions = range(argc + ks.startfrom, 0, -1)
            for i in positions:
                if 1 <= i < argc and argv[i].lower() == ks.keyword.lower():
                    first = i + 1
                    break
            if not first:
                continue  # keyword absent: this spec has no keys
        else:
            if partial:
                continue
            return None
        if ks.keynum:
            if first + ks.keynumidx >= argc:
                if partial:
                    continue
                return None
            count = _plain_int(argv[first + ks.keynumidx])
            if count is None or count < 0:
                if partial:
                    continue
                return None
            first += ks.firstkey
            last = first + (count - 1) * ks.step  # MSETEX: keys two apart (8.4's fix)
        elif ks.lastkey >= 0:
            last = first + ks.lastkey
        elif ks.limit:
            last = first + (argc - first) // ks.limit + ks.lastkey
        else:
            last = argc + ks.lastkey
        if last >= argc or last < first or first >= argc:
            if partial:
                continue
            return None
        found.extend((i, ks.flags) for i in range(first, last + 1, ks.step))
        if ks.flags & K.INCOMPLETE and not partial:
            return None
    return found


def _plain_int(raw: bytes) -> int | None:
    try:
        return parse_int(raw)
    except CommandError:
        return None


def _target(table: Mapping[bytes, Command], argv: list[bytes]) -> Command | None:
    c = table.get(argv[0].lower())
    if c is not None and c.subcommands and len(argv) >= 2:
        return c.subcommands.get(argv[1].lower())
    return c


_CONDITIONS = frozenset((b"ifeq", b"ifne", b"ifdeq", b"ifdne"))  # SET / DELEX (8.4)


def _set_key_flags(argv: list[bytes]) -> int:
    """SET: with GET the old value is read (RW, access); a condition (IFEQ ...) compares
    with it (RW); otherwise it is just overwritten (OW). Any word counts, as in Redis."""
    words = {a.lower() for a in argv[3:]}
    if b"get" in words:
        return K.RW | K.ACCESS | K.UPDATE
    if words & _CONDITIONS:
        return K.RW | K.UPDATE
    return K.OW | K.UPDATE


def _delex_key_flags(argv: list[bytes]) -> int:
    """DELEX: a condition reads the value (RW); without one the key is only removed (RM)."""
    if any(a.lower() in _CONDITIONS for a in argv[2:]):
        return K.RW | K.DELETE
    return K.RM | K.DELETE


def _bitfield_key_flags(argv: list[bytes]) -> int:
    """BITFIELD: only GET operations read; SET and INCRBY write."""
    if any(a.lower() in (b"set", b"incrby") for a in argv[2:]):
        return K.RW | K.ACCESS | K.UPDATE
    return K.RO | K.ACCESS


def _sort_keys(argv: list[bytes]) -> list[tuple[int, int]]:
    """``sortGetKeys``: the key, and the STORE destination (the last one given wins; the
    word after STORE is scanned as an option too)."""
    found = [(1, K.RO | K.ACCESS)]
    store = 0
    skip = {b"limit": 2, b"get": 1, b"by": 1}
    i = 2
    while i < len(argv):
        word = argv[i].lower()
        if word in skip:
            i += skip[word]
        elif word == b"store" and i + 1 < len(argv):
            store = i + 1
        i += 1
    if store:
        found.append((store, K.OW | K.UPDATE))
    return found


# Redis's getkeys_proc of the commands whose key specs cannot say where all keys are.
_KEY_FINDERS = {"sort": _sort_keys, "migrate": migrate_get_keys}

# Commands whose key specs say ``variable_flags``: the real flags depend on the arguments, as
# Redis's setGetKeys / bitfieldGetKeys work them out.
_VARIABLE_FLAGS = {"set": _set_key_flags, "bitfield": _bitfield_key_flags,
                   "delex": _delex_key_flags}


def get_keys(table: Mapping[bytes, Command], argv: list[bytes]) -> list[tuple[int, int]]:
    """COMMAND GETKEYS: the keys of the full command ``argv`` (errors worded as Redis)."""
    c = _target(table, argv)
    if c is None:
        raise CommandError(INVALID_COMMAND)
    if not any(not ks.flags & K.NOT_KEY for ks in c.keys):
        raise CommandError(NO_KEY_ARGUMENTS)
    argc = len(argv)
    if (c.arity > 0 and c.arity != argc) or argc < -c.arity:
        raise CommandError(INVALID_NUMBER_OF_ARGUMENTS)
    keys = keys_from_specs(c, argv)
    if keys is None and any(not (ks.index or ks.keyword) or ks.flags & K.INCOMPLETE
                            for ks in c.keys):
        # Redis falls back to the command's own key finder here; without one, the specs
        # that did match are the best we can do.
        finder = _KEY_FINDERS.get(c.name)
        keys = finder(argv) if finder is not None else keys_from_specs(c, argv, partial=True)
    if not keys:  # none found (migrateGetKeys can find none): as Redis's commandGetKeys
        if c.flags & F.NO_MANDATORY_KEYS:
            return []
        raise CommandError(INVALID_ARGUMENTS)
    flags_of = _VARIABLE_FLAGS.get(c.name)
    if flags_of is not None and any(ks.flags & K.VARIABLE_FLAGS for ks in c.keys):
        real = flags_of(argv)
        keys = [(pos, real) for pos, _ in keys]
    return keys


# -- the commands -----------------------------------------------------------------------------

def command(ctx: Context, args: Args) -> Reply:
    return [info_record(c) for c in ctx.server.table.values()]


def command_count(ctx: Context, args: Args) -> Reply:
    return len(ctx.server.table)


def command_info(ctx: Context, args: Args) -> Reply:
    table = ctx.server.table
    if not args:
        return [info_record(c) for c in table.values()]
    out = []
    for name in args.rest():
        c = find(table, name)
        out.append(None if c is None else info_record(c))
    return out


def command_docs(ctx: Context, args: Args) -> Reply:
    table = ctx.server.table
    if not args:
        return Map((c.name_bytes, docs_record(c)) for c in table.values())
    out = Map()
    for name in args.rest():
        c = find(table, name)
        if c is not None:
            out[c.name_bytes] = docs_record(c)
    return out


def command_list(ctx: Context, args: Args) -> Reply:
    commands = every_command(ctx.server.table)
    if not args:
        return [c.name_bytes for c in commands]
    if len(args) != 3 or args.next_upper() != b"FILTERBY":
        raise CommandError(SYNTAX)
    kind = args.next_upper()
    value = args.next()
    if kind == b"MODULE":
        return []  # no modules
    if kind == b"ACLCAT":
        wanted = value.lower()
        cat = next((c for c, name in CATEGORY_NAMES if name == wanted), A.NONE)
        if not cat:
            return []
        return [c.name_bytes for c in commands if c.categories & cat]
    if kind == b"PATTERN":
        return [c.name_bytes for c in commands if stringmatch(value, c.name_bytes, nocase=True)]
    raise CommandError(SYNTAX)


def command_getkeys(ctx: Context, args: Args) -> Reply:
    argv = args.rest()
    return [argv[pos] for pos, _ in get_keys(ctx.server.table, argv)]


def command_getkeysandflags(ctx: Context, args: Args) -> Reply:
    argv = args.rest()
    return [[argv[pos], key_flags_reply(flags)] for pos, flags in get_keys(ctx.server.table, argv)]


def help_reply(name: str, lines: tuple[str, ...]) -> list[SimpleString]:
    """A HELP reply: a heading, the given lines, and the HELP entry itself (Redis's shape)."""
    head = f"{name} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    tail = ("HELP", "    Print this help.")
    return [SimpleString(line.encode()) for line in (head, *lines, *tail)]


_COMMAND_HELP = (
    "(no subcommand)",
    "    Describe every command of this server.",
    "COUNT",
    "    How many commands this server has.",
    "LIST [FILTERBY <MODULE name | ACLCAT category | PATTERN pattern>]",
    "    The names of the commands and subcommands, optionally filtered.",
    "INFO [<command-name> ...]",
    "    Describe the named commands (all of them when none is named).",
    "DOCS [<command-name> ...]",
    "    Documentation of the named commands (all of them when none is named).",
    "GETKEYS <full-command>",
    "    The keys a full command line would access.",
    "GETKEYSANDFLAGS <full-command>",
    "    The keys a full command line would access, with their access flags.",
)


def command_help(ctx: Context, args: Args) -> Reply:
    return help_reply("COMMAND", _COMMAND_HELP)


_NDO = ("nondeterministic_output_order",)
_T = LOADING | STALE
COMMANDS: tuple[Command, ...] = (
    #   name                      arity  flags  acl           keys  handler
    cmd("command",                 -1,   _T,    A.CONNECTION, None, command,
        "Describes every command of the server.", group="server", since="2.8.13",
        complexity="O(N) where N is the total number of Redis commands", tips=_NDO),
    cmd("command|count",            2,   _T,    A.CONNECTION, None, command_count,
        "Counts the commands of the server.", group="server", since="2.8.13"),
    cmd("command|docs",            -2,   _T,    A.CONNECTION, None, command_docs,
        "Documents the named commands, or all of them.",
        group="server", since="7.0.0", tips=_NDO,
        complexity="O(N) where N is the number of commands to look up",
        syntax="[command-name [command-name ...]]"),
    cmd("command|getkeys",         -3,   _T,    A.CONNECTION, None, command_getkeys,
        "Finds the keys in a full command line.", group="server",
        since="2.8.13", complexity="O(N) where N is the number of arguments to the command",
        syntax="command [arg [arg ...]]"),
    cmd("command|getkeysandflags", -3,   _T,    A.CONNECTION, None, command_getkeysandflags,
        "Finds the keys in a full command line, with how each is accessed.", group="server",
        since="7.0.0", complexity="O(N) where N is the number of arguments to the command",
        syntax="command [arg [arg ...]]"),
    cmd("command|help",             2,   _T,    A.CONNECTION, None, command_help,
        "Explains the COMMAND subcommands.", group="server",
        since="5.0.0"),
    cmd("command|info",            -2,   _T,    A.CONNECTION, None, command_info,
        "Describes the named commands, or all of them.", group="server",
        since="2.8.13", tips=_NDO,
        complexity="O(N) where N is the number of commands to look up",
        syntax="[command-name [command-name ...]]"),
    cmd("command|list",            -2,   _T,    A.CONNECTION, None, command_list,
        "Lists command names, optionally filtered.", group="server", since="7.0.0", tips=_NDO,
        complexity="O(N) where N is the total number of Redis commands",
        syntax="[FILTERBY <MODULE module-name | ACLCAT category | PATTERN pattern>]"),
)
