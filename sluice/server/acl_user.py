"""ACL users and selectors: the Redis 7 rule language, its canonical description, and the
permission check of one user against one command.

Mirrors Redis's ``acl.c`` (7.2+ semantics, the newest documented behaviour): a ``User`` has
flags (on/off, nopass, sanitize-payload), SHA-256 password hashes and a list of ``Selector``\\ s,
the first being the root selector that rules outside parentheses change. A selector holds
the allowed commands (``ACLSetSelectorCommandBit``: a set of full command names here), the
allowed first arguments of otherwise denied commands (``+select|0``), key patterns with
read/write permissions, channel patterns, and the ordered command rules it was given
(``command_rules``), which is what ``ACL LIST`` / ``GETUSER`` print back after ``+@all`` or
``-@all``. Redis 7.0 printed a recomputed minimal rule set instead, which depends on the full
Redis command table; 7.2+ keeps the user's order, and so do we.

Invariants:
* ``Selector.allowed`` is exactly the set of commands (and subcommands) the bitmap of Redis
  would have set; ``allcommands`` is Redis's SELECTOR_FLAG_ALLCOMMANDS (cleared by any ``-``),
  ``future`` its reserved "+@all was given" bit (cleared only by ``-@all``/``nocommands``).
* Passwords are kept only as lowercase hex SHA-256; comparison is constant-time.
* ``apply_rules`` is all-or-nothing: rules are applied to a copy, which replaces the user's
  state only when every rule was valid (``ACLStringSetUser``).
"""

from __future__ import annotations

import hashlib
import hmac
from typing import TYPE_CHECKING

from sluice.commands.args import has_spaces
from sluice.commands.context import Command
from sluice.commands.errors import (
    ACL_OK as OK,
)
from sluice.commands.errors import (
    DENIED_CHANNEL,
    DENIED_CMD,
    DENIED_KEY,
    ConfigError,
)
from sluice.commands.spec import CATEGORIES, F
from sluice.protocol import split_inline_args
from sluice.storage.glob import compile_pattern

from .acl_keys import READ, WRITE, Found, KeyPlan

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

ALL_PERMS = READ | WRITE


# Commands that name Pub/Sub channels (Redis's ``commands_with_channels``): first argument
# index, how many (-1: all the rest), pattern?  Unsubscribes are never checked.
CHANNEL_COMMANDS: dict[str, tuple[int, int, bool]] = {
    "subscribe": (1, -1, False),
    "ssubscribe": (1, -1, False),
    "psubscribe": (1, -1, True),
    "publish": (1, 1, False),
    "spublish": (1, 1, False),
}


class RuleError(Exception):
    """A rule ACL SETUSER refuses; ``str()`` is Redis's reason (``ACLSetUserStringError``)."""


class UnknownCommandRule(RuleError):
    """ENOENT: an unknown command or category (config-file users tolerate these early)."""


E_UNKNOWN = "Unknown command or category name in ACL"
E_SYNTAX = "Syntax error"
E_KEYS_AFTER_ALL = (
    "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not "
    "have any effect. Try 'resetkeys' to start with an empty list of patterns"
)
E_CHANNELS_AFTER_ALL = (
    "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does "
    "not have any effect. Try 'resetchannels' to start with an empty list of channels"
)
E_NO_SUCH_PASSWORD = "The password you are trying to remove from the user does not exist"
E_BAD_HASH = (
    "The password hash must be exactly 64 characters and contain only lowercase hexadecimal "
    "characters"
)
E_FIRSTARG_OF_SUB = "Allowing first-arg of a subcommand is not supported"

def hash_password(password: bytes) -> str:
    return hashlib.sha256(password).hexdigest()


def _rule_hash(op: bytes) -> str:
    """The SHA-256 hex a password rule names: ``>pw``/``<pw`` hash the password,
    ``#hex``/``!hex`` give the hash itself (checked)."""
    if op[:1] in (b">", b"<"):
        return hash_password(op[1:])
    if not _valid_hash(op[1:]):
        raise RuleError(E_BAD_HASH)
    return op[1:].decode()


def _valid_hash(h: bytes) -> bool:
    return len(h) == 64 and all(48 <= c <= 57 or 97 <= c <= 102 for c in h)


