"""List commands, blocking ones included (Redis's ``t_list.c``).

Handlers parse and build replies; the data work is on ``storage.lists.ListValue``. Argument
checks run in Redis's order, which decides which error wins (LINDEX looks the key up before
parsing the index; LRANGE parses first), and a list emptied by a command is deleted. Commands
that add elements pass ``list-max-listpack-size`` to the list (it may become a quicklist);
those that remove some let a list they leave non-empty become a listpack again
(``_removed_from``), at the points Redis 8.6 checks.

Blocking commands (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP) try once and otherwise return
``ctx.block(keys, timeout, on_timeout)``; when a key is pushed to, the blocking manager runs
the handler again (Redis 7.2's reprocessing, with 7.0's replies). Inside MULTI they never
block: ``ctx.block`` answers with the timeout reply at once. What a served blocking command
propagates to the AOF is its non-blocking equivalent (BLPOP -> LPOP key, BLMPOP -> LPOP key
count, BLMOVE -> LMOVE, BRPOPLPUSH -> RPOPLPUSH), via ``ctx.rewrite_argv``, as Redis's
``rewriteClientCommandVector`` / ``alsoPropagate`` do.

Timeouts are seconds as a long double, converted to ms as Redis does (``ceill(t * 1000)`` in
80-bit arithmetic, so ``0.501`` waits 502 ms exactly as redis-server does); see
``parse_timeout``.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

from sluice.protocol import NULL_ARRAY, OK
from sluice.storage.keyspace import WrongTypeError
from sluice.storage.lists import ListValue, popped_bytes

from .args import Args, parse_int, parse_range_long
from .context import Command, Context, Reply, command_name
from .errors import (
    INDEX_OUT_OF_RANGE,
    LIST_COUNT_NOT_POSITIVE,
    LMPOP_COUNT,
    LMPOP_NUMKEYS,
    LPOS_COUNT_NEGATIVE,
    LPOS_MAXLEN_NEGATIVE,
    LPOS_RANK_RANGE,
    LPOS_RANK_ZERO,
    NO_SUCH_KEY,
    NOT_POSITIVE_TIMEOUT,
    SYNTAX,
    TIMEOUT_NOT_FLOAT,
    TIMEOUT_OUT_OF_RANGE,
    CommandError,
    wrong_arity,
)
from .spec import (
    ACCESS,
    BLOCKING,
    DELETE,
    DENYOOM,
    FAST,
    INSERT,
    READONLY,
    RO,
    RW,
    UPDATE,
    WRITE,
    A,
    cmd,
    key_at,
    keys_counted,
)

LLONG_MAX = 2**63 - 1

# -- timeouts ------------------------------------------------------------------------------

_DECIMAL = re.compile(rb"([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?\Z")
_HEX = re.compile(rb"[+-]?0[xX]")
_INFINITY = {b"inf": math.inf, b"+inf": math.inf, b"-inf": -math.inf, b"infinity": math.inf,
             b"+infinity": math.inf, b"-infinity": -math.inf}
_LD_MAX_EXP10 = 4932  # x87 long double: finite up to ~1.19e4932 (ERANGE beyond)
_LD_MIN_EXP10 = -4951  # and nonzero down to ~3.6e-4951 (underflow to zero is ERANGE)
_LD_BITS = 64  # x87 long double mantissa


def _round_long_double(x: Fraction) -> Fraction:
    """``x`` rounded to the nearest 64-bit-mantissa value (ties to even), as x87 arithmetic."""
    if x == 0:
        return x
    sign = -1 if x < 0 else 1
    x = abs(x)
    shift = _LD_BITS - 1 - (x.numerator.bit_length() - x.denominator.bit_length())
    scaled = x * 2**shift if shift >= 0 else x / 2**-shift
    while scaled >= 2**_LD_BITS:
        shift -= 1
        scaled /= 2
    while scaled < 2 ** (_LD_BITS - 1):
        shift += 1
        scaled *= 2
    n = math.floor(scaled)
    rest = scaled - n
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and n % 2):
        n += 1
    return sign * (Fraction(n) / 2**shift if shift >= 0 else Fraction(n * 2**-shift))


def _strtold(raw: bytes) -> Fraction | float:
    """Redis's ``string2ld``: the whole argument as a long double, or ``TIMEOUT_NOT_FLOAT``."""
    if not raw or len(raw) >= 5 * 1024:
        raise CommandError(TIMEOUT_NOT_FLOAT)
    inf = _INFINITY.get(raw.lower())
    if inf is not None:
        return inf
    if _HEX.match(raw):
        try:
            return Fraction(float.fromhex(raw.decode("ascii")))
        except (ValueError, OverflowError, UnicodeDecodeError):
            raise CommandError(TIMEOUT_NOT_FLOAT) from None
    m = _DECIMAL.match(raw)
    if m is None or not (m.group(2) or m.group(3)):
        raise CommandError(TIMEOUT_NOT_FLOAT)
    sign, whole, frac, exp = m.group(1), m.group(2), m.group(3) or b"", m.group(4)
    digits = (whole + frac).lstrip(b"0")
    if not digits:
        return Fraction(0)
    exp10 = int(exp or 0) - len(frac)
    magnitude = len(digits) + exp10  # the value is below 10**magnitude
    if magnitude > _LD_MAX_EXP10 + 1 or magnitude < _LD_MIN_EXP10:
        raise CommandError(TIMEOUT_NOT_FLOAT)  # ERANGE: overflow, or underflow to zero
    value = Fraction(int(digits)) * Fraction(10) ** exp10
    return -value if sign == b"-" else value


