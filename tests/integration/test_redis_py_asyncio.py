"""redis.asyncio against Sluice, RESP2 and RESP3: a stream worker pool as applications write it,
and what redis-py sends when it connects.

The worker pool is the consumer-group pattern from the Redis streams introduction: a backlog is
waiting when the workers start; a worker reads a batch and dies without acknowledging it;
healthy workers block in XREADGROUP BLOCK 0 and process each entry in a MULTI/EXEC with its
XACK (redis-py's default pipeline); the producer keeps adding in pipelined batches while they
run; a reaper recovers the dead worker's entries with an XAUTOCLAIM cursor loop (an entry
trimmed meanwhile comes back in XAUTOCLAIM's deleted list); a control connection stops the
blocked workers with CLIENT UNBLOCK. Every entry must be processed exactly once.

The handshake test records the bytes redis-py sends through a relay, then replays them on a
byte-level client against Sluice and redis-server and compares the replies.

Blocking is synchronised on server state (INFO clients: blocked_clients), never on sleeps.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from typing import Any

import hiredis
import pytest
import redis
import redis.asyncio as aioredis
import redis.utils

from sluice.commands import errors
from tests.support import ProcessServer, RawClient, ThreadedServer, without_modules

pytestmark = pytest.mark.timeout(30)

STREAM, GROUP = "jobs", "workers"
BACKLOG, TOTAL, BATCH = 5, 200, 15


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def protocol(request: pytest.FixtureRequest) -> int:
    return int(request.param)


def connect(port: int, protocol: int | None, **kw: Any) -> aioredis.Redis:
    # One connection per client object: a worker blocked in XREADGROUP owns its connection,
    # and CLIENT ID must name the connection the next command uses.
    if protocol is not None:
        kw["protocol"] = protocol
    return aioredis.Redis(host="127.0.0.1", port=port, single_connection_client=True,
                          socket_timeout=20, **kw)


@pytest.fixture
async def control(sluice: ThreadedServer, protocol: int) -> AsyncIterator[aioredis.Redis]:
    client = connect(sluice.port, protocol)
    await client.flushall()
    yield client
    await client.flushall()
    await client.aclose()


async def wait_blocked(control: aioredis.Redis, n: int, timeout: float = 10.0) -> None:
    """Poll INFO clients until ``blocked_clients == n`` (the async twin of support.wait_blocked)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while (await control.info("clients"))["blocked_clients"] != n:
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"timed out waiting for {n} blocked clients")
        await asyncio.sleep(0.002)


def stream_entries(reply: Any) -> list[tuple[bytes, dict[bytes, bytes]]]:
    """XREADGROUP's entries for STREAM: ``[[name, entries]]`` in RESP2, ``{name: [entries]}``
    in RESP3; an empty list or dict when the block timed out or was unblocked."""
    if not reply:
        return []
    if isinstance(reply, dict):
        return list(reply[STREAM.encode()][0])
    [(name, entries)] = reply
    assert name == STREAM.encode()
    return list(entries)


class Ledger:
    """What the workers did, checked at the end: every job processed exactly once."""

    def __init__(self, expected: int) -> None:
        self.processed: dict[bytes, list[str]] = {}
        self.expected = expected
        self.caught_up = asyncio.Event()

    def record(self, entry_id: bytes, worker: str) -> None:
        self.processed.setdefault(entry_id, []).append(worker)
        if len(self.processed) >= self.expected:
            self.caught_up.set()


async def process(client: aioredis.Redis, worker: str, entry_id: bytes,
                  fields: dict[bytes, bytes], ledger: Ledger) -> None:
    # The side effect and the XACK in one MULTI/EXEC (redis-py's default pipeline).
    async with client.pipeline() as tx:
        tx.incrby("total", int(fields[b"n"]))
        tx.rpush(f"done:{worker}", entry_id)
        tx.xack(STREAM, GROUP, entry_id)
        total, _, acked = await tx.execute()
    assert acked == 1, f"{entry_id!r} acknowledged twice"
    assert isinstance(total, int)
    ledger.record(entry_id, worker)


async def worker_loop(client: aioredis.Redis, name: str, ledger: Ledger,
                      stop: asyncio.Event) -> None:
    while not stop.is_set():
        reply = await client.xreadgroup(GROUP, name, {STREAM: ">"}, count=10, block=0)
        for entry_id, fields in stream_entries(reply):
            await process(client, name, entry_id, fields, ledger)