class CommandIndex:
    """The command table as ACL rules see it: original names, before any rename-command."""

    __slots__ = ("table", "all")

    def __init__(self, table: dict[bytes, Command]) -> None:
        self.table = dict(table)
        self.all: list[Command] = []  # every command and subcommand, parents first
        for cmd in self.table.values():
            self.all.append(cmd)
            self.all.extend(cmd.subcommands.values())

    def lookup(self, name: bytes) -> Command | None:
        """``ACLLookupCommand``: ``get`` or ``config|get`` (case-insensitive)."""
        parts = name.lower().split(b"|")
        if len(parts) > 2:
            return None
        base = self.table.get(parts[0])
        if base is None or len(parts) == 1:
            return base
        if not base.subcommands:
            return None
        return base.subcommands.get(parts[1])

    def in_category(self, cat: int) -> list[Command]:
        return [c for c in self.all if c.categories & cat]


class KeyPattern:
    __slots__ = ("pattern", "perms", "match")

    def __init__(self, pattern: bytes, perms: int) -> None:
        self.pattern = pattern
        self.perms = perms
        self.match: Callable[[bytes], bool] = compile_pattern(pattern)

    def describe(self) -> bytes:
        prefix = {ALL_PERMS: b"~", READ: b"%R~", WRITE: b"%W~"}[self.perms]
        return prefix + self.pattern


