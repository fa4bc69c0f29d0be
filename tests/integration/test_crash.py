"""Crash test: SIGKILL a ``sluice-server`` (appendfsync always, and everysec: a killed process
is not a crashed machine) under concurrent writers, restart,
and check that every acknowledged write survived. Several kill points per run.

Writers record each reply they receive. A kill can land anywhere: between commands, inside a
group commit, during a background rewrite. After the restart:

* every acknowledged ``SET`` key holds its value;
* every acknowledged ``RPUSH`` element is in its list, in order (one extra element whose reply
  was lost in flight is allowed: it was written, just not acknowledged);
* every acknowledged ``INCR`` result is <= the counter;
* streams (when the stream family is present): every acknowledged ``XADD`` ID exists; every
  entry delivered by an acknowledged ``XREADGROUP`` / ``XCLAIM`` / ``XAUTOCLAIM`` is pending
  for the consumer that got it last, unless acknowledged (an XACK or claim in flight at the
  kill may or may not have been applied); acknowledged ``XACK``s never come back; consumers
  made by ``XGROUP CREATECONSUMER`` exist; every acknowledged ``XACK`` is no longer pending; the group's last-delivered
  ID is at least the last ID delivered.

Kill points are chosen by the number of acknowledged writes (state), never by sleeping.
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
              # a writer thread that dies of a bug must fail the test, not thin it out
              pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")]

WRITERS = 6
CYCLES = 5


@dataclass
class Acks:
    sets: dict[str, str] = field(default_factory=dict)
    pushes: dict[str, list[str]] = field(default_factory=dict)
    incrs: dict[str, int] = field(default_factory=dict)
    xadds: dict[str, list[bytes]] = field(default_factory=dict)
    delivered: dict[tuple[str, bytes], str] = field(default_factory=dict)  # -> consumer
    acked: set[tuple[str, bytes]] = field(default_factory=set)
    ack_sent: set[tuple[str, bytes]] = field(default_factory=set)  # XACK sent, maybe applied
    claim_sent: dict[tuple[str, bytes], str] = field(default_factory=dict)  # XCLAIM in flight
    consumers: set[tuple[str, str]] = field(default_factory=set)  # XGROUP CREATECONSUMER
    cond: threading.Condition = field(default_factory=threading.Condition)
    count: int = 0

    def bump(self) -> None:
        with self.cond:
            self.count += 1
            self.cond.notify_all()

    def wait_for(self, n: int, threads: list[threading.Thread]) -> None:
        """Until ``n`` writes were acknowledged (or every writer stopped)."""
        with self.cond:
            while self.count < n and any(t.is_alive() for t in threads):
                self.cond.wait(0.5)


def _writer(port: int, wid: int, cycle: int, acks: Acks, streams: bool, stop: threading.Event,
            rng: random.Random) -> None:
    # No retries: redis-py 8 reconnects and re-sends by default, which would wait out the kill.
    r = redis.Redis(port=port, socket_timeout=10, retry=Retry(NoBackoff(), 0))
    lkey, ckey, skey = f"list:{wid}", f"counter:{wid}", f"stream:{wid}"
    consumer = f"c{wid}-{cycle}"
    i = 0
    try:
        while not stop.is_set():
            i += 1
            op = rng.randrange(8 if streams else 3)
            if op == 0:
                key, value = f"k:{wid}:{cycle}:{i}", f"v{i}"
                r.set(key, value)
                acks.sets[key] = value
            elif op == 1:
                item = f"{cycle}:{i}"
                r.rpush(lkey, item)
                acks.pushes.setdefault(lkey, []).append(item)
            elif op == 2:
                acks.incrs[ckey] = int(r.incr(ckey))
            elif op == 3:
                sid = r.xadd(skey, {"w": str(wid), "i": str(i)})
                acks.xadds.setdefault(skey, []).append(sid)
            elif op == 5:  # XCLAIM one of our pending entries for another consumer
                mine = [k for k, c in acks.delivered.items() if k[0] == skey
                        and k not in acks.ack_sent]
                if mine:
                    key = rng.choice(mine)
                    to = f"{consumer}-{rng.randrange(3)}"
                    acks.claim_sent[key] = to
                    if r.xclaim(skey, "g", to, 0, [key[1]], justid=True) == [key[1]]:
                        acks.delivered[key] = to
                    del acks.claim_sent[key]
            elif op == 6:  # XAUTOCLAIM the oldest pending entries
                to = f"{consumer}-auto"
                pending = sorted((k for k in acks.delivered if k[0] == skey
                                  and k not in acks.ack_sent), key=lambda k: _id(k[1]))
                for k in pending[:2]:
                    acks.claim_sent[k] = to
                # redis-py returns just the claimed IDs when JUSTID is given
                for eid in r.xautoclaim(skey, "g", to, 0, "0-0", count=2, justid=True):
                    acks.delivered[skey, eid] = to
                for k in pending[:2]:
                    acks.claim_sent.pop(k, None)
            elif op == 7:  # XGROUP CREATECONSUMER
                name = f"{consumer}-new{i}"
                r.xgroup_createconsumer(skey, "g", name)
                acks.consumers.add((skey, name))
            else:
                got = r.xreadgroup("g", consumer, {skey: ">"}, count=3)
                ids = [eid for _, entries in got for eid, _ in entries]
                for eid in ids:
                    acks.delivered[skey, eid] = consumer
                if ids and rng.random() < 0.5:
                    acks.ack_sent.update((skey, eid) for eid in ids[:2])
                    r.xack(skey, "g", *ids[:2])
                    acks.acked.update((skey, eid) for eid in ids[:2])
            acks.bump()
    except (redis.ConnectionError, redis.TimeoutError, ConnectionResetError):
        pass  # the server was killed under us: the last request has no acknowledgement
    finally:
        r.close()


def _id(sid: bytes) -> tuple[int, int]:
    ms, seq = sid.split(b"-")
    return int(ms), int(seq)


def _has_streams(r: redis.Redis) -> bool:
    info = r.execute_command("COMMAND", "INFO", "xadd", "xreadgroup", "xack", "xgroup")
    return all(x is not None for x in info)


def _verify(r: redis.Redis, acks: Acks, streams: bool, details: list[str]) -> int:
    lost = 0
    values = r.mget(list(acks.sets)) if acks.sets else []
    for (k, v), got in zip(acks.sets.items(), values, strict=True):
        if got != v.encode():
            lost += 1
            details.append(f"SET {k}={v} -> {got!r}")
    for key, items in acks.pushes.items():
        have = [x.decode() for x in r.lrange(key, 0, -1)]
        pos = 0
        for item in items:  # acknowledged items appear in order
            try:
                pos = have.index(item, pos) + 1
            except ValueError:
                lost += 1
                details.append(f"RPUSH {key} {item} missing (list has {len(have)})")
    for key, value in acks.incrs.items():
        got = int(r.get(key) or 0)
        if got < value:
            lost += 1
            details.append(f"INCR {key} acked {value}, now {got}")
    if streams:
        for key, ids in acks.xadds.items():
            present = {eid for eid, _ in r.xrange(key)}
            for eid in ids:
                if eid not in present:
                    lost += 1
                    details.append(f"XADD {key} {eid!r} missing")
        pending: dict[tuple[str, bytes], str] = {}
        for key in acks.xadds:
            for p in r.xpending_range(key, "g", "-", "+", 1_000_000):
                pending[key, p["message_id"]] = p["consumer"].decode()
        last: dict[str, tuple[int, int]] = {}
        for key, sid in acks.delivered:
            last[key] = max(last.get(key, (0, 0)), _id(sid))
        for key, top in last.items():
            try:
                group = next(g for g in r.xinfo_groups(key) if g["name"] == b"g")
            except redis.ResponseError:  # XINFO not in this build yet
                break
            if _id(group["last-delivered-id"]) < top:
                lost += 1
                details.append(f"{key}: last-delivered-id {group['last-delivered-id']!r} < {top}")
        for eid, consumer in acks.delivered.items():  # eid: (stream key, entry id)
            if eid in acks.acked:
                if eid in pending:  # an acknowledged XACK came back
                    lost += 1
                    details.append(f"XACK {eid!r} pending again for {pending[eid]}")
            elif eid in acks.claim_sent:  # a claim whose reply was lost may have been applied
                if pending.get(eid) not in (consumer, acks.claim_sent[eid]):
                    lost += 1
                    details.append(f"XCLAIM {eid!r}: pending {pending.get(eid)}, expected "
                                   f"{consumer} or {acks.claim_sent[eid]}")
            elif eid in acks.ack_sent:  # an XACK whose reply was lost may have been applied
                if pending.get(eid, consumer) != consumer:
                    lost += 1
                    details.append(f"XREADGROUP {eid!r} for {consumer}: pending {pending[eid]}")
            elif pending.get(eid) != consumer:  # a delivery the client saw is not pending
                lost += 1
                details.append(f"XREADGROUP {eid!r} for {consumer}: pending {pending.get(eid)}")
        by_stream: dict[str, set[str]] = {}
        for key, name in acks.consumers:
            by_stream.setdefault(key, set()).add(name)
        for key, names in by_stream.items():
            try:
                have = {c["name"].decode() for c in r.xinfo_consumers(key, "g")}
            except redis.ResponseError:  # XINFO not in this build yet
                break
            for name in sorted(names - have):
                lost += 1
                details.append(f"XGROUP CREATECONSUMER {key} {name} missing")
    return lost


# ``everysec`` too: a SIGKILL is a crash of the process, not of the machine, and no reply
# leaves before its command was written to the kernel, so nothing acknowledged may be lost.
@pytest.mark.parametrize("policy", ["always", "everysec"])
def test_no_acknowledged_write_is_lost_across_sigkills(tmp_path: Path, policy: str) -> None:
    rng = random.Random(int.from_bytes(os.urandom(4), "big"))
    seed_note = f"seed={rng.random()}"
    args = ["--dir", str(tmp_path), "--appendonly", "yes", "--appendfsync", policy,
            "--auto-aof-rewrite-percentage", "0"]
    acks = Acks()
    streams = False
    total_lost = 0
    for cycle in range(CYCLES):
        server = ProcessServer("sluice", args, cwd=str(tmp_path)).start()
        try:
            r = server.client(socket_timeout=10)
            details: list[str] = []
            lost = _verify(r, acks, streams, details)
            total_lost += lost
            assert lost == 0, f"cycle {cycle}: {lost} lost ({seed_note}): {details[:10]}"
            if cycle == 0:
                streams = _has_streams(r)
                if streams:
                    for w in range(WRITERS):
                        r.xgroup_create(f"stream:{w}", "g", "$", mkstream=True)
            stop = threading.Event()
            threads = [threading.Thread(target=_writer, args=(server.port, w, cycle, acks, streams,
                                                              stop, random.Random(rng.random())))
                       for w in range(WRITERS)]
            for t in threads:
                t.start()
            target = acks.count + rng.randrange(50, 600)
            if cycle == 2:  # a kill while a rewrite runs (or just after it swapped files)
                acks.wait_for(target - 40, threads)
                r.bgrewriteaof()
            acks.wait_for(target, threads)
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
        total_lost += _verify(server.client(socket_timeout=10), acks, streams, details)
    finally:
        server.stop()
    assert acks.count > CYCLES * 50
    assert total_lost == 0, f"{seed_note}: {details[:10]}"