async def test_worker_pool_with_crash_recovery(sluice: ThreadedServer, control: aioredis.Redis,
                                               protocol: int) -> None:
    port = sluice.port
    assert await control.xgroup_create(STREAM, GROUP, id="$", mkstream=True)
    producer = connect(port, protocol)
    crasher = connect(port, protocol)
    reaper = connect(port, protocol)
    workers = {name: connect(port, protocol) for name in ("w1", "w2")}
    tasks: list[asyncio.Task[None]] = []
    try:
        # A backlog is waiting before any worker starts.
        backlog = [await producer.xadd(STREAM, {"n": n}) for n in range(1, BACKLOG + 1)]

        # The crasher takes a batch and dies without acknowledging it.
        taken = stream_entries(await crasher.xreadgroup(GROUP, "crasher", {STREAM: ">"},
                                                        count=3))
        assert [entry_id for entry_id, _ in taken] == backlog[:3]
        await crasher.aclose()

        ids = {name: await client.client_id() for name, client in workers.items()}
        ledger = Ledger(TOTAL - 3)
        stop = asyncio.Event()
        tasks = [asyncio.create_task(worker_loop(client, name, ledger, stop))
                 for name, client in workers.items()]
        # Both workers drain the rest of the backlog, then park in XREADGROUP BLOCK 0.
        await wait_blocked(control, 2)
        assert len(ledger.processed) == BACKLOG - 3

        # The producer keeps adding in pipelined (non-transactional) batches.
        for start in range(BACKLOG + 1, TOTAL + 1, BATCH):
            async with producer.pipeline(transaction=False) as pipe:
                for n in range(start, min(start + BATCH, TOTAL + 1)):
                    pipe.xadd(STREAM, {"n": n})
                added = await pipe.execute()
            assert all(isinstance(i, bytes) for i in added)
        await asyncio.wait_for(ledger.caught_up.wait(), 20)

        # Only the crasher's batch is pending: XPENDING per consumer, then per entry.
        summary = await control.xpending(STREAM, GROUP)
        assert summary["pending"] == 3
        assert summary["consumers"] == [{"name": b"crasher", "pending": 3}]
        pending = await control.xpending_range(STREAM, GROUP, "-", "+", 10)
        assert [(p["message_id"], p["consumer"], p["times_delivered"]) for p in pending] == [
            (entry_id, b"crasher", 1) for entry_id in backlog[:3]]

        # Recovery. A realistic min-idle claims nothing yet; one of the dead worker's entries is
        # trimmed meanwhile; then the reaper walks the PEL with an XAUTOCLAIM cursor.
        assert await reaper.xautoclaim(STREAM, GROUP, "reaper", 3_600_000, "0-0") == [
            b"0-0", [], []]
        assert await control.xdel(STREAM, backlog[1]) == 1
        cursor, claimed, deleted = b"0-0", [], []
        while True:
            cursor, got, gone = await reaper.xautoclaim(STREAM, GROUP, "reaper", 0, cursor,
                                                        count=1)
            claimed += got
            deleted += gone
            for entry_id, fields in got:
                # Claimed: now owned by the reaper, delivered a second time.
                [info] = await control.xpending_range(STREAM, GROUP, entry_id, entry_id, 1)
                assert (info["consumer"], info["times_delivered"]) == (b"reaper", 2)
                await process(reaper, "reaper", entry_id, fields, ledger)
            if cursor == b"0-0":
                break
        assert [entry_id for entry_id, _ in claimed] == [backlog[0], backlog[2]]
        assert deleted == [backlog[1]]

        # Shut the pool down: the workers are parked again; CLIENT UNBLOCK ends their read
        # as a timeout (empty reply), and they see the stop flag.
        stop.set()
        await wait_blocked(control, 2)
        for client_id in ids.values():
            assert await control.client_unblock(client_id) == 1
        await asyncio.wait_for(asyncio.gather(*tasks), 10)
        await wait_blocked(control, 0)

        # Exactly once: every entry but the trimmed one, each by one worker.
        expected = set(backlog[3:]) | {backlog[0], backlog[2]}
        assert len(ledger.processed) == TOTAL - 1
        assert set(ledger.processed) >= expected
        assert all(len(by) == 1 for by in ledger.processed.values()), "processed twice"
        assert {by[0] for by in ledger.processed.values()} >= {"w1", "w2", "reaper"}
        assert int(await control.get("total")) == TOTAL * (TOTAL + 1) // 2 - 2
        done = sum([await control.llen(f"done:{w}") for w in ("w1", "w2", "reaper")])
        assert done == TOTAL - 1

        # The group is fully caught up.
        assert (await control.xpending(STREAM, GROUP))["pending"] == 0
        [group] = await control.xinfo_groups(STREAM)
        assert (group["pending"], group["lag"], group["entries-read"]) == (0, 0, TOTAL)
        consumers = {c["name"]: c["pending"] for c in await control.xinfo_consumers(STREAM, GROUP)}
        assert consumers == {b"crasher": 0, b"w1": 0, b"w2": 0, b"reaper": 0}
        assert await control.xgroup_delconsumer(STREAM, GROUP, "crasher") == 0
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for client in (producer, reaper, *workers.values()):
            await client.aclose()