class Selector:
    """One set of permissions: commands, keys, channels (Redis's ``aclSelector``)."""

    __slots__ = ("root", "allcommands", "future", "allkeys", "allchannels", "allowed",
                 "firstargs", "keys", "channels", "rules")

    def __init__(self, root: bool, allchannels: bool) -> None:
        self.root = root
        self.allcommands = False  # every command, present and future: skip the command check
        self.future = False  # '+@all' was the base (Redis's reserved bitmap bit)
        self.allkeys = False
        self.allchannels = allchannels
        self.allowed: set[str] = set()  # full names: 'get', 'config|get'
        self.firstargs: dict[str, list[bytes]] = {}  # 'select' -> [b'0'] (lower case)
        self.keys: list[KeyPattern] = []
        self.channels: list[bytes] = []
        self.rules: list[bytes] = []  # '+get', '-@admin', in the order given

    def copy(self) -> Selector:
        s = Selector(self.root, self.allchannels)
        s.allcommands, s.future, s.allkeys = self.allcommands, self.future, self.allkeys
        s.allowed = set(self.allowed)
        s.firstargs = {k: list(v) for k, v in self.firstargs.items()}
        s.keys = [KeyPattern(k.pattern, k.perms) for k in self.keys]
        s.channels = list(self.channels)
        s.rules = list(self.rules)
        return s

    # -- rules ------------------------------------------------------------------------------

    def _set_cmd(self, cmd: Command, allow: bool) -> None:
        """``ACLChangeSelectorPerm``: a command and all its subcommands."""
        for c in (cmd, *cmd.subcommands.values()):
            if allow:
                self.allowed.add(c.name)
            else:
                self.allowed.discard(c.name)
                self.allcommands = False
        self.firstargs.pop(cmd.name, None)

    def _update_rules(self, rule: bytes, allow: bool) -> None:
        """``ACLUpdateCommandRules``: drop earlier rules on the same command, append."""
        rule = rule.lower()
        kept = []
        for old in self.rules:
            body = old[1:]
            if body == rule or body.startswith(rule + b"|"):
                continue
            kept.append(old)
        kept.append((b"+" if allow else b"-") + rule)
        self.rules = kept

    def apply(self, op: bytes, index: CommandIndex) -> None:
        """``ACLSetSelector``: one rule; raises ``RuleError`` with Redis's reason."""
        low = op.lower()
        if low in (b"allkeys", b"~*"):
            self.allkeys = True
            self.keys = []
        elif low == b"resetkeys":
            self.allkeys = False
            self.keys = []
        elif low in (b"allchannels", b"&*"):
            self.allchannels = True
            self.channels = []
        elif low == b"resetchannels":
            self.allchannels = False
            self.channels = []
        elif low in (b"allcommands", b"+@all"):
            self.allowed = {c.name for c in index.all}
            self.allcommands = self.future = True
            self.rules = []
            self.firstargs = {}
        elif low in (b"nocommands", b"-@all"):
            self.allowed = set()
            self.allcommands = self.future = False
            self.rules = []
            self.firstargs = {}
        elif op[:1] in (b"~", b"%"):
            self._add_key_pattern(op)
        elif op[:1] == b"&":
            if self.allchannels:
                raise RuleError(E_CHANNELS_AFTER_ALL)
            pat = op[1:]
            if has_spaces(pat):
                raise RuleError(E_SYNTAX)
            if pat not in self.channels:
                self.channels.append(pat)
        elif op[:1] in (b"+", b"-") and op[1:2] == b"@":
            cat = CATEGORIES.get(op[2:].lower())
            if cat is None:
                raise UnknownCommandRule(E_UNKNOWN)
            self._update_rules(op[1:], op[:1] == b"+")
            for c in index.in_category(cat):
                self._set_cmd(c, op[:1] == b"+")
        elif op[:1] == b"+":
            self._allow(op[1:], index)
        elif op[:1] == b"-":
            cmd = index.lookup(op[1:])
            if cmd is None:
                raise UnknownCommandRule(E_UNKNOWN)
            self._set_cmd(cmd, False)
            self._update_rules(cmd.name.encode(), False)
        else:
            raise RuleError(E_SYNTAX)

    def _allow(self, name: bytes, index: CommandIndex) -> None:
        if b"|" not in name:
            cmd = index.lookup(name)
            if cmd is None:
                raise UnknownCommandRule(E_UNKNOWN)
            self._set_cmd(cmd, True)
            self._update_rules(cmd.name.encode(), True)
            return
        base_name, _, sub = name.rpartition(b"|")
        cmd = index.lookup(base_name)
        if cmd is None:
            raise UnknownCommandRule(E_UNKNOWN)
        if cmd.parent is not None:
            raise RuleError(E_FIRSTARG_OF_SUB)
        if not sub:
            raise RuleError(E_SYNTAX)
        if cmd.subcommands:
            subcmd = index.lookup(name)
            if subcmd is None:
                raise UnknownCommandRule(E_UNKNOWN)
            self._set_cmd(subcmd, True)
        else:
            # Redis logs this as deprecated (a first argument of a non-container command).
            allowed = self.firstargs.setdefault(cmd.name, [])
            if sub.lower() not in allowed:
                allowed.append(sub.lower())
        self._update_rules(name, True)

    def _add_key_pattern(self, op: bytes) -> None:
        if self.allkeys:
            raise RuleError(E_KEYS_AFTER_ALL)
        perms = 0
        offset = 1
        if op[:1] == b"%":
            n = len(op)
            while offset < n:
                c = op[offset]
                if c in (82, 114) and not perms & READ:  # R r
                    perms |= READ
                elif c in (87, 119) and not perms & WRITE:  # W w
                    perms |= WRITE
                elif c == 126 and perms:  # '~'
                    offset += 1
                    break
                else:
                    raise RuleError(E_SYNTAX)
                offset += 1
            if not perms:
                # '%' alone: Redis 7.0 stores a pattern with no permission and later aborts
                # describing it; refusing it is the safe reading.
                raise RuleError(E_SYNTAX)
        else:
            perms = ALL_PERMS
        pat = op[offset:]
        if has_spaces(pat):
            raise RuleError(E_SYNTAX)
        for kp in self.keys:
            if kp.pattern == pat:
                kp.perms |= perms
                break
        else:
            self.keys.append(KeyPattern(pat, perms))

    # -- description ------------------------------------------------------------------------

    def describe_commands(self) -> bytes:
        """``ACLDescribeSelectorCommandRules``: '+@all' or '-@all', then the rules."""
        return b" ".join([b"+@all" if self.future else b"-@all", *self.rules])

    def describe_keys(self) -> bytes:
        return b"~*" if self.allkeys else b" ".join(k.describe() for k in self.keys)

    def describe_channels(self) -> bytes:
        return b"&*" if self.allchannels else b" ".join(b"&" + c for c in self.channels)

    def describe(self) -> bytes:
        """``ACLDescribeSelector``: keys, channels, commands, as ACL LIST prints them."""
        parts: list[bytes] = []
        if self.allkeys:
            parts.append(b"~*")
        else:
            parts.extend(k.describe() for k in self.keys)
        if self.allchannels:
            parts.append(b"&*")
        else:
            parts.append(b"resetchannels")
            parts.extend(b"&" + c for c in self.channels)
        parts.append(self.describe_commands())
        return b" ".join(parts)

    # -- the check --------------------------------------------------------------------------

    @property
    def unrestricted(self) -> bool:
        return self.allcommands and self.allkeys and self.allchannels

    def check(self, cmd: Command, argv: list[bytes], keys: KeyCache) -> tuple[int, int]:
        """``ACLSelectorCheckCmd``: (OK or DENIED_*, index of the offending argument)."""
        if not self.allcommands and cmd.name not in self.allowed and not cmd.flags & F.NO_AUTH:
            allowed = self.firstargs.get(cmd.name)
            idx = 2 if cmd.parent is not None else 1
            if allowed is None or len(argv) <= idx or argv[idx].lower() not in allowed:
                return DENIED_CMD, 0
        if not self.allkeys:
            plan = key_plan(cmd)
            found = keys.get(plan, argv) if plan.has_keys else ()
            for pos, need in found:
                key = argv[pos]
                for kp in self.keys:
                    if kp.perms & need == need and kp.match(key):
                        break
                else:
                    return DENIED_KEY, pos
        if not self.allchannels:
            spec = CHANNEL_COMMANDS.get(cmd.name)
            if spec is not None:
                first, count, is_pattern = spec
                stop = len(argv) if count < 0 else min(len(argv), first + count)
                for pos in range(first, stop):
                    if not channel_allowed(self.channels, argv[pos], is_pattern):
                        return DENIED_CHANNEL, pos
        return OK, 0