def parse_timeout(raw: bytes, now_ms: int) -> int:
    """A blocking timeout in seconds (a double) -> relative ms; 0 means forever.

    Redis's ``getTimeoutFromObjectOrReply(UNIT_SECONDS)``: ``ceill(t * 1000)`` in long double
    arithmetic. Values whose ms (or deadline) overflow 64 bits get "timeout is out of range",
    as Redis 7.2+ says; Redis 7.0 wraps around in C and says "timeout is negative" instead.
    """
    value = _strtold(raw)
    if isinstance(value, float):  # +-inf
        if value > 0:
            raise CommandError(TIMEOUT_OUT_OF_RANGE)
        raise CommandError(NOT_POSITIVE_TIMEOUT)
    ms = _round_long_double(_round_long_double(value) * 1000)
    if ms > LLONG_MAX:
        raise CommandError(TIMEOUT_OUT_OF_RANGE)
    tval = math.ceil(ms)
    if tval < 0:
        raise CommandError(NOT_POSITIVE_TIMEOUT)
    if tval > LLONG_MAX - now_ms:
        raise CommandError(TIMEOUT_OUT_OF_RANGE)
    return tval


# -- helpers -------------------------------------------------------------------------------


def _get(ctx: Context, key: bytes) -> ListValue | None:
    """The list at ``key`` or None; WRONGTYPE for another type."""
    value = ctx.db.get(key)
    if value is None or type(value) is ListValue:
        return value
    raise WrongTypeError()


def _fill(ctx: Context) -> int:
    """``list-max-listpack-size`` now: list encodings are decided with it."""
    return ctx.server.config.list_max_listpack_size


def _get_or_create(ctx: Context, key: bytes) -> ListValue:
    """The list at ``key``, created empty (and stored) when absent."""
    lst = _get(ctx, key)
    if lst is None:
        lst = ListValue()
        ctx.db.add(key, lst)
    return lst


def _removed_from(ctx: Context, key: bytes, lst: ListValue, changes: int, event: bytes) -> None:
    """After elements left ``key``: the keyspace ``event``; delete it if empty (no empty
    lists: "del"), else let it become a listpack again if it shrank enough; signal the write,
    counting ``changes`` (Redis counts one per element removed). Redis's
    ``listElementsRemoved``, whose order of events this keeps."""
    ctx.notify(event, key)
    if not lst:
        ctx.db.delete(key)
        ctx.notify(b"del", key)
    else:
        lst.after_removal(_fill(ctx))
    ctx.modified(key, changes=changes)


