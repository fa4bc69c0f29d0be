"""The ACL state of a server: users, the per-command permission check, AUTH, the ACL LOG,
and loading/saving users from ``user`` directives and the ``aclfile``.

Mirrors Redis's ``acl.c`` (users, ``ACLCheckAllPerm``, ``addACLLogEntry``,
``ACLLoadFromFile``, ``ACLSaveToFile``, ``ACLLoadUsersAtStartup``,
``ACLUpdateDefaultUserPassword``); the rule language itself is in ``acl_user.py``.

The hot path: ``dispatch`` calls ``server.acl.check(client, cmd, argv)`` only when
``server.acl`` is not None, and it is None while every user may run everything on every key
and channel (the default set-up, with or without a password). When some user is restricted,
the check costs one set lookup for clients of unrestricted users.

Invariants:
* A client's ``user`` is a user name (``str``); the ``User`` object is found by name, so
  ``ACL SETUSER`` (which changes a user in place) takes effect on the next command of every
  connection of that user, and ``ACL LOAD`` rebinds connections to the new definitions.
* Deleting a user (``ACL DELUSER``, or ``ACL LOAD`` without it) deauthenticates and closes
  its connections, the current one after its reply (``deauthenticateAndCloseClient``).
  A connection subscribed to channels a change revoked is closed too.
* Passwords exist only as SHA-256 hashes (``acl_user.User.passwords``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from sluice.commands.args import has_spaces
from sluice.commands.context import user_key
from sluice.commands.errors import ACL_OK as OK
from sluice.commands.errors import (
    DENIED_AUTH,
    DENIED_CHANNEL,
    DENIED_CMD,
    DENIED_KEY,
    NOPERM_EXEC,
    NOPERM_EXEC_REASONS,
    CommandError,
    ConfigError,
    denial_message,
)
from sluice.storage.aof import write_durably

from .acl_user import (
    CommandIndex,
    RuleError,
    UnknownCommandRule,
    User,
    channel_allowed,
    merge_selector_args,
)

if TYPE_CHECKING:
    from sluice.commands.context import Command

    from .app import Server
    from .client import Client

log = logging.getLogger("sluice")

LOG_GROUPING_MS = 60_000  # ACL_LOG_GROUPING_MAX_TIME_DELTA
REASONS = {DENIED_CMD: b"command", DENIED_KEY: b"key", DENIED_CHANNEL: b"channel",
           DENIED_AUTH: b"auth"}
STAT_NAMES = {DENIED_CMD: "acl_access_denied_cmd", DENIED_KEY: "acl_access_denied_key",
              DENIED_CHANNEL: "acl_access_denied_channel", DENIED_AUTH: "acl_access_denied_auth"}


class LogEntry:
    """One ACL LOG entry (Redis's ``ACLLogEntry``)."""

    __slots__ = ("count", "reason", "context", "object", "username", "ctime", "cinfo",
                 "entry_id", "created")

    def __init__(self, reason: int, context: bytes, obj: bytes, username: bytes, now: int,
                 cinfo: bytes, entry_id: int) -> None:
        self.count = 1
        self.reason = reason
        self.context = context  # toplevel | multi
        self.object = obj  # command name, key, channel, or the AUTH/HELLO as typed
        self.username = username
        self.ctime = now  # ms of the last occurrence
        self.cinfo = cinfo  # CLIENT LIST line of the last client
        self.entry_id = entry_id
        self.created = now

    def same_event(self, other: LogEntry) -> bool:
        """``ACLLogMatchEntry``: similar enough to count instead of adding an entry."""
        return (self.reason == other.reason and self.context == other.context
                and abs(self.ctime - other.ctime) <= LOG_GROUPING_MS
                and self.object == other.object and self.username == other.username)


class AclManager:
    """Users and everything that consults them. Installed as ``server.acl`` when needed."""

    __slots__ = ("server", "index", "users", "restricted", "default", "log", "log_next_id")

    def __init__(self, server: Server) -> None:
        self.server = server
        self.index = CommandIndex(server.table)  # before rename-command: rules use real names
        self.users: dict[str, User] = {}
        self.restricted: set[str] = set()  # users that need the per-command check
        self.log: list[LogEntry] = []  # newest first
        self.log_next_id = 0
        self.default = self._new_default()
        self.users["default"] = self.default
        cfg = server.config
        self.update_default_password(cfg.requirepass)
        cfg.on_change("requirepass", self.update_default_password)
        # acllog-max-len takes effect at the next entry, not at once (Redis has no apply
        # function for it: lowering it keeps the log until something is logged).
        self.load_at_startup()

    # -- the hooks dispatch and connections use -------------------------------------------

    def check(self, client: Client, cmd: Command, argv: list[bytes]) -> CommandError | None:
        """Refuse ``cmd`` for this client's user: the error to reply, logged; or None."""
        name = client.user
        if name not in self.restricted:
            return None
        user = self.users[name]
        res, idx = user.check(cmd, argv)
        if res == OK:
            return None
        in_multi = client.multi is not None or client.in_exec
        obj = cmd.name.encode() if res == DENIED_CMD else argv[idx]
        client.cmd = cmd  # Redis's lastcmd: the log's client info names the denied command
        self.add_log(client, res, b"multi" if in_multi else b"toplevel", obj, user.name)
        if client.in_exec:
            return CommandError(NOPERM_EXEC % NOPERM_EXEC_REASONS[res])
        return CommandError(denial_message(res, user.name, cmd.name, None))

    def authenticate(self, username: bytes, password: bytes) -> bool:
        """``ACLCheckUserCredentials``: an enabled user, and nopass or a matching password."""
        user = self.users.get(user_key(username))
        return user is not None and user.check_password(password)

    def auth_required(self) -> bool:
        """New connections start unauthenticated unless default is ``on nopass``."""
        d = self.default
        return not (d.nopass and d.enabled)

    def auth_client(self, client: Client, username: bytes, password: bytes) -> bool:
        """AUTH / HELLO AUTH: authenticate ``client`` as ``username`` or log the failure."""
        if self.authenticate(username, password):
            client.user = user_key(username)
            client.authenticated = True
            set_auth_limits(client, False)
            return True
        in_multi = client.multi is not None or client.in_exec
        self.add_log(client, DENIED_AUTH, b"multi" if in_multi else b"toplevel",
                     client.argv[0] if client.argv else b"AUTH", username)
        return False

    def refresh(self) -> None:
        """Recompute which users need checking; install or remove the dispatch hook."""
        self.restricted = {k for k, u in self.users.items() if not u.unrestricted}
        self.server.acl = self if self.restricted else None

    # -- users ------------------------------------------------------------------------------

    @property
    def allchannels_default(self) -> bool:
        return bool(self.server.config.acl_pubsub_default == "allchannels")

    def _new_user(self, name: bytes) -> User:
        return User(name, self.allchannels_default)

    def _new_default(self) -> User:
        """``ACLCreateDefaultUser``: +@all ~* &* on nopass."""
        u = self._new_user(b"default")
        for op in (b"+@all", b"~*", b"&*", b"on", b"nopass"):
            u.apply(op, self.index, False)
        return u

    def update_default_password(self, password: str) -> None:
        """requirepass maps to the default user (``ACLUpdateDefaultUserPassword``)."""
        self.default.apply(b"resetpass", self.index, False)
        if password:
            self.default.apply(b">" + password.encode("utf-8", "surrogateescape"), self.index, False)
        else:
            self.default.apply(b"nopass", self.index, False)

    def setuser(self, name: bytes, ops: list[bytes]) -> bytes | None:
        """``ACLStringSetUser``: all rules or none; returns Redis's error text or None."""
        try:
            merged = merge_selector_args(ops)
        except ValueError as e:
            return (b"Unmatched parenthesis in acl selector starting at '" + _c_str(e.args[0])
                    + b"'.")
        key = user_key(name)
        existing = self.users.get(key)
        temp = existing.copy() if existing is not None else self._new_user(name)
        for op in merged:
            try:
                temp.apply(op, self.index, self.allchannels_default)
            except RuleError as e:
                return (b"Error in ACL SETUSER modifier '" + _c_str(op) + b"': "
                        + str(e).encode())
        if existing is not None:
            self._kill_revoked_subscribers(existing, temp, self.server.current_client)
            existing.assign(temp)
        else:
            self.users[key] = temp
        self.refresh()
        self._sync_config()
        return None

    def deluser(self, names: list[bytes], current: Client | None) -> int:
        deleted = 0
        for name in names:
            user = self.users.pop(user_key(name), None)
            if user is not None:
                deleted += 1
                self._close_clients_of(user_key(name), current)
        self.refresh()
        self._sync_config()
        return deleted

    def sorted_users(self) -> list[User]:
        """Users in Redis's order (its rax tree sorts names bytewise)."""
        return sorted(self.users.values(), key=lambda u: u.name)

    def _close_clients_of(self, key: str, current: Client | None) -> None:
        for client in list(self.server.clients.values()):
            if client.user == key:
                deauthenticate_and_close(self.server, client, current)

    def _kill_revoked_subscribers(self, old: User, new: User, current: Client | None) -> None:
        """Close this user's subscribers whose channels the new rules no longer allow."""
        if any(s.allchannels for s in new.selectors):
            return
        allowed = [c for s in new.selectors for c in s.channels]
        key = user_key(old.name)
        for client in list(self.server.clients.values()):
            if client.user == key and _subscriptions_revoked(client, allowed):
                deauthenticate_and_close(self.server, client, current)

    # -- ACL LOG ----------------------------------------------------------------------------

    def add_log(self, client: Client, reason: int, context: bytes, obj: bytes,
                username: bytes, cmd: Command | None = None) -> None:
        """``addACLLogEntry``: count the denial; group it with a recent similar one.
        ``cmd``: the command the entry's client info names, when it is not the client's
        running one (a script's command, refused before it runs)."""
        if cmd is not None:
            client.cmd = cmd
        self.server.stats[STAT_NAMES[reason]] += 1
        max_len = self.server.config.acllog_max_len
        if max_len == 0:
            self._trim_log()
            return
        now = self.server.keyspace.clock.now_ms()
        # The client info is the network client's whose command is running (a script's
        # caller, EXEC's client), as Redis's addACLLogEntry takes server.current_client.
        real = self.server.current_client or client
        entry = LogEntry(reason, context, obj, username, now, real.info_line().encode(),
                         self.log_next_id)
        for i, old in enumerate(self.log[:10]):  # Redis scans only the 10 newest entries
            if old.same_event(entry):
                old.count += 1
                old.cinfo, old.ctime = entry.cinfo, entry.ctime
                self.log.insert(0, self.log.pop(i))
                return
        self.log_next_id += 1
        self.log.insert(0, entry)
        self._trim_log()

    def clear_log(self) -> None:
        """ACL LOG RESET."""
        self.log.clear()

    def _trim_log(self) -> None:
        del self.log[max(self.server.config.acllog_max_len, 0):]

    # -- files and directives ---------------------------------------------------------------

    def load_at_startup(self) -> None:
        """``ACLLoadUsersAtStartup``: ``user`` directives or the aclfile, never both."""
        cfg = self.server.config
        directives: list[list[bytes]] = list(cfg.user)
        if cfg.aclfile and directives:
            raise ConfigError(
                "Configuring Redis with users defined in redis.conf and at the same setting an "
                "ACL file path is invalid. This setup is very likely to lead to configuration "
                "errors and security holes, please define either an ACL file or declare users "
                "directly in your redis.conf, but not both.")
        seen: set[bytes] = set()
        for args in directives:
            name, ops = args[0], args[1:]
            if name in seen:
                raise ConfigError(f"Error in user declaration '{name.decode(errors='replace')}': "
                                  "Duplicate user found. A user can only be defined once in "
                                  "config files")
            seen.add(name)
            if has_spaces(name):
                raise ConfigError("Spaces not allowed in ACL usernames")
            key = user_key(name)
            user = self.users.get(key)
            if user is None:
                user = self.users[key] = self._new_user(name)
            else:
                user.apply(b"reset", self.index, self.allchannels_default)
            for op in merge_selector_args(ops):
                try:
                    user.apply(op, self.index, self.allchannels_default)
                except RuleError as e:
                    raise ConfigError(
                        f"Error loading ACL rule '{op.decode(errors='replace')}' for the user "
                        f"named '{name.decode(errors='replace')}': {e}") from None
            if not user.enabled:
                log.info("The user '%s' is disabled (there is no 'on' modifier in the user "
                         "description). Make sure this is not a configuration error.", key)
        if cfg.aclfile:
            errors = self.load_file()
            if errors is not None:
                raise ConfigError(f"Aborting Redis startup because of ACL errors: {errors}")
        self.refresh()

    def load_file(self, current: Client | None = None) -> str | None:
        """``ACLLoadFromFile``: all users from the aclfile, or nothing and the errors."""
        path = self.server.config.aclfile
        try:
            with open(self.server.config.in_dir(path), "rb") as f:
                text = f.read()
        except OSError as e:
            return f"Error loading ACLs, opening file '{path}': {e.strerror}"
        users: dict[str, User] = {}
        errors: list[str] = []
        for lineno, raw in enumerate(text.split(b"\n"), 1):
            line = raw.strip(b" \t\r\n")
            if not line:
                continue
            argv = line.split(b" ")  # sdssplitlen on single spaces: no quoting in ACL files
            if argv[0] != b"user" or len(argv) < 2:
                errors.append(f"{path}:{lineno} should start with user keyword followed by "
                              "the username. ")
                continue
            name = argv[1]
            shown = name.decode("utf-8", "replace")
            if has_spaces(name):
                errors.append(f"'{path}:{lineno}: username '{shown}' contains invalid "
                              "characters. ")
                continue
            key = user_key(name)
            if key in users:
                errors.append(f"WARNING: Duplicate user '{shown}' found on line {lineno}. ")
                continue
            user = users[key] = self._new_user(name)
            try:
                ops = merge_selector_args(argv[2:])
            except ValueError:
                errors.append(f"{path}:{lineno}: Unmatched parenthesis in selector definition.")
                continue
            syntax_error = False
            for op in ops:
                op = op.strip(b"\t\r\n")
                try:
                    user.apply(op, self.index, self.allchannels_default)
                except UnknownCommandRule as e:
                    errors.append(f"{path}:{lineno}: Error in applying operation "
                                  f"'{op.decode('utf-8', 'replace')}': {e}. ")
                except RuleError as e:
                    if not syntax_error:
                        errors.append(f"{path}:{lineno}: {e}. ")
                        syntax_error = True
        if errors:
            return "".join(errors) + ("WARNING: ACL errors detected, no change to the "
                                      "previously active ACL rules was performed")
        new_default = users.pop("default", None) or self._new_default()
        self.default.assign(new_default)  # the default user object is kept (as Redis does)
        old = self.users
        self.users = {"default": self.default, **users}
        for client in list(self.server.clients.values()):
            if client.user not in self.users:
                deauthenticate_and_close(self.server, client, current)
            elif client.user in old and client.user != "default":
                allowed = None if self.users[client.user].unrestricted else [
                    c for s in self.users[client.user].selectors for c in s.channels]
                if (allowed is not None
                        and not any(s.allchannels for s in self.users[client.user].selectors)
                        and _subscriptions_revoked(client, allowed)):
                    deauthenticate_and_close(self.server, client, current)
        self.refresh()
        return None

    def save_file(self) -> bool:
        """``ACLSaveToFile``: write every user through a temp file, fsync and rename."""
        path = self.server.config.aclfile
        data = b"".join(b"user " + u.name + b" " + u.describe() + b"\n"
                        for u in self.sorted_users())
        try:
            write_durably(self.server.config.in_dir(path), data)
        except OSError as e:
            log.warning("Writing ACL file for ACL SAVE: %s", e)
            return False
        return True

    def _sync_config(self) -> None:
        """Keep ``config.user`` in step so CONFIG REWRITE writes the users (no aclfile)."""
        cfg = self.server.config
        if cfg.aclfile:
            return
        cfg.user = [[u.name, *merge_selector_args(u.describe().split(b" "))]
                    for u in self.sorted_users()]


def _c_str(b: bytes) -> bytes:
    """What Redis's ``%s`` prints of an argument: up to the first NUL."""
    return b.split(b"\0", 1)[0]


def set_auth_limits(client: Client, unauthenticated: bool) -> None:
    """Pre-auth request limits (10 arguments, 16 KB bulks) apply to unauthenticated clients."""
    client.reader.set_limits(auth_required=unauthenticated)


def deauthenticate_and_close(server: Server, client: Client, current: Client | None) -> None:
    """``deauthenticateAndCloseClient``: back to an unauthenticated default user, then
    closed: the current client after its reply, any other at once."""
    client.user = "default"
    client.authenticated = False
    if client is current:
        client.closing = True
    else:
        server.close_client(client)


def _subscriptions_revoked(client: Client, allowed: list[bytes]) -> bool:
    """A subscription (channel, pattern, shard channel) the ``allowed`` list doesn't cover."""
    for subs, is_pattern in ((client.pubsub_patterns, True), (client.pubsub_channels, False),
                             (client.pubsub_shard_channels, False)):
        for ch in subs:
            if not channel_allowed(allowed, ch, is_pattern):
                return True
    return False


if TYPE_CHECKING:
    from sluice.commands.context import Acl

    def _implements_acl(mgr: AclManager) -> Acl[Client]:
        return mgr
