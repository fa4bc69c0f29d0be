"""Crash test for dead-lettering: SIGKILL while entries move to the dead-letter stream.

The harness of ``test_crash.py``: a ``sluice-server`` subprocess with an AOF, concurrent
clients, kills chosen by the number of acknowledged operations (never by sleeping), restarts,
and checks after each restart. Here the group has ``MAXDELIVERIES 1``: workers read entries
(delivery 1) and try to claim them again, which moves them to ``jobs:dead`` and acknowledges
them, logged as one MULTI/XADD/XACK/EXEC. After every restart:

* nothing is lost: every entry a worker was given is either still pending or in the
  dead-letter stream;
* nothing is duplicated: no entry is in the dead-letter stream twice, and none is both there
  and pending;
* what was acknowledged stays: an ID a worker asked to claim and that its (received) reply
  left out was dead-lettered, and is in the dead-letter stream.
"""

from __future__ import annotations

import os
import random
import signal
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from tests.support import ProcessServer

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow,
              pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")]

WORKERS = 4
CYCLES = 4
ENTRIES_PER_CYCLE = 3000


@dataclass
class Seen:
    delivered: set[bytes] = field(default_factory=set)  # given to a worker by XREADGROUP
    dead: set[bytes] = field(default_factory=set)  # a received reply says it was moved
    cond: threading.Condition = field(default_factory=threading.Condition)
    count: int = 0

    def bump(self) -> None:
        with self.cond:
            self.count += 1
            self.cond.notify_all()

    def wait_for(self, n: int, threads: list[threading.Thread]) -> None:
        with self.cond:
            while self.count < n and any(t.is_alive() for t in threads):
                self.cond.wait(0.5)


def _worker(port: int, wid: int, seen: Seen, stop: threading.Event,
            rng: random.Random) -> None:
    r = redis.Redis(port=port, socket_timeout=10, retry=Retry(NoBackoff(), 0))
    try:
        while not stop.is_set():
            got = r.xreadgroup("workers", f"w{wid}", {"jobs": ">"}, count=rng.randrange(1, 6))
            ids = [eid for _, entries in got for eid, _ in entries]
            seen.delivered.update(ids)
            if not ids:
                continue
            # a second delivery attempt: past MAXDELIVERIES 1, so they are dead-lettered
            if rng.random() < 0.7:
                claimed = r.xclaim("jobs", "workers", f"w{wid}b", 0, ids)
                # left out of the reply: moved (by us, or by someone's XAUTOCLAIM before)
                seen.dead.update(set(ids) - {eid for eid, _ in claimed})
            else:
                # moves up to 50 pending entries, which ones the reply does not say
                r.xautoclaim("jobs", "workers", f"w{wid}b", 0, "0-0", count=50)
            seen.bump()
    except (redis.ConnectionError, redis.TimeoutError, ConnectionResetError):
        pass  # killed under us: the last request has no acknowledgement
    finally:
        r.close()


def _verify(r: redis.Redis, seen: Seen, details: list[str]) -> int:
    bad = 0
    dead_ids = [fields[b"origin-id"] for _, fields in r.xrange("jobs:dead")]
    dead = set(dead_ids)
    if len(dead) != len(dead_ids):
        bad += len(dead_ids) - len(dead)
        details.append(f"{len(dead_ids) - len(dead)} entries dead-lettered twice")
    pending = {p["message_id"] for p in r.xpending_range("jobs", "workers", "-", "+", 10**6)}
    both = dead & pending
    if both:
        bad += len(both)
        details.append(f"both dead and pending: {sorted(both)[:5]}")
    lost = seen.delivered - dead - pending
    if lost:
        bad += len(lost)
        details.append(f"delivered, then neither pending nor dead: {sorted(lost)[:5]}")
    gone = seen.dead - dead
    if gone:
        bad += len(gone)
        details.append(f"acknowledged dead letters missing: {sorted(gone)[:5]}")
    return bad


@pytest.mark.parametrize("policy", ["always", "everysec"])
def test_sigkill_during_dead_lettering_loses_and_duplicates_nothing(tmp_path: Path,
                                                                    policy: str) -> None:
    rng = random.Random(int.from_bytes(os.urandom(4), "big"))
    note = f"seed={rng.random()}"
    args = ["--dir", str(tmp_path), "--appendonly", "yes", "--appendfsync", policy,
            "--auto-aof-rewrite-percentage", "0"]
    seen = Seen()
    for cycle in range(CYCLES):
        server = ProcessServer("sluice", args, cwd=str(tmp_path)).start()
        try:
            r = server.client(socket_timeout=10)
            details: list[str] = []
            if cycle:
                assert _verify(r, seen, details) == 0, f"cycle {cycle} ({note}): {details}"
            else:
                r.xgroup_create("jobs", "workers", "$", mkstream=True)
                r.execute_command("SLUICE.XPOLICY", "DEADLETTER", "jobs", "workers",
                                  "jobs:dead", "MAXDELIVERIES", "1")
            with r.pipeline(transaction=False) as p:
                for i in range(ENTRIES_PER_CYCLE):
                    p.xadd("jobs", {"cycle": str(cycle), "i": str(i)})
                p.execute()
            stop = threading.Event()
            threads = [threading.Thread(target=_worker, args=(server.port, w, seen, stop,
                                                              random.Random(rng.random())))
                       for w in range(WORKERS)]
            for t in threads:
                t.start()
            target = seen.count + rng.randrange(40, 300)
            if cycle == 2:  # a kill while a rewrite runs (or just after it swapped files)
                seen.wait_for(target - 20, threads)
                r.bgrewriteaof()
            seen.wait_for(target, threads)
            assert server.proc is not None
            os.kill(server.proc.pid, signal.SIGKILL)
            server.proc.wait(10)
            stop.set()
            for t in threads:
                t.join(15)
        finally:
            server.stop()
    server = ProcessServer("sluice", args, cwd=str(tmp_path)).start()
    try:
        details = []
        r = server.client(socket_timeout=10)
        assert _verify(r, seen, details) == 0, f"{note}: {details}"
        assert len(seen.dead) > 100  # the test really moved entries across kills
        assert r.xlen("jobs:dead") >= len(seen.dead)
    finally:
        server.stop()
