"""Limits that hold against clients that misbehave: output buffer limits, and the
backpressure that keeps a client that never reads from growing the server's memory.

Mirrors Redis's ``checkClientOutputBufferLimits`` / ``closeClientOnOutputBufferLimitReached``
(networking.c): a client's output buffer is what it has not received yet (here the encoded
replies not handed over plus the transport's buffer); over the hard limit of its class
(normal, pubsub) it is closed at once; over the soft limit continuously for more than the
soft seconds, too. Output buffers are checked whenever replies are handed to the transport,
which is where they grow: a Pub/Sub subscriber or MONITOR that never reads is closed by the
limit, not by the server running out of memory. A client that has not authenticated is
held to 16 KB of output whatever its class (Redis 7.4.3+, CVE-2025-21605).

Sluice adds backpressure where Redis has none, for clients whose class has no hard limit
(normal clients by default): while such a client's transport is above its high water mark
``process_input`` stops running its pipelined requests (``paused_reading``), so
one read of pipelined ``GET``\\ s of a big value can't build gigabytes of replies;
``resume_writing`` runs the rest once the client has read. The socket is still read: the
requests wait in the reader, bounded by client-query-buffer-limit as in Redis. (Pausing the
socket deadlocks clients that send a whole pipeline before reading, e.g. redis-py.)
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .client import Client

log = logging.getLogger("sluice")

FLUSH_CHUNK = 64 * 1024  # unsent replies handed to the transport mid-pipeline
HIGH_WATER = 256 * 1024  # transport buffer above which a client is paused
# A client that has not authenticated may hold no more output than Redis's 16 KB reply
# buffer (CVE-2025-21605: Redis allows 1 KB of reply list beyond it, and its first list node
# alone is bigger).
UNAUTHENTICATED_OUTPUT = 16 * 1024


def hard_limit(client: Client) -> int:
    """The hard output buffer limit of the client's class, 0 for none."""
    limits = client.server.config.client_output_buffer_limit
    hard: int = limits.get(client.kind, limits["normal"])[0]
    return hard


def output_used(client: Client, transport: Any) -> int:
    """The output ``client`` has not received, as Redis counts its reply buffers: what the
    transport holds, the replies not handed to it, and those handed to it mid-pipeline in
    this loop iteration (Redis writes once per iteration, so it would still hold them)."""
    buffered: int = transport.get_write_buffer_size()
    return buffered + len(client.out) + client.iter_out


def check_output_buffer(client: Client, transport: Any) -> bool:
    """Close ``client`` if its output buffer is over its class's limits; True if closed.
    It is closed without being sent what it has not received, as Redis frees it."""
    server = client.server
    limits = server.config.client_output_buffer_limit
    hard, soft, soft_seconds = limits.get(client.kind, limits["normal"])
    if not client.authenticated:
        hard = min(hard, UNAUTHENTICATED_OUTPUT + 1) if hard else UNAUTHENTICATED_OUTPUT + 1
    if not hard and not soft:
        return False
    used = output_used(client, transport)
    over = bool(hard) and used >= hard
    if soft and used >= soft:
        now = time.monotonic()
        if not client.obuf_soft_since:
            client.obuf_soft_since = now  # the first time: start counting
        elif now - client.obuf_soft_since > soft_seconds:
            over = True
    else:
        client.obuf_soft_since = 0.0
    if over:
        log.warning("Client %s scheduled to be closed ASAP for overcoming of output buffer "
                    "limits.", client.info_line())
        server.stats["client_output_buffer_limit_disconnections"] += 1
        client.out = bytearray()
        server.close_client(client, abort=True)
    return over