async def test_blocked_worker_sees_group_errors(sluice: ThreadedServer, control: aioredis.Redis,
                                                protocol: int) -> None:
    # A consumer parked on a stream whose key is deleted gets the command's own NOGROUP, as in
    # current Redis (7.2+ re-runs the command; 7.0 sent "UNBLOCKED the stream key no longer
    # exists"); CLIENT UNBLOCK ... ERROR reaches an asyncio caller as a ResponseError too.
    worker = connect(sluice.port, protocol)
    try:
        await control.xgroup_create(STREAM, GROUP, id="$", mkstream=True)
        read = asyncio.create_task(
            worker.xreadgroup(GROUP, "w", {STREAM: ">"}, count=1, block=0))
        await wait_blocked(control, 1)
        assert await control.delete(STREAM) == 1
        with pytest.raises(redis.ResponseError) as nogroup:
            await read
        assert str(nogroup.value) == (errors.NOGROUP_XREADGROUP % (b"jobs", b"workers")).decode()
        await control.xgroup_create(STREAM, GROUP, id="$", mkstream=True)
        read = asyncio.create_task(
            worker.xreadgroup(GROUP, "w", {STREAM: ">"}, count=1, block=0))
        await wait_blocked(control, 1)
        assert await control.client_unblock(await control_id(worker, control), error=True) == 1
        with pytest.raises(redis.ResponseError) as unblocked:
            await read
        assert str(unblocked.value) == errors.UNBLOCKED
        assert await worker.ping()
    finally:
        await worker.aclose()


async def test_cancelled_blocked_read_swallows_nothing(sluice: ThreadedServer,
                                                       control: aioredis.Redis,
                                                       protocol: int) -> None:
    # asyncio.timeout / wait_for around XREADGROUP BLOCK cancels the task; redis-py then drops
    # the connection. The server must release the blocked client, and the next entry must
    # stay undelivered (no PEL entry for a consumer that is gone) until someone reads it.
    worker = connect(sluice.port, protocol)
    try:
        await control.xgroup_create(STREAM, GROUP, id="$", mkstream=True)
        read = asyncio.create_task(
            worker.xreadgroup(GROUP, "w", {STREAM: ">"}, count=1, block=0))
        await wait_blocked(control, 1)
        read.cancel()
        with pytest.raises(asyncio.CancelledError):
            await read
        await wait_blocked(control, 0)
        entry_id = await control.xadd(STREAM, {"n": 1})
        assert (await control.xpending(STREAM, GROUP))["pending"] == 0
        # The same client object reconnects and gets the entry.
        got = stream_entries(await worker.xreadgroup(GROUP, "w", {STREAM: ">"}, count=1))
        assert got == [(entry_id, {b"n": b"1"})]
    finally:
        await worker.aclose()


async def test_pipeline_sent_before_reading_its_replies(control: aioredis.Redis) -> None:
    # redis-py writes a whole pipeline before it reads a reply. Here requests and replies are
    # both large (32 MB each way, more than the kernel's socket buffers hold), so a server
    # that stops reading a client until it has read its replies deadlocks; Redis reads on.
    old, new = b"o" * 65536, b"n" * 65536
    n = 512
    await control.mset({f"big:{i}": old for i in range(n)})
    async with control.pipeline(transaction=False) as pipe:
        for i in range(n):
            pipe.set(f"big:{i}", new, get=True)
        replies = await asyncio.wait_for(pipe.execute(), 20)
    assert replies == [old] * n
    assert await control.get(f"big:{n - 1}") == new


async def control_id(client: aioredis.Redis, control: aioredis.Redis) -> int:
    """The CLIENT ID of ``client`` while it is blocked (found through CLIENT LIST)."""
    blocked = [c for c in await control.client_list() if "b" in c["flags"]]
    assert len(blocked) == 1, blocked
    return int(blocked[0]["id"])