_PLANS: dict[int, KeyPlan] = {}


def key_plan(cmd: Command) -> KeyPlan:
    """The cached ``KeyPlan`` of a table row (rows live as long as the process)."""
    plan = _PLANS.get(id(cmd))
    if plan is None or plan.cmd is not cmd:
        plan = _PLANS[id(cmd)] = KeyPlan(cmd)
    return plan


def channel_allowed(patterns: Iterable[bytes], channel: bytes, is_pattern: bool) -> bool:
    """``ACLCheckChannelAgainstList``: PSUBSCRIBE patterns must appear literally."""
    return any(pat == channel if is_pattern else compile_pattern(pat)(channel) for pat in patterns)


class KeyCache:
    """The keys of the command being checked, found once for all selectors."""

    __slots__ = ("keys",)

    def __init__(self) -> None:
        self.keys: Found | None = None

    def get(self, plan: KeyPlan, argv: list[bytes]) -> Found:
        if self.keys is None:
            self.keys = plan.find(argv)
        return self.keys


class User:
    """One ACL user (Redis's ``user``): flags, password hashes, selectors."""

    __slots__ = ("name", "enabled", "nopass", "sanitize", "passwords", "selectors")

    def __init__(self, name: bytes, allchannels: bool = False) -> None:
        self.name = name
        self.enabled = False
        self.nopass = False
        self.sanitize = True  # sanitize-payload (the default) vs skip-sanitize-payload
        self.passwords: list[str] = []  # hex SHA-256, in the order added
        self.selectors: list[Selector] = [Selector(True, allchannels)]

    @property
    def root(self) -> Selector:
        return self.selectors[0]

    @property
    def unrestricted(self) -> bool:
        """Every command on every key and channel: no check needed at all."""
        return any(s.unrestricted for s in self.selectors)

    def copy(self) -> User:
        u = User(self.name)
        u.assign(self)
        return u

    def assign(self, other: User) -> None:
        """``ACLCopyUser``: take ``other``'s rules, keep this name."""
        self.enabled, self.nopass, self.sanitize = other.enabled, other.nopass, other.sanitize
        self.passwords = list(other.passwords)
        self.selectors = [s.copy() for s in other.selectors]

    def apply(self, op: bytes, index: CommandIndex, allchannels: bool) -> None:
        """``ACLSetUser``: one rule or flag (``allchannels`` is acl-pubsub-default)."""
        if not op:
            return
        low = op.lower()
        if low == b"on":
            self.enabled = True
        elif low == b"off":
            self.enabled = False
        elif low == b"skip-sanitize-payload":
            self.sanitize = False
        elif low == b"sanitize-payload":
            self.sanitize = True
        elif low == b"nopass":
            self.nopass = True
            self.passwords = []
        elif low == b"resetpass":
            self.nopass = False
            self.passwords = []
        elif op[:1] in (b">", b"#"):
            h = _rule_hash(op)
            if h not in self.passwords:
                self.passwords.append(h)
            self.nopass = False
        elif op[:1] in (b"<", b"!"):
            h = _rule_hash(op)
            if h not in self.passwords:
                raise RuleError(E_NO_SUCH_PASSWORD)
            self.passwords.remove(h)
        elif op[:1] == b"(" and op[-1:] == b")":
            sel = Selector(False, allchannels)
            for inner in split_inline_args(op[1:-1]) or []:
                sel.apply(inner, index)
            self.selectors.append(sel)
        elif low == b"clearselectors":
            del self.selectors[1:]
        elif low == b"reset":
            self.nopass = False
            self.passwords = []
            root = self.root
            root.apply(b"resetkeys", index)
            root.apply(b"resetchannels", index)
            if allchannels:
                root.apply(b"allchannels", index)
            self.enabled = False
            self.sanitize = True
            del self.selectors[1:]
            root.apply(b"-@all", index)
        else:
            self.root.apply(op, index)

    def check_password(self, password: bytes) -> bool:
        """Enabled, and nopass or a matching hash (compared in constant time)."""
        if not self.enabled:
            return False
        if self.nopass:
            return True
        h = hash_password(password)
        ok = False
        for stored in self.passwords:
            ok |= hmac.compare_digest(h, stored)
        return ok

    def check(self, cmd: Command, argv: list[bytes]) -> tuple[int, int]:
        """``ACLCheckAllUserCommandPerm``: OK if any selector allows; else the most relevant
        denial (the larger reason, then the later argument)."""
        cache = KeyCache()
        worst, worst_idx = DENIED_CMD, 0
        for sel in self.selectors:
            res, idx = sel.check(cmd, argv, cache)
            if res == OK:
                return OK, 0
            if res > worst or (res == worst and idx > worst_idx):
                worst, worst_idx = res, idx
        return worst, worst_idx

    def reads_every_key(self, cmd: Command, argv: list[bytes]) -> bool:
        """``ACLUserCheckCmdWithUnrestrictedKeyAccess`` for reading: some selector allows
        the command and may read any key (``allkeys``, or a ``~*`` / ``%R~*`` pattern).
        SORT asks before it reads keys named by its BY and GET patterns."""
        cache = KeyCache()
        for sel in self.selectors:
            if sel.check(cmd, argv, cache)[0] != OK:
                continue
            if sel.allkeys or any(kp.pattern == b"*" and kp.perms & READ for kp in sel.keys):
                return True
        return False

    # -- description ------------------------------------------------------------------------

    def flag_names(self) -> list[bytes]:
        flags = [b"on" if self.enabled else b"off"]
        if self.nopass:
            flags.append(b"nopass")
        flags.append(b"sanitize-payload" if self.sanitize else b"skip-sanitize-payload")
        return flags

    def describe(self) -> bytes:
        """``ACLDescribeUser``: the rules as ACL LIST and ACL SAVE write them."""
        parts = [*self.flag_names(), *(b"#" + h.encode() for h in self.passwords)]
        parts.append(self.root.describe())
        out = b" ".join(parts)
        for sel in self.selectors[1:]:
            out += b" (" + sel.describe() + b")"
        return out


