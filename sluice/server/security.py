"""Network exposure and protected actions: protected mode, local-connection tests,
``rename-command``, and the ``enable-*`` gates on protected commands and configs.

Mirrors Redis 8.6: ``islocalClient`` / ``connIsLocal`` (a Unix socket, any 127.x.y.z and ::1
are local, not ::ffff:127.0.0.1; 7.0 took only 127.0.0.1 and ::1), the protected-mode refusal of
``clientAcceptHandler`` (the DENIED text itself is in connection.py),
``allowProtectedAction`` (``no`` / ``yes`` / ``local``) used for DEBUG (F.PROTECTED rows,
``enable-debug-command``) and for CONFIG SET of protected configs
(``enable-protected-configs``), and the ``rename-command`` directive (applied to the live
table; ACL rules keep using the original names).
"""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING, Any

from sluice.commands.errors import PROTECTED_COMMAND, CommandError, ConfigError

if TYPE_CHECKING:
    from sluice.commands.context import Command

    from .client import Client


def is_local_address(ip: str) -> bool:
    """A TCP peer address that Redis 8.6's ``connSocketIsLocal`` calls local: its text starts
    with ``127.`` or is ``::1``."""
    return ip.startswith("127.") or ip == "::1"


def is_local_peer(transport: Any) -> bool:
    """``connIsLocal``: a Unix socket, or a TCP peer with a local address."""
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family == socket.AF_UNIX:
        return True
    peer = transport.get_extra_info("peername")
    if isinstance(peer, tuple) and peer:
        return is_local_address(str(peer[0]))
    return peer is not None and not isinstance(peer, tuple)  # '' for Unix peers


def is_local_client(client: Client) -> bool:
    t = client.transport
    return t is not None and is_local_peer(t)


def protected_mode_refuses(server: Any, transport: Any) -> bool:
    """Protected mode applies while the default user has no password (``nopass``)."""
    if not server.config.protected_mode:
        return False
    mgr = getattr(server, "acl_manager", None)
    nopass = mgr.default.nopass if mgr is not None else not server.config.requirepass
    return bool(nopass) and not is_local_peer(transport)


def allow_protected_action(setting: str, client: Client) -> bool:
    """``allowProtectedAction``: ``yes``, or ``local`` from a local connection."""
    return setting == "yes" or (setting == "local" and is_local_client(client))


def check_protected_command(server: Any, client: Client, cmd: Command) -> CommandError | None:
    """DEBUG (rows flagged F.PROTECTED) needs ``enable-debug-command``; MODULE LOAD, LOADEX
    and UNLOAD need ``enable-module-command``. Checked after arity, before AUTH, as Redis
    does."""
    root = cmd.parent or cmd
    if root.name == "module":
        setting, option, name = server.config.enable_module_command, \
            "enable-module-command", "MODULE"
    else:
        setting, option, name = server.config.enable_debug_command, "enable-debug-command", \
            root.name.upper()
    if allow_protected_action(setting, client):
        return None
    return CommandError(PROTECTED_COMMAND % (name, option))


def protected_configs_allowed(server: Any, client: Client) -> bool:
    """CONFIG SET of ``dir``, ``dbfilename`` ... (``enable-protected-configs``)."""
    return allow_protected_action(server.config.enable_protected_configs, client)


_ANY_ADDRESS = frozenset({"*", "0.0.0.0", "::*", "::"})

INSECURE_ANYWHERE = (
    "WARNING: Redis does not require authentication and is not protected by network "
    "restrictions. Redis will accept connections from any IP address on any network interface.")
INSECURE_INTERFACE = (
    "WARNING: Redis does not require authentication. Redis will accept connections from any "
    "IP address on the configured network interface.")
INSECURE_LOCAL = (
    "WARNING: Redis does not require authentication. Redis will accept connections from any "
    "local client.")


def insecure_config_warning(default_open: bool, protected_mode: bool,
                            bind: list[str]) -> str | None:
    """The warning Redis 8.6 logs once ready when the default user needs no password
    (``on nopass``): by protected mode, then by whether ``bind`` has an any-address
    (``*``, ``0.0.0.0``, ``::*``, ``::``, optional or not) or is empty. Checked against
    redis-server 8.6.3's log for each case."""
    if not default_open:
        return None
    if protected_mode:
        return INSECURE_LOCAL
    if not bind or any(a.removeprefix("-") in _ANY_ADDRESS for a in bind):
        return INSECURE_ANYWHERE
    return INSECURE_INTERFACE


def set_keepalive(sock: socket.socket, interval: int) -> None:
    """``anetKeepAlive``: probes after ``interval`` idle seconds, every interval/3, 3 times."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    if hasattr(socket, "TCP_KEEPIDLE"):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, interval)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, max(interval // 3, 1))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, 3)


def apply_renames(table: dict[bytes, Command], renames: list[list[bytes]]) -> None:
    """``rename-command old new`` (``new`` empty: the command is removed) on the live table."""
    for old, new in renames:
        cmd = table.pop(old.lower(), None)
        if cmd is None:
            raise ConfigError(f"No such command in rename-command: "
                              f"'{old.decode(errors='replace')}'")
        if new:
            if new.lower() in table:
                raise ConfigError(f"Target command name already exists: "
                                  f"'{new.decode(errors='replace')}'")
            table[new.lower()] = cmd
