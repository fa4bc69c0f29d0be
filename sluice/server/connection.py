"""The asyncio side of one client connection (an ``asyncio.BufferedProtocol``).

The event loop reads straight into the client's query buffer (``get_buffer``: the reusable
buffer, or the client's own; protocol/querybuf.py). ``buffer_updated`` runs what is complete,
lets the reader keep or give back the buffer, then calls ``Server.before_return()``: the
replies go out in one write at the end of the loop iteration. Flow control: when the transport's
buffer passes its high-water mark we stop reading from this client until it drains, so a
client that never reads its replies cannot grow our memory without bound; the hard output
buffer limit of its class closes it.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from typing import TYPE_CHECKING, cast

from sluice.commands.errors import MAX_CLIENTS

from .limits import HIGH_WATER, check_output_buffer
from .security import protected_mode_refuses, set_keepalive

if TYPE_CHECKING:
    from .app import Server
    from .client import Client

log = logging.getLogger("sluice")

_LOCAL = ("127.0.0.1", "::1")
PROTECTED_MODE_DENIED = (
    b"-DENIED Redis is running in protected mode because protected mode is enabled and no "
    b"password is set for the default user. In this mode connections are only accepted from "
    b"the loopback interface. If you want to connect from external computers to Redis you may "
    b"adopt one of the following solutions: 1) Just disable protected mode sending the command "
    b"'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from "
    b"the same host the server is running, however MAKE SURE Redis is not publicly accessible "
    b"from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) "
    b"Alternatively you can just disable the protected mode by editing the Redis configuration "
    b"file, and setting the protected mode option to 'no', and then restarting the server. 3) "
    b"If you started the server manually just for testing, restart it with the "
    b"'--protected-mode no' option. 4) Set up an authentication password for the default user. "
    b"NOTE: You only need to do one of the above things in order for the server to start "
    b"accepting connections from the outside.\r\n"
)


def _fmt_addr(addr: object) -> str:
    if isinstance(addr, tuple) and len(addr) >= 2:
        return f"{addr[0]}:{addr[1]}"
    return str(addr or "/unix")


# Where the bytes of a connection without a client (refused, or closing) are read, and dropped.
_DISCARD = memoryview(bytearray(4096))


class ClientProtocol(asyncio.BufferedProtocol):
    __slots__ = ("server", "client", "transport", "adopt")

    def __init__(self, server: Server, adopt: Client | None = None) -> None:
        self.server = server
        self.client: Client | None = None
        self.transport: asyncio.Transport | None = None
        # A client accepted while a script was busy (server/scripting.py: BusyPump): its
        # state carries over to the loop's transport.
        self.adopt = adopt

    def connection_made(self, base: asyncio.BaseTransport) -> None:
        # A stream transport; uvloop's do not subclass asyncio.Transport, so no isinstance.
        transport = cast("asyncio.Transport", base)
        server = self.server
        self.transport = transport
        if self.adopt is not None:
            client = self.adopt
            self.client = client
            client.transport = transport
            transport.set_write_buffer_limits(high=HIGH_WATER)
            if client.closed:
                transport.close()
            elif client.reader.pending():
                server.process_input(client)
                server.before_return()
            return
        peer = transport.get_extra_info("peername")
        sock = transport.get_extra_info("socket")
        if len(server.clients) >= server.config.maxclients:
            server.stats["rejected_connections"] += 1
            transport.write(b"-" + MAX_CLIENTS.encode() + b"\r\n")
            transport.close()
            return
        if protected_mode_refuses(server, transport):
            # Redis 7: protected mode while the default user is nopass; only a Unix socket,
            # 127.0.0.1 and ::1 are local (security.py).
            server.stats["rejected_connections"] += 1
            log.warning("Denied connection from %s: protected mode", _fmt_addr(peer))
            transport.write(PROTECTED_MODE_DENIED)
            transport.close()
            return
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                if server.config.tcp_keepalive:
                    set_keepalive(sock, server.config.tcp_keepalive)
            except OSError:
                pass
        client = server.new_client(transport)
        client.addr = _fmt_addr(peer)
        client.laddr = _fmt_addr(transport.get_extra_info("sockname"))
        self.client = client
        transport.set_write_buffer_limits(high=HIGH_WATER)

    def get_buffer(self, sizehint: int) -> memoryview:
        client = self.client
        if client is None or client.closing:
            return _DISCARD
        return client.reader.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        client = self.client
        if client is None or client.closing:
            return
        reader = client.reader
        reader.received(nbytes)
        client.last_ms = time.time_ns() // 1_000_000
        server = self.server
        el = server.el_stats
        if not el.cycle_start_ns:  # the first read of this loop iteration opens its cycle
            el.open_cycle()
        client.net_input_bytes += nbytes
        stats = server.stats
        stats["total_net_input_bytes"] += nbytes
        stats["total_reads_processed"] += 1  # one read event: Redis's readQueryFromClient
        try:
            if not server.query_buffer_over_limit(client) and client.bstate is None:
                before = client.commands_processed
                server.process_input(client)
                el.commands += client.commands_processed - before
        finally:
            if reader.end_read():
                server.query_buffers[client] = None  # the cron trims its own buffer
        server.before_return()

    def connection_lost(self, exc: Exception | None) -> None:
        client = self.client
        if client is not None:
            self.server.unlink_client(client)
            self.server.before_return()

    def pause_writing(self) -> None:
        """The transport buffer is full: run no more of this client's requests until it drains.

        The socket is still read (up to client-query-buffer-limit, as in Redis): a client that
        writes its whole pipeline before reading any reply (redis-py, Jedis) would otherwise
        block in send() while we wait for it to read: a deadlock Redis does not have.
        """
        client = self.client
        if client is None or self.transport is None:
            return
        if check_output_buffer(client, self.transport):
            return
        limits = self.server.config.client_output_buffer_limit
        if limits.get(client.kind, limits["normal"])[0]:
            # A hard limit for its class: Redis's rule holds instead, the client's commands
            # run on and it is closed when its output reaches the limit (a pause would keep a
            # client that never reads connected, its requests waiting, forever).
            return
        client.paused_reading = True

    def resume_writing(self) -> None:
        client = self.client
        if client is not None and client.paused_reading and self.transport is not None:
            client.paused_reading = False
            if not client.closed and client.reader.pending():
                # Requests that arrived before the pause wait in the reader: run them now.
                self.server.process_input(client)
                self.server.before_return()