def merge_selector_args(args: list[bytes]) -> list[bytes]:
    """``ACLMergeSelectorArguments``: '(+get' '~k)' -> '(+get ~k)'. Raises ValueError with
    the argument that opened an unmatched parenthesis."""
    out: list[bytes] = []
    current: bytes | None = None
    opener = b""
    for op in args:
        if current is None and op[:1] == b"(" and op[-1:] != b")":
            current, opener = op, op
            continue
        if current is not None:
            current += b" " + op
            if op[-1:] == b")":
                out.append(current)
                current = None
            continue
        out.append(op)
    if current is not None:
        raise ValueError(opener)
    return out


def parse_user_directive(args: list[bytes]) -> list[list[bytes]]:
    """Config-file ``user <name> rules...``: syntax-checked now, loaded at start-up.

    Unknown commands and categories are tolerated here, as Redis does before modules load.
    """
    if len(args) < 1:
        raise ConfigError("wrong number of arguments")
    try:
        ops = merge_selector_args(args[1:])
    except ValueError as e:
        raise ConfigError(f"Error in user declaration '{e.args[0].decode(errors='replace')}': "
                          "Unmatched parenthesis in acl selector") from None
    probe = User(args[0])
    empty = CommandIndex({})
    for op in ops:
        try:
            probe.apply(op, empty, False)
        except UnknownCommandRule:
            continue
        except RuleError as e:
            raise ConfigError(f"Error in user declaration '{op.decode(errors='replace')}': {e}") from None
    return [list(args)]
