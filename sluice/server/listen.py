"""Listening sockets: TCP on every ``bind`` address, TLS on ``tls-port``, and a Unix socket.

Mirrors Redis's ``listenToPort`` / ``changeBindAddr`` and the unix listener of ``initServer``:
``bind`` takes several addresses; ``-addr`` may fail (e.g. no IPv6); ``*`` is every IPv4
address and ``::*`` every IPv6 one (Redis 7 spelling); ``port 0`` means no TCP listener;
``unixsocket`` is created with ``unixsocketperm`` (octal, 0 = leave the umask's) and
removed at shutdown. A TLS listener uses the same bind addresses (``tls.py`` builds the
``SSLContext`` from the ``tls-*`` settings).

Each listener is described for INFO's ``listener<n>`` lines when it opens; ``n`` is Redis's
connection-type index. ``CONFIG SET port`` / ``bind`` move the TCP listeners at run time as
Redis's ``changeListener`` does: the new sockets are bound first, synchronously, so a port in
use fails the CONFIG SET (and rolls it back) with the old listeners untouched; only then are
the old ones closed.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sluice.commands.errors import ConfigError

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
        if ssl is None:
            server.tcp_listeners.append(srv)
        bound.append(word)
    if bound:
        note_listener(server, kind.lower(), bound, port)


def _listening_socket(host: str, port: int, backlog: int) -> socket.socket:
    """A non-blocking socket bound to ``host:port`` and listening (as asyncio makes them)."""
    family, kind, proto, _, addr = socket.getaddrinfo(
        host, port, socket.AF_UNSPEC, socket.SOCK_STREAM, 0, socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(addr)
        sock.listen(backlog)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


def change_tcp(server: Server, port: int, binds: list[str], failure: str) -> None:
    """Move the TCP listeners to ``binds`` on ``port`` (0: none), as Redis's
    ``changeListener``: the old ones close first (their addresses are free again), then the
    new sockets are bound, synchronously. A failure raises ConfigError(``failure``), Redis's
    text; CONFIG SET's rollback then applies the old values, which binds the old listeners
    again."""
    for srv in server.tcp_listeners:
        srv.close()
        server.listeners.remove(srv)
    server.tcp_listeners.clear()
    server.listener_info.pop(LISTENER_INDEX["tcp"], None)
    socks: list[socket.socket] = []
    bound: list[str] = []
    if port:
        for word, (host, optional) in zip(binds, bind_hosts(binds), strict=True):
            try:
                socks.append(_listening_socket(host, port, server.config.tcp_backlog))
            except OSError as e:
                if optional:
                    continue
                log.warning("Could not create server TCP listening socket %s:%s: %s",
                            host, port, e.strerror or e)
                for sock in socks:
                    sock.close()
                raise ConfigError(failure) from None
            bound.append(word)
    if bound:
        note_listener(server, "tcp", bound, port)
        server.port = port
    for sock in socks:
        server.track_task(_serve(server, sock))


async def _serve(server: Server, sock: socket.socket) -> None:
    srv = await server.loop.create_server(server.protocol_factory, sock=sock)
    server.listeners.append(srv)
    server.tcp_listeners.append(srv)


def watch_settings(server: Server) -> None:
    """``port`` and ``bind`` set at run time move the TCP listeners (Redis's apply functions
    for them; their errors are Redis's)."""
    cfg = server.config
    cfg.on_change("port", lambda port: change_tcp(
        server, port, cfg.bind, "Unable to listen on this port. Check server logs."))
    cfg.on_change("bind", lambda binds: change_tcp(
        server, cfg.port, binds, "Failed to bind to specified addresses."))


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
        path = cfg.in_dir(cfg.unixsocket)
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
    if server.config.unixsocket:
        try:
            os.unlink(server.config.in_dir(server.config.unixsocket))
        except OSError:
            pass

