"""Listening sockets: TCP on every ``bind`` address, TLS on ``tls-port``, and a Unix socket.

Mirrors Redis's ``listenToPort`` / ``changeBindAddr`` and the unix listener of ``initServer``:
``bind`` takes several addresses; ``-addr`` may fail (e.g. no IPv6); ``*`` is every IPv4
address and ``::*`` every IPv6 one (Redis 7 spelling); ``port 0`` means no TCP listener;
``unixsocket`` is created with ``unixsocketperm`` (octal, 0 = leave the umask's) and
removed at shutdown. A TLS listener uses the same bind addresses (``tls.py`` builds the
``SSLContext`` from the ``tls-*`` settings).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import Server

log = logging.getLogger("sluice")


def bind_hosts(bind: list[str]) -> list[tuple[str, bool]]:
    """(host, optional) for each ``bind`` word, in Redis's spelling."""
    out = []
    for addr in bind:
        optional = addr.startswith("-")
        host = addr[1:] if optional else addr
        host = {"*": "0.0.0.0", "::*": "::"}.get(host, host)
        out.append((host, optional))
    return out


async def open_tcp(server: Server, factory: Callable[[], Any], port: int,
                   ssl: Any = None) -> None:
    """One listener per bind address on ``port`` (TLS when ``ssl`` is an SSLContext)."""
    kind = "TLS" if ssl is not None else "TCP"
    for host, optional in bind_hosts(server.config.bind):
        try:
            srv = await server.loop.create_server(
                factory, host, port, backlog=server.config.tcp_backlog, reuse_address=True,
                ssl=ssl,
            )
        except OSError as e:
            if optional:
                log.info("Skipping optional %s bind %s:%s: %s", kind, host, port, e.strerror)
                continue
            raise OSError(e.errno, f"Could not create server {kind} listening socket "
                                   f"{host}:{port}: {e.strerror}") from e
        server.listeners.append(srv)


async def open_extra(server: Server, factory: Callable[[], Any]) -> None:
    """The TLS and Unix socket listeners, when configured."""
    cfg = server.config
    if cfg.tls_port:
        from .tls import build_context, watch_settings

        ctx = build_context(cfg)
        watch_settings(cfg, ctx)
        await open_tcp(server, factory, cfg.tls_port, ssl=ctx)
        log.info("Ready to accept TLS connections on port %s", cfg.tls_port)
    if cfg.unixsocket:
        path = cfg.unixsocket
        try:
            srv = await server.loop.create_unix_server(
                factory, path, backlog=cfg.tcp_backlog)
        except OSError as e:
            raise OSError(e.errno, f"Failed opening Unix socket: {e.strerror}") from e
        if cfg.unixsocketperm:
            os.chmod(path, cfg.unixsocketperm)
        server.listeners.append(srv)
        log.info("The server is now ready to accept connections at %s", path)


def remove_unix_socket(server: Server) -> None:
    """Redis unlinks its Unix socket file at shutdown."""
    path = server.config.unixsocket
    if path:
        try:
            os.unlink(path)
        except OSError:
            pass