def _pop_event(head: bool) -> bytes:
    return b"lpop" if head else b"rpop"


def _where(arg: bytes) -> bool:
    """LEFT / RIGHT -> True for the head."""
    where = arg.upper()
    if where == b"LEFT":
        return True
    if where == b"RIGHT":
        return False
    raise CommandError(SYNTAX)


def _positive(raw: bytes, error: str) -> int:
    """Redis's getPositiveLongFromObjectOrReply: 0..LONG_MAX, ``error`` for anything else."""
    n = parse_int(raw, error)
    if n < 0:
        raise CommandError(error)
    return n



# -- push ----------------------------------------------------------------------------------


def _push(ctx: Context, args: Args, head: bool, only_existing: bool) -> int:
    argv = args.argv
    key = argv[1]
    lst = _get(ctx, key)
    if lst is None:
        if only_existing:
            return 0
        lst = ListValue()
        ctx.db.add(key, lst)
    n = lst.push(argv[2:], head, _fill(ctx))
    ctx.modified(key, changes=len(argv) - 2)  # one change per element, as Redis counts
    ctx.notify(b"lpush" if head else b"rpush", key)
    return n


def lpush(ctx: Context, args: Args) -> Reply:
    return _push(ctx, args, head=True, only_existing=False)


def rpush(ctx: Context, args: Args) -> Reply:
    return _push(ctx, args, head=False, only_existing=False)


def lpushx(ctx: Context, args: Args) -> Reply:
    return _push(ctx, args, head=True, only_existing=True)


def rpushx(ctx: Context, args: Args) -> Reply:
    return _push(ctx, args, head=False, only_existing=True)


def linsert(ctx: Context, args: Args) -> Reply:
    key = args.next_key()
    where = args.next_upper()
    if where not in (b"BEFORE", b"AFTER"):
        raise CommandError(SYNTAX)
    pivot, value = args.next(), args.next()
    lst = _get(ctx, key)
    if lst is None:
        return 0
    if not lst.insert_at_pivot(pivot, value, where == b"BEFORE", _fill(ctx)):
        return -1
    ctx.modified(key)
    ctx.notify(b"linsert", key)
    return len(lst)


# -- pop -----------------------------------------------------------------------------------


def _pop(ctx: Context, args: Args, head: bool) -> Reply:
    argv = args.argv
    key = argv[1]
    if len(argv) == 2:  # the common form first: one element, a bulk reply
        lst = _get(ctx, key)
        if lst is None:
            return None
        value = lst.pop_one(head)
        _removed_from(ctx, key, lst, 1, _pop_event(head))
        return value
    if len(argv) > 3:
        raise wrong_arity(command_name(ctx))
    count = _positive(argv[2], LIST_COUNT_NOT_POSITIVE)
    lst = _get(ctx, key)
    if lst is None:
        return NULL_ARRAY
    if count == 0:
        return []
    values = lst.pop_head(count) if head else lst.pop_tail(count)
    _removed_from(ctx, key, lst, len(values), _pop_event(head))
    return values


def lpop(ctx: Context, args: Args) -> Reply:
    return _pop(ctx, args, head=True)


def rpop(ctx: Context, args: Args) -> Reply:
    return _pop(ctx, args, head=False)


def _mpop_from(ctx: Context, keys: list[bytes], head: bool, count: int) -> list[Any] | None:
    """LMPOP's work: pop up to ``count`` from the first non-empty list, ``[key, [values]]``."""
    for key in keys:
        lst = _get(ctx, key)
        if lst is None:
            continue
        values = lst.pop_head(count) if head else lst.pop_tail(count)
        _removed_from(ctx, key, lst, len(values), _pop_event(head))
        ctx.rewrite_argv([b"LPOP" if head else b"RPOP", key, b"%d" % len(values)])
        return [key, values]
    return None


