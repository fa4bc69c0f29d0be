"""The keys a command touches, with the access each needs, as the ACL check sees them.

Mirrors Redis's ``getKeysFromCommandWithSpecs`` (db.c): key specs are used when their flags
are reliable; a spec that cannot be followed (an unparsable key count, keys beyond the
arguments, an ``INCOMPLETE`` spec) makes the whole search invalid, and then the command's
own key finder is used (``setGetKeys``, ``bitfieldGetKeys``, ``sortGetKeys``,
``xreadGetKeys``, ``migrateGetKeys``), or no keys at all. Commands whose specs carry
``VARIABLE_FLAGS`` always use their finder: ``SET k v`` only writes, ``SET k v GET`` also reads.

Access is reduced to what ACL key patterns grant (``ACLSelectorCheckKey``): ``ACCESS`` needs
read permission, ``INSERT`` / ``DELETE`` / ``UPDATE`` need write permission, a key spec with
none of them (``EXISTS``, ``TYPE``) needs only a matching pattern.

A ``KeyPlan`` per command is computed once (the enum flag arithmetic is slow in Python).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from sluice.commands.cluster import migrate_get_keys
from sluice.commands.spec import K
from sluice.protocol import string2ll

if TYPE_CHECKING:
    from sluice.commands.context import Command
    from sluice.commands.spec import KeySpec

READ, WRITE = 1, 2

Found = list[tuple[int, int]]  # (argument index, READ | WRITE needed)


def perms_of(flags: int) -> int:
    need = 0
    if flags & K.ACCESS:
        need |= READ
    if flags & (K.INSERT | K.DELETE | K.UPDATE):
        need |= WRITE
    return need


class KeyPlan:
    """How to find one command's keys: its usable specs and, if any, its own finder."""

    __slots__ = ("cmd", "specs", "use_specs", "finder", "fixed")

    def __init__(self, cmd: Command) -> None:
        self.cmd = cmd
        usable = [ks for ks in cmd.keys if not ks.flags & K.NOT_KEY]
        varflags = any(ks.flags & K.VARIABLE_FLAGS for ks in cmd.keys)
        self.specs: list[tuple[KeySpec, int, bool]] = [
            (ks, perms_of(ks.flags), bool(ks.flags & K.INCOMPLETE)) for ks in usable]
        self.use_specs = bool(usable) and not varflags
        self.finder: Callable[[list[bytes]], Found] | None = FINDERS.get(cmd.name)
        # The common case, one spec at fixed positions (GET k, XADD k ...): no search at all.
        self.fixed: tuple[int, int, int, int] | None = None
        if self.use_specs and len(self.specs) == 1:
            ks, need, incomplete = self.specs[0]
            if ks.index and not ks.keynum and ks.lastkey >= 0 and not incomplete:
                self.fixed = (ks.index, ks.index + ks.lastkey, ks.step, need)

    @property
    def has_keys(self) -> bool:
        """``doesCommandHaveKeys``."""
        return bool(self.specs) or self.finder is not None

    def find(self, argv: list[bytes]) -> Found:
        fixed = self.fixed
        if fixed is not None:
            first, last, step, need = fixed
            if last < len(argv):
                return [(i, need) for i in range(first, last + 1, step)]
            return self.finder(argv) if self.finder is not None else []
        if self.use_specs:
            found = _from_specs(self.specs, argv)
            if found is not None:
                return found
        if self.finder is not None:
            return self.finder(argv)
        return []


def _from_specs(specs: list[tuple[KeySpec, int, bool]], argv: list[bytes]) -> Found | None:
    """``getKeysUsingKeySpecs``; None when a spec is invalid for these arguments."""
    argc = len(argv)
    out: Found = []
    for ks, need, incomplete in specs:
        if ks.index:
            first = ks.index
        elif not ks.keyword:
            return None  # an "unknown" begin_search (SORT's BY/GET/STORE): the finder decides
        else:
            first = 0
            kw = ks.keyword
            if ks.startfrom > 0:
                rng = range(ks.startfrom, argc)
            else:
                rng = range(argc + ks.startfrom, 0, -1)
            for i in rng:
                if argv[i].lower() == kw:
                    first = i + 1
                    break
            if not first:
                continue  # keyword absent: this spec finds nothing
        if ks.keynum:
            if first + ks.keynumidx >= argc:
                return None
            numkeys = string2ll(argv[first + ks.keynumidx])
            if numkeys is None or numkeys < 0:
                return None
            step = ks.step
            first += ks.firstkey
            last = first + numkeys - 1
        else:
            step = ks.step
            if ks.lastkey >= 0:
                last = first + ks.lastkey
            elif not ks.limit:
                last = argc + ks.lastkey
            else:
                last = first + ((argc - first) // ks.limit + ks.lastkey)
        if last >= argc or last < first or first >= argc:
            return None
        out.extend((i, need) for i in range(first, last + 1, step))
        if incomplete:
            return None
    return out


# -- the commands' own key finders (Redis's *GetKeys) -------------------------------------


def _set_keys(argv: list[bytes]) -> Found:
    """``setGetKeys``: the GET option turns an overwrite into a read-modify-write."""
    for arg in argv[3:]:
        if arg.lower() == b"get":
            return [(1, READ | WRITE)]
    return [(1, WRITE)]


def _bitfield_keys(argv: list[bytes]) -> Found:
    """``bitfieldGetKeys``: read-only when every operation is GET (anything odd: not)."""
    readonly = True
    i, argc = 2, len(argv)
    while i < argc:
        remaining = argc - i - 1
        op = argv[i].lower()
        if op == b"get" and remaining >= 2:
            i += 2
        elif op in (b"set", b"incrby") and remaining >= 3:
            readonly = False
            break
        elif op == b"overflow" and remaining >= 1:
            i += 1
        else:
            readonly = False
            break
        i += 1
    return [(1, READ if readonly else READ | WRITE)]


def _sort_keys(argv: list[bytes]) -> Found:
    """``sortGetKeys``: the key, and the STORE destination (the last one given wins)."""
    found: Found = [(1, READ)]
    skip = {b"limit": 2, b"get": 1, b"by": 1}
    i, store = 2, 0
    while i < len(argv):
        word = argv[i].lower()
        if word in skip:
            i += skip[word]
        elif word == b"store" and i + 1 < len(argv):
            store = i + 1  # the last STORE wins; its argument is scanned as an option too
        i += 1
    if store:
        found.append((store, WRITE))
    return found


def _xread_keys(need: int) -> Callable[[list[bytes]], Found]:
    """``xreadGetKeys``: the first half of what follows STREAMS; nothing if unbalanced."""

    def find(argv: list[bytes]) -> Found:
        for i in range(1, len(argv)):
            if argv[i].lower() == b"streams":
                n = len(argv) - i - 1
                if n == 0 or n % 2:
                    return []
                return [(j, need) for j in range(i + 1, i + 1 + n // 2)]
        return []

    return find


def _migrate_keys(argv: list[bytes]) -> Found:
    """``migrateGetKeys`` (commands/cluster.py): every key is read, then deleted."""
    return [(pos, perms_of(flags)) for pos, flags in migrate_get_keys(argv)]


FINDERS: dict[str, Callable[[list[bytes]], Found]] = {
    "migrate": _migrate_keys,
    "set": _set_keys,
    "bitfield": _bitfield_keys,
    "sort": _sort_keys,
    "xread": _xread_keys(READ),
    "xreadgroup": _xread_keys(READ | WRITE),
}
