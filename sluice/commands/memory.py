"""MEMORY USAGE and MEMORY HELP (Redis's ``object.c``: ``memoryCommand``,
``objectComputeSize``).

MEMORY USAGE estimates the bytes a key and its value take in this process: the key's
``bytes`` object and its share of the keyspace's dicts, plus the value's objects. Like Redis,
a collection is measured on a sample of ``SAMPLES`` elements (default 5, 0 for all) and
scaled to its size. The numbers are Python's (``sys.getsizeof``), not Redis's: tools use
them to compare keys with each other, and Redis's own test suite only checks that they are
positive.

Not implemented: MEMORY DOCTOR, STATS, MALLOC-STATS, PURGE (they answer as unknown
subcommands).
"""

from __future__ import annotations

import itertools
import sys
from typing import Any

from sluice.protocol import SimpleString
from sluice.storage.hashes import Hash, PackedFields
from sluice.storage.rawstring import RawString

from .args import Args
from .context import Command, Context, Reply
from .errors import SYNTAX, CommandError
from .spec import LOADING, READONLY, RO, STALE, A, cmd, key_at

# What a key costs the keyspace besides its own objects: its entries in the database's
# dicts (data, access time, scan order).
_KEY_OVERHEAD = 200

_HELP = [SimpleString(line) for line in (
    b"MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    b"USAGE <key> [SAMPLES <count>]",
    b"    Return memory in bytes used by <key> and its value. Nested values are",
    b"    sampled up to <count> times (default: 5, 0 means sample all).",
    b"HELP",
    b"    Print this help.",
)]


def _sampled(items: Any, n: int, samples: int) -> int:
    """The size of ``n`` elements estimated from the first ``samples`` (all when 0)."""
    if n == 0:
        return 0
    take = n if samples == 0 else min(samples, n)
    total = 0
    for item in itertools.islice(items, take):
        if isinstance(item, tuple):
            total += sum(sys.getsizeof(x) for x in item)
        else:
            total += sys.getsizeof(item)
    return total * n // take


def value_size(value: Any, samples: int) -> int:
    if type(value) is bytes:
        return sys.getsizeof(value)
    if type(value) is RawString:  # a string edited in place: its buffer
        return sys.getsizeof(value) + sys.getsizeof(value.buf)
    if type(value) is Hash:
        fields = value.d
        size = sys.getsizeof(value) + sys.getsizeof(fields)
        if type(fields) is PackedFields:  # the strings are in one bytes: counted whole
            return size + sys.getsizeof(fields.blob)
        if value.ttl:
            size += sys.getsizeof(value.ttl) + 32 * len(value.ttl)
        return size + _sampled(iter(value.d.items()), len(value.d), samples)
    try:
        n = len(value)
        return sys.getsizeof(value) + _sampled(iter(value), n, samples)
    except TypeError:
        return sys.getsizeof(value)


def memory_usage(ctx: Context, args: Args) -> Reply:
    key = args.next_key()
    samples = 5
    while args:
        if args.next_upper() == b"SAMPLES" and args:
            samples = args.next_int()
            if samples < 0:
                raise CommandError(SYNTAX)
        else:
            raise CommandError(SYNTAX)
    value = ctx.db.peek(key)
    if value is None:
        return None
    return _KEY_OVERHEAD + sys.getsizeof(key) + value_size(value, samples)


def memory_help(ctx: Context, args: Args) -> Reply:
    return _HELP


COMMANDS: tuple[Command, ...] = (
    #   name           arity  flags             acl     keys            handler
    cmd("memory",         -2, 0,                A.NONE, None,           None,
        "A container for memory diagnostics commands.", since="4.0.0", group="server",
        complexity="Depends on subcommand.", syntax="<subcommand> [<arg> ...]"),
    cmd("memory|usage",   -3, READONLY,         A.NONE, key_at(2, RO),  memory_usage,
        "Estimates the memory usage of a key.", since="4.0.0", group="server",
        complexity="O(N) where N is the number of samples.", syntax="key [SAMPLES count]"),
    cmd("memory|help",     2, LOADING | STALE,  A.NONE, None,           memory_help,
        "Returns helpful text about the different subcommands.", since="4.0.0",
        group="server"),
)
