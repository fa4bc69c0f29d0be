"""The command table's record type: one ``Cmd`` per command and per subcommand.

Everything about a command is declared once, in its family module's ``COMMANDS`` table, and
everything else is derived from it: dispatch and arity errors (``server/dispatch.py``), the
replies of COMMAND / COMMAND INFO / COMMAND DOCS / COMMAND LIST / COMMAND GETKEYS
(``commands/introspection.py``), and ACL category and key checks.

Mirrors Redis 7's ``src/commands/*.json`` records: flags (``CMD_*``), ACL categories
(``ACL_CATEGORY_*``), key specs (begin_search + find_keys, with access flags), and docs.
``implicit_categories`` is Redis's ``setImplicitACLCategories``; ``legacy_range`` is
``populateCommandLegacyRangeSpec``.

``Cmd`` is generic in the type of the ``ctx`` its handler takes, so that this module need not
import ``context.py`` (whose ``Context`` names the table): ``context.Command`` is
``Cmd[Context]``, the type everything else uses.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from sluice.storage.keyspace import Database

from .args import Args
from .cmdlatency import Histogram, SlowHistogram, new_histogram
from .reply import Reply


class _F(enum.IntFlag):
    """Command flags, named and ordered as COMMAND INFO prints them."""

    WRITE = enum.auto()
    READONLY = enum.auto()
    DENYOOM = enum.auto()
    MODULE = enum.auto()
    ADMIN = enum.auto()
    PUBSUB = enum.auto()
    NOSCRIPT = enum.auto()
    BLOCKING = enum.auto()
    LOADING = enum.auto()
    STALE = enum.auto()
    SKIP_MONITOR = enum.auto()
    SKIP_SLOWLOG = enum.auto()
    ASKING = enum.auto()
    FAST = enum.auto()
    NO_AUTH = enum.auto()
    MAY_REPLICATE = enum.auto()
    SENTINEL = enum.auto()
    ONLY_SENTINEL = enum.auto()
    NO_MANDATORY_KEYS = enum.auto()
    PROTECTED = enum.auto()
    MODULE_GETKEYS = enum.auto()
    MODULE_NO_CLUSTER = enum.auto()
    NO_ASYNC_LOADING = enum.auto()
    NO_MULTI = enum.auto()
    MOVABLE_KEYS = enum.auto()
    ALLOW_BUSY = enum.auto()
    MODULE_GETCHANNELS = enum.auto()
    TOUCHES_ARBITRARY_KEYS = enum.auto()



class _Ints(type):
    """The metaclass of ``F``, ``A`` and ``K``: to mypy, each of their attributes is an int."""

    if TYPE_CHECKING:

        def __getattr__(cls, name: str) -> int: ...


def _plain(flags: type[enum.IntFlag], doc: str) -> _Ints:
    """The members of ``flags`` as plain int class attributes (``NONE`` = 0).

    ``IntFlag`` arithmetic costs about a microsecond per operation here (against 60 ns for
    ints), and dispatch tests flags on every command, so tables and checks use ints; the
    enums only keep the declarations and their order readable.
    """
    ns: dict[str, Any] = {m.name: int(m) for m in flags if m.name}
    ns.update(NONE=0, __doc__=doc, __slots__=())
    return _Ints(flags.__name__.lstrip("_"), (), ns)


F = _plain(_F, "Command flags (Redis's CMD_*), as plain ints.")

# Flags that COMMAND INFO reports, with Redis's spelling (order as in Redis's addReplyFlags).
FLAG_NAMES: tuple[tuple[int, bytes], ...] = (
    (F.WRITE, b"write"),
    (F.READONLY, b"readonly"),
    (F.DENYOOM, b"denyoom"),
    (F.MODULE, b"module"),
    (F.ADMIN, b"admin"),
    (F.PUBSUB, b"pubsub"),
    (F.NOSCRIPT, b"noscript"),
    (F.BLOCKING, b"blocking"),
    (F.LOADING, b"loading"),
    (F.STALE, b"stale"),
    (F.SKIP_MONITOR, b"skip_monitor"),
    (F.SKIP_SLOWLOG, b"skip_slowlog"),
    (F.ASKING, b"asking"),
    (F.FAST, b"fast"),
    (F.NO_AUTH, b"no_auth"),
    (F.MAY_REPLICATE, b"may_replicate"),
    (F.NO_MANDATORY_KEYS, b"no_mandatory_keys"),
    (F.NO_ASYNC_LOADING, b"no_async_loading"),
    (F.NO_MULTI, b"no_multi"),
    (F.MOVABLE_KEYS, b"movablekeys"),
    (F.ALLOW_BUSY, b"allow_busy"),
)


class _A(enum.IntFlag):
    """ACL categories, in the order ``ACL CAT`` lists them."""

    KEYSPACE = enum.auto()
    READ = enum.auto()
    WRITE = enum.auto()
    SET = enum.auto()
    SORTEDSET = enum.auto()
    LIST = enum.auto()
    HASH = enum.auto()
    STRING = enum.auto()
    BITMAP = enum.auto()
    HYPERLOGLOG = enum.auto()
    GEO = enum.auto()
    STREAM = enum.auto()
    PUBSUB = enum.auto()
    ADMIN = enum.auto()
    FAST = enum.auto()
    SLOW = enum.auto()
    BLOCKING = enum.auto()
    DANGEROUS = enum.auto()
    CONNECTION = enum.auto()
    TRANSACTION = enum.auto()
    SCRIPTING = enum.auto()
    NONE = 0


A = _plain(_A, "ACL categories (Redis's ACL_CATEGORY_*), as plain ints.")

CATEGORY_NAMES: tuple[tuple[int, bytes], ...] = tuple(
    (int(cat), (cat.name or "").lower().encode()) for cat in _A if cat.name != "NONE"
)
CATEGORIES: dict[bytes, int] = {name: cat for cat, name in CATEGORY_NAMES}
"""ACL category by name (``@list`` rules, ACL CAT), in ACL CAT's order."""


