"""``maxmemory-clients`` counts what a connection accumulates besides its buffers, as
redis-server 8.6.3's getClientMemoryUsage does: its WATCHed keys, its channels, patterns and
shard channels, its tracking prefixes. A client that keeps adding them is evicted (INFO
``evicted_clients``) instead of growing without bound; the others stay.

Each kind runs on both servers. The entries cost different amounts in each (Redis counts
its list nodes and dict slots, Sluice its Python objects), so the number of commands before
the eviction differs; what is compared is that the eviction happens, well before the bound
the loop gives itself, and what the server then reports.
"""

from __future__ import annotations

import socket
from collections.abc import Callable

import pytest
import redis

from tests.support import ProcessServer, ThreadedServer, wait_until

pytestmark = [pytest.mark.differential, pytest.mark.timeout(120)]

LIMIT = 200_000  # maxmemory-clients, bytes: as Redis's client-eviction unit uses for these
BOUND = 40_000  # commands a client may send before the test gives up on an eviction
BATCH = 200


def _resp(*args: str) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        b = a.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


def _commands_until_closed(port: int, command: Callable[[int], bytes]) -> int | None:
    """Send ``command(j)`` for j = 0, 1, ... in pipelined batches; the number sent when
    the server closed the connection (None if it never did)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    try:
        for start in range(0, BOUND, BATCH):
            try:
                sock.sendall(b"".join(command(j) for j in range(start, start + BATCH)))
                # PING's echo (a bulk string, or the end of a subscriber's pong array)
                # marks the end of the batch's replies
                sock.sendall(_resp("PING", "end-of-batch"))
                got = b""
                while not got.endswith(b"end-of-batch\r\n"):
                    chunk = sock.recv(1 << 20)
                    if not chunk:
                        return start + BATCH
                    got += chunk
            except (ConnectionResetError, BrokenPipeError):
                return start + BATCH
        return None
    finally:
        sock.close()


KINDS: dict[str, Callable[[int], bytes]] = {
    "watch": lambda j: _resp("WATCH", str(j)),
    "psubscribe": lambda j: _resp("PSUBSCRIBE", str(j)),
    "subscribe": lambda j: _resp("SUBSCRIBE", str(j)),
    "ssubscribe": lambda j: _resp("SSUBSCRIBE", str(j)),
    "tracking prefixes": lambda j: _resp(
        "CLIENT", "TRACKING", "on", "prefix", f"a{j:09d}", "prefix", f"b{j:09d}",
        "prefix", f"c{j:09d}", "bcast"),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_client_that_keeps_adding_is_evicted(fresh_servers: tuple[ThreadedServer, ProcessServer],
                                               kind: str) -> None:
    outcomes = []
    for server in fresh_servers:
        r = server.client()
        r.client_setname("control")
        r.execute_command("CLIENT", "NO-EVICT", "on")
        r.config_set("maxmemory-clients", LIMIT)
        sent = _commands_until_closed(server.port, KINDS[kind])
        clients = r.client_list()
        outcomes.append((sent is not None, r.info("stats")["evicted_clients"],
                         [c["name"] for c in clients]))
        r.close()
    assert outcomes[0] == outcomes[1] == (True, 1, ["control"])


def test_watching_a_key_twice_counts_it_once(fresh_servers: tuple[ThreadedServer, ProcessServer]
                                             ) -> None:
    """WATCH of a key the client already watches adds nothing (INFO and CLIENT LIST say
    how many), in the same database or not."""
    outcomes = []
    for server in fresh_servers:
        r = server.client()
        other = server.client()
        r.execute_command("WATCH", "a", "b", "a")
        other.execute_command("WATCH", "a")
        r.execute_command("WATCH", "b")
        r.execute_command("SELECT", "1")
        r.execute_command("WATCH", "a")
        info = r.info("clients")
        mine = next(c for c in r.client_list() if c["id"] == str(r.client_id()))
        outcomes.append((info["watching_clients"], info["total_watched_keys"], mine["watch"]))
        r.close()
        other.close()
    assert outcomes[0] == outcomes[1] == (2, 3, "3")


@pytest.mark.parametrize("setting", [("maxmemory-clients", "1"),
                                     ("maxmemory-clients", "10%", "maxmemory", "1000")])
def test_a_tiny_limit_counts_as_128_kb(fresh_servers: tuple[ThreadedServer, ProcessServer],
                                       setting: tuple[str, ...]) -> None:
    """A limit below 128 KB is taken as 128 KB, so that clients can still talk to the
    server; one holding more than that is evicted all the same."""
    outcomes = []
    for server in fresh_servers:
        r = server.client()
        r.execute_command("CONFIG", "SET", *setting)
        alive = [r.ping(), r.echo("still here"), r.get("k")]
        sent = _commands_until_closed(server.port, KINDS["watch"])
        stats = r.info("stats")
        outcomes.append((alive, sent is not None, stats["evicted_clients"]))
        r.execute_command("CONFIG", "SET", "maxmemory", "0", "maxmemory-clients", "0")
        r.close()
    assert outcomes[0] == outcomes[1] == ([True, b"still here", None], True, 1)


def test_eviction_stops_below_the_limit(fresh_servers: tuple[ThreadedServer, ProcessServer]) -> None:
    """Ten clients each holding a 1 MB request in part, the limit set from CLIENT LIST's
    tot-mem to hold half of them and the controlling client: the largest go first and
    eviction stops once the rest fit, so five stay (Tcl client-eviction "evict clients
    only until below limit"). tot-mem is the size eviction weighs, on both servers."""
    size = 1 << 20
    outcomes = []
    for server in fresh_servers:
        r = server.client()
        r.client_setname("control")
        r.execute_command("CLIENT", "NO-EVICT", "on")
        socks = []
        for j in range(10):
            s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            s.sendall(_resp("CLIENT", "SETNAME", f"client{j}"))
            assert s.recv(100) == b"+OK\r\n"
            s.sendall(b"*2\r\n$%d\r\n" % size + b"v" * size)
            socks.append(s)

        def mems(r: redis.Redis = r) -> dict[str, int]:
            return {c["name"]: int(c["tot-mem"]) for c in r.client_list()}

        wait_until(lambda: all(mems().get(f"client{j}", 0) >= size for j in range(10)),
                   what="the clients' query buffers")
        now = mems()
        biggest = max(now[f"client{j}"] for j in range(10))
        r.config_set("maxmemory-clients", biggest * 10 // 2 + now["control"])
        r.ping()  # eviction runs before a command, and in the cron
        wait_until(lambda: sum(name.startswith("client") for name in mems()) <= 5,
                   what="the eviction")
        outcomes.append((sum(name.startswith("client") for name in mems()),
                         r.info("stats")["evicted_clients"]))
        r.config_set("maxmemory-clients", "0")
        for s in socks:
            s.close()
        r.close()
    assert outcomes[0] == outcomes[1] == (5, 5)