def _parse_mpop(args: Args) -> tuple[list[bytes], bool, int]:
    """``numkeys key [key ...] LEFT|RIGHT [COUNT count]`` (shared by LMPOP and BLMPOP)."""
    numkeys = parse_range_long(args.next(), 1, LLONG_MAX, LMPOP_NUMKEYS)
    if numkeys >= len(args):
        raise CommandError(SYNTAX)
    keys = [args.next_key() for _ in range(numkeys)]
    head = _where(args.next())
    count = None
    while args:
        opt = args.next_upper()
        if count is None and opt == b"COUNT" and args:
            count = parse_range_long(args.next(), 1, LLONG_MAX, LMPOP_COUNT)
        else:
            raise CommandError(SYNTAX)
    return keys, head, 1 if count is None else count


def lmpop(ctx: Context, args: Args) -> Reply:
    keys, head, count = _parse_mpop(args)
    reply = _mpop_from(ctx, keys, head, count)
    return NULL_ARRAY if reply is None else reply


def _move(ctx: Context, src_key: bytes, dst_key: bytes, from_head: bool, to_head: bool) -> Reply:
    """LMOVE's work: the moved element, or None when the source does not exist."""
    src = _get(ctx, src_key)
    if src is None:
        return None
    dst = _get(ctx, dst_key)  # WRONGTYPE before anything moves
    from_quicklist = src.ql is not None
    value = src.pop_one(from_head)
    if dst is None:
        dst = _get_or_create(ctx, dst_key)
    # Pushed before the source's shrink check, as Redis does (it matters when src is dst).
    dst.push([value], to_head, _fill(ctx), popped_bytes(value, from_quicklist))
    ctx.modified(dst_key)  # Redis signals the destination first; one change in all
    ctx.notify(b"lpush" if to_head else b"rpush", dst_key)
    _removed_from(ctx, src_key, src, 0, _pop_event(from_head))
    return value


def lmove(ctx: Context, args: Args) -> Reply:
    src, dst = args.next_key(), args.next_key()
    from_head, to_head = _where(args.next()), _where(args.next())
    return _move(ctx, src, dst, from_head, to_head)


def rpoplpush(ctx: Context, args: Args) -> Reply:
    src, dst = args.next_key(), args.next_key()
    return _move(ctx, src, dst, from_head=False, to_head=True)


# -- blocking ------------------------------------------------------------------------------


def _blocking_pop(ctx: Context, args: Args, head: bool) -> Reply:
    argv = args.rest()
    keys = argv[:-1]
    timeout = parse_timeout(argv[-1], ctx.now_ms())
    for key in keys:
        lst = _get(ctx, key)
        if lst is None:
            continue
        value = lst.pop_one(head)
        _removed_from(ctx, key, lst, 1, _pop_event(head))
        ctx.rewrite_argv([b"LPOP" if head else b"RPOP", key])
        return [key, value]
    return ctx.block(keys, timeout, NULL_ARRAY)


def blpop(ctx: Context, args: Args) -> Reply:
    return _blocking_pop(ctx, args, head=True)


def brpop(ctx: Context, args: Args) -> Reply:
    return _blocking_pop(ctx, args, head=False)


def _blocking_move(ctx: Context, src: bytes, dst: bytes, from_head: bool, to_head: bool,
                   timeout: int, logged: list[bytes]) -> Reply:
    if _get(ctx, src) is None:
        if ctx.in_exec:
            return None  # MULTI never blocks; Redis answers a null bulk here...
        return ctx.block([src], timeout, NULL_ARRAY)  # ...but a null array on timeout
    value = _move(ctx, src, dst, from_head, to_head)
    ctx.rewrite_argv(logged)
    return value


