"""Listening sockets: TCP on every ``bind`` address, TLS on ``tls-port``, and a Unix socket.

Mirrors Redis's ``listenToPort`` / ``changeBindAddr`` and the unix listener of ``initServer``:
``bind`` takes several addresses; ``-addr`` may fail (e.g. no IPv6); ``*`` is every IPv4
address and ``::*`` every IPv6 one (Redis 7 spelling); ``port 0`` means no TCP listener;
``unixsocket`` is created with ``unixsocketperm`` (octal, 0 = leave the umask's) and
removed at shutdown. A TLS listener uses the same bind addresses (``tls.py`` builds the
``SSLContext`` from the ``tls-*`` settings).

Each listener is described for INFO's ``listener<n>`` lines when it opens (what really
listens: a later CONFIG SET bind does not move it); ``n`` is Redis's connection-type index.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import Server

log = logging.getLogger("sluice")


# Redis numbers its listeners by connection type, in the order it registers the types.
LISTENER_INDEX = {"tcp": 0, "unix": 1, "tls": 2}


def note_listener(server: Server, kind: str, binds: list[str], port: int) -> None:
    """Record ``listener<n>:name=<kind>,bind=<addr>...,port=<port>`` for INFO server: the
    bind words as configured (``*``, ``-::*``), only those that listen; no port for unix."""
    text = f"name={kind}" + "".join(f",bind={b}" for b in binds)
    server.listener_info[LISTENER_INDEX[kind]] = text + (f",port={port}" if port else "")


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
    bound = []
    for word, (host, optional) in zip(server.config.bind, bind_hosts(server.config.bind),
                                      strict=True):
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
        bound.append(word)
    if bound:
        note_listener(server, kind.lower(), bound, port)


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
        note_listener(server, "unix", [path], 0)
        log.info("The server is now ready to accept connections at %s", path)


def remove_unix_socket(server: Server) -> None:
    """Redis unlinks its Unix socket file at shutdown."""
    path = server.config.unixsocket
    if path:
        try:
            os.unlink(path)
        except OSError:
            pass

