"""The Prometheus endpoint (``metrics-port``, ``--metrics-port``; 0, the default, is off).

Role: answer ``GET /metrics`` with the Prometheus text format, built by the
``prometheus_client`` library (the ``metrics`` extra: ``pip install sluice[metrics]``; the
server starts without it when the port is 0, and refuses to start when a port is asked for
and the library is missing).

Where it runs: on the server's event loop, as one more listener (``asyncio.start_server``).
A scrape is then just another callback between two commands: it reads the keyspace on the
thread that owns it, so it needs no lock and can never see a command half done. A thread of
its own would have to copy the state under a lock the command path does not have (or read
dicts being resized under it); the price of the loop is that a scrape delays the commands
behind it by its cost, which is why that cost is kept small and measured
(``docs/streams.md``: under 50 ms of server time for 100 streams x 10 groups).

Bounded cost: nothing is proportional to a PEL or to the number of keys. Streams are found
through ``StreamDirectory`` (a bounded walk, ``SCRAPE_WALK_KEYS`` keys per scrape on top of
the cron's); per group, everything is O(1) or O(log P): the PEL's size, the first pending ID
(its age is the oldest pending entry's), the NACK count, and the delivery-count histogram the
group keeps up to date on every PEL change (``ConsumerGroup.hist``).

Names: those of redis_exporter (oliver006/redis_exporter) where it has one, so existing
dashboards work (``redis_connected_clients``, ``redis_commands_total``,
``redis_memory_used_bytes``, ``redis_db_keys``, ``redis_stream_length``,
``redis_stream_group_messages_pending``, ``redis_stream_group_lag`` ...); ``sluice_*`` for the
rest. Labels: ``db="db0"``, ``stream``, ``group``, ``cmd`` as redis_exporter spells them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeHistogramMetricFamily,
    GaugeMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector, CollectorRegistry

from sluice.storage.stream_group import DELIVERY_BUCKETS

from . import info
from .listen import bind_hosts

if TYPE_CHECKING:
    from .app import Server

log = logging.getLogger("sluice")

SCRAPE_WALK_KEYS = 10_000  # keys the stream directory visits per scrape
_MAX_REQUEST = 8192
_BUCKET_NAMES = [str(b) for b in DELIVERY_BUCKETS] + ["+Inf"]


def _label(name: bytes) -> str:
    return name.decode("utf-8", "backslashreplace")


class ServerCollector(Collector):
    """Everything the endpoint reports, read from the server when ``collect`` runs."""

    def __init__(self, server: Server) -> None:
        self.server = server

    def collect(self) -> Iterator[Metric]:
        s = self.server
        yield GaugeMetricFamily("redis_up", "Information about the Redis instance", value=1)
        yield GaugeMetricFamily("redis_connected_clients", "Connected clients",
                                value=len(s.clients))
        yield GaugeMetricFamily("redis_blocked_clients", "Clients blocked in a command",
                                value=s.blocking.blocked_count)
        yield GaugeMetricFamily("redis_memory_used_bytes", "Resident memory of the server",
                                value=info.rss())
        yield GaugeMetricFamily("redis_uptime_in_seconds", "Seconds since the server started",
                                value=int(time.time() - s.start_time))
        yield CounterMetricFamily("redis_commands_processed", "Commands processed",
                                  value=s.total_commands_processed())
        yield CounterMetricFamily("redis_connections_received", "Connections accepted",
                                  value=s.stats["total_connections_received"])
        calls = CounterMetricFamily("redis_commands", "Calls per command", labels=["cmd"])
        secs = CounterMetricFamily("redis_commands_duration_seconds",
                                   "Time spent per command", labels=["cmd"])
        failed = CounterMetricFamily("redis_commands_failed_calls",
                                     "Calls per command that answered an error", labels=["cmd"])
        for row in s.table.values():
            for c in (row, *row.subcommands.values()):
                if c.calls or c.failed_calls:
                    calls.add_metric([c.name], c.calls)
                    secs.add_metric([c.name], c.usec / 1e6)
                    failed.add_metric([c.name], c.failed_calls)
        yield calls
        yield secs
        yield failed
        keys = GaugeMetricFamily("redis_db_keys", "Keys per database", labels=["db"])
        expiring = GaugeMetricFamily("redis_db_keys_expiring", "Keys with a TTL per database",
                                     labels=["db"])
        for db in s.keyspace.dbs:
            if db.data:
                keys.add_metric([f"db{db.id}"], len(db.data))
                expiring.add_metric([f"db{db.id}"], len(db.expires))
        yield keys
        yield expiring
        yield from self._streams()
        yield CounterMetricFamily("sluice_stream_dead_lettered",
                                  "Entries moved to a dead-letter stream",
                                  value=s.stats["sluice_dead_lettered"])
        yield CounterMetricFamily("sluice_stream_dead_letter_errors",
                                  "Entries that could not be dead-lettered (key of another type)",
                                  value=s.stats["sluice_dead_letter_errors"])
        yield CounterMetricFamily("sluice_stream_retention_trimmed",
                                  "Entries trimmed by retention policies",
                                  value=s.stats["sluice_retention_trimmed"])

    def _streams(self) -> Iterator[Metric]:
        s = self.server
        directory = s.stream_directory
        directory.walk(SCRAPE_WALK_KEYS)
        sl = ["db", "stream"]
        gl = ["db", "stream", "group"]
        length = GaugeMetricFamily("redis_stream_length", "Entries in the stream", labels=sl)
        groups = GaugeMetricFamily("redis_stream_groups", "Consumer groups of the stream",
                                   labels=sl)
        consumers = GaugeMetricFamily("redis_stream_group_consumers", "Consumers of the group",
                                      labels=gl)
        pending = GaugeMetricFamily("redis_stream_group_messages_pending",
                                    "Entries delivered and not yet acknowledged", labels=gl)
        lag = GaugeMetricFamily("redis_stream_group_lag",
                                "Entries not yet delivered to the group (when known)",
                                labels=gl)
        read = GaugeMetricFamily("redis_stream_group_entries_read",
                                 "Logical read counter of the group (when known)", labels=gl)
        nacked = GaugeMetricFamily("sluice_stream_group_nacked",
                                   "Pending entries released by XNACK", labels=gl)
        oldest = GaugeMetricFamily("sluice_stream_group_oldest_pending_age_seconds",
                                   "Age (from its ID) of the oldest pending entry", labels=gl)
        hist = GaugeHistogramMetricFamily("sluice_stream_group_pending_delivery_count",
                                          "Pending entries by number of deliveries",
                                          labels=gl)
        now = s.keyspace.clock.now_ms()
        for db, key, stream in directory.streams():
            dbl, kl = f"db{db.id}", _label(key)
            length.add_metric([dbl, kl], stream.length)
            groups.add_metric([dbl, kl], len(stream.groups))
            for g in stream.groups.values():
                labels = [dbl, kl, _label(g.name)]
                consumers.add_metric(labels, len(g.consumers))
                pending.add_metric(labels, len(g.pel))
                g_lag = stream.group_lag(g)
                if g_lag is not None:
                    lag.add_metric(labels, g_lag)
                if g.entries_read >= 0:
                    read.add_metric(labels, g.entries_read)
                nacked.add_metric(labels, len(g.nacked))
                if g.pel:
                    first: int = g.pel.keys()[0]
                    oldest.add_metric(labels, max(0, now - (first >> 64)) / 1000)
                total = 0
                buckets = []
                for name, n in zip(_BUCKET_NAMES, g.hist, strict=True):
                    total += n
                    buckets.append((name, total))
                hist.add_metric(labels, buckets, g.hist_sum)
        yield from (length, groups, consumers, pending, lag, read, nacked, oldest, hist)


class MetricsEndpoint:
    """The listener and the request handling (a minimal HTTP/1.0 server for one route)."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(ServerCollector(server))
        self.listeners: list[asyncio.base_events.Server] = []
        self.port = 0  # the port bound (useful with metrics-port set by a test)
        self.last_scrape_cpu_ns = 0  # CPU time of the last scrape on the loop thread
        self.scrapes = 0

    async def start(self, port: int) -> None:
        for host, optional in bind_hosts(self.server.config.bind):
            try:
                srv = await asyncio.start_server(self._serve, host, port, reuse_address=True)
            except OSError as e:
                if optional:
                    continue
                raise OSError(e.errno, f"Could not listen for metrics on {host}:{port}: "
                                       f"{e.strerror}") from e
            self.listeners.append(srv)
            if not self.port:
                self.port = srv.sockets[0].getsockname()[1]
        log.info("Metrics (Prometheus) on port %s", self.port)

    async def close(self) -> None:
        for srv in self.listeners:
            srv.close()
        for srv in self.listeners:
            await srv.wait_closed()
        self.listeners.clear()

    def render(self) -> bytes:
        """The exposition text; runs on the loop thread, between commands."""
        start = time.thread_time_ns()
        body = generate_latest(self.registry)
        self.last_scrape_cpu_ns = time.thread_time_ns() - start
        self.scrapes += 1
        return body

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            method, _, rest = head[:_MAX_REQUEST].partition(b" ")
            path = rest.split(b" ", 1)[0].split(b"?", 1)[0]
            if method not in (b"GET", b"HEAD"):
                status, ctype, body = b"405 Method Not Allowed", b"text/plain", b"GET only\n"
            elif path == b"/metrics":
                status, ctype, body = b"200 OK", CONTENT_TYPE_LATEST.encode(), self.render()
            else:
                status, ctype, body = b"404 Not Found", b"text/plain", b"try /metrics\n"
            writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Type: " + ctype +
                         b"\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body))
            if method != b"HEAD":
                writer.write(body)
            await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError,
                ConnectionError):
            pass
        except Exception:  # noqa: BLE001 - a bug here must not take the server down
            log.exception("metrics scrape failed")
            writer.write(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n"
                         b"Connection: close\r\n\r\n")
        finally:
            writer.close()