def blmove(ctx: Context, args: Args) -> Reply:
    src, dst = args.next_key(), args.next_key()
    wherefrom, whereto = args.next(), args.next()
    from_head, to_head = _where(wherefrom), _where(whereto)
    timeout = parse_timeout(args.next(), ctx.now_ms())
    return _blocking_move(ctx, src, dst, from_head, to_head, timeout,
                          [b"LMOVE", src, dst, wherefrom, whereto])


def brpoplpush(ctx: Context, args: Args) -> Reply:
    src, dst = args.next_key(), args.next_key()
    timeout = parse_timeout(args.next(), ctx.now_ms())
    return _blocking_move(ctx, src, dst, False, True, timeout, [b"RPOPLPUSH", src, dst])


def blmpop(ctx: Context, args: Args) -> Reply:
    raw_timeout = args.next()
    keys, head, count = _parse_mpop(args)
    timeout = parse_timeout(raw_timeout, ctx.now_ms())
    reply = _mpop_from(ctx, keys, head, count)
    if reply is None:
        return ctx.block(keys, timeout, NULL_ARRAY)
    return reply


# -- by index and by value -----------------------------------------------------------------


def llen(ctx: Context, args: Args) -> Reply:
    lst = _get(ctx, args.next_key())
    return 0 if lst is None else len(lst)


def lrange(ctx: Context, args: Args) -> Reply:
    key = args.next_key()
    start, end = args.next_int(), args.next_int()
    lst = _get(ctx, key)
    return [] if lst is None else lst.range(start, end)


def lindex(ctx: Context, args: Args) -> Reply:
    lst = _get(ctx, args.next_key())
    if lst is None:
        return None
    return lst.index_of(args.next_int())


def lset(ctx: Context, args: Args) -> Reply:
    key = args.next_key()
    lst = _get(ctx, key)
    if lst is None:
        raise CommandError(NO_SUCH_KEY)
    index = args.next_int()
    if not lst.set_at(index, args.next(), _fill(ctx)):
        raise CommandError(INDEX_OUT_OF_RANGE)
    ctx.modified(key)
    ctx.notify(b"lset", key)
    return OK


def lrem(ctx: Context, args: Args) -> Reply:
    key = args.next_key()
    count = args.next_int()
    value = args.next()
    lst = _get(ctx, key)
    if lst is None:
        return 0
    removed = lst.remove_value(value, count)
    if removed:
        _removed_from(ctx, key, lst, removed, b"lrem")
    return removed


def ltrim(ctx: Context, args: Args) -> Reply:
    key = args.next_key()
    start, end = args.next_int(), args.next_int()
    lst = _get(ctx, key)
    if lst is None:
        return OK
    removed = lst.trim(start, end)
    _removed_from(ctx, key, lst, removed, b"ltrim")  # WATCH sees it even when nothing goes
    return OK


def lpos(ctx: Context, args: Args) -> Reply:
    key, value = args.next_key(), args.next()
    rank, count, maxlen = 1, None, 0
    while args:
        opt = args.next_upper()
        if not args:
            raise CommandError(SYNTAX)
        if opt == b"RANK":
            rank = args.next_int()
            if rank == -(2**63):  # -rank would overflow (Redis 7.2+ refuses it too)
                raise CommandError(LPOS_RANK_RANGE)
            if rank == 0:
                raise CommandError(LPOS_RANK_ZERO)
        elif opt == b"COUNT":
            count = _positive(args.next(), LPOS_COUNT_NEGATIVE)
        elif opt == b"MAXLEN":
            maxlen = _positive(args.next(), LPOS_MAXLEN_NEGATIVE)
        else:
            raise CommandError(SYNTAX)
    lst = _get(ctx, key)
    if lst is None:
        return [] if count is not None else None
    found = lst.positions(value, rank, count, maxlen)
    if count is not None:
        return found
    return found[0] if found else None


# -- the table -----------------------------------------------------------------------------

_L = A.LIST
_LR = "LEFT | RIGHT"

