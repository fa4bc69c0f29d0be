"""Consumer groups under concurrency: many consumers, crashes and recovery, CLIENT UNBLOCK.

Every consumer is a thread with its own connection. Nothing sleeps to synchronise: threads
wait on BLOCK replies and the test waits on ``INFO clients: blocked_clients``. Crash recovery
runs on a virtual clock (the crashed consumers' entries become idle when the test says so).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
import redis

from sluice.storage.keyspace import FakeClock
from tests.support import ThreadedServer, wait_blocked, wait_until

pytestmark = pytest.mark.timeout(30)

N_ENTRIES = 2000
N_CONSUMERS = 8


def _ids(reply: Any) -> list[bytes]:
    """Entry IDs of an XREADGROUP reply (RESP2 list or RESP3 map, redis-py shapes)."""
    if not reply:
        return []
    streams = reply.items() if isinstance(reply, dict) else reply
    out = []
    for _, entries in streams:
        if entries and isinstance(entries[0], list) and entries[0] and \
                isinstance(entries[0][0], (list, tuple)):
            entries = entries[0]
        out.extend(e[0] for e in entries)
    return out


@pytest.mark.parametrize("protocol", [2, 3])
def test_every_entry_delivered_to_exactly_one_consumer(sluice: ThreadedServer,
                                                       protocol: int) -> None:
    admin = redis.Redis(port=sluice.port, protocol=protocol)
    admin.delete("jobs")
    admin.xgroup_create("jobs", "workers", "$", mkstream=True)
    done = threading.Event()
    seen: list[list[bytes]] = [[] for _ in range(N_CONSUMERS)]
    errors: list[BaseException] = []

    def consumer(i: int) -> None:
        r = redis.Redis(port=sluice.port, protocol=protocol, socket_timeout=20)
        try:
            while not done.is_set():
                got = _ids(r.xreadgroup("workers", f"c{i}", {"jobs": ">"}, count=37, block=100))
                if got:
                    seen[i].extend(got)
                    assert r.xack("jobs", "workers", *got) == len(got)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            errors.append(e)
        finally:
            r.close()

    threads = [threading.Thread(target=consumer, args=(i,), daemon=True)
               for i in range(N_CONSUMERS)]
    for t in threads:
        t.start()
    wait_blocked(admin, N_CONSUMERS)  # everybody is waiting before the first entry
    producer = redis.Redis(port=sluice.port, protocol=protocol)
    produced = []
    for start in range(0, N_ENTRIES, 50):
        with producer.pipeline(transaction=False) as p:
            for n in range(start, start + 50):
                p.xadd("jobs", {"n": str(n)})
            produced.extend(p.execute())
    wait_until(lambda: sum(map(len, seen)) >= N_ENTRIES, 20, "all entries consumed")
    done.set()
    for t in threads:
        t.join(10)
    assert not errors, errors
    delivered = Counter(i for ids in seen for i in ids)
    assert sorted(delivered) == sorted(produced)
    assert max(delivered.values()) == 1  # nobody got an entry twice
    assert sum(1 for ids in seen if ids) > 1  # the work was actually shared
    assert admin.xpending("jobs", "workers")["pending"] == 0
    info = admin.xinfo_groups("jobs")[0]
    assert (info["last-delivered-id"], info["lag"], info["entries-read"]) == (
        produced[-1], 0, N_ENTRIES)
    admin.delete("jobs")
    admin.close()
    producer.close()


def test_crashed_consumers_recovered_by_xautoclaim(
        make_server: Callable[..., ThreadedServer]) -> None:
    clock = FakeClock(1_700_000_000_000)
    srv = make_server(clock=clock)
    admin = srv.client()
    admin.xgroup_create("jobs", "workers", "$", mkstream=True)
    for n in range(400):
        admin.xadd("jobs", {"n": str(n)})
    processed: Counter[bytes] = Counter()
    lock = threading.Lock()

    def worker(name: str, crash_after: int | None) -> None:
        r = srv.client(socket_timeout=20)
        handled = 0
        while True:
            got = _ids(r.xreadgroup("workers", name, {"jobs": ">"}, count=10))
            if not got:
                break
            if crash_after is not None and handled >= crash_after:
                r.close()  # dies holding these entries, unacknowledged
                return
            with lock:
                processed.update(got)
            r.xack("jobs", "workers", *got)
            handled += len(got)
        r.close()

    threads = [threading.Thread(target=worker, args=(f"w{i}", 30 if i < 2 else None))
               for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    pending = admin.xpending("jobs", "workers")
    crashed = {c["name"] for c in pending["consumers"]}
    assert crashed and crashed <= {b"w0", b"w1"}
    assert pending["pending"] == 400 - len(processed)
    # Recent entries are not taken; a minute later they are.
    assert admin.xautoclaim("jobs", "workers", "rescuer", 30_000, "0-0")[1] == []
    srv.call(lambda: clock.advance(60_000))
    cursor = b"0-0"
    rescued = []
    while True:
        cursor, claimed, deleted = admin.xautoclaim("jobs", "workers", "rescuer", 30_000,
                                                    cursor, count=7)
        assert deleted == []
        ids = [e[0] for e in claimed]
        rescued.extend(ids)
        if ids:
            admin.xack("jobs", "workers", *ids)
        if cursor == b"0-0":
            break
    processed.update(rescued)
    assert sorted(processed) == sorted(e[0] for e in admin.xrange("jobs"))
    assert max(processed.values()) == 1
    assert admin.xpending("jobs", "workers")["pending"] == 0
    admin.close()


@pytest.mark.parametrize("protocol", [2, 3])
def test_client_unblock_and_fifo_wakeups(sluice: ThreadedServer, protocol: int) -> None:
    admin = redis.Redis(port=sluice.port, protocol=protocol)
    admin.delete("q")
    admin.xgroup_create("q", "g", "$", mkstream=True)
    results: dict[str, Any] = {}

    def reader(name: str) -> None:
        r = redis.Redis(port=sluice.port, protocol=protocol, socket_timeout=20)
        try:
            results[name] = _ids(r.xreadgroup("g", name, {"q": ">"}, count=1, block=0))
        except redis.ResponseError as e:
            results[name] = str(e)
        finally:
            r.close()

    threads = {}
    for i, name in enumerate(("c1", "c2", "c3", "c4")):
        threads[name] = threading.Thread(target=reader, args=(name,), daemon=True)
        threads[name].start()
        wait_blocked(admin, i + 1)  # block in a known order
    by_order = [c["id"] for c in sorted(admin.client_list(), key=lambda c: int(c["id"]))
                if c["cmd"] == "xreadgroup"]
    assert len(by_order) == 4
    # CLIENT UNBLOCK ERROR on the 2nd, TIMEOUT on the 3rd, from this other connection.
    assert admin.client_unblock(by_order[1], error=True)
    assert admin.client_unblock(by_order[2])
    threads["c2"].join(10)
    threads["c3"].join(10)
    assert results["c2"] == "UNBLOCKED client unblocked via CLIENT UNBLOCK"
    assert results["c3"] == []
    assert admin.client_unblock(by_order[2]) == 0  # no longer blocked
    wait_blocked(admin, 2)
    # One entry at a time: the first blocked reader is served first.
    first = admin.xadd("q", {"n": "1"})
    threads["c1"].join(10)
    assert results["c1"] == [first]
    second = admin.xadd("q", {"n": "2"})
    threads["c4"].join(10)
    assert results["c4"] == [second]
    wait_blocked(admin, 0)
    admin.delete("q")
    admin.close()


def test_disconnect_while_blocked_releases(sluice: ThreadedServer) -> None:
    admin = redis.Redis(port=sluice.port)
    admin.xgroup_create("d", "g", "$", mkstream=True)
    conn = redis.Connection(port=sluice.port)
    conn.send_command("XREADGROUP", "GROUP", "g", "gone", "BLOCK", "0", "STREAMS", "d", ">")
    wait_blocked(admin, 1)
    conn.disconnect()
    wait_blocked(admin, 0)
    admin.xadd("d", {"x": "1"})
    assert admin.xpending("d", "g")["pending"] == 0  # nobody was served on its behalf
    admin.delete("d")
    admin.close()
