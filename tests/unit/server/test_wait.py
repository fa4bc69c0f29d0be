"""WAIT / WAITAOF with the blocking machinery (server/replication.py), on a fake loop and
clock: timeouts, CLIENT UNBLOCK, fsync-driven wake-ups, the AOF switched off under a waiter,
disconnects; and min-replicas-to-write's checks in dispatch.

The AOF here is a stand-in that counts the replication offset as the real one does (one per
logged command); fsyncs are announced by hand (``repl.set_fsynced``), as the AOF's commit and
background fsync do. The real AOF's fsync policies are tested over a socket
(tests/integration/test_wait.py) and against redis-server (tests/differential/test_wait_diff.py).
"""

from __future__ import annotations

import pytest

from sluice.commands import errors
from sluice.server.client import Client
from tests.support import RecordingAof
from tests.unit.server.test_blocking import Harness


class CountingAof(RecordingAof):
    def __init__(self, h: Harness) -> None:
        super().__init__()
        self.repl = h.server.repl

    def feed(self, db: int, argvs: list[list[bytes]]) -> None:
        super().feed(db, argvs)
        self.repl.master_repl_offset += len(argvs)


@pytest.fixture
def h() -> Harness:
    return Harness()


def aof_on(h: Harness) -> CountingAof:
    aof = CountingAof(h)
    h.server.aof = aof  # type: ignore[assignment]
    h.server.repl.set_fsynced(h.server.repl.master_repl_offset)
    return aof


def test_wait_for_no_replica_answers_at_once(h: Harness) -> None:
    c = h.client()
    h.run(c, "WAIT", "0", "0")
    h.run(c, "WAIT", "-5", "100")
    assert h.replies(c) == [0, 0]
    assert h.manager.blocked_count == 0


def test_wait_for_a_replica_times_out_with_zero(h: Harness) -> None:
    c = h.client()
    h.run(c, "WAIT", "1", "100")
    assert h.manager.blocked_count == 1 and h.replies(c) == []
    h.loop.advance(99)
    assert h.replies(c) == []
    h.loop.advance(1)
    assert h.replies(c) == [0]
    assert h.manager.blocked_count == 0 and c.bstate is None


def test_wait_forever_ends_by_client_unblock(h: Harness) -> None:
    c, admin = h.client(), h.client()
    h.run(c, "WAIT", "3", "0")
    assert not h.loop.live()  # no deadline: no timer
    h.run(admin, "CLIENT", "UNBLOCK", str(c.id))
    assert h.replies(admin) == [1] and h.replies(c) == [0]
    h.run(c, "WAIT", "3", "0")
    h.run(admin, "CLIENT", "UNBLOCK", str(c.id), "ERROR")
    (err,) = h.replies(c)
    assert str(err) == errors.UNBLOCKED
    assert h.manager.blocked_count == 0


def test_wait_inside_multi_does_not_block(h: Harness) -> None:
    c = h.client()
    for argv in (("MULTI",), ("WAIT", "1", "0"), ("WAITAOF", "0", "1", "0"), ("EXEC",)):
        h.run(c, *argv)
    assert h.replies(c)[-1] == [0, [0, 0]]
    assert h.manager.blocked_count == 0


def test_waitaof_local_needs_the_aof(h: Harness) -> None:
    c = h.client()
    h.run(c, "WAITAOF", "1", "0", "0")
    (err,) = h.replies(c)
    assert str(err) == errors.WAITAOF_APPENDONLY_OFF
    h.run(c, "WAITAOF", "0", "0", "0")
    assert h.replies(c) == [[0, 0]]  # no AOF: fsynced_reploff is -1, below any offset