def implicit_categories(flags: int, acl: int) -> int:
    """Add the categories Redis derives from flags (``setImplicitACLCategories``)."""
    if flags & F.WRITE:
        acl |= A.WRITE
    if flags & F.READONLY and not acl & A.SCRIPTING:
        acl |= A.READ
    if flags & F.ADMIN:
        acl |= A.ADMIN | A.DANGEROUS
    if flags & F.PUBSUB:
        acl |= A.PUBSUB
    if flags & F.FAST:
        acl |= A.FAST
    if flags & F.BLOCKING:
        acl |= A.BLOCKING
    if not acl & A.FAST:
        acl |= A.SLOW
    return acl


class _K(enum.IntFlag):
    """Key-spec flags (Redis's ``CMD_KEY_*``), as COMMAND INFO names them."""

    RO = enum.auto()
    RW = enum.auto()
    OW = enum.auto()
    RM = enum.auto()
    ACCESS = enum.auto()
    UPDATE = enum.auto()
    INSERT = enum.auto()
    DELETE = enum.auto()
    NOT_KEY = enum.auto()
    INCOMPLETE = enum.auto()
    VARIABLE_FLAGS = enum.auto()


K = _plain(_K, "Key-spec flags (Redis's CMD_KEY_*), as plain ints.")

KEY_FLAG_NAMES: tuple[tuple[int, bytes], ...] = tuple(
    (int(k), (k.name or "").encode()) for k in _K
)


@dataclass(frozen=True, slots=True)
class KeySpec:
    """One key spec: where the search for keys begins and how keys are found from there.

    ``index`` > 0: begin at that argument. Otherwise ``keyword`` is searched for starting at
    ``startfrom`` (negative: from the end, backwards). Then either a range (``lastkey``,
    ``step``, ``limit``; lastkey -1 means the last argument) or a key count found at
    ``keynumidx`` relative to the begin position (``firstkey``, ``step``).
    """

    flags: int
    index: int = 0
    keyword: bytes = b""
    startfrom: int = 1
    lastkey: int = 0
    step: int = 1
    limit: int = 0
    keynum: bool = False
    keynumidx: int = 0
    firstkey: int = 1

    def begin(self, argv: list[bytes]) -> int | None:
        """Index of the argument where the key search begins, or None."""
        if self.index:
            return self.index
        argc = len(argv)
        if self.startfrom >= 0:
            rng = range(self.startfrom, argc)
        else:
            rng = range(argc + self.startfrom, 0, -1)
        kw = self.keyword
        for i in rng:
            if argv[i].lower() == kw:
                return i
        return None

    def keys(self, argv: list[bytes]) -> list[int]:
        """Positions of the keys in ``argv`` according to this spec."""
        start = self.begin(argv)
        if start is None:
            return []
        argc = len(argv)
        if self.keynum:
            idx = start + self.keynumidx
            if idx >= argc:
                return []
            try:
                count = int(argv[idx])
            except ValueError:
                return []
            first = start + self.firstkey
            last = first + (count - 1) * self.step
            if count <= 0 or last >= argc:
                return []
            return list(range(first, last + 1, self.step))
        if self.keyword and not self.index:
            start += 1
        if self.lastkey >= 0:
            last = start + self.lastkey
        elif self.limit and self.lastkey == -1:
            last = start + (argc - start) // self.limit - 1
        else:
            last = argc + self.lastkey
        last = min(last, argc - 1)
        return list(range(start, last + 1, self.step))


