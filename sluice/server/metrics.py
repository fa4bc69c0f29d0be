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
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry
from prometheus_client.utils import floatToGoString

from sluice.storage.stream_group import DELIVERY_BUCKETS

from .listen import bind_hosts

if TYPE_CHECKING:
    from .app import Server

log = logging.getLogger("sluice")

SCRAPE_WALK_KEYS = 10_000  # keys the stream directory visits per scrape
_MAX_REQUEST = 8192
_BUCKET_NAMES = [str(b) for b in DELIVERY_BUCKETS] + ["+Inf"]


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
        yield GaugeMetricFamily("redis_memory_used_bytes",
                                "Memory the server holds (INFO used_memory)",
                                value=s.memory.refresh())
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
        yield CounterMetricFamily("sluice_stream_dead_lettered",
                                  "Entries moved to a dead-letter stream",
                                  value=s.stats["sluice_dead_lettered"])
        yield CounterMetricFamily("sluice_stream_dead_letter_errors",
                                  "Entries that could not be dead-lettered (key of another type)",
                                  value=s.stats["sluice_dead_letter_errors"])
        yield CounterMetricFamily("sluice_stream_retention_trimmed",
                                  "Entries trimmed by retention policies",
                                  value=s.stats["sluice_retention_trimmed"])



def _go(value: float) -> str:
    """``floatToGoString``, with its result for small non-negative ints made directly."""
    if type(value) is int and 0 <= value < 1_000_000:
        return f"{value}.0"
    text: str = floatToGoString(value)  # type: ignore[no-untyped-call]
    return text


def _esc(value: bytes) -> str:
    """A label value as prometheus_client writes it (UTF-8; backslash, newline, quote)."""
    return (value.decode("utf-8", "backslashreplace").replace("\\", "\\\\")
            .replace("\n", "\\n").replace('"', '\\"'))


class _Family:
    """One metric family's text, written as ``generate_latest`` writes it."""

    __slots__ = ("name", "doc", "kind", "lines")

    def __init__(self, name: str, doc: str, kind: str) -> None:
        self.name, self.doc, self.kind = name, doc, kind
        self.lines: list[str] = []

    def add(self, labels: str, value: float) -> None:
        self.lines.append(f"{self.name}{{{labels}}} {_go(value)}\n")

    def text(self) -> str:
        if not self.lines:
            return f"# HELP {self.name} {self.doc}\n# TYPE {self.name} {self.kind}\n"
        return (f"# HELP {self.name} {self.doc}\n# TYPE {self.name} {self.kind}\n"
                + "".join(self.lines))


def stream_exposition(server: Server) -> str:
    """The per-stream and per-group families, in prometheus_client's text format.

    A scrape of 1000 groups writes ~14,000 samples. prometheus_client's ``generate_latest``
    spends ~20 us on each (it escapes every label name and value of every sample again), so
    these families, and only these, are written here with the library's own value formatting
    (``floatToGoString``) and escaping rules, the label string of a stream or a group made
    once and reused by each of its samples. ``tests/integration/test_metrics.py`` checks that
    the text is byte for byte what ``generate_latest`` writes for the same families.
    """
    directory = server.stream_directory
    directory.walk(SCRAPE_WALK_KEYS)
    length = _Family("redis_stream_length", "Entries in the stream", "gauge")
    groups = _Family("redis_stream_groups", "Consumer groups of the stream", "gauge")
    consumers = _Family("redis_stream_group_consumers", "Consumers of the group", "gauge")
    pending = _Family("redis_stream_group_messages_pending",
                      "Entries delivered and not yet acknowledged", "gauge")
    lag = _Family("redis_stream_group_lag",
                  "Entries not yet delivered to the group (when known)", "gauge")
    read = _Family("redis_stream_group_entries_read",
                   "Logical read counter of the group (when known)", "gauge")
    nacked = _Family("sluice_stream_group_nacked", "Pending entries released by XNACK", "gauge")
    oldest = _Family("sluice_stream_group_oldest_pending_age_seconds",
                     "Age (from its ID) of the oldest pending entry", "gauge")
    hist_name = "sluice_stream_group_pending_delivery_count"
    hist_doc = "Pending entries by number of deliveries"
    hist = _Family(hist_name, hist_doc, "histogram")
    gcount = _Family(hist_name + "_gcount", hist_doc, "gauge")
    gsum = _Family(hist_name + "_gsum", hist_doc, "gauge")
    bucket_name = hist_name + "_bucket"
    now = server.keyspace.clock.now_ms()
    for db, key, stream in directory.streams():
        dbl, kl = f'db="db{db.id}"', f'stream="{_esc(key)}"'
        sl = f"{dbl},{kl}"
        length.add(sl, stream.length)
        groups.add(sl, len(stream.groups))
        for g in stream.groups.values():
            head = f'{dbl},group="{_esc(g.name)}",'
            gl = head + kl
            consumers.add(gl, len(g.consumers))
            pending.add(gl, len(g.pel))
            g_lag = stream.group_lag(g)
            if g_lag is not None:
                lag.add(gl, g_lag)
            if g.entries_read >= 0:
                read.add(gl, g.entries_read)
            nacked.add(gl, len(g.nacked))
            if g.pel:
                first: int = g.pel.keys()[0]
                oldest.add(gl, max(0, now - (first >> 64)) / 1000)
            total = 0
            lines = hist.lines
            for le, n in zip(_BUCKET_NAMES, g.hist, strict=True):
                total += n
                lines.append(f'{bucket_name}{{{head}le="{le}",{kl}}} {_go(total)}\n')
            gcount.add(gl, total)
            gsum.add(gl, g.hist_sum)
    families = (length, groups, consumers, pending, lag, read, nacked, oldest, hist, gcount,
                gsum)
    return "".join(f.text() for f in families)


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
        body = generate_latest(self.registry) + stream_exposition(self.server).encode()
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