def test_waitaof_wakes_on_the_fsync_of_its_write(h: Harness) -> None:
    aof_on(h)
    writer, idle = h.client(), h.client()
    h.run(writer, "INCR", "n")
    h.run(writer, "WAITAOF", "1", "0", "0")
    h.run(idle, "WAITAOF", "1", "0", "0")  # wrote nothing: its offset (0) is fsynced
    assert h.replies(idle) == [[1, 0]]
    assert h.replies(writer) == [1] and writer.bstate is not None
    assert writer.woff == 1
    assert h.server.repl.master_repl_offset == 2  # + the GETACK a blocked WAITAOF "sends"
    h.server.repl.set_fsynced(1)
    h.server.before_return()
    assert h.replies(writer) == [[1, 0]]
    assert not h.server.repl.clients_waiting_acks and h.manager.blocked_count == 0


def test_waitaof_for_replicas_times_out_with_the_local_count_of_then(h: Harness) -> None:
    aof_on(h)
    c = h.client()
    h.run(c, "INCR", "n")
    h.run(c, "WAITAOF", "1", "1", "100")
    h.replies(c)
    h.server.repl.set_fsynced(1)  # local done, but no replica ever acknowledges
    assert c.bstate is not None
    h.loop.advance(100)
    assert h.replies(c) == [[1, 0]]


def test_client_unblock_of_waitaof_answers_the_local_count(h: Harness) -> None:
    aof_on(h)
    c, admin = h.client(), h.client()
    h.run(c, "INCR", "n")
    h.run(c, "WAITAOF", "1", "0", "0")
    h.replies(c)
    h.run(admin, "CLIENT", "UNBLOCK", str(c.id), "TIMEOUT")
    assert h.replies(c) == [[0, 0]]
    assert not h.server.repl.clients_waiting_acks


def test_aof_switched_off_errors_local_waiters(h: Harness) -> None:
    aof_on(h)
    local, remote = h.client(), h.client()
    h.run(local, "INCR", "n")
    h.run(local, "WAITAOF", "1", "0", "0")
    h.run(remote, "INCR", "n")
    h.run(remote, "WAITAOF", "0", "1", "50")
    h.replies(local), h.replies(remote)
    h.server.aof = None
    h.server.repl.aof_stopped()
    h.server.before_return()
    (err,) = h.replies(local)
    assert str(err) == errors.WAITAOF_APPENDONLY_OFF
    assert remote.bstate is not None  # asked for no local copy: waits for its timeout
    h.loop.advance(50)
    assert h.replies(remote) == [[0, 0]]


def test_a_departed_waiter_is_forgotten(h: Harness) -> None:
    aof_on(h)
    c: Client = h.client()
    h.run(c, "INCR", "n")
    h.run(c, "WAITAOF", "1", "0", "0")
    assert c in h.server.repl.clients_waiting_acks
    h.server.unlink_client(c)
    assert not h.server.repl.clients_waiting_acks and h.manager.blocked_count == 0


def test_exec_sets_the_offset_once_the_transaction_is_logged(h: Harness) -> None:
    """Inside EXEC Redis propagates at the end, so a WAITAOF queued after a write sees the
    offset from before the transaction (answers at once); after EXEC it is the new one."""
    aof_on(h)
    c = h.client()
    for argv in (("MULTI",), ("INCR", "a"), ("WAITAOF", "1", "0", "0"), ("EXEC",)):
        h.run(c, *argv)
    assert h.replies(c)[-1] == [1, [1, 0]]
    assert c.woff == h.server.repl.master_repl_offset


def test_min_replicas_to_write_refuses_writes(h: Harness) -> None:
    c = h.client()
    h.run(c, "CONFIG", "SET", "min-replicas-to-write", "1")
    h.run(c, "SET", "k", "v")
    h.run(c, "GET", "k")
    h.run(c, "MULTI")
    h.run(c, "SET", "k", "v")
    h.run(c, "EXEC")
    replies = h.replies(c)
    assert replies[0] == b"OK" and replies[2] is None and replies[3] == b"OK"
    assert str(replies[1]) == errors.NOREPLICAS
    assert str(replies[4]) == errors.NOREPLICAS
    assert str(replies[5]).startswith("EXECABORT")
    h.run(c, "CONFIG", "SET", "min-replicas-max-lag", "0")  # no lag bound: the check is off
    h.run(c, "SET", "k", "v")
    assert h.replies(c) == [b"OK", b"OK"]