def key_at(index: int, flags: int, *, last: int = 0, step: int = 1) -> KeySpec:
    """A key (or a range of keys) at a fixed position: ``key_at(1, RW)``."""
    return KeySpec(flags, index=index, lastkey=last, step=step)


def keys_after(keyword: bytes, startfrom: int, flags: int, *, divide: int = 2) -> KeySpec:
    """Keys following a keyword, the first half of what follows (``STREAMS k1 k2 id1 id2``)."""
    return KeySpec(flags, keyword=keyword.lower(), startfrom=startfrom, lastkey=-1, limit=divide)


def keys_counted(index: int, flags: int, *, firstkey: int = 1, step: int = 1) -> KeySpec:
    """A key count at ``index`` followed by that many keys (``LMPOP numkeys key ...``)."""
    return KeySpec(flags, index=index, keynum=True, keynumidx=0, firstkey=firstkey, step=step)


CtxT = TypeVar("CtxT")
"""The type of the ``ctx`` a table's handlers take: ``context.Context``."""

Handler = Callable[[CtxT, Args], Reply]
"""A command handler: synchronous, ``(ctx, args) -> reply``."""

ReadyCheck = Callable[[CtxT, Database, bytes, dict[Any, Any]], bool]
# A command whose flags depend on its arguments (EVAL*, FCALL*: the script's declared flags),
# Redis's getCommandFlags: ``get_flags(client, argv, table_flags) -> flags``.
GetFlags = Callable[[CtxT, list[bytes], int], int]
"""A blocking handler's ``ready_check(client, db, key, notes)`` (``server/blocking.py``)."""

# The value type a blocked command waits for, from its ACL category (Redis's btype:
# BLOCKED_LIST, BLOCKED_ZSET, BLOCKED_STREAM, compared with getBlockedTypeByType(o->type)).
_BTYPES: tuple[tuple[int, bytes], ...] = ((A.LIST, b"list"), (A.SORTEDSET, b"zset"),
                                        (A.STREAM, b"stream"))


@dataclass(slots=True)
class Cmd(Generic[CtxT]):
    """One command or subcommand. ``name`` is lower case; subcommands are ``parent|sub``."""

    name: str
    arity: int
    flags: int
    acl: int
    keys: tuple[KeySpec, ...]
    handler: Handler[CtxT] | None
    summary: str = ""
    since: str = "1.0.0"
    complexity: str = "O(1)"
    group: str = "generic"
    syntax: str = ""
    doc_flags: tuple[str, ...] = ()
    tips: tuple[str, ...] = ()
    # A blocking handler's ``ready_check(client, db, key, notes) -> bool`` (blocking.py).
    ready_check: ReadyCheck[CtxT] | None = None
    # Flags that depend on the arguments (dispatch's checks use them; the row keeps its own).
    get_flags: GetFlags[CtxT] | None = None
    # Its key lookups are Redis's read lookups (INFO keyspace_hits / misses, "keymiss"):
    # None derives it from READONLY; a write command that reads with lookupKeyRead says True.
    reads: bool | None = None
    # Derived at registration:
    btype: bytes | None = None  # the key type that can serve it when it blocks; None: any
    categories: int = 0
    subcommands: dict[bytes, Cmd[CtxT]] = field(default_factory=dict)
    parent: Cmd[CtxT] | None = None
    name_bytes: bytes = b""
    first_arg: int = 1  # where the handler's Args start: after the (sub)command name
    counts_lookups: bool = False  # ``reads`` resolved: dispatch sets Access.counting from it
    # Statistics for INFO commandstats (mutable on purpose; one record per command).
    calls: int = 0
    usec: int = 0
    rejected_calls: int = 0
    failed_calls: int = 0
    # LATENCY HISTOGRAM and INFO latencystats: the calls' durations (cmdlatency.py), counted
    # as calls are: short ones per microsecond, long ones per HdrHistogram counts index;
    # cmdlatency.DISCARD / DISCARD_SLOW while latency-tracking is off.
    hist: Histogram = field(default_factory=new_histogram)
    hist_slow: SlowHistogram = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.categories = implicit_categories(self.flags, self.acl)
        self.name_bytes = self.name.encode()
        # Redis's btype (BLOCKED_LIST / ZSET / STREAM), from the command's data-type category.
        self.btype = next((t for category, t in _BTYPES if self.acl & category), None)
        if _legacy_range(self.keys)[3]:
            self.flags |= F.MOVABLE_KEYS
        self.counts_lookups = (bool(self.flags & F.READONLY) if self.reads is None
                               else self.reads)

    @property
    def fullname(self) -> str:
        return self.name

    def legacy_range(self) -> tuple[int, int, int]:
        """(first key, last key, step) for COMMAND INFO, as Redis derives it from key specs."""
        first, last, step, _ = _legacy_range(self.keys)
        return first, last, step