# ---------------------------------------------------------------------------------------------
# The connection handshake


class Relay:
    """A TCP relay to ``port`` that keeps every byte the client sent."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.sent = bytearray()
        self._server: asyncio.Server | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._writers: list[asyncio.StreamWriter] = []

    async def __aenter__(self) -> int:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        return int(self._server.sockets[0].getsockname()[1])

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for writer in self._writers:
            writer.close()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.port)
        self._writers += [writer, up_writer]
        self._tasks += [asyncio.create_task(self._pump(reader, up_writer, self.sent)),
                        asyncio.create_task(self._pump(up_reader, writer, None))]

    @staticmethod
    async def _pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter,
                    keep: bytearray | None) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await src.read(65536):
                if keep is not None:
                    keep += data
                dst.write(data)
                await dst.drain()
        dst.close()

    def commands(self) -> list[list[bytes]]:
        reader = hiredis.Reader()
        reader.feed(bytes(self.sent))
        out = []
        while (argv := reader.gets()) is not False:
            out.append(argv)
        return out


@pytest.mark.parametrize("asked", [2, 3, None], ids=["protocol2", "protocol3", "default"])
async def test_connection_handshake(sluice: ThreadedServer, asked: int | None) -> None:
    relay = Relay(sluice.port)
    async with relay as relay_port:
        client = connect(relay_port, asked)
        try:
            assert await client.echo("first") == b"first"
            info = await client.client_info()
            # Still one connection: nothing in the handshake closed it.
            assert await client.client_id() == int(info["id"])
        finally:
            await client.aclose()
    sent = relay.commands()
    names = [b" ".join(argv[:2]).upper() for argv in sent]
    first = names.index(b"ECHO FIRST")
    handshake = sent[:first]
    # redis-py 8 defaults to RESP3: `HELLO 3` unless protocol=2 was asked for (then no HELLO).
    # With RESP3 it also tries CLIENT MAINT_NOTIFICATIONS and carries on after the error.
    speaks = asked or getattr(redis.utils, "DEFAULT_RESP_VERSION", 2)
    assert (handshake[0][:2] == [b"HELLO", b"3"]) == (speaks == 3), handshake
    assert [b"CLIENT", b"SETINFO", b"LIB-NAME", b"redis-py"] in handshake
    assert [b"CLIENT", b"SETINFO", b"LIB-VER", redis.__version__.encode()] in handshake
    # The server took all of it: the protocol, the library name and version.
    assert (info["resp"], info["lib-name"], info["lib-ver"]) == (
        str(speaks), "redis-py", redis.__version__)


@pytest.mark.differential
@pytest.mark.parametrize("asked", [2, 3], ids=["protocol2", "protocol3"])
async def test_handshake_replies_match_redis(sluice: ThreadedServer, reference: ProcessServer,
                                             asked: int) -> None:
    """Replay what redis-py sent, byte for byte, on Sluice and on redis-server."""
    relay = Relay(sluice.port)
    async with relay as relay_port:
        client = connect(relay_port, asked)
        try:
            await client.ping()
        finally:
            await client.aclose()
    ours, theirs = RawClient(sluice.port), RawClient(reference.port)
    try:
        for argv in relay.commands():
            a, b = ours.call(*argv), theirs.call(*argv)
            if argv[0] == b"HELLO":  # the map carries the connection's own id
                a, b = (re.sub(rb"\$2\r\nid\r\n:\d+\r\n", b"", without_modules(x))
                        for x in (a, b))
            assert a == b, argv
    finally:
        ours.close()
        theirs.close()


async def test_dping_and_maint_notifications_get_errors(sluice: ThreadedServer,
                                                        protocol: int) -> None:
    # redis-py's own suite sends both; each must get an error reply, never a closed connection.
    client = connect(sluice.port, protocol)
    try:
        before = await client.client_id()
        with pytest.raises(redis.ResponseError) as err:
            await client.execute_command("DPING")
        assert str(err.value) == "unknown command 'DPING'"
        with pytest.raises(redis.ResponseError) as err:
            await client.execute_command("CLIENT", "MAINT_NOTIFICATIONS", "ON",
                                         "moving-endpoint-type", "internal-ip")
        assert str(err.value) == "unknown subcommand 'MAINT_NOTIFICATIONS'. Try CLIENT HELP."
        assert await client.client_id() == before
        assert await client.ping()
    finally:
        await client.aclose()