COMMANDS: tuple[Command, ...] = (
    #   name          arity  flags                              acl  keys                                   handler
    cmd("lpush",        -3,  WRITE | DENYOOM | FAST,             _L, key_at(1, RW | INSERT),                lpush,
        "Prepends one or more elements to a list. Creates the key if it doesn't exist.",
        group="list", complexity="O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
        syntax="key element [element ...]"),
    cmd("rpush",        -3,  WRITE | DENYOOM | FAST,             _L, key_at(1, RW | INSERT),                rpush,
        "Appends one or more elements to a list. Creates the key if it doesn't exist.",
        group="list", complexity="O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
        syntax="key element [element ...]"),
    cmd("lpushx",       -3,  WRITE | DENYOOM | FAST,             _L, key_at(1, RW | INSERT),                lpushx,
        "Prepends one or more elements to a list only when the list exists.", since="2.2.0",
        group="list", complexity="O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
        syntax="key element [element ...]"),
    cmd("rpushx",       -3,  WRITE | DENYOOM | FAST,             _L, key_at(1, RW | INSERT),                rpushx,
        "Appends one or more elements to a list only when the list exists.", since="2.2.0",
        group="list", complexity="O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
        syntax="key element [element ...]"),
    cmd("lpop",         -2,  WRITE | FAST,                       _L, key_at(1, RW | ACCESS | DELETE),       lpop,
        "Returns the first elements in a list after removing it. Deletes the list if the last element was popped.",
        group="list", complexity="O(N) where N is the number of elements returned",
        syntax="key [count]"),
    cmd("rpop",         -2,  WRITE | FAST,                       _L, key_at(1, RW | ACCESS | DELETE),       rpop,
        "Returns and removes the last elements of a list. Deletes the list if the last element was popped.",
        group="list", complexity="O(N) where N is the number of elements returned",
        syntax="key [count]"),
    cmd("llen",          2,  READONLY | FAST,                    _L, key_at(1, RO),                         llen,
        "Returns the length of a list.",
        group="list", complexity="O(1)", syntax="key"),
    cmd("lrange",        4,  READONLY,                           _L, key_at(1, RO | ACCESS),                lrange,
        "Returns a range of elements from a list.",
        group="list", complexity="O(S+N) where S is the distance of start offset from HEAD for small lists, from nearest end (HEAD or TAIL) for large lists; and N is the number of elements in the specified range.",
        syntax="key start stop"),
    cmd("lindex",        3,  READONLY,                           _L, key_at(1, RO | ACCESS),                lindex,
        "Returns an element from a list by its index.",
        group="list", complexity="O(N) where N is the number of elements to traverse to get to the element at index. This makes asking for the first or the last element of the list O(1).",
        syntax="key index"),
    cmd("lset",          4,  WRITE | DENYOOM,                    _L, key_at(1, RW | UPDATE),                lset,
        "Sets the value of an element in a list by its index.",
        group="list", complexity="O(N) where N is the length of the list. Setting either the first or the last element of the list is O(1).",
        syntax="key index element"),
    cmd("lrem",          4,  WRITE,                              _L, key_at(1, RW | DELETE),                lrem,
        "Removes elements from a list. Deletes the list if the last element was removed.",
        group="list", complexity="O(N+M) where N is the length of the list and M is the number of elements removed.",
        syntax="key count element"),
    cmd("ltrim",         4,  WRITE,                              _L, key_at(1, RW | DELETE),                ltrim,
        "Removes elements from both ends a list. Deletes the list if all elements were trimmed.",
        group="list", complexity="O(N) where N is the number of elements to be removed by the operation.",
        syntax="key start stop"),
    cmd("linsert",       5,  WRITE | DENYOOM,                    _L, key_at(1, RW | INSERT),                linsert,
        "Inserts an element before or after another element in a list.", since="2.2.0",
        group="list", complexity="O(N) where N is the number of elements to traverse before seeing the value pivot. This means that inserting somewhere on the left end on the list (head) can be considered O(1) and inserting somewhere on the right end (tail) is O(N).",
        syntax="key <BEFORE | AFTER> pivot element"),
    cmd("lpos",         -3,  READONLY,                           _L, key_at(1, RO | ACCESS),                lpos,
        "Returns the index of matching elements in a list.", since="6.0.6",
        group="list", complexity="O(N) where N is the number of elements in the list, for the average case. When searching for elements near the head or the tail of the list, or when the MAXLEN option is provided, the command may run in constant time.",
        syntax="key element [RANK rank] [COUNT num-matches] [MAXLEN len]"),
    cmd("lmove",         5,  WRITE | DENYOOM,                    _L, (key_at(1, RW | ACCESS | DELETE),
                                                                      key_at(2, RW | INSERT)),          lmove,
        "Returns an element after popping it from one list and pushing it to another. Deletes the list if the last element was moved.",
        since="6.2.0", group="list", complexity="O(1)",
        syntax=f"source destination <{_LR}> <{_LR}>"),
    cmd("rpoplpush",     3,  WRITE | DENYOOM,                    _L, (key_at(1, RW | ACCESS | DELETE),
                                                                      key_at(2, RW | INSERT)),          rpoplpush,
        "Returns the last element of a list after removing and pushing it to another list. Deletes the list if the last element was popped.",
        since="1.2.0", group="list", complexity="O(1)", syntax="source destination"),
    cmd("lmpop",        -4,  WRITE,                              _L, keys_counted(1, RW | ACCESS | DELETE), lmpop,
        "Returns multiple elements from a list after removing them. Deletes the list if the last element was popped.",
        since="7.0.0", group="list", complexity="O(N+M) where N is the number of provided keys and M is the number of elements returned.",
        syntax=f"numkeys key [key ...] <{_LR}> [COUNT count]"),
    cmd("blpop",        -3,  WRITE | BLOCKING,                   _L, key_at(1, RW | ACCESS | DELETE, last=-2), blpop,
        "Removes and returns the first element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.",
        since="2.0.0", group="list", complexity="O(N) where N is the number of provided keys.",
        syntax="key [key ...] timeout"),
    cmd("brpop",        -3,  WRITE | BLOCKING,                   _L, key_at(1, RW | ACCESS | DELETE, last=-2), brpop,
        "Removes and returns the last element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.",
        since="2.0.0", group="list", complexity="O(N) where N is the number of provided keys.",
        syntax="key [key ...] timeout"),
    cmd("blmove",        6,  WRITE | DENYOOM | BLOCKING,        _L, (key_at(1, RW | ACCESS | DELETE),
                                                                         key_at(2, RW | INSERT)),       blmove,
        "Pops an element from a list, pushes it to another list and returns it. Blocks until an element is available otherwise. Deletes the list if the last element was moved.",
        since="6.2.0", group="list", complexity="O(1)",
        syntax=f"source destination <{_LR}> <{_LR}> timeout"),
    cmd("brpoplpush",    4,  WRITE | DENYOOM | BLOCKING,        _L, (key_at(1, RW | ACCESS | DELETE),
                                                                         key_at(2, RW | INSERT)),       brpoplpush,
        "Pops an element from a list, pushes it to another list and returns it. Block until an element is available otherwise. Deletes the list if the last element was popped.",
        since="2.2.0", group="list", complexity="O(1)", syntax="source destination timeout"),
    cmd("blmpop",       -5,  WRITE | BLOCKING,                   _L, keys_counted(2, RW | ACCESS | DELETE), blmpop,
        "Pops the first element from one of multiple lists. Blocks until an element is available otherwise. Deletes the list if the last element was popped.",
        since="7.0.0", group="list", complexity="O(N+M) where N is the number of provided keys and M is the number of elements returned.",
        syntax=f"timeout numkeys key [key ...] <{_LR}> [COUNT count]"),
)