def _legacy_range(specs: tuple[KeySpec, ...]) -> tuple[int, int, int, bool]:
    """(first, last, step, movablekeys), as Redis's ``populateCommandLegacyRangeSpec``.

    One spec that begins at an index with a range is reported as is (any step; ``movablekeys``
    only if it is incomplete). With several, the plain step-1 ranges that follow one another
    are merged; any other spec (a keyword, a key count, a gap, a step) is left out and makes
    the command ``movablekeys``. A last key < 0 (counted from the end) wins over any index.
    """
    if not specs:
        return 0, 0, 0, False

    def is_range(ks: KeySpec) -> bool:
        return ks.index > 0 and not ks.keynum

    if len(specs) == 1 and is_range(specs[0]):
        ks = specs[0]
        last = ks.index + ks.lastkey if ks.lastkey >= 0 else ks.lastkey
        return ks.index, last, ks.step, bool(ks.flags & K.INCOMPLETE)
    movable = False
    first = 0
    last = 0
    prev_last = 0
    for ks in specs:
        if not is_range(ks):
            movable = True
            continue
        if ks.step != 1 or (prev_last and prev_last != ks.index - 1):
            movable = True
            continue
        if ks.flags & K.INCOMPLETE:
            movable = True
        first = ks.index if not first else min(first, ks.index)
        this_last = ks.index + ks.lastkey if ks.lastkey >= 0 else ks.lastkey
        # Redis compares as unsigned: a negative (from the end) last key beats any index.
        last = max(last, this_last, key=lambda v: v & 0xFFFFFFFF)
        prev_last = last
    if not first:
        return 0, 0, 0, True
    return first, last, 1, movable


def cmd(
    name: str,
    arity: int,
    flags: int,
    acl: int,
    keys: KeySpec | tuple[KeySpec, ...] | None,
    handler: Handler[CtxT] | None,
    summary: str = "",
    *,
    since: str = "1.0.0",
    complexity: str = "O(1)",
    group: str = "generic",
    syntax: str = "",
    doc_flags: tuple[str, ...] = (),
    tips: tuple[str, ...] = (),
    ready_check: ReadyCheck[CtxT] | None = None,
    get_flags: GetFlags[CtxT] | None = None,
    reads: bool | None = None,
) -> Cmd[CtxT]:
    """Build one table row; ``keys`` may be one spec, a tuple of specs, or None."""
    if keys is None:
        spec: tuple[KeySpec, ...] = ()
    elif isinstance(keys, KeySpec):
        spec = (keys,)
    else:
        spec = keys
    return Cmd(
        name, arity, flags, acl, spec, handler, summary, since, complexity, group, syntax,
        doc_flags, tips, ready_check, get_flags, reads,
    )


# Short names so tables stay aligned.
WRITE, READONLY, DENYOOM, ADMIN, NOSCRIPT = F.WRITE, F.READONLY, F.DENYOOM, F.ADMIN, F.NOSCRIPT
BLOCKING, LOADING, STALE, FAST, NO_AUTH = F.BLOCKING, F.LOADING, F.STALE, F.FAST, F.NO_AUTH
SKIP_MONITOR, SKIP_SLOWLOG, MAY_REPLICATE = F.SKIP_MONITOR, F.SKIP_SLOWLOG, F.MAY_REPLICATE
NO_MULTI, ALLOW_BUSY, NO_MANDATORY_KEYS, PUBSUB = F.NO_MULTI, F.ALLOW_BUSY, F.NO_MANDATORY_KEYS, F.PUBSUB
NO_ASYNC_LOADING, PROTECTED = F.NO_ASYNC_LOADING, F.PROTECTED
RO, RW, OW, RM = K.RO, K.RW, K.OW, K.RM
ACCESS, UPDATE, INSERT, DELETE = K.ACCESS, K.UPDATE, K.INSERT, K.DELETE
NONE = 0
