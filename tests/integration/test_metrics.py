"""The Prometheus endpoint (``--metrics-port``): names, values, HTTP, and bounded cost.

Scraped over a real socket and parsed with prometheus_client's own text parser. Names follow
redis_exporter where it has one (``redis_connected_clients``, ``redis_commands_total``,
``redis_db_keys``, ``redis_stream_length``, ``redis_stream_group_messages_pending`` ...).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families
from sortedcontainers import SortedDict

from sluice.storage.keyspace import FakeClock
from tests.support import ThreadedServer, answers, free_port, wait_until

pytestmark = pytest.mark.timeout(60)

Factory = Callable[..., ThreadedServer]
T0 = 1_700_000_000_000


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read()
    out = {}
    for family in text_string_to_metric_families(body.decode()):
        for s in family.samples:
            out[s.name, tuple(sorted(s.labels.items()))] = s.value
    return out


def metrics_port(srv: ThreadedServer) -> int:
    m = srv.server.metrics
    assert m is not None
    return m.port


def _raw(r: redis.Redis, *args: Any) -> Any:
    conn = r.connection_pool.get_connection()
    try:
        conn.send_command(*args)
        return conn.read_response()
    finally:
        r.connection_pool.release(conn)


@pytest.mark.parametrize("protocol", [2, 3])
def test_names_and_values(make_server: Factory, protocol: int) -> None:
    clock = FakeClock(T0)
    srv = make_server(f"metrics-port {free_port()}", clock=clock)
    r = srv.client(protocol=protocol)
    for i in range(10):
        r.xadd("orders", {"n": str(i)}, id=f"{T0 - 60_000 + i}-0")
    r.xgroup_create("orders", "billing", "0")
    r.xgroup_create("orders", "audit", "$")
    r.xreadgroup("billing", "w1", {"orders": ">"}, count=6)
    r.xclaim("orders", "billing", "w2", 0, [f"{T0 - 60_000}-0"])  # one delivered twice
    _raw(r, "XNACK", "orders", "billing", "FAIL", "IDS", "1", f"{T0 - 60_000 + 5}-0")
    r.set("plain", "x", ex=100)
    m = scrape(metrics_port(srv))
    g = (("db", "db0"), ("group", "billing"), ("stream", "orders"))
    assert m["redis_up", ()] == 1
    assert m["redis_connected_clients", ()] >= 1
    assert m["redis_commands_total", (("cmd", "xadd"),)] == 10
    assert m["redis_commands_total", (("cmd", "xreadgroup"),)] == 1
    assert m["redis_db_keys", (("db", "db0"),)] == 2
    assert m["redis_db_keys_expiring", (("db", "db0"),)] == 1
    assert m["redis_memory_used_bytes", ()] > 500_000  # INFO used_memory (startup ~0.9 MB)
    assert m["redis_stream_length", (("db", "db0"), ("stream", "orders"))] == 10
    assert m["redis_stream_groups", (("db", "db0"), ("stream", "orders"))] == 2
    assert m["redis_stream_group_messages_pending", g] == 6
    assert m["redis_stream_group_lag", g] == 4
    assert m["redis_stream_group_lag", (("db", "db0"), ("group", "audit"),
                                        ("stream", "orders"))] == 0
    assert m["redis_stream_group_consumers", g] == 2
    assert m["sluice_stream_group_nacked", g] == 1
    assert m["sluice_stream_group_oldest_pending_age_seconds", g] == 60.0
    hist = {dict(k[1])["le"]: v for k, v in m.items()
            if k[0] == "sluice_stream_group_pending_delivery_count_bucket"
            and dict(k[1])["group"] == "billing"}
    assert hist["1"] == 5 and hist["2"] == 6 and hist["+Inf"] == 6
    assert m["sluice_stream_group_pending_delivery_count_gcount", g] == 6
    assert m["sluice_stream_group_pending_delivery_count_gsum", g] == 7


def test_dead_letters_and_retention_are_counted(make_server: Factory) -> None:
    clock = FakeClock(T0)
    srv = make_server(f"metrics-port {free_port()}", "hz 50", clock=clock)
    r = srv.client()
    for i in range(1, 4):
        r.xadd("s", {"n": str(i)}, id=f"{T0 - 10_000 + i}-0")
    r.xgroup_create("s", "g", "0")
    _raw(r, "SLUICE.XPOLICY", "DEADLETTER", "s", "g", "dlq", "MAXDELIVERIES", "1")
    r.xreadgroup("g", "c", {"s": ">"}, count=1)
    r.xclaim("s", "g", "c", 0, [f"{T0 - 10_000 + 1}-0"])
    _raw(r, "SLUICE.XPOLICY", "RETENTION", "s", "MAXAGE", "5000", "DELREF")
    wait_until(lambda: r.xlen("s") == 0, what="retention")
    m = scrape(metrics_port(srv))
    assert m["sluice_stream_dead_lettered_total", ()] == 1
    assert m["sluice_stream_retention_trimmed_total", ()] == 3
    assert m["redis_stream_length", (("db", "db0"), ("stream", "dlq"))] == 1


def test_http_details(make_server: Factory) -> None:
    srv = make_server(f"metrics-port {free_port()}")
    port = metrics_port(srv)
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/other", timeout=10)
    assert e.value.code == 404
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"POST /metrics HTTP/1.1\r\n\r\n")
        assert s.recv(100).startswith(b"HTTP/1.1 405")
    resp = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10)
    assert resp.headers["Content-Type"].startswith("text/plain; version=")
    r = srv.client()
    assert r.config_get("metrics-port") == {"metrics-port": str(srv.server.config.metrics_port)}
    assert r.ping()  # the endpoint shares the loop with the clients


class _NoScan(SortedDict):  # type: ignore[misc]
    """A PEL that fails the test if anything walks it."""

    def __iter__(self) -> Any:
        raise AssertionError("the scrape walked a PEL")

    def items(self) -> Any:
        raise AssertionError("the scrape walked a PEL")

    def values(self) -> Any:
        raise AssertionError("the scrape walked a PEL")


def test_a_scrape_never_walks_a_pel(make_server: Factory) -> None:
    srv = make_server(f"metrics-port {free_port()}")
    r = srv.client()
    with r.pipeline(transaction=False) as p:
        for _ in range(5000):
            p.xadd("big", {"f": "v"})
        p.execute()
    r.xgroup_create("big", "g", "0")
    r.xreadgroup("g", "c", {"big": ">"})

    def swap() -> None:
        g = srv.server.keyspace[0].data[b"big"].groups[b"g"]
        pel = _NoScan()
        dict.update(pel, dict(SortedDict.items(g.pel)))
        pel._list.update(dict.keys(pel))
        g.pel = pel

    srv.call(swap)
    m = scrape(metrics_port(srv))
    assert m["redis_stream_group_messages_pending",
             (("db", "db0"), ("group", "g"), ("stream", "big"))] == 5000


def _fake_prometheus(tmp_path: Path) -> dict[str, str]:
    """An environment where ``import prometheus_client`` fails."""
    pkg = tmp_path / "prometheus_client"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("raise ImportError('prometheus_client is not installed')\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")])
    return env


def test_the_server_starts_without_the_library_when_the_port_is_0(tmp_path: Path) -> None:
    env = _fake_prometheus(tmp_path)
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "sluice.server", "--port", str(port),
                             "--save", ""], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: answers(port), what="server start")
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stderr is not None:
            proc.stderr.close()
    done = subprocess.run([sys.executable, "-m", "sluice.server", "--port", str(free_port()),
                           "--save", "", "--metrics-port", str(free_port())], cwd=tmp_path,
                          env=env, capture_output=True, timeout=30)
    assert done.returncode == 1
    assert b"prometheus_client" in done.stderr


def _library_text(server: Any) -> bytes:
    """The per-stream families built with prometheus_client's classes and written by its
    ``generate_latest``: what ``stream_exposition`` must write, byte for byte."""
    from prometheus_client import generate_latest
    from prometheus_client.core import GaugeHistogramMetricFamily, GaugeMetricFamily
    from prometheus_client.registry import Collector, CollectorRegistry

    from sluice.server.metrics import _BUCKET_NAMES

    def lab(b: bytes) -> str:
        return b.decode("utf-8", "backslashreplace")

    class Families(Collector):
        def collect(self) -> Any:
            sl, gl = ["db", "stream"], ["db", "stream", "group"]
            fam = {n: GaugeMetricFamily(n, d, labels=ls) for n, d, ls in (
                ("redis_stream_length", "Entries in the stream", sl),
                ("redis_stream_groups", "Consumer groups of the stream", sl),
                ("redis_stream_group_consumers", "Consumers of the group", gl),
                ("redis_stream_group_messages_pending",
                 "Entries delivered and not yet acknowledged", gl),
                ("redis_stream_group_lag",
                 "Entries not yet delivered to the group (when known)", gl),
                ("redis_stream_group_entries_read",
                 "Logical read counter of the group (when known)", gl),
                ("sluice_stream_group_nacked", "Pending entries released by XNACK", gl),
                ("sluice_stream_group_oldest_pending_age_seconds",
                 "Age (from its ID) of the oldest pending entry", gl))}
            hist = GaugeHistogramMetricFamily("sluice_stream_group_pending_delivery_count",
                                              "Pending entries by number of deliveries",
                                              labels=gl)
            now = server.keyspace.clock.now_ms()
            for db, key, s in server.stream_directory.streams():
                d, k = f"db{db.id}", lab(key)
                fam["redis_stream_length"].add_metric([d, k], s.length)
                fam["redis_stream_groups"].add_metric([d, k], len(s.groups))
                for g in s.groups.values():
                    ls = [d, k, lab(g.name)]
                    fam["redis_stream_group_consumers"].add_metric(ls, len(g.consumers))
                    fam["redis_stream_group_messages_pending"].add_metric(ls, len(g.pel))
                    if s.group_lag(g) is not None:
                        fam["redis_stream_group_lag"].add_metric(ls, s.group_lag(g))
                    if g.entries_read >= 0:
                        fam["redis_stream_group_entries_read"].add_metric(ls, g.entries_read)
                    fam["sluice_stream_group_nacked"].add_metric(ls, len(g.nacked))
                    if g.pel:
                        fam["sluice_stream_group_oldest_pending_age_seconds"].add_metric(
                            ls, max(0, now - (g.pel.keys()[0] >> 64)) / 1000)
                    acc, buckets = 0, []
                    for le, n in zip(_BUCKET_NAMES, g.hist, strict=True):
                        acc += n
                        buckets.append((le, acc))
                    hist.add_metric(ls, buckets, g.hist_sum)
            yield from fam.values()
            yield hist

    reg = CollectorRegistry(auto_describe=False)
    reg.register(Families())
    return generate_latest(reg)


def test_the_fast_writer_writes_what_the_library_writes(make_server: Factory) -> None:
    from sluice.server.metrics import stream_exposition

    clock = FakeClock(T0)
    srv = make_server(clock=clock)
    r = srv.client()
    for key in ("a", 'we"ird\\ key\n', "ünï"):
        for i in range(1, 30):
            r.xadd(key, {"n": str(i)}, id=f"{T0 - 5000 + i}-0")
        r.xgroup_create(key, "g1", "0")
        r.xgroup_create(key, 'g "2"', "0")
        r.xreadgroup("g1", "c", {key: ">"}, count=20)
        r.xclaim(key, "g1", "d", 0, [f"{T0 - 5000 + 1}-0"])
        _raw(r, "XNACK", key, "g1", "FATAL", "IDS", "1", f"{T0 - 5000 + 2}-0")
    r.xadd("empty-groups", {"x": "y"})

    def both() -> tuple[bytes, bytes]:
        server = srv.server
        ours = stream_exposition(server).encode()
        return ours, _library_text(server)

    ours, theirs = srv.call(both)
    assert ours == theirs
